//! The resource-pool tree: admission control of reservations, and hierarchical entitlement.
//!
//! Node 0 is the host's root pool: its reservation is the host's capacity and it cannot
//! expand. Every other pool and every powered-on VM holds its reservation from its parent pool.
//! A pool whose reservation is *expandable* may lend its children more than it reserved itself
//! by borrowing the difference from its own parent, recursively; a non-expandable pool cannot.
//! A pool with a limit cannot hold more reservation than its limit, whether its own or borrowed
//! for its children. Admission control (vSphere's behaviour, research/cpu.md C6 [X RMG]) checks
//! the whole chain before committing anything, and a refusal names the pool where the chain ran
//! dry (or whose limit it hit) and the shortfall in MHz.
//!
//! Entitlement is computed top-down by [`water_fill`] at every level (see `entitlement.rs`),
//! after a bottom-up pass that gives each pool a floor (its reservation or its children's
//! demanded floors, whichever is larger, capped by its demand) and a ceiling (its limit or its
//! children's ceilings, whichever is smaller). Scheduling weights come from a second top-down
//! pass over *weight capacities*: a pool's is its share at its parent's water level, clamped to
//! its floor and its children's ceilings but not to its own limit (unless that binds there: see
//! "A binding pool limit" below), so that, as for a VM's limit,
//! the children of a limited pool are held back by the pool's token bucket (MLMTD) and not by
//! low weights (READY), and share what the bucket lets through by their shares and reservations.
//! A weight capacity is also at most its parent's (the host's at the top): what a pool would
//! get without its own limit is no more than what its parent could give it. Where a limit caps
//! a pool at all its parent has (a pool limited to the host's capacity, or a hair under it,
//! with no busy sibling), every ceiling at the parent's level fits, its water level is
//! infinite, and the pool's share there is its children's whole demand; unclamped, that
//! demand became the children's weight capacity, every ceiling fitted again, and every VM
//! below weighed its vCPUs' worth, shares ignored. The limit binds in max-min terms
//! (`binding`), but a pool that cannot run faster than its limit never drains its bucket to
//! the share split (`limit.rs`), so the weights alone split it: 4 low-share and 8 high-share
//! vCPUs of one pool at 16,000 MHz on a 16,000 MHz host got 44 points each, 175.94 and 352.06
//! where max-min gives 58.67 and 469.33.
//!
//! A binding pool limit: where a pool's limit is its allocation at its parent's level (the
//! limit binds there), its weight capacity is at most that limit. The token bucket still holds
//! its children to it (MLMTD); what the cap changes is where they queue. A vCPU's credit is
//! bounded in CPU time (`max_lag_ns` at each update, half of it at a release: `sched.rs`,
//! `place_key`), so its reach in virtual time is the bound over its weight. Weighed at the
//! pool's unlimited share, a child weighs far more than it is entitled to (a 3-vCPU VM alone in
//! a pool limited to 0.42 pCPU weighed 1.0 per vCPU, entitled to 0.14), its reach is a fraction
//! of what its entitlement would give, and on a saturated host lighter vCPUs near their own
//! credit bound sit further behind the clock: it queued READY while its pool's bucket filled
//! and dropped tokens (39.81 points of its 42.15 over 300 s, READY 234% and MLMTD 26% summed
//! over its vCPUs; capped, 42.15, READY 213% and MLMTD 45%). A limit that does not bind at its
//! parent's level (the pool's share there is below it) caps nothing: the pool is held by its
//! share, not its bucket. Capped, the children also weigh their entitlements, so slack inside
//! the pool between updates goes by those: in drawn-pools-0q a 5-vCPU VM that max-min gives
//! the pool's slack drained its start-up backlog 3 s later (35 s, 32 s uncapped), and its
//! neighbour waited at its entitlement that much longer (-0.39 -> -0.54 points over 5-60 s,
//! tolerance 0.5; docs/cpu-scheduler.md, session 42).
//!
//! # Tunables
//! None: shares, reservations, limits and expandability are per pool and per VM settings.
//!
//! # Counters
//! `reserved_mhz` per pool (reservations held by its children, including what they borrowed).
//!
//! # Known gaps
//! - Pool limits are enforced by a token bucket shared by every VM below the pool
//!   (`limit.rs`); pool settings cannot be changed while a simulation runs.
//! - ESX keeps part of the host for the VMkernel and the service console; the root pool here
//!   offers the whole capacity.

use super::entitlement::{water_level_near, water_level_sums, Claim, LevelScratch, Split};
use crate::sim::{max_f, min_f};
use crate::spec::PoolSpec;
use crate::{invalid, VmtwinError, VmtwinResult};

/// Index of the host's root pool.
pub const ROOT_POOL: u32 = 0;

/// One resource pool.
#[derive(Debug, Clone)]
pub struct Pool {
    /// pool name (`host` for the root)
    pub name: String,
    /// parent pool, `None` for the root
    pub parent: Option<u32>,
    /// CPU shares among its siblings
    pub shares: u32,
    /// MHz guaranteed to its children
    pub reservation_mhz: u64,
    /// MHz ceiling
    pub limit_mhz: Option<u64>,
    /// may borrow reservation from its parent
    pub expandable: bool,
    /// MHz of reservation held by children (pools, powered-on VMs, borrowers); may exceed
    /// `reservation_mhz` only when expandable, the excess being borrowed from the parent
    pub reserved_mhz: u64,
    /// child pools
    pub pools: Vec<u32>,
    /// member VMs
    pub vms: Vec<u32>,
}

impl Pool {
    fn borrowed(&self) -> u64 {
        self.reserved_mhz.saturating_sub(self.reservation_mhz)
    }
}

/// What a VM asks of the tree when entitlements are computed.
#[derive(Debug, Clone, Copy)]
pub struct VmClaim {
    /// CPU shares
    pub shares: u32,
    /// reservation in MHz (converted once here: the update reads it three times a VM)
    pub reservation_mhz: f64,
    /// ceiling in MHz: limit, vCPUs x core MHz
    pub max_mhz: f64,
    /// the most its vCPUs can use, MHz (vCPUs x core MHz): the ceiling of its weight
    pub cap_mhz: f64,
    /// estimated demand in MHz
    pub demand_mhz: f64,
    /// counts only when powered on
    pub powered_on: bool,
}

impl VmClaim {
    /// A VM's claim from its settings: `vcpus` of `core_mhz` each bound what it can use, its
    /// limit (if any) lowers its ceiling but not its weight's.
    pub fn of(shares: u32, reservation_mhz: u64, limit_mhz: Option<u64>, vcpus: u32, core_mhz: f64, demand_mhz: f64,
              powered_on: bool) -> Self {
        let cap_mhz = vcpus as f64 * core_mhz;
        VmClaim {
            shares,
            reservation_mhz: reservation_mhz as f64,
            max_mhz: limit_mhz.map_or(cap_mhz, |l| cap_mhz.min(l as f64)),
            cap_mhz,
            demand_mhz,
            powered_on,
        }
    }
}

/// All pools of a host.
#[derive(Debug, Clone)]
pub struct PoolTree {
    /// pools by index; 0 is the root
    pub pools: Vec<Pool>,
}

impl PoolTree {
    /// A tree holding only the root pool of a host of `capacity_mhz`.
    pub fn new(capacity_mhz: u64) -> Self {
        PoolTree {
            pools: vec![Pool {
                name: "host".into(),
                parent: None,
                shares: 1,
                reservation_mhz: capacity_mhz,
                limit_mhz: None,
                expandable: false,
                reserved_mhz: 0,
                pools: vec![],
                vms: vec![],
            }],
        }
    }

    /// Some pool has a limit.
    pub fn has_limits(&self) -> bool {
        self.pools.iter().any(|p| p.limit_mhz.is_some())
    }

    /// Index of a pool by name.
    pub fn find(&self, name: &str) -> Option<u32> {
        self.pools.iter().position(|p| p.name == name).map(|i| i as u32)
    }

    /// Every VM in `pool` or in a pool below it, in tree order.
    pub fn vms_below(&self, pool: u32) -> Vec<u32> {
        let p = &self.pools[pool as usize];
        let mut out = p.vms.clone();
        for &c in &p.pools {
            out.extend(self.vms_below(c));
        }
        out
    }

    /// Add a pool under `parent`, reserving its reservation from the parent chain.
    pub fn add_pool(&mut self, mut pool: Pool, parent: u32) -> VmtwinResult<u32> {
        let id = self.pools.len() as u32;
        self.reserve(parent, pool.reservation_mhz, &pool.name)?;
        pool.parent = Some(parent);
        self.pools.push(pool);
        self.pools[parent as usize].pools.push(id);
        Ok(id)
    }

    /// Take `amount` MHz of reservation from `pool` for `entity`, or refuse without changing
    /// anything.
    pub fn reserve(&mut self, pool: u32, amount: u64, entity: &str) -> VmtwinResult<()> {
        self.check(pool, amount, entity)?;
        let mut node = Some(pool);
        let mut need = amount;
        while let (Some(id), true) = (node, need > 0) {
            let p = &mut self.pools[id as usize];
            let before = p.borrowed();
            p.reserved_mhz += need;
            need = p.borrowed() - before;
            node = p.parent;
        }
        Ok(())
    }

    /// Give back `amount` MHz of reservation held from `pool`.
    pub fn release(&mut self, pool: u32, amount: u64) {
        let mut node = Some(pool);
        let mut give = amount;
        while let (Some(id), true) = (node, give > 0) {
            let p = &mut self.pools[id as usize];
            let before = p.borrowed();
            p.reserved_mhz = p.reserved_mhz.saturating_sub(give);
            give = before - p.borrowed();
            node = p.parent;
        }
    }

    fn check(&self, pool: u32, amount: u64, entity: &str) -> VmtwinResult<()> {
        let mut id = pool;
        let mut need = amount;
        loop {
            let p = &self.pools[id as usize];
            // a pool cannot hold reservations beyond its limit, borrowed or not
            if let Some(limit) = p.limit_mhz {
                let room = limit.saturating_sub(p.reserved_mhz);
                if need > room {
                    return Err(VmtwinError::AdmissionControl {
                        entity: entity.to_string(),
                        reason: format!(
                            "reservation of {amount} MHz does not fit: pool '{}' is limited to {limit} MHz and already holds {} MHz of reservations, shortfall {} MHz",
                            p.name,
                            p.reserved_mhz,
                            need - room
                        ),
                    });
                }
            }
            let free = p.reservation_mhz.saturating_sub(p.reserved_mhz);
            if need <= free {
                return Ok(());
            }
            match (p.expandable, p.parent) {
                (true, Some(parent)) => {
                    // what the parent must lend: the growth of this pool's borrowing
                    let after = (p.reserved_mhz + need).saturating_sub(p.reservation_mhz);
                    need = after - p.borrowed();
                    id = parent;
                }
                _ => {
                    let how = if id == ROOT_POOL {
                        "the host".to_string()
                    } else {
                        format!("pool '{}' (reservation not expandable)", p.name)
                    };
                    return Err(VmtwinError::AdmissionControl {
                        entity: entity.to_string(),
                        reason: format!(
                            "reservation of {amount} MHz does not fit: {how} has {free} MHz unreserved of {} MHz, shortfall {} MHz",
                            p.reservation_mhz,
                            need - free
                        ),
                    });
                }
            }
        }
    }

    /// The tree a spec's `pools` describe (parents listed before children), checked, with
    /// nothing reserved yet: what the event and the fluid engines both start from.
    pub fn from_specs(specs: &[PoolSpec], capacity_mhz: u64) -> VmtwinResult<Self> {
        let mut pools = PoolTree::new(capacity_mhz);
        for (i, p) in specs.iter().enumerate() {
            let path = format!("resource_pools[{i}]");
            if pools.find(&p.name).is_some() {
                invalid!(format!("{path}.name"), p.name, "a name not used by another pool (or 'host')");
            }
            if p.shares == 0 {
                invalid!(format!("{path}.cpu.shares"), p.shares, "an integer >= 1");
            }
            if let Some(l) = p.limit_mhz {
                if l < p.reservation_mhz {
                    invalid!(format!("{path}.cpu.limit"), format!("{l} MHz"), format!("a limit >= the reservation ({} MHz)", p.reservation_mhz));
                }
            }
            let parent = match &p.parent {
                None => ROOT_POOL,
                Some(name) => match pools.find(name) {
                    Some(id) => id,
                    None => invalid!(format!("{path}.parent"), name, "the name of a pool defined above it"),
                },
            };
            let pool = Pool {
                name: p.name.clone(),
                parent: None,
                shares: p.shares,
                reservation_mhz: p.reservation_mhz,
                limit_mhz: p.limit_mhz,
                expandable: p.expandable,
                reserved_mhz: 0,
                pools: vec![],
                vms: vec![],
            };
            pools.add_pool(pool, parent)?;
        }
        Ok(pools)
    }

    /// Entitlement and scheduling weight of every VM, given each VM's claim and the host
    /// capacity (see `entitlement.rs` for both).
    pub fn entitlements(&self, vms: &[VmClaim], capacity_mhz: f64) -> Vec<Entitlement> {
        let mut room = PoolScratch::default();
        self.entitlements_in(vms, capacity_mhz, &mut room);
        room.out
    }

    /// [`PoolTree::entitlements`] computed in `room`, whose buffers are reused from call to
    /// call (the fluid mode calls it every step of small hosts, where allocating them cost more
    /// than the water-fill); the result is `room`'s, in VM order.
    pub fn entitlements_in<'a>(&self, vms: &[VmClaim], capacity_mhz: f64, room: &'a mut PoolScratch) -> &'a [Entitlement] {
        let mut out = std::mem::take(&mut room.out);
        // every VM is in one pool's list, so the pass writes every entitlement: last time's are
        // overwritten, not zeroed first (a 40 KB pass at 1,024 VMs)
        let listed: usize = self.pools.iter().map(|p| p.vms.len()).sum();
        if out.len() != vms.len() || listed != vms.len() {
            out.clear();
            out.resize(vms.len(), Entitlement::default());
        }
        self.entitlements_each(vms, capacity_mhz, room, |v, e| out[v] = e);
        room.out = out;
        &room.out
    }

    /// [`PoolTree::entitlements_in`] handing each listed VM's entitlement to `each(vm, e)`, in
    /// tree order, as it is computed: the entitlement update builds its vCPUs' shares in the
    /// same pass, not in a walk of its own over a stored result.
    #[inline]
    pub fn entitlements_each(&self, vms: &[VmClaim], capacity_mhz: f64, room: &mut PoolScratch, mut each: impl FnMut(usize, Entitlement)) {
        let n = self.pools.len();
        let PoolScratch { lo, hi, unlimited_hi, alloc, wcap, binding, at, claims, level_room, levels, .. } = room;
        if levels.len() != 2 * n {
            levels.clear();
            levels.resize(2 * n, f64::NAN);
        }
        for v in [&mut *lo, &mut *hi, &mut *unlimited_hi, &mut *alloc, &mut *wcap] {
            v.clear();
            v.resize(n, 0.0);
        }
        binding.clear();
        binding.resize(n, false);
        // each pool's claims in one array, its child pools' then its VMs', at `at[id]..at[id + 1]`:
        // written by the bottom-up pass (every entry, so last time's are not zeroed), read in
        // place by the top-down one
        at.clear();
        at.push(0);
        for p in &self.pools {
            at.push(at[at.len() - 1] + p.pools.len() + p.vms.len());
        }
        if claims.len() != at[n] {
            claims.clear();
            claims.resize(at[n], Claim { shares: 1.0, lo: 0.0, hi: 0.0 });
        }
        // bottom-up: floor and ceiling of every pool (children have larger indices), with the
        // claims of its children, each VM's floor and ceiling computed once
        for id in (0..n).rev() {
            let p = &self.pools[id];
            let (kids, own) = claims[at[id]..at[id + 1]].split_at_mut(p.pools.len());
            let (mut child_lo, mut child_hi) = (0.0, 0.0);
            for (slot, &c) in kids.iter_mut().zip(&p.pools) {
                let c = c as usize;
                child_lo += lo[c];
                child_hi += hi[c];
                *slot = Claim { shares: self.pools[c].shares as f64, lo: lo[c], hi: hi[c] };
            }
            for (slot, &v) in own.iter_mut().zip(&p.vms) {
                let vm = &vms[v as usize];
                let (l, h) = vm_bounds(vm);
                child_lo += l;
                child_hi += h;
                *slot = Claim { shares: vm.shares as f64, lo: l, hi: h };
            }
            let ceiling = p.limit_mhz.map_or(child_hi, |l| child_hi.min(l as f64));
            hi[id] = ceiling;
            unlimited_hi[id] = child_hi;
            lo[id] = (p.reservation_mhz as f64).max(child_lo).min(ceiling);
        }
        // getting all it wants says a VM has slack to wait in only when no VM is held back
        let fits = hi[ROOT_POOL as usize] <= capacity_mhz;
        // top-down: split each pool's allocation over its children, and its weight capacity
        // (what it would get without its own limit, which its token bucket enforces instead)
        // (`binding`: the pool's allocation is cut by a limit, its own or an ancestor's)
        alloc[ROOT_POOL as usize] = capacity_mhz;
        wcap[ROOT_POOL as usize] = capacity_mhz;
        for id in 0..n {
            let p = &self.pools[id];
            let claims = &claims[at[id]..at[id + 1]];
            // last time's levels as the search's hints (the levels do not depend on them)
            let (alloc_level, lo_sum) = water_level_sums(alloc[id], claims, level_room, levels[2 * id]);
            levels[2 * id] = alloc_level;
            // each child's part of the allocation, as `fill_in` splits it (`Split`)
            let split = Split::new(alloc[id], lo_sum, alloc_level);
            if let Some(l) = p.limit_mhz {
                binding[id] |= alloc[id] >= l as f64 * (1.0 - 1e-9) && unlimited_hi[id] > l as f64;
            }
            // the weight capacity differs from the allocation only below a limited pool
            let level = if wcap[id] == alloc[id] { alloc_level } else { water_level_near(wcap[id], claims, level_room, levels[2 * id + 1]) };
            levels[2 * id + 1] = level;
            let (kids, own) = claims.split_at(p.pools.len());
            for (&c, claim) in p.pools.iter().zip(kids) {
                let c = c as usize;
                let mhz = split.of(claim);
                alloc[c] = mhz;
                binding[c] = binding[id];
                // (no more than this pool's own: a limit left out is not capacity; see the header)
                // and no more than its own limit where that limit is its allocation (binds at
                // this level): see the header, "A binding pool limit"
                let binds_here = self.pools[c].limit_mhz.filter(|&l| mhz >= l as f64 * (1.0 - 1e-9));
                let top = binds_here.map_or(wcap[id], |l| wcap[id].min(l as f64));
                wcap[c] = share_at(level, self.pools[c].shares, lo[c], unlimited_hi[c].min(top));
            }
            for (&v, claim) in p.vms.iter().zip(own) {
                let vm = &vms[v as usize];
                let r = vm.reservation_mhz;
                let mhz = split.of(claim);
                // (`claim.hi`: the VM's ceiling, `vm_bounds`)
                let held = vm.powered_on && mhz < claim.hi * (1.0 - 1e-9);
                each(v as usize, Entitlement {
                    mhz,
                    weight_mhz: if vm.powered_on { vm_share_at(level, vm.shares, r, vm.cap_mhz) } else { 0.0 },
                    share_limit_mhz: (binding[id] && vm.powered_on).then(|| vm_share_at(alloc_level, vm.shares, r, vm.cap_mhz)),
                    satisfied: fits && vm.powered_on && mhz >= claim.hi * (1.0 - 1e-9),
                    held,
                    // (its share below its reservation: `weight_mhz` is the reservation)
                    at_floor: held && level * f64::from(vm.shares) < r * (1.0 - 1e-9),
                    share_mhz: if vm.powered_on { vm_share_at(alloc_level, vm.shares, 0.0, vm.cap_mhz) } else { 0.0 },
                });
            }
        }
    }
}

/// Room for [`PoolTree::entitlements_in`]: per pool its floor, ceilings, allocation, weight
/// capacity, whether a limit binds it and its last water levels (the next search's hints); every
/// pool's claims, its children's floors and ceilings; the water level's search buffers; the
/// result.
#[derive(Debug, Clone, Default)]
pub struct PoolScratch {
    lo: Vec<f64>,
    hi: Vec<f64>,
    unlimited_hi: Vec<f64>,
    alloc: Vec<f64>,
    wcap: Vec<f64>,
    binding: Vec<bool>,
    /// where each pool's claims start in `claims`, and their end
    at: Vec<usize>,
    claims: Vec<Claim>,
    level_room: LevelScratch,
    /// per pool, its allocation's and its weight capacity's water levels at the last call
    levels: Vec<f64>,
    out: Vec<Entitlement>,
}

/// Checks of one VM's CPU settings, shared by building a run (`path` names the VM's spec entry)
/// and by reconfiguring one between steps.
pub fn check_vm_cpu(path: &str, vcpus: u32, core_mhz: u64, shares: u32, reservation: u64, limit: Option<u64>) -> VmtwinResult<()> {
    if shares == 0 {
        invalid!(format!("{path}.cpu.shares"), shares, "an integer >= 1, or low/normal/high");
    }
    let max = vcpus as u64 * core_mhz;
    if reservation > max {
        invalid!(format!("{path}.cpu.reservation"), format!("{reservation} MHz"), format!("at most vcpus x core clock = {max} MHz"));
    }
    if let Some(l) = limit {
        if l < reservation {
            invalid!(format!("{path}.cpu.limit"), format!("{l} MHz"), format!("a limit >= the reservation ({reservation} MHz)"));
        }
        if l == 0 {
            invalid!(format!("{path}.cpu.limit"), "0 MHz", "a limit > 0 MHz, or unlimited");
        }
    }
    Ok(())
}

/// What the tree gives one VM.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Entitlement {
    /// the max-min allocation, MHz: what the scheduler targets (`entitlement_mhz`)
    pub mhz: f64,
    /// scheduling weight, MHz: its share at its level's water level, at least its reservation,
    /// at most its vCPUs' worth, limit left to the token buckets
    pub weight_mhz: f64,
    /// below a pool whose limit binds: its share of the pool's allocation at the water level
    /// of its parent (at least its reservation, at most its vCPUs), MHz, enforced as a limit
    pub share_limit_mhz: Option<f64>,
    /// the host is uncommitted (every VM gets all it wants: demand, limit or vCPUs)
    pub satisfied: bool,
    /// held back by the others: its allocation is below what it wants (its ceiling: demand,
    /// limit or vCPUs)
    pub held: bool,
    /// held back at its reservation: its share at the water level is below it, so its
    /// allocation and its weight are its reservation, not its share
    pub at_floor: bool,
    /// its share at its pool's water level, whatever its reservation (at most its vCPUs), MHz
    pub share_mhz: f64,
}

/// A child's share at water level `level` (MHz per share), clamped to `[floor, ceiling]` (the
/// floor wins if they cross).
fn share_at(level: f64, shares: u32, floor: f64, ceiling: f64) -> f64 {
    (level * shares as f64).clamp(floor, ceiling.max(floor))
}

/// [`share_at`] for a VM, whose ceiling (its vCPUs' worth, `cap_mhz` > 0) and floor (a
/// reservation or zero) are never NaN: `max_f` and `min_f` pick what `f64::max` and `f64::min`
/// would, without their NaN tests.
#[inline(always)]
fn vm_share_at(level: f64, shares: u32, floor: f64, ceiling: f64) -> f64 {
    (level * shares as f64).clamp(floor, max_f(ceiling, floor))
}

/// Floor and ceiling of one VM: its demanded reservation, and demand under its maximum (a
/// limit or its vCPUs' worth, > 0: `min_f` picks what `f64::min` would, a NaN demand too).
#[inline(always)]
fn vm_bounds(vm: &VmClaim) -> (f64, f64) {
    if !vm.powered_on {
        return (0.0, 0.0);
    }
    let hi = min_f(vm.demand_mhz, vm.max_mhz).max(0.0);
    (min_f(vm.reservation_mhz, hi), hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(name: &str, reservation: u64, expandable: bool) -> Pool {
        Pool {
            name: name.into(),
            parent: None,
            shares: 4000,
            reservation_mhz: reservation,
            limit_mhz: None,
            expandable,
            reserved_mhz: 0,
            pools: vec![],
            vms: vec![],
        }
    }

    #[test]
    fn non_expandable_pool_refuses_with_shortfall() {
        let mut t = PoolTree::new(10_000);
        let p = t.add_pool(pool("prod", 3000, false), ROOT_POOL).unwrap();
        t.reserve(p, 2000, "vm1").unwrap();
        let err = t.reserve(p, 1500, "vm2").unwrap_err().to_string();
        assert!(err.contains("pool 'prod'"), "{err}");
        assert!(err.contains("shortfall 500 MHz"), "{err}");
        assert_eq!(t.pools[p as usize].reserved_mhz, 2000);
    }

    #[test]
    fn expandable_pool_borrows_from_parent_and_returns_it() {
        let mut t = PoolTree::new(10_000);
        let p = t.add_pool(pool("dev", 1000, true), ROOT_POOL).unwrap();
        t.reserve(p, 4000, "vm1").unwrap();
        assert_eq!(t.pools[0].reserved_mhz, 1000 + 3000);
        let err = t.reserve(p, 7000, "vm2").unwrap_err().to_string();
        assert!(err.contains("the host") && err.contains("shortfall 1000 MHz"), "{err}");
        t.release(p, 4000);
        assert_eq!(t.pools[0].reserved_mhz, 1000);
        assert_eq!(t.pools[p as usize].reserved_mhz, 0);
    }

    #[test]
    fn pool_limit_bounds_reservations_below_it() {
        let mut t = PoolTree::new(10_000);
        let mut p = pool("capped", 0, true);
        p.limit_mhz = Some(1000);
        let p = t.add_pool(p, ROOT_POOL).unwrap();
        let err = t.reserve(p, 2000, "vm1").unwrap_err().to_string();
        assert!(err.contains("pool 'capped' is limited to 1000 MHz") && err.contains("shortfall 1000 MHz"), "{err}");
        t.reserve(p, 600, "vm2").unwrap();
        // a child pool expanding into a limited parent hits the parent's limit
        let c = t.add_pool(pool("child", 0, true), p).unwrap();
        let err = t.reserve(c, 500, "vm3").unwrap_err().to_string();
        assert!(err.contains("pool 'capped'") && err.contains("shortfall 100 MHz"), "{err}");
        assert_eq!(t.pools[0].reserved_mhz, 600);
    }

    #[test]
    fn pool_shares_split_before_vm_shares() {
        // two pools 1:3 on 4000 MHz, one busy VM each: 1000 and 3000
        let mut t = PoolTree::new(4000);
        let mut a = pool("a", 0, true);
        a.shares = 1000;
        let mut b = pool("b", 0, true);
        b.shares = 3000;
        let a = t.add_pool(a, ROOT_POOL).unwrap();
        let b = t.add_pool(b, ROOT_POOL).unwrap();
        t.pools[a as usize].vms.push(0);
        t.pools[b as usize].vms.push(1);
        let vm = |shares| VmClaim { shares, reservation_mhz: 0.0, max_mhz: 4000.0, cap_mhz: 4000.0, demand_mhz: 4000.0, powered_on: true };
        let e = t.entitlements(&[vm(8000), vm(1000)], 4000.0);
        assert!(e.iter().all(|e| !e.satisfied));
        assert_eq!(e.iter().map(|e| e.mhz).collect::<Vec<_>>(), vec![1000.0, 3000.0]);
        assert_eq!(e.iter().map(|e| e.weight_mhz).collect::<Vec<_>>(), vec![1000.0, 3000.0]);
    }

    #[test]
    fn sleepy_vm_keeps_its_fair_share_as_weight() {
        // R reserves 2000 of 4000 MHz but wants 200; X (2 vCPUs, reserves 2000, 2000 shares)
        // and B (1000 shares) are busy: R gets 200, X 2533, B 1267; R's weight stays at its
        // reservation, X's and B's are their entitlements
        let t = PoolTree::new(4000);
        let claim = |shares, reservation_mhz, cap: f64, demand_mhz| VmClaim {
            shares, reservation_mhz, max_mhz: cap, cap_mhz: cap, demand_mhz, powered_on: true,
        };
        let mut t = t;
        t.pools[0].vms = vec![0, 1, 2];
        let e = t.entitlements(&[claim(1000, 2000.0, 2000.0, 200.0), claim(2000, 2000.0, 4000.0, 4000.0), claim(1000, 0.0, 2000.0, 2000.0)], 4000.0);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        assert!(close(e[0].mhz, 200.0) && close(e[1].mhz, 3800.0 * 2.0 / 3.0) && close(e[2].mhz, 3800.0 / 3.0), "{e:?}");
        assert!(close(e[0].weight_mhz, 2000.0) && close(e[1].weight_mhz, e[1].mhz) && close(e[2].weight_mhz, e[2].mhz), "{e:?}");
    }

    #[test]
    fn a_pool_limited_to_the_host_splits_by_shares() {
        // one pool limited to the whole 16,000 MHz host, two busy VMs in it: 4 vCPUs at 2,000
        // shares wanting 5,760 and 8 vCPUs at 16,000 wanting all 16,000. The limit binds (the pool
        // wants more), every ceiling fits at the root; the weights still split by shares, as
        // the allocation does: 1,777.8 and 14,222.2, not the vCPUs' worth (8,000 and 16,000)
        let mut t = PoolTree::new(16_000);
        let mut p = pool("p1", 0, true);
        p.limit_mhz = Some(16_000);
        let p = t.add_pool(p, ROOT_POOL).unwrap();
        t.pools[p as usize].vms = vec![0, 1];
        let vm = |shares, vcpus: f64, demand_mhz| VmClaim {
            shares, reservation_mhz: 0.0, max_mhz: vcpus * 2000.0, cap_mhz: vcpus * 2000.0, demand_mhz, powered_on: true,
        };
        let e = t.entitlements(&[vm(2000, 4.0, 5760.0), vm(16_000, 8.0, 16_000.0)], 16_000.0);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        assert!(close(e[0].mhz, 16_000.0 / 9.0) && close(e[1].mhz, 16_000.0 * 8.0 / 9.0), "{e:?}");
        assert!(close(e[0].weight_mhz, e[0].mhz) && close(e[1].weight_mhz, e[1].mhz), "{e:?}");
        assert!(e.iter().all(|e| e.share_limit_mhz.is_some()), "{e:?}");
    }

    #[test]
    fn a_pool_limit_that_binds_caps_its_weight_and_one_that_does_not_caps_nothing() {
        // 4,000 MHz, two busy VMs: A (2 vCPUs) in pool p at 3,000 shares beside B (2 vCPUs) at
        // 1,000 at the root. p's share there is 3,000 MHz. Limited to 1,000, the limit binds:
        // A's weight is the limit (its entitlement), not its share of 3,000. Limited to 3,500,
        // above its share: A weighs its share, 3,000
        for (limit, weight) in [(1000, 1000.0), (3500, 3000.0)] {
            let mut t = PoolTree::new(4000);
            let mut p = pool("p", 0, true);
            p.shares = 3000;
            p.limit_mhz = Some(limit);
            let p = t.add_pool(p, ROOT_POOL).unwrap();
            t.pools[p as usize].vms.push(0);
            t.pools[ROOT_POOL as usize].vms.push(1);
            let vm = |shares| VmClaim { shares, reservation_mhz: 0.0, max_mhz: 4000.0, cap_mhz: 4000.0, demand_mhz: 4000.0, powered_on: true };
            let e = t.entitlements(&[vm(1000), vm(1000)], 4000.0);
            let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
            assert!(close(e[0].weight_mhz, weight) && close(e[0].mhz, weight), "{limit}: {e:?}");
        }
    }
}

//! The run loop: one host, its VMs, and the events that move them.
//!
//! A [`Simulation`] is built from a [`SimSpec`], powers on the VMs due at time zero (admission
//! control may refuse the whole scenario there), then advances by popping events in `(time,
//! seq)` order. [`Simulation::step`] is the one primitive; [`Simulation::run_until`] and
//! [`Simulation::run`] wrap it. Between steps a controller may reconfigure a VM's shares,
//! reservation and limit, or power one on, which is the narrow control API the management layer
//! (vATM, autonomous resource sharing) drives.

use crate::cpu::{check_vm_cpu, CpuSched, PoolScratch, PoolTree, VcpuShare, VmClaim, ROOT_POOL};
use crate::guest::{GuestVcpu, Next, Workload};
use crate::hw::Topology;
use crate::mem::MemEvent;
use crate::metrics::{Sampler, Table, VmRow};
use crate::sim::{stream_seed, Event, EventQueue, Rng, Time};
use crate::spec::{SimSpec, VmSpec};
use std::collections::HashSet;
use crate::storage::{Storage, StorageEvent};
use crate::wiring::Slab;
use crate::{invalid, VmtwinError, VmtwinResult};

mod barrier;
mod memory;
mod perf;
mod storage;

/// Upper bound on vCPUs per VM: vSphere 8's maximum.
pub const MAX_VCPUS_PER_VM: u32 = 768;

/// A VM's configuration and run-time facts. What every event of its vCPUs reads comes first,
/// together (`repr(C)` keeps the order): with 1,024 VMs the array outgrows the L1 cache. Each
/// VM starts a cache line (`align(64)`: 192 bytes), so that those first fields are one line,
/// not two for most VMs. The CPU settings follow, in the second line with the workload's end,
/// so that the entitlement update and the sampler, which walk every VM, read two lines of each
/// and not three; the name, read by neither, comes last.
#[derive(Debug, Clone)]
#[repr(C, align(64))]
struct Vm {
    powered_on_at: Option<Time>,
    workload: Workload,
    pool: u32,
    vcpus: u32,
    first_vcpu: u32,
    shares: u32,
    reservation_mhz: u64,
    limit_mhz: Option<u64>,
    name: String,
}

// the CPU settings within the first two lines
const _: () = assert!(std::mem::offset_of!(Vm, limit_mhz) + std::mem::size_of::<Option<u64>>() <= 128);

/// `Simulation::recompute_entitlements`' buffers, kept from update to update (with 1,024 VMs,
/// fresh ones every second showed up among the run's L1 write misses).
#[derive(Default)]
struct EntScratch {
    /// per VM, its claim (kept while `claims_stale` is false: only its demand is set)
    claims: Vec<VmClaim>,
    /// per VM, its vCPUs' share
    shares: Vec<VcpuShare>,
    /// the pool tree's buffers
    room: PoolScratch,
    /// per vCPU, its new key (`CpuSched::set_weights`)
    keys: Vec<f64>,
    /// per VM, its share of a binding pool limit (with pool limits)
    share_limits: Vec<Option<f64>>,
}

/// A simulated host.
pub struct Simulation {
    spec: SimSpec,
    topo: Topology,
    sched: CpuSched,
    pools: PoolTree,
    vms: Vec<Vm>,
    guests: Vec<GuestVcpu>,
    queue: EventQueue,
    sampler: Sampler,
    /// the storage subsystem, when the scenario has storage
    storage: Option<Storage>,
    storage_events: Slab<StorageEvent>,
    /// what the run loop keeps beside the storage subsystem (its tables, vCPUs waiting for I/O)
    storage_run: Option<Box<storage::StorageRun>>,
    /// the memory subsystem, when the scenario models memory
    mem: Option<Box<memory::Memory>>,
    mem_events: Slab<MemEvent>,
    /// the execution-speed model, when the scenario profiles a VM
    perf: Option<crate::perf::PerfModel>,
    /// the `barrier` table, when a VM runs a barrier program (`barrier.rs`)
    barrier_table: Option<Table>,
    /// scratch of `recompute_entitlements`, kept from update to update
    ent_scratch: EntScratch,
    /// a VM's shares, reservation, limit or power state changed since the claims in
    /// `ent_scratch` were built: the next update builds them afresh (else it only sets each
    /// one's demand)
    claims_stale: bool,
    /// per VM, its latest entitlement and demand estimate, MHz (sampled into the `vm` table):
    /// apart from `Vm`, so that the entitlement update writes a dense array, not a line of
    /// every VM's record
    vm_ent: Vec<(f64, f64)>,
    /// scratch of a sample: per VM, its sampled facts (kept, so that a sample allocates
    /// nothing: a fresh vector each time took fresh heap pages, 340 page faults on the event
    /// loop in a bench-1024vm run through Python, 17 with the vector kept)
    vm_rows: Vec<VmRow>,
    now: Time,
    events: u64,
    log: Vec<(Time, String)>,
}

impl std::fmt::Debug for Simulation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulation")
            .field("host", &self.spec.host.name)
            .field("vms", &self.vms.len())
            .field("now", &self.now)
            .field("events", &self.events)
            .field("storage", &self.storage.is_some())
            .field("mem", &self.mem.is_some())
            .finish()
    }
}

impl Simulation {
    /// VMs admitted at construction between two `keep_going()` checks
    /// ([`Simulation::new_interruptible`]).
    pub const ADMISSIONS_PER_CHECK: usize = 16;

    /// Build a simulation and power on the VMs due at time zero.
    ///
    /// # Examples
    /// ```
    /// use vmtwin_core::{Simulation, spec::SimSpec};
    /// let spec = SimSpec::from_json(r#"{
    ///   "seed": 1, "duration_ns": 4000000000, "sample_interval_ns": 2000000000,
    ///   "host": {"name": "h", "sockets": 1, "numa_nodes_per_socket": 1, "llcs_per_node": 1,
    ///            "cores_per_llc": 1, "threads_per_core": 1, "core_mhz": 2000, "memory_bytes": 0},
    ///   "vms": [
    ///     {"name": "a", "pool": null, "vcpus": 1, "memory_bytes": 0, "shares": 3000,
    ///      "reservation_mhz": 0, "limit_mhz": null,
    ///      "workload": {"kind": "cpu_bound", "duty": 1.0, "burst_ns": 10000000, "burst_dist": "fixed"}},
    ///     {"name": "b", "pool": null, "vcpus": 1, "memory_bytes": 0, "shares": 1000,
    ///      "reservation_mhz": 0, "limit_mhz": null,
    ///      "workload": {"kind": "cpu_bound", "duty": 1.0, "burst_ns": 10000000, "burst_dist": "fixed"}}
    ///   ]}"#).unwrap();
    /// let mut sim = Simulation::new(spec).unwrap();
    /// sim.run().unwrap();
    /// let a = sim.vcpu_used_ns(0) as f64;
    /// let b = sim.vcpu_used_ns(1) as f64;
    /// assert!((a / (a + b) - 0.75).abs() < 0.01);
    ///
    /// // a reservation beyond the host fails admission control, naming the shortfall
    /// let mut bad = sim.spec().clone();
    /// bad.vms[0].reservation_mhz = 2000;
    /// bad.vms[1].reservation_mhz = 1000;
    /// let err = Simulation::new(bad).unwrap_err().to_string();
    /// assert!(err.contains("shortfall 1000 MHz"), "{err}");
    /// ```
    pub fn new(spec: SimSpec) -> VmtwinResult<Self> {
        Self::new_interruptible(spec, &mut || true)
    }

    /// [`Simulation::new`], asking `keep_going()` between VM admissions (every
    /// [`Simulation::ADMISSIONS_PER_CHECK`]) whether to go on; when it says no, construction stops with a
    /// [`VmtwinError::Simulation`] (the bindings check for Ctrl-C there).
    pub fn new_interruptible(spec: SimSpec, keep_going: &mut dyn FnMut() -> bool) -> VmtwinResult<Self> {
        spec.cpu_sched.validate()?;
        if spec.sample_interval_ns == 0 {
            invalid!("sample_interval", spec.sample_interval_ns, "a duration > 0");
        }
        let topo = Topology::new(&spec.host)?;
        let mut pools = PoolTree::from_specs(&spec.pools, topo.capacity_mhz())?;
        let mut vms = Vec::with_capacity(spec.vms.len());
        let mut guests = Vec::new();
        let mut names = HashSet::new();
        for (i, v) in spec.vms.iter().enumerate() {
            let path = format!("vms[{i}]");
            let pool = check_vm_entry(&path, v, &topo, &pools, &mut names)?;
            let workload = Workload::from_spec(&v.workload, &format!("{path}.workload"))?;
            let first_vcpu = guests.len() as u32;
            for k in 0..v.vcpus {
                guests.push(GuestVcpu::new(Rng::new(stream_seed(spec.seed, &v.name, k)), &workload));
            }
            pools.pools[pool as usize].vms.push(i as u32);
            vms.push(Vm {
                name: v.name.clone(),
                pool,
                vcpus: v.vcpus,
                first_vcpu,
                shares: v.shares,
                reservation_mhz: v.reservation_mhz,
                limit_mhz: v.limit_mhz,
                powered_on_at: None,
                workload,
            });
        }
        let vcpus_per_vm: Vec<u32> = vms.iter().map(|v| v.vcpus).collect();
        let mut sched = CpuSched::new(&topo, spec.cpu_sched.clone(), &vcpus_per_vm);
        sched.apply_ht_sharing(&vms.iter().map(|v| v.name.as_str()).collect::<Vec<_>>())?;
        sched.apply_placement(&vms.iter().map(|v| v.name.as_str()).collect::<Vec<_>>())?;
        for (id, pool) in pools.pools.iter().enumerate() {
            if let Some(limit) = pool.limit_mhz {
                sched.add_pool_limit(limit, &pools.vms_below(id as u32));
            }
        }
        let sampler = Sampler::new(guests.len(), sched.pcpu_count());
        let queue = EventQueue::with_timers(sched.timer_slots());
        let vm_ent = vec![(0.0, 0.0); vms.len()];
        let mut sim = Simulation {
            spec,
            topo,
            sched,
            pools,
            vms,
            guests,
            queue,
            sampler,
            storage: None,
            storage_events: Slab::default(),
            storage_run: None,
            mem: None,
            mem_events: Slab::default(),
            perf: None,
            barrier_table: None,
            ent_scratch: EntScratch::default(),
            claims_stale: true,
            vm_ent,
            vm_rows: Vec::new(),
            now: 0,
            events: 0,
            log: Vec::new(),
        };
        sim.build_storage()?;
        sim.build_memory()?;
        sim.perf = sim.build_perf()?;
        // cache warmth across returns is counted by the scheduler for the model (`cpu/cache.rs`)
        if let Some(w) = sim.perf.as_ref().and_then(|m| m.warmth(sim.sched.vcpus.iter().map(|v| v.vm).collect())) {
            sim.sched.set_warmth(w);
        }
        sim.barrier_table = sim.build_barriers()?;
        for vm in 0..sim.vms.len() {
            if vm % Self::ADMISSIONS_PER_CHECK == 0 && !keep_going() {
                return Err(VmtwinError::Simulation(format!("interrupted while powering on VMs ({vm} of {})", sim.vms.len())));
            }
            let at = sim.spec.vms[vm].power_on_ns;
            if at == 0 {
                sim.admit(vm as u32)?;
            } else {
                sim.queue.push(at, Event::PowerOn { vm: vm as u32 });
            }
        }
        sim.recompute_entitlements();
        sim.queue.push(sim.spec.cpu_sched.entitlement_interval_ns, Event::Entitlement);
        sim.queue.push(sim.spec.sample_interval_ns, Event::Sample);
        sim.sched.start_dormancy(&mut sim.queue);
        Ok(sim)
    }

    /// The spec this simulation was built from, with every default in force.
    pub fn spec(&self) -> &SimSpec {
        &self.spec
    }

    /// Current simulated time.
    pub fn now(&self) -> Time {
        self.now
    }

    /// When the next pending event is due, if any.
    pub fn next_event_time(&self) -> Option<Time> {
        self.queue.peek_time()
    }

    /// Events processed so far.
    pub fn event_count(&self) -> u64 {
        self.events
    }

    /// VM names, by VM index.
    pub fn vm_names(&self) -> Vec<String> {
        self.vms.iter().map(|v| v.name.clone()).collect()
    }

    /// Index of a VM by name.
    pub fn vm_index(&self, name: &str) -> VmtwinResult<u32> {
        self.vms
            .iter()
            .position(|v| v.name == name)
            .map(|i| i as u32)
            .ok_or_else(|| VmtwinError::Simulation(format!("no VM named '{name}'")))
    }

    /// The scheduler, for reading counters.
    pub fn sched(&self) -> &CpuSched {
        &self.sched
    }

    /// Charged CPU ns of vCPU `v` (global vCPU index) up to the last event.
    pub fn vcpu_used_ns(&self, v: usize) -> u64 {
        self.sched.vcpus[v].used_ns
    }

    /// Cumulative state times of a VM (summed over its vCPUs), accounted up to now:
    /// `[run, ready, mlmtd, wait, idle, used]` ns.
    pub fn vm_counters(&mut self, vm: u32) -> [u64; 6] {
        self.sched.account_all(self.now);
        let v = &self.vms[vm as usize];
        let mut out = [0u64; 6];
        for vc in &self.sched.vcpus[v.first_vcpu as usize..(v.first_vcpu + v.vcpus) as usize] {
            for (o, t) in out.iter_mut().zip(&vc.time_ns[..5]) {
                *o += t;
            }
            out[5] += vc.used_ns;
        }
        out
    }

    /// Notable happenings (refused power-ons), with their times.
    pub fn log(&self) -> &[(Time, String)] {
        &self.log
    }

    /// The sampled tables: the CPU side's `host`, `vm`, `vcpu`, `pcpu`, then each subsystem's.
    pub fn tables(&self) -> Vec<(&'static str, &Table)> {
        let s = &self.sampler;
        let mut v = vec![("host", &s.host), ("vm", &s.vm), ("vcpu", &s.vcpu), ("pcpu", &s.pcpu)];
        v.extend(self.mem_tables());
        if let Some(p) = &self.perf {
            v.push(("vcpu_perf", &p.table));
        }
        if let Some(b) = &self.barrier_table {
            v.push(("barrier", b));
        }
        v.extend(self.storage_tables());
        v
    }

    /// One sampled table by name.
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables().into_iter().find(|(n, _)| *n == name).map(|(_, t)| t)
    }

    /// Move the rows sampled since the last drain out of every table (names and schemas as
    /// [`Simulation::tables`]). A run drained as it goes holds one drain's rows.
    pub fn drain_tables(&mut self) -> Vec<(&'static str, Table)> {
        let s = &mut self.sampler;
        s.tables_out();
        let mut v = vec![("host", s.host.take()), ("vm", s.vm.take()), ("vcpu", s.vcpu.take()), ("pcpu", s.pcpu.take())];
        v.extend(self.drain_mem_tables());
        if let Some(p) = &mut self.perf {
            v.push(("vcpu_perf", p.table.take()));
        }
        if let Some(b) = &mut self.barrier_table {
            v.push(("barrier", b.take()));
        }
        v.extend(self.drain_storage_tables());
        v
    }

    /// Power on VM `vm` now; admission control may refuse its reservation.
    pub fn power_on(&mut self, vm: u32) -> VmtwinResult<()> {
        self.admit(vm)?;
        self.recompute_entitlements();
        Ok(())
    }

    /// Power on VM `vm` without updating entitlements (the caller does, once for a batch).
    fn admit(&mut self, vm: u32) -> VmtwinResult<()> {
        let v = &self.vms[vm as usize];
        if v.powered_on_at.is_some() {
            return Err(VmtwinError::Simulation(format!("VM '{}' is already powered on", v.name)));
        }
        self.pools.reserve(v.pool, v.reservation_mhz, &v.name)?;
        if self.mem.is_some() {
            if let Err(e) = self.mem_power_on(vm) {
                let v = &self.vms[vm as usize];
                self.pools.release(v.pool, v.reservation_mhz);
                return Err(e);
            }
        }
        let v = &self.vms[vm as usize];
        let now = self.now;
        let (first, n, limit) = (v.first_vcpu, v.vcpus, v.limit_mhz);
        self.vms[vm as usize].powered_on_at = Some(now);
        self.claims_stale = true;
        self.sched.power_on(vm, now);
        self.sched.set_limit(vm, limit, now, &mut self.queue);
        for k in first..first + n {
            let next = self.vms[vm as usize].workload.at_power_on(&mut self.guests[k as usize]);
            self.follow(k, next);
        }
        Ok(())
    }

    /// Change a VM's shares, reservation or limit (`Some(None)` removes the limit).
    pub fn set_vm_cpu(&mut self, vm: u32, shares: Option<u32>, reservation_mhz: Option<u64>, limit_mhz: Option<Option<u64>>) -> VmtwinResult<()> {
        let v = self.vms[vm as usize].clone();
        let shares = shares.unwrap_or(v.shares);
        let reservation = reservation_mhz.unwrap_or(v.reservation_mhz);
        let limit = limit_mhz.unwrap_or(v.limit_mhz);
        check_vm_cpu(&v.name, v.vcpus, self.topo.core_mhz, shares, reservation, limit)?;
        if v.powered_on_at.is_some() && reservation != v.reservation_mhz {
            self.pools.release(v.pool, v.reservation_mhz);
            if let Err(e) = self.pools.reserve(v.pool, reservation, &v.name) {
                self.pools.reserve(v.pool, v.reservation_mhz, &v.name).expect("old reservation fits again");
                return Err(e);
            }
        }
        let m = &mut self.vms[vm as usize];
        self.claims_stale = true;
        m.shares = shares;
        m.reservation_mhz = reservation;
        if limit != v.limit_mhz {
            m.limit_mhz = limit;
            if v.powered_on_at.is_some() {
                self.sched.set_limit(vm, limit, self.now, &mut self.queue);
            }
        }
        self.recompute_entitlements();
        Ok(())
    }

    /// Process the next event. Returns false when nothing is pending.
    #[inline]
    pub fn step(&mut self) -> bool {
        self.step_event().is_some()
    }

    /// Process the next event and return it.
    #[inline]
    fn step_event(&mut self) -> Option<Event> {
        let (t, ev) = self.queue.pop()?;
        self.handle(t, ev);
        Some(ev)
    }

    /// Process event `ev`, due at `t` and just popped (always inlined: the run loop's body).
    /// The two events of nearly every step, a slice's end and a wake-up, are told apart by two
    /// tests, then a limit's refill by a third; the rest go to [`Self::handle_other`]. (A `match` over all of them compiled to a
    /// jump table whose indirect jump was 97% of the indirect branches mispredicted in
    /// callgrind's branch simulation on bench-mixed, 0.64 per event; which event comes next is
    /// a coin toss between the two.)
    #[inline(always)]
    fn handle(&mut self, t: Time, ev: Event) {
        self.now = t;
        self.events += 1;
        if let Event::SliceEnd { pcpu } = ev {
            if let Some(v) = self.sched.slice_end(pcpu, t, &mut self.queue) {
                match self.next_with_mem(v, true) {
                    Next::Work(w) => self.sched.burst_done(pcpu, v, Some(w), t, &mut self.queue),
                    halt => {
                        self.sched.burst_done(pcpu, v, None, t, &mut self.queue);
                        self.follow_inline(v, halt);
                    }
                }
            }
        } else if let Event::Wake { vcpu } = ev {
            let next = self.next_with_mem(vcpu, false);
            match next {
                Next::Work(w) => self.sched.wake_inline(vcpu, w, t, &mut self.queue),
                other => self.follow(vcpu, other),
            }
        } else if let Event::LimitRefill { limiter, gen } = ev {
            // a limit's release (bench-mixed: one event in 20): a direct call, not through
            // `handle_other`'s jump table and its prologue, which saves every register for the
            // rarer events' bodies
            self.sched.limit_refill(limiter, gen, t, &mut self.queue);
        } else {
            self.handle_other(t, ev);
        }
    }

    /// [`Self::handle`] of every event but a slice's end, a wake-up and a limit's refill.
    #[inline(never)]
    fn handle_other(&mut self, t: Time, ev: Event) {
        match ev {
            Event::Wake { .. } | Event::SliceEnd { .. } | Event::LimitRefill { .. } => unreachable!("handled by the run loop's step"),
            Event::LimitDormant { gen } => self.sched.limit_dormant(gen, t, &mut self.queue),
            Event::Cosched { vm, gen } => self.sched.cosched_check(vm, gen, t, &mut self.queue),
            Event::Entitlement => {
                let interval = self.spec.cpu_sched.entitlement_interval_ns;
                self.sched.update_demand(t, interval);
                self.sched.rebalance_cells(t, &mut self.queue);
                self.recompute_entitlements();
                // the pool limits `update_demand` woke look again at the new entitlements
                self.sched.look_dormancy(t, &mut self.queue);
                self.queue.push(t + interval, Event::Entitlement);
            }
            Event::Sample => {
                let since = t.saturating_sub(self.spec.sample_interval_ns);
                let core = self.topo.core_mhz as f64;
                self.vm_rows.clear();
                self.vm_rows.extend(self.vms.iter().zip(&self.vm_ent).map(|(v, &e)| vm_row(v, e, since, t, core)));
                // (the sampler brings every vCPU's counters to `t` as it reads them)
                self.sampler.sample(t, &mut self.sched, &self.vm_rows, self.topo.core_mhz);
                self.mem_sample(t);
                self.sample_perf(t);
                self.sample_barriers(t);
                self.sample_storage(t);
                self.queue.push(t + self.spec.sample_interval_ns, Event::Sample);
            }
            Event::PowerOn { vm } => {
                if let Err(e) = self.power_on(vm) {
                    self.log.push((t, e.to_string()));
                }
            }
            Event::Storage { slot } => self.route_storage(slot, t),
            Event::Mem { slot } => self.route_mem(slot, t),
        }
    }

    /// Run every event up to and including time `until`, then set the clock to `until`.
    /// `progress(now)` is called after every sample; returning false stops the run early.
    pub fn run_until(&mut self, until: Time, progress: &mut dyn FnMut(Time) -> bool) -> VmtwinResult<()> {
        self.run_until_bounded(until, u64::MAX, progress).map(|_| ())
    }

    /// [`Simulation::run_until`] processing at most `max_events` events: returns true when it
    /// reached `until` (the clock is then `until`), false when it stopped at the budget or on
    /// `progress` (call again to go on; the result is the same as one unbounded call). The
    /// bindings use the budget to check for Ctrl-C between slices of a run.
    pub fn run_until_bounded(&mut self, until: Time, max_events: u64, progress: &mut dyn FnMut(Time) -> bool) -> VmtwinResult<bool> {
        if until < self.now {
            return Err(VmtwinError::Simulation(format!("cannot run back to {until} ns: the clock is at {} ns", self.now)));
        }
        // room in the sampled tables for every sample due before `until` (the bindings run in
        // slices of about 2^16 rows and drain each; a whole run reserves the whole run's rows)
        let interval = self.spec.sample_interval_ns;
        let samples = (until / interval).saturating_sub(self.now / interval);
        self.sampler.reserve_samples(usize::try_from(samples).unwrap_or(usize::MAX), self.vms.len());
        let mut left = max_events;
        loop {
            if left == 0 {
                if self.queue.peek_time().is_some_and(|t| t <= until) {
                    return Ok(false);
                }
                break;
            }
            // one look for the earliest event, not a peek and then a pop
            let Some((t, ev)) = self.queue.pop_until(until) else { break };
            left -= 1;
            self.handle(t, ev);
            if matches!(ev, Event::Sample) && !progress(self.now) {
                return Ok(false);
            }
        }
        self.now = until;
        Ok(true)
    }

    /// Run to the spec's duration.
    pub fn run(&mut self) -> VmtwinResult<()> {
        self.run_until(self.spec.duration_ns, &mut |_| true)
    }

    /// Ask the workload what vCPU `v` does next (always inlined: the step's hot path; callgrind
    /// on bench-64vm counts about 2% more instructions when it is a call).
    #[inline(always)]
    fn workload_next(&mut self, v: u32, after_burst: bool) -> Next {
        // a closed-loop `cpu_bound` vCPU draws from its own copy (`GuestVcpu::closed`): no read
        // of its VM's record
        let g = &mut self.guests[v as usize];
        if let Some(c) = g.closed {
            return c.next(!after_burst, &mut g.rng);
        }
        let vm = &self.vms[self.sched.vcpus[v as usize].vm as usize];
        if let Workload::Barrier(_) = vm.workload {
            return self.barrier_next(v, after_burst);
        }
        let t = self.now - vm.powered_on_at.unwrap_or(0);
        let g = &mut self.guests[v as usize];
        if after_burst {
            vm.workload.after_burst(t, g)
        } else {
            vm.workload.on_wake(t, g)
        }
    }

    /// [`Self::follow`] with a halt's wake pushed inline: the run loop's burst end that halts
    /// (bench-mixed: 155,647 of a minute's 359,214 events), where the call paid a prologue and
    /// epilogue that save six registers and a jump on the variant around a push of ~60
    /// instructions.
    #[inline(always)]
    fn follow_inline(&mut self, v: u32, next: Next) {
        if let Next::Halt(d) = next {
            self.queue.push(self.now + d, Event::Wake { vcpu: v });
        } else {
            self.follow(v, next);
        }
    }

    /// Schedule the wake that ends a halt (the vCPU is already halted).
    fn follow(&mut self, v: u32, next: Next) {
        match next {
            Next::Halt(d) => self.queue.push(self.now + d, Event::Wake { vcpu: v }),
            Next::HaltForever => {}
            Next::Io => self.start_vcpu_io(v), // halted by the burst's end; it waits for the I/O
            Next::Wait => self.sched.block(v, self.now), // halted too; a subsystem resumes it
            Next::Work(_) => unreachable!("work is started by the scheduler"),
        }
    }

    /// Recompute every VM's entitlement and every vCPU's weight (`entitlement.rs`): one
    /// water-filling of the pool tree from shares, reservations, limits and each VM's demand
    /// estimate (the EWMA of its vCPUs' runnable time), giving each VM its max-min allocation
    /// (`entitlement_mhz`) and its scheduling weight, split evenly over its vCPUs.
    fn recompute_entitlements(&mut self) {
        let core = self.topo.core_mhz as f64;
        // (last time's buffers: `EntScratch`)
        let EntScratch { mut claims, mut shares, mut room, mut keys, mut share_limits } = std::mem::take(&mut self.ent_scratch);
        // (each VM's vCPUs' estimates summed by the demand walk, in vCPU order)
        let claim = |v: &Vm, demand: f64| VmClaim::of(v.shares, v.reservation_mhz, v.limit_mhz, v.vcpus, core, demand * core, v.powered_on_at.is_some());
        if self.claims_stale || claims.len() != self.vms.len() {
            claims.clear();
            claims.extend(self.vms.iter().zip(self.sched.vm_demand()).map(|(v, &demand)| claim(v, demand)));
            self.claims_stale = false;
        } else {
            // only the demand moved since: the rest of each claim is its VM's settings
            for (c, &demand) in claims.iter_mut().zip(self.sched.vm_demand()) {
                c.demand_mhz = demand * core;
            }
            debug_assert!(
                claims.iter().zip(&self.vms).zip(self.sched.vm_demand()).all(|((c, v), &d)| format!("{c:?}") == format!("{:?}", claim(v, d))),
                "a claim left stale by a change of its VM's settings"
            );
        }
        // every VM is in one pool's list, so every share is written below (last time's are
        // overwritten, not zeroed first)
        if shares.len() != claims.len() {
            shares.clear();
            shares.resize(claims.len(), VcpuShare::default());
        }
        let limits = self.pools.has_limits();
        if limits {
            share_limits.clear();
            share_limits.resize(claims.len(), None);
        }
        let vm_ent = &mut self.vm_ent[..claims.len()];
        // each VM's vCPUs' share built as the tree hands out its entitlement, not in a walk of
        // its own over the result
        self.pools.entitlements_each(&claims, self.topo.capacity_mhz() as f64, &mut room, |v, e| {
            let c = &claims[v];
            vm_ent[v] = (e.mhz, c.demand_mhz);
            // the VM's vCPUs x core MHz (`VmClaim::of`)
            let per = c.cap_mhz;
            shares[v] = VcpuShare { weight: e.weight_mhz / per, alloc: e.mhz / per, satisfied: e.satisfied, held: e.held, at_floor: e.at_floor, share: e.share_mhz / per, reserved: c.reservation_mhz / per };
            if limits {
                share_limits[v] = e.share_limit_mhz;
            }
        });
        if limits {
            for (i, &l) in share_limits.iter().enumerate() {
                self.sched.set_share_limit(i as u32, l, self.now, &mut self.queue);
            }
        }
        self.sched.set_weights(self.now, &shares, &mut keys);
        self.ent_scratch = EntScratch { claims, shares, room, keys, share_limits };
    }
}

/// Checks of one VM entry of the spec, shared by the event and the fluid engine: a name not
/// used before (`names` collects them), vCPUs the host can hold, a pool that exists (its id is
/// returned) and CPU settings that make sense.
pub(crate) fn check_vm_entry<'a>(path: &str, v: &'a VmSpec, topo: &Topology, pools: &PoolTree, names: &mut HashSet<&'a str>) -> VmtwinResult<u32> {
    if !names.insert(v.name.as_str()) {
        invalid!(format!("{path}.name"), v.name, "a name not used by another VM");
    }
    let max_vcpus = MAX_VCPUS_PER_VM.min(topo.len() as u32);
    if v.vcpus == 0 || v.vcpus > max_vcpus {
        invalid!(format!("{path}.vcpus"), v.vcpus, format!("an integer from 1 to {max_vcpus} (the host's logical CPUs)"));
    }
    let pool = match &v.pool {
        None => ROOT_POOL,
        Some(name) => match pools.find(name) {
            Some(id) => id,
            None => invalid!(format!("{path}.pool"), name, "the name of a resource pool"),
        },
    };
    check_vm_cpu(path, v.vcpus, topo.core_mhz, v.shares, v.reservation_mhz, v.limit_mhz)?;
    Ok(pool)
}

/// A VM's sampled facts for the interval `since..now`; its true demand (what it would use with
/// no contention and no limit) comes from its workload model.
fn vm_row(v: &Vm, (entitlement_mhz, demand_est_mhz): (f64, f64), since: Time, now: Time, core_mhz: f64) -> VmRow {
    let demand_mhz = v.powered_on_at.map_or(0.0, |on| {
        v.workload.demand(since.max(on) - on, now - on) * v.vcpus as f64 * core_mhz
    });
    VmRow {
        vcpus: v.vcpus,
        shares: v.shares,
        reservation_mhz: v.reservation_mhz,
        limit_mhz: v.limit_mhz,
        entitlement_mhz,
        demand_mhz,
        demand_est_mhz,
        powered_on_at: v.powered_on_at,
    }
}

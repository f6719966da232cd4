//! Property test: every VM's long-run CPU is the exact hierarchical max-min allocation, computed
//! by an oracle written here apart from the engine (and from `common::oracle`).
//!
//! vSphere's semantics (research/cpu.md C1), in MHz: a VM's ceiling is min(demand, limit,
//! vCPUs x core MHz) and its floor min(reservation, ceiling); a pool's ceiling is min(limit, sum
//! of its children's ceilings) and its floor min(max(reservation, sum of children's floors),
//! ceiling); top down, each parent's allocation (the root's is the host's capacity) is split over
//! its children as a_i = clamp(level x shares_i, floor_i, ceiling_i) summing to the parent's
//! allocation, or every child at its ceiling if those fit.
//!
//! The split is solved by variable fixing (Bitran and Hax): take the level that spends the
//! allocation over the children not yet fixed; if the excess over ceilings outweighs the
//! shortfall under floors, the true level is higher, so the children above their ceilings are
//! fixed there, otherwise those below their floors are fixed at them; repeat.
//!
//! Workloads are open-loop CPU work (demand exactly duty x vCPUs x core MHz whatever the
//! contention) or idle. Each case runs 60 s; the CPU each VM used after 5 s must be within 2%
//! of its allocation or 0.5% of a pCPU. Exponential bursts are drawn only for VMs whose demand
//! exceeds their allocation by 15% (Poisson arrivals make a lightly loaded VM's realised demand
//! wander by more than the tolerance). Reservations are drawn top down within budgets that
//! admission control accepts. A case whose run needs more than `MAX_EVENTS_PER_S` fails too
//! (an engine thrashing on events), which keeps the test's runtime bounded.

mod common;

use common::{MS, S};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use vmtwin_core::spec::{Arrivals, BurstDist, HostSpec, PoolSpec, SimSpec, VmSpec, WorkloadSpec};
use vmtwin_core::Simulation;

const DURATION: u64 = 60 * S;
const WARMUP: u64 = 5 * S;
const REL_TOL: f64 = 0.02;
const ABS_TOL_PCPU: f64 = 0.005;
const BACKLOG: f64 = 1.15;
/// Bursts (at most one per 2 ms per pCPU's worth of work), quanta, samples and entitlement
/// updates come to a few thousand events per pCPU and simulated second (a binding pool limit
/// served in 1 ms slices: tens of thousands); beyond this budget the engine is thrashing (seen
/// with pool limits: 4.4 M events/s on 8 pCPUs, 37 s for one case) and the case fails.
const MAX_EVENTS_PER_S: u64 = 500_000;

// ------------------------------------------------------------------------------------------
// The oracle
// ------------------------------------------------------------------------------------------

/// One node of the allocation tree.
#[derive(Debug, Clone)]
enum Node {
    Vm { idx: usize, vcpus: u32, shares: f64, demand: f64, reservation: f64, limit: Option<f64> },
    Pool { shares: f64, reservation: f64, limit: Option<f64>, children: Vec<Node> },
}

impl Node {
    fn shares(&self) -> f64 {
        match self {
            Node::Vm { shares, .. } | Node::Pool { shares, .. } => *shares,
        }
    }

    fn ceiling(&self, core: f64) -> f64 {
        match self {
            Node::Vm { vcpus, demand, limit, .. } => demand.min(*vcpus as f64 * core).min(limit.unwrap_or(f64::INFINITY)),
            Node::Pool { limit, children, .. } => {
                children.iter().map(|c| c.ceiling(core)).sum::<f64>().min(limit.unwrap_or(f64::INFINITY))
            }
        }
    }

    fn floor(&self, core: f64) -> f64 {
        match self {
            Node::Vm { reservation, .. } => reservation.min(self.ceiling(core)),
            Node::Pool { reservation, children, .. } => {
                reservation.max(children.iter().map(|c| c.floor(core)).sum::<f64>()).min(self.ceiling(core))
            }
        }
    }
}

/// a_i = clamp(level * s_i, lo_i, hi_i) with sum a_i = amount (every hi_i if they fit; the
/// floors scaled down if they alone exceed the amount).
fn split(amount: f64, s: &[f64], lo: &[f64], hi: &[f64]) -> Vec<f64> {
    let n = s.len();
    if hi.iter().sum::<f64>() <= amount {
        return hi.to_vec();
    }
    let floors: f64 = lo.iter().sum();
    if floors >= amount {
        return lo.iter().map(|l| if floors > 0.0 { l * amount / floors } else { 0.0 }).collect();
    }
    let mut fixed: Vec<Option<f64>> = vec![None; n];
    loop {
        let free: Vec<usize> = (0..n).filter(|&i| fixed[i].is_none()).collect();
        let spent: f64 = fixed.iter().flatten().sum();
        let weight: f64 = free.iter().map(|&i| s[i]).sum();
        if free.is_empty() {
            break;
        }
        let level = (amount - spent) / weight;
        let over: f64 = free.iter().map(|&i| (level * s[i] - hi[i]).max(0.0)).sum();
        let under: f64 = free.iter().map(|&i| (lo[i] - level * s[i]).max(0.0)).sum();
        if over == 0.0 && under == 0.0 {
            for &i in &free {
                fixed[i] = Some(level * s[i]);
            }
            break;
        }
        if over >= under {
            for &i in &free {
                if level * s[i] >= hi[i] {
                    fixed[i] = Some(hi[i]);
                }
            }
        }
        if under >= over {
            for &i in &free {
                if level * s[i] <= lo[i] {
                    fixed[i] = Some(lo[i]);
                }
            }
        }
    }
    fixed.into_iter().map(|a| a.unwrap()).collect()
}

/// MHz allocated to each VM (by its index) below a root of `amount` MHz.
fn allocate(amount: f64, children: &[Node], core: f64, out: &mut [f64]) {
    let s: Vec<f64> = children.iter().map(|c| c.shares()).collect();
    let lo: Vec<f64> = children.iter().map(|c| c.floor(core)).collect();
    let hi: Vec<f64> = children.iter().map(|c| c.ceiling(core)).collect();
    for (c, a) in children.iter().zip(split(amount, &s, &lo, &hi)) {
        match c {
            Node::Vm { idx, .. } => out[*idx] = a,
            Node::Pool { children, .. } => allocate(a, children, core, out),
        }
    }
}

/// The oracle on a spec: MHz each VM should use in the long run.
fn expected(spec: &SimSpec) -> Vec<f64> {
    let core = spec.host.core_mhz as f64;
    let cap = spec.host.cores_per_llc as f64 * spec.host.llcs_per_node as f64 * spec.host.numa_nodes_per_socket as f64
        * spec.host.sockets as f64
        * core;
    fn kids(spec: &SimSpec, parent: Option<&str>, core: f64) -> Vec<Node> {
        let mut out = vec![];
        for p in spec.pools.iter().filter(|p| p.parent.as_deref() == parent) {
            out.push(Node::Pool {
                shares: p.shares as f64,
                reservation: p.reservation_mhz as f64,
                limit: p.limit_mhz.map(|l| l as f64),
                children: kids(spec, Some(&p.name), core),
            });
        }
        for (idx, v) in spec.vms.iter().enumerate().filter(|(_, v)| v.pool.as_deref() == parent) {
            let demand = match v.workload {
                WorkloadSpec::Idle => 0.0,
                WorkloadSpec::CpuBound { duty, arrivals: Arrivals::Open, .. } => duty * v.vcpus as f64 * core,
                _ => panic!("only open-loop cpu_bound and idle have an exact demand"),
            };
            out.push(Node::Vm {
                idx,
                vcpus: v.vcpus,
                shares: v.shares as f64,
                demand,
                reservation: v.reservation_mhz as f64,
                limit: v.limit_mhz.map(|l| l as f64),
            });
        }
        out
    }
    let mut out = vec![0.0; spec.vms.len()];
    allocate(cap, &kids(spec, None, core), core, &mut out);
    out
}

#[test]
fn oracle_hand_worked_cases() {
    let open = |duty| WorkloadSpec::CpuBound { duty, burst_ns: 5 * MS, burst_dist: BurstDist::Fixed, arrivals: Arrivals::Open };
    // 2 pCPUs x 2000: R reserves 2000 at duty 0.1 (200), X (2 vCPUs busy, 2000 reserved, shares
    // 2000) and B (busy, shares 1000) split the other 3800 2:1
    let mut s = base_spec(2, 2000);
    s.vms = vec![vm("R", None, 1, 1000, 2000, None, open(0.1)), vm("X", None, 2, 2000, 2000, None, open(1.0)),
                 vm("B", None, 1, 1000, 0, None, open(1.0))];
    let e = expected(&s);
    assert!((e[0] - 200.0).abs() < 1e-9 && (e[1] - 7600.0 / 3.0).abs() < 1e-9 && (e[2] - 3800.0 / 3.0).abs() < 1e-9, "{e:?}");
    // 1 pCPU: pools A and B equal; A holds a busy VM and one at duty 0.05, B one busy VM
    let mut s = base_spec(1, 2000);
    s.pools = vec![pool("A", None, 4000, 0, None, true), pool("B", None, 4000, 0, None, true)];
    s.vms = vec![vm("a1", Some("A"), 1, 1000, 0, None, open(1.0)), vm("a2", Some("A"), 1, 1000, 0, None, open(0.05)),
                 vm("b", Some("B"), 1, 1000, 0, None, open(1.0))];
    let e = expected(&s);
    assert!((e[0] - 900.0).abs() < 1e-9 && (e[1] - 100.0).abs() < 1e-9 && (e[2] - 1000.0).abs() < 1e-9, "{e:?}");
    // 2 pCPUs: pool outer (8000) holds inner (4000, limit 1000, two busy VMs) and w (2 vCPUs busy,
    // shares 2000, reserving 2500), beside v (2 vCPUs busy, shares 2000): outer 3200, v 800,
    // inner 700 (350 each), w 2500
    let mut s = base_spec(2, 2000);
    s.pools = vec![pool("outer", None, 8000, 0, None, true), pool("inner", Some("outer"), 4000, 0, Some(1000), true)];
    s.vms = vec![vm("i1", Some("inner"), 1, 1000, 0, None, open(1.0)), vm("i2", Some("inner"), 1, 1000, 0, None, open(1.0)),
                 vm("w", Some("outer"), 2, 2000, 2500, None, open(1.0)), vm("v", None, 2, 2000, 0, None, open(1.0))];
    let e = expected(&s);
    let want = [350.0, 350.0, 2500.0, 800.0];
    assert!(e.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-9), "{e:?}");
}

// ------------------------------------------------------------------------------------------
// Specs
// ------------------------------------------------------------------------------------------

fn base_spec(cores: u32, core_mhz: u64) -> SimSpec {
    SimSpec {
        seed: 11,
        duration_ns: DURATION,
        sample_interval_ns: 10 * S,
        host: HostSpec {
            name: "h".into(),
            sockets: 1,
            numa_nodes_per_socket: 1,
            llcs_per_node: 1,
            cores_per_llc: cores,
            threads_per_core: 1,
            core_mhz,
            memory_bytes: 1 << 36,
        },
        cpu_sched: Default::default(),
        pools: vec![],
        vms: vec![],
        memory: None,
        perf: None,
        storage: None,
        fidelity: Default::default(),
    }
}

fn pool(name: &str, parent: Option<&str>, shares: u32, res: u64, limit: Option<u64>, expandable: bool) -> PoolSpec {
    PoolSpec { name: name.into(), parent: parent.map(Into::into), shares, reservation_mhz: res, limit_mhz: limit, expandable }
}

#[allow(clippy::too_many_arguments)]
fn vm(name: &str, pool: Option<&str>, vcpus: u32, shares: u32, res: u64, limit: Option<u64>, w: WorkloadSpec) -> VmSpec {
    VmSpec {
        name: name.into(),
        pool: pool.map(Into::into),
        vcpus,
        memory_bytes: 1 << 30,
        shares,
        reservation_mhz: res,
        limit_mhz: limit,
        power_on_ns: 0,
        workload: w,
    }
}

/// A VM's random draws: vCPUs, shares, duty in % (0 = idle), limit in % of its vCPUs' MHz,
/// container choice, reservation wish (% of what is left), burst ms, exponential wish.
type VmDraw = (u32, u32, u32, Option<u32>, usize, Option<u32>, u64, bool);
/// A pool's: shares, limit (% of the host), expandable, reservation wish, own-reservation share.
type PoolDraw = (u32, Option<u32>, bool, Option<u32>, u32);

fn vm_draw() -> impl Strategy<Value = VmDraw> {
    (
        1u32..=8,
        1u32..=20_000,
        prop_oneof![1 => Just(0u32), 7 => 5u32..=100],
        prop_oneof![3 => Just(None), 1 => (5u32..=100).prop_map(Some)],
        0usize..16,
        prop_oneof![Just(None), (0u32..=100).prop_map(Some)],
        prop_oneof![Just(2u64), Just(5), Just(10)],
        any::<bool>(),
    )
}

fn pool_draw() -> impl Strategy<Value = PoolDraw> {
    (
        1u32..=20_000,
        prop_oneof![2 => Just(None), 1 => (12u32..=100).prop_map(Some)],
        any::<bool>(),
        prop_oneof![Just(None), (0u32..=100).prop_map(Some)],
        0u32..=100,
    )
}

/// Builds the spec: pools p0..p2 under the root (as many as `top`), each with `sub[i]` child
/// pools; VMs in a container chosen among the root and the pools; reservations top down.
fn build(cores: u32, core_mhz: u64, top: usize, sub: [usize; 3], pools: &[PoolDraw], vms: &[VmDraw], seed: u64) -> SimSpec {
    let mut s = base_spec(cores, core_mhz);
    s.seed = seed;
    let cap = cores as u64 * core_mhz;
    let mut names: Vec<(String, Option<String>)> = vec![];
    for (i, &n) in sub.iter().enumerate().take(top) {
        names.push((format!("p{i}"), None));
        for j in 0..n {
            names.push((format!("p{i}{j}"), Some(format!("p{i}"))));
        }
    }
    for (k, (name, parent)) in names.iter().enumerate() {
        let (shares, limit_pct, expandable, _, _) = pools[k];
        let limit = limit_pct.map(|p| (p as u64 * cap / 100).max(core_mhz / 4));
        s.pools.push(pool(name, parent.as_deref(), shares, 0, limit, expandable));
    }
    for (i, &(vcpus, shares, duty, limit_pct, container, _, burst_ms, _)) in vms.iter().enumerate() {
        let vcpus = vcpus.min(cores);
        let pool = if container == 0 || names.is_empty() { None } else { Some(names[(container - 1) % names.len()].0.clone()) };
        let limit = limit_pct.map(|p| (p as u64 * vcpus as u64 * core_mhz / 100).max(1));
        let w = if duty == 0 {
            WorkloadSpec::Idle
        } else {
            WorkloadSpec::CpuBound { duty: duty as f64 / 100.0, burst_ns: burst_ms * MS, burst_dist: BurstDist::Fixed, arrivals: Arrivals::Open }
        };
        s.vms.push(vm(&format!("vm{i}"), pool.as_deref(), vcpus, shares, 0, limit, w));
    }
    // reservations within budgets admission control accepts
    fn fill(s: &mut SimSpec, container: Option<&str>, budget: u64, pools: &[PoolDraw], vms: &[VmDraw], core_mhz: u64) {
        let mut left = budget;
        let kids: Vec<usize> = (0..s.pools.len()).filter(|&k| s.pools[k].parent.as_deref() == container).collect();
        for k in kids {
            let (_, _, expandable, wish, own) = pools[k];
            let mut b = wish.map_or(0, |w| w as u64 * left / 100);
            if let Some(l) = s.pools[k].limit_mhz {
                b = b.min(l);
            }
            s.pools[k].reservation_mhz = if expandable { own as u64 * b / 100 } else { b };
            let name = s.pools[k].name.clone();
            fill(s, Some(&name), b, pools, vms, core_mhz);
            left -= b;
        }
        for i in 0..s.vms.len() {
            if s.vms[i].pool.as_deref() != container {
                continue;
            }
            let cap = s.vms[i].limit_mhz.unwrap_or(s.vms[i].vcpus as u64 * core_mhz);
            let r = vms[i].5.map_or(0, |w| w as u64 * left / 100).min(cap);
            s.vms[i].reservation_mhz = r;
            left -= r;
        }
    }
    fill(&mut s, None, cap * 9 / 10, pools, vms, core_mhz);
    let exp = expected(&s);
    for (i, v) in s.vms.iter_mut().enumerate() {
        if let WorkloadSpec::CpuBound { duty, burst_dist, .. } = &mut v.workload {
            if vms[i].7 && *duty * v.vcpus as f64 * core_mhz as f64 >= BACKLOG * exp[i] {
                *burst_dist = BurstDist::Exponential;
            }
        }
    }
    s
}

fn report(s: &SimSpec, exp: &[f64], got: &[f64]) -> String {
    let core = s.host.core_mhz as f64;
    let mut out = format!("host {} cores x {} MHz, seed {}\n", s.host.cores_per_llc, s.host.core_mhz, s.seed);
    for p in &s.pools {
        out += &format!("pool {} (parent {:?}): shares {} res {} limit {:?} expandable {}\n", p.name, p.parent, p.shares,
                        p.reservation_mhz, p.limit_mhz, p.expandable);
    }
    for (i, v) in s.vms.iter().enumerate() {
        let (duty, dist) = match &v.workload {
            WorkloadSpec::CpuBound { duty, burst_dist, .. } => (*duty, format!("{burst_dist:?}")),
            _ => (0.0, "idle".into()),
        };
        out += &format!(
            "{} pool {:?} vcpus {} shares {} res {} limit {:?} duty {} {}: expected %USED {:.2}, got {:.2}\n",
            v.name, v.pool, v.vcpus, v.shares, v.reservation_mhz, v.limit_mhz, duty, dist,
            100.0 * exp[i] / core, 100.0 * got[i] / core
        );
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 192,
        rng_seed: RngSeed::Fixed(20_240_611),
        failure_persistence: None,
        max_shrink_iters: 24,
        ..ProptestConfig::default()
    })]

    /// Every VM uses its hierarchical max-min allocation, within 2% or 0.5% of a pCPU.
    /// Quarantined while issue 5 is open (near-critical load, bursty VMs beside a VM near its
    /// per-vCPU cap: see tests/python/simulation/test_maxmin_property.py); run it with
    /// `cargo test --release -p vmtwin-core --test maxmin_oracle -- --ignored`.
    #[test]
    #[ignore = "issue 5 known gaps: run with --ignored"]
    fn vms_get_their_hierarchical_maxmin_allocation(
        cores in 1u32..=8,
        core_mhz in prop_oneof![Just(1000u64), Just(2000), Just(2600)],
        top in 0usize..=3,
        sub in [0usize..=2, 0usize..=2, 0usize..=2],
        pools in proptest::collection::vec(pool_draw(), 9),
        vms in proptest::collection::vec(vm_draw(), 1..=8),
        seed in any::<u64>(),
    ) {
        let s = build(cores, core_mhz, top, sub, &pools, &vms, seed);
        let exp = expected(&s);
        let mut sim = Simulation::new(s.clone()).expect("admission control accepts the drawn reservations");
        sim.run_until(WARMUP, &mut |_| true).unwrap();
        let before: Vec<u64> = (0..s.vms.len()).map(|i| sim.vm_counters(i as u32)[5]).collect();
        // in 5 s steps, so that an engine thrashing on events fails the case quickly instead of
        // running for minutes (a sane run needs well under MAX_EVENTS_PER_S)
        let mut t = WARMUP;
        while t < DURATION {
            t = (t + 5 * S).min(DURATION);
            sim.run_until(t, &mut |_| true).unwrap();
            prop_assert!(sim.event_count() <= MAX_EVENTS_PER_S * t / S,
                "{} events in the first {} s on {} pCPUs: the engine thrashes\n{}", sim.event_count(), t / S, cores,
                report(&s, &exp, &vec![f64::NAN; s.vms.len()]));
        }
        let core = core_mhz as f64;
        let got: Vec<f64> = (0..s.vms.len())
            .map(|i| (sim.vm_counters(i as u32)[5] - before[i]) as f64 / (DURATION - WARMUP) as f64 * core)
            .collect();
        for i in 0..s.vms.len() {
            let ok = (got[i] - exp[i]).abs() <= (REL_TOL * exp[i]).max(ABS_TOL_PCPU * core);
            prop_assert!(ok, "vm{} off its max-min allocation\n{}", i, report(&s, &exp, &got));
        }
    }
}

//! Memory bandwidth contention: vCPUs missing to the same NUMA node's memory controller queue
//! behind each other, and the wait lengthens every miss's stall.
//!
//! Each node's memory controller moves at most `mem_node_bytes_per_ns` (its bandwidth, a
//! property of the platform: channels x transfer rate x 8 bytes, per host preset). A running
//! vCPU puts on it the lines its LLC misses fetch, `misses x line_bytes` per ns of the interval,
//! spread over the nodes its VM's memory is interleaved over in the proportions
//! [`super::remote_fraction`] uses (evenly over its clients' home nodes, or every node without a
//! home). A node's utilisation is `rho = demand / bandwidth`.
//!
//! The queue is M/D/1: misses from many independent cores arrive roughly as a Poisson stream, and
//! each takes the controller for the same time, one line at the node's bandwidth,
//! `s = line_bytes / bandwidth` (6.4 ns for 64 B at 10 GB/s). A miss then waits
//! `W = s rho / (2 (1 - rho))` before its transfer starts (Pollaczek-Khinchine with deterministic
//! service). The form puts the wait on the controller alone: the rest of the unloaded latency
//! (`mem_latency_ns`, DRAM access and the interconnect) is spread over many banks and is not
//! the queue, so the `latency / (1 - rho)` form, which stretches all of it, would overstate the
//! wait at moderate load. The one constant is the bandwidth; `rho` is capped at
//! [`MAX_UTILISATION`] only so the wait stays finite when refills alone would overrun a node.
//!
//! A vCPU's misses then stall `llc_miss_stall_cycles x (1 + r (remote_latency_ratio - 1) + w)`,
//! `w` being the mean of its nodes' waits over `mem_latency_ns` (the stall keeps the overlap the
//! unloaded figure assumes). Demand depends on that stall (a slower vCPU misses less per ns), so
//! the utilisations are a fixed point: with `P` the vCPU's productive cycles, `U0` its cycles per
//! unit without the wait and `M` its misses per unit, it does `P / (U0 + w M stall)` units and
//! misses `M` per unit plus its refills. A higher wait lowers every demand, so on one node the
//! map from utilisation to utilisation is decreasing and has exactly one fixed point, which a
//! vCPU added there can only raise (a property test). [`solve`] finds it by a bracketing root
//! search per node, sweeping the nodes until none moves (the plain iteration `rho <- G(rho)`
//! oscillates near saturation); a property test checks the result is a fixed point on every
//! node. Across nodes a co-runner can speed a vCPU up: slowing a vCPU interleaved over several
//! nodes takes its traffic off the others.
//!
//! Known gaps: only read misses are traffic (no write-backs, no prefetches beyond the miss
//! count); refills after moves and returns add their lines to the demand but are not slowed by
//! the queue; the interconnect between nodes (HyperTransport, a front-side bus) has no bandwidth
//! of its own; VMs without a profile put no demand on memory.

/// Utilisation above which a node's queue is not allowed to go, dimensionless (a numerical guard,
/// not a property of any machine: at 0.99 a miss waits 49.5 transfers).
pub const MAX_UTILISATION: f64 = 0.99;

/// Sweeps of [`solve`] over the nodes at most; it stops earlier when no utilisation moves by more
/// than [`TOLERANCE`] (most solves take a few). Nodes that share interleaved vCPUs near
/// saturation converge slowly: each node's root moves almost one for one against the other's
/// wait, so the error shrinks by little per sweep. 30 sweeps left a 2e-7 residual in about one
/// draw in 20,000 of the fixed-point property test; 200 passed 600,000. Root-finding steps per
/// node and sweep at most: [`STEPS`].
const MAX_SWEEPS: usize = 200;
const STEPS: usize = 60;
const TOLERANCE: f64 = 1e-9;

/// The M/D/1 wait, in ns, of a request served in `service_ns` at a utilisation `rho`.
pub fn md1_wait_ns(rho: f64, service_ns: f64) -> f64 {
    let rho = rho.clamp(0.0, MAX_UTILISATION);
    service_ns * rho / (2.0 * (1.0 - rho))
}

/// How one vCPU's memory traffic depends on the queueing wait, over one interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MissCurve {
    /// productive cycles (run cycles less refills, the hyperthread's and the lock's)
    pub productive_cycles: f64,
    /// cycles per unit of work with no queueing wait
    pub cycles_per_unit: f64,
    /// extra cycles per unit for each unit of `w` (misses per unit x `llc_miss_stall_cycles`)
    pub stall_per_unit: f64,
    /// LLC misses per unit of work
    pub misses_per_unit: f64,
    /// LLC misses of the interval's refills (independent of the wait)
    pub refill_misses: f64,
}

impl MissCurve {
    /// LLC misses over the interval when each miss waits `w` unloaded latencies more.
    pub fn misses(&self, w: f64) -> f64 {
        let per_unit = self.cycles_per_unit + w * self.stall_per_unit;
        let units = if per_unit > 0.0 { self.productive_cycles / per_unit } else { 0.0 };
        units * self.misses_per_unit + self.refill_misses
    }
}

/// One vCPU's part in the solve: its curve and the nodes its memory is interleaved over (evenly).
#[derive(Debug, Clone, Default)]
pub struct Demand {
    pub curve: MissCurve,
    pub nodes: Vec<u32>,
}

/// The machine the solve runs on.
#[derive(Debug, Clone, Copy)]
pub struct Controllers {
    /// NUMA nodes, each with one memory controller
    pub nodes: usize,
    /// each controller's bandwidth, bytes per ns (= GB/s)
    pub bytes_per_ns: f64,
    /// bytes per miss
    pub line_bytes: f64,
    /// unloaded local memory latency, ns
    pub latency_ns: f64,
    /// the interval the misses were spread over, ns
    pub span_ns: f64,
}

/// Each vCPU's wait over the unloaded latency, `w` (in `demands` order), and each node's
/// utilisation, at the fixed point.
///
/// A node's utilisation, the others held, is the root of `x - G(x)` with `G` its demand when its
/// own wait is that of `x`: increasing in `x`, so a bracketing search (false position with the
/// Illinois step, a few evaluations where bisection takes forty) finds it between 0 and the
/// demand with no wait at all (capped at [`MAX_UTILISATION`]). Sweeping the nodes so (Gauss-Seidel)
/// solves the coupled system: a vCPU interleaved over several nodes feels their mean wait.
pub fn solve(c: &Controllers, demands: &[Demand], w: &mut Vec<f64>, rho: &mut Vec<f64>) {
    let service = c.line_bytes / c.bytes_per_ns;
    rho.clear();
    rho.resize(c.nodes, 0.0);
    // each node's wait in unloaded latencies
    let mut wait = vec![0.0; c.nodes];
    for _ in 0..MAX_SWEEPS {
        let mut moved = 0.0f64;
        for n in 0..c.nodes {
            let load = |x: f64, wait: &mut [f64]| {
                wait[n] = md1_wait_ns(x, service) / c.latency_ns;
                node_load(c, demands, wait, n)
            };
            // f(x) = load(x) - x: f(a) > 0 >= f(b)
            let g0 = load(0.0, &mut wait);
            let b0 = g0.min(MAX_UTILISATION);
            let fb0 = load(b0, &mut wait) - b0;
            let x = if g0 <= 0.0 {
                0.0
            } else if fb0 >= 0.0 {
                b0 // the cap binds
            } else {
                let (mut a, mut fa, mut b, mut fb) = (0.0, g0, b0, fb0);
                let mut x = b;
                let mut side = 0i8;
                for _ in 0..STEPS {
                    x = (a * fb - b * fa) / (fb - fa);
                    let fx = load(x, &mut wait) - x;
                    if fx > 0.0 {
                        (a, fa) = (x, fx);
                        if side == 1 {
                            fb *= 0.5;
                        }
                        side = 1;
                    } else {
                        (b, fb) = (x, fx);
                        if side == -1 {
                            fa *= 0.5;
                        }
                        side = -1;
                    }
                    if fx.abs() < TOLERANCE * 1e-4 || b - a < TOLERANCE * 1e-4 {
                        break;
                    }
                }
                x
            };
            wait[n] = md1_wait_ns(x, service) / c.latency_ns;
            moved = moved.max((x - rho[n]).abs());
            rho[n] = x;
        }
        // one node depends on no other: its root is the fixed point
        if moved < TOLERANCE || c.nodes == 1 {
            break;
        }
    }
    w.clear();
    w.extend(demands.iter().map(|d| mean_wait(d, &wait)));
}

/// A vCPU's wait: the mean of its memory nodes' (every node's when its VM has no home).
fn mean_wait(d: &Demand, wait: &[f64]) -> f64 {
    if d.nodes.is_empty() {
        wait.iter().sum::<f64>() / wait.len().max(1) as f64
    } else {
        d.nodes.iter().map(|&n| wait[n as usize]).sum::<f64>() / d.nodes.len() as f64
    }
}

/// Node `n`'s utilisation when the nodes wait `wait` (in unloaded latencies).
fn node_load(c: &Controllers, demands: &[Demand], wait: &[f64], n: usize) -> f64 {
    let mut bytes_per_ns = 0.0;
    for d in demands {
        let share = if d.nodes.is_empty() {
            1.0 / c.nodes as f64
        } else if d.nodes.contains(&(n as u32)) {
            1.0 / d.nodes.len() as f64
        } else {
            continue;
        };
        bytes_per_ns += share * d.curve.misses(mean_wait(d, wait)) * c.line_bytes / c.span_ns;
    }
    bytes_per_ns / c.bytes_per_ns
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn machine(nodes: usize) -> Controllers {
        Controllers { nodes, bytes_per_ns: 10.0, line_bytes: 64.0, latency_ns: 80.0, span_ns: 1e9 }
    }

    /// A vCPU doing 1e9 productive cycles at 1000 cycles per unit, 10 misses per unit stalling 100
    /// cycles each: 1e6 units, 1e7 misses a second, 0.64 GB/s with no wait.
    fn curve() -> MissCurve {
        MissCurve { productive_cycles: 1e9, cycles_per_unit: 1000.0, stall_per_unit: 1000.0, misses_per_unit: 10.0, refill_misses: 0.0 }
    }

    #[test]
    fn md1_wait_by_hand() {
        // s = 6.4 ns; rho 0.5: 6.4 x 0.5 / 1 = 3.2 ns
        assert!((md1_wait_ns(0.5, 6.4) - 3.2).abs() < 1e-12);
        assert_eq!(md1_wait_ns(0.0, 6.4), 0.0);
        // capped: 0.99 / 0.02 / ... finite however far past 1
        assert!((md1_wait_ns(3.0, 6.4) - 6.4 * 0.99 / 0.02).abs() < 1e-9);
    }

    #[test]
    fn two_vcpus_on_one_node_by_hand() {
        // Two such vCPUs on one 10 GB/s node. At the fixed point w = s rho / (2 (1 - rho)) / 80 and
        // rho = 2 x 64 x 1e7 / (1 + w) / 1e9 / 10 = 0.128 / (1 + w): with s = 6.4 ns,
        // w = 0.04 rho / (1 - rho). Solving rho (1 + 0.04 rho / (1 - rho)) = 0.128:
        // rho (1 - rho) + 0.04 rho^2 = 0.128 (1 - rho)  =>  0.96 rho^2 - 1.128 rho + 0.128 = 0
        // rho = (1.128 - sqrt(1.128^2 - 4 x 0.96 x 0.128)) / 1.92
        let d = Demand { curve: curve(), nodes: vec![0] };
        let (mut w, mut rho) = (Vec::new(), Vec::new());
        solve(&machine(1), &[d.clone(), d], &mut w, &mut rho);
        let want = (1.128 - (1.128f64.powi(2) - 4.0 * 0.96 * 0.128).sqrt()) / 1.92;
        assert!((rho[0] - want).abs() < 1e-9, "{} vs {want}", rho[0]);
        assert!((want - 0.127258).abs() < 1e-6);
        let w_want = 0.04 * want / (1.0 - want);
        assert!((w[0] - w_want).abs() < 1e-9 && w[0] == w[1]);
        // each vCPU's cycles per unit go from 1000 to 1000 (1 + w): 0.58% slower
        assert!((w[0] - 0.0058325).abs() < 1e-7, "{}", w[0]);
    }

    #[test]
    fn traffic_spreads_over_the_memory_nodes() {
        // one vCPU interleaved over nodes 0 and 1 of four, one with no home (all four)
        let a = Demand { curve: curve(), nodes: vec![0, 1] };
        let b = Demand { curve: curve(), nodes: vec![] };
        let (mut w, mut rho) = (Vec::new(), Vec::new());
        solve(&machine(4), &[a, b], &mut w, &mut rho);
        assert!(rho[0] > rho[2] && (rho[0] - rho[1]).abs() < 1e-15 && (rho[2] - rho[3]).abs() < 1e-15);
        // node 2 carries a quarter of b's 0.064 (before its small wait)
        assert!((rho[2] - 0.016).abs() < 1e-4);
        assert!(w[0] > w[1]);
        // loaded enough to couple the nodes (20 of each), it is still a fixed point on every node
        let ds: Vec<Demand> = (0..40).map(|i| Demand { curve: curve(), nodes: if i % 2 == 0 { vec![0, 1] } else { vec![] } }).collect();
        let c = machine(4);
        solve(&c, &ds, &mut w, &mut rho);
        let wait: Vec<f64> = rho.iter().map(|&r| md1_wait_ns(r, 6.4) / 80.0).collect();
        for n in 0..4 {
            assert!((node_load(&c, &ds, &wait, n) - rho[n]).abs() < 1e-8, "node {n}: {rho:?}");
        }
        assert!(rho[0] > 0.5 && rho[0] < MAX_UTILISATION, "{rho:?}");
    }

    fn arb_demand() -> impl Strategy<Value = Demand> {
        (1e8f64..3e9, 500f64..5000.0, 0f64..60.0, 0f64..1e6, prop::sample::select(vec![vec![], vec![0], vec![1], vec![0, 1], vec![2, 3], vec![1, 2, 3]]))
            .prop_map(|(p, u, m, refill, nodes)| Demand { curve: MissCurve { productive_cycles: p, cycles_per_unit: u, stall_per_unit: m * 100.0, misses_per_unit: m, refill_misses: refill }, nodes })
    }

    proptest! {
        /// On one node, a vCPU added never shortens another's wait (never speeds it up),
        /// whatever the mix of miss rates: the node's demand curve only rises, so its fixed point
        /// does. (Across nodes it can: a co-runner that slows an interleaved vCPU takes that
        /// vCPU's traffic off its other nodes, and a vCPU alone on one of those then waits less.)
        #[test]
        fn an_added_co_runner_never_shortens_a_wait_on_its_node(ds in prop::collection::vec(arb_demand(), 1..12), extra in arb_demand(), gb in 1.0f64..20.0) {
            let one = |d: &Demand| Demand { nodes: vec![0], ..d.clone() };
            let c = Controllers { nodes: 1, bytes_per_ns: gb, line_bytes: 64.0, latency_ns: 80.0, span_ns: 1e9 };
            let ds: Vec<Demand> = ds.iter().map(one).collect();
            let (mut w0, mut rho0, mut w1, mut rho1) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            solve(&c, &ds, &mut w0, &mut rho0);
            let mut more = ds.clone();
            more.push(one(&extra));
            solve(&c, &more, &mut w1, &mut rho1);
            prop_assert!(rho1[0] >= rho0[0] - 1e-12);
            for (a, b) in w0.iter().zip(&w1) {
                prop_assert!(*b >= a - 1e-9 * a.max(1.0), "{a} -> {b}");
            }
        }

        /// With vCPUs interleaved over any nodes, the solve is a fixed point on every node.
        #[test]
        fn the_solve_is_a_fixed_point_on_every_node(ds in prop::collection::vec(arb_demand(), 1..16), gb in 1.0f64..20.0) {
            let c = Controllers { nodes: 4, bytes_per_ns: gb, line_bytes: 64.0, latency_ns: 80.0, span_ns: 1e9 };
            let (mut w, mut rho) = (Vec::new(), Vec::new());
            solve(&c, &ds, &mut w, &mut rho);
            let wait: Vec<f64> = rho.iter().map(|&r| md1_wait_ns(r, 64.0 / gb) / 80.0).collect();
            for n in 0..4 {
                let load = node_load(&c, &ds, &wait, n);
                prop_assert!((load - rho[n]).abs() < 1e-7 || (rho[n] >= MAX_UTILISATION - 1e-12 && load >= rho[n]), "node {n}: {load} vs {}", rho[n]);
            }
        }
    }

    #[test]
    fn more_co_runners_never_speed_a_vcpu_up() {
        let c = machine(1);
        let (mut w, mut rho) = (Vec::new(), Vec::new());
        let mut last_units = f64::INFINITY;
        for n in 1..=40 {
            let ds: Vec<Demand> = (0..n).map(|_| Demand { curve: curve(), nodes: vec![0] }).collect();
            solve(&c, &ds, &mut w, &mut rho);
            let units = curve().productive_cycles / (curve().cycles_per_unit + w[0] * curve().stall_per_unit);
            assert!(units <= last_units + 1e-9, "{n} co-runners: {units} > {last_units}");
            assert!(rho[0] <= MAX_UTILISATION + 1e-12);
            // the fixed point: the utilisation is what the waits give
            let wait = [md1_wait_ns(rho[0], 6.4) / 80.0];
            assert!((node_load(&c, &ds, &wait, 0) - rho[0]).abs() < 1e-9, "{n}: {rho:?}");
            last_units = units;
        }
    }
}

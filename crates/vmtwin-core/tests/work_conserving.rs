//! Work conservation: with no limits and no co-scheduling, a pCPU never idles while a vCPU is
//! READY for longer than the scheduler's cache-affinity wait allows. Checked after every
//! instant of random runs (all events at one time processed), on hosts of one or two sockets
//! of 1-8 pCPUs with 1-4 vCPU VMs, busy and duty-cycled, closed and open loops, fixed and
//! exponential bursts, random shares and reservations, with the scheduler's locality off, on
//! without the wait (`migrate_wait_factor` 0, the default), and with it (1). An idle pCPU beside a READY
//! vCPU is CPU the host had and nobody got: without the wait it never happens; with it, a
//! free pCPU may leave a READY vCPU queued elsewhere until the vCPU has waited what the move
//! would cost it (`migrate_wait_factor` x `migrate_cost_*`), and then looks again, so no
//! stretch of a pCPU idling beside READY vCPUs lasts longer than the longest such wait.

mod common;
use common::*;
use proptest::prelude::*;
use vmtwin_core::cpu::{CpuSchedParams, VcpuState, NONE};
use vmtwin_core::spec::{Arrivals, BurstDist, WorkloadSpec};
use vmtwin_core::Simulation;

fn workload(duty_pct: u32, burst_ms: u64, open: bool, exp: bool) -> WorkloadSpec {
    WorkloadSpec::CpuBound {
        duty: f64::from(duty_pct) / 100.0,
        burst_ns: burst_ms * MS,
        burst_dist: if exp { BurstDist::Exponential } else { BurstDist::Fixed },
        arrivals: if open { Arrivals::Open } else { Arrivals::Closed },
    }
}

/// The first instant (ns) at which a pCPU has idled while a vCPU is READY for longer than
/// `bound` ns on end (0: at all), with who, if any.
fn first_violation(sim: &mut Simulation, until: u64, bound: u64) -> Option<String> {
    // per pCPU: since when it has idled beside READY vCPUs
    let mut since: Vec<Option<u64>> = vec![None; sim.sched().pcpu_count()];
    while sim.now() < until {
        if !sim.step() {
            break;
        }
        if sim.next_event_time().is_some_and(|t| t == sim.now()) {
            continue; // more events at this instant: judge once they are all done
        }
        let (s, now) = (sim.sched(), sim.now());
        let ready: Vec<usize> = (0..s.vcpus.len()).filter(|&v| s.vcpus[v].state == VcpuState::Ready).collect();
        for (p, at) in since.iter_mut().enumerate() {
            if ready.is_empty() || s.running_on(p as u32) != NONE {
                *at = None;
                continue;
            }
            let from = *at.get_or_insert(now);
            if now - from > bound || bound == 0 {
                return Some(format!("at {now} ns pCPU {p} idle since {from} ns while vCPUs {ready:?} are READY"));
            }
        }
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn no_pcpu_idles_while_a_vcpu_is_ready(
        pcpus in 1u32..9,
        vms in proptest::collection::vec((1u32..5, 1u32..20_000, 0u32..=100, 5u32..=100, 1u64..11, any::<bool>(), any::<bool>()), 1..8),
        sockets in 1u32..3,
        locality in 0u32..3,
    ) {
        let cap = u64::from(pcpus) * CORE_MHZ;
        let mut reserved = 0;
        let specs: Vec<_> = vms.iter().enumerate().map(|(i, &(vcpus, shares, r_pct, duty, burst, open, exp))| {
            let vcpus = vcpus.min(pcpus);
            // reservations within what admission control accepts
            let want = u64::from(r_pct) * u64::from(vcpus) * CORE_MHZ / 100 / 4;
            let r = if reserved + want <= cap * 9 / 10 { reserved += want; want } else { 0 };
            vm(&format!("vm{i}"), vcpus, shares, r, None, workload(duty, burst, open, exp))
        }).collect();
        let mut sp = spec(pcpus, 4 * S, specs);
        sp.host.sockets = sockets;
        let d = CpuSchedParams::default();
        sp.cpu_sched = match locality {
            0 => d.without_locality(),
            1 => CpuSchedParams { migrate_wait_factor: 0.0, ..d },
            _ => CpuSchedParams { migrate_wait_factor: 1.0, ..d },
        };
        // the longest wait for a cache: a move to the other node, or within the one LLC
        let cost = if sockets > 1 { sp.cpu_sched.migrate_cost_node_ns } else { sp.cpu_sched.migrate_cost_core_ns };
        let bound = (sp.cpu_sched.migrate_wait_factor * cost as f64).round() as u64;
        let mut sim = Simulation::new(sp).unwrap();
        let v = first_violation(&mut sim, 4 * S, bound);
        prop_assert!(v.is_none(), "{}", v.unwrap());
    }
}

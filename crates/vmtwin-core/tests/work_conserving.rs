//! Work conservation: with no limits and no co-scheduling, a pCPU never idles while a vCPU is
//! READY. Checked after every instant of random runs (all events at one time processed), on
//! hosts of 1-8 pCPUs with 1-4 vCPU VMs, busy and duty-cycled, closed and open loops, fixed
//! and exponential bursts, random shares and reservations, with the scheduler's locality on
//! (its default) and off. An idle pCPU beside a READY vCPU is CPU the host had and nobody got:
//! the max-min allocation cannot be met then, whatever the weights say.

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

/// The first instant (ns) at which a pCPU idles while a vCPU is READY, with who, if any.
fn first_violation(sim: &mut Simulation, until: u64) -> Option<String> {
    while sim.now() < until {
        if !sim.step() {
            break;
        }
        if sim.next_event_time().is_some_and(|t| t == sim.now()) {
            continue; // more events at this instant: judge once they are all done
        }
        let s = sim.sched();
        let idle: Vec<usize> = (0..s.pcpu_count()).filter(|&p| s.running_on(p as u32) == NONE).collect();
        if idle.is_empty() {
            continue;
        }
        let ready: Vec<usize> = (0..s.vcpus.len()).filter(|&v| s.vcpus[v].state == VcpuState::Ready).collect();
        if !ready.is_empty() {
            return Some(format!("at {} ns pCPUs {idle:?} idle while vCPUs {ready:?} are READY", sim.now()));
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
        locality in any::<bool>(),
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
        if !locality {
            sp.cpu_sched = CpuSchedParams::default().without_locality();
        }
        let mut sim = Simulation::new(sp).unwrap();
        let v = first_violation(&mut sim, 4 * S);
        prop_assert!(v.is_none(), "{}", v.unwrap());
    }
}

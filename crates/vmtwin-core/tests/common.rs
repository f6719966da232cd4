//! Helpers shared by the integration tests: small specs built in code.
#![allow(dead_code)]

use vmtwin_core::spec::{Arrivals, BurstDist, HostSpec, SimSpec, VmSpec, WorkloadSpec};

pub const S: u64 = 1_000_000_000;
pub const MS: u64 = 1_000_000;
pub const CORE_MHZ: u64 = 2000;

pub fn host(pcpus: u32) -> HostSpec {
    HostSpec {
        name: "h".into(),
        sockets: 1,
        numa_nodes_per_socket: 1,
        llcs_per_node: 1,
        cores_per_llc: pcpus,
        threads_per_core: 1,
        core_mhz: CORE_MHZ,
        memory_bytes: 1 << 36,
    }
}

pub fn busy() -> WorkloadSpec {
    WorkloadSpec::CpuBound { duty: 1.0, burst_ns: 10 * MS, burst_dist: BurstDist::Fixed, arrivals: Arrivals::Closed }
}

pub fn vm(name: &str, vcpus: u32, shares: u32, reservation: u64, limit: Option<u64>, workload: WorkloadSpec) -> VmSpec {
    VmSpec {
        name: name.into(),
        pool: None,
        vcpus,
        memory_bytes: 1 << 30,
        shares,
        reservation_mhz: reservation,
        limit_mhz: limit,
        power_on_ns: 0,
        workload,
    }
}

pub fn spec(pcpus: u32, duration_ns: u64, vms: Vec<VmSpec>) -> SimSpec {
    SimSpec {
        seed: 7,
        duration_ns,
        sample_interval_ns: 2 * S,
        host: host(pcpus),
        cpu_sched: Default::default(),
        pools: vec![],
        vms,
        memory: None,
        perf: None,
        storage: None,
        fidelity: Default::default(),
    }
}

/// Exact weighted max-min allocation by bisection on the water level, in pCPUs:
/// a_i = clamp(level * s_i, lo_i, hi_i) with sum a_i = capacity (or every hi_i if they fit).
/// Written independently of the engine's breakpoint walk.
pub fn oracle(capacity: f64, shares: &[f64], lo: &[f64], hi: &[f64]) -> Vec<f64> {
    let total = |level: f64| -> f64 { (0..shares.len()).map(|i| (level * shares[i]).clamp(lo[i], hi[i])).sum() };
    if hi.iter().sum::<f64>() <= capacity {
        return hi.to_vec();
    }
    let (mut a, mut b) = (0.0, 1.0);
    while total(b) < capacity {
        b *= 2.0;
    }
    for _ in 0..200 {
        let m = 0.5 * (a + b);
        if total(m) < capacity {
            a = m;
        } else {
            b = m;
        }
    }
    (0..shares.len()).map(|i| (b * shares[i]).clamp(lo[i], hi[i])).collect()
}

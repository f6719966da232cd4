//! The sharing scanner's rates in runs: per VM (`share_scan_pages_per_s`) and system-wide
//! (`share_scan_host_pages_per_s`, split evenly over the VMs) [S1 §4.3]. The CPU each VM is
//! charged (MEMCPU_ms) is its pages scanned times the per-page cost, so each sample must read
//! exactly min(rate, cap / VMs) x 1 us x the sample interval.

use serde_json::{json, Value};
use vmtwin_core::metrics::{Column, Table};
use vmtwin_core::spec::SimSpec;
use vmtwin_core::Simulation;

const MB: u64 = 1 << 20;
const S: u64 = 1_000_000_000;

fn col<'a>(t: &'a Table, name: &str) -> &'a [f64] {
    match t.column(name) {
        Some(Column::F64(v)) => v,
        other => panic!("{name}: {other:?}"),
    }
}

fn spec(vms: usize, rate: Option<u32>, cap: Option<u32>) -> Value {
    json!({
        "seed": 1, "duration_ns": 20 * S, "sample_interval_ns": 2 * S,
        "host": {"name": "h", "sockets": 1, "numa_nodes_per_socket": 1, "llcs_per_node": 1,
                 "cores_per_llc": 4, "threads_per_core": 1, "core_mhz": 2000, "memory_bytes": 512 * MB},
        "vms": (0..vms).map(|i| json!({"name": format!("vm{i}"), "pool": null, "vcpus": 1, "memory_bytes": 16 * MB,
                 "shares": 1000, "reservation_mhz": 0, "limit_mhz": null,
                 "workload": {"kind": "cpu_bound", "duty": 1.0, "burst_ns": 1_000_000u64, "burst_dist": "fixed"}})).collect::<Vec<_>>(),
        "memory": {"preset": "esx2002", "idle_tax": 0.75, "host_overhead_bytes": 0,
                   "share_scan_pages_per_s": rate, "share_scan_host_pages_per_s": cap,
                   "vms": (0..vms).map(|_| json!({"shares": 160.0, "overhead_bytes": 0})).collect::<Vec<_>>()}
    })
}

fn memcpu_ms(v: &Value) -> Vec<f64> {
    let mut sim = Simulation::new(SimSpec::from_json(&v.to_string()).unwrap()).unwrap();
    sim.run().unwrap();
    let tables = sim.tables();
    let mem = tables.iter().find(|(n, _)| *n == "mem").expect("a mem table").1;
    col(mem, "MEMCPU_ms").to_vec()
}

#[test]
fn each_vm_is_charged_its_share_of_the_binding_rate() {
    // (VMs, per-VM rate, system-wide cap) -> pages per VM per second
    let cases = [(4, None, None, 200.0), (4, Some(500), None, 500.0), (4, None, Some(300), 75.0),
                 (3, Some(100), Some(1000), 100.0), (3, Some(400), Some(1000), 333.0), (5, None, Some(0), 0.0)];
    for (vms, rate, cap, per_s) in cases {
        let got = memcpu_ms(&spec(vms, rate, cap));
        // each 2 s sample: 2 ticks x pages x 1 us (MemParams::share_scan_cpu_ns)
        let want = 2.0 * per_s * 1e-3;
        assert!(got.len() >= 9 * vms, "{got:?}");
        for g in &got {
            assert!((g - want).abs() < 1e-9, "vms {vms} rate {rate:?} cap {cap:?}: {g} ms, want {want}");
        }
    }
}

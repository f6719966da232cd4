//! The per-request log of a VM disk (`log_requests`, the `io_log` table): what it records is
//! checked against what the workload guarantees, not against the code that writes it.

use serde_json::{json, Value};
use vmtwin_core::metrics::Column;
use vmtwin_core::Simulation;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn spec(log_a: bool, log_b: bool) -> Value {
    let host = json!({"name": "h", "sockets": 1, "numa_nodes_per_socket": 1, "llcs_per_node": 1,
                      "cores_per_llc": 2, "threads_per_core": 1, "core_mhz": 2000, "memory_bytes": 0});
    let vm = |name: &str| json!({"name": name, "pool": null, "vcpus": 1, "memory_bytes": 0, "shares": 1000,
                                 "reservation_mhz": 0, "limit_mhz": null, "workload": {"kind": "idle"}});
    let mut disk_a = json!({"name": "a:0", "vm": "a", "lun": "ds1", "shares": 1000, "queue_depth": 4});
    let mut disk_b = json!({"name": "b:0", "vm": "b", "lun": "ds1", "shares": 1000});
    if log_a {
        disk_a["log_requests"] = json!(true);
    }
    if log_b {
        disk_b["log_requests"] = json!(true);
    }
    json!({
        "seed": 11, "duration_ns": 20 * S, "sample_interval_ns": 2 * S, "host": host, "vms": [vm("a"), vm("b")],
        "storage": {
            "adapters": [{"name": "vmhba0", "queue_depth": 4096, "link_bits_per_s": 1_000_000_000_000u64}],
            "luns": [{"name": "ds1", "device": {"kind": "exponential", "servers": 2, "mean_service_ns": 2 * MS},
                      "dqlen": 32, "psp": {"policy": "fixed", "preferred": 0},
                      "paths": [{"adapter": "vmhba0", "controller": 0, "fabric_ns": 0}]}],
            "disks": [disk_a, disk_b],
            "workloads": [
                // closed: 8 in flight, 4 of them at a time past the virtual queue (depth 4)
                {"disk": "a:0", "kind": "iometer", "block_bytes": 8192, "read_pct": 70.0, "random_pct": 100.0, "outstanding": 8, "think_ns": 0, "start_ns": 0},
                {"disk": "b:0", "kind": "poisson", "rate_per_s": 300.0, "block_bytes": 4096, "read_pct": 100.0, "random_pct": 100.0, "cap": null, "start_ns": 0}
            ]
        }
    })
}

fn run(spec: Value) -> Simulation {
    let mut s = Simulation::new(vmtwin_core::spec::SimSpec::from_json(&spec.to_string()).unwrap()).unwrap();
    s.run().unwrap();
    s
}

fn col(s: &Simulation, table: &str, name: &str) -> Vec<f64> {
    match s.table(table).unwrap().column(name).unwrap_or_else(|| panic!("{table}.{name}")) {
        Column::F64(v) => v.clone(),
        Column::U32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        Column::U64(v) => v.iter().map(|&x| x as f64).collect(),
    }
}

#[test]
fn no_disk_logs_by_default_and_there_is_no_io_log_table() {
    let s = run(spec(false, false));
    assert!(s.table("io_log").is_none());
    assert!(s.table("disk").is_some());
}

/// Iometer keeps exactly 8 requests in flight from the guest's view (think time 0: each
/// completion issues the next at the same instant), so at any instant after the start exactly 8
/// logged requests have issue <= t < done; the virtual queue of depth 4 lets at most 4 of them
/// be past the VMM's acceptance. Requests completed after the last sample are not logged yet,
/// so the instants checked stop well before it.
#[test]
fn a_closed_loop_disk_log_covers_every_instant_exactly_outstanding_times() {
    let s = run(spec(true, false));
    let disk = col(&s, "io_log", "disk_id");
    assert!(disk.iter().all(|&d| d == 0.0), "only disk a logs");
    let issue = col(&s, "io_log", "issue_ns");
    let accept = col(&s, "io_log", "accept_ns");
    let done = col(&s, "io_log", "done_ns");
    let time = col(&s, "io_log", "time_s");
    assert!(issue.len() > 10_000, "{} requests", issue.len());
    for k in 0..done.len() {
        assert!(issue[k] <= accept[k] && accept[k] < done[k], "row {k}");
        assert_eq!(time[k], done[k] / 1e9);
        if k > 0 {
            assert!(done[k] >= done[k - 1], "completion order");
        }
    }
    for step in 1..180 {
        let t = (step as f64) * 0.1 * S as f64;
        let in_flight = (0..issue.len()).filter(|&k| issue[k] <= t && t < done[k]).count();
        let accepted = (0..issue.len()).filter(|&k| accept[k] <= t && t < done[k]).count();
        assert_eq!(in_flight, 8, "at {t} ns");
        assert_eq!(accepted, 4, "at {t} ns: the virtual queue holds 4");
    }
    // every completed request of the sampled window is in the log: the disk table's counts
    let cmds: f64 = col(&s, "disk", "CMDS/s").iter().step_by(2).map(|x| x * 2.0).sum();
    assert!((cmds - issue.len() as f64).abs() < 0.5, "disk table {cmds} vs log {}", issue.len());
    let reads = col(&s, "io_log", "read").iter().sum::<f64>() / issue.len() as f64;
    assert!((reads - 0.7).abs() < 0.02, "read fraction {reads}");
    assert!(col(&s, "io_log", "bytes").iter().all(|&b| b == 8192.0));
}

#[test]
fn logging_changes_nothing_the_run_does() {
    let a = run(spec(false, false));
    let b = run(spec(true, true));
    for t in ["disk", "lun", "path", "adapter"] {
        assert_eq!(format!("{:?}", a.table(t).unwrap().columns), format!("{:?}", b.table(t).unwrap().columns), "{t}");
    }
    // both disks logged: the open Poisson disk's requests are all reads of 4 kB
    let disk = col(&b, "io_log", "disk_id");
    let bytes = col(&b, "io_log", "bytes");
    assert!(disk.contains(&0.0) && disk.contains(&1.0));
    assert!(disk.iter().zip(&bytes).all(|(&d, &x)| d == 0.0 || x == 4096.0));
}

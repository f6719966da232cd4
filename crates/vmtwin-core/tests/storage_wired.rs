//! The storage subsystem inside a run: built from the spec's storage section, generators on VM
//! disks, vCPUs that wait for synchronous I/O, path events, and the four sampled tables.

use proptest::prelude::*;
use serde_json::{json, Value};
use vmtwin_core::metrics::Column;
use vmtwin_core::Simulation;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn host(cores: u32) -> Value {
    json!({"name": "h", "sockets": 1, "numa_nodes_per_socket": 1, "llcs_per_node": 1,
           "cores_per_llc": cores, "threads_per_core": 1, "core_mhz": 2000, "memory_bytes": 0})
}

fn vm(name: &str, vcpus: u32, workload: Value) -> Value {
    json!({"name": name, "pool": null, "vcpus": vcpus, "memory_bytes": 0, "shares": 1000 * vcpus,
           "reservation_mhz": 0, "limit_mhz": null, "workload": workload})
}

fn cpu(duty: f64, burst_ns: u64) -> Value {
    json!({"kind": "cpu_bound", "duty": duty, "burst_ns": burst_ns, "burst_dist": "fixed"})
}

fn exp_lun(name: &str, servers: u32, mean_ns: u64, paths: u32) -> Value {
    let paths: Vec<Value> = (0..paths).map(|k| json!({"adapter": format!("vmhba{k}"), "controller": 0, "fabric_ns": 0})).collect();
    json!({"name": name, "device": {"kind": "exponential", "servers": servers, "mean_service_ns": mean_ns},
           "dqlen": 32, "psp": {"policy": "round_robin", "iops": 1}, "paths": paths})
}

fn adapters(n: u32) -> Value {
    // a fast link, so transfer time is negligible next to the device's
    Value::Array((0..n).map(|k| json!({"name": format!("vmhba{k}"), "queue_depth": 4096, "link_bits_per_s": 1_000_000_000_000u64})).collect())
}

fn sim(spec: Value) -> Simulation {
    Simulation::new(vmtwin_core::spec::SimSpec::from_json(&spec.to_string()).unwrap()).unwrap()
}

fn col_f64(sim: &Simulation, table: &str, col: &str) -> Vec<f64> {
    match sim.table(table).unwrap().column(col).unwrap_or_else(|| panic!("{table}.{col}")) {
        Column::F64(v) => v.clone(),
        Column::U32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        Column::U64(v) => v.iter().map(|&x| x as f64).collect(),
    }
}

#[test]
fn iometer_on_two_vm_disks_fills_the_disk_and_lun_tables_with_little_law_consistent_rows() {
    let spec = json!({
        "seed": 3, "duration_ns": 20 * S, "sample_interval_ns": 2 * S, "host": host(2),
        "vms": [vm("a", 1, json!({"kind": "idle"})), vm("b", 1, json!({"kind": "idle"}))],
        "storage": {
            "adapters": adapters(1),
            "luns": [exp_lun("ds1", 1, MS, 1)],
            "disks": [{"name": "a:scsi0:0", "vm": "a", "lun": "ds1", "shares": 1000},
                      {"name": "b:scsi0:0", "vm": "b", "lun": "ds1", "shares": 2000}],
            "workloads": [
                {"disk": "a:scsi0:0", "kind": "iometer", "block_bytes": 4096, "read_pct": 70.0, "random_pct": 100.0, "outstanding": 8, "think_ns": 0, "start_ns": 0},
                {"disk": "b:scsi0:0", "kind": "iometer", "block_bytes": 4096, "read_pct": 70.0, "random_pct": 100.0, "outstanding": 8, "think_ns": 0, "start_ns": 0}
            ]
        }
    });
    let mut s = sim(spec);
    s.run().unwrap();
    let names: Vec<&str> = s.tables().iter().map(|(n, _)| *n).collect();
    for t in ["disk", "lun", "path", "adapter"] {
        assert!(names.contains(&t), "{names:?}");
    }
    assert_eq!(s.table("disk").unwrap().rows(), 20);
    assert_eq!(s.table("lun").unwrap().rows(), 10);
    let cmds = col_f64(&s, "lun", "CMDS/s");
    let davg = col_f64(&s, "lun", "DAVG/cmd");
    // one exponential server, always backlogged: 1000 commands/s; all 16 commands fit in
    // DQLEN 32, so they wait at the device (DAVG = 16 / 1000 s by Little's law), not in the kernel
    let kavg = col_f64(&s, "lun", "KAVG/cmd");
    for k in 1..cmds.len() {
        assert!((cmds[k] - 1000.0).abs() < 80.0, "CMDS/s {}", cmds[k]);
        assert!((davg[k] - 16.0).abs() < 1.5, "DAVG {}", davg[k]);
        assert!(kavg[k] < 0.05, "KAVG {}", kavg[k]);
    }
    // each disk's rows add up to the LUN's
    let dc = col_f64(&s, "disk", "CMDS/s");
    for k in 1..10 {
        let sum = dc[2 * k] + dc[2 * k + 1];
        assert!((sum - cmds[k]).abs() < 1e-6 * cmds[k].max(1.0) + 1.0, "disks {sum} vs LUN {}", cmds[k]);
    }
    // Little's law at the VM disk: 8 outstanding = throughput x GAVG
    let gavg = col_f64(&s, "disk", "GAVG/cmd");
    for k in 2..20 {
        let l = dc[k] * gavg[k] / 1000.0;
        assert!((l - 8.0).abs() < 0.5, "row {k}: X {} x GAVG {} = {l}", dc[k], gavg[k]);
    }
}

/// The vCPU alternates a fixed 1 ms burst and one synchronous I/O to an exponential device
/// alone (mean 2 ms): its WAIT share is E[S] / (burst + E[S]) = 2/3, RUN 1/3.
#[test]
fn a_vcpu_waiting_for_synchronous_io_spends_the_device_time_in_wait() {
    let spec = json!({
        "seed": 5, "duration_ns": 60 * S, "sample_interval_ns": 2 * S, "host": host(1),
        "vms": [vm("db", 1, cpu(1.0, MS))],
        "storage": {
            "adapters": adapters(1),
            "luns": [exp_lun("ds1", 1, 2 * MS, 1)],
            "disks": [{"name": "db:0", "vm": "db", "lun": "ds1"}],
            "vcpu_io": [{"vm": "db", "disk": "db:0", "block_bytes": 8192, "read_pct": 100.0, "random_pct": 100.0}]
        }
    });
    let mut s = sim(spec);
    s.run().unwrap();
    let [run, ready, mlmtd, wait, idle, _used] = s.vm_counters(0);
    let total = (run + ready + mlmtd + wait + idle) as f64;
    assert_eq!(run + ready + mlmtd + wait + idle, 60 * S, "states cover the powered-on time");
    let wait_frac = wait as f64 / total;
    assert!((wait_frac - 2.0 / 3.0).abs() < 0.015, "WAIT {wait_frac}");
    assert!(((run as f64 / total) - 1.0 / 3.0).abs() < 0.015);
    let (issued, done) = s.vcpu_io_counts();
    assert!(done >= issued - 1 && done > 15_000, "{issued} issued, {done} done");
    // the VM table reports it as %VMWAIT
    let vmwait = col_f64(&s, "vm", "%VMWAIT");
    let mean = vmwait[1..].iter().sum::<f64>() / (vmwait.len() - 1) as f64;
    assert!((mean - 66.7).abs() < 2.0, "%VMWAIT {mean}");
}

fn random_scenario(seed: u64, vms: u32, vcpus: u32, duty: f64, servers: u32, fail_at: u64, back_after: u64) -> Value {
    let vm_list: Vec<Value> = (0..vms).map(|i| vm(&format!("v{i}"), vcpus, json!({"kind": "cpu_bound", "duty": duty, "burst_ns": MS, "burst_dist": "exponential"}))).collect();
    let disks: Vec<Value> = (0..vms).map(|i| json!({"name": format!("v{i}:0"), "vm": format!("v{i}"), "lun": "ds1", "shares": 500 * (1 + i)})).collect();
    let io: Vec<Value> = (0..vms).map(|i| json!({"vm": format!("v{i}"), "disk": format!("v{i}:0"), "block_bytes": 4096, "read_pct": 50.0, "random_pct": 100.0})).collect();
    json!({
        "seed": seed, "duration_ns": 6 * S, "sample_interval_ns": 2 * S, "host": host(2),
        "vms": vm_list,
        "storage": {
            "adapters": adapters(2),
            "luns": [exp_lun("ds1", servers, MS / 2, 2)],
            "disks": disks,
            "vcpu_io": io,
            "events": [{"at_ns": fail_at, "lun": "ds1", "path": 0, "action": "down"},
                       {"at_ns": fail_at + back_after, "lun": "ds1", "path": 0, "action": "up"},
                       {"at_ns": fail_at + back_after / 2, "lun": "ds1", "path": 1, "action": "down"},
                       {"at_ns": fail_at + back_after * 2, "lun": "ds1", "path": 1, "action": "up"}]
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Every vCPU's states add up to its powered-on time, and every synchronous I/O issued
    /// completes exactly once (the vCPU asserts it was waiting; at the end at most one per
    /// vCPU is in flight and the stack holds exactly those), across path failures.
    #[test]
    fn cpu_time_and_io_are_conserved_across_random_scenarios_with_path_failures(
        seed in 0u64..1000, vms in 1u32..4, vcpus in 1u32..3, duty in 0.2f64..1.0, servers in 1u32..4,
        fail_at in 0u64..3 * S, back_after in 1u64..2 * S,
    ) {
        let mut s = sim(random_scenario(seed, vms, vcpus, duty, servers, fail_at, back_after));
        s.run().unwrap();
        for vm in 0..vms {
            let c = s.vm_counters(vm);
            prop_assert_eq!(c[0] + c[1] + c[2] + c[3] + c[4], 6 * S * u64::from(vcpus));
        }
        let (issued, done) = s.vcpu_io_counts();
        let in_flight = s.storage().unwrap().in_flight() as u64;
        prop_assert_eq!(issued, done + in_flight);
        prop_assert!(in_flight <= u64::from(vms * vcpus));
        prop_assert!(done > 0);
        let aborts: f64 = col_f64(&s, "path", "ABRTS/s").iter().sum();
        let _ = aborts; // failures may or may not catch I/O in flight; conservation must hold either way
    }
}

#[test]
fn a_failed_path_carries_nothing_until_it_comes_back_and_the_other_takes_over() {
    let spec = json!({
        "seed": 9, "duration_ns": 10 * S, "sample_interval_ns": 2 * S, "host": host(1),
        "vms": [vm("a", 1, json!({"kind": "idle"}))],
        "storage": {
            "adapters": adapters(2),
            "luns": [exp_lun("ds1", 4, MS, 2)],
            "disks": [{"name": "a:0", "vm": "a", "lun": "ds1"}],
            "workloads": [{"disk": "a:0", "kind": "iometer", "block_bytes": 4096, "read_pct": 50.0, "random_pct": 100.0, "outstanding": 16, "think_ns": 0, "start_ns": 0}],
            "events": [{"at_ns": 2 * S, "lun": "ds1", "path": 0, "action": "down"},
                       {"at_ns": 6 * S, "lun": "ds1", "path": 0, "action": "up"}]
        }
    });
    let mut s = sim(spec);
    s.run().unwrap();
    let path = col_f64(&s, "path", "path");
    let up = col_f64(&s, "path", "up");
    let cmds = col_f64(&s, "path", "CMDS/s");
    // rows: (t=2: p0, p1), (t=4: ...), ...; path 0 is down in the samples at 4 s and 6 s? at
    // 6 s it is back up (the event at 6 s runs before the sample at 6 s: pushed earlier)
    for k in 0..cmds.len() {
        let t = 2 * (k / 2 + 1);
        if path[k] == 0.0 && t == 4 {
            assert_eq!(up[k], 0.0);
            assert_eq!(cmds[k], 0.0, "a failed path completes nothing");
        }
        if path[k] == 1.0 && t == 4 {
            assert!(cmds[k] > 3000.0, "the other path carries everything: {}", cmds[k]);
        }
        if t >= 8 {
            assert!(cmds[k] > 1000.0, "both paths carry I/O again: row {k} {}", cmds[k]);
        }
    }
    let lun = col_f64(&s, "lun", "CMDS/s");
    assert!(lun.iter().all(|&c| c > 3000.0), "the LUN never stops: {lun:?}");
}

#[test]
fn bad_links_in_the_storage_section_name_the_field() {
    let base = |storage: Value| json!({"seed": 1, "duration_ns": 2 * S, "sample_interval_ns": 2 * S, "host": host(1),
        "vms": [vm("a", 1, json!({"kind": "idle"}))], "storage": storage});
    let cases = [
        (json!({"adapters": adapters(1), "luns": [exp_lun("ds1", 1, MS, 1)], "disks": [{"name": "d", "vm": "nope", "lun": "ds1"}]}), "storage.disks[0].vm"),
        (json!({"adapters": adapters(1), "luns": [exp_lun("ds1", 1, MS, 1)], "disks": [{"name": "d", "vm": "a", "lun": "ds9"}]}), "storage.disks[0].lun"),
        (json!({"adapters": adapters(1), "luns": [exp_lun("ds1", 1, MS, 1)], "disks": [{"name": "d", "vm": "a", "lun": "ds1"}],
                "events": [{"at_ns": 1, "lun": "ds1", "path": 3, "action": "down"}]}), "storage.events[0].path"),
        (json!({"adapters": adapters(1), "luns": [exp_lun("ds1", 1, MS, 1)], "disks": [{"name": "d", "vm": "a", "lun": "ds1"}],
                "workloads": [{"disk": "d", "kind": "iometer", "block_bytes": 100, "read_pct": 50.0, "random_pct": 0.0, "outstanding": 1, "think_ns": 0, "start_ns": 0}]}), "storage.workloads[0].block_bytes"),
    ];
    for (storage, field) in cases {
        let spec = vmtwin_core::spec::SimSpec::from_json(&base(storage).to_string()).unwrap();
        let err = Simulation::new(spec).unwrap_err().to_string();
        assert!(err.contains(field), "{err}");
    }
}

fn trace_path() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/io-traces/cloudPhysicsIO.csv")
}

fn trace_spec(path: &str) -> Value {
    json!({
        "seed": 1, "duration_ns": 20 * S, "sample_interval_ns": 2 * S, "host": host(1),
        "vms": [vm("a", 1, json!({"kind": "idle"}))],
        "storage": {
            "adapters": adapters(1),
            "luns": [exp_lun("ds1", 4, MS, 1)],
            "disks": [{"name": "a:0", "vm": "a", "lun": "ds1", "span_bytes": 1u64 << 40}],
            "traces": [{"disk": "a:0", "path": path, "start_ns": 0, "speed": 1.0}]
        }
    })
}

/// The first 20 s of the real VMware guest trace replayed in a run issue exactly the file's
/// records of those seconds (counted here from the file, independently of the parser).
#[test]
fn a_block_trace_replays_in_a_run_record_for_record() {
    let path = trace_path();
    let mut s = sim(trace_spec(path.to_str().unwrap()));
    s.run().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let secs: Vec<u64> = text.lines().skip(1).filter(|l| !l.trim().is_empty()).map(|l| l.split(',').nth(1).unwrap().parse().unwrap()).collect();
    let t0 = secs[0];
    // a second's records are spread evenly over it, the first at the second itself; a run
    // includes the events due exactly at its end, so the first record of second 20 is issued
    let want = secs.iter().filter(|&&x| x - t0 < 20).count() as u64 + u64::from(secs.iter().any(|&x| x - t0 == 20));
    let st = s.storage().unwrap().gen_stats(0);
    assert_eq!(st.issued, want);
    // what completed is in the disk table's rows
    let done: f64 = col_f64(&s, "disk", "CMDS/s").iter().map(|c| c * 2.0).sum();
    assert!((done - st.completed as f64).abs() < 0.5, "{done} vs {}", st.completed);
}

#[test]
fn a_missing_or_malformed_trace_file_names_the_file_and_line() {
    let err = Simulation::new(vmtwin_core::spec::SimSpec::from_json(&trace_spec("/nonexistent/trace.csv").to_string()).unwrap()).unwrap_err().to_string();
    assert!(err.contains("/nonexistent/trace.csv") && err.contains("readable"), "{err}");
    let dir = std::env::temp_dir().join(format!("vmtwin-bad-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.csv");
    std::fs::write(&bad, "version,time,op,size,lbn\n1,5,28,512,7\n1,6,99,512,8\n").unwrap();
    let err = Simulation::new(vmtwin_core::spec::SimSpec::from_json(&trace_spec(bad.to_str().unwrap()).to_string()).unwrap()).unwrap_err().to_string();
    assert!(err.contains("bad.csv:3") && err.contains("op '99'"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

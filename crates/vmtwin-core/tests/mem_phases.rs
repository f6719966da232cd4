//! Working-set phases of a touch profile (`TouchSpec::phases`), in runs:
//!
//! - after each phase starts, the working set the pmap counts (TCHD_W, the distinct pages touched
//!   in the last full sampling period) is exactly the phase's size: the sequential toucher covers
//!   its whole set many times per period;
//! - a phase at time 0 of the working set's own size changes nothing: identical tables;
//! - bad phases are refused by the engine's own check, naming the phase's field.

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

/// One 64 MB VM, busy, touching `ws` MB sequentially at 20,000 pages per CPU-second, with
/// `phases` as (start s, MB).
fn spec(ws: u64, phases: &[(u64, u64)], extra: Value) -> Value {
    let mut touch = json!({"working_set_bytes": ws * MB, "pages_per_cpu_s": 20_000.0, "pattern": "sequential",
                           "phases": phases.iter().map(|&(at, mb)| json!({"at_ns": at * S, "working_set_bytes": mb * MB})).collect::<Vec<_>>()});
    if let (Some(t), Some(e)) = (touch.as_object_mut(), extra.as_object()) {
        t.extend(e.clone());
    }
    json!({
        "seed": 3, "duration_ns": 300 * S, "sample_interval_ns": 2 * S,
        "host": {"name": "h", "sockets": 1, "numa_nodes_per_socket": 1, "llcs_per_node": 1,
                 "cores_per_llc": 2, "threads_per_core": 1, "core_mhz": 2000, "memory_bytes": 256 * MB},
        "vms": [{"name": "vm0", "pool": null, "vcpus": 1, "memory_bytes": 64 * MB, "shares": 1000,
                 "reservation_mhz": 0, "limit_mhz": null,
                 "workload": {"kind": "cpu_bound", "duty": 1.0, "burst_ns": 10_000_000u64, "burst_dist": "fixed"}}],
        "memory": {"preset": "esx2002", "idle_tax": 0.75, "host_overhead_bytes": 0,
                   "vms": [{"shares": 640.0, "overhead_bytes": 0, "touch": touch}]}
    })
}

fn run(v: &Value) -> Vec<(String, Table)> {
    let mut sim = Simulation::new(SimSpec::from_json(&v.to_string()).unwrap()).unwrap();
    sim.run().unwrap();
    sim.tables().into_iter().map(|(n, t)| (n.to_string(), t.clone())).collect()
}

#[test]
fn the_counted_working_set_is_each_phases_size() {
    let phases = [(60, 24), (150, 4), (210, 40)];
    let tables = run(&spec(8, &phases, json!({})));
    let mem = &tables.iter().find(|(n, _)| n == "mem").expect("a mem table").1;
    let (t, ws) = (col(mem, "time_s"), col(mem, "TCHD_W"));
    let starts = [(0u64, 8u64), phases[0], phases[1], phases[2]];
    let mut checked = 0;
    for (k, &(at, mb)) in starts.iter().enumerate() {
        let end = starts.get(k + 1).map_or(300, |p| p.0);
        // TCHD_W is the last full 30 s period's count: from the first period wholly inside the phase
        let first_full = at.div_ceil(30) * 30 + 30;
        for (i, &ti) in t.iter().enumerate() {
            if ti > first_full as f64 && ti <= end as f64 {
                assert_eq!(ws[i], mb as f64, "t = {ti}: phase from {at} s of {mb} MB");
                checked += 1;
            }
        }
    }
    assert!(checked > 80, "{checked}");
}

#[test]
fn a_phase_at_zero_of_the_same_size_changes_nothing() {
    let plain = run(&spec(8, &[], json!({})));
    let phased = run(&spec(8, &[(0, 8)], json!({})));
    assert_eq!(format!("{plain:?}"), format!("{phased:?}"));
}

#[test]
fn bad_phases_are_refused_naming_the_field() {
    let cases = [
        (spec(8, &[(60, 8), (60, 16)], json!({})), "phases[1].at"),
        (spec(8, &[(60, 65)], json!({})), "phases[0].working_set"),
        (spec(8, &[(60, 0)], json!({})), "phases[0].working_set"),
        (spec(8, &[(60, 8)], json!({"hot_block_bytes": 4 * MB})), "guest_memory.phases"),
    ];
    for (v, field) in cases {
        let Err(err) = SimSpec::from_json(&v.to_string()).and_then(Simulation::new) else { panic!("{field}: accepted") };
        assert!(err.to_string().contains(field), "{field}: {err}");
    }
}

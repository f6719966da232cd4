//! The memory subsystem inside runs: built from the spec's memory section, ticking on the run
//! loop's queue, touched by workloads, sampled into the `mem` tables.
//!
//! - conservation through the run loop (proptest over random scenarios): at every sample the
//!   host's own recount (`audit`) holds (every machine page in exactly one place, each VM's
//!   states adding up to its configured pages, refcounts equal to sharers), and the table's
//!   columns agree with it;
//! - an overcommitted host reclaims (balloon, compression, swap) and a VM whose working set is
//!   swapped waits: %SWPWT > 0, the wait shows in the vCPU's WAIT time (%VMWAIT);
//! - a scenario without a memory section has no memory tables;
//! - same seed, same tables.

use proptest::prelude::*;
use serde_json::{json, Value};
use vmtwin_core::metrics::{Column, Table};
use vmtwin_core::spec::SimSpec;
use vmtwin_core::Simulation;

const MB: u64 = 1 << 20;

fn col<'a>(t: &'a Table, name: &str) -> &'a [f64] {
    match t.column(name) {
        Some(Column::F64(v)) => v,
        other => panic!("{name}: {other:?}"),
    }
}

/// One host, `vms` as (memory MB, duty, working-set MB, write fraction).
fn spec(host_mb: u64, vms: &[(u64, f64, u64, f64)], preset: &str, tax: f64, seconds: u64, seed: u64) -> Value {
    spec_rate(host_mb, vms, preset, tax, seconds, seed, 20_000.0)
}

/// [`spec`] with every VM touching `rate` pages per CPU-second.
fn spec_rate(host_mb: u64, vms: &[(u64, f64, u64, f64)], preset: &str, tax: f64, seconds: u64, seed: u64, rate: f64) -> Value {
    let vm = |i: usize, &(mb, duty, _, _): &(u64, f64, u64, f64)| {
        json!({"name": format!("vm{i}"), "pool": null, "vcpus": 1, "memory_bytes": mb * MB, "shares": 1000,
               "reservation_mhz": 0, "limit_mhz": null,
               "workload": {"kind": "cpu_bound", "duty": duty, "burst_ns": 10_000_000u64, "burst_dist": "exponential"}})
    };
    let mem = move |&(mb, _, ws, wf): &(u64, f64, u64, f64)| {
        json!({"shares": (mb * 10) as f64, "overhead_bytes": 2 * MB,
               "content": {"os": 1, "os_fraction": 0.2, "zero_fraction": 0.1},
               "touch": {"working_set_bytes": ws * MB, "pages_per_cpu_s": rate, "write_fraction": wf}})
    };
    json!({
        "seed": seed, "duration_ns": seconds * 1_000_000_000, "sample_interval_ns": 2_000_000_000u64,
        "host": {"name": "h", "sockets": 1, "numa_nodes_per_socket": 2, "llcs_per_node": 1,
                 "cores_per_llc": 2, "threads_per_core": 1, "core_mhz": 2000, "memory_bytes": host_mb * MB},
        "vms": vms.iter().enumerate().map(|(i, v)| vm(i, v)).collect::<Vec<_>>(),
        "memory": {"preset": preset, "idle_tax": tax, "host_overhead_bytes": 4 * MB,
                   "vms": vms.iter().map(mem).collect::<Vec<_>>()}
    })
}

fn build(v: &Value) -> Simulation {
    Simulation::new(SimSpec::from_json(&v.to_string()).unwrap()).unwrap()
}

/// Run to the end, checking the host's recount at every sample.
fn run_audited(sim: &mut Simulation) {
    let mut failure = None;
    let end = sim.spec().duration_ns;
    // `progress` runs after every sample; the recount needs the simulation, so step by samples
    let step = sim.spec().sample_interval_ns;
    let mut t = 0;
    while t < end {
        t = (t + step).min(end);
        sim.run_until(t, &mut |_| true).unwrap();
        if let Err(e) = sim.mem_host().unwrap().audit() {
            failure = Some(format!("at {t} ns: {e}"));
            break;
        }
    }
    if let Some(f) = failure {
        panic!("{f}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn pages_are_conserved_through_the_run_loop(
        host_mb in 24u64..96,
        vms in prop::collection::vec((8u64..40, 0.05f64..1.0, 1u64..40, 0.0f64..0.5), 1..5),
        esx2002 in any::<bool>(),
        tax in 0.0f64..0.95,
        seed in any::<u64>(),
    ) {
        let vms: Vec<_> = vms.into_iter().map(|(mb, d, ws, wf)| (mb, d, ws.min(mb), wf)).collect();
        let preset = if esx2002 { "esx2002" } else { "esx2013" };
        let v = spec(host_mb, &vms, preset, tax, 40, seed);
        let Ok(mut sim) = Simulation::new(SimSpec::from_json(&v.to_string()).unwrap()) else {
            // admission control refused the overheads: nothing to conserve
            return Ok(());
        };
        run_audited(&mut sim);
        let host = sim.table("mem_host").unwrap();
        let free = col(host, "FREE");
        let total = col(host, "PMEM");
        prop_assert!(total.iter().all(|&p| p == host_mb as f64));
        // configured pages per VM, as the table reports them
        let t = sim.table("mem").unwrap();
        for (i, &(mb, ..)) in vms.iter().enumerate() {
            let rows: Vec<f64> = col(t, "MEMSZ").iter().zip(match t.column("vm_id") { Some(Column::U32(v)) => v, _ => panic!() })
                .filter(|(_, &id)| id == i as u32).map(|(&m, _)| m).collect();
            prop_assert!(rows.iter().all(|&m| m == mb as f64), "vm{} MEMSZ {:?}", i, rows);
        }
        // at every sample: consumed memory of the VMs and free memory never exceed the host
        let n = vms.len();
        let cnsm = col(t, "CNSM");
        for (k, &f) in free.iter().enumerate() {
            let used: f64 = cnsm[k * n..(k + 1) * n].iter().sum();
            prop_assert!(used + f <= host_mb as f64 + 1e-6, "sample {}: consumed {} + free {} > {}", k, used, f, host_mb);
        }
    }
}

#[test]
fn an_overcommitted_host_reclaims_and_swapped_vcpus_wait() {
    // 4 VMs of 64 MB, each touching all of it, on 160 MB: 1.6x overcommitted; touching slowly
    // enough that free memory passes through the soft state (ballooning) on its way down
    let vms = [(64, 0.5, 64, 0.05); 4];
    let mut sim = build(&spec_rate(160, &vms, "esx2013", 0.75, 180, 7, 2_000.0));
    run_audited(&mut sim);
    let t = sim.table("mem").unwrap();
    let max = |c: &str| col(t, c).iter().cloned().fold(0.0, f64::max);
    assert!(max("MCTLSZ") > 0.0, "ballooned");
    assert!(max("SWCUR") > 0.0, "swapped");
    assert!(max("ZIP") > 0.0, "compressed (2013 preset)");
    assert!(max("SWR/s") > 0.0 && max("SWW/s") > 0.0);
    assert!(max("%SWPWT") > 0.0, "a vCPU waited on a swap-in");
    assert!(max("MEMCPU_ms") > 0.0, "scan and compression CPU charged");
    let states = match sim.table("mem_host").unwrap().column("state") {
        Some(Column::U32(v)) => v.clone(),
        _ => panic!(),
    };
    assert!(states.iter().any(|&s| s >= 1), "left the high state: {states:?}");
    // total swap wait equals the sum the table's %SWPWT reports
    let mem = sim.mem_host().unwrap();
    let waited: u64 = (0..4).map(|i| mem.counters(i).swap_wait_ns).sum();
    let reported: f64 = col(t, "%SWPWT").iter().sum::<f64>() / 100.0 * 2e9;
    assert!((waited as f64 - reported).abs() < 1.0 + 1e-9 * waited as f64, "{waited} vs {reported}");
}

#[test]
fn swap_waits_hold_the_vcpu_back() {
    // the same VM alone with all its memory, and squeezed: squeezed it runs less
    let alone = [(64, 1.0, 64, 0.0)];
    let mut a = build(&spec(256, &alone, "esx2013", 0.75, 120, 3));
    a.run().unwrap();
    let squeezed = [(64, 1.0, 64, 0.0), (64, 0.2, 64, 0.3), (64, 0.2, 64, 0.3)];
    let mut b = build(&spec(120, &squeezed, "esx2002", 0.75, 120, 3));
    b.run().unwrap();
    let used = |s: &mut Simulation| s.vm_counters(0)[5];
    let wait_b = b.mem_host().unwrap().counters(0).swap_wait_ns;
    assert_eq!(a.mem_host().unwrap().counters(0).swap_wait_ns, 0);
    assert!(wait_b > 0);
    let (ua, ub) = (used(&mut a), used(&mut b));
    // it cannot run while it waits: its run time falls at least by the wait (less the pCPU
    // it shares with nobody: two pCPUs, three VMs of which two are mostly idle)
    assert!(ub + wait_b / 2 <= ua, "alone {ua} ns, squeezed {ub} ns, waited {wait_b} ns");
    // and it waits blocked in the VMkernel, where esxtop counts %SWPWT (inside %VMWAIT), not
    // halted by its guest: the VM's WAIT time holds every swap wait, and the alone run has none
    let wait_state = |s: &mut Simulation| s.vm_counters(0)[3];
    assert_eq!(wait_state(&mut a), 0);
    assert!(wait_state(&mut b) >= wait_b, "WAIT {} ns < swap wait {wait_b} ns", wait_state(&mut b));
}

#[test]
fn without_a_memory_section_there_are_no_memory_tables() {
    let mut v = spec(64, &[(16, 0.5, 16, 0.0)], "esx2013", 0.75, 10, 1);
    v.as_object_mut().unwrap().remove("memory");
    let mut sim = build(&v);
    sim.run().unwrap();
    assert!(sim.mem_host().is_none());
    let names: Vec<&str> = sim.tables().into_iter().map(|(n, _)| n).collect();
    assert!(!names.contains(&"mem") && !names.contains(&"mem_host"), "{names:?}");
}

#[test]
fn same_seed_same_tables() {
    let vms = [(48, 0.7, 48, 0.1), (48, 0.3, 24, 0.0), (48, 0.5, 48, 0.2)];
    let run = || {
        let mut s = build(&spec(100, &vms, "esx2013", 0.75, 60, 11));
        s.run().unwrap();
        (s.table("mem").unwrap().clone().columns, s.table("vm").unwrap().clone().columns)
    };
    assert_eq!(format!("{:?}", run()), format!("{:?}", run()));
}

#[test]
fn bad_memory_input_names_the_field() {
    let err = |f: &dyn Fn(&mut Value)| {
        let mut v = spec(64, &[(16, 0.5, 16, 0.0)], "esx2013", 0.75, 10, 1);
        f(&mut v);
        Simulation::new(SimSpec::from_json(&v.to_string()).unwrap()).unwrap_err().to_string()
    };
    let e = err(&|v| v["memory"]["vms"][0]["reservation_bytes"] = json!(17 * MB));
    assert!(e.contains("vms[0].memory_allocation.reservation"), "{e}");
    let e = err(&|v| v["memory"]["idle_tax"] = json!(1.0));
    assert!(e.contains("memory.idle_tax") && e.contains("[0, 1)"), "{e}");
    let e = err(&|v| v["memory"]["vms"][0]["image"] = json!("/nonexistent/guest.vmem"));
    assert!(e.contains("/nonexistent/guest.vmem"), "{e}");
    let e = err(&|v| v["memory"]["vms"] = json!([]));
    assert!(e.contains("memory.vms"), "{e}");
}

//! Application workloads (`mem/app.rs`): operations of CPU work, memory touches and file reads,
//! read as operations per minute, latency and MB/s in the `mem_app` table.
//!
//! - with no memory pressure, a closed loop of fixed bursts completes `vcpus * 60 / cpu_per_op`
//!   operations per minute and each operation's latency is its CPU (closed form);
//! - when every file read misses the page cache, each operation waits `reads * read_latency`
//!   more: operations per minute fall to `vcpus * 60 / (cpu + reads * read)` and the latency
//!   rises by the same (closed form, with the measured hit ratio);
//! - a file set that fits in the guest's free memory is cached once and then hit every time;
//! - page cache, balloon and guest swap together keep the guest's recount (audit) right;
//! - same seed, same `mem_app` table.

use serde_json::{json, Value};
use vmtwin_core::metrics::{Column, Table};
use vmtwin_core::spec::SimSpec;
use vmtwin_core::Simulation;

const MB: u64 = 1 << 20;
const MS: u64 = 1_000_000;

fn col<'a>(t: &'a Table, name: &str) -> &'a [f64] {
    match t.column(name) {
        Some(Column::F64(v)) => v,
        other => panic!("{name}: {other:?}"),
    }
}

/// One VM of `vcpus` vCPUs and `vm_mb` MB on a 4-core host of `host_mb` MB, running an
/// application of `cpu_ms` per operation, `touches` touches over `ws_mb` MB, `reads` file reads
/// over `files_mb` MB; the stand-in disk answers reads in `read_ms`.
#[allow(clippy::too_many_arguments)]
fn spec(host_mb: u64, vm_mb: u64, vcpus: u32, cpu_ms: u64, touches: u32, ws_mb: u64, reads: u32, files_mb: u64, read_ms: u64, seconds: u64) -> Value {
    json!({
        "seed": 7, "duration_ns": seconds * 1_000_000_000, "sample_interval_ns": 5_000_000_000u64,
        "host": {"name": "h", "sockets": 1, "numa_nodes_per_socket": 1, "llcs_per_node": 1,
                 "cores_per_llc": 4, "threads_per_core": 1, "core_mhz": 2000, "memory_bytes": host_mb * MB},
        "vms": [{"name": "app", "pool": null, "vcpus": vcpus, "memory_bytes": vm_mb * MB, "shares": 1000,
                 "reservation_mhz": 0, "limit_mhz": null,
                 "workload": {"kind": "cpu_bound", "duty": 1.0, "burst_ns": cpu_ms * MS, "burst_dist": "fixed"}}],
        "memory": {"preset": "esx2013", "idle_tax": 0.75, "host_overhead_bytes": 4 * MB, "share_scan_pages_per_s": 0,
                   "standin_read_ns": read_ms * MS, "standin_write_ns": read_ms * MS,
                   "vms": [{"shares": (vm_mb * 10) as f64, "overhead_bytes": 2 * MB,
                            "touch": {"working_set_bytes": ws_mb * MB},
                            "guest_os": {"kernel_base_bytes": 8 * MB, "kernel_bytes_per_page": 64.0, "boot_cache_bytes": 0},
                            "app": {"kind": "file_server", "touches_per_op": touches, "file_set_bytes": files_mb * MB,
                                    "file_reads_per_op": reads}}]}
    })
}

fn run(v: &Value) -> Simulation {
    let mut sim = Simulation::new(SimSpec::from_json(&v.to_string()).unwrap()).unwrap();
    sim.run().unwrap();
    sim
}

fn app_table(sim: &Simulation) -> Table {
    let tables = sim.tables();
    tables.into_iter().find(|(n, _)| *n == "mem_app").map(|(_, t)| t.clone()).expect("a mem_app table")
}

/// Mean of `name` over the samples after the first `skip`.
fn mean_after(t: &Table, name: &str, skip: usize) -> f64 {
    let v = &col(t, name)[skip..];
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn no_pressure_gives_cpu_capacity_over_cpu_per_op() {
    // 2 vCPUs on 4 cores, 25 ms per operation, 200 touches over 16 MB: nothing ever waits
    for (vcpus, cpu_ms) in [(1u32, 25u64), (2, 25), (3, 40)] {
        let sim = run(&spec(1024, 256, vcpus, cpu_ms, 200, 16, 0, 0, 5, 40));
        let t = app_table(&sim);
        let want = f64::from(vcpus) * 60_000.0 / cpu_ms as f64;
        // after the first sample (first touches zero pages, and the first burst starts after a
        // random phase)
        for (i, &opm) in col(&t, "OPM").iter().enumerate().skip(1) {
            assert!((opm - want).abs() <= f64::from(vcpus) * 60.0 / 5.0 + 1e-9, "vcpus {vcpus} sample {i}: OPM {opm}, closed form {want}");
        }
        for &p95 in &col(&t, "P95_MS")[1..] {
            assert!((p95 - cpu_ms as f64).abs() < 0.01, "p95 {p95} ms, the CPU per operation {cpu_ms} ms");
        }
        assert!(col(&t, "MB/s").iter().all(|&x| x == 0.0));
    }
}

#[test]
fn every_miss_adds_its_read_to_the_operation() {
    // a 2 GB file set read by a 64 MB guest: nearly every read misses and waits 4 ms
    let (vcpus, cpu_ms, reads, read_ms) = (2u32, 10u64, 3u32, 4u64);
    let sim = run(&spec(1024, 64, vcpus, cpu_ms, 50, 8, reads, 2048, read_ms, 60));
    let t = app_table(&sim);
    let hit = mean_after(&t, "HIT%", 2) / 100.0;
    assert!(hit < 0.05, "hit ratio {hit}");
    let per_op_ms = cpu_ms as f64 + f64::from(reads) * (1.0 - hit) * read_ms as f64;
    let want = f64::from(vcpus) * 60_000.0 / per_op_ms;
    let opm = mean_after(&t, "OPM", 2);
    assert!((opm / want - 1.0).abs() < 0.02, "OPM {opm}, closed form {want} (hit {hit})");
    let lat = mean_after(&t, "LAT_MS", 2);
    assert!((lat / per_op_ms - 1.0).abs() < 0.02, "latency {lat} ms, closed form {per_op_ms}");
    // MB/s counts every read of a completed operation, 4 KiB each
    let mbs = mean_after(&t, "MB/s", 2);
    assert!((mbs - opm / 60.0 * f64::from(reads) / 256.0).abs() < 1e-9, "MB/s {mbs}");
}

#[test]
fn a_file_set_that_fits_is_read_once_then_hit() {
    // 4 MB of files in a 256 MB guest: after the cache has them, every read hits
    let sim = run(&spec(1024, 256, 1, 10, 0, 4, 8, 4, 5, 60));
    let t = app_table(&sim);
    let hits = col(&t, "HIT%");
    assert!(hits[hits.len() - 1] == 100.0 && hits[hits.len() - 2] == 100.0, "hit% {hits:?}");
    let mem = sim.mem_host().unwrap();
    let g = mem.guest(sim.mem_index(0).unwrap()).unwrap();
    assert_eq!((0..g.file_pages()).filter(|&f| g.cached_file(f).is_some()).count() as u32, g.file_pages());
    mem.audit().unwrap();
}

#[test]
fn page_cache_balloon_and_guest_swap_keep_the_guest_recount() {
    // a host too small for the guest: the balloon takes cache and anonymous pages, reads refill
    // the cache; the recount must hold at every sample
    let v = spec(200, 256, 2, 5, 100, 96, 8, 512, 2, 60);
    let mut sim = Simulation::new(SimSpec::from_json(&v.to_string()).unwrap()).unwrap();
    let mut t = 0;
    while t < sim.spec().duration_ns {
        t += sim.spec().sample_interval_ns;
        sim.run_until(t, &mut |_| true).unwrap();
        sim.mem_host().unwrap().audit().unwrap_or_else(|e| panic!("at {t} ns: {e}"));
    }
    let tab = app_table(&sim);
    assert!(col(&tab, "OPS").iter().sum::<f64>() > 0.0);
}

#[test]
fn same_seed_same_table() {
    let v = spec(200, 256, 2, 5, 100, 96, 8, 512, 2, 30);
    let (a, b) = (app_table(&run(&v)), app_table(&run(&v)));
    for name in ["OPS", "OPM", "MB/s", "LAT_MS", "P95_MS", "HIT%"] {
        assert_eq!(col(&a, name), col(&b, name), "{name}");
    }
}

#[test]
fn bad_application_names_its_field() {
    let mut v = spec(1024, 256, 1, 10, 10, 8, 4, 0, 5, 10);
    let Err(e) = Simulation::new(SimSpec::from_json(&v.to_string()).unwrap()) else { panic!("no file set accepted") };
    let e = e.to_string();
    assert!(e.contains("vms[0].guest_memory.app.file_set"), "{e}");
    v["memory"]["vms"][0]["guest_os"] = Value::Null;
    v["memory"]["vms"][0]["app"]["file_set_bytes"] = json!(MB);
    let Err(e) = Simulation::new(SimSpec::from_json(&v.to_string()).unwrap()) else { panic!("an app without a guest accepted") };
    let e = e.to_string();
    assert!(e.contains("vms[0].guest_memory.app"), "{e}");
}

//! Devices, splitting, merging, counters, trace replay and bad input.

mod storage_support;
use std::path::PathBuf;
use storage_support::*;
use vmtwin_core::storage::hdd::Hdd;
use vmtwin_core::storage::workload::{read_vscsi_csv, TraceReplay, WorkloadSpec};
use vmtwin_core::storage::*;

fn single(device: DeviceSpec, dqlen: u32) -> StorageSpec {
    StorageSpec {
        seed: 1,
        params: StackParams::default(),
        adapters: vec![fast_adapter("vmhba1")],
        arrays: vec![],
        luns: vec![LunSpec { name: "lun0".into(), device, dqlen, psp: PspSpec::Fixed { preferred: 0 }, paths: vec![PathSpec { adapter: "vmhba1".into(), controller: 0, fabric_ns: 0 }] }],
        disks: vec![VmDiskSpec { span_bytes: 1_000_000_000_000, ..VmDiskSpec::new("vm0:scsi0:0", "lun0") }],
    }
}

fn hdd_iops(order: HddOrder, outstanding: u32) -> (f64, f64) {
    let p = HddParams { order, ..HddParams::default() };
    let mut st = Storage::new(&single(DeviceSpec::Hdd(p), 32)).unwrap();
    let g = st.add_workload(0, iometer(4096, 100.0, outstanding)).unwrap();
    let mut lp = Loop::default();
    st.start(0, &mut lp);
    lp.run_until(&mut st, 60 * S);
    let s = st.gen_stats(g);
    (s.completed as f64 / 60.0, s.mean_resp_ns())
}

#[test]
fn hdd_random_service_matches_its_geometry() {
    let p = HddParams::default();
    let h = Hdd::new(&p);
    assert_eq!(h.seek_ns(0), 0.0);
    assert_eq!(h.seek_ns(1), p.seek_track_ns as f64);
    assert!((h.seek_ns(u64::from(p.cylinders)) - p.seek_full_ns as f64).abs() < 1.0);
    // one request at a time, uniform random over the whole disk: E[service] = overhead +
    // E[seek(|X - Y|)] + half a revolution + transfer, with X, Y uniform cylinders (numeric oracle)
    let n = f64::from(p.cylinders);
    let steps = 20_000;
    let mut e_seek = 0.0;
    for i in 0..steps {
        let x = (i as f64 + 0.5) / steps as f64; // distance as a fraction of the stroke
        let density = 2.0 * (1.0 - x); // |X - Y| for X, Y uniform on [0, 1]
        e_seek += density * h.seek_ns((x * n).round() as u64) / steps as f64;
    }
    let rev = 60e9 / f64::from(p.rpm);
    let expect = p.command_overhead_ns as f64 + e_seek + rev / 2.0 + 4096.0 * 1e9 / p.media_bytes_per_s as f64;
    let (_, resp) = hdd_iops(HddOrder::Fcfs, 1);
    println!("mean service {resp:.0} ns vs geometry {expect:.0} ns");
    assert!((resp - expect).abs() / expect < 0.03);
}

#[test]
fn hdd_onboard_reordering_raises_throughput() {
    let (fcfs1, _) = hdd_iops(HddOrder::Fcfs, 1);
    let (fcfs32, _) = hdd_iops(HddOrder::Fcfs, 32);
    let (sstf32, _) = hdd_iops(HddOrder::Sstf, 32);
    let (sptf32, _) = hdd_iops(HddOrder::Sptf, 32);
    println!("FCFS 1: {fcfs1:.1}, FCFS 32: {fcfs32:.1}, SSTF 32: {sstf32:.1}, SPTF 32: {sptf32:.1} IOPS");
    // FCFS gains nothing from a deeper queue (same random service per command)
    assert!((fcfs32 - fcfs1).abs() / fcfs1 < 0.03);
    assert!(sstf32 > 1.5 * fcfs32, "SSTF {sstf32} vs FCFS {fcfs32}");
    assert!(sptf32 > sstf32 * 1.2, "SPTF {sptf32} vs SSTF {sstf32}");
}

#[test]
fn ssd_latency_is_fixed_part_plus_transfer() {
    let p = SsdParams::default();
    let mut st = Storage::new(&single(DeviceSpec::Ssd(p.clone()), 32)).unwrap();
    let mut lp = Loop::default();
    st.submit(0, 0, Op::Read, 0, 65536, 1, &mut lp).unwrap();
    st.submit(0, 0, Op::Write, 1 << 20, 4096, 2, &mut lp).unwrap();
    lp.run_until(&mut st, S);
    let c = st.take_completions();
    let per_byte = 1e9 * f64::from(p.channels) / p.bytes_per_s as f64;
    let lat = |tok: u64| c.iter().find(|x| x.token == tok).map(|x| x.done - x.issued).unwrap();
    assert_eq!(lat(1), p.read_ns + (65536.0 * per_byte).round() as u64);
    assert_eq!(lat(2), p.write_ns + (4096.0 * per_byte).round() as u64);
}

#[test]
fn array_reads_keep_cache_affinity_per_controller_and_writes_are_mirrored() {
    // read a 1 MB region through an AO path, then again through an AUO path (FIXED preferred 2)
    let read_all = |spec: &StorageSpec, warm_path: Option<u32>, write_first: bool| {
        let mut st = Storage::new(spec).unwrap();
        let mut lp = Loop::default();
        let mut t = 0;
        if write_first {
            for i in 0..16u64 {
                st.submit(t, 0, Op::Write, i * 65536, 65536, i, &mut lp).unwrap();
                t += MS;
                lp.run_until(&mut st, t);
            }
        }
        if let Some(p) = warm_path {
            let _ = p;
            for i in 0..16u64 {
                st.submit(t, 0, Op::Read, i * 65536, 65536, 100 + i, &mut lp).unwrap();
                t += MS;
                lp.run_until(&mut st, t);
            }
        }
        st.take_completions();
        let before = st.lun_counters(0, t);
        for i in 0..16u64 {
            st.submit(t, 0, Op::Read, i * 65536, 65536, 200 + i, &mut lp).unwrap();
            t += MS;
            lp.run_until(&mut st, t);
        }
        let after = st.lun_counters(0, t);
        (EsxtopDisk::between(&before, &after).davg_ms, st.array_cache_stats(0, 0), st.array_cache_stats(0, 1))
    };
    let ao = array_spec(PspSpec::Fixed { preferred: 0 }, 1, 1);
    let auo = array_spec(PspSpec::Fixed { preferred: 2 }, 1, 1);
    let a = ArraySpec::named("fa1");
    let (cold, ..) = read_all(&ao, None, false);
    let (warm, c0, _) = read_all(&ao, Some(0), false);
    let (auo_cold, _, c1) = read_all(&auo, None, false);
    let (mirrored, ..) = read_all(&auo, None, true);
    println!("cold {cold:.3} ms, warm {warm:.3}, AUO cold {auo_cold:.3}, AUO after writes {mirrored:.3}; ctrl0 {c0:?} ctrl1 {c1:?}");
    let ms = |ns: u64| ns as f64 / 1e6;
    assert!((cold - warm - ms(a.backend_read_ns)).abs() < 1e-3, "a miss costs backend_read_ns");
    assert!((auo_cold - cold - ms(a.hop_ns)).abs() < 1e-3, "the AUO path costs hop_ns");
    assert!((auo_cold - mirrored - ms(a.backend_read_ns)).abs() < 1e-3, "writes fill the partner's cache too");
    assert_eq!(c0, (16, 16));
}

#[test]
fn large_requests_split_and_adjacent_ones_merge() {
    let spec = single(DeviceSpec::Exponential { servers: 1, mean_service_ns: MS }, 32);
    let mut st = Storage::new(&spec).unwrap();
    let mut lp = Loop::default();
    st.submit(0, 0, Op::Read, 0, 2 << 20, 7, &mut lp).unwrap(); // 2 MB -> 4 pieces of 512 kB
    st.submit(0, 0, Op::Read, 8 << 20, (512 << 10) + 4096, 8, &mut lp).unwrap(); // -> 2 pieces
    lp.run_until(&mut st, S);
    assert_eq!(st.take_completions().len(), 2);
    let (d, l) = (st.disk_counters(0, S), st.lun_counters(0, S));
    assert_eq!((d.cmds, l.cmds), (2, 6));
    assert_eq!(d.bytes_read, l.bytes_read);

    // ω = 4 on a queue of adjacent 4 kB writes: the device sees fewer, larger commands
    let mut spec = single(DeviceSpec::Exponential { servers: 1, mean_service_ns: MS }, 1);
    spec.params.merge_omega = 4.0;
    let mut st = Storage::new(&spec).unwrap();
    let mut lp = Loop::default();
    for i in 0..64u64 {
        st.submit(0, 0, Op::Write, i * 4096, 4096, i, &mut lp).unwrap();
    }
    lp.run_until(&mut st, S);
    assert_eq!(st.take_completions().len(), 64);
    let (d, l) = (st.disk_counters(0, S), st.lun_counters(0, S));
    assert_eq!(d.cmds, 64);
    // the first goes alone (queue empty), the rest in bundles of four
    assert_eq!(l.cmds, 1 + 63usize.div_ceil(4) as u64);
    assert_eq!(l.bytes_written, 64 * 4096);
    // non-adjacent requests are not merged when merging is contiguous-only
    let mut st = Storage::new(&spec).unwrap();
    let mut lp = Loop::default();
    for i in 0..64u64 {
        st.submit(0, 0, Op::Write, i * 8192, 4096, i, &mut lp).unwrap();
    }
    lp.run_until(&mut st, 2 * S);
    assert_eq!(st.lun_counters(0, 2 * S).cmds, 64);
}

#[test]
fn esxtop_rows_have_esxtop_units() {
    let spec = single(DeviceSpec::Exponential { servers: 1, mean_service_ns: 2 * MS }, 4);
    let mut st = Storage::new(&spec).unwrap();
    st.add_workload(0, iometer(65536, 25.0, 8)).unwrap();
    let mut lp = Loop::default();
    st.start(0, &mut lp);
    lp.run_until(&mut st, 10 * S);
    let a = st.lun_counters(0, 10 * S);
    lp.run_until(&mut st, 20 * S);
    let b = st.lun_counters(0, 20 * S);
    let e = EsxtopDisk::between(&a, &b);
    println!("{e:?}");
    // one server at 2 ms: 500 CMDS/s; 64 kB each; a quarter reads
    assert!((e.cmds_per_s - 500.0).abs() < 15.0);
    assert!((e.reads_per_s + e.writes_per_s - e.cmds_per_s).abs() < 1e-9);
    assert!((e.mbread_per_s - e.reads_per_s * 65536.0 / 1048576.0).abs() < 1e-9);
    assert!((e.reads_per_s / e.cmds_per_s - 0.25).abs() < 0.02);
    // DQLEN 4 with 8 outstanding: ACTV 4, QUED 4, %USD 100; KAVG is the wait for a slot
    assert_eq!((e.actv, e.qued, e.dqlen), (4, 4, 4));
    assert_eq!(e.usd_pct, 100.0);
    assert!((e.actv_mean - 4.0).abs() < 0.01 && (e.qued_mean - 4.0).abs() < 0.01);
    // Little at the device: ACTV = CMDS/s x DAVG
    assert!((e.actv_mean - e.cmds_per_s * e.davg_ms / 1000.0).abs() < 0.05);
    assert!((e.gavg_ms - e.davg_ms - e.kavg_ms).abs() < 1e-9);
}

fn trace_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/io-traces/cloudPhysicsIO.csv")
}

#[test]
fn cloudphysics_trace_replays_request_for_request() {
    let path = trace_path();
    let records = read_vscsi_csv(&path).unwrap();
    // an independent count of the file: rows, reads, bytes, span in seconds
    let text = std::fs::read_to_string(&path).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(records.len(), rows.len());
    assert_eq!(records.len(), 113_872);
    let reads = rows.iter().filter(|r| r[2] == "28").count();
    assert_eq!(records.iter().filter(|r| r.op == Op::Read).count(), reads);
    let first: u64 = rows[0][1].parse().unwrap();
    let last: u64 = rows.last().unwrap()[1].parse().unwrap();
    assert_eq!(last - first, 7200);
    assert!(records.windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
    assert!(records.last().unwrap().t_ns < 7201 * S);

    // replay the first 10 minutes on a spinning disk: every request completes, bytes add up
    let cut = 600 * S;
    let prefix: Vec<_> = records.iter().copied().filter(|r| r.t_ns < cut).collect();
    let want_bytes: u64 = prefix.iter().map(|r| u64::from(r.len)).sum();
    let want_reads = prefix.iter().filter(|r| r.op == Op::Read).count() as u64;
    let mut spec = single(DeviceSpec::Hdd(HddParams::default()), 32);
    spec.disks[0].span_bytes = 64 << 30;
    let mut st = Storage::new(&spec).unwrap();
    let g = st.add_workload(0, WorkloadSpec::Trace(TraceReplay { records: prefix.clone(), start_ns: 0, speed: 1.0 })).unwrap();
    let mut lp = Loop::default();
    st.start(0, &mut lp);
    lp.run_until(&mut st, cut + 60 * S);
    let s = st.gen_stats(g);
    let d = st.disk_counters(0, cut + 60 * S);
    println!("{} requests, mean response {:.2} ms, max {:.1} ms", s.completed, s.mean_resp_ns() / 1e6, s.resp_max_ns as f64 / 1e6);
    assert_eq!(s.completed, prefix.len() as u64);
    assert_eq!(s.reads, want_reads);
    assert_eq!(d.bytes_read + d.bytes_written, want_bytes);
    assert!(s.mean_resp_ns() > 1e6, "a spinning disk takes milliseconds");
}

#[test]
fn bad_traces_name_the_file_and_line() {
    let dir = std::env::temp_dir().join(format!("vmtwin-storage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        ("missing.csv", None, "missing.csv:0"),
        ("header.csv", Some("time,op\n1,28\n"), "header.csv:1"),
        ("op.csv", Some("version,time,op,size,lbn\n1,5,28,512,1\n1,5,35,512,1\n"), "op.csv:3"),
        ("size.csv", Some("version,time,op,size,lbn\n1,5,28,0,1\n"), "size.csv:2"),
        ("time.csv", Some("version,time,op,size,lbn\n1,6,28,512,1\n1,5,28,512,1\n"), "time.csv:3"),
        ("empty.csv", Some("version,time,op,size,lbn\n"), "empty.csv:2"),
    ];
    for (name, body, want) in cases {
        let p = dir.join(name);
        if let Some(b) = body {
            std::fs::write(&p, b).unwrap();
        }
        let e = read_vscsi_csv(&p).unwrap_err().to_string();
        assert!(e.contains(want), "{name}: {e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_topologies_name_the_field() {
    let check = |spec: StorageSpec, want: &str| {
        let e = Storage::new(&spec).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    };
    let base = array_spec(PspSpec::RoundRobin { iops: 1000 }, 2, 1);
    let mut s = base.clone();
    s.luns[0].psp = PspSpec::Adaptive { iops: 1, params: AdaptiveParams::new(200 * US, 200 * US, MS) };
    check(s, "storage.luns[0].psp.ta");
    let mut s = base.clone();
    s.disks[1].lun = "nope".into();
    check(s, "storage.disks[1].lun: got 'nope'; allowed: one of the datastores [\"lun0\"]");
    let mut s = base.clone();
    s.luns[0].dqlen = 0;
    check(s, "storage.luns[0].dqlen");
    let mut s = base.clone();
    s.luns[0].psp = PspSpec::RoundRobin { iops: 0 };
    check(s, "storage.luns[0].psp.iops");
    let mut s = base.clone();
    s.luns[0].paths[1].adapter = "vmhba9".into();
    check(s, "storage.luns[0].paths[1].adapter");
    let mut s = base.clone();
    s.adapters[0].queue_depth = 0;
    check(s, "storage.adapters[0].queue_depth");
    let mut s = base;
    s.luns[0].psp = PspSpec::Fixed { preferred: 4 };
    check(s, "storage.luns[0].psp.preferred");
}

#[test]
fn bad_submissions_and_workloads_are_refused() {
    let mut st = Storage::new(&single(DeviceSpec::Exponential { servers: 1, mean_service_ns: MS }, 4)).unwrap();
    let mut lp = Loop::default();
    assert!(st.submit(0, 5, Op::Read, 0, 4096, 1, &mut lp).unwrap_err().to_string().contains("VM disk 5"));
    assert!(st.submit(0, 0, Op::Read, 0, 0, 1, &mut lp).unwrap_err().to_string().contains("0 bytes"));
    assert_eq!(st.in_flight(), 0);
    let e = st.add_workload(0, iometer(4096, 50.0, 0)).unwrap_err().to_string();
    assert!(e.contains("workload.outstanding"), "{e}");
    let e = st.add_workload(0, iometer(1000, 50.0, 4)).unwrap_err().to_string();
    assert!(e.contains("workload.block_bytes"), "{e}");
    let e = st.add_workload(0, iometer(4096, 150.0, 4)).unwrap_err().to_string();
    assert!(e.contains("workload.read_pct"), "{e}");
    assert!(st.add_workload(3, iometer(4096, 50.0, 4)).is_err());
}

/// Exact MVA of one FCFS queue (demand d) and a delay (think z) with n customers: (X, R).
fn mva(n: u32, d: f64, z: f64) -> (f64, f64) {
    let (mut q, mut x, mut r) = (0.0, 0.0, 0.0);
    for k in 1..=n {
        r = d * (1.0 + q);
        x = f64::from(k) / (r + z);
        q = x * r;
    }
    (x, r)
}

#[test]
fn batch_customers_of_one_request_match_mva() {
    use vmtwin_core::storage::workload::BatchWorkload;
    for users in [1u32, 4, 12] {
        let mut st = Storage::new(&single(DeviceSpec::Exponential { servers: 1, mean_service_ns: 4 * MS }, 64)).unwrap();
        let w = BatchWorkload { users, read_pct: 50.0, batch_mean: 1.0, think_mean_ns: 20 * MS, block_bytes: 4096, random_pct: 100.0, start_ns: 0 };
        let g = st.add_workload(0, WorkloadSpec::Batch(w)).unwrap();
        let mut lp = Loop::default();
        st.start(0, &mut lp);
        lp.run_until(&mut st, 1000 * S);
        let s = st.gen_stats(g);
        let (x, r) = mva(users, 0.004, 0.020);
        let (got_x, got_r) = (s.completed as f64 / 1000.0, s.mean_resp_ns() / 1e9);
        println!("N {users}: X {got_x:.1} vs {x:.1}, R {got_r:.5} vs {r:.5}");
        assert!((got_x - x).abs() / x < 0.03 && (got_r - r).abs() / r < 0.03);
    }
}

#[test]
fn filebench_batches_keep_their_read_mix_and_batch_size() {
    use vmtwin_core::storage::workload::BatchWorkload;
    assert!(BatchWorkload::filebench("ftp").is_none());
    for (kind, mix) in [("file", 0.59), ("web", 0.92), ("mail", 0.39)] {
        let w = BatchWorkload { users: 20, ..BatchWorkload::filebench(kind).unwrap() };
        let mean = w.batch_mean;
        let mut st = Storage::new(&single(DeviceSpec::Ssd(SsdParams::default()), 32)).unwrap();
        let g = st.add_workload(0, WorkloadSpec::Batch(w)).unwrap();
        let mut lp = Loop::default();
        st.start(0, &mut lp);
        lp.run_until(&mut st, 600 * S);
        let s = st.gen_stats(g);
        let reads = s.reads as f64 / s.completed as f64;
        println!("{kind}: {} requests, read fraction {reads:.3}", s.completed);
        // the read fraction of requests equals that of batches when sizes do not depend on type
        assert!((reads - mix).abs() < 0.03, "{kind}: read fraction {reads} vs {mix}");
        // batches are ~mean requests: throughput ≈ users x mean / (think + time to serve a batch)
        let per_s = s.completed as f64 / 600.0;
        let think = BatchWorkload::filebench(kind).unwrap().think_mean_ns as f64 / 1e9;
        assert!((per_s - 20.0 * mean / think).abs() / (20.0 * mean / think) < 0.05, "{kind}: {per_s}/s");
    }
}

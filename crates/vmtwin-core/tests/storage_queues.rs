//! The queues around the kernel's: a VM disk's virtual queue (requests beyond its depth wait in
//! the guest) and an HBA port's queue (commands beyond its depth wait at the port, FIFO across
//! LUNs). Checked against queueing theory on long deterministic runs.

mod storage_support;
use storage_support::*;
use vmtwin_core::storage::*;

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b
}

#[test]
fn a_virtual_queue_of_one_moves_the_mm1_wait_into_the_guest() {
    // Poisson λ = 700/s on one exponential server (S = 1 ms) behind a virtual queue of depth 1:
    // the device never holds more than one request, so the guest sees M/M/1's response time
    // S / (1 - ρ) = 3.333 ms while esxtop's GAVG (from the VMM's acceptance) is the bare service
    // time S and KAVG is zero.
    let (lambda, s) = (700.0, 1e-3);
    let mut spec = StorageSpec {
        seed: 5,
        params: StackParams::default(),
        adapters: vec![fast_adapter("vmhba1")],
        arrays: vec![],
        luns: vec![exp_lun("lun0", 1, MS, 4096)],
        disks: vec![VmDiskSpec::new("vm0:scsi0:0", "lun0")],
    };
    spec.disks[0].queue_depth = Some(1);
    let mut st = Storage::new(&spec).unwrap();
    let g = st.add_workload(0, poisson(lambda, None)).unwrap();
    let mut lp = Loop::default();
    st.start(0, &mut lp);
    let horizon = 2000 * S;
    lp.run_until(&mut st, horizon);
    let app = st.gen_stats(g).mean_resp_ns() / 1e9;
    let e = EsxtopDisk::between(&DiskCounters::default(), &st.disk_counters(0, horizon));
    let want = s / (1.0 - lambda * s);
    println!("guest response {app:.6} s vs M/M/1 {want:.6}; GAVG {:.4} ms KAVG {:.4} ms", e.gavg_ms, e.kavg_ms);
    assert!(rel(app, want) < 0.03, "guest response {app} vs M/M/1 {want}");
    assert!(rel(e.gavg_ms, 1.0) < 0.02, "GAVG {} ms vs S = 1 ms", e.gavg_ms);
    assert!(e.kavg_ms < 1e-9, "nothing waits in the kernel: KAVG {}", e.kavg_ms);
    assert!(st.disk_counters(0, horizon).actv <= 1);
}

#[test]
fn a_closed_loop_beyond_the_virtual_queue_runs_at_its_depth() {
    // 32 outstanding requests, virtual queue depth 4, eight exponential servers (S = 1 ms): four
    // requests are at the device at all times, none queue there, so X = 4 / S = 4000/s, GAVG = S,
    // and 28 requests wait in the guest.
    let mut spec = StorageSpec {
        seed: 9,
        params: StackParams::default(),
        adapters: vec![fast_adapter("vmhba1")],
        arrays: vec![],
        luns: vec![exp_lun("lun0", 8, MS, 64)],
        disks: vec![VmDiskSpec::new("vm0:scsi0:0", "lun0")],
    };
    spec.disks[0].queue_depth = Some(4);
    let mut st = Storage::new(&spec).unwrap();
    let g = st.add_workload(0, iometer(4096, 50.0, 32)).unwrap();
    let mut lp = Loop::default();
    st.start(0, &mut lp);
    let horizon = 200 * S;
    lp.run_until(&mut st, horizon);
    let c = st.disk_counters(0, horizon);
    let x = c.cmds as f64 / 200.0;
    let mean_actv = c.actv_area as f64 / horizon as f64;
    let e = EsxtopDisk::between(&DiskCounters::default(), &c);
    println!("X {x:.1}/s, mean ACTV {mean_actv:.3}, GAVG {:.4} ms, guest queue {}", e.gavg_ms, st.guest_queued(0));
    assert!(rel(x, 4000.0) < 0.03, "throughput {x} vs 4 / S");
    assert!(rel(mean_actv, 4.0) < 0.01 && c.actv <= 4);
    assert!(rel(e.gavg_ms, 1.0) < 0.03);
    assert_eq!(st.guest_queued(0), 28);
    assert_eq!(st.in_flight(), 32);
    // the application's view is Little's law over all 32: 32 / X
    assert!(rel(st.gen_stats(g).mean_resp_ns() / 1e9, 32.0 / x) < 0.03);
}

#[test]
fn a_full_port_serves_the_luns_behind_it_first_come_first_served() {
    // Two LUNs behind one HBA port of queue depth 4, each on eight exponential servers (S = 1 ms),
    // DQLEN 32, one VM with 32 outstanding on each: the port is the bottleneck (4 commands in
    // service at a time, X = 4 / S = 4000/s) and, queueing FIFO, shares itself 1:1 between the
    // LUNs; 60 commands wait at the port, none in the kernel.
    let mut a = fast_adapter("vmhba1");
    a.queue_depth = 4;
    let spec = StorageSpec {
        seed: 13,
        params: StackParams::default(),
        adapters: vec![a],
        arrays: vec![],
        luns: vec![exp_lun("lun0", 8, MS, 32), exp_lun("lun1", 8, MS, 32)],
        disks: vec![VmDiskSpec::new("vm0:scsi0:0", "lun0"), VmDiskSpec::new("vm1:scsi0:0", "lun1")],
    };
    let mut st = Storage::new(&spec).unwrap();
    for d in 0..2 {
        st.add_workload(d, iometer(4096, 50.0, 32)).unwrap();
    }
    let mut lp = Loop::default();
    st.start(0, &mut lp);
    let horizon = 200 * S;
    lp.run_until(&mut st, horizon);
    let (l0, l1) = (st.lun_counters(0, horizon), st.lun_counters(1, horizon));
    let ad = st.adapter_counters(0, horizon);
    let x = (l0.cmds + l1.cmds) as f64 / 200.0;
    println!("X {x:.1}/s, LUN ratio {:.4}, port ACTV {} QUED {}", l0.cmds as f64 / l1.cmds as f64, ad.actv, ad.qued);
    assert!(rel(x, 4000.0) < 0.03, "port-bound throughput {x} vs 4 / S");
    assert!(rel(l0.cmds as f64, l1.cmds as f64) < 0.03, "{} vs {}", l0.cmds, l1.cmds);
    assert_eq!((ad.actv, ad.qued), (4, 60));
    assert_eq!((l0.qued, l1.qued), (0, 0));
    // DAVG is the device's time only: the wait at the port is in KAVG
    let e = EsxtopDisk::between(&DiskCounters::default(), &l0);
    assert!(rel(e.davg_ms, 1.0) < 0.03, "DAVG {}", e.davg_ms);
    assert!(rel(e.gavg_ms, 64.0 / 4.0) < 0.03, "GAVG {} vs 64 in flight / 4 per ms", e.gavg_ms);
}

#[test]
fn a_zero_virtual_queue_depth_is_refused_naming_the_field() {
    let mut spec = StorageSpec {
        seed: 1,
        params: StackParams::default(),
        adapters: vec![fast_adapter("vmhba1")],
        arrays: vec![],
        luns: vec![exp_lun("lun0", 1, MS, 4)],
        disks: vec![VmDiskSpec::new("vm0:scsi0:0", "lun0")],
    };
    spec.disks[0].queue_depth = Some(0);
    let e = Storage::new(&spec).unwrap_err().to_string();
    assert!(e.contains("storage.disks[0].queue_depth"), "{e}");
}

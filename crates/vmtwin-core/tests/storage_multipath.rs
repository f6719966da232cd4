//! Multipathing: FIXED, MRU, RR and PSP Adaptive, path failure and recovery.

mod storage_support;
use proptest::prelude::*;
use storage_support::*;
use vmtwin_core::storage::psp::{AdaptiveReason, Nmp, WindowStats};
use vmtwin_core::storage::*;

fn run_with(spec: &StorageSpec, vms: usize, events: &[(u64, StorageEvent)], end: u64) -> (Storage, Loop) {
    let mut st = Storage::new(spec).unwrap();
    for d in 0..vms as u32 {
        st.add_workload(d, iometer(4096, 50.0, 8)).unwrap();
    }
    let mut lp = Loop::default();
    st.start(0, &mut lp);
    for &(t, ev) in events {
        lp.at(t, ev);
    }
    lp.run_until(&mut st, end);
    (st, lp)
}

fn path_cmds(st: &Storage, now: u64) -> Vec<u64> {
    (0..st.path_count() as u32).map(|p| st.path_counters(p, now).cmds).collect()
}

#[test]
fn fixed_uses_only_the_preferred_path_and_fails_back() {
    let spec = array_spec(PspSpec::Fixed { preferred: 1 }, 4, 1);
    let (st, _) = run_with(&spec, 4, &[], S / 2);
    let c = path_cmds(&st, S / 2);
    assert!(c[1] > 10_000, "{c:?}");
    assert_eq!((c[0], c[2], c[3]), (0, 0, 0), "FIXED used a second path while the preferred was up: {c:?}");

    // preferred fails at 0.5 s and returns at 1 s: I/O moves away, then comes back
    let (st, _) = run_with(&spec, 4, &[(S / 2, StorageEvent::PathDown { path: 1 }), (S, StorageEvent::PathUp { path: 1 })], S);
    let mid = path_cmds(&st, S);
    let (st2, _) = run_with(&spec, 4, &[(S / 2, StorageEvent::PathDown { path: 1 }), (S, StorageEvent::PathUp { path: 1 })], 2 * S);
    let end = path_cmds(&st2, 2 * S);
    assert!(mid[0] > 0, "no failover to the other AO path: {mid:?}");
    assert_eq!((mid[2], mid[3]), (0, 0), "failover went to an AUO path while an AO path was up: {mid:?}");
    assert!(end[1] > mid[1] + 10_000, "no failback: {mid:?} -> {end:?}");
    // at most the commands in flight at the failback complete on the failover path afterwards
    assert!(end[0] <= mid[0] + 64, "I/O kept using the failover path after failback: {mid:?} -> {end:?}");
}

#[test]
fn mru_keeps_its_path_and_does_not_fail_back() {
    let spec = array_spec(PspSpec::Mru, 4, 2);
    let (st, _) = run_with(&spec, 4, &[], S / 2);
    let c = path_cmds(&st, S / 2);
    assert!(c[0] > 10_000 && c[1] == 0 && c[2] == 0 && c[3] == 0, "{c:?}");
    let ev = [(S / 2, StorageEvent::PathDown { path: 0 }), (S, StorageEvent::PathUp { path: 0 })];
    let (st, _) = run_with(&spec, 4, &ev, S);
    let mid = path_cmds(&st, S);
    let (st2, _) = run_with(&spec, 4, &ev, 2 * S);
    let end = path_cmds(&st2, 2 * S);
    assert!(mid[1] > 10_000, "MRU did not fail over to the other AO path: {mid:?}");
    assert_eq!(end[0], mid[0], "MRU failed back: {mid:?} -> {end:?}");
    assert!(end[1] > mid[1] + 10_000);
}

#[test]
fn all_paths_down_holds_io_until_one_returns() {
    let spec = array_spec(PspSpec::RoundRobin { iops: 1 }, 2, 3);
    let down: Vec<_> = (0..4).map(|p| (S / 4, StorageEvent::PathDown { path: p })).collect();
    let mut ev = down.clone();
    ev.push((S / 2, StorageEvent::PathUp { path: 3 }));
    let (st, _) = run_with(&spec, 2, &down, S / 2 - 1);
    let held = st.lun_counters(0, S / 2 - 1);
    assert_eq!(held.actv, 0);
    assert_eq!(held.qued, 16, "2 VMs x 8 outstanding wait in the kernel queue");
    assert!(held.aborts > 0, "the failure hit no command in flight");
    let (st, _) = run_with(&spec, 2, &ev, S);
    let c = path_cmds(&st, S);
    assert!(c[3] > 1000, "I/O did not resume on the AUO path, the only one up: {c:?}");
}

/// RR picks path i for command n as a closed form: the AO paths in order, N commands each.
fn rr_expected(n: usize, iops: usize, ao: &[usize]) -> usize {
    ao[(n / iops) % ao.len()]
}

proptest! {
    #[test]
    fn rr_switches_every_iops_commands(iops in 1u32..50, paths in 1usize..6, auo_mask in 0u32..64, n in 1usize..400) {
        let optimized: Vec<bool> = (0..paths).map(|i| auo_mask & (1 << i) == 0).collect();
        let mut nmp = Nmp::new(&PspSpec::RoundRobin { iops }, optimized.clone());
        let ao: Vec<usize> = (0..paths).filter(|&i| optimized[i]).collect();
        let pool: Vec<usize> = if ao.is_empty() { (0..paths).collect() } else { ao };
        // the first path RR starts from is the first AO path
        for k in 0..n {
            let got = nmp.select(if k % 3 == 0 { Op::Write } else { Op::Read }).unwrap();
            prop_assert_eq!(got, rr_expected(k, iops as usize, &pool), "command {}", k);
        }
    }
}

#[test]
fn rr_spreads_by_the_configured_count_in_the_stack() {
    for iops in [1u32, 1000] {
        let spec = array_spec(PspSpec::RoundRobin { iops }, 8, 4);
        let (st, _) = run_with(&spec, 8, &[], S);
        let c = path_cmds(&st, S);
        let total: u64 = c.iter().sum();
        assert!(total > 50_000);
        assert_eq!((c[2], c[3]), (0, 0), "RR used AUO paths: {c:?}");
        // dispatches alternate in blocks of `iops`: the two AO paths differ by at most one block
        assert!(c[0].abs_diff(c[1]) <= u64::from(iops) + 64, "iops {iops}: {c:?}");
    }
}

fn window(t_o_us: u64, ios: u64, bytes: u64) -> WindowStats {
    WindowStats { ao_sum_ns: t_o_us * 1000 * ios, ao_n: ios, auo_sum_ns: 0, auo_n: 0, bytes }
}

#[test]
fn adaptive_state_machine_follows_the_thresholds() {
    let p = AdaptiveParams::new(500 * US, 200 * US, 2 * MS);
    let mut nmp = Nmp::new(&PspSpec::Adaptive { iops: 1, params: p }, vec![true, true, false, false]);
    let reasons = |n: &Nmp| n.adaptive_log().iter().map(|c| c.reason).collect::<Vec<_>>();
    let mut t = 0;
    let mut w = |n: &mut Nmp, ws: WindowStats| {
        t += S;
        n.window(t, &ws);
    };
    // below ta: nothing; writes stay on AO paths
    w(&mut nmp, window(400, 1000, 4 << 20));
    assert!(!nmp.spreading());
    assert!((0..100).all(|_| nmp.select(Op::Write).unwrap() < 2));
    // above ta: spread starts, writes reach AUO paths, reads never do
    w(&mut nmp, window(600, 1000, 4 << 20));
    assert!(nmp.spreading());
    let writes: Vec<usize> = (0..8).map(|_| nmp.select(Op::Write).unwrap()).collect();
    assert!(writes.iter().any(|&p| p >= 2) && writes.iter().any(|&p| p < 2), "{writes:?}");
    assert!((0..100).all(|_| nmp.select(Op::Read).unwrap() < 2));
    // in the band tb..ta: no change (hysteresis), improvement not yet checked (window 1..4)
    for _ in 0..3 {
        w(&mut nmp, window(300, 1200, 5 << 20));
        assert!(nmp.spreading());
    }
    // below tb: stop
    w(&mut nmp, window(150, 1200, 5 << 20));
    assert!(!nmp.spreading());
    assert_eq!(reasons(&nmp), vec![AdaptiveReason::Start, AdaptiveReason::StopBelowTb]);
    // armed again at once (below tb is below ta): above ta restarts
    w(&mut nmp, window(700, 1000, 4 << 20));
    assert!(nmp.spreading());
    // the 5th window after the start checks the improvement: +5% IOPS, +5% throughput: stop
    for _ in 0..4 {
        w(&mut nmp, window(600, 1050, 4_200_000));
        assert!(nmp.spreading());
    }
    w(&mut nmp, window(600, 1050, 4_400_000));
    assert!(!nmp.spreading());
    assert_eq!(*reasons(&nmp).last().unwrap(), AdaptiveReason::StopNoImprovement);
    // not re-armed while latency stays above ta
    w(&mut nmp, window(800, 1000, 4 << 20));
    assert!(!nmp.spreading());
    // falls below ta: re-armed; rises above ta again: restarts
    w(&mut nmp, window(400, 1000, 4 << 20));
    assert_eq!(*reasons(&nmp).last().unwrap(), AdaptiveReason::Rearm);
    w(&mut nmp, window(900, 1000, 4 << 20));
    assert!(nmp.spreading());
    // +10% on IOPS alone passes the check (the OR rule), throughput down
    for _ in 0..5 {
        w(&mut nmp, window(600, 1100, 3 << 20));
    }
    assert!(nmp.spreading(), "{:?}", reasons(&nmp));
    // AUO latency above tc: stop, and stay disarmed until AO latency is below tb
    let mut bad = window(600, 1100, 4 << 20);
    bad.auo_sum_ns = 3 * MS * 10;
    bad.auo_n = 10;
    w(&mut nmp, bad);
    assert!(!nmp.spreading());
    assert_eq!(*reasons(&nmp).last().unwrap(), AdaptiveReason::StopAuoAboveTc);
    w(&mut nmp, window(300, 1000, 4 << 20)); // below ta but above tb: still disarmed
    w(&mut nmp, window(900, 1000, 4 << 20));
    assert!(!nmp.spreading());
    w(&mut nmp, window(100, 1000, 4 << 20)); // below tb: re-armed
    w(&mut nmp, window(900, 1000, 4 << 20));
    assert!(nmp.spreading());
    // the knob off: behaves as RR at once
    nmp.set_adaptive_enabled(false);
    w(&mut nmp, window(900, 1000, 4 << 20));
    assert!(!nmp.spreading());
    assert!((0..100).all(|_| nmp.select(Op::Write).unwrap() < 2));
}

fn adaptive_spec(vms: usize, seed: u64) -> StorageSpec {
    array_spec(PspSpec::Adaptive { iops: 1, params: AdaptiveParams::new(300 * US, 150 * US, 5 * MS) }, vms, seed)
}

#[test]
fn adaptive_spreads_writes_under_saturation_and_gains_over_rr() {
    let horizon = 10 * S;
    let run = |spec: &StorageSpec| {
        let mut st = Storage::new(spec).unwrap();
        for d in 0..8 {
            st.add_workload(d, iometer(16384, 50.0, 32)).unwrap();
        }
        let mut lp = Loop::default();
        st.start(0, &mut lp);
        lp.run_until(&mut st, horizon);
        st
    };
    let rr = run(&array_spec(PspSpec::RoundRobin { iops: 1 }, 8, 5));
    let ad = run(&adaptive_spec(8, 5));
    let (r, a) = (rr.lun_counters(0, horizon), ad.lun_counters(0, horizon));
    let log = ad.adaptive_log(0);
    println!("RR {} cmds, Adaptive {} cmds; log {:?}", r.cmds, a.cmds, log.iter().map(|c| (c.at / S, c.reason, c.t_o_ns as u64)).collect::<Vec<_>>());
    assert_eq!(log.first().map(|c| c.reason), Some(AdaptiveReason::Start), "{log:?}");
    assert!(log[0].t_o_ns > 300_000.0);
    assert!(ad.spreading(0), "spreading stopped: {log:?}");
    // writes on AUO paths, no reads there
    for p in [2, 3] {
        let c = ad.path_counters(p, horizon);
        assert!(c.writes > 0 && c.reads == 0, "path {p}: {c:?}");
    }
    assert!(a.cmds as f64 > 1.10 * r.cmds as f64, "Adaptive {} vs RR {}", a.cmds, r.cmds);
}

#[test]
fn adaptive_is_rr_when_not_saturated_or_switched_off() {
    let horizon = 3 * S;
    let run = |spec: &StorageSpec, outstanding: u32, knob: bool| {
        let mut st = Storage::new(spec).unwrap();
        st.set_adaptive_enabled(0, knob);
        for d in 0..2 {
            st.add_workload(d, iometer(4096, 50.0, outstanding)).unwrap();
        }
        let mut lp = Loop::default();
        st.start(0, &mut lp);
        lp.run_until(&mut st, horizon);
        (0..4).map(|p| st.path_counters(p, horizon)).collect::<Vec<_>>()
    };
    let rr = array_spec(PspSpec::RoundRobin { iops: 1 }, 2, 6);
    // light load: latency stays below ta, identical to RR command for command
    assert_eq!(run(&adaptive_spec(2, 6), 1, true), run(&rr, 1, true));
    // saturating load with the knob off: identical to RR too
    assert_eq!(run(&adaptive_spec(2, 6), 32, false), run(&rr, 32, false));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn path_failures_lose_no_io(
        seed in 0u64..1000,
        psp_kind in 0u8..4,
        device_kind in 0u8..3,
        omega in prop::sample::select(vec![1.0, 2.5, 4.0]),
        failures in prop::collection::vec((0u32..4, 0u64..200_000, 1u64..100_000), 0..8),
        sizes in prop::collection::vec((1u32..2048, any::<bool>(), 0u64..200_000), 1..300),
        port_depth in 1u32..6,
        vq_depth in prop::option::of(1u32..5),
    ) {
        let psp = match psp_kind {
            0 => PspSpec::Fixed { preferred: 0 },
            1 => PspSpec::Mru,
            2 => PspSpec::RoundRobin { iops: 3 },
            _ => PspSpec::Adaptive { iops: 1, params: AdaptiveParams { window_ns: 20 * US, check_windows: 2, ..AdaptiveParams::new(100 * US, 50 * US, 1000 * US) } },
        };
        let mut spec = array_spec(psp, 3, seed);
        spec.params.merge_omega = omega;
        spec.params.merge_contiguous_only = omega < 3.0;
        spec.luns[0].dqlen = 8;
        // small HBA port queues (commands wait at the port) and virtual disk queues (requests
        // wait in the guest)
        for a in &mut spec.adapters {
            a.queue_depth = port_depth;
        }
        for d in &mut spec.disks {
            d.queue_depth = vq_depth;
        }
        // the array, or a spinning disk (its on-board queue keeps serving aborted commands), or an SSD
        match device_kind {
            1 => spec.luns[0].device = DeviceSpec::Hdd(HddParams { queue_depth: 8, ..HddParams::default() }),
            2 => spec.luns[0].device = DeviceSpec::Ssd(SsdParams::default()),
            _ => {}
        }
        let mut st = Storage::new(&spec).unwrap();
        let mut lp = Loop::default();
        st.start(0, &mut lp);
        for &(p, at, dur) in &failures {
            lp.at(at, StorageEvent::PathDown { path: p });
            lp.at(at + dur, StorageEvent::PathUp { path: p });
        }
        let mut subs: Vec<(u64, u32, bool, usize)> = sizes.iter().enumerate().map(|(i, &(k, w, t))| (t, k * 512, w, i)).collect();
        subs.sort();
        let mut done = Vec::new();
        for &(t, len, w, i) in &subs {
            lp.run_until(&mut st, t);
            let disk = (i % 3) as u32;
            // sequential offsets per disk make merges possible
            st.submit(t, disk, if w { Op::Write } else { Op::Read }, (i as u64) * 4096, len, i as u64, &mut lp).unwrap();
            done.extend(st.take_completions());
        }
        // past every recovery: everything drains
        lp.run_until(&mut st, 60 * S);
        done.extend(st.take_completions());
        let mut tokens: Vec<u64> = done.iter().map(|c| c.token).collect();
        tokens.sort();
        prop_assert_eq!(tokens, (0..subs.len() as u64).collect::<Vec<_>>(), "every request completes exactly once");
        prop_assert_eq!(st.in_flight(), 0);
        let lun = st.lun_counters(0, 60 * S);
        prop_assert_eq!((lun.actv, lun.qued), (0, 0));
        for a in 0..2 {
            let c = st.adapter_counters(a, 60 * S);
            prop_assert_eq!((c.actv, c.qued), (0, 0), "adapter {} left busy", a);
        }
        let aborted: u64 = (0..4).map(|p| st.path_counters(p, 60 * S).aborts).sum();
        prop_assert_eq!(aborted, lun.aborts);
        for c in &done {
            prop_assert!(c.done >= c.issued);
        }
        let disk_cmds: u64 = (0..3).map(|d| st.disk_counters(d, 60 * S).cmds).sum();
        prop_assert_eq!(disk_cmds, subs.len() as u64);
    }
}

#[test]
fn a_full_hba_port_queues_what_exceeds_its_depth() {
    // port queue depth 4 on each of two ports, 2 VMs x 16 outstanding, DQLEN 64: at most 4
    // commands active per port, the others issued up to DQLEN wait at the ports (adapter QUED),
    // the rest in the kernel; RR (iops 10) still splits them evenly over the two AO paths
    let mut spec = array_spec(PspSpec::RoundRobin { iops: 10 }, 2, 8);
    for a in &mut spec.adapters {
        a.queue_depth = 4;
    }
    let mut st = Storage::new(&spec).unwrap();
    for d in 0..2 {
        st.add_workload(d, iometer(4096, 50.0, 16)).unwrap();
    }
    let mut lp = Loop::default();
    st.start(0, &mut lp);
    lp.run_until(&mut st, S);
    let lun = st.lun_counters(0, S);
    let (a0, a1) = (st.adapter_counters(0, S), st.adapter_counters(1, S));
    assert!(a0.actv <= 4 && a1.actv <= 4);
    assert_eq!(lun.actv + lun.qued, 32, "{lun:?}");
    assert_eq!(a0.actv + a0.qued + a1.actv + a1.qued, lun.actv, "what the LUN issued is at the ports: {a0:?} {a1:?}");
    let (p0, p1) = (st.path_counters(0, S).cmds, st.path_counters(1, S).cmds);
    assert!(p0.abs_diff(p1) <= 10 + 8, "{p0} vs {p1}");
    assert_eq!(st.in_flight(), 32);
}

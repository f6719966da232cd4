//! Path selection changed while I/O runs, as esxcli changes it: a new policy, RR's `--iops`,
//! PSP Adaptive's on/off knob; as module calls, as scenario events, and under path failures.

mod storage_support;
use proptest::prelude::*;
use serde_json::json;
use storage_support::*;
use vmtwin_core::storage::psp::{AdaptiveReason, Nmp};
use vmtwin_core::storage::*;

fn adaptive() -> PspSpec {
    PspSpec::Adaptive { iops: 1, params: AdaptiveParams::new(300 * US, 150 * US, 5 * MS) }
}

fn path_cmds(st: &Storage, now: u64) -> Vec<u64> {
    (0..st.path_count() as u32).map(|p| st.path_counters(p, now).cmds).collect()
}

fn diff(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}

proptest! {
    #[test]
    fn a_new_switch_count_applies_from_the_next_command(first in 1u32..20, second in 1u32..20, k in 0usize..60, n in 1usize..200) {
        // RR over two AO paths: after k commands at `first`, the cursor is on its path with some
        // count; from then on it switches after `second` commands counted from that state
        let mut nmp = Nmp::new(&PspSpec::RoundRobin { iops: first }, vec![true, true]);
        let (mut cur, mut count) = (0usize, 0u32);
        let step = |iops: u32, cur: &mut usize, count: &mut u32| {
            if *count >= iops {
                *cur = 1 - *cur;
                *count = 0;
            }
            *count += 1;
            *cur
        };
        for _ in 0..k {
            prop_assert_eq!(nmp.select(Op::Read).unwrap(), step(first, &mut cur, &mut count));
        }
        nmp.change(&PspChange::Iops(second)).unwrap();
        for j in 0..n {
            prop_assert_eq!(nmp.select(Op::Write).unwrap(), step(second, &mut cur, &mut count), "command {} after the change", j);
        }
    }
}

#[test]
fn changes_esxcli_refuses_are_refused() {
    let mut fixed = Nmp::new(&PspSpec::Fixed { preferred: 0 }, vec![true, true]);
    assert!(fixed.change(&PspChange::Iops(10)).unwrap_err().contains("--iops"));
    assert!(fixed.change(&PspChange::AdaptiveEnabled(false)).unwrap_err().contains("Adaptive"));
    let mut rr = Nmp::new(&PspSpec::RoundRobin { iops: 1 }, vec![true, true]);
    assert!(rr.change(&PspChange::Iops(0)).is_err());
    assert!(rr.change(&PspChange::AdaptiveEnabled(true)).is_err());
}

#[test]
fn policy_changes_mid_run_take_over_with_the_paths_as_they_are() {
    // FIXED on path 0 for 1 s, then RR (iops 1) for 1 s, then Adaptive under saturation, whose
    // knob goes off at 6 s; path 1 is down from 0.5 s to 1.5 s
    let spec = array_spec(PspSpec::Fixed { preferred: 0 }, 8, 21);
    let mut st = Storage::new(&spec).unwrap();
    for d in 0..8 {
        st.add_workload(d, iometer(16384, 50.0, 32)).unwrap();
    }
    let mut lp = Loop::default();
    st.start(0, &mut lp);
    lp.at(S / 2, StorageEvent::PathDown { path: 1 });
    lp.at(3 * S / 2, StorageEvent::PathUp { path: 1 });
    st.schedule_psp_change(S, 0, PspChange::Policy(PspSpec::RoundRobin { iops: 1 }), &mut lp);
    st.schedule_psp_change(2 * S, 0, PspChange::Policy(adaptive()), &mut lp);
    st.schedule_psp_change(6 * S, 0, PspChange::AdaptiveEnabled(false), &mut lp);
    let mut snaps = Vec::new();
    for t in [S, 3 * S / 2, 2 * S, 6 * S, 8 * S] {
        lp.run_until(&mut st, t);
        snaps.push(path_cmds(&st, t));
    }
    // FIXED: path 0 only
    assert_eq!(&snaps[0][1..], &[0, 0, 0], "{:?}", snaps[0]);
    // RR from 1 s with path 1 still down until 1.5 s: path 0 only (RR over working AO paths),
    // at most the commands in flight at the change finishing elsewhere
    let rr_down = diff(&snaps[1], &snaps[0]);
    assert_eq!((rr_down[1], rr_down[2], rr_down[3]), (0, 0, 0), "{rr_down:?}");
    // RR with both AO paths up: alternating, never AUO
    let rr_up = diff(&snaps[2], &snaps[1]);
    assert!(rr_up[0].abs_diff(rr_up[1]) <= 64 && rr_up[1] > 10_000, "{rr_up:?}");
    assert_eq!((rr_up[2], rr_up[3]), (0, 0));
    // Adaptive from 2 s: starts spreading at a window end after the change, writes reach AUO
    let log = st.adaptive_log(0);
    let start = log.iter().find(|c| c.reason == AdaptiveReason::Start).expect("spreading never started");
    assert!(start.at > 2 * S && start.at <= 3 * S, "first window closes 1 s after the change: {:?}", start.at);
    let spread = diff(&snaps[3], &snaps[2]);
    assert!(spread[2] > 1000 && spread[3] > 1000, "no writes on AUO paths: {spread:?}");
    assert!(st.path_counters(2, 8 * S).reads == 0 && st.path_counters(3, 8 * S).reads == 0, "reads on AUO paths");
    // knob off at 6 s, just before the window that ends then (scheduled earlier, it runs
    // first at the same instant): that window stops spreading; after it, nothing new on AUO
    let stop = log_after(&st, 6 * S);
    assert_eq!(stop, Some((6 * S, AdaptiveReason::StopKnobOff)));
    let c7 = (st.path_counters(2, 8 * S).cmds, st.path_counters(3, 8 * S).cmds);
    lp.run_until(&mut st, 10 * S);
    assert!(st.path_counters(2, 10 * S).cmds - c7.0 <= 64 && st.path_counters(3, 10 * S).cmds - c7.1 <= 64);
}

fn log_after(st: &Storage, t: u64) -> Option<(u64, AdaptiveReason)> {
    st.adaptive_log(0).iter().find(|c| c.at >= t).map(|c| (c.at, c.reason))
}

#[test]
fn switching_adaptive_off_and_on_again_keeps_one_window_chain() {
    // Adaptive -> RR -> Adaptive within one window: the first policy's window events are stale,
    // so the second Adaptive's windows close at its change + k s only
    let spec = array_spec(adaptive(), 8, 22);
    let mut st = Storage::new(&spec).unwrap();
    for d in 0..8 {
        st.add_workload(d, iometer(16384, 50.0, 32)).unwrap();
    }
    let mut lp = Loop::default();
    st.start(0, &mut lp);
    st.schedule_psp_change(S / 4, 0, PspChange::Policy(PspSpec::RoundRobin { iops: 1 }), &mut lp);
    st.schedule_psp_change(S / 2, 0, PspChange::Policy(adaptive()), &mut lp);
    lp.run_until(&mut st, 4 * S);
    let log = st.adaptive_log(0);
    assert!(!log.is_empty(), "the second Adaptive never decided");
    for c in log {
        assert_eq!((c.at - S / 2) % S, 0, "a window closed off the second policy's chain: {:?}", c.at);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]
    #[test]
    fn policy_changes_and_path_failures_lose_no_io(
        seed in 0u64..1000,
        changes in prop::collection::vec((0u64..200_000, 0u8..5, 1u32..5), 0..8),
        failures in prop::collection::vec((0u32..4, 0u64..200_000, 1u64..100_000), 0..6),
        sizes in prop::collection::vec((1u32..256, any::<bool>(), 0u64..200_000), 1..200),
    ) {
        let mut spec = array_spec(PspSpec::RoundRobin { iops: 2 }, 3, seed);
        spec.luns[0].dqlen = 8;
        for a in &mut spec.adapters {
            a.queue_depth = 3;
        }
        let mut st = Storage::new(&spec).unwrap();
        let mut lp = Loop::default();
        st.start(0, &mut lp);
        for &(p, at, dur) in &failures {
            lp.at(at, StorageEvent::PathDown { path: p });
            lp.at(at + dur, StorageEvent::PathUp { path: p });
        }
        for &(at, kind, n) in &changes {
            let c = match kind {
                0 => PspChange::Policy(PspSpec::Fixed { preferred: n % 4 }),
                1 => PspChange::Policy(PspSpec::Mru),
                2 => PspChange::Policy(PspSpec::RoundRobin { iops: n }),
                3 => PspChange::Policy(PspSpec::Adaptive { iops: n, params: AdaptiveParams { window_ns: 20 * US, check_windows: 2, ..AdaptiveParams::new(100 * US, 50 * US, 1000 * US) } }),
                _ => PspChange::Iops(n), // refused (skipped) unless the LUN is on RR or Adaptive then
            };
            st.schedule_psp_change(at, 0, c, &mut lp);
        }
        let mut subs: Vec<(u64, u32, bool, usize)> = sizes.iter().enumerate().map(|(i, &(k, w, t))| (t, k * 512, w, i)).collect();
        subs.sort();
        let mut done = Vec::new();
        for &(t, len, w, i) in &subs {
            lp.run_until(&mut st, t);
            st.submit(t, (i % 3) as u32, if w { Op::Write } else { Op::Read }, (i as u64) * 4096, len, i as u64, &mut lp).unwrap();
            done.extend(st.take_completions());
        }
        lp.run_until(&mut st, 60 * S);
        done.extend(st.take_completions());
        let mut tokens: Vec<u64> = done.iter().map(|c| c.token).collect();
        tokens.sort();
        prop_assert_eq!(tokens, (0..subs.len() as u64).collect::<Vec<_>>(), "every request completes exactly once");
        prop_assert_eq!(st.in_flight(), 0);
    }
}

#[test]
fn scenario_psp_events_are_checked_against_the_policy_at_their_time() {
    let section = |events: serde_json::Value| -> StorageSection {
        serde_json::from_value(json!({
            "adapters": [{"name": "vmhba1"}],
            "luns": [{"name": "ds1", "device": {"kind": "exponential", "servers": 1, "mean_service_ns": 1_000_000},
                      "psp": {"policy": "fixed", "preferred": 0}, "paths": [{"adapter": "vmhba1"}, {"adapter": "vmhba1"}]}],
            "psp_events": events
        }))
        .unwrap()
    };
    let err = |events| section(events).validate_links(&[]).unwrap_err().to_string();
    // --iops on a FIXED LUN, the knob on a FIXED LUN
    let e = err(json!([{"at_ns": 5, "lun": "ds1", "change": {"iops": 10}}]));
    assert!(e.contains("storage.psp_events[0].change.iops") && e.contains("fixed"), "{e}");
    let e = err(json!([{"at_ns": 5, "lun": "ds1", "change": {"adaptive_enabled": false}}]));
    assert!(e.contains("storage.psp_events[0].change.adaptive_enabled"), "{e}");
    // order is by time, not by listing: the iops change at 10 follows the RR change at 5
    assert!(section(json!([{"at_ns": 10, "lun": "ds1", "change": {"iops": 10}},
                           {"at_ns": 5, "lun": "ds1", "change": {"policy": {"policy": "round_robin", "iops": 1}}}]))
        .validate_links(&[])
        .is_ok());
    let e = err(json!([{"at_ns": 5, "lun": "ds1", "change": {"policy": {"policy": "fixed", "preferred": 7}}}]));
    assert!(e.contains("storage.psp_events[0].change.psp.preferred"), "{e}");
    let e = err(json!([{"at_ns": 5, "lun": "nope", "change": {"iops": 1}}]));
    assert!(e.contains("storage.psp_events[0].lun"), "{e}");
}

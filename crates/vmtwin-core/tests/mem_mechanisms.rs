//! Mechanism checks against independent oracles: the frame table against `HashMap`, the
//! active-memory sampler against the fraction a VM really touches, and a swapped page's
//! synchronous read-back.

mod mem_support;

use mem_support::Queue;
use proptest::prelude::*;
use std::collections::HashMap;
use vmtwin_core::mem::sharing::{Frame, FrameKind, FrameTable};
use vmtwin_core::mem::*;
use vmtwin_core::sim::{Rng, Time, NS_PER_MS, NS_PER_S};

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
    /// Inserts, updates and removals (backward-shift deletion under linear probing, with
    /// keys crowded into few home slots) agree with a HashMap.
    #[test]
    fn frame_table_matches_a_hash_map(ops in prop::collection::vec((0u8..3, 1u64..200, any::<u32>()), 1..600)) {
        let mut t = FrameTable::with_capacity(4);
        let mut m: HashMap<u64, u32> = HashMap::new();
        for (op, k, v) in ops {
            // keys spread over few home slots so probe runs are long and wrap
            let hash = k.wrapping_mul(0x1_0000_0001) | 1;
            match op {
                0 if !m.contains_key(&hash) => { t.insert(Frame::shared(hash, v >> 1, 1)); m.insert(hash, v >> 1); }
                1 => if let Some(slot) = t.find(hash) { t.set(slot, Frame::shared(hash, v >> 1, 2)); m.insert(hash, v >> 1); },
                2 => if let Some(slot) = t.find(hash) { t.remove(slot); m.remove(&hash); },
                _ => {}
            }
            prop_assert_eq!(t.len(), m.len());
        }
        for (&h, &mpn) in &m {
            let slot = t.find(h);
            prop_assert!(slot.is_some());
            match t.get(slot.unwrap()).kind() {
                FrameKind::Shared { mpn: got, .. } => prop_assert_eq!(got, mpn),
                k => prop_assert!(false, "{:?}", k),
            }
        }
        prop_assert_eq!(t.frames().count(), m.len());
    }
}

/// A VM that touches a fixed fraction x of its pages every second: after a few periods the
/// estimate is x within the binomial error of 100 samples (3 sigma), it rises within one
/// period when x jumps up, and falls slowly (slow EWMA) when x drops.
#[test]
fn sampled_active_memory_tracks_the_touched_fraction() {
    let mut p = MemParams::for_preset(Preset::Esx2002, 1 << 16);
    p.host_overhead_pages = 0;
    let mut h = MemHost::new(p, 1, 1 << 16, Box::new(FixedLatencySwapStandIn::default()), 4).unwrap();
    let mut s = VmMemSpec::new("toucher", 10_000);
    s.overhead_pages = 0;
    h.power_on(s).unwrap();
    let mut q = Queue::default();
    h.start(0, &mut q);
    let mut now: Time = 0;
    let mut run = |h: &mut MemHost, q: &mut Queue, x: f64, secs: u64| {
        let hot = (x * 10_000.0) as u32;
        for _ in 0..secs {
            for ppn in 0..hot {
                h.read(0, ppn, now);
            }
            now += NS_PER_S;
            q.run_until(h, now);
        }
    };
    // start with 20 % for 10 minutes: the slow average comes down from 1.0 to about 0.2
    run(&mut h, &mut q, 0.2, 600);
    let est = h.vm_stats(0).active / 10_000.0;
    let sigma = (0.2f64 * 0.8 / 100.0).sqrt();
    assert!((est - 0.2).abs() < 3.0 * sigma + 0.02, "estimate {est} for 0.2");
    assert!(h.vm_stats(0).working_set >= 1999 && h.vm_stats(0).working_set <= 2001);
    // up to 70 %: within one period (30 s) plus one, the estimate follows the fast average up
    run(&mut h, &mut q, 0.7, 61);
    let up = h.vm_stats(0).active / 10_000.0;
    assert!(up > 0.5, "estimate {up} a minute after the jump to 0.7");
    // down to 10 %: a minute later the estimate is still far above 0.1 (slow decay)
    run(&mut h, &mut q, 0.1, 60);
    let down = h.vm_stats(0).active / 10_000.0;
    assert!(down > 0.35, "estimate {down} a minute after the drop to 0.1 (should decay slowly)");
}

/// Two VMs writing over a host too small for both, then quiet for 20 s (so the host climbs
/// back out of the low state): returns the host, the queue and the time.
fn pressured(compressible: f64) -> (MemHost, Queue, Time) {
    let mut p = MemParams::for_preset(Preset::Esx2013, 3000);
    p.host_overhead_pages = 0;
    p.compress_quarter_fraction = compressible;
    p.compress_half_fraction = 0.0;
    p.compress_cache_fraction = 0.5;
    let swap = FixedLatencySwapStandIn { read_ns: 7 * NS_PER_MS, ..Default::default() };
    let mut h = MemHost::new(p, 1, 3000, Box::new(swap), 2).unwrap();
    for name in ["a", "b"] {
        let mut s = VmMemSpec::new(name, 2500);
        s.overhead_pages = 0;
        s.balloon_driver = false;
        h.power_on(s).unwrap();
    }
    let mut q = Queue::default();
    h.start(0, &mut q);
    let mut rng = Rng::new(3);
    let mut now = 0;
    for _ in 0..30 {
        for vm in 0..2 {
            for _ in 0..1500 {
                let c = h.private_content(vm);
                h.write(vm, (rng.uniform() * 2500.0) as u32, c, now);
            }
        }
        now += NS_PER_S;
        q.run_until(&mut h, now);
    }
    now += 20 * NS_PER_S;
    q.run_until(&mut h, now);
    assert!(h.state() < MemState::Low && h.free_pages() > 0, "{:?}, {} free", h.state(), h.free_pages());
    (h, q, now)
}

/// A swapped page's next access waits for the device's read (the stand-in's latency).
#[test]
fn swapped_page_waits_for_the_swap_read() {
    let (mut h, _q, now) = pressured(0.0);
    assert_eq!(h.vm_stats(0).zipped, 0);
    let page = (0..2500).find(|&p| h.pmap(0).state(p) == PageState::Swapped).expect("some page swapped");
    let before = h.vm_stats(0).counters;
    assert_eq!(h.read(0, page, now), Access::SwapWait { until: now + 7 * NS_PER_MS });
    let after = h.vm_stats(0).counters;
    assert_eq!(after.swap_in_pages, before.swap_in_pages + 1);
    assert_eq!(after.swap_wait_ns, before.swap_wait_ns + 7 * NS_PER_MS);
    assert_eq!(h.pmap(0).state(page), PageState::Regular);
    assert_eq!(h.read(0, page, now), Access::Hit);
    assert_eq!(h.audit(), Ok(()));
}

/// With compressible contents the 2013 preset compresses instead of swapping, and touching a
/// compressed page only stalls for the decompression.
#[test]
fn compressed_page_only_stalls() {
    let (mut h, _q, now) = pressured(1.0);
    let s = h.vm_stats(0);
    assert!(s.zipped > 0 && (s.cacheusd - s.zipped as f64 / 4.0).abs() < 1e-9, "{s:?}");
    let page = (0..2500).find(|&p| h.pmap(0).state(p) == PageState::Compressed).unwrap();
    let stall = MemParams::default().decompress_ns;
    assert_eq!(h.read(0, page, now), Access::Fault { stall_ns: stall });
    assert_eq!(h.vm_stats(0).counters.unzipped, s.counters.unzipped + 1);
    assert_eq!(h.audit(), Ok(()));
}

/// Same seed, same everything: two runs give identical counters and pmaps; another seed differs.
#[test]
fn runs_are_deterministic_per_seed() {
    let run = |seed: u64| {
        let mut p = MemParams::for_preset(Preset::Esx2013, 3000);
        p.host_overhead_pages = 0;
        let mut h = MemHost::new(p, 2, 1500, Box::new(FixedLatencySwapStandIn::default()), seed).unwrap();
        for i in 0..3 {
            let mut s = VmMemSpec::new(&format!("vm{i}"), 1500);
            s.overhead_pages = 0;
            s.content = ContentSpec { os: 1, os_fraction: 0.3, app: 0, app_fraction: 0.1, zero_fraction: 0.2, ..ContentSpec::default() };
            h.power_on(s).unwrap();
        }
        let mut q = Queue::default();
        h.start(0, &mut q);
        let mut now = 0;
        for round in 0..40u32 {
            for vm in 0..3 {
                for k in 0..300u32 {
                    let ppn = (k * 13 + round * 97 + vm * 5) % 1500;
                    if k % 4 == 0 {
                        let c = h.private_content(vm);
                        h.write(vm, ppn, c, now);
                    } else {
                        h.read(vm, ppn, now);
                    }
                }
            }
            now += NS_PER_S;
            q.run_until(&mut h, now);
        }
        let stats: Vec<String> = (0..3).map(|v| format!("{:?}", h.vm_stats(v))).collect();
        let pages: Vec<(PageState, u32, u64)> =
            (0..3).flat_map(|v| (0..1500).map(move |p| (v, p))).map(|(v, p)| (h.pmap(v).state(p), h.pmap(v).index(p), h.pmap(v).content(p))).collect();
        (stats, pages)
    };
    let a = run(5);
    assert_eq!(a, run(5));
    assert_ne!(a, run(6));
}

/// A VM whose reservation is its whole size (the papers' "memory hog with full reservation")
/// is never reclaimed, whatever the pressure from the others, under both presets.
#[test]
fn a_full_reservation_is_never_reclaimed() {
    for preset in [Preset::Esx2002, Preset::Esx2013] {
        let mut p = MemParams::for_preset(preset, 4000);
        p.host_overhead_pages = 0;
        let mut h = MemHost::new(p, 1, 4000, Box::new(FixedLatencySwapStandIn::default()), 8).unwrap();
        let mut hog = VmMemSpec::new("hog", 1500);
        hog.min_pages = 1500;
        hog.overhead_pages = 0;
        h.power_on(hog).unwrap();
        for name in ["a", "b"] {
            let mut s = VmMemSpec::new(name, 2500);
            s.overhead_pages = 0;
            h.power_on(s).unwrap();
        }
        let mut q = Queue::default();
        h.start(0, &mut q);
        for ppn in 0..1500 {
            let c = h.private_content(0);
            h.write(0, ppn, c, 0);
        }
        let mut rng = Rng::new(9);
        let mut now = 0;
        for _ in 0..120 {
            for vm in 1..3 {
                for _ in 0..1000 {
                    let c = h.private_content(vm);
                    h.write(vm, (rng.uniform() * 2500.0) as u32, c, now);
                }
            }
            now += NS_PER_S;
            q.run_until(&mut h, now);
            let s = h.vm_stats(0);
            assert_eq!((s.mctlsz, s.swcur, s.zipped), (0, 0, 0), "{preset:?}: the hog was reclaimed: {s:?}");
        }
        let others: u64 = (1..3).map(|v| h.vm_stats(v).swcur + h.vm_stats(v).mctlsz + h.vm_stats(v).zipped).sum();
        assert!(others > 0, "{preset:?}: no pressure reached the other VMs");
        assert_eq!(h.audit(), Ok(()));
    }
}

/// The soft state under the two presets: both balloon a VM that has a driver; for a VM without
/// one, the 2002 policy pages it instead [S1 §6.3], the 2013 policy leaves it to the hard state
/// [S2 Table 3]. A wide soft band keeps the host in soft throughout.
#[test]
fn soft_state_techniques_follow_the_preset() {
    for preset in [Preset::Esx2002, Preset::Esx2013] {
        let mut p = MemParams::for_preset(preset, 4000);
        p.host_overhead_pages = 0;
        p.thresholds = [0.5, 0.45, 0.01, 0.005];
        let mut h = MemHost::new(p, 1, 4000, Box::new(FixedLatencySwapStandIn::default()), 12).unwrap();
        for (name, driver) in [("with-driver", true), ("no-driver", false)] {
            let mut s = VmMemSpec::new(name, 2500);
            s.overhead_pages = 0;
            s.balloon_driver = driver;
            h.power_on(s).unwrap();
        }
        let mut q = Queue::default();
        // map 1850 pages each (free 7.5 %: soft, far from hard) before the first tick
        for vm in 0..2 {
            for ppn in 0..1850 {
                let c = h.private_content(vm);
                h.write(vm, ppn, c, 0);
            }
        }
        h.start(0, &mut q);
        for t in 1..=60 {
            q.run_until(&mut h, t * NS_PER_S);
            assert_eq!(h.state(), MemState::Soft, "{preset:?} at {t} s");
        }
        let (d, n) = (h.vm_stats(0), h.vm_stats(1));
        assert!(d.mctlsz > 0 && d.swcur == 0 && d.zipped == 0, "{preset:?} with driver: {d:?}");
        assert_eq!(n.mctlsz, 0);
        match preset {
            Preset::Esx2002 => assert!(n.swcur > 0, "2002: the VM without a driver is paged in soft: {n:?}"),
            Preset::Esx2013 => assert_eq!((n.swcur, n.zipped), (0, 0), "2013: no swap or compression in soft"),
        }
        assert_eq!(h.audit(), Ok(()));
    }
}

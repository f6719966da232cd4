//! Allocation policy against independent oracles: water-filled targets against an iterative
//! min-funding revocation (take a quantum from the lowest adjusted ratio), the state machine
//! against its thresholds, and bad input refused by name.

use proptest::prelude::*;
use vmtwin_core::mem::*;

/// Min-funding revocation done the slow way [S1 §5.1]: start everyone at their most, then take
/// one quantum at a time from the VM with the fewest adjusted shares per page that is above its
/// minimum, until the total fits.
fn revocation(capacity: f64, claims: &[MemClaim], tau: f64, quantum: f64) -> Vec<f64> {
    let mut p: Vec<f64> = claims.iter().map(|c| c.max).collect();
    while p.iter().sum::<f64>() > capacity + 1e-9 {
        let over = p.iter().sum::<f64>() - capacity;
        let victim = (0..p.len())
            .filter(|&i| p[i] > claims[i].min.min(claims[i].max) + 1e-12)
            .min_by(|&a, &b| {
                let ra = adjusted_ratio(claims[a].shares, p[a], claims[a].active, tau);
                let rb = adjusted_ratio(claims[b].shares, p[b], claims[b].active, tau);
                ra.partial_cmp(&rb).unwrap().then(a.cmp(&b))
            });
        let Some(v) = victim else { break };
        p[v] = (p[v] - quantum.min(over)).max(claims[v].min.min(claims[v].max));
    }
    p
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
    #[test]
    fn targets_match_iterative_min_funding_revocation(
        vms in prop::collection::vec((1.0..100.0f64, 0.0..1.0f64, 0.0..300.0f64, 300.0..2000.0f64), 1..6),
        fill in 0.2..1.0f64, tau in 0.0..0.95f64)
    {
        let claims: Vec<MemClaim> = vms.iter().map(|&(s, f, lo, hi)| MemClaim { shares: s, active: f, min: lo, max: hi }).collect();
        let mins: f64 = claims.iter().map(|c| c.min).sum();
        let maxs: f64 = claims.iter().map(|c| c.max).sum();
        let capacity = mins + fill * (maxs - mins);
        let fast = targets(capacity, &claims, tau);
        let slow = revocation(capacity, &claims, tau, 0.05);
        for (a, b) in fast.iter().zip(&slow) {
            prop_assert!((a - b).abs() < 0.5 + 1e-3 * b, "{:?} vs {:?}", fast, slow);
        }
        prop_assert!((fast.iter().sum::<f64>() - capacity).abs() < 1e-6 * capacity.max(1.0));
    }
}

#[test]
fn idle_tax_formula_values() {
    // research/memory.md A.8 derived values
    for (tau, k) in [(0.0, 1.0), (0.5, 2.0), (0.75, 4.0), (0.9, 10.0)] {
        assert!((idle_cost(tau) - k).abs() < 1e-12);
    }
    assert!((adjusted_ratio(100.0, 10.0, 0.5, 0.75) - 100.0 / 25.0).abs() < 1e-12);
    // two VMs, equal shares, one idle: M/(1+k) and kM/(1+k)
    let c = |f| MemClaim { shares: 1.0, active: f, min: 0.0, max: 1e9 };
    let t = targets(1000.0, &[c(0.0), c(1.0)], 0.75);
    assert!((t[0] - 200.0).abs() < 1e-9 && (t[1] - 800.0).abs() < 1e-9, "{t:?}");
}

#[test]
fn states_follow_thresholds_with_hysteresis() {
    let th = [0.06, 0.04, 0.02, 0.01];
    let h = 1.0 / 6.0;
    let s = |st, free| next_state(st, free, 10_000, th, h);
    assert_eq!(s(MemState::High, 500), MemState::High); // 5 %: between soft and high
    assert_eq!(s(MemState::High, 399), MemState::Soft);
    assert_eq!(s(MemState::High, 50), MemState::Low); // a fall skips levels
    assert_eq!(s(MemState::Soft, 650), MemState::Soft); // 6.5 % < 7 %: stays
    assert_eq!(s(MemState::Soft, 700), MemState::High);
    assert_eq!(s(MemState::Hard, 450), MemState::Hard); // needs 4 * 7/6 = 4.67 %
    assert_eq!(s(MemState::Hard, 467), MemState::Soft);
    assert_eq!(s(MemState::Low, 5000), MemState::Hard); // one level up per step
}

#[test]
fn bad_memory_input_is_refused_naming_the_field() {
    let mut p = MemParams { idle_tax: 1.0, ..MemParams::default() };
    let e = p.validate().unwrap_err().to_string();
    assert!(e.contains("memory.idle_tax") && e.contains("[0, 1)"), "{e}");
    p.idle_tax = -0.1;
    assert!(p.validate().is_err());
    let mut h = MemHost::new(MemParams::for_preset(Preset::Esx2002, 0), 1, 1 << 18, Box::new(FixedLatencySwapStandIn::default()), 1).unwrap();
    let mut s = VmMemSpec::new("big", 1000);
    s.min_pages = 1001;
    let e = h.power_on(s).unwrap_err().to_string();
    assert!(e.contains("vms[0].memory.reservation") && e.contains("1001") && e.contains("1000 pages"), "{e}");
    // admission control: reservations beyond the host
    let mut s = VmMemSpec::new("hog", 1 << 18);
    s.min_pages = 1 << 18;
    let e = h.power_on(s).unwrap_err().to_string();
    assert!(e.contains("admission control") && e.contains("hog"), "{e}");
    assert_eq!(h.vm_count(), 0);
}

#[test]
fn min_free_sliding_scale() {
    // 28 GB: 6 % of 4 + 4 % of 8 + 2 % of 16 = 0.24 + 0.32 + 0.32 = 0.88 GB (X-D quotes 899 MB)
    let gb = 262_144u64;
    let mf = min_free_pages(28 * gb) as f64 / gb as f64;
    assert!((mf - 0.88).abs() < 1e-3, "{mf}");
}

#[test]
fn a_scaled_host_takes_the_full_hosts_thresholds_and_divides_its_rates() {
    // The 72 GB host of [S2 §4.2] at 1/32: 2,304 MB = 589,824 pages. Worked by hand on the full
    // host's 18,874,368 pages: 6 % of 1,048,576 = 62,914; 4 % of 2,097,152 = 83,886; 2 % of
    // 4,194,304 = 83,886; 1 % of the other 11,534,336 = 115,343; minFree 346,029 pages
    // (1,351.7 MB), so the scaled host's is 346,029 / 32 = 10,813.4 pages (42.2 MB). Without
    // scaling it would be 6 % of the 2,304 MB host: 35,389 pages.
    let spec: MemorySpec = serde_json::from_str(r#"{"preset": "esx2013", "scale": 32, "vms": []}"#).unwrap();
    let pages = 589_824u64;
    let p = spec.params(pages).unwrap();
    assert!((p.thresholds[0] * pages as f64 - 346_029.0 / 32.0).abs() < 1e-6, "{:?}", p.thresholds);
    assert!((p.thresholds[2] - 0.32 * p.thresholds[0]).abs() < 1e-15);
    // rates in pages per second divided by 32: 12,800 -> 400, 25,600 -> 800, 200 -> 6.25 -> 6
    assert_eq!((p.balloon_pages_per_s, p.swap_out_pages_per_s, p.share_scan_pages_per_s), (400, 800, 6));
    // ESX's default 512 MB -> 16 MB; CPU per scanned page 1 us -> 32 us, per compression 10 -> 320 us
    assert_eq!(p.host_overhead_pages, 4096);
    assert_eq!((p.share_scan_cpu_ns, p.compress_cpu_ns), (32_000, 320_000));
    // time constants stay
    let base = MemParams::for_preset(Preset::Esx2013, pages);
    assert_eq!((p.tick_ns, p.sample_period_ns, p.decompress_ns, p.swap_cluster_pages), (base.tick_ns, base.sample_period_ns, base.decompress_ns, base.swap_cluster_pages));
    // unscaled, the same host keeps its own minFree
    let unscaled: MemorySpec = serde_json::from_str(r#"{"preset": "esx2013", "vms": []}"#).unwrap();
    let q = unscaled.params(pages).unwrap();
    assert!((q.thresholds[0] * pages as f64 - 35_389.0).abs() < 1.0, "{:?}", q.thresholds);
    assert_eq!(q.balloon_pages_per_s, 12_800);
    // and a scale of 0 is refused, naming the field
    let zero: MemorySpec = serde_json::from_str(r#"{"preset": "esx2013", "scale": 0, "vms": []}"#).unwrap();
    let e = zero.params(pages).unwrap_err().to_string();
    assert!(e.contains("memory.scale") && e.contains("integer >= 1"), "{e}");
}

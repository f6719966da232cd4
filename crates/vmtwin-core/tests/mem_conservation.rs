//! Conservation under random pressure: every machine page is somewhere exactly once (used + free
//! = host memory), each VM's page states add up to its configured pages, each shared page's
//! reference count equals its sharers, and no page's contents are lost across balloon,
//! compression, swap-out and swap-in. `MemHost::audit` recounts everything from the pmaps, the
//! frame table and the free lists; the contents are checked against the test's own shadow copy.

mod mem_support;

use mem_support::Queue;
use proptest::prelude::*;
use vmtwin_core::mem::*;
use vmtwin_core::sim::{Time, NS_PER_MS, NS_PER_S};

#[derive(Debug, Clone)]
enum Op {
    /// touch a run of pages of one VM: (vm, start fraction, length, write?)
    Touch(u8, f64, u16, bool),
    /// write contents copied from another VM's page (makes sharing opportunities)
    Copy(u8, f64, u8, f64),
    /// advance time by this many ms (ticks, swap-out completions)
    Advance(u16),
    /// full sharing scan
    Scan,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..3, 0.0..1.0f64, 1u16..600, any::<bool>()).prop_map(|(v, s, n, w)| Op::Touch(v, s, n, w)),
        2 => (0u8..3, 0.0..1.0f64, 0u8..3, 0.0..1.0f64).prop_map(|(a, x, b, y)| Op::Copy(a, x, b, y)),
        3 => (1u16..4000).prop_map(Op::Advance),
        1 => Just(Op::Scan),
    ]
}

fn host(preset: Preset, seed: u64) -> MemHost {
    host_with(MemParams::for_preset(preset, 3000), seed)
}

fn host_with(mut p: MemParams, seed: u64) -> MemHost {
    p.host_overhead_pages = 100;
    p.share_scan_pages_per_s = 300;
    p.balloon_pages_per_s = 400;
    p.swap_out_pages_per_s = 600;
    p.swap_cluster_pages = 16;
    let mut h = MemHost::new(p, 2, 1500, Box::new(FixedLatencySwapStandIn::default()), seed).unwrap();
    for i in 0..3u32 {
        let mut s = VmMemSpec::new(&format!("vm{i}"), 1400);
        s.overhead_pages = 40;
        s.min_pages = 100 * i;
        s.home_node = i % 2;
        s.balloon_driver = i != 2;
        s.content = ContentSpec { os: 1, os_fraction: 0.3, app: i % 2, app_fraction: 0.2, zero_fraction: 0.2, ..ContentSpec::default() };
        h.power_on(s).unwrap();
    }
    h
}

/// Check contents against the shadow: a page the balloon took comes back zeroed.
fn check_contents(h: &MemHost, shadow: &mut [Vec<u64>]) -> Result<(), String> {
    for (vm, sh) in shadow.iter_mut().enumerate() {
        let pm = h.pmap(vm as u32);
        for ppn in 0..pm.pages() {
            match pm.state(ppn) {
                PageState::Ballooned | PageState::Deflated => sh[ppn as usize] = 0,
                _ if pm.content(ppn) != sh[ppn as usize] => {
                    return Err(format!("vm {vm} page {ppn} ({:?}) holds {:#x}, expected {:#x}", pm.state(ppn), pm.content(ppn), sh[ppn as usize]))
                }
                _ => {}
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn machine_pages_states_refcounts_and_contents_are_conserved(
        ops in prop::collection::vec(op(), 1..60), seed in any::<u64>(), modern in any::<bool>())
    {
        let mut h = host(if modern { Preset::Esx2013 } else { Preset::Esx2002 }, seed);
        let mut q = Queue::default();
        let mut now: Time = 0;
        h.start(0, &mut q);
        let mut shadow: Vec<Vec<u64>> = (0..3).map(|v| (0..1400).map(|p| h.pmap(v).content(p)).collect()).collect();
        let mut states_seen = std::collections::HashSet::new();
        for op in ops {
            match op {
                Op::Touch(vm, start, n, write) => {
                    let vm = u32::from(vm);
                    let s = (start * 1400.0) as u32;
                    for ppn in s..(s + u32::from(n)).min(1400) {
                        let access = if write {
                            let c = h.private_content(vm);
                            let a = h.write(vm, ppn, c, now);
                            if !matches!(a, Access::Blocked { .. }) { shadow[vm as usize][ppn as usize] = c; }
                            a
                        } else {
                            h.read(vm, ppn, now)
                        };
                        if let Access::SwapWait { until } = access { prop_assert!(until > now); }
                    }
                }
                Op::Copy(a, x, b, y) => {
                    let (a, b) = (u32::from(a), u32::from(b));
                    let (pa, pb) = ((x * 1400.0) as u32, (y * 1400.0) as u32);
                    let c = h.pmap(b).content(pb);
                    if !matches!(h.write(a, pa, c, now), Access::Blocked { .. }) { shadow[a as usize][pa as usize] = c; }
                }
                Op::Advance(ms) => {
                    now += Time::from(ms) * NS_PER_MS;
                    q.run_until(&mut h, now);
                }
                Op::Scan => { h.full_scan(); }
            }
            states_seen.insert(h.state());
            prop_assert_eq!(h.audit(), Ok(()));
            // each shared frame is charged once in all: its n sharers pay 1/n each
            let charged: f64 = (0..3).map(|v| { let s = h.vm_stats(v); s.shrd as f64 - s.shrdsvd }).sum();
            prop_assert!((charged - h.frames().shared_frames() as f64).abs() < 1e-6, "charged {} for {} shared frames", charged, h.frames().shared_frames());
            let used = h.total_pages() - h.free_pages();
            prop_assert!(used <= h.total_pages());
            check_contents(&h, &mut shadow).map_err(TestCaseError::fail)?;
        }
        // drain in-flight swap-outs: still conserved, and nothing is left in flight
        now += 10 * NS_PER_S;
        q.run_until(&mut h, now);
        prop_assert_eq!(h.audit(), Ok(()));
    }
}

/// The random walk above must actually reach reclamation: with two VMs writing everything,
/// every technique runs and the audit still holds.
#[test]
fn heavy_pressure_exercises_balloon_compression_and_swap() {
    for preset in [Preset::Esx2002, Preset::Esx2013] {
        // a wide soft band, so the ramp below passes through the ballooning state
        let mut p = MemParams::for_preset(preset, 3000);
        p.thresholds = [0.3, 0.25, 0.05, 0.02];
        let mut h = host_with(p, 7);
        let mut q = Queue::default();
        h.start(0, &mut q);
        let mut shadow: Vec<Vec<u64>> = (0..3).map(|v| (0..1400).map(|p| h.pmap(v).content(p)).collect()).collect();
        let mut now = 0;
        for round in 0..120u64 {
            for vm in 0..3u32 {
                for k in 0..(40 + 8 * round as u32).min(600) {
                    let ppn = (k * 7 + round as u32 * 131 + vm * 17) % 1400;
                    if k % 3 == 0 {
                        let c = h.private_content(vm);
                        if !matches!(h.write(vm, ppn, c, now), Access::Blocked { .. }) {
                            shadow[vm as usize][ppn as usize] = c;
                        }
                    } else {
                        h.read(vm, ppn, now);
                    }
                }
            }
            now += 500 * NS_PER_MS;
            q.run_until(&mut h, now);
            assert_eq!(h.audit(), Ok(()), "{preset:?} round {round}");
            check_contents(&h, &mut shadow).unwrap();
        }
        let c: Vec<VmMemCounters> = (0..3).map(|v| h.vm_stats(v).counters).collect();
        let sum = |f: fn(&VmMemCounters) -> u64| c.iter().map(f).sum::<u64>();
        assert!(sum(|c| c.swap_out_pages) > 0 && sum(|c| c.swap_in_pages) > 0, "{preset:?}: {c:?}");
        assert!(sum(|c| c.balloon_inflated) > 0, "{preset:?}: no ballooning: {c:?}");
        if preset == Preset::Esx2013 {
            assert!(sum(|c| c.zipped) > 0 && sum(|c| c.unzipped) > 0, "{preset:?}: {c:?}");
        } else {
            assert_eq!(sum(|c| c.zipped), 0, "the 2002 preset does not compress");
        }
    }
}

//! The guest OS model: kernel sized from configured memory, the balloon's victim order (free,
//! then page cache, then least recently touched anonymous pages), and conservation of pages and
//! contents across guest paging, ballooning, compression and hypervisor swap under random
//! pressure (the host's audit recounts the guest's roles and checks them against the pmap; the
//! contents are checked against the test's own shadow of what the workload wrote).

mod mem_support;

use mem_support::Queue;
use proptest::prelude::*;
use std::collections::HashSet;
use vmtwin_core::mem::guest::{GuestOs, GuestParams, GuestRole};
use vmtwin_core::mem::*;
use vmtwin_core::sim::{Time, NS_PER_MS, NS_PER_S};

#[test]
fn kernel_is_a_base_plus_a_struct_page_per_page() {
    let p = GuestParams::default();
    for pages in [32_768u32, 65_536, 262_144, 6_291_456] {
        let bytes = 64.0 * 1024.0 * 1024.0 + 64.0 * f64::from(pages);
        assert_eq!(p.kernel_pages(pages), (bytes / 4096.0).ceil() as u32);
    }
    // the B.1 mechanism: a 256 MB guest ballooned to 128 MB keeps a 256 MB guest's kernel
    assert!(p.kernel_pages(65_536) > p.kernel_pages(32_768));
}

fn small_guest(cache_mb: u64, anon: u32) -> GuestOs {
    let params = GuestParams { kernel_base_bytes: 1 << 20, kernel_bytes_per_page: 64.0, boot_cache_bytes: cache_mb << 20, zero_at_boot: false };
    let pages = (cache_mb << 8) as u32 + anon + 100 + 1024;
    assert!(params.kernel_pages(pages) < 1024);
    GuestOs::boot(&params, pages, anon)
}

fn content(p: u32) -> u64 {
    u64::from(p) * 7 + 1
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    /// Asked for n pages, the balloon takes min(n, free) free pages, then page cache, then
    /// anonymous pages, as far as they go.
    #[test]
    fn balloon_takes_free_then_cache_then_anonymous_pages(cache_mb in 0u64..8, anon in 1u32..2000, used in 0.0..1.0f64, n in 0u64..6000) {
        let mut g = small_guest(cache_mb, anon);
        let allocated = ((f64::from(anon) * used) as u32).max(1);
        let mut out = Vec::new();
        for vpn in 0..allocated {
            g.touch(vpn, &mut out, content).unwrap();
        }
        prop_assert!(out.is_empty(), "the free list had room");
        let (free0, cache0) = (g.role_pages(GuestRole::Free), g.role_pages(GuestRole::Cache));
        let r = g.balloon_take(n, content);
        g.audit().map_err(TestCaseError::fail)?;
        let took = r.ppns.len() as u64;
        prop_assert_eq!(took, n.min(free0 + cache0 + u64::from(allocated)));
        let from_free = free0.min(took);
        let from_cache = cache0.min(took - from_free);
        prop_assert_eq!(g.c.balloon_free, from_free);
        prop_assert_eq!(g.c.balloon_cache, from_cache);
        prop_assert_eq!(g.c.balloon_anon, took - from_free - from_cache);
        prop_assert_eq!(r.swapped_out.len() as u64, took - from_free - from_cache);
        prop_assert_eq!(g.role_pages(GuestRole::Balloon), took);
        // every swapped-out page kept the contents of its PPN
        for (vpn, p) in &r.swapped_out {
            prop_assert_eq!(g.swapped_content(*vpn), Some(content(*p)));
        }
    }

    /// Anonymous victims are the least recently touched: after a sweep, pages touched since go
    /// only once every untouched resident page has gone.
    #[test]
    fn balloon_takes_cold_anonymous_pages_before_hot_ones(anon in 2u32..1500, hot in 0.0..1.0f64, k in 0u64..1500, seed in any::<u64>()) {
        let mut g = small_guest(1, anon);
        let mut out = Vec::new();
        for vpn in 0..anon {
            g.touch(vpn, &mut out, content).unwrap();
        }
        // free, cache and one anonymous page: the hand sweeps every referenced bit clear
        let first = g.role_pages(GuestRole::Free) + g.role_pages(GuestRole::Cache) + 1;
        let r0 = g.balloon_take(first, content);
        prop_assert_eq!(r0.swapped_out.len(), 1);
        let gone = r0.swapped_out[0].0;
        let mut rng = vmtwin_core::sim::Rng::new(seed);
        let hot_set: HashSet<u32> = (0..anon).filter(|&v| v != gone && rng.uniform() < hot).collect();
        for &v in &hot_set {
            g.touch(v, &mut out, content).unwrap();
        }
        prop_assert!(out.is_empty());
        let r = g.balloon_take(k, content);
        let cold = u64::from(anon) - 1 - hot_set.len() as u64;
        let hot_taken = r.swapped_out.iter().filter(|(v, _)| hot_set.contains(v)).count() as u64;
        prop_assert_eq!(hot_taken, (r.swapped_out.len() as u64).saturating_sub(cold));
        g.audit().map_err(TestCaseError::fail)?;
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// touch a run of anonymous pages of one VM: (vm, start fraction, length, write?)
    Touch(u8, f64, u16, bool),
    /// advance time by this many ms (ticks: balloon, compression, swap)
    Advance(u16),
    /// full sharing scan
    Scan,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u8..3, 0.0..1.0f64, 1u16..500, any::<bool>()).prop_map(|(v, s, n, w)| Op::Touch(v, s, n, w)),
        3 => (1u16..4000).prop_map(Op::Advance),
        1 => Just(Op::Scan),
    ]
}

const PAGES: u32 = 20_000;
const ANON: u32 = 1200;

fn host(preset: Preset, seed: u64) -> MemHost {
    host_with(preset, seed, 400)
}

fn host_with(preset: Preset, seed: u64, balloon_pages_per_s: u32) -> MemHost {
    let mut p = MemParams::for_preset(preset, 3000);
    p.host_overhead_pages = 100;
    p.share_scan_pages_per_s = 300;
    p.balloon_pages_per_s = balloon_pages_per_s;
    p.swap_out_pages_per_s = 600;
    p.swap_cluster_pages = 16;
    let mut h = MemHost::new(p, 2, 1500, Box::new(FixedLatencySwapStandIn::default()), seed).unwrap();
    // a small kernel so that the guest fits the test's host: 64 KB + 16 B per page
    let g = GuestParams { kernel_base_bytes: 64 << 10, kernel_bytes_per_page: 16.0, boot_cache_bytes: 300 * 4096, zero_at_boot: false };
    for i in 0..3u32 {
        let mut s = VmMemSpec::new(&format!("vm{i}"), PAGES.min(1400 + 200 * i));
        s.overhead_pages = 40;
        s.home_node = i % 2;
        s.balloon_driver = i != 2;
        s.content = ContentSpec { os: 1, os_fraction: 0.1, app: 0, app_fraction: 0.0, zero_fraction: 0.1, ..ContentSpec::default() };
        s.guest = Some(g);
        s.anon_pages = ANON;
        h.power_on(s).unwrap();
    }
    h
}

/// Every resident anonymous page holds what the workload last left there (zero if only read
/// since it was first given), every guest-swapped one kept it.
fn check_contents(h: &MemHost, shadow: &[Vec<Option<u64>>]) -> Result<(), String> {
    for (vm, sh) in shadow.iter().enumerate() {
        let g = h.guest(vm as u32).unwrap();
        for (vpn, want) in sh.iter().enumerate() {
            let Some(want) = *want else { continue };
            let got = match g.resident(vpn as u32) {
                Some(p) => h.pmap(vm as u32).content(p),
                None => g.swapped_content(vpn as u32).ok_or(format!("vm {vm} page {vpn} neither resident nor swapped"))?,
            };
            if got != want {
                return Err(format!("vm {vm} anonymous page {vpn}: contents {got:#x}, wrote {want:#x}"));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]
    #[test]
    fn pages_and_contents_are_conserved_through_guest_paging(
        ops in prop::collection::vec(op(), 1..50), seed in any::<u64>(), modern in any::<bool>())
    {
        let mut h = host(if modern { Preset::Esx2013 } else { Preset::Esx2002 }, seed);
        let mut q = Queue::default();
        let mut now: Time = 0;
        h.start(0, &mut q);
        let mut shadow: Vec<Vec<Option<u64>>> = vec![vec![None; ANON as usize]; 3];
        for op in ops {
            match op {
                Op::Touch(vm, start, n, write) => {
                    let vm = u32::from(vm);
                    let s = (start * f64::from(ANON)) as u32;
                    for vpn in s..(s + u32::from(n)).min(ANON) {
                        let c = write.then(|| h.private_content(vm));
                        let a = h.guest_access(vm, vpn, c, now);
                        if matches!(a, Access::Blocked { .. }) {
                            continue;
                        }
                        let slot = &mut shadow[vm as usize][vpn as usize];
                        *slot = Some(c.unwrap_or(slot.unwrap_or(0)));
                    }
                }
                Op::Advance(ms) => {
                    now += Time::from(ms) * NS_PER_MS;
                    q.run_until(&mut h, now);
                }
                Op::Scan => { h.full_scan(); }
            }
            prop_assert_eq!(h.audit(), Ok(()));
            for vm in 0..3u32 {
                let g = h.guest(vm).unwrap();
                let roles: u64 = [GuestRole::Kernel, GuestRole::Free, GuestRole::Cache, GuestRole::Anon, GuestRole::Balloon].iter().map(|&r| g.role_pages(r)).sum();
                prop_assert_eq!(roles, u64::from(h.pmap(vm).pages()));
                prop_assert_eq!(g.role_pages(GuestRole::Balloon), h.pmap(vm).count(PageState::Ballooned));
            }
            check_contents(&h, &shadow).map_err(TestCaseError::fail)?;
        }
        now += 10 * NS_PER_S;
        q.run_until(&mut h, now);
        prop_assert_eq!(h.audit(), Ok(()));
        check_contents(&h, &shadow).map_err(TestCaseError::fail)?;
    }
}

/// Under pressure the balloon takes the guest's free pages and page cache; a workload that keeps
/// growing then makes the guest swap to its own disk, and a touch of a guest-swapped page waits
/// for the read (not counted as ESX's swap wait).
#[test]
fn a_balloon_that_takes_free_and_cache_makes_the_guest_swap() {
    // a driver fast enough to hold the host in the soft state while the workloads grow
    let mut h = host_with(Preset::Esx2013, 7, 4000);
    let mut q = Queue::default();
    h.start(0, &mut q);
    let mut now = 0;
    let mut waits = 0;
    for round in 0..240u64 {
        for vm in 0..3u32 {
            // the workload grows its memory slowly (the host passes through the soft state),
            // then rereads what it wrote
            let r = round as u32;
            let run = if 8 * r < ANON { 8 * r..8 * r + 8 } else { (8 * r) % ANON..(8 * r) % ANON + 8 };
            for vpn in run {
                let c = Some(h.private_content(vm));
                if let Access::SwapWait { until } = h.guest_access(vm, vpn, c, now) {
                    assert!(until > now);
                    waits += 1;
                }
            }
        }
        now = (round + 1) * NS_PER_S;
        q.run_until(&mut h, now);
        assert_eq!(h.audit(), Ok(()));
    }
    let s = h.vm_stats(0);
    let g = s.counters.guest;
    // the balloon took free pages, then page cache; the workload, still growing, found neither
    // and the guest paged its anonymous memory to its own disk
    assert!(g.balloon_free > 0 && g.balloon_cache > 0, "{g:?}");
    assert_eq!(g.cache_dropped, 300, "{g:?}");
    assert_eq!(s.guest_cache + s.guest_free, 0);
    assert!(g.swap_out > 0 && g.swap_in > 0 && waits > 0 && g.swap_wait_ns > 0, "{g:?}");
    // the guest's pages: kernel + anonymous + balloon fill the VM; the rest of its region is
    // in guest swap
    assert_eq!(s.guest_kernel + s.guest_anon + s.mctlsz, s.memsz);
    assert_eq!(s.guest_anon + s.guest_swapped, u64::from(ANON));
    // the VM without a balloon driver never pages in its guest
    assert_eq!(h.vm_stats(2).counters.guest.swap_out, 0);
}

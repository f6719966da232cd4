//! Page-sharing exactness: a full scan reclaims exactly (pages - distinct contents), counted
//! independently of the sharing table, on random content and on real bytes of memory images.

mod mem_support;

use proptest::prelude::*;
use std::collections::HashSet;
use vmtwin_core::mem::sharing::scan_images;
use vmtwin_core::mem::*;

fn quiet_params() -> MemParams {
    let mut p = MemParams::for_preset(Preset::Esx2013, 1 << 16);
    p.host_overhead_pages = 16;
    p
}

fn host(pages_per_vm: &[u32]) -> MemHost {
    let mut h = MemHost::new(quiet_params(), 2, 1 << 15, Box::new(FixedLatencySwapStandIn::default()), 3).unwrap();
    for (i, &n) in pages_per_vm.iter().enumerate() {
        let mut s = VmMemSpec::new(&format!("vm{i}"), n);
        s.overhead_pages = 8;
        h.power_on(s).unwrap();
    }
    h
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    /// VMs whose pages hold contents drawn from a small random alphabet (so duplicates within
    /// and across VMs, zero pages included): after a full scan, the machine pages freed, and
    /// SHRDSVD summed over VMs, equal pages - distinct contents.
    #[test]
    fn full_scan_reclaims_pages_minus_distinct_contents(
        sizes in prop::collection::vec(1u32..400, 1..5),
        alphabet in 1u64..300,
        draws in prop::collection::vec(any::<u64>(), 1600))
    {
        let mut h = host(&sizes);
        let mut all = Vec::new();
        let mut k = 0usize;
        for (vm, &n) in sizes.iter().enumerate() {
            for ppn in 0..n {
                let c = draws[k % draws.len()] % alphabet; // 0 is the zero page
                k += 1;
                h.write(vm as u32, ppn, c * 0x9E37_79B9, 0);
                all.push(c);
            }
        }
        // an independent count: distinct values drawn
        let distinct = all.iter().collect::<HashSet<_>>().len() as u64;
        let pages = all.len() as u64;
        let free_before = h.free_pages();
        // scan twice: the second pass must change nothing
        h.full_scan();
        let free_after = h.free_pages();
        h.full_scan();
        prop_assert_eq!(h.free_pages(), free_after);
        prop_assert_eq!(free_after - free_before, pages - distinct);
        let saved: f64 = (0..sizes.len() as u32).map(|v| h.vm_stats(v).shrdsvd).sum();
        prop_assert!((saved - (pages - distinct) as f64).abs() < 1e-6, "SHRDSVD {} vs {}", saved, pages - distinct);
        let consumed: f64 = (0..sizes.len() as u32).map(|v| h.vm_stats(v).consumed).sum();
        prop_assert!((consumed - distinct as f64).abs() < 1e-6, "consumed {} vs distinct {}", consumed, distinct);
        prop_assert_eq!(h.audit(), Ok(()));
    }
}

/// One VM's observable memory: every page's state and backing, and its counters (the scan
/// counter aside: `full_scan` counts what it examined, `share_candidate` does not).
fn observed(h: &MemHost, vm: u32) -> (Vec<(PageState, u32)>, VmMemStats) {
    let p = h.pmap(vm);
    let mut s = h.vm_stats(vm);
    s.counters.scanned = 0;
    ((0..p.pages()).map(|i| (p.state(i), p.index(i))).collect(), s)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    /// A full scan decides exactly as offering every page in turn to `share_candidate`, from a
    /// history with shared frames, hint frames, stale hints (pages rewritten or shared since)
    /// and copy-on-write breaks: the same page states and machine pages, counters, frames and
    /// free machine pages, in the same free-list order (the pages faulted in afterwards get the
    /// same machine pages).
    #[test]
    fn full_scan_decides_as_share_candidate_page_by_page(
        sizes in prop::collection::vec(1u32..300, 1..4),
        alphabet in 1u64..60,
        history in prop::collection::vec((any::<u8>(), any::<u16>(), any::<u8>(), 0u8..4), 0..600))
    {
        let build = || {
            let mut h = host(&sizes);
            for (vm, &n) in sizes.iter().enumerate() {
                for ppn in (0..n).step_by(2) {
                    h.write(vm as u32, ppn, u64::from(ppn) % alphabet * 0x9E37_79B9, 0);
                }
            }
            for &(v, p, c, op) in &history {
                let vm = u32::from(v) % sizes.len() as u32;
                let ppn = u32::from(p) % sizes[vm as usize];
                match op {
                    0 | 1 => { h.share_candidate(vm, ppn); }
                    2 => { h.write(vm, ppn, u64::from(c) % alphabet * 0x9E37_79B9, 0); }
                    _ => { h.read(vm, ppn, 0); }
                }
            }
            h
        };
        let (mut a, mut b) = (build(), build());
        a.full_scan();
        for vm in 0..sizes.len() as u32 {
            for ppn in 0..sizes[vm as usize] {
                b.share_candidate(vm, ppn);
            }
        }
        prop_assert_eq!(a.free_pages(), b.free_pages());
        let mut fa: Vec<_> = a.frames().frames().map(|f| format!("{f:?}")).collect();
        let mut fb: Vec<_> = b.frames().frames().map(|f| format!("{f:?}")).collect();
        fa.sort();
        fb.sort();
        prop_assert_eq!(fa, fb);
        for h in [&mut a, &mut b] {
            for (vm, &n) in sizes.iter().enumerate() {
                for ppn in 0..n {
                    h.read(vm as u32, ppn, 0);
                }
            }
        }
        for vm in 0..sizes.len() as u32 {
            prop_assert_eq!(observed(&a, vm), observed(&b, vm), "vm {}", vm);
        }
        prop_assert_eq!(a.audit(), Ok(()));
    }
}

/// A copy-on-write break gives the writer a private page and frees nothing else.
#[test]
fn write_to_shared_page_breaks_copy_on_write() {
    let mut h = host(&[4, 4]);
    for vm in 0..2 {
        for ppn in 0..4 {
            h.write(vm, ppn, 77, 0);
        }
    }
    h.full_scan();
    assert_eq!(h.vm_stats(0).shrd + h.vm_stats(1).shrd, 8);
    let free = h.free_pages();
    assert!(matches!(h.write(1, 2, 78, 0), Access::Fault { .. }));
    assert_eq!(h.free_pages(), free - 1);
    assert_eq!(h.pmap(1).state(2), PageState::Regular);
    assert_eq!(h.vm_stats(1).counters.cow_breaks, 1);
    // a read of a shared page does not fault [S2 §3.4]
    assert_eq!(h.read(0, 0, 0), Access::Hit);
    assert_eq!(h.audit(), Ok(()));
}

/// A small synthetic "guest": zero pages, pages of a common OS image, pages of a common
/// application, private random pages, and near-duplicates (one byte changed), as raw bytes.
fn synthetic_image(vm: u64, pages: usize, os: &[Vec<u8>], app: &[Vec<u8>]) -> Vec<u8> {
    let mut state = vm.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out = Vec::with_capacity(pages * PAGE_BYTES);
    for _ in 0..pages {
        let r = next() % 100;
        let page: Vec<u8> = if r < 20 {
            vec![0; PAGE_BYTES]
        } else if r < 50 {
            os[(next() % os.len() as u64) as usize].clone()
        } else if r < 65 {
            app[(next() % app.len() as u64) as usize].clone()
        } else if r < 75 {
            let mut p = os[(next() % os.len() as u64) as usize].clone();
            let at = (next() % PAGE_BYTES as u64) as usize;
            p[at] ^= 1 + (next() % 255) as u8;
            p
        } else {
            (0..PAGE_BYTES).map(|_| next() as u8).collect()
        };
        out.extend_from_slice(&page);
    }
    out
}

fn random_pages(seed: u64, n: usize) -> Vec<Vec<u8>> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            (0..PAGE_BYTES)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    (s >> 24) as u8
                })
                .collect()
        })
        .collect()
}

#[test]
fn full_scan_of_real_memory_images_reclaims_pages_minus_distinct_pages() {
    let dir = std::env::temp_dir().join(format!("vmtwin-mem-images-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let os = random_pages(11, 64);
    let app = random_pages(12, 24);
    let mut images = Vec::new();
    for vm in 0..3u64 {
        let path = dir.join(format!("vm{vm}.vmem"));
        std::fs::write(&path, synthetic_image(vm + 1, 512, &os, &app)).unwrap();
        images.push(MemoryImage::read(&path).unwrap());
    }
    // independent count: distinct byte strings of 4 KiB
    let mut distinct: HashSet<&[u8]> = HashSet::new();
    let mut zero = 0u64;
    for img in &images {
        for p in 0..img.pages() {
            distinct.insert(img.page(p));
            zero += u64::from(img.page(p).iter().all(|&b| b == 0));
        }
    }
    let pages = 3 * 512u64;
    let refs: Vec<&MemoryImage> = images.iter().collect();
    let scan = scan_images(&refs);
    assert_eq!(scan.pages, pages);
    assert_eq!(scan.reclaimed, pages - distinct.len() as u64);
    assert_eq!(scan.shared - scan.shared_frames, scan.reclaimed);
    assert_eq!(scan.zero_shared, zero);
    assert_eq!(scan.false_matches, 0);
    // near-duplicates exist and were not shared: the distinct count is above the pool sizes
    assert!(distinct.len() > os.len() + app.len() + 1);

    // the same images as VMs of a host: touching every page and a full scan free exactly as many
    let mut h = MemHost::new(quiet_params(), 1, 4096, Box::new(FixedLatencySwapStandIn::default()), 5).unwrap();
    for (i, img) in images.into_iter().enumerate() {
        let mut s = VmMemSpec::new(&format!("img{i}"), 512);
        s.overhead_pages = 0;
        s.image = Some(img);
        h.power_on(s).unwrap();
    }
    for vm in 0..3 {
        for ppn in 0..512 {
            h.read(vm, ppn, 0);
        }
    }
    let before = h.free_pages();
    h.full_scan();
    assert_eq!(h.free_pages() - before, scan.reclaimed);
    assert_eq!((0..3).map(|v| h.vm_stats(v).zero).sum::<u64>(), zero);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_truncated_and_mis_sized_images_are_refused_by_name() {
    let dir = std::env::temp_dir().join(format!("vmtwin-mem-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("nope.vmem");
    let e = MemoryImage::read(&missing).unwrap_err().to_string();
    assert!(e.contains("nope.vmem") && e.contains("unreadable"), "{e}");
    let truncated = dir.join("cut.vmem");
    std::fs::write(&truncated, vec![0u8; 3 * PAGE_BYTES + 100]).unwrap();
    let e = MemoryImage::read(&truncated).unwrap_err().to_string();
    assert!(e.contains("cut.vmem") && e.contains("12388 bytes") && e.contains("truncated"), "{e}");
    std::fs::write(&truncated, b"").unwrap();
    assert!(MemoryImage::read(&truncated).is_err());
    let img = MemoryImage::from_bytes(vec![0u8; 2 * PAGE_BYTES], "x").unwrap();
    let mut h = host(&[]);
    let mut s = VmMemSpec::new("small", 3);
    s.image = Some(img);
    let e = h.power_on(s).unwrap_err().to_string();
    assert!(e.contains("vms[0].memory.image") && e.contains("2 pages"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Copies of OS-image pages within one VM ([S1 §4.3]'s non-zero duplicates in a single VM): a
/// full scan of one VM reclaims exactly its copies; of two VMs of that OS, one whole image and
/// every copy. Counted from the spec's page counts, not from the layout.
#[test]
fn os_copies_are_reclaimed_within_one_vm_and_across_vms() {
    let pages = 1000u32;
    let spec = ContentSpec { os: 3, os_fraction: 0.4, app: 1, app_fraction: 0.1, os_copy_fraction: 0.15, ..ContentSpec::default() };
    spec.validate("content").unwrap();
    let (os, copies) = (400u64, 150u64);
    for vms in 1..=2u32 {
        let mut h = MemHost::new(quiet_params(), 2, 1 << 15, Box::new(FixedLatencySwapStandIn::default()), 3).unwrap();
        for i in 0..vms {
            let mut s = VmMemSpec::new(&format!("vm{i}"), pages);
            s.overhead_pages = 8;
            // each VM its own application: only the OS image and its copies can be shared
            s.content = ContentSpec { app: 10 + i, ..spec.clone() };
            h.power_on(s).unwrap();
            for ppn in 0..pages {
                h.read(i, ppn, 0);
            }
        }
        let free = h.free_pages();
        h.full_scan();
        let want = if vms == 1 { copies } else { os + 2 * copies };
        assert_eq!(h.free_pages() - free, want, "{vms} VMs");
        assert_eq!(h.audit(), Ok(()));
    }
}

#[test]
fn os_copies_beyond_the_image_or_the_vm_are_refused_by_name() {
    let c = ContentSpec { os_fraction: 0.2, os_copy_fraction: 0.3, ..ContentSpec::default() };
    let e = c.validate("vms[0].content").unwrap_err().to_string();
    assert!(e.contains("vms[0].content.os_copy_fraction") && e.contains("at most os_fraction"), "{e}");
    let c = ContentSpec { os_fraction: 0.5, app_fraction: 0.4, os_copy_fraction: 0.2, ..ContentSpec::default() };
    let e = c.validate("vms[0].content").unwrap_err().to_string();
    assert!(e.contains("os_copy_fraction") && e.contains("1 - os_fraction - app_fraction"), "{e}");
}

//! Benchmark of the memory subsystem's sizes and scan rates. Prints one JSON line with:
//!
//! - heap bytes per simulated guest page: the pmap alone, and the whole host (pmaps, machine
//!   free lists, the sharing table, everything) after every page is mapped and scanned, counted
//!   by a counting allocator (target: at most 12 bytes per guest page);
//! - full page-sharing scan rate over content ids, first pass (inserting and sharing) and a
//!   second pass (target > 50 million pages per second on one core), the first pass also per
//!   second of this thread's CPU time (the wall-clock rate counts time the thread waited for a
//!   core on a loaded machine);
//! - over real bytes: page hashing and a full byte-verified scan of memory images in GB/s,
//!   beside memcpy bandwidth measured in the same run;
//! - the machine's load average before and after (the figures are wall-clock).
//!
//! Run: `cargo run --release -p vmtwin-core --example mem_bench [guest_gb]` (default 4).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;
use vmtwin_core::mem::content::page_hash;
use vmtwin_core::mem::sharing::scan_images;
use vmtwin_core::mem::*;

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        LIVE.fetch_add(n, Relaxed);
        LIVE.fetch_sub(l.size(), Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}
#[global_allocator]
static A: Counting = Counting;

fn load() -> f64 {
    std::fs::read_to_string("/proc/loadavg").ok().and_then(|s| s.split_whitespace().next()?.parse().ok()).unwrap_or(f64::NAN)
}

/// CPU time of this thread in ns (Linux: /proc/thread-self/schedstat, time on a CPU), so a scan's
/// rate per core can be read on a machine whose other processes take the cores away.
fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
}

fn best<T>(reps: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut out = None;
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed().as_secs_f64());
        out = Some(r);
    }
    (best, out.unwrap())
}

fn xorshift_pages(seed: u64, n: usize) -> Vec<u8> {
    let mut s = seed | 1;
    let mut v = Vec::with_capacity(n * PAGE_BYTES);
    for _ in 0..n * PAGE_BYTES / 8 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        v.extend_from_slice(&s.to_le_bytes());
    }
    v
}

fn main() {
    let guest_gb: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(4);
    let load_before = load();
    // ---- sizes and content-id scan: 16 VMs, host overcommitted 1.5x ----
    let guest_pages = guest_gb * 262_144;
    let vms = 16u32;
    let per_vm = (guest_pages / u64::from(vms)) as u32;
    let host_pages = (guest_pages as f64 / 1.5) as u32;
    let base = LIVE.load(Relaxed);
    let mut p = MemParams::for_preset(Preset::Esx2013, u64::from(host_pages));
    p.host_overhead_pages = 1024;
    let mut h = MemHost::new(p, 2, host_pages / 2, Box::new(FixedLatencySwapStandIn::default()), 1).unwrap();
    for i in 0..vms {
        let mut s = VmMemSpec::new(&format!("vm{i}"), per_vm);
        s.overhead_pages = 256;
        s.home_node = i % 2;
        // research/memory.md C.27: about 2/3 common to VMs of one OS and application
        s.content = ContentSpec { os: 1, os_fraction: 0.45, app: i % 4, app_fraction: 0.2, zero_fraction: 0.1, ..ContentSpec::default() };
        h.power_on(s).unwrap();
    }
    let pmap_bytes: f64 = (0..vms).map(|v| h.pmap(v).bytes_per_page()).sum::<f64>() / f64::from(vms);
    // map as many pages as fit (the rest stay unmapped), scan, then map the rest
    let mut mapped = 0u64;
    for v in 0..vms {
        for ppn in 0..per_vm {
            if !matches!(h.read(v, ppn, 0), Access::Blocked { .. }) {
                mapped += 1;
            }
        }
    }
    let c = cpu_ns();
    let t = Instant::now();
    let scanned1 = h.full_scan();
    let first = t.elapsed().as_secs_f64();
    let first_cpu = cpu_ns().zip(c).map_or(f64::NAN, |(b, a)| (b - a) as f64 / 1e9);
    let (second, scanned2) = best(3, || h.full_scan());
    for v in 0..vms {
        for ppn in 0..per_vm {
            h.read(v, ppn, 0);
        }
    }
    h.full_scan();
    let host_bytes = (LIVE.load(Relaxed) - base) as f64 / guest_pages as f64;
    let shared: u64 = (0..vms).map(|v| h.vm_stats(v).shrd).sum();
    let frames = h.frames().len();
    h.audit().unwrap();
    drop(h);

    // ---- real bytes: 3 images of 64 MB with common OS pages ----
    let img_pages = 16_384usize;
    let os = xorshift_pages(99, 4096);
    let images: Vec<MemoryImage> = (0..3u64)
        .map(|vm| {
            let private = xorshift_pages(vm + 1, img_pages);
            let mut b = Vec::with_capacity(img_pages * PAGE_BYTES);
            for i in 0..img_pages {
                let src = match i % 10 {
                    0 | 1 => &[0u8; PAGE_BYTES][..],
                    2..=5 => &os[(i % 4096) * PAGE_BYTES..][..PAGE_BYTES],
                    _ => &private[i * PAGE_BYTES..][..PAGE_BYTES],
                };
                b.extend_from_slice(src);
            }
            MemoryImage::from_bytes(b, "bench").unwrap()
        })
        .collect();
    let bytes = (3 * img_pages * PAGE_BYTES) as f64;
    let (t_hash, sum) = best(5, || {
        images.iter().map(|m| (0..m.pages()).fold(0u64, |a, p| a ^ page_hash(m.page(p)))).fold(0, |a, b| a ^ b)
    });
    let refs: Vec<&MemoryImage> = images.iter().collect();
    let (t_scan, scan) = best(5, || scan_images(&refs));
    let src = xorshift_pages(5, 65_536); // 256 MB
    let mut dst = vec![0u8; src.len()];
    let (t_copy, _) = best(5, || {
        dst.copy_from_slice(&src);
        std::hint::black_box(&dst);
    });
    let load_after = load();
    let json = format!(
        concat!(
            "{{\"benchmark\": \"mem\", \"guest_gb\": {}, \"vms\": {}, \"overcommit\": 1.5, \"pmap_bytes_per_page\": {:.2}, ",
            "\"host_bytes_per_guest_page\": {:.2}, \"frames\": {}, \"shared_pages\": {}, ",
            "\"scan_pages_first_pass\": {}, \"scan_first_pass_mpages_per_s\": {:.1}, \"scan_first_pass_cpu_mpages_per_s\": {:.1}, \"scan_pages_second_pass\": {}, \"scan_second_pass_mpages_per_s\": {:.1}, ",
            "\"image_mb\": {:.0}, \"hash_gb_per_s\": {:.2}, \"image_scan_gb_per_s\": {:.2}, \"image_reclaimed_pages\": {}, \"memcpy_gb_per_s\": {:.2}, ",
            "\"load_average_before\": {:.2}, \"load_average_after\": {:.2}, \"checksum\": {}, \"mapped_before_scan\": {}}}"
        ),
        guest_gb, vms, pmap_bytes, host_bytes, frames, shared,
        scanned1, scanned1 as f64 / first / 1e6, scanned1 as f64 / first_cpu / 1e6, scanned2, scanned2 as f64 / second / 1e6,
        bytes / 1e6, bytes / t_hash / 1e9, bytes / t_scan / 1e9, scan.reclaimed, src.len() as f64 / t_copy / 1e9,
        load_before, load_after, sum % 1000, mapped,
    );
    println!("{json}");
}

//! The memory subsystem alone: four 1 GB Linux VMs on a 3 GB host (1.33x overcommitted), two
//! of them busy, for two simulated minutes, driven by a tiny event loop. Prints each VM's
//! esxtop-style memory counters (MB) and the host state.
//!
//! Run: `cargo run --release -p vmtwin-core --example mem_quickstart`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use vmtwin_core::mem::*;
use vmtwin_core::sim::{Rng, Time, NS_PER_MS, NS_PER_S};

/// The run loop's side of the interface: a queue of (time, seq, event).
#[derive(Default)]
struct Queue(BinaryHeap<Reverse<(Time, u64, u32)>>, u64);
impl MemScheduler for Queue {
    fn at(&mut self, t: Time, ev: MemEvent) {
        self.1 += 1;
        let code = match ev {
            MemEvent::Tick => u32::MAX,
            MemEvent::SwapOutDone { batch } => batch,
            MemEvent::Resume { .. } => unreachable!("the host never schedules the run loop's resume"),
        };
        self.0.push(Reverse((t, self.1, code)));
    }
}

fn main() {
    const MB: u32 = 256; // pages per MB
    let host_pages = 3 * 1024 * MB;
    let mut params = MemParams::for_preset(Preset::Esx2013, u64::from(host_pages));
    params.host_overhead_pages = u64::from(128 * MB);
    // scan 20 MB/s per VM (default 200 pages/s) so sharing shows within two minutes
    params.share_scan_pages_per_s = 5 * 1024;
    let swap = Box::new(FixedLatencySwapStandIn::default());
    let mut host = MemHost::new(params, 1, host_pages, swap, 42).expect("valid host");
    for i in 0..4 {
        let mut vm = VmMemSpec::new(&format!("linux{i}"), 1024 * MB);
        // same guest OS (shared image pages), two applications, some zero pages
        vm.content = ContentSpec { os: 7, os_fraction: 0.25, app: i % 2, app_fraction: 0.15, zero_fraction: 0.1, ..ContentSpec::default() };
        host.power_on(vm).expect("admitted");
    }
    let mut q = Queue::default();
    host.start(0, &mut q);
    let mut rng = Rng::new(1);
    let mut now: Time = 0;
    let (mut swap_wait, mut stalls) = (0u64, 0u64);
    while now < 120 * NS_PER_S {
        // every VM touches its first 600 MB at boot; VMs 0 and 1 keep writing at random
        for vm in 0..4u32 {
            let burst = if now < 20 * NS_PER_S { 8 * MB } else if vm < 2 { 4 * MB } else { 0 };
            for k in 0..burst {
                let ppn = if now < 20 * NS_PER_S { ((now / (100 * NS_PER_MS)) as u32 * burst + k) % (600 * MB) } else { (rng.uniform() * f64::from(1024 * MB)) as u32 };
                // boot reads (maps the OS image, application and zero pages as laid out);
                // afterwards the busy VMs write private data
                let access = if now < 20 * NS_PER_S {
                    host.read(vm, ppn, now)
                } else {
                    let c = host.private_content(vm);
                    host.write(vm, ppn, c, now)
                };
                match access {
                    Access::SwapWait { until } => swap_wait += until - now,
                    Access::Fault { stall_ns } => stalls += stall_ns,
                    _ => {}
                }
            }
        }
        now += 100 * NS_PER_MS;
        while let Some(&Reverse((t, _, code))) = q.0.peek() {
            if t > now {
                break;
            }
            q.0.pop();
            let ev = if code == u32::MAX { MemEvent::Tick } else { MemEvent::SwapOutDone { batch: code } };
            host.handle(ev, t, &mut q);
        }
    }
    host.audit().expect("every page accounted for");
    let mb = |p: f64| p / f64::from(MB);
    println!("host state {:?}, free {:.0} MB of {:.0} MB", host.state(), mb(host.free_pages() as f64), mb(host.total_pages() as f64));
    println!("{:8} {:>7} {:>7} {:>8} {:>6} {:>6} {:>6} {:>6} {:>7} {:>6} {:>6} {:>8}", "VM", "MEMSZ", "GRANT", "CONSUMED", "TCHD", "SZTGT", "MCTLSZ", "SWCUR", "ZIPPED", "SHRD", "ZERO", "SHRDSVD");
    for vm in 0..4 {
        let s = host.vm_stats(vm);
        println!(
            "linux{vm:<3} {:>7.0} {:>7.0} {:>8.0} {:>6.0} {:>6.0} {:>6.0} {:>6.0} {:>7.0} {:>6.0} {:>6.0} {:>8.0}",
            mb(s.memsz as f64), mb(s.granted as f64), mb(s.consumed), mb(s.active), mb(s.target), mb(s.mctlsz as f64),
            mb(s.swcur as f64), mb(s.zipped as f64), mb(s.shrd as f64), mb(s.zero as f64), mb(s.shrdsvd)
        );
    }
    println!("swap-in wait {:.2} s (the CPU side's %SWPWT), in-memory fault stalls {:.3} s", swap_wait as f64 / 1e9, stalls as f64 / 1e9);
}

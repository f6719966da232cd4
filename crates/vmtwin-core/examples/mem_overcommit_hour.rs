//! Benchmark: the memory subsystem alone on a 1.5x-overcommitted host with 16 VMs for one
//! simulated hour. Prints one JSON line with the wall time (the target for the whole
//! engine is under 30 s; this is the memory module's part), the guest accesses made and the
//! reclamation that happened.
//!
//! 16 VMs of 1 GB (262,144 pages) on 10.67 GB of machine memory, 2 NUMA nodes, 2013 preset.
//! Each VM boots by touching 60 % of its memory, then every 100 ms touches 400 pages (a third
//! of them writes of private data): 80 % in a hot tenth of its memory, 20 % anywhere. A run
//! loop over a binary heap delivers the subsystem's ticks and swap-out completions.
//!
//! Run: `cargo run --release -p vmtwin-core --example mem_overcommit_hour`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;
use vmtwin_core::mem::*;
use vmtwin_core::sim::{Rng, Time, NS_PER_MS, NS_PER_S};

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

/// This process's user + system CPU seconds (/proc/self/stat, clock ticks of 1/100 s).
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    // after the command name: state, ppid, ..., utime (12th), stime (13th)
    let f: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(f64::NAN);
    (tick(11) + tick(12)) / 100.0
}

fn main() {
    let load = || std::fs::read_to_string("/proc/loadavg").ok().and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok()).unwrap_or(f64::NAN);
    let load_before = load();
    let vm_pages = 262_144u32;
    let vms = 16u32;
    let host_pages = (f64::from(vm_pages * vms) / 1.5) as u32 / 2 * 2;
    let params = MemParams::for_preset(Preset::Esx2013, u64::from(host_pages));
    let mut h = MemHost::new(params, 2, host_pages / 2, Box::new(FixedLatencySwapStandIn::default()), 11).unwrap();
    for i in 0..vms {
        let mut s = VmMemSpec::new(&format!("vm{i}"), vm_pages);
        s.home_node = i % 2;
        s.content = ContentSpec { os: 1, os_fraction: 0.3, app: i % 4, app_fraction: 0.15, zero_fraction: 0.1, ..ContentSpec::default() };
        h.power_on(s).unwrap();
    }
    let mut q = Queue::default();
    let mut rngs: Vec<Rng> = (0..vms).map(|i| Rng::new(u64::from(i) + 100)).collect();
    let wall = Instant::now();
    let cpu0 = cpu_s();
    h.start(0, &mut q);
    let (mut accesses, mut swap_wait, mut blocked) = (0u64, 0u64, 0u64);
    let boot = (f64::from(vm_pages) * 0.6) as u32;
    let mut now: Time = 0;
    let step = 100 * NS_PER_MS;
    while now < 3600 * NS_PER_S {
        for vm in 0..vms {
            let r = &mut rngs[vm as usize];
            for k in 0..400u32 {
                let ppn = if now < 60 * NS_PER_S {
                    // boot: 60 % of memory in the first minute
                    ((now / step) as u32 * 400 * 4 + k * 4) % boot
                } else if r.uniform() < 0.8 {
                    (r.uniform() * f64::from(vm_pages / 10)) as u32
                } else {
                    (r.uniform() * f64::from(vm_pages)) as u32
                };
                let a = if k % 3 == 0 {
                    let c = h.private_content(vm);
                    h.write(vm, ppn, c, now)
                } else {
                    h.read(vm, ppn, now)
                };
                accesses += 1;
                match a {
                    Access::SwapWait { until } => swap_wait += until - now,
                    Access::Blocked { .. } => blocked += 1,
                    _ => {}
                }
            }
        }
        now += step;
        while let Some(&Reverse((t, _, code))) = q.0.peek() {
            if t > now {
                break;
            }
            q.0.pop();
            let ev = if code == u32::MAX { MemEvent::Tick } else { MemEvent::SwapOutDone { batch: code } };
            h.handle(ev, t, &mut q);
        }
    }
    let wall_s = wall.elapsed().as_secs_f64();
    let cpu = cpu_s() - cpu0;
    h.audit().unwrap();
    let stats: Vec<VmMemStats> = (0..vms).map(|v| h.vm_stats(v)).collect();
    let sum = |f: &dyn Fn(&VmMemStats) -> f64| stats.iter().map(f).sum::<f64>();
    println!(
        "{{\"benchmark\": \"mem-overcommit-hour\", \"vms\": {vms}, \"overcommit\": 1.5, \"simulated_s\": 3600, \"wall_s\": {wall_s:.2}, \"cpu_s\": {cpu:.2}, \"accesses\": {accesses}, \"ns_per_access\": {:.1}, \"blocked\": {blocked}, \"swap_wait_s\": {:.1}, \"ballooned_mb\": {:.0}, \"swapped_mb\": {:.0}, \"compressed_mb\": {:.0}, \"shared_mb\": {:.0}, \"shrdsvd_mb\": {:.0}, \"state\": \"{:?}\", \"load_average_before\": {load_before:.2}, \"load_average_after\": {:.2}, \"target_wall_s\": 30}}",
        wall_s * 1e9 / accesses as f64,
        swap_wait as f64 / 1e9,
        sum(&|s| s.mctlsz as f64) / 256.0,
        sum(&|s| s.swcur as f64) / 256.0,
        sum(&|s| s.zipped as f64) / 256.0,
        sum(&|s| s.shrd as f64) / 256.0,
        sum(&|s| s.shrdsvd) / 256.0,
        h.state(),
        load(),
    );
}

//! Tunables of the memory subsystem, with units, defaults and sources, and the two policy presets.

use crate::sim::{Time, NS_PER_S, NS_PER_US};
use crate::{invalid, VmtwinResult};

/// Which reclamation techniques the host runs in each free-memory state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// Waldspurger 2002 [S1 §6.3]: thresholds 6/4/2/1 % of host memory; soft = balloon (swap
    /// only where ballooning is impossible), hard = swap, low = swap and block; no compression.
    Esx2002,
    /// VMware 2013 [S2 §3, Table 3]: high while free >= minfree; soft = balloon; hard = compress
    /// and swap (sharing tried first); low = hard and block allocation.
    Esx2013,
}

/// Memory subsystem tunables. Every field name carries its unit, or its doc says dimensionless.
#[derive(Debug, Clone, PartialEq)]
pub struct MemParams {
    /// Policy preset. Default `Esx2013`.
    pub preset: Preset,
    /// Idle memory tax rate tau, dimensionless in [0, 1). Default 0.75 (`sched.mem.idleTax`,
    /// [S1 §5.2] via research/memory.md A.8).
    pub idle_tax: f64,
    /// Pages sampled per period for the active-memory estimate. Default 100 [S1 §5.3].
    pub sample_pages: u32,
    /// Sampling period, in ns. Default 30 s [S1 §5.3].
    pub sample_period_ns: Time,
    /// Gain of the fast EWMA of the sampled active fraction per period, dimensionless in (0, 1].
    /// Default 0.5: not given by the paper (research/memory.md C.7, chosen).
    pub ewma_fast_gain: f64,
    /// Gain of the slow EWMA, dimensionless in (0, 1]. Default 0.1 (C.7, chosen).
    pub ewma_slow_gain: f64,
    /// Period of the host's reclamation tick (targets, states, balloon polls), in ns. Default 1 s:
    /// the balloon driver polls its target once a second [S1 §3.2].
    pub tick_ns: Time,
    /// Pages of each VM the sharing scanner examines per second. Default 200: the paper gives no
    /// number; chosen so a 40 MB VM is scanned in under a minute (research/memory.md C.13).
    pub share_scan_pages_per_s: u32,
    /// Most pages the sharing scanner examines per second over all VMs, in pages: the
    /// system-wide rate [S1 §4.3] ("maximum per-VM and system-wide page scanning rates"). When it
    /// binds, it is split evenly over the VMs, rounded down. Default `None`, no system-wide cap:
    /// the paper gives no number.
    pub share_scan_host_pages_per_s: Option<u32>,
    /// CPU time charged to a VM per page scanned for sharing, in ns. Default 1 us: the cost of
    /// hashing 4 KiB at about 4 GB/s (measured by `examples/mem_bench.rs`); [S1] calls it
    /// negligible, [S2 Table 4] "*".
    pub share_scan_cpu_ns: Time,
    /// CPU time charged to a VM per compression attempt, in ns. Default 10 us: chosen, more than
    /// a sharing scan as [S2 Table 4] says ("**" vs "*"), about 400 MB/s for 4 KiB.
    pub compress_cpu_ns: Time,
    /// Stall of a vCPU that touches a compressed page (decompression in memory), in ns.
    /// Default 5 us: chosen; [S2] "typically not very high".
    pub decompress_ns: Time,
    /// Stall of a write to a shared page (allocate and copy 4 KiB), in ns. Default 2 us: chosen;
    /// [S2 Table 4] lowest wait.
    pub cow_copy_ns: Time,
    /// Stall of a first touch of an unbacked page (allocate and zero), in ns. Default 1 us: chosen.
    pub minor_fault_ns: Time,
    /// Fraction of compressible contents that fit a quarter page, dimensionless. Default 0.3:
    /// chosen (research/memory.md C.16, a workload attribute).
    pub compress_quarter_fraction: f64,
    /// Fraction that fit half a page, dimensionless. Default 0.3: chosen (C.16).
    pub compress_half_fraction: f64,
    /// Compression cache cap per VM, as a fraction of its configured pages, dimensionless.
    /// Default 0.1: research/memory.md C.16, from product docs [X-D].
    pub compress_cache_fraction: f64,
    /// Most pages a VM's swap daemon sends out per second, in pages. Default 25,600 (100 MB/s of
    /// 4 KiB pages): chosen.
    pub swap_out_pages_per_s: u32,
    /// Pages per asynchronous swap-out write (clustered writes [S1 §3.3]). Default 64 (256 kB).
    pub swap_cluster_pages: u32,
    /// Most pages a balloon driver inflates or deflates per second, in pages. Default 12,800
    /// (50 MB/s): the paper says drivers limit their rate adaptively but gives no law (C.9).
    pub balloon_pages_per_s: u32,
    /// Largest balloon as a fraction of the VM's configured pages, dimensionless. Default 0.65
    /// (`Mem.CtlMaxPercent`, product docs [X-D], research/memory.md C.9).
    pub balloon_max_fraction: f64,
    /// Free memory the host aims for and the state thresholds, as fractions of host memory,
    /// dimensionless: `[target(high), soft, hard, low]` entered when free drops below each.
    /// Default from the preset ([`MemParams::for_preset`]).
    pub thresholds: [f64; 4],
    /// Hysteresis: a state is left upward only when free exceeds the next higher threshold by
    /// this fraction of it, dimensionless. Default 1/6 (6 % -> 7 %, the BSD 5/7 % analogy [S1 §6.3],
    /// research/memory.md C.10; chosen).
    pub hysteresis: f64,
    /// Per-host memory of ESX itself, in pages. Default 131,072 (512 MB, the smallest recommended
    /// host [S1 fn 6], as an upper bound of the kernel's own use).
    pub host_overhead_pages: u64,
}

impl Default for MemParams {
    fn default() -> Self {
        Self::for_preset(Preset::Esx2013, 0)
    }
}

/// minFree of a host of `pages` pages: 6 % of the first 4 GB, 4 % of the next 8 GB, 2 % of the
/// next 16 GB, 1 % of the rest (product docs [X-D], research/memory.md A.12).
pub fn min_free_pages(pages: u64) -> u64 {
    const GB: u64 = 262_144;
    let bands = [(4 * GB, 6), (8 * GB, 4), (16 * GB, 2), (u64::MAX, 1)];
    let (mut left, mut free) = (pages, 0u64);
    for (size, pct) in bands {
        let take = left.min(size);
        free += take * pct / 100;
        left -= take;
    }
    free
}

impl MemParams {
    /// The defaults of `preset` for a host of `host_pages` pages (0: the 2002 fractions).
    pub fn for_preset(preset: Preset, host_pages: u64) -> Self {
        let thresholds = match preset {
            Preset::Esx2002 => [0.06, 0.04, 0.02, 0.01],
            Preset::Esx2013 => {
                // high while free >= minfree [S2 §3]; hard and low at 32 % and 16 % of minfree
                // [X-D]; the target is minfree itself
                let mf = if host_pages == 0 { 0.06 } else { min_free_pages(host_pages) as f64 / host_pages as f64 };
                [mf, mf, 0.32 * mf, 0.16 * mf]
            }
        };
        MemParams {
            preset,
            idle_tax: 0.75,
            sample_pages: 100,
            sample_period_ns: 30 * NS_PER_S,
            ewma_fast_gain: 0.5,
            ewma_slow_gain: 0.1,
            tick_ns: NS_PER_S,
            share_scan_pages_per_s: 200,
            share_scan_host_pages_per_s: None,
            share_scan_cpu_ns: NS_PER_US,
            compress_cpu_ns: 10 * NS_PER_US,
            decompress_ns: 5 * NS_PER_US,
            cow_copy_ns: 2 * NS_PER_US,
            minor_fault_ns: NS_PER_US,
            compress_quarter_fraction: 0.3,
            compress_half_fraction: 0.3,
            compress_cache_fraction: 0.1,
            swap_out_pages_per_s: 25_600,
            swap_cluster_pages: 64,
            balloon_pages_per_s: 12_800,
            balloon_max_fraction: 0.65,
            thresholds,
            hysteresis: 1.0 / 6.0,
            host_overhead_pages: 131_072,
        }
    }

    /// These parameters for a host scaled down by `k` (every memory size divided by `k`, see
    /// [`crate::mem::MemorySpec::params`]): the host overhead divided by `k`, the pages-per-second
    /// rates divided by `k` (rounded to nearest, at least 1 page per second where non-zero), the
    /// CPU per scanned or compressed page multiplied by `k`; thresholds (fractions) and time
    /// constants unchanged. `k` = 1 returns them as they are.
    ///
    /// # Examples
    /// ```
    /// use vmtwin_core::mem::MemParams;
    /// let p = MemParams::default().scaled(32);
    /// assert_eq!((p.balloon_pages_per_s, p.swap_out_pages_per_s, p.share_scan_pages_per_s), (400, 800, 6));
    /// assert_eq!(p.host_overhead_pages, 4096);
    /// assert_eq!(p.share_scan_cpu_ns, 32_000);
    /// ```
    pub fn scaled(mut self, k: u32) -> Self {
        if k <= 1 {
            return self;
        }
        let rate = |r: u32| if r == 0 { 0 } else { ((f64::from(r) / f64::from(k)).round() as u32).max(1) };
        self.share_scan_pages_per_s = rate(self.share_scan_pages_per_s);
        self.share_scan_host_pages_per_s = self.share_scan_host_pages_per_s.map(rate);
        self.swap_out_pages_per_s = rate(self.swap_out_pages_per_s);
        self.balloon_pages_per_s = rate(self.balloon_pages_per_s);
        self.host_overhead_pages /= u64::from(k);
        self.share_scan_cpu_ns *= Time::from(k);
        self.compress_cpu_ns *= Time::from(k);
        self
    }

    /// Pages each of `vms` VMs gets scanned in one tick of `tick_s` seconds: the per-VM rate,
    /// capped by an even split of the system-wide rate.
    ///
    /// # Examples
    /// ```
    /// use vmtwin_core::mem::MemParams;
    /// let mut p = MemParams::default();
    /// assert_eq!(p.scan_pages_per_vm(1.0, 4), 200);
    /// p.share_scan_host_pages_per_s = Some(300);
    /// assert_eq!(p.scan_pages_per_vm(1.0, 4), 75);
    /// ```
    pub fn scan_pages_per_vm(&self, tick_s: f64, vms: usize) -> u64 {
        let per_vm = (f64::from(self.share_scan_pages_per_s) * tick_s) as u64;
        match self.share_scan_host_pages_per_s {
            Some(cap) if vms > 0 => per_vm.min((f64::from(cap) * tick_s) as u64 / vms as u64),
            _ => per_vm,
        }
    }

    /// Whether the preset compresses before swapping.
    pub fn compresses(&self) -> bool {
        self.preset == Preset::Esx2013
    }

    /// Reject values the subsystem cannot run with, naming the field.
    pub fn validate(&self) -> VmtwinResult<()> {
        if !(0.0..1.0).contains(&self.idle_tax) {
            invalid!("memory.idle_tax", self.idle_tax, "a rate in [0, 1) (sched.mem.idleTax; 0.75 by default)");
        }
        for (name, g) in [("memory.ewma_fast_gain", self.ewma_fast_gain), ("memory.ewma_slow_gain", self.ewma_slow_gain)] {
            if !(g > 0.0 && g <= 1.0) {
                invalid!(name, g, "a gain in (0, 1]");
            }
        }
        if self.sample_pages == 0 {
            invalid!("memory.sample_pages", self.sample_pages, "an integer >= 1");
        }
        if self.sample_period_ns == 0 || self.tick_ns == 0 {
            invalid!("memory.sample_period / memory.tick", format!("{} / {}", self.sample_period_ns, self.tick_ns), "durations > 0");
        }
        for (name, v) in [
            ("memory.compress_quarter_fraction", self.compress_quarter_fraction),
            ("memory.compress_half_fraction", self.compress_half_fraction),
            ("memory.compress_cache_fraction", self.compress_cache_fraction),
            ("memory.balloon_max_fraction", self.balloon_max_fraction),
        ] {
            if !(0.0..=1.0).contains(&v) {
                invalid!(name, v, "a fraction in [0, 1]");
            }
        }
        if self.compress_quarter_fraction + self.compress_half_fraction > 1.0 {
            invalid!("memory.compress_half_fraction", self.compress_half_fraction, "at most 1 - compress_quarter_fraction");
        }
        let t = self.thresholds;
        if !(t[0] >= t[1] && t[1] >= t[2] && t[2] >= t[3] && t[3] >= 0.0 && t[0] < 1.0) {
            invalid!("memory.thresholds", format!("{t:?}"), "fractions with 1 > high >= soft >= hard >= low >= 0");
        }
        if !(self.hysteresis >= 0.0 && self.hysteresis.is_finite()) {
            invalid!("memory.hysteresis", self.hysteresis, "a fraction >= 0");
        }
        if self.swap_cluster_pages == 0 {
            invalid!("memory.swap_cluster_pages", self.swap_cluster_pages, "an integer >= 1");
        }
        Ok(())
    }
}

//! The memory section of the engine spec (`SimSpec::memory`): the host's policy and, per VM in
//! spec order, its allocation settings, its content and how its workload touches memory.
//!
//! The Python scenario layer (`python/vmtwin/scenario/memory.py`) is the user-facing schema; it
//! normalizes units and expands `count` so that `vms` here has one entry per engine VM, in the
//! order of `SimSpec::vms`. Memory is modelled only when this section is present.
//!
//! # Tunables
//! Per host: `preset`, `idle_tax`, `scale`, `host_overhead_bytes`, `share_scan_pages_per_s`,
//! `share_scan_host_pages_per_s`, the
//! stand-in's `standin_read_ns` / `standin_write_ns`. Per VM: reservation, limit, shares,
//! overhead, balloon driver, content, image, the touch profile (`working_set_bytes`,
//! `working_set_offset_bytes`, `pages_per_cpu_s` = 10,000 by default, chosen; `write_fraction`,
//! `pattern`, `hot_block_bytes`, `hot_block_after_passes`, `phases`), the swap file's datastore, and the
//! guest OS model (`guest_os`, [`crate::mem::guest::GuestParams`]) with the disk it swaps to, and
//! an application (`app`, [`crate::mem::app::AppSpec`]).
//!
//! # Counters
//! None: the spec only describes (the `mem` tables are sampled in `simulation/memory.rs`).
//!
//! # Known gaps
//! - A workload's touches are uniform over one working set (or round-robin); no hot/cold mix.

use super::app::AppSpec;
use super::content::{ContentSpec, PAGE_BYTES};
use super::guest::GuestParams;
use super::params::{MemParams, Preset};
use crate::sim::{Time, NS_PER_MS};
use crate::{invalid, VmtwinResult};
use serde::{Deserialize, Serialize};

/// The policy preset, as the scenario names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PresetSpec {
    /// [`Preset::Esx2002`]
    Esx2002,
    /// [`Preset::Esx2013`]
    #[default]
    Esx2013,
}

fn default_tax() -> f64 {
    0.75
}
fn default_true() -> bool {
    true
}
fn default_overhead() -> u64 {
    32 << 20
}
fn default_swap_ns() -> Time {
    5 * NS_PER_MS
}
fn default_scale() -> u32 {
    1
}
fn default_touch_rate() -> f64 {
    10_000.0
}

/// The host's memory policy and every VM's memory settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySpec {
    /// policy preset
    #[serde(default)]
    pub preset: PresetSpec,
    /// `sched.mem.idleTax`, in [0, 1)
    #[serde(default = "default_tax")]
    pub idle_tax: f64,
    /// ESX's own memory, in bytes (default: the preset's, 512 MB)
    #[serde(default)]
    pub host_overhead_bytes: Option<u64>,
    /// the host is a model of one `scale` times larger, its memory sizes divided by `scale`
    /// (default 1): the engine's own absolute constants are the full-size host's divided by it
    /// ([`MemorySpec::params`])
    #[serde(default = "default_scale")]
    pub scale: u32,
    /// sharing scan rate per VM, pages per second (default: [`MemParams`]'s)
    #[serde(default)]
    pub share_scan_pages_per_s: Option<u32>,
    /// sharing scan rate over all VMs, pages per second (default: none)
    #[serde(default)]
    pub share_scan_host_pages_per_s: Option<u32>,
    /// latency of a swap-in on the stand-in device (only where the scenario has no storage)
    #[serde(default = "default_swap_ns")]
    pub standin_read_ns: Time,
    /// latency of a clustered swap-out on the stand-in device
    #[serde(default = "default_swap_ns")]
    pub standin_write_ns: Time,
    /// one entry per VM, in the order of `SimSpec::vms`
    pub vms: Vec<VmMemorySpec>,
    /// admission control's swap space: per datastore with a capacity, the bytes its virtual
    /// disks leave for swap files; a VM powers on only if its swap file (configured memory minus
    /// reservation, research/memory.md C.22) fits beside those of the VMs already on. A datastore
    /// not listed has no limit.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub swap_space_bytes: std::collections::BTreeMap<String, u64>,
}

/// One VM's memory settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmMemorySpec {
    /// reservation, bytes
    #[serde(default)]
    pub reservation_bytes: u64,
    /// limit, bytes (`None`: the configured size)
    #[serde(default)]
    pub limit_bytes: Option<u64>,
    /// memory shares (vSphere normal: 10 per MB of configured memory)
    pub shares: f64,
    /// overhead memory, bytes (default 32 MB [S1 §6.1])
    #[serde(default = "default_overhead")]
    pub overhead_bytes: u64,
    /// whether the guest runs a balloon driver
    #[serde(default = "default_true")]
    pub balloon_driver: bool,
    /// content model
    #[serde(default)]
    pub content: ContentSpecJson,
    /// raw memory image (a flat file of guest-physical memory); replaces the content model
    #[serde(default)]
    pub image: Option<String>,
    /// how the workload touches memory
    #[serde(default)]
    pub touch: TouchSpec,
    /// datastore of the VM's swap file (`None`: the stand-in device, only without storage)
    #[serde(default)]
    pub swap_datastore: Option<String>,
    /// the guest OS model ([`crate::mem::guest`]); `None`: the workload touches guest pages
    /// directly and the balloon takes random pages
    #[serde(default)]
    pub guest_os: Option<GuestParams>,
    /// with storage and a guest OS model, the VM disk the guest swaps to (its own virtual disk)
    #[serde(default)]
    pub guest_swap_disk: Option<String>,
    /// an application whose operations touch memory and read files ([`crate::mem::app`]);
    /// needs `guest_os`
    #[serde(default)]
    pub app: Option<AppSpec>,
}

impl VmMemorySpec {
    /// With a guest OS model, the anonymous region's pages: the working set, or all the kernel
    /// leaves when none is given.
    pub fn anon_pages(&self, vm_bytes: u64) -> u32 {
        let pages = pages_of(vm_bytes) as u32;
        match (self.touch.working_set_bytes, &self.guest_os) {
            (Some(ws), _) => pages_of(ws) as u32,
            (None, Some(g)) => pages - g.kernel_pages(pages).min(pages),
            (None, None) => pages,
        }
    }
}

/// [`ContentSpec`] as the spec spells it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContentSpecJson {
    /// guest OS id (VMs with the same id share OS pages)
    #[serde(default)]
    pub os: u32,
    /// fraction of pages holding the OS image
    #[serde(default)]
    pub os_fraction: f64,
    /// application id
    #[serde(default)]
    pub app: u32,
    /// fraction of pages holding application pages
    #[serde(default)]
    pub app_fraction: f64,
    /// fraction of the rest that is zero
    #[serde(default)]
    pub zero_fraction: f64,
    /// fraction of pages holding second copies of OS-image pages
    #[serde(default)]
    pub os_copy_fraction: f64,
}

/// Where a workload's touches land.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TouchPattern {
    /// uniformly at random over the working set
    #[default]
    Random,
    /// round-robin through the working set (the papers' memory-stress reader)
    Sequential,
}

/// How a VM's running vCPUs touch guest memory: every burst of CPU work touches
/// `pages_per_cpu_s` pages per second of work, in its working set.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TouchSpec {
    /// working set, bytes (`None`: all of the configured memory)
    #[serde(default)]
    pub working_set_bytes: Option<u64>,
    /// first page of the working set, bytes from the start of guest memory
    #[serde(default)]
    pub working_set_offset_bytes: u64,
    /// pages touched per second of CPU work. Default 10,000: chosen so a 1 GB working set is
    /// two-thirds touched in one 30 s sampling period by one busy vCPU
    #[serde(default = "default_touch_rate")]
    pub pages_per_cpu_s: f64,
    /// fraction of touches that write (a write leaves new private content)
    #[serde(default)]
    pub write_fraction: f64,
    /// where touches land
    #[serde(default)]
    pub pattern: TouchPattern,
    /// a hot block, bytes from the start of the working set: after `hot_block_after_passes`
    /// round-robin passes over the working set the touches go round-robin over this block
    /// only (the 2013 paper's experiment b: write 15 GB, then read a fixed 1.875 GB block
    /// [S2 §4.1]); sequential pattern only
    #[serde(default)]
    pub hot_block_bytes: Option<u64>,
    /// passes over the whole working set before the hot block (default 1)
    #[serde(default = "default_passes")]
    pub hot_block_after_passes: u32,
    /// working-set changes over time: from each phase's start on, the working set is that
    /// phase's size (from the same offset). A toucher that varies how much memory it touches,
    /// as in the active-memory sampling experiment [S1 §5.3, Fig. 6]
    #[serde(default)]
    pub phases: Vec<TouchPhase>,
}

/// One working-set phase of a touch profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TouchPhase {
    /// start, ns from the start of the run
    pub at_ns: Time,
    /// working set from then on, bytes
    pub working_set_bytes: u64,
}

fn default_passes() -> u32 {
    1
}

impl Default for TouchSpec {
    fn default() -> Self {
        TouchSpec {
            working_set_bytes: None,
            working_set_offset_bytes: 0,
            pages_per_cpu_s: default_touch_rate(),
            write_fraction: 0.0,
            pattern: TouchPattern::Random,
            hot_block_bytes: None,
            hot_block_after_passes: default_passes(),
            phases: Vec::new(),
        }
    }
}

impl From<&ContentSpecJson> for ContentSpec {
    fn from(c: &ContentSpecJson) -> Self {
        ContentSpec {
            os: c.os,
            os_fraction: c.os_fraction,
            app: c.app,
            app_fraction: c.app_fraction,
            zero_fraction: c.zero_fraction,
            os_copy_fraction: c.os_copy_fraction,
        }
    }
}

/// Bytes to pages, rounding down.
pub fn pages_of(bytes: u64) -> u64 {
    bytes / PAGE_BYTES as u64
}

impl MemorySpec {
    /// The engine parameters for a host of `host_pages` pages.
    ///
    /// With `scale` k > 1 the host stands for one of `k * host_pages` pages whose every memory
    /// size the scenario has divided by k (a scaled-down reproduction): the preset's thresholds
    /// are the fractions of the full-size host (minFree's sliding scale is not proportional to
    /// host memory), the default ESX overhead is divided by k, every rate in pages per second
    /// (sharing scans, balloon inflation, swap-out) is divided by k, rounded to the nearest page
    /// and at least 1, and the CPU charged per page scanned or compressed is multiplied by k, so
    /// that the time a technique takes to move a given fraction of memory, and the CPU it costs
    /// per second, are the full-size host's ([`MemParams::scaled`]). Sizes and rates the scenario
    /// sets explicitly are taken as given, at scale.
    pub fn params(&self, host_pages: u64) -> VmtwinResult<MemParams> {
        let preset = match self.preset {
            PresetSpec::Esx2002 => Preset::Esx2002,
            PresetSpec::Esx2013 => Preset::Esx2013,
        };
        if self.scale == 0 {
            invalid!("memory.scale", self.scale, "an integer >= 1 (1: no scaling)");
        }
        let mut p = MemParams::for_preset(preset, host_pages.saturating_mul(u64::from(self.scale))).scaled(self.scale);
        p.idle_tax = self.idle_tax;
        if let Some(b) = self.host_overhead_bytes {
            p.host_overhead_pages = pages_of(b);
        }
        if let Some(r) = self.share_scan_pages_per_s {
            p.share_scan_pages_per_s = r;
        }
        p.share_scan_host_pages_per_s = self.share_scan_host_pages_per_s;
        p.validate()?;
        Ok(p)
    }

    /// Check what the engine can check alone (the scenario layer checks the rest first).
    pub fn validate(&self, vm_bytes: &[u64]) -> VmtwinResult<()> {
        if self.vms.len() != vm_bytes.len() {
            invalid!("memory.vms", format!("{} entries", self.vms.len()), format!("one per VM ({})", vm_bytes.len()));
        }
        for (i, (v, &bytes)) in self.vms.iter().zip(vm_bytes).enumerate() {
            let path = format!("vms[{i}]");
            if pages_of(bytes) == 0 || pages_of(bytes) > u64::from(u32::MAX) {
                invalid!(format!("{path}.memory"), format!("{bytes} bytes"), "at least one 4 KiB page and below 16 TiB");
            }
            if v.reservation_bytes > bytes {
                invalid!(format!("{path}.memory_allocation.reservation"), format!("{} bytes", v.reservation_bytes), format!("at most the configured memory, {bytes} bytes"));
            }
            if let Some(l) = v.limit_bytes {
                if l < v.reservation_bytes {
                    invalid!(format!("{path}.memory_allocation.limit"), format!("{l} bytes"), format!("at least the reservation, {} bytes", v.reservation_bytes));
                }
            }
            if !(v.shares > 0.0 && v.shares.is_finite()) {
                invalid!(format!("{path}.memory_allocation.shares"), v.shares, "a number > 0");
            }
            let t = &v.touch;
            if !(t.pages_per_cpu_s >= 0.0 && t.pages_per_cpu_s.is_finite()) {
                invalid!(format!("{path}.guest_memory.touch_rate"), t.pages_per_cpu_s, "pages per CPU-second >= 0");
            }
            if !(0.0..=1.0).contains(&t.write_fraction) {
                invalid!(format!("{path}.guest_memory.write_fraction"), t.write_fraction, "a fraction in [0, 1]");
            }
            let ws = t.working_set_bytes.unwrap_or(bytes);
            if ws == 0 || t.working_set_offset_bytes.saturating_add(ws) > bytes {
                invalid!(
                    format!("{path}.guest_memory.working_set"),
                    format!("{ws} bytes at offset {}", t.working_set_offset_bytes),
                    format!("a non-empty range inside the configured memory, {bytes} bytes")
                );
            }
            if let Some(hb) = t.hot_block_bytes {
                if t.pattern != TouchPattern::Sequential {
                    invalid!(format!("{path}.guest_memory.hot_block"), format!("{hb} bytes"), "a hot block with pattern: sequential only");
                }
                if pages_of(hb) == 0 || hb > ws {
                    invalid!(format!("{path}.guest_memory.hot_block"), format!("{hb} bytes"), format!("at least one page and at most the working set, {ws} bytes"));
                }
            }
            let mut last = None;
            for (k, ph) in t.phases.iter().enumerate() {
                let at = format!("{path}.guest_memory.phases[{k}]");
                if last.is_some_and(|l| ph.at_ns <= l) {
                    invalid!(format!("{at}.at"), format!("{} ns", ph.at_ns), "a start later than the previous phase's");
                }
                last = Some(ph.at_ns);
                if pages_of(ph.working_set_bytes) == 0 || t.working_set_offset_bytes.saturating_add(ph.working_set_bytes) > bytes {
                    invalid!(format!("{at}.working_set"), format!("{} bytes", ph.working_set_bytes), format!("at least one page, inside the configured memory ({bytes} bytes) from the working set's offset"));
                }
            }
            if !t.phases.is_empty() && (v.guest_os.is_some() || t.hot_block_bytes.is_some()) {
                invalid!(format!("{path}.guest_memory.phases"), format!("{} phases", t.phases.len()), "phases without guest_os and without hot_block");
            }
            ContentSpec::from(&v.content).validate(&format!("{path}.guest_memory.content"))?;
            if let Some(g) = &v.guest_os {
                g.validate(&format!("{path}.guest_memory.guest_os"), pages_of(bytes) as u32, v.anon_pages(bytes))?;
            }
            if let Some(a) = &v.app {
                a.validate(&format!("{path}.guest_memory.app"), v.guest_os.is_some())?;
            }
        }
        Ok(())
    }
}

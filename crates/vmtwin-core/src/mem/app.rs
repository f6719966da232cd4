//! Application workloads that turn memory behaviour into their own metric: an OLTP database
//! (operations per minute, as DVDStore2 reports), interactive desktops (95th-percentile
//! operation latency, as the 2013 paper's VDI scripts report) and a file server (MB/s, as
//! dbench reports) [S1 Fig. 2, S2 §4.2 Figs. 6-7].
//!
//! **One mechanism for the three.** An application issues *operations*. An operation is one
//! burst of its VM's closed-loop workload (a fixed `cpu_bound` burst: the CPU the operation
//! needs), and before that CPU work it makes `touches_per_op` touches of the guest's anonymous
//! memory (uniform over the working set, through the guest OS model) and `file_reads_per_op`
//! reads of 4 KiB file pages (uniform over a `file_set_bytes` file set, through the guest's page
//! cache). What a touch or a read costs is what the memory subsystem already models:
//!
//! - a resident page: nothing;
//! - an in-memory fault (first touch, balloon pop, decompression, copy-on-write): a stall added
//!   to the operation's CPU work;
//! - a page ESX swapped: a synchronous swap-in, during which the vCPU waits (%SWPWT);
//! - an anonymous page the guest swapped (after the balloon pressed it): a guest swap-in from the
//!   VM's own disk (`mem_guest` %SWPWT);
//! - a file page not in the page cache: a read from the VM's disk into a page the guest takes
//!   (free, else the oldest cache page, else a cold anonymous page it swaps out).
//!
//! An application starts warm: at power-on its whole working set is mapped with its data (a
//! database's buffer pool after warm-up, desktops after login), so a run measures the steady
//! state rather than the first touches. A page an operation fills for the first time gets its
//! data (a buffer pool page read from the database), so the application's memory is private,
//! not the zeroed page the guest handed out (which page sharing would collapse).
//!
//! The operation completes when its burst does; its latency runs from the moment it was issued
//! (its touches start) to then, so it holds the waits above and any time the vCPU spent READY.
//! With no memory pressure and one vCPU per pCPU, a closed loop completes one operation per
//! `cpu_per_op + think` of each vCPU; each swap-in adds its wait to the operation it hit.
//!
//! The three kinds differ only in their metric's name and in the constants a scenario gives
//! them (`python/vmtwin/scenario/memory.py` documents each default and its source).
//!
//! # Tunables
//! [`AppSpec`]: `kind`, `touches_per_op`, `file_set_bytes`, `file_reads_per_op`. The CPU per
//! operation and the think time are the VM's workload's `burst` and duty.
//!
//! # Counters
//! The `mem_app` table, one row per VM with an application per sample: OPS (operations completed
//! in the interval), OPM (per minute), MB/s (file bytes the completed operations read, cache
//! hits included, as dbench counts them), LAT_MS (mean latency), P95_MS (95th-percentile
//! latency, nearest rank, over the interval's operations), HIT% (page-cache hit ratio of the
//! interval's file reads).
//!
//! # Known gaps
//! - One operation class per application (DVDStore's browse/purchase mix, dbench's
//!   read/write/metadata mix and VDI's action types are folded into one).
//! - Touches are uniform over the working set (no hot rows or hot files).

use crate::metrics::{Table, Value};
use crate::sim::{Rng, Time, NS_PER_S};
use crate::{invalid, VmtwinResult};
use serde::{Deserialize, Serialize};

/// What the application's metric is called (the mechanism is the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppKind {
    /// DVDStore-like OLTP: operations per minute
    Oltp,
    /// VDI-like interactive desktop: 95th-percentile operation latency
    Vdi,
    /// dbench-like file server: MB/s
    FileServer,
}

/// One VM's application (see the module docs).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    /// the metric it is read by
    pub kind: AppKind,
    /// touches of anonymous memory per operation
    pub touches_per_op: u32,
    /// size of the file set the operations read, bytes (0: none)
    #[serde(default)]
    pub file_set_bytes: u64,
    /// 4 KiB file pages read per operation
    #[serde(default)]
    pub file_reads_per_op: u32,
}

impl AppSpec {
    /// File set, pages.
    pub fn file_pages(&self) -> u32 {
        (self.file_set_bytes / super::PAGE_BYTES as u64).min(u64::from(u32::MAX)) as u32
    }

    /// Check the constants; `path` names the spec field.
    pub fn validate(&self, path: &str, has_guest: bool) -> VmtwinResult<()> {
        if !has_guest {
            invalid!(format!("{path}"), "set", "an application with guest_os set (its touches and file reads go through the guest OS model)");
        }
        if self.file_reads_per_op > 0 && self.file_pages() == 0 {
            invalid!(format!("{path}.file_set"), format!("{} bytes", self.file_set_bytes), "at least one 4 KiB page when file_reads_per_op > 0");
        }
        Ok(())
    }

    /// Touches plus file reads of one operation.
    pub fn accesses_per_op(&self) -> u64 {
        u64::from(self.touches_per_op) + u64::from(self.file_reads_per_op)
    }
}

/// 4 KiB pages per MB (MB/s is esxtop's and dbench's MB of 2^20 bytes).
const PAGES_PER_MB: f64 = 256.0;

/// A VM's operations in the current sample interval.
#[derive(Debug, Clone, Default)]
struct VmOps {
    latencies: Vec<Time>,
    file_reads: u64,
    file_hits: u64,
}

/// The applications of one host's VMs and their `mem_app` table.
#[derive(Debug, Clone)]
pub struct Apps {
    /// per VM (engine index), its application
    spec: Vec<Option<AppSpec>>,
    ops: Vec<VmOps>,
    /// per vCPU, when its operation in progress was issued
    started: Vec<Option<Time>>,
    /// per vCPU, file reads its operation in progress still has to make
    file_left: Vec<u32>,
    table: Table,
}

fn schema() -> Table {
    let f = Value::F64(0.0);
    Table::with_schema(&[
        ("time_s", f),
        ("vm_id", Value::U32(0)),
        ("OPS", f),
        ("OPM", f),
        ("MB/s", f),
        ("LAT_MS", f),
        ("P95_MS", f),
        ("HIT%", f),
    ])
}

/// The nearest-rank `q` quantile (0 < q <= 1) of `xs`, sorted in place; 0 for none.
pub fn nearest_rank(xs: &mut [Time], q: f64) -> Time {
    if xs.is_empty() {
        return 0;
    }
    xs.sort_unstable();
    let rank = ((q * xs.len() as f64).ceil() as usize).clamp(1, xs.len());
    xs[rank - 1]
}

impl Apps {
    /// `spec` per VM, `vcpus` vCPUs on the host; `None` when no VM runs an application.
    pub fn new(spec: Vec<Option<AppSpec>>, vcpus: usize) -> Option<Self> {
        if spec.iter().all(Option::is_none) {
            return None;
        }
        let n = spec.len();
        Some(Apps { spec, ops: vec![VmOps::default(); n], started: vec![None; vcpus], file_left: vec![0; vcpus], table: schema() })
    }

    /// Whether VM `vm` runs an application.
    pub fn runs(&self, vm: usize) -> bool {
        self.spec[vm].is_some()
    }

    /// vCPU `vc` of VM `vm` is asked for what follows at `now`: a burst it just finished ends
    /// its operation; a new burst (`work`) issues the next. Returns the accesses the new
    /// operation makes before its CPU work, or `None` when the VM has no application.
    pub fn next_op(&mut self, vc: usize, vm: usize, after_burst: bool, work: bool, now: Time) -> Option<u64> {
        let app = self.spec[vm].as_ref()?;
        if after_burst {
            if let Some(t0) = self.started[vc].take() {
                self.ops[vm].latencies.push(now - t0);
            }
        }
        if !work {
            return Some(0);
        }
        self.started[vc] = Some(now);
        self.file_left[vc] = app.file_reads_per_op;
        Some(app.accesses_per_op())
    }

    /// The next access of vCPU `vc` (VM `vm`) is a file read: the file page to read, drawn
    /// uniformly from `rng`; `None` when its operation's file reads are done (a touch follows).
    pub fn take_file_read(&mut self, vc: usize, vm: usize, rng: &mut Rng) -> Option<u32> {
        if self.file_left[vc] == 0 {
            return None;
        }
        self.file_left[vc] -= 1;
        let pages = self.spec[vm].as_ref().expect("file reads come from an application").file_pages();
        Some(((rng.uniform() * f64::from(pages)) as u32).min(pages - 1))
    }

    /// A file read of vCPU `vc` (VM `vm`) was served (`hit`: from the page cache) or is to be
    /// made again (`retry`: the guest had no page to give).
    pub fn file_read_done(&mut self, vc: usize, vm: usize, hit: bool, retry: bool) {
        if retry {
            self.file_left[vc] += 1;
            return;
        }
        self.ops[vm].file_reads += 1;
        self.ops[vm].file_hits += u64::from(hit);
    }

    /// Append one row per powered-on VM (`on[vm]`) with an application for the interval of
    /// `interval_ns` ending at `t_s` seconds, and start the next interval.
    pub fn sample(&mut self, t_s: f64, interval_ns: Time, on: &[Option<u32>]) {
        let secs = interval_ns as f64 / NS_PER_S as f64;
        for (vm, app) in self.spec.iter().enumerate() {
            let Some(app) = app else { continue };
            if on[vm].is_none() {
                continue;
            }
            let o = std::mem::take(&mut self.ops[vm]);
            let mut lat = o.latencies;
            let n = lat.len() as f64;
            let mean = if lat.is_empty() { 0.0 } else { lat.iter().map(|&l| l as f64).sum::<f64>() / n };
            let p95 = nearest_rank(&mut lat, 0.95);
            let per_s = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
            self.table.push_row(&[
                ("time_s", Value::F64(t_s)),
                ("vm_id", Value::U32(vm as u32)),
                ("OPS", Value::F64(n)),
                ("OPM", Value::F64(60.0 * per_s(n))),
                ("MB/s", Value::F64(per_s(n * f64::from(app.file_reads_per_op) / PAGES_PER_MB))),
                ("LAT_MS", Value::F64(mean / 1e6)),
                ("P95_MS", Value::F64(p95 as f64 / 1e6)),
                ("HIT%", Value::F64(if o.file_reads > 0 { 100.0 * o.file_hits as f64 / o.file_reads as f64 } else { 0.0 })),
            ]);
        }
    }

    /// The `mem_app` table.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// The `mem_app` rows since the last drain.
    pub fn take_table(&mut self) -> Table {
        self.table.take()
    }
}

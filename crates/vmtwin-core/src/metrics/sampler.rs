//! esxtop counters, per interval.
//!
//! Every `sample_interval_ns` the sampler reads each vCPU's cumulative state times, takes the
//! difference from the previous sample and appends one row per vCPU, per VM and for the host.
//! Percentages follow esxtop:
//!
//! ```text
//!   %RUN   = RUN / interval              %USED = charged / interval
//!   %RDY   = (READY + MLMTD) / interval  %MLMTD = MLMTD / interval
//!   %WAIT  = (WAIT + IDLE) / interval    %IDLE = IDLE / interval    %VMWAIT = WAIT / interval
//! ```
//!
//! so per vCPU `%RUN + %RDY + %WAIT + %CSTP = 100` over intervals the VM was on for. A VM's row
//! sums its vCPUs (a 4-vCPU VM can show 400 %USED), as esxtop's VM group does. A VM powered on
//! during an interval is measured from its power-on; powered-off VMs have no rows. The `pcpu`
//! table has one row per pCPU (per hardware thread with hyperthreading): the share of the
//! interval it ran vCPUs (esxtop's per-PCPU `PCPU UTIL(%)`), what it was charged (`PCPU
//! USED(%)`: beside a busy sibling thread only `ht_used_charge` of the time, else all of it) and
//! the share its core had a thread running (`CORE UTIL(%)`; the pCPU's own util without
//! hyperthreading). The host's `capacity_mhz` is cores x MHz, as vCenter shows it: a second
//! thread adds no MHz, and `used_mhz` (charged) stays within it.

use super::prefault::Prefault;
use super::table::{Cells, Column, Table, Value};
use crate::cpu::{CpuSched, VcpuState, NONE, STATES};
use crate::sim::{ns_f, Time, NS_PER_S};

/// Most rows [`Sampler::reserve_samples`] reserves ahead in one table: bounds the memory set
/// aside for a run that stops early (a progress callback, Ctrl-C). Source: sized here, about
/// 180 MB of the `vcpu` table (168 bytes a row); a 20-minute bench-1024vm run without drains
/// writes 0.6 M vCPU rows, the bindings drain every 2^16 rows (`DRAIN_ROWS`). Beyond it the
/// columns grow by doubling, as without it.
pub const RESERVE_ROWS_MAX: usize = 1 << 20;

/// Per-VM facts the sampler reports beside the counters.
#[derive(Debug, Clone, Copy)]
pub struct VmRow {
    /// number of vCPUs
    pub vcpus: u32,
    /// CPU shares
    pub shares: u32,
    /// reservation MHz
    pub reservation_mhz: u64,
    /// limit MHz, if any
    pub limit_mhz: Option<u64>,
    /// latest entitlement MHz
    pub entitlement_mhz: f64,
    /// the workload's true demand over the interval, MHz
    pub demand_mhz: f64,
    /// the scheduler's latest demand estimate, MHz
    pub demand_est_mhz: f64,
    /// power-on time, if powered on
    pub powered_on_at: Option<Time>,
}

/// The three tables being filled, and the previous sample of every counter.
#[derive(Debug, Clone)]
pub struct Sampler {
    /// the tables' reserved room being faulted in (`prefault.rs`); declared first because
    /// fields drop in declaration order, so the thread is joined before the tables' room is
    /// freed
    prefault: Prefault,
    /// host table
    pub host: Table,
    /// VM table
    pub vm: Table,
    /// vCPU table
    pub vcpu: Table,
    /// pCPU table
    pub pcpu: Table,
    /// per pCPU, its busy ns at the previous sample
    prev_busy: Vec<u64>,
    /// per pCPU, its charged ns at the previous sample; per core, its busy ns then
    prev_pused: Vec<u64>,
    prev_core: Vec<u64>,
    /// scratch for one sample: per core, its busy ns over the interval
    core_scratch: Vec<u64>,
    /// per vCPU, its counters at the previous sample
    prev: Vec<Counts>,
    last: Time,
    /// the tables have been drained (`tables_out`): a run in slices, each reserved afresh, so
    /// each reservation asks the prefault thread for the next one's columns (`prefault.rs`)
    drained_in_slices: bool,
    /// the empty columns the prefault thread allocated for the next reservation, every table's
    /// in schema order (host, vm, vcpu, pcpu), or none
    spares: Vec<Column>,
}

/// One vCPU's cumulative counters, as read at a sample.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    time_ns: [u64; STATES],
    used_ns: u64,
    /// migrations, cross-LLC and cross-node moves
    moves: [u64; 3],
}

const RUN: usize = VcpuState::Run as usize;
const READY: usize = VcpuState::Ready as usize;
const MLMTD: usize = VcpuState::Mlmtd as usize;
const WAIT: usize = VcpuState::Wait as usize;
const IDLE: usize = VcpuState::Idle as usize;
const COSTOP: usize = VcpuState::Costop as usize;

/// Percentages of one interval, from state-time deltas.
#[derive(Debug, Clone, Copy, Default)]
struct Pct {
    used: f64,
    run: f64,
    rdy: f64,
    mlmtd: f64,
    wait: f64,
    vmwait: f64,
    idle: f64,
    cstp: f64,
}

impl Pct {
    fn new(d: &[u64; STATES], used: u64, span: f64) -> Self {
        let p = |ns: u64| 100.0 * ns_f(ns) / span;
        Pct {
            used: p(used),
            run: p(d[RUN]),
            rdy: p(d[READY] + d[MLMTD]),
            mlmtd: p(d[MLMTD]),
            wait: p(d[WAIT] + d[IDLE]),
            vmwait: p(d[WAIT]),
            idle: p(d[IDLE]),
            cstp: p(d[COSTOP]),
        }
    }

    #[inline(always)]
    fn cells(&self, c: &mut impl Cells) {
        c.f64("%USED", self.used);
        c.f64("%RUN", self.run);
        c.f64("%RDY", self.rdy);
        c.f64("%MLMTD", self.mlmtd);
        c.f64("%WAIT", self.wait);
        c.f64("%VMWAIT", self.vmwait);
        c.f64("%IDLE", self.idle);
        c.f64("%CSTP", self.cstp);
    }
}

/// One row of the host table.
#[derive(Default)]
struct HostCells {
    time_s: f64,
    pcpus: u32,
    capacity_mhz: f64,
    used_mhz: f64,
    util_pct: f64,
    used_pct: f64,
    ready_vcpus: f64,
    powered_on_vms: u32,
}

// The rows below define each table's schema too (`Sampler::new` writes one into a `Vec`).

fn pcpu_row(c: &mut impl Cells, t: f64, pcpu: u32, util_pct: f64, used_pct: f64, core_util_pct: f64) {
    c.f64("time_s", t);
    c.u32("pcpu", pcpu);
    c.f64("%PCPU_UTIL", util_pct);
    c.f64("%PCPU_USED", used_pct);
    c.f64("%CORE_UTIL", core_util_pct);
}

fn host_row(c: &mut impl Cells, h: &HostCells) {
    c.f64("time_s", h.time_s);
    c.u32("pcpus", h.pcpus);
    c.f64("capacity_mhz", h.capacity_mhz);
    c.f64("used_mhz", h.used_mhz);
    c.f64("%PCPU_UTIL", h.util_pct);
    c.f64("%PCPU_USED", h.used_pct);
    c.f64("ready_vcpus", h.ready_vcpus);
    c.u32("powered_on_vms", h.powered_on_vms);
}

#[inline]
fn vm_row(c: &mut impl Cells, t: f64, vm: u32, r: &VmRow, pct: &Pct, used_mhz: f64) {
    c.f64("time_s", t);
    c.u32("vm_id", vm);
    c.u32("vcpus", r.vcpus);
    pct.cells(c);
    c.f64("used_mhz", used_mhz);
    c.f64("entitlement_mhz", r.entitlement_mhz);
    c.f64("demand_mhz", r.demand_mhz);
    c.f64("demand_est_mhz", r.demand_est_mhz);
    c.u32("shares", r.shares);
    c.f64("reservation_mhz", r.reservation_mhz as f64);
    c.f64("limit_mhz", r.limit_mhz.map_or(f64::NAN, |l| l as f64));
}

#[inline]
#[allow(clippy::too_many_arguments)]
fn vcpu_row(c: &mut impl Cells, t: f64, vm: u32, idx: u32, pct: &Pct, d: &[u64; STATES], used: u64, moves: &[u64; 3], home: u32) {
    c.f64("time_s", t);
    c.u32("vm_id", vm);
    c.u32("vcpu", idx);
    pct.cells(c);
    c.u64("run_ns", d[RUN]);
    c.u64("ready_ns", d[READY]);
    c.u64("wait_ns", d[WAIT]);
    c.u64("idle_ns", d[IDLE]);
    c.u64("mlmtd_ns", d[MLMTD]);
    c.u64("costop_ns", d[COSTOP]);
    c.u64("used_ns", used);
    c.u64("migrations", moves[0]);
    c.u64("llc_migrations", moves[1]);
    c.u64("node_migrations", moves[2]);
    c.f64("home_node", if home == NONE { -1.0 } else { home as f64 });
}

/// Cells of a `vcpu` and a `vm` row (checked against the schemas by `Sampler::new`).
const VCPU_CELLS: usize = 22;
const VM_CELLS: usize = 18;

/// A table whose schema is the cells `row` writes.
fn schema(row: impl FnOnce(&mut Vec<(&'static str, Value)>)) -> Table {
    let mut cells = Vec::new();
    row(&mut cells);
    Table::with_schema(&cells)
}

impl Sampler {
    /// A sampler for `vcpus` vCPUs on `pcpus` pCPUs.
    pub fn new(vcpus: usize, pcpus: usize) -> Self {
        let zero = Pct::new(&[0; STATES], 0, 1.0);
        let r = VmRow { vcpus: 0, shares: 0, reservation_mhz: 0, limit_mhz: None, entitlement_mhz: 0.0, demand_mhz: 0.0, demand_est_mhz: 0.0, powered_on_at: None };
        let s = Sampler {
            host: schema(|c| host_row(c, &HostCells::default())),
            vm: schema(|c| vm_row(c, 0.0, 0, &r, &zero, 0.0)),
            vcpu: schema(|c| vcpu_row(c, 0.0, 0, 0, &zero, &[0; STATES], 0, &[0; 3], NONE)),
            pcpu: schema(|c| pcpu_row(c, 0.0, 0, 0.0, 0.0, 0.0)),
            prev_busy: vec![0; pcpus],
            prev_pused: vec![0; pcpus],
            prev_core: vec![0; pcpus],
            core_scratch: Vec::new(),
            prev: vec![Counts::default(); vcpus],
            last: 0,
            drained_in_slices: false,
            spares: Vec::new(),
            prefault: Prefault::default(),
        };
        assert_eq!((s.vcpu.columns.len(), s.vm.columns.len()), (VCPU_CELLS, VM_CELLS), "the row widths `sample` writes");
        s
    }

    /// Make room for `samples` more samples of `vms` VMs in every table (at most
    /// [`RESERVE_ROWS_MAX`] rows per table), so that their rows are written without the
    /// columns regrowing: a growing column copies every row it holds at each doubling (7 M of
    /// bench-1024vm-1m's 477 M instructions, and twice the memory touched).
    /// The room is then faulted in on another thread (`prefault.rs`).
    pub fn reserve_samples(&mut self, samples: usize, vms: usize) {
        // the room of an earlier reservation may move now
        self.take_spares();
        let rows = |per_sample: usize| samples.saturating_mul(per_sample).min(RESERVE_ROWS_MAX);
        let per_table = [rows(1), rows(vms), rows(self.prev.len()), rows(self.prev_busy.len())];
        // empty tables (every column without room, as a drain leaves them) take the spares
        // allocated ahead, if any; the reservation below then finds room enough (unless this
        // slice is longer). Spares not taken now (a slice resumed before its drain) are kept for
        // the next.
        let empty = [&self.host, &self.vm, &self.vcpu, &self.pcpu].iter().all(|t| t.columns.iter().all(|(_, c)| c.capacity() == 0));
        if empty && !self.spares.is_empty() {
            let mut spares = std::mem::take(&mut self.spares).into_iter();
            for t in [&mut self.host, &mut self.vm, &mut self.vcpu, &mut self.pcpu] {
                t.adopt(&mut spares);
            }
        }
        let mut room = Vec::new();
        for (t, n) in [&mut self.host, &mut self.vm, &mut self.vcpu, &mut self.pcpu].into_iter().zip(per_table) {
            t.reserve(n);
            t.spare_room(&mut room);
        }
        // the next slice's columns, as large as this one's, once the run is drained in slices
        let tables = [&self.host, &self.vm, &self.vcpu, &self.pcpu];
        let ahead: Vec<(&Column, usize)> = if self.drained_in_slices && self.spares.is_empty() {
            tables.into_iter().zip(per_table).flat_map(|(t, n)| t.columns.iter().map(move |(_, c)| (c, n))).collect()
        } else {
            Vec::new()
        };
        // SAFETY: `finish` comes before the sampler moves or frees the room itself: the next
        // reservation (above), a drain (`tables_out`), its drop. A column that outgrows its
        // room meanwhile (beyond `RESERVE_ROWS_MAX` rows) moves, but the prefault changes no
        // byte of memory, so at worst it maps pages now used for something else, or fails
        unsafe { self.prefault.start(room, ahead) };
    }

    /// Wait for the prefault thread; keep the spare columns it allocated, if any.
    fn take_spares(&mut self) {
        let spares = self.prefault.finish();
        if !spares.is_empty() {
            self.spares = spares;
        }
    }

    /// Wait until the reserved room is faulted in; before the tables are moved out.
    pub fn tables_out(&mut self) {
        self.take_spares();
        self.drained_in_slices = true;
    }

    /// Append one interval ending at `now`; brings every vCPU's counters to `now` on the way
    /// (what `CpuSched::account_all` does).
    /// (Never inlined: it runs once per interval, and inlined it bloats the event loop.)
    #[inline(never)]
    pub fn sample(&mut self, now: Time, sched: &mut CpuSched, vms: &[VmRow], core_mhz: u64) {
        let t = now as f64 / NS_PER_S as f64;
        let interval = (now - self.last) as f64;
        let last = self.last;
        // rows stored straight into reserved room (`Table::append`): a cell is a store
        let mut vcpu_rows = self.vcpu.append(sched.vcpus.len());
        let mut vm_rows = self.vm.append(vms.len());
        let (mut run_total, mut used_total, mut ready_total) = (0u64, 0u64, 0u64);
        let mut on = 0;
        // each vCPU's counters are brought to now as it is visited (`CpuSched::account_all`'s
        // work, without a walk of its own over the 256-byte records)
        let vcpus = sched.vcpus_to_account(now);
        assert_eq!(vcpus.len(), self.prev.len(), "a sampler for this scheduler's vCPUs");
        // one pass, VM by VM: `CpuSched` lists each VM's vCPUs together, in VM order, so a
        // VM's row follows its vCPUs' with their sums at hand (no per-VM scratch, no second walk)
        let mut first = 0;
        for (vm, r) in vms.iter().enumerate() {
            let end = first + r.vcpus as usize;
            let span = r.powered_on_at.map_or(0.0, |on_at| ns_f(now - on_at.max(last)));
            let (mut sum, mut sum_used) = ([0u64; STATES], 0u64);
            let mut pct = Pct::default();
            for (idx, (vc, prev)) in vcpus[first..end].iter_mut().zip(&mut self.prev[first..end]).enumerate() {
                assert_eq!(vc.vm as usize, vm, "each VM's vCPUs together, in VM order");
                let (time_ns, used_ns) = vc.accrue_read(now);
                let vc = &*vc;
                let d: [u64; STATES] = std::array::from_fn(|s| time_ns[s] - prev.time_ns[s]);
                let used = used_ns - prev.used_ns;
                let now_moves = [vc.migrations, vc.llc_migrations, vc.node_migrations];
                let moves: [u64; 3] = std::array::from_fn(|i| now_moves[i] - prev.moves[i]);
                *prev = Counts { time_ns, used_ns, moves: now_moves };
                // powered off (no span), or on since `now`: counters taken, no row
                if span <= 0.0 {
                    continue;
                }
                pct = Pct::new(&d, used, span);
                vcpu_rows.fill::<VCPU_CELLS>(|c| vcpu_row(c, t, vc.vm, idx as u32, &pct, &d, used, &moves, vc.home));
                for (acc, x) in sum.iter_mut().zip(d) {
                    *acc += x;
                }
                sum_used += used;
                run_total += d[RUN];
                used_total += used;
                ready_total += d[READY] + d[MLMTD];
            }
            first = end;
            if span <= 0.0 {
                continue;
            }
            on += 1;
            // one vCPU: its deltas are the VM's (summed from zero) over the same span, so its
            // percentages are the VM's, bit for bit, without eight more divisions
            if r.vcpus != 1 {
                pct = Pct::new(&sum, sum_used, span);
            }
            let used_mhz = ns_f(sum_used) / span * core_mhz as f64;
            vm_rows.fill::<VM_CELLS>(|c| vm_row(c, t, vm as u32, r, &pct, used_mhz));
        }
        assert_eq!(first, vcpus.len(), "every vCPU in some VM");
        drop((vcpu_rows, vm_rows));
        let p = sched.pcpu_count() as f64;
        let cap = sched.core_count() as f64 * core_mhz as f64;
        let host = HostCells {
            time_s: t,
            pcpus: sched.pcpu_count() as u32,
            capacity_mhz: cap,
            used_mhz: used_total as f64 / interval * core_mhz as f64,
            util_pct: 100.0 * run_total as f64 / (interval * p),
            used_pct: 100.0 * used_total as f64 / (interval * p),
            ready_vcpus: ready_total as f64 / interval,
            powered_on_vms: on,
        };
        host_row(&mut self.host.row(), &host);
        self.pcpu.reserve(self.prev_busy.len());
        let cores = sched.core_count();
        self.core_scratch.clear();
        for c in 0..cores {
            let busy = sched.core_busy_ns(c as u32, now);
            self.core_scratch.push(busy - self.prev_core[c]);
            self.prev_core[c] = busy;
        }
        for (pc, prev) in self.prev_busy.iter_mut().enumerate() {
            let busy = sched.pcpu_busy_ns(pc as u32, now);
            let used = sched.pcpu_used_ns(pc as u32, now);
            let core = self.core_scratch[sched.core_of(pc as u32) as usize];
            let pct = |ns: u64| 100.0 * ns as f64 / interval;
            pcpu_row(&mut self.pcpu.row(), t, pc as u32, pct(busy - *prev), pct(used - self.prev_pused[pc]), pct(core));
            *prev = busy;
            self.prev_pused[pc] = used;
        }
        self.last = now;
    }
}

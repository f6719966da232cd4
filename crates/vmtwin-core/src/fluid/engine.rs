//! The fluid host: its VMs, the piece-by-piece advance and the sampled tables (see `mod.rs`).

use super::cursor::Cursor;
use super::rows::{f, Cell, Kind, Layout, OutColumn, TableOut};
use super::split::{split, Loop};
use crate::cpu::{check_vm_cpu, CoschedMode, PoolScratch, PoolTree, SchedStats, VcpuState, VmClaim, STATES};
use crate::simulation::check_vm_entry;
use crate::guest::Workload;
use crate::hw::Topology;
use crate::metrics::{Sampler, Table};
use crate::sim::{Time, NS_PER_S};
use crate::spec::{Arrivals, SimSpec, WorkloadSpec};
use crate::{invalid, VmtwinError, VmtwinResult};

const RUN: usize = VcpuState::Run as usize;
const READY: usize = VcpuState::Ready as usize;
const MLMTD: usize = VcpuState::Mlmtd as usize;
const WAIT: usize = VcpuState::Wait as usize;
const IDLE: usize = VcpuState::Idle as usize;
const COSTOP: usize = VcpuState::Costop as usize;

/// A VM's configuration and its fluid state. Its vCPUs are alike, so one vCPU's counters stand
/// for each of them.
#[derive(Debug, Clone)]
struct Vm {
    name: String,
    pool: u32,
    vcpus: u32,
    shares: u32,
    reservation_mhz: u64,
    limit_mhz: Option<u64>,
    powered_on_at: Option<Time>,
    workload: Workload,
    arrivals: Loop,
    /// cumulative ns of one vCPU in each state
    time_ns: [u64; STATES],
    /// the same at the previous sample
    prev_ns: [u64; STATES],
    /// open loop: work of one vCPU that arrived and was not served yet, ns
    backlog_ns: f64,
    entitlement_mhz: f64,
    demand_est_mhz: f64,
    /// where the pieces' demand walk through the trace stands
    piece_cursor: Cursor,
    /// the same for the samples' windows
    sample_cursor: Cursor,
}

/// A host simulated in fluid mode: the event mode's control API and tables, without events.
#[derive(Debug)]
pub struct FluidSim {
    spec: SimSpec,
    core_mhz: f64,
    capacity_mhz: f64,
    pcpus: u32,
    /// vCPUs of all VMs
    vcpus: usize,
    pools: PoolTree,
    vms: Vec<Vm>,
    /// scheduled power-ons not done yet: (time, vm), latest first
    pending: Vec<(Time, u32)>,
    now: Time,
    next_sample: Time,
    last_sample: Time,
    pieces: u64,
    log: Vec<(Time, String)>,
    host: Table,
    vm_table: Table,
    vcpu_table: Table,
    pcpu_table: Table,
    layouts: Layouts,
    /// one sample's rows before they are appended, column by column
    scratch: Scratch,
}

impl FluidSim {
    /// Build a fluid host from a spec and power on the VMs due at time zero (admission
    /// control may refuse the whole scenario there, as in the event mode).
    ///
    /// # Examples
    /// ```
    /// use vmtwin_core::{fluid::FluidSim, spec::SimSpec};
    /// let spec = SimSpec::from_json(r#"{
    ///   "seed": 1, "duration_ns": 4000000000, "sample_interval_ns": 2000000000,
    ///   "host": {"name": "h", "sockets": 1, "numa_nodes_per_socket": 1, "llcs_per_node": 1,
    ///            "cores_per_llc": 1, "threads_per_core": 1, "core_mhz": 2000, "memory_bytes": 0},
    ///   "vms": [
    ///     {"name": "a", "pool": null, "vcpus": 1, "memory_bytes": 0, "shares": 3000,
    ///      "reservation_mhz": 0, "limit_mhz": null,
    ///      "workload": {"kind": "cpu_bound", "duty": 1.0, "burst_ns": 10000000, "burst_dist": "fixed"}},
    ///     {"name": "b", "pool": null, "vcpus": 1, "memory_bytes": 0, "shares": 1000,
    ///      "reservation_mhz": 0, "limit_mhz": null,
    ///      "workload": {"kind": "cpu_bound", "duty": 1.0, "burst_ns": 10000000, "burst_dist": "fixed"}}
    ///   ]}"#).unwrap();
    /// let mut sim = FluidSim::new(spec).unwrap();
    /// sim.run().unwrap();
    /// assert_eq!(sim.vm_counters(0)[5], 3_000_000_000); // used ns: 3/4 of 4 s
    /// assert_eq!(sim.vm_counters(1)[1], 3_000_000_000); // ready ns
    /// ```
    pub fn new(spec: SimSpec) -> VmtwinResult<Self> {
        Self::new_interruptible(spec, &mut || true)
    }

    /// [`FluidSim::new`], asking `keep_going()` every 16 admissions whether to go on.
    pub fn new_interruptible(spec: SimSpec, keep_going: &mut dyn FnMut() -> bool) -> VmtwinResult<Self> {
        let mut sim = Self::build(spec, keep_going)?;
        sim.reserve_rows();
        Ok(sim)
    }

    /// [`FluidSim::new_interruptible`] without room reserved for the sampled rows: a batch
    /// builds all its hosts first and lends each one a thread's row buffers when it runs.
    pub(super) fn build(mut spec: SimSpec, keep_going: &mut dyn FnMut() -> bool) -> VmtwinResult<Self> {
        spec.cpu_sched.validate()?;
        // the VMs, which fluid mode models, are left out of the look: serializing their traces
        // costs a small host more than its run
        let vms = std::mem::take(&mut spec.vms);
        let beyond = beyond_cpu(&spec);
        spec.vms = vms;
        if let Some(section) = beyond {
            invalid!(section, "a section", "no such section in fluid mode: it models the CPU only (use fidelity: event)");
        }
        let mode = spec.cpu_sched.cosched_mode;
        if mode != CoschedMode::Off {
            let name = serde_json::to_value(mode).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
            invalid!("cpu_scheduler.cosched_mode", name, "off in fluid mode (co-scheduling acts on bursts; use fidelity: event)");
        }
        if spec.cpu_sched.cell_size != 0 {
            invalid!("cpu_scheduler.cell_size", spec.cpu_sched.cell_size, "0 in fluid mode (cells confine bursts to pCPUs; use fidelity: event)");
        }
        if spec.sample_interval_ns == 0 {
            invalid!("sample_interval", spec.sample_interval_ns, "a duration > 0");
        }
        let topo = Topology::new(&spec.host)?;
        let pools = PoolTree::from_specs(&spec.pools, topo.capacity_mhz())?;
        let mut vms = Vec::with_capacity(spec.vms.len());
        let mut names = std::collections::HashSet::new();
        for (i, v) in spec.vms.iter().enumerate() {
            let path = format!("vms[{i}]");
            let pool = check_vm_entry(&path, v, &topo, &pools, &mut names)?;
            if let WorkloadSpec::Barrier { .. } = v.workload {
                invalid!(format!("{path}.workload.kind"), "barrier", "idle, cpu_bound or trace in fluid mode (a barrier acts on bursts; use fidelity: event)");
            }
            let arrivals = match v.workload {
                WorkloadSpec::CpuBound { arrivals: Arrivals::Open, .. } => Loop::Open,
                _ => Loop::Closed,
            };
            vms.push(Vm {
                name: v.name.clone(),
                pool,
                vcpus: v.vcpus,
                shares: v.shares,
                reservation_mhz: v.reservation_mhz,
                limit_mhz: v.limit_mhz,
                powered_on_at: None,
                workload: Workload::from_spec(&v.workload, &format!("{path}.workload"))?,
                arrivals,
                time_ns: [0; STATES],
                prev_ns: [0; STATES],
                backlog_ns: 0.0,
                entitlement_mhz: 0.0,
                demand_est_mhz: 0.0,
                piece_cursor: Cursor::default(),
                sample_cursor: Cursor::default(),
            });
        }
        let mut pools = pools;
        for (i, vm) in vms.iter().enumerate() {
            pools.pools[vm.pool as usize].vms.push(i as u32);
        }
        let vcpus: usize = vms.iter().map(|v| v.vcpus as usize).sum();
        let schema = Sampler::new(vcpus, topo.len());
        let mut pending: Vec<(Time, u32)> = spec.vms.iter().enumerate().filter(|(_, v)| v.power_on_ns > 0).map(|(i, v)| (v.power_on_ns, i as u32)).collect();
        pending.sort_unstable_by(|a, b| b.cmp(a));
        let mut sim = FluidSim {
            core_mhz: topo.core_mhz as f64,
            capacity_mhz: topo.capacity_mhz() as f64,
            // the event mode's pCPUs: every thread with hyperthreading, else one per core
            pcpus: (if spec.cpu_sched.hyperthreading { topo.len() } else { topo.cores() }) as u32,
            vcpus,
            pools,
            vms,
            pending,
            now: 0,
            next_sample: spec.sample_interval_ns,
            last_sample: 0,
            pieces: 0,
            log: Vec::new(),
            layouts: Layouts::new(&schema),
            scratch: Scratch::default(),
            host: schema.host,
            vm_table: schema.vm,
            vcpu_table: schema.vcpu,
            pcpu_table: schema.pcpu,
            spec,
        };
        for vm in 0..sim.vms.len() {
            if vm % 16 == 0 && !keep_going() {
                return Err(VmtwinError::Simulation(format!("interrupted while powering on VMs ({vm} of {})", sim.vms.len())));
            }
            if sim.spec.vms[vm].power_on_ns == 0 {
                sim.admit(vm as u32)?;
            }
        }
        Ok(sim)
    }

    /// Reserve the row buffers' room for the run (the whole run when shorter than
    /// [`RESERVED_SAMPLES`], at most [`FLUSH_ROWS`]): one allocation instead of doubling as
    /// rows arrive; nothing when they have it already.
    fn reserve_rows(&mut self) {
        let samples = (self.spec.duration_ns / self.spec.sample_interval_ns).min(RESERVED_SAMPLES) as usize;
        let rows = |per_sample: usize| (samples * per_sample).min(FLUSH_ROWS + per_sample);
        let (vms, vcpus, pcpus) = (self.vms.len(), self.vcpus, self.pcpus as usize);
        let s = &mut self.scratch;
        s.host_rows.reserve(rows(1));
        s.vm_rows.reserve(rows(vms));
        s.vcpu_rows.reserve(rows(vcpus));
        s.pcpu_rows.reserve(rows(pcpus));
    }

    /// The most rows a run to the spec's duration can sample into each table (`host`, `vm`,
    /// `vcpu`, `pcpu`, as [`FluidSim::drain_tables`]), from the spec alone: a sample every
    /// `sample_interval` up to the duration, a `vm` row (and its vCPUs' rows) at every sample
    /// after the VM's power-on. A scheduled power-on that admission control refuses samples
    /// no rows, so the run may write fewer.
    pub(super) fn row_bounds(&self) -> [usize; 4] {
        let interval = self.spec.sample_interval_ns;
        let samples = self.spec.duration_ns / interval;
        let (mut vm, mut vcpu) = (0, 0);
        for v in &self.spec.vms {
            // a VM on at p is in the samples at k x interval > p
            let k = samples.saturating_sub(v.power_on_ns / interval) as usize;
            vm += k;
            vcpu += k * v.vcpus as usize;
        }
        let samples = samples as usize;
        [samples, vm, vcpu, samples * self.pcpus as usize]
    }

    /// The columns of a batch's output for each of this host's tables (their order in
    /// [`FluidSim::drain_tables`]), with the batch's `host` column.
    pub(super) fn out_columns(&self) -> Vec<(&'static str, Vec<OutColumn>)> {
        let l = &self.layouts;
        vec![
            ("host", l.host.out_columns(&self.host)),
            ("vm", l.vm.out_columns(&self.vm_table)),
            ("vcpu", l.vcpu.out_columns(&self.vcpu_table)),
            ("pcpu", l.pcpu.out_columns(&self.pcpu_table)),
        ]
    }

    /// Run to the spec's duration with the sampled rows written into `out` (one [`TableOut`]
    /// per table, in [`FluidSim::out_columns`]' order) instead of this host's tables, using
    /// `rows` (a thread's, reused host after host) as the row buffers.
    pub(super) fn run_into(&mut self, out: &mut [TableOut<'_>; 4], rows: &mut RowBuffers) -> VmtwinResult<()> {
        std::mem::swap(&mut self.scratch, &mut rows.0);
        self.reserve_rows();
        let done = self.run_pieces(self.spec.duration_ns, u64::MAX, &mut |_| true, Some(out));
        self.flush_into(Some(out));
        std::mem::swap(&mut self.scratch, &mut rows.0);
        done.map(|_| ())
    }

    /// The spec this simulation was built from.
    pub fn spec(&self) -> &SimSpec {
        &self.spec
    }

    /// Current simulated time.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Pieces advanced so far (the fluid mode's counterpart of the event count).
    pub fn event_count(&self) -> u64 {
        self.pieces
    }

    /// Scheduler decision counters: all zero, there are no dispatches in fluid mode.
    pub fn sched_stats(&self) -> SchedStats {
        SchedStats::default()
    }

    /// VM names, by VM index.
    pub fn vm_names(&self) -> Vec<String> {
        self.vms.iter().map(|v| v.name.clone()).collect()
    }

    /// Index of a VM by name.
    pub fn vm_index(&self, name: &str) -> VmtwinResult<u32> {
        self.vms
            .iter()
            .position(|v| v.name == name)
            .map(|i| i as u32)
            .ok_or_else(|| VmtwinError::Simulation(format!("no VM named '{name}'")))
    }

    /// Cumulative state times of a VM summed over its vCPUs, up to now:
    /// `[run, ready, mlmtd, wait, idle, used]` ns, as the event mode's `vm_counters`.
    pub fn vm_counters(&self, vm: u32) -> [u64; 6] {
        let v = &self.vms[vm as usize];
        let n = v.vcpus as u64;
        let t = &v.time_ns;
        [t[RUN] * n, t[READY] * n, t[MLMTD] * n, t[WAIT] * n, t[IDLE] * n, t[RUN] * n]
    }

    /// Notable happenings (refused power-ons), with their times.
    pub fn log(&self) -> &[(Time, String)] {
        &self.log
    }

    /// The sampled tables: `host`, `vm`, `vcpu`, `pcpu`.
    pub fn tables(&self) -> Vec<(&'static str, &Table)> {
        vec![("host", &self.host), ("vm", &self.vm_table), ("vcpu", &self.vcpu_table), ("pcpu", &self.pcpu_table)]
    }

    /// Move the rows sampled since the last drain out: `host`, `vm`, `vcpu`, `pcpu`.
    pub fn drain_tables(&mut self) -> Vec<(&'static str, Table)> {
        self.flush();
        vec![
            ("host", self.host.take()),
            ("vm", self.vm_table.take()),
            ("vcpu", self.vcpu_table.take()),
            ("pcpu", self.pcpu_table.take()),
        ]
    }

    /// Power on VM `vm` now; admission control may refuse its reservation.
    pub fn power_on(&mut self, vm: u32) -> VmtwinResult<()> {
        self.admit(vm)
    }

    fn admit(&mut self, vm: u32) -> VmtwinResult<()> {
        let v = &self.vms[vm as usize];
        if v.powered_on_at.is_some() {
            return Err(VmtwinError::Simulation(format!("VM '{}' is already powered on", v.name)));
        }
        self.pools.reserve(v.pool, v.reservation_mhz, &v.name)?;
        self.vms[vm as usize].powered_on_at = Some(self.now);
        Ok(())
    }

    /// Change a VM's shares, reservation or limit (`Some(None)` removes the limit); in force
    /// from now on.
    pub fn set_vm_cpu(&mut self, vm: u32, shares: Option<u32>, reservation_mhz: Option<u64>, limit_mhz: Option<Option<u64>>) -> VmtwinResult<()> {
        let v = &self.vms[vm as usize];
        let shares = shares.unwrap_or(v.shares);
        let reservation = reservation_mhz.unwrap_or(v.reservation_mhz);
        let limit = limit_mhz.unwrap_or(v.limit_mhz);
        check_vm_cpu(&v.name, v.vcpus, self.core_mhz as u64, shares, reservation, limit)?;
        if v.powered_on_at.is_some() && reservation != v.reservation_mhz {
            let (pool, old, name) = (v.pool, v.reservation_mhz, v.name.clone());
            self.pools.release(pool, old);
            if let Err(e) = self.pools.reserve(pool, reservation, &name) {
                self.pools.reserve(pool, old, &name).expect("old reservation fits again");
                return Err(e);
            }
        }
        let m = &mut self.vms[vm as usize];
        m.shares = shares;
        m.reservation_mhz = reservation;
        m.limit_mhz = limit;
        Ok(())
    }

    /// Advance to `until` (samples due at `until` included), at most `max_pieces` pieces;
    /// `progress(now)` after every sample, false stops early. True when `until` was reached.
    pub fn run_until_bounded(&mut self, until: Time, max_pieces: u64, progress: &mut dyn FnMut(Time) -> bool) -> VmtwinResult<bool> {
        let done = self.run_pieces(until, max_pieces, progress, None);
        self.flush();
        done
    }

    /// [`FluidSim::run_until_bounded`] with the last sampled rows left in the row buffers; full
    /// buffers are moved into `out` when given, else into the tables.
    fn run_pieces(&mut self, until: Time, max_pieces: u64, progress: &mut dyn FnMut(Time) -> bool, mut out: Option<&mut [TableOut<'_>; 4]>) -> VmtwinResult<bool> {
        if until < self.now {
            return Err(VmtwinError::Simulation(format!("cannot run back to {until} ns: the clock is at {} ns", self.now)));
        }
        let mut left = max_pieces;
        loop {
            let due_on = self.pending.last().map(|&(t, _)| t);
            let next = due_on.unwrap_or(Time::MAX).min(self.next_sample).min(until);
            if next > self.now {
                if left == 0 {
                    return Ok(false);
                }
                left -= 1;
                self.advance(next);
            }
            while let Some(&(t, vm)) = self.pending.last() {
                if t > self.now {
                    break;
                }
                self.pending.pop();
                if let Err(e) = self.admit(vm) {
                    self.log.push((t, e.to_string()));
                }
            }
            if self.next_sample == self.now {
                self.sample();
                let s = &self.scratch;
                if s.vcpu_rows.len() + s.pcpu_rows.len() >= FLUSH_ROWS {
                    self.flush_into(out.as_deref_mut());
                }
                self.next_sample += self.spec.sample_interval_ns;
                if !progress(self.now) {
                    return Ok(false);
                }
            }
            if self.now == until {
                return Ok(true);
            }
        }
    }

    /// Run every piece up to `until`.
    pub fn run_until(&mut self, until: Time, progress: &mut dyn FnMut(Time) -> bool) -> VmtwinResult<()> {
        self.run_until_bounded(until, u64::MAX, progress).map(|_| ())
    }

    /// Run to the spec's duration.
    pub fn run(&mut self) -> VmtwinResult<()> {
        self.run_until(self.spec.duration_ns, &mut |_| true)
    }

    /// One piece, from now to `to`: demands, one water-fill, the states' times.
    fn advance(&mut self, to: Time) {
        let (from, len) = (self.now, to - self.now);
        let span = len as f64;
        let core = self.core_mhz;
        // per VM: the workload's demand of one vCPU over the piece, and with an open loop's
        // backlog (what the water-fill sees), fractions of a pCPU
        let Scratch { offered, demand, claims, pools: room, .. } = &mut self.scratch;
        offered.clear();
        offered.extend(self.vms.iter_mut().map(|v| match v.powered_on_at {
            None => 0.0,
            Some(on) => v.piece_cursor.demand(&v.workload, from - on, to - on),
        }));
        demand.clear();
        demand.extend(self.vms.iter().zip(offered.iter()).map(|(v, &d)| match v.powered_on_at {
            None => 0.0,
            Some(_) => (d + v.backlog_ns / span).min(1.0),
        }));
        claims.clear();
        claims.extend(self.vms.iter().zip(demand.iter()).map(|(v, &d)| {
            let cap = v.vcpus as f64 * core;
            VmClaim::of(v.shares, v.reservation_mhz, v.limit_mhz, v.vcpus, core, d * cap, v.powered_on_at.is_some())
        }));
        let ent = self.pools.entitlements_in(claims, self.capacity_mhz, room);
        for (((v, e), (&d, c)), &w) in self.vms.iter_mut().zip(ent).zip(demand.iter().zip(claims.iter())).zip(offered.iter()) {
            v.entitlement_mhz = e.mhz;
            v.demand_est_mhz = c.demand_mhz;
            if v.powered_on_at.is_none() {
                continue;
            }
            let u = (e.mhz / c.cap_mhz).min(d);
            let short = e.mhz < c.demand_mhz * (1.0 - 1e-12);
            let own_limit = v.limit_mhz.is_some_and(|l| e.mhz >= l as f64 * (1.0 - 1e-9));
            let limited = short && (own_limit || e.share_limit_mhz.is_some());
            if v.arrivals == Loop::Open {
                let offered = w * span + v.backlog_ns;
                v.backlog_ns = (offered - u * span).max(0.0);
            }
            let f = split(d, u, v.arrivals, limited);
            let run = ns(f.run * span).min(len);
            let ready = ns(f.ready * span).min(len - run);
            let mlmtd = ns(f.mlmtd * span).min(len - run - ready);
            v.time_ns[RUN] += run;
            v.time_ns[READY] += ready;
            v.time_ns[MLMTD] += mlmtd;
            v.time_ns[IDLE] += len - run - ready - mlmtd;
        }
        self.now = to;
        self.pieces += 1;
    }

    /// Append one interval's rows, as the event mode's sampler does (`metrics/sampler.rs`):
    /// gathered as cells first, then appended column by column ([`Layout`]).
    fn sample(&mut self) {
        let now = self.now;
        let t = f(now as f64 / NS_PER_S as f64);
        let interval = (now - self.last_sample) as f64;
        let core = self.core_mhz;
        let (mut run_total, mut ready_total, mut on) = (0u64, 0u64, 0u32);
        let Scratch { host_rows, vm_rows, vcpu_rows, pcpu_rows, .. } = &mut self.scratch;
        for (id, v) in self.vms.iter_mut().enumerate() {
            let d: [u64; STATES] = std::array::from_fn(|s| v.time_ns[s] - v.prev_ns[s]);
            v.prev_ns = v.time_ns;
            let Some(on_at) = v.powered_on_at else { continue };
            let span = (now - on_at.max(self.last_sample)) as f64;
            if span <= 0.0 {
                continue;
            }
            on += 1;
            let pct = pct_cells(&d, span);
            let id = id as u64;
            for k in 0..v.vcpus as u64 {
                let mut row = [0; VCPU_N];
                row[..3].copy_from_slice(&[t, id, k]);
                row[3..11].copy_from_slice(&pct);
                row[11..].copy_from_slice(&[d[RUN], d[READY], d[WAIT], d[IDLE], d[MLMTD], d[COSTOP], d[RUN]]);
                vcpu_rows.push(row);
            }
            let n = v.vcpus as u64;
            let sum: [u64; STATES] = std::array::from_fn(|s| d[s] * n);
            run_total += sum[RUN];
            ready_total += sum[READY] + sum[MLMTD];
            let since = self.last_sample.max(on_at);
            let demand_mhz = v.sample_cursor.demand(&v.workload, since - on_at, now - on_at) * v.vcpus as f64 * core;
            let limit = v.limit_mhz.map_or(f64::NAN, |l| l as f64);
            let mut row = [0; VM_N];
            row[..3].copy_from_slice(&[t, id, n]);
            row[3..11].copy_from_slice(&pct_cells(&sum, span));
            row[11..].copy_from_slice(&[
                f(sum[RUN] as f64 / span * core),
                f(v.entitlement_mhz),
                f(demand_mhz),
                f(v.demand_est_mhz),
                v.shares as u64,
                f(v.reservation_mhz as f64),
                f(limit),
            ]);
            vm_rows.push(row);
        }
        let p = self.pcpus as f64;
        let util = f(100.0 * run_total as f64 / (interval * p));
        // capacity is cores x MHz whatever the threads (vCenter's; the allocation splits it)
        let host = [t, self.pcpus as u64, f(self.capacity_mhz), f(run_total as f64 / interval * core), util, util, f(ready_total as f64 / interval), on as u64];
        host_rows.push(host);
        pcpu_rows.extend((0..self.pcpus as u64).map(|pc| [t, pc, util, util, util]));
        self.last_sample = now;
    }

    /// Move the buffered rows into the tables, column by column.
    fn flush(&mut self) {
        self.flush_into(None);
    }

    /// Move the buffered rows into `out` when given, else into the tables, column by column.
    fn flush_into(&mut self, out: Option<&mut [TableOut<'_>; 4]>) {
        let Scratch { host_rows, vm_rows, vcpu_rows, pcpu_rows, .. } = &mut self.scratch;
        if let Some([host, vm, vcpu, pcpu]) = out {
            host.write(host_rows);
            vm.write(vm_rows);
            vcpu.write(vcpu_rows);
            pcpu.write(pcpu_rows);
        } else {
            self.layouts.host.append(&mut self.host, host_rows);
            self.layouts.vm.append(&mut self.vm_table, vm_rows);
            self.layouts.vcpu.append(&mut self.vcpu_table, vcpu_rows);
            self.layouts.pcpu.append(&mut self.pcpu_table, pcpu_rows);
        }
        host_rows.clear();
        vm_rows.clear();
        vcpu_rows.clear();
        pcpu_rows.clear();
    }
}

/// Rows buffered before they are moved into the tables: a host of a few VMs samples a couple
/// of rows at a time, too few to pay for a pass over every column each sample.
const FLUSH_ROWS: usize = 1 << 14;

/// A thread's row buffers, lent to each host a batch runs on it ([`FluidSim::run_into`]), so
/// they are allocated once per thread instead of once per host.
#[derive(Debug, Default)]
pub(super) struct RowBuffers(Scratch);

/// Room reused from piece to piece and sample to sample, and the rows sampled but not yet in
/// the tables (moved there by `flush` when there are [`FLUSH_ROWS`] or a run stops).
#[derive(Debug, Default)]
struct Scratch {
    /// per VM: the workload's demand over the piece (a fraction of a pCPU per vCPU)
    offered: Vec<f64>,
    /// per VM: the same with an open loop's backlog, capped at 1
    demand: Vec<f64>,
    /// per VM: what the water-fill is given
    claims: Vec<VmClaim>,
    /// the water-fill's own buffers
    pools: PoolScratch,
    host_rows: Vec<[Cell; HOST_N]>,
    vm_rows: Vec<[Cell; VM_N]>,
    vcpu_rows: Vec<[Cell; VCPU_N]>,
    pcpu_rows: Vec<[Cell; PCPU_N]>,
}

use Kind::{F, U32, U64};

/// The cells fluid mode writes, per table, in the order `sample` gives them.
const HOST_CELLS: [(&str, Kind); 8] = [
    ("time_s", F), ("pcpus", U32), ("capacity_mhz", F), ("used_mhz", F), ("%PCPU_UTIL", F), ("%PCPU_USED", F), ("ready_vcpus", F), ("powered_on_vms", U32),
];
const PCT_CELLS: [(&str, Kind); 8] = [("%USED", F), ("%RUN", F), ("%RDY", F), ("%MLMTD", F), ("%WAIT", F), ("%VMWAIT", F), ("%IDLE", F), ("%CSTP", F)];
const VM_HEAD: [(&str, Kind); 3] = [("time_s", F), ("vm_id", U32), ("vcpus", U32)];
const VM_FACTS: [(&str, Kind); 7] = [("used_mhz", F), ("entitlement_mhz", F), ("demand_mhz", F), ("demand_est_mhz", F), ("shares", U32), ("reservation_mhz", F), ("limit_mhz", F)];
const VCPU_HEAD: [(&str, Kind); 3] = [("time_s", F), ("vm_id", U32), ("vcpu", U32)];
const VCPU_NS: [(&str, Kind); 7] = [("run_ns", U64), ("ready_ns", U64), ("wait_ns", U64), ("idle_ns", U64), ("mlmtd_ns", U64), ("costop_ns", U64), ("used_ns", U64)];
const PCPU_CELLS: [(&str, Kind); 5] = [("time_s", F), ("pcpu", U32), ("%PCPU_UTIL", F), ("%PCPU_USED", F), ("%CORE_UTIL", F)];
const VM_N: usize = VM_HEAD.len() + PCT_CELLS.len() + VM_FACTS.len();
const VCPU_N: usize = VCPU_HEAD.len() + PCT_CELLS.len() + VCPU_NS.len();
const PCPU_N: usize = PCPU_CELLS.len();
const HOST_N: usize = HOST_CELLS.len();

/// The esxtop percentages of state deltas `d` over `span` ns, in `PCT_CELLS` order (the
/// sampler's formulas).
fn pct_cells(d: &[u64; STATES], span: f64) -> [Cell; 8] {
    let p = |ns: u64| f(100.0 * ns as f64 / span);
    [p(d[RUN]), p(d[RUN]), p(d[READY] + d[MLMTD]), p(d[MLMTD]), p(d[WAIT] + d[IDLE]), p(d[WAIT]), p(d[IDLE]), p(d[COSTOP])]
}

/// Samples' worth of rows the row buffers reserve room for when the host is built (the whole
/// run when shorter, at most [`FLUSH_ROWS`]): one allocation instead of doubling as rows arrive.
const RESERVED_SAMPLES: u64 = 1024;

/// The layouts of the four tables.
#[derive(Debug)]
struct Layouts {
    host: Layout,
    vm: Layout,
    vcpu: Layout,
    pcpu: Layout,
}

impl Layouts {
    fn new(schema: &Sampler) -> Self {
        let cat = |parts: &[&[(&'static str, Kind)]]| -> Vec<(&'static str, Kind)> { parts.concat() };
        Layouts {
            host: Layout::new(&schema.host, &HOST_CELLS),
            vm: Layout::new(&schema.vm, &cat(&[&VM_HEAD, &PCT_CELLS, &VM_FACTS])),
            vcpu: Layout::new(&schema.vcpu, &cat(&[&VCPU_HEAD, &PCT_CELLS, &VCPU_NS])),
            pcpu: Layout::new(&schema.pcpu, &PCPU_CELLS),
        }
    }
}

/// The spec's sections fluid mode models; any other present (memory, storage, the
/// execution-speed model, ..) is refused rather than ignored.
const FLUID_SECTIONS: [&str; 8] = ["seed", "duration_ns", "sample_interval_ns", "host", "cpu_sched", "pools", "vms", "fidelity"];

/// The first section of `spec` that is set and that fluid mode does not model.
fn beyond_cpu(spec: &SimSpec) -> Option<String> {
    let value = serde_json::to_value(spec).ok()?;
    value.as_object()?.iter().find(|(k, v)| !v.is_null() && !FLUID_SECTIONS.contains(&k.as_str())).map(|(k, _)| k.clone())
}

/// Non-negative fractional ns rounded to the nearest integer.
fn ns(x: f64) -> Time {
    crate::sim::ns(x.max(0.0))
}

//! The run loop's side of the storage subsystem: building it from the spec's storage section,
//! routing its events, handing its completions to whoever waits for them ([`IoToken`]), vCPUs
//! that wait for synchronous I/O, and sampling esxtop's disk views into four tables.
//!
//! # Synchronous guest I/O
//! A VM named in `storage.vcpu_io` has each vCPU, when a CPU burst ends, issue one request to
//! the VM's disk and block (WAIT, which esxtop reports as %VMWAIT inside %WAIT: the world is
//! blocked in the VMkernel, not halted by the guest) until it completes. Only then does the
//! CPU workload say what comes next (another burst, or its think time as WAIT_IDLE), so the
//! I/O's response time stretches the cycle: a closed loop of compute, I/O, think.
//!
//! # Tables
//! `disk` (one row per VM disk: the guest's requests), `lun` (device commands), `path` and
//! `adapter`, each with esxtop's disk-view columns over the sample interval ([`EsxtopDisk`]).
//! Rows carry indices (`vm_id`, `disk_id`, `lun_id`, `path_id`, `adapter_id`); the Python side
//! adds the names from the spec.
//!
//! `io_log` (only when a disk has `log_requests`): one row per completed request of the logged
//! disks ([`crate::storage::IoRecord`]), moved into the table at each sample tick, in completion
//! order: `time_s` (completion, s), `vm_id`, `disk_id`, `lun_id`, `read` (1 read, 0 write),
//! `bytes`, `issue_ns` (the guest issued it), `accept_ns` (the VMM accepted it), `done_ns`.

use super::Simulation;
use crate::guest::{Next, Workload};
use crate::metrics::{Table, Value};
use crate::sim::{stream_seed, Rng, Time};
use crate::storage::workload::WorkloadSpec;
use crate::storage::{Completion, DiskCounters, EsxtopDisk, Op, PathAction, Storage, StorageEvent};
use crate::wiring::{IoToken, Post};
use crate::{invalid, VmtwinResult};

/// Synchronous I/O settings of one VM's vCPUs.
#[derive(Debug, Clone)]
struct VcpuIo {
    disk: u32,
    block: u32,
    read_pct: f64,
    random_pct: f64,
    span_bytes: u64,
}

/// One vCPU's synchronous-I/O state.
#[derive(Debug, Clone)]
struct VcpuIoState {
    rng: Rng,
    next_seq_bytes: u64,
    waiting: bool,
}

/// What the run loop keeps beside the [`Storage`] itself.
#[derive(Debug)]
pub(super) struct StorageRun {
    disk_vm: Vec<u32>,
    disk_lun: Vec<u32>,
    path_lun: Vec<(u32, u32)>,
    path_adapter: Vec<u32>,
    /// per VM: its vCPUs' synchronous I/O, if any
    vm_io: Vec<Option<VcpuIo>>,
    /// per vCPU (global index), for VMs with synchronous I/O
    vcpu_io: Vec<Option<VcpuIoState>>,
    /// synchronous I/Os issued and completed (conservation)
    vcpu_io_issued: u64,
    vcpu_io_done: u64,
    prev: [Vec<DiskCounters>; 4],
    tables: [Table; 4],
    /// the per-request log of the disks with `log_requests` (none: no disk logs)
    io_log: Option<Table>,
}

/// Names of the four tables, in [`StorageRun::tables`] order.
pub(super) const STORAGE_TABLES: [&str; 4] = ["disk", "lun", "path", "adapter"];
/// Name of the per-request log table.
pub(super) const IO_LOG_TABLE: &str = "io_log";

/// The `io_log` table's schema.
fn io_log_schema() -> [(&'static str, Value); 9] {
    [
        ("time_s", Value::F64(0.0)),
        ("vm_id", Value::U32(0)),
        ("disk_id", Value::U32(0)),
        ("lun_id", Value::U32(0)),
        ("read", Value::U32(0)),
        ("bytes", Value::U32(0)),
        ("issue_ns", Value::U64(0)),
        ("accept_ns", Value::U64(0)),
        ("done_ns", Value::U64(0)),
    ]
}

/// esxtop's disk-view columns, in order (ACTV, QUED, DQLEN as counts; the rest per second or
/// ms per command), then the interval means of ACTV and QUED and ABRTS/s.
fn esxtop_cells(r: &EsxtopDisk) -> [(&'static str, Value); 16] {
    [
        ("CMDS/s", Value::F64(r.cmds_per_s)),
        ("READS/s", Value::F64(r.reads_per_s)),
        ("WRITES/s", Value::F64(r.writes_per_s)),
        ("MBREAD/s", Value::F64(r.mbread_per_s)),
        ("MBWRTN/s", Value::F64(r.mbwrtn_per_s)),
        ("DAVG/cmd", Value::F64(r.davg_ms)),
        ("KAVG/cmd", Value::F64(r.kavg_ms)),
        ("GAVG/cmd", Value::F64(r.gavg_ms)),
        ("QAVG/cmd", Value::F64(r.qavg_ms)),
        ("ACTV", Value::U32(r.actv)),
        ("QUED", Value::U32(r.qued)),
        ("%USD", Value::F64(r.usd_pct)),
        ("DQLEN", Value::U32(r.dqlen)),
        ("ABRTS/s", Value::F64(r.aborts_per_s)),
        ("actv_mean", Value::F64(r.actv_mean)),
        ("qued_mean", Value::F64(r.qued_mean)),
    ]
}

fn row(ids: &[(&'static str, Value)], r: &EsxtopDisk) -> Vec<(&'static str, Value)> {
    let mut out = ids.to_vec();
    out.extend(esxtop_cells(r));
    out
}

const ZERO: EsxtopDisk = EsxtopDisk {
    cmds_per_s: 0.0,
    reads_per_s: 0.0,
    writes_per_s: 0.0,
    mbread_per_s: 0.0,
    mbwrtn_per_s: 0.0,
    davg_ms: 0.0,
    kavg_ms: 0.0,
    gavg_ms: 0.0,
    qavg_ms: 0.0,
    actv: 0,
    qued: 0,
    actv_mean: 0.0,
    qued_mean: 0.0,
    usd_pct: 0.0,
    dqlen: 0,
    aborts_per_s: 0.0,
};

fn id_cols(names: &[&'static str]) -> Vec<(&'static str, Value)> {
    let mut v: Vec<(&'static str, Value)> = vec![("time_s", Value::F64(0.0))];
    v.extend(names.iter().map(|&n| (n, Value::U32(0))));
    v
}

impl Simulation {
    /// Build the storage subsystem from the spec's storage section (if any): the stack, its
    /// generators (starting after their VM's power-on), vCPU I/O, path events.
    pub(super) fn build_storage(&mut self) -> VmtwinResult<()> {
        let Some(section) = self.spec.storage.clone() else { return Ok(()) };
        let vm_names: Vec<&str> = self.vms.iter().map(|v| v.name.as_str()).collect();
        section.validate_links(&vm_names)?;
        let topo = section.topology(self.spec.seed);
        let mut storage = Storage::new(&topo)?;
        let names: Vec<String> = self.vms.iter().map(|v| v.name.clone()).collect();
        let vm_of = |name: &str| names.iter().position(|v| v == name).expect("validated") as u32;
        let disk_vm: Vec<u32> = section.disks.iter().map(|d| vm_of(&d.vm)).collect();
        let disk_idx = |name: &str| section.disks.iter().position(|d| d.disk.name == name).expect("validated") as u32;
        for (i, w) in section.workloads.iter().enumerate() {
            let disk = disk_idx(&w.disk);
            let on = self.spec.vms[disk_vm[disk as usize] as usize].power_on_ns;
            let mut spec = w.workload.clone();
            match &mut spec {
                WorkloadSpec::Iometer(x) => x.start_ns += on,
                WorkloadSpec::Poisson(x) => x.start_ns += on,
                WorkloadSpec::Bursty(x) => x.start_ns += on,
                WorkloadSpec::Batch(x) => x.start_ns += on,
                WorkloadSpec::Trace(x) => x.start_ns += on,
            }
            storage.add_workload(disk, spec).map_err(|e| match e {
                crate::VmtwinError::InvalidScenario { path, value, allowed } => {
                    crate::VmtwinError::InvalidScenario { path: format!("storage.workloads[{i}].{}", path.trim_start_matches("workload.")), value, allowed }
                }
                other => other,
            })?;
        }
        for t in &section.traces {
            let disk = disk_idx(&t.disk);
            let records = crate::storage::workload::read_vscsi_csv(std::path::Path::new(&t.path))?;
            let on = self.spec.vms[disk_vm[disk as usize] as usize].power_on_ns;
            let replay = crate::storage::workload::TraceReplay { records, start_ns: on + t.start_ns, speed: t.speed };
            storage.add_workload(disk, WorkloadSpec::Trace(replay))?;
        }
        let mut vm_io = vec![None; self.vms.len()];
        let mut vcpu_io = vec![None; self.guests.len()];
        for io in &section.vcpu_io {
            let vm = vm_of(&io.vm);
            let disk = disk_idx(&io.disk);
            let span_bytes = section.disks[disk as usize].disk.span_bytes;
            if span_bytes < u64::from(io.block_bytes) {
                invalid!(format!("storage.vcpu_io (vm '{}').block_bytes", io.vm), io.block_bytes, format!("at most the disk's span, {span_bytes} bytes"));
            }
            let w = std::mem::replace(&mut self.vms[vm as usize].workload, Workload::Idle);
            self.vms[vm as usize].workload = Workload::SyncIo(Box::new(w));
            vm_io[vm as usize] = Some(VcpuIo { disk, block: io.block_bytes, read_pct: io.read_pct, random_pct: io.random_pct, span_bytes });
            let v = &self.vms[vm as usize];
            for k in 0..v.vcpus {
                // wrapped, the workload is no longer the closed loop its vCPUs kept a copy of
                self.guests[(v.first_vcpu + k) as usize].closed = None;
                let rng = Rng::new(stream_seed(self.spec.seed, &format!("{}/io", v.name), k));
                vcpu_io[(v.first_vcpu + k) as usize] = Some(VcpuIoState { rng, next_seq_bytes: 0, waiting: false });
            }
        }
        let disk_lun: Vec<u32> = section.disks.iter().map(|d| storage.lun(&d.disk.lun).expect("validated")).collect();
        for (d, _) in section.disks.iter().enumerate().filter(|(_, d)| d.log_requests) {
            storage.log_requests(d as u32);
        }
        let io_log = section.disks.iter().any(|d| d.log_requests).then(|| Table::with_schema(&io_log_schema()));
        let mut path_lun = Vec::new();
        let mut path_adapter = Vec::new();
        for (l, lun) in section.luns.iter().enumerate() {
            for (j, p) in lun.paths.iter().enumerate() {
                path_lun.push((l as u32, j as u32));
                path_adapter.push(section.adapters.iter().position(|a| a.name == p.adapter).expect("validated") as u32);
            }
        }
        let post = &mut Post { queue: &mut self.queue, slab: &mut self.storage_events };
        storage.start(0, post);
        for e in &section.events {
            let l = storage.lun(&e.lun).expect("validated");
            let path = storage.path(l, e.path);
            let ev = match e.action {
                PathAction::Down => StorageEvent::PathDown { path },
                PathAction::Up => StorageEvent::PathUp { path },
            };
            crate::storage::IoScheduler::at(post, e.at_ns, ev);
        }
        for e in &section.psp_events {
            let l = storage.lun(&e.lun).expect("validated");
            storage.schedule_psp_change(e.at_ns, l, e.change.clone(), post);
        }
        let (nd, nl, np, na) = (disk_vm.len(), section.luns.len(), path_lun.len(), section.adapters.len());
        let prev = [
            (0..nd as u32).map(|i| storage.disk_counters(i, 0)).collect(),
            (0..nl as u32).map(|i| storage.lun_counters(i, 0)).collect(),
            (0..np as u32).map(|i| storage.path_counters(i, 0)).collect(),
            (0..na as u32).map(|i| storage.adapter_counters(i, 0)).collect(),
        ];
        let schema = |ids: &[&'static str]| Table::with_schema(&row(&id_cols(ids), &ZERO));
        let tables = [
            schema(&["vm_id", "disk_id", "lun_id"]),
            schema(&["lun_id"]),
            schema(&["path_id", "lun_id", "path", "adapter_id", "up"]),
            schema(&["adapter_id"]),
        ];
        self.storage = Some(storage);
        self.storage_run = Some(Box::new(StorageRun {
            disk_vm,
            disk_lun,
            path_lun,
            path_adapter,
            vm_io,
            vcpu_io,
            vcpu_io_issued: 0,
            vcpu_io_done: 0,
            prev,
            tables,
            io_log,
        }));
        Ok(())
    }

    /// The storage subsystem, if the scenario has one (for reading counters).
    pub fn storage(&self) -> Option<&Storage> {
        self.storage.as_ref()
    }

    /// Synchronous vCPU I/Os issued and completed so far.
    pub fn vcpu_io_counts(&self) -> (u64, u64) {
        self.storage_run.as_ref().map_or((0, 0), |r| (r.vcpu_io_issued, r.vcpu_io_done))
    }

    /// The storage tables (empty when the scenario has no storage).
    pub(super) fn storage_tables(&self) -> Vec<(&'static str, &Table)> {
        match &self.storage_run {
            Some(r) => STORAGE_TABLES.iter().copied().zip(r.tables.iter()).chain(r.io_log.iter().map(|t| (IO_LOG_TABLE, t))).collect(),
            None => Vec::new(),
        }
    }

    /// Move the storage tables' rows out.
    pub(super) fn drain_storage_tables(&mut self) -> Vec<(&'static str, Table)> {
        match &mut self.storage_run {
            Some(r) => STORAGE_TABLES
                .iter()
                .copied()
                .zip(r.tables.iter_mut().map(Table::take))
                .chain(r.io_log.as_mut().map(|t| (IO_LOG_TABLE, t.take())))
                .collect(),
            None => Vec::new(),
        }
    }

    /// Sample the four storage tables at `t` (a sample tick).
    #[inline(never)]
    pub(super) fn sample_storage(&mut self, t: Time) {
        let (Some(s), Some(r)) = (self.storage.as_mut(), self.storage_run.as_mut()) else { return };
        if let Some(log) = r.io_log.as_mut() {
            for rec in s.drain_io_log() {
                let d = rec.disk as usize;
                log.push_row(&[
                    ("time_s", Value::F64(rec.done as f64 / 1e9)),
                    ("vm_id", Value::U32(r.disk_vm[d])),
                    ("disk_id", Value::U32(rec.disk)),
                    ("lun_id", Value::U32(r.disk_lun[d])),
                    ("read", Value::U32(u32::from(rec.op == Op::Read))),
                    ("bytes", Value::U32(rec.bytes)),
                    ("issue_ns", Value::U64(rec.submitted)),
                    ("accept_ns", Value::U64(rec.accepted)),
                    ("done_ns", Value::U64(rec.done)),
                ]);
            }
        }
        let s = &*s;
        let time = Value::F64(t as f64 / 1e9);
        for d in 0..r.disk_vm.len() {
            let now = s.disk_counters(d as u32, t);
            let e = EsxtopDisk::between(&r.prev[0][d], &now);
            r.prev[0][d] = now;
            let ids = [("time_s", time), ("vm_id", Value::U32(r.disk_vm[d])), ("disk_id", Value::U32(d as u32)), ("lun_id", Value::U32(r.disk_lun[d]))];
            r.tables[0].push_row(&row(&ids, &e));
        }
        for l in 0..r.prev[1].len() {
            let now = s.lun_counters(l as u32, t);
            let e = EsxtopDisk::between(&r.prev[1][l], &now);
            r.prev[1][l] = now;
            r.tables[1].push_row(&row(&[("time_s", time), ("lun_id", Value::U32(l as u32))], &e));
        }
        for p in 0..r.path_lun.len() {
            let now = s.path_counters(p as u32, t);
            let e = EsxtopDisk::between(&r.prev[2][p], &now);
            r.prev[2][p] = now;
            let (l, j) = r.path_lun[p];
            let ids = [
                ("time_s", time),
                ("path_id", Value::U32(p as u32)),
                ("lun_id", Value::U32(l)),
                ("path", Value::U32(j)),
                ("adapter_id", Value::U32(r.path_adapter[p])),
                ("up", Value::U32(u32::from(s.path_up(p as u32)))),
            ];
            r.tables[2].push_row(&row(&ids, &e));
        }
        for a in 0..r.prev[3].len() {
            let now = s.adapter_counters(a as u32, t);
            let e = EsxtopDisk::between(&r.prev[3][a], &now);
            r.prev[3][a] = now;
            r.tables[3].push_row(&row(&[("time_s", time), ("adapter_id", Value::U32(a as u32))], &e));
        }
    }

    /// vCPU `v` finished a burst and halted ([`Next::Io`]): it issues its synchronous I/O and
    /// blocks (WAIT) until the I/O completes.
    #[inline(never)]
    pub(super) fn start_vcpu_io(&mut self, v: u32) {
        let t = self.now;
        self.sched.block(v, t);
        let r = self.storage_run.as_mut().expect("a VM with vCPU I/O has the storage run");
        let vm = self.sched.vcpus[v as usize].vm as usize;
        let io = r.vm_io[vm].as_ref().expect("a VM with vCPU I/O");
        let st = r.vcpu_io[v as usize].as_mut().expect("a vCPU with I/O state");
        debug_assert!(!st.waiting, "one synchronous I/O per vCPU at a time");
        st.waiting = true;
        let op = if st.rng.uniform() * 100.0 < io.read_pct { Op::Read } else { Op::Write };
        let blocks = (io.span_bytes / u64::from(io.block)).max(1);
        let off = if st.rng.uniform() * 100.0 < io.random_pct {
            ((st.rng.uniform() * blocks as f64) as u64).min(blocks - 1) * u64::from(io.block)
        } else {
            st.next_seq_bytes % (blocks * u64::from(io.block))
        };
        st.next_seq_bytes = off + u64::from(io.block);
        let (disk, block) = (io.disk, io.block);
        r.vcpu_io_issued += 1;
        let storage = self.storage.as_mut().expect("storage with vCPU I/O");
        storage
            .submit(t, disk, op, off, block, IoToken::Vcpu { vcpu: v }.encode(), &mut Post { queue: &mut self.queue, slab: &mut self.storage_events })
            .expect("a validated disk and a non-empty request");
        self.storage_completions(t);
    }

    /// vCPU `v`'s synchronous I/O completed: its CPU workload goes on.
    fn vcpu_io_done(&mut self, v: u32, t: Time) {
        let r = self.storage_run.as_mut().expect("vCPU I/O needs the storage run");
        let st = r.vcpu_io[v as usize].as_mut().expect("a vCPU with I/O state");
        assert!(st.waiting, "vCPU {v}: an I/O completed that it was not waiting for");
        st.waiting = false;
        r.vcpu_io_done += 1;
        let vm = &self.vms[self.sched.vcpus[v as usize].vm as usize];
        let since_on = t - vm.powered_on_at.unwrap_or(0);
        // it halts for no time when the workload goes on at once, and the wake draws the next
        // burst: the scheduler's wake is called from the run loop's one place (inlined there)
        let next = vm.workload.after_io(since_on, &mut self.guests[v as usize]);
        self.sched.wait_to_idle(v, t);
        match next {
            Next::Work(_) => self.follow(v, Next::Halt(0)),
            halt => self.follow(v, halt),
        }
    }

    /// A storage event came due. Out of line: inlined into the step, subsystem arms cost the
    /// CPU-only hot path 8% (callgrind).
    #[inline(never)]
    pub(super) fn route_storage(&mut self, slot: u32, t: Time) {
        let ev = self.storage_events.take(slot);
        let storage = self.storage.as_mut().expect("storage events come from the storage subsystem");
        storage.handle(t, ev, &mut Post { queue: &mut self.queue, slab: &mut self.storage_events });
        self.storage_completions(t);
    }

    /// Hand every I/O submitted from outside the stack that has completed to its waiter (the
    /// check inlined into every storage event, the hand-over out of line).
    #[inline(always)]
    fn storage_completions(&mut self, t: Time) {
        if self.storage.as_ref().is_some_and(Storage::has_completions) {
            self.hand_over_completions(t);
        }
    }

    #[inline(never)]
    fn hand_over_completions(&mut self, t: Time) {
        let Some(storage) = self.storage.as_mut() else { return };
        for c in storage.take_completions() {
            self.io_done(c, t);
        }
    }

    /// One completed I/O, by who waits for it.
    fn io_done(&mut self, c: Completion, t: Time) {
        match IoToken::decode(c.token) {
            Some(IoToken::Vcpu { vcpu }) => self.vcpu_io_done(vcpu, t),
            Some(IoToken::Swap { vm, batch }) => self.swap_io_done(vm, batch, t),
            None => panic!("storage completion with token {:#x}, which no IoToken encodes", c.token),
        }
    }
}


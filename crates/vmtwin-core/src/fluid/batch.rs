//! Many fluid hosts in one call: a cluster's host specs in, one set of tables out.
//!
//! A cluster run in fluid mode is hundreds of small hosts (the PlanetLab day: 800 two-core
//! hosts, 1,052 VMs, 288 steps each), each a few hundred microseconds of engine work. Run one
//! by one from Python, every host paid for its own engine object, its own drain and its own
//! Arrow conversion, about ten times its simulation. Here the hosts are built, run to their
//! spec's duration and drained in the engine, on `threads` threads that take hosts in turn
//! from a shared counter, and their tables are joined in the hosts' order:
//!
//! - every table gets a `host` column (`u32`, the host's index in the batch) after `time_s`;
//! - `vm_id` numbers the batch's VMs host after host (a host's VM `j` is `j` plus the VMs of
//!   the hosts before it), as the cluster's `vm_id` does.
//!
//! Each host is the same [`FluidSim`] a one-host run uses, so its rows are those of that run;
//! where a host ran and on which thread does not enter any value, so the tables are
//! byte-identical whatever `threads` is. When hosts fail (admission control refusing a
//! reservation, a bad spec), the error of the first failing host in the batch's order is
//! returned, again whatever `threads` is.
//!
//! # Tunables
//! `threads` only (the caller's number of workers).
//!
//! # Counters
//! The tables of [`FluidSim`], plus `host`; per host its pieces, wall time and log
//! ([`HostFacts`]).
//!
//! # Known gaps
//! The hosts run to their ends independently: no management action (migration, DRS) between
//! them during the run.

use super::FluidSim;
use crate::metrics::{Column, Table};
use crate::sim::Time;
use crate::spec::{SimSpec, WorkloadSpec};
use crate::{VmtwinError, VmtwinResult};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Name of the column holding the host's index in the batch.
pub const HOST_INDEX: &str = "host";

/// What a batch records about one host beside its rows.
#[derive(Debug, Clone, PartialEq)]
pub struct HostFacts {
    /// pieces advanced (the fluid mode's event count)
    pub pieces: u64,
    /// wall time of building, running and draining the host, seconds
    pub wall_s: f64,
    /// the host's log (refused power-ons), with times
    pub log: Vec<(Time, String)>,
}

/// The tables of a batch's hosts and the facts of each host, in the hosts' order. The tables
/// are joined on the way out, by [`Batch::into_tables`] or, column by column into a caller's
/// buffer (one copy, the bindings' path), by [`Batch::write_column`].
#[derive(Debug)]
pub struct Batch {
    /// per table: its name and its columns (name, dtype), the `host` column included
    pub schema: Vec<(&'static str, Vec<(&'static str, &'static str)>)>,
    /// per host, in the batch's order
    pub hosts: Vec<HostFacts>,
    /// the spec of the first host with every default in force (as a one-host run's `params`)
    pub first_params: Option<String>,
    /// per host, its tables in `schema`'s order, without `host`
    parts: Vec<Vec<(&'static str, Table)>>,
    /// per host, the VMs of the hosts before it
    vms_before: Vec<u32>,
}

/// One host's outcome: its tables, facts, params (first host only) and number of VMs.
type Outcome = Result<(Vec<(&'static str, Table)>, HostFacts, Option<String>, u32), VmtwinError>;

fn run_one(spec: VmtwinResult<SimSpec>, start: Instant, first: bool) -> Outcome {
    let mut sim = FluidSim::new(spec?)?;
    sim.run()?;
    let tables = sim.drain_tables();
    let facts = HostFacts { pieces: sim.event_count(), wall_s: start.elapsed().as_secs_f64(), log: sim.log().to_vec() };
    Ok((tables, facts, first.then(|| sim.spec().to_json()), sim.spec().vms.len() as u32))
}

/// Build, run and drain every host of `specs` (each to its own duration) on `threads` threads
/// and join their tables. On failure: the index of the first failing host and its error.
///
/// # Examples
/// ```
/// use vmtwin_core::{fluid::run_hosts, spec::SimSpec};
/// let host = |vms: &str| SimSpec::from_json(&format!(r#"{{
///   "seed": 1, "duration_ns": 4000000000, "sample_interval_ns": 2000000000, "fidelity": "fluid",
///   "host": {{"name": "h", "sockets": 1, "numa_nodes_per_socket": 1, "llcs_per_node": 1,
///            "cores_per_llc": 1, "threads_per_core": 1, "core_mhz": 2000, "memory_bytes": 0}},
///   "vms": [{vms}]}}"#)).unwrap();
/// let vm = r#"{"name": "a", "pool": null, "vcpus": 1, "memory_bytes": 0, "shares": 1000,
///   "reservation_mhz": 0, "limit_mhz": null,
///   "workload": {"kind": "cpu_bound", "duty": 0.5, "burst_ns": 10000000, "burst_dist": "fixed"}}"#;
/// let batch = run_hosts(vec![host(vm), host(""), host(vm)], 2).unwrap();
/// assert_eq!(batch.hosts.len(), 3);
/// let tables = batch.into_tables();
/// let (_, vms) = &tables[1];
/// assert_eq!(vms.rows(), 4); // two samples of the two hosts with a VM
/// ```
pub fn run_hosts(specs: Vec<SimSpec>, threads: usize) -> Result<Batch, (usize, VmtwinError)> {
    run_hosts_with(specs, threads, Ok)
}

/// [`run_hosts`] with each host's spec made from an item by `spec_of` on the threads (JSON
/// text parsed there, by the bindings); a host whose spec cannot be made fails as a host.
pub fn run_hosts_with<T: Send>(items: Vec<T>, threads: usize, spec_of: impl Fn(T) -> VmtwinResult<SimSpec> + Sync) -> Result<Batch, (usize, VmtwinError)> {
    let n = items.len();
    let slots: Vec<Mutex<Option<T>>> = items.into_iter().map(|s| Mutex::new(Some(s))).collect();
    let done: Vec<Mutex<Option<Outcome>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= n {
            break;
        }
        let start = Instant::now();
        let item = slots[i].lock().expect("spec slot").take().expect("each host taken once");
        *done[i].lock().expect("result slot") = Some(run_one(spec_of(item), start, i == 0));
    };
    let threads = threads.clamp(1, n.max(1));
    if threads == 1 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(work);
            }
        });
    }
    let mut outcomes = Vec::with_capacity(n);
    let mut vms_before = Vec::with_capacity(n);
    let mut vms = 0u32;
    for (i, slot) in done.into_iter().enumerate() {
        match slot.into_inner().expect("result slot").expect("every host ran") {
            Ok(o) => {
                vms_before.push(vms);
                vms += o.3;
                outcomes.push(o);
            }
            Err(e) => return Err((i, e)),
        }
    }
    let schema = outcomes.first().map_or_else(Vec::new, |(tables, ..)| {
        tables.iter().map(|(name, t)| (*name, with_host_index(t).columns.iter().map(|(c, v)| (*c, v.dtype())).collect())).collect()
    });
    let mut hosts = Vec::with_capacity(n);
    let mut parts = Vec::with_capacity(n);
    let mut first_params = None;
    for (tables, facts, params, _) in outcomes {
        first_params = first_params.or(params);
        assert!(tables.iter().map(|(n, _)| n).eq(schema.iter().map(|(n, _)| n)), "every fluid host drains the same tables");
        hosts.push(facts);
        parts.push(tables);
    }
    Ok(Batch { schema, hosts, first_params, parts, vms_before })
}

/// One VM's trace given apart from its host's spec: the VM's index in the spec, its
/// `segment_ns` and its `utilization` (what the spec's trace workload holds).
pub type VmTrace = (usize, Vec<u64>, Vec<f64>);

/// Put `traces` into `spec`'s trace workloads. A caller with thousands of traces passes them
/// as arrays beside the JSON (empty lists in it): parsing them as JSON numbers, buffered by the
/// workload's tagged enum, cost more than simulating them.
pub fn set_traces(spec: &mut SimSpec, traces: Vec<VmTrace>) -> VmtwinResult<()> {
    for (vm, seg, util) in traces {
        match spec.vms.get_mut(vm).map(|v| &mut v.workload) {
            Some(WorkloadSpec::Trace { segment_ns, utilization, .. }) => {
                *segment_ns = seg;
                *utilization = util;
            }
            _ => return Err(VmtwinError::Simulation(format!("a trace was given for vms[{vm}], which has no trace workload"))),
        }
    }
    Ok(())
}

impl Batch {
    /// Rows of table `table` (an index into `schema`) over all hosts.
    pub fn rows(&self, table: usize) -> usize {
        self.parts.iter().map(|p| p[table].1.rows()).sum()
    }

    /// Write column `column` of table `table` (indices into `schema`), all hosts' rows in
    /// order, as little-endian bytes into `out` (exactly `rows x` the dtype's size).
    pub fn write_column(&self, table: usize, column: usize, out: &mut [u8]) {
        let name = self.schema[table].1[column].0;
        // the host tables lack `host`: their column index is one less after it
        let at_host = self.schema[table].1.iter().position(|(c, _)| *c == HOST_INDEX).expect("host column");
        let mut at = 0;
        for (h, part) in self.parts.iter().enumerate() {
            let t = &part[table].1;
            let rows = t.rows();
            if name == HOST_INDEX {
                for chunk in out[at..at + 4 * rows].chunks_exact_mut(4) {
                    chunk.copy_from_slice(&(h as u32).to_le_bytes());
                }
                at += 4 * rows;
                continue;
            }
            let col = &t.columns[if column > at_host { column - 1 } else { column }].1;
            match col {
                Column::U32(ids) if name == "vm_id" => {
                    for (chunk, id) in out[at..at + 4 * rows].chunks_exact_mut(4).zip(ids) {
                        chunk.copy_from_slice(&(id + self.vms_before[h]).to_le_bytes());
                    }
                    at += 4 * rows;
                }
                _ => {
                    let bytes = col.le_bytes();
                    out[at..at + bytes.len()].copy_from_slice(&bytes);
                    at += bytes.len();
                }
            }
        }
        assert_eq!(at, out.len(), "column {name}: the buffer holds every row");
    }

    /// Bytes of each column of each table (`schema`'s order): rows x the dtype's size.
    pub fn column_bytes(&self) -> Vec<Vec<usize>> {
        self.schema
            .iter()
            .enumerate()
            .map(|(k, (_, cols))| cols.iter().map(|(_, dtype)| self.rows(k) * if *dtype == "u32" { 4 } else { 8 }).collect())
            .collect()
    }

    /// [`Batch::write_column`] for every column, `outs[table][column]` each exactly
    /// [`Batch::column_bytes`] long, the columns shared out over `threads` threads (each column
    /// is written by one thread, so the bytes do not depend on `threads`).
    pub fn write_columns(&self, outs: Vec<Vec<&mut [u8]>>, threads: usize) {
        let jobs: Vec<Mutex<Option<(usize, usize, &mut [u8])>>> = outs
            .into_iter()
            .enumerate()
            .flat_map(|(k, cols)| cols.into_iter().enumerate().map(move |(c, out)| Mutex::new(Some((k, c, out)))))
            .collect();
        let next = AtomicUsize::new(0);
        let work = || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(slot) = jobs.get(i) else { break };
            let (k, c, out) = slot.lock().expect("column slot").take().expect("each column taken once");
            self.write_column(k, c, out);
        };
        let threads = threads.clamp(1, jobs.len().max(1));
        if threads == 1 {
            work();
        } else {
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(work);
                }
            });
        }
    }

    /// The joined tables: every table with the `host` column after `time_s`, `vm_id` across
    /// the batch.
    pub fn into_tables(self) -> Vec<(&'static str, Table)> {
        let mut joined: Vec<(&'static str, Table)> = Vec::new();
        for (h, tables) in self.parts.into_iter().enumerate() {
            if joined.is_empty() {
                joined = tables.iter().map(|(name, t)| (*name, with_host_index(t))).collect();
            }
            for ((_, into), (_, table)) in joined.iter_mut().zip(tables) {
                append(into, table, h as u32, self.vms_before[h]);
            }
        }
        joined
    }
}

/// An empty table with `t`'s schema and the `host` column after `time_s`.
fn with_host_index(t: &Table) -> Table {
    let mut columns: Vec<(&'static str, Column)> = Vec::with_capacity(t.columns.len() + 1);
    for (name, c) in &t.columns {
        columns.push((name, empty_like(c)));
        if *name == "time_s" {
            columns.push((HOST_INDEX, Column::U32(Vec::new())));
        }
    }
    if !columns.iter().any(|(n, _)| *n == HOST_INDEX) {
        columns.insert(0, (HOST_INDEX, Column::U32(Vec::new())));
    }
    Table { columns }
}

fn empty_like(c: &Column) -> Column {
    match c {
        Column::F64(_) => Column::F64(Vec::new()),
        Column::U64(_) => Column::U64(Vec::new()),
        Column::U32(_) => Column::U32(Vec::new()),
    }
}

/// Append host `host`'s rows of `from` to `into` (its schema plus `host`), `vm_id` shifted by
/// `vm_offset`.
fn append(into: &mut Table, from: Table, host: u32, vm_offset: u32) {
    let rows = from.rows();
    let mut from = from.columns.into_iter();
    for (name, col) in &mut into.columns {
        if *name == HOST_INDEX {
            let Column::U32(v) = col else { unreachable!("host is u32") };
            v.resize(v.len() + rows, host);
            continue;
        }
        let (from_name, values) = from.next().expect("same schema");
        assert_eq!(*name, from_name, "every fluid host has the same schema");
        match (col, values) {
            (Column::U32(v), Column::U32(x)) if *name == "vm_id" => v.extend(x.into_iter().map(|id| id + vm_offset)),
            (Column::F64(v), Column::F64(x)) => v.extend(x),
            (Column::U64(v), Column::U64(x)) => v.extend(x),
            (Column::U32(v), Column::U32(x)) => v.extend(x),
            (c, x) => unreachable!("column {name}: {} then {}", c.dtype(), x.dtype()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(cores: u32, vms: &[(f64, u32, &str)]) -> SimSpec {
        let vms: Vec<String> = vms
            .iter()
            .enumerate()
            .map(|(i, (duty, vcpus, arrivals))| {
                format!(
                    r#"{{"name": "v{i}", "pool": null, "vcpus": {vcpus}, "memory_bytes": 0, "shares": 1000, "reservation_mhz": 0,
                    "limit_mhz": null, "power_on_ns": {p},
                    "workload": {{"kind": "cpu_bound", "duty": {duty}, "burst_ns": 10000000, "burst_dist": "fixed", "arrivals": "{arrivals}"}}}}"#,
                    p = i as u64 * 1_000_000_000
                )
            })
            .collect();
        SimSpec::from_json(&format!(
            r#"{{"seed": 1, "duration_ns": 6000000000, "sample_interval_ns": 1000000000, "fidelity": "fluid",
            "host": {{"name": "h", "sockets": 1, "numa_nodes_per_socket": 1, "llcs_per_node": 1, "cores_per_llc": {cores},
                     "threads_per_core": 1, "core_mhz": 2000, "memory_bytes": 0}}, "vms": [{}]}}"#,
            vms.join(",")
        ))
        .unwrap()
    }

    fn hosts() -> Vec<SimSpec> {
        vec![
            host(2, &[(0.9, 2, "open"), (0.5, 1, "closed"), (1.0, 2, "closed")]),
            host(1, &[]),
            host(4, &[(0.3, 4, "closed")]),
            host(1, &[(0.7, 1, "open"), (0.7, 1, "closed")]),
        ]
    }

    #[test]
    fn columns_written_into_a_buffer_are_the_joined_tables() {
        let batch = run_hosts(hosts(), 1).unwrap();
        let schema = batch.schema.clone();
        let written: Vec<Vec<Vec<u8>>> = (0..schema.len())
            .map(|k| {
                (0..schema[k].1.len())
                    .map(|c| {
                        let size = if schema[k].1[c].1 == "u32" { 4 } else { 8 };
                        let mut out = vec![0u8; batch.rows(k) * size];
                        batch.write_column(k, c, &mut out);
                        out
                    })
                    .collect()
            })
            .collect();
        let joined = batch.into_tables();
        for ((k, (name, t)), (sname, cols)) in joined.iter().enumerate().zip(&schema) {
            assert_eq!(name, sname);
            assert_eq!(t.columns[1].0, HOST_INDEX, "host follows time_s");
            for (c, (col, values)) in t.columns.iter().enumerate() {
                assert_eq!(*col, cols[c].0);
                assert_eq!(values.to_le_bytes(), written[k][c], "{name}.{col}");
            }
        }
        // vm_id runs across the hosts: 3 + 0 + 1 + 2 VMs
        let Column::U32(ids) = joined[1].1.column("vm_id").unwrap() else { panic!() };
        let mut seen: Vec<u32> = ids.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen, vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn each_host_is_its_own_run_whatever_the_threads() {
        let one = run_hosts(hosts(), 1).unwrap();
        let three = run_hosts(hosts(), 3).unwrap();
        assert_eq!(one.first_params, three.first_params);
        let (a, b) = (one.into_tables(), three.into_tables());
        for ((n, x), (_, y)) in a.iter().zip(&b) {
            for ((c, u), (_, v)) in x.columns.iter().zip(&y.columns) {
                assert_eq!(u.to_le_bytes(), v.to_le_bytes(), "{n}.{c}");
            }
        }
        // host 3's vm rows are FluidSim's own, vm_id shifted by the 4 VMs before it
        let mut alone = FluidSim::new(hosts().remove(3)).unwrap();
        alone.run().unwrap();
        let own = alone.drain_tables();
        let vm = &a[1].1;
        let Column::U32(host) = vm.column(HOST_INDEX).unwrap() else { panic!() };
        let rows: Vec<usize> = (0..vm.rows()).filter(|&r| host[r] == 3).collect();
        let Column::F64(used) = vm.column("%USED").unwrap() else { panic!() };
        let Column::F64(want) = own[1].1.column("%USED").unwrap() else { panic!() };
        assert_eq!(rows.iter().map(|&r| used[r].to_bits()).collect::<Vec<_>>(), want.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    }

    #[test]
    fn the_first_failing_host_is_reported_whatever_the_threads() {
        let mut specs = hosts();
        specs[2].vms[0].vcpus = 9; // more vCPUs than its 4 pCPUs
        specs[3].vms[0].vcpus = 5;
        for threads in [1, 2, 4] {
            let (at, e) = run_hosts(specs.clone(), threads).unwrap_err();
            assert_eq!(at, 2, "{e}");
            assert!(e.to_string().contains("vcpus"), "{e}");
        }
    }
}

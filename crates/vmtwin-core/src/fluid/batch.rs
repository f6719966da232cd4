//! Many fluid hosts in one call: a cluster's host specs in, one set of tables out.
//!
//! A cluster run in fluid mode is hundreds of small hosts (the PlanetLab day: 800 two-core
//! hosts, 1,052 VMs, 288 steps each), each a few hundred microseconds of engine work. Run one
//! by one from Python, every host paid for its own engine object, its own drain and its own
//! Arrow conversion, about ten times its simulation. Here a batch goes in two steps, each on
//! `threads` threads that take hosts in turn from a shared counter:
//!
//! 1. [`Batch::prepare`] builds every host's [`FluidSim`] from its spec and bounds the rows it
//!    can sample into each table from the spec ([`FluidSim::row_bounds`]: a row per sample,
//!    per VM and vCPU powered on, per pCPU); the caller then allocates the output, one buffer
//!    per column ([`Batch::column_bytes`], the bounds' sum);
//! 2. [`Batch::run_into`] runs every host to its spec's duration, writing its rows straight into
//!    its own slice of each output column (hosts in the batch's order), and closes the gaps a
//!    host leaves when it writes fewer rows than its bound (a power-on refused by admission
//!    control), so each column holds all hosts' rows one after the other.
//!
//! No host keeps tables of its own until the batch is joined: with the PlanetLab day's 125 MB
//! of columns, those tables and the join's copy cost a cold call (fresh memory, a page fault
//! per 4 KB) more than its simulation. In the output:
//!
//! - every table has a `host` column (`u32`, the host's index in the batch) after `time_s`;
//! - `vm_id` numbers the batch's VMs host after host (a host's VM `j` is `j` plus the VMs of
//!   the hosts before it), as the cluster's `vm_id` does.
//!
//! Each host is the same [`FluidSim`] a one-host run uses, writing the values it would append to
//! its tables, so its rows are those of that run (tested against it); where a host ran and on
//! which thread does not enter any value, so the output is byte-identical whatever `threads`
//! is. When hosts fail (admission control refusing a reservation at time zero, a bad spec),
//! the error of the first failing host in the batch's order is returned, again whatever
//! `threads` is.
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

use super::engine::RowBuffers;
use super::rows::{OutColumn, TableOut};
use super::FluidSim;
use crate::metrics::{Column, Table};
use crate::sim::Time;
use crate::spec::{SimSpec, WorkloadSpec};
use crate::{VmtwinError, VmtwinResult};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

pub use super::rows::HOST_INDEX;

/// The tables a fluid host samples, in [`FluidSim::drain_tables`]' order.
const TABLES: usize = 4;

/// What a batch records about one host beside its rows.
#[derive(Debug, Clone, PartialEq)]
pub struct HostFacts {
    /// pieces advanced (the fluid mode's event count)
    pub pieces: u64,
    /// wall time of building and running the host, seconds
    pub wall_s: f64,
    /// the host's log (refused power-ons), with times
    pub log: Vec<(Time, String)>,
}

/// A batch's hosts, built and bounded, ready to run into the caller's columns
/// ([`Batch::prepare`], then [`Batch::run_into`]).
#[derive(Debug)]
pub struct Batch {
    /// per table: its name and its columns (name, dtype), the `host` column included
    pub schema: Vec<(&'static str, Vec<(&'static str, &'static str)>)>,
    /// the spec of the first host with every default in force (as a one-host run's `params`)
    pub first_params: Option<String>,
    /// per table: what fills each column
    columns: Vec<Vec<OutColumn>>,
    /// per host: its engine and the seconds building it took
    sims: Vec<(FluidSim, f64)>,
    /// per host: the most rows it can write into each table
    bounds: Vec<[usize; TABLES]>,
    /// per host, the VMs of the hosts before it
    vms_before: Vec<u32>,
}

/// What running a batch gave beside the columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
    /// per host, in the batch's order
    pub hosts: Vec<HostFacts>,
    /// per table: rows written (the first `rows x` dtype size bytes of each of its columns)
    pub rows: Vec<usize>,
}

/// The joined tables of a batch ([`run_hosts`]), with its hosts' facts.
#[derive(Debug)]
pub struct Joined {
    /// per table: name and the table, with `host` after `time_s` and `vm_id` across the batch
    pub tables: Vec<(&'static str, Table)>,
    /// per host, in the batch's order
    pub hosts: Vec<HostFacts>,
    /// as [`Batch::first_params`]
    pub first_params: Option<String>,
}

/// `f` on each of `items` on `threads` threads (each with its own state from `state`), the
/// threads taking items in turn from a shared counter; the results in the items' order.
fn par_map<T: Send, S, R: Send>(items: Vec<T>, threads: usize, state: impl Fn() -> S + Sync, f: impl Fn(&mut S, T) -> R + Sync) -> Vec<R> {
    let n = items.len();
    let slots: Vec<Mutex<Option<T>>> = items.into_iter().map(|s| Mutex::new(Some(s))).collect();
    let done: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        let mut own = state();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            let item = slots[i].lock().expect("item slot").take().expect("each item taken once");
            let r = f(&mut own, item);
            *done[i].lock().expect("result slot") = Some(r);
        }
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
    done.into_iter().map(|slot| slot.into_inner().expect("result slot").expect("every item done")).collect()
}

/// Build, run and join every host of `specs` (each to its own duration) on `threads` threads,
/// into tables of this process's memory. On failure: the index of the first failing host and
/// its error.
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
/// let joined = run_hosts(vec![host(vm), host(""), host(vm)], 2).unwrap();
/// assert_eq!(joined.hosts.len(), 3);
/// let (_, vms) = &joined.tables[1];
/// assert_eq!(vms.rows(), 4); // two samples of the two hosts with a VM
/// ```
pub fn run_hosts(specs: Vec<SimSpec>, threads: usize) -> Result<Joined, (usize, VmtwinError)> {
    let batch = Batch::prepare(specs, threads, Ok)?;
    let mut bufs: Vec<Vec<Vec<u8>>> = batch.column_bytes().iter().map(|cols| cols.iter().map(|&n| vec![0u8; n]).collect()).collect();
    let schema = batch.schema.clone();
    let first_params = batch.first_params.clone();
    let ran = batch.run_into(bufs.iter_mut().map(|cols| cols.iter_mut().map(|c| c.as_mut_slice()).collect()).collect(), threads)?;
    let tables = schema
        .iter()
        .zip(&bufs)
        .zip(&ran.rows)
        .map(|(((name, cols), bufs), &rows)| {
            let columns = cols.iter().zip(bufs).map(|(&(col, dtype), b)| (col, column_from_le(dtype, &b[..rows * if dtype == "u32" { 4 } else { 8 }]))).collect();
            (*name, Table { columns })
        })
        .collect();
    Ok(Joined { tables, hosts: ran.hosts, first_params })
}

/// A column of `dtype` from its little-endian bytes.
fn column_from_le(dtype: &str, b: &[u8]) -> Column {
    let w8 = || b.chunks_exact(8).map(|c| <[u8; 8]>::try_from(c).expect("8 bytes"));
    match dtype {
        "f64" => Column::F64(w8().map(f64::from_le_bytes).collect()),
        "u64" => Column::U64(w8().map(u64::from_le_bytes).collect()),
        _ => Column::U32(b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).collect()),
    }
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
    /// Build every host of `items` on `threads` threads, each host's spec made from its item by
    /// `spec_of` there (JSON text parsed on the threads, by the bindings); a host whose spec
    /// cannot be made, or that cannot be built, fails as a host. On failure: the index of the
    /// first failing host and its error.
    pub fn prepare<T: Send>(items: Vec<T>, threads: usize, spec_of: impl Fn(T) -> VmtwinResult<SimSpec> + Sync) -> Result<Batch, (usize, VmtwinError)> {
        let built = par_map(items, threads, || (), |_, item| {
            let start = Instant::now();
            let sim = FluidSim::build(spec_of(item)?, &mut || true)?;
            Ok::<_, VmtwinError>((sim, start.elapsed().as_secs_f64()))
        });
        let mut sims = Vec::with_capacity(built.len());
        for (i, b) in built.into_iter().enumerate() {
            sims.push(b.map_err(|e| (i, e))?);
        }
        let out = sims.first().map_or_else(Vec::new, |(sim, _)| sim.out_columns());
        for (sim, _) in &sims {
            let names = |o: &[(&str, Vec<OutColumn>)]| o.iter().map(|(t, cols)| (t.to_string(), cols.iter().map(|c| c.0).collect::<Vec<_>>())).collect::<Vec<_>>();
            assert_eq!(names(&sim.out_columns()), names(&out), "every fluid host has the same tables");
        }
        let schema = out.iter().map(|(name, cols)| (*name, cols.iter().map(|&(c, kind, _)| (c, kind.dtype())).collect())).collect();
        let columns = out.into_iter().map(|(_, cols)| cols).collect();
        let bounds = sims.iter().map(|(sim, _)| sim.row_bounds()).collect();
        let mut vms_before = Vec::with_capacity(sims.len());
        let mut vms = 0u32;
        for (sim, _) in &sims {
            vms_before.push(vms);
            vms += sim.spec().vms.len() as u32;
        }
        let first_params = sims.first().map(|(sim, _)| sim.spec().to_json());
        Ok(Batch { schema, first_params, columns, sims, bounds, vms_before })
    }

    /// Bytes each column of each table (`schema`'s order) needs at most: the hosts' row
    /// bounds x the dtype's size.
    pub fn column_bytes(&self) -> Vec<Vec<usize>> {
        self.columns
            .iter()
            .enumerate()
            .map(|(k, cols)| {
                let rows: usize = self.bounds.iter().map(|b| b[k]).sum();
                cols.iter().map(|c| rows * c.1.size()).collect()
            })
            .collect()
    }

    /// Run every host to its spec's duration on `threads` threads, writing its rows into
    /// `outs[table][column]` (each exactly [`Batch::column_bytes`] long; its contents need
    /// not be initialised), the hosts' rows one after the other in the batch's order. The
    /// first [`Ran::rows`] rows of each column hold them; the bytes after are unspecified.
    /// On failure: the index of the first failing host and its error.
    pub fn run_into(self, mut outs: Vec<Vec<&mut [u8]>>, threads: usize) -> Result<Ran, (usize, VmtwinError)> {
        let Batch { columns, sims, bounds, vms_before, .. } = self;
        let sizes: Vec<Vec<usize>> = columns.iter().enumerate().map(|(k, cols)| cols.iter().map(|c| bounds.iter().map(|b| b[k]).sum::<usize>() * c.1.size()).collect()).collect();
        assert!(outs.iter().map(|c| c.iter().map(|s| s.len()).collect::<Vec<_>>()).eq(sizes.iter().cloned()), "one buffer per column, of column_bytes");
        let ran = {
            // each host's own slice of every column
            let mut rest: Vec<Vec<&mut [u8]>> = outs.iter_mut().map(|cols| cols.iter_mut().map(|c| &mut **c).collect()).collect();
            let mut jobs = Vec::with_capacity(sims.len());
            for (h, (sim, built_s)) in sims.into_iter().enumerate() {
                let tables: [TableOut<'_>; TABLES] = std::array::from_fn(|k| {
                    let cols = rest[k]
                        .iter_mut()
                        .zip(&columns[k])
                        .map(|(r, c)| {
                            let (mine, tail) = std::mem::take(r).split_at_mut(bounds[h][k] * c.1.size());
                            *r = tail;
                            mine
                        })
                        .collect();
                    TableOut::new(cols, &columns[k], h as u32, vms_before[h])
                });
                jobs.push((sim, built_s, tables));
            }
            par_map(jobs, threads, RowBuffers::default, |rows, (mut sim, built_s, mut out)| {
                let start = Instant::now();
                sim.run_into(&mut out, rows)?;
                let facts = HostFacts { pieces: sim.event_count(), wall_s: built_s + start.elapsed().as_secs_f64(), log: sim.log().to_vec() };
                Ok::<_, VmtwinError>((facts, out.map(|t| t.written)))
            })
        };
        let mut hosts = Vec::with_capacity(ran.len());
        let mut written = Vec::with_capacity(ran.len());
        for (i, r) in ran.into_iter().enumerate() {
            let (facts, w) = r.map_err(|e| (i, e))?;
            hosts.push(facts);
            written.push(w);
        }
        // close the gaps of hosts that wrote fewer rows than their bound
        let mut rows = Vec::with_capacity(TABLES);
        for (k, (cols, outs)) in columns.iter().zip(&mut outs).enumerate() {
            rows.push(written.iter().map(|w| w[k]).sum());
            if written.iter().zip(&bounds).all(|(w, b)| w[k] == b[k]) {
                continue;
            }
            for (c, out) in cols.iter().zip(outs.iter_mut()) {
                let size = c.1.size();
                let (mut from, mut to) = (0, 0);
                for (w, b) in written.iter().zip(&bounds) {
                    out.copy_within(from..from + w[k] * size, to);
                    from += b[k] * size;
                    to += w[k] * size;
                }
            }
        }
        Ok(Ran { hosts, rows })
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

    /// Hosts with staggered power-ons (VM i at i s), an empty host, a sample interval that does
    /// not divide the duration, and power-ons refused by admission control (a reservation that
    /// does not fit), which write fewer rows than their host's bound.
    fn hosts() -> Vec<SimSpec> {
        let mut odd = host(2, &[(0.4, 1, "open"), (0.8, 2, "closed")]);
        odd.sample_interval_ns = 1_500_000_000;
        let mut refused = host(2, &[(0.5, 1, "closed"), (0.9, 2, "open"), (0.3, 1, "closed")]);
        refused.vms[0].reservation_mhz = 2000;
        refused.vms[1].reservation_mhz = 3000; // at 1 s: 2000 + 3000 > 4000 MHz, refused
        refused.vms[2].power_on_ns = 9_000_000_000; // after the end: never on
        vec![
            host(2, &[(0.9, 2, "open"), (0.5, 1, "closed"), (1.0, 2, "closed")]),
            refused.clone(),
            host(1, &[]),
            odd,
            host(4, &[(0.3, 4, "closed")]),
            refused,
            host(1, &[(0.7, 1, "open"), (0.7, 1, "closed")]),
        ]
    }

    /// Each host run alone by [`FluidSim`] into its own tables.
    fn alone(spec: SimSpec) -> (Vec<(&'static str, Table)>, HostFacts) {
        let mut sim = FluidSim::new(spec).unwrap();
        sim.run().unwrap();
        let facts = HostFacts { pieces: sim.event_count(), wall_s: 0.0, log: sim.log().to_vec() };
        (sim.drain_tables(), facts)
    }

    #[test]
    fn the_batch_is_each_host_run_alone_with_host_and_vm_ids_added() {
        let joined = run_hosts(hosts(), 1).unwrap();
        let runs: Vec<_> = hosts().into_iter().map(alone).collect();
        assert!(!runs[1].1.log.is_empty(), "the refused power-on is logged");
        for (k, (name, t)) in joined.tables.iter().enumerate() {
            assert_eq!(t.columns[1].0, HOST_INDEX, "{name}: host follows time_s");
            let (mut at, mut vms_before) = (0, 0);
            for (h, ((tables, _), spec)) in runs.iter().zip(hosts()).enumerate() {
                let own = &tables[k].1;
                let rows = own.rows();
                for (col, values) in &t.columns {
                    let got = match values {
                        Column::F64(v) => Column::F64(v[at..at + rows].to_vec()),
                        Column::U64(v) => Column::U64(v[at..at + rows].to_vec()),
                        Column::U32(v) => Column::U32(v[at..at + rows].to_vec()),
                    };
                    let want = match *col {
                        HOST_INDEX => Column::U32(vec![h as u32; rows]),
                        "vm_id" => match own.column(col).unwrap() {
                            Column::U32(ids) => Column::U32(ids.iter().map(|i| i + vms_before).collect()),
                            c => panic!("vm_id is {}", c.dtype()),
                        },
                        _ => own.column(col).unwrap().clone(),
                    };
                    assert_eq!(got.to_le_bytes(), want.to_le_bytes(), "{name}.{col}, host {h}");
                }
                at += rows;
                vms_before += spec.vms.len() as u32;
            }
            assert_eq!(at, t.rows(), "{name}: every host's rows and no more");
        }
        for (got, (_, want)) in joined.hosts.iter().zip(&runs) {
            assert_eq!((got.pieces, &got.log), (want.pieces, &want.log));
        }
    }

    #[test]
    fn row_bounds_hold_every_row_and_are_exact_without_refusals() {
        for (h, spec) in hosts().into_iter().enumerate() {
            let sim = FluidSim::new(spec.clone()).unwrap();
            let bounds = sim.row_bounds();
            let (tables, facts) = alone(spec);
            let rows: Vec<usize> = tables.iter().map(|(_, t)| t.rows()).collect();
            for k in 0..TABLES {
                assert!(rows[k] <= bounds[k], "host {h}, table {k}: {} rows, bound {}", rows[k], bounds[k]);
                if facts.log.is_empty() {
                    assert_eq!(rows[k], bounds[k], "host {h}, table {k}");
                }
            }
        }
    }

    #[test]
    fn each_host_is_its_own_run_whatever_the_threads() {
        let one = run_hosts(hosts(), 1).unwrap();
        for threads in [2, 3, 8] {
            let more = run_hosts(hosts(), threads).unwrap();
            assert_eq!(one.first_params, more.first_params);
            for ((n, x), (_, y)) in one.tables.iter().zip(&more.tables) {
                for ((c, u), (_, v)) in x.columns.iter().zip(&y.columns) {
                    assert_eq!(u.to_le_bytes(), v.to_le_bytes(), "{n}.{c}, {threads} threads");
                }
            }
        }
    }

    #[test]
    fn the_first_failing_host_is_reported_whatever_the_threads() {
        let mut specs = hosts();
        specs[4].vms[0].vcpus = 9; // more vCPUs than its 4 pCPUs
        specs[6].vms[0].vcpus = 5;
        for threads in [1, 2, 4] {
            let (at, e) = run_hosts(specs.clone(), threads).unwrap_err();
            assert_eq!(at, 4, "{e}");
            assert!(e.to_string().contains("vcpus"), "{e}");
        }
    }
}

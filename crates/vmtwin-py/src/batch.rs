//! `vmtwin._core.run_fluid_hosts`: many fluid hosts in one call (`vmtwin_core::fluid::Batch`),
//! for the cluster runner. Thin: JSON specs in, the joined tables as raw columns out.
//!
//! The hosts are built (`Batch::prepare`), then one `bytes` object is allocated for all the
//! columns (about 55 MB for 256 PlanetLab hosts) without zeroing, and the hosts run writing
//! their rows straight into it (`Batch::run_into`), on the threads without the GIL; each column
//! is a `memoryview` slice of it. Zeroed `bytes` per column cost more than the simulation (a
//! clear per 4 KB, then the copy), and so did per-host tables joined at the end.

use crate::error::PyVmtwinErr;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyMemoryView, PySlice};
use vmtwin_core::fluid::{set_traces, Batch, VmTrace};
use vmtwin_core::spec::SimSpec;

/// Columns start at multiples of this many bytes in the batch's buffer (Arrow's alignment).
const COLUMN_ALIGN: usize = 64;

/// Run every host of `specs` (one engine spec as JSON text each, `fidelity: fluid`) on
/// `threads` threads, without the GIL. Returns `(tables, hosts, first_params)`: `tables` as
/// `Simulation.drain_tables` gives them (each column a read-only `memoryview` of
/// little-endian values instead of `bytes`), each with a `host` column (the host's index)
/// after `time_s` and `vm_id` numbering all VMs host after host; `hosts` one
/// `(pieces, wall_s, [(time_ns, message)])` per host; `first_params` the first host's spec with
/// every default in force (JSON). A failing host raises the engine error of the first failing
/// host, with its index as the exception's `host_index`.
///
/// `traces`, when given, holds per host a list of `(vm_index, segment_ns, utilization)`: the
/// trace of that VM as little-endian `u64` and `f64` bytes, its spec's trace lists left empty
/// (much cheaper than JSON numbers).
#[pyfunction]
#[pyo3(signature = (specs, threads=1, traces=None))]
pub fn run_fluid_hosts<'py>(
    py: Python<'py>,
    specs: Vec<String>,
    threads: usize,
    traces: Option<Vec<Vec<(usize, Bound<'py, PyBytes>, Bound<'py, PyBytes>)>>>,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyList>, Option<String>)> {
    let mut traces: Vec<Vec<VmTrace>> = match traces {
        None => vec![Vec::new(); specs.len()],
        Some(t) if t.len() == specs.len() => t
            .iter()
            .map(|host| host.iter().map(|(vm, seg, util)| Ok((*vm, words(seg, u64::from_le_bytes)?, words(util, f64::from_le_bytes)?))).collect())
            .collect::<PyResult<_>>()?,
        Some(t) => return Err(pyo3::exceptions::PyValueError::new_err(format!("traces: {} hosts for {} specs", t.len(), specs.len()))),
    };
    let items: Vec<(String, Vec<VmTrace>)> = specs.into_iter().zip(traces.drain(..)).collect();
    let host_error = |py: Python<'py>, (i, e)| -> PyErr {
        let err: PyErr = PyVmtwinErr(e).into();
        match err.value(py).setattr("host_index", i) {
            Ok(()) => err,
            Err(set) => set,
        }
    };
    let prepared = py.allow_threads(|| {
        std::panic::catch_unwind(|| {
            Batch::prepare(items, threads, |(text, traces): (String, Vec<VmTrace>)| {
                let mut spec = SimSpec::from_json(&text)?;
                set_traces(&mut spec, traces)?;
                Ok(spec)
            })
        })
    });
    let batch = match prepared {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => return Err(host_error(py, e)),
        Err(_) => return Err(internal()),
    };
    let schema = batch.schema.clone();
    let first_params = batch.first_params.clone();
    let sizes = batch.column_bytes();
    let mut at = Vec::with_capacity(sizes.len());
    let mut total = 0;
    for cols in &sizes {
        let mut starts = Vec::with_capacity(cols.len());
        for n in cols {
            starts.push(total);
            total += n.next_multiple_of(COLUMN_ALIGN);
        }
        at.push(starts);
    }
    // no transparent huge pages for it (MADV_HUGEPAGE): on this project's shared 2-core machine
    // a huge-page fault often stalls in the kernel's direct compaction, and a cold PlanetLab
    // day's calls took 0.15-0.18 s of system time with the advice against 0.05-0.06 s without it
    // (33 k faults of 4 KB instead of 2 k); when huge pages were free it took 0.03 s
    let buffer = uninit_bytes(py, total)?;
    // SAFETY: `buffer` is a new bytes object that nothing else refers to yet; its bytes are
    // written here (disjoint column slices) before any Python code sees it.
    let base = unsafe { pyo3::ffi::PyBytes_AsString(buffer.as_ptr()) } as usize;
    let ran = py.allow_threads(|| {
        let outs: Vec<Vec<&mut [u8]>> = sizes
            .iter()
            .zip(&at)
            .map(|(cols, starts)| {
                // SAFETY: each slice is its own range of the buffer (starts are increasing, each
                // at least the previous start plus its length).
                cols.iter().zip(starts).map(|(n, s)| unsafe { std::slice::from_raw_parts_mut((base + s) as *mut u8, *n) }).collect()
            })
            .collect();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| batch.run_into(outs, threads)))
    });
    let ran = match ran {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Err(host_error(py, e)),
        Err(_) => return Err(internal()),
    };
    let view = PyMemoryView::from(buffer.as_any())?;
    let tables = PyDict::new(py);
    for (k, (name, columns)) in schema.iter().enumerate() {
        let cols = PyDict::new(py);
        for (c, (col, dtype)) in columns.iter().enumerate() {
            // the rows written: a host refused a power-on writes fewer than the bound
            let (s, n) = (at[k][c] as isize, (ran.rows[k] * if *dtype == "u32" { 4 } else { 8 }) as isize);
            cols.set_item(*col, (*dtype, view.get_item(PySlice::new(py, s, s + n, 1))?))?;
        }
        tables.set_item(*name, cols)?;
    }
    let hosts = PyList::empty(py);
    for h in &ran.hosts {
        hosts.append((h.pieces, h.wall_s, h.log.clone()))?;
    }
    Ok((tables, hosts, first_params))
}

/// The little-endian 8-byte words of `bytes`.
fn words<T>(bytes: &Bound<'_, PyBytes>, from: fn([u8; 8]) -> T) -> PyResult<Vec<T>> {
    let bytes = bytes.as_bytes();
    if bytes.len() % 8 != 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(format!("traces: {} bytes is not a whole number of 8-byte values", bytes.len())));
    }
    Ok(bytes.chunks_exact(8).map(|w| from(w.try_into().expect("8 bytes"))).collect())
}

fn internal() -> PyErr {
    crate::exceptions::SimulationError::new_err("internal engine error in a fluid batch (a bug in vmtwin; please report it with the scenario)")
}

/// A new `bytes` object of `n` bytes whose contents are not initialised (the caller writes them all).
fn uninit_bytes(py: Python<'_>, n: usize) -> PyResult<Bound<'_, PyBytes>> {
    let len = isize::try_from(n).map_err(|_| pyo3::exceptions::PyMemoryError::new_err("fluid batch too large"))?;
    // SAFETY: a null pointer asks CPython for an uninitialised bytes object of `len` bytes; a
    // null result is a raised MemoryError, which `from_owned_ptr_or_err` returns.
    unsafe { Ok(Bound::from_owned_ptr_or_err(py, pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), len))?.downcast_into_unchecked()) }
}

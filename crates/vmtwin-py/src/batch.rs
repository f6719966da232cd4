//! `vmtwin._core.run_fluid_hosts`: many fluid hosts in one call (`vmtwin_core::fluid::Batch`),
//! for the cluster runner. Thin: JSON specs in, the joined tables as raw columns out.
//!
//! The hosts are built (`Batch::prepare`), then one `bytes` object is allocated for all the
//! columns (about 55 MB for 256 PlanetLab hosts) without zeroing and asked for transparent huge
//! pages, and the hosts run writing their rows straight into it (`Batch::run_into`), on the
//! threads without the GIL; each column is a `memoryview` slice of it. Zeroed `bytes` per column
//! cost more than the simulation: a page fault and a clear per 4 KB, then the copy.

use crate::error::PyVmtwinErr;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyMemoryView, PySlice};
use vmtwin_core::fluid::{set_traces, Batch, VmTrace};
use vmtwin_core::spec::SimSpec;

/// Columns start at multiples of this many bytes in the batch's buffer (Arrow's alignment).
const COLUMN_ALIGN: usize = 64;

/// Bytes of a transparent huge page (x86-64, aarch64 with 4 KB pages).
const HUGE_PAGE: usize = 2 << 20;

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
    // the columns start at a huge-page boundary inside the buffer and fill whole huge pages
    // (the padding is never touched, so it costs address space only): the unaligned head and
    // tail of a buffer were faulted in 4 KB pages, a few hundred faults per call
    let buffer = uninit_bytes(py, total + 2 * HUGE_PAGE)?;
    // SAFETY: `buffer` is a new bytes object that nothing else refers to yet; its bytes are
    // written here (disjoint column slices) before any Python code sees it.
    let data = unsafe { pyo3::ffi::PyBytes_AsString(buffer.as_ptr()) } as usize;
    let base = data.next_multiple_of(HUGE_PAGE);
    advise_huge_pages(base, total.next_multiple_of(HUGE_PAGE));
    let skip = base - data;
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
            let (s, n) = ((skip + at[k][c]) as isize, (ran.rows[k] * if *dtype == "u32" { 4 } else { 8 }) as isize);
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

/// Ask Linux for transparent huge pages over the 2 MB-aligned part of `[base, base + n)`: one
/// fault per 2 MB instead of per 4 KB while the columns are written. Advice only; ignored elsewhere.
fn advise_huge_pages(base: usize, n: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = HUGE_PAGE;
        const MADV_HUGEPAGE: i32 = 14;
        extern "C" {
            fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
        }
        let (start, end) = (base.next_multiple_of(HUGE), (base + n) / HUGE * HUGE);
        if end > start {
            // SAFETY: the range lies inside the buffer's own allocation; MADV_HUGEPAGE changes no contents.
            unsafe { madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (base, n);
}

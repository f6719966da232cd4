//! `vmtwin._core.run_fluid_hosts`: many fluid hosts in one call (`vmtwin_core::fluid::run_hosts`),
//! for the cluster runner. Thin: JSON specs in, the joined tables as raw columns out.

use crate::error::PyVmtwinErr;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use vmtwin_core::fluid::run_hosts_with;
use vmtwin_core::spec::SimSpec;

/// Run every host of `specs` (one engine spec as JSON text each, `fidelity: fluid`) on
/// `threads` threads, without the GIL. Returns `(tables, hosts, first_params)`: `tables` as
/// `Simulation.drain_tables` gives them, each with a `host` column (the host's index) after
/// `time_s` and `vm_id` numbering all VMs host after host; `hosts` one
/// `(pieces, wall_s, [(time_ns, message)])` per host; `first_params` the first host's spec with
/// every default in force (JSON). A failing host raises the engine error of the first failing
/// host, with its index as the exception's `host_index`.
#[pyfunction]
#[pyo3(signature = (specs, threads=1))]
pub fn run_fluid_hosts<'py>(py: Python<'py>, specs: Vec<String>, threads: usize) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyList>, Option<String>)> {
    let outcome = py.allow_threads(|| {
        std::panic::catch_unwind(|| run_hosts_with(specs, threads, |text: String| SimSpec::from_json(&text)))
    });
    let batch = match outcome {
        Ok(Ok(b)) => b,
        Ok(Err((i, e))) => {
            let err: PyErr = PyVmtwinErr(e).into();
            err.value(py).setattr("host_index", i)?;
            return Err(err);
        }
        Err(_) => return Err(crate::exceptions::SimulationError::new_err("internal engine error in a fluid batch (a bug in vmtwin; please report it with the scenario)")),
    };
    let tables = PyDict::new(py);
    for (k, (name, columns)) in batch.schema.iter().enumerate() {
        let rows = batch.rows(k);
        let cols = PyDict::new(py);
        for (c, (col, dtype)) in columns.iter().enumerate() {
            let size = if *dtype == "u32" { 4 } else { 8 };
            let bytes = PyBytes::new_with(py, rows * size, |out| {
                batch.write_column(k, c, out);
                Ok(())
            })?;
            cols.set_item(*col, (*dtype, bytes))?;
        }
        tables.set_item(*name, cols)?;
    }
    let hosts = PyList::empty(py);
    for h in &batch.hosts {
        hosts.append((h.pieces, h.wall_s, h.log.clone()))?;
    }
    Ok((tables, hosts, batch.first_params))
}

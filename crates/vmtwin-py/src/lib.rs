//! PyO3 bindings of vmtwin-core: thin wrappers only, no engine logic.

mod batch;
mod column;
mod cosched;
mod engine;
mod error;
mod exceptions;
mod simulation;

use pyo3::prelude::*;

/// The native module `vmtwin._core`.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<simulation::PySimulation>()?;
    m.add_class::<column::ColumnBytes>()?;
    m.add_function(wrap_pyfunction!(batch::run_fluid_hosts, m)?)?;
    m.add_function(wrap_pyfunction!(cosched::cosched_example, m)?)?;
    exceptions::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    let keys: Vec<&str> = simulation::sched_stats_items(&Default::default()).into_iter().map(|(k, _)| k).collect();
    m.add("SCHED_STATS_KEYS", keys)?;
    Ok(())
}

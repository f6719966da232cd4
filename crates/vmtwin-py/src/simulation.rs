//! `vmtwin._core.Simulation`: one engine simulation, driven from Python.

use crate::error::{PyResultV, PyVmtwinErr};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use vmtwin_core::spec::SimSpec;
use vmtwin_core::{Simulation, VmtwinError};

/// A simulation built from a normalized engine spec (JSON).
#[pyclass(name = "Simulation", module = "vmtwin._core", unsendable)]
pub struct PySimulation {
    sim: Simulation,
}

#[pymethods]
impl PySimulation {
    #[new]
    fn new(spec_json: &str) -> PyResultV<Self> {
        let spec = SimSpec::from_json(spec_json)?;
        Ok(PySimulation { sim: Simulation::new(spec)? })
    }

    /// Run until `t_ns`; `progress(now_ns)` is called after every sample.
    #[pyo3(signature = (t_ns, progress=None))]
    fn run_until(&mut self, py: Python<'_>, t_ns: u64, progress: Option<PyObject>) -> PyResult<()> {
        let mut failure: Option<PyErr> = None;
        let mut report = |now: u64| match &progress {
            None => py.check_signals().map_err(|e| failure = Some(e)).is_ok(),
            Some(f) => f.call1(py, (now,)).map_err(|e| failure = Some(e)).is_ok(),
        };
        self.sim.run_until(t_ns, &mut report).map_err(PyVmtwinErr)?;
        failure.map_or(Ok(()), Err)
    }

    #[getter]
    fn now_ns(&self) -> u64 {
        self.sim.now()
    }

    #[getter]
    fn event_count(&self) -> u64 {
        self.sim.event_count()
    }

    fn vm_names(&self) -> Vec<String> {
        self.sim.vm_names()
    }

    /// Change shares, reservation or limit; `limit_mhz=-1` removes the limit.
    #[pyo3(signature = (name, shares=None, reservation_mhz=None, limit_mhz=None))]
    fn set_vm_cpu(&mut self, name: &str, shares: Option<u32>, reservation_mhz: Option<u64>, limit_mhz: Option<i64>) -> PyResultV<()> {
        let vm = self.sim.vm_index(name)?;
        let limit = match limit_mhz {
            None => None,
            Some(-1) => Some(None),
            Some(l) if l > 0 => Some(Some(l as u64)),
            Some(l) => {
                return Err(VmtwinError::InvalidScenario { path: format!("{name}.cpu.limit"), value: format!("{l} MHz"), allowed: "a limit > 0 MHz, or -1 for unlimited".into() }.into())
            }
        };
        Ok(self.sim.set_vm_cpu(vm, shares, reservation_mhz, limit)?)
    }

    fn power_on(&mut self, name: &str) -> PyResultV<()> {
        let vm = self.sim.vm_index(name)?;
        Ok(self.sim.power_on(vm)?)
    }

    /// Cumulative ns per state of a VM, summed over its vCPUs.
    fn vm_counters<'py>(&mut self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyDict>> {
        let vm = self.sim.vm_index(name).map_err(PyVmtwinErr)?;
        let c = self.sim.vm_counters(vm);
        let d = PyDict::new(py);
        for (k, v) in ["run_ns", "ready_ns", "mlmtd_ns", "wait_ns", "idle_ns", "used_ns"].iter().zip(c) {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// Every table as {name: {column: (dtype, little-endian bytes)}}.
    fn tables<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (name, table) in self.sim.tables() {
            let cols = PyDict::new(py);
            for (col, values) in &table.columns {
                cols.set_item(*col, (values.dtype(), PyBytes::new(py, &values.to_le_bytes())))?;
            }
            out.set_item(name, cols)?;
        }
        Ok(out)
    }

    /// The spec with every default in force, as JSON.
    fn params_json(&self) -> String {
        self.sim.spec().to_json()
    }

    /// Scheduler decision counters.
    fn sched_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.sim.sched().stats;
        let d = PyDict::new(py);
        d.set_item("dispatches", s.dispatches)?;
        d.set_item("preemptions", s.preemptions)?;
        d.set_item("migrations", s.migrations)?;
        Ok(d)
    }

    /// Notable happenings as (time_ns, message).
    fn log(&self) -> Vec<(u64, String)> {
        self.sim.log().to_vec()
    }
}

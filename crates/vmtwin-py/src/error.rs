//! The one mapping from engine errors to Python exceptions.

use crate::exceptions::{AdmissionControlError, ScenarioError, SimulationError};
use pyo3::prelude::*;
use vmtwin_core::VmtwinError;

/// An engine error on its way to Python.
pub struct PyVmtwinErr(pub VmtwinError);

impl From<VmtwinError> for PyVmtwinErr {
    fn from(e: VmtwinError) -> Self {
        PyVmtwinErr(e)
    }
}

impl From<PyVmtwinErr> for PyErr {
    fn from(e: PyVmtwinErr) -> PyErr {
        let msg = e.0.to_string();
        match e.0 {
            VmtwinError::InvalidScenario { .. } => ScenarioError::new_err(msg),
            VmtwinError::AdmissionControl { .. } => AdmissionControlError::new_err(msg),
            VmtwinError::Simulation(_) => SimulationError::new_err(msg),
        }
    }
}

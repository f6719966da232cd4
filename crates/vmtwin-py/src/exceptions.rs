//! The exception hierarchy, declared once. `python/vmtwin/exceptions.py` re-exports it.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(vmtwin.exceptions, VmtwinError, PyException, "Base of every vmtwin error.");
create_exception!(vmtwin.exceptions, ScenarioError, VmtwinError, "A scenario is malformed: the message names the path, the value and what is allowed.");
create_exception!(vmtwin.exceptions, AdmissionControlError, VmtwinError, "A reservation the host or a resource pool cannot hold at power-on.");
create_exception!(vmtwin.exceptions, SimulationError, VmtwinError, "The engine refused an operation on a running simulation.");
create_exception!(vmtwin.exceptions, OutputError, VmtwinError, "A results folder or output file could not be written: the message names the user's path and the reason.");

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("VmtwinError", py.get_type::<VmtwinError>())?;
    m.add("ScenarioError", py.get_type::<ScenarioError>())?;
    m.add("AdmissionControlError", py.get_type::<AdmissionControlError>())?;
    m.add("SimulationError", py.get_type::<SimulationError>())?;
    m.add("OutputError", py.get_type::<OutputError>())?;
    Ok(())
}

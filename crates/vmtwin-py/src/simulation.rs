//! `vmtwin._core.Simulation`: one engine simulation, driven from Python.
//!
//! Every call is guarded at the boundary: an engine panic becomes a `SimulationError` (never a
//! `PanicException`, which `except Exception` misses) and leaves the object refusing further use;
//! a call made while the simulation is running (from its own progress callback, or from another
//! thread while the callback runs) is refused with a `SimulationError` instead of pyo3's
//! "Already borrowed"; integers out of the engine's range are refused with the argument's name
//! instead of `OverflowError`; Ctrl-C is checked between VM admissions while the engine is built
//! and every [`EVENTS_PER_SIGNAL_CHECK`] events while it runs.

use crate::column::ColumnBytes;
use crate::error::PyVmtwinErr;
use crate::exceptions::{ScenarioError, SimulationError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::panic::{catch_unwind, AssertUnwindSafe};
use crate::engine::Engine;
use vmtwin_core::cpu::SchedStats;
use vmtwin_core::spec::SimSpec;
use vmtwin_core::VmtwinError;

/// `sched_stats` keys of the dispatches by distance moved, nearest first (`SchedStats::locality`).
const LOCALITY_LEVELS: [&str; 5] =
    ["dispatches_same_pcpu", "dispatches_same_core", "dispatches_same_llc", "dispatches_same_node", "dispatches_other_node"];

/// `sched_stats` as (key, value) pairs, the one list of its keys (the module's
/// `SCHED_STATS_KEYS` is read from it, for the fluid batches that run no scheduler): the decision
/// counters, then the dispatches by how far the vCPU moved (`SchedStats::locality`; the first
/// three are local in ESX's sense, the same LLC).
pub(crate) fn sched_stats_items(s: &SchedStats) -> Vec<(&'static str, u64)> {
    let mut items = vec![
        ("dispatches", s.dispatches),
        ("preemptions", s.preemptions),
        ("migrations", s.migrations),
        ("core_migrations", s.core_migrations),
        ("llc_migrations", s.llc_migrations),
        ("node_migrations", s.node_migrations),
    ];
    items.extend(LOCALITY_LEVELS.iter().copied().zip(s.locality()));
    items
}

/// Events run between two checks for Ctrl-C (about 0.1 s of engine time at 10 M events/s).
const EVENTS_PER_SIGNAL_CHECK: u64 = 1 << 20;

/// A simulation built from a normalized engine spec (JSON).
#[pyclass(name = "Simulation", module = "vmtwin._core")]
pub struct PySimulation {
    sim: Engine,
    /// the panic message, once the engine has panicked (its state is then not trusted)
    broken: Option<String>,
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

fn internal_error(msg: &str) -> PyErr {
    SimulationError::new_err(format!("internal engine error (a bug in vmtwin; please report it with the scenario): {msg}"))
}

fn busy() -> PyErr {
    SimulationError::new_err(
        "the simulation is running: it cannot be stepped, reconfigured or read from its own progress callback \
         (or from another thread while it runs); do it after run_until returns",
    )
}

fn broken(msg: &str) -> PyErr {
    SimulationError::new_err(format!("the simulation stopped on an internal engine error and cannot be used any more: {msg}"))
}

fn borrow_mut<'py>(slf: &Bound<'py, PySimulation>) -> PyResult<PyRefMut<'py, PySimulation>> {
    let this = slf.try_borrow_mut().map_err(|_| busy())?;
    match &this.broken {
        Some(msg) => Err(broken(msg)),
        None => Ok(this),
    }
}

fn borrow<'py>(slf: &Bound<'py, PySimulation>) -> PyResult<PyRef<'py, PySimulation>> {
    let this = slf.try_borrow().map_err(|_| busy())?;
    match &this.broken {
        Some(msg) => Err(broken(msg)),
        None => Ok(this),
    }
}

/// An optional integer argument in `T`'s range, or a `ScenarioError` naming it.
fn int_arg<'py, T: FromPyObject<'py>>(value: Option<&Bound<'py, PyAny>>, path: &str, allowed: &str) -> PyResult<Option<T>> {
    match value {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => v.extract::<T>().map(Some).map_err(|_| {
            let shown = v.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
            ScenarioError::new_err(format!("{path}: got {shown}; allowed: {allowed}"))
        }),
    }
}

impl PySimulation {
    /// Run `f` on the engine; a panic marks the simulation broken and becomes a `SimulationError`.
    fn guarded<T>(&mut self, f: impl FnOnce(&mut Engine) -> T) -> PyResult<T> {
        match catch_unwind(AssertUnwindSafe(|| f(&mut self.sim))) {
            Ok(v) => Ok(v),
            Err(payload) => {
                let msg = panic_message(payload);
                self.broken = Some(msg.clone());
                Err(internal_error(&msg))
            }
        }
    }

    fn vm(&self, name: &str) -> PyResult<u32> {
        Ok(self.sim.vm_index(name).map_err(PyVmtwinErr)?)
    }
}

#[pymethods]
impl PySimulation {
    #[new]
    fn new(py: Python<'_>, spec_json: &str) -> PyResult<Self> {
        let mut interrupt: Option<PyErr> = None;
        let built = catch_unwind(AssertUnwindSafe(|| {
            let spec = SimSpec::from_json(spec_json)?;
            let mut keep_going = || py.check_signals().map_err(|e| interrupt = Some(e)).is_ok();
            Engine::new_interruptible(spec, &mut keep_going)
        }));
        match built {
            Ok(Ok(sim)) => Ok(PySimulation { sim, broken: None }),
            Ok(Err(e)) => Err(interrupt.unwrap_or_else(|| PyVmtwinErr(e).into())),
            Err(payload) => Err(internal_error(&panic_message(payload))),
        }
    }

    /// Run until `t_ns`; `progress(now_ns)` is called after every sample.
    #[pyo3(signature = (t_ns, progress=None))]
    fn run_until(slf: &Bound<'_, Self>, t_ns: &Bound<'_, PyAny>, progress: Option<PyObject>) -> PyResult<()> {
        let py = slf.py();
        let until: u64 = int_arg(Some(t_ns), "t_ns", "an integer number of ns from 0 to 2^64-1")?.unwrap_or(0);
        let mut this = borrow_mut(slf)?;
        let mut failure: Option<PyErr> = None;
        loop {
            let mut report = |now: u64| {
                let r = match &progress {
                    None => py.check_signals(),
                    Some(f) => f.call1(py, (now,)).map(|_| ()),
                };
                r.map_err(|e| failure = Some(e)).is_ok()
            };
            let done = this.guarded(|sim| sim.run_until_bounded(until, EVENTS_PER_SIGNAL_CHECK, &mut report))?;
            if let Some(e) = failure.take() {
                return Err(e);
            }
            if done.map_err(PyVmtwinErr)? {
                return Ok(());
            }
            py.check_signals()?;
        }
    }

    #[getter]
    fn now_ns(slf: &Bound<'_, Self>) -> PyResult<u64> {
        Ok(borrow(slf)?.sim.now())
    }

    #[getter]
    fn event_count(slf: &Bound<'_, Self>) -> PyResult<u64> {
        Ok(borrow(slf)?.sim.event_count())
    }

    fn vm_names(slf: &Bound<'_, Self>) -> PyResult<Vec<String>> {
        Ok(borrow(slf)?.sim.vm_names())
    }

    /// Change shares, reservation or limit; `limit_mhz=-1` removes the limit.
    #[pyo3(signature = (name, shares=None, reservation_mhz=None, limit_mhz=None))]
    fn set_vm_cpu(
        slf: &Bound<'_, Self>,
        name: &str,
        shares: Option<&Bound<'_, PyAny>>,
        reservation_mhz: Option<&Bound<'_, PyAny>>,
        limit_mhz: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let shares: Option<u32> = int_arg(shares, &format!("{name}.cpu.shares"), "an integer from 1 to 2^32-1")?;
        let reservation: Option<u64> = int_arg(reservation_mhz, &format!("{name}.cpu.reservation"), "MHz from 0 to 2^64-1")?;
        let limit: Option<i64> = int_arg(limit_mhz, &format!("{name}.cpu.limit"), "MHz > 0, or -1 for unlimited")?;
        let limit = match limit {
            None => None,
            Some(-1) => Some(None),
            Some(l) if l > 0 => Some(Some(l as u64)),
            Some(l) => {
                let e = VmtwinError::InvalidScenario { path: format!("{name}.cpu.limit"), value: format!("{l} MHz"), allowed: "a limit > 0 MHz, or -1 for unlimited".into() };
                return Err(PyVmtwinErr(e).into());
            }
        };
        let mut this = borrow_mut(slf)?;
        let vm = this.vm(name)?;
        Ok(this.guarded(|sim| sim.set_vm_cpu(vm, shares, reservation, limit))?.map_err(PyVmtwinErr)?)
    }

    fn power_on(slf: &Bound<'_, Self>, name: &str) -> PyResult<()> {
        let mut this = borrow_mut(slf)?;
        let vm = this.vm(name)?;
        Ok(this.guarded(|sim| sim.power_on(vm))?.map_err(PyVmtwinErr)?)
    }

    /// Cumulative ns per state of a VM, summed over its vCPUs.
    fn vm_counters<'py>(slf: &Bound<'py, Self>, name: &str) -> PyResult<Bound<'py, PyDict>> {
        let mut this = borrow_mut(slf)?;
        let vm = this.vm(name)?;
        let c = this.guarded(|sim| sim.vm_counters(vm))?;
        let d = PyDict::new(slf.py());
        for (k, v) in ["run_ns", "ready_ns", "mlmtd_ns", "wait_ns", "idle_ns", "used_ns"].iter().zip(c) {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// The rows sampled since the last call, moved out of the engine, as
    /// {table: {column: (dtype, little-endian bytes)}} in schema order; the bytes are
    /// [`ColumnBytes`], each column's own memory (no copy).
    fn drain_tables<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let tables = borrow_mut(slf)?.guarded(|sim| sim.drain_tables())?;
        let out = PyDict::new(py);
        for (name, table) in tables {
            let cols = PyDict::new(py);
            for (col, values) in table.columns {
                cols.set_item(col, (values.dtype(), ColumnBytes::new(values)))?;
            }
            out.set_item(name, cols)?;
        }
        Ok(out)
    }

    /// The spec with every default in force, as JSON.
    fn params_json(slf: &Bound<'_, Self>) -> PyResult<String> {
        Ok(borrow(slf)?.sim.spec().to_json())
    }

    /// Scheduler decision counters, with the dispatches split by how far they moved the vCPU
    /// ([`sched_stats_items`]).
    fn sched_stats<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let s = borrow(slf)?.sim.sched_stats();
        let d = PyDict::new(slf.py());
        for (name, n) in sched_stats_items(&s) {
            d.set_item(name, n)?;
        }
        Ok(d)
    }

    /// Panic inside the engine boundary, as an engine bug would (tests of the boundary only).
    fn _panic_for_test(slf: &Bound<'_, Self>) -> PyResult<()> {
        borrow_mut(slf)?.guarded(|_| panic!("a panic raised on purpose by _panic_for_test"))
    }

    /// Notable happenings as (time_ns, message).
    fn log(slf: &Bound<'_, Self>) -> PyResult<Vec<(u64, String)>> {
        Ok(borrow(slf)?.sim.log().to_vec())
    }
}

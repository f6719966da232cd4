//! The engine behind one `vmtwin._core.Simulation`: the event mode or the fluid mode, as the
//! spec's `fidelity` says. Both offer the same calls; this forwards each to the one in use.

use vmtwin_core::cpu::SchedStats;
use vmtwin_core::fluid::FluidSim;
use vmtwin_core::metrics::Table;
use vmtwin_core::spec::{Fidelity, SimSpec};
use vmtwin_core::{Simulation, VmtwinResult};

/// One host, simulated event by event or in fluid steps (each boxed: the engines differ in size).
pub enum Engine {
    /// every burst an event (`fidelity: event`)
    Event(Box<Simulation>),
    /// one water-fill per step (`fidelity: fluid`)
    Fluid(Box<FluidSim>),
}

/// Run `$body` with `$s` bound to whichever engine is in use.
macro_rules! either {
    ($engine:expr, $s:ident => $body:expr) => {
        match $engine {
            Engine::Event($s) => $body,
            Engine::Fluid($s) => $body,
        }
    };
}

impl Engine {
    pub fn new_interruptible(spec: SimSpec, keep_going: &mut dyn FnMut() -> bool) -> VmtwinResult<Self> {
        match spec.fidelity {
            Fidelity::Event => Simulation::new_interruptible(spec, keep_going).map(|s| Engine::Event(Box::new(s))),
            Fidelity::Fluid => FluidSim::new_interruptible(spec, keep_going).map(|s| Engine::Fluid(Box::new(s))),
        }
    }

    pub fn run_until_bounded(&mut self, until: u64, max_events: u64, progress: &mut dyn FnMut(u64) -> bool) -> VmtwinResult<bool> {
        either!(self, s => s.run_until_bounded(until, max_events, progress))
    }

    pub fn now(&self) -> u64 {
        either!(self, s => s.now())
    }

    pub fn event_count(&self) -> u64 {
        either!(self, s => s.event_count())
    }

    pub fn vm_names(&self) -> Vec<String> {
        either!(self, s => s.vm_names())
    }

    pub fn vm_index(&self, name: &str) -> VmtwinResult<u32> {
        either!(self, s => s.vm_index(name))
    }

    pub fn set_vm_cpu(&mut self, vm: u32, shares: Option<u32>, reservation_mhz: Option<u64>, limit_mhz: Option<Option<u64>>) -> VmtwinResult<()> {
        either!(self, s => s.set_vm_cpu(vm, shares, reservation_mhz, limit_mhz))
    }

    pub fn power_on(&mut self, vm: u32) -> VmtwinResult<()> {
        either!(self, s => s.power_on(vm))
    }

    pub fn vm_counters(&mut self, vm: u32) -> [u64; 6] {
        either!(self, s => s.vm_counters(vm))
    }

    pub fn drain_tables(&mut self) -> Vec<(&'static str, Table)> {
        either!(self, s => s.drain_tables())
    }

    pub fn spec(&self) -> &SimSpec {
        either!(self, s => s.spec())
    }

    pub fn sched_stats(&self) -> SchedStats {
        match self {
            Engine::Event(s) => s.sched().stats,
            Engine::Fluid(s) => s.sched_stats(),
        }
    }

    pub fn log(&self) -> &[(u64, String)] {
        either!(self, s => s.log())
    }
}

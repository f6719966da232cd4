//! vmtwin-core: the engine of vmtwin, a digital twin of ESX/vSphere resource management.
//!
//! # Basic concepts
//! - **Time** is integer nanoseconds ([`sim::Time`]); events run in `(time, seq)` order.
//! - A **[`Simulation`]** is one host: its [`hw::Topology`], its resource-pool tree and VMs, the
//!   [`cpu::CpuSched`] that runs their vCPUs, and the [`metrics::Sampler`] that records esxtop
//!   counters. [`Simulation::step`] is the one primitive; `run_until` and `run` wrap it.
//! - A **spec** ([`spec::SimSpec`]) is the normalized input: integers in ns, MHz and bytes.
//!
//! Mechanism files open with a prose account of the algorithm, its tunables, counters and
//! known gaps.

pub mod cpu;
pub mod fluid;
mod error;
pub mod guest;
pub mod hw;
pub mod mem;
pub mod metrics;
pub mod perf;
pub mod sim;
mod simulation;
pub mod spec;
pub mod storage;
pub mod wiring;

pub use error::{VmtwinError, VmtwinResult};
pub use simulation::Simulation;

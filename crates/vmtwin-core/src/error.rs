//! The one error type of the engine.
//!
//! Every fallible engine call returns [`VmtwinResult`]. Variants are semantic, so the Python
//! bindings map each to exactly one exception class. Messages are lowercase fragments with no
//! final period; a scenario error names the path, the value and what is allowed.

use std::fmt;

/// Everything the engine can refuse.
#[derive(Debug, Clone, PartialEq)]
pub enum VmtwinError {
    /// A scenario or engine spec value is not acceptable.
    InvalidScenario {
        /// path of the offending field, as in the scenario file (`vms[2].cpu.limit`)
        path: String,
        /// the value that was given, rendered
        value: String,
        /// what would have been accepted
        allowed: String,
    },
    /// A reservation the host or a resource pool cannot hold, refused at power-on.
    AdmissionControl {
        /// the VM or pool being powered on or reconfigured
        entity: String,
        /// the reason, naming the pool and the shortfall in MHz
        reason: String,
    },
    /// An operation on a running simulation that cannot be done (unknown VM, time in the past).
    Simulation(String),
}

/// Result alias used across the engine.
pub type VmtwinResult<T> = Result<T, VmtwinError>;

impl fmt::Display for VmtwinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VmtwinError::InvalidScenario { path, value, allowed } => {
                write!(f, "{path}: got {value}; allowed: {allowed}")
            }
            VmtwinError::AdmissionControl { entity, reason } => {
                write!(f, "admission control refused '{entity}': {reason}")
            }
            VmtwinError::Simulation(msg) => write!(f, "{msg}"),
        }
    }
}

impl std::error::Error for VmtwinError {}

/// Return early with an [`VmtwinError::InvalidScenario`].
///
/// # Examples
/// ```
/// use vmtwin_core::{invalid, VmtwinResult};
/// fn check(v: u32) -> VmtwinResult<()> {
///     if v == 0 {
///         invalid!("vms[0].vcpus", v, "an integer >= 1");
///     }
///     Ok(())
/// }
/// assert!(check(0).unwrap_err().to_string().contains("vms[0].vcpus: got 0"));
/// ```
#[macro_export]
macro_rules! invalid {
    ($path:expr, $value:expr, $allowed:expr) => {
        return Err($crate::VmtwinError::InvalidScenario {
            path: ($path).to_string(),
            value: format!("{}", $value),
            allowed: ($allowed).to_string(),
        })
    };
}

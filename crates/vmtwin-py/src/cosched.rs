//! `vmtwin._core.cosched_example`: the engine's co-scheduling rules (`vmtwin_core::cpu`) applied
//! to a given progress pattern, for the white paper's Figure 1 / Table 1 reproduction. Thin: the
//! skew accounting and the rule that allows a set of vCPUs to run are the engine's own.

use crate::exceptions::ScenarioError;
use pyo3::prelude::*;
use vmtwin_core::cpu::{lead_skew, may_run_together, replay_progress, CoschedMode};

/// Replay `slots` (`slots[k][i]`: vCPU `i` progressed in slot `k`, each `slot_ns` long) and
/// return `(cumulative_skew_ns, lead_skew_ns, progress_ns, allowed)`: the ESX 2.x/3.x skew, the
/// ESX 4 skew and each vCPU's progress at the end, and every non-empty set of vCPUs (a bit set)
/// `mode` allows to be scheduled together with the threshold `threshold_ns` (none halted).
#[pyfunction]
pub fn cosched_example(
    mode: &str,
    slots: Vec<Vec<bool>>,
    slot_ns: u64,
    threshold_ns: u64,
) -> PyResult<(Vec<u64>, Vec<u64>, Vec<u64>, Vec<u64>)> {
    let mode: CoschedMode = mode.parse().map_err(|e: String| ScenarioError::new_err(format!("mode: {e}")))?;
    let n = slots.first().map_or(0, Vec::len);
    if n == 0 || n > 16 || slots.iter().any(|s| s.len() != n) {
        return Err(ScenarioError::new_err(format!(
            "slots: every slot needs one flag per vCPU, 1 to 16 vCPUs; got widths {:?}",
            slots.iter().map(Vec::len).collect::<Vec<_>>()
        )));
    }
    let (skew, progress) = replay_progress(&slots, slot_ns);
    let allowed = (1u64..1 << n).filter(|&set| may_run_together(mode, set, &skew, &progress, 0, threshold_ns)).collect();
    Ok((skew.skew_ns.clone(), lead_skew(&progress), progress, allowed))
}

//! The run loop's side of the execution-speed model: building it from the spec's `perf` section
//! and running it once per sample interval (its only hot-path part, the cache-warmth count of
//! `resume_refill`, is the scheduler's: `cpu/cache.rs`).

use super::Simulation;
use crate::perf::{PerfModel, PerfProfile};
use crate::sim::Time;
use crate::{invalid, VmtwinResult};

impl Simulation {
    /// The model for the spec's `perf` section, or `None` without one (the feature then costs
    /// nothing). Every profiled VM must exist; every value is checked, naming the VM's path.
    pub(super) fn build_perf(&self) -> VmtwinResult<Option<PerfModel>> {
        let Some(spec) = &self.spec.perf else { return Ok(None) };
        spec.params.validate("perf")?;
        let mut profiles: Vec<Option<PerfProfile>> = vec![None; self.vms.len()];
        for (name, profile) in &spec.vms {
            let Some(i) = self.vms.iter().position(|v| &v.name == name) else {
                invalid!(format!("perf.vms.{name}"), name, "the name of a VM of the scenario");
            };
            profile.validate(&format!("vms[{i}].perf"))?;
            profiles[i] = Some(profile.clone());
        }
        let mut model = PerfModel::new(spec.params.clone(), profiles, &self.topo, self.sched.vcpus.len(), self.sched.pcpu_count());
        // only barrier programs read their slowdown back (`guest/barrier.rs`): the model works
        // it out for their vCPUs alone (two more runs of the model per vCPU and sample)
        for v in &self.vms {
            if matches!(v.workload, crate::guest::Workload::Barrier(_)) {
                (v.first_vcpu..v.first_vcpu + v.vcpus).for_each(|c| model.track_slowdown(c as usize));
            }
        }
        Ok(Some(model))
    }

    /// One sample of the model (the scheduler is accounted up to `t`).
    #[inline(never)]
    pub(super) fn sample_perf(&mut self, t: Time) {
        let vms = &self.vms;
        if let Some(model) = self.perf.as_mut() {
            model.sample(t, &self.sched, |vm| vms[vm as usize].powered_on_at.is_some());
        }
    }
}

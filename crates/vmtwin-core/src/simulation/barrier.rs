//! The run loop's side of barrier workloads (`guest/barrier.rs`): each barrier VM's program
//! holds state shared by its threads, so its vCPUs ask it through this hook rather than through
//! [`crate::guest::Workload`]'s per-vCPU calls; the threads a barrier releases are woken here,
//! and the program's throughput is sampled into the `barrier` table.

use super::Simulation;
use crate::guest::{Next, Workload};
use crate::metrics::{Table, Value};
use crate::sim::{Event, Time, NS_PER_S};
use crate::{invalid, VmtwinResult};

/// One row of the `barrier` table, per barrier VM per sample interval.
fn row(t: f64, vm: u32, barriers: u64, per_s: f64, work_ns: u64, spin_ns: u64) -> [(&'static str, Value); 6] {
    [
        ("time_s", Value::F64(t)),
        ("vm_id", Value::U32(vm)),
        ("barriers", Value::U64(barriers)),
        ("barriers_per_s", Value::F64(per_s)),
        ("work_ns", Value::U64(work_ns)),
        ("spin_ns", Value::U64(spin_ns)),
    ]
}

impl Simulation {
    /// Give each barrier program one thread per vCPU and, when there is one, the `barrier`
    /// table. A barrier VM's workload wrapped in synchronous I/O (`storage.vcpu_io`) is refused.
    pub(super) fn build_barriers(&mut self) -> VmtwinResult<Option<Table>> {
        let mut any = false;
        for v in &mut self.vms {
            match &mut v.workload {
                Workload::Barrier(b) => {
                    b.set_threads(v.vcpus as usize);
                    any = true;
                }
                Workload::SyncIo(w) if matches!(**w, Workload::Barrier(_)) => {
                    invalid!(format!("storage.vcpu_io (vm '{}')", v.name), "a barrier workload", "a VM whose workload is not a barrier program");
                }
                _ => {}
            }
        }
        Ok(any.then(|| Table::with_schema(&row(0.0, 0, 0, 0.0, 0, 0))))
    }

    /// What vCPU `v` of a barrier VM does next; the halted threads its arrival releases are
    /// woken now.
    #[inline(never)]
    pub(super) fn barrier_next(&mut self, v: u32, after_burst: bool) -> Next {
        let vm = self.sched.vcpus[v as usize].vm as usize;
        let first = self.vms[vm].first_vcpu;
        let slowdown = self.perf.as_ref().map_or(1.0, |p| p.slowdown(v as usize));
        let Workload::Barrier(b) = &mut self.vms[vm].workload else { unreachable!("called for barrier VMs") };
        let rng = &mut self.guests[v as usize].rng;
        let i = (v - first) as usize;
        if !after_burst {
            return b.on_wake(i, rng, slowdown);
        }
        let mut wake = Vec::new();
        let next = b.after_burst(i, rng, &mut wake, slowdown);
        for j in wake {
            self.queue.push(self.now, Event::Wake { vcpu: first + j as u32 });
        }
        next
    }

    /// One row per barrier VM: what its program did since the last sample.
    pub(super) fn sample_barriers(&mut self, t: Time) {
        let Some(table) = self.barrier_table.as_mut() else { return };
        let span = t.min(self.spec.sample_interval_ns).max(1) as f64 / NS_PER_S as f64;
        for (i, v) in self.vms.iter_mut().enumerate() {
            if let Workload::Barrier(b) = &mut v.workload {
                let now = [b.barriers, b.work_ns, b.spin_ns];
                let d: Vec<u64> = now.iter().zip(b.sampled).map(|(a, s)| a - s).collect();
                b.sampled = now;
                table.push_row(&row(t as f64 / NS_PER_S as f64, i as u32, d[0], d[0] as f64 / span, d[1], d[2]));
            }
        }
    }
}

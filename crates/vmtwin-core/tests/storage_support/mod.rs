//! A tiny deterministic event loop for the storage tests, and small topologies built in code.
#![allow(dead_code)]

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use vmtwin_core::sim::Time;
use vmtwin_core::storage::*;

pub const US: Time = 1_000;
pub const MS: Time = 1_000_000;
pub const S: Time = 1_000_000_000;

struct Item {
    t: Time,
    seq: u64,
    ev: StorageEvent,
}
impl PartialEq for Item {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Item {
    fn cmp(&self, o: &Self) -> Ordering {
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}

/// Events in `(time, seq)` order, as the engine's queue orders them.
#[derive(Default)]
pub struct Loop {
    heap: BinaryHeap<Item>,
    seq: u64,
    pub now: Time,
    pub events: u64,
}

impl IoScheduler for Loop {
    fn at(&mut self, t: Time, ev: StorageEvent) {
        assert!(t >= self.now, "event {ev:?} scheduled in the past ({t} < {})", self.now);
        self.seq += 1;
        self.heap.push(Item { t, seq: self.seq, ev });
    }
}

impl Loop {
    /// Run events up to and including `end`; the clock ends at `end`.
    pub fn run_until(&mut self, st: &mut Storage, end: Time) {
        while self.heap.peek().is_some_and(|i| i.t <= end) {
            let i = self.heap.pop().unwrap();
            self.now = i.t;
            self.events += 1;
            st.handle(i.t, i.ev, self);
        }
        self.now = end;
    }
}

/// An adapter whose link never limits (1 Eb/s: a 64 kB transfer rounds to 0 ns).
pub fn fast_adapter(name: &str) -> AdapterSpec {
    AdapterSpec { name: name.into(), queue_depth: 1 << 20, link_bits_per_s: 1_000_000_000_000_000_000 }
}

/// One LUN on an exponential device behind one path with no fabric latency.
pub fn exp_lun(name: &str, servers: u32, mean_ns: Time, dqlen: u32) -> LunSpec {
    LunSpec {
        name: name.into(),
        device: DeviceSpec::Exponential { servers, mean_service_ns: mean_ns },
        dqlen,
        psp: PspSpec::Fixed { preferred: 0 },
        paths: vec![PathSpec { adapter: "vmhba1".into(), controller: 0, fabric_ns: 0 }],
    }
}

pub fn poisson(rate: f64, cap: Option<u32>) -> workload::WorkloadSpec {
    workload::WorkloadSpec::Poisson(workload::PoissonSource { rate_per_s: rate, block_bytes: 4096, read_pct: 50.0, random_pct: 100.0, cap, start_ns: 0 })
}

pub fn iometer(block: u32, read_pct: f64, outstanding: u32) -> workload::WorkloadSpec {
    workload::WorkloadSpec::Iometer(workload::Iometer { block_bytes: block, read_pct, random_pct: 100.0, outstanding, think_ns: 0, start_ns: 0 })
}

/// A dual-controller array with LUN `lun0` owned by controller 0, two HBA ports, four paths
/// (paths 0 and 1 to controller 0 = AO, paths 2 and 3 to controller 1 = AUO) and `vms` disks.
pub fn array_spec(psp: PspSpec, vms: usize, seed: u64) -> StorageSpec {
    let paths = vec![PathSpec::new("vmhba1", 0), PathSpec::new("vmhba2", 0), PathSpec::new("vmhba1", 1), PathSpec::new("vmhba2", 1)];
    StorageSpec {
        seed,
        params: StackParams::default(),
        adapters: vec![AdapterSpec::named("vmhba1"), AdapterSpec::named("vmhba2")],
        arrays: vec![ArraySpec::named("fa1")],
        luns: vec![LunSpec { name: "lun0".into(), device: DeviceSpec::Array { array: "fa1".into(), owner: 0 }, dqlen: 64, psp, paths }],
        disks: (0..vms).map(|i| VmDiskSpec { span_bytes: 100 << 20, ..VmDiskSpec::new(&format!("vm{i}:scsi0:0"), "lun0") }).collect(),
    }
}

//! The storage module on its own: two VMs on a flash-array LUN, PSP RR, 10 simulated seconds;
//! prints the esxtop disk rows (LUN, paths, VM disks) of the last second.
//!
//! Run: `cargo run --release -p vmtwin-core --example storage_quickstart`.

use std::collections::BTreeMap;
use vmtwin_core::storage::workload::{Iometer, WorkloadSpec};
use vmtwin_core::storage::*;

/// The smallest event loop: events by (time, insertion order), as the engine orders them.
#[derive(Default)]
struct Queue(BTreeMap<(u64, u64), StorageEvent>, u64);

impl IoScheduler for Queue {
    fn at(&mut self, t: u64, ev: StorageEvent) {
        self.1 += 1;
        self.0.insert((t, self.1), ev);
    }
}

fn row(name: &str, e: &EsxtopDisk) {
    println!(
        "{name:<14} {:>9.0} {:>8.0} {:>8.0} {:>8.1} {:>8.1} {:>7.3} {:>7.3} {:>7.3} {:>5} {:>5} {:>6.1} {:>5}",
        e.cmds_per_s, e.reads_per_s, e.writes_per_s, e.mbread_per_s, e.mbwrtn_per_s, e.davg_ms, e.kavg_ms, e.gavg_ms, e.actv, e.qued, e.usd_pct, e.dqlen
    );
}

fn main() -> Result<(), vmtwin_core::VmtwinError> {
    let spec = StorageSpec {
        seed: 1,
        params: StackParams::default(),
        adapters: vec![AdapterSpec::named("vmhba1"), AdapterSpec::named("vmhba2")],
        arrays: vec![ArraySpec::named("fa1")],
        luns: vec![LunSpec {
            name: "lun0".into(),
            device: DeviceSpec::Array { array: "fa1".into(), owner: 0 },
            dqlen: 32,
            psp: PspSpec::RoundRobin { iops: RR_DEFAULT_IOPS },
            paths: vec![PathSpec::new("vmhba1", 0), PathSpec::new("vmhba2", 0), PathSpec::new("vmhba1", 1), PathSpec::new("vmhba2", 1)],
        }],
        disks: vec![VmDiskSpec::new("vm0:scsi0:0", "lun0"), VmDiskSpec { shares: 2000, ..VmDiskSpec::new("vm1:scsi0:0", "lun0") }],
    };
    let mut st = Storage::new(&spec)?;
    for d in 0..2 {
        let w = Iometer { block_bytes: 8192, read_pct: 70.0, random_pct: 100.0, outstanding: 32, think_ns: 0, start_ns: 0 };
        st.add_workload(d, WorkloadSpec::Iometer(w))?;
    }
    let mut q = Queue::default();
    st.start(0, &mut q);
    let run_until = |st: &mut Storage, q: &mut Queue, end: u64| {
        while let Some(entry) = q.0.first_entry() {
            if entry.key().0 > end {
                break;
            }
            let ((t, _), ev) = entry.remove_entry();
            st.handle(t, ev, q);
        }
    };
    let s = 1_000_000_000;
    run_until(&mut st, &mut q, 9 * s);
    let before: Vec<_> = (0..st.path_count() as u32).map(|p| st.path_counters(p, 9 * s)).collect();
    let (lun0, d0, d1) = (st.lun_counters(0, 9 * s), st.disk_counters(0, 9 * s), st.disk_counters(1, 9 * s));
    run_until(&mut st, &mut q, 10 * s);
    println!("{:<14} {:>9} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7} {:>7} {:>5} {:>5} {:>6} {:>5}", "", "CMDS/s", "READS/s", "WRITES/s", "MBREAD/s", "MBWRTN/s", "DAVG", "KAVG", "GAVG", "ACTV", "QUED", "%USD", "DQLEN");
    row("lun0", &EsxtopDisk::between(&lun0, &st.lun_counters(0, 10 * s)));
    for (p, b) in before.iter().enumerate() {
        row(&format!("lun0 path {p}"), &EsxtopDisk::between(b, &st.path_counters(p as u32, 10 * s)));
    }
    row("vm0:scsi0:0", &EsxtopDisk::between(&d0, &st.disk_counters(0, 10 * s)));
    row("vm1:scsi0:0", &EsxtopDisk::between(&d1, &st.disk_counters(1, 10 * s)));
    Ok(())
}

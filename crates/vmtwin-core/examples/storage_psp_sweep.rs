//! PSP RR vs PSP Adaptive across block sizes: 8 VMs x 32 outstanding I/Os, 50 % random read /
//! 50 % random write on one flash-array LUN (DQLEN 64), 20 simulated seconds each; prints IOPS,
//! MB/s and mean GAVG for both and the throughput gain. The PSP paper reports gains "up to 30%",
//! growing with block size, at slightly higher write latency (research/storage.md B2); its
//! thresholds and workload sizes are not published, so t_a = 1 ms, t_b = 0.5 ms, t_c = 10 ms here.
//! The array's front end moves 1 GB/s per controller (see `FRONT_END_BYTES_PER_S`).
//!
//! Run: `cargo run --release -p vmtwin-core --example storage_psp_sweep`.

use std::collections::BTreeMap;
use vmtwin_core::storage::workload::{Iometer, WorkloadSpec};
use vmtwin_core::storage::*;

#[derive(Default)]
struct Queue(BTreeMap<(u64, u64), StorageEvent>, u64);
impl IoScheduler for Queue {
    fn at(&mut self, t: u64, ev: StorageEvent) {
        self.1 += 1;
        self.0.insert((t, self.1), ev);
    }
}

const S: u64 = 1_000_000_000;
/// Each controller's front end moves one 8 Gb/s FC port's worth of data (chosen so that, as [P]
/// §3 says, the AO side saturates while the host's two 8 Gb/s HBA ports do not).
const FRONT_END_BYTES_PER_S: u64 = 1_000_000_000;

fn run(psp: PspSpec, block: u32) -> (f64, f64, f64, usize) {
    let paths = vec![PathSpec::new("vmhba1", 0), PathSpec::new("vmhba2", 0), PathSpec::new("vmhba1", 1), PathSpec::new("vmhba2", 1)];
    let spec = StorageSpec {
        seed: 7,
        params: StackParams::default(),
        adapters: vec![AdapterSpec::named("vmhba1"), AdapterSpec::named("vmhba2")],
        arrays: vec![ArraySpec { controller_bytes_per_s: FRONT_END_BYTES_PER_S, ..ArraySpec::named("fa1") }],
        luns: vec![LunSpec { name: "lun0".into(), device: DeviceSpec::Array { array: "fa1".into(), owner: 0 }, dqlen: 64, psp, paths }],
        disks: (0..8).map(|i| VmDiskSpec { span_bytes: 100 << 20, ..VmDiskSpec::new(&format!("vm{i}:scsi0:0"), "lun0") }).collect(),
    };
    let mut st = Storage::new(&spec).unwrap();
    for d in 0..8 {
        st.add_workload(d, WorkloadSpec::Iometer(Iometer { block_bytes: block, read_pct: 50.0, random_pct: 100.0, outstanding: 32, think_ns: 0, start_ns: 0 })).unwrap();
    }
    let mut q = Queue::default();
    st.start(0, &mut q);
    let run_until = |st: &mut Storage, q: &mut Queue, end: u64| {
        while let Some(e) = q.0.first_entry() {
            if e.key().0 > end {
                break;
            }
            let ((t, _), ev) = e.remove_entry();
            st.handle(t, ev, q);
        }
    };
    // measure the last 10 s (after Adaptive's first decisions)
    run_until(&mut st, &mut q, 10 * S);
    let a = st.lun_counters(0, 10 * S);
    run_until(&mut st, &mut q, 20 * S);
    let e = EsxtopDisk::between(&a, &st.lun_counters(0, 20 * S));
    (e.cmds_per_s, e.mbread_per_s + e.mbwrtn_per_s, e.gavg_ms, st.adaptive_log(0).len())
}

fn main() {
    println!("{:>7} {:>10} {:>10} {:>9} {:>9} {:>8} {:>8} {:>7} {:>8}", "block", "RR IOPS", "AD IOPS", "RR MB/s", "AD MB/s", "RR GAVG", "AD GAVG", "gain", "changes");
    for kb in [4u32, 8, 16, 32, 64, 128, 256] {
        let rr = run(PspSpec::RoundRobin { iops: 1 }, kb * 1024);
        let ad = run(PspSpec::Adaptive { iops: 1, params: AdaptiveParams::new(1_000_000, 500_000, 10_000_000) }, kb * 1024);
        println!("{:>5}kB {:>10.0} {:>10.0} {:>9.1} {:>9.1} {:>8.3} {:>8.3} {:>6.1}% {:>8}", kb, rr.0, ad.0, rr.1, ad.1, rr.2, ad.2, 100.0 * (ad.1 / rr.1 - 1.0), ad.3);
    }
}

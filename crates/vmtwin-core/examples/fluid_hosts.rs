//! Run a batch of fluid hosts (a JSON array of engine specs, each as JSON text, as the cluster
//! runner hands them to `vmtwin._core.run_fluid_hosts`) and write every column into one buffer,
//! as the bindings do; print the hosts, rows and wall time. For profiling the fluid batch path
//! without Python (`callgrind`, `perf`).
//!
//! `cargo run --release --example fluid_hosts -- SPECS.json [THREADS] [HOSTS_PER_CALL]`

use std::time::Instant;
use vmtwin_core::fluid::Batch;
use vmtwin_core::spec::SimSpec;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: fluid_hosts SPECS.json [THREADS] [HOSTS_PER_CALL]");
    let threads: usize = args.next().map_or(1, |t| t.parse().expect("THREADS: an integer"));
    let per_call: usize = args.next().map_or(256, |t| t.parse().expect("HOSTS_PER_CALL: an integer"));
    let specs: Vec<String> = serde_json::from_str(&std::fs::read_to_string(&path).expect("readable specs")).expect("a JSON array of strings");
    let start = Instant::now();
    let (mut rows, mut bytes) = (0, 0);
    for chunk in specs.chunks(per_call) {
        let batch = Batch::prepare(chunk.to_vec(), threads, |text: String| SimSpec::from_json(&text)).map_err(|(i, e)| format!("host {i}: {e}")).expect("builds");
        let sizes = batch.column_bytes();
        let mut buffer = vec![0u8; sizes.iter().flatten().sum()];
        let mut rest = buffer.as_mut_slice();
        let outs: Vec<Vec<&mut [u8]>> = sizes
            .iter()
            .map(|cols| {
                cols.iter()
                    .map(|n| {
                        let (out, tail) = std::mem::take(&mut rest).split_at_mut(*n);
                        rest = tail;
                        out
                    })
                    .collect()
            })
            .collect();
        let ran = batch.run_into(outs, threads).map_err(|(i, e)| format!("host {i}: {e}")).expect("runs");
        rows += ran.rows.iter().sum::<usize>();
        bytes += buffer.len();
    }
    println!("{} hosts, {rows} rows, {:.1} MB of columns in {:.3} s", specs.len(), bytes as f64 / 1e6, start.elapsed().as_secs_f64());
}

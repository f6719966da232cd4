//! Run a normalized engine spec (JSON file) to its duration and print events and wall time.
//! For profiling the engine without Python: `vmtwin` scenario -> `Scenario.to_engine_json()`.

use std::time::Instant;
use vmtwin_core::{spec::SimSpec, Simulation};

fn main() {
    let path = std::env::args().nth(1).expect("usage: run_spec SPEC.json");
    let text = std::fs::read_to_string(&path).expect("readable spec");
    let mut sim = Simulation::new(SimSpec::from_json(&text).expect("valid spec")).expect("builds");
    let start = Instant::now();
    sim.run().expect("runs");
    let wall = start.elapsed().as_secs_f64();
    let stats = sim.sched().stats;
    println!(
        "{} events in {wall:.3} s = {:.2} M events/s; dispatches {} preemptions {} migrations {}",
        sim.event_count(),
        sim.event_count() as f64 / wall / 1e6,
        stats.dispatches,
        stats.preemptions,
        stats.migrations
    );
    let [pcpu, core, llc, node, other] = stats.locality();
    println!("dispatches by distance moved: same pCPU {pcpu} same core {core} same LLC {llc} same node {node} other node {other}");
}

//! Run a normalized engine spec (JSON file) and write every sampled table's columns as raw
//! little-endian bytes to OUT (for checking that an engine change leaves results identical).

use std::io::Write;
use vmtwin_core::{spec::SimSpec, Simulation};

fn main() {
    let mut args = std::env::args().skip(1);
    let (path, out) = match (args.next(), args.next()) {
        (Some(p), Some(o)) => (p, o),
        _ => panic!("usage: dump_tables SPEC.json OUT"),
    };
    let text = std::fs::read_to_string(&path).expect("readable spec");
    let mut sim = Simulation::new(SimSpec::from_json(&text).expect("valid spec")).expect("builds");
    sim.run().expect("runs");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&out).expect("writable output"));
    writeln!(f, "events {} now {}", sim.event_count(), sim.now()).unwrap();
    let s = sim.sched().stats;
    writeln!(f, "dispatches {} preemptions {} migrations {}", s.dispatches, s.preemptions, s.migrations).unwrap();
    for (name, table) in sim.tables() {
        writeln!(f, "table {name} rows {}", table.rows()).unwrap();
        for (col, values) in &table.columns {
            writeln!(f, "column {col} {}", values.dtype()).unwrap();
            f.write_all(&values.to_le_bytes()).unwrap();
            writeln!(f).unwrap();
        }
    }
    for (t, msg) in sim.log() {
        writeln!(f, "log {t} {msg}").unwrap();
    }
}

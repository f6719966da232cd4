//! Draining the sampler while a run goes, and running in event-bounded slices, change nothing:
//! the rows drained slice by slice, joined, are the rows of one uninterrupted run.

mod common;

use common::*;
use vmtwin_core::metrics::{Column, Table};
use vmtwin_core::spec::{Arrivals, BurstDist, WorkloadSpec};
use vmtwin_core::{Simulation, VmtwinError};

fn mixed() -> vmtwin_core::spec::SimSpec {
    let bursty = |duty| WorkloadSpec::CpuBound { duty, burst_ns: 3 * MS, burst_dist: BurstDist::Exponential, arrivals: Arrivals::Closed };
    spec(
        2,
        60 * S,
        vec![vm("a", 2, 2000, 0, None, bursty(0.8)), vm("b", 1, 1000, 500, Some(900), busy()), vm("c", 1, 1000, 0, None, bursty(0.4))],
    )
}

fn append(into: &mut Table, from: Table) {
    for ((n, a), (m, b)) in into.columns.iter_mut().zip(from.columns) {
        assert_eq!(*n, m);
        match (a, b) {
            (Column::F64(a), Column::F64(b)) => a.extend(b),
            (Column::U64(a), Column::U64(b)) => a.extend(b),
            (Column::U32(a), Column::U32(b)) => a.extend(b),
            _ => panic!("column {n} changed type"),
        }
    }
}

#[test]
fn sliced_and_drained_runs_give_the_rows_of_one_run() {
    let mut whole = Simulation::new(mixed()).unwrap();
    whole.run().unwrap();
    let want: Vec<(&str, Table)> = whole.tables().iter().map(|(n, t)| (*n, (*t).clone())).collect();
    assert_eq!(want[0].1.rows(), 30);

    for budget in [1, 997, 50_000] {
        let mut sim = Simulation::new(mixed()).unwrap();
        let mut got: Vec<(&str, Table)> = sim.drain_tables().into_iter().collect();
        let mut slices = 0;
        while !sim.run_until_bounded(60 * S, budget, &mut |_| true).unwrap() {
            slices += 1;
            for ((n, into), (m, from)) in got.iter_mut().zip(sim.drain_tables()) {
                assert_eq!(*n, m);
                append(into, from);
            }
        }
        for ((n, into), (_, from)) in got.iter_mut().zip(sim.drain_tables()) {
            assert_eq!(sim.tables().iter().find(|(m, _)| m == n).unwrap().1.rows(), 0, "drained");
            append(into, from);
        }
        assert!(slices as u64 >= (whole.event_count() / budget).saturating_sub(1), "{slices} slices of {budget} events");
        assert_eq!(sim.event_count(), whole.event_count());
        assert_eq!(sim.now(), 60 * S);
        for ((n, g), (_, w)) in got.iter().zip(&want) {
            for ((c, a), (_, b)) in g.columns.iter().zip(&w.columns) {
                assert_eq!(a.to_le_bytes(), b.to_le_bytes(), "table {n} column {c}, budget {budget}");
            }
        }
    }
}

/// A run in slices whose reservations are large enough for the prefault thread (1,024 VMs, five
/// samples a slice: over a megabyte of rows), drained after each slice as the bindings do: from
/// the third slice on the columns are the spares the thread allocated ahead (`prefault.rs`),
/// and the rows joined are still those of one uninterrupted run.
#[test]
fn slices_on_columns_allocated_ahead_give_the_rows_of_one_run() {
    let load = |i: usize| if i % 64 == 0 { busy() } else { WorkloadSpec::Idle };
    let vms: Vec<_> = (0..1024).map(|i| vm(&format!("v{i}"), 1, 1000, 0, None, load(i))).collect();
    let make = || spec(8, 60 * S, vms.clone());
    let mut whole = Simulation::new(make()).unwrap();
    whole.run().unwrap();
    let want: Vec<(&str, Table)> = whole.tables().iter().map(|(n, t)| (*n, (*t).clone())).collect();
    assert_eq!(want[0].1.rows(), 30);

    let mut sim = Simulation::new(make()).unwrap();
    let mut got: Vec<(&str, Table)> = sim.drain_tables().into_iter().collect();
    for until in (1..=6).map(|k| k * 10 * S) {
        assert!(sim.run_until_bounded(until, u64::MAX, &mut |_| true).unwrap());
        for ((n, into), (m, from)) in got.iter_mut().zip(sim.drain_tables()) {
            assert_eq!(*n, m);
            append(into, from);
        }
    }
    assert_eq!(sim.event_count(), whole.event_count());
    for ((n, g), (_, w)) in got.iter().zip(&want) {
        for ((c, a), (_, b)) in g.columns.iter().zip(&w.columns) {
            assert_eq!(a.to_le_bytes(), b.to_le_bytes(), "table {n} column {c}");
        }
    }
}

#[test]
fn construction_asks_between_admissions_and_stops_when_told() {
    let vms: Vec<_> = (0..100).map(|i| vm(&format!("v{i}"), 1, 1000, 0, None, busy())).collect();
    let mut asked = 0;
    let built = Simulation::new_interruptible(spec(4, 10 * S, vms.clone()), &mut || {
        asked += 1;
        true
    });
    assert!(built.is_ok());
    assert_eq!(asked, 100_usize.div_ceil(Simulation::ADMISSIONS_PER_CHECK));

    let mut asked = 0;
    let err = Simulation::new_interruptible(spec(4, 10 * S, vms), &mut || {
        asked += 1;
        asked < 3
    })
    .unwrap_err();
    assert_eq!(err, VmtwinError::Simulation(format!("interrupted while powering on VMs ({} of 100)", 2 * Simulation::ADMISSIONS_PER_CHECK)));
}

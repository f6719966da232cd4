//! The event queue against a naive model: any mix of one-shot pushes, timer re-arms, cancels
//! and pops yields the same events in the same (time, scheduling order) sequence.

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use vmtwin_core::sim::{Event, EventQueue};

#[derive(Debug, Clone)]
enum Op {
    Push(u64),
    Arm(u32, u64),
    Cancel(u32),
    Pop,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u64..50).prop_map(Op::Push),
        (0u32..6, 0u64..50).prop_map(|(s, t)| Op::Arm(s, t)),
        (0u32..6).prop_map(Op::Cancel),
        Just(Op::Pop),
        Just(Op::Pop),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, rng_seed: RngSeed::Fixed(500), ..ProptestConfig::default() })]

    #[test]
    fn queue_matches_a_sorted_list(ops in proptest::collection::vec(op(), 1..120)) {
        let mut q = EventQueue::with_timers(6);
        // model: (time, seq, event, timer slot or none)
        let mut model: Vec<(u64, u64, Event, Option<u32>)> = vec![];
        let mut seq = 0u64;
        let mut now = 0u64;
        for op in ops {
            match op {
                Op::Push(dt) => {
                    seq += 1;
                    q.push(now + dt, Event::Wake { vcpu: seq as u32 });
                    model.push((now + dt, seq, Event::Wake { vcpu: seq as u32 }, None));
                }
                Op::Arm(slot, dt) => {
                    seq += 1;
                    q.set_timer(slot, now + dt, Event::SliceEnd { pcpu: slot });
                    model.retain(|e| e.3 != Some(slot));
                    model.push((now + dt, seq, Event::SliceEnd { pcpu: slot }, Some(slot)));
                }
                Op::Cancel(slot) => {
                    q.cancel_timer(slot);
                    model.retain(|e| e.3 != Some(slot));
                }
                Op::Pop => {
                    model.sort_by_key(|e| (e.0, e.1));
                    let want = if model.is_empty() { None } else { Some(model.remove(0)) };
                    prop_assert_eq!(q.peek_time(), want.map(|e| e.0));
                    let got = q.pop();
                    prop_assert_eq!(got, want.map(|e| (e.0, e.2)));
                    if let Some((t, _)) = got {
                        now = t;
                    }
                }
            }
            prop_assert_eq!(q.len(), model.len());
        }
    }
}

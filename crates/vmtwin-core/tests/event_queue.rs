//! The event queue against a naive model: any mix of one-shot pushes, timer re-arms, cancels
//! and pops yields the same events in the same (time, scheduling order) sequence. Delays are
//! drawn both from a few nanoseconds (many ties, one wheel bucket) and from nanoseconds to
//! hours (many buckets, wrap-around of the wheel, the overflow heap beyond its window).

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use vmtwin_core::sim::{Event, EventQueue};

#[derive(Debug, Clone)]
enum Op {
    Push(u64),
    /// a one-shot event `dt` before the last popped time (not something the simulation does)
    PushPast(u64),
    Arm(u32, u64),
    Cancel(u32),
    Pop,
}

fn op() -> impl Strategy<Value = Op> {
    ops_with_delays(0u64..50)
}

/// Mostly pushes into the bucket being popped, some of them before the last popped time.
fn past_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => ops_with_delays(0u64..1 << 16),
        1 => (0u64..1 << 16).prop_map(Op::PushPast),
    ]
}

/// Delays from 0 to about an hour: same bucket, nearby buckets, a whole wheel turn, far beyond.
fn wide_delay() -> impl Strategy<Value = u64> + Clone {
    prop_oneof![0u64..50, 0u64..1 << 20, 0u64..1 << 31, 0u64..1 << 42]
}

fn wide_op() -> impl Strategy<Value = Op> {
    ops_with_delays(wide_delay())
}

fn ops_with_delays(dt: impl Strategy<Value = u64> + Clone + 'static) -> impl Strategy<Value = Op> {
    prop_oneof![
        dt.clone().prop_map(Op::Push),
        (0u32..6, dt).prop_map(|(s, t)| Op::Arm(s, t)),
        (0u32..6).prop_map(Op::Cancel),
        Just(Op::Pop),
        Just(Op::Pop),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, rng_seed: RngSeed::Fixed(500), ..ProptestConfig::default() })]

    #[test]
    fn queue_matches_a_sorted_list(ops in proptest::collection::vec(op(), 1..120)) {
        check_against_model(ops)?;
    }

    #[test]
    fn queue_matches_a_sorted_list_with_pushes_into_the_past(ops in proptest::collection::vec(past_op(), 1..200)) {
        check_against_model(ops)?;
    }

    #[test]
    fn queue_matches_a_sorted_list_over_wide_times(ops in proptest::collection::vec(wide_op(), 1..300)) {
        check_against_model(ops)?;
    }
}

fn check_against_model(ops: Vec<Op>) -> Result<(), TestCaseError> {
    {
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
                Op::PushPast(dt) => {
                    seq += 1;
                    let t = now.saturating_sub(dt);
                    q.push(t, Event::Wake { vcpu: seq as u32 });
                    model.push((t, seq, Event::Wake { vcpu: seq as u32 }, None));
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
    Ok(())
}

#[test]
fn events_pushed_before_the_last_pop_still_pop_in_order() {
    // not something the simulation does, but the queue must not lose or misorder them
    let mut q = EventQueue::with_timers(1);
    q.push(10_000_000, Event::Sample);
    q.push(20_000_000, Event::Entitlement);
    assert_eq!(q.pop(), Some((10_000_000, Event::Sample)));
    q.push(5, Event::Wake { vcpu: 1 });
    q.push(10_000_000, Event::Wake { vcpu: 2 });
    assert_eq!(q.peek_time(), Some(5));
    assert_eq!(q.pop(), Some((5, Event::Wake { vcpu: 1 })));
    assert_eq!(q.pop(), Some((10_000_000, Event::Wake { vcpu: 2 })));
    assert_eq!(q.pop(), Some((20_000_000, Event::Entitlement)));
    assert_eq!(q.pop(), None);
}

#[test]
fn a_bucket_pushed_to_while_it_is_popped_keeps_its_order() {
    // one wheel bucket (2^18 ns wide): events appended behind the cursor's position, inserted
    // between pending ones, and one before the last popped time, which pops next
    let mut q = EventQueue::with_timers(0);
    for t in [100, 200, 300] {
        q.push(t, Event::Wake { vcpu: t as u32 });
    }
    assert_eq!(q.pop(), Some((100, Event::Wake { vcpu: 100 })));
    q.push(400, Event::Wake { vcpu: 400 });
    q.push(250, Event::Wake { vcpu: 250 });
    q.push(50, Event::Wake { vcpu: 50 });
    assert_eq!(q.pop(), Some((50, Event::Wake { vcpu: 50 })));
    assert_eq!(q.pop(), Some((200, Event::Wake { vcpu: 200 })));
    q.push(200, Event::Wake { vcpu: 201 }); // a tie with the last popped: after it, before 250
    let rest: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(t, _)| t).collect();
    assert_eq!(rest, vec![200, 250, 300, 400]);
    q.push(7, Event::Sample); // the emptied bucket starts again from its beginning
    assert_eq!(q.pop(), Some((7, Event::Sample)));
    assert!(q.is_empty());
}

#[test]
fn same_time_events_across_wheel_overflow_and_timers_keep_scheduling_order() {
    // 3 s ahead is beyond the wheel's window: the first goes to the overflow heap; after the
    // clock moves on, later pushes at the same instant go to the wheel
    let far = 3_000_000_000;
    let mut q = EventQueue::with_timers(1);
    q.push(far, Event::Wake { vcpu: 0 });
    q.push(2_500_000_000, Event::Sample);
    assert_eq!(q.pop(), Some((2_500_000_000, Event::Sample)));
    q.set_timer(0, far, Event::SliceEnd { pcpu: 0 });
    q.push(far, Event::Wake { vcpu: 1 });
    q.push(far, Event::Wake { vcpu: 2 });
    let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
    assert_eq!(
        order,
        vec![
            (far, Event::Wake { vcpu: 0 }),
            (far, Event::SliceEnd { pcpu: 0 }),
            (far, Event::Wake { vcpu: 1 }),
            (far, Event::Wake { vcpu: 2 }),
        ]
    );
}

#[test]
fn a_wheel_turn_and_beyond_pops_in_time_order() {
    // wakes spread over ten seconds, pushed while popping, each at most 0.7 s ahead, plus
    // one-shot events an hour out: the wheel wraps many times and never reorders
    let mut q = EventQueue::with_timers(0);
    let mut x: u64 = 12345;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    q.push(3_600_000_000_000, Event::Sample);
    for v in 0..64 {
        q.push(next() % 700_000_000, Event::Wake { vcpu: v });
    }
    let mut last = (0, 0u32);
    let mut popped = 0;
    while let Some((t, e)) = q.pop() {
        assert!(t >= last.0, "{t} after {}", last.0);
        last = (t, popped);
        popped += 1;
        if let Event::Wake { vcpu } = e {
            if t < 10_000_000_000 {
                q.push(t + next() % 700_000_000, Event::Wake { vcpu });
                if vcpu == 0 {
                    q.push(t, Event::Wake { vcpu: 1000 }); // at the current time
                }
            }
        }
    }
    assert_eq!(last.0, 3_600_000_000_000);
    assert!(q.is_empty());
}

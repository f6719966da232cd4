//! A VM's mean demand over successive windows, with a cursor into its trace.
//!
//! [`Workload::demand`] finds a trace's segment by binary search at every call; fluid mode asks
//! for windows that only move forward (each piece, each sample), so a cursor that remembers the
//! segment it reached walks the trace once over a run instead. The sum is the same, term by term
//! and in the same order, so the result is bit-identical to [`Workload::demand`] (tested); a
//! window that starts before the cursor (a trace starting over, or a caller going back) resets
//! it to the trace's start. Other workloads are asked directly.
//!
//! # Tunables
//! None.
//!
//! # Counters
//! None.
//!
//! # Known gaps
//! None known.

use crate::guest::Workload;
use crate::sim::Time;

/// Where a walk through a trace stands: the segment of the last position asked for.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cursor {
    k: usize,
}

impl Cursor {
    /// Mean demand of one vCPU of `w` between `t0` and `t1` ns after power-on, as
    /// [`Workload::demand`] gives it.
    pub fn demand(&mut self, w: &Workload, t0: Time, t1: Time) -> f64 {
        let Workload::Trace { .. } = w else {
            return w.demand(t0, t1);
        };
        if t1 <= t0 {
            return self.at(w, t0).0;
        }
        let mut t = t0;
        let mut area = 0.0;
        while t < t1 {
            let (u, next) = self.at(w, t);
            let end = next.map_or(t1, |n| n.min(t1));
            area += u * (end - t) as f64;
            if next.is_none() {
                break;
            }
            t = end;
        }
        area / (t1 - t0) as f64
    }

    /// Utilisation at `t` and the start of the next segment (absolute), if any: the trace's
    /// `trace_at`, the segment found from the cursor forward.
    fn at(&mut self, w: &Workload, t: Time) -> (f64, Option<Time>) {
        let Workload::Trace { starts, utilization, repeat, .. } = w else {
            return (0.0, None);
        };
        let total = *starts.last().expect("non-empty");
        let (base, local) = if t >= total {
            if !repeat {
                return (0.0, None);
            }
            (t - t % total, t % total)
        } else {
            (0, t)
        };
        let n = utilization.len();
        if self.k >= n || starts[self.k] > local {
            self.k = 0;
        }
        while self.k + 1 < n && starts[self.k + 1] <= local {
            self.k += 1;
        }
        (utilization[self.k], Some(base + starts[self.k + 1]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::WorkloadSpec;
    use proptest::prelude::*;

    proptest! {
        /// Windows moving forward (with jumps back now and then) over random traces, repeated or
        /// not: the cursor's mean is the binary search's, bit for bit.
        #[test]
        fn same_bits_as_the_binary_search(
            segs in prop::collection::vec((1u64..5_000, 0.0f64..1.0), 1..12),
            steps in prop::collection::vec((0u64..9_000, 0u64..9_000, any::<bool>()), 1..60),
            repeat in any::<bool>(),
        ) {
            let spec = WorkloadSpec::Trace {
                segment_ns: segs.iter().map(|s| s.0).collect(),
                utilization: segs.iter().map(|s| s.1).collect(),
                burst_ns: 1_000,
                repeat,
            };
            let w = Workload::from_spec(&spec, "w").unwrap();
            let mut c = Cursor::default();
            let mut t = 0u64;
            for (step, len, back) in steps {
                if back { t = t.saturating_sub(step); } else { t += step; }
                let got = c.demand(&w, t, t + len);
                prop_assert_eq!(got.to_bits(), w.demand(t, t + len).to_bits(), "window [{}, {})", t, t + len);
            }
        }
    }
}

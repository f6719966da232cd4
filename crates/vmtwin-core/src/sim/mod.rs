//! The engine vocabulary: integer time, the event queue and per-entity random streams.
//!
//! Time is `u64` nanoseconds. Events are ordered by `(time, seq)`, where `seq` is the order in
//! which they were scheduled, so equal-time events run in emission order and every run of the
//! same scenario and seed is identical. The run loop that consumes the queue lives in
//! [`crate::simulation`], because it dispatches to every subsystem.

mod queue;
mod rng;

pub use queue::{Event, EventQueue};
pub use rng::{stream_seed, Rng};

/// Simulated time in nanoseconds since the start of the run.
pub type Time = u64;

/// Nanoseconds in one microsecond.
pub const NS_PER_US: Time = 1_000;
/// Nanoseconds in one millisecond.
pub const NS_PER_MS: Time = 1_000 * NS_PER_US;
/// Nanoseconds in one second.
pub const NS_PER_S: Time = 1_000 * NS_PER_MS;

/// A non-negative duration in (fractional) nanoseconds, rounded half up to a [`Time`].
/// (`f64::round` is a libm call on baseline x86-64, and a float to `u64` conversion several
/// instructions; through `i64` this is two. Simulated times stay far below 2^63 ns, 292 years.)
#[inline]
pub fn ns(x: f64) -> Time {
    debug_assert!(x >= 0.0);
    (x + 0.5) as i64 as Time
}

/// A time as a float of nanoseconds, through `i64` (one instruction on x86-64, where `u64` takes several).
#[inline]
pub fn ns_f(t: Time) -> f64 {
    t as i64 as f64
}

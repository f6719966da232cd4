//! The engine vocabulary: integer time, the event queue and per-entity random streams.
//!
//! Time is `u64` nanoseconds. Events are ordered by `(time, seq)`, where `seq` is the order in
//! which they were scheduled, so equal-time events run in emission order and every run of the
//! same scenario and seed is identical. The run loop that consumes the queue lives in
//! [`crate::simulation`], because it dispatches to every subsystem.

mod queue;
mod rng;
pub(crate) mod tree;

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

/// `x` truncated toward zero, for `x` within (-2^63, 2^63), where it equals `x as i64`. On
/// x86-64 this is one `cvttsd2si`: `as i64` adds four instructions to saturate, and the
/// conversions of exponential draws, slices and limit turns are on hot paths (a workload
/// converts two draws per arrival: 0.6% of bench-mixed's instructions). Out of that range, or
/// for NaN, it gives `i64::MIN` where `as` would saturate (0 for NaN).
#[inline(always)]
pub fn trunc_i64(x: f64) -> i64 {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        use std::arch::x86_64::{_mm_cvttsd_si64, _mm_set_sd};
        // SAFETY: the target has SSE2 (checked by the `cfg`), all these two need
        unsafe { _mm_cvttsd_si64(_mm_set_sd(x)) }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        x as i64
    }
}

/// A non-negative duration in (fractional) nanoseconds, rounded half up to a [`Time`].
/// (`f64::round` is a libm call on baseline x86-64, and a float to `u64` conversion several
/// instructions; through [`trunc_i64`] this is two. Simulated times stay far below 2^63 ns,
/// 292 years: past it, or for NaN, this gives 2^63.)
#[inline]
pub fn ns(x: f64) -> Time {
    debug_assert!(x >= 0.0);
    trunc_i64(x + 0.5) as Time
}

/// A time as a float of nanoseconds, through `i64` (one instruction on x86-64, where `u64` takes several).
#[inline]
pub fn ns_f(t: Time) -> f64 {
    debug_assert!(t < 1 << 63);
    t as i64 as f64
}

/// `a.min(b)` for operands that are never NaN: one `minsd`, where `f64::min` takes several
/// instructions to honour a NaN (on the limits' hot path). `b` when they are equal.
#[inline(always)]
pub fn min_f(a: f64, b: f64) -> f64 {
    if a < b {
        a
    } else {
        b
    }
}

/// `a.max(b)` for operands that are never NaN (see [`min_f`]). `b` when they are equal.
#[inline(always)]
pub fn max_f(a: f64, b: f64) -> f64 {
    if a > b {
        a
    } else {
        b
    }
}

/// All ones when `c`, else zero: a select by bits, so that a choice on a flag that is a coin
/// toss from one item to the next (a walk over every vCPU) compiles to no branch.
#[inline(always)]
pub fn mask(c: bool) -> u64 {
    u64::from(c).wrapping_neg()
}

/// `if c { a } else { b }` by the floats' bits ([`mask`]): a float `if` on a flag may compile to
/// a branch, which a flag that is a coin toss from one vCPU to the next mispredicts.
#[inline(always)]
pub fn pick_f(c: bool, a: f64, b: f64) -> f64 {
    let m = mask(c);
    f64::from_bits((a.to_bits() & m) | (b.to_bits() & !m))
}

/// `x.powi(n as i32)`, inline. With an exponent known only at run time `f64::powi` is a call to
/// the runtime's `__powidf2`, and a call inside a walk over every vCPU makes the walk keep every
/// float it carries in memory across it (the calling convention saves no `xmm` register). The
/// same squarings and products in the same order as `__powidf2` (compiler-builtins' `pow`: the
/// product starts at 1 and takes `x` for each set bit of `n`, lowest first, `x` squared between
/// bits), so the same bits for every `x` and `n`.
#[inline(always)]
pub fn powi_u(mut x: f64, mut n: u32) -> f64 {
    let mut r = 1.0;
    loop {
        if n & 1 != 0 {
            r *= x;
        }
        n >>= 1;
        if n == 0 {
            return r;
        }
        x *= x;
    }
}

/// 2^52: from here on every `f64` is an integer (its 52 fraction bits are all whole units).
const F64_INTEGRAL_FROM: f64 = 4_503_599_627_370_496.0;

/// `x.ceil()` without the libm call `f64::ceil` compiles to on the baseline x86-64 target (no
/// SSE4.1; ~20 instructions and a call, on the limits' hot path). The same value for every `x`
/// but the sign of a zero result (`(-0.5).ceil()` is -0.0, this 0.0): below 2^52 in magnitude
/// [`trunc_i64`] truncates it exactly, and from there on every `f64` is an integer (as are the
/// infinities; NaN fails the test and comes back as NaN).
#[inline(always)]
pub fn ceil_f(x: f64) -> f64 {
    if x.abs() < F64_INTEGRAL_FROM {
        let t = trunc_i64(x) as f64;
        t + f64::from(u8::from(t < x))
    } else {
        x
    }
}

/// `ceil_f(x) as Time` (0 for a negative or NaN `x`, saturating above `u64::MAX`) with the
/// rounding done in integers: the truncation's `i64` is raised by one when it fell below `x`,
/// and only the `x` at or above 2^52 (already whole) is converted as a float. The same value
/// for every `x`, without the conversion back to a float and the several instructions of a
/// float-to-`u64` conversion: on the chain from a limit's bucket to the time of its refill
/// event (`time_to_resume`) and of a limited slice's end (`start_bound`).
#[inline(always)]
pub fn ceil_time(x: f64) -> Time {
    if x.abs() < F64_INTEGRAL_FROM {
        let t = trunc_i64(x);
        (t + i64::from((t as f64) < x)).max(0) as Time
    } else {
        x as Time
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ceil_f` against `f64::ceil` (the oracle): the same bits, or both zero.
    fn same_as_ceil(x: f64) {
        let (got, want) = (ceil_f(x), x.ceil());
        assert!(
            got.to_bits() == want.to_bits() || (got == 0.0 && want == 0.0) || (got.is_nan() && want.is_nan()),
            "ceil_f({x:e}) = {got:e}, f64::ceil gives {want:e}"
        );
    }

    #[test]
    fn ceil_time_is_ceil_f_as_time() {
        let same = |x: f64| assert_eq!(ceil_time(x), ceil_f(x) as Time, "ceil_time({x:e})");
        let edges = [
            0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.0 - f64::EPSILON, f64::MIN_POSITIVE, -f64::MIN_POSITIVE,
            F64_INTEGRAL_FROM - 0.5, -(F64_INTEGRAL_FROM - 0.5), F64_INTEGRAL_FROM, -F64_INTEGRAL_FROM, 9.3e18,
            -9.3e18, 1.9e19, 1e300, -1e300, f64::MAX, f64::MIN, f64::INFINITY, f64::NEG_INFINITY, f64::NAN,
        ];
        for x in edges {
            same(x);
            same(x.next_up());
            same(x.next_down());
        }
        // every exponent: random bit patterns (a fixed xorshift stream)
        let mut z = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            z ^= z << 13;
            z ^= z >> 7;
            z ^= z << 17;
            same(f64::from_bits(z));
        }
    }

    #[test]
    fn powi_u_is_powi() {
        // every exponent the demand estimate accepts (0-32) and beyond, on random bit patterns
        // (a fixed xorshift stream) and on ratios in [0, 1], what the estimate raises; the
        // exponent hidden from the optimiser, so that `powi` is the runtime call
        let mut z = 0x2545_f491_4f6c_dd1du64;
        let mut xs = vec![0.0, -0.0, 1.0, -1.0, 0.5, f64::MIN_POSITIVE, f64::MAX, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
        for _ in 0..20_000 {
            z ^= z << 13;
            z ^= z >> 7;
            z ^= z << 17;
            xs.push(f64::from_bits(z));
            xs.push((z >> 11) as f64 / (1u64 << 53) as f64);
        }
        for &x in &xs {
            for n in 0..=40u32 {
                let (got, want) = (powi_u(x, n), x.powi(std::hint::black_box(n) as i32));
                assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "powi_u({x:e}, {n}) = {got:e}, f64::powi gives {want:e}");
            }
        }
    }

    #[test]
    fn ceil_f_is_ceil() {
        let edges = [
            0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.0 - f64::EPSILON, f64::MIN_POSITIVE, -f64::MIN_POSITIVE,
            F64_INTEGRAL_FROM - 0.5, -(F64_INTEGRAL_FROM - 0.5), F64_INTEGRAL_FROM, -F64_INTEGRAL_FROM,
            F64_INTEGRAL_FROM + 1.0, 9.3e18, -9.3e18, 1e300, -1e300, f64::MAX, f64::MIN, f64::INFINITY,
            f64::NEG_INFINITY, f64::NAN,
        ];
        for x in edges {
            same_as_ceil(x);
            same_as_ceil(x.next_up());
            same_as_ceil(x.next_down());
        }
        // every exponent: random bit patterns (a fixed xorshift stream)
        let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            same_as_ceil(f64::from_bits(s));
            // and values of the size the token buckets use (|x| < 2^40 ns)
            same_as_ceil((s >> 11) as f64 / (1u64 << 13) as f64 - (1u64 << 39) as f64);
        }
    }
}

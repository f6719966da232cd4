//! The water level against an oracle written apart from it: bisection on lambda of
//! F(lambda) = sum clamp(lambda s_i, lo_i, hi_i), which needs no breakpoints at all.

use proptest::prelude::*;
use vmtwin_core::cpu::{water_fill, water_level, Claim};

fn f(level: f64, claims: &[Claim]) -> f64 {
    claims.iter().map(|c| (level * c.shares).clamp(c.lo, c.hi)).sum()
}

/// Smallest lambda with F(lambda) >= capacity, by bisection (infinite when the ceilings fit).
fn bisect(capacity: f64, claims: &[Claim]) -> f64 {
    if claims.iter().map(|c| c.hi).sum::<f64>() <= capacity {
        return f64::INFINITY;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while f(hi, claims) < capacity {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(mid, claims) >= capacity {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

fn claims() -> impl Strategy<Value = Vec<Claim>> {
    // shares spanning vSphere's range, floors and ceilings on a grid so that ties (equal
    // breakpoints, floors equal to ceilings, zero ceilings) are common
    proptest::collection::vec((1u32..20_000, 0u32..8, 0u32..8), 1..300).prop_map(|v| {
        v.into_iter()
            .map(|(s, a, b)| {
                let (lo, hi) = (a.min(b) as f64 * 250.0, a.max(b) as f64 * 250.0);
                Claim { shares: s as f64, lo, hi }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn level_matches_bisection(claims in claims(), frac in 0.0f64..1.2) {
        let lo: f64 = claims.iter().map(|c| c.lo).sum();
        let hi: f64 = claims.iter().map(|c| c.hi).sum();
        let capacity = lo + frac * (hi - lo).max(1.0);
        let got = water_level(capacity, &claims);
        if lo >= capacity {
            prop_assert_eq!(got, 0.0);
            return Ok(());
        }
        let want = bisect(capacity, &claims);
        if want.is_infinite() {
            prop_assert!(got.is_infinite(), "ceilings fit: {got}");
            return Ok(());
        }
        prop_assert!((got - want).abs() <= 1e-9 * want.max(1e-9), "level {got} vs bisection {want}");
        // and the split it gives fills the capacity
        let split: f64 = water_fill(capacity, &claims).iter().sum();
        prop_assert!((split - capacity).abs() <= 1e-9 * capacity.max(1.0), "split {split} of {capacity}");
    }
}

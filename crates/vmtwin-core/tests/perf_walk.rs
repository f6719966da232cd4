//! The nested-paging walk model against hand-computed references and an exact enumeration of
//! cache outcomes written independently of the closed form.

use proptest::prelude::*;
use vmtwin_core::perf::{nested_references, WalkParams, LEVELS_2M, LEVELS_4K};

#[test]
fn worst_case_references_match_the_hand_counted_table() {
    // (guest levels, host levels, references) counted on paper: each guest level costs an EPT
    // walk of m references plus its own entry, and the data address one more EPT walk.
    let table = [(4, 4, 24), (3, 4, 19), (4, 3, 19), (3, 3, 15), (5, 5, 35), (5, 4, 29), (1, 1, 3), (2, 4, 14)];
    for (n, m, refs) in table {
        assert_eq!(nested_references(n, m), refs, "{n}x{m}");
        let p = WalkParams { guest_levels: n, host_levels: m, ..WalkParams::default() };
        assert_eq!(p.nested_refs(), refs as f64);
        assert_eq!(p.native_refs(), n as f64);
    }
    assert_eq!((LEVELS_4K, LEVELS_2M), (4, 3));
}

/// Expected references by enumerating every outcome: the guest paging-structure cache hits or
/// misses (1 or n guest levels walked); each of the levels + 1 guest-physical translations then
/// hits the nested TLB (0 references), or hits the EPT paging-structure cache (1) or walks all m.
fn enumerated(n: u32, m: u32, hg: f64, hn: f64, he: f64) -> f64 {
    let mut expected = 0.0;
    for (levels, p_guest) in [(1u32, hg), (n, 1.0 - hg)] {
        let lookups = levels + 1;
        let outcomes = [(0u32, hn), (1, (1.0 - hn) * he), (m, (1.0 - hn) * (1.0 - he))];
        // every combination of outcomes over the lookups (3^lookups)
        let combos = 3usize.pow(lookups);
        for c in 0..combos {
            let (mut refs, mut p, mut k) = (levels, p_guest, c);
            for _ in 0..lookups {
                let (r, q) = outcomes[k % 3];
                refs += r;
                p *= q;
                k /= 3;
            }
            expected += p * refs as f64;
        }
    }
    expected
}

proptest! {
    #[test]
    fn expected_references_with_page_walk_caches_match_enumeration(
        n in 1u32..=5, m in 1u32..=5, hg in 0.0f64..=1.0, hn in 0.0f64..=1.0, he in 0.0f64..=1.0,
    ) {
        let p = WalkParams { guest_levels: n, host_levels: m, guest_pwc_hit: hg, nested_tlb_hit: hn, ept_pwc_hit: he, ..WalkParams::default() };
        let oracle = enumerated(n, m, hg, hn, he);
        prop_assert!((p.nested_refs() - oracle).abs() <= 1e-9 * oracle.max(1.0), "{} vs {}", p.nested_refs(), oracle);
        prop_assert!(p.nested_refs() <= nested_references(n, m) as f64 + 1e-12);
        prop_assert!(p.native_refs() <= n as f64);
    }

    #[test]
    fn walk_cycles_split_into_guest_and_ept_references(
        n in 1u32..=5, m in 1u32..=5, g in 0.0f64..100.0, e in 0.0f64..100.0, base in 0.0f64..50.0,
    ) {
        // no caches: every guest reference costs g, every EPT reference e
        let p = WalkParams { guest_levels: n, host_levels: m, guest_ref_cycles: g, ept_ref_cycles: e, walk_base_cycles: base, ..WalkParams::default() };
        let ept_refs = (nested_references(n, m) - n) as f64;
        prop_assert!((p.native_cycles() - (base + n as f64 * g)).abs() < 1e-9);
        prop_assert!((p.ept_cycles() - ept_refs * e).abs() < 1e-9);
        prop_assert!((p.nested_cycles() - (base + n as f64 * g + ept_refs * e)).abs() < 1e-9);
    }
}

#[test]
fn bad_walk_parameters_name_the_field() {
    let p = WalkParams { host_levels: 6, ..WalkParams::default() };
    let err = p.validate("vms[0].perf.user.walk").unwrap_err().to_string();
    assert!(err.contains("vms[0].perf.user.walk.host_levels: got 6"), "{err}");
    let p = WalkParams { nested_tlb_hit: 1.5, ..WalkParams::default() };
    assert!(p.validate("w").unwrap_err().to_string().contains("w.nested_tlb_hit"));
}

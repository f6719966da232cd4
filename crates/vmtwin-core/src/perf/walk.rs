//! The cost of one TLB miss: a one-dimensional page walk natively, a two-dimensional (nested)
//! walk under EPT/NPT.
//!
//! Natively a TLB miss walks the guest page table: `n` references, one per level (4 with 4 KB
//! pages and 4-level paging, 3 when the leaf is a 2 MB page). Under nested paging every guest
//! page-table entry sits at a guest-physical address that must itself be translated through the
//! `m`-level EPT before it can be read, and so must the final data address: for each of the `n`
//! guest levels an `m`-reference EPT walk plus the guest entry, then a last EPT walk, so
//! `n(m + 1) + m = nm + n + m` references (24 for 4K/4K, 19 for one side on 2 MB pages, 15 for
//! 2M/2M; research/perf-methodology.md A.8, C.3-3).
//!
//! Page-walk caches cut the count; their probabilities are expected values per walk:
//!
//! - a guest paging-structure cache hit (`guest_pwc_hit`) supplies every guest level above the
//!   leaf, so one guest level is walked instead of `n`: `G = h_g + (1 - h_g) n`;
//! - a nested-TLB hit (`nested_tlb_hit`) supplies a guest-physical to host-physical translation
//!   the walk needs, skipping that EPT walk entirely;
//! - an EPT paging-structure-cache hit (`ept_pwc_hit`) on an EPT walk that missed the nested TLB
//!   supplies the EPT levels above the leaf: one reference instead of `m`. References per EPT
//!   walk `E = (1 - h_n)(h_e + (1 - h_e) m)`.
//!
//! Expected references: native `G`, nested `G (1 + E) + E`. Cycles per walk:
//! `native = base + G x guest_ref_cycles`, `ept = (G + 1) x E x ept_ref_cycles` (the EPT sub-walks,
//! reported as their own counter and a subset of the walk cycles, as Intel's counters do),
//! `nested = native + ept`. This is the model of `python/vmtwin/methodology/nested_paging.py`,
//! whose calibration sets the per-reference costs from the paper's Table 3.
//!
//! # Tunables
//! [`WalkParams`]: `guest_levels`, `host_levels` (page sizes, GAP-8 of the extraction: a choice per
//! workload), the three hit probabilities (default 0: the paper gives no data on caches),
//! `guest_ref_cycles`, `ept_ref_cycles` (cycles per reference where the entries are found; with
//! the hit probabilities at 0 they are effective costs that absorb the caches) and
//! `walk_base_cycles` (fixed page-miss-handler cycles per walk).
//!
//! # Counters
//! None of its own: `model.rs` multiplies these per-walk figures by the walks it counts.
//!
//! # Known gaps
//! - The references are expected values, not a simulated cache hierarchy: where each entry is
//!   found is folded into the per-reference costs.
//! - Large pages are a per-layer choice, not a per-access mix.

use crate::{invalid, VmtwinResult};
use serde::{Deserialize, Serialize};

/// Paging levels walked for a 4 KB leaf with 4-level paging.
pub const LEVELS_4K: u32 = 4;
/// Paging levels walked for a 2 MB leaf with 4-level paging.
pub const LEVELS_2M: u32 = 3;

/// References of a full two-dimensional walk without caches: `nm + n + m`.
///
/// # Examples
/// ```
/// use vmtwin_core::perf::nested_references;
/// assert_eq!(nested_references(4, 4), 24);
/// assert_eq!(nested_references(3, 3), 15);
/// ```
pub fn nested_references(guest_levels: u32, host_levels: u32) -> u32 {
    guest_levels * host_levels + guest_levels + host_levels
}

/// One layer's page sizes, page-walk caches and per-reference costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WalkParams {
    /// Guest page-table levels walked per miss, dimensionless (3: 2 MB leaves, 4: 4 KB). Default 4.
    pub guest_levels: u32,
    /// EPT levels walked per guest-physical translation, dimensionless. Default 4.
    pub host_levels: u32,
    /// Probability a walk's upper guest levels come from the paging-structure cache,
    /// dimensionless. Default 0 (no data, research C.6 GAP-8).
    pub guest_pwc_hit: f64,
    /// Probability an EPT translation comes from the nested TLB, dimensionless. Default 0.
    pub nested_tlb_hit: f64,
    /// Probability an EPT walk's upper levels come from the EPT paging-structure cache,
    /// dimensionless. Default 0.
    pub ept_pwc_hit: f64,
    /// Cycles per guest page-table reference, dimensionless cycles. Default 12.5: OLTP user mode's
    /// native 50.4 cycles per walk over 4 levels (Table 3, 179K/3548; see the Python calibration).
    pub guest_ref_cycles: f64,
    /// Cycles per EPT reference, dimensionless cycles. Default 3.0 (chosen: an EPT entry mostly
    /// found in L1/L2; the Python presets calibrate it per workload).
    pub ept_ref_cycles: f64,
    /// Fixed page-miss-handler cycles per walk, dimensionless cycles. Default 0.
    pub walk_base_cycles: f64,
}

impl Default for WalkParams {
    fn default() -> Self {
        WalkParams {
            guest_levels: LEVELS_4K,
            host_levels: LEVELS_4K,
            guest_pwc_hit: 0.0,
            nested_tlb_hit: 0.0,
            ept_pwc_hit: 0.0,
            guest_ref_cycles: 12.5,
            ept_ref_cycles: 3.0,
            walk_base_cycles: 0.0,
        }
    }
}

impl WalkParams {
    /// Refuse levels outside 1..=5, probabilities outside [0, 1] and negative costs, naming `path`.
    pub fn validate(&self, path: &str) -> VmtwinResult<()> {
        for (name, v) in [("guest_levels", self.guest_levels), ("host_levels", self.host_levels)] {
            if !(1..=5).contains(&v) {
                invalid!(format!("{path}.{name}"), v, "a number of paging levels from 1 to 5");
            }
        }
        for (name, v) in [("guest_pwc_hit", self.guest_pwc_hit), ("nested_tlb_hit", self.nested_tlb_hit), ("ept_pwc_hit", self.ept_pwc_hit)] {
            if !(0.0..=1.0).contains(&v) {
                invalid!(format!("{path}.{name}"), v, "a probability from 0 to 1");
            }
        }
        for (name, v) in [("guest_ref_cycles", self.guest_ref_cycles), ("ept_ref_cycles", self.ept_ref_cycles), ("walk_base_cycles", self.walk_base_cycles)] {
            if !(v.is_finite() && v >= 0.0) {
                invalid!(format!("{path}.{name}"), v, "cycles >= 0");
            }
        }
        Ok(())
    }

    /// Expected guest levels walked per miss (`G`).
    pub fn guest_refs(&self) -> f64 {
        self.guest_pwc_hit + (1.0 - self.guest_pwc_hit) * self.guest_levels as f64
    }

    /// Expected references of one EPT walk (`E`).
    pub fn refs_per_ept_walk(&self) -> f64 {
        (1.0 - self.nested_tlb_hit) * (self.ept_pwc_hit + (1.0 - self.ept_pwc_hit) * self.host_levels as f64)
    }

    /// Expected references of a native walk.
    pub fn native_refs(&self) -> f64 {
        self.guest_refs()
    }

    /// Expected references of a nested walk: `G (1 + E) + E`.
    pub fn nested_refs(&self) -> f64 {
        let (g, e) = (self.guest_refs(), self.refs_per_ept_walk());
        g * (1.0 + e) + e
    }

    /// Cycles per walk without virtualization.
    pub fn native_cycles(&self) -> f64 {
        self.walk_base_cycles + self.guest_refs() * self.guest_ref_cycles
    }

    /// Cycles per walk spent in the EPT sub-walks.
    pub fn ept_cycles(&self) -> f64 {
        (self.guest_refs() + 1.0) * self.refs_per_ept_walk() * self.ept_ref_cycles
    }

    /// Cycles per walk under nested paging, EPT part included.
    pub fn nested_cycles(&self) -> f64 {
        self.native_cycles() + self.ept_cycles()
    }
}

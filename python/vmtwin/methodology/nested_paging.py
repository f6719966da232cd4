"""Two-dimensional (nested) page-walk cost: references per TLB miss and the cycles they take.

Without virtualization a TLB miss walks the guest page table: ``n`` references, one per level
(4 with 4 KB pages and 4-level paging, 3 when the leaf is a 2 MB page, 5 with 5-level paging).
Under EPT/NPT each guest page-table entry sits at a guest-physical address that must itself be
translated through the ``m``-level EPT before it can be read, and so must the final data address:
for each of the ``n`` guest levels an ``m``-reference EPT walk plus the guest entry itself, then a
last EPT walk, ``n(m + 1) + m = nm + n + m`` references (24 for 4K/4K, 19 for 2M on 4K or 4K on
2M, 15 for 2M/2M; research A.8, the standard result Figure 4 depicts: External). One less level
for large pages "in each direction (independently for guest and host pages)" [seed 001 §4].

Caches cut the count (the paper gives no data on them; probabilities here are expected values):

- a **guest paging-structure cache** hit (``guest_pwc_hit``) supplies every guest level above the
  leaf, so only the leaf level is walked;
- a **nested TLB** hit (``nested_tlb_hit``) supplies a guest-physical -> host-physical translation
  the walk needs, skipping that EPT walk entirely;
- an **EPT paging-structure cache** hit (``ept_pwc_hit``) on an EPT walk that missed the nested TLB
  supplies the EPT levels above the leaf: one reference instead of ``m``.

Expected references: guest levels walked ``G = h_g + (1 - h_g) n``; references per EPT walk
``E = (1 - h_n)(h_e + (1 - h_e) m)``; nested walk ``G (1 + E) + E``, native ``G``. With every
probability 0 this is the worst case above.

Cycles: ``walk_cycles = base + G x guest_ref_cycles + (G + 1) x E x ept_ref_cycles`` and
``ept_walk_cycles = (G + 1) x E x ept_ref_cycles``, the EPT part being a subset of the walk
cycles, as the counters report it (research C.5-3). The per-reference costs stand for where the
entries are found in the cache hierarchy; :func:`calibrate` sets them from a native walk latency
and a measured EPT-cycles-per-walk, so with the cache probabilities at 0 they are effective costs
that absorb the caches the paper does not describe.

Tunables (:class:`WalkParams`): ``guest_levels``, ``host_levels`` (page sizes: a decision per
workload, GAP-8), the three hit probabilities (default 0: no data), ``guest_ref_cycles``,
``ept_ref_cycles`` (cycles per reference; defaults calibrated on OLTP user-mode Table 3, see
:data:`OLTP_USER`), ``walk_base_cycles`` (fixed page-miss-handler cycles per walk, default 0).

This is a standalone analytic model. The simulator's execution-speed model (the full-scheduler
issue, Rust ``perf/``) is where walks get counted per run; it should emit ``dtlb_walks``,
``dtlb_walk_cycles`` and ``ept_walk_cycles`` in the :mod:`.schema` so ``vmtwin overhead`` reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from vmtwin.exceptions import scenario_error

#: Levels of x86-64 paging for a leaf of this size (4-level paging).
LEVELS_4K = 4
LEVELS_2M = 3


def references(guest_levels: int, host_levels: int) -> int:
    """Page-table references of a full 2D walk, counted level by level (no caches).

    >>> references(4, 4), references(3, 4), references(4, 3), references(3, 3)
    (24, 19, 19, 15)
    """
    refs = 0
    for _ in range(guest_levels):
        refs += host_levels  # translate the gPA of this level's guest table through the EPT
        refs += 1  # read the guest entry
    return refs + host_levels  # translate the data gPA


@dataclass(frozen=True)
class WalkParams:
    """One page-size and cache configuration and its per-reference costs (cycles)."""

    guest_levels: int = LEVELS_2M
    host_levels: int = LEVELS_2M
    guest_pwc_hit: float = 0.0
    nested_tlb_hit: float = 0.0
    ept_pwc_hit: float = 0.0
    guest_ref_cycles: float = 0.0
    ept_ref_cycles: float = 0.0
    walk_base_cycles: float = 0.0

    def __post_init__(self) -> None:
        for name in ("guest_levels", "host_levels"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 5:
                raise scenario_error(f"walk.{name}", v, "a number of paging levels from 1 to 5")
        for name in ("guest_pwc_hit", "nested_tlb_hit", "ept_pwc_hit"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                raise scenario_error(f"walk.{name}", v, "a probability from 0 to 1")
        for name in ("guest_ref_cycles", "ept_ref_cycles", "walk_base_cycles"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
                raise scenario_error(f"walk.{name}", v, "cycles >= 0")

    @property
    def guest_refs(self) -> float:
        """Expected guest levels walked (G)."""
        return self.guest_pwc_hit + (1 - self.guest_pwc_hit) * self.guest_levels

    @property
    def refs_per_ept_walk(self) -> float:
        """Expected references of one EPT walk (E)."""
        return (1 - self.nested_tlb_hit) * (self.ept_pwc_hit + (1 - self.ept_pwc_hit) * self.host_levels)

    def nested_references(self) -> float:
        return self.guest_refs * (1 + self.refs_per_ept_walk) + self.refs_per_ept_walk

    def native_references(self) -> float:
        return self.guest_refs

    def native_walk_cycles(self) -> float:
        """Cycles per walk without virtualization."""
        return self.walk_base_cycles + self.guest_refs * self.guest_ref_cycles

    def ept_walk_cycles(self) -> float:
        """Cycles per walk spent in the EPT sub-walks."""
        return (self.guest_refs + 1) * self.refs_per_ept_walk * self.ept_ref_cycles

    def nested_walk_cycles(self) -> float:
        """Cycles per walk under nested paging (EPT part included)."""
        return self.native_walk_cycles() + self.ept_walk_cycles()


def calibrate(params: WalkParams, native_cycles_per_walk: float, ept_cycles_per_walk: float) -> WalkParams:
    """Per-reference costs such that the model gives these two measured figures for ``params``' pages and caches."""
    if native_cycles_per_walk < params.walk_base_cycles:
        raise scenario_error("native_cycles_per_walk", native_cycles_per_walk,
                             f"at least walk_base_cycles ({params.walk_base_cycles})")
    ept_refs = (params.guest_refs + 1) * params.refs_per_ept_walk
    if ept_refs == 0 and ept_cycles_per_walk > 0:
        raise scenario_error("ept_cycles_per_walk", ept_cycles_per_walk, "0 when every EPT walk hits the nested TLB")
    return replace(params, guest_ref_cycles=(native_cycles_per_walk - params.walk_base_cycles) / params.guest_refs,
                   ept_ref_cycles=ept_cycles_per_walk / ept_refs if ept_refs else 0.0)


# Calibration points, OLTP user mode, Table 3 (research A.6.3-9, -10): native PMH cycles per walk
# 179K/3548 and Guest EMON EPT cycles per walk 198K/3385. Pages: the Oracle SGA is on 2 MB guest
# pages ("vm.nr_hugepages", §2.2.1); the host backing is not stated (GAP-8): 2 MB assumed (ESX
# backs guest memory with large pages when it can: External).
OLTP_USER = calibrate(WalkParams(guest_levels=LEVELS_2M, host_levels=LEVELS_2M), 179e3 / 3548, 198e3 / 3385)
# OLTP kernel mode, same table: native 40K/1218, Guest EMON EPT 35K/1314. Guest kernel pages not
# stated (GAP-8): 4 KB guest assumed, 2 MB host.
OLTP_KERNEL = calibrate(WalkParams(guest_levels=LEVELS_4K, host_levels=LEVELS_2M), 40e3 / 1218, 35e3 / 1314)

"""Workload presets per unit of work, calibrated on some of the paper's cells, predicting others.

A preset is the part of an execution-speed model the Tier-1 tables can pin down, per unit of
work (transaction, row, request):

- **CPU-bound work** (OLTP per transaction, Hadoop per row), per mode: ``cycles = instructions x
  CPI_base + walks x cycles_per_walk``. ``CPI_base`` is calibrated on the native run (its cycles
  minus its page-walk cycles, over its instructions); the walk cost comes from
  :mod:`.nested_paging`, calibrated on OLTP's native walk latency and guest EPT cycles per walk.
  Virtualization then changes only the walk (2D) and whatever instructions and walks the virtual
  run is given: caches, the hypervisor's own work and I/O are *not* in this preset, so what the
  prediction misses is the part of the overhead those carry.
- **Request-response latency** (Table 6): ``virtual = native x (1 + inflation) + fixed``, the
  inflation being the cycle inflation hybrid-mode counters measure (Table 7), the fixed part the
  extra I/O layers (research A.8, latency model), calibrated on one workload (Ping).

The reproduction ``tier1-presets`` lists which cells calibrate and which are predictions.
"""

from __future__ import annotations

from dataclasses import dataclass

from vmtwin.methodology.nested_paging import WalkParams
from vmtwin.methodology.schema import Run


@dataclass(frozen=True)
class ModePreset:
    """One mode's preset: base CPI (cycles per instruction outside page walks) and the walk model."""

    cpi_base: float
    walk: WalkParams

    def cycles(self, instructions: float, walks: float, nested: bool) -> dict[str, float]:
        per_walk = self.walk.nested_walk_cycles() if nested else self.walk.native_walk_cycles()
        ept = walks * self.walk.ept_walk_cycles() if nested else 0.0
        return {"cycles": instructions * self.cpi_base + walks * per_walk, "walk_cycles": walks * per_walk,
                "ept_walk_cycles": ept}


def calibrate_mode(native: Run, mode: str, walk: WalkParams) -> ModePreset:
    """CPI_base from the native run's cycles minus its walk cycles, per instruction."""
    c, i = native.per_unit("cycles", mode), native.per_unit("instructions", mode)
    w = native.per_unit("dtlb_walk_cycles", mode) or 0.0
    return ModePreset(cpi_base=(c - w) / i, walk=walk)


@dataclass(frozen=True)
class LatencyPreset:
    """Request-response latency under virtualization: fixed µs plus a proportional inflation."""

    fixed_us: float
    inflation: float

    def virtual_us(self, native_us: float) -> float:
        return native_us * (1 + self.inflation) + self.fixed_us

    @classmethod
    def calibrate(cls, native_us: float, virtual_us: float, inflation: float) -> "LatencyPreset":
        return cls(fixed_us=virtual_us - native_us * (1 + inflation), inflation=inflation)

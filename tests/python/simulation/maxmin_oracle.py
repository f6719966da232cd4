"""An exact hierarchical weighted max-min CPU allocation, written for the tests independently of
the engine's entitlement code (it was not read while writing this).

vSphere's semantics (research/cpu.md C1), in MHz:

- host capacity C = cores x core MHz (hyperthreads add nothing);
- a VM with n vCPUs, shares s, reservation r, limit L and demand D has a ceiling
  hi = min(D, L, n x core MHz) and a floor lo = min(r, hi);
- a resource pool with reservation R and limit Lp has a ceiling min(Lp, sum of its children's
  ceilings) and a floor min(max(R, sum of its children's floors), ceiling);
- top down, each parent's allocation A (the root's is C) is split over its children by weighted
  max-min with floors and ceilings: a_i = clamp(lambda x s_i, lo_i, hi_i) with lambda such that
  sum a_i = A, or every child at its ceiling if the ceilings fit in A.

The split is solved exactly: sum_i clamp(lambda x s_i, lo_i, hi_i) is continuous, nondecreasing
and piecewise linear in lambda with breakpoints lo_i/s_i and hi_i/s_i, so the level is found on
the segment where the sum crosses A and solved there in closed form.

Only open-loop ``cpu_bound`` and ``idle`` workloads have an exact demand (duty x vCPUs x core
MHz, or 0); :func:`from_scenario` refuses anything else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

VM_SHARE_LEVELS = {"low": 500, "normal": 1000, "high": 2000}  # per vCPU
POOL_SHARE_LEVELS = {"low": 2000, "normal": 4000, "high": 8000}


@dataclass
class OVm:
    """A VM as the oracle sees it (MHz throughout; ``limit=None`` is unlimited)."""

    name: str
    vcpus: int
    shares: float
    demand: float
    reservation: float = 0.0
    limit: Optional[float] = None


@dataclass
class OPool:
    """A resource pool and its children (pools and VMs)."""

    name: str
    shares: float
    reservation: float = 0.0
    limit: Optional[float] = None
    expandable: bool = True
    children: list = field(default_factory=list)


Node = Union[OVm, OPool]


def split(amount: float, shares: Sequence[float], lo: Sequence[float], hi: Sequence[float]) -> list[float]:
    """Weighted max-min split of ``amount`` with per-child floors and ceilings.

    Returns a_i = clamp(lambda x s_i, lo_i, hi_i) with sum a_i = amount, or ``hi`` itself when the
    ceilings fit. If the floors alone exceed ``amount`` (admission control should prevent it)
    the floors are scaled down proportionally.
    """
    n = len(shares)
    assert len(lo) == n and len(hi) == n
    for s, a, b in zip(shares, lo, hi):
        assert s > 0 and 0 <= a <= b, (s, a, b)
    if n == 0:
        return []
    if sum(hi) <= amount:
        return list(hi)
    floors = sum(lo)
    if floors >= amount:
        return [x * amount / floors if floors > 0 else 0.0 for x in lo]

    def total(level: float) -> float:
        return sum(min(max(level * s, a), b) for s, a, b in zip(shares, lo, hi))

    points = sorted({a / s for s, a in zip(shares, lo)} | {b / s for s, b in zip(shares, hi)})
    prev = 0.0  # total(0) = sum(lo) < amount
    for q in points:
        if total(q) >= amount:
            break
        prev = q
    else:  # pragma: no cover - total(max point) = sum(hi) > amount
        raise AssertionError("no crossing")
    # on (prev, q) the children strictly between their floor and ceiling grow at rate s_i
    base = total(prev)
    slope = sum(s for s, a, b in zip(shares, lo, hi) if a / s <= prev and b / s >= q and b > a)
    assert slope > 0
    level = prev + (amount - base) / slope
    return [min(max(level * s, a), b) for s, a, b in zip(shares, lo, hi)]


def ceiling(node: Node, core_mhz: float, memo: Optional[dict] = None) -> float:
    """A node's ceiling; `memo` (by node id) keeps each subtree's for one allocation."""
    if memo is not None and id(node) in memo:
        return memo[id(node)]
    if isinstance(node, OVm):
        hi = min(node.demand, node.vcpus * core_mhz)
    else:
        hi = sum(ceiling(c, core_mhz, memo) for c in node.children)
    hi = hi if node.limit is None else min(hi, node.limit)
    if memo is not None:
        memo[id(node)] = hi
    return hi


def floor(node: Node, core_mhz: float, memo: Optional[dict] = None, hi_memo: Optional[dict] = None) -> float:
    """A node's floor; `memo` and `hi_memo` (by node id) keep floors and ceilings for one allocation."""
    if memo is not None and id(node) in memo:
        return memo[id(node)]
    hi = ceiling(node, core_mhz, hi_memo)
    if isinstance(node, OVm):
        lo = min(node.reservation, hi)
    else:
        lo = min(max(node.reservation, sum(floor(c, core_mhz, memo, hi_memo) for c in node.children)), hi)
    if memo is not None:
        memo[id(node)] = lo
    return lo


def allocate(capacity: float, children: Sequence[Node], core_mhz: float) -> dict[str, float]:
    """MHz allocated to every VM and pool (by name) below a root of ``capacity`` MHz."""
    out: dict[str, float] = {}
    lo: dict[int, float] = {}
    hi: dict[int, float] = {}

    def down(amount: float, kids: Sequence[Node]) -> None:
        got = split(amount, [k.shares for k in kids], [floor(k, core_mhz, lo, hi) for k in kids],
                    [ceiling(k, core_mhz, hi) for k in kids])
        for k, a in zip(kids, got):
            out[k.name] = a
            if isinstance(k, OPool):
                down(a, k.children)

    down(capacity, list(children))
    return out


# --------------------------------------------------------------------------------------------
# From a vmtwin Scenario
# --------------------------------------------------------------------------------------------


def _shares(value, levels: dict[str, int], mult: int) -> float:
    if isinstance(value, str):
        return float(levels[value.strip().lower()] * mult)
    return float(value)


def _demand(vm, core_mhz: float) -> float:
    w = vm.workload
    if w.type == "idle":
        return 0.0
    if w.type == "cpu_bound" and w.arrivals == "open":
        return w.duty * vm.vcpus * core_mhz
    raise ValueError(f"{vm.name}: only open-loop cpu_bound and idle workloads have an exact demand")


def from_scenario(sc) -> tuple[float, float, list[Node]]:
    """(capacity MHz, core MHz, root children) of a ``vmtwin.Scenario`` (all VMs on at t=0)."""
    core = float(sc.host.core_mhz)
    capacity = sc.host.cores * core
    pools = {p.name: OPool(p.name, _shares(p.cpu.shares, POOL_SHARE_LEVELS, 1), float(p.cpu.reservation),
                           None if p.cpu.limit is None else float(p.cpu.limit), p.cpu.expandable_reservation)
             for p in sc.resource_pools}
    root: list[Node] = []
    for p in sc.resource_pools:
        (root if p.parent is None else pools[p.parent].children).append(pools[p.name])
    for vm in sc.vms:
        if vm.power_on != 0:
            raise ValueError(f"{vm.name}: the oracle assumes every VM is on from the start")
        for name in vm.expanded_names():
            o = OVm(name, vm.vcpus, _shares(vm.cpu.shares, VM_SHARE_LEVELS, vm.vcpus), _demand(vm, core),
                    float(vm.cpu.reservation), None if vm.cpu.limit is None else float(vm.cpu.limit))
            (root if vm.pool is None else pools[vm.pool].children).append(o)
    return capacity, core, root


def expected_vm_mhz(sc) -> dict[str, float]:
    """Long-run MHz each VM of the scenario should use."""
    capacity, core, root = from_scenario(sc)
    alloc = allocate(capacity, root, core)
    names = [n for vm in sc.vms for n in vm.expanded_names()]
    return {n: alloc[n] for n in names}


def expected_used_pct(sc) -> dict[str, float]:
    """Long-run esxtop %USED of each VM (100 = one pCPU; a 2-vCPU VM can show 200)."""
    core = float(sc.host.core_mhz)
    return {n: 100.0 * a / core for n, a in expected_vm_mhz(sc).items()}

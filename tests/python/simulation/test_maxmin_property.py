"""Property test: every VM's long-run CPU is the exact hierarchical max-min allocation.

Random hosts (1-8 cores, no hyperthreading), 1-8 VMs of 1-8 vCPUs with open-loop CPU work (so
each VM's demand is exactly duty x vCPUs x core MHz whatever the contention) or idle, random
shares, reservations and limits, inside up to two levels of resource pools with shares,
expandable or fixed reservations and limits. Each runs 60 simulated seconds; the CPU each VM
used from 5 s to the end is compared with ``maxmin_oracle`` (written apart from the engine):
within 2% of the allocation, or 0.5% of a pCPU for tiny ones.

Work is open loop, so no demand is lost to a VM's own queueing, but work queued before the
window is served inside it: until the first demand estimate (1 s) every VM is taken to want a
whole pCPU per vCPU, and a VM the start-up entitlements held back enters the window with a
backlog. One whose share is barely above its demand drains it for most of the minute (seen: 0.75
s of work at 1.7 points a second). So the oracle takes each VM's demand over the window as what
it used when that is more than its arrivals (`window_demand`): max-min still caps it at its
share, and the others are judged against what it left. Nothing is excused at the other end: a VM
that ends the window with work queued got less than it asked for over the window, and if max-min
gives it its demand that is a miss. Near critical load that queue is no finite-run remainder:
where it was traced it grew at a steady rate all minute (a VM served below its arrivals, its
entitlement undelivered; docs/cpu-scheduler.md), so crediting it to the VM would hide a
scheduler gap, and the test does not.

Reservations are drawn top down inside budgets that admission control accepts (a fixed pool's
children stay within its reservation, an expandable pool's within what it may borrow, every
pool's within its limit, the root's within 90% of the host), so no example is refused.

Exponential bursts are drawn only for VMs whose demand exceeds their allocation by 15% or more:
Poisson arrivals make a VM's realised demand over a minute wander by several percent around its mean,
more than the tolerance, whereas a backlogged VM uses its allocation whatever its arrivals do.

An example whose run needs more than MAX_EVENTS_PER_S events per simulated second fails too (an
engine thrashing on events), which keeps the file's runtime bounded. Failing examples are not
shrunk (each try is a simulation; shrinking took minutes): the message prints the whole
scenario, expected and got per VM, and the example database replays it first next time.

Beside VMs whose bursts get all they want, a held-back VM can get less than max-min on mean
demands: it loses what the bursts overlap and can make it up only in its slack (each vCPU runs
on one pCPU at most). Four vCPUs bursting at 0.52 each (fixed 5 ms bursts, under their VM's
share) beside a busy 2-vCPU VM, on 4 pCPUs: max-min gives the busy VM 1.92 pCPUs, the engine
1.47 to 1.91 by seed. Reaching 1.92 needs the bursty vCPUs READY about half the time
(scripts/gps_bursty_case.py), which issue 5's semantic test (a VM under its share gets its
demand with near-zero %RDY) forbids. So where a scenario is burst-exposed (a VM bursts under its
share, and the VMs' vCPUs can exceed the host or a limit bind), a VM off max-min is judged against a
range: from the least to the most of max-min and the two references of `fluid_oracle`, written
apart from the engine, over the engine's own arrival phases: fluid hierarchical max-min at every
instant with the under-share bursts served at once, and with every VM at its share of the
instant. Each end has the tolerance above. Where no VM bursts under its share, or nothing can
contend, the references are max-min (`test_fluid_oracle.py`), and only max-min is used.

What the tests hold: the test over a fixed sample of the scenarios `attainable` keeps (all but
near-critical load) is strict, and so are the burst cases in `data/maxmin_bursts` and the limited
pool's share split in `data/maxmin_split`. The two tests
over every drawn scenario judge the same way and stay quarantined (non-strict xfail) until the
census of their draws is clean; they run on every `make test` and report XPASS/XFAIL, so
progress shows. `test_maxmin_steady.py` runs the same draws for 120 s and judges them from 30 s,
after the start-up transients, and is strict. What they still miss, the census numbers and the history of each fix are in
docs/cpu-scheduler.md ("The max-min property test: census and open misses").
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from maxmin_oracle import expected_vm_mhz

from vmtwin import VM, CpuBound, Host, Idle, ResourcePool, Scenario, Simulation
from vmtwin.scenario.loading import load_scenario

KNOWN_GAPS = pytest.mark.xfail(
    strict=False,
    reason="issue 5 (docs/cpu-scheduler.md, census and open misses): one run in seven to forty (sessions 38-42: 2.5-15% of 40-60 runs each) draws a VM off "
           "max-min, mostly by 0.5-2.5 points of a pCPU (flat 15976149's by 4.8), of the kinds kept in data/maxmin_open (a never-halting vCPU's "
           "demand estimate, max_debt met first by a lone debtor, start-up backlogs drained at a held-back VM's thin margin, small "
           "over-allocations near critical load); most are start-up transients, which test_maxmin_steady.py (from 30 s, strict) leaves out")

DURATION_S = 60
WARMUP_S = 5
REL_TOL = 0.02
ABS_TOL_PCPU = 0.005
BACKLOG = 1.15  # demand / allocation above which a VM's bursts may be exponential
MAX_EVENTS_PER_S = 500_000


class _HypothesisPick:
    """Draws through Hypothesis (shrinkable, explorable)."""

    def __init__(self, draw):
        self._draw = draw

    def int(self, lo, hi):
        return self._draw(st.integers(lo, hi))

    def choice(self, seq):
        return self._draw(st.sampled_from(seq))

    def coin(self):
        return self._draw(st.booleans())


class _RandomPick:
    """The same draws from a seeded ``random.Random``: a sample that no test-suite context can
    change (Hypothesis mixes constants from every imported module into its draws)."""

    def __init__(self, seed):
        self._rng = random.Random(seed)

    def int(self, lo, hi):
        return self._rng.randint(lo, hi)

    def choice(self, seq):
        return self._rng.choice(list(seq))

    def coin(self):
        return self._rng.random() < 0.5


def _shares(pick, levels):
    return pick.choice(levels) if pick.coin() else pick.int(1, 20_000)


@st.composite
def scenarios(draw, with_pools=True):
    return make_scenario(_HypothesisPick(draw), with_pools)


def make_scenario(pick, with_pools=True):
    cores = pick.int(1, 8)
    core_mhz = pick.choice([1000, 2000, 2600])
    capacity = cores * core_mhz

    # pool tree: up to 3 pools under the root, each with up to 2 child pools
    pools = []  # (name, parent)
    if with_pools:
        for i in range(pick.int(0, 3)):
            pools.append((f"p{i}", None))
            for j in range(pick.int(0, 2)):
                pools.append((f"p{i}{j}", f"p{i}"))
    containers = [None] + [name for name, _ in pools]

    vms = []  # dicts, reservations filled in below
    for i in range(pick.int(1, 8)):
        vcpus = pick.int(1, min(cores, 8))
        limited = pick.int(0, 3) == 0
        limit = pick.int(max(1, core_mhz // 10), vcpus * core_mhz) if limited else None
        idle = pick.int(0, 7) == 0
        vms.append({
            "name": f"vm{i}", "pool": pick.choice(containers), "vcpus": vcpus,
            "shares": _shares(pick, ["low", "normal", "high"]), "limit": limit,
            "duty": None if idle else pick.int(5, 100) / 100, "reservation": 0,
            "burst_ms": pick.choice([2, 5, 10]),
        })

    # reservations and pool settings, top down within budgets admission control accepts
    pool_cfg = {}

    def fill(container, budget):
        kids = [("pool", p) for p, parent in pools if parent == container]
        kids += [("vm", v) for v in vms if v["pool"] == container]
        left = budget
        for kind, kid in kids:
            want = pick.int(0, left) if left > 0 and pick.coin() else 0
            if kind == "vm":
                cap = kid["vcpus"] * core_mhz if kid["limit"] is None else kid["limit"]
                kid["reservation"] = r = min(want, cap)
                left -= r
            else:
                limit = pick.int(core_mhz // 4, capacity) if pick.int(0, 2) == 0 else None
                b = want if limit is None else min(want, limit)
                expandable = pick.coin()
                res = b if not expandable else pick.int(0, b)
                pool_cfg[kid] = {"shares": _shares(pick, ["low", "normal", "high"]), "reservation": f"{res}MHz",
                                 "limit": "unlimited" if limit is None else f"{limit}MHz",
                                 "expandable_reservation": expandable}
                fill(kid, b)
                left -= b

    fill(None, int(capacity * 0.9))

    def build(dist_for):
        return Scenario(
            name="maxmin", seed=seed,
            duration=f"{DURATION_S}s", sample_interval="5s",
            host=Host(cores_per_llc=cores, threads_per_core=1, core_mhz=f"{core_mhz}MHz"),
            resource_pools=[ResourcePool(name=p, parent=parent, cpu=pool_cfg[p]) for p, parent in pools],
            vms=[VM(name=v["name"], pool=v["pool"], vcpus=v["vcpus"],
                    cpu={"shares": v["shares"], "reservation": f"{v['reservation']}MHz",
                         "limit": "unlimited" if v["limit"] is None else f"{v['limit']}MHz"},
                    workload=Idle() if v["duty"] is None else
                    CpuBound(duty=v["duty"], burst=f"{v['burst_ms']}ms", arrivals="open",
                             burst_distribution=dist_for.get(v["name"], "fixed")))
                 for v in vms])

    seed = pick.int(0, 2**32)
    fixed = build({})
    expected = expected_vm_mhz(fixed)
    dist = {}
    for v in vms:
        demand = 0.0 if v["duty"] is None else v["duty"] * v["vcpus"] * core_mhz
        if demand >= BACKLOG * expected[v["name"]] and pick.coin():
            dist[v["name"]] = "exponential"
    return build(dist)


def measure(sc: Scenario, window: tuple[int, int] | None = None) -> dict[str, float]:
    """MHz each VM used from WARMUP_S to the end (or over `window`, (from, to) in s; the
    scenario must run at least to its end).

    Runs in 5 s steps and fails early if the engine needs more than MAX_EVENTS_PER_S per simulated
    second: bursts (at most one per 2 ms per pCPU's worth of work), quanta, samples and entitlement
    updates come to a few thousand per pCPU (a binding pool limit served in 1 ms slices: tens of
    thousands), so beyond that the engine is thrashing (seen: 4.4 M/s on 8 pCPUs, 37 s for one
    example), and the test's runtime stays bounded.
    """
    warmup_s, duration_s = window or (WARMUP_S, DURATION_S)
    sim = Simulation(sc)
    sim.run_until(f"{warmup_s}s")
    before = {v: sim.counters(v)["used_ns"] for v in sim.vm_names}
    for t in range(warmup_s + 5, duration_s + 1, 5):
        sim.run_until(f"{t}s")
        assert sim.event_count <= MAX_EVENTS_PER_S * t, (
            f"{sim.event_count} events in the first {t} s on {sc.host.cores} pCPUs: the engine thrashes\n"
            f"{sc.to_yaml()}")
    span = (duration_s - warmup_s) * 1e9
    core = sc.host.core_mhz
    return {v: (sim.counters(v)["used_ns"] - before[v]) / span * core for v in sim.vm_names}


def window_demand(sc: Scenario, got: dict[str, float]) -> Scenario:
    """`sc` with each VM's demand as it was over the measured window.

    Work is open loop, so a VM the start-up entitlements held back (each VM's demand is guessed
    at a whole pCPU per vCPU until the first estimate) enters the window with work queued, and
    drains it inside the window on top of its arrivals. Its demand over the window is then what
    it used: its arrivals plus the backlog it drained, and max-min gives it that if its share
    holds it. Only VMs that used more than their arrivals are raised, only to what they used,
    and the oracle still caps them at their share, so a VM the scheduler over-serves is caught.
    """
    core = sc.host.core_mhz
    raised = sc.model_copy(deep=True)
    for vm in raised.vms:
        w = vm.workload
        if isinstance(w, Idle) or w.duty >= 1.0:
            continue
        used_duty = got[vm.name] / (vm.vcpus * core)
        if used_duty > w.duty:
            w.duty = min(1.0, used_duty)
    return raised


def violations(sc: Scenario, window: tuple[int, int] | None = None) -> tuple[list[str], str]:
    """(VMs off their range, a report of the scenario with the range and got per VM), judged
    from WARMUP_S to the end, or over `window` ((from, to) in s, as `measure`).

    A VM's range is its max-min allocation on the window's mean demands, widened where the
    scenario is burst-exposed to what serving under-share bursts at once attains
    (`fluid_oracle.judge`; computed only when max-min alone leaves a VM off)."""
    import fluid_oracle  # noqa: PLC0415 - here: the census imports this module, and an import
    # at the top would change its Hypothesis sample (constants of every local module)

    core = sc.host.core_mhz
    got = measure(sc, window)
    expected = expected_vm_mhz(window_demand(sc, got))
    bad, span = fluid_oracle.judge(sc, expected, got, lambda x: max(REL_TOL * x, ABS_TOL_PCPU * core))
    lines = [f"host: {sc.host.cores} cores x {core} MHz = {sc.host.cores * core} MHz, seed {sc.seed}"]
    for p in sc.resource_pools:
        lines.append(f"pool {p.name} (parent {p.parent}): shares {p.cpu.shares}, reservation {p.cpu.reservation}, "
                     f"limit {p.cpu.limit}, expandable {p.cpu.expandable_reservation}")
    lines.append(f"{'vm':6} {'pool':5} {'vcpus':>5} {'shares':>7} {'res':>6} {'limit':>6} {'duty':>5} {'dist':>5}"
                 f" {'exp %USED':>10} {'fluid range':>15} {'got %USED':>10} {'err':>7}")
    for vm in sc.vms:
        e, g = expected[vm.name], got[vm.name]
        lo, hi = span[vm.name]
        rng = "" if lo == hi else f"{100 * lo / core:.2f}-{100 * hi / core:.2f}"
        w = vm.workload
        lines.append(f"{vm.name:6} {str(vm.pool):5} {vm.vcpus:>5} {str(vm.cpu.shares):>7} {vm.cpu.reservation:>6} "
                     f"{str(vm.cpu.limit):>6} {getattr(w, 'duty', 0):>5} {getattr(w, 'burst_distribution', '-')[:5]:>5}"
                     f" {100 * e / core:>10.2f} {rng:>15} {100 * g / core:>10.2f} {100 * (g - e) / core:>+7.2f}"
                     f"{'  <-- off' if vm.name in bad else ''}")
    return bad, "\n".join(lines)


def assert_on_allocation(sc: Scenario) -> None:
    bad, report = violations(sc)
    assert not bad, f"VMs off their max-min allocation: {bad}\n{report}\n--- scenario ---\n{sc.to_yaml()}"


SETTINGS = dict(deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@KNOWN_GAPS
@settings(max_examples=100, **SETTINGS)
@given(scenarios(with_pools=False))
def test_flat_vms_get_their_maxmin_allocation(sc: Scenario):
    assert_on_allocation(sc)


@KNOWN_GAPS
@settings(max_examples=150, **SETTINGS)
@given(scenarios(with_pools=True))
def test_pooled_vms_get_their_hierarchical_maxmin_allocation(sc: Scenario):
    assert_on_allocation(sc)


# --------------------------------------------------------------------------------------------
# The regime where max-min on mean demands is attainable: gating
# --------------------------------------------------------------------------------------------

NEAR_CRITICAL = (0.85, 1.15)  # host load (mean demand / capacity) where guest backlogs linger


def attainable(sc: Scenario) -> bool:
    """True unless the host is near critical load, where a finite run ends with seconds of work
    queued in the guests. (Beside VMs whose bursts get all they want, a held-back VM may get
    less than max-min on mean demands: `violations` judges it against the fluid range.)"""
    core = sc.host.core_mhz
    demand = sum(0.0 if isinstance(v.workload, Idle) else v.workload.duty * v.vcpus * core for v in sc.vms)
    return not NEAR_CRITICAL[0] <= demand / (sc.host.cores * core) <= NEAR_CRITICAL[1]


ATTAINABLE_SAMPLE = 100  # attainable scenarios, from seeds 0, 1, 2, ... (112 seeds give 100)


def attainable_sample(n: int = ATTAINABLE_SAMPLE):
    """The first `n` scenarios `attainable` keeps, drawn from seeds 0, 1, 2, ... by `_RandomPick`:
    the same sample in any run, whatever else the test suite imports."""
    seed = 0
    while n:
        sc = make_scenario(_RandomPick(seed), with_pools=True)
        seed += 1
        if attainable(sc):
            n -= 1
            yield sc


def test_attainable_scenarios_get_their_hierarchical_maxmin_allocation():
    """The strict property on a fixed sample of the scenarios `attainable` keeps: pools two deep,
    reservations, limits, 1-8 vCPU VMs, duty-cycled and busy VMs, open-loop work (about 10 s).
    All 100 pass. The last to fail (seed 65: a held-back 3-vCPU VM 8.4 points over, a backlogged
    5-vCPU neighbour as much under) was the debt clamp: the held-back VM's vCPUs were some 170
    ms of CPU ahead of the fair clock at every entitlement update and were forgiven all beyond
    100 ms; `max_debt` (300 ms) keeps that debt."""
    reports = []
    for sc in attainable_sample():
        bad, report = violations(sc)
        if bad:
            reports.append(f"VMs off their max-min allocation: {bad}\n{report}\n--- scenario ---\n{sc.to_yaml()}")
    assert not reports, f"{len(reports)} of {ATTAINABLE_SAMPLE} off:\n" + "\n\n".join(reports)


# --------------------------------------------------------------------------------------------
# Bursts served at once: cases where the engine is off max-min on mean demands
# --------------------------------------------------------------------------------------------

BURST_CASES = Path(__file__).parent / "data" / "maxmin_bursts"


def _bursty_beside_busy(seed: int) -> Scenario:
    """Issue 5's case: on 4 pCPUs, 4 vCPUs bursting 5 ms at duty 0.52 beside a busy 2-vCPU VM."""
    return Scenario(name="bursty", seed=seed, duration=f"{DURATION_S}s", sample_interval="5s",
                    host=Host(cores_per_llc=4, threads_per_core=1, core_mhz="1000MHz"),
                    vms=[VM(name="bursty", vcpus=4, workload=CpuBound(duty=0.52, burst="5ms", arrivals="open",
                                                                       burst_distribution="fixed")),
                         VM(name="busy", vcpus=2, workload=CpuBound(duty=1.0, burst="5ms", arrivals="open",
                                                                     burst_distribution="fixed"))])


@pytest.mark.parametrize("case", ["bursty-seed-8", "bursty-seed-12"] + sorted(p.stem for p in BURST_CASES.glob("*.yaml")))
def test_bursts_served_at_once_keep_each_vm_in_its_fluid_range(case):
    """Where the engine misses max-min on mean demands because it serves under-share bursts at
    once, it stays in the fluid range: issue 5's bursty case at the two seeds where the busy VM
    gets least (1.48 and 1.47 pCPU: max-min 1.92, by shares 1.62 and 1.54, at once 1.47 and
    1.20), and the census's four misses of this kind (pooled rows 340 and 394, flat rows 163 and
    345, `scripts/maxmin_census.py --examples 400 [--pools] --dump`). Beside them, seeded-285
    (`make_scenario(_RandomPick(285))`, a fixed pool at its limit; docs/cpu-scheduler.md) and
    drawn-flat-1166 (a VM held at its reservation floor that took slack beyond it, 17.02 points
    for its 16.00, until a VM at its floor was scheduled to its reservation's balance) and
    seeded-pools-389 (a start-up: every VM powers on at once, and a backlog's stale estimate
    must not hold the backlogged VM below max-min; `CpuSched::update_demand`)."""
    sc = (_bursty_beside_busy(int(case.rsplit("-", 1)[1])) if case.startswith("bursty")
          else load_scenario(BURST_CASES / f"{case}.yaml"))
    assert_on_allocation(sc)


# --------------------------------------------------------------------------------------------
# Open misses, kept as cases
# --------------------------------------------------------------------------------------------

OPEN_CASES = Path(__file__).parent / "data" / "maxmin_open"


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="issue 5's open max-min misses (docs/cpu-scheduler.md)")
@pytest.mark.parametrize("case", sorted(p.stem for p in OPEN_CASES.glob("*.yaml")))
def test_open_misses_are_still_misses(case):
    """The misses the censuses and CI's draws found and no change has closed, each with its
    trace in docs/cpu-scheduler.md. Strict: a change that closes one fails here, so its case
    moves to `data/maxmin_bursts` (a strict case) and the docs' census is updated, instead of the
    gap closing unnoticed."""
    assert_on_allocation(load_scenario(OPEN_CASES / f"{case}.yaml"))


# --------------------------------------------------------------------------------------------
# A limited pool split by its children's shares
# --------------------------------------------------------------------------------------------

SPLIT_CASES = Path(__file__).parent / "data" / "maxmin_split"


@pytest.mark.parametrize("case", sorted(p.stem for p in SPLIT_CASES.glob("*.yaml")))
def test_limited_pool_is_split_by_its_childrens_shares(case):
    """The quarantined pooled test's last miss of its kind, two variants of one draw (vm4 at normal
    and low shares): on 4 pCPUs a pool limited to 250.65 points over two equal-share child pools,
    one holding a busy 1-vCPU VM entitled to 87.40 points of it, the other two 3-vCPU VMs. The busy
    VM got 83.57-83.64 and the 3-vCPU VMs up to 1.96 points over theirs: its pool siblings' limit
    releases preempted it by the fair clock, in whose debt it sat though it ran under its share. A release no longer preempts a vCPU bound with it by
    a pool limit whose share split binds (`cpu/sched.rs`, `place_with`; docs/cpu-scheduler.md)."""
    assert_on_allocation(load_scenario(SPLIT_CASES / f"{case}.yaml"))


# --------------------------------------------------------------------------------------------
# A pool limited to the host's capacity, split by its children's shares
# --------------------------------------------------------------------------------------------

HOST_LIMIT_CASES = Path(__file__).parent / "data" / "maxmin_hostlimit"


@pytest.mark.parametrize("case", sorted(p.stem for p in HOST_LIMIT_CASES.glob("*.yaml")))
def test_pool_limited_to_the_host_is_split_by_its_childrens_shares(case):
    """Random draws of the pooled test, the largest misses seen (90-117 points): a pool limited to
    the host's capacity (r15: 16,000 MHz of 16,000) or a hair under it (r100: 20,799 of 20,800).
    The limit binds in max-min terms, but the pool cannot run faster than its limit, so its
    bucket never drains to the share split and the weights alone split it; its weight capacity
    was its children's whole demand (every ceiling fitted at the root), so every VM below
    weighed its vCPUs' worth and the pool was split per vCPU, shares ignored. A weight capacity
    is now at most its parent's (`cpu/pools.rs`; docs/cpu-scheduler.md). r15-024 is r15-pools-2
    reduced to the three VMs that show it."""
    assert_on_allocation(load_scenario(HOST_LIMIT_CASES / f"{case}.yaml"))

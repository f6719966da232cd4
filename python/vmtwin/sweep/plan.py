"""Capacity answers: how many more VMs of a profile fit on a host before a metric crosses a bound.

The question, "how many more VMs like ``web`` fit on this host before any vCPU's %RDY exceeds
5%", is answered by search over small sweeps of one coordinate, ``added``: the base scenario with
``added`` copies of the profile VM (a new ``vms`` entry, a copy of the profile's entry with
``count: added``, named ``plan-<profile>``), each count run with ``seeds`` replications.

**Fits.** ``added = k`` fits when the metric (default ``max(vcpu.%RDY_CONTENDED)``: the largest
per-vCPU mean %RDY over the run less the time held back by limits, see
:mod:`vmtwin.sweep.metrics`), averaged over the ``seeds``
replications, is at most ``bound``. The answer is the largest k that fits. The mean over seeds is
an estimate; the report gives the t interval at the answer and at answer + 1 (the margin), so a
planner can see how close the decision was and add seeds where the intervals straddle the bound.

**Search.** k = 0 first (if the host already fails, the answer is 0); then k = 1, 2, 4, 8, ...
until a count fails (or ``max_add`` is reached); then bisection between the last count that fits
and the first that fails, until they are adjacent. That takes about 2 log2(answer) + 2 counts.

**Assumptions.** The metric grows (weakly) with the number of added VMs; the search does not
check this beyond the counts it evaluates, and if the metric is non-monotone (noise at a few
seeds near the bound) the answer is *a* count where the metric crosses, not necessarily the
first. The run length must be long enough for the metric to settle (the scenario's duration, or
``duration``). Each count's seeds are derived from the plan seed and the count, as in sweeps.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Union

import numpy as np
import pyarrow as pa

from vmtwin.exceptions import scenario_error
from vmtwin.scenario import Scenario, parse_scenario
from vmtwin.sweep.metrics import CONFIDENCE, DEFAULT_METRICS, metric_values, parse_metric, t_interval
from vmtwin.sweep.spec import Sweep, Task, derive_seed

__all__ = ["Evaluation", "Plan", "plan_capacity", "plan_info"]

COORD = "added"

#: The default question: any vCPU's ready time from contention above 5% (VMware's usual "ready
#: time is a problem" threshold for a single vCPU, 5% of the interval), not counting time a
#: limit held it back (%MLMTD, inside esxtop's %RDY), which adding VMs neither causes nor cures.
DEFAULT_METRIC = "max(vcpu.%RDY_CONTENDED)"
DEFAULT_BOUND = 5.0


@dataclass
class Evaluation:
    """One count evaluated: its metric per seed and their t interval."""

    added: int
    seeds: list[int]
    values: list[float]
    n: int
    mean: float
    sd: float
    ci_low: float
    ci_high: float
    fits: bool

    def as_dict(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.__dict__.items()}


@dataclass
class Plan:
    """The answer, the evaluations around it, and every count evaluated in search order."""

    profile: str
    metric: str
    bound: float
    answer: int
    capped: bool  # the answer is max_add and it still fits: "at least"
    at_answer: Evaluation
    above: Optional[Evaluation]  # answer + 1 (the count that failed), None when capped
    steps: list[Evaluation] = field(default_factory=list)
    tables: dict[str, pa.Table] = field(default_factory=dict)

    @property
    def deciding(self) -> dict[str, Any]:
        """The run that decided: the replication of answer + 1 with the largest metric (or, when
        the base already fails or the search is capped, the worst run at the answer)."""
        ev = self.at_answer if (not self.at_answer.fits or self.above is None) else self.above
        i = int(np.argmax(ev.values))
        return {"added": ev.added, "replication": i, "seed": ev.seeds[i], "value": ev.values[i]}


def _profile_entry(data: dict, profile: str) -> dict:
    names = [vm.get("name") for vm in data["vms"]]
    if profile not in names:
        raise scenario_error("--profile", profile, "the name of a vms entry of the scenario: " + ", ".join(names[:20]))
    entry = copy.deepcopy(data["vms"][names.index(profile)])
    entry["name"] = f"plan-{profile}"
    if f"plan-{profile}" in names:
        raise scenario_error("--profile", profile, f"a profile whose copy name plan-{profile} is not taken")
    return entry


def plan_capacity(base: Scenario, profile: str, *, metric: str = DEFAULT_METRIC, bound: float = DEFAULT_BOUND,
                  seeds: int = 3, seed: Optional[int] = None, duration: Optional[str] = None, max_add: int = 1024,
                  base_dir: Union[str, Path, None] = None, backend: str = "local", workers: Optional[int] = None,
                  address: Optional[str] = None, on_step: Optional[Callable[[Evaluation], None]] = None) -> Plan:
    """Search for the largest number of added ``profile`` VMs that fits (see the module docs).

    Raises
    ------
    ScenarioError
        Unknown profile or metric, a bound that is not a finite number, seeds or max_add out of
        range, or a scenario the added VMs make invalid.
    """
    from vmtwin.sweep.dataset import build_tables
    from vmtwin.sweep.runner import run_tasks

    m = parse_metric(metric)
    if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not math.isfinite(bound):
        raise scenario_error("--bound", bound, "a finite number (the metric's largest acceptable value)")
    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= 100:
        raise scenario_error("--seeds", seeds, "an integer from 1 to 100")
    if isinstance(max_add, bool) or not isinstance(max_add, int) or not 1 <= max_add <= 100_000:
        raise scenario_error("--max-add", max_add, "an integer from 1 to 100000")
    seed = base.seed if seed is None else seed
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise scenario_error("--seed", seed, "an integer from 0 to 2^63-1")
    data = base.model_dump(mode="json")
    entry = _profile_entry(data, profile)
    bdir = None if base_dir is None else str(base_dir)

    def scenario_for(k: int) -> dict:
        d = copy.deepcopy(data)
        if k > 0:
            d["vms"].append({**entry, "count": k})
        return d

    parse_scenario(scenario_for(1), base_dir=bdir, name="plan")  # the copy is a valid VM: fail before running
    evaluated: dict[int, Evaluation] = {}
    all_tasks: list[Task] = []
    all_results: list[dict[str, pa.Table]] = []
    steps: list[Evaluation] = []

    def evaluate(k: int) -> Evaluation:
        if k in evaluated:
            return evaluated[k]
        d = scenario_for(k)
        tasks = [Task(0, k, r, derive_seed(seed, {COORD: k}, r), ((COORD, k),), d, bdir, duration)
                 for r in range(seeds)]
        results = run_tasks(tasks, backend=backend, workers=workers, address=address)
        values = [metric_values(m, r) for r in results]
        n, mean, sd, low, high = t_interval(np.array(values))
        ev = Evaluation(k, [t.seed for t in tasks], values, n, mean, sd, low, high, bool(mean <= bound))
        evaluated[k] = ev
        steps.append(ev)
        all_tasks.extend(tasks)
        all_results.extend(results)
        if on_step:
            on_step(ev)
        return ev

    capped = False
    if not evaluate(0).fits:
        lo, hi = 0, 0
    else:
        lo, k = 0, 1
        while True:
            k = min(k, max_add)
            if evaluate(k).fits:
                lo = k
                if k == max_add:
                    capped = True
                    break
                k *= 2
            else:
                hi = k
                break
        if not capped:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if evaluate(mid).fits:
                    lo = mid
                else:
                    hi = mid
    above = None if capped or not evaluated[0].fits else evaluated[lo + 1]
    ks = sorted(evaluated)
    # the dataset: every count evaluated, in increasing order (its rows do not depend on the search path)
    order = sorted(range(len(all_tasks)), key=lambda i: (all_tasks[i].point, all_tasks[i].replication))
    tasks = [Task(j, ks.index(all_tasks[i].point), all_tasks[i].replication, all_tasks[i].seed, all_tasks[i].coords,
                  all_tasks[i].scenario, bdir, duration) for j, i in enumerate(order)]
    sweep = Sweep(name=f"plan-{profile}", base=base, base_dir=None, grid={COORD: ks}, replications=seeds,
                  seed=seed, duration=duration, metrics=[m.text], points=[{COORD: k} for k in ks])
    metrics = [parse_metric(t) for t in dict.fromkeys([m.text, *DEFAULT_METRICS])]
    tables = build_tables(sweep, tasks, [all_results[i] for i in order], metrics)
    return Plan(profile, m.text, float(bound), lo, capped, evaluated[lo], above, steps, tables)


def plan_info(plan: Plan, base: Scenario, seeds: int, seed: int, duration: Optional[str]) -> dict[str, Any]:
    """What ``plan.json`` records."""
    from vmtwin import __version__

    return {
        "vmtwin_version": __version__,
        "question": f"how many more VMs like {plan.profile} fit before {plan.metric} exceeds {plan.bound:g}",
        "fits": f"the mean of {plan.metric} over {seeds} seeds is at most {plan.bound:g}",
        "profile": plan.profile,
        "metric": plan.metric,
        "bound": plan.bound,
        "answer": plan.answer,
        "answer_is_lower_bound": plan.capped,
        "confidence": CONFIDENCE,
        "at_answer": plan.at_answer.as_dict(),
        "at_answer_plus_1": None if plan.above is None else plan.above.as_dict(),
        "deciding_run": plan.deciding,
        "search": [e.as_dict() for e in plan.steps],
        "seeds": seeds,
        "seed": seed,
        "duration": duration,
        "base_scenario": base.model_dump(mode="json"),
    }

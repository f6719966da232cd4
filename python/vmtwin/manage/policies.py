"""Throttling policies in front of vCenter, and the run of a task stream under one of them.

Every policy works in *rounds* with a barrier (vATM Sec. 3.3, and the paper's static throttling):
a round launches up to its size of tasks and ends when all of them have finished; tasks arriving
meanwhile wait in the task-management queue (unbounded). Between rounds the next size is chosen:

``static``
    a fixed batch (the paper's "naive static" with the workload's batch 10/5/4, or any other size);
``vatm``
    the size from :class:`~vmtwin.manage.control.VatmController`;
``unthrottled``
    no limit: every task goes to vCenter when it arrives (no rounds to speak of).

Pass-through: while a round has fewer tasks than its size and nothing is queued, an arriving task
joins it at once (vATM: "if t_curr < t_tar the controller does not kick in"). Only a round that
filled up or left work queued (the controller engaged) is reported to vATM's controller; a round
that the arrivals never filled says nothing about the platform's capacity.

*Overall throughput* is tasks finished since the first launch over the time since it, in tasks per
minute (Fig. 4); *round throughput* is the round's tasks over its duration.

``optimal_static`` is the paper's "best static threshold ... based on offline analysis": a sweep of
batch sizes on the same seeds, the size with the lowest mean end-to-end latency winning.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from vmtwin.exceptions import scenario_error
from vmtwin.manage.control import VatmConfig, VatmController
from vmtwin.manage.vcenter import OPERATIONS, Operation, Vcenter, VcenterParams
from vmtwin.manage.workloads import TaskStream

POLICY_KINDS = ("static", "vatm", "unthrottled")


@dataclass(frozen=True)
class Policy:
    """A throttling policy: ``kind`` with its ``batch`` (static) or ``vatm`` config; ``label`` names it."""

    kind: str
    batch: Optional[int] = None
    vatm: Optional[VatmConfig] = None
    label: str = ""

    def __post_init__(self) -> None:
        if self.kind not in POLICY_KINDS:
            raise scenario_error("policy", self.kind, ", ".join(POLICY_KINDS))
        if self.kind == "static" and (not isinstance(self.batch, int) or isinstance(self.batch, bool)
                                      or self.batch < 1):
            raise scenario_error(f"{self.label or 'static'}.batch", self.batch, "an integer of at least 1")
        if self.kind == "vatm" and self.vatm is None:
            object.__setattr__(self, "vatm", VatmConfig())
        if not self.label:
            object.__setattr__(self, "label", {"static": f"static-{self.batch}", "vatm": "vatm",
                                               "unthrottled": "unthrottled"}[self.kind])

    @classmethod
    def static(cls, batch: int, label: str = "") -> "Policy":
        return cls("static", batch=batch, label=label)


@dataclass(frozen=True)
class Round:
    """One round: its size (tokens), tasks launched, start and end (s), throughputs (tasks/min)."""

    index: int
    tokens: int
    launched: int
    start_s: float
    end_s: float
    round_tpm: float
    overall_tpm: float
    powered_on: int


@dataclass
class RunResult:
    """What a run of a stream under a policy measured."""

    policy: str
    seed: int
    latency_s: float                 # end-to-end: first arrival to last completion
    rounds: list[Round]
    response_s: np.ndarray           # per task: completion - arrival
    wait_s: np.ndarray               # per task: time queued at vCenter's stages (not in the policy's queue)
    failed: int
    powered_on_end: int
    extra: dict = field(default_factory=dict)

    @property
    def batch_trace(self) -> list[int]:
        return [r.tokens for r in self.rounds]

    @property
    def latency_min(self) -> float:
        return self.latency_s / 60.0


class _RoundRunner:
    def __init__(self, vc: Vcenter, policy: Policy) -> None:
        self.vc = vc
        self.policy = policy
        self.ctrl = VatmController(policy.vatm) if policy.kind == "vatm" else None
        self.queue: deque[int] = deque()
        self.rounds: list[Round] = []
        self.cur: list[int] = []
        self.cur_done = 0
        self.cur_start = 0.0
        self.cur_tokens = self._size()
        self.first_launch: Optional[float] = None
        self.finished = 0
        vc.on_arrival = self.arrive
        vc.on_done = self.done

    def _size(self) -> int:
        if self.policy.kind == "static":
            return self.policy.batch
        if self.policy.kind == "vatm":
            return self.ctrl.t_tar
        return 1 << 62

    def _launch(self, task: int, now: float) -> None:
        if self.first_launch is None:
            self.first_launch = now
        if not self.cur:
            self.cur_start = now
        self.cur.append(task)
        self.vc.issue(task)

    def arrive(self, task: int, now: float) -> None:
        if not self.queue and len(self.cur) < self.cur_tokens:
            self._launch(task, now)
        else:
            self.queue.append(task)

    def done(self, task: int, now: float) -> None:
        self.finished += 1
        self.cur_done += 1
        if self.cur_done < len(self.cur):
            return
        # barrier reached: close the round
        overall = 60.0 * self.finished / (now - self.first_launch) if now > self.first_launch else math.inf
        dur = now - self.cur_start
        round_thp = 60.0 * len(self.cur) / dur if dur > 0 else math.inf
        engaged = len(self.cur) >= self.cur_tokens or bool(self.queue)
        self.rounds.append(Round(len(self.rounds) + 1, self.cur_tokens, len(self.cur), self.cur_start, now,
                                 round_thp, overall,
                                 self.vc.inventory.on_total))
        if self.ctrl is not None and engaged:
            per_unit = self.ctrl.config.throughput_per_s / 60.0  # Round keeps tasks/min
            self.ctrl.finish_round(self.cur_tokens, overall * per_unit, round_thp * per_unit)
        self.cur, self.cur_done = [], 0
        self.cur_tokens = self._size()
        while self.queue and len(self.cur) < self.cur_tokens:
            self._launch(self.queue.popleft(), now)


def _ops_table(stream: TaskStream, ops: Optional[dict[str, Operation]]) -> tuple[list[Operation], list[int]]:
    table = dict(OPERATIONS if ops is None else ops)
    names = sorted(set(stream.ops))
    for n in names:
        if n not in table:
            raise scenario_error("operation", n, ", ".join(sorted(table)))
    index = {n: i for i, n in enumerate(names)}
    return [table[n] for n in names], [index[o] for o in stream.ops]


def run_stream(stream: TaskStream, policy: Policy, params: Optional[VcenterParams] = None, seed: int = 0,
               ops: Optional[dict[str, Operation]] = None) -> RunResult:
    """Run ``stream`` on a fresh vCenter under ``policy`` (deterministic for a seed)."""
    params = params or VcenterParams()
    op_list, task_ops = _ops_table(stream, ops)
    vc = Vcenter(params, op_list, task_ops, list(stream.times), seed)
    runner = _RoundRunner(vc, policy)
    vc.run()
    done = np.array(vc.done_time)
    arrivals = np.array(stream.times)
    extra = {"t_tar_next": runner.ctrl.t_tar, "gradients": list(runner.ctrl.gradients)} if runner.ctrl else {}
    return RunResult(policy.label, seed, float(done.max() - arrivals.min()), runner.rounds, done - arrivals,
                     np.array(vc.wait), int(sum(vc.failed)), vc.inventory.on_total, extra)


def sweep_batches(n_tasks: int, fine_until: int = 16, growth: float = 1.15) -> list[int]:
    """Batch sizes of the offline sweep: every size to ``fine_until``, then ``growth`` apart, and ``n_tasks``."""
    sizes = list(range(1, min(fine_until, n_tasks) + 1))
    b = float(sizes[-1])
    while True:
        b = max(b * growth, b + 1)
        if b >= n_tasks:
            break
        sizes.append(int(round(b)))
    if sizes[-1] != n_tasks:
        sizes.append(n_tasks)
    return sorted(set(sizes))


@dataclass(frozen=True)
class SweepResult:
    """Mean latency (s) per batch size over the seeds, and the winning size."""

    batches: tuple[int, ...]
    mean_latency_s: tuple[float, ...]
    best_batch: int
    best_latency_s: float


def optimal_static(stream: TaskStream, seeds: Sequence[int], params: Optional[VcenterParams] = None,
                   ops: Optional[dict[str, Operation]] = None, batches: Optional[Sequence[int]] = None,
                   refine: bool = True) -> SweepResult:
    """The best fixed batch by mean latency over ``seeds`` (ties: the smaller batch).

    The sweep covers ``batches`` (default :func:`sweep_batches`), then (``refine``) a ternary search
    over the integers between the grid winner's two neighbours, so the winner is an integer size.
    """
    tried: dict[int, float] = {}

    def mean_latency(b: int) -> float:
        if b not in tried:
            tried[b] = float(np.mean([run_stream(stream, Policy.static(b), params, s, ops).latency_s for s in seeds]))
        return tried[b]

    grid = list(batches) if batches is not None else sweep_batches(len(stream))
    for b in grid:
        mean_latency(b)
    best = min(tried, key=lambda b: (tried[b], b))
    if refine:
        # integer ternary search between the winner's grid neighbours (the top is one hill there)
        i = grid.index(best)
        lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
        while hi - lo > 3:
            m1, m2 = lo + (hi - lo) // 3, hi - (hi - lo) // 3
            if mean_latency(m1) <= mean_latency(m2):
                hi = m2
            else:
                lo = m1
        for b in range(lo, hi + 1):
            mean_latency(b)
        best = min(tried, key=lambda b: (tried[b], b))
    bs = tuple(sorted(tried))
    return SweepResult(bs, tuple(tried[b] for b in bs), best, tried[best])


__all__ = ["POLICY_KINDS", "Policy", "Round", "RunResult", "SweepResult", "optimal_static", "run_stream",
           "sweep_batches"]

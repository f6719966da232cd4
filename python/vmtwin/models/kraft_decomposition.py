"""Kraft et al.'s decomposition simulation: response-time distributions of reads under
consolidation (research/storage.md §A5, Algorithm 3).

A closed multiclass model with one FCFS server. Each class (VM) has N_k *batch customers*; a
customer thinks (the next value of the class's measured think-time trace, replayed in order and
wrapping, C2.7), then forks b requests at one instant (b drawn from the measured batch-size pmf,
C2.8), which queue at the server; when all b are done it thinks again. The n-th request of a
batch sees a = 1 + (requests of its class in the system, its n-1 siblings included) (C2.9) and
draws an exponential service time with mean D(a), the measured load-dependent service time
(eq. 23). Merging (eq. 24, C2.13): ω = b (1 - T_san / T_vm) requests per batch, stochastically
rounded, are merged away: the first ω + 1 requests of the batch are served as one entity for the
mean of their service times. A request's response time is its completion minus its fork time.

Algorithm 3 sets the populations: raise N_k until the simulated read throughput of class k
reaches the linear predictor's; the prediction interpolates linearly (in throughput) between
N_k - 1 and N_k (C2.12); with several classes, Gauss-Seidel sweeps (at most 10).

Parameter estimation from an isolation trace: batches (eq. 21) are consecutive same-type arrivals
with gaps ≤ 2 ms; think times (eq. 22) are the gap from a batch's last completion to the next
batch's first arrival, clamped at 0 (C2.7); D(a) (eq. 23) is the mean of C / (1 + A) over the
requests that saw arrival queue a, bins with fewer than 30 samples merged into their neighbour
below (C2.10).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

#: Batch timeout t of eq. 21, seconds ([K] §6.3: 2 ms).
BATCH_TIMEOUT_S = 0.002
#: Fewest samples of a D(a) bin before it is merged into its neighbour (C2.10).
MIN_BIN_SAMPLES = 30


@dataclass(frozen=True)
class ClassParams:
    """One VM's read parameters for the simulation."""

    batch_sizes: tuple[int, ...]  # measured batch sizes (the empirical pmf)
    think_s: tuple[float, ...]  # measured think-time trace, seconds
    service_by_queue: tuple[float, ...]  # D(a) for a = 1, 2, ..., seconds (last used beyond)
    merge_fraction: float = 0.0  # 1 - T_san / T_vm, clamped to [0, 1) (eq. 24)

    def __post_init__(self) -> None:
        if not self.batch_sizes or min(self.batch_sizes) < 1:
            raise ValueError("batch_sizes must be non-empty integers >= 1")
        if not self.think_s or min(self.think_s) < 0:
            raise ValueError("think_s must be non-empty and >= 0")
        if not self.service_by_queue or min(self.service_by_queue) <= 0:
            raise ValueError("service_by_queue must be non-empty and > 0")
        if not 0.0 <= self.merge_fraction < 1.0:
            raise ValueError(f"merge_fraction must be in [0, 1), got {self.merge_fraction}")


@dataclass
class DecompositionResult:
    """One run: per-class throughput (requests/s) and response times (s)."""

    throughput: list[float]
    responses: list[np.ndarray] = field(repr=False)

    def mean_resp(self, k: int) -> float:
        return float(self.responses[k].mean()) if self.responses[k].size else float("nan")


def simulate(classes: Sequence[ClassParams], populations: Sequence[int], horizon_s: float, rng: np.random.Generator) -> DecompositionResult:
    """Run the closed batch model for ``horizon_s`` seconds."""
    if len(classes) != len(populations) or min(populations, default=0) < 0:
        raise ValueError("one population >= 0 per class")
    k_n = len(classes)
    cursors = [int(rng.integers(len(c.think_s))) for c in classes]
    in_sys = [0] * k_n
    events: list = []  # (time, seq, kind, payload)
    seq = 0
    fifo: list = []  # FCFS queue of service entities: (class, members[(fork time, batch id)], service)
    fifo_head = 0
    busy = False
    batches: dict[int, list] = {}  # batch id -> [class, remaining]
    done: list[list[float]] = [[] for _ in range(k_n)]
    next_batch = 0

    def push(t: float, kind: str, payload) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (t, seq, kind, payload))

    def think(k: int, now: float) -> None:
        c = classes[k]
        z = c.think_s[cursors[k] % len(c.think_s)]
        cursors[k] += 1
        push(now + z, "fork", k)

    def start_service(now: float) -> None:
        nonlocal fifo_head, busy
        if not busy and fifo_head < len(fifo):
            ent = fifo[fifo_head]
            fifo_head += 1
            busy = True
            push(now + ent[2], "done", ent)

    for k, n in enumerate(populations):
        for _ in range(n):
            think(k, 0.0)
    while events:
        t, _, kind, payload = heapq.heappop(events)
        if t > horizon_s:
            break
        if kind == "fork":
            k = payload
            c = classes[k]
            b = int(c.batch_sizes[int(rng.integers(len(c.batch_sizes)))])
            bid = next_batch
            next_batch += 1
            batches[bid] = [k, b]
            services = []
            for _ in range(b):
                in_sys[k] += 1
                a = in_sys[k]
                mean = c.service_by_queue[min(a, len(c.service_by_queue)) - 1]
                services.append(rng.exponential(mean))
            w = b * c.merge_fraction
            merged = int(np.floor(w)) + int(rng.random() < w - np.floor(w))
            merged = min(merged, b - 1)
            lead = merged + 1
            fifo.append((k, [(t, bid)] * lead, float(np.mean(services[:lead]))))
            for s in services[lead:]:
                fifo.append((k, [(t, bid)], s))
            start_service(t)
        else:
            busy = False
            k, members, _ = payload
            for fork_t, bid in members:
                done[k].append(t - fork_t)
                in_sys[k] -= 1
                batches[bid][1] -= 1
                if batches[bid][1] == 0:
                    del batches[bid]
                    think(k, t)
            start_service(t)
    return DecompositionResult([len(d) / horizon_s for d in done], [np.asarray(d) for d in done])


@dataclass
class PopulationFit:
    """Algorithm 3's outcome for all classes."""

    populations: list[int]
    lower: DecompositionResult
    upper: DecompositionResult
    weights: list[float]  # interpolation weight of `upper` per class
    mean_resp_s: list[float]
    quantiles: dict[float, list[float]]


def fit_populations(
    classes: Sequence[ClassParams],
    target_throughput: Sequence[float],
    horizon_s: float,
    seed: int = 0,
    max_population: int = 200,
    sweeps: int = 10,
    quantiles: Sequence[float] = (0.5, 0.9, 0.95),
) -> PopulationFit:
    """Algorithm 3 with Gauss-Seidel sweeps (C2.12), then linear interpolation in throughput."""
    k_n = len(classes)
    pops = [1] * k_n

    def run(p: Sequence[int]) -> DecompositionResult:
        return simulate(classes, p, horizon_s, np.random.default_rng(seed))

    for _ in range(sweeps):
        changed = False
        for k in range(k_n):
            while pops[k] < max_population and run(pops).throughput[k] < target_throughput[k]:
                pops[k] += 1
                changed = True
        if not changed:
            break
    upper = run(pops)
    lower_p = [max(1, p - 1) for p in pops]
    lower = run(lower_p)
    weights, means, qs = [], [], {q: [] for q in quantiles}
    for k in range(k_n):
        xl, xu = lower.throughput[k], upper.throughput[k]
        w = 1.0 if xu == xl else float(np.clip((target_throughput[k] - xl) / (xu - xl), 0.0, 1.0))
        weights.append(w)
        means.append((1 - w) * lower.mean_resp(k) + w * upper.mean_resp(k))
        for q in quantiles:
            lo = float(np.quantile(lower.responses[k], q)) if lower.responses[k].size else float("nan")
            hi = float(np.quantile(upper.responses[k], q)) if upper.responses[k].size else float("nan")
            qs[q].append((1 - w) * lo + w * hi)
    return PopulationFit(pops, lower, upper, weights, means, qs)


def detect_batches(arrivals: np.ndarray, timeout_s: float = BATCH_TIMEOUT_S) -> list[np.ndarray]:
    """Eq. 21: indices of each batch of one VM's same-type arrivals (sorted times)."""
    a = np.asarray(arrivals, float)
    if a.size == 0:
        return []
    cuts = np.nonzero(np.diff(a) > timeout_s)[0] + 1
    return np.split(np.arange(a.size), cuts)


def think_times(arrivals: np.ndarray, completions: np.ndarray, batches: list[np.ndarray]) -> tuple[np.ndarray, int]:
    """Eq. 22, clamped at 0 (C2.7): the think times and how many were negative."""
    z = np.array([arrivals[b2].min() - completions[b1].max() for b1, b2 in zip(batches, batches[1:])])
    neg = int(np.sum(z < 0))
    return np.maximum(z, 0.0), neg


def service_by_queue(resp_s: np.ndarray, aqueue: np.ndarray, min_samples: int = MIN_BIN_SAMPLES) -> list[float]:
    """Eq. 23: D(a) = mean of C / (1 + A) over the requests that saw a = 1 + A; sparse bins
    merged into the previous bin (C2.10). Index 0 is a = 1."""
    resp_s, aqueue = np.asarray(resp_s, float), np.asarray(aqueue, int)
    if resp_s.size == 0:
        raise ValueError("no requests to estimate D(a) from")
    a = 1 + aqueue
    ratio = resp_s / a
    overall = float(ratio.mean())
    groups: list[tuple[list[int], float, int]] = []
    levels: list[int] = []
    total, count = 0.0, 0
    for level in range(1, int(a.max()) + 1):
        sel = ratio[a == level]
        levels.append(level)
        total += float(sel.sum())
        count += sel.size
        if count >= min_samples:
            groups.append((levels, total, count))
            levels, total, count = [], 0.0, 0
    if levels:
        if groups:
            last_levels, last_total, last_count = groups.pop()
            groups.append((last_levels + levels, last_total + total, last_count + count))
        else:
            groups.append((levels, total, count))
    out = [overall] * int(a.max())
    for lv, tot, n in groups:
        for level in lv:
            out[level - 1] = tot / n if n else overall
    return out

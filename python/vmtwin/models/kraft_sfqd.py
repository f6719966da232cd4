"""Kraft et al.'s homogeneous model: a trace-driven SFQ(D) simulation with request splitting
and merge calibration (research/storage.md §A2, Algorithms 1 and 2).

Pipeline per run (Fig. 4): take one isolation arrival trace per VM; split requests larger than
``l_max`` blocks into ⌈B / l_max⌉ sub-requests with the parent's arrival time (eqs. 3-5); give
each sub-request a service time from the VM's sampler; simulate an open multiclass queue with D
parallel servers under SFQ(D); rejoin: a request's response time is the *mean* of its
sub-requests' (eq. 6, as the paper does).

SFQ(D) (eqs. 1-2): on arrival S = max(v, F_prev(k)), F = S + d / φ_k with φ_k = 1/K; up to D
requests in service; the queued request with the lowest start tag goes next; v becomes the start
tag of the request last issued (C1.1; unchanged while idle). Ties: arrival time, class, piece.

Merging (Algorithm 1): whenever a server is free and requests wait, x = ⌊ω⌋ or ⌈ω⌉ (stochastic
rounding with mean ω, C1.3); the lowest-tag request and then, while the next lowest is of the
same class, up to x - 1 more form one group that occupies one server for the mean of their
service times and completes together (C1.4, C1.5).

Algorithm 2 searches ω so that the simulated mean number in system divided by ω is within
Δ_max = 5% of N_exp = Σ_k N_iso,k (eq. 7-9): binary search between the last ω values on either
side, otherwise steps of ``step`` (C1.7: ω0 = 1, step 0.5, 20 runs per iteration with common
random numbers, at most 50 iterations).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

#: VMM request size threshold in 4 kB blocks: "the VMM splits requests larger than 512 kB" (§4.2.1).
L_MAX_BLOCKS = 128
#: Servers: the VMM-to-LUN issue queue length, default 32 (§3, §4.1).
DEFAULT_SERVERS = 32
#: Algorithm 2's stopping tolerance Δ_max (§4.3.2).
DELTA_MAX = 0.05

Sampler = Callable[[np.random.Generator, int], np.ndarray]


@dataclass(frozen=True)
class Trace:
    """One VM's isolation arrivals: times (s, ascending) and sizes in 4 kB blocks."""

    arrivals: np.ndarray
    blocks: np.ndarray

    def __post_init__(self) -> None:
        a, b = np.asarray(self.arrivals, float), np.asarray(self.blocks)
        if a.shape != b.shape or a.ndim != 1:
            raise ValueError("arrivals and blocks must be 1-d arrays of equal length")
        if a.size and (np.any(np.diff(a) < 0) or np.any(b < 1)):
            raise ValueError("arrivals must be non-decreasing and sizes >= 1 block")


def split_sizes(blocks: int, l_max: int = L_MAX_BLOCKS) -> list[int]:
    """Eqs. 3 and 5: the sub-request sizes of a request of ``blocks`` blocks."""
    if blocks < 1 or l_max < 1:
        raise ValueError(f"blocks and l_max must be >= 1, got {blocks}, {l_max}")
    n = math.ceil(blocks / l_max)
    last = blocks - l_max * (n - 1)
    return [l_max] * (n - 1) + [last]


def stochastic_round(omega: float, rng: np.random.Generator) -> int:
    """get_int_value(ω): ⌊ω⌋ + Bernoulli(ω - ⌊ω⌋), so 2.5 gives 2 or 3 with equal probability."""
    base = math.floor(omega)
    return base + int(rng.random() < omega - base)


@dataclass
class RunResult:
    """One simulation run."""

    mean_resp: list[float]  # per class, request-weighted over parent requests (after rejoin)
    n_sim: float  # time-averaged number of sub-requests queued or in service
    n_sim_parents: float  # the same counting parent requests
    splitting_ratio: float  # Ψ = J_split / J (eq. 12)
    responses: list[np.ndarray] = field(repr=False, default_factory=list)


def simulate(
    traces: Sequence[Trace],
    samplers: Sequence[Sampler],
    rng: np.random.Generator,
    *,
    servers: int = DEFAULT_SERVERS,
    omega: float = 1.0,
    l_max: int = L_MAX_BLOCKS,
    shares: Sequence[float] | None = None,
) -> RunResult:
    """One run of the SFQ(D) model on one trace per class."""
    k_classes = len(traces)
    if k_classes == 0 or len(samplers) != k_classes:
        raise ValueError("one sampler per trace, at least one trace")
    if omega < 1.0:
        raise ValueError(f"omega must be >= 1, got {omega}")
    if servers < 1:
        raise ValueError(f"servers must be >= 1, got {servers}")
    phi = np.full(k_classes, 1.0 / k_classes) if shares is None else np.asarray(shares, float) / float(np.sum(shares))
    # split; one record per sub-request: (arrival, class, parent index, piece index)
    subs: list[tuple[float, int, int, int]] = []
    n_parents = []
    n_pieces: list[list[int]] = []
    for k, tr in enumerate(traces):
        pieces_k = []
        for i, (t, b) in enumerate(zip(np.asarray(tr.arrivals, float), np.asarray(tr.blocks, int))):
            n = len(split_sizes(int(b), l_max))
            pieces_k.append(n)
            for j in range(n):
                subs.append((float(t), k, i, j))
        n_parents.append(len(pieces_k))
        n_pieces.append(pieces_k)
    subs.sort(key=lambda s: (s[0], s[1], s[2], s[3]))
    # service times in arrival order of each class's sub-requests
    per_class = [[s for s in subs if s[1] == k] for k in range(k_classes)]
    d_of: dict[tuple[int, int, int], float] = {}
    for k in range(k_classes):
        ds = samplers[k](rng, len(per_class[k]))
        for s, d in zip(per_class[k], ds):
            d_of[(k, s[2], s[3])] = float(d)

    vtime = 0.0
    last_f = np.zeros(k_classes)
    queue: list[tuple[float, float, int, int, int, float]] = []  # (S, arrival, class, parent, piece, d)
    completions: list[tuple[float, int, list]] = []  # (time, seq, members)
    busy = 0
    seq = 0
    sums = [np.zeros(p) for p in n_parents]
    in_sys = 0
    in_sys_parents = 0
    remaining = [np.array(p, dtype=int) for p in n_pieces]
    area = area_p = 0.0
    last_t = subs[0][0] if subs else 0.0
    t0 = last_t

    def advance(t: float) -> None:
        nonlocal area, area_p, last_t
        area += in_sys * (t - last_t)
        area_p += in_sys_parents * (t - last_t)
        last_t = t

    def dispatch(now: float) -> None:
        nonlocal busy, vtime, seq
        while busy < servers and queue:
            x = stochastic_round(omega, rng) if omega > 1.0 else 1
            first = heapq.heappop(queue)
            group = [first]
            while len(group) < x and queue and queue[0][2] == first[2]:
                group.append(heapq.heappop(queue))
            vtime = first[0]
            svc = sum(g[5] for g in group) / len(group)
            seq += 1
            heapq.heappush(completions, (now + svc, seq, group))
            busy += 1

    i = 0
    n_subs = len(subs)
    while i < n_subs or completions:
        if completions and (i >= n_subs or completions[0][0] <= subs[i][0]):
            t, _, group = heapq.heappop(completions)
            advance(t)
            busy -= 1
            for s_tag, arr, k, p, j, d in group:
                sums[k][p] += t - arr
                remaining[k][p] -= 1
                in_sys -= 1
                if remaining[k][p] == 0:
                    in_sys_parents -= 1
            dispatch(t)
        else:
            t, k, p, j = subs[i]
            i += 1
            advance(t)
            d = d_of[(k, p, j)]
            s_tag = max(vtime, last_f[k])
            last_f[k] = s_tag + d / phi[k]
            heapq.heappush(queue, (s_tag, t, k, p, j, d))
            in_sys += 1
            if j == 0:
                in_sys_parents += 1
            dispatch(t)
    horizon = max(last_t - t0, 1e-12)
    resp = [sums[k] / np.asarray(n_pieces[k], float) for k in range(k_classes)]
    total_parents = sum(n_parents)
    return RunResult(
        mean_resp=[float(r.mean()) if r.size else float("nan") for r in resp],
        n_sim=area / horizon,
        n_sim_parents=area_p / horizon,
        splitting_ratio=n_subs / total_parents if total_parents else 1.0,
        responses=resp,
    )


def expected_queue_length(n_iso: Sequence[float]) -> float:
    """Eq. 7: N_exp = Σ_k N_iso,k."""
    return float(sum(n_iso))


@dataclass
class Calibration:
    """Algorithm 2's outcome."""

    omega: float
    n_corrected: float  # N'_sim = N_sim / ω at the final ω
    n_expected: float
    error: float  # |N'_sim - N_exp| / N_exp
    converged: bool
    history: list[tuple[float, float]]  # (ω, N'_sim) per iteration
    note: str = ""


def calibrate_merge(
    repositories: Sequence[Sequence[Trace]],
    samplers: Sequence[Sampler],
    n_expected: float,
    *,
    seed: int = 0,
    omega0: float = 1.0,
    step: float = 0.5,
    runs: int = 20,
    max_iterations: int = 50,
    delta_max: float = DELTA_MAX,
    servers: int = DEFAULT_SERVERS,
    count_parents: bool = False,
) -> Calibration:
    """Algorithm 2: find ω so that N_sim / ω is within ``delta_max`` of ``n_expected``.

    ``repositories[k]`` holds VM k's isolation traces; each run draws one per VM. Runs use common
    random numbers across iterations (run r always uses seed (seed, r)).
    """
    if n_expected <= 0:
        raise ValueError(f"n_expected must be > 0, got {n_expected}")
    if step <= 0 or runs < 1 or omega0 < 1:
        raise ValueError("step > 0, runs >= 1 and omega0 >= 1 are required")

    def corrected(omega: float) -> float:
        ns = []
        for r in range(runs):
            rng = np.random.default_rng([seed, r])
            picks = [repo[int(rng.integers(len(repo)))] for repo in repositories]
            res = simulate(picks, samplers, rng, servers=servers, omega=omega)
            ns.append(res.n_sim_parents if count_parents else res.n_sim)
        return float(np.mean(ns)) / omega

    omega = omega0
    low_side: float | None = None  # largest ω seen with N' > N_exp (ω too small)
    high_side: float | None = None  # smallest ω seen with N' < N_exp (ω too large)
    history = []
    for _ in range(max_iterations):
        n_c = corrected(omega)
        history.append((omega, n_c))
        err = abs(n_c - n_expected) / n_expected
        if err <= delta_max:
            return Calibration(omega, n_c, n_expected, err, True, history)
        if n_c < n_expected:
            high_side = omega if high_side is None else min(high_side, omega)
            if omega <= 1.0:
                return Calibration(omega, n_c, n_expected, err, False, history, note="N'_sim < N_exp already at ω = 1")
            omega = (omega + low_side) / 2 if low_side is not None else max(1.0, omega - step)
        else:
            low_side = omega if low_side is None else max(low_side, omega)
            omega = (omega + high_side) / 2 if high_side is not None else omega + step
    n_c, _ = history[-1][1], None
    return Calibration(history[-1][0], n_c, n_expected, abs(n_c - n_expected) / n_expected, False, history, note="iteration cap reached")

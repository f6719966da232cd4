"""Priors, joint and conditional probabilities of event types, and precedence counts.

AECE (Sec. 2) writes P(Ej | Ei, alpha, dt) = P(Ei, Ej | alpha, dt) / P(Ei | alpha): the prior
depends on alpha, the joint on alpha and the coincidence span dt. The paper does not say how, so
this module implements the extraction's recommendation (2C-2) as one strategy:

1. Each occurrence of type i counts as *active* from its start for an effective duration
   (``alpha_mode``):

   - ``"cap"`` (default): min(lifetime, t_alpha_i); an open occurrence gets t_alpha_i. Long
     outliers of a type are cut at its alpha-quantile lifetime, so one stuck alarm does not
     make a type look always present.
   - ``"observed"``: the lifetime as observed (alpha only bounds open occurrences).
   - ``"t_alpha"``: every occurrence lasts exactly t_alpha_i.

2. The observation period [t0, t1) is cut into slots of width dt. X_i(s) = 1 when an active
   span of i touches slot s. Then P(Ei) = mean_s X_i(s), P_ij = mean_s X_i(s) X_j(s) and
   P(Ej | Ei) = P_ij / P(Ei). Two events are coincident when they are active in one dt slot.

**Precedence** (Sec. 4, step 1: drop conditionals "obtained artificially without any evidence of
Ej preceding Ei"): ``precedes[i, j]`` counts occurrences of i after whose start an occurrence of
j starts no later than dt past i's effective end. Equal starts count for both directions (the
data cannot tell them apart).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from vmtwin.analytics.events import Event, EventType
from vmtwin.analytics.lifetimes import LogNormal, fit_lognormal

#: The ways alpha can shape an occurrence's effective duration (first = default).
ALPHA_MODES = ("cap", "observed", "t_alpha")


@dataclass
class Cooccurrence:
    """Everything the graph stage needs about N event types (index order = ``types``)."""

    types: list[EventType]
    prior: np.ndarray        # (N,) P(Ei)
    joint: np.ndarray        # (N, N) P_ij, symmetric, diagonal = prior
    precedes: np.ndarray     # (N, N) int, occurrences of i followed by j
    occurrences: np.ndarray  # (N,) int
    t_alpha_s: np.ndarray    # (N,) effective-duration cap per type
    laws: list              # (N,) LogNormal or None
    slots: int
    dt_s: float

    def conditional(self) -> np.ndarray:
        """(N, N) matrix with [i, j] = P(Ej | Ei) (0 where P(Ei) = 0)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(self.prior[:, None] > 0, self.joint / self.prior[:, None], 0.0)
        np.fill_diagonal(c, 0.0)
        return c


def effective_spans(events: Sequence[Event], index: dict, t_alpha_s: np.ndarray, t1: float,
                    alpha_mode: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(type index, start, effective end) arrays, ends clipped to ``t1``."""
    if alpha_mode not in ALPHA_MODES:
        raise ValueError(f"alpha_mode: got {alpha_mode!r}; allowed: {', '.join(ALPHA_MODES)}")
    ti = np.empty(len(events), dtype=np.int64)
    st = np.empty(len(events))
    en = np.empty(len(events))
    for k, e in enumerate(events):
        i = index[e.type]
        cap = t_alpha_s[i]
        if e.end is None or alpha_mode == "t_alpha":
            dur = cap
        elif alpha_mode == "cap":
            dur = min(e.end - e.start, cap)
        else:
            dur = e.end - e.start
        ti[k], st[k], en[k] = i, e.start, min(e.start + dur, t1)
    return ti, st, en


def cooccurrence(events: Sequence[Event], t0: float, t1: float, dt_s: float, alpha: float,
                 alpha_mode: str = "cap", types: Sequence[EventType] | None = None) -> Cooccurrence:
    """Count the probabilities of the events that start in [t0, t1).

    Types without a lifetime fit (too few closed occurrences) get t_alpha = dt (one slot).
    """
    if not dt_s > 0:
        raise ValueError(f"dt: got {dt_s!r}; allowed: a positive number of seconds")
    if not t1 > t0:
        raise ValueError(f"training period: got [{t0}, {t1}); allowed: a period of positive length")
    events = [e for e in events if t0 <= e.start < t1]
    types = sorted({e.type for e in events}) if types is None else list(types)
    index = {t: i for i, t in enumerate(types)}
    n = len(types)
    lifetimes: list[list[float]] = [[] for _ in range(n)]
    for e in events:
        if e.end is not None:
            lifetimes[index[e.type]].append(e.end - e.start)
    laws: list[LogNormal | None] = [fit_lognormal(x) for x in lifetimes]
    t_alpha = np.array([law.quantile(alpha) if law is not None else dt_s for law in laws])
    ti, st, en = effective_spans(events, index, t_alpha, t1, alpha_mode)

    slots = int(math.ceil((t1 - t0) / dt_s))
    x = np.zeros((slots, n))  # float64: counts stay exact, so P(Ej | Ei) <= 1 holds exactly
    first = np.clip(((st - t0) // dt_s).astype(np.int64), 0, slots - 1)
    last = np.clip(((np.maximum(en, st) - t0) // dt_s).astype(np.int64), 0, slots - 1)
    for i, a, b in zip(ti, first, last):
        x[a:b + 1, i] = 1.0
    prior = x.sum(axis=0) / slots
    joint = (x.T @ x) / slots

    prec = np.zeros((n, n), dtype=np.int64)
    order = np.argsort(st, kind="stable")
    st_sorted, ti_sorted = st[order], ti[order]
    for k in range(len(order)):
        a = order[k]
        lo = np.searchsorted(st_sorted, st[a], side="left")
        hi = np.searchsorted(st_sorted, en[a] + dt_s, side="right")
        partners = set(int(j) for j in ti_sorted[lo:hi]) - {int(ti[a])}
        for j in partners:
            prec[ti[a], j] += 1
    occ = np.bincount(ti, minlength=n).astype(np.int64)
    return Cooccurrence(types, prior, joint, prec, occ, t_alpha, laws, slots, dt_s)

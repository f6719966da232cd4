"""The AECE pipeline: events -> probabilities -> reduced graph -> lists, bottlenecks, patterns.

:func:`fit` learns a :class:`Model` from the events of a training period (Flowchart 1 steps 1-7,
Flowcharts 2 and 3 in historic mode); :meth:`Model.online` runs the active mode at a moment T
(step 8, impacted resources, black-swan risk). Every tunable is a field of :class:`AeceParams`
with its default and where it comes from.

An optional **topology** (resource dependency edges, ``(upstream, downstream)``: a fault of the
upstream resource can show on the downstream one) sharpens the graph as the paper allows: a
directed edge between events of two different resources is kept only if the topology has a path
from the parent's resource to the child's. Events of one resource are not constrained.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Iterable, Optional, Sequence

import networkx as nx

from vmtwin.analytics.cooccurrence import Cooccurrence, cooccurrence
from vmtwin.analytics.critical import (CriticalParams, black_swan_coverage, black_swan_nodes, black_swan_risk,
                                       critical_nodes, critical_paths, critical_sectors, extreme_paths, roots)
from vmtwin.analytics.events import Event
from vmtwin.analytics.graph import CorrelationGraph, build_graph
from vmtwin.analytics.recommend import (Entry, RecList, active_lists, bottlenecks, historical_lists, impacted,
                                        online_ranking)


@dataclass(frozen=True)
class AeceParams:
    """Tunables of the correlation engine.

    dt_s: coincidence span (s); 15 min, inside the extraction's 15-30 min (2C-2).
    alpha: lifetime quantile level; 0.9 (2C-2).
    alpha_mode: how alpha shapes an occurrence (:data:`~vmtwin.analytics.cooccurrence.ALPHA_MODES`).
    epsilon: reduction sensitivity in [0, 1] (Sec. 4 step 2); 0.5 until a sweep says otherwise.
    threshold_rule: D+/D- formula (:data:`~vmtwin.analytics.graph.THRESHOLD_RULES`).
    reduce: apply the MI reduction at all.
    min_precedence: occurrences of i before j for the edge i -> j (2C-3); 1.
    precedence_share: also require i before j in this share of the pair's precedence observations
        (0 = off). 0.7: the best of 0, 0.5, 0.6, 0.7, 0.8, 0.9, 1 on the calibration seeds 1 and 5
        (top-1 0.48 -> 0.78, top-3 0.78 -> 0.97 over their 58 outages); the extraction (2C-3) offers
        0.5 as the option.
    impact_order: 1 (the paper's experiments) or h > 1.
    list_order, rank_by, active_flow, merge: see :mod:`vmtwin.analytics.recommend`. active_flow
        defaults to ``"active"``: chosen on the synthetic calibration seed 1, where it lifted the
        top-1 hit rate from 0.26 to 0.78 over ``"all"`` (docs/analytics.md, evaluation).
    lookback_s: the active set at T is every event whose span meets [T - lookback, T]; None = dt.
    bottleneck_gap, bottleneck_min_length: the bottleneck rule (2C-9).
    critical: thresholds of the Critical Component Analyzer.
    risk_rule: black-swan risk formula.
    """

    dt_s: float = 900.0
    alpha: float = 0.9
    alpha_mode: str = "cap"
    epsilon: float = 0.5
    threshold_rule: str = "fence"
    reduce: bool = True
    min_precedence: int = 1
    precedence_share: float = 0.7
    impact_order: int = 1
    list_order: str = "weight"
    rank_by: str = "impact"
    active_flow: str = "active"
    merge: str = "flow"
    lookback_s: Optional[float] = None
    bottleneck_gap: float = 30.0
    bottleneck_min_length: int = 3
    critical: CriticalParams = field(default_factory=CriticalParams)
    risk_rule: str = "coverage"

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Online:
    """The active mode at one moment."""

    time: float
    active: list[str]
    lists: list[RecList]
    ranking: list[Entry]
    risk: float

    def resources(self) -> list[str]:
        """The ranking collapsed to resources (first = highest-ranked event of the resource)."""
        return list(dict.fromkeys(e.node.split(":", 1)[0] for e in self.ranking))


@dataclass
class Model:
    """A fitted engine: probabilities, reduced graph, historic lists and patterns."""

    params: AeceParams
    co: Cooccurrence
    graph: CorrelationGraph
    lists: list[RecList]
    t0: float
    t1: float

    def bottlenecks(self) -> list[list[str]]:
        """Per historic list, the bottleneck resources (collapsed from events by max RRI)."""
        out = []
        for r in self.lists:
            res = collapse(r.entries)
            k = bottlenecks([x for _, x in res], self.params.bottleneck_gap, self.params.bottleneck_min_length)
            out.append([name for name, _ in res[:k]])
        return out

    def patterns(self) -> dict:
        g, p = self.graph, self.params.critical
        return {
            "critical_nodes": critical_nodes(g, p),
            "roots": roots(g),
            "critical_paths": [list(x) for x in critical_paths(g, p)],
            "extreme_paths": [list(x) for x in extreme_paths(g, p)],
            "critical_sectors": critical_sectors(g, p),
            "black_swan_nodes": black_swan_nodes(g, p),
            "black_swan_coverage_pct": black_swan_coverage(g, p),
        }

    def active_at(self, events: Iterable[Event], t: float) -> set[str]:
        """Labels of the events whose span meets [t - lookback, t] (open events run on)."""
        look = self.params.dt_s if self.params.lookback_s is None else self.params.lookback_s
        return {e.type.label for e in events
                if e.start <= t and (e.end is None or e.end >= t - look)}

    def online(self, events: Iterable[Event], t: float) -> Online:
        """Active mode at time ``t`` over the given events (those known at ``t``)."""
        active = self.active_at(events, t)
        lists = active_lists(self.graph, self.lists, active, self.params.active_flow)
        ranking = online_ranking(lists, self.params.merge)
        risk = black_swan_risk(self.graph, active, self.params.critical, self.params.risk_rule)
        return Online(t, sorted(active), lists, ranking, risk)

    def impacted(self, node: str):
        return impacted(self.graph, node)


def collapse(entries: Sequence[Entry]) -> list[tuple[str, float]]:
    """(resource, max RRI of its events), in list order (extraction 2C-8)."""
    best: dict[str, float] = {}
    for e in entries:
        r = e.node.split(":", 1)[0]
        best[r] = max(best.get(r, 0.0), e.rri)
    return sorted(best.items(), key=lambda kv: -kv[1])


def apply_topology(g: CorrelationGraph, edges: Iterable[tuple[str, str]]) -> None:
    """Drop directed edges between resources the topology does not connect (in place)."""
    topo = nx.DiGraph(list(edges))
    reach = {r: nx.descendants(topo, r) for r in topo}
    drop = []
    for a, b in g.directed.edges:
        ra, rb = a.split(":", 1)[0], b.split(":", 1)[0]
        if ra != rb and rb not in reach.get(ra, set()):
            drop.append((a, b))
    g.directed.remove_edges_from(drop)


def fit(events: Sequence[Event], t0: float, t1: float, params: AeceParams = AeceParams(),
        topology: Optional[Iterable[tuple[str, str]]] = None) -> Model:
    """Learn the engine from the events starting in the training period [t0, t1)."""
    train = [e for e in events if t0 <= e.start < t1]
    if not train:
        raise ValueError(f"training period [{t0:g}, {t1:g}): no events start in it; "
                         "allowed: a period holding at least one event")
    co = cooccurrence(train, t0, t1, params.dt_s, params.alpha, params.alpha_mode)
    g = build_graph(co, params.epsilon, params.threshold_rule, params.min_precedence,
                    params.precedence_share, params.reduce)
    if topology is not None:
        apply_topology(g, topology)
    lists = historical_lists(g, params.impact_order, params.list_order, params.rank_by)
    return Model(params, co, g, lists, t0, t1)


def persistent_bottlenecks(events: Sequence[Event], t0: float, t1: float, params: AeceParams = AeceParams(),
                           windows: int = 4, min_windows: int = 3) -> dict[str, int]:
    """Bottleneck resources that persist: flagged in at least ``min_windows`` of ``windows`` equal
    slices of [t0, t1) (the paper's "persisting presence in network failures", extraction 2C-9).

    Returns {resource: number of slices it was flagged in}, for those reaching ``min_windows``.
    A slice without events is skipped (it counts as not flagged).
    """
    if not 1 <= min_windows <= windows:
        raise ValueError(f"min_windows: got {min_windows!r}; allowed: an integer from 1 to windows ({windows})")
    counts: dict[str, int] = {}
    width = (t1 - t0) / windows
    for w in range(windows):
        a, b = t0 + w * width, t0 + (w + 1) * width
        if not any(a <= e.start < b for e in events):
            continue
        flagged = {r for lst in fit(events, a, b, params).bottlenecks() for r in lst}
        for r in flagged:
            counts[r] = counts.get(r, 0) + 1
    return {r: n for r, n in sorted(counts.items()) if n >= min_windows}

"""Critical Component Analyzer and black swans (AECE Sec. 6 and 6A).

Patterns on a correlation graph (thresholds are named parameters; the paper gives values only in
its Fig. 6 example, the rest are the extraction's defaults, 2C-10):

- **Critical node**: prior >= ``critical_prior`` (0.9, Fig. 6). Chronic alarms.
- **Root**: a node with outgoing edges and no incoming edge ("historically an impacting-only
  resource").
- **Critical path**: a maximal simple directed path of at least ``min_path_nodes`` (3) nodes whose
  every edge has P(child | parent) >= ``critical_edge`` (0.9). Maximal: it is not a contiguous
  part of a longer such path.
- **Extreme path**: a maximal path of at least ``min_path_nodes`` nodes through nodes of prior >=
  ``extreme_prior`` (0.7, Fig. 6) along edges with P >= ``extreme_edge``. The paper calls it "a
  Critical Path whose nodes all have prior >= threshold"; in Fig. 6 the extreme path H-B-A-O and
  the critical path B-R-S-T-U share B, which is only possible if the extreme path's edges are
  held to a lower bar than 0.9 (otherwise H-B-R-S-T-U would be the maximal critical path). So
  ``extreme_edge`` defaults to the Fig. 6 value 0.7; set it to ``critical_edge`` for the literal
  reading.
- **Critical sector** of magnitude M: a connected set of at least M nodes (a count, or a fraction
  of all nodes when M < 1) whose joint-probability edges are all >= ``sector_joint`` (0.5):
  components of the graph of such edges.
- **Black-swan node**: prior <= ``bs_prior`` (0.05) and at least ``bs_min_children`` (3) children
  with P >= ``bs_edge`` (0.8). Its coverage Cov(b) is that set of strong children.
- **Black-swan event**: the black-swan nodes together cover at least ``bs_coverage`` (50 %) of the
  graph's nodes: |union Cov(b)| / N (Fig. 6: J and D cover 72 %).
- **On-line risk** at time T: the share of the black-swan coverage reached by the black-swan nodes
  that are active at T::

      R_BS(T) = 100 * |union_{b active} Cov(b)| / |union_b Cov(b)|

  ``risk_rule="weighted"`` uses 100 * sum_{b active} flow(b) / sum_b flow(b) instead. Both are
  100 when every black-swan node is active.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from vmtwin.analytics.graph import CorrelationGraph
from vmtwin.analytics.impact import flow

RISK_RULES = ("coverage", "weighted")

#: Cap on the paths enumerated per pattern (the number of simple paths can grow exponentially).
MAX_PATHS = 2_000


@dataclass(frozen=True)
class CriticalParams:
    critical_prior: float = 0.9
    critical_edge: float = 0.9
    extreme_prior: float = 0.7
    extreme_edge: float = 0.7
    min_path_nodes: int = 3
    sector_joint: float = 0.5
    sector_min: float = 3
    bs_prior: float = 0.05
    bs_edge: float = 0.8
    bs_min_children: int = 3
    bs_coverage: float = 50.0


def critical_nodes(g: CorrelationGraph, p: CriticalParams = CriticalParams()) -> list:
    return sorted(n for n, q in g.prior.items() if q >= p.critical_prior)


def roots(g: CorrelationGraph) -> list:
    return sorted(n for n in g.directed if g.directed.out_degree(n) > 0 and g.directed.in_degree(n) == 0)


def _maximal_paths(h: nx.DiGraph, min_nodes: int) -> list[tuple]:
    """Maximal simple paths of ``h`` with at least ``min_nodes`` nodes."""
    paths: list[tuple] = []

    def extend(path: list, seen: set) -> None:
        if len(paths) >= MAX_PATHS:
            return
        nxt = [c for c in sorted(h.successors(path[-1]), key=str) if c not in seen]
        if not nxt:
            paths.append(tuple(path))
            return
        for c in nxt:
            seen.add(c)
            path.append(c)
            extend(path, seen)
            path.pop()
            seen.discard(c)

    # a maximal path may start on a cycle even when the cycle is reachable, so try every node
    for s in sorted((n for n in h if h.out_degree(n) > 0), key=str):
        extend([s], {s})
    paths = [q for q in dict.fromkeys(paths) if len(q) >= min_nodes]

    def inside(a: tuple, b: tuple) -> bool:
        return len(a) < len(b) and any(b[k:k + len(a)] == a for k in range(len(b) - len(a) + 1))

    return sorted((a for a in paths if not any(inside(a, b) for b in paths)), key=lambda q: (-len(q), q))


def critical_paths(g: CorrelationGraph, p: CriticalParams = CriticalParams()) -> list[tuple]:
    h = nx.DiGraph((a, b) for a, b, d in g.directed.edges(data=True) if d["p"] >= p.critical_edge)
    return _maximal_paths(h, p.min_path_nodes)


def extreme_paths(g: CorrelationGraph, p: CriticalParams = CriticalParams()) -> list[tuple]:
    high = {n for n, q in g.prior.items() if q >= p.extreme_prior}
    h = nx.DiGraph((a, b) for a, b, d in g.directed.edges(data=True)
                   if d["p"] >= p.extreme_edge and a in high and b in high)
    return _maximal_paths(h, p.min_path_nodes)


def critical_sectors(g: CorrelationGraph, p: CriticalParams = CriticalParams()) -> list[list]:
    h = nx.Graph((a, b) for a, b, d in g.undirected.edges(data=True) if d["joint"] >= p.sector_joint)
    size = p.sector_min if p.sector_min >= 1 else p.sector_min * len(g.prior)
    return sorted((sorted(c, key=str) for c in nx.connected_components(h) if len(c) >= size),
                  key=lambda c: (-len(c), c))


def coverage(g: CorrelationGraph, node, p: CriticalParams = CriticalParams()) -> set:
    """The node's strong children (P >= ``bs_edge``)."""
    return {c for c in g.directed.successors(node) if g.p(node, c) >= p.bs_edge} if node in g.directed else set()


def black_swan_nodes(g: CorrelationGraph, p: CriticalParams = CriticalParams()) -> list:
    return sorted(n for n, q in g.prior.items()
                  if q <= p.bs_prior and len(coverage(g, n, p)) >= p.bs_min_children)


def black_swan_coverage(g: CorrelationGraph, p: CriticalParams = CriticalParams()) -> float:
    """Percent of the graph's nodes covered by the black-swan nodes together."""
    cov = set().union(*(coverage(g, b, p) for b in black_swan_nodes(g, p))) if g.prior else set()
    return 100.0 * len(cov) / len(g.prior) if g.prior else 0.0


def black_swan_event(g: CorrelationGraph, p: CriticalParams = CriticalParams()) -> bool:
    return black_swan_coverage(g, p) >= p.bs_coverage


def black_swan_risk(g: CorrelationGraph, active: set, p: CriticalParams = CriticalParams(),
                    rule: str = "coverage") -> float:
    """R_BS(T) in percent for the set of events active at T (0 when there are no black-swan nodes)."""
    if rule not in RISK_RULES:
        raise ValueError(f"risk_rule: got {rule!r}; allowed: {', '.join(RISK_RULES)}")
    bs = black_swan_nodes(g, p)
    if not bs:
        return 0.0
    if rule == "weighted":
        w = {b: flow(g, b) for b in bs}
        total = sum(w.values())
        return 100.0 * sum(w[b] for b in bs if b in active) / total if total > 0 else 0.0
    full = set().union(*(coverage(g, b, p) for b in bs))
    now = set().union(set(), *(coverage(g, b, p) for b in bs if b in active))
    return 100.0 * len(now) / len(full)

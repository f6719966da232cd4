"""Recommendation lists, RRI and LRR, the active mode, impacted resources and bottlenecks.

**Historical lists** (AECE Sec. 4, steps 4-7): one list per connected component of the reduced
graph, its nodes sorted by decreasing impact factor, leaves (no outgoing edge) removed. Each
entry's *Relative Recommendation Index* is its impact relative to the list's top::

    RRI(i) = 100 * F(i) / F(top)

A list's weight is the sum of the priors of its component's nodes; the *List Relative Rank* is
LRR = 100 * W / W(first list). The paper orders lists by node count with weight as tie-break
(step 5) but ranks them by weight (step 7); ``list_order`` selects ``"weight"`` (default, as
Table 1 is printed) or ``"size"``.

**Active mode** (step 8): the currently active events of each list, re-ranked by their flow
(no prior), RRI relative to the list's first active event. ``active_flow`` selects whether the
flow runs only over children that are active too (``"active"``, the engine's default: which
active event explains the other active events) or over all its children (``"all"``, the literal
sum over the node's neighbours). The single on-line ranking used for hit rates
merges the lists: ``merge="flow"`` (default) sorts every active entry by its flow,
``merge="lists"`` concatenates the lists in LRR order.

**Impacted resources** (step 9): a node's children by decreasing P(child | node), RRI relative to
the largest.

**Bottlenecks** (Sec. 5): "largely deviating from the rest ... in its RRI". The rule (extraction
2C-9): in a list sorted by RRI, find the largest drop between consecutive RRIs; the entries above
it are bottlenecks when the drop is at least ``gap`` RRI points (default 30) and the list has at
least ``min_length`` entries (default 3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vmtwin.analytics.graph import CorrelationGraph
from vmtwin.analytics.impact import entropy, flow, impact

#: Bottleneck rule defaults (extraction 2C-9: reproduces Table 1).
BOTTLENECK_GAP_RRI = 30.0
BOTTLENECK_MIN_LENGTH = 3

LIST_ORDERS = ("weight", "size")
ACTIVE_FLOWS = ("active", "all")
MERGES = ("flow", "lists")
RANK_BY = ("impact", "entropy")


@dataclass
class Entry:
    """One node of a recommendation list."""

    node: str
    score: float  # impact factor (or flow in active mode, or -entropy)
    rri: float


@dataclass
class RecList:
    """A recommendation list of one component."""

    entries: list[Entry]
    nodes: set
    weight: float
    lrr: float = 100.0


def rri(scores: list[float]) -> list[float]:
    """100 * score / first score (scores sorted decreasing; all 0 if the top is not positive)."""
    if not scores or scores[0] <= 0:
        return [0.0] * len(scores)
    return [100.0 * s / scores[0] for s in scores]


def _ranked(nodes, score) -> list[Entry]:
    scored = sorted(((score(n), n) for n in nodes), key=lambda t: (-t[0], str(t[1])))
    return [Entry(n, s, r) for (s, n), r in zip(scored, rri([s for s, _ in scored]))]


def historical_lists(g: CorrelationGraph, order: int = 1, list_order: str = "weight",
                     rank_by: str = "impact") -> list[RecList]:
    """The historical recommendation lists, first list first, LRR filled in."""
    if list_order not in LIST_ORDERS:
        raise ValueError(f"list_order: got {list_order!r}; allowed: {', '.join(LIST_ORDERS)}")
    if rank_by not in RANK_BY:
        raise ValueError(f"rank_by: got {rank_by!r}; allowed: {', '.join(RANK_BY)}")
    lists = []
    for comp in g.components():
        inner = [n for n in comp if g.directed.out_degree(n) > 0]
        if not inner:
            continue
        if rank_by == "impact":
            entries = _ranked(inner, lambda n: impact(g, n, order))
        else:  # lowest entropy first; RRI on exp(-H) so it stays in (0, 100]
            entries = _ranked(inner, lambda n: math.exp(-entropy(g, n)))
        lists.append(RecList(entries, comp, math.fsum(g.prior[n] for n in sorted(comp, key=str))))
    if list_order == "weight":
        lists.sort(key=lambda r: (-r.weight, -len(r.nodes), min(map(str, r.nodes))))
    else:
        lists.sort(key=lambda r: (-len(r.nodes), -r.weight, min(map(str, r.nodes))))
    if lists:
        w1 = lists[0].weight
        for r in lists:
            r.lrr = 100.0 * r.weight / w1 if w1 > 0 else 0.0
    return lists


def active_lists(g: CorrelationGraph, lists: list[RecList], active: set,
                 active_flow: str = "all") -> list[RecList]:
    """Each historical list restricted to the active events, re-ranked by flow (lists kept in order,
    empty ones dropped)."""
    if active_flow not in ACTIVE_FLOWS:
        raise ValueError(f"active_flow: got {active_flow!r}; allowed: {', '.join(ACTIVE_FLOWS)}")
    among = active if active_flow == "active" else None
    out = []
    for r in lists:
        hits = [e.node for e in r.entries if e.node in active]
        if hits:
            out.append(RecList(_ranked(hits, lambda n: flow(g, n, among)), r.nodes, r.weight, r.lrr))
    return out


def online_ranking(lists: list[RecList], merge: str = "flow") -> list[Entry]:
    """One ranked list of the active entries of all lists."""
    if merge not in MERGES:
        raise ValueError(f"merge: got {merge!r}; allowed: {', '.join(MERGES)}")
    entries = [e for r in lists for e in r.entries]
    if merge == "flow":
        entries = sorted(entries, key=lambda e: -e.score)  # stable: list order breaks ties
    return entries


def impacted(g: CorrelationGraph, node) -> list[tuple[str, float, float]]:
    """(child, P(child | node), RRI) by decreasing probability."""
    kids = g.children(node)
    ps = [g.p(node, c) for c in kids]
    return [(c, p, r) for c, p, r in zip(kids, ps, rri(ps))]


def bottlenecks(rris: list[float], gap: float = BOTTLENECK_GAP_RRI,
                min_length: int = BOTTLENECK_MIN_LENGTH) -> int:
    """How many leading entries of a list (RRIs sorted decreasing) are bottlenecks (0 = none)."""
    if len(rris) < max(min_length, 2):
        return 0
    drops = [rris[k] - rris[k + 1] for k in range(len(rris) - 1)]
    k = max(range(len(drops)), key=lambda i: (drops[i], -i))
    return k + 1 if drops[k] >= gap else 0

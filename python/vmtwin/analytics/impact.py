"""Impact factors and neighbourhood entropy of the nodes of a correlation graph (AECE Sec. 3).

**First-order impact** weighs an event's risk (its prior) by its *probability flow*, the sum of
the conditional probabilities on its outgoing edges::

    F1(Ei) = P(Ei) * sum_n P(Ei^(n) | Ei)          (leaves: 0)

``with_prior=False`` gives the flow alone (what the active mode uses).

**h-order impact** (behind a flag; the paper's experiments used first order only). The paper says
F_h is computed "recursively over the graph bottom to top" over spans h*dt, and loses the formula.
The strategy here adds the children's (h-1)-order impacts weighted by the edge probability::

    F_h(Ei) = F1(Ei) + sum_n P(Ei^(n) | Ei) * F_{h-1}(Ei^(n)),   F_0 = 0

The recursion is depth-limited, so it ends on graphs with cycles.

**Neighbourhood conditional entropy** (the "general case of random variable events")::

    H(Ei) = - sum_n P(Ei, Ei^(n)) * ln P(Ei^(n) | Ei)

lower = more likely a cause (the patent's claim 4); ``rank_by="entropy"`` in the engine sorts by it.
"""

from __future__ import annotations

import math

from vmtwin.analytics.graph import CorrelationGraph


def flow(g: CorrelationGraph, node, among: set | None = None) -> float:
    """Sum of P(child | node) over the node's children (only those in ``among`` if given)."""
    if node not in g.directed:
        return 0.0
    return float(sum(d["p"] for _, c, d in g.directed.out_edges(node, data=True) if among is None or c in among))


def impact(g: CorrelationGraph, node, order: int = 1, with_prior: bool = True) -> float:
    """F_order(node); ``order`` >= 1."""
    if order < 1:
        raise ValueError(f"impact order: got {order!r}; allowed: an integer >= 1")
    first = (g.prior[node] if with_prior else 1.0) * flow(g, node)
    if order == 1 or first == 0.0:
        return first
    return first + sum(g.p(node, c) * impact(g, c, order - 1, with_prior) for c in g.directed.successors(node))


def entropy(g: CorrelationGraph, node) -> float:
    """H(node) over its children, using the joint on the undirected edge of each pair."""
    h = 0.0
    for c in g.directed.successors(node):
        p = g.p(node, c)
        if p > 0 and g.undirected.has_edge(node, c):
            h -= g.undirected.edges[node, c]["joint"] * math.log(p)
    return h

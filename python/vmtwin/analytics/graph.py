"""The correlation graph and its mutual-information reduction (AECE Sec. 3 and Sec. 4 steps 1-3).

Nodes are event types with their prior P(E). Two graphs share them:

- the **undirected** graph, one edge per pair seen together (P_ij > 0), carrying the joint
  P_ij and the pair's mutual information;
- the **directed** graph, an edge i -> j carrying P(Ej | Ei) ("i impacts j"), kept only where
  i was seen to precede j at least ``min_precedence`` times (the precedence filter).

**Mutual information** of two events is the both-occur term of the general formula (the only
reading under which values can be negative, as the paper's split "by sign" needs)::

    I(Ei; Ej) = P_ij * ln(P_ij / (P(Ei) P(Ej)))

**Reduction**: the positive and the negative I values are split, their quartiles Q25, Q75 and
inter-quartile ranges taken, and an edge is removed when its I is weak: I < D+ for I >= 0, or
I > D- for I < 0. The formulas for D+ and D- are lost in the paper; ``threshold_rule`` selects:

- ``"fence"`` (default): D+ = Q+25 - eps * IQR+, D- = Q-75 + eps * IQR-. eps = 0 prunes the
  weakest quarter on each side; larger eps moves the cut toward a Tukey-style fence and prunes
  less.
- ``"tukey"``: the same with 1.5 * eps * IQR (the textbook whisker length at eps = 1).
- ``"interpolate"``: D+ = Q+25 + eps * IQR+, D- = Q-75 - eps * IQR-: prunes *more* as eps grows
  (from the weakest quarter at eps = 0 to the weakest three quarters at eps = 1).

A side with fewer than :data:`MIN_VALUES_FOR_QUARTILES` values is not pruned. Directed edges
whose pair was removed go too.

**Components** (step 3): weakly connected components of the reduced undirected graph (the
paper's row-OR closure and flood-fill colouring compute the same); nodes left without
neighbours are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from vmtwin.analytics.cooccurrence import Cooccurrence

#: The reduction threshold rules (first = default).
THRESHOLD_RULES = ("fence", "tukey", "interpolate")

#: Fewest values on one sign's side for its quartiles to be used.
MIN_VALUES_FOR_QUARTILES = 4


@dataclass
class CorrelationGraph:
    """Event-type nodes with ``prior``; ``directed`` edges carry ``p`` = P(child | parent),
    ``undirected`` edges carry ``joint`` and ``mi``."""

    prior: dict
    directed: nx.DiGraph = field(default_factory=nx.DiGraph)
    undirected: nx.Graph = field(default_factory=nx.Graph)

    def p(self, parent, child) -> float:
        """P(child | parent) on a kept directed edge (KeyError if none)."""
        return self.directed.edges[parent, child]["p"]

    def children(self, node) -> list:
        """Out-neighbours, by decreasing P(child | node), then by name."""
        if node not in self.directed:
            return []
        return sorted(self.directed.successors(node), key=lambda c: (-self.p(node, c), str(c)))

    def components(self) -> list[set]:
        """Connected components of the reduced undirected graph, isolated nodes dropped."""
        return [set(c) for c in nx.connected_components(self.undirected) if len(c) > 1]

    @classmethod
    def from_edges(cls, prior: dict, conditional: dict, joint: dict | None = None) -> "CorrelationGraph":
        """A graph built by hand: ``conditional[(parent, child)] = P(child | parent)``;
        ``joint[(a, b)]`` defaults to P(child | parent) * P(parent) of either direction."""
        g = cls(dict(prior))
        g.directed.add_nodes_from(prior)
        g.undirected.add_nodes_from(prior)
        for (a, b), p in conditional.items():
            g.directed.add_edge(a, b, p=float(p))
            if not g.undirected.has_edge(a, b):
                j = (joint or {}).get((a, b), (joint or {}).get((b, a), p * prior[a]))
                g.undirected.add_edge(a, b, joint=float(j), mi=float("nan"))
        for (a, b), j in (joint or {}).items():
            if not g.undirected.has_edge(a, b):
                g.undirected.add_edge(a, b, joint=float(j), mi=float("nan"))
        return g


def mutual_information(co: Cooccurrence) -> np.ndarray:
    """(N, N) single-term mutual information; NaN where the pair never co-occurs."""
    p = co.prior
    with np.errstate(divide="ignore", invalid="ignore"):
        mi = co.joint * np.log(co.joint / np.outer(p, p))
    mi[co.joint <= 0] = np.nan
    np.fill_diagonal(mi, np.nan)
    return mi


def thresholds(values: np.ndarray, eps: float, rule: str = "fence") -> tuple[float, float]:
    """(D+, D-) for the finite MI ``values`` (-inf / +inf on a side too small to prune)."""
    if rule not in THRESHOLD_RULES:
        raise ValueError(f"threshold_rule: got {rule!r}; allowed: {', '.join(THRESHOLD_RULES)}")
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"epsilon: got {eps!r}; allowed: a number from 0 to 1")
    v = values[np.isfinite(values)]
    pos, neg = v[v >= 0], v[v < 0]
    k = {"fence": eps, "tukey": 1.5 * eps, "interpolate": -eps}[rule]
    d_plus, d_minus = -np.inf, np.inf
    if pos.size >= MIN_VALUES_FOR_QUARTILES:
        q25, q75 = np.quantile(pos, [0.25, 0.75])
        d_plus = float(q25 - k * (q75 - q25))
    if neg.size >= MIN_VALUES_FOR_QUARTILES:
        q25, q75 = np.quantile(neg, [0.25, 0.75])
        d_minus = float(q75 + k * (q75 - q25))
    return d_plus, d_minus


def build_graph(co: Cooccurrence, eps: float, rule: str = "fence", min_precedence: int = 1,
                precedence_share: float = 0.0, reduce: bool = True) -> CorrelationGraph:
    """Complete graph of co-occurring pairs, MI-reduced, with the precedence-filtered directed edges.

    ``precedence_share`` additionally requires i -> j to hold in that share of the pair's
    precedence observations (i before j versus j before i); 0 disables it.
    """
    labels = [t.label for t in co.types]
    mi = mutual_information(co)
    iu = np.triu_indices(len(labels), k=1)
    d_plus, d_minus = thresholds(mi[iu], eps, rule) if reduce else (-np.inf, np.inf)
    cond = co.conditional()
    g = CorrelationGraph({labels[i]: float(co.prior[i]) for i in range(len(labels))})
    g.directed.add_nodes_from(labels)
    g.undirected.add_nodes_from(labels)
    for i, j in zip(*iu):
        v = mi[i, j]
        if not np.isfinite(v):
            continue
        if (v >= 0 and v < d_plus) or (v < 0 and v > d_minus):
            continue
        g.undirected.add_edge(labels[i], labels[j], joint=float(co.joint[i, j]), mi=float(v))
        for a, b in ((i, j), (j, i)):
            n_ab, n_ba = co.precedes[a, b], co.precedes[b, a]
            if n_ab < min_precedence:
                continue
            if precedence_share > 0 and n_ab < precedence_share * (n_ab + n_ba):
                continue
            g.directed.add_edge(labels[a], labels[b], p=float(cond[a, b]))
    return g

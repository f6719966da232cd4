"""MI reduction, impact factors, lists, RRI/LRR, active mode, topology: against hand and numpy oracles."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmtwin.analytics.cooccurrence import Cooccurrence
from vmtwin.analytics.engine import apply_topology
from vmtwin.analytics.events import EventType
from vmtwin.analytics.graph import THRESHOLD_RULES, CorrelationGraph, build_graph, mutual_information, thresholds
from vmtwin.analytics.impact import entropy, flow, impact
from vmtwin.analytics.recommend import active_lists, historical_lists, impacted, online_ranking


def random_co(seed: int, n: int = 8) -> Cooccurrence:
    rng = np.random.default_rng(seed)
    x = (rng.random((400, n)) < rng.uniform(0.05, 0.6, n)).astype(float)
    x[:, 1] = np.maximum(x[:, 1], x[:, 0] * (rng.random(400) < 0.9))  # some real dependence
    prior = x.mean(0)
    joint = x.T @ x / 400
    prec = rng.integers(0, 3, (n, n))
    types = [EventType(f"r{i}", "m", "above") for i in range(n)]
    return Cooccurrence(types, prior, joint, prec, np.ones(n, int), np.ones(n), [None] * n, 400, 60.0)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(THRESHOLD_RULES), st.floats(0, 1), st.floats(0, 1))
def test_reduction_keeps_exactly_the_strong_pairs(seed, rule, e1, e2):
    co = random_co(seed)
    mi = mutual_information(co)
    iu = np.triu_indices(len(co.types), 1)
    vals = mi[iu]
    pos, neg = vals[np.isfinite(vals) & (vals >= 0)], vals[np.isfinite(vals) & (vals < 0)]
    g = build_graph(co, e1, rule, min_precedence=0)
    k = {"fence": e1, "tukey": 1.5 * e1, "interpolate": -e1}[rule]
    for i, j in zip(*iu):
        v = mi[i, j]
        keep = np.isfinite(v)
        if keep and v >= 0 and pos.size >= 4:
            q1, q3 = np.percentile(pos, [25, 75])
            keep = v >= q1 - k * (q3 - q1)
        elif keep and v < 0 and neg.size >= 4:
            q1, q3 = np.percentile(neg, [25, 75])
            keep = v <= q3 + k * (q3 - q1)
        assert g.undirected.has_edge(f"r{i}:m:above", f"r{j}:m:above") == bool(keep)
    # monotone in epsilon: fence/tukey keep more as eps grows, interpolate keeps fewer
    lo, hi = sorted((e1, e2))
    n_lo = build_graph(co, lo, rule, 0).undirected.number_of_edges()
    n_hi = build_graph(co, hi, rule, 0).undirected.number_of_edges()
    assert (n_hi >= n_lo) if rule != "interpolate" else (n_hi <= n_lo)


def test_mutual_information_single_term():
    co = random_co(1)
    mi = mutual_information(co)
    i, j = 0, 1
    pij, pi, pj = co.joint[i, j], co.prior[i], co.prior[j]
    assert mi[i, j] == pytest.approx(pij * math.log(pij / (pi * pj)))
    assert mi[i, j] == pytest.approx(mi[j, i])


def test_precedence_filter_drops_unobserved_directions():
    co = random_co(2)
    g = build_graph(co, 0.5, min_precedence=1)
    idx = {t.label: k for k, t in enumerate(co.types)}
    for a, b in g.directed.edges:
        assert co.precedes[idx[a], idx[b]] >= 1
        assert g.p(a, b) == pytest.approx(co.joint[idx[a], idx[b]] / co.prior[idx[a]])


def hand_graph() -> CorrelationGraph:
    prior = {"a": 0.2, "b": 0.5, "c": 0.4, "d": 0.1, "x": 0.3, "y": 0.3, "z": 0.6}
    cond = {("a", "b"): 0.9, ("a", "c"): 0.6, ("b", "c"): 0.5, ("c", "d"): 0.4, ("x", "y"): 0.8}
    return CorrelationGraph.from_edges(prior, cond, joint={("y", "z"): 0.2})


def test_impacts_lists_rri_lrr_by_hand():
    g = hand_graph()
    assert impact(g, "a") == pytest.approx(0.2 * 1.5)
    assert impact(g, "b") == pytest.approx(0.5 * 0.5)
    assert impact(g, "d") == 0.0
    assert impact(g, "a", with_prior=False) == pytest.approx(1.5)
    # F2(a) = F1(a) + 0.9 F1(b) + 0.6 F1(c)
    assert impact(g, "a", order=2) == pytest.approx(0.3 + 0.9 * 0.25 + 0.6 * 0.16)
    lists = historical_lists(g)
    # components {a,b,c,d} (weight 1.2) and {x,y,z} (weight 1.2, 3 nodes); weight tie -> size -> name
    assert [sorted(r.nodes) for r in lists] == [["a", "b", "c", "d"], ["x", "y", "z"]]
    assert [e.node for e in lists[0].entries] == ["a", "b", "c"]  # d is a leaf
    assert [round(e.rri, 6) for e in lists[0].entries] == [100.0, round(100 * 0.25 / 0.3, 6), round(100 * 0.16 / 0.3, 6)]
    assert [r.lrr for r in lists] == [100.0, 100.0]
    assert entropy(g, "a") == pytest.approx(-(0.9 * 0.2 * math.log(0.9) + 0.6 * 0.2 * math.log(0.6)))


def test_list_order_size_vs_weight():
    g = hand_graph()
    g.prior["z"] = 0.9
    assert [sorted(r.nodes)[0] for r in historical_lists(g, list_order="weight")] == ["x", "a"]
    assert [sorted(r.nodes)[0] for r in historical_lists(g, list_order="size")] == ["a", "x"]
    w = historical_lists(g)
    assert w[1].lrr == pytest.approx(100 * 1.2 / 1.5)


def test_active_mode_flows():
    g = hand_graph()
    lists = historical_lists(g)
    act = active_lists(g, lists, {"b", "c", "d", "x"}, active_flow="all")
    assert [[e.node for e in r.entries] for r in act] == [["b", "c"], ["x"]]
    assert [e.score for e in act[0].entries] == [pytest.approx(0.5), pytest.approx(0.4)]
    only = active_lists(g, lists, {"a", "c"}, active_flow="active")  # b is not active: a's flow is 0.6
    assert only[0].entries[0].score == pytest.approx(0.6)
    assert [e.node for e in online_ranking(act, "flow")] == ["x", "b", "c"]
    assert [e.node for e in online_ranking(act, "lists")] == ["b", "c", "x"]
    assert impacted(g, "a") == [("b", 0.9, 100.0), ("c", 0.6, pytest.approx(100 * 0.6 / 0.9))]


def test_h_order_terminates_on_cycles():
    g = CorrelationGraph.from_edges({"a": 0.5, "b": 0.5}, {("a", "b"): 0.5, ("b", "a"): 0.5})
    assert impact(g, "a", order=6) > impact(g, "a", order=1)


def test_topology_drops_unconnected_edges():
    g = CorrelationGraph.from_edges({"db:lat:above": 0.1, "web:lat:above": 0.1, "lb:cpu:above": 0.1},
                                    {("db:lat:above", "web:lat:above"): 0.8, ("web:lat:above", "db:lat:above"): 0.7,
                                     ("db:lat:above", "lb:cpu:above"): 0.6})
    apply_topology(g, [("db", "web"), ("web", "lb")])
    assert sorted(g.directed.edges) == [("db:lat:above", "lb:cpu:above"), ("db:lat:above", "web:lat:above")]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000))
def test_components_are_networkx_components(seed):
    g = build_graph(random_co(seed, 10), 0.0, min_precedence=0)
    ours = sorted(sorted(c) for c in g.components())
    # union-find over the kept pairs (the paper's row-OR closure gives the same partition)
    parent = {n: n for n in g.prior}

    def root(n):
        while parent[n] != n:
            n = parent[n]
        return n

    for a, b in g.undirected.edges:
        parent[root(a)] = root(b)
    groups = {}
    for n in g.prior:
        groups.setdefault(root(n), []).append(n)
    assert ours == sorted(sorted(c) for c in groups.values() if len(c) > 1)
    assert sum(flow(g, n) for n in g.directed) == pytest.approx(sum(d["p"] for *_, d in g.directed.edges(data=True)))


def test_persistent_bottlenecks_count_windows():
    """A per-window oracle: fit each slice separately and count the flags by hand."""
    from vmtwin.analytics.engine import fit, persistent_bottlenecks
    from vmtwin.analytics.synthetic import SyntheticSpec, generate

    syn = generate(SyntheticSpec(seed=4, train_weeks=2, test_weeks=0.0))
    got_all = persistent_bottlenecks(syn.events, syn.t0, syn.t_split, windows=2, min_windows=1)
    half = (syn.t_split - syn.t0) / 2
    flags = [{r for lst in fit(syn.events, syn.t0 + k * half, syn.t0 + (k + 1) * half).bottlenecks() for r in lst}
             for k in range(2)]
    assert got_all == {r: sum(r in f for f in flags) for r in sorted(flags[0] | flags[1])}
    both = persistent_bottlenecks(syn.events, syn.t0, syn.t_split, windows=2, min_windows=2)
    assert set(both) == flags[0] & flags[1]
    with pytest.raises(ValueError, match="min_windows"):
        persistent_bottlenecks(syn.events, syn.t0, syn.t_split, windows=2, min_windows=3)

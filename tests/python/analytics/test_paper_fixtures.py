"""Fixtures from the AECE paper: Table 1 (bottlenecks) and Figure 6 (critical components)."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmtwin.analytics.critical import (CriticalParams, _maximal_paths, black_swan_coverage, black_swan_event,
                                       black_swan_nodes, black_swan_risk, critical_nodes, critical_paths,
                                       extreme_paths, roots)
from vmtwin.analytics.engine import collapse
from vmtwin.analytics.graph import CorrelationGraph
from vmtwin.analytics.recommend import Entry, bottlenecks

# Table 1, "Bottlenecks identified in historic RL's": (LRR, [(resource ID, RRI), ...])
TABLE_1 = [
    (100.0, [(27, 100), (26, 99), (17, 98), (18, 20), (8, 18), (11, 18), (25, 18)]),
    (90.2, [(14, 100), (24, 56), (15, 55), (10, 40), (32, 40), (33, 39)]),
    (40.7, [(12, 100), (29, 99), (23, 98), (9, 98), (13, 97), (22, 97)]),
    (21.9, [(28, 100), (19, 50)]),
]
TABLE_1_BOTTLENECKS = [{27, 26, 17}, {14}, set(), set()]


def test_table1_bottlenecks_are_the_papers():
    for (_, row), expected in zip(TABLE_1, TABLE_1_BOTTLENECKS):
        k = bottlenecks([rri for _, rri in row])
        assert {rid for rid, _ in row[:k]} == expected


def test_table1_through_event_collapse():
    """The same lists as event entries (two metrics per resource) collapse to the same flags."""
    for (_, row), expected in zip(TABLE_1, TABLE_1_BOTTLENECKS):
        entries = []
        for rid, rri in row:
            entries.append(Entry(f"{rid}:cpu:above", rri, rri))
            entries.append(Entry(f"{rid}:mem:above", rri * 0.5, rri * 0.5))
        res = collapse(sorted(entries, key=lambda e: -e.rri))
        k = bottlenecks([x for _, x in res])
        assert {int(r) for r, _ in res[:k]} == expected


@given(st.lists(st.floats(0, 100), min_size=1, max_size=12), st.floats(1, 60), st.integers(1, 5))
def test_bottleneck_rule_against_oracle(values, gap, min_len):
    rris = sorted(values, reverse=True)
    k = bottlenecks(rris, gap, min_len)
    # oracle: the flagged prefix ends at a drop >= gap that no other drop exceeds
    if len(rris) < min_len or len(rris) < 2 or max(a - b for a, b in zip(rris, rris[1:])) < gap:
        assert k == 0
    else:
        drops = [a - b for a, b in zip(rris, rris[1:])]
        assert drops[k - 1] == max(drops) and drops[k - 1] >= gap


def figure6() -> CorrelationGraph:
    """A 25-node graph (A..Y) built to satisfy every statement about the paper's Figure 6."""
    prior = {chr(ord("A") + i): 0.3 for i in range(25)}
    prior.update(B=0.95, G=0.92, K=0.95, P=0.91, H=0.75, A=0.8, O=0.72, D=0.02, J=0.03, R=0.4)
    cond = {
        ("B", "R"): 0.95, ("R", "S"): 0.92, ("S", "T"): 0.93, ("T", "U"): 0.91,  # critical path
        ("H", "B"): 0.8, ("B", "A"): 0.8, ("A", "O"): 0.75,                      # extreme path
        ("K", "P"): 0.5, ("P", "J"): 0.3, ("D", "H"): 0.4,                       # weak links
    }
    for c in "CEFILMNQV":
        cond[("D", c)] = 0.85
    for c in "WXYRSTUGK":
        cond[("J", c)] = 0.85
    return CorrelationGraph.from_edges(prior, cond)


def test_figure6_statements():
    g, p = figure6(), CriticalParams()
    assert critical_nodes(g, p) == ["B", "G", "K", "P"]
    assert roots(g) == ["D"]
    assert critical_paths(g, p) == [("B", "R", "S", "T", "U")]
    assert extreme_paths(g, p) == [("H", "B", "A", "O")]
    assert black_swan_nodes(g, p) == ["D", "J"]
    assert black_swan_coverage(g, p) == pytest.approx(72.0)
    assert black_swan_event(g, p)


def test_figure6_risk():
    g = figure6()
    assert black_swan_risk(g, set()) == 0.0
    assert black_swan_risk(g, {"D"}) == pytest.approx(50.0)  # 9 of the 18 covered nodes
    assert black_swan_risk(g, {"D", "J", "B"}) == pytest.approx(100.0)
    assert black_swan_risk(g, {"D", "J"}, rule="weighted") == pytest.approx(100.0)


def test_figure6_literal_extreme_reading_finds_no_extreme_path():
    """With the extreme path held to the critical bar (0.9), H-B-A-O is not one: why the default is 0.7."""
    assert extreme_paths(figure6(), CriticalParams(extreme_edge=0.9)) == []


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 7).flatmap(lambda n: st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
                                                   .filter(lambda e: e[0] != e[1]), max_size=12)))
def test_maximal_paths_against_brute_force(edges):
    h = nx.DiGraph(list(edges))
    got = set(_maximal_paths(h, 2))
    every = {tuple(p) for s in h for t in h if s != t for p in nx.all_simple_paths(h, s, t)}

    def inside(a, b):
        return len(a) < len(b) and any(b[k:k + len(a)] == a for k in range(len(b) - len(a) + 1))

    expected = {a for a in every if not any(inside(a, b) for b in every)}
    assert got == expected

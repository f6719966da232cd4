"""The bounded YAML loader against PyYAML's own safe_load, and its bounds at their edges."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from vmtwin.exceptions import ScenarioError
from vmtwin.scenario import yaml_loader
from vmtwin.scenario.yaml_loader import MAX_ALIASES, MAX_DEPTH, MAX_NODES, load_yaml

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(10**30), 10**30),
                     st.floats(allow_nan=False), st.text(max_size=20), st.dates())
_documents = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=10), inner, max_size=5)),
    max_leaves=40,
)


@settings(max_examples=150, deadline=None)
@given(_documents, st.booleans())
def test_reads_what_safe_load_reads(doc, flow):
    # the oracle is PyYAML's own composer on the same text
    text = yaml.safe_dump(doc, default_flow_style=flow, allow_unicode=True)
    assert load_yaml(text, "<t>") == yaml.safe_load(text)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=5), st.integers(), min_size=1, max_size=3), min_size=1, max_size=4),
       st.lists(st.integers(0, 3), min_size=1, max_size=8))
def test_shared_nodes_read_as_safe_load_reads_them(parts, picks):
    # safe_dump writes anchors and aliases for objects used twice
    doc = {"shared": [parts[i % len(parts)] for i in picks], "again": parts}
    text = yaml.safe_dump(doc)
    assert load_yaml(text, "<t>") == yaml.safe_load(text)


@pytest.mark.parametrize("loader", yaml_loader._LOADERS, ids=lambda c: c.__name__)
def test_both_parsers_apply_the_bounds(loader, monkeypatch):
    # the pure-Python parser is the fallback for messages; it must bound as the C one does
    monkeypatch.setattr(yaml_loader, "_LOADERS", [loader])
    with pytest.raises(ScenarioError, match="levels of nesting"):
        load_yaml("a: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "<t>")


def _nested(depth: int) -> str:
    # depth counts collections: the top mapping is 1
    return "a: " + "[" * (depth - 1) + "x" + "]" * (depth - 1) + "\n"


def test_depth_bound_is_exact():
    assert load_yaml(_nested(MAX_DEPTH), "<t>") is not None
    with pytest.raises(ScenarioError, match=f"nested {MAX_DEPTH + 1} levels deep"):
        load_yaml(_nested(MAX_DEPTH + 1), "<t>")


def test_alias_count_bound_is_exact():
    text = "a: &w x\nb: [" + ", ".join(["*w"] * MAX_ALIASES) + "]\n"
    assert len(load_yaml(text, "<t>")["b"]) == MAX_ALIASES
    with pytest.raises(ScenarioError, match=f"at most {MAX_ALIASES:,} aliases"):
        load_yaml(text.replace("]\n", ", *w]\n"), "<t>")


def test_node_bound_counts_expanded_aliases():
    # 1 mapping + key + (list + fan scalars) + key + list of k aliases each worth (1 + fan)
    fan = 999
    k = (MAX_NODES - 1 - 1 - (1 + fan) - 1 - 1) // (1 + fan)
    head = "a: &l [" + ", ".join(["x"] * fan) + "]\nb: ["
    ok = head + ", ".join(["*l"] * k) + "]\n"
    assert len(load_yaml(ok, "<t>")["b"]) == k
    bomb = head + ", ".join(["*l"] * (k + 1)) + "]\n"
    with pytest.raises(ScenarioError, match=f"more than {MAX_NODES:,} values"):
        load_yaml(bomb, "<t>")


@pytest.mark.parametrize("text, path", [
    ("a: {b: !!int two}", "a.b: got 'two'"),
    ("a: [1, !!float x]", "a[1]: got 'x'"),
    ("a: {'odd key': {c: 2024-13-45}}", "a['odd key'].c: got '2024-13-45'"),
    ("a: {b: 1, b: 2}", "a.b: got 'b'; allowed: each key once"),
    ("a: {1: x}", "a: got '1'; allowed: keys that are text"),
    ("a: &r [*r]", "a[0]: got '*r'"),
    ("a: !foo x", "a: got '!foo x'"),
])
def test_messages_name_the_yaml_path(text, path):
    with pytest.raises(ScenarioError) as info:
        load_yaml(text, "<t>")
    assert str(info.value).startswith(path), str(info.value)


@pytest.mark.parametrize("text", ["0", "7", "0777", "0x1f", "0o17", "1_000", "1:30", "+12", "-0", "007", "12345678901234567890"])
def test_integers_read_as_yaml_1_1_reads_them(text):
    # the fast path for plain decimal ints must not change what any spelling means
    assert load_yaml(f"a: {text}\nb: !!int {text}\n", "<t>") == yaml.safe_load(f"a: {text}\nb: !!int {text}\n")


def test_merge_keys_still_work():
    assert load_yaml("base: &b {x: 1, y: 2}\nc: {<<: *b, y: 3}\n", "<t>")["c"] == {"x": 1, "y": 3}


def test_a_nul_byte_is_refused_with_its_line():
    with pytest.raises(ScenarioError, match="a NUL byte on line 2"):
        load_yaml("a: 1\nb: x\x00y\n", "<t>")

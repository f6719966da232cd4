"""docs/inventory.md shows every named query as the code runs it, and its Python example runs."""

from __future__ import annotations

import re
from pathlib import Path

from vmtwin.inventory.queries import QUERIES

PAGE = Path(__file__).resolve().parents[3] / "docs" / "inventory.md"


def test_every_named_query_is_documented_verbatim():
    text = PAGE.read_text(encoding="utf-8")
    for q in QUERIES.values():
        section = text.split(f"### `{q.name}`\n", 1)
        assert len(section) == 2, f"{q.name}: no section in {PAGE.name}"
        body = section[1].split("\n### ", 1)[0]
        assert f"```cypher\n{q.cypher}\n```" in body, f"{q.name}: the page's Cypher differs from the code's"
        if q.paper:
            assert q.paper in body, f"{q.name}: the paper's query is missing"


def test_python_example_runs(tmp_path, monkeypatch, capsys):
    block = re.search(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(block, str(PAGE), "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[{'datastore': ") and out[1].startswith("[[")

"""docs/manage.md lists every platform parameter and built-in operation with the code's defaults."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

from vmtwin.manage import OPERATIONS, VcenterParams

PAGE = Path(__file__).resolve().parents[3] / "docs" / "manage.md"
ROW = re.compile(r"^\| `([a-z_]+)` \|(.*)\|\s*$")


def _rows(section: str) -> dict[str, list[str]]:
    text = PAGE.read_text(encoding="utf-8").split(section, 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    return {m.group(1): [c.strip() for c in m.group(2).split(" | ")]
            for m in map(ROW.match, text.splitlines()) if m}


def test_every_parameter_with_its_default_and_source():
    rows = _rows("### Parameters")
    defaults = VcenterParams()
    assert set(rows) == {f.name for f in fields(VcenterParams)}
    for name, (default, unit, source) in rows.items():
        assert float(default) == float(getattr(defaults, name)), name
        assert unit and source, name


def test_every_operation_with_its_costs():
    rows = _rows("### Operations")
    assert set(rows) == set(OPERATIONS)
    for name, cells in rows.items():
        op = OPERATIONS[name]
        assert [float(c) for c in cells[:4]] == list(op.costs), name
        assert cells[4] == op.effect and cells[5], name


def test_python_example_runs_and_prints_what_the_page_says(capsys):
    code = PAGE.read_text(encoding="utf-8").split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, str(PAGE), "exec"), {})
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("1.85") and "[5, 10, 17, 30, 23," in first

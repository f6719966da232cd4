"""docs/fluid.md's opening example runs and prints what the page shows."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[3] / "docs" / "fluid.md"


def test_opening_example_prints_what_the_page_shows():
    code = re.search(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S).group(1)
    shown = [line[2:].rstrip() for line in code.splitlines() if line.startswith("# ")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(PAGE), "exec"), {})
    got = [line.rstrip() for line in out.getvalue().splitlines() if line.strip()]
    assert [g.split() for g in got] == [s.split() for s in shown]

"""docs/storage.md's first Python example runs and prints what the page says."""

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "storage.md"


def test_first_python_example_prints_what_the_doc_shows():
    text = DOC.read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, str(DOC), "exec"), {})
    shown = re.search(r"^# (\d\.\d{3} \d+ [\d.]+ [\d.]+)", block, re.M).group(1)
    assert out.getvalue().strip() == shown

"""Every Python block of docs/results.md runs, in order, in one namespace."""

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[3] / "docs" / "results.md"


def test_results_page_examples_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    assert len(blocks) == 3
    namespace: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{PAGE}:block{i}", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "exists already; allowed: a new folder, or force=True" in printed
    assert "limited" in printed

"""Every Python block of docs/guide.md runs, in order, in one namespace."""

import re
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guide.md"


def test_guide_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)
    assert len(blocks) >= 5
    namespace: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{GUIDE}:block{i}", "exec"), namespace)

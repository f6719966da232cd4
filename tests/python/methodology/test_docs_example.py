"""docs/methodology.md's example runs as written: its run files and its commands."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from vmtwin.cli import main

DOC = Path(__file__).resolve().parents[3] / "docs" / "methodology.md"


def test_the_documented_example_runs(tmp_path, monkeypatch, capsys):
    text = DOC.read_text(encoding="utf-8")
    files = re.findall(r"`(\w+\.json)`[^`]*?:\n\n```json\n(.*?)```", text, flags=re.S)
    assert [name for name, _ in files] == ["native.json", "host.json", "guest.json"]
    for name, body in files:
        json.loads(body)
        (tmp_path / name).write_text(body)
    commands = re.findall(r"```bash\n(vmtwin .*?)\n```", text)
    assert len(commands) == 2
    monkeypatch.chdir(tmp_path)
    for cmd in commands:
        argv = shlex.split(cmd)[1:]
        assert main(argv) == 0, cmd
    out = json.loads((tmp_path / "overhead-mine" / "overhead.json").read_text())
    parts = {p["component"]: round(p["percent"], 2) for p in out["decomposition"]["parts"]}
    # the numbers the doc quotes for the paper's tables are what the example's data gives too
    assert parts == {"guest user": 9.87, "guest kernel": 2.54, "hypervisor (VMM + VMkernel)": 8.04,
                     "host user - guest user": 1.9}
    assert round(out["decomposition"]["total"]["percent"], 2) == 22.35
    for number in ("9.87%", "2.54%", "8.04%", "1.90%", "22.35%"):
        assert number in DOC.read_text()


def test_the_documented_python_snippets_run_and_print_what_the_comments_say(capsys):
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {})
        printed = capsys.readouterr().out.split()
        claimed = re.findall(r"# ([\d.]+)", block)
        assert [round(float(p), 1) for p in printed] == [float(c) for c in claimed]

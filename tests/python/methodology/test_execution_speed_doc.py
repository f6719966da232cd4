"""docs/execution-speed.md's examples run as written and print the numbers the page quotes."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from pathlib import Path

from vmtwin.cli import main

DOC = Path(__file__).resolve().parents[3] / "docs" / "execution-speed.md"


def test_the_native_and_virtual_example_runs_and_gives_the_quoted_decomposition(tmp_path, monkeypatch):
    text = DOC.read_text(encoding="utf-8")
    files = re.findall(r"`(\w+\.yaml)`[^`]*?:\n\n```yaml\n(.*?)```", text, flags=re.S)
    assert [name for name, _ in files] == ["native.yaml", "virtual.yaml"]
    for name, body in files:
        (tmp_path / name).write_text(body)
    commands = re.findall(r"```bash\n(vmtwin .*?)\n```", text)
    assert len(commands) == 6
    monkeypatch.chdir(tmp_path)
    for cmd in commands:
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(shlex.split(cmd)[1:]) == 0, cmd
    out = json.loads((tmp_path / "overhead" / "overhead.json").read_text())
    parts = {p["component"]: f"{p['percent']:.2f}%" for p in out["decomposition"]["parts"]}
    total = f"{out['decomposition']['total']['percent']:.2f}%"
    for quoted in (total, parts["guest user"], parts["guest kernel"], parts["hypervisor (VMM + VMkernel)"]):
        assert f"**{quoted}**" in text, quoted
    line = (tmp_path / "counters" / "db-host_system.perf.csv").read_text().splitlines()[1]
    assert re.sub(r",CPU0,\d+,", ",CPU0,N,", line) in re.sub(r",CPU0,\d+,", ",CPU0,N,", text)


def test_the_python_examples_print_what_their_comments_say():
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 2
    for block in blocks:
        expected = [line[2:] for line in block.splitlines() if line.startswith("# ")]
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(compile(block, str(DOC), "exec"), {})
        assert buf.getvalue().strip().splitlines() == expected


def test_the_quoted_reproduction_verdicts_are_the_current_ones():
    from collections import Counter

    from vmtwin.reproduce.tier1_sim import TIER1_SIM_EXPERIMENTS

    text = " ".join(DOC.read_text(encoding="utf-8").split())
    for exp, label in zip(TIER1_SIM_EXPERIMENTS, ("OLTP", "Hadoop", "latency")):
        n = Counter(r.verdict for r in exp.run())
        assert f"{label} {n['PASS']} pass, {n['FAIL']} fail" in text, (label, n)

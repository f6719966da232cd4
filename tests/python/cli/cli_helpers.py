"""Shared helpers of the CLI tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
BAD = sorted((REPO / "tests" / "python" / "scenario" / "bad").glob("*.yaml"))
SCENARIOS = sorted((REPO / "scenarios").glob("*.yaml"))
SHARED_DATA = REPO.parent / "shared" / "data"
PLANETLAB_OK = REPO / "tests" / "python" / "scenario" / "data" / "planetlab_ok"


@dataclass
class Outcome:
    """What one ``vmtwin`` invocation did."""

    returncode: int
    stdout: str
    stderr: str


def vmtwin_command() -> list[str]:
    """The installed ``vmtwin`` console script (or ``python -m vmtwin.cli`` without one)."""
    script = Path(sys.executable).with_name("vmtwin")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "vmtwin.cli"]


def run_vmtwin(*argv, cwd=None, env=None, timeout=300) -> Outcome:
    """Run the installed ``vmtwin`` command in a subprocess."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    p = subprocess.run([*vmtwin_command(), *map(str, argv)], capture_output=True, text=True, cwd=cwd,
                       env=full_env, timeout=timeout, check=False)
    return Outcome(p.returncode, p.stdout, p.stderr)


def needs_shared_data(text: str) -> None:
    """Skip when a scenario points into the shared data sets and they are absent."""
    if "shared/data" in text and not SHARED_DATA.is_dir():
        pytest.skip(f"needs the shared data sets at {SHARED_DATA}")


def assert_user_error(res: Outcome, expected: str | None = None) -> None:
    """The CLI's contract for bad input: exit 2, ``error:`` lines only, no traceback."""
    assert res.returncode == 2, f"exit {res.returncode}\nstdout: {res.stdout}\nstderr: {res.stderr}"
    assert "Traceback" not in res.stdout and "Traceback" not in res.stderr, res.stderr
    lines = res.stderr.splitlines()
    assert lines and all(line.startswith("error:") for line in lines), res.stderr
    # several lines are several problems, each a whole message, never a wrapped fragment
    if len(lines) > 1:
        assert all("; allowed: " in line for line in lines), res.stderr
    if expected is not None:
        assert expected in res.stderr, f"{expected!r} not in {res.stderr!r}"


def tree(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` (hidden ones too) with its bytes."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}

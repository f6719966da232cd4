"""Fixtures for the CLI tests: run ``vmtwin`` in-process (fast) or as the real installed command.

In-process runs call :func:`vmtwin.cli.main` with an argv list and capture what it prints; an
exception escaping ``main`` fails the test (that is what a user would see as a traceback). The
subprocess runs use the console script next to the interpreter, so they also test the entry point,
the real exit status and what reaches the terminal.
"""

from __future__ import annotations

import pytest
from cli_helpers import Outcome, run_vmtwin


@pytest.fixture
def cli(capsys):
    """``cli("run", path, "-o", out)`` -> Outcome, running ``vmtwin.cli.main`` in this process."""
    from vmtwin.cli import main

    def run(*argv) -> Outcome:
        capsys.readouterr()
        try:
            rc = main([str(a) for a in argv])
        except SystemExit as exc:  # argparse's own errors
            rc = exc.code
        out, err = capsys.readouterr()
        return Outcome(rc, out, err)

    return run


@pytest.fixture
def vmtwin_proc():
    """``vmtwin_proc("run", ...)`` -> Outcome, running the installed command in a subprocess."""
    return run_vmtwin

"""Fixtures for the CLI tests: the real installed command (the in-process ``cli`` fixture is
suite-wide, in ``tests/python/conftest.py``). The subprocess runs use the console script next to
the interpreter, so they also test the entry point, the real exit status and what reaches the
terminal.
"""

from __future__ import annotations

import pytest
from cli_helpers import run_vmtwin


@pytest.fixture
def vmtwin_proc():
    """``vmtwin_proc("run", ...)`` -> Outcome, running the installed command in a subprocess."""
    return run_vmtwin

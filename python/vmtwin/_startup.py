"""Ctrl-C during the ``vmtwin`` command's start-up: print ``interrupted``, exit 130, no traceback.

The console script runs ``from vmtwin.cli import main``, which imports this package first (and
with it the native module, tens of ms on a loaded machine) before cli.py's own first line. So the
handler is installed from the package's first import, with nothing but ``os``, ``signal`` and
``sys`` loaded; only the interpreter's own start is before it. :func:`vmtwin.cli.main` replaces it
with its own boundary, which removes half-written output first.
"""

from __future__ import annotations

import os
import signal
import sys

#: exit status after Ctrl-C, as a shell reports a process ended by SIGINT (128 + 2)
INTERRUPTED = 130


def exit_interrupted(signum, frame) -> None:  # pragma: no cover - exercised in a subprocess
    """SIGINT while nothing has been written yet (start-up, shut-down): say so and leave."""
    os.write(2, b"interrupted\n")
    os._exit(INTERRUPTED)


def started_as_command() -> bool:
    """True when this process is the ``vmtwin`` command (not a library or test importing us)."""
    argv0 = os.path.basename(sys.argv[0]) if sys.argv else ""
    return argv0 in ("vmtwin", "vmtwin.exe") or argv0 == "cli.py"


def install() -> None:
    """Install :func:`exit_interrupted` for SIGINT, if this is the command and nobody set one."""
    if started_as_command() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, exit_interrupted)

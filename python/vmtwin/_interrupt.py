"""Ctrl-C in the ``vmtwin`` command: print ``interrupted``, exit 130, no traceback, nothing complete.

Two handlers, one for each stretch of the command's life:

- **Start-up and shut-down** (:func:`exit_interrupted`): nothing has been written, so the process
  says ``interrupted`` and leaves at once. The console script runs ``from vmtwin.cli import
  main``, which imports this package first (and with it the native module, tens of ms on a loaded
  machine) before cli.py's own first line, so the package's first line installs it
  (:func:`install`), with nothing but ``os``, ``signal`` and ``sys`` loaded; only the
  interpreter's own start is before it.
- **Inside the command** (:func:`interrupt`, installed by :func:`vmtwin.cli.main`): Ctrl-C raises
  KeyboardInterrupt, so that the command's writers remove what they half wrote. The interrupt is
  also *remembered*, because an exception raised at an arbitrary bytecode can be swallowed by
  library code it lands in: a C extension's module init under an import, or pydantic-core writing
  it off as "Exception ignored" while it compiles a validator (both seen, one Ctrl-C in about a
  hundred landing in the command's imports, after which the run went on to the end and wrote a
  complete folder). :func:`check_interrupt` raises it again at the points that matter: every
  sample of a run, before an output is renamed into place, and when the command returns.
"""

from __future__ import annotations

import os
import signal
import sys

#: exit status after Ctrl-C, as a shell reports a process ended by SIGINT (128 + 2)
INTERRUPTED = 130

#: set by :func:`interrupt`, cleared by :func:`forget` when the command returns
_seen = False


def exit_interrupted(signum, frame) -> None:  # pragma: no cover - exercised in a subprocess
    """SIGINT while nothing has been written yet (start-up, shut-down): say so and leave."""
    os.write(2, b"interrupted\n")
    os._exit(INTERRUPTED)


def interrupt(signum, frame) -> None:
    """SIGINT inside the command: remember it, then raise KeyboardInterrupt."""
    global _seen
    _seen = True
    raise KeyboardInterrupt


def quiet_unraisable(hook):
    """``sys.unraisablehook`` for the command: a KeyboardInterrupt that Python could not raise (it
    landed in a weakref callback, e.g. importlib's module-lock cleanup, and Python printed
    "Exception ignored" with a traceback: seen once in a fresh clone's test run) is dropped, since
    :func:`interrupt` remembered it and :func:`check_interrupt` raises it again; anything else goes
    to ``hook``."""

    def unraisable(info):
        if not isinstance(info.exc_value, KeyboardInterrupt):
            hook(info)

    return unraisable


def check_interrupt() -> None:
    """Raise KeyboardInterrupt again if the command saw Ctrl-C (cheap: one global read)."""
    if _seen:
        raise KeyboardInterrupt


def forget() -> None:
    """The command is over: a later :func:`check_interrupt` (the library, main() again) is clear."""
    global _seen
    _seen = False


def started_as_command() -> bool:
    """True when this process is the ``vmtwin`` command (not a library or test importing us)."""
    argv0 = os.path.basename(sys.argv[0]) if sys.argv else ""
    return argv0 in ("vmtwin", "vmtwin.exe") or argv0 == "cli.py"


def install() -> None:
    """Install :func:`exit_interrupted` for SIGINT, if this is the command and nobody set one."""
    if started_as_command() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, exit_interrupted)

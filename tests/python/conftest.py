"""Suite-wide settings.

Under CI (``CI=true``) hypothesis runs derandomized, so a submission's verdict does not depend on
which random examples a run happened to draw; locally it keeps exploring new ones.
"""

import os
import signal
from typing import NamedTuple

import pytest
from hypothesis import settings

# A shell without job control starts its background commands with SIGINT ignored (`make test &`,
# `nohup`), and an ignored SIGINT is inherited by every process started from them: Python then
# installs no KeyboardInterrupt handler, and the `vmtwin` command rightly keeps SIGINT ignored.
# The Ctrl-C tests check what a user at a terminal gets, so the suite restores that: Python's
# own handler here, the default in the commands it starts (an exec resets a handler, not SIG_IGN).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")


class CliOutcome(NamedTuple):
    """What one in-process ``vmtwin`` invocation did (unpacks as ``rc, out, err``)."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(capsys):
    """``cli("run", path, "-o", out)`` -> CliOutcome, running ``vmtwin.cli.main`` in this process.

    An exception escaping ``main`` fails the test: that is what a user would see as a traceback.
    """
    from vmtwin.cli import main

    def run(*argv) -> CliOutcome:
        capsys.readouterr()
        try:
            rc = main([str(a) for a in argv])
        except SystemExit as exc:  # argparse's own errors
            rc = exc.code
        out, err = capsys.readouterr()
        return CliOutcome(rc, out, err)

    return run

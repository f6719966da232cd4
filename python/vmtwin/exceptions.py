"""The one exception hierarchy of vmtwin.

The classes are declared once, in the native module (``crates/vmtwin-py/src/exceptions.rs``), so
an error raised by the engine and one raised while validating a scenario in Python are the same
class. When the native module is not built (docs builds, linting), plain Python classes with the
same names and bases stand in.

- ``VmtwinError``: base of everything vmtwin raises.
- ``ScenarioError``: a scenario is malformed; the message names the YAML path, the value and what
  is allowed. The CLI turns it into exit status 2.
- ``AdmissionControlError``: a reservation the host or resource pool cannot hold at power-on.
- ``SimulationError``: the engine refused an operation on a running simulation.
- ``OutputError``: a results folder or output file could not be written (read-only folder, a
  folder where a file is expected, a name too long, an existing results folder without
  ``force``); the message names the user's path and the reason.
"""

from __future__ import annotations

try:
    from vmtwin._core import (
        AdmissionControlError,
        OutputError,
        ScenarioError,
        SimulationError,
        VmtwinError,
    )
except ImportError:  # pragma: no cover - only without the native module

    class VmtwinError(Exception):
        """Base of every vmtwin error."""

    class ScenarioError(VmtwinError):
        """A scenario is malformed."""

    class AdmissionControlError(VmtwinError):
        """A reservation the host or pool cannot hold."""

    class SimulationError(VmtwinError):
        """The engine refused an operation."""

    class OutputError(VmtwinError):
        """A results folder or output file could not be written."""


def scenario_error(path: str, value: object, allowed: str) -> ScenarioError:
    """Build the one message format for bad input: ``path: got VALUE; allowed: ...``.

    >>> str(scenario_error("vms[0].vcpus", 0, "an integer from 1 to 128"))
    'vms[0].vcpus: got 0; allowed: an integer from 1 to 128'
    """
    err = ScenarioError(f"{path}: got {value!r}; allowed: {allowed}")
    err.path = path
    err.value = value
    err.allowed = allowed
    return err


__all__ = [
    "VmtwinError",
    "ScenarioError",
    "AdmissionControlError",
    "SimulationError",
    "OutputError",
    "scenario_error",
]

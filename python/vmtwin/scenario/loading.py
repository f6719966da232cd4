"""Reading scenarios: YAML text or files in, a validated Scenario out; and the JSON Schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Union

from pydantic import (
    ValidationError,
)

from vmtwin import traces as _trace_io
from vmtwin.scenario._gc import gc_paused
from vmtwin.scenario.errors import _convert_validation_error, _describe_keys
from vmtwin.scenario.limits import MAX_SCENARIO_BYTES, warn_limits
from vmtwin.scenario.models import Scenario
from vmtwin.scenario.shown import bounded_error
from vmtwin.scenario.yaml_loader import load_yaml

# --------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------


def parse_scenario(source: Union[str, dict], base_dir: Union[str, Path, None] = None, *, name: str = "<scenario>",
                   _warn_depth: int = 0) -> Scenario:
    """Validate a scenario given as YAML text or as an already-parsed dict.

    Parameters
    ----------
    source : str or dict
        YAML text, or the mapping it parses to. Unit fields must carry units (``"4GB"``), as in
        a file; only ``0`` may omit one.
    base_dir : str or Path, optional
        Folder relative trace paths are resolved against; defaults to the working directory.
    name : str
        How to name the source in YAML syntax errors (``load_scenario`` passes the file path).

    Returns
    -------
    Scenario
        Validated, with every trace file already read (so a bad trace fails here, not mid-run).

    Raises
    ------
    ScenarioError
        Anything wrong; the message names the YAML path, the value and what is allowed.

    Warns
    -----
    ScenarioWarning
        The scenario exceeds a vSphere per-host maximum (see :mod:`vmtwin.scenario.limits`).
    """
    if isinstance(source, str) and len(source) > MAX_SCENARIO_BYTES:
        raise _too_big(name, len(source))
    with gc_paused():  # thousands of VMs: see vmtwin.scenario._gc
        data = load_yaml(source, name) if isinstance(source, str) else source
        if data is None:
            raise bounded_error(name, "an empty document", "a mapping with the keys " + _describe_keys(Scenario))
        if not isinstance(data, dict):
            raise bounded_error("(top level)", data, "a mapping with the keys " + _describe_keys(Scenario))
        try:
            sc = Scenario.model_validate(data, context={"from_file": True})
        except ValidationError as exc:
            raise _convert_validation_error(exc, Scenario) from None
        except RecursionError:  # a dict built in Python nesting itself, or 1,000 levels deep
            raise bounded_error("(top level)", "a structure nested too deeply, or containing itself",
                                "a scenario mapping of at most a few levels") from None
    sc._base_dir = Path(base_dir) if base_dir is not None else None
    sc.load_traces()
    warn_limits(sc, stacklevel=2 + _warn_depth)  # the warning points at the caller's line
    return sc


def _too_big(name: str, size: int):
    return bounded_error(name, f"{size:,} bytes", f"a scenario file of at most {MAX_SCENARIO_BYTES:,} bytes "
                         "(16 MB, about 150,000 VMs written one per entry; use count: for many identical VMs)")


def load_scenario(path: Union[str, Path]) -> Scenario:
    """Read and validate a scenario YAML file; trace paths are relative to its folder.

    Parameters
    ----------
    path : str or Path
        The ``.yaml`` file.

    Returns
    -------
    Scenario

    Raises
    ------
    ScenarioError
        The file cannot be read, or anything in it is wrong (see :func:`parse_scenario`).
    """
    p = _trace_io.checked_path(path, "the scenario file")
    text = _trace_io.read_text_file(p, "scenario file", max_bytes=MAX_SCENARIO_BYTES)
    return parse_scenario(text, base_dir=p.resolve().parent, name=str(p), _warn_depth=1)


def scenario_json_schema() -> dict:
    """JSON Schema of scenario files (for ``vmtwin schema`` and editors' YAML completion).

    Returns
    -------
    dict
        Draft 2020-12 schema generated from the pydantic models.
    """
    schema = Scenario.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "vmtwin scenario", **schema}

"""Reading scenarios: YAML text or files in, a validated Scenario out; and the JSON Schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Union

import yaml
from pydantic import (
    ValidationError,
)

from vmtwin import traces as _trace_io
from vmtwin.exceptions import ScenarioError, scenario_error
from vmtwin.scenario._gc import gc_paused
from vmtwin.scenario.errors import _convert_validation_error, _describe_keys
from vmtwin.scenario.models import Scenario

# --------------------------------------------------------------------------------------------
# YAML loading
# --------------------------------------------------------------------------------------------


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
        except TypeError:  # unhashable key; let PyYAML report it
            break
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

# The same loader on libyaml's C parser when PyYAML was built with it: about ten times faster on
# big files (a 10,000-VM scenario took 6 s to parse in pure Python). Only the parser differs; the
# constructor (duplicate keys, tags, scalars) is the same Python code.
_FastUniqueKeyLoader: Optional[type] = None
if getattr(yaml, "__with_libyaml__", False):

    _SCALAR_TAGS: dict = {}  # (text, implicit) -> tag: a scenario repeats the same few scalars

    class _FastUniqueKeyLoader(yaml.CSafeLoader):  # type: ignore[no-redef]
        """CSafeLoader that refuses duplicate keys and remembers how plain scalars resolve."""

        def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
            # A pure function of its arguments for scalars: SafeLoader has no path resolvers.
            if kind is not yaml.ScalarNode:
                return super().resolve(kind, value, implicit)
            key = (value, implicit)
            tag = _SCALAR_TAGS.get(key)
            if tag is None:
                tag = super().resolve(kind, value, implicit)
                if len(_SCALAR_TAGS) < 65536:
                    _SCALAR_TAGS[key] = tag
            return tag

    _FastUniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _load_yaml(text: str, source: str) -> Any:
    if _FastUniqueKeyLoader is not None:
        try:
            return yaml.load(text, Loader=_FastUniqueKeyLoader)  # noqa: S506 - a CSafeLoader subclass
        except yaml.YAMLError:
            pass  # read again below: the pure-Python parser's messages and marks are the ones users get
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}, line {mark.line + 1}, column {mark.column + 1}" if mark else source
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        err = ScenarioError(f"{where}: malformed YAML: {problem}")
    except yaml.YAMLError as exc:
        err = ScenarioError(f"{source}: malformed YAML: {exc}")
    err.path = source
    err.value = None
    err.allowed = "well-formed YAML"
    raise err


# --------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------


def parse_scenario(source: Union[str, dict], base_dir: Union[str, Path, None] = None, *, name: str = "<scenario>") -> Scenario:
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
    """
    with gc_paused():  # thousands of VMs: see vmtwin.scenario._gc
        data = _load_yaml(source, name) if isinstance(source, str) else source
        if data is None:
            raise scenario_error(name, "an empty document", "a mapping with the keys " + _describe_keys(Scenario))
        if not isinstance(data, dict):
            raise scenario_error("(top level)", data, "a mapping with the keys " + _describe_keys(Scenario))
        try:
            sc = Scenario.model_validate(data, context={"from_file": True})
        except ValidationError as exc:
            raise _convert_validation_error(exc, Scenario) from None
    sc._base_dir = Path(base_dir) if base_dir is not None else None
    sc.load_traces()
    return sc


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
    p = Path(path)
    text = _trace_io.read_text_file(p, "scenario file")
    return parse_scenario(text, base_dir=p.resolve().parent, name=str(p))


def scenario_json_schema() -> dict:
    """JSON Schema of scenario files (for ``vmtwin schema`` and editors' YAML completion).

    Returns
    -------
    dict
        Draft 2020-12 schema generated from the pydantic models.
    """
    schema = Scenario.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "vmtwin scenario", **schema}

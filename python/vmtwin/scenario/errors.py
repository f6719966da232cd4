"""Turning pydantic's validation errors into one ScenarioError naming the YAML path."""

from __future__ import annotations

from typing import Annotated, Any, Optional, Union, get_args, get_origin

from pydantic import (
    ValidationError,
)

from vmtwin.exceptions import ScenarioError
from vmtwin.scenario.fields import _Model
from vmtwin.scenario.shown import bounded_error as scenario_error
from vmtwin.scenario.shown import path_key, printable, short

#: Problems listed in one message; the rest are counted ("and 37 more problems"), so a list of
#: 10,000 bad VMs still gives a message a terminal shows whole.
MAX_PROBLEMS_SHOWN = 10

# --------------------------------------------------------------------------------------------
# Turning pydantic errors into ScenarioError
# --------------------------------------------------------------------------------------------


class _Missing:
    def __repr__(self) -> str:
        return "nothing (the key is missing)"


def _unwrap(annotation: Any) -> Any:
    """The model class a field holds (through Optional, list and Annotated), or the workload union."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin is list:
            annotation = get_args(annotation)[0]
        elif origin is Union:
            args = [a for a in get_args(annotation) if a is not type(None)]
            if all(isinstance(a, type) and issubclass(a, _Model) for a in args) and len(args) > 1:
                return "workload"
            annotation = args[0]
        else:
            return annotation


def _workloads() -> dict:
    from vmtwin.scenario.models import _WORKLOADS  # the models import this module

    return _WORKLOADS


def _model_at(root: type[_Model], loc: tuple) -> Optional[type[_Model]]:
    """Walk a pydantic error location from ``root``; return the model owning the last element."""
    cls: Any = root
    for el in loc[:-1]:
        if isinstance(el, int):
            continue  # list index: cls already is the item type
        if cls == "workload":
            cls = _workloads().get(el)
            continue
        if not (isinstance(cls, type) and issubclass(cls, _Model)) or el not in cls.model_fields:
            return None
        cls = _unwrap(cls.model_fields[el].annotation)
    return cls if isinstance(cls, type) and issubclass(cls, _Model) else None


def _yaml_path(loc: tuple) -> str:
    """``('vms', 1, 'workload', 'cpu_bound', 'duty')`` -> ``vms[1].workload.duty``."""
    out = ""
    prev = None
    for el in loc:
        if isinstance(el, int):
            out += f"[{el}]"
        elif prev == "workload" and el in _workloads():
            pass  # pydantic's discriminator tag, not a YAML key
        else:
            out += path_key(el)
        prev = el
    return out.lstrip(".") or "(top level)"


def _describe_keys(cls: type[_Model]) -> str:
    return ", ".join(k for k in cls.model_fields)


def _one_error(err: dict, root: type[_Model], prefix: str) -> ScenarioError:
    loc = tuple(err["loc"])
    path = _yaml_path(loc)
    if prefix:
        path = prefix if path == "(top level)" else f"{prefix}.{path}"
    kind = err["type"]
    value = err.get("input")
    owner = _model_at(root, loc)
    field = owner.model_fields.get(loc[-1]) if owner is not None and loc else None
    if kind == "value_error":
        inner = err.get("ctx", {}).get("error")
        if isinstance(inner, ScenarioError):  # a native ScenarioError may subclass ValueError
            return inner
        allowed = str(inner) if inner is not None else err["msg"]
    elif kind == "extra_forbidden":
        keys = _describe_keys(owner) if owner is not None else "(see the schema)"
        return scenario_error(path, value, f"one of the keys {keys} (unknown key {short(loc[-1], 40)})")
    elif kind == "missing":
        value = _Missing()
        allowed = field.description if field is not None and field.description else "a value (required)"
        allowed = f"a required key: {allowed}"
    elif kind in ("union_tag_invalid", "union_tag_not_found"):
        path = f"{path}.type"
        value = value.get("type", _Missing()) if isinstance(value, dict) else value
        allowed = "one of the workload types " + ", ".join(_workloads())
    elif kind in ("model_type", "model_attributes_type", "dict_type"):
        if loc and isinstance(loc[-1], int):
            target = owner  # a list item: _model_at already stepped into the item type
        else:
            target = _unwrap(field.annotation) if field is not None else None
        if target == "workload":
            allowed = "a mapping with a type key: " + ", ".join(_workloads())
        elif isinstance(target, type) and issubclass(target, _Model):
            allowed = f"a mapping with the keys {_describe_keys(target)}"
        else:
            allowed = "a mapping"
    else:
        msg = err["msg"]
        allowed = msg[len("Input should be ") :] if msg.startswith("Input should be ") else msg
        if field is not None and field.description:
            allowed = f"{allowed} ({field.description})"
    return scenario_error(path, value, allowed)


def _convert_validation_error(exc: ValidationError, root: type[_Model], prefix: str = "") -> ScenarioError:
    """One ScenarioError for a pydantic ValidationError: one line per problem, first one first.

    At most ``MAX_PROBLEMS_SHOWN`` lines; the last says how many more problems there are.
    """
    found = exc.errors(include_url=False)
    errors = [_one_error(e, root, prefix) for e in found[:MAX_PROBLEMS_SHOWN]]
    if len(errors) == 1:
        return errors[0]
    first = errors[0]
    lines = [str(e) for e in errors]
    if len(found) > len(errors):
        lines[-1] += f" (and {len(found) - len(errors):,} more problems not shown)"
    combined = ScenarioError("\n".join(lines))
    for attr in ("path", "value", "allowed"):
        setattr(combined, attr, getattr(first, attr, None))
    return combined


def _prefixed(where: str, exc: ScenarioError) -> ScenarioError:
    """Put the YAML path in front of an error about a file the scenario points at."""
    value, allowed = getattr(exc, "value", None), getattr(exc, "allowed", None)
    if getattr(exc, "path", None) == value and allowed is not None:
        # The error is about the file itself (missing, unreadable): the file is the value.
        return scenario_error(where, value, allowed)
    err = ScenarioError(f"{printable(where)}: {short(str(exc), 600, quote=False)}")
    err.path, err.value, err.allowed = where, value, allowed
    return err

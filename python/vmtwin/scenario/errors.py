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


class _Union:
    """A discriminated union of models: the key that tags a member and the members by tag."""

    def __init__(self, key: str, members: dict[str, type[_Model]]):
        self.key, self.members = key, members

    def describe(self) -> str:
        return ", ".join(self.members)


def _unwrap(annotation: Any, key: Optional[str] = None) -> Any:
    """The model class a field holds (through Optional, list and Annotated), or its `_Union`.

    ``key`` is the field's own discriminator (pydantic moves a field's top-level ``Annotated``
    metadata into its FieldInfo); one nested in the annotation is found on the way down.
    """
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            args = get_args(annotation)
            for meta in args[1:]:
                key = getattr(meta, "discriminator", None) or key
            annotation = args[0]
        elif origin is list:
            annotation = get_args(annotation)[0]
        elif origin is Union:
            args = [a for a in get_args(annotation) if a is not type(None)]
            if all(isinstance(a, type) and issubclass(a, _Model) for a in args) and len(args) > 1:
                tag = key if isinstance(key, str) else "type"
                members = {}
                for a in args:
                    f = a.model_fields.get(tag)
                    for value in get_args(f.annotation) if f is not None else ():
                        members[value] = a
                return _Union(tag, members)
            annotation = args[0]
        else:
            return annotation


def _field_type(cls: type[_Model], name: str) -> Any:
    field = cls.model_fields[name]
    return _unwrap(field.annotation, field.discriminator)


def _model_at(root: type[_Model], loc: tuple) -> Optional[type[_Model]]:
    """Walk a pydantic error location from ``root``; return the model owning the last element."""
    cls = _walk(root, loc[:-1])
    return cls if isinstance(cls, type) and issubclass(cls, _Model) else None


def _walk(root: type[_Model], loc: tuple) -> Any:
    """The model class (or `_Union`) at the end of ``loc``, or None where the schema ends."""
    cls: Any = root
    for el in loc:
        if isinstance(el, int):
            continue  # list index: cls already is the item type
        if isinstance(cls, _Union):
            cls = cls.members.get(el)
            continue
        if not (isinstance(cls, type) and issubclass(cls, _Model)) or el not in cls.model_fields:
            return None
        cls = _field_type(cls, el)
    return cls


def _yaml_path(loc: tuple, root: type[_Model]) -> str:
    """``('vms', 1, 'workload', 'cpu_bound', 'duty')`` -> ``vms[1].workload.duty``."""
    out = ""
    for i, el in enumerate(loc):
        if isinstance(el, int):
            out += f"[{el}]"
        elif i and isinstance(_walk(root, loc[:i]), _Union):
            pass  # pydantic's discriminator tag, not a YAML key
        else:
            out += path_key(el)
    return out.lstrip(".") or "(top level)"


def _describe_keys(cls: type[_Model]) -> str:
    return ", ".join(k for k in cls.model_fields)


def _one_error(err: dict, root: type[_Model], prefix: str) -> ScenarioError:
    loc = tuple(err["loc"])
    path = _yaml_path(loc, root)
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
        union = _walk(root, loc)
        key = union.key if isinstance(union, _Union) else err.get("ctx", {}).get("discriminator", "type").strip("'")
        path = f"{path}.{key}"
        value = value.get(key, _Missing()) if isinstance(value, dict) else value
        name = next((el for el in reversed(loc) if isinstance(el, str)), "")
        noun = name[:-1] if name.endswith("s") else name  # devices -> device
        allowed = f"one of the {noun} {key}s " + (union.describe() if isinstance(union, _Union) else err["msg"])
    elif kind in ("model_type", "model_attributes_type", "dict_type"):
        if loc and isinstance(loc[-1], int):
            target = owner  # a list item: _model_at already stepped into the item type
        else:
            target = _field_type(owner, loc[-1]) if field is not None else None
        if isinstance(target, _Union):
            allowed = f"a mapping with a {target.key} key: " + target.describe()
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

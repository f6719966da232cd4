"""Field types of the scenario schema (units, limits, shares) and the base model."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    Strict,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
)

from vmtwin import units as _units


#: VM CPU shares per vCPU for the symbolic levels (vSphere: low/normal/high = 500/1000/2000).
VM_SHARES_PER_VCPU = {"low": 500, "normal": 1000, "high": 2000}
#: Resource-pool CPU shares for the symbolic levels (vSphere: 2000/4000/8000, i.e. a 4-vCPU VM).
POOL_SHARES = {"low": 2000, "normal": 4000, "high": 8000}
#: Largest custom shares value vSphere accepts.
MAX_CUSTOM_SHARES = 1_000_000
_U64_MAX = 2**64 - 1

# --------------------------------------------------------------------------------------------
# Field types. Each parses user input in a BeforeValidator, serializes back to the file form
# (so model_dump() re-parses to the same scenario), and declares what a YAML author may write
# in the JSON Schema (pydantic would otherwise say "integer" for a field that wants "4GB").
# --------------------------------------------------------------------------------------------


def _from_file(info: ValidationInfo) -> bool:
    """True while validating a scenario file: bare numbers need a unit there."""
    return bool(info.context and info.context.get("from_file"))


def _unit_type(parse, fmt, pattern: str, description: str):
    def validate(value: Any, info: ValidationInfo) -> int:
        return parse(value, allow_bare=not _from_file(info))

    return Annotated[
        int,
        BeforeValidator(validate),
        PlainSerializer(fmt, return_type=str),
        WithJsonSchema(
            {
                "anyOf": [{"type": "string", "pattern": pattern}, {"type": "integer", "const": 0}],
                "description": description,
            }
        ),
    ]


_NUM = r"^\s*[+]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*"
Bytes = _unit_type(
    _units.parse_size,
    _units.format_size,
    _NUM + r"([KkMmGgTt]?[Ii]?[Bb])\s*$",
    "A size: B, KB, MB, GB, TB (binary: GB = GiB = 2^30 bytes) or KiB..TiB, e.g. '4GB'.",
)
Mhz = _unit_type(
    _units.parse_frequency,
    _units.format_frequency,
    _NUM + r"([MmGg][Hh][Zz])\s*$",
    "A frequency: MHz or GHz, e.g. '2600MHz', '2.6GHz'.",
)
Nanos = _unit_type(
    _units.parse_duration,
    _units.format_duration,
    _NUM + r"(ns|us|µs|ms|s|min|h|d|days?|w|weeks?)\s*$",
    "A duration: ns, us, ms, s, min, h, day or week, e.g. '50ms', '10min', '2day'.",
)


def _parse_limit(value: Any, info: ValidationInfo) -> Optional[int]:
    # vSphere's API spells unlimited -1; the UI says "Unlimited". Accept both, and null.
    if value is None or value == -1 and not isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().lower() == "unlimited":
        return None
    try:
        return _units.parse_frequency(value, allow_bare=not _from_file(info))
    except ValueError as exc:
        raise ValueError(f"'unlimited' or {exc}") from None


LimitMhz = Annotated[
    Optional[int],
    BeforeValidator(_parse_limit),
    PlainSerializer(lambda v: "unlimited" if v is None else _units.format_frequency(v), return_type=str),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": r"^(unlimited|" + _NUM[1:] + r"([MmGg][Hh][Zz])\s*)$"},
                {"type": "integer", "const": -1},
                {"type": "null"},
            ],
            "description": "A CPU limit: 'unlimited' (or -1, or null) or a frequency such as '1500MHz'.",
        }
    ),
]


def _parse_shares(value: Any) -> Union[str, int]:
    allowed = f"low, normal, high, or a custom integer from 1 to {MAX_CUSTOM_SHARES}"
    if isinstance(value, str) and value.strip().lower() in VM_SHARES_PER_VCPU:
        return value.strip().lower()
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_CUSTOM_SHARES:
        return value
    raise ValueError(allowed)


Shares = Annotated[
    Union[Literal["low", "normal", "high"], int],
    BeforeValidator(_parse_shares),
    WithJsonSchema(
        {
            "anyOf": [
                {"enum": ["low", "normal", "high"]},
                {"type": "integer", "minimum": 1, "maximum": MAX_CUSTOM_SHARES},
            ],
            "description": "Shares: low, normal, high (resolved as vSphere does) or a custom integer.",
        }
    ),
]

Name = Annotated[
    str,
    Strict(),
    # No leading/trailing blanks or control characters: names end up in tables and file names.
    StringConstraints(min_length=1, max_length=80, pattern=r"^[^\s\x00-\x1f](?:[^\x00-\x1f]*[^\s\x00-\x1f])?$"),
]
PosInt = Annotated[int, Strict(), Field(ge=1)]


def _threads(value: Any) -> int:
    # Literal[1, 2] alone would take True and 2.0; a thread count is an integer.
    if isinstance(value, int) and not isinstance(value, bool) and value in (1, 2):
        return value
    raise ValueError("1 or 2 (2 = hyperthreading)")


ThreadsPerCore = Annotated[Literal[1, 2], BeforeValidator(_threads)]
Fraction = Annotated[float, Strict(), Field(gt=0.0, le=1.0)]


class _ModelMeta(type(BaseModel)):
    """Metaclass whose ``__call__`` turns a builder's ValidationError into ScenarioError.

    Overriding ``__init__`` would not do: pydantic then calls that ``__init__`` for every nested
    model while validating a file, losing the validation context and the YAML path.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except ValidationError as exc:
            from vmtwin.scenario.errors import _convert_validation_error  # errors needs _Model

            raise _convert_validation_error(exc, cls, prefix=cls.__name__) from None


class _Model(BaseModel, metaclass=_ModelMeta):
    """Base of every schema model: unknown keys are errors, errors become ScenarioError."""

    # validate_default: defaults are written in file form ("4GB") so the JSON Schema shows them so.
    model_config = ConfigDict(extra="forbid", validate_default=True, populate_by_name=True)

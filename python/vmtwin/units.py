"""Quantities with units, as scenario files write them, turned into the engine's integers.

The engine counts in three base units: **bytes**, **MHz** and **nanoseconds**. Scenario files
write sizes, frequencies and durations the way a vSphere admin does (``4GB``, ``2600MHz``,
``50ms``); this module parses those strings into base-unit integers and formats integers back
into the shortest exact string (so a scenario dumps and re-reads to the same values).

Conventions
-----------
- **GB means GiB.** vSphere and esxtop say "GB" for 2**30 bytes, so ``KB``/``MB``/``GB``/``TB``
  are binary here, exactly like ``KiB``/``MiB``/``GiB``/``TiB``: ``4GB == 4GiB == 4294967296``.
  ``B`` is plain bytes.
- Frequencies: ``MHz`` and ``GHz`` (``2.6GHz == 2600MHz``).
- Durations: ``ns``, ``us`` (or ``µs``), ``ms``, ``s``, ``min``, ``h``, ``day`` (or ``d``, ``days``)
  and ``week`` (or ``w``, ``weeks``). ``m`` is refused because it reads as both minutes and
  milliseconds. Formatting stops at ``h`` (``24h``, not ``1day``), which esxtop users read at a glance.
- Unit names are matched case-insensitively; a space between number and unit is allowed.
- Fractions are allowed (``1.5GB``, ``0.5s``) and rounded to the nearest base unit (half to even).
- Negative quantities are refused: no field of a scenario takes one.
- Quantities beyond the engine's 64-bit integers are refused before any arithmetic, whatever the
  exponent (``1e999999GHz`` is a ValueError, not a ``decimal.Overflow``).
- A bare number (an ``int``, or a string with no unit) is a base-unit count (bytes, MHz, ns) only
  when ``allow_bare=True``. Scenario files call these functions with ``allow_bare=False``, so
  ``memory: 4096`` is an error rather than silently 4 KiB; ``0`` is always accepted, since zero
  needs no unit. Python builders pass plain ints in base units.

Every parse error is a ``ValueError`` whose message says which units are allowed.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

__all__ = [
    "SIZE_UNITS",
    "FREQUENCY_UNITS",
    "DURATION_UNITS",
    "parse_size",
    "parse_frequency",
    "parse_duration",
    "format_size",
    "format_frequency",
    "format_duration",
]

_KIB = 1024
_U64_MAX = 2**64 - 1
# Canonical spelling -> base units. Order matters for formatting: largest unit first.
SIZE_UNITS: dict[str, int] = {
    "TB": _KIB**4,
    "GB": _KIB**3,
    "MB": _KIB**2,
    "KB": _KIB,
    "B": 1,
}
# IEC spellings are accepted on input and mean the same thing.
_SIZE_ALIASES: dict[str, int] = {
    **{u.lower(): f for u, f in SIZE_UNITS.items()},
    "tib": _KIB**4,
    "gib": _KIB**3,
    "mib": _KIB**2,
    "kib": _KIB,
}
FREQUENCY_UNITS: dict[str, int] = {"GHz": 1000, "MHz": 1}
_FREQ_ALIASES = {u.lower(): f for u, f in FREQUENCY_UNITS.items()}
DURATION_UNITS: dict[str, int] = {
    "h": 3600 * 10**9,
    "min": 60 * 10**9,
    "s": 10**9,
    "ms": 10**6,
    "us": 10**3,
    "ns": 1,
}
_DAY_NS = 24 * 3600 * 10**9
_DUR_ALIASES = {
    **{u.lower(): f for u, f in DURATION_UNITS.items()},
    "µs": 10**3,
    "μs": 10**3,
    "d": _DAY_NS,
    "day": _DAY_NS,
    "days": _DAY_NS,
    "w": 7 * _DAY_NS,
    "week": 7 * _DAY_NS,
    "weeks": 7 * _DAY_NS,
}

_QUANTITY = re.compile(r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([^\d\s.+-][^\s]*)?\s*$")

_SIZE_ALLOWED = "a size with a unit: B, KB, MB, GB, TB (binary, GB = GiB = 2^30 bytes) or KiB, MiB, GiB, TiB, e.g. '4GB'"
_FREQ_ALLOWED = "a frequency with a unit: MHz or GHz, e.g. '2600MHz' or '2.6GHz'"
_DUR_ALLOWED = "a duration with a unit: ns, us, ms, s, min, h, day or week, e.g. '50ms' or '10min'"
# Any number whose exponent is beyond this is far outside u64 in any unit (2**64 < 10**20, and the
# smallest unit factor is 1): refused before Decimal arithmetic, which would overflow its context.
_MAX_EXPONENT = 40


# Parsed strings, per unit table and allow_bare: a scenario repeats the same few quantities
# ("2GB", "0MHz", "20ms") on thousands of VMs, and a Decimal parse costs microseconds.
_PARSED: dict[tuple[str, int, bool], int] = {}
_PARSED_MAX = 65536


def _parse(value: object, aliases: dict[str, int], allowed: str, base: str, allow_bare: bool) -> int:
    """Parse ``value`` against a unit table; return a non-negative integer in base units."""
    if type(value) is str:
        key = (value, id(aliases), allow_bare)
        hit = _PARSED.get(key)
        if hit is not None:
            return hit
        n = _parse_uncached(value, aliases, allowed, base, allow_bare)
        if len(_PARSED) < _PARSED_MAX:
            _PARSED[key] = n
        return n
    return _parse_uncached(value, aliases, allowed, base, allow_bare)


def _parse_uncached(value: object, aliases: dict[str, int], allowed: str, base: str, allow_bare: bool) -> int:
    bare_hint = (
        f"{allowed} (a number without a unit is ambiguous here; only 0 may omit the unit)"
        if not allow_bare
        else f"{allowed}, or a plain integer number of {base}"
    )
    # bool is an int subclass; True/False is never a quantity.
    if isinstance(value, bool):
        raise ValueError(bare_hint)
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"a non-negative quantity: {allowed}")
        if value == 0:
            return 0
        if not allow_bare:
            raise ValueError(bare_hint)
        if isinstance(value, float) and not value.is_integer():
            raise ValueError(f"a whole number of {base}, or {allowed}")
        if value > _U64_MAX:
            raise ValueError(f"at most {_U64_MAX} {base} (the engine counts in 64-bit integers)")
        return int(value)
    if not isinstance(value, str):
        raise ValueError(allowed)
    m = _QUANTITY.match(value)
    if m is None:
        raise ValueError(allowed)
    number, unit = m.group(1), m.group(2)
    try:
        amount = Decimal(number)
    except InvalidOperation:  # pragma: no cover - the regex only lets numbers through
        raise ValueError(allowed) from None
    if amount < 0:
        raise ValueError(f"a non-negative quantity: {allowed}")
    if amount != 0 and amount.adjusted() > _MAX_EXPONENT:
        raise ValueError(f"at most {_U64_MAX} {base} (the engine counts in 64-bit integers): {allowed}")
    if unit is None:
        if amount == 0:
            return 0
        if not allow_bare:
            raise ValueError(bare_hint)
        factor = 1
    else:
        factor = aliases.get(unit.lower())
        if factor is None:
            raise ValueError(f"{allowed} (unknown unit {unit[:20]!r}{'...' if len(unit) > 20 else ''})")
    try:
        scaled = int((amount * factor).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))
    except (InvalidOperation, ArithmeticError):  # too many digits, or a tiny exponent: not u64
        scaled = 0 if amount.adjusted() < 0 else _U64_MAX + 1
    if scaled > _U64_MAX:
        raise ValueError(f"at most {_U64_MAX} {base} (the engine counts in 64-bit integers): {allowed}")
    return scaled


def parse_size(value: object, *, allow_bare: bool = True) -> int:
    """Parse a memory size into bytes.

    Parameters
    ----------
    value : str or int
        ``"4GB"``, ``"512MB"``, ``"4GiB"``, ``"1TB"``, ``"4096B"``, or an int number of bytes.
        GB is binary (2**30), as in vSphere.
    allow_bare : bool
        Accept a number without a unit as bytes. Scenario files pass ``False``.

    Returns
    -------
    int
        Bytes, >= 0.

    Raises
    ------
    ValueError
        Unknown unit, negative value, or a bare number when ``allow_bare`` is false.

    Examples
    --------
    >>> parse_size("4GB"), parse_size("512MiB"), parse_size(4096)
    (4294967296, 536870912, 4096)
    """
    return _parse(value, _SIZE_ALIASES, _SIZE_ALLOWED, "bytes", allow_bare)


def parse_frequency(value: object, *, allow_bare: bool = True) -> int:
    """Parse a CPU frequency or rate into MHz.

    Parameters
    ----------
    value : str or int
        ``"2400MHz"``, ``"2.6GHz"``, or an int number of MHz.
    allow_bare : bool
        Accept a number without a unit as MHz. Scenario files pass ``False``.

    Returns
    -------
    int
        MHz, >= 0 (fractions of a MHz are rounded half to even).

    Examples
    --------
    >>> parse_frequency("2.6GHz"), parse_frequency("2400MHz")
    (2600, 2400)
    """
    return _parse(value, _FREQ_ALIASES, _FREQ_ALLOWED, "MHz", allow_bare)


def parse_duration(value: object, *, allow_bare: bool = True) -> int:
    """Parse a duration into nanoseconds.

    Parameters
    ----------
    value : str or int
        ``"500us"``, ``"50ms"``, ``"2s"``, ``"10min"``, ``"1h"``, ``"2day"``, ``"1week"``, ``"100ns"``,
        or an int number of ns.
    allow_bare : bool
        Accept a number without a unit as nanoseconds. Scenario files pass ``False``.

    Returns
    -------
    int
        Nanoseconds, >= 0.

    Examples
    --------
    >>> parse_duration("50ms"), parse_duration("10min"), parse_duration("1.5s")
    (50000000, 600000000000, 1500000000)
    """
    return _parse(value, _DUR_ALIASES, _DUR_ALLOWED, "nanoseconds", allow_bare)


def _format(n: int, units: dict[str, int]) -> str:
    """Largest unit that divides ``n`` exactly, so the string parses back to ``n``."""
    if n < 0:
        raise ValueError(f"a non-negative integer, got {n}")
    for unit, factor in units.items():
        if n % factor == 0 and n >= factor:
            return f"{n // factor}{unit}"
    # Only n == 0 reaches here: use the smallest unit.
    return f"0{next(reversed(units))}"


def format_size(n: int) -> str:
    """Format bytes as the shortest exact string, e.g. ``4294967296 -> "4GB"``.

    Examples
    --------
    >>> format_size(4 * 2**30), format_size(1536 * 2**20), format_size(1000)
    ('4GB', '1536MB', '1000B')
    """
    return _format(n, SIZE_UNITS)


def format_frequency(n: int) -> str:
    """Format MHz as ``"<n>MHz"`` (``2600 -> "2600MHz"``); MHz is what vSphere shows."""
    if n < 0:
        raise ValueError(f"a non-negative integer, got {n}")
    return f"{n}MHz"


def format_duration(n: int) -> str:
    """Format nanoseconds as the shortest exact string, e.g. ``600_000_000_000 -> "10min"``.

    Examples
    --------
    >>> format_duration(50_000_000), format_duration(90 * 10**9), format_duration(0)
    ('50ms', '90s', '0ns')
    """
    return _format(n, DURATION_UNITS)

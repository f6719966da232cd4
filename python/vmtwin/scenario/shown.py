"""Values as error messages show them: shortened, so a message stays a few lines long.

A bad value can be a 16 MB string, an integer of 100,000 digits or a structure of a million
nodes built by YAML aliases; printing it whole would bury the message (an alias bomb printed 4
million characters). :func:`short` gives a bounded ``repr`` in time bounded too (``reprlib``
stops at a few items per container and a few levels), and :func:`bounded_error` builds the one
ScenarioError format of :func:`vmtwin.exceptions.scenario_error` with the value and the path
shortened; the error's ``path`` and ``value`` attributes keep the originals.
"""

from __future__ import annotations

import reprlib

from vmtwin.exceptions import ScenarioError, scenario_error

#: Characters of a value shown in a message (the full value stays in ``err.value``).
SHOWN_CHARS = 80
#: Characters of a YAML path shown (paths carry user keys, which can be long).
PATH_CHARS = 200

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxdict = _REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxfrozenset = 4
_REPR.maxstring = SHOWN_CHARS
_REPR.maxlong = 40
_REPR.maxother = SHOWN_CHARS


def short(value: object, limit: int = SHOWN_CHARS, *, quote: bool = True) -> str:
    """A ``repr`` of ``value`` (or the text itself with ``quote=False``) of at most about ``limit`` chars.

    >>> short("x" * 1000, 20)
    "'xxxxxxxx…xxxxxxxx' (1,000 characters)"
    >>> short("10m")
    "'10m'"
    """
    if isinstance(value, str):
        text = repr(value) if quote and len(value) <= limit else value
        if len(text) <= limit:
            return text
        half = max(1, (limit - 4) // 2)
        cut = f"{value[:half]}…{value[-half:]}"
        return (repr(cut) if quote else cut) + f" ({len(value):,} characters)"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**limit:
        digits = len(str(abs(value))) if abs(value) < 10**4000 else "more than 4,000"
        return f"an integer of {digits} digits"
    text = _REPR.repr(value)
    return text if len(text) <= limit * 2 else text[: limit * 2] + "…"


def printable(text: str) -> str:
    """``text`` with every non-printable character escaped (a NUL, a newline or a U+001E in a key
    would otherwise cut or corrupt the message's line)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def path_key(key: object) -> str:
    """A mapping key as a YAML path step: ``.name``, or ``['odd key']`` when it is not a plain word."""
    text = short(str(key), 40, quote=False)
    if text and text.isprintable() and not any(c in text for c in " .[]'\"\t"):
        return "." + text
    return f"[{short(str(key), 40)}]"


class _Shown:
    """Stands for a value in ``scenario_error``'s message: its repr is the shortened one."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def bounded_error(path: str, value: object, allowed: str) -> ScenarioError:
    """:func:`~vmtwin.exceptions.scenario_error` with ``path`` and the shown ``value`` shortened.

    >>> str(bounded_error("description", "y" * 500, "text"))[:40]
    "description: got 'yyyyyyyyyyyyyyyyyyyyyy"
    """
    err = scenario_error(printable(short(path, PATH_CHARS, quote=False)), _Shown(short(value)), printable(allowed))
    err.path, err.value = path, value  # the originals, for callers that compare them
    return err

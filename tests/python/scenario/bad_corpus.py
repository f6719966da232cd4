"""The bad-input corpus (``bad/*.yaml``): each file, what its message must contain, its class.

A corpus file starts with comment lines the tests read::

    # expect: vms[0].vcpus: got 'two'     <- a substring of the message (the YAML path first)
    # class: tag                          <- the kind of bad input (files without one: "legacy")
    # setup: fifo trace.fifo              <- optional: what must exist beside it (see prepare)
    # heavy: yes                          <- optional: the class's sample for the limited subprocess

Setups make what git cannot hold or should not: ``fifo NAME`` (a named pipe), ``mkdir NAME``,
``bytes NAME N`` (a text file of N bytes, "50" lines then one long line), ``lines NAME N`` (a
PlanetLab trace of N lines), ``pad N`` (the scenario itself padded with a comment to N bytes),
``repeat N TEXT`` and ``append TEXT`` (TEXT, a Python string literal, added to the scenario N
times or once; ``#i`` in it becomes the repetition's number): big inputs stay small in git.
A file with setups is copied into a scratch folder with them; one without is used in place.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
BAD_DIR = HERE / "bad"
SHARED_DATA = HERE.parents[2].parent / "shared" / "data"


@dataclass(frozen=True)
class BadFile:
    """One corpus file and what its header says."""

    path: Path
    expect: str
    cls: str
    setup: tuple[str, ...] = field(default=())
    heavy: bool = False

    @property
    def needs_shared_data(self) -> bool:
        return "shared/data" in self.path.read_text(encoding="utf-8", errors="replace")

    def prepare(self, scratch: Path) -> Path:
        """The scenario file to run: in place, or a copy in ``scratch`` with its setups made."""
        if not self.setup:
            return self.path
        scratch.mkdir(parents=True, exist_ok=True)
        text = self.path.read_text(encoding="utf-8")
        for step in self.setup:
            kind, *args = step.split(maxsplit=2 if step.startswith("repeat") else 1 if step.startswith("append") else -1)
            if kind in ("repeat", "append"):
                n, literal = (int(args[0]), args[1]) if kind == "repeat" else (1, args[0])
                piece = ast.literal_eval(literal)
                text += "".join(piece.replace("#i", str(i)) for i in range(n))
                continue
            if kind == "pad":
                size = int(args[0])
                text += "#" + "x" * max(0, size - len(text) - 2) + "\n"
                continue
            target = scratch / args[0]
            if kind == "fifo":
                os.mkfifo(target)
            elif kind == "mkdir":
                target.mkdir()
            elif kind == "lines":
                target.write_text("50\n" * int(args[1]))
            elif kind == "bytes":
                n = int(args[1])
                head = "50\n" * min(100, n // 6)
                target.write_text(head + "7" * (n - len(head)) + "\n")
            else:  # pragma: no cover - a typo in a corpus header
                raise ValueError(f"{self.path.name}: unknown setup {step!r}")
        out = scratch / self.path.name
        out.write_text(text, encoding="utf-8")
        return out


def _read(path: Path) -> BadFile:
    expect, cls, setup, heavy = None, "legacy", [], False
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith("# "):
                break
            key, _, value = line[2:].rstrip("\n").partition(": ")
            if key == "expect":
                expect = value
            elif key == "class":
                cls = value
            elif key == "setup":
                setup.append(value)
            elif key == "heavy":
                heavy = value == "yes"
    if expect is None:
        raise ValueError(f"{path.name} must start with '# expect: <substring>'")
    return BadFile(path, expect, cls, tuple(setup), heavy)


CORPUS: list[BadFile] = [_read(p) for p in sorted(BAD_DIR.glob("*.yaml"))]
CLASSES: dict[str, list[BadFile]] = {}
for _f in CORPUS:
    CLASSES.setdefault(_f.cls, []).append(_f)

"""The two nouns of a reproduction: an experiment and a row of published-vs-simulated."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

#: Where a row's target number comes from: printed in the paper, or worked out from its text.
SOURCES = ("published", "derived")


@dataclass(frozen=True)
class Row:
    """One published number next to its simulated counterpart.

    ``tolerance`` is absolute, in the metric's unit; ``judged=False`` marks numbers the
    extraction says cannot be derived from the paper (shown, not judged).

    ``source`` (required, keyword-only) says where the target comes from: ``"published"`` when
    the number is printed in the paper, ``"derived"`` when it is worked out from the paper's
    text; a derived row must say how in ``note``. The column keeps the column name
    ``published`` for both: it is the value the simulation is judged against.
    """

    experiment: str
    metric: str
    published: float
    simulated: float
    tolerance: float
    judged: bool = True
    x: Optional[float] = None
    series: str = ""
    note: str = ""
    source: str = field(kw_only=True)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"Row {self.metric!r}: source {self.source!r} is not one of {', '.join(SOURCES)}")
        if self.source == "derived" and not self.note.strip():
            raise ValueError(f"Row {self.metric!r}: a derived target needs its derivation in note")

    @property
    def verdict(self) -> str:
        if not self.judged:
            return "NOT JUDGED"
        return "PASS" if abs(self.simulated - self.published) <= self.tolerance else "FAIL"

    @property
    def tolerance_text(self) -> str:
        return f"±{self.tolerance:g}"

    def as_dict(self) -> dict:
        """The JSON form: experiment, metric, published, simulated, tolerance, verdict, source, note."""
        return {
            "experiment": self.experiment,
            "metric": self.metric,
            "published": self.published,
            "simulated": round(self.simulated, 6),
            "tolerance": self.tolerance,
            "verdict": self.verdict,
            "source": self.source,
            "note": self.note,
        }


@dataclass(frozen=True)
class Experiment:
    """A paper experiment: how to run it and where its published numbers come from."""

    id: str
    title: str
    source: str
    runner: Callable[[], list[Row]] = field(repr=False)
    x_label: str = ""
    y_label: str = ""

    def run(self) -> list[Row]:
        """Run the scenarios and return the rows."""
        return self.runner()

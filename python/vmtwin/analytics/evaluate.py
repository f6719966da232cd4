"""Hit rates of the active-mode ranking against ground truth, beside two simple baselines.

For each labelled outage at time T, the events known at T (started by T; an end after T is not
yet known, so the event counts as open) are given to the fitted model's active mode, and the
ranking is collapsed to resources. Top-k hit: the outage's root resource is among the first k.

Baselines rank the same active set (:meth:`Model.active_at`) by

- ``start``: earliest start first (the first alarm is the cause);
- ``magnitude``: largest excursion beyond the band first (the loudest alarm is the cause).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from vmtwin.analytics.engine import Model
from vmtwin.analytics.events import Event

METHODS = ("aece", "start", "magnitude")


@dataclass
class HitRates:
    outages: int
    top1: dict
    top3: dict
    missing: dict  # outages whose root resource is absent from the method's ranking

    def as_dict(self) -> dict:
        return {"outages": self.outages, "top1": self.top1, "top3": self.top3, "not_ranked": self.missing}


def known_at(events: Sequence[Event], t: float) -> list[Event]:
    """The events as an observer at ``t`` sees them."""
    return [e if e.end is None or e.end <= t else Event(e.resource, e.attribute, e.symptom, e.start, None,
                                                         e.magnitude)
            for e in events if e.start <= t]


def rankings(model: Model, events: Sequence[Event], t: float) -> dict[str, list[str]]:
    """Resource rankings at ``t`` by AECE and by the two baselines."""
    seen = known_at(events, t)
    active = model.active_at(seen, t)
    latest = {}
    for e in seen:  # the latest occurrence of each active type speaks for it
        if e.type.label in active:
            latest[e.type.label] = e
    def resources(labels):
        return list(dict.fromkeys(x.split(":", 1)[0] for x in labels))

    by_start = sorted(latest.values(), key=lambda e: (e.start, e.type.label))
    by_mag = sorted(latest.values(), key=lambda e: (-(e.magnitude if e.magnitude == e.magnitude else 0.0),
                                                    e.type.label))
    return {
        "aece": model.online(seen, t).resources(),
        "start": resources(e.type.label for e in by_start),
        "magnitude": resources(e.type.label for e in by_mag),
    }


def hit_rates(model: Model, events: Sequence[Event], outages) -> HitRates:
    """Top-1 and top-3 hit rates (fractions) of each method over the given outages."""
    n = 0
    top1 = dict.fromkeys(METHODS, 0)
    top3 = dict.fromkeys(METHODS, 0)
    missing = dict.fromkeys(METHODS, 0)
    for o in outages:
        n += 1
        for m, ranked in rankings(model, events, o.time).items():
            top1[m] += ranked[:1] == [o.root_resource]
            top3[m] += o.root_resource in ranked[:3]
            missing[m] += o.root_resource not in ranked
    frac = (lambda d: {k: v / n for k, v in d.items()}) if n else (lambda d: d)
    return HitRates(n, frac(top1), frac(top3), missing)

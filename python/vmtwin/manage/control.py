"""vATM's control law: token batches sized by hill climbing on the overall throughput.

vATM (Bhatt, Desai, Kambo, Li, Zadok, VMware Technical Journal 2013, Sec. 3.3; research/management.md
paper 1) gives every task one *token* and issues tasks in *rounds*: a round launches ``t_tar`` tasks
at once and waits until all of them finish (a barrier); only then is the throughput measured and the
next ``t_tar`` chosen. The last round may be short (fewer tasks left than tokens).

The sequence of ``t_tar``:

1. round 1 issues ``t_min`` (configurable; "should not be too large" to avoid overshooting);
2. round 2 issues ``2 * t_min``, so that two throughput points exist;
3. from round 3 on, hill climbing on the *overall* throughput ``thp`` (tasks finished since the first
   launch divided by the time since it, in tasks per minute, Fig. 4), with the gradient between the
   last two rounds normalised by arctan::

       gradient      = (thp_k - thp_{k-1}) / (t_k - t_{k-1})       (tasks/min per token)
       gradient_norm = atan(gradient) [degrees] / 90               in [-1, 1)
       t_{k+1}       = t_k * (1 + gradient_norm)                   ("paper" rule)

   A steep rise nearly doubles the batch, a flat curve barely moves it, a fall shrinks it; at worst
   ``gradient_norm = -1`` gives 0, hence the floor of one task.

The formula is reconstructed from the prose (the OCR lost it; research/management.md 1A.6, [R]).
The *patent* rule (US 9,411,658, alternative (c) there) differs only when the throughput fell: the
next size is the mean of the last two sizes, so it settles between them.

The measured signal is the paper's *overall* throughput by default. ``signal="round"`` (the last
round's own throughput) and ``signal="ewma"`` (its exponentially weighted mean, weight
``ewma_alpha``) are ablations the extraction suggests (1C.4): on a noiseless hill the overall
throughput lags (it averages every round since the start), so its sign says whether the last round
beat the history rather than whether the last step went uphill, and the batch drifts along a flat
top (docs/manage.md, "Convergence").

Degenerate cases (research/management.md 1C.2-3, implementer's choices):

- equal sizes (``t_k == t_{k-1}``, e.g. two rounds at the floor): the slope is undefined; with no
  change in throughput ``gradient_norm = 0``, otherwise ``sign(delta thp)`` clamped to
  ``[-1, 1 - 1e-9]``;
- integer sizes: ``t_k * (1 + g)`` is rounded to the nearest integer (half away from zero); if that
  gives back ``t_k`` while ``g != 0`` the size moves by one in the sign of ``g`` (flooring would stick
  at 1 for ever); then the floor (``floor_tasks``, at least 1) and the optional cap ``t_p`` apply.

Tunables (:class:`VatmConfig`): ``t_min`` (the paper uses the naive static batch: 10, 5, 4),
``rule`` ("paper" or "patent"), ``floor_tasks`` (1), ``t_p`` (None: no cap; the paper gives no value)
and ``throughput_per_s`` (60: throughput in tasks per *minute*, Fig. 4's unit; arctan is not
scale-free, so the unit changes the steps and is recorded).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from vmtwin.exceptions import scenario_error

#: The update rules, by name.
RULES = ("paper", "patent")
#: The throughput the controller climbs on.
SIGNALS = ("overall", "round", "ewma")
#: Largest normalised gradient: atan in degrees / 90 stays below 1 ("1 exclusive").
G_MAX = 1.0 - 1e-9
#: Seconds per throughput unit: 60 = tasks per minute (Fig. 4).
TASKS_PER_MIN = 60.0


@dataclass(frozen=True)
class VatmConfig:
    """vATM's tunables; see the module docstring for each one's source."""

    t_min: int = 4
    rule: str = "paper"
    floor_tasks: int = 1
    t_p: Optional[int] = None
    throughput_per_s: float = TASKS_PER_MIN
    signal: str = "overall"
    ewma_alpha: float = 0.3

    def __post_init__(self) -> None:
        if not isinstance(self.t_min, int) or isinstance(self.t_min, bool) or self.t_min < 1:
            raise scenario_error("vatm.t_min", self.t_min, "an integer of at least 1 (tasks in round 1)")
        if self.rule not in RULES:
            raise scenario_error("vatm.rule", self.rule, " or ".join(RULES))
        if not isinstance(self.floor_tasks, int) or self.floor_tasks < 1:
            raise scenario_error("vatm.floor_tasks", self.floor_tasks, "an integer of at least 1")
        if self.t_p is not None and (not isinstance(self.t_p, int) or self.t_p < max(self.floor_tasks, self.t_min)):
            raise scenario_error("vatm.t_p", self.t_p, "null or an integer of at least t_min and floor_tasks")
        if self.signal not in SIGNALS:
            raise scenario_error("vatm.signal", self.signal, ", ".join(SIGNALS))
        if not 0 < self.ewma_alpha <= 1:
            raise scenario_error("vatm.ewma_alpha", self.ewma_alpha, "a weight in (0, 1]")
        if not self.throughput_per_s > 0:
            raise scenario_error("vatm.throughput_per_s", self.throughput_per_s, "seconds per throughput unit, > 0")


def normalised_gradient(d_thp: float, d_t: float) -> float:
    """``atan(d_thp / d_t)`` in degrees over 90, with the equal-sizes case of the module docstring.

    >>> normalised_gradient(1.0, 1.0)
    0.5
    >>> normalised_gradient(-3.0, 0), normalised_gradient(0.0, 0)
    (-1.0, 0.0)
    """
    if d_t == 0:
        if d_thp == 0:
            return 0.0
        g = math.copysign(1.0, d_thp)
    else:
        g = math.degrees(math.atan(d_thp / d_t)) / 90.0
    return min(max(g, -1.0), G_MAX)


def _round_half_away(x: float) -> int:
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


class VatmController:
    """The feedback controller: the next round's token count from the rounds so far.

    Read :attr:`t_tar` before each round; call :meth:`finish_round` after it with the tokens it was
    given, the overall throughput as of its end and the round's own throughput (tasks per
    ``throughput_per_s`` seconds). ``tokens``, ``thp`` (the signal climbed on) and ``gradients``
    keep the trace (``gradients[i]`` is the normalised gradient that sized round ``i + 3``).
    """

    def __init__(self, config: Optional[VatmConfig] = None) -> None:
        self.config = config or VatmConfig()
        self.tokens: list[int] = []
        self.thp: list[float] = []
        self.gradients: list[float] = []
        self.t_tar: int = self._bounded(self.config.t_min)

    def finish_round(self, tokens: int, overall_throughput: float, round_throughput: Optional[float] = None) -> int:
        """Record a finished round and return the next round's tokens (also left in ``t_tar``)."""
        cfg = self.config
        if cfg.signal == "overall":
            signal = overall_throughput
        elif round_throughput is None:
            raise ValueError(f"vATM signal {cfg.signal!r} needs the round's throughput")
        elif cfg.signal == "round" or not self.thp:
            signal = round_throughput
        else:
            signal = cfg.ewma_alpha * round_throughput + (1.0 - cfg.ewma_alpha) * self.thp[-1]
        self.tokens.append(int(tokens))
        self.thp.append(float(signal))
        if len(self.tokens) == 1:
            size = 2 * cfg.t_min
        else:
            t_prev, t_cur = self.tokens[-2], self.tokens[-1]
            d_thp = self.thp[-1] - self.thp[-2]
            g = normalised_gradient(d_thp, t_cur - t_prev)
            self.gradients.append(g)
            if cfg.rule == "patent" and d_thp < 0:
                raw = (t_cur + t_prev) / 2.0  # throughput fell: back to between the last two sizes
                g = -1.0 if t_prev < t_cur else 1.0 if t_prev > t_cur else g
            else:
                raw = t_cur * (1.0 + g)
            size = _round_half_away(raw)
            if size == t_cur and g != 0:
                size += 1 if g > 0 else -1
        self.t_tar = self._bounded(size)
        return self.t_tar

    def _bounded(self, size: int) -> int:
        size = max(self.config.floor_tasks, size)
        return size if self.config.t_p is None else min(self.config.t_p, size)


__all__ = ["RULES", "SIGNALS", "TASKS_PER_MIN", "VatmConfig", "VatmController", "normalised_gradient"]

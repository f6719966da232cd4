"""Log-normal event lifetimes and the alpha-quantile lifetime t_alpha.

AECE (Sec. 2) models the lifetime t of each event type as log-normal: log t ~ Normal(mu, sigma).
The parameter alpha is a probability level and t_alpha the lifetime that a fraction alpha of the
type's occurrences do not exceed::

    alpha   = 1/2 * (1 + erf((log t_alpha - mu) / (sigma * sqrt 2)))
    t_alpha = exp(mu + sigma * sqrt 2 * erfinv(2 alpha - 1))

The paper writes log10; the base cancels (we fit and invert in natural log). mu and sigma are
the maximum-likelihood estimates: the mean and the (population) standard deviation of the log
lifetimes of the type's closed occurrences.

How t_alpha enters the probabilities (the paper does not say; extraction 2C-2) is in
:mod:`vmtwin.analytics.cooccurrence`: an occurrence counts as active from its start for
min(lifetime, t_alpha), an open occurrence for t_alpha. Types with fewer than
:data:`MIN_LIFETIMES_FOR_FIT` closed occurrences of positive length have no fit; their
t_alpha is the caller's fallback.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

#: Fewest closed positive lifetimes a log-normal is fitted to (two points give a spread).
MIN_LIFETIMES_FOR_FIT = 2


@dataclass(frozen=True)
class LogNormal:
    """A fitted lifetime law: natural-log mean ``mu``, spread ``sigma``, from ``n`` lifetimes (s)."""

    mu: float
    sigma: float
    n: int

    def quantile(self, alpha: float) -> float:
        """t_alpha in seconds: the lifetime a fraction ``alpha`` of occurrences stay under."""
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha: got {alpha!r}; allowed: a probability strictly between 0 and 1")
        # sqrt(2) * erfinv(2 alpha - 1) is the standard normal quantile of alpha
        return float(math.exp(self.mu + self.sigma * NormalDist().inv_cdf(alpha)))

    def cdf(self, t: float) -> float:
        """alpha for a lifetime ``t`` (the inverse of :meth:`quantile`)."""
        if t <= 0:
            return 0.0
        if self.sigma == 0:
            return 1.0 if math.log(t) >= self.mu else 0.0
        return 0.5 * (1.0 + math.erf((math.log(t) - self.mu) / (self.sigma * math.sqrt(2.0))))


def fit_lognormal(lifetimes_s: Sequence[float]) -> Optional[LogNormal]:
    """Maximum-likelihood log-normal of the positive lifetimes, or ``None`` if too few."""
    x = np.asarray([t for t in lifetimes_s if t is not None and t > 0], dtype=float)
    if x.size < MIN_LIFETIMES_FOR_FIT:
        return None
    logs = np.log(x)
    return LogNormal(float(logs.mean()), float(logs.std()), int(x.size))


def ks_statistic(lifetimes_s: Sequence[float], law: LogNormal) -> float:
    """Kolmogorov-Smirnov distance between the lifetimes' empirical CDF and the fitted law."""
    x = np.sort(np.asarray([t for t in lifetimes_s if t > 0], dtype=float))
    if x.size == 0:
        return math.nan
    f = np.array([law.cdf(t) for t in x])
    n = x.size
    return float(max((np.arange(1, n + 1) / n - f).max(), (f - np.arange(0, n) / n).max()))

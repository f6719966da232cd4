"""Service-time samplers fitted to isolation measurements (Kraft et al. §4.2.2).

The paper fits a MAP to each VM's isolation service-time trace and samples it, so that the
synthetic times keep "the same statistical properties (distribution, autocorrelations)"; the MAP
order and fitting method are not given (research/storage.md C1.8). Here:

- :class:`Map2` — a two-phase MAP: a hyper-exponential whose phase is a Markov chain. The phase
  probabilities and rates match the mean and squared coefficient of variation (SCV) with balanced
  means; the chain's persistence γ (its second eigenvalue) matches the lag-1 autocorrelation,
  since for this process Cov(X_n, X_{n+1}) = γ π1 π2 (m1 - m2)^2. With SCV ≤ 1 there is no
  two-phase hyper-exponential: it falls back to an exponential renewal process (noted in
  ``fallback``), as is negative autocorrelation (γ is clamped at 0).
- :class:`BlockBootstrap` — the deviation C1.8 offers: resample the measured trace in blocks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Map2:
    """A two-phase MAP with phase probabilities ``p``, phase means ``means`` and persistence ``gamma``."""

    p: tuple[float, float]
    means: tuple[float, float]
    gamma: float
    fallback: str = ""

    @classmethod
    def fit(cls, samples: np.ndarray) -> "Map2":
        x = np.asarray(samples, dtype=float)
        if x.size < 2 or not np.all(np.isfinite(x)) or np.any(x < 0):
            raise ValueError("service-time samples must be at least 2 finite values >= 0")
        m = float(x.mean())
        if m <= 0:
            raise ValueError("service-time samples have mean 0")
        var = float(x.var())
        scv = var / (m * m)
        lag1 = float(np.corrcoef(x[:-1], x[1:])[0, 1]) if var > 0 else 0.0
        return cls.from_moments(m, scv, lag1)

    @classmethod
    def from_moments(cls, mean: float, scv: float, lag1: float = 0.0) -> "Map2":
        if scv <= 1.0:
            return cls((1.0, 0.0), (mean, mean), 0.0, fallback=f"SCV {scv:.3g} <= 1: exponential renewal")
        p1 = 0.5 * (1.0 + math.sqrt((scv - 1.0) / (scv + 1.0)))
        p2 = 1.0 - p1
        # balanced means: p1 m1 = p2 m2 = mean / 2
        m1, m2 = mean / (2.0 * p1), mean / (2.0 * p2)
        var = scv * mean * mean
        denom = p1 * p2 * (m1 - m2) ** 2
        gamma = lag1 * var / denom if denom > 0 else 0.0
        note = ""
        if gamma < 0 or gamma >= 1:
            note = f"lag-1 autocorrelation {lag1:.3g} out of reach: persistence clamped"
        return cls((p1, p2), (m1, m2), min(max(gamma, 0.0), 0.999), fallback=note)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` consecutive service times."""
        if self.p[1] == 0.0:
            return rng.exponential(self.means[0], n)
        u = rng.random(n)
        fresh = rng.random(n) < 1.0 - self.gamma
        phase = np.empty(n, dtype=np.int8)
        cur = 0 if u[0] < self.p[0] else 1
        for i in range(n):
            if fresh[i]:
                cur = 0 if u[i] < self.p[0] else 1
            phase[i] = cur
        means = np.where(phase == 0, self.means[0], self.means[1])
        return rng.exponential(1.0, n) * means


@dataclass(frozen=True)
class BlockBootstrap:
    """Resample a measured trace in blocks of ``block`` consecutive values (a deviation, C1.8)."""

    values: tuple[float, ...]
    block: int = 32

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        v = np.asarray(self.values, dtype=float)
        out = np.empty(n)
        i = 0
        while i < n:
            start = int(rng.integers(0, max(1, v.size - self.block + 1)))
            chunk = v[start : start + self.block][: n - i]
            out[i : i + chunk.size] = chunk
            i += chunk.size
        return out

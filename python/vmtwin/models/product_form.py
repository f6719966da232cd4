"""The open product-form baseline of Kraft et al. (§5.3.2, eq. 11) and their error metric (eq. 13).

C_k = D_k / (1 - Σ_t (λ_t / n) D_t) for each class k, with n parallel servers (the LUN's issue
queue, 32); "in case the sum in the denominator equals a result ≥ 1, we set the value of the
summation to 0.99". Per-class λ_k and D_k (research/storage.md C1.11): λ_k = 1 / mean isolation
inter-arrival time, D_k = mean isolation response time.
"""

from __future__ import annotations

from typing import Sequence

#: Issue-queue servers of the paper's setup ([K] §3: "The default is 32").
DEFAULT_SERVERS = 32
#: The clamp of the summation when it reaches 1 ([K] §5.3.2).
SATURATED_SUM = 0.99


def product_form(rates: Sequence[float], demands: Sequence[float], servers: int = DEFAULT_SERVERS) -> list[float]:
    """Predicted mean response time per class (units of ``demands``); rates in 1 / that unit."""
    if len(rates) != len(demands):
        raise ValueError(f"{len(rates)} rates but {len(demands)} demands")
    if servers < 1:
        raise ValueError(f"servers must be >= 1, got {servers}")
    total = sum(r / servers * d for r, d in zip(rates, demands))
    if total >= 1.0:
        total = SATURATED_SUM
    return [d / (1.0 - total) for d in demands]


def mean_relative_error(measured: Sequence[float], predicted: Sequence[float]) -> float:
    """Eq. 13: Δ = (1/K) Σ_k |C_meas,k - C_est,k| / C_meas,k."""
    if len(measured) != len(predicted) or not measured:
        raise ValueError("measured and predicted must be non-empty and of equal length")
    return sum(abs(m - p) / m for m, p in zip(measured, predicted)) / len(measured)

"""Kraft et al.'s decomposition model, linear part: consolidated read/write mixes, throughputs
and response times from isolation means (research/storage.md §A4, eqs. 14-19).

Nothing is regressed: every predictor is a closed-form combination of isolation means of each
VM: read and write throughputs T^R, T^W (commands/s), mean response times C^R, C^W and mean
arrival queue lengths A^R, A^W (requests of the same type from the same VM outstanding when a
request arrives, excluding itself). For K VMs ("generalization is obvious", C2.2):

- mix (eq. 14): β^R = Σ_i α_i^R T_i / Σ_l T_l, with α_i^R = T_i^R / T_i (equals Σ T^R / Σ T);
- total throughput (eq. 16): X^R = Σ_i T_i^R T_i / Σ_l T_l — a throughput-weighted *average*, not
  a sum, as printed;
- per-VM throughput (C2.1, not printed in the paper): T_{i,·}^R = T_i^R T_i / Σ_l T_l, the terms
  of eq. 16, so they add up to X^R;
- service time by the arrival theorem (eq. 17): S^R = C^R / (1 + A^R) (ratio of means, C2.3);
- response time (eqs. 18-19): C_{i,·}^R = C_i^R + Σ_{j≠i} S_j^R A_j^R (reads delayed only by the
  other VMs' reads), the same for writes.

Errors are absolute relative errors |measured - predicted| / measured (§7).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class IsolationStats:
    """One VM measured alone. Throughputs in commands/s, times in ms."""

    name: str
    read_iops: float
    write_iops: float
    read_resp_ms: float = float("nan")
    write_resp_ms: float = float("nan")
    read_aqueue: float = float("nan")
    write_aqueue: float = float("nan")

    @property
    def total(self) -> float:
        return self.read_iops + self.write_iops


@dataclass(frozen=True)
class LinearPrediction:
    """What the linear predictors say for one consolidation."""

    read_mix: float
    write_mix: float
    read_total: float
    write_total: float
    read_per_vm: tuple[float, ...]
    write_per_vm: tuple[float, ...]
    read_resp_ms: tuple[float, ...]
    write_resp_ms: tuple[float, ...]


def service_time_ms(resp_ms: float, aqueue: float) -> float:
    """Eq. 17: S = C / (1 + A)."""
    return resp_ms / (1.0 + aqueue)


def predict(vms: Sequence[IsolationStats]) -> LinearPrediction:
    """The linear predictions for consolidating ``vms`` (at least two)."""
    if len(vms) < 2:
        raise ValueError(f"a consolidation needs at least 2 VMs, got {len(vms)}")
    total = sum(v.total for v in vms)
    if total <= 0:
        raise ValueError("the VMs' isolation throughputs add up to 0")
    weights = [v.total / total for v in vms]
    read_mix = sum(w * v.read_iops / v.total for w, v in zip(weights, vms) if v.total > 0)
    write_mix = sum(w * v.write_iops / v.total for w, v in zip(weights, vms) if v.total > 0)
    read_per_vm = tuple(v.read_iops * w for v, w in zip(vms, weights))
    write_per_vm = tuple(v.write_iops * w for v, w in zip(vms, weights))

    def resp(kind: str) -> tuple[float, ...]:
        c = [getattr(v, f"{kind}_resp_ms") for v in vms]
        a = [getattr(v, f"{kind}_aqueue") for v in vms]
        s = [service_time_ms(ci, ai) for ci, ai in zip(c, a)]
        return tuple(c[i] + sum(s[j] * a[j] for j in range(len(vms)) if j != i) for i in range(len(vms)))

    return LinearPrediction(
        read_mix=read_mix,
        write_mix=write_mix,
        read_total=sum(read_per_vm),
        write_total=sum(write_per_vm),
        read_per_vm=read_per_vm,
        write_per_vm=write_per_vm,
        read_resp_ms=resp("read"),
        write_resp_ms=resp("write"),
    )


def rel_error(measured: float, predicted: float) -> float:
    """|measured - predicted| / measured."""
    return abs(measured - predicted) / measured

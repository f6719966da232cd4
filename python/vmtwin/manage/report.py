"""Run a management scenario under each of its policies and write what they did.

The output folder holds ``summary.json`` (per policy: end-to-end latency, mean over the seeds with
each seed's value, the batch it used or won, rounds, improvement over the first static policy),
``rounds.csv`` (every round of every policy and seed: tokens, tasks launched, start and end,
round and overall throughput, powered-on VMs) and ``report.html`` (plotly, one column per policy:
batch size per round, throughput per round, and the latencies side by side). It is written to a
temporary folder beside the destination and renamed into place, so an error leaves nothing behind.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from vmtwin.manage.policies import Policy, RunResult, optimal_static, run_stream, sweep_batches
from vmtwin.manage.scenario import ManageScenario


@dataclass
class PolicyOutcome:
    label: str
    kind: str
    batch: Optional[int]
    runs: list[RunResult]
    sweep: Optional[dict] = None

    @property
    def mean_latency_s(self) -> float:
        return float(np.mean([r.latency_s for r in self.runs]))


def run_scenario(sc: ManageScenario) -> list[PolicyOutcome]:
    """Every policy of ``sc`` on every seed (the optimal static sweep on the same seeds)."""
    outcomes = []
    for spec in sc.policies:
        if spec.kind == "optimal-static":
            n = len(sc.stream) if spec.max_batch is None else min(spec.max_batch, len(sc.stream))
            sw = optimal_static(sc.stream, sc.seeds, sc.params, sc.ops, batches=sweep_batches(n) if n < len(sc.stream)
                                else None)
            policy = Policy.static(sw.best_batch, label=spec.label)
            sweep = {"batches": list(sw.batches), "mean_latency_s": [round(v, 6) for v in sw.mean_latency_s],
                     "best_batch": sw.best_batch}
        elif spec.kind == "static":
            policy, sweep = Policy.static(spec.batch, label=spec.label), None
        elif spec.kind == "vatm":
            policy, sweep = Policy("vatm", vatm=spec.vatm, label=spec.label), None
        else:
            policy, sweep = Policy("unthrottled", label=spec.label), None
        runs = [run_stream(sc.stream, policy, sc.params, s, sc.ops) for s in sc.seeds]
        outcomes.append(PolicyOutcome(spec.label, spec.kind, policy.batch, runs, sweep))
    return outcomes


def summary(sc: ManageScenario, outcomes: list[PolicyOutcome]) -> dict:
    base = next((o for o in outcomes if o.kind == "static"), None)
    pols = []
    for o in outcomes:
        lat = [r.latency_s for r in o.runs]
        entry = {
            "policy": o.label, "kind": o.kind, "batch": o.batch,
            "latency_s": round(float(np.mean(lat)), 6), "latency_min": round(float(np.mean(lat)) / 60, 6),
            "latency_s_per_seed": [round(v, 6) for v in lat],
            "mean_response_s": round(float(np.mean([r.response_s.mean() for r in o.runs])), 6),
            "rounds": [len(r.rounds) for r in o.runs],
            "failed_tasks": [r.failed for r in o.runs],
            "batch_trace_first_seed": o.runs[0].batch_trace,
        }
        if base is not None:
            entry["improvement_over_" + base.label] = round(1 - o.mean_latency_s / base.mean_latency_s, 6)
        if o.sweep:
            entry["sweep"] = o.sweep
        pols.append(entry)
    return {"scenario": sc.name, "tasks": len(sc.stream), "seeds": list(sc.seeds),
            "operations": sorted(set(sc.stream.ops)), "policies": pols}


def rounds_csv(outcomes: list[PolicyOutcome]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["policy", "seed", "round", "tokens", "launched", "start_s", "end_s", "round_tasks_per_min",
                "overall_tasks_per_min", "powered_on_vms"])
    for o in outcomes:
        for r in o.runs:
            for rd in r.rounds:
                w.writerow([o.label, r.seed, rd.index, rd.tokens, rd.launched, f"{rd.start_s:.6f}", f"{rd.end_s:.6f}",
                            f"{rd.round_tpm:.6f}", f"{rd.overall_tpm:.6f}", rd.powered_on])
    return buf.getvalue()


def figure(sc: ManageScenario, outcomes: list[PolicyOutcome]):
    """Batch size and throughput per round (first seed), one column per policy; latencies beneath."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    n = len(outcomes)
    fig = make_subplots(rows=3, cols=n, shared_yaxes="rows", vertical_spacing=0.09,
                        specs=[[{}] * n, [{}] * n, [{"colspan": n}] + [None] * (n - 1)],
                        subplot_titles=[f"{o.label}: batch size" for o in outcomes]
                        + [f"{o.label}: throughput" for o in outcomes] + ["end-to-end latency (min)"])
    for c, o in enumerate(outcomes, start=1):
        r = o.runs[0]
        idx = [rd.index for rd in r.rounds]
        fig.add_trace(go.Scatter(x=idx, y=[rd.tokens for rd in r.rounds], mode="lines+markers",
                                 name=f"{o.label} tokens", showlegend=False), row=1, col=c)
        fig.add_trace(go.Scatter(x=idx, y=[rd.round_tpm for rd in r.rounds], mode="lines", name="round",
                                 line={"color": "#999"}, showlegend=c == 1, legendgroup="round"), row=2, col=c)
        fig.add_trace(go.Scatter(x=idx, y=[rd.overall_tpm for rd in r.rounds], mode="lines", name="overall",
                                 line={"color": "#d62728"}, showlegend=c == 1, legendgroup="overall"), row=2, col=c)
        fig.update_xaxes(title_text="round", row=2, col=c)
    fig.update_yaxes(title_text="tokens", row=1, col=1)
    fig.update_yaxes(title_text="tasks/min", row=2, col=1)
    lat = [np.array([r.latency_s for r in o.runs]) / 60 for o in outcomes]
    fig.add_trace(go.Bar(x=[o.label + (f" (batch {o.batch})" if o.batch else "") for o in outcomes],
                         y=[v.mean() for v in lat], error_y={"type": "data", "array": [v.std() for v in lat]},
                         name="latency", showlegend=False), row=3, col=1)
    fig.update_layout(title=f"{sc.name}: {len(sc.stream)} tasks, seeds {sc.seeds[0]}..{sc.seeds[-1]}",
                      height=900, width=max(900, 380 * n))
    return fig


def check_destination(out: Path, force: bool) -> None:
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not force)):
        raise FileExistsError(f"{out}: exists and is not an empty folder (use --force to replace it)")


def write_outputs(out: str | Path, sc: ManageScenario, outcomes: list[PolicyOutcome], force: bool = False) -> Path:
    """Write the three files into ``out`` atomically (temporary folder, then rename)."""
    out = Path(out)
    check_destination(out, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        (tmp / "summary.json").write_text(json.dumps(summary(sc, outcomes), indent=2) + "\n", encoding="utf-8")
        (tmp / "rounds.csv").write_text(rounds_csv(outcomes), encoding="utf-8")
        html = figure(sc, outcomes).to_html(full_html=True, include_plotlyjs=True, div_id="manage-plot")
        (tmp / "report.html").write_text(html, encoding="utf-8")
        if out.exists():
            old = out.with_name(f".{out.name}.old")
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


__all__ = ["PolicyOutcome", "figure", "rounds_csv", "run_scenario", "summary", "write_outputs"]

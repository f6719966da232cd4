"""Ground-truth evaluation of the AECE engine and the threshold stage (issue 10).

1. Synthetic data (vmtwin.analytics.synthetic): seeds 1 and 5 are the *calibration* seeds (the
   engine's defaults active_flow="active" and precedence_share=0.7 were chosen on them); seeds
   2-4 and 6-8 are the *validation* seeds, together well over 50 labelled outages in their test
   weeks. For each: top-1 and top-3 hit rates
   of the active-mode list beside the two baselines (earliest start, largest magnitude), on two
   entry points: events fed directly, and metrics -> dynamic thresholds -> events.
2. NAB (../shared/data/nab): detection rate and false alarms per labelled window of the
   threshold stage, for a small grid of band methods and k.
   The metric entry point runs twice: default bands (2.5/97.5 % quantiles) and robust bands
   (median +- 3 MAD, the best of a small grid on the calibration seed; events fed directly do not
   depend on it).
3. Log-normal lifetime fit: KS statistic of the events the thresholds open on NAB.
4. Wall time of fitting the engine on one synthetic training period.

Prints a summary and appends one JSON line to benchmarks/results.jsonl.
Run: .venv/bin/python benchmarks/bench_analytics.py
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NAB = REPO.parent / "shared" / "data" / "nab"

CALIBRATION_SEEDS = (1, 5)
VALIDATION_SEEDS = (2, 3, 4, 6, 7, 8)


def synthetic(seeds, bands=None, **engine):
    from vmtwin.analytics.engine import AeceParams, fit
    from vmtwin.analytics.evaluate import METHODS, hit_rates
    from vmtwin.analytics.synthetic import SyntheticSpec, generate, render_metrics
    from vmtwin.analytics.thresholds import events_from_metrics

    out = {}
    for entry in ("events", "metrics"):
        n, t1, t3, miss = 0, dict.fromkeys(METHODS, 0.0), dict.fromkeys(METHODS, 0.0), dict.fromkeys(METHODS, 0)
        for seed in seeds:
            syn = generate(SyntheticSpec(seed=seed))
            events = syn.events if entry == "events" else events_from_metrics(render_metrics(syn), syn.t0, syn.t_split, bands)
            model = fit(events, syn.t0, syn.t_split, AeceParams(**engine))
            test = [o for o in syn.outages if o.time >= syn.t_split]
            h = hit_rates(model, events, test)
            n += h.outages
            for m in METHODS:
                t1[m] += h.top1[m] * h.outages
                t3[m] += h.top3[m] * h.outages
                miss[m] += h.missing[m]
        out[entry] = {"outages": n, "top1": {m: round(v / n, 3) for m, v in t1.items()},
                      "top3": {m: round(v / n, 3) for m, v in t3.items()}, "root_not_active": miss["start"]}
    return out


def nab_grid():
    from vmtwin.analytics.nab import evaluate
    from vmtwin.analytics.thresholds import QuantileBands, RobustBands

    rows = []
    for label, method in (("quantile 2.5/97.5 hour_of_day", QuantileBands()),
                          ("quantile 0.5/99.5 hour_of_day", QuantileBands(low_q=0.005, high_q=0.995)),
                          ("robust median+-4MAD hour_of_day", RobustBands())):
        for k in (2, 3, 6):
            s = evaluate(NAB, method, k)
            w = sum(x.windows for x in s)
            d = sum(x.detected for x in s)
            fa = sum(x.false_alarms for x in s)
            rows.append({"bands": label, "k": k, "windows": w, "detected": d, "detection_rate": round(d / w, 3),
                         "false_alarms": fa, "false_alarms_per_window": round(fa / w, 2)})
    return rows


def nab_lifetimes_ks():
    import numpy as np

    from vmtwin.analytics.lifetimes import fit_lognormal, ks_statistic
    from vmtwin.analytics.nab import PROBATIONARY_SHARE, load_series, load_windows
    from vmtwin.analytics.thresholds import detect, learn_band

    out = {}
    for name in load_windows(NAB):
        t, v = load_series(NAB, name)
        split = t[0] + PROBATIONARY_SHARE * (t[-1] - t[0])
        events = detect(t, v, learn_band(t, v, t[0], split), name, "value", 2, since=split)
        life = [e.lifetime for e in events if e.lifetime]
        law = fit_lognormal(life)
        if law is not None and len(life) >= 20:
            out[name] = {"n": len(life), "ks": round(ks_statistic(life, law), 3)}
    return out, round(float(np.median([x["ks"] for x in out.values()])), 3)


def fit_time():
    from vmtwin.analytics.engine import fit
    from vmtwin.analytics.synthetic import SyntheticSpec, generate

    syn = generate(SyntheticSpec(seed=2))
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        fit(syn.events, syn.t0, syn.t_split)
        best = min(best, time.perf_counter() - t)
    return {"events": sum(syn.t0 <= e.start < syn.t_split for e in syn.events), "fit_s": round(best, 3)}


def main() -> int:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    record = {"benchmark": "analytics", "commit": commit, "machine": platform.machine(),
              "python": platform.python_version()}
    record["calibration"] = synthetic(CALIBRATION_SEEDS)
    record["validation"] = synthetic(VALIDATION_SEEDS)
    record["validation_active_flow_all"] = synthetic(VALIDATION_SEEDS, active_flow="all")
    record["validation_literal"] = synthetic(VALIDATION_SEEDS, active_flow="all", precedence_share=0.0)
    # the metric entry point with robust bands (median +- 3 MAD): the best band setting on seed 1
    from vmtwin.analytics.thresholds import RobustBands

    record["calibration_robust3"] = synthetic(CALIBRATION_SEEDS, RobustBands(k=3.0))
    record["validation_robust3"] = synthetic(VALIDATION_SEEDS, RobustBands(k=3.0))
    record["nab"] = nab_grid()
    record["nab_lifetime_ks"], record["nab_lifetime_ks_median"] = nab_lifetimes_ks()
    record["fit"] = fit_time()
    for key in ("calibration", "validation", "validation_active_flow_all", "validation_literal", "calibration_robust3",
                "validation_robust3"):
        for entry, r in record[key].items():
            print(f"{key:28s} {entry:8s} outages={r['outages']:3d} top1 {r['top1']} top3 {r['top3']} "
                  f"root not active: {r['root_not_active']}")
    for r in record["nab"]:
        print(f"NAB {r['bands']:34s} k={r['k']}: detected {r['detected']}/{r['windows']} "
              f"({r['detection_rate']:.2f}), false alarms {r['false_alarms']} ({r['false_alarms_per_window']}/window)")
    print(f"NAB event lifetimes, log-normal KS statistic: median {record['nab_lifetime_ks_median']} "
          f"over {len(record['nab_lifetime_ks'])} series")
    print(f"fit: {record['fit']['events']} training events in {record['fit']['fit_s']} s")
    with open(REPO / "benchmarks" / "results.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(record, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

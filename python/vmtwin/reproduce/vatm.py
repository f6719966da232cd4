"""vATM (VMware Technical Journal 2013; research/management.md paper 1): Table 1, the boot-storm
hill (Fig. 1) and the batch-size trends of Fig. 4, on the vCenter model of :mod:`vmtwin.manage`.

Which published points set the model and which are predictions:

- *calibration* (docs/manage.md, "Calibration"): the three naive static latencies (2.45, 1.70,
  11.99 min) set each operation's unloaded latency; the three optimal static latencies (1.56, 1.35,
  4.67 min) set each operation's serialised cluster cost. Their rows are marked "calibration" in
  the note: a pass there shows the calibration holds on these seeds, not that the model predicts;
- *predictions*: everything about vATM: its three latencies, the 32/18/54% improvements, both forms
  of its gap to optimal static, and the trends; and the optimal static batch sizes;
- the boot-storm peak at 200 comes from a set-up the paper does not describe (Fig. 1); it is
  reported against the Table-1 cluster's own boot-storm hill, a prediction that misses.

Every number is a mean over :data:`SEEDS` seeds (the paper reports single runs); the optimal static
batch is swept on the same seeds. vATM runs as reconstructed (paper rule, overall throughput).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from vmtwin.manage import Policy, TaskStream, VatmConfig, VcenterParams, optimal_static, paper_workload, run_stream
from vmtwin.manage.workloads import PAPER_WORKLOADS
from vmtwin.reproduce.base import Experiment, Row

SEEDS = tuple(range(1, 11))
LATENCY_REL_TOL = 0.10      # a latency within 10% of the printed one
IMPROVEMENT_TOL_PP = 5.0    # improvements over naive, percentage points
GAP_TOL_PP = 3.0            # the paper's gap (difference of rounded improvements), points
RATIO_TOL_PP = 5.0          # vATM latency over optimal, minus 1, percent
TREND_TOL = 0.5             # a trend holds if it shows in at least half the seeds

# Table 1 (minutes): naive static, optimal static, vATM; and the printed improvements and gaps.
TABLE1 = {"reconfigure_memory": (2.45, 1.56, 1.67), "power_on": (1.70, 1.35, 1.39), "mixed": (11.99, 4.67, 5.47)}
PAPER_NAME = {"reconfigure_memory": "reconfigRAM", "power_on": "powerOn", "mixed": "mixed"}
IMPROVEMENT_PCT = {"reconfigure_memory": 32, "power_on": 18, "mixed": 54}
GAP_PP = {"reconfigure_memory": 4, "power_on": 3, "mixed": 7}
BOOTSTORM_PEAK = 200
BOOTSTORM_BATCHES = (5, 10, 20, 35, 50, 75, 100, 125, 150, 175, 200, 225, 250, 275, 300)


@lru_cache(maxsize=None)
def _workload(name: str) -> dict:
    """Naive, optimal static and vATM runs of one paper workload on :data:`SEEDS` (cached per process)."""
    stream = paper_workload(name)
    naive_batch = PAPER_WORKLOADS[name][2]
    params = VcenterParams()
    naive = [run_stream(stream, Policy.static(naive_batch), params, s) for s in SEEDS]
    sweep = optimal_static(stream, SEEDS, params)
    cfg = VatmConfig(t_min=naive_batch)
    vatm = [run_stream(stream, Policy("vatm", vatm=cfg), params, s) for s in SEEDS]
    patent = [run_stream(stream, Policy("vatm", vatm=VatmConfig(t_min=naive_batch, rule="patent")), params, s)
              for s in SEEDS]
    return {"naive": naive, "sweep": sweep, "vatm": vatm, "patent": patent}


def _floor_trapped(trace: list[int], rounds: int = 5) -> bool:
    """The batch stuck at the floor: ``rounds`` rounds in a row at 1 or 2 tokens (docs/manage.md)."""
    run = 0
    for t in trace:
        run = run + 1 if t <= 2 else 0
        if run >= rounds:
            return True
    return False


def _mean_min(runs) -> float:
    return float(np.mean([r.latency_s for r in runs])) / 60.0


def table1() -> list[Row]:
    rows = []
    for name, (pub_naive, pub_opt, pub_vatm) in TABLE1.items():
        w = _workload(name)
        naive, opt, vatm = _mean_min(w["naive"]), w["sweep"].best_latency_s / 60.0, _mean_min(w["vatm"])
        paper = PAPER_NAME[name]
        rows += [
            Row("vatm-table1", f"{paper}: naive static latency (min)", pub_naive, naive, LATENCY_REL_TOL * pub_naive,
                series=paper, source="published",
                note=f"calibration point (sets the operation's unloaded latency); batch {PAPER_WORKLOADS[name][2]}"),
            Row("vatm-table1", f"{paper}: optimal static latency (min)", pub_opt, opt, LATENCY_REL_TOL * pub_opt,
                series=paper, source="published",
                note=f"calibration point (sets the operation's cluster cost); the sweep's best batch: "
                     f"{w['sweep'].best_batch} (prediction; the paper does not print its batch)"),
            Row("vatm-table1", f"{paper}: vATM latency (min)", pub_vatm, vatm, LATENCY_REL_TOL * pub_vatm,
                series=paper, source="published",
                note=f"prediction; t_min {PAPER_WORKLOADS[name][2]}, paper rule, overall throughput; median over "
                     f"seeds {np.median([r.latency_s for r in w['vatm']]) / 60:.2f} min; seeds caught at the floor "
                     f"(5 rounds in a row at <= 2 tokens): {sum(_floor_trapped(r.batch_trace) for r in w['vatm'])} "
                     f"of {len(SEEDS)}"),
            Row("vatm-table1", f"{paper}: vATM latency, patent rule (min)", pub_vatm, _mean_min(w["patent"]),
                LATENCY_REL_TOL * pub_vatm, judged=False, series=paper, source="published",
                note="ablation, not judged: the patent's mean-of-last-two rule when throughput falls"),
        ]
        imp = 100.0 * (1.0 - vatm / naive)
        opt_imp = 100.0 * (1.0 - opt / naive)
        rows += [
            Row("vatm-table1", f"{paper}: vATM improvement over naive (%)", IMPROVEMENT_PCT[name], imp,
                IMPROVEMENT_TOL_PP, series=paper, source="published", note="prediction; (naive - vATM) / naive"),
            Row("vatm-table1", f"{paper}: optimal outperforms vATM by (points)", GAP_PP[name], opt_imp - imp,
                GAP_TOL_PP, series=paper, source="published",
                note="prediction; the paper's form: improvement of optimal over naive minus vATM's (percentage "
                     "points; the printed 4/3/7 are differences of rounded improvements, research/management.md 1B)"),
            Row("vatm-table1", f"{paper}: vATM slower than optimal (%)", 100.0 * (pub_vatm / pub_opt - 1.0),
                100.0 * (vatm / opt - 1.0), RATIO_TOL_PP, series=paper, source="derived",
                note=f"prediction; not printed: Table 1's {pub_vatm} / {pub_opt} - 1, the gap as a latency ratio"),
        ]
    return rows


def _bootstorm_throughput(params: VcenterParams) -> dict[int, float]:
    """Tasks/min of one batch of B power-ons from the Table-1 cluster's state (Fig. 1's measure)."""
    out = {}
    for b in BOOTSTORM_BATCHES:
        stream = TaskStream("bootstorm", (0.0,) * b, ("power_on",) * b)
        out[b] = float(np.mean([60.0 * b / run_stream(stream, Policy.static(b), params, s).latency_s for s in SEEDS]))
    return out


def bootstorm() -> list[Row]:
    x = _bootstorm_throughput(VcenterParams())
    best = max(x, key=x.get)
    interior = float(BOOTSTORM_BATCHES[0] < best < BOOTSTORM_BATCHES[-1] and x[BOOTSTORM_BATCHES[-1]] < x[best])
    return [
        Row("vatm-bootstorm", "boot storm: batch size of the maximum throughput", BOOTSTORM_PEAK, best, 50,
            source="published",
            note='prediction, misses: "The ideal batch size that maximized throughput ... was powering on 200 VMs" '
                 "(Fig. 1, a set-up the paper does not describe). On the Table-1 cluster the hill's rise ends "
                 "within tens of tasks: Table 1's power-on rows allow at most a 25% gain over batch 5 "
                 f"(118 -> 148 tasks/min), and the model's top is flat ({x[best]:.0f} tasks/min at {best}, "
                 f"{x[200]:.0f} at 200, {x[BOOTSTORM_BATCHES[-1]]:.0f} at {BOOTSTORM_BATCHES[-1]}). The hill, "
                 "tasks/min by batch: " + ", ".join(f"{b}: {v:.0f}" for b, v in x.items())),
        Row("vatm-bootstorm", "boot storm: throughput rises then falls (1 = yes)", 1.0, interior, 0.0,
            source="derived", note='not a number in the paper: "throughput of the system hit a maxima after a '
                                   'certain batch size ... beyond a certain number, throughput ... dropped" (Sec. 1)'),
    ]


def _share(flags) -> float:
    return float(np.mean([bool(f) for f in flags]))


def _local_maxima(trace: list[int]) -> int:
    return sum(1 for i in range(1, len(trace) - 1) if trace[i - 1] < trace[i] > trace[i + 1])


def trends() -> list[Row]:
    rows = []
    for name, first in (("reconfigure_memory", 10), ("power_on", 5), ("mixed", 4)):
        traces = [r.batch_trace for r in _workload(name)["vatm"]]
        paper = PAPER_NAME[name]
        rows.append(Row("vatm-trends", f"{paper}: vATM rounds 1 and 2 (tokens, seeds agreeing)", 1.0,
                        _share(t[:2] == [first, 2 * first] for t in traces), 0.0, source="derived",
                        note=f'Fig. 4: "{first} ... in the first round, and {2 * first} ... in the second" (t_min, '
                             "2 t_min): share of seeds whose trace starts so; checks the wiring of the law"))
    ram = [r.batch_trace for r in _workload("reconfigure_memory")["vatm"]]
    rows.append(Row("vatm-trends", "reconfigRAM: vATM batch falls early, then rises (share of seeds)", 1.0,
                    _share(min(t[2:8], default=t[1]) < t[1] and max(t[len(t) // 2:], default=0) > min(t[2:8])
                           for t in ram), TREND_TOL, source="derived",
                    note='Fig. 4(b): "first decreasing the batch size ... then increasing" - a round among 3-8 '
                         "below round 2's size, and a later size above that dip"))
    pon = [r.batch_trace for r in _workload("power_on")["vatm"]]
    rows.append(Row("vatm-trends", "powerOn: vATM batch falls in round 3 (share of seeds)", 1.0,
                    _share(len(t) > 2 and t[2] < t[1] for t in pon), TREND_TOL, source="derived",
                    note='Fig. 4(d): "decreases the batch size in the third round"'))
    rows.append(Row("vatm-trends", "powerOn: vATM batch drops late from its maximum (share of seeds)", 1.0,
                    _share(max(t[-max(2, len(t) // 4):]) <= 0.8 * max(t) for t in pon), TREND_TOL, source="derived",
                    note='Fig. 4(d): "adapts to the changing background load by dynamically dropping the token '
                         'value" - the last quarter of rounds at most 80% of the run\'s largest batch'))
    mix = [r.batch_trace for r in _workload("mixed")["vatm"]]
    rows.append(Row("vatm-trends", "mixed: two local maxima early, then growth (share of seeds)", 1.0,
                    _share(_local_maxima(t[:12]) >= 2 and np.mean(t[-len(t) // 3:]) > np.mean(t[:len(t) // 3])
                           for t in mix), TREND_TOL, source="derived",
                    note='Fig. 4(f): "hits two local maxima in the beginning several rounds, and then gradually '
                         'increases" - two local maxima within 12 rounds, later rounds larger than early ones'))
    for name in TABLE1:
        w = _workload(name)
        naive, opt, vatm = _mean_min(w["naive"]), w["sweep"].best_latency_s / 60.0, _mean_min(w["vatm"])
        rows.append(Row("vatm-trends", f"{PAPER_NAME[name]}: optimal <= vATM < naive (1 = yes)", 1.0,
                        float(opt <= vatm < naive), 0.0, source="derived",
                        note=f"Table 1's ordering; means over {len(SEEDS)} seeds: optimal {opt:.2f}, vATM {vatm:.2f}, "
                             f"naive {naive:.2f} min"))
    return rows


VATM_EXPERIMENTS = [
    Experiment("vatm-table1", "vATM Table 1: end-to-end latency, naive static vs optimal static vs vATM",
               "vATM Sec. 4.2 Table 1", table1, "", "minutes / percent"),
    Experiment("vatm-bootstorm", "vATM Fig. 1: boot-storm throughput against batch size",
               "vATM Sec. 1 Fig. 1", bootstorm, "batch size (power-ons)", "tasks/min"),
    Experiment("vatm-trends", "vATM Fig. 4: batch-size traces and Table 1's ordering",
               "vATM Sec. 4.2 Fig. 4", trends, "", "share of seeds"),
]

__all__ = ["SEEDS", "VATM_EXPERIMENTS", "bootstorm", "table1", "trends"]

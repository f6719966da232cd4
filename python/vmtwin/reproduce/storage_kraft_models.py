"""Kraft et al.'s two models applied to the engine's own runs, as the paper applies them to its
testbed: the inputs are measured on simulated isolation runs through the per-request log
(``log_requests``, the ``io_log`` table: what blktrace records in a guest), the predictions are
judged against simulated consolidation runs, and the paper's errors stand beside them.

``storage-kraft-homogeneous`` (research/storage.md B1.7 Table 6's Δω, B1.8 Table 7): for each
Postmark/FFSB workload, the engine's *closed* Kraft setting (``storage_kraft.scenario(...,
closed=True)``: each VM keeps Table 2's round(N_iso) requests in flight on 15 exponential servers,
the spindles of [K] §3, whose mean service is Table 4's isolation response time; the setting the
Little's-law rows of ``storage-kraft-consolidation`` point to) runs alone ``REPOSITORY``
times with different seeds: the trace repository of [K] §4.2.1. From each logged isolation run:
the arrival trace (issue times, sizes in 4 kB blocks) and N_iso (time-averaged requests
outstanding, C1.12); service times come from one MAP(2) fitted to the repository's pooled response
times (``service_sampler.Map2``, C1.8; every VM runs the same workload). Then for Con 2 and Con 3:

- ω is *calibrated* by Algorithm 2 against N_exp = Σ N_iso (eq. 7), C1.7's settings except the
  runs per iteration (``MODEL_RUNS``, not 20) and the trace length (``MODEL_RUN_S``, not 300 s),
  both to keep the reproduction near a minute;
- the model *predicts* each VM's mean response time at that ω (mean over ``MODEL_RUNS`` runs,
  each drawing one repository trace per VM);
- Δω (eq. 13) is the mean relative error of those predictions against the engine's Con K runs
  (the logged guest response times, done - issue), beside Table 6's Δω; Ψ (eq. 12) of the Con 2
  draws beside Table 7's; ω beside Table 7's (not judged per cell: C1.6 makes the exact ω depend
  on how N_sim is counted; judged: ω(Con 3) > ω(Con 2) for every workload, and Postmark's "ω of
  approximately 2.5 and 4.5", both printed in [K] §5.3).

``storage-kraft-decomposition`` (B1.1 Fig. 2, B1.11-B1.16 Tables 10-15): FileBench-like file, web
and mail servers (the ``filebench`` presets: batch customers with Table 11's mean batch sizes and
think times and §7's read mixes) on one LUN that is what the decomposition model assumes (§6.2.3:
FCFS at the disk), one exponential server whose mean service is ``DECOMP_SERVICE_MS``, derived
from Table 11 (the mean over the three workloads of C̄ / (1 + Ā), eq. 17). Calibration, one
number per workload: the number of batch customers whose isolation throughput comes closest to
Table 10's VM-level throughput (the population Algorithm 3 also searches for, here in the
engine, not in the model). Everything else is a prediction:

- isolation rows against Tables 10 and 11 (read response time, arrival queue);
- Fig. 2: Web+Mail read response-time increases over isolation (+170 % and +71 %);
- for each of Table 12's eight mixes, the linear predictors (eqs. 14-19, ``kraft_linear``) fed
  the engine's logged isolation runs, judged against the engine's consolidated runs: their errors
  beside Tables 13 (mix), 14 (total and per-VM throughputs) and 15 (linear read and write response
  times); and the decomposition simulation (``kraft_decomposition``, Algorithm 3, parameters by
  eqs. 21-23 from the logged isolation runs) beside Table 15's simulation columns;
- the engine's consolidated throughputs and response times beside Table 12's measured ones;
- Fig. 13 (b): the simulation's relative error on web reads' 90th percentile (the paper's 0.0755 s
  measured vs 0.0726 s simulated; its mix is not named, Web+Mail is used).
"""

from __future__ import annotations

import numpy as np

from vmtwin.reproduce.base import Experiment, Row
from vmtwin.reproduce.storage_kraft import LABEL, WORKLOADS, scenario as kraft_scenario

#: Isolation runs per workload: the trace repository (chosen; Kraft's holds 15 runs, [K] §5.1).
REPOSITORY = 3
#: Simulated seconds of each engine run here (chosen: Kraft's runs are 300 s; 30 s keeps the
#: Python model runs of Algorithm 2 under a second each for Postmark's 40,000 requests per VM).
MODEL_RUN_S = 30
#: Model runs per Algorithm 2 iteration and per prediction (chosen: C1.7 recommends 20).
MODEL_RUNS = 3
#: Table 6: Δω, the homogeneous simulation's error, (Con 2, Con 3).
TABLE6_DW = {"pm-1": (0.13, 0.09), "pm-2": (0.08, 0.06), "ffsb-1s": (0.03, 0.02), "ffsb-1r": (0.03, 0.30),
             "ffsb-2s": (0.09, 0.04), "ffsb-2r": (0.16, 0.15)}
#: Table 7: Ψ (Con 2), ω Con 2, ω Con 3.
TABLE7 = {"pm-1": (1.01, 2.55, 4.7), "pm-2": (1.02, 2.43, 4.35), "ffsb-1s": (1.56, 2.0, 2.9),
          "ffsb-1r": (1.54, 2.0, 3.9), "ffsb-2s": (1.83, 2.2, 3.075), "ffsb-2r": (1.64, 1.9, 2.575)}
#: [K] §5.3: Postmark's "ω of approximately 2.5 and 4.5 for Con 2 and Con 3".
PM_OMEGA_TEXT = (2.5, 4.5)
#: Tolerances (chosen): a model error within this (absolute) of the paper's; Ψ within this;
#: Postmark's ω within this of the text's approximate values.
ERROR_TOL = 0.10
PSI_TOL = 0.10
OMEGA_TOL = 1.0
#: Size of the model's blocks, bytes: "block" is a 4 kB logical block ([K] §3).
BLOCK_BYTES = 4096


def logged_run(doc: dict, seconds: int = MODEL_RUN_S) -> list:
    """Run ``doc`` for ``seconds`` with every VM disk logged; per disk (in disk order) its
    requests as a DataFrame sorted by issue time."""
    from vmtwin.simulation import Simulation

    doc = dict(doc)
    doc["duration"] = f"{seconds}s"
    doc["sample_interval"] = f"{seconds}s"
    doc["storage"] = dict(doc["storage"])
    doc["storage"]["disks"] = [dict(d, log_requests=True) for d in doc["storage"]["disks"]]
    sim = Simulation(doc)
    sim.run()
    log = sim.tables()["io_log"].to_pandas()
    return [g.sort_values(["issue_ns", "done_ns"], kind="stable").reset_index(drop=True)
            for _, g in log.groupby("disk_id", sort=True)]


def _trace(req):
    """One logged disk's requests as the homogeneous model's arrival trace, with its response
    times (s) and its N_iso."""
    from vmtwin.models.isolation import mean_in_system
    from vmtwin.models.kraft_sfqd import Trace

    issue = req["issue_ns"].to_numpy(float) / 1e9
    done = req["done_ns"].to_numpy(float) / 1e9
    blocks = np.maximum(1, np.ceil(req["bytes"].to_numpy(float) / BLOCK_BYTES)).astype(int)
    return Trace(issue - issue.min(), blocks), done - issue, mean_in_system(issue, done)


def _mean_resp_ms(req) -> float:
    return float(((req["done_ns"] - req["issue_ns"]) / 1e6).mean())


def homogeneous(workload: str) -> dict:
    """The homogeneous model on the engine's closed Kraft setting for one workload. Every VM
    runs the same workload, so each VM's repository is the whole repository, and one MAP(2) is
    fitted to the repository's pooled isolation response times (Kraft fits one per VM, §4.2.2)."""
    from vmtwin.models.kraft_sfqd import calibrate_merge, simulate
    from vmtwin.models.service_sampler import Map2

    repo = [_trace(logged_run(kraft_scenario(workload, 1, seed=s, closed=True))[0]) for s in range(1, REPOSITORY + 1)]
    traces = [r[0] for r in repo]
    sampler = Map2.fit(np.concatenate([r[1] for r in repo])).sample
    n_iso = float(np.mean([r[2] for r in repo]))
    out: dict = {"n_iso": n_iso}
    for k in (2, 3):
        measured = [_mean_resp_ms(r) for r in logged_run(kraft_scenario(workload, k, seed=100 + k, closed=True))]
        cal = calibrate_merge([traces] * k, [sampler] * k, k * n_iso, seed=7, runs=MODEL_RUNS)
        runs = []
        for r in range(MODEL_RUNS):
            rng = np.random.default_rng([8, k, r])
            picks = [traces[int(rng.integers(len(traces)))] for _ in range(k)]
            runs.append(simulate(picks, [sampler] * k, rng, omega=cal.omega))
        predicted = np.mean([x.mean_resp for x in runs], axis=0) * 1e3
        d_omega = float(np.mean([abs(m - p) / m for m, p in zip(measured, predicted)]))
        out[k] = {"omega": cal.omega, "converged": cal.converged, "cal_error": cal.error, "note": cal.note,
                  "psi": float(np.mean([x.splitting_ratio for x in runs])), "measured": measured,
                  "predicted": [float(p) for p in predicted], "d_omega": d_omega}
    return out


def _homogeneous_rows() -> list[Row]:
    exp = "storage-kraft-homogeneous"
    rows: list[Row] = []
    omegas = {}
    for w in WORKLOADS:
        name = LABEL[w]
        h = homogeneous(w)
        for k in (2, 3):
            r = h[k]
            omegas[(w, k)] = r["omega"]
            cal = (f"ω = {r['omega']:.3g} by Algorithm 2 against N_exp = {k} x {h['n_iso']:.2f} (engine N_iso)"
                   + ("" if r["converged"] else f", not converged ({r['note']}, error {r['cal_error']:.2f})"))
            rows.append(Row(exp, f"{name}: Δω, Con {k} (prediction)", TABLE6_DW[w][k - 2], r["d_omega"], ERROR_TOL,
                            x=k, series=name, source="published",
                            note=f"Table 6 (model against the testbed); engine: the model fed the engine's logged isolation "
                                 f"runs, {cal}, against the engine's Con {k} (measured "
                                 + ", ".join(f"{m:.1f}" for m in r["measured"]) + " ms, predicted "
                                 + ", ".join(f"{p:.1f}" for p in r["predicted"]) + " ms)"))
            rows.append(Row(exp, f"{name}: ω, Con {k} (calibration)", TABLE7[w][k - 1], r["omega"], 0.0, judged=False,
                            x=k, series=name, source="published",
                            note="Table 7; not judged per cell: the exact ω depends on how N_sim is counted (C1.6); "
                                 "the trend rows below are judged"))
        rows.append(Row(exp, f"{name}: splitting ratio Ψ, Con 2 (prediction)", TABLE7[w][0], h[2]["psi"], PSI_TOL, x=2,
                        series=name, source="published",
                        note="Table 7; engine: requests over 512 kB (128 blocks) split by eqs. 3-5 in the engine's "
                             "traces, whose sizes are the preset's chosen block size (storage.KRAFT_PRESETS)"))
    rising = sum(omegas[(w, 3)] > omegas[(w, 2)] for w in WORKLOADS)
    rows.append(Row(exp, "workloads with ω(Con 3) > ω(Con 2)", float(len(WORKLOADS)), float(rising), 0.0,
                    series="trend", source="derived",
                    note="Table 7: every workload's ω grows from Con 2 to Con 3 ([K] §5.3: more queueing, more merging)"))
    for k, target in ((2, PM_OMEGA_TEXT[0]), (3, PM_OMEGA_TEXT[1])):
        got = float(np.mean([omegas[("pm-1", k)], omegas[("pm-2", k)]]))
        rows.append(Row(exp, f"Postmark mean ω, Con {k} (calibration)", target, got, OMEGA_TOL, x=k, series="trend",
                        source="published", note="[K] §5.3: 'ω of approximately 2.5 and 4.5 for Con 2 and Con 3'"))
    return rows


STORAGE_KRAFT_MODEL_EXPERIMENTS = [
    Experiment("storage-kraft-homogeneous",
               "Kraft's homogeneous SFQ(D) model fed the engine's logged isolation runs (Table 6 Δω, Table 7)",
               "Kraft et al. 2013 §4-5, research/storage.md B1.7, B1.8", _homogeneous_rows,
               x_label="VMs consolidated", y_label="model error, ω, Ψ"),
]


# --------------------------------------------------------------------------------------------
# The decomposition model (§6-7) on the engine: FileBench-like file, web and mail servers
# --------------------------------------------------------------------------------------------

from vmtwin.models import kraft_tables as KT  # noqa: E402 - the decomposition half's inputs

#: Table 11's read statistics in isolation: (mean response ms, mean arrival queue).
_T11 = {w: (KT.TABLE11[w]["resp_ms"], KT.TABLE11[w]["aqueue"]) for w in ("file", "mail", "web")}
#: The LUN's mean service time, ms: derived from Table 11 by eq. 17, S = C̄ / (1 + Ā), averaged
#: over file (1.88), mail (1.90) and web (1.26): one FCFS server, as §6.2.3 assumes the disk is.
DECOMP_SERVICE_MS = float(np.mean([c / (1.0 + a) for c, a in _T11.values()]))
#: Simulated seconds of each decomposition engine run (chosen; Kraft's runs are 300 s).
DECOMP_RUN_S = 60
#: Batch customers tried when calibrating a workload's population on Table 10 (chosen range).
DECOMP_USERS = range(1, 41)
#: Horizon of each decomposition-simulation run in Algorithm 3, s (chosen, to keep it short).
DECOMP_SIM_S = 20.0
#: Table 15, linear write Δ_W per VM and simulation read Δ_R per VM (B1.16).
TABLE15_LIN_W = {"File+Mail": (0.10, 0.07), "Web+File": (0.16, 0.50), "Web+Mail": (0.20, 0.30),
                 "Mail+Web+Mail": (0.10, 0.03, 0.14), "Mail+Web+Web": (0.07, 0.27, 0.11),
                 "Web+Web+File": (0.09, 0.05, 0.002), "Web+File+File": (0.21, 0.24, 0.21),
                 "Mail+Mail+File": (0.36, 0.38, 0.27)}
TABLE15_SIM_R = {"File+Mail": (0.17, 0.10), "Web+File": (0.09, 0.25), "Web+Mail": (0.11, 0.49),
                 "Mail+Web+Mail": (0.06, 0.21, 0.04), "Mail+Web+Web": (0.14, 0.26, 0.19),
                 "Web+Web+File": (0.29, 0.37, 0.21), "Web+File+File": (0.33, 0.25, 0.26),
                 "Mail+Mail+File": (0.12, 0.16, 0.06)}
#: Fig. 13 (b): the simulation's relative error on web reads' 90th percentile, 0.0755 s
#: measured vs 0.0726 s simulated (B1.18), derived.
FIG13_P90_ERROR = abs(0.0755 - 0.0726) / 0.0755
#: Fig. 2 ([K] §1): "mean response time increases of roughly 170% and 71% for web and mail".
FIG2_INCREASE = {"web": 170.0, "mail": 71.0}
#: Tolerances (chosen): a throughput or response time within this relative error of the paper's;
#: a Fig. 2 increase within this fraction of the paper's.
DECOMP_REL_TOL = 0.25
FIG2_REL_TOL = 0.5


def decomp_scenario(workloads, users: dict, seed: int = 1) -> dict:
    """The VMs of a mix (or one alone), each a FileBench-like preset with ``users[w]`` batch
    customers and a 50 GB disk of its own on the LUN (one after the other, [K] §3), on one
    exponential server of mean ``DECOMP_SERVICE_MS`` behind DQLEN 32."""
    vms = [{"name": f"vm{i + 1}", "workload": {"type": "idle"}} for i in range(len(workloads))]
    disks = [{"vm": f"vm{i + 1}", "datastore": "lun", "size": "50GB", "offset": f"{50 * i}GB",
              "workload": {"type": "filebench", "preset": w, "users": users[w]}} for i, w in enumerate(workloads)]
    return {"name": "kraft-filebench", "seed": seed, "duration": f"{DECOMP_RUN_S}s",
            "sample_interval": f"{DECOMP_RUN_S}s", "host": {"cores_per_llc": 4, "core_mhz": "2210MHz", "memory": "68GB"},
            "vms": vms,
            "storage": {"adapters": [{"name": "vmhba33"}],
                        "datastores": [{"name": "lun", "dqlen": 32, "paths": [{"adapter": "vmhba33"}],
                                        "device": {"type": "exponential", "servers": 1,
                                                   "mean_service": f"{round(DECOMP_SERVICE_MS * 1000)}us"}}],
                        "disks": disks}}


def _stats(req, name: str):
    """Isolation statistics (throughputs, read/write response times and arrival queues) of one
    logged disk, as ``models.isolation.stats_from_trace`` computes them from blktrace."""
    from vmtwin.models.isolation import stats_from_trace

    rec = {"issue": req["issue_ns"].to_numpy(float) / 1e9, "complete": req["done_ns"].to_numpy(float) / 1e9,
           "is_read": req["read"].to_numpy() == 1}
    return stats_from_trace(name, rec)[0]


def _class_params(req):
    """The decomposition simulation's read parameters of one logged isolation disk (eqs. 21-23)."""
    from vmtwin.models.isolation import arrival_queue
    from vmtwin.models.kraft_decomposition import ClassParams, detect_batches, service_by_queue, think_times

    rd = req[req["read"] == 1]
    iss = rd["issue_ns"].to_numpy(float) / 1e9
    done = rd["done_ns"].to_numpy(float) / 1e9
    batches = detect_batches(iss)
    z, _ = think_times(iss, done, batches)
    d_a = service_by_queue(done - iss, arrival_queue(iss, done))
    return ClassParams(tuple(int(len(b)) for b in batches), tuple(float(x) for x in z), tuple(d_a))


def calibrate_users() -> dict:
    """Per workload, the batch-customer count whose isolation throughput on the engine comes
    closest to Table 10's VM-level throughput (reads + writes): the one calibrated number."""
    out = {}
    for w in ("file", "mail", "web"):
        target = sum(KT.TABLE10_VM[w])
        best = None
        for u in DECOMP_USERS:
            x = len(logged_run(decomp_scenario([w], {w: u}), DECOMP_RUN_S)[0]) / DECOMP_RUN_S
            if best is None or abs(x - target) < abs(best[1] - target):
                best = (u, x)
            if x > target:
                break
        out[w] = best[0]
    return out


def _decomposition_rows() -> list[Row]:
    from vmtwin.models.kraft_decomposition import fit_populations
    from vmtwin.models.kraft_linear import predict, rel_error

    exp = "storage-kraft-decomposition"
    rows: list[Row] = []
    users = calibrate_users()
    iso_req = {w: logged_run(decomp_scenario([w], users, seed=11), DECOMP_RUN_S)[0] for w in ("file", "mail", "web")}
    iso = {w: _stats(r, w) for w, r in iso_req.items()}
    params = {w: _class_params(r) for w, r in iso_req.items()}
    for w in ("file", "mail", "web"):
        s = iso[w]
        t_r, t_w = KT.TABLE10_VM[w]
        rows.append(Row(exp, f"{w}: isolation throughput, reads + writes (calibration: {users[w]} batch customers)",
                        t_r + t_w, s.total, DECOMP_REL_TOL * (t_r + t_w), series="isolation", source="published",
                        note=f"Table 10 VM level; engine: the filebench preset with the customer count (1-40) closest to it"))
        rows.append(Row(exp, f"{w}: isolation read fraction (prediction)", t_r / (t_r + t_w), s.read_iops / s.total, 0.05,
                        series="isolation", source="derived",
                        note="Table 10 VM level reads / (reads + writes); engine: the preset's §7 read mix"))
        rows.append(Row(exp, f"{w}: isolation read response time, ms (prediction)", _T11[w][0], s.read_resp_ms,
                        DECOMP_REL_TOL * _T11[w][0], series="isolation", source="published",
                        note=f"Table 11; engine: one FCFS server of mean {DECOMP_SERVICE_MS:.2f} ms (derived from Table 11 by eq. 17)"))
        rows.append(Row(exp, f"{w}: isolation read arrival queue (prediction)", _T11[w][1], s.read_aqueue,
                        DECOMP_REL_TOL * _T11[w][1], series="isolation", source="published",
                        note="Table 11 Aqueue; engine: reads of the VM outstanding at a read's issue (C2.4)"))
    for mix, wl in KT.MIXES.items():
        con_req = logged_run(decomp_scenario(wl, users, seed=21), DECOMP_RUN_S)
        con = [_stats(r, f"{w}{i}") for i, (w, r) in enumerate(zip(wl, con_req))]
        pred = predict([iso[w] for w in wl])
        meas_r = sum(c.read_iops for c in con)
        meas_w = sum(c.write_iops for c in con)
        beta = meas_r / (meas_r + meas_w)
        pub13 = KT.TABLE13[mix]
        (pub_tr, pub_tw), pub_vm = KT.TABLE14[mix]
        note_lin = "engine: the linear predictor fed the engine's logged isolation runs, against the engine's consolidated run"
        rows += [
            Row(exp, f"{mix}: Table 13 mix Δ_R (prediction)", pub13[0], rel_error(beta, pred.read_mix), ERROR_TOL,
                series="Table 13", source="published", note=note_lin),
            Row(exp, f"{mix}: Table 13 mix Δ_W (prediction)", pub13[1], rel_error(1 - beta, pred.write_mix), ERROR_TOL,
                series="Table 13", source="published", note=note_lin),
            Row(exp, f"{mix}: Table 14 total Δ_R (prediction)", pub_tr, rel_error(meas_r, pred.read_total), ERROR_TOL,
                series="Table 14", source="published", note=note_lin),
            Row(exp, f"{mix}: Table 14 total Δ_W (prediction)", pub_tw, rel_error(meas_w, pred.write_total), ERROR_TOL,
                series="Table 14", source="published", note=note_lin),
        ]
        pub_tput = KT.TABLE12[mix]["tput"]
        pub_resp = KT.TABLE12[mix]["resp"]
        rows.append(Row(exp, f"{mix}: Table 12 total throughput, cmd/s (prediction)", float(sum(r + w for r, w in pub_tput)),
                        meas_r + meas_w, DECOMP_REL_TOL * float(sum(r + w for r, w in pub_tput)), series="Table 12",
                        source="derived", note="Table 12: the VMs' read and write throughputs added; engine: the consolidated run"))
        fit = fit_populations([params[w] for w in wl], list(pred.read_per_vm), DECOMP_SIM_S, seed=3)
        for i, (w, c) in enumerate(zip(wl, con)):
            rows += [
                Row(exp, f"{mix}: VM{i + 1} ({w}) Table 14 Δ_R (prediction)", pub_vm[i][0], rel_error(c.read_iops, pred.read_per_vm[i]),
                    ERROR_TOL, series="Table 14", source="published", note=note_lin + "; per-VM rule of C2.1"),
                Row(exp, f"{mix}: VM{i + 1} ({w}) Table 14 Δ_W (prediction)", pub_vm[i][1], rel_error(c.write_iops, pred.write_per_vm[i]),
                    ERROR_TOL, series="Table 14", source="published", note=note_lin + "; per-VM rule of C2.1"),
                Row(exp, f"{mix}: VM{i + 1} ({w}) Table 15 linear Δ_R (prediction)", KT.TABLE15_LIN_R[mix][i],
                    rel_error(c.read_resp_ms, pred.read_resp_ms[i]), ERROR_TOL, series="Table 15", source="published",
                    note=note_lin + " (eq. 18 generalised, C2.2)"),
                Row(exp, f"{mix}: VM{i + 1} ({w}) Table 15 linear Δ_W (prediction)", TABLE15_LIN_W[mix][i],
                    rel_error(c.write_resp_ms, pred.write_resp_ms[i]), ERROR_TOL, series="Table 15", source="published",
                    note=note_lin + " (eq. 19 generalised; the engine publishes the isolation write statistics the paper does not)"),
                Row(exp, f"{mix}: VM{i + 1} ({w}) Table 15 simulation Δ_R (prediction)", TABLE15_SIM_R[mix][i],
                    rel_error(c.read_resp_ms, fit.mean_resp_s[i] * 1e3), ERROR_TOL, series="Table 15", source="published",
                    note=f"engine: the decomposition simulation (Algorithm 3, populations {fit.populations}) parameterised by "
                         f"eqs. 21-23 from the logged isolation runs, against the consolidated run"),
                Row(exp, f"{mix}: VM{i + 1} ({w}) Table 12 read throughput, cmd/s (prediction)", float(pub_tput[i][0]),
                    c.read_iops, DECOMP_REL_TOL * pub_tput[i][0], series="Table 12", source="published",
                    note="Table 12 measured; engine: the consolidated run"),
                Row(exp, f"{mix}: VM{i + 1} ({w}) Table 12 read response time, ms (prediction)", float(pub_resp[i][0]),
                    c.read_resp_ms, DECOMP_REL_TOL * pub_resp[i][0], series="Table 12", source="published",
                    note="Table 12 measured; engine: the consolidated run"),
            ]
        if mix == "Web+Mail":
            rd = con_req[0][con_req[0]["read"] == 1]
            p90 = float(np.quantile((rd["done_ns"] - rd["issue_ns"]) / 1e6, 0.9))
            rows.append(Row(exp, "Fig. 13 (b): web read 90th percentile, simulation's relative error, Web+Mail (prediction)",
                            FIG13_P90_ERROR, rel_error(p90, fit.quantiles[0.9][0] * 1e3), ERROR_TOL, series="Fig. 13",
                            source="derived",
                            note=f"[K] §7.1.4: web reads' 90th percentile 0.0755 s measured, 0.0726 s simulated: |Δ| / measured = "
                                 f"{FIG13_P90_ERROR:.3f}; the paper does not name the mix, Web+Mail is chosen; engine: "
                                 f"{p90:.1f} ms, decomposition simulation {fit.quantiles[0.9][0] * 1e3:.1f} ms"))
            for i, w in enumerate(wl):
                inc = 100.0 * (con[i].read_resp_ms / iso[w].read_resp_ms - 1.0)
                rows.append(Row(exp, f"Fig. 2: {w} read response-time increase, Web+Mail (%) (prediction)", FIG2_INCREASE[w],
                                inc, FIG2_REL_TOL * FIG2_INCREASE[w], series="Fig. 2", source="published",
                                note="[K] §1 'roughly 170% and 71%'; engine: consolidated over isolation mean read response time"))
    return rows


STORAGE_KRAFT_MODEL_EXPERIMENTS.append(
    Experiment("storage-kraft-decomposition",
               "Kraft's decomposition model on FileBench-like engine runs (Fig. 2, Tables 10-15)",
               "Kraft et al. 2013 §6-7, research/storage.md B1.1, B1.11-B1.16", _decomposition_rows,
               x_label="mix", y_label="prediction error"))

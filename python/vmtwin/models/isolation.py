"""A user's own isolation measurements, from CSV, into the Kraft models' inputs.

Two forms are read:

- **summary** — one row per VM measured alone, columns
  ``vm,read_iops,write_iops,read_resp_ms,write_resp_ms,read_aqueue,write_aqueue``
  (the last four may be empty when only mixes and throughputs are wanted);
- **trace** — one row per request as blktrace records it in the VM, columns
  ``vm,issue_s,complete_s,op,lba,blocks`` with ``op`` R or W; from it :func:`stats_from_trace`
  computes the summary (throughputs over the trace span, mean response times, mean arrival queue
  of the same type from the same VM, C2.4) and the mean number in system N_iso (C1.12).

Errors name the file, line and column, the value and what is allowed (exit status 2 in the CLI).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from vmtwin.exceptions import scenario_error
from vmtwin.models.kraft_linear import IsolationStats

SUMMARY_COLUMNS = ("vm", "read_iops", "write_iops", "read_resp_ms", "write_resp_ms", "read_aqueue", "write_aqueue")
TRACE_COLUMNS = ("vm", "issue_s", "complete_s", "op", "lba", "blocks")


def _rows(path: Path, columns: tuple[str, ...]):
    path = Path(path)
    try:
        fh = open(path, newline="")
    except OSError as exc:
        raise scenario_error(str(path), "unreadable", f"a readable CSV file ({exc.strerror})") from None
    with fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        missing = [c for c in columns if c not in header]
        if missing:
            raise scenario_error(f"{path}:1", ",".join(header), f"a header with the columns {', '.join(columns)} (missing {', '.join(missing)})")
        rows = list(enumerate(reader, start=2))
    if not rows:
        raise scenario_error(f"{path}:2", "no rows", "at least one data row")
    return rows


def _number(path: Path, line: int, row: dict, col: str, *, optional: bool = False, minimum: float = 0.0) -> float:
    text = (row.get(col) or "").strip()
    if text == "" and optional:
        return math.nan
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if not math.isfinite(x) or x < minimum:
        raise scenario_error(f"{path}:{line}:{col}", text, f"a number >= {minimum:g}")
    return x


def read_summary(path: Path) -> list[IsolationStats]:
    """Isolation statistics per VM from a summary CSV."""
    out = []
    for line, row in _rows(path, SUMMARY_COLUMNS):
        name = (row["vm"] or "").strip()
        if not name:
            raise scenario_error(f"{path}:{line}:vm", "", "a VM name")
        out.append(
            IsolationStats(
                name,
                _number(path, line, row, "read_iops"),
                _number(path, line, row, "write_iops"),
                *(_number(path, line, row, c, optional=True) for c in SUMMARY_COLUMNS[3:]),
            )
        )
    return out


def read_trace(path: Path) -> dict[str, dict[str, np.ndarray]]:
    """Per VM: arrays issue, complete (s), is_read (bool), lba, blocks, in issue order."""
    per: dict[str, list] = {}
    for line, row in _rows(path, TRACE_COLUMNS):
        vm = (row["vm"] or "").strip()
        op = (row["op"] or "").strip().upper()
        if op not in ("R", "W"):
            raise scenario_error(f"{path}:{line}:op", row["op"], "R or W")
        issue = _number(path, line, row, "issue_s")
        complete = _number(path, line, row, "complete_s")
        if complete < issue:
            raise scenario_error(f"{path}:{line}:complete_s", complete, f"a time >= issue_s ({issue})")
        per.setdefault(vm, []).append((issue, complete, op == "R", _number(path, line, row, "lba"), _number(path, line, row, "blocks", minimum=1)))
    out = {}
    for vm, recs in per.items():
        recs.sort(key=lambda r: r[0])
        arr = np.array(recs, dtype=float)
        out[vm] = {"issue": arr[:, 0], "complete": arr[:, 1], "is_read": arr[:, 2].astype(bool), "lba": arr[:, 3], "blocks": arr[:, 4].astype(int)}
    return out


def arrival_queue(issue: np.ndarray, complete: np.ndarray) -> np.ndarray:
    """For each request (sorted by issue), how many earlier-issued requests of the same set are
    still outstanding when it arrives (itself excluded)."""
    order_c = np.sort(complete)
    issued_before = np.arange(issue.size)  # requests issued before this one (ties: file order)
    completed_before = np.searchsorted(order_c, issue, side="right")
    return np.maximum(issued_before - completed_before, 0)


def mean_in_system(issue: np.ndarray, complete: np.ndarray) -> float:
    """Time-averaged number of outstanding requests over the trace span (C1.12)."""
    span = float(complete.max() - issue.min())
    return float(np.sum(complete - issue)) / span if span > 0 else 0.0


def stats_from_trace(vm: str, rec: dict[str, np.ndarray]) -> tuple[IsolationStats, float]:
    """Isolation statistics of one VM and its N_iso, from its trace arrays."""
    span = float(rec["complete"].max() - rec["issue"].min())
    if span <= 0:
        raise scenario_error(f"trace vm {vm}", span, "a trace spanning a positive time")
    vals = {}
    for kind, sel in (("read", rec["is_read"]), ("write", ~rec["is_read"])):
        iss, com = rec["issue"][sel], rec["complete"][sel]
        vals[f"{kind}_iops"] = iss.size / span
        vals[f"{kind}_resp_ms"] = float(np.mean(com - iss)) * 1e3 if iss.size else math.nan
        vals[f"{kind}_aqueue"] = float(np.mean(arrival_queue(iss, com))) if iss.size else math.nan
    return IsolationStats(vm, **vals), mean_in_system(rec["issue"], rec["complete"])


def predict_from_csv(path: Path, vms: list[str] | None = None):
    """Linear predictions for consolidating the VMs of a summary or trace CSV (all, or ``vms``).

    Returns the :class:`~vmtwin.models.kraft_linear.LinearPrediction` and the VM order.
    """
    from vmtwin.models.kraft_linear import predict

    path = Path(path)
    try:
        header = path.open(newline="").readline().strip().split(",")
    except OSError as exc:
        raise scenario_error(str(path), "unreadable", f"a readable CSV file ({exc.strerror})") from None
    if set(TRACE_COLUMNS) <= set(header):
        stats = [stats_from_trace(vm, rec)[0] for vm, rec in read_trace(path).items()]
    else:
        stats = read_summary(path)
    by_name = {s.name: s for s in stats}
    if vms:
        unknown = [v for v in vms if v not in by_name]
        if unknown:
            raise scenario_error("vms", unknown, f"VMs in {path}: {', '.join(by_name)}")
        stats = [by_name[v] for v in vms]
    if len(stats) < 2:
        raise scenario_error(f"{path}", f"{len(stats)} VM(s)", "at least 2 VMs to consolidate")
    return predict(stats), [s.name for s in stats]


def predict_homogeneous_from_csv(path: Path, vms: list[str] | None = None, *, runs: int = 20, seed: int = 0, servers: int = 32, omega: float | None = None) -> dict:
    """Kraft's homogeneous model on a per-request isolation trace CSV: consolidate ``vms`` (all by
    default) and predict each one's mean response time (ms) by the SFQ(D) simulation and by the
    product form.

    Each VM's trace (shifted to start at 0) is its arrival trace; its service times come from a
    :class:`~vmtwin.models.service_sampler.Map2` fitted to its isolation response times. With
    ``omega=None`` the merge value is found by Algorithm 2 against N_exp = Σ N_iso.
    """
    from vmtwin.models.kraft_sfqd import Trace, calibrate_merge, simulate
    from vmtwin.models.product_form import product_form
    from vmtwin.models.service_sampler import Map2

    recs = read_trace(Path(path))
    names = vms or list(recs)
    unknown = [v for v in names if v not in recs]
    if unknown:
        raise scenario_error("vms", unknown, f"VMs in {path}: {', '.join(recs)}")
    if len(names) < 2:
        raise scenario_error(f"{path}", f"{len(names)} VM(s)", "at least 2 VMs to consolidate")
    traces, samplers, n_iso, iso_ms, rates = [], [], [], [], []
    for v in names:
        r = recs[v]
        resp = r["complete"] - r["issue"]
        traces.append(Trace(r["issue"] - r["issue"].min(), r["blocks"]))
        samplers.append(Map2.fit(resp).sample)
        n_iso.append(mean_in_system(r["issue"], r["complete"]))
        iso_ms.append(float(resp.mean()) * 1e3)
        rates.append(r["issue"].size / float(r["issue"].max() - r["issue"].min()) / 1e3)  # per ms
    cal = None
    if omega is None:
        cal = calibrate_merge([[t] for t in traces], samplers, sum(n_iso), seed=seed, runs=runs, servers=servers)
        omega = cal.omega
    sims = [simulate(traces, samplers, np.random.default_rng([seed, r]), servers=servers, omega=omega).mean_resp for r in range(runs)]
    return {
        "vms": names,
        "isolation_ms": iso_ms,
        "simulated_ms": [float(x) * 1e3 for x in np.mean(sims, axis=0)],
        "product_form_ms": product_form(rates, iso_ms, servers),
        "omega": omega,
        "calibration": cal,
        "n_expected": sum(n_iso),
    }

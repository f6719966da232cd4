"""A user's isolation measurements from CSV, and the MAP(2) service sampler."""

import numpy as np
import pytest

from vmtwin.exceptions import ScenarioError
from vmtwin.models.isolation import arrival_queue, predict_from_csv, read_trace, stats_from_trace
from vmtwin.models.kraft_tables import TABLE10_VM, TABLE11
from vmtwin.models.service_sampler import Map2


def test_summary_csv_gives_the_papers_predictions(tmp_path):
    p = tmp_path / "iso.csv"
    lines = ["vm,read_iops,write_iops,read_resp_ms,write_resp_ms,read_aqueue,write_aqueue"]
    for w in ("web", "file", "mail"):
        lines.append(f"{w},{TABLE10_VM[w][0]},{TABLE10_VM[w][1]},{TABLE11[w]['resp_ms']},,{TABLE11[w]['aqueue']},")
    p.write_text("\n".join(lines) + "\n")
    pred, order = predict_from_csv(p, ["web", "file"])
    assert order == ["web", "file"]
    assert pred.read_mix == pytest.approx(800 / 1081)
    assert pred.read_resp_ms[0] == pytest.approx(11.8 + 19.9 / 10.57 * 9.57)


def test_trace_csv_statistics_by_hand(tmp_path):
    p = tmp_path / "trace.csv"
    p.write_text(
        "vm,issue_s,complete_s,op,lba,blocks\n"
        "a,0.0,0.010,R,0,8\n"
        "a,0.002,0.006,R,8,8\n"
        "a,0.004,0.020,W,100,8\n"
        "a,0.008,0.012,R,16,8\n"
        "b,0.0,0.010,R,0,8\n"
        "b,0.010,0.020,W,0,8\n"
    )
    recs = read_trace(p)
    s, n_iso = stats_from_trace("a", recs["a"])
    # reads of a: issued 0, 2, 8 ms; at 2 ms one read is out (the first), at 8 ms one (the first; the second finished at 6)
    assert s.read_aqueue == pytest.approx((0 + 1 + 1) / 3)
    assert s.read_resp_ms == pytest.approx((10 + 4 + 4) / 3)
    assert s.read_iops == pytest.approx(3 / 0.020)
    assert n_iso == pytest.approx((0.010 + 0.004 + 0.016 + 0.004) / 0.020)
    pred, order = predict_from_csv(p)
    assert order == ["a", "b"]


def test_arrival_queue_matches_a_brute_force_count():
    rng = np.random.default_rng(3)
    issue = np.sort(rng.uniform(0, 1, 300))
    complete = issue + rng.exponential(0.02, 300)
    brute = [sum(1 for j in range(i) if complete[j] > issue[i]) for i in range(300)]
    assert list(arrival_queue(issue, complete)) == brute


@pytest.mark.parametrize(
    "body,where",
    [
        ("vm,read_iops\na,1\n", ":1"),
        ("vm,read_iops,write_iops,read_resp_ms,write_resp_ms,read_aqueue,write_aqueue\na,1,x,,,,\n", ":2:write_iops"),
        ("vm,read_iops,write_iops,read_resp_ms,write_resp_ms,read_aqueue,write_aqueue\na,1,-2,,,,\n", ":2:write_iops"),
        ("vm,issue_s,complete_s,op,lba,blocks\na,0,1,Q,0,8\n", ":2:op"),
        ("vm,issue_s,complete_s,op,lba,blocks\na,2,1,R,0,8\n", ":2:complete_s"),
    ],
)
def test_bad_csv_names_file_line_and_column(tmp_path, body, where):
    p = tmp_path / "bad.csv"
    p.write_text(body)
    with pytest.raises(ScenarioError, match=f"bad.csv{where}"):
        predict_from_csv(p)


def test_missing_file_and_single_vm(tmp_path):
    with pytest.raises(ScenarioError, match="nope.csv"):
        predict_from_csv(tmp_path / "nope.csv")
    p = tmp_path / "one.csv"
    p.write_text("vm,read_iops,write_iops,read_resp_ms,write_resp_ms,read_aqueue,write_aqueue\na,1,1,,,,\n")
    with pytest.raises(ScenarioError, match="at least 2 VMs"):
        predict_from_csv(p)


def test_map2_fit_recovers_mean_scv_and_lag1():
    truth = Map2.from_moments(0.01, 5.0, 0.3)
    x = truth.sample(np.random.default_rng(0), 400_000)
    fit = Map2.fit(x)
    m, scv = x.mean(), x.var() / x.mean() ** 2
    lag1 = np.corrcoef(x[:-1], x[1:])[0, 1]
    assert m == pytest.approx(0.01, rel=0.03)
    assert scv == pytest.approx(5.0, rel=0.08)
    assert lag1 == pytest.approx(0.3, abs=0.03)
    y = fit.sample(np.random.default_rng(1), 400_000)
    assert np.corrcoef(y[:-1], y[1:])[0, 1] == pytest.approx(lag1, abs=0.03)
    assert y.var() / y.mean() ** 2 == pytest.approx(scv, rel=0.08)


def test_map2_falls_back_to_exponential_below_scv_1():
    fit = Map2.fit(np.random.default_rng(0).uniform(0.5, 1.5, 1000))
    assert "exponential" in fit.fallback


def test_homogeneous_model_on_a_users_trace_csv(tmp_path):
    from vmtwin.models.isolation import predict_homogeneous_from_csv

    rng = np.random.default_rng(7)
    lines = ["vm,issue_s,complete_s,op,lba,blocks"]
    for vm in ("a", "b"):
        t = np.cumsum(rng.exponential(0.004, 3000))  # 250 req/s for 12 s
        svc = rng.exponential(0.012, t.size)  # 12 ms each, 3 in service on average
        for ti, si in zip(t, svc):
            lines.append(f"{vm},{ti:.6f},{ti + si:.6f},R,0,8")
    p = tmp_path / "trace.csv"
    p.write_text("\n".join(lines) + "\n")
    out = predict_homogeneous_from_csv(p, runs=3, servers=4)
    assert out["vms"] == ["a", "b"]
    # 4 servers shared by two VMs that each keep ~3 busy: consolidation queues
    assert all(s > 1.2 * i for s, i in zip(out["simulated_ms"], out["isolation_ms"]))
    assert all(pf > i for pf, i in zip(out["product_form_ms"], out["isolation_ms"]))
    assert out["omega"] >= 1.0 and out["calibration"].history
    fixed = predict_homogeneous_from_csv(p, runs=3, servers=32, omega=1.0)
    # with 32 servers there is no contention: the simulation gives back the isolation means
    assert fixed["simulated_ms"] == pytest.approx(fixed["isolation_ms"], rel=0.1)
    with pytest.raises(ScenarioError, match="at least 2 VMs"):
        predict_homogeneous_from_csv(p, ["a"])

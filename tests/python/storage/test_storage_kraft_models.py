"""Kraft's models fed logged engine runs (``storage-kraft-homogeneous``,
``storage-kraft-decomposition``): the pieces checked against oracles that do not come from the
code under test. (The experiments themselves run in ``vmtwin reproduce``: about a minute each.)"""

from __future__ import annotations

import math

import numpy as np
import pytest

from vmtwin.models import kraft_tables as KT
from vmtwin.reproduce.storage_kraft_models import (DECOMP_SERVICE_MS, decomp_scenario, logged_run)


def _open_poisson(vms: int, rate: float, servers: int, mean_ms: float, seed: int) -> dict:
    return {
        "name": "own-world", "seed": seed, "duration": "60s", "sample_interval": "60s",
        "host": {"cores_per_llc": 4, "core_mhz": "2000MHz", "memory": "16GB"},
        "vms": [{"name": "vm", "count": vms, "workload": {"type": "idle"}}],
        "storage": {"adapters": [{"name": "vmhba1"}],
                    "datastores": [{"name": "lun", "dqlen": 64, "paths": [{"adapter": "vmhba1"}],
                                    "device": {"type": "exponential", "servers": servers,
                                               "mean_service": f"{round(mean_ms * 1000)}us"}}],
                    "disks": [{"vm": "vm", "datastore": "lun", "queue_depth": 1 << 20,
                               "workload": {"type": "poisson", "rate": rate, "block_size": "8KB"}}]},
    }


def test_in_its_own_world_the_homogeneous_model_predicts_the_engine(tmp_path):
    """When the engine *is* the homogeneous model's system (open arrivals, D parallel exponential
    servers, FCFS within a class), the model fed the engine's logged isolation runs through a
    user's trace CSV (``predict_homogeneous_from_csv``) predicts the engine's Con 2 mean response
    times, and both agree with M/M/8 (Erlang C): 10 ms service, utilisation 0.4 alone (where the
    model's premise, service time = isolation response time, holds: 10.03 ms), 0.8 together
    (12.9 ms). (At 0.4 on 4 servers alone the premise is off by 3% and its response-time spread
    makes the model 12-20% pessimistic at 0.8: Kraft's own approximation, not checked here.)"""
    from vmtwin.models.isolation import predict_homogeneous_from_csv

    rows = ["vm,issue_s,complete_s,op,lba,blocks"]
    for name, seed in (("a", 1), ("b", 2)):
        req = logged_run(_open_poisson(1, 320.0, 8, 10.0, seed))[0]
        for i, d, r, b in zip(req["issue_ns"], req["done_ns"], req["read"], req["bytes"]):
            rows.append(f"{name},{i / 1e9:.9f},{d / 1e9:.9f},{'R' if r else 'W'},0,{max(1, b // 4096)}")
    path = tmp_path / "iso.csv"
    path.write_text("\n".join(rows) + "\n")
    got = predict_homogeneous_from_csv(path, runs=4, servers=8, omega=1.0)
    con = logged_run(_open_poisson(2, 320.0, 8, 10.0, 5))
    measured = [float(((r["done_ns"] - r["issue_ns"]) / 1e6).mean()) for r in con]
    # M/M/8 at rho = 0.8 (Erlang C): R = 10 ms + C(8, 6.4) * 10 / (8 - 6.4) ms
    a, c = 6.4, 8
    erlang_c = (a**c / math.factorial(c) * c / (c - a)) / (
        sum(a**k / math.factorial(k) for k in range(c)) + a**c / math.factorial(c) * c / (c - a))
    mmc = 10.0 + erlang_c * 10.0 / (c - a)
    for m, p in zip(measured, got["simulated_ms"]):
        assert m == pytest.approx(mmc, rel=0.05)
        assert abs(m - p) / m < 0.05, (measured, got["simulated_ms"])


def test_the_decomposition_parameters_come_back_from_a_logged_run():
    """Eq. 21 on the log of one web customer (batches of reads issued at one instant, think time
    ~141 ms between them, served in well under 2 ms each on a fast device) recovers the preset's
    mean batch size, Table 11's 5.79 (geometric, so within 4 standard errors)."""
    from vmtwin.models.kraft_decomposition import detect_batches

    doc = decomp_scenario(["web"], {"web": 1}, seed=4)
    doc["storage"]["datastores"][0]["device"]["mean_service"] = "50us"
    req = logged_run(doc, 300)[0]
    rd = req[req["read"] == 1]
    sizes = np.array([len(b) for b in detect_batches(rd["issue_ns"].to_numpy(float) / 1e9)])
    m = KT.TABLE11["web"]["batch"]
    se = np.sqrt(m * (m - 1)) / np.sqrt(sizes.size)
    assert sizes.size > 1000
    assert abs(sizes.mean() - m) < 4 * se, (sizes.mean(), m, se)


def test_the_decomposition_lun_is_table_11s_service_time_by_eq_17():
    """One FCFS server whose mean is the mean of C / (1 + A) over Table 11's three workloads."""
    want = np.mean([19.9 / 10.57, 17.3 / 9.12, 11.8 / 9.39])
    assert DECOMP_SERVICE_MS == pytest.approx(want, rel=1e-12)
    dev = decomp_scenario(["file", "mail"], {"file": 1, "mail": 1})["storage"]["datastores"][0]["device"]
    assert dev == {"type": "exponential", "servers": 1, "mean_service": "1679us"}

"""mem8-repro's reproductions (research/memory.md B.3, B.4, B.5, B.9) against independent oracles:
the sampler's averages against the EWMA recursions and the binomial sample they are built from,
working-set phases against the pmap's exact touched count, the sharing scan's CPU charge against
its closed form, and the overcommitment factor against Eq. 1 over random hosts."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmtwin.exceptions import ScenarioError
from vmtwin.reproduce import EXPERIMENTS
from vmtwin.reproduce import mem as rm
from vmtwin.scenario import parse_scenario

FAST, SLOW = 0.5, 0.1  # MemParams' default EWMA gains
N_SAMPLE = 100  # pages sampled per period


@pytest.fixture(scope="module")
def sampling_mem():
    return rm.sampling_run()


def _period_ends(mem):
    """One row per sampling period: the first sample after each period's end (the averages
    change only there)."""
    t = mem["time_s"]
    period = (t // rm.SAMPLE_PERIOD_S).astype(int)
    return mem.groupby(period).first().reset_index(drop=True)


def test_the_averages_follow_the_ewma_recursions_of_one_100_page_sample(sampling_mem):
    ends = _period_ends(sampling_mem)
    fast, slow = ends["%ACTVF"].to_numpy() / 100, ends["%ACTVS"].to_numpy() / 100
    checked = 0
    for k in range(1, len(ends)):
        if fast[k] == fast[k - 1] and slow[k] == slow[k - 1]:
            continue
        # the sample fraction the fast average folded in; it must be t/100 for an integer t, and
        # the slow average must have folded in the same one
        f = (fast[k] - (1 - FAST) * fast[k - 1]) / FAST
        assert abs(f * N_SAMPLE - round(f * N_SAMPLE)) < 1e-6, (k, f)
        assert 0.0 <= round(f * N_SAMPLE) <= N_SAMPLE
        assert slow[k] == pytest.approx(slow[k - 1] + SLOW * (f - slow[k - 1]), abs=1e-9)
        checked += 1
    assert checked > 100
    # the estimate is the max of the averages (and of the fast one with the partial period)
    m = sampling_mem
    assert (m["TCHD"] >= m[["%ACTVF", "%ACTVS"]].max(axis=1) * m["MEMSZ"] / 100 - 1e-6).all()


def test_the_samples_are_binomial_around_the_fraction_really_touched(sampling_mem):
    ends = _period_ends(sampling_mem)
    fast = ends["%ACTVF"].to_numpy() / 100
    fs = (fast[1:] - (1 - FAST) * fast[:-1]) / FAST
    touched = (ends["TCHD_W"] / ends["MEMSZ"]).to_numpy()[1:]
    # periods wholly inside a phase: the amount touched in the period is the phase's
    steady = touched[1:] == touched[:-1]
    for p in sorted(set(touched[1:][steady])):
        got = fs[1:][steady & (touched[1:] == p)]
        se = math.sqrt(p * (1 - p) / N_SAMPLE / len(got))
        assert abs(got.mean() - p) < 4 * se + 1e-9, (p, got.mean(), len(got))


def test_phases_change_the_amount_touched_exactly(sampling_mem):
    ends = _period_ends(sampling_mem)
    bg = rm.SAMPLING_BACKGROUND_MB
    for (m, mb), nxt in zip(rm.SAMPLING_SCHEDULE, [*rm.SAMPLING_SCHEDULE[1:], (rm.SAMPLING_RUN_MIN, None)]):
        # periods wholly inside the phase (TCHD_W is the last full period's count)
        inside = ends[(ends["time_s"] > 60 * m + rm.SAMPLE_PERIOD_S + 2) & (ends["time_s"] < 60 * nxt[0])]
        assert len(inside) > 5
        assert (inside["TCHD_W"] == mb + bg).all(), (m, inside["TCHD_W"].unique())


def test_sampling_rows_pass_and_say_where_they_come_from():
    rows = rm.sampling()
    judged = [r for r in rows if r.judged]
    assert len(judged) == 10 and all(r.verdict == "PASS" for r in judged), [(r.metric, r.simulated) for r in judged]
    assert all(r.source == "derived" and r.note for r in judged)
    assert "mem-sampling" in EXPERIMENTS


# --- phases: bad input ---------------------------------------------------------------------


def _phased(phases, **extra):
    return {"name": "p", "duration": "60s", "host": {"cores_per_llc": 2, "memory": "1GB"}, "memory": {},
            "vms": [{"name": "a", "memory": "256MB", "workload": {"type": "cpu_bound", "duty": 1.0},
                     "guest_memory": {"working_set": "16MB", "phases": phases, **extra}}]}


@pytest.mark.parametrize("phases,extra,field", [
    ([{"at": "20s", "working_set": "8MB"}, {"at": "10s", "working_set": "8MB"}], {}, "phases[1].at"),
    ([{"at": "20s", "working_set": "300MB"}], {}, "phases[0].working_set"),
    ([{"at": "20s", "working_set": "8MB"}], {"pattern": "sequential", "hot_block": "4MB"}, "phases"),
    ([{"at": "20s"}], {}, "phases[0].working_set"),
])
def test_bad_phases_name_the_field(phases, extra, field):
    with pytest.raises(ScenarioError) as e:
        parse_scenario(_phased(phases, **extra))
    assert field in str(e.value)


def test_bad_phases_exit_2_and_write_nothing(tmp_path):
    import yaml

    from vmtwin.cli import main

    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_phased([{"at": "20s", "working_set": "1GB"}])))
    out = tmp_path / "out"
    assert main(["run", str(path), "-o", str(out)]) == 2
    assert not out.exists()


# --- B.3: the scan's CPU is taken from the workload ------------------------------------------


def test_one_vm_loses_exactly_the_cpu_its_scans_cost():
    # one busy VM alone on two pCPUs: with the scan on it does its work minus rate x cost x time
    n, run_s = 1, 30 * 60
    on, off = rm.useful_cpu_s(n, True), rm.useful_cpu_s(n, False)
    scan_cpu_s = 200 * 1e-6 * run_s  # share_scan_pages_per_s x share_scan_cpu_ns x run
    assert off == pytest.approx(run_s, rel=1e-6)
    assert off - on == pytest.approx(scan_cpu_s, rel=0.02)


# --- B.9: the overcommitment factor -----------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(host_mb=st.integers(256, 65536), sizes=st.lists(st.integers(64, 32768), min_size=1, max_size=6),
       on=st.lists(st.integers(0, 20), min_size=6, max_size=6), at=st.integers(0, 20),
       hog=st.integers(0, 128))
def test_factor_is_eq1_over_the_vms_powered_on(host_mb, sizes, on, at, hog):
    vms = [{"name": f"v{i}", "memory": f"{s}MB", "power_on": f"{on[i]}s", "workload": {"type": "idle"}}
           for i, s in enumerate(sizes)]
    if hog:
        vms.append({"name": "hog", "memory": f"{hog}MB", "workload": {"type": "idle"},
                    "memory_allocation": {"reservation": f"{hog}MB"}})
    sc = parse_scenario({"name": "f", "duration": "30s", "memory": {}, "host": {"cores_per_llc": 2,
                         "memory": f"{host_mb}MB"}, "vms": vms})
    powered = sum(s for s, t in zip(sizes, on) if t <= at)
    assert rm.overcommit_factor(sc, at * 10**9) == pytest.approx((powered + hog) / host_mb)
    if hog < host_mb:
        assert rm.overcommit_factor(sc, at * 10**9, hog_excluded=True) == pytest.approx(powered / (host_mb - hog))


@given(x=st.floats(0, 100, allow_nan=False))
def test_truncation_never_rounds_up(x):
    t = rm.truncated(x)
    assert t <= x + 1e-9 and x - t < 0.01 + 1e-9 and round(t * 100) == pytest.approx(t * 100)


def test_overcommit_rows_are_the_papers_numbers():
    rows = rm.overcommit()
    assert all(r.verdict == "PASS" for r in rows)
    printed = {r.metric: r.published for r in rows if r.source == "published" and "factor" in r.metric}
    # the factors the paper prints, truncated: 20/42 = 0.476 -> 0.47, 60/19 = 3.158 -> 3.15
    assert printed["dvdstore: 5 x 4 GB, 30 GB hog on 72 GB: factor"] == 0.47
    assert printed["vdi: 15 x 4 GB, 53 GB hog on 72 GB: factor"] == 3.15
    assert printed["microbenchmarks: 2 x 24 GB on 32 GB: factor"] == 1.5


# --- B.7: dynamic reallocation ----------------------------------------------------------------


@pytest.fixture(scope="module")
def realloc():
    return rm.realloc_run()


def test_targets_divide_exactly_the_memory_for_vms_once_overcommitted(realloc):
    mem, host = realloc
    # the oracle: host - the 2002 policy's 6% free target - the VMs' 32 MB overheads (ESX's own
    # memory is 0 here); the targets fill it whenever the VMs have mapped more than that
    capacity = 0.94 * 1090 - 32 * len(rm.REALLOC_VMS)
    per_t = mem.groupby("time_s").agg(target=("SZTGT", "sum"), mapped=("MAPPED", "sum"))
    # from the first policy tick after the last power-on (a VM's target starts at its size)
    last_on = rm.REALLOC_BOOT_STAGGER_S * (len(rm.REALLOC_VMS) - 1)
    full = per_t[(per_t.index > last_on + 2) & (per_t["mapped"] > capacity + 1)]
    assert len(full) > 500
    assert full["target"].to_numpy() == pytest.approx(capacity, abs=0.05)
    # and no VM is ever targeted above its size or below nothing
    assert (mem["SZTGT"] <= mem["MEMSZ"] + 1e-9).all() and (mem["SZTGT"] >= 0).all()


def test_reallocation_rows(realloc):
    rows = rm.reallocation()
    judged = [r for r in rows if r.judged]
    assert all(r.verdict == "PASS" for r in judged), [(r.metric, r.simulated) for r in judged]
    assert all("X-R" in r.note for r in judged if r.source == "derived" and "swapped" not in r.metric)
    swap = next(r for r in rows if r.metric == "MB swapped out after the swap peak")
    assert "verified" in swap.note and "20 MB" in swap.note
    assert "mem-reallocation" in EXPERIMENTS


def test_the_system_wide_scan_rate_caps_what_each_vm_is_charged():
    # three busy VMs; the host-wide rate of 300 pages/s binds below the per-VM 200: 100 each,
    # 1 us per page, so 0.2 ms of scan CPU per VM per 2 s sample
    sc = {"name": "cap", "duration": "20s", "host": {"cores_per_llc": 4, "memory": "1GB"},
          "memory": {"policy": "esx2002", "share_scan_host_rate": 300, "host_overhead": "0B"},
          "vms": [{"name": "v", "count": 3, "memory": "32MB", "workload": {"type": "cpu_bound", "duty": 1.0},
                   "guest_memory": {"overhead": "0B"}}]}
    from vmtwin.simulation import Simulation

    sim = Simulation(parse_scenario(sc))
    sim.run()
    mem = sim.tables()["mem"].to_pandas()
    assert mem["MEMCPU_ms"].to_numpy() == pytest.approx(0.2, abs=1e-9)
    with pytest.raises(ScenarioError) as e:
        parse_scenario({**sc, "memory": {"share_scan_host_rate": -1}})
    assert "share_scan_host_rate" in str(e.value)


# --------------------------------------------------------------------------------------------
# B.4: production sharing
# --------------------------------------------------------------------------------------------


def _brute_force_expected(n, apps, zero_mb, os_mb, app_mb):
    """Independent count: list every VM's non-private contents (zero, the row's OS image, its
    application's image) and add up the pages whose content more than one page holds."""
    from collections import Counter

    counts = Counter({"zero": n})
    for i in range(n):
        counts["os"] += 1
        counts[f"app{i % apps}"] += 1
    mb = {"zero": zero_mb, "os": os_mb}
    shared = reclaimed = 0.0
    for content, k in counts.items():
        size = mb.get(content, app_mb)
        if content == "zero":
            # zero pages are duplicates of one another inside a VM too
            shared += k * size
            reclaimed += k * size - rm.PAGE_MB
        elif k >= 2:
            shared += k * size
            reclaimed += (k - 1) * size
    return shared, reclaimed


@given(st.integers(1, 12), st.integers(1, 8), st.floats(0.5, 20), st.floats(0, 60), st.floats(0, 60))
def test_production_expectation_matches_a_brute_force_count(n, apps, z, o, a):
    got = rm.production_expected(n, apps, z, o, a)
    shared, reclaimed = _brute_force_expected(n, apps, z, o, a)
    assert got["SHRD"] == pytest.approx(shared, abs=1e-9)
    assert got["SHRDSVD"] == pytest.approx(reclaimed, abs=1e-9)


def test_the_calibration_gives_the_calibration_row():
    _, n, _, shared, reclaimed, zero = rm.PRODUCTION[rm.PRODUCTION_CALIBRATION]
    z, o, a = rm.production_calibration()
    assert min(z, o, a) > 0
    shared_bf, reclaimed_bf = _brute_force_expected(n, rm.PRODUCTION_APPS[rm.PRODUCTION_CALIBRATION], z, o, a)
    assert (shared_bf, reclaimed_bf, n * z - rm.PAGE_MB) == pytest.approx((shared, reclaimed, zero))


def test_a_full_scan_of_a_deployment_finds_what_its_contents_imply():
    """The engine's sharing over workload C's VMs (scanned at random, at a rate) against the
    closed form; the zero pages are drawn per page, so their count is binomial."""
    w = "C"
    _, n, total, *_ = rm.PRODUCTION[w]
    z, o, a = rm.production_calibration()
    want = rm.production_expected(n, rm.PRODUCTION_APPS[w], z, o, a)
    got = rm.production_at(w)
    assert got["MEMSZ"] == pytest.approx(total, abs=0.01)
    rest_pages = (total - n * (o + a)) / rm.PAGE_MB
    p = n * z / (total - n * (o + a))
    sd_mb = math.sqrt(rest_pages * p * (1 - p)) * rm.PAGE_MB
    for key in ("SHRD", "SHRDSVD", "ZERO"):
        assert abs(got[key] - want[key]) < 4 * sd_mb + 2 * rm.PAGE_MB, (key, got[key], want[key], sd_mb)
    # the images are shared in whole: what is not zero-page sharing is exactly them
    assert got["SHRD"] - got["ZERO"] == pytest.approx(want["SHRD"] - want["ZERO"], abs=2 * n * rm.PAGE_MB)


def test_production_rows_say_which_calibrate_and_which_predict():
    rows = rm.production()
    assert {r.experiment for r in rows} == {"mem-sharing-production"}
    assert all(r.source == "published" for r in rows)
    for r in rows:
        role = "calibration" if r.series == rm.PRODUCTION_CALIBRATION else "prediction"
        assert role in r.metric and role in r.note
    cal = [r for r in rows if r.series == rm.PRODUCTION_CALIBRATION]
    assert len(cal) == 3 and all(r.verdict == "PASS" for r in cal)
    assert len(rows) == 8  # A's zero-page MB is not printed

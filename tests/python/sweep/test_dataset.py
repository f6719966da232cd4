"""The sweep dataset: byte-identical across worker counts, right against a fair-share oracle,
t intervals against an independent computation, and atomic on error."""

import math
import os
import statistics

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from vmtwin.cli import main
from vmtwin.scenario import parse_scenario
from vmtwin.sweep import build_sweep, run_sweep, write_sweep
from vmtwin.sweep.metrics import t_interval

from sweep_helpers import BASE_YAML, write_sweep_file

BUSY_ONLY = BASE_YAML[:BASE_YAML.index("  - name: half")]

FILES = ("runs.parquet", "vm.parquet", "vcpu.parquet", "host.parquet", "summary.parquet", "sweep.json",
         "report.html")


def test_one_and_two_workers_give_byte_identical_folders(tmp_path, base_file, capsys):
    sw = write_sweep_file(tmp_path, "host.cores_per_llc: [2, 3]\nvms[1].workload.duty: [0.25, 1.0]\n")
    for w in ("1", "2"):
        assert main(["sweep", sw, "-o", str(tmp_path / f"w{w}"), "--workers", w]) == 0
    for name in FILES:
        assert (tmp_path / "w1" / name).read_bytes() == (tmp_path / "w2" / name).read_bytes(), name
    runs = pq.read_table(tmp_path / "w1" / "runs.parquet").to_pandas()
    assert list(runs.columns[:5]) == ["host.cores_per_llc", "vms[1].workload.duty", "point", "replication", "seed"]
    assert runs["host.cores_per_llc"].tolist() == [2, 2, 2, 2, 3, 3, 3, 3]
    assert runs["replication"].tolist() == [0, 1] * 4


@pytest.mark.parametrize("pcpus", [1, 2, 3])
def test_busy_vms_ready_time_matches_fair_share(pcpus):
    """M always-runnable equal-share 1-vCPU VMs on P pCPUs: each runs P/M of the time when M > P,
    so its %RDY is 100 (1 - P/M); with M <= P it never waits."""
    sc = parse_scenario(BUSY_ONLY)
    counts = [1, 2, 3, 4, 5]
    sw = build_sweep(sc, {"host.cores_per_llc": [pcpus], "vms[0].count": counts}, replications=2, seed=5)
    summary = run_sweep(sw, workers=1)["summary"].to_pandas()
    got = summary[summary.metric == "mean(vm.%RDY)"]["mean"].to_numpy()
    want = np.array([100 * max(0.0, 1 - pcpus / m) for m in counts])
    assert np.allclose(got, want, atol=0.5), (got, want)
    used = summary[summary.metric == "host.%PCPU_UTIL"]["mean"].to_numpy()
    assert np.allclose(used, [100 * min(1.0, m / pcpus) for m in counts], atol=0.5)


@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=30),
       st.sampled_from([0.8, 0.9, 0.95, 0.99]))
@settings(max_examples=100, deadline=None)
def test_t_interval_matches_scipy_interval(values, conf):
    n, mean, sd, low, high = t_interval(np.array(values), conf)
    assert n == len(values)
    assert math.isclose(mean, statistics.fmean(values), rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(sd, statistics.stdev(values), rel_tol=1e-7, abs_tol=1e-9)
    if statistics.stdev(values) > 0:
        lo, hi = stats.t.interval(conf, n - 1, loc=statistics.fmean(values), scale=statistics.stdev(values) / n**0.5)
        assert math.isclose(low, lo, rel_tol=1e-6, abs_tol=1e-6) and math.isclose(high, hi, rel_tol=1e-6, abs_tol=1e-6)
    else:  # equal values: a zero-width interval (up to rounding in the sd)
        assert math.isclose(low, mean, abs_tol=1e-9) and math.isclose(high, mean, abs_tol=1e-9)


def test_one_replication_has_no_interval():
    n, mean, sd, low, high = t_interval(np.array([3.0]))
    assert (n, mean) == (1, 3.0) and math.isnan(sd) and math.isnan(low) and math.isnan(high)


def test_a_run_failing_midway_leaves_nothing(tmp_path, base_file, capsys):
    # the second point reserves more than the 2-pCPU host holds: admission control refuses it
    # when that run starts, after the first point ran
    sw = write_sweep_file(tmp_path, "vms[1].cpu.reservation: [0MHz, 9000MHz]\n", replications=1)
    out = tmp_path / "out"
    assert main(["sweep", sw, "-o", str(out), "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_existing_folder_needs_force(tmp_path, base_file, capsys):
    sw = write_sweep_file(tmp_path, "host.cores_per_llc: [2]\n", replications=1)
    out = tmp_path / "out"
    assert main(["sweep", sw, "-o", str(out), "--workers", "1"]) == 0
    before = (out / "runs.parquet").read_bytes()
    assert main(["sweep", sw, "-o", str(out), "--workers", "1"]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["sweep", sw, "-o", str(out), "--workers", "1", "--force"]) == 0
    assert (out / "runs.parquet").read_bytes() == before
    other = tmp_path / "notasweep"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    assert main(["sweep", sw, "-o", str(other), "--workers", "1", "--force"]) == 2
    assert (other / "keep.txt").exists()


def test_plot_arguments_checked_before_running(tmp_path, base_file, capsys):
    sw = write_sweep_file(tmp_path, "host.cores_per_llc: [2]\n", replications=1)
    assert main(["sweep", sw, "-o", str(tmp_path / "o"), "--plot-x", "host.sockets"]) == 2
    assert "--plot-x" in capsys.readouterr().err
    assert main(["sweep", sw, "-o", str(tmp_path / "o"), "--plot-metric", "vm[busy-1].%RDY"]) == 2
    assert "--metric" in capsys.readouterr().err
    assert main(["sweep", sw, "-o", str(tmp_path / "o"), "--workers", "1", "--metric", "vm[busy-1].%RDY",
                 "--plot-metric", "vm[busy-1].%RDY"]) == 0
    html = (tmp_path / "o" / "report.html").read_text()
    assert "vm[busy-1].%RDY against host.cores_per_llc" in html


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (from /proc)."""
    from pathlib import Path

    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the pool's processes through /proc (Linux)")
def test_ctrl_c_leaves_nothing(tmp_path, base_file):
    """Ctrl-C in a terminal reaches the command and its workers: exit 130, no folder, no temp."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    (tmp_path / "base.yaml").write_text(BASE_YAML.replace("duration: 1s", "duration: 12h"))
    sw = write_sweep_file(tmp_path, "host.cores_per_llc: [2, 3, 4, 5]\n", replications=20)
    vmtwin = str(Path(sys.executable).parent / "vmtwin")
    proc = subprocess.Popen([vmtwin, "sweep", sw, "-o", str(tmp_path / "out"), "--workers", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "VMTWIN_TRACE_TEARDOWN": "1"})
    # wait until the command runs its pool (it has a child process, the fork server): Ctrl-C
    # during vmtwin's own start-up is another matter (tests/python/cli)
    deadline = time.monotonic() + 60
    while not _children(proc.pid):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the sweep's pool did not start within 60 s"
        time.sleep(0.2)
    time.sleep(0.5)
    assert proc.poll() is None, "the sweep ended within 0.5 s: its runs are too short to interrupt"
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err, err
    if "shutting down took over" in err:  # bounded by the command; recorded to find what blocked
        import warnings

        warnings.warn(f"the interrupted sweep's teardown blocked:\n{err}")
    assert not (tmp_path / "out").exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_runs_from_another_build_are_refused():
    from vmtwin.exceptions import VmtwinError
    from vmtwin.sweep import runner

    results = [{"build": runner.build_id()}, {"build": "0.0.0+other"}]
    with pytest.raises(VmtwinError, match=r"another vmtwin build \(0\.0\.0\+other\)"):
        runner._same_build(results)
    assert runner._same_build(results[:1]) == results[:1]


def test_stopping_a_pool_leaves_no_thread_closing_its_pipes():
    """After ``_stop`` the pool's manager thread has finished: the interpreter's exit hook for
    process pools would otherwise write to a pipe that thread is closing (CI once printed that
    OSError's traceback after ``interrupted``)."""
    import multiprocessing
    import time

    from vmtwin.sweep import runner

    ctx = multiprocessing.get_context("forkserver")
    runner._start_fork_server()
    pool = runner._start_pool(ctx, 2)
    manager = pool._executor_manager_thread
    busy = [pool.submit(time.sleep, 60) for _ in range(4)]
    time.sleep(0.2)  # the workers are inside their tasks
    runner._stop(pool)
    assert not manager.is_alive()
    assert all(f.done() for f in busy)

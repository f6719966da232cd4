"""Bad input through the CLI: exit status 2, one ``error:`` line, no traceback, nothing written."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cli_helpers import (
    BAD,
    PLANETLAB_OK,
    SHARED_DATA,
    Outcome,
    assert_user_error,
    needs_shared_data,
    tree,
    vmtwin_command,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scenario"))
from bad_corpus import CLASSES, CORPUS, BadFile  # noqa: E402 - the corpus lives with the scenario tests

#: Per bad input through the real command: CPU time and address space (the issue's promise), as
#: kernel limits on the child (RLIMIT_CPU kills it past 5 CPU-seconds, so a busy shared machine
#: does not fail the test); the wall-clock bound only catches a child blocked without using CPU.
SUBPROCESS_CPU_SECONDS = 5
SUBPROCESS_BYTES = 2**30
SUBPROCESS_WALL_SECONDS = 60

OK_SCENARIO = """\
name: small
duration: 10s
host: {cores_per_llc: 2, core_mhz: 2600MHz, memory: 16GB}
vms:
  - {name: a, workload: {type: cpu_bound, duty: 0.5}}
"""


def _trace_scenario(trace: Path) -> str:
    return f"""\
duration: 10s
host: {{cores_per_llc: 2, core_mhz: 2600MHz, memory: 16GB}}
vms:
  - {{name: steady, workload: {{type: cpu_bound, duty: 0.5}}}}
  - {{name: replay, workload: {{type: trace, format: planetlab, path: {trace}}}}}
"""


@pytest.fixture
def work(tmp_path) -> Path:
    """An empty folder for the output; tests check that nothing appears in it."""
    d = tmp_path / "work"
    d.mkdir()
    return d


def test_bad_corpus_is_there():
    assert len(BAD) >= 150, "tests/python/scenario/bad/*.yaml went missing"


def _one_per_class() -> list[BadFile]:
    return [files[0] for _, files in sorted(CLASSES.items())]


def _assert_refused(res, bad: BadFile, out: Path, work: Path) -> None:
    assert_user_error(res, bad.expect)
    assert len(res.stderr.splitlines()) < 20
    assert res.stdout == ""
    assert not out.exists()
    assert [p.name for p in work.iterdir()] == []  # no half-written or temporary folder either


@pytest.mark.parametrize("bad", [f for f in CORPUS if not f.heavy], ids=lambda f: f.path.stem)
def test_bad_scenario_file_run(cli, work, tmp_path, bad):
    # in this process, so fast; the heavy files (seconds each) run in the limited subprocesses below
    if bad.needs_shared_data:
        needs_shared_data("shared/data")
    out = work / "out"
    _assert_refused(cli("run", bad.prepare(tmp_path / "setup"), "-o", out), bad, out, work)


@pytest.mark.parametrize("bad", _one_per_class(), ids=lambda f: f.cls)
def test_bad_scenario_file_validate(cli, work, tmp_path, bad):
    if bad.needs_shared_data:
        needs_shared_data("shared/data")
    res = cli("validate", bad.prepare(tmp_path / "setup"))
    _assert_refused(res, bad, work / "out", work)


def _limit_child() -> None:  # runs in the child, before exec
    resource.setrlimit(resource.RLIMIT_AS, (SUBPROCESS_BYTES, SUBPROCESS_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (SUBPROCESS_CPU_SECONDS, SUBPROCESS_CPU_SECONDS))


def _heaviest_per_class() -> list[BadFile]:
    """Each class's costliest file (marked ``# heavy: yes``, else the biggest), for the real command."""
    return [max(files, key=lambda f: (f.heavy, f.path.stat().st_size, f.path.name)) for _, files in sorted(CLASSES.items())]


def test_bad_input_through_the_real_command_under_limits(tmp_path):
    """The installed command, one process per class: exit 2 within 5 CPU-s and 1 GB, nothing written."""
    picked = [f for f in _heaviest_per_class() if not (f.needs_shared_data and not SHARED_DATA.is_dir())]

    def one(k_bad):
        k, bad = k_bad
        work = tmp_path / f"w{k}"
        work.mkdir()
        scenario = bad.prepare(tmp_path / f"setup{k}")
        out = work / "out"
        try:
            p = subprocess.run([*vmtwin_command(), "run", str(scenario), "-o", str(out)], capture_output=True,
                               text=True, timeout=SUBPROCESS_WALL_SECONDS, preexec_fn=_limit_child, check=False)
        except subprocess.TimeoutExpired:
            return bad, work, out, None
        return bad, work, out, Outcome(p.returncode, p.stdout, p.stderr)

    with ThreadPoolExecutor(max_workers=2) as pool:  # CI has 2 cores
        results = list(pool.map(one, enumerate(picked)))
    for bad, work, out, res in results:
        assert res is not None, f"{bad.path.name}: blocked for {SUBPROCESS_WALL_SECONDS} s"
        assert res.returncode != -signal.SIGXCPU, f"{bad.path.name}: over {SUBPROCESS_CPU_SECONDS} CPU-seconds"
        assert "MemoryError" not in res.stderr, f"{bad.path.name}: over {SUBPROCESS_BYTES} bytes"
        _assert_refused(res, bad, out, work)
    assert len(results) >= 14
    assert all(f in picked for f in CORPUS if f.heavy), "a heavy file must be its class's sample"


@pytest.mark.parametrize("command", ["run", "validate"])
def test_missing_scenario_file(cli, work, command):
    missing = work / "nope.yaml"
    res = cli("run", missing, "-o", work / "out") if command == "run" else cli("validate", missing)
    assert_user_error(res, "an existing scenario file")
    assert str(missing) in res.stderr
    assert list(work.iterdir()) == []


@pytest.mark.parametrize("command", ["run", "validate"])
@pytest.mark.parametrize(
    "trace_text, expected",
    [
        (None, "allowed: an existing PlanetLab trace file"),
        ("10\n20\nabc\n30\n", ":3: got 'abc'"),
        ("10\n250\n", ":2: got 250"),
        ("", "an empty file"),
    ],
    ids=["missing", "not-a-number", "over-100", "empty"],
)
def test_bad_trace_file(cli, tmp_path, work, command, trace_text, expected):
    trace = tmp_path / "traces" / "host42"
    if trace_text is not None:
        trace.parent.mkdir()
        trace.write_text(trace_text)
    scenario = tmp_path / "trace.yaml"
    scenario.write_text(_trace_scenario(trace))
    out = work / "out"
    res = cli("run", scenario, "-o", out) if command == "run" else cli("validate", scenario)
    assert_user_error(res, expected)
    assert "vms[1].workload.path" in res.stderr
    assert list(work.iterdir()) == []


def test_good_trace_file_runs(cli, tmp_path, work):
    # the control for test_bad_trace_file: the same scenario with a readable trace runs
    scenario = tmp_path / "trace.yaml"
    scenario.write_text(_trace_scenario(PLANETLAB_OK))
    res = cli("run", scenario, "-o", work / "out", "-q")
    assert res.returncode == 0, res.stderr
    assert (work / "out" / "manifest.json").is_file()


ADMISSION = """\
duration: 10s
host: {cores_per_llc: 4, core_mhz: 2600MHz, memory: 16GB}
vms:
  - {name: first, vcpus: 4, cpu: {reservation: 10400MHz}, workload: {type: cpu_bound, duty: 1.0}}
  - {name: second, vcpus: 4, cpu: {reservation: 10400MHz}, workload: {type: cpu_bound, duty: 1.0}}
"""


def test_reservation_beyond_capacity_is_refused(cli, tmp_path, work):
    scenario = tmp_path / "admission.yaml"
    scenario.write_text(ADMISSION)
    res = cli("run", scenario, "-o", work / "out")
    assert_user_error(res, "shortfall")
    assert "admission control" in res.stderr and "'second'" in res.stderr
    assert list(work.iterdir()) == []
    # `validate` must not call a scenario fine that `run` refuses
    assert_user_error(cli("validate", scenario), "shortfall")


def test_engine_side_scheduler_bound_is_a_user_error(cli, tmp_path, work):
    # checked by the engine (it spans two fields), reported as the schema's own checks are
    scenario = tmp_path / "dormant.yaml"
    scenario.write_text("host: {cores_per_llc: 2}\nvms:\n  - {name: a, workload: {type: idle}}\n"
                        "cpu_scheduler: {limit_dormant_max: 0.01}\n")
    for args in (("run", scenario, "-o", work / "out"), ("validate", scenario)):
        assert_user_error(cli(*args), "cpu_scheduler.limit_dormant_max: got 0.01; allowed: ")


def test_reservation_that_fits_is_accepted(cli, tmp_path, work):
    # control: half the reservations fit on the same host
    scenario = tmp_path / "fits.yaml"
    scenario.write_text(ADMISSION.replace("10400MHz", "5200MHz"))
    assert cli("validate", scenario).returncode == 0
    res = cli("run", scenario, "-o", work / "out", "-q")
    assert res.returncode == 0, res.stderr


def test_unknown_reproduce_id(cli):
    res = cli("reproduce", "cpu-nonsense")
    assert_user_error(res, "'cpu-nonsense'")
    for known in ("cpu-shares", "cpu-reservation", "cpu-limit"):
        assert known in res.stderr  # the message lists what is allowed


def test_reproduce_without_id(cli):
    assert_user_error(cli("reproduce"), "--list or --all")


@pytest.mark.parametrize(
    "extra, expected",
    [
        (["--seed", "-1"], "--seed: got -1"),
        (["--seed", str(2**64)], "--seed: got 18446744073709551616"),
        (["--duration", "10m"], "--duration: got '10m'"),
        (["--duration", "10 parsecs"], "--duration: got '10 parsecs'"),
        (["--duration", "30"], "--duration: got '30'"),  # a unit is mandatory
        (["--duration", "0s"], "--duration: got '0s'"),
        (["--duration", "1s"], "at least the sample interval"),  # shorter than one 2 s sample
        (["--duration", "1e999999h"], "--duration: got '1e999999h'"),  # was a decimal.Overflow traceback
        (["--duration", "1e30week"], "--duration: got '1e30week'"),
    ],
    ids=["seed-negative", "seed-too-big", "duration-m", "duration-parsecs", "duration-bare", "duration-zero",
         "duration-below-sample", "duration-overflow", "duration-overflow-week"],
)
def test_bad_run_arguments(cli, tmp_path, work, extra, expected):
    scenario = tmp_path / "ok.yaml"
    scenario.write_text(OK_SCENARIO)
    res = cli("run", scenario, "-o", work / "out", *extra)
    assert_user_error(res, expected)
    assert list(work.iterdir()) == []


def test_argparse_errors_exit_2(cli, tmp_path, work):
    scenario = tmp_path / "ok.yaml"
    scenario.write_text(OK_SCENARIO)
    res = cli("run", scenario, "-o", work / "out", "--seed", "abc")
    assert res.returncode == 2 and "invalid int value" in res.stderr
    res = cli("run", scenario)  # no -o
    assert res.returncode == 2 and "-o/--output" in res.stderr
    assert list(work.iterdir()) == []


def test_foreign_output_folder_is_refused_and_untouched(cli, tmp_path):
    scenario = tmp_path / "ok.yaml"
    scenario.write_text(OK_SCENARIO)
    out = tmp_path / "precious"
    (out / "sub").mkdir(parents=True)
    (out / "thesis.tex").write_text("\\chapter{Results}\n")
    (out / "sub" / "data.csv").write_bytes(b"a,b\n1,2\n")
    before = tree(out)
    res = cli("run", scenario, "-o", out)
    assert_user_error(res, "not a vmtwin results folder")
    assert tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.yaml", "precious"]


def test_output_that_is_a_file_is_refused(cli, tmp_path):
    scenario = tmp_path / "ok.yaml"
    scenario.write_text(OK_SCENARIO)
    out = tmp_path / "notes.txt"
    out.write_text("keep me")
    assert_user_error(cli("run", scenario, "-o", out))
    assert out.read_text() == "keep me"


def test_results_folder_is_replaced_with_force_and_survives_a_failed_run(cli, tmp_path):
    scenario = tmp_path / "ok.yaml"
    scenario.write_text(OK_SCENARIO)
    out = tmp_path / "out"
    assert cli("run", scenario, "-o", out, "-q", "--seed", "1").returncode == 0
    first = tree(out)
    # a failing run leaves the previous results exactly as they were
    assert_user_error(cli("run", scenario, "-o", out, "--seed", "-1"))
    bad = tmp_path / "bad.yaml"
    bad.write_text(OK_SCENARIO.replace("duty: 0.5", "duty: 5"))
    assert_user_error(cli("run", bad, "-o", out), "vms[0].workload.duty: got 5")
    assert tree(out) == first
    # an earlier run's results are replaced only with --force
    assert_user_error(cli("run", scenario, "-o", out, "-q", "--seed", "2"), "--force")
    assert tree(out) == first
    assert cli("run", scenario, "-o", out, "-q", "--seed", "2", "--force").returncode == 0
    assert tree(out)["vm.parquet"] != first["vm.parquet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml", "ok.yaml", "out"]


def test_report_of_a_non_results_folder(cli, tmp_path):
    assert_user_error(cli("report", tmp_path / "missing"), "not a vmtwin results folder")
    assert_user_error(cli("report", tmp_path), "not a vmtwin results folder")
    assert list(tmp_path.iterdir()) == []


# --- the real command, in a subprocess: exit status and stderr as the shell sees them ----------


def test_installed_command_reports_bad_scenario(vmtwin_proc, work):
    bad = next(f for f in CORPUS if f.path.name == "duty_zero.yaml")
    res = vmtwin_proc("run", bad.path, "-o", work / "out")
    assert_user_error(res, bad.expect)
    assert list(work.iterdir()) == []


def test_installed_command_reports_admission_control(vmtwin_proc, tmp_path, work):
    scenario = tmp_path / "admission.yaml"
    scenario.write_text(ADMISSION)
    res = vmtwin_proc("run", scenario, "-o", work / "out")
    assert_user_error(res, "shortfall")
    assert res.stdout == ""
    assert list(work.iterdir()) == []

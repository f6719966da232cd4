"""perf stat -x parsing on output recorded on this machine (data/SOURCE.md), multiplexed and malformed files."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from vmtwin.exceptions import ScenarioError
from vmtwin.methodology import Run, RunMetadata
from vmtwin.methodology.inputs import parse_canonical_csv, read_counters
from vmtwin.methodology.perfstat import parse

DATA = Path(__file__).with_name("data")
META = RunMetadata(platform="native", source="native_os", work_unit="run", work_count=1)


def _oracle(path: Path, sep: str = ","):
    """An independent reading: the csv module, the value field located by the known layout."""
    rows = [r for r in csv.reader(path.read_text().splitlines(), delimiter=sep) if r and not r[0].startswith("#")]
    return rows


def test_aggregated_software_events_and_not_supported_hardware_events():
    recs = parse((DATA / "perf_aggregated.csv").read_text(), path="agg")
    by = {(r.event, r.mode): r for r in recs}
    expected = {row[2]: row[0] for row in _oracle(DATA / "perf_aggregated.csv")}
    assert by["task_clock_ms", "all"].value == float(expected["task-clock"]) and by["task_clock_ms", "all"].unit == "msec"
    assert by["page_faults", "all"].value == float(expected["page-faults"])
    assert by["context_switches", "all"].value == float(expected["context-switches"])
    for key in (("cycles", "all"), ("instructions", "all"), ("cycles", "user"), ("instructions", "kernel")):
        assert by[key].value is None and by[key].status == "not supported"
    assert all(r.timestamp is None and r.aggregate is None for r in recs)
    assert all(r.line >= 3 for r in recs)  # the "# started on" comment and the blank line are skipped


def test_interval_output_sums_the_interval_deltas():
    path = DATA / "perf_interval.csv"
    recs = parse(path.read_text())
    rows = _oracle(path)
    assert len({r.timestamp for r in recs}) == len({row[0].strip() for row in rows}) >= 5
    run = Run.build(META, read_counters(path))
    for event, name in (("task_clock_ms", "task-clock"), ("page_faults", "page-faults"),
                        ("context_switches", "context-switches")):
        assert run.total(event) == pytest.approx(sum(float(row[1]) for row in rows if row[3] == name))


@pytest.mark.parametrize("name,ts", [("perf_percpu.csv", False), ("perf_interval_percpu.csv", True)])
def test_per_cpu_output_sums_over_cpus(name, ts):
    path = DATA / name
    recs = parse(path.read_text())
    assert {r.aggregate for r in recs} == {"CPU0", "CPU1"}
    assert all((r.timestamp is not None) == ts for r in recs)
    rows = _oracle(path)
    off = 1 if ts else 0
    run = Run.build(META, read_counters(path))
    assert run.total("context_switches") == sum(float(r[off + 1]) for r in rows if r[off + 3] == "context-switches")


def test_repeat_runs_keep_the_variance_and_another_separator_is_detected():
    recs = parse((DATA / "perf_repeat_semicolon.csv").read_text())
    by = {r.event: r for r in recs}
    assert by["task_clock_ms"].variance_percent == 3.59 and by["task_clock_ms"].value == 125.99
    assert by["instructions"].status == "not supported"


def test_multiplexed_counts_keep_their_scaling_and_not_counted_is_na():
    run = Run.build(META, read_counters(DATA / "perf_multiplexed_synthetic.csv"))
    walks = run.counter("dtlb_walks", "user")
    assert walks.value == 3_548_000 and walks.scaling == 4.0
    assert run.counter("dtlb_walk_cycles", "kernel").scaling == 2.0
    assert run.counter("cycles", "user").scaling == 1.0
    ept = run.counter("ept_walk_cycles", "user")
    assert ept.value is None and ept.status == "not counted"
    assert run.counter("ept_walk_cycles", "kernel").status == "not supported"
    assert run.total("ept_walk_cycles") is None  # one N/A part makes the total N/A, never a silent 0


def test_per_core_aggregation_with_cpu_count():
    text = "S0-D0-C0,2,1000,,cycles,500,100.00,,\nS0-D0-C1,2,3000,,cycles,500,100.00,,\n"
    recs = parse(text)
    assert [(r.aggregate, r.aggregated_cpus, r.value) for r in recs] == [("S0-D0-C0", 2, 1000), ("S0-D0-C1", 2, 3000)]


@pytest.mark.parametrize("text,line,fragment", [
    ("1000,,cycles,10,100.00,,\ngarbage here\n", 2, "garbage here"),
    ("1000,,cycles,10,100.00,,\n0.1,2000,,cycles,10,100.00,,\n", 2, "same fields"),
    ("1000,,cycles,ten,100.00,,\n", 1, "two numbers"),
    ("1000,,cycles,10,170.00,,\n", 1, "percentage from 0 to 100"),
    ("# only a comment\n\n", None, "no counter lines"),
])
def test_malformed_output_names_the_line(text, line, fragment):
    with pytest.raises(ScenarioError) as info:
        parse(text, path="bad.csv")
    msg = str(info.value)
    assert fragment in msg
    assert msg.startswith(f"bad.csv:{line}" if line else "bad.csv")


def test_canonical_csv_and_its_errors():
    counters = parse_canonical_csv("event,mode,value,scaling,status\ncycles,user,10,1.5,\n"
                                   "EPT.WALK_CYCLES,kernel,N/A,,not supported\n", "c.csv")
    assert counters[0].event == "cycles" and counters[0].scaling == 1.5
    assert counters[1].event == "ept_walk_cycles" and counters[1].value is None
    with pytest.raises(ScenarioError, match=r"c.csv:3.mode: got 'both'"):
        parse_canonical_csv("event,mode,value\ncycles,user,1\ncycles,both,2\n", "c.csv")
    with pytest.raises(ScenarioError, match=r"c.csv:2.value: got 'x'"):
        parse_canonical_csv("event,mode,value\ncycles,user,x\n", "c.csv")
    with pytest.raises(ScenarioError, match=r"c.csv:1 \(header\)"):
        parse_canonical_csv("name,value\ncycles,1\n", "c.csv")

"""docs/reference/counters.md defines exactly the columns a run writes.

A short run of the quickstart scenario gives the real column lists of the ``host``, ``vm``,
``vcpu`` and ``pcpu`` tables and of the esxtop batch-mode export, and a short run with an
execution-speed profile those of ``vcpu_perf``; the page's section for each must define every one
of them (unit, meaning, computation) and nothing else. (The storage and memory tables are checked
by their own tests.)
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from vmtwin.export.esxtop import to_esxtop_csv
from vmtwin.scenario import parse_scenario
from vmtwin.simulation import Simulation

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "reference" / "counters.md"
SECTIONS = {"host": "## `host`", "vm": "## `vm`", "vcpu": "## `vcpu`", "pcpu": "## `pcpu`",
            "vcpu_perf": "## `vcpu_perf`", "esxtop": "## esxtop export"}

# A VM with an execution-speed profile (docs/execution-speed.md), for the vcpu_perf table.
PERF_SCENARIO = """\
name: perf-columns
duration: 4s
host: {cores_per_llc: 4, core_mhz: 2400MHz}
vms:
  - name: db
    vcpus: 2
    workload: {type: cpu_bound, duty: 0.9}
    perf: {preset: tier1-oltp}
"""
ROW = re.compile(r"^\| `([^`]+)` \|(.*)\|\s*$")


def _documented() -> dict[str, dict[str, list[str]]]:
    """Per section of the page: column name -> its other cells (unit, meaning, computation)."""
    out: dict[str, dict[str, list[str]]] = {}
    current = None
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            current = next((k for k, h in SECTIONS.items() if line.strip() == h), None)
            if current:
                assert current not in out, f"{PAGE.name}: section {line!r} appears twice"
                out[current] = {}
            continue
        m = ROW.match(line)
        if current and m:
            assert m.group(1) not in out[current], f"{PAGE.name} [{current}]: `{m.group(1)}` defined twice"
            out[current][m.group(1)] = [c.strip() for c in m.group(2).split(" | ")]
    assert set(out) == set(SECTIONS), f"{PAGE.name}: sections {sorted(out)}, expected {sorted(SECTIONS)}"
    return out


def _esxtop_columns(path: Path) -> list[str]:
    """The export's header, host prefix dropped and each VM's instance written ``<n>:<vm>``."""
    with path.open(newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh))
    cols = [header[0]]
    for h in header[1:]:
        m = re.fullmatch(r"\\\\[^\\]+\\(.+)", h)
        assert m, f"esxtop column {h!r} is not a counter path \\\\host\\object\\counter"
        col = re.sub(r"^Group Cpu\(\d+:[^)]*\)", "Group Cpu(<n>:<vm>)", m.group(1))
        col = re.sub(r"^Physical Cpu\(\d+\)", "Physical Cpu(<n>)", col)
        cols.append(re.sub(r"^Vcpu\(\d+:[^)]*\)", "Vcpu(<n>:<vm>:<wid>:vmx-vcpu-<k>:<vm>)", col))
    return list(dict.fromkeys(cols))


HT_SCENARIO = """
name: ht
duration: 4s
host: {name: h, cores_per_llc: 2, threads_per_core: 2}
vms:
  - {name: a, vcpus: 1, workload: {type: cpu_bound, duty: 0.5}}
"""


@pytest.fixture(scope="module")
def actual(tmp_path_factory) -> dict[str, list[str]]:
    """Column lists of a 4-second quickstart run: its four tables and its esxtop export."""
    tmp = tmp_path_factory.mktemp("counters")
    sim = Simulation(ROOT / "scenarios" / "quickstart.yaml", duration="4s")
    sim.run()
    res = sim.write(tmp / "run")
    cols = {name: res.arrow(name).column_names for name in ("host", "vm", "vcpu", "pcpu")}
    assert sorted(res.tables) == ["host", "pcpu", "vcpu", "vm"], f"a new table {res.tables} needs a section in {PAGE.name}"
    cols["esxtop"] = _esxtop_columns(to_esxtop_csv(res, tmp / "esxtop.csv"))
    # a hyperthreaded host's export has the core columns too (esxtop shows CORE UTIL only there)
    ht = Simulation(parse_scenario(HT_SCENARIO))
    ht.run()
    cols["esxtop"] = list(dict.fromkeys(cols["esxtop"] + _esxtop_columns(to_esxtop_csv(ht.write(tmp / "ht"), tmp / "ht.csv"))))
    perf = Simulation(parse_scenario(PERF_SCENARIO))
    perf.run()
    cols["vcpu_perf"] = perf.write(tmp / "perf").arrow("vcpu_perf").column_names
    return cols


@pytest.mark.parametrize("table", list(SECTIONS))
def test_every_column_a_run_writes_is_defined(actual, table):
    missing = [c for c in actual[table] if c not in _documented()[table]]
    assert not missing, f"{PAGE.name} section {SECTIONS[table]!r} does not define {missing}"


@pytest.mark.parametrize("table", list(SECTIONS))
def test_no_column_is_defined_that_the_table_does_not_have(actual, table):
    extra = [c for c in _documented()[table] if c not in actual[table]]
    assert not extra, (f"{PAGE.name} section {SECTIONS[table]!r} defines {extra}, "
                       f"which the {table} {'export' if table == 'esxtop' else 'table'} does not have")


def test_each_definition_has_unit_meaning_and_computation():
    for table, cols in _documented().items():
        for col, cells in cols.items():
            assert len(cells) == 3 and all(cells), f"{PAGE.name} [{table}] `{col}`: want unit | meaning | how, got {cells}"


def test_page_is_linked_from_readme_and_guide():
    for doc in ("README.md", "docs/guide.md"):
        assert "docs/reference/counters.md" in (ROOT / doc).read_text(encoding="utf-8"), doc

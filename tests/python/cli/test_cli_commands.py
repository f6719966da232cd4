"""``vmtwin --version``, help texts, progress, ``vmtwin summary`` and ``vmtwin compare``."""

from __future__ import annotations

import io
import re
from importlib.metadata import version

import pyarrow.parquet as pq
import pytest
from cli_helpers import assert_user_error, run_vmtwin
from rich.console import Console

SCENARIO = """
name: cmds
seed: {seed}
duration: 10s
host: {{cores_per_llc: 2, core_mhz: 2000MHz}}
vms:
  - {{name: a, vcpus: 2, workload: {{type: cpu_bound, duty: 0.9, burst: 10ms}}}}
  - {{name: b, workload: {{type: cpu_bound, duty: 0.8}}, cpu: {{shares: {b_shares}}}}}
{extra}"""
EXTRA_VM = "  - {name: only-in-b, workload: {type: cpu_bound, duty: 0.3}}\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs differing in b's shares; B has one VM more. Returns (A, B, run A's stdout)."""
    from vmtwin.cli import main

    tmp = tmp_path_factory.mktemp("cmds")
    (tmp / "a.yaml").write_text(SCENARIO.format(seed=1, b_shares="low", extra=""))
    (tmp / "b.yaml").write_text(SCENARIO.format(seed=1, b_shares="high", extra=EXTRA_VM))
    res = run_vmtwin("run", tmp / "a.yaml", "-o", tmp / "A")
    assert res.returncode == 0, res.stderr
    assert main(["run", str(tmp / "b.yaml"), "-o", str(tmp / "B"), "-q"]) == 0
    return tmp / "A", tmp / "B", res.stdout


def _table_rows(text: str) -> dict[str, list[str]]:
    """Rows of a rich table (box characters as separators): first cell -> the other cells."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]
        if cells and cells[0] and not set(cells[0]) <= set("━─┳╇┃ "):
            rows[cells[0]] = cells[1:]
    return rows


def test_version(vmtwin_proc):
    res = vmtwin_proc("--version")
    assert res.returncode == 0
    assert res.stdout.strip() == f"vmtwin {version('vmtwin')}"


@pytest.mark.parametrize("command", ["", "run", "validate", "schema", "report", "export", "summary",
                                     "compare", "reproduce"])
def test_every_help_has_examples(cli, command):
    res = cli(*([command] if command else []), "--help")
    assert res.returncode == 0
    assert re.search(r"^examples?:$", res.stdout, re.M), res.stdout
    assert "  vmtwin " + (command or "run") in res.stdout  # an example of this very command


def test_summary_repeats_the_runs_table(runs, vmtwin_proc):
    a, _, run_stdout = runs
    res = vmtwin_proc("summary", a)
    assert res.returncode == 0, res.stderr
    table = res.stdout[res.stdout.index("mean over the run"):]
    assert table == run_stdout[run_stdout.index("mean over the run"):]
    rows = _table_rows(table)
    vm = pq.read_table(a / "vm.parquet").to_pandas()
    for name in ("a", "b"):
        g = vm[vm.vm == name]
        assert rows[name][1] == f"{g['%USED'].mean():.1f}"
        assert rows[name][2] == f"{g['%RDY'].mean():.1f}"
        assert rows[name][3] == f"{g['%RDY'].mean() / g['vcpus'].iloc[0]:.1f}"
    assert "scenario cmds, seed 1, 10 s simulated" in res.stdout


def test_summary_of_a_non_results_folder(cli, tmp_path):
    assert_user_error(cli("summary", tmp_path), "not a vmtwin results folder")


def test_compare_side_by_side(runs, cli):
    a, b, _ = runs
    res = cli("compare", a, b)
    assert res.returncode == 0, res.stderr
    rows = _table_rows(res.stdout)
    va = pq.read_table(a / "vm.parquet").to_pandas()
    vb = pq.read_table(b / "vm.parquet").to_pandas()
    for name in ("a", "b"):
        ra, rb = va[va.vm == name]["%RDY"].mean(), vb[vb.vm == name]["%RDY"].mean()
        # columns: %USED A, B, B-A, %RDY A, B, B-A, ...
        assert rows[name][3:6] == [f"{ra:.1f}", f"{rb:.1f}", f"{round(rb - ra, 1) + 0.0:+.1f}"]
    # b's shares went from low to high: its ready time fell
    assert float(rows["b"][5]) < 0
    assert rows["only-in-b"][0] == "–" and rows["only-in-b"][2] == "–"
    assert rows["only-in-b"][1] == f"{vb[vb.vm == 'only-in-b']['%USED'].mean():.1f}"
    ha = pq.read_table(a / "host.parquet").to_pandas()["%PCPU_UTIL"].mean()
    hb = pq.read_table(b / "host.parquet").to_pandas()["%PCPU_UTIL"].mean()
    assert f"host mean %PCPU_UTIL: A {ha:.1f}, B {hb:.1f}, B - A {round(hb - ha, 1) + 0.0:+.1f}" in res.stdout


def test_compare_needs_two_results_folders(runs, cli, tmp_path):
    assert_user_error(cli("compare", runs[0], tmp_path), "not a vmtwin results folder")


def test_progress_shows_percent_and_time_left(monkeypatch, tmp_path):
    import vmtwin.cli as cli_mod

    buf = io.StringIO()
    monkeypatch.setattr(cli_mod, "err", Console(file=buf, force_terminal=True, width=200))
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO.format(seed=2, b_shares="normal", extra=""))
    assert cli_mod.main(["run", str(scenario), "-o", str(tmp_path / "out")]) == 0
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buf.getvalue())
    assert "100%" in text
    assert re.search(r"left\s+(\d+:)?\d+:\d\d", text), text[-500:]
    assert "10/10 s simulated" in text


def test_run_needs_force_to_replace_a_run(cli, tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO.format(seed=3, b_shares="normal", extra=""))
    out = tmp_path / "out"
    assert cli("run", scenario, "-o", out, "-q").returncode == 0
    first = (out / "vm.parquet").read_bytes()
    assert_user_error(cli("run", scenario, "-o", out, "-q", "--seed", "4"), str(out))
    assert (out / "vm.parquet").read_bytes() == first
    assert cli("run", scenario, "-o", out, "-q", "--seed", "4", "--force").returncode == 0
    assert (out / "vm.parquet").read_bytes() != first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "s.yaml"]  # no leftovers


def test_report_with_a_compare_section(runs, cli, tmp_path):
    from vmtwin.report.html import COMPARE_FIGURE_ID, FIGURE_IDS

    a, b, _ = runs
    page_path = tmp_path / "cmp.html"
    res = cli("report", a, "-o", page_path, "--compare", b)
    assert res.returncode == 0, res.stderr
    page = page_path.read_text(encoding="utf-8")
    assert re.findall(r'<div class="figure" id="(fig-[a-z0-9-]+)">', page) == [*FIGURE_IDS, COMPARE_FIGURE_ID]
    assert "<h2>Compared with another run</h2>" in page
    table = page[page.index('<table id="compare"'):]
    table = table[:table.index("</table>")]
    cells = {m.group(1): re.findall(r">([^<]*)</td>", m.group(0))
             for m in re.finditer(r'<tr><td data-v="([^"]+)">.*?</tr>', table)}
    va = pq.read_table(a / "vm.parquet").to_pandas()
    vb = pq.read_table(b / "vm.parquet").to_pandas()
    ra, rb = va[va.vm == "b"]["%RDY"].mean(), vb[vb.vm == "b"]["%RDY"].mean()
    assert cells["b"][4:7] == [f"{ra:.1f}", f"{rb:.1f}", f"{round(rb - ra, 1) + 0.0:+.1f}"]
    assert cells["only-in-b"][1] == "–"
    ha = pq.read_table(a / "host.parquet").to_pandas()["used_mhz"].mean()
    assert f"mean used_mhz A {ha:.0f}" in page

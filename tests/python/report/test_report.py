"""Tests for vmtwin.report: page structure, determinism, summary numbers, and a real browser."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from html_table import table_rows
from plotly.offline import get_plotlyjs

from vmtwin.report import render_report, vm_summary
from vmtwin.report.html import FIGURE_IDS
from vmtwin.results import Results, columns_from_engine, write_results

MANIFEST = {"scenario_name": "edge", "seed": 1, "duration_s": 10.0, "sample_interval_s": 2.0,
            "wall_time_s": 0.01, "event_count": 10, "vmtwin_version": "0.1.0"}


def test_report_structure(results_dir):
    path = render_report(results_dir)
    assert path == results_dir / "report.html"
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "<title>vmtwin report: three-vms</title>" in page
    assert "<h1>vmtwin report: three-vms</h1>" in page
    ids = re.findall(r'<div class="figure" id="(fig-[a-z0-9-]+)">', page)
    assert ids == FIGURE_IDS
    assert page.index('id="report-ok"') > page.index(f'id="{FIGURE_IDS[-1]}"')
    # plotly.js inlined exactly once; nothing fetched from the network
    assert page.count(get_plotlyjs()[:500]) == 1
    assert not re.search(r'<script[^>]+src=', page)
    outside_plotlyjs = page.replace(get_plotlyjs(), "")
    assert "http://" not in outside_plotlyjs and "https://" not in outside_plotlyjs
    for fig_id in FIGURE_IDS:
        assert f'id="plot-{fig_id[4:]}"' in page


def test_summary_table_matches_the_data(results_dir):
    page = render_report(results_dir).read_text(encoding="utf-8")
    rows = table_rows(page, "vm-summary")
    vm = Results(results_dir).vm
    assert [r[0] for r in rows] == ["vm0", "web1", "db2"]
    by_name = {r[0]: r for r in rows}
    assert by_name["vm0"][1:5] == ["2", "2000", "0", "unlimited"]
    assert by_name["web1"][1:5] == ["1", "1000", "500", "1000"]
    db2 = vm[vm["vm"] == "db2"]
    assert by_name["db2"][5] == f'{db2["%USED"].mean():.1f}'
    assert by_name["db2"][6] == f'{db2["%RDY"].mean():.1f}'
    assert by_name["web1"][7] == f'{vm[vm["vm"] == "web1"]["%MLMTD"].mean():.1f}'
    assert by_name["db2"][8] == f'{np.percentile(db2["%RDY"], 95):.1f}'


def test_vm_summary_frame(results_dir):
    s = vm_summary(Results(results_dir).vm)
    assert s["vm"].tolist() == ["vm0", "web1", "db2"]
    assert np.isnan(s.loc[0, "limit_mhz"]) and s.loc[1, "limit_mhz"] == 1000
    assert (s["p95 %RDY"] >= s["mean %RDY"] * 0.5).all()


def test_report_is_deterministic(tmp_path, results_dir):
    # Same results in another folder, rendered twice: identical bytes.
    copy = tmp_path / "copy"
    shutil.copytree(results_dir, copy)
    a = render_report(results_dir, tmp_path / "a.html").read_bytes()
    b = render_report(copy, tmp_path / "b.html").read_bytes()
    c = render_report(Results(copy), tmp_path / "c.html").read_bytes()
    assert a == b == c
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_report_without_limits_or_vms(tmp_path, synthetic):
    raw, names = synthetic.engine_raw(vms=[("solo", 2, 2000, 0, None, 0.5)], samples=5)
    out = write_results(tmp_path / "solo", columns_from_engine(raw, names, "esx01"), MANIFEST)
    page = render_report(out).read_text(encoding="utf-8")
    assert "No VM has a CPU limit" in page

    raw, names = synthetic.engine_raw(vms=[], samples=5)
    out = write_results(tmp_path / "empty", columns_from_engine(raw, names, "esx01"), MANIFEST)
    page = render_report(out).read_text(encoding="utf-8")
    assert re.findall(r'<div class="figure" id="(fig-[a-z0-9-]+)">', page) == FIGURE_IDS


def test_names_are_escaped(tmp_path, synthetic):
    raw, names = synthetic.engine_raw(vms=[("<b>x&y</b>", 1, 1000, 0, 500, 0.2)], samples=3)
    manifest = MANIFEST | {"scenario_name": "<script>alert(1)</script>"}
    out = write_results(tmp_path / "r", columns_from_engine(raw, names, "esx01"), manifest)
    page = render_report(out).read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in page
    assert "&lt;b&gt;x&amp;y&lt;/b&gt;" in page


def test_not_a_results_folder(tmp_path):
    with pytest.raises(ValueError, match="not a vmtwin results folder"):
        render_report(tmp_path)


# --- headless Chromium ---------------------------------------------------------------------

BROWSER_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--virtual-time-budget=5000",
]


def _browser() -> str:
    """Path of chromium; skip (or fail when VMTWIN_REQUIRE_BROWSER=1) when it is missing."""
    found = shutil.which("chromium") or (
        "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None
    )
    if found:
        return found
    if os.environ.get("VMTWIN_REQUIRE_BROWSER", "") not in ("", "0"):
        pytest.fail(
            "chromium not found but VMTWIN_REQUIRE_BROWSER is set (apt-get install chromium)"
        )
    pytest.skip("chromium not installed (set VMTWIN_REQUIRE_BROWSER=1 to make this a failure)")


def _run(browser: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    return subprocess.run(
        [browser, *BROWSER_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True, timeout=180, check=False,
    )


def rendered_dom(dom: subprocess.CompletedProcess) -> str:
    """The DOM Chromium dumped, checked: every figure in order, each drawn by plotly."""
    assert dom.returncode == 0, dom.stderr.decode(errors="replace")[-2000:]
    html = dom.stdout.decode("utf-8", errors="replace")
    assert 'id="report-ok"' in html
    starts = [(m.start(), m.group(1)) for m in
              re.finditer(r'<div class="figure" id="(fig-[a-z0-9-]+)">', html)]
    assert [fid for _, fid in starts] == FIGURE_IDS
    ends = [s for s, _ in starts[1:]] + [html.index('id="report-ok"')]
    for (start, fig_id), end in zip(starts, ends):
        chunk = html[start:end]
        assert 'class="main-svg"' in chunk, f"{fig_id} was not rendered by plotly"
        assert 'class="plot-container plotly"' in chunk, fig_id
    return html


def assert_screenshot(browser: str, tmp_path: Path, url: str) -> None:
    """A full-page screenshot of ``url`` is a real PNG with content (not a blank page)."""
    shot = tmp_path / "report.png"
    snap = _run(browser, tmp_path, "--window-size=1280,3400", f"--screenshot={shot}", url)
    assert snap.returncode == 0, snap.stderr.decode(errors="replace")[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 60_000, f"screenshot only {len(data)} bytes: page likely blank"


def test_report_renders_in_chromium(results_dir, tmp_path):
    browser = _browser()
    report = render_report(results_dir)
    url = report.absolute().as_uri()

    dom = _run(browser, tmp_path, "--dump-dom", url)
    html = rendered_dom(dom)
    # data actually drawn: scatter line paths and bars
    assert html.count('class="js-line"') >= 3 + 3 + 2
    assert 'class="point"' in html

    assert_screenshot(browser, tmp_path, url)


@pytest.mark.parametrize("env, outcome", [(None, "skip"), ("0", "skip"), ("1", "fail")])
def test_missing_browser_skips_or_fails(monkeypatch, env, outcome):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    if env is None:
        monkeypatch.delenv("VMTWIN_REQUIRE_BROWSER", raising=False)
    else:
        monkeypatch.setenv("VMTWIN_REQUIRE_BROWSER", env)
    expected = pytest.skip.Exception if outcome == "skip" else pytest.fail.Exception
    with pytest.raises(expected):
        _browser()


def test_changes_during_a_stepped_run_are_listed(tmp_path):
    from vmtwin import VM, CpuBound, Host, Scenario, Simulation

    sc = Scenario(name="stepped", duration="10s", host=Host(cores_per_llc=2, core_mhz="2000MHz"),
                  vms=[VM(name="a", workload=CpuBound(duty=1.0)), VM(name="b", workload=CpuBound(duty=1.0))])
    sim = Simulation(sc)
    sim.run_until(4)
    sim.set_vm_cpu("a", limit="500MHz", shares=3000)
    sim.run_until(6)
    sim.set_vm_cpu("a", limit="unlimited")
    sim.run()
    page = render_report(sim.write(tmp_path / "run")).read_text(encoding="utf-8")
    table = page[page.index('<table id="actions"'):]
    table = table[:table.index("</table>")]
    rows = [re.findall(r">([^<]*)</td>", r) for r in re.findall(r"<tr><td.*?</tr>", table)]
    assert rows == [["4.0", "set_vm_cpu", "a", "limit_mhz = 500, shares = 3000"],
                    ["6.0", "set_vm_cpu", "a", "limit_mhz = unlimited"]]
    # a run without changes has no such section
    plain = Simulation(sc)
    plain.run()
    assert "Changes during the run" not in render_report(plain.write(tmp_path / "plain")).read_text(encoding="utf-8")

"""End to end: ``vmtwin run scenarios/quickstart.yaml`` then ``vmtwin report``, checked in Chromium.

The browser checks are those of ``tests/python/report/test_report.py`` (same helpers, same
``VMTWIN_REQUIRE_BROWSER`` skip-or-fail rule), applied to a real run instead of synthetic data.
"""

from __future__ import annotations

import importlib.util
import re

import pyarrow.parquet as pq
import pytest
from cli_helpers import REPO, needs_shared_data, run_vmtwin
from html_table import table_rows

from vmtwin.report.html import FIGURE_IDS


def _load_report_tests():
    path = REPO / "tests" / "python" / "report" / "test_report.py"
    spec = importlib.util.spec_from_file_location("_vmtwin_report_test_helpers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_report_tests = _load_report_tests()
_browser = _report_tests._browser
_run_browser = _report_tests._run

QUICKSTART = REPO / "scenarios" / "quickstart.yaml"
# build01 powers on at 1min, the end of the shortened run: it never runs and has no rows
QUICKSTART_VMS = ["web-1", "web-2", "web-3", "db01", "batch-1", "batch-2", "capped01", "trace01", "idle01"]


@pytest.fixture(scope="module")
def quickstart_report(tmp_path_factory):
    """A real one-minute quickstart run and its report, both made by the installed command."""
    needs_shared_data(QUICKSTART.read_text(encoding="utf-8"))
    out = tmp_path_factory.mktemp("quickstart") / "results"
    res = run_vmtwin("run", QUICKSTART, "-o", out, "--duration", "1min", "-q", cwd=REPO)
    assert res.returncode == 0, res.stderr
    res = run_vmtwin("report", out)
    assert res.returncode == 0, res.stderr
    assert "report:" in res.stdout
    return out / "report.html"


def test_report_of_real_results(quickstart_report):
    page = quickstart_report.read_text(encoding="utf-8")
    assert "<title>vmtwin report: quickstart</title>" in page
    assert re.findall(r'<div class="figure" id="(fig-[a-z0-9-]+)">', page) == FIGURE_IDS
    rows = table_rows(page, "vm-summary")
    assert [r[0] for r in rows] == QUICKSTART_VMS
    # the summary agrees with the run's own tables
    vm = pq.read_table(quickstart_report.parent / "vm.parquet").to_pandas()
    by_name = {r[0]: r for r in rows}
    for name in ("db01", "capped01", "idle01"):
        assert by_name[name][5] == f'{vm[vm["vm"] == name]["%USED"].mean():.1f}'
    assert float(by_name["capped01"][7]) > 10  # %MLMTD: held back by its 1300 MHz limit
    assert float(by_name["idle01"][5]) == 0.0


def test_real_report_renders_in_chromium(quickstart_report, tmp_path):
    browser = _browser()
    url = quickstart_report.absolute().as_uri()

    dom = _run_browser(browser, tmp_path, "--dump-dom", url)
    html = _report_tests.rendered_dom(dom)
    # one line per VM in the per-VM figures: far more drawn lines than the synthetic report's
    assert html.count('class="js-line"') >= 3 * len(QUICKSTART_VMS)
    for name in QUICKSTART_VMS:
        assert name in html

    _report_tests.assert_screenshot(browser, tmp_path, url)

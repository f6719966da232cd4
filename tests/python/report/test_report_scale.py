"""The report at 10, 100 and 1,000 VMs: real runs, checked in headless Chromium.

Each size is a real (short, coarsely sampled) run with a resource-pool tree. The rendered page
is measured in the browser: every visible text element of every figure is compared with every
other by its bounding box, and the page's blocks with each other, so overlapping text fails the
test. The per-VM table is sorted by a click in the browser and compared with the order worked
out here. The figures' choice of VMs, their colours, the %RDY guide lines and the pool figures
are checked against numbers computed here from the Parquet tables and the scenario text.
"""

from __future__ import annotations

import json
import re
from html import unescape

import numpy as np
import pandas as pd
import pytest
from html_table import table_rows
from test_report import _browser, _run, assert_screenshot, rendered_dom

from vmtwin.report import figures
from vmtwin.report.html import render_report
from vmtwin.results import Results

SIZES = [10, 100, 1000]

# pool -> the scenario entries (VM name prefixes) in it or below it, read off the text below
POOL_PREFIXES = {"prod": ["web", "db"], "prod-db": ["db"], "test": ["batch", "build"], "ci": ["build"]}


def scenario_text(n: int) -> str:
    k = max(1, n // 5)
    return f"""
name: scale-{n}
seed: 5
duration: 10s
sample_interval: 5s
host: {{sockets: 2, cores_per_llc: 32, core_mhz: 2600MHz}}
resource_pools:
  - {{name: prod, cpu: {{shares: high, reservation: 8000MHz}}}}
  - {{name: prod-db, parent: prod, cpu: {{shares: high}}}}
  - {{name: test, cpu: {{shares: low, limit: 20GHz}}}}
  - {{name: ci, parent: test, cpu: {{limit: 6GHz}}}}
vms:
  - {{name: web, count: {k}, pool: prod, vcpus: 2, workload: {{type: cpu_bound, duty: 0.3, burst: 20ms}}}}
  - {{name: db, count: {k}, pool: prod-db, vcpus: 4, workload: {{type: cpu_bound, duty: 0.2, burst: 50ms}}}}
  - {{name: batch, count: {k}, pool: test, workload: {{type: cpu_bound, duty: 0.5, burst: 100ms}}}}
  - {{name: build, count: {k}, pool: ci, vcpus: 2, workload: {{type: cpu_bound, duty: 0.3}}}}
  - {{name: misc, count: {n - 4 * k}, cpu: {{limit: 800MHz}}, workload: {{type: cpu_bound, duty: 0.2}}}}
"""


# Injected into a copy of the page: measures the rendered layout once plotly has drawn.
CHECK_JS = """
<script>
window.addEventListener("load", function () { setTimeout(function () {
  function visible(el) {
    for (var e = el; e && e.nodeType === 1; e = e.parentNode) {
      var s = getComputedStyle(e);
      if (s.display === "none" || s.visibility === "hidden" || parseFloat(s.opacity) === 0) return false;
    }
    return true;
  }
  function hit(a, b) {  // more than a pixel of overlap both ways
    return a.left + 1 < b.right && b.left + 1 < a.right && a.top + 1 < b.bottom && b.top + 1 < a.bottom;
  }
  var overlaps = [], checked = 0;
  document.querySelectorAll(".figure").forEach(function (fig) {
    var boxes = [];
    fig.querySelectorAll("svg text").forEach(function (t) {
      var r = t.getBoundingClientRect();
      if (t.textContent.trim() && visible(t) && r.width > 0 && r.height > 0) boxes.push([t.textContent.trim(), r]);
    });
    checked += boxes.length;
    for (var i = 0; i < boxes.length; i++) for (var j = i + 1; j < boxes.length; j++)
      if (hit(boxes[i][1], boxes[j][1])) overlaps.push(fig.id + ": " + boxes[i][0] + " / " + boxes[j][0]);
  });
  var blocks = Array.prototype.filter.call(document.querySelector("main").children, visible);
  for (var i = 0; i < blocks.length; i++) for (var j = i + 1; j < blocks.length; j++)
    if (hit(blocks[i].getBoundingClientRect(), blocks[j].getBoundingClientRect()))
      overlaps.push("page: " + blocks[i].tagName + "#" + blocks[i].id + " / " + blocks[j].tagName + "#" + blocks[j].id);
  var table = document.getElementById("vm-summary"), heads = table.tHead.rows[0].cells, col = -1;
  for (var c = 0; c < heads.length; c++) if (heads[c].textContent === "mean %RDY") col = c;
  heads[col].click();
  var sorted = Array.prototype.slice.call(table.tBodies[0].rows, 0, 12).map(function (r) { return r.cells[0].textContent; });
  var pre = document.createElement("pre");
  pre.id = "check-result";
  pre.textContent = JSON.stringify({checked: checked, blocks: blocks.length, overlaps: overlaps, sorted: sorted,
                                    rows: table.tBodies[0].rows.length});
  document.body.appendChild(pre);
}, 1000); });
</script>
"""


@pytest.fixture(scope="module")
def scale_runs(tmp_path_factory):
    """{n: results folder} of real runs with n VMs, each with its report."""
    from vmtwin.simulation import Simulation

    tmp = tmp_path_factory.mktemp("scale")
    out = {}
    for n in SIZES:
        path = tmp / f"s{n}.yaml"
        path.write_text(scenario_text(n))
        sim = Simulation(path)
        sim.run()
        res = sim.write(tmp / f"r{n}")
        render_report(res)
        out[n] = res.path
    return out


def _top_by_ready(vm: pd.DataFrame, n: int) -> list[str]:
    means = vm.groupby("vm")["%RDY"].mean()
    first_id = vm.groupby("vm")["vm_id"].min()
    return sorted(means.index, key=lambda v: (-means[v], first_id[v]))[:n]


@pytest.mark.parametrize("n", SIZES)
def test_report_renders_without_overlapping_text(scale_runs, tmp_path, n):
    browser = _browser()
    page = (scale_runs[n] / "report.html").read_text(encoding="utf-8")
    checked = tmp_path / "checked.html"
    checked.write_text(page.replace("</body>", CHECK_JS + "</body>"), encoding="utf-8")
    dom = _run(browser, tmp_path, "--window-size=1280,2000", "--dump-dom", checked.absolute().as_uri())
    html = rendered_dom(dom)
    m = re.search(r'<pre id="check-result">(.*?)</pre>', html, re.S)
    assert m, "the layout check did not run"
    result = json.loads(unescape(m.group(1)))
    assert result["checked"] > 150  # axis labels, ticks, legends, titles of seven figures
    assert result["overlaps"] == []
    assert result["blocks"] >= 15
    # the whole table is there, and a click on "mean %RDY" sorts it highest first
    vm = Results(scale_runs[n]).vm
    assert result["rows"] == n
    assert result["sorted"] == _top_by_ready(vm, 12)


def test_screenshot_at_1000_vms(scale_runs, tmp_path):
    browser = _browser()
    assert_screenshot(browser, tmp_path, (scale_runs[1000] / "report.html").absolute().as_uri())


@pytest.mark.parametrize("n", SIZES)
def test_figures_show_the_top_vms_in_distinct_colours(scale_runs, n):
    res = Results(scale_runs[n])
    vm, vcpu, host = res.vm, res.vcpu, res.host
    top = _top_by_ready(vm, figures.TOP_N)
    ids = figures.top_vms(vm)
    fig = figures.vm_counter_figure(vm, "%RDY", "%RDY per VM", ids)
    assert [t.name for t in fig.data] == top
    shown = min(n, figures.TOP_N)
    assert f"top {shown} of {n} VMs" in fig.layout.title.text or (n <= figures.TOP_N and f"all {n} VMs" in fig.layout.title.text)
    ent = figures.vm_entitlement_figure(vm, host, ids)
    assert list(ent.data[0].y) == top
    for f in (fig, figures.vm_counter_figure(vm, "%USED", "x", ids), figures.vcpu_ready_figure(vcpu),
              figures.vm_limit_figure(vm), ent):
        colours = [t.line.color if t.type == "scatter" else t.marker.color
                   for t in f.data if t.showlegend is not False]
        assert len(colours) == len(set(map(str, colours))), f"repeated colour in {f.layout.title.text}"


@pytest.mark.parametrize("n", SIZES)
def test_per_vcpu_ready_guides_and_bands(scale_runs, n):
    vcpu = Results(scale_runs[n]).vcpu
    fig = figures.vcpu_ready_figure(vcpu)
    assert sorted(s.y0 for s in fig.layout.shapes) == [5.0, 10.0]
    assert {a.text for a in fig.layout.annotations} >= {"5%: watch", "10%: problem"}
    means = vcpu.groupby(["vm", "vcpu"])["%RDY"].mean().to_numpy()
    bands = next(t for t in fig.data if t.type == "bar")
    assert list(bands.x) == [int((means < 5).sum()), int(((means >= 5) & (means < 10)).sum()),
                             int((means >= 10).sum())]
    assert sum(bands.x) == len(means)
    lines = [t for t in fig.data if t.type == "scatter"]
    worst = sorted(means, reverse=True)[: len(lines)]
    assert [float(np.mean(t.y)) for t in lines] == pytest.approx(worst)


@pytest.mark.parametrize("n", SIZES)
def test_pool_table_sums_its_vms(scale_runs, n):
    res = Results(scale_runs[n])
    vm = res.vm
    rows = {r[0].strip(): r for r in table_rows((scale_runs[n] / "report.html").read_text(encoding="utf-8"), "pool-tree")}
    assert list(rows) == ["(host)", "prod", "prod-db", "test", "ci"]
    prefix = vm["vm"].str.replace(r"-\d+$", "", regex=True)
    for pool, prefixes in POOL_PREFIXES.items():
        members = vm[prefix.isin(prefixes)]
        per_time = members.groupby("time_s")[["used_mhz", "entitlement_mhz"]].sum()
        assert rows[pool][5] == str(members["vm"].nunique())
        assert rows[pool][6] == f"{per_time['used_mhz'].mean():.0f}"
        assert rows[pool][7] == f"{per_time['used_mhz'].max():.0f}"
        assert rows[pool][8] == f"{per_time['entitlement_mhz'].mean():.0f}"
    assert rows["ci"][3] == "6000" and rows["prod"][3] == "unlimited" and rows["prod"][2] == "8000"
    host_used = vm.groupby("time_s")["used_mhz"].sum().mean()
    assert rows["(host)"][6] == f"{host_used:.0f}"

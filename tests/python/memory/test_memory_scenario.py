"""The memory fields of scenarios, end to end: schema, engine spec, ``vmtwin run`` on an
overcommitted host, the ``mem`` tables' identities over random scenarios, and bad input (exit 2,
the field named, nothing written)."""

from __future__ import annotations

import base64
import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from html_table import table_rows
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from vmtwin.exceptions import ScenarioError
from vmtwin.export.esxtop import to_esxtop_csv
from vmtwin.report import render_report
from vmtwin.results import TABLE_COLUMNS
from vmtwin.scenario import parse_scenario
from vmtwin.simulation import Simulation

REPO = Path(__file__).resolve().parents[3]
OVERCOMMIT = REPO / "scenarios" / "memory-overcommit.yaml"
MB = 1 << 20


def vmtwin(*argv, cwd=None):
    script = Path(sys.executable).with_name("vmtwin")
    cmd = [str(script)] if script.is_file() else [sys.executable, "-m", "vmtwin.cli"]
    return subprocess.run([*cmd, *map(str, argv)], capture_output=True, text=True, cwd=cwd, timeout=300)


def small(**memory) -> dict:
    """A two-VM scenario with a memory section (as a dict, to edit)."""
    return {
        "name": "m",
        "duration": "20s",
        "host": {"cores_per_llc": 2, "memory": "256MB"},
        "memory": {"policy": "esx2013", "host_overhead": "8MB", **memory},
        "vms": [
            {"name": "a", "memory": "128MB", "workload": {"type": "cpu_bound", "duty": 0.5},
             "guest_memory": {"overhead": "2MB", "touch_rate": 5000}},
            {"name": "b", "count": 2, "memory": "64MB", "workload": {"type": "idle"},
             "memory_allocation": {"reservation": "16MB", "shares": "high"}},
        ],
    }


def test_the_engine_spec_has_one_memory_entry_per_vm_with_vsphere_shares():
    spec = parse_scenario(small(idle_tax="50%")).to_engine_spec()
    mem = spec["memory"]
    assert mem["preset"] == "esx2013" and mem["idle_tax"] == 0.5 and mem["host_overhead_bytes"] == 8 * MB
    assert len(mem["vms"]) == len(spec["vms"]) == 3
    # vSphere: normal = 10 shares per MB, high = 20
    assert [v["shares"] for v in mem["vms"]] == [1280.0, 1280.0, 1280.0]
    assert [v["reservation_bytes"] for v in mem["vms"]] == [0, 16 * MB, 16 * MB]
    assert mem["vms"][0]["touch"]["pages_per_cpu_s"] == 5000
    assert "memory" not in parse_scenario({k: v for k, v in small().items() if k != "memory"}
                                          | {"vms": [{"name": "a", "workload": {"type": "idle"}}]}).to_engine_spec()


@pytest.mark.parametrize(
    "edit, field, words",
    [
        (lambda s: s["vms"][1].update(memory_allocation={"reservation": "65MB"}),
         "vms[1].memory_allocation.reservation", "at most the configured memory"),
        (lambda s: s["memory"].update(idle_tax=1.0), "memory.idle_tax", "[0, 1)"),
        (lambda s: s["memory"].update(idle_tax=-0.1), "memory.idle_tax", "[0, 1)"),
        (lambda s: s["memory"].update(idle_tax="100%"), "memory.idle_tax", "[0, 1)"),
        (lambda s: s["vms"][0]["guest_memory"].update(image="missing.vmem"), "vms[0].guest_memory.image",
         "readable memory image"),
        (lambda s: s["vms"][0]["guest_memory"].update(image="short.vmem"), "vms[0].guest_memory.image", "truncated"),
        (lambda s: s["vms"][0]["guest_memory"].update(swap_datastore="ds9"), "vms[0].guest_memory.swap_datastore",
         "a datastore of the storage section"),
        (lambda s: s.pop("memory"), "vms[0].guest_memory", "only with a top-level memory: section"),
        (lambda s: s["vms"][0]["guest_memory"].update(working_set="129MB"), "vms[0].guest_memory.working_set",
         "inside the configured memory"),
        (lambda s: s["vms"][0]["guest_memory"].update(content={"os_fraction": 0.1, "os_copy_fraction": 0.2}),
         "vms[0].guest_memory.content.os_copy_fraction", "at most os_fraction = 0.1"),
        (lambda s: s["vms"][0]["guest_memory"].update(
            content={"os_fraction": 0.5, "app_fraction": 0.4, "os_copy_fraction": 0.2}),
         "vms[0].guest_memory.content.os_copy_fraction", "at most 1 - os_fraction - app_fraction"),
    ],
)
def test_bad_memory_input_names_the_field(tmp_path, edit, field, words):
    (tmp_path / "short.vmem").write_bytes(b"\0" * (128 * MB - 4096))
    s = small()
    edit(s)
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(s, base_dir=tmp_path).to_engine_spec()
    assert str(exc.value).startswith(field + ": got ") and words in str(exc.value), exc.value


@pytest.mark.parametrize("edit, field", [
    (lambda s: s["vms"][1].update(memory_allocation={"reservation": "65MB"}), "vms[1].memory_allocation.reservation"),
    (lambda s: s["vms"][0]["guest_memory"].update(image="short.vmem"), "vms[0].guest_memory.image"),
])
def test_vmtwin_run_exits_2_and_writes_nothing(tmp_path, edit, field):
    (tmp_path / "short.vmem").write_bytes(b"\0" * (128 * MB - 4096))
    s = small()
    edit(s)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(s))
    out = tmp_path / "out"
    res = vmtwin("run", path, "-o", out, "-q")
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith(f"error: {field}: got ") and "Traceback" not in res.stderr, res.stderr
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_vmtwin_run_on_an_overcommitted_host(tmp_path):
    sc = yaml.safe_load(OVERCOMMIT.read_text())
    sc["duration"] = "90s"
    path = tmp_path / "oc.yaml"
    path.write_text(yaml.safe_dump(sc))
    res = vmtwin("run", path, "-o", tmp_path / "out", "-q")
    assert res.returncode == 0, res.stderr
    mem = pq.read_table(tmp_path / "out" / "mem.parquet")
    host = pq.read_table(tmp_path / "out" / "mem_host.parquet")
    assert mem.column_names == TABLE_COLUMNS["mem"]
    assert host.column_names == TABLE_COLUMNS["mem_host"]
    d = mem.to_pandas()
    assert set(d["vm"]) == {"web-1", "web-2", "web-3", "web-4", "db", "idle"}
    assert len(d) == 45 * 6
    # same-OS web VMs share pages; the host reclaims; swapped VMs wait
    assert d["SHRD"].max() > 0 and d["SHRDSVD"].max() > 0
    assert d["MCTLSZ"].max() > 0 or d["SWCUR"].max() > 0
    assert host.column("state").to_pylist()[-1] >= 1
    # db's 1.5 GB reservation is never reclaimed: once it has touched that much, its target
    # covers it, and it is neither ballooned nor swapped below it
    db = d[d["vm"] == "db"]
    assert db["SZTGT"].iloc[-1] >= 1536
    # the esxtop export carries the same values under esxtop's memory objects
    csv_path = to_esxtop_csv(tmp_path / "out", tmp_path / "esxtop.csv")
    with csv_path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    col = header.index("\\\\esx01\\Group Memory(5:db)\\Swapped MBytes")
    assert [float(r[col]) for r in rows[1:]] == db["SWCUR"].tolist()
    col = header.index("\\\\esx01\\Memory\\Memory State")
    assert [float(r[col]) for r in rows[1:]] == host.column("state").to_pylist()
    # the report's memory section: one row per VM, its means recomputed here
    page = Path(render_report(tmp_path / "out")).read_text(encoding="utf-8")
    assert "<h2>Memory</h2>" in page
    vms = table_rows(page, "memory-vms")  # vm, MEMSZ, GRANT mean/end, CNSM mean/end, TCHD .., MCTLSZ mean
    assert [r[0] for r in vms] == ["web-1", "web-2", "web-3", "web-4", "db", "idle"]
    for r in vms:
        mine = d[d["vm"] == r[0]]
        assert float(r[5]) == pytest.approx(mine["CNSM"].iloc[-1], abs=0.05)
        assert float(r[8]) == pytest.approx(mine["MCTLSZ"].mean(), abs=0.05)
    assert (db["MEMSZ"] - db["MCTLSZ"] - db["SWCUR"] - db["ZIP"] >= 1536 - 1e-6).all()
    # the host memory state over time, a step plot in the memory section, drawn from mem_host
    assert_memory_state_figure(page, host.to_pandas())


def _plotly_array(v):
    """A trace's x or y as a list: plain JSON, or plotly's typed-array encoding."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
    return list(v)


def assert_memory_state_figure(page: str, host) -> None:
    from plotly.offline import get_plotlyjs

    sections = [page.index(s) for s in ("<h2>Memory</h2>", '<div class="figure" id="fig-memory-state">',
                                        "<h3>Host memory state changes</h3>", "<h2>Figures</h2>")]
    assert sections == sorted(sections), sections
    # plotly.js inlined once, before the first figure's drawing call (this one's)
    js = get_plotlyjs()[:500]
    assert page.count(js) == 1 and page.index(js) < page.index("Plotly.newPlot")
    at = page.index('Plotly.newPlot(', sections[1])
    call = page[at + len("Plotly.newPlot("):]
    assert call.lstrip().startswith('"plot-memory-state"'), call[:80]
    traces, _ = json.JSONDecoder().raw_decode(call[call.index("["):])
    state, free, pmem = traces
    assert state["line"]["shape"] == "hv" and state["name"] == "state"
    h = host.sort_values("time_s")
    assert _plotly_array(state["x"]) == h["time_s"].tolist()
    assert _plotly_array(state["y"]) == h["state"].tolist()
    assert _plotly_array(free["y"]) == h["FREE"].tolist() and _plotly_array(pmem["y"]) == h["PMEM"].tolist()
    # the levels are named on the state axis
    assert '"ticktext":["high","soft","hard","low"]' in call[:call.index("</script>")].replace(" ", "")


# --------------------------------------------------------------------------- table identities


@st.composite
def scenarios(draw):
    n = draw(st.integers(1, 4))
    vms = []
    for i in range(n):
        mb = draw(st.integers(8, 48))
        vms.append({
            "name": f"v{i}",
            "memory": f"{mb}MB",
            "memory_allocation": {"reservation": f"{draw(st.integers(0, mb // 2))}MB",
                                  "shares": draw(st.sampled_from(["low", "normal", "high"]))},
            "guest_memory": {"overhead": "1MB", "touch_rate": draw(st.sampled_from([500, 5000, 20000])),
                             "write_fraction": draw(st.sampled_from([0.0, 0.2])),
                             "content": {"os": 1, "os_fraction": draw(st.sampled_from([0.0, 0.3])),
                                         "zero_fraction": 0.1}},
            "workload": {"type": "cpu_bound", "duty": draw(st.sampled_from([0.2, 0.6, 1.0]))},
        })
    host_mb = draw(st.integers(24, 128))
    return {
        "name": "p", "seed": draw(st.integers(0, 2**32)), "duration": "30s",
        "host": {"cores_per_llc": 2, "memory": f"{host_mb}MB"},
        "memory": {"policy": draw(st.sampled_from(["esx2002", "esx2013"])),
                   "idle_tax": draw(st.sampled_from([0.0, 0.5, 0.75])), "host_overhead": "4MB"},
        "vms": vms,
    }


@settings(max_examples=15, deadline=None)
@given(scenarios())
def test_mem_table_identities_hold_at_every_sample(sc):
    try:
        sim = Simulation(parse_scenario(sc))
    except Exception as exc:  # admission control: reservations + overheads beyond the host
        assert "admission" in type(exc).__name__.lower() or "exceeds" in str(exc), exc
        return
    sim.run()
    t = sim.tables()
    mem, host = t["mem"].to_pandas(), t["mem_host"].to_pandas()
    host_mb = int(sc["host"]["memory"][:-2])
    overhead = 4 + len(sc["vms"])  # host + 1 MB per VM
    for time_s, rows in mem.groupby("time_s"):
        free = host.loc[host["time_s"] == time_s, "FREE"].item()
        # consumed (shared pages at 1/n) + free + overheads: the rest is swap-out in flight
        assert rows["CNSM"].sum() + free + overhead <= host_mb + 1e-6
    for v in sc["vms"]:
        rows = mem[mem["vm"] == v["name"]]
        size = int(v["memory"][:-2])
        assert (rows["MEMSZ"] == size).all()
        assert (rows["GRANT"] <= rows["MAPPED"] + 1e-9).all() and (rows["MAPPED"] <= size).all()
        # a mapped page is regular, shared, compressed, ballooned, swapped (or deflated); only the
        # regular and shared ones are granted (backed by machine memory now)
        assert (rows["GRANT"] + rows["ZIP"] + rows["MCTLSZ"] + rows["SWCUR"] <= rows["MAPPED"] + 1e-9).all()
        assert (rows["SHRD"] <= rows["GRANT"] + 1e-9).all()
        # consumed = granted - saved by sharing + the compression cache (esxtop: CNSM = GRANT - SHRDSVD
        # without compression)
        assert rows["CNSM"].to_numpy() == pytest.approx((rows["GRANT"] - rows["SHRDSVD"] + rows["CACHEUSD"]).to_numpy(), abs=1e-9)
        assert (rows["SHRDSVD"] <= rows["SHRD"] + 1e-9).all() and (rows["ZERO"] <= rows["SHRD"]).all()
        assert (rows["MCTLSZ"] <= 0.65 * size + 1 / 256).all()

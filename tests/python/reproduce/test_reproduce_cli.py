"""``vmtwin reproduce``: the registry, JSON rows, the --all validation report, verdicts, and where
each target comes from (``source``: published or derived, with the derivation in ``note``)."""

from __future__ import annotations

import json
import re

import pytest

from vmtwin import reproduce
from vmtwin.reproduce import Experiment, Row

IDS = ["cpu-shares", "cpu-reservation", "cpu-limit"]
# the Tier-1 methodology's reproductions (tested in tests/python/methodology)
ALL_IDS = IDS + ["tier1-throughput", "tier1-oltp", "tier1-hadoop", "tier1-latency", "tier1-presets"]
# Tier-1 tables from simulated runs (tested in tests/python/methodology/test_simulated.py)
ALL_IDS += ["tier1-sim-oltp", "tier1-sim-hadoop", "tier1-sim-latency"]
# vATM's reproductions (tested in tests/python/manage)
ALL_IDS += ["vatm-table1", "vatm-bootstorm", "vatm-trends"]
ALL_IDS += ["storage-table2", "storage-table6", "storage-tables13-15"]
# storage engine runs (tested in tests/python/storage)
ALL_IDS += ["psp-rr-vs-adaptive", "storage-sfqd-shares"]
ALL_IDS += ["storage-kraft-consolidation"]
# Kraft's models fed logged engine runs (tested in tests/python/storage/test_storage_kraft_models.py)
ALL_IDS += ["storage-kraft-homogeneous", "storage-kraft-decomposition"]
# issue 9: wide-VM NUMA locality (clients tested in crates/vmtwin-core/tests/cpu_locality.rs)
ALL_IDS += ["cpu-wide-vm-locality"]
# issue 9: relaxed co-scheduling, Figures 6-7 (tested in tests/python/cpu/test_cosched_reproduce.py)
ALL_IDS += ["cpu-cosched"]
# issue 9: Figure 1 / Table 1 on the engine's rules (tested in tests/python/cpu/test_skew_example.py)
ALL_IDS += ["cpu-skew-example"]
# issue 9: ESX 4 vs 3.5 and wide-VM NUMA throughput (tested in tests/python/reproduce/test_cpu_esx.py)
ALL_IDS += ["cpu-multicore-lb", "cpu-extended-fairness", "cpu-esx4-vs-esx35", "cpu-wide-vm-numa"]
# memory engine runs (tested in tests/python/memory)
ALL_IDS += ["mem-idle-tax", "mem-sharing-homogeneous", "mem-microbench"]
# the 2002 paper's B.3, B.5, B.7 and the 2013 paper's factors (tested in tests/python/test_mem_repro.py)
ALL_IDS += ["mem-sharing-overhead", "mem-sampling", "mem-overcommit", "mem-reallocation"]
# the 2002 paper's B.4 (tested in tests/python/test_mem_repro.py)
ALL_IDS += ["mem-sharing-production"]
# issue 8: application workloads, B.1, B.11, B.12 (tested in tests/python/test_mem_apps.py)
ALL_IDS += ["mem-dbench-balloon", "mem-dvdstore", "mem-vdi"]
ROW_KEYS = {"experiment", "metric", "published", "simulated", "tolerance", "verdict", "source", "note"}
# The only targets printed in the paper: B1's "1/8 CPU time is given to vm0 and 7/8 CPU time is
# given to vm1" at 1:7. Everything else is derived from the text (research/cpu.md B1-B3).
PRINTED = {"vm0 %USED at shares 1:7", "vm1 %USED at shares 1:7"}


def test_list_shows_the_three_experiments(cli):
    rc, out, err = cli("reproduce", "--list")
    assert rc == 0 and err == ""
    for exp_id in ALL_IDS:
        assert exp_id in out
    assert sorted(reproduce.EXPERIMENTS) == sorted(ALL_IDS)


def test_cpu_limit_json(cli):
    rc, out, err = cli("reproduce", "cpu-limit", "--json")
    assert rc == 0, err
    rows = json.loads(out)  # stdout is JSON and nothing else
    assert isinstance(rows, list) and len(rows) == 8  # vm0 and vm1 at four limits
    for row in rows:
        assert isinstance(row, dict) and set(row) == ROW_KEYS
        assert row["experiment"] == "cpu-limit"
        assert isinstance(row["published"], (int, float)) and isinstance(row["simulated"], (int, float))
        assert row["verdict"] == "PASS", row
        assert abs(row["simulated"] - row["published"]) <= row["tolerance"]
        # Figure 5 has no numbers: vm0 = L and vm1 = 400 - L are worked out from the text
        assert row["source"] == "derived" and "not printed" in row["note"], row
    published = {r["metric"]: r["published"] for r in rows}
    assert published["vm0 %USED limited to 50%"] == 50
    assert published["vm1 %USED beside vm0 limited to 50%"] == 350


def test_all_writes_the_validation_report(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(reproduce, "EXPERIMENTS", {k: reproduce.EXPERIMENTS[k] for k in IDS})  # the CPU paper's
    out_dir = tmp_path / "validation"
    rc, out, err = cli("reproduce", "--all", "-o", out_dir)
    assert rc == 0, err
    assert sorted(p.name for p in out_dir.iterdir()) == ["validation.html", "validation.json"]
    page = (out_dir / "validation.html").read_text(encoding="utf-8")
    for exp_id in IDS:
        assert f"<section id='{exp_id}'>" in page and f'id="plot-{exp_id}"' in page
    assert "<div id='report-ok'>" in page
    rows = json.loads((out_dir / "validation.json").read_text(encoding="utf-8"))
    assert all(set(r) == ROW_KEYS for r in rows)
    assert {r["metric"] for r in rows if r["source"] == "published"} == PRINTED
    assert all(r["source"] == "derived" and r["note"] for r in rows if r["metric"] not in PRINTED)
    assert {r["experiment"] for r in rows} == set(IDS)
    assert len(rows) == 14 + 14 + 8
    assert all(r["verdict"] == "PASS" for r in rows)
    assert f"{len(rows)}/{len(rows)} judged rows pass" in page
    assert len(re.findall(r"<tr class='pass'>", page)) == len(rows)
    # the source column, one cell per row, and its legend
    assert "<th>source</th>" in page and "printed in the paper" in page
    assert len(re.findall(r"<td class='source published'>published</td>", page)) == len(PRINTED)
    assert len(re.findall(r"<td class='source derived'>derived</td>", page)) == len(rows) - len(PRINTED)
    assert "validation report:" in out
    assert re.search(r"cpu-shares +│ vm0 %USED at shares 1:7 +│ 50 +│ published +│", out)


def _fake(verdict_ok: bool) -> Experiment:
    def runner():
        simulated = 10.0 if verdict_ok else 13.0
        return [Row("fake", "a number", 10.0, simulated, 1.0, x=1, series="s", source="published",
                    note="printed on page 1"),
                Row("fake", "an unjudged number", 5.0, 0.0, 1.0, judged=False, x=1, series="s", source="derived",
                    note="half of the printed 10")]

    return Experiment("fake", "A fake experiment", "nowhere", runner)


def test_a_miss_is_reported_and_fails_the_command(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(reproduce, "EXPERIMENTS", {"fake": _fake(verdict_ok=False)})
    rc, out, err = cli("reproduce", "fake", "--json")
    assert rc == 1
    assert [r["verdict"] for r in json.loads(out)] == ["FAIL", "NOT JUDGED"]
    rc, out, err = cli("reproduce", "--all", "-o", tmp_path)
    assert rc == 1
    page = (tmp_path / "validation.html").read_text(encoding="utf-8")
    assert "<tr class='fail'>" in page and "<tr class='not-judged'>" in page
    assert "0/1 judged rows pass" in page


def test_unjudged_rows_do_not_fail_the_command(cli, monkeypatch):
    monkeypatch.setattr(reproduce, "EXPERIMENTS", {"fake": _fake(verdict_ok=True)})
    rc, out, err = cli("reproduce", "fake", "--json")
    assert rc == 0
    assert [r["verdict"] for r in json.loads(out)] == ["PASS", "NOT JUDGED"]


def test_reproduce_rows_are_deterministic():
    a = [r.as_dict() for r in reproduce.get("cpu-limit").run()]
    b = [r.as_dict() for r in reproduce.get("cpu-limit").run()]
    assert a == b


def test_table_shows_each_rows_source(cli):
    rc, out, err = cli("reproduce", "cpu-shares")
    assert rc == 0, err
    header = next(line for line in out.splitlines() if "metric" in line)
    assert [c.strip() for c in header.strip("┃ ").split("┃")] == [
        "experiment", "metric", "published", "source", "simulated", "tolerance", "verdict"]
    sources = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if len(cells) == 7 and cells[0] == "cpu-shares":
            sources[cells[1]] = cells[3]
    assert len(sources) == 14
    assert {m for m, s in sources.items() if s == "published"} == PRINTED
    assert all(s == "derived" for m, s in sources.items() if m not in PRINTED)
    assert "derived = worked out from its text" in out


def test_every_row_says_where_its_target_comes_from():
    with pytest.raises(TypeError, match="source"):
        Row("x", "m", 1.0, 1.0, 0.1)  # no source: refused, so no future row can omit it
    with pytest.raises(ValueError, match="published, derived"):
        Row("x", "m", 1.0, 1.0, 0.1, source="guessed", note="?")
    with pytest.raises(ValueError, match="derivation"):
        Row("x", "m", 1.0, 1.0, 0.1, source="derived")  # derived, but not how
    row = Row("x", "m", 1.0, 1.0, 0.1, source="derived", note="1/1")
    assert row.as_dict()["source"] == "derived" and row.as_dict()["note"] == "1/1"
    assert Row("x", "m", 1.0, 1.0, 0.1, source="published").as_dict()["source"] == "published"

"""``vmtwin reproduce``: the registry, JSON rows, the --all validation report, verdicts."""

from __future__ import annotations

import json
import re

import pytest

from vmtwin import reproduce
from vmtwin.cli import main
from vmtwin.reproduce import Experiment, Row

IDS = ["cpu-shares", "cpu-reservation", "cpu-limit"]
ROW_KEYS = {"experiment", "metric", "published", "simulated", "tolerance", "verdict"}


@pytest.fixture
def cli(capsys):
    """Run ``vmtwin.cli.main`` in this process: (exit status, stdout, stderr)."""

    def run(*argv):
        capsys.readouterr()
        try:
            rc = main([str(a) for a in argv])
        except SystemExit as exc:
            rc = exc.code
        out, err = capsys.readouterr()
        return rc, out, err

    return run


def test_list_shows_the_three_experiments(cli):
    rc, out, err = cli("reproduce", "--list")
    assert rc == 0 and err == ""
    for exp_id in IDS:
        assert exp_id in out
    assert sorted(reproduce.EXPERIMENTS) == sorted(IDS)


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
    published = {r["metric"]: r["published"] for r in rows}
    assert published["vm0 %USED limited to 50%"] == 50
    assert published["vm1 %USED beside vm0 limited to 50%"] == 350


def test_all_writes_the_validation_report(cli, tmp_path):
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
    assert {r["experiment"] for r in rows} == set(IDS)
    assert len(rows) == 14 + 14 + 8
    assert all(r["verdict"] == "PASS" for r in rows)
    assert f"{len(rows)}/{len(rows)} judged rows pass" in page
    assert len(re.findall(r"<tr class='pass'>", page)) == len(rows)
    assert "validation report:" in out


def _fake(verdict_ok: bool) -> Experiment:
    def runner():
        simulated = 10.0 if verdict_ok else 13.0
        return [Row("fake", "a number", 10.0, simulated, 1.0, x=1, series="s"),
                Row("fake", "an unjudged number", 5.0, 0.0, 1.0, judged=False, x=1, series="s")]

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

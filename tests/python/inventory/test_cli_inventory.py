"""`vmtwin inventory`: load, query, cypher, export; bad input exits 2 naming the file, line or
query, and writes nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from vmtwin.cli import main

EXPORT = Path(__file__).parent / "data" / "rvtools"


@pytest.fixture(scope="module")
def fig1(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli") / "fig1"
    assert main(["inventory", "load", "--figure1", "-o", str(folder)]) == 0
    return folder


def test_load_writes_graph_and_manifest(fig1):
    m = json.loads((fig1 / "manifest.json").read_text())
    assert m["entities"] == 17 and m["counts"]["VM"] == 4
    assert m["database_bytes"] == (fig1 / "graph.lbug").stat().st_size


def test_named_query_as_json(fig1, capsys):
    assert main(["inventory", "query", str(fig1), "cross-cluster-vmdk", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted(r["vm"] for r in rows) == ["V2", "V3"]


def test_cypher_with_parameter_and_exports(fig1, tmp_path, capsys):
    q = "MATCH (h:Host)-[:follow]->(v:VM) WHERE h.name = $h RETURN v.name AS vm ORDER BY vm"
    for suffix in (".csv", ".json", ".parquet"):
        out = tmp_path / f"vms{suffix}"
        assert main(["inventory", "cypher", str(fig1), q, "--param", "h=H2", "--export", str(out)]) == 0
        rows = pd.read_csv(out) if suffix == ".csv" else (
            pd.DataFrame(json.loads(out.read_text())) if suffix == ".json" else pd.read_parquet(out))
        assert rows["vm"].tolist() == ["V3", "V4"]
    assert main(["inventory", "cypher", str(fig1), "MATCH (h:Host) RETURN h ORDER BY h.uuid",
                 "--export", str(tmp_path / "nodes.csv")]) == 0
    assert json.loads(pd.read_csv(tmp_path / "nodes.csv")["h"][0])["name"] == "H1"


def test_load_is_deterministic(tmp_path):
    for name in ("a", "b"):
        assert main(["inventory", "load", "--synthetic", "500", "--seed", "3", "-o", str(tmp_path / name)]) == 0
    out = []
    for name in ("a", "b"):
        assert main(["inventory", "cypher", str(tmp_path / name),
                     "MATCH (a)-[r]->(b) RETURN a.uuid, label(r), b.uuid ORDER BY a.uuid, label(r), b.uuid",
                     "--export", str(tmp_path / f"{name}.csv")]) == 0
        out.append((tmp_path / f"{name}.csv").read_bytes())
    assert out[0] == out[1] and len(out[0].splitlines()) > 1000


def bad(capsys, argv, *expected):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for text in expected:
        assert text in err, err
    return err


def test_cypher_syntax_error_names_the_query(fig1, tmp_path, capsys):
    out = tmp_path / "x.csv"
    bad(capsys, ["inventory", "cypher", str(fig1), "MATCH (h:Host RETURN h", "--export", str(out)],
        "error: query 'MATCH (h:Host RETURN h'", "Parser exception")
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_writes_are_refused_on_a_loaded_graph(fig1, capsys):
    bad(capsys, ["inventory", "cypher", str(fig1), "CREATE (:Host {uuid: 'h9', name: 'H9'})"], "read-only")
    assert main(["inventory", "cypher", str(fig1), "MATCH (h:Host) RETURN count(h) AS n", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"n": 2}]


def test_bad_named_query_and_parameters(fig1, capsys):
    bad(capsys, ["inventory", "query", str(fig1), "no-such-query"], "named query: got 'no-such-query'; allowed:")
    bad(capsys, ["inventory", "query", str(fig1), "linked-clone-policy", "--param", "max_clones=many"],
        "parameter max_clones: got 'many'")
    bad(capsys, ["inventory", "query", str(fig1), "linked-clone-policy", "--param", "limit=3"],
        "parameter: got 'limit'; allowed: max_clones")
    bad(capsys, ["inventory", "query", str(fig1), "downtime-impact"], "parameter network: missing")
    bad(capsys, ["inventory", "query", str(fig1), "vms-on-network", "--param", "network=x", "--export", "out.xlsx"],
        "--export: got 'out.xlsx'")


IGNORE = ["--ignore-extra-columns"]


@pytest.mark.parametrize("sheet, edit, flags, expected", [
    ("vInfo", lambda t: t.replace("web02,poweredOn,2,", '"web02,poweredOn,2,'), IGNORE, "RVTools_tabvInfo.csv:"),
    ("vDisk", lambda t: t.replace("Path", "Pth"), IGNORE, "RVTools_tabvDisk.csv:1: missing column 'Path'"),
    ("vInfo", lambda t: t, [], "RVTools_tabvInfo.csv:1: unknown column 'Powerstate' in sheet vInfo"),
])
def test_bad_csv_exits_2_and_writes_nothing(tmp_path, capsys, sheet, edit, flags, expected):
    export = tmp_path / "export"
    shutil.copytree(EXPORT, export)
    path = export / f"RVTools_tab{sheet}.csv"
    path.write_text(edit(path.read_text()))
    out = tmp_path / "graph"
    bad(capsys, ["inventory", "load", "--rvtools", str(export), "-o", str(out), *flags], expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]  # no graph, no temporary folder


def test_cypher_parameters_must_match_the_text(fig1, capsys):
    q = "MATCH (h:Host) WHERE h.name = $host AND h.uuid <> '$notparam' RETURN h.name"
    bad(capsys, ["inventory", "cypher", str(fig1), q], "parameter $host not given")
    bad(capsys, ["inventory", "cypher", str(fig1), q, "--param", "host=H1", "--param", "hots=H2"],
        "--param hots: got a parameter the query does not use; allowed: host")
    assert main(["inventory", "cypher", str(fig1), q, "--param", "host=H1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"h.name": "H1"}]


def test_bad_synthetic_size_and_seed(tmp_path, capsys):
    bad(capsys, ["inventory", "load", "--synthetic", "50", "-o", str(tmp_path / "g")], "synthetic.entities: got 50")
    bad(capsys, ["inventory", "load", "--synthetic", "500", "--seed", "-1", "-o", str(tmp_path / "g")],
        "synthetic.seed: got -1")
    assert list(tmp_path.iterdir()) == []


def test_existing_output_is_kept_without_force(fig1, capsys):
    before = (fig1 / "graph.lbug").stat().st_mtime_ns
    bad(capsys, ["inventory", "load", "--synthetic", "500", "-o", str(fig1)], "already exists")
    assert (fig1 / "graph.lbug").stat().st_mtime_ns == before


def test_force_replaces(tmp_path, capsys):
    out = tmp_path / "g"
    assert main(["inventory", "load", "--figure1", "-o", str(out)]) == 0
    assert main(["inventory", "load", "--synthetic", "500", "-o", str(out), "--force"]) == 0
    assert json.loads((out / "manifest.json").read_text())["entities"] > 400
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g"]


def test_vcenter_password_comes_from_the_environment(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("VMTWIN_VCENTER_PASSWORD", raising=False)
    bad(capsys, ["inventory", "load", "--vcenter", "127.0.0.1", "-o", str(tmp_path / "g")], "VMTWIN_VCENTER_PASSWORD")
    assert list(tmp_path.iterdir()) == []

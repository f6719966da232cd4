"""Sweep files: paths, grids, seeds; bad input is refused before anything runs (exit 2)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmtwin.cli import main
from vmtwin.exceptions import ScenarioError
from vmtwin.scenario import parse_scenario
from vmtwin.sweep import build_sweep, load_sweep
from vmtwin.sweep.spec import derive_seed, get_path, parse_path

from sweep_helpers import BASE_YAML, write_sweep_file


def test_parse_path():
    assert parse_path("vms[2].cpu.shares") == ["vms", 2, "cpu", "shares"]
    assert parse_path("host.cores_per_llc") == ["host", "cores_per_llc"]
    for bad in ("", "[0]", "vms..cpu", "vms[x]", "vms[1]cpu", "host.", "a b"):
        with pytest.raises(ScenarioError, match="a YAML path"):
            parse_path(bad)


def test_paths_resolve_against_defaults():
    data = parse_scenario(BASE_YAML).model_dump(mode="json")
    assert get_path(data, "host.threads_per_core") == 1  # not in the file: its default
    assert get_path(data, "vms[1].workload.duty") == 0.5
    with pytest.raises(ScenarioError, match=r"vms\[5\]\.cpu\.shares: no such path.*2 entries, indices 0 to 1"):
        get_path(data, "vms[5].cpu.shares")
    with pytest.raises(ScenarioError, match=r"host\.cores: no such path.*no key 'cores'.*cores_per_llc"):
        get_path(data, "host.cores")


def test_points_are_the_grid_product_last_path_fastest():
    sc = parse_scenario(BASE_YAML)
    sw = build_sweep(sc, {"host.cores_per_llc": [2, 3], "vms[1].workload.duty": [0.25, 0.5, 1.0]}, replications=2)
    tasks = sw.tasks()
    assert [t.coords for t in tasks[::2]] == [(("host.cores_per_llc", c), ("vms[1].workload.duty", d))
                                              for c in (2, 3) for d in (0.25, 0.5, 1.0)]
    for t in tasks:  # the point's values are in its scenario, nothing else changed
        assert t.scenario["host"]["cores_per_llc"] == dict(t.coords)["host.cores_per_llc"]
        assert t.scenario["vms"][1]["workload"]["duty"] == dict(t.coords)["vms[1].workload.duty"]
        assert t.scenario["vms"][0] == sc.model_dump(mode="json")["vms"][0]
    assert len({t.seed for t in tasks}) == len(tasks)


@given(st.integers(0, 2**63 - 1), st.dictionaries(st.sampled_from(["a", "b.c", "d[1]"]), st.integers(), min_size=1),
       st.integers(0, 99))
@settings(max_examples=50, deadline=None)
def test_seed_depends_only_on_sweep_seed_coords_replication(seed, coords, rep):
    s = derive_seed(seed, coords, rep)
    assert 0 <= s < 2**63
    assert s == derive_seed(seed, dict(reversed(list(coords.items()))), rep)  # key order is irrelevant
    assert s != derive_seed(seed, coords, rep + 1)


def _refused(tmp_path, capsys, sweep_path, *needles):
    out = tmp_path / "out"
    assert main(["sweep", sweep_path, "-o", str(out), "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    for n in needles:
        assert n in err, err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_unknown_path_exit_2_nothing_written(tmp_path, base_file, capsys):
    sw = write_sweep_file(tmp_path, "vms[2].cpu.shares: [1000, 2000]\n")
    _refused(tmp_path, capsys, sw, "vms[2].cpu.shares", "no such path", "2 entries")


def test_empty_grid_exit_2(tmp_path, base_file, capsys):
    (tmp_path / "sweep.yaml").write_text("scenario: base.yaml\ngrid: {}\n")
    _refused(tmp_path, capsys, str(tmp_path / "sweep.yaml"), "grid", "non-empty")
    (tmp_path / "sweep.yaml").write_text("scenario: base.yaml\ngrid: {host.cores_per_llc: []}\n")
    _refused(tmp_path, capsys, str(tmp_path / "sweep.yaml"), "grid.host.cores_per_llc", "non-empty list")


def test_non_numeric_value_exit_2(tmp_path, base_file, capsys):
    sw = write_sweep_file(tmp_path, "host.cores_per_llc: [2, four]\n")
    _refused(tmp_path, capsys, sw, "grid point 1", "host.cores_per_llc", "'four'")


def test_other_bad_sweep_files(tmp_path, base_file, capsys):
    sw = write_sweep_file(tmp_path, "host.cores_per_llc: [2]\n", replications=0)
    _refused(tmp_path, capsys, sw, "replications", "from 1 to 1000")
    (tmp_path / "sweep.yaml").write_text("scenario: base.yaml\ngird: {host.cores_per_llc: [2]}\n")
    _refused(tmp_path, capsys, str(tmp_path / "sweep.yaml"), "gird", "allowed: the keys")
    sw = write_sweep_file(tmp_path, "host.cores_per_llc: [2]\n", extra="metrics: ['p99(vm.%RDY)']\n")
    _refused(tmp_path, capsys, sw, "metric", "p99(vm.%RDY)")


def test_load_sweep_paths_relative_to_file(tmp_path, base_file):
    sw = load_sweep(write_sweep_file(tmp_path, "host.cores_per_llc: [2, 4]\n", replications=3))
    assert sw.base.name == "tiny" and sw.replications == 3 and sw.seed == 3
    assert len(sw.tasks()) == 6


def test_docs_python_example_runs():
    """The Python example of docs/sweep.md, as written there."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "sweep.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    env: dict = {}
    exec(code, env)
    s = env["tables"]["summary"].to_pandas()
    # 3 busy 1-vCPU VMs on 2 pCPUs: one pCPU of waiting shared by three, 33.3% each on average
    # (exact: the CPU the host has); the worst vCPU's is near it, as close as the scheduler's
    # fairness over 2 s makes it
    assert s[s.metric == "mean(vm.%RDY)"]["mean"].round(1).tolist() == [0.0, 33.3]
    worst = s[s.metric == "max(vcpu.%RDY)"]["mean"].tolist()
    assert worst[0] == 0.0 and 33.3 <= worst[1] < 35.0


def test_grid_cannot_sweep_what_the_sweep_overrides():
    sc = parse_scenario(BASE_YAML)
    with pytest.raises(ScenarioError, match="grid.seed.*replications"):
        build_sweep(sc, {"seed": [1, 2]})
    with pytest.raises(ScenarioError, match="grid.duration"):
        build_sweep(sc, {"duration": ["1s", "2s"]}, duration="1s")
    sw = build_sweep(sc, {"duration": ["500ms", "1s"]})
    assert [t.scenario["duration"] for t in sw.tasks()] == ["500ms", "1s"]

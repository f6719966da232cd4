"""``vmtwin plan`` against cases with a known answer.

Identical always-busy 1-vCPU VMs on P pCPUs: while there are at most P of them each has a pCPU and
its %RDY is 0; with P + 1 each is ready 1/(P+1) of the time, 100/(P+1) % > 5 % for P < 19. So with
b such VMs on the host, exactly P - b more fit under "any vCPU's %RDY <= 5".
"""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmtwin.cli import main
from vmtwin.exceptions import ScenarioError
from vmtwin.scenario import parse_scenario
from vmtwin.sweep.plan import plan_capacity


def _host(pcpus: int, busy: int) -> str:
    return (f"name: fit\nseed: 1\nduration: 1s\nsample_interval: 250ms\n"
            f"host: {{cores_per_llc: {pcpus}, core_mhz: 2000MHz}}\n"
            f"vms:\n  - name: busy\n    count: {busy}\n    workload: {{type: cpu_bound, duty: 1.0}}\n")


@given(st.integers(1, 7).flatmap(lambda p: st.tuples(st.just(p), st.integers(1, p))))
@settings(max_examples=4, deadline=None)
def test_plan_finds_free_pcpus(case):
    pcpus, busy = case
    plan = plan_capacity(parse_scenario(_host(pcpus, busy)), "busy", seeds=2, workers=1)
    assert plan.answer == pcpus - busy
    assert plan.at_answer.fits and plan.at_answer.mean == 0.0
    assert not plan.above.fits and plan.above.added == pcpus - busy + 1
    assert plan.above.mean >= 100 / (pcpus + 1) - 1  # the max over vCPUs is at least their mean
    assert plan.deciding["added"] == pcpus - busy + 1
    # the dataset holds every count evaluated, in increasing order
    added = plan.tables["runs"].column("added").to_pylist()
    assert added == sorted(added) and {0, pcpus - busy, pcpus - busy + 1} <= set(added)


def test_plan_already_over_and_capped():
    over = plan_capacity(parse_scenario(_host(2, 3)), "busy", seeds=2, workers=1)
    assert over.answer == 0 and not over.at_answer.fits and over.above is None
    capped = plan_capacity(parse_scenario(_host(4, 1)), "busy", seeds=1, workers=1, max_add=2)
    assert capped.answer == 2 and capped.capped and capped.above is None


def test_plan_other_counter_and_bound():
    # host %PCPU_UTIL = 100 * VMs / pCPUs up to 100: at most 75 % on 4 pCPUs holds 3 busy VMs
    plan = plan_capacity(parse_scenario(_host(4, 1)), "busy", metric="host.%PCPU_UTIL", bound=75, seeds=1, workers=1)
    assert plan.answer == 2


def test_plan_cli_writes_plan_and_refuses_bad_input(tmp_path, capsys):
    sc = tmp_path / "host.yaml"
    sc.write_text(_host(3, 1))
    out = tmp_path / "plan"
    assert main(["plan", str(sc), "--profile", "busy", "--seeds", "2", "--workers", "1", "-o", str(out), "-q"]) == 0
    text = capsys.readouterr().out
    assert "answer: 2 more VMs like busy fit" in text
    info = json.loads((out / "sweep.json").read_text())
    assert info["answer"] == 2 and info["at_answer_plus_1"]["added"] == 3 and info["deciding_run"]["added"] == 3
    for argv, needle in ((["--profile", "nope"], "--profile"), (["--profile", "busy", "--metric", "p99"], "metric"),
                         (["--profile", "busy", "--bound", "nan"], "--bound"),
                         (["--profile", "busy", "--seeds", "0"], "--seeds")):
        assert main(["plan", str(sc), *argv, "-o", str(tmp_path / "bad")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and needle in err, err
        assert not (tmp_path / "bad").exists()


def test_plan_refuses_unknown_profile():
    with pytest.raises(ScenarioError, match="busy"):
        plan_capacity(parse_scenario(_host(2, 1)), "web")


def test_a_limited_vm_is_not_contention():
    # on 3 pCPUs, a busy VM limited to a quarter of a pCPU beside one busy unlimited VM: esxtop's
    # %RDY counts the 75% the limited one is held back (%MLMTD), which no added VM causes. The
    # default metric leaves that out: one more busy VM fits (1 + 1 + 0.25 pCPUs), two do not
    # (each of three busy vCPUs then waits 1 - 2.75/3 = 8% > 5%). Bounding plain %RDY answers 0.
    yaml = _host(3, 1) + ("  - name: capped\n    cpu: {limit: 500MHz}\n"
                          "    workload: {type: cpu_bound, duty: 1.0}\n")
    sc = parse_scenario(yaml)
    plan = plan_capacity(sc, "busy", seeds=1, workers=1)
    assert plan.metric == "max(vcpu.%RDY_CONTENDED)"
    assert plan.answer == 1 and plan.at_answer.mean < 1 and plan.above.mean > 5, plan
    plain = plan_capacity(sc, "busy", metric="max(vcpu.%RDY)", seeds=1, workers=1)
    assert plain.answer == 0 and plain.at_answer.mean > 70

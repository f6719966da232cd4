"""Property tests of the method against independent arithmetic (hypothesis)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmtwin.methodology import Analysis, Counter, Profile, Run, RunMetadata, attribution
from vmtwin.methodology.perfstat import parse, to_counters

COUNT = st.integers(min_value=1_000, max_value=10**9)


def _run(source, cu, ck, iu, ik, work=1000.0, unit="transaction"):
    platform = "native" if source == "native_os" else "virtual"
    meta = RunMetadata(platform=platform, source=source, vpmc_mode="guest" if source == "guest_vpmc" else None,
                       work_unit=unit, work_count=work)
    return Run.build(meta, [Counter("cycles", "user", float(cu)), Counter("cycles", "kernel", float(ck)),
                            Counter("instructions", "user", float(iu)), Counter("instructions", "kernel", float(ik))])


@st.composite
def experiments(draw):
    n = [draw(COUNT) for _ in range(4)]
    g = [draw(COUNT) for _ in range(4)]
    hyp_c, hyp_i = draw(st.integers(0, 10**9)), draw(st.integers(0, 10**9))
    host_user_c = draw(COUNT)
    e = [host_user_c, g[1] + hyp_c, draw(COUNT), g[3] + hyp_i]
    work = draw(st.floats(min_value=1, max_value=1e7, allow_nan=False))
    return n, g, e, work


@settings(max_examples=200, deadline=None)
@given(experiments(), st.sampled_from(["native_total", "virtual_total"]))
def test_decomposition_parts_add_up_to_the_total_increase(exp, basis):
    n, g, e, work = exp
    a = Analysis(_run("native_os", *n, work), _run("host_system", *e, work), _run("guest_vpmc", *g, work), basis=basis)
    d = a.decomposition()
    c_n, c_e = (n[0] + n[1]) / work, (e[0] + e[1]) / work
    expected = 100 * (c_e - c_n) / (c_n if basis == "native_total" else c_e)
    assert sum(p["percent"] for p in d["parts"]) == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert d["total"]["percent"] == pytest.approx(expected, rel=1e-9, abs=1e-9)
    parts = {p["component"]: p["cycles"] for p in d["parts"]}
    assert parts["hypervisor (VMM + VMkernel)"] == pytest.approx((e[1] - g[1]) / work)
    if c_e != c_n:
        assert d["kernel_share_of_increase"] == pytest.approx((e[1] - n[1]) / (e[0] + e[1] - n[0] - n[1]), rel=1e-9)


@settings(max_examples=100, deadline=None)
@given(experiments(), st.floats(0, 1), st.floats(0.01, 1))
def test_vmkernel_and_vmm_split_the_hypervisor_exactly(exp, vmk, vmm):
    n, g, e, work = exp
    a = Analysis(_run("native_os", *n, work), _run("host_system", *e, work), _run("guest_vpmc", *g, work),
                 basis="native_total", profile=Profile(vmkernel_share=vmk, vmm_share=vmm))
    parts = {p["component"]: p for p in a.decomposition()["parts"]}
    assert parts["VMkernel"]["cycles"] + parts["VMM"]["cycles"] == pytest.approx((e[1] - g[1]) / work, rel=1e-9, abs=1e-6)
    # in the ratio of the profile's own estimates: vmkstats share of all, kstats share of the rest
    if e[1] != g[1]:
        expect = vmk / (vmk + vmm * (1 - vmk))
        # the parts come from host and guest counts: their difference carries the rounding of
        # the larger operand, relative error ~ eps x e / (e - g) (1 cycle of 17 M gives 2e-9)
        cancel = 1e-12 * max(e[1], g[1]) / abs(e[1] - g[1])
        assert parts["VMkernel"]["cycles"] / ((e[1] - g[1]) / work) == pytest.approx(expect, rel=1e-9, abs=cancel)


@given(COUNT, COUNT, COUNT, COUNT)
def test_attribution_identity_holds_exactly(cn, i_n, cv, iv):
    a = attribution(Fraction(cn), Fraction(i_n), Fraction(cv), Fraction(iv))
    assert a["path_length_part"] + a["cpi_part"] == Fraction(cv - cn)
    assert a["path_length_part"] == Fraction(iv - i_n) * Fraction(cn, i_n)  # dI x CPI_native
    assert a["cpi_part"] == iv * (Fraction(cv, iv) - Fraction(cn, i_n))  # I_virtual x dCPI


@settings(max_examples=100, deadline=None)
@given(experiments(), st.integers(2, 10_000), st.sampled_from(["native_total", "native_same_mode", "virtual_total"]))
def test_a_change_of_unit_does_not_change_percentages(exp, rows_per_tx, basis):
    n, g, e, work = exp
    runs = [_run("native_os", *n, work), _run("host_system", *e, work), _run("guest_vpmc", *g, work)]
    per_tx = Analysis(*runs, basis=basis).as_dict()
    per_row = Analysis(*(r.with_work("row", work * rows_per_tx) for r in runs), basis=basis).as_dict()
    # differences of per-unit values cancel: allow a few ulps of the operands, not of the result
    biggest = max(n + g + e) / work
    pct_tol = 1e-12 * 100 * biggest / (min(n[0], n[1], e[0] + e[1]) / work)
    for a, b in zip(per_tx["decomposition"]["parts"], per_row["decomposition"]["parts"]):
        assert a["percent"] == pytest.approx(b["percent"], abs=pct_tol)
        assert a["cycles"] == pytest.approx(b["cycles"] * rows_per_tx, abs=1e-12 * biggest)
    assert per_tx["decomposition"]["total"]["percent"] == pytest.approx(per_row["decomposition"]["total"]["percent"],
                                                                       abs=pct_tol)
    for a, b in zip(per_tx["attribution"], per_row["attribution"]):
        assert a["cpi_growth"] == pytest.approx(b["cpi_growth"], rel=1e-12, abs=1e-12)
        scale = 1e-12 * biggest * max(a["cpi_native"], a["cpi_virtual"], 1)
        assert a["path_length_part"] == pytest.approx(b["path_length_part"] * rows_per_tx, abs=scale)
        assert a["cpi_part"] == pytest.approx(b["cpi_part"] * rows_per_tx, abs=scale)


EVENTS = ["cycles", "instructions", "dtlb_load_misses.walk_pending", "page-faults"]


@st.composite
def perf_outputs(draw):
    """Random perf stat -x output in one of perf's layouts, and the expected totals (from the draw)."""
    interval = draw(st.booleans())
    cpus = draw(st.sampled_from([None, 1, 2, 4]))
    sep = draw(st.sampled_from([",", ";", "\t"]))
    intervals = draw(st.integers(1, 4)) if interval else 1
    events = draw(st.lists(st.tuples(st.sampled_from(EVENTS), st.sampled_from(["", ":u", ":k"])), min_size=1,
                           max_size=5, unique=True))
    lines, totals, scaling = [], {}, {}
    for t in range(intervals):
        for ev, mod in events:
            for cpu in range(cpus or 1):
                value = draw(st.integers(0, 10**12))
                pct = draw(st.sampled_from([100.0, 50.0, 25.0, 12.5]))
                fields = ([f"{0.1 * (t + 1):.9f}"] if interval else []) + ([f"CPU{cpu}"] if cpus else [])
                fields += [str(value), "", ev + mod, str(1000 + value % 7), f"{pct:.2f}", "", ""]
                lines.append(sep.join(fields))
                key = (ev + mod)
                totals[key] = totals.get(key, 0) + value
                scaling[key] = max(scaling.get(key, 1.0), 100 / pct)
    return "# started on a test\n\n" + "\n".join(lines) + "\n", totals, scaling


@settings(max_examples=150, deadline=None)
@given(perf_outputs())
def test_perf_totals_are_sums_over_cpus_and_intervals_with_scaling_kept(case):
    text, totals, scaling = case
    meta = RunMetadata(platform="native", source="native_os", work_unit="run", work_count=1)
    run = Run.build(meta, to_counters(parse(text)))
    from vmtwin.methodology import canonical_event

    for raw, total in totals.items():
        event, mode = canonical_event(raw)
        c = run.counters[event, mode]
        assert c.value == total
        assert c.scaling == scaling[raw]

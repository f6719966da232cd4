"""`vmtwin reproduce cpu-cosched` (research/cpu.md B4, Figures 6-7): every row derived with its
derivation, the orderings the engine reproduces pass, and the run is deterministic."""

from vmtwin.reproduce import EXPERIMENTS
from vmtwin.reproduce.cpu_cosched import run_mode


def test_cpu_cosched_rows_are_derived_and_deterministic():
    exp = EXPERIMENTS["cpu-cosched"]
    rows = exp.run()
    assert [r.as_dict() for r in rows] == [r.as_dict() for r in exp.run()]
    assert len(rows) == 7
    assert all(r.source == "derived" and "simulated:" in r.note for r in rows)
    verdicts = {r.metric: r.verdict for r in rows}
    # Figure 6 (utilisation) and strict < relaxed on performance hold; ESX 4 > ESX 3.5 is reported
    # whatever it is (a miss today, docs/cosched.md)
    for metric in ("utilisation ESX 3.5 / strict > 1", "utilisation ESX 4 / strict > 1",
                   "utilisation ESX 4 ≈ ESX 3.5 (within 5%)", "performance ESX 3.5 / strict > 1",
                   "performance ESX 4 / strict > 1"):
        assert verdicts[metric] == "PASS", metric
    assert verdicts["performance ESX 4 > ESX 3.5"] in ("PASS", "FAIL")
    # Figure 8's ordering judged on %CSTP: reported whatever it is (a PASS since relaxed-3x's
    # co-stops last until the co-started laggard's skew is down, docs/cosched.md)
    assert verdicts["co-stopped time (%CSTP) ESX 4 < ESX 3.5"] in ("PASS", "FAIL")


def test_cstp_is_what_the_vm_table_reports():
    # strict co-stops the pair while the 1-vCPU VM runs: its %CSTP is well above 0
    assert run_mode("strict")["cstp"] > 10.0


def test_relaxed_3x_costops_last_and_keep_the_host_busy():
    # the leader stays co-stopped while the co-started laggard works its skew off: %CSTP well
    # above 0 (it read 0.00 when the co-stop ended at the co-start instant), and no pCPU idles
    # for it (the held vCPU's pCPU goes to the 1-vCPU VM)
    three = run_mode("relaxed-3x")
    assert three["cstp"] > 10.0
    assert three["util"] > 0.99


def test_strict_fragments_the_host_and_relaxed_does_not():
    # strict needs both pCPUs at once for the pair: the host idles while the 1-vCPU VM runs
    strict, relaxed = run_mode("strict"), run_mode("relaxed-4x")
    assert strict["util"] < 0.95
    assert relaxed["util"] > 0.99
    assert relaxed["perf"] > 1.1 * strict["perf"]

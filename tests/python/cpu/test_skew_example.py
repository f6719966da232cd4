"""`vmtwin reproduce cpu-skew-example` ([WP §3.1] Figure 1 and Table 1): the engine's skew accounting
and scheduling rule give every printed number, and the rule answers other thresholds and modes as
research/cpu.md A4.4 says it should (so the rows are not a table copied back)."""

import pytest

from vmtwin._core import cosched_example
from vmtwin.exceptions import ScenarioError
from vmtwin.reproduce import EXPERIMENTS
from vmtwin.reproduce.cpu_skew import SLOTS, T_NS


def test_every_printed_number_is_reproduced():
    rows = EXPERIMENTS["cpu-skew-example"].run()
    assert len(rows) == 20 and all(r.source == "published" for r in rows)
    assert [r.metric for r in rows if r.verdict != "PASS"] == []


def _allowed(mode, threshold_t):
    return sorted(cosched_example(mode, SLOTS, T_NS, int(threshold_t * T_NS))[3])


def test_the_rule_follows_the_threshold_and_the_mode():
    full = 0b1111
    # no skew beyond the threshold: nothing co-stopped, all 15 sets may run
    assert _allowed("relaxed-3x", 3) == list(range(1, 16))
    assert _allowed("relaxed-4x", 2) == list(range(1, 16))
    # v2's skew 2T is over 1.5T too: ESX 3.x then needs v0, v1 and v2 together
    assert _allowed("relaxed-3x", 1.5) == [0b0111, full]
    # strict co-starts every vCPU at once
    assert _allowed("strict", 2.5) == [full]
    assert _allowed("off", 0) == list(range(1, 16))


def test_bad_arguments_name_the_field():
    with pytest.raises(ScenarioError, match="mode: unknown variant `relaxed-5x`"):
        cosched_example("relaxed-5x", SLOTS, T_NS, T_NS)
    with pytest.raises(ScenarioError, match="slots: every slot needs one flag per vCPU"):
        cosched_example("relaxed-4x", [[True, False], [True]], T_NS, T_NS)

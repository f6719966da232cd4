"""Engine-run storage reproductions: published or derived targets beside simulated values."""

from __future__ import annotations

import pytest

from vmtwin.reproduce import get


def test_sfqd_share_ratios_match_the_shares():
    rows = get("storage-sfqd-shares").run()
    assert [r.published for r in rows] == [2.0, 4.0]
    assert all(r.source == "derived" and r.note for r in rows)
    assert all(r.verdict == "PASS" for r in rows), [(r.metric, r.simulated) for r in rows]


def test_psp_rows_report_every_block_size_and_judge_the_paper_trends():
    rows = get("psp-rr-vs-adaptive").run()
    per_size = [r for r in rows if r.series == "throughput gain"]
    assert [r.x for r in per_size] == [4, 8, 16, 32, 64, 128, 256]
    assert all(not r.judged for r in per_size)
    judged = {r.metric: r for r in rows if r.judged}
    assert judged["largest throughput gain over block sizes, % (prediction)"].source == "published"
    assert judged["Adaptive >= RR at every block size (1 = yes) (prediction)"].verdict == "PASS"
    # the largest gain is the largest of the per-size rows (an independent max over what is shown)
    assert judged["largest throughput gain over block sizes, % (prediction)"].simulated == pytest.approx(max(r.simulated for r in per_size))
    # below saturation (4 kB: DQLEN keeps DAVG under t_a) Adaptive behaves exactly as RR
    assert per_size[0].simulated == pytest.approx(0.0, abs=1e-9)
    # the mechanism's bounds, computed from the array's constants (owner's command capacity at
    # small blocks, one front end at large ones, 4/3 of the bytes with writes spread), hold
    oracle = [r for r in rows if r.judged and r.source == "derived" and "(1 = yes)" not in r.metric]
    assert len(oracle) == 4 and all(r.verdict == "PASS" for r in oracle), [(r.metric, r.simulated) for r in oracle]
    # the paper's trend: the gain does not fall with the block size
    assert judged["gain non-decreasing in block size (1 = yes) (prediction)"].verdict == "PASS"

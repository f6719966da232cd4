"""The per-pCPU figure: busiest pCPUs first, their values on the map, cluster rows by host."""

from __future__ import annotations

import numpy as np
import pandas as pd

from vmtwin.report.figures import pcpu_figure


def _frame(util: dict, host: str | None = None) -> pd.DataFrame:
    rows = [{"time_s": t, "pcpu": p, "%PCPU_UTIL": u}
            for p, series in util.items() for t, u in zip((2.0, 4.0, 6.0), series)]
    df = pd.DataFrame(rows)
    if host is not None:
        df.insert(0, "host", host)
    return df


def test_busiest_first_with_their_values():
    util = {0: [10, 20, 30], 1: [90, 80, 70], 2: [50, 50, 50]}
    fig = pcpu_figure(_frame(util))
    heat, bars = fig.data
    assert list(heat.y) == ["pCPU 1", "pCPU 2", "pCPU 0"]
    assert np.array_equal(np.asarray(heat.z), np.array([util[1], util[2], util[0]], dtype=float))
    assert list(heat.x) == [2.0, 4.0, 6.0]
    assert list(bars.x) == [80.0, 50.0, 20.0]


def test_only_the_busiest_are_drawn_and_the_title_says_so():
    util = {p: [p, p, p] for p in range(10)}
    fig = pcpu_figure(_frame(util), n=4)
    assert list(fig.data[0].y) == [f"pCPU {p}" for p in (9, 8, 7, 6)]
    assert "top 4 of 10 pCPUs" in fig.layout.title.text


def test_cluster_rows_name_their_host():
    df = pd.concat([_frame({0: [1, 1, 1]}, "esx-a"), _frame({0: [9, 9, 9]}, "esx-b")])
    assert list(pcpu_figure(df).data[0].y) == ["pCPU esx-b/0", "pCPU esx-a/0"]


def test_no_rows_no_traces():
    fig = pcpu_figure(pd.DataFrame(columns=["time_s", "pcpu", "%PCPU_UTIL"]))
    assert len(fig.data) == 0
    assert "all 0 pCPUs" in fig.layout.title.text

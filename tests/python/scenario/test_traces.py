"""Trace readers: PlanetLab text files and the Bitbrains Parquet sample."""

from __future__ import annotations

import pytest

from vmtwin.exceptions import ScenarioError
from vmtwin.traces import PLANETLAB_SAMPLE_NS, read_bitbrains, read_planetlab


def test_planetlab_percent_to_fraction(tmp_path):
    f = tmp_path / "vm"
    f.write_text("0\n50\n100\n\n")
    seg, util = read_planetlab(f)
    assert seg == [PLANETLAB_SAMPLE_NS] * 3
    assert util == [0.0, 0.5, 1.0]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("10\nabc\n", ":2: got 'abc'"),
        ("10\n20\n101\n", ":3: got 101"),
        ("10\n-1\n", ":2: got -1"),
        ("10\n\n20\n", ":2: got ''; allowed: no blank lines"),
        ("", "empty"),
    ],
)
def test_planetlab_bad_lines_name_file_and_line(tmp_path, text, needle):
    f = tmp_path / "vm"
    f.write_text(text)
    with pytest.raises(ScenarioError) as info:
        read_planetlab(f)
    assert str(f) in str(info.value)
    assert needle in str(info.value)


def test_planetlab_missing_file(tmp_path):
    with pytest.raises(ScenarioError, match="an existing PlanetLab trace file"):
        read_planetlab(tmp_path / "nope")


def test_planetlab_real_day(shared_data):
    tr = read_planetlab(shared_data / "planetlab/20110303/ait05_us_es_root")
    assert len(tr.segment_ns) == 288
    assert tr.total_ns == 24 * 3600 * 10**9
    assert all(0.0 <= u <= 1.0 for u in tr.utilization)


def test_bitbrains_vm(shared_data):
    tr = read_bitbrains(shared_data / "bitbrains-small/tasks-fragments", 116)
    seg, util = tr
    assert len(seg) == len(util) == tr.meta["fragments"] > 0
    assert all(s > 0 and s % 10**6 == 0 for s in seg)
    assert all(0.0 <= u <= 1.0 for u in util)
    assert tr.meta["cpu_count"] >= 1


def test_bitbrains_clamping_is_counted(shared_data):
    # SOURCE.md: 19,461 fragments exceed their VM's capacity; some VM must show clamping.
    folder = shared_data / "bitbrains-small/tasks-fragments"
    from vmtwin.traces import bitbrains_vm_ids

    total = sum(read_bitbrains(folder, i).clamped for i in bitbrains_vm_ids(folder)[:50])
    assert total > 0


def test_bitbrains_unknown_id(shared_data):
    with pytest.raises(ScenarioError, match="got 1; allowed: a VM id present"):
        read_bitbrains(shared_data / "bitbrains-small/tasks-fragments", 1)


def test_bitbrains_missing_folder(tmp_path):
    with pytest.raises(ScenarioError, match="tasks-fragments folder"):
        read_bitbrains(tmp_path / "nope", 1)

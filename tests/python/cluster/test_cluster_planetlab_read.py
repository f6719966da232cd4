"""PlanetLab files are read at once when they are bare integers (``traces._PLAIN_PERCENTS``), line
by line otherwise: the same trace or the same refusal either way, against a reference reader
written here from the format (one integer percent 0..100 per line, whitespace around a value and
trailing blank lines allowed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmtwin.exceptions import ScenarioError
from vmtwin.traces import PLANETLAB_SAMPLE_NS, read_planetlab


def _reference(text: str):
    """The samples as fractions, or None when the file must be refused."""
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return None
    out = []
    for line in lines:
        s = line.strip()
        if not s or not (s.isascii() and s.lstrip("+-").isdigit()) or not 0 <= int(s) <= 100:
            return None
        out.append(int(s) / 100.0)
    return out


_value = st.one_of(st.integers(0, 100).map(str), st.integers(0, 100).map(lambda v: f"{v:03d}"),
                   st.sampled_from(["101", "999", "1000", "-1", "+7", " 5", "6 ", "x", "", "4.5"]))


@settings(max_examples=300, deadline=None)
@given(values=st.lists(_value, max_size=12), sep=st.sampled_from(["\n", "\r\n"]),
       tail=st.sampled_from(["", "\n", "\n\n", "\n \n"]))
def test_fast_and_line_by_line_reads_agree_with_the_reference(tmp_path_factory, values, sep, tail):
    text = sep.join(values) + tail
    path = Path(tmp_path_factory.mktemp("pl")) / "vm"
    path.write_bytes(text.encode())
    want = _reference(text)
    if want is None:
        with pytest.raises(ScenarioError):
            read_planetlab(path)
        return
    tr = read_planetlab(path)
    assert tr.utilization == want
    assert tr.segment_ns == [PLANETLAB_SAMPLE_NS] * len(want)


def test_a_real_day_reads_the_same_either_way(tmp_path):
    """The shipped files take the fast path; with a space added at the end each takes the other."""
    day = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "planetlab" / "20110303"
    for f in sorted(day.iterdir())[:40]:
        slow = tmp_path / f.name
        slow.write_bytes(f.read_bytes() + b" ")
        a, b = read_planetlab(f), read_planetlab(slow)
        assert a.utilization == b.utilization and a.segment_ns == b.segment_ns

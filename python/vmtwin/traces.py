"""Readers for real CPU-utilisation traces, turned into the engine's piecewise-constant demand.

A trace workload in the engine is two parallel lists: ``segment_ns[k]`` (how long segment ``k``
lasts) and ``utilization[k]`` (the fraction 0..1 of the VM's capacity it demands meanwhile). Two
public formats are read (see ``/work/shared/data/*/SOURCE.md``):

- **PlanetLab** (CoMon data as shipped by CloudSim): one file per VM, one integer percent 0..100
  per line, one line per 5-minute sample (288 lines = one day). Fraction = percent / 100. CloudSim
  interpolates linearly between points; vmtwin holds each sample for its 5 minutes instead,
  because the engine's trace demand is piecewise constant.
- **Bitbrains** (GWA-T-12 sample as shipped by OpenDC, ``tasks-fragments`` layout): per VM id a
  run of fragments, each with a ``duration`` in ms and a mean ``cpu_usage`` in MHz; the task's
  ``cpu_capacity`` (MHz) is the VM's capacity. Fraction = cpu_usage / cpu_capacity, clamped to
  [0, 1] (the source has samples above capacity); how many were clamped is kept in
  :attr:`Trace.clamped`.

Every problem with a file raises :class:`~vmtwin.exceptions.ScenarioError` naming the file and,
for text files, the line. Files are read only when they are regular files (a FIFO would block
forever, ``/dev/zero`` never ends, a directory is no trace) and no bigger than the bounds of
:mod:`vmtwin.scenario.limits` (``MAX_TRACE_TEXT_BYTES``, ``MAX_TRACE_PARQUET_BYTES``,
``MAX_TRACE_SEGMENTS``, and segments no longer than ``MAX_TIME_NS``).
"""

from __future__ import annotations

import io
import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Union

from vmtwin.exceptions import ScenarioError

__all__ = ["Trace", "TraceReader", "PLANETLAB_SAMPLE_NS", "read_planetlab", "read_bitbrains", "bitbrains_vm_ids"]

#: PlanetLab/CoMon sampling period: 5 minutes.
PLANETLAB_SAMPLE_NS = 300 * 10**9
_MS = 10**6


@dataclass(frozen=True)
class Trace:
    """A CPU-demand trace: parallel lists of segment lengths and utilisation fractions.

    Unpacks as ``segment_ns, utilization = trace`` so callers that only want the two lists
    need not know the class.

    Attributes
    ----------
    segment_ns : list[int]
        Length of each segment in nanoseconds (all > 0).
    utilization : list[float]
        Demand of each segment as a fraction 0..1 of the VM's capacity.
    source : str
        The file (or folder and VM id) read.
    clamped : int
        Samples that were outside [0, 1] before clamping (Bitbrains only; 0 for PlanetLab).
    meta : dict
        Format-specific facts (e.g. Bitbrains ``cpu_count`` and ``cpu_capacity_mhz``).
    """

    segment_ns: list[int]
    utilization: list[float]
    source: str = ""
    clamped: int = 0
    meta: dict = field(default_factory=dict)

    def __iter__(self) -> Iterator[list]:
        return iter((self.segment_ns, self.utilization))

    @property
    def total_ns(self) -> int:
        """Length of the whole trace in nanoseconds."""
        return sum(self.segment_ns)


def scenario_error(path: str, value: object, allowed: str) -> ScenarioError:
    """The scenario layer's error, value and path shortened (imported late: the scenario package
    imports this module)."""
    from vmtwin.scenario.shown import bounded_error

    return bounded_error(path, value, allowed)


def _limits():
    from vmtwin.scenario import limits

    return limits


def _why(exc: BaseException) -> str:
    """The reason of an OS or decoding error without the file name (the message names it once)."""
    reason = getattr(exc, "strerror", None) or str(exc)
    return f"{exc.__class__.__name__}: {reason}"[:200]


_KINDS = [(stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")]


def checked_path(path: Union[str, Path], what: str) -> Path:
    """``path`` as a Path, or a ScenarioError if no file can have that name (a NUL byte)."""
    text = str(path)
    if "\x00" in text:
        raise scenario_error(text, text, f"a path to {what} without NUL bytes")
    return Path(path)


def regular_file_size(path: Path, what: str, max_bytes: int) -> int:
    """Size of ``path`` if it is a regular file of at most ``max_bytes``; else a ScenarioError."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise scenario_error(str(path), str(path), f"an existing {what}") from None
    except (OSError, ValueError) as exc:
        raise scenario_error(str(path), str(path), f"a readable {what} ({_why(exc)})") from None
    _check_stat(path, st, what, max_bytes)
    return st.st_size


def _check_stat(path: Path, st: os.stat_result, what: str, max_bytes: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
        raise scenario_error(str(path), str(path), f"a regular file as the {what} (this is {kind})")
    if st.st_size > max_bytes:
        raise scenario_error(str(path), str(path), f"a {what} of at most {max_bytes:,} bytes (this one has "
                             f"{st.st_size:,}; bigger inputs would exhaust memory while being read)")


def read_text_file(path: Path, what: str, max_bytes: int = 0) -> str:
    """The UTF-8 text of ``path``, or a ScenarioError naming the file and ``what`` was expected.

    Only a regular file of at most ``max_bytes`` (default: ``MAX_TRACE_TEXT_BYTES``) is read; it
    is opened without blocking, so a FIFO put where a file was expected fails at once.
    """
    max_bytes = max_bytes or _limits().MAX_TRACE_TEXT_BYTES
    path = checked_path(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise scenario_error(str(path), str(path), f"an existing {what}") from None
    except (OSError, ValueError) as exc:
        raise scenario_error(str(path), str(path), f"a readable UTF-8 {what} ({_why(exc)})") from None
    try:
        _check_stat(path, os.fstat(fd), what, max_bytes)
    except ScenarioError:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as f:
        try:
            data = f.read(max_bytes + 1)
        except OSError as exc:
            raise scenario_error(str(path), str(path), f"a readable {what} ({_why(exc)})") from None
    if len(data) > max_bytes:  # it grew since it was checked
        raise scenario_error(str(path), str(path), f"a {what} of at most {max_bytes:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise scenario_error(str(path), str(path), f"a readable UTF-8 {what} ({_why(exc)})") from None


#: A PlanetLab file of bare integers of at most 3 digits, one per line, blank lines only at the end.
_PLAIN_PERCENTS = re.compile(r"(?:[0-9]{1,3}\n)*[0-9]{1,3}\n*")


def read_planetlab(path: str | Path) -> Trace:
    """Read one PlanetLab VM trace (one integer percent per line, 5-minute samples).

    Parameters
    ----------
    path : str or Path
        The trace file, e.g. ``.../planetlab/20110303/ait05_us_es_root``.

    Returns
    -------
    Trace
        ``segment_ns`` all equal to 5 minutes, ``utilization = percent / 100``.

    Raises
    ------
    ScenarioError
        The file is missing or unreadable, empty, or a line is not an integer from 0 to 100
        (the message names the file and the line number).
    """
    p = checked_path(path, "PlanetLab trace file")
    text = read_text_file(p, "PlanetLab trace file")
    max_segments = _limits().MAX_TRACE_SEGMENTS
    if _PLAIN_PERCENTS.fullmatch(text):
        # the common file (bare integers, one per line): read at once; anything else, and any
        # value or length out of bounds, takes the line-by-line path, which says what and where
        pcts = list(map(int, text.split()))
        if max(pcts) <= 100 and len(pcts) <= max_segments:
            return Trace([PLANETLAB_SAMPLE_NS] * len(pcts), [pct / 100.0 for pct in pcts], source=str(p))
    util: list[float] = []
    blank_at = 0  # first blank line seen; only trailing blank lines are harmless
    for lineno, line in enumerate(io.StringIO(text), start=1):  # not splitlines: one line at a time
        s = line.strip()
        if not s:
            blank_at = blank_at or lineno
            continue
        if blank_at:
            # A blank line in the middle would silently shift every later sample in time.
            raise scenario_error(f"{p}:{blank_at}", "", "no blank lines between samples")
        try:
            pct = int(s)
        except ValueError:
            raise scenario_error(f"{p}:{lineno}", s, "an integer percent from 0 to 100 per line") from None
        if not 0 <= pct <= 100:
            raise scenario_error(f"{p}:{lineno}", pct, "an integer percent from 0 to 100 per line")
        util.append(pct / 100.0)
        if len(util) > max_segments:
            raise scenario_error(f"{p}:{lineno}", f"sample {len(util):,}",
                                 f"at most {max_segments:,} samples per trace (the segments are copied into the engine)")
    if not util:
        raise scenario_error(str(p), "an empty file", "at least one sample (one integer percent per line)")
    return Trace([PLANETLAB_SAMPLE_NS] * len(util), util, source=str(p))


def _bitbrains_tables(folder: Path):
    """Read tasks.parquet and fragments.parquet of a Bitbrains ``tasks-fragments`` folder."""
    import pyarrow.parquet as pq  # imported late: pyarrow is heavy and only traces need it

    tables = {}
    for name, cols in (("tasks", ["id", "cpu_count", "cpu_capacity"]), ("fragments", ["id", "duration", "cpu_usage"])):
        f = folder / f"{name}.parquet"
        if not f.exists():
            raise scenario_error(str(f), str(f), f"an existing Bitbrains {name}.parquet in the trace folder")
        regular_file_size(f, f"Bitbrains {name}.parquet", _limits().MAX_TRACE_PARQUET_BYTES)
        try:
            tables[name] = pq.read_table(f, columns=cols)
        except Exception as exc:  # pyarrow raises several classes for bad files
            raise scenario_error(
                str(f), str(f), f"a Parquet file with columns {', '.join(cols)} ({_why(exc)})"
            ) from None
    return tables["tasks"], tables["fragments"]


def bitbrains_vm_ids(folder: str | Path) -> list[int]:
    """List the VM ids of a Bitbrains ``tasks-fragments`` folder, sorted."""
    tasks, _ = _bitbrains_tables(Path(folder))
    return sorted(int(i) for i in tasks.column("id").to_pylist())


def read_bitbrains(folder: str | Path, vm_id: int) -> Trace:
    """Read the CPU trace of one VM from a Bitbrains ``tasks-fragments`` folder.

    Parameters
    ----------
    folder : str or Path
        Folder holding ``tasks.parquet`` and ``fragments.parquet`` (OpenDC layout).
    vm_id : int
        The VM's ``id`` (116..1247 in the shipped sample).

    Returns
    -------
    Trace
        One segment per fragment (``duration`` ms -> ns) with utilisation
        ``cpu_usage / cpu_capacity`` clamped to [0, 1]; ``clamped`` counts the fragments that
        were above capacity (or negative), ``meta`` holds ``cpu_count`` and ``cpu_capacity_mhz``.

    Raises
    ------
    ScenarioError
        Missing folder or files, unknown VM id (the message lists a few valid ids), or a fragment
        with a non-positive duration or a non-finite usage (the message names the row).
    """
    return _BitbrainsFolder(Path(folder)).trace(vm_id)


class _BitbrainsFolder:
    """One ``tasks-fragments`` folder read once, for reading the traces of many of its VMs."""

    def __init__(self, d: Path) -> None:
        d = checked_path(d, "a Bitbrains tasks-fragments folder")
        if not d.is_dir():
            raise scenario_error(str(d), str(d), "an existing Bitbrains tasks-fragments folder")
        self.dir = d
        self.tasks, self.frags = _bitbrains_tables(d)
        self.ids = self.tasks.column("id").to_pylist()
        self.row = {}
        for r, i in enumerate(self.ids):
            self.row.setdefault(i, r)  # the first row, as list.index finds it

    def trace(self, vm_id: int) -> Trace:
        d, tasks, frags, ids = self.dir, self.tasks, self.frags, self.ids
        row = self.row.get(vm_id)
        if row is None:
            some = ", ".join(str(i) for i in sorted(ids)[:8])
            raise scenario_error(
                f"{d / 'tasks.parquet'}", vm_id, f"a VM id present in the trace ({len(ids)} VMs, e.g. {some})"
            )
        capacity = float(tasks.column("cpu_capacity")[row].as_py())
        cpu_count = int(tasks.column("cpu_count")[row].as_py())
        if not (capacity > 0 and math.isfinite(capacity)):
            raise scenario_error(f"{d / 'tasks.parquet'} (id {vm_id})", capacity, "a positive cpu_capacity in MHz")

        import pyarrow.compute as pc

        mask = pc.equal(frags.column("id"), vm_id)
        # Row numbers in the file, so an error can point at the offending fragment.
        rows = pc.indices_nonzero(mask).to_pylist()
        durations = pc.filter(frags.column("duration"), mask).to_pylist()
        usage = pc.filter(frags.column("cpu_usage"), mask).to_pylist()
        if not durations:
            raise scenario_error(f"{d / 'fragments.parquet'}", vm_id, "a VM id with at least one fragment")
        limits = _limits()
        if len(durations) > limits.MAX_TRACE_SEGMENTS:
            raise scenario_error(f"{d / 'fragments.parquet'}", f"{len(durations):,} fragments for VM {vm_id}",
                                 f"at most {limits.MAX_TRACE_SEGMENTS:,} per trace (copied into the engine)")
        max_ms = limits.MAX_TIME_NS // _MS
        seg: list[int] = []
        util: list[float] = []
        clamped = 0
        for r, dur_ms, mhz in zip(rows, durations, usage):
            if dur_ms is None or not dur_ms > 0 or not dur_ms <= max_ms:
                raise scenario_error(f"{d / 'fragments.parquet'} row {r}", dur_ms,
                                     f"a positive fragment duration in ms, at most {max_ms} (100 years)")
            if mhz is None or not math.isfinite(mhz):
                raise scenario_error(f"{d / 'fragments.parquet'} row {r}", mhz, "a finite cpu_usage in MHz")
            frac = mhz / capacity
            if frac > 1.0 or frac < 0.0:
                clamped += 1
                frac = min(1.0, max(0.0, frac))
            seg.append(int(dur_ms) * _MS)
            util.append(frac)
        return Trace(
            seg,
            util,
            source=f"{d} (vm_id {vm_id})",
            clamped=clamped,
            meta={"cpu_count": cpu_count, "cpu_capacity_mhz": capacity, "fragments": len(seg)},
        )


class TraceReader:
    """Reads each trace once: many VMs of a scenario often replay the same file or folder.

    ``reader.planetlab(path)`` and ``reader.bitbrains(folder, vm_id)`` behave as
    :func:`read_planetlab` and :func:`read_bitbrains` (same results, same errors), but a second
    request for the same trace returns the same :class:`Trace`, and a Bitbrains folder's Parquet
    files are read once for all of its VMs.
    """

    def __init__(self) -> None:
        self._traces: dict[tuple, Trace] = {}
        self._folders: dict[Path, _BitbrainsFolder] = {}

    def planetlab(self, path: str | Path) -> Trace:
        key = ("planetlab", Path(path))
        tr = self._traces.get(key)
        if tr is None:
            tr = self._traces[key] = read_planetlab(path)
        return tr

    def bitbrains(self, folder: str | Path, vm_id: int) -> Trace:
        d = Path(folder)
        key = ("bitbrains", d, vm_id)
        tr = self._traces.get(key)
        if tr is None:
            f = self._folders.get(d)
            if f is None:
                f = self._folders[d] = _BitbrainsFolder(d)
            tr = self._traces[key] = f.trace(vm_id)
        return tr

"""The Tier-1 paper's tables as fixtures, exactly as printed, and the runs they describe.

``data/tier1_tables.json`` holds Tables 1-7 cell by cell as printed (``"2,192"``, ``"40K"``,
``"13%"``, ``"N/A"``), with the column headers and the one corrected number taken from the
seed-000 reprint; each correction is listed under ``corrections`` with its id in
research/perf-methodology.md section 0 (E1 headers, E2 ``297K`` -> ``2971K``).

:func:`cell_value` turns a printed cell into a number (``K`` = 1e3, ``B`` = 1e9, ``%`` = 1/100,
``N/A`` = None); :func:`runs` turns Tables 2-5 and 7 into :class:`~.schema.Run` objects, one per
counter source, through the same alias table a perf file goes through, so the reproductions
exercise the tool's own path. The printed CPI and TLB-latency rows are outputs of the method,
not inputs: they are kept in the fixture and compared, never fed in.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Optional

from vmtwin.methodology.aliases import canonical_event
from vmtwin.methodology.schema import Counter, Run, RunMetadata, event_kind

FIXTURE = Path(__file__).with_name("data") / "tier1_tables.json"

_CELL = re.compile(r"^(?P<num>-?[0-9][0-9,]*(?:\.[0-9]+)?)(?P<suffix>[KMB%]?)$")
_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "%": 0.01}

#: Paper column -> (platform, counter source, vPMC mode).
_COLUMNS = {
    "Native": ("native", "native_os", None),
    "ESX-EMON": ("virtual", "host_system", None),
    "Guest EMON": ("virtual", "guest_vpmc", "guest"),  # "We typically collected results in the guest mode" (A.4)
    "vPMC-Hybrid (VM)": ("virtual", "guest_vpmc", "hybrid"),
}
#: Rows that are the method's outputs (recomputed and compared, never read as inputs).
DERIVED_ROWS = ("Thread CPI", "CPI", "ITLB Miss latency cycles", "DTLB Miss latency cycles")


def cell_value(text: str) -> Optional[float]:
    """The number a printed cell stands for.

    >>> cell_value("2,192"), cell_value("40K"), cell_value("13%"), cell_value("4.5B"), cell_value("N/A")
    (2192.0, 40000.0, 0.13, 4500000000.0, None)
    """
    t = text.strip()
    if t == "N/A":
        return None
    m = _CELL.match(t)
    if not m:
        raise ValueError(f"{FIXTURE.name}: cell {text!r} is not a printed number (digits, optional K/M/B/%)")
    return float(m.group("num").replace(",", "")) * _SCALE[m.group("suffix")]


@lru_cache(maxsize=1)
def fixture() -> dict:
    """The fixture file as stored."""
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def table(name: str) -> dict:
    return fixture()["tables"][name]


def printed(name: str, counter: str, mode: str, column: str) -> str:
    """A cell exactly as printed, e.g. ``printed("table2", "Unhalted core cycles", "User", "ESX-EMON")``."""
    t = table(name)
    col = t["columns"].index(column)
    for row in t["rows"]:
        if row["counter"] == counter and row["mode"] == mode:
            return row["cells"][col]
    raise KeyError(f"{name}: no row {counter!r} / {mode!r}")


def value(name: str, counter: str, mode: str, column: str) -> Optional[float]:
    return cell_value(printed(name, counter, mode, column))


def _mode(printed_mode: str) -> str:
    return {"Kernel": "kernel", "User": "user", "": "all"}[printed_mode]


def _run(tables: tuple[str, ...], column: str, work_unit: str, label: str) -> Run:
    platform, source, vpmc_mode = _COLUMNS[column]
    counters = []
    for name in tables:
        t = table(name)
        if column not in t["columns"]:
            continue
        col = t["columns"].index(column)
        for row in t["rows"]:
            if row["counter"] in DERIVED_ROWS:
                continue
            event, _ = canonical_event(row["counter"])
            if event_kind(event) is None:
                raise ValueError(f"{FIXTURE.name}: {name} row {row['counter']!r} has no canonical event")
            v = cell_value(row["cells"][col])
            status = "counted" if v is not None else "not available"
            counters.append(Counter(event, _mode(row["mode"]), v, status=status, origin=f"{name}: {row['counter']}"))
    meta = RunMetadata(platform=platform, source=source, vpmc_mode=vpmc_mode, work_unit=work_unit, work_count=1.0,
                       label=label)
    return Run.build(meta, counters)


def runs(workload: str) -> dict[str, Run]:
    """The paper's runs of a workload keyed by column: ``oltp`` (Tables 2-3, per transaction),
    ``hadoop`` (Tables 4-5, per row) or ``rr-loopback`` (Table 7, run totals)."""
    if workload == "oltp":
        return {c: _run(("table2", "table3"), c, "transaction", f"OLTP {c}") for c in ("Native", "ESX-EMON", "Guest EMON")}
    if workload == "hadoop":
        return {c: _run(("table4", "table5"), c, "row", f"Hadoop {c}") for c in ("Native", "ESX-EMON", "Guest EMON")}
    if workload == "rr-loopback":
        return {c: _run(("table7",), c, "run", f"RR loopback {c}") for c in ("Native", "vPMC-Hybrid (VM)")}
    raise ValueError(f"paper workload: got {workload!r}; allowed: oltp, hadoop, rr-loopback")

"""The memory objects of an esxtop batch-mode export, from a run's ``mem`` and ``mem_host``
tables (runs with a ``memory:`` section).

Added after the CPU and disk objects of :mod:`vmtwin.export.esxtop`:

- ``Memory`` (the host): ``Machine MBytes``, ``Free MBytes`` and ``Memory State`` (0 high,
  1 soft, 2 hard, 3 low, as ``mem_host.state``),
- ``Group Memory(<vm_id+1>:<vm>)`` per VM, with the counters of :data:`VM_MEM_COUNTERS`.

The counter names follow esxtop's memory panel (its column names spelled out as batch mode
spells them) as vmtwin's authors know them, not checked against a capture from a host
(docs/reference/counters.md lists them).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: esxtop batch-mode counter names of a VM's memory group, by ``mem`` column.
VM_MEM_COUNTERS: list[tuple[str, str]] = [
    ("MEMSZ", "Memory Size MBytes"),
    ("GRANT", "Memory Granted MBytes"),
    ("CNSM", "Memory Consumed MBytes"),
    ("SZTGT", "Target Size MBytes"),
    ("TCHD", "Touched MBytes"),
    ("MCTLSZ", "Memctl MBytes"),
    ("MCTLTGT", "Memctl Target MBytes"),
    ("SWCUR", "Swapped MBytes"),
    ("SWTGT", "Swap Target MBytes"),
    ("SWR/s", "Swap Read MBytes/sec"),
    ("SWW/s", "Swap Written MBytes/sec"),
    ("ZIP", "Compressed MBytes"),
    ("ZIP/s", "Compressed MBytes/sec"),
    ("UNZIP/s", "Decompressed MBytes/sec"),
    ("CACHEUSD", "Compression Cache Used MBytes"),
    ("SHRD", "Shared MBytes"),
    ("ZERO", "Zero MBytes"),
    ("SHRDSVD", "Shared Saved MBytes"),
    ("%SWPWT", "% Swap Wait Time"),
]

#: esxtop batch-mode counter names of the host's memory object, by ``mem_host`` column.
HOST_MEM_COUNTERS: list[tuple[str, str]] = [
    ("PMEM", "Machine MBytes"),
    ("FREE", "Free MBytes"),
    ("state", "Memory State"),
]


def mem_columns(tables: dict[str, pd.DataFrame], times: np.ndarray, prefix: str) -> tuple[list[str], list[np.ndarray]]:
    """Headers and value columns of the memory objects (none without memory tables).

    Parameters
    ----------
    tables : dict of str to DataFrame
        The run's ``mem`` and ``mem_host`` tables, those it has.
    times : numpy.ndarray
        The export's sample times (rows).
    prefix : str
        ``\\\\<host>\\``.
    """
    header: list[str] = []
    columns: list[np.ndarray] = []
    host = tables.get("mem_host")
    if host is not None and len(host):
        h = host.drop_duplicates("time_s").set_index("time_s").reindex(times)
        for col, label in HOST_MEM_COUNTERS:
            header.append(f"{prefix}Memory\\{label}")
            columns.append(h[col].to_numpy(dtype=float))
    mem = tables.get("mem")
    if mem is not None and len(mem):
        vms = mem[["vm_id", "vm"]].drop_duplicates("vm_id").sort_values("vm_id")
        wide = {col: mem.pivot_table(index="time_s", columns="vm_id", values=col, aggfunc="first").reindex(times)
                for col, _ in VM_MEM_COUNTERS}
        for vm_id, name in zip(vms["vm_id"], vms["vm"]):  # one object's counters together, as esxtop
            for col, label in VM_MEM_COUNTERS:
                header.append(f"{prefix}Group Memory({int(vm_id) + 1}:{name})\\{label}")
                columns.append(wide[col][vm_id].to_numpy(dtype=float))
    return header, columns

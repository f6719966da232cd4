"""The disk objects of an esxtop batch-mode export, from a run's storage tables.

esxtop's disk screens are the adapter view (``d``), the device view (``u``) and the VM view
(``v``); in batch mode each becomes a perfmon object per instance. This module adds, after the
CPU objects of :mod:`vmtwin.export.esxtop`:

- ``Physical Disk Adapter(<vmhba>)`` per HBA port (``adapter`` table),
- ``Physical Disk SCSI Device(<datastore>)`` per LUN (``lun`` table; a real host names the
  device ``naa.<id>``, here the datastore name),
- ``Physical Disk Path(<runtime name>)`` per path (``path`` table, ``vmhbaN:C0:T<c>:L<lun>``),
- ``Virtual Disk(<vm>:<disk>)`` per VM disk (``disk`` table),

each with the counters of :data:`DISK_COUNTERS`. The counter names are checked against VMware's
documented names and the batch-mode names public parsers of real captures use, not against a
capture of our own (docs/storage.md has the comparison). `Aborts/sec` (ABRTS/s) is not exported:
the engine never aborts a command.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: esxtop batch-mode counter names of a disk object, by storage-table column.
DISK_COUNTERS: list[tuple[str, str]] = [
    ("CMDS/s", "Commands/sec"),
    ("READS/s", "Reads/sec"),
    ("WRITES/s", "Writes/sec"),
    ("MBREAD/s", "MBytes Read/sec"),
    ("MBWRTN/s", "MBytes Written/sec"),
    ("DAVG/cmd", "Average Driver MilliSec/Command"),
    ("KAVG/cmd", "Average Kernel MilliSec/Command"),
    ("GAVG/cmd", "Average Guest MilliSec/Command"),
    ("QAVG/cmd", "Average Queue MilliSec/Command"),
    ("ACTV", "Active Commands"),
    ("QUED", "Queued Commands"),
    ("%USD", "% Used"),
    ("DQLEN", "Device Q Depth"),
]

#: (table, instance-name column, perfmon object) in export order.
DISK_OBJECTS: list[tuple[str, str, str]] = [
    ("adapter", "adapter", "Physical Disk Adapter"),
    ("lun", "lun", "Physical Disk SCSI Device"),
    ("path", "path_name", "Physical Disk Path"),
    ("disk", "disk", "Virtual Disk"),
]


def disk_columns(tables: dict[str, pd.DataFrame], times: np.ndarray, prefix: str) -> tuple[list[str], list[np.ndarray]]:
    """Headers and value columns (aligned to ``times``, NaN where absent) of the disk objects."""
    header: list[str] = []
    columns: list[np.ndarray] = []
    for table, name_col, obj in DISK_OBJECTS:
        df = tables.get(table)
        if df is None or not len(df):
            continue
        id_col = {"adapter": "adapter_id", "lun": "lun_id", "path": "path_id", "disk": "disk_id"}[table]
        names = df.drop_duplicates(id_col).sort_values(id_col)[[id_col, name_col]]
        wide = {col: df.pivot_table(index="time_s", columns=id_col, values=col, aggfunc="first").reindex(times)
                for col, _ in DISK_COUNTERS if col in df.columns}
        for i, name in zip(names[id_col], names[name_col]):
            for col, label in DISK_COUNTERS:
                if col in wide:
                    header.append(f"{prefix}{obj}({name})\\{label}")
                    columns.append(wide[col][i].to_numpy(dtype=float))
    return header, columns

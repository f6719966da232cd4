"""The inventory graph on disk: an embedded LadybugDB (the maintained fork of Kùzu) database.

``write_graph(inventory, folder)`` creates one node table per node type and one relationship
table per relationship (each joining the type pairs of :data:`~vmtwin.inventory.model.REL_TYPES`),
bulk-loads them with ``COPY`` from Arrow tables in one transaction with one checkpoint (the
engine's automatic checkpoint after each statement cost tens of milliseconds each), and writes
``manifest.json`` (source, counts, database bytes). It builds the folder under a temporary name beside the target and renames it
at the end, so an error leaves nothing behind. ``open_graph(folder)`` opens it read-only: a
query that tries to write is refused by the engine.

Neo4j, which the paper used, would sit behind the same :class:`Graph` interface (``query`` with
Cypher text and parameters, ``close``); it is not implemented (no Neo4j server can run here).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vmtwin.exceptions import VmtwinError
from vmtwin.inventory.model import NODE_TYPES, REL_PROPERTIES, REL_TYPES, Inventory

DB_FILE = "graph.lbug"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Result:
    """Columns and rows of one query, with the engine's wall time in milliseconds."""

    columns: list[str]
    rows: list[list[Any]]
    elapsed_ms: float

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, r)) for r in self.rows]


def schema_ddl() -> list[str]:
    """The CREATE statements of the schema, in order."""
    ddl = [f"CREATE NODE TABLE {t}(uuid STRING PRIMARY KEY, name STRING)" for t in NODE_TYPES]
    for rel, pairs in REL_TYPES.items():
        ends = ", ".join(f"FROM {a} TO {b}" for a, b in pairs)
        props = "".join(f", {p} STRING" for p in REL_PROPERTIES[rel])
        ddl.append(f"CREATE REL TABLE {rel}({ends}{props})")
    return ddl


def database_bytes(folder: str | Path) -> int:
    """Bytes of the database files in a graph folder (the manifest excluded)."""
    folder = Path(folder)
    return sum(p.stat().st_size for p in folder.iterdir() if p.name != MANIFEST and p.is_file())


def write_graph(inventory: Inventory, folder: str | Path, *, force: bool = False) -> dict[str, Any]:
    """Load ``inventory`` into a new graph folder; returns its manifest."""
    import ladybug
    import pyarrow as pa

    target = Path(folder)
    if target.exists() and not force:
        raise FileExistsError(f"{target}: already exists; allowed: a new path (or --force to replace it)")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        started = time.perf_counter()
        # one checkpoint at the end instead of one per statement (each costs tens of ms)
        db = ladybug.Database(str(tmp / DB_FILE), auto_checkpoint=False)
        conn = ladybug.Connection(db)
        for stmt in schema_ddl():
            conn.execute(stmt)
        by_type: dict[str, list[tuple[str, str]]] = {t: [] for t in NODE_TYPES}
        for uuid, (t, name) in inventory.nodes.items():
            by_type[t].append((uuid, name))
        conn.execute("BEGIN TRANSACTION")
        for t, rows in by_type.items():
            if rows:
                arrow = pa.table({"uuid": [r[0] for r in rows], "name": [r[1] for r in rows]})  # noqa: F841
                conn.execute(f"COPY {t} FROM arrow")  # COPY reads the local variable by name
        for (rel, a, b), rows in inventory.edges.items():
            cols = {"from": [r[0] for r in rows], "to": [r[1] for r in rows]}
            if REL_PROPERTIES[rel]:
                cols["role"] = [r[2] for r in rows]
            arrow = pa.table(cols)  # noqa: F841
            conn.execute(f"COPY {rel} FROM arrow (from='{a}', to='{b}')")
        conn.execute("COMMIT")
        conn.execute("CHECKPOINT")
        conn.close()
        db.close()
        manifest = {
            "source": inventory.source,
            "entities": inventory.entity_count,
            "counts": inventory.counts(),
            "database_bytes": database_bytes(tmp),
            "load_seconds": round(time.perf_counter() - started, 3),
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        if target.exists():  # --force: the old folder goes only once the new one is complete
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
            os.replace(target, old / "graph")
            os.replace(tmp, target)
            shutil.rmtree(old)
        else:
            os.replace(tmp, target)
        return manifest
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


class Graph:
    """A read-only connection to a graph folder; ``query`` runs Cypher with parameters."""

    def __init__(self, folder: str | Path):
        import ladybug

        self.folder = Path(folder)
        db_path = self.folder / DB_FILE
        if not db_path.is_file():
            raise FileNotFoundError(f"{self.folder}: not an inventory graph (no {DB_FILE}); "
                                    "allowed: a folder written by `vmtwin inventory load`")
        self._db = ladybug.Database(str(db_path), read_only=True)
        self._conn = ladybug.Connection(self._db)

    @property
    def manifest(self) -> dict[str, Any]:
        return json.loads((self.folder / MANIFEST).read_text())

    def query(self, cypher: str, params: dict[str, Any] | None = None) -> Result:
        started = time.perf_counter()
        try:
            res = self._conn.execute(cypher, params or {})
        except RuntimeError as e:
            raise VmtwinError(f"query {cypher.strip()!r}: {e}") from None
        if isinstance(res, list):  # several statements: the last one's rows
            res = res[-1]
        columns = res.get_column_names()
        rows = res.get_all()
        elapsed = (time.perf_counter() - started) * 1000
        return Result(columns, rows, elapsed)

    def close(self) -> None:
        self._conn.close()
        self._db.close()

    def __enter__(self) -> "Graph":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_graph(folder: str | Path) -> Graph:
    return Graph(folder)

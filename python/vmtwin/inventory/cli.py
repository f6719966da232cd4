"""``vmtwin inventory``: load an inventory into a graph folder, run named queries or any Cypher.

examples:
    vmtwin inventory load --synthetic 10000 --seed 7 -o inv/     # or --rvtools DIR, --vcenter HOST, --figure1
    vmtwin inventory queries                                     # the named queries
    vmtwin inventory query inv/ linked-clone-policy --param max_clones=8
    vmtwin inventory cypher inv/ "MATCH (h:Host) RETURN count(h)" --export hosts.csv

docs/inventory.md has the schema, every query beside the paper's, and the sources' columns.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

from vmtwin.exceptions import VmtwinError

VCENTER_PASSWORD_ENV = "VMTWIN_VCENTER_PASSWORD"
EXPORT_FORMATS = (".csv", ".json", ".parquet")


def register(sub) -> None:
    inv = sub.add_parser("inventory", help="inventory graph: load vSphere inventories, run graph queries",
                         description="Load a vSphere inventory into an embedded graph database (LadybugDB) and "
                                     "run the graph-database paper's named queries or any Cypher.",
                         epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    isub = inv.add_subparsers(dest="inventory_command", required=True)

    load = isub.add_parser("load", help="load an inventory source into a graph folder")
    src = load.add_mutually_exclusive_group(required=True)
    src.add_argument("--synthetic", type=int, metavar="ENTITIES", help="a generated inventory of about this size")
    src.add_argument("--rvtools", metavar="DIR", help="a folder of RVTools CSV sheets (vInfo, vDisk, ...)")
    src.add_argument("--vcenter", metavar="HOST", help=f"a live vCenter (password from ${VCENTER_PASSWORD_ENV})")
    src.add_argument("--figure1", action="store_true", help="the paper's Figure 1 inventory")
    load.add_argument("-o", "--output", required=True, help="graph folder to write")
    load.add_argument("--seed", type=int, default=0, help="seed of --synthetic (default 0)")
    load.add_argument("--ignore-extra-columns", action="store_true",
                      help="--rvtools: skip columns vmtwin does not read instead of refusing them")
    load.add_argument("--port", type=int, default=443, help="--vcenter: port (default 443)")
    load.add_argument("--user", default="administrator@vsphere.local", help="--vcenter: user name")
    load.add_argument("--insecure", action="store_true", help="--vcenter: do not verify the TLS certificate")
    load.add_argument("--force", action="store_true", help="replace an existing graph folder")
    load.set_defaults(func=_cmd_load)

    lst = isub.add_parser("queries", help="list the named queries")
    lst.add_argument("--cypher", action="store_true", help="also print each query's Cypher and the paper's")
    lst.set_defaults(func=_cmd_queries)

    for name, helptext in (("query", "run a named query"), ("cypher", "run any (read-only) Cypher query")):
        q = isub.add_parser(name, help=helptext)
        q.add_argument("graph", help="graph folder written by `vmtwin inventory load`")
        q.add_argument("query", help="named query (see `vmtwin inventory queries`)" if name == "query"
                       else "Cypher text")
        q.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                       help="a query parameter (repeatable); Cypher text reads it as $KEY")
        q.add_argument("--json", action="store_true", help="print rows as JSON instead of a table")
        q.add_argument("--export", metavar="FILE", help=f"write rows to FILE ({', '.join(EXPORT_FORMATS)})")
        q.set_defaults(func=_cmd_query, named=name == "query")


def _params(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep or not key:
            raise VmtwinError(f"--param: got {p!r}; allowed: KEY=VALUE")
        out[key] = value
    return out


def _cmd_load(args: argparse.Namespace) -> int:
    from vmtwin.cli import out
    from vmtwin.inventory.store import write_graph

    if Path(args.output).exists() and not args.force:  # before reading a source, which may be slow
        raise FileExistsError(f"{args.output}: already exists; allowed: a new path (or --force to replace it)")
    if args.synthetic is not None:
        from vmtwin.inventory.synthetic import synthetic_inventory

        inv = synthetic_inventory(entities=args.synthetic, seed=args.seed)
    elif args.rvtools:
        from vmtwin.inventory.rvtools import rvtools_inventory

        inv = rvtools_inventory(args.rvtools, ignore_extra_columns=args.ignore_extra_columns)
    elif args.vcenter:
        from vmtwin.inventory.vcenter import vcenter_inventory

        password = os.environ.get(VCENTER_PASSWORD_ENV)
        if password is None:
            raise VmtwinError(f"--vcenter: ${VCENTER_PASSWORD_ENV} is not set; allowed: the password in that "
                              "environment variable (never on the command line)")
        inv = vcenter_inventory(args.vcenter, args.user, password, port=args.port, verify_tls=not args.insecure)
    else:
        from vmtwin.inventory.figure1 import figure1_inventory

        inv = figure1_inventory()
    m = write_graph(inv, args.output, force=args.force)
    counts = ", ".join(f"{v:,} {k}" for k, v in m["counts"].items() if v)
    out.print(f"wrote [bold]{args.output}[/]: {m['entities']:,} entities ({counts}); "
              f"database {m['database_bytes'] / 1e6:.1f} MB; loaded in {m['load_seconds']:.2f} s")
    return 0


def _cmd_queries(args: argparse.Namespace) -> int:
    from rich.table import Table

    from vmtwin.cli import out
    from vmtwin.inventory.queries import QUERIES, REQUIRED

    t = Table("name", "question", "parameters (default)", "paper section")
    for q in QUERIES.values():
        params = ", ".join(k if p.default is REQUIRED else f"{k} ({p.default})" for k, p in q.params.items())
        t.add_row(q.name, q.question, params, q.source)
    out.print(t)
    if args.cypher:
        for q in QUERIES.values():
            out.print(f"\n[bold]{q.name}[/]\n  {q.cypher}", highlight=False)
            if q.paper:
                out.print(f"  paper: {q.paper}", highlight=False, markup=False)
    return 0


def _cmd_query(args: argparse.Namespace) -> int:
    from vmtwin.inventory.store import open_graph

    given = _params(args.param)
    if args.export and Path(args.export).suffix.lower() not in EXPORT_FORMATS:
        raise VmtwinError(f"--export: got {args.export!r}; allowed: a file ending in {', '.join(EXPORT_FORMATS)}")
    if args.named:
        from vmtwin.inventory.queries import get

        nq = get(args.query)
        cypher, params = nq.cypher, nq.bind(given)
    else:
        cypher, params = args.query, {k: _typed(v) for k, v in given.items()}
        _check_parameters(cypher, params)
    with open_graph(args.graph) as g:
        res = g.query(cypher, params)
    if args.export:
        _export(res, Path(args.export))
    if args.json:
        sys.stdout.write(json.dumps(res.records(), indent=2, default=str) + "\n")
    elif not args.export:
        _print_table(res)
    else:
        from vmtwin.cli import out

        out.print(f"wrote {len(res.rows):,} rows to {args.export}")
    return 0


_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`")
_PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def _check_parameters(cypher: str, params: dict) -> None:
    """Every ``$name`` in the text is given and every given one is used (the engine would read a
    missing one as NULL and answer nothing, and ignore an extra one)."""
    used = set(_PARAMETER.findall(_STRING_LITERAL.sub("''", cypher)))
    missing, extra = sorted(used - set(params)), sorted(set(params) - used)
    if missing:
        raise VmtwinError(f"query {cypher.strip()!r}: parameter ${missing[0]} not given; allowed: --param {missing[0]}=VALUE")
    if extra:
        raise VmtwinError(f"--param {extra[0]}: got a parameter the query does not use; allowed: "
                          f"{', '.join(sorted(used)) or 'none (the query has no $parameters)'}")


def _typed(value: str):
    """A Cypher parameter from the command line: an integer or a float if it reads as one."""
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def _print_table(res) -> None:
    from rich.table import Table

    from vmtwin.cli import out

    t = Table(*res.columns, caption=f"{len(res.rows):,} rows in {res.elapsed_ms:.1f} ms")
    for row in res.rows:
        t.add_row(*(json.dumps(v, default=str) if isinstance(v, (dict, list)) else str(v) for v in row))
    out.print(t)


def _export(res, path: Path) -> None:
    """Write the rows atomically: to a temporary file beside the target, then rename."""
    import pandas as pd

    # nodes, relationships and lists as JSON text, so every format holds them
    rows = [[json.dumps(v, default=str) if isinstance(v, (dict, list)) else v for v in r] for r in res.rows]
    frame = pd.DataFrame(rows, columns=res.columns)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        suffix = path.suffix.lower()
        if suffix == ".csv":
            frame.to_csv(tmp, index=False)
        elif suffix == ".json":
            Path(tmp).write_text(json.dumps(res.records(), indent=2, default=str) + "\n")
        else:
            frame.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

"""Print an analysis in the paper's table formats (Tables 2-5, 7) on a rich console."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from vmtwin.methodology.report import fmt

_HIGH_LEVEL_ROWS = (("Thread Util", "thread_util"), ("Unhalted core cycles", "cycles"), ("Thread CPI", "cpi"),
                    ("Path length", "path_length"))
_TRANSLATION_ROWS = (("DTLB miss latency cycles", "dtlb_latency"), ("DTLB miss page walks completed", "dtlb_walks"),
                     ("DTLB walks per 1000 instructions", "dtlb_walks_per_kinstr"),
                     ("DTLB miss PMH busy cycles", "dtlb_walk_cycles"), ("EPT walk cycles", "ept_cycles"),
                     ("EPT share of PMH cycles", "ept_share_of_walk_cycles"),
                     ("EPT cycles per walk", "ept_cycles_per_walk"), ("non-EPT cycles per walk", "non_ept_cycles_per_walk"),
                     ("ITLB miss latency cycles", "itlb_latency"))


def _cell(key: str, v: Any) -> str:
    if v is None:
        return "N/A"
    if key in ("thread_util", "ept_share_of_walk_cycles"):
        return f"{100 * v:.1f}%"
    if key in ("cpi", "ipc", "dtlb_walks_per_kinstr"):
        return f"{v:.2f}"
    if key in ("dtlb_latency", "ept_cycles_per_walk", "non_ept_cycles_per_walk", "itlb_latency"):
        return f"{v:.1f}"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.3g}"


def print_tables(result: dict[str, Any], console) -> None:
    unit = result["unit"]
    hl = result["high_level"]
    cols = list(hl)
    t = Table("Hardware counter", "Mode", *cols, title=f"High-level hardware stats (per {unit})")
    for label, key in _HIGH_LEVEL_ROWS:
        for mode in ("kernel", "user", "all"):
            cells = [_cell(key, hl[c].get(mode, {}).get(key)) if mode in hl[c] else "" for c in cols]
            if any(c not in ("", "N/A") for c in cells):
                t.add_row(label, mode.capitalize() if mode != "all" else "Total", *cells)
    console.print(t)

    d = result["decomposition"]
    t = Table("Component", "Mode", f"cycles per {unit}", f"% of {d['basis']}",
              title="Overhead decomposition (virtual - native)")
    for p in d["parts"] + [d["total"]]:
        t.add_row(p["component"], p["mode"], fmt(p["cycles"], 0), fmt(p["percent"], 2))
    console.print(t)
    if d["kernel_share_of_increase"] is not None:
        console.print(f"kernel share of the increase: {100 * d['kernel_share_of_increase']:.1f}%")

    t = Table("Column", "Mode", "dC", "dI x CPI_native", "I_virtual x dCPI", "CPI growth",
              title="Path length vs CPI: dC = dI x CPI_native + I_virtual x dCPI")
    for a in result["attribution"]:
        t.add_row(a["column"], a["mode"], fmt(a["delta_cycles"], 0), fmt(a["path_length_part"], 0),
                  fmt(a["cpi_part"], 0), f"{100 * a['cpi_growth']:+.1f}%")
    console.print(t)

    rec = result["reconciliation"]
    if rec:
        measured = rec["measured_throughput_ratio"]
        console.print(f"elapsed time virtual/native from counters: {rec['elapsed_ratio']:.4f} (throughput ratio "
                      f"{rec['throughput_ratio']:.4f}; measured: {'N/A' if measured is None else f'{measured:.4f}'})")

    if result["translation"]:
        rows = {(r["column"], r["mode"]): r for r in result["translation"]}
        keys = list(dict.fromkeys(c for c, _ in rows))
        t = Table("Hardware counter", "Mode", *keys, title=f"Address translation (per {unit})")
        for label, key in _TRANSLATION_ROWS:
            for mode in ("kernel", "user", "all"):
                cells = [_cell(key, rows[c, mode].get(key)) if (c, mode) in rows else "" for c in keys]
                if any(c not in ("", "N/A") for c in cells):
                    t.add_row(label, mode.capitalize(), *cells)
        console.print(t)
    if result["caches"]:
        t = Table("Column", "Mode", "L1I", "L2", "LLC", "L1D misses", title="Instruction fetches served by level")
        for c in result["caches"]:
            t.add_row(c["column"], c["mode"], *(_cell("thread_util", c.get(k)) for k in ("l1", "l2", "llc")),
                      _cell("cycles", c["l1d_misses"]))
        console.print(t)
    if "hybrid" in result:
        h = result["hybrid"]
        console.print(f"hybrid vPMC: cycle inflation {100 * h['cycle_inflation']:.2f}%, EPT "
                      f"{fmt(h['ept_percent_of_native'], 2)}% of native cycles, instructions ratio "
                      f"{h['instructions_ratio']:.3f}, CPI {h['cpi_native']:.3f} -> {h['cpi_virtual']:.3f}")
    if "latency" in result:
        lat = result["latency"]
        t = Table("Workload", "overhead (us)", "relative", "fixed part given inflation (us)",
                  title="Request-response latency overhead")
        fixed = lat.get("fixed_us_given_inflation") or [None] * len(lat["workloads"])
        for name, o, r, f in zip(lat["workloads"], lat["overhead_us"], lat["relative_overhead"], fixed):
            t.add_row(name, f"{o:.2f}", f"{100 * r:.1f}%", fmt(f, 2))
        console.print(t)
        if "fit_fixed_us" in lat:
            console.print(f"least squares: overhead = {lat['fit_fixed_us']:.2f} us + {lat['fit_slope']:.4f} x native")
    for w in result["warnings"]:
        console.print(f"[yellow]warning[/] {w['code']}: {w['message']}", highlight=False)

"""The Tier-1 methodology paper's tables, recomputed through ``vmtwin.methodology`` (research/
perf-methodology.md §B; the paper is seed 001, its reprint in seed 000).

Each experiment feeds the paper's own counter values (``methodology/data/tier1_tables.json``,
stored exactly as printed, corrections E1/E2 named there) through the tool and compares what the
tool computes with what the paper prints or what the extraction derives. The ``simulated``
column therefore holds the *tool's* value from the paper's counters; simulated counters from the
execution-speed model are not available yet (issue 12, item 3).

- ``published`` rows: the number is printed in the paper (a table cell or the text's claim).
- ``derived`` rows: the extraction's recomputation, the derivation in ``note``.

Tolerances (research C.4): arithmetic identities 1% relative or half a unit of the last printed
digit; the text's approximate claims ("~20%", "50-50", "12%") ±1-3 percentage points; claims the
extraction marks NOT-DERIVABLE or INCONSISTENT are shown and not judged.
"""

from __future__ import annotations

from vmtwin.methodology import paper
from vmtwin.methodology.method import Analysis, Profile, latency_report
from vmtwin.reproduce.base import Experiment, Row

#: Relative tolerance of an arithmetic identity on rounded printed inputs (research C.4).
IDENTITY_REL_TOLERANCE = 0.01


class _Rows:
    """Collects one experiment's rows, numbering them for the report's plot."""

    def __init__(self, experiment: str) -> None:
        self.experiment, self.rows = experiment, []

    def add(self, series: str, metric: str, target: float, computed: float, tolerance: float, *,
            source: str, note: str = "", judged: bool = True) -> None:
        self.rows.append(Row(self.experiment, metric, target, computed, tolerance, judged=judged,
                             x=len(self.rows) + 1, series=series, note=note, source=source))

    def cell(self, series: str, metric: str, printed: str, computed: float, note: str, judged: bool = True) -> None:
        """A printed table cell, judged with the identity tolerance."""
        target = paper.cell_value(printed)
        self.add(series, metric, target, computed, IDENTITY_REL_TOLERANCE * abs(target), source="published",
                 note=f"printed {printed!r}; {note}", judged=judged)


def _pct(x: float) -> float:
    return 100 * x


def _cpi_cells(rows: _Rows, table: str, a: Analysis, columns: tuple[str, ...]) -> None:
    hl = a.high_level()
    for col in columns:
        for mode, printed_mode in (("kernel", "Kernel"), ("user", "User")):
            rows.cell(table, f"{table} Thread CPI {printed_mode} {col}",
                      paper.printed(table.lower().replace(" ", ""), "Thread CPI", printed_mode, col),
                      hl[col][mode]["cpi"], "computed: cycles / path length (A.6.3-1)")


def _util_identity(rows: _Rows, table: str, a: Analysis, host: str, guest: str) -> None:
    """Util[c,m] ~ U_E x C[c,m] / C[E] (A.6.3-8): a virtual run's columns share one throughput and clock."""
    hl = a.high_level()
    u_e = hl[host]["all"]["thread_util"]
    c_e = hl[host]["all"]["cycles"]
    for col in (host, guest):
        for mode, pm in (("kernel", "Kernel"), ("user", "User")):
            printed = paper.printed(table.lower().replace(" ", ""), "Thread Util", pm, col)
            rows.add(table, f"{table} Thread Util {pm} {col} from cycles", 100 * paper.cell_value(printed),
                     100 * u_e * hl[col][mode]["cycles"] / c_e, 2.0, source="published",
                     note=f"printed {printed!r}; computed: ESX-EMON total util x cycles[{col},{pm}] / ESX-EMON "
                          "cycles (A.6.3-8, tolerance 2 points)")


def oltp() -> list[Row]:
    r = paper.runs("oltp")
    a = Analysis(r["Native"], r["ESX-EMON"], r["Guest EMON"], basis="native_total")
    rows = _Rows("tier1-oltp")
    _cpi_cells(rows, "Table 2", a, ("Native", "ESX-EMON", "Guest EMON"))
    hl = a.high_level()
    for col, target in (("Native", 2998), ("ESX-EMON", 3668), ("Guest EMON", 3370)):
        rows.add("Table 2", f"total cycles/tx {col} (K)", target, hl[col]["all"]["cycles"] / 1e3, 0.5,
                 source="derived", note="B.5: user + kernel unhalted core cycles")
    for col, target in (("Native", 2.098), ("ESX-EMON", 2.380), ("Guest EMON", 2.345)):
        rows.add("Table 2", f"overall CPI {col}", target, hl[col]["all"]["cpi"], 0.0005, source="derived",
                 note="B.5: total cycles / total instructions")
    d = a.decomposition()
    parts = {p["component"]: p["percent"] for p in d["parts"]}
    total = d["total"]["percent"]
    rows.add("text", "cycles/tran increase (%)", 20, total, 3.0, source="published",
             note='"cycles/tran has gone up by ~20%"; computed: ESX-EMON / native - 1 = 22.35% (A.9, ±3 points)')
    rows.add("text", "cycles/tran increase, exact (%)", 22.35, total, 0.005, source="derived",
             note="B.5: 3668K / 2998K - 1")
    rows.add("text", "guest-visible increase (%)", 12.41, d["guest_visible_increase"], 0.005, source="derived",
             note="B.5: Guest EMON / native - 1 = 3370K / 2998K - 1")
    for comp, claim, quote, exact in (("guest user", 10, '"10% of that was in user mode"', 9.87),
                                      ("guest kernel", 2.5, '"2.5% ... kernel mode ... in the guest"', 2.54),
                                      ("hypervisor (VMM + VMkernel)", 8, '"8% was in kernel mode processing in '
                                       'VMkernel and VMM"', 8.04)):
        rows.add("text", f"{comp} share of native cycles (%)", claim, parts[comp], 0.5, source="published",
                 note=f"{quote}; basis native total cycles (A.9), ±0.5 points")
        rows.add("text", f"{comp} share of native cycles, exact (%)", exact, parts[comp], 0.005, source="derived",
                 note="B.5: component growth / native total cycles (A.6.3-4)")
    comp_sum = parts["guest user"] + parts["guest kernel"] + parts["hypervisor (VMM + VMkernel)"]
    rows.add("text", "component sum (%)", 20.45, comp_sum, 0.01, source="derived",
             note="B.5: 9.87 + 2.54 + 8.04; differs from 22.35 by host user - guest user (C.5-7)")
    hyp = a.hypervisor()
    rows.add("Hypervisor", "hypervisor cycles/tx (K)", 241, hyp["cycles"] / 1e3, 0.5, source="derived",
             note="A.6.3-3: ESX-EMON kernel - Guest EMON kernel = 697K - 456K")
    rows.add("Hypervisor", "hypervisor instructions/tx (K)", 70, hyp["path_length"] / 1e3, 0.5, source="derived",
             note="A.6.3-3: 206K - 136K")
    rows.add("Hypervisor", "hypervisor CPI", 3.44, hyp["cpi"], 0.005, source="derived", note="A.6.3-3: 241K / 70K")
    cpi_n_k = hl["Native"]["kernel"]["cpi"]
    for name, cpi_v, cpi_n, judged, note in (
            ("user (Guest EMON)", hl["Guest EMON"]["user"]["cpi"], hl["Native"]["user"]["cpi"], True, ""),
            ("hypervisor", hyp["cpi"], cpi_n_k, True, " (against native kernel CPI)"),
            ("guest kernel", hl["Guest EMON"]["kernel"]["cpi"], cpi_n_k, False,
             "; not judged: the paper's own Table 2 gives +8.5%, so the claim holds only roughly for the guest "
             "kernel (B.5, APPROX)")):
        rows.add("text", f"CPI increase {name} (%)", 12, _pct(cpi_v / cpi_n - 1), 3.0, source="published",
                 judged=judged, note='"The CPI increases by about 12% for user and both hypervisor and guest kernel '
                 f'modes"{note}; ±3 points')
    rows.add("text", "kernel share of the increase (%)", 50, _pct(d["kernel_share_of_increase"]), 3.0,
             source="published", note='"a 50-50 split for the OLTP workload" (§5.2); computed (697K-380K)/(3668K-2998K)'
                                      " = 47.3% (A.6.3-6), ±3 points")
    rows.add("text", "hypervisor share of the increase (%)", 37.5, _pct(hyp["cycles"] / d["total"]["cycles"]), 12.5,
             source="published", note='G3: "1/4 to 1/2 of the performance difference is due to the time spent in '
                                      'the hypervisor kernel": the range 25-50% as 37.5 ± 12.5')
    _util_identity(rows, "Table 2", a, "ESX-EMON", "Guest EMON")
    rows.add("text", "guest user share of guest busy time (%)", 88, _pct(hl["Guest EMON"]["user"]["thread_util"] /
                                                                           hl["Guest EMON"]["all"]["thread_util"]),
             2.0, source="published", note='§5.1 "The guest spends 86-90% in user mode" (range as 88 ± 2); computed '
                                           "from Table 2 Guest EMON Thread Util 78/90 (B.5)")
    rec = a.reconciliation()
    rows.add("text", "throughput ratio from counters vs the reduced-I/O run's 15% overhead", 0.85,
             rec["throughput_ratio"], 0.03, source="published", judged=False,
             note='§5.1 "We still saw a 15% overhead"; not judged: the paper does not say Table 2 is that '
                  "configuration (GAP-7); the identity T_v/T_n = (C_E/C_N)(U_N/U_E) gives 0.785 (B.5)")
    tr = {(t["column"], t["mode"]): t for t in a.translation()}
    for col in ("ESX-EMON", "Guest EMON"):
        for mode, pm in (("kernel", "Kernel"), ("user", "User")):
            printed = paper.printed("table3", "DTLB Miss latency cycles", pm, col)
            rows.add("Table 3", f"DTLB miss latency {pm} {col}", paper.cell_value(printed), tr[col, mode]["dtlb_latency"],
                     1.0, source="published", note=f"printed {printed!r}; computed: PMH busy cycles / walks completed "
                                                   "(A.6.3-9), ±1 cycle")
    for mode, pm in (("kernel", "Kernel"), ("user", "User")):
        printed = paper.printed("table3", "DTLB Miss latency cycles", pm, "Native")
        rows.add("Table 3", f"DTLB miss latency {pm} Native", paper.cell_value(printed), tr["Native", mode]["dtlb_latency"],
                 1.0, source="published", judged=False,
                 note=f"printed {printed!r}; not judged: the native column does not follow walk cycles / walks "
                      "(INCONSISTENT, GAP-3)")
        for col in ("Native", "ESX-EMON", "Guest EMON"):
            printed = paper.printed("table3", "ITLB Miss latency cycles", pm, col)
            rows.add("Table 3", f"ITLB miss latency {pm} {col}", paper.cell_value(printed), tr[col, mode]["itlb_latency"],
                     1.0, source="published", judged=False,
                     note=f"printed {printed!r}; not judged: the paper calls the virtual ITLB counts suspect and the "
                          "native column does not follow walk cycles / walks (GAP-3)")
    for (col, mode), share, per_walk, non_ept in (
            (("ESX-EMON", "user"), 57.5, 56.0, 41.3), (("Guest EMON", "user"), 56.1, 58.5, 45.8),
            (("ESX-EMON", "kernel"), 29.0, 18.9, 46.3), (("Guest EMON", "kernel"), 38.5, 26.6, 42.6)):
        t = tr[col, mode]
        rows.add("Table 3", f"EPT share of PMH cycles {mode} {col} (%)", share, _pct(t["ept_share_of_walk_cycles"]),
                 0.05, source="derived", note="A.6.3-10: EPT cycles / DTLB PMH busy cycles")
        rows.add("Table 3", f"EPT cycles per walk {mode} {col}", per_walk, t["ept_cycles_per_walk"], 0.05,
                 source="derived", note="A.6.3-10: EPT cycles / DTLB walks completed")
        rows.add("Table 3", f"non-EPT cycles per walk {mode} {col}", non_ept, t["non_ept_cycles_per_walk"], 0.05,
                 source="derived", note="A.6.3-10: (PMH - EPT) cycles / walks; close to native 50.5 / 32.8")
    for col, user_k, kern_k, pct_total in (("ESX-EMON", 172, 84, 8.54), ("Guest EMON", 174, 51, 7.51)):
        rows.add("Table 3", f"PMH cycle growth user {col} (K)", user_k, tr[col, "user"]["walk_cycle_increase"] / 1e3,
                 0.5, source="derived", note="B.6: virtual - native DTLB PMH busy cycles")
        rows.add("Table 3", f"PMH cycle growth kernel {col} (K)", kern_k, tr[col, "kernel"]["walk_cycle_increase"] / 1e3,
                 0.5, source="derived", note="B.6: virtual - native DTLB PMH busy cycles")
        rows.add("Table 3", f"PMH cycle growth {col} (% of native)", pct_total,
                 tr[col, "user"]["walk_cost_percent"] + tr[col, "kernel"]["walk_cost_percent"], 0.005,
                 source="derived", note="B.6: (user + kernel growth) / 2998K")
    for col, mode, target in (("Guest EMON", "user", 6.60), ("ESX-EMON", "user", 6.74),
                              ("Guest EMON", "kernel", 1.17), ("ESX-EMON", "kernel", 1.20)):
        rows.add("Table 3", f"EPT cycles {mode} {col} (% of native)", target, tr[col, mode]["ept_cost_percent"], 0.005,
                 source="derived", note="A.9: EPT cycles / native total cycles")
    rows.add("text", "EPT share of native cycles, user (%)", 6.5, tr["Guest EMON", "user"]["ept_cost_percent"], 1.0,
             source="published", note='"EPT overhead accounts for 6.5% of the 11.5% growth in user-mode cycles"; '
                                      "computed with Guest EMON EPT cycles over native total (A.9, APPROX ±1)")
    rows.add("text", "user-mode cycle growth (%)", 11.5, _pct(hl["Guest EMON"]["user"]["cycles"] /
                                                               hl["Native"]["user"]["cycles"] - 1), 1.0,
             source="published", note='"... the 11.5% growth in user-mode cycles"; computed Guest EMON vs native user '
                                      "cycles = 11.3% (A.9: no base fits exactly; APPROX ±1)")
    rows.add("text", "EPT share of native cycles, kernel (%)", 1.1, tr["Guest EMON", "kernel"]["ept_cost_percent"], 0.5,
             source="published", note='"EPT over-head accounts for 1.1% of the 2.5% growth in the cycles in kernel '
                                      'mode in the guest" (A.9, APPROX ±0.5)')
    ept_total = tr["Guest EMON", "user"]["ept_cost_percent"] + tr["Guest EMON", "kernel"]["ept_cost_percent"]
    rows.add("text", "EPT share of the virtualization overhead (%)", 50, 100 * ept_total / total, 5.0,
             source="published", judged=False,
             note='"EPT overhead accounts for nearly half the virtualization overhead"; not judged: 7.8% of native '
                  "is 35% of the 22.35% counter increase, 52% of the text's 15% (B.6); the basis is not stated")
    # the VMkernel/VMM split needs software profiles; B.4's shares come from the reduced-I/O configuration
    split = Analysis(r["Native"], r["ESX-EMON"], r["Guest EMON"], basis="native_total",
                     profile=Profile(vmkernel_share=0.045, vmm_share=0.035)).decomposition()
    sparts = {p["component"]: p["percent"] for p in split["parts"]}
    for comp, claim in (("VMkernel", 6), ("VMM", 2)):
        rows.add("text", f"{comp} share of native cycles (%)", claim, sparts[comp], 1.0, source="published",
                 judged=False, note=f'"about 6% ... due to VMkernel, and another ~2% is in the VMM"; not judged '
                 "(NOT-DERIVABLE: vmkstats/kstats data not published). Computed by splitting the counters' 8.04% with "
                 "B.4's profile shares (VMkernel 4.5% of samples, VMM 3.5% outside direct execution), which come "
                 "from the reduced-I/O runs")
    for col, user, kern in (("Native", 2.72, 9.90), ("ESX-EMON", 2.70, 9.23), ("Guest EMON", 2.60, 9.66)):
        rows.add("Table 3", f"DTLB walks per 1000 instructions user {col}", user, tr[col, "user"]["dtlb_walks_per_kinstr"],
                 0.005, source="derived", note="B.0 G7: walks completed / path length x 1000")
        rows.add("Table 3", f"DTLB walks per 1000 instructions kernel {col}", kern,
                 tr[col, "kernel"]["dtlb_walks_per_kinstr"], 0.005, source="derived",
                 note="B.0 G7: walks completed / path length x 1000")
    _ifetch_sums(rows, "Table 3", a, {("Native", "kernel"): 100, ("Native", "user"): 101})
    return rows.rows


def _ifetch_sums(rows: _Rows, table: str, a: Analysis, targets: dict) -> None:
    caches = {(c["column"], c["mode"]): c for c in a.caches()}
    for (col, mode), target in targets.items():
        c = caches[col, mode]
        rows.add(table, f"instruction-fetch hits L1+L2+LLC {mode} {col} (%)", target,
                 _pct(c["l1"] + c["l2"] + c["llc"]), 1.5, source="derived",
                 note="A.6.3-11: the three printed shares add to about 100% (the rest is memory or rounding)")


def hadoop() -> list[Row]:
    r = paper.runs("hadoop")
    a = Analysis(r["Native"], r["ESX-EMON"], r["Guest EMON"], basis="native_total")
    same = Analysis(r["Native"], r["ESX-EMON"], r["Guest EMON"], basis="native_same_mode")
    rows = _Rows("tier1-hadoop")
    _cpi_cells(rows, "Table 4", a, ("Native", "ESX-EMON", "Guest EMON"))
    hl = a.high_level()
    for col, target in (("Native", 30567), ("ESX-EMON", 35951), ("Guest EMON", 33745)):
        rows.add("Table 4", f"total cycles/row {col}", target, hl[col]["all"]["cycles"], 0.5, source="derived",
                 note="A.6.3-2: user + kernel")
    d = a.decomposition()
    parts = {p["component"]: p["percent"] for p in d["parts"]}
    rec = a.reconciliation()
    rows.add("text", "H2 cycles per row increase (%)", 17.6, d["total"]["percent"], 0.05, source="published",
             note='"a 17.6% increase in cycles per transaction"; 35951/30567 - 1')
    rows.add("text", "H1 elapsed time increase (%)", 16.2, _pct(rec["elapsed_ratio"] - 1), 0.05, source="published",
             note='"16.2% greater elapsed time"; computed (C_E/C_N)(U_N/U_E) = 1.17614 x 98.2/99.4 (A.6.3-7)')
    rows.add("text", "H1 throughput loss (%)", 14, _pct(1 - rec["throughput_ratio"]), 0.5, source="published",
             note='"(equivalent to 14% lower throughput)"; 1 - 1/1.1619')
    rows.add("text", "H3 kernel share of the increase (%)", 60, _pct(d["kernel_share_of_increase"]), 0.5,
             source="published", note='"60% of the increase in cycles is in kernel mode"; 3232/5384')
    cpi = {(c, m): hl[c][m]["cpi"] for c in hl for m in hl[c]}
    rows.add("text", "H5 user CPI increase (%)", 10, _pct(cpi["ESX-EMON", "user"] / cpi["Native", "user"] - 1), 1.0,
             source="published", note='"the increase is 10% for user mode"; from counts 9.7% (printed CPIs give 9.6%)')
    rows.add("text", "H5 kernel CPI increase (%)", 26, _pct(cpi["ESX-EMON", "kernel"] / cpi["Native", "kernel"] - 1),
             1.0, source="published", note='"and 26% for kernel mode"; ESX-EMON vs native kernel CPI')
    hyp = a.hypervisor()
    rows.add("text", "H6 hypervisor CPI increase (%)", 14, _pct(hyp["cpi"] / cpi["Native", "kernel"] - 1), 1.0,
             source="published", note='"the hypervisor has a CPI 14% larger than native"; 2329/712 = 3.271 vs native '
                                      "kernel 2.880 (A.6.3-3)")
    rows.add("text", "H6 guest kernel CPI increase (%)", 32, _pct(cpi["Guest EMON", "kernel"] / cpi["Native", "kernel"] - 1),
             1.0, source="published", note='"but the increase is 32% for the guest kernel"')
    rows.add("Hypervisor", "hypervisor cycles/row", 2329, hyp["cycles"], 0.5, source="derived", note="7845 - 5516")
    rows.add("Hypervisor", "hypervisor instructions/row", 712, hyp["path_length"], 0.5, source="derived",
             note="2164 - 1452")
    rows.add("text", "H7 guest kernel share of native cycles (%)", 3, parts["guest kernel"], 0.1, source="published",
             note='"(3% and 7.6% respectively)"; 903/30567 = 2.95%')
    rows.add("text", "H7 hypervisor share of native cycles (%)", 7.6, parts["hypervisor (VMM + VMkernel)"], 0.05,
             source="published", note='"(3% and 7.6% respectively)"; 2329/30567')
    rows.add("text", "G3 hypervisor share of the increase (%)", 37.5, 100 * hyp["cycles"] / d["total"]["cycles"], 12.5,
             source="published", note='G3 "1/4 to 1/2 of the performance difference ... hypervisor kernel" (range as '
                                      "37.5 ± 12.5); 2329/5384")
    caches = {(c["column"], c["mode"]): c for c in a.caches()}
    rows.add("Table 5", "H8 native kernel L1I miss rate (%)", 5, _pct(caches["Native", "kernel"]["l1_miss_rate"]), 0.05,
             source="published", note='"Kernel instructions miss the L1 5% of the time for native" (1 - 95%)')
    rows.add("Table 5", "H8 virtual/native kernel L1I miss rate", 2, caches["ESX-EMON", "kernel"]["l1_miss_rate"] /
             caches["Native", "kernel"]["l1_miss_rate"], 0.05, source="published",
             note='"and twice that for virtual" (1 - 90% over 1 - 95%)')
    sp = {(p["component"]): p["percent"] for p in same.decomposition()["parts"]}
    st = {(t["column"], t["mode"]): t for t in same.translation()}
    rows.add("Table 5", "H9 EPT share of native user cycles (%)", 5.3, st["ESX-EMON", "user"]["ept_cost_percent"], 0.05,
             source="published", note='"EPT processing accounts for ... 5.3% out of 8.3%"; 1377/25954 (same-mode basis)')
    rows.add("Table 5", "H9 user cycle growth (% of native user)", 8.3,
             _pct(hl["ESX-EMON"]["user"]["cycles"] / hl["Native"]["user"]["cycles"] - 1), 0.05, source="published",
             note='"5.3% out of 8.3%"; (28106 - 25954)/25954')
    rows.add("Table 5", "H10 EPT share of native kernel cycles (%)", 9, st["ESX-EMON", "kernel"]["ept_cost_percent"],
             0.15, source="published", note='"a bigger relative increase in kernel mode time (9%)"; 420/4613 = 9.10%')
    rows.add("Table 5", "H10 kernel cycle growth (%)", 70,
             _pct(hl["ESX-EMON"]["kernel"]["cycles"] / hl["Native"]["kernel"]["cycles"] - 1), 0.1, source="published",
             note='"the 70% overall increase in kernel time"; 3232/4613')
    t = {(x["column"], x["mode"]): x for x in a.translation()}
    walk_pct = t["ESX-EMON", "user"]["walk_cost_percent"] + t["ESX-EMON", "kernel"]["walk_cost_percent"]
    rows.add("Table 5", "H11 address-translation cost (% of native)", 8.07, walk_pct, 0.005, source="derived",
             note="A.8: ((1154-312) + (3039-1413)) / 30567")
    rows.add("Table 5", "H11 address-translation share of the increase (%)", 45.8, 100 * walk_pct / d["total"]["percent"],
             0.05, source="derived", note='A.8: 8.07 / 17.6 ("almost half", APPROX)')
    for mode, target in (("user", 45.3), ("kernel", 36.4)):
        rows.add("Table 5", f"EPT share of PMH cycles {mode} (%)", target, _pct(t["ESX-EMON", mode]["ept_share_of_walk_cycles"]),
                 0.05, source="derived", note="A.6.3-10: EPT cycles / DTLB PMH busy cycles")
    ept_total = t["ESX-EMON", "user"]["ept_cost_percent"] + t["ESX-EMON", "kernel"]["ept_cost_percent"]
    rows.add("Table 5", "total EPT cycles (% of native)", 5.88, ept_total, 0.005, source="derived",
             note="B.7: 1797/30567")
    rows.add("text", "H12 VMkernel + VMM share (%)", 5.8, parts["hypervisor (VMM + VMkernel)"], 1.0,
             source="published", judged=False,
             note='"5% out of the overall 16.5% overhead is due to VMkernel ... 0.8% is in the VMM" (5 + 0.8); not '
                  "judged (NOT-DERIVABLE/INCONSISTENT, H12): the split comes from unpublished profiles; computed is "
                  "the counters' hypervisor share, 2329/30567")
    rows.add("text", "H12 overall overhead (%)", 16.5, d["total"]["percent"], 0.5, source="published", judged=False,
             note='"the overall 16.5% overhead"; not judged (H12): matches neither the 16.2% elapsed-time nor the '
                  "17.6% cycle increase; computed is the cycle increase")
    rows.add("text", "guest user share of guest busy time (%)", 82, _pct(hl["Guest EMON"]["user"]["thread_util"] /
                                                                           hl["Guest EMON"]["all"]["thread_util"]),
             2.0, source="published", note='"82% of guest time in user mode"; Table 4 Guest EMON 77.8/93.0 (APPROX ±2)')
    _util_identity(rows, "Table 4", a, "ESX-EMON", "Guest EMON")
    for col, target in (("Guest EMON", 7.44), ("ESX-EMON", 7.04)):
        rows.add("Table 4", f"user growth {col} (% of native)", target,
                 _pct((hl[col]["user"]["cycles"] - hl["Native"]["user"]["cycles"]) / hl["Native"]["all"]["cycles"]),
                 0.005, source="derived", note="B.7: (virtual user - native user) / native total")
    rows.add("Table 4", "guest kernel path length change (%)", -9.4,
             _pct(hl["Guest EMON"]["kernel"]["path_length"] / hl["Native"]["kernel"]["path_length"] - 1), 0.05,
             source="derived", note="B.7: 1452 / 1602 - 1")
    oltp_hl = Analysis(*paper.runs("oltp").values(), basis="native_total").high_level()
    for name, h, col, target in (("OLTP", oltp_hl, "Native", 8.6), ("OLTP", oltp_hl, "ESX-EMON", 13.4),
                                 ("Hadoop", hl, "Native", 7.7), ("Hadoop", hl, "ESX-EMON", 10.3)):
        rows.add("text", f"H4 kernel instruction fraction {name} {col} (%)", target,
                 _pct(h[col]["kernel"]["path_length"] / h[col]["all"]["path_length"]), 0.05, source="derived",
                 note='H4: kernel path length / total path length ("significantly higher" for OLTP: weak)')
    _ifetch_sums(rows, "Table 5", a, {("Native", "kernel"): 99.6, ("ESX-EMON", "kernel"): 98.4,
                                      ("Native", "user"): 100.3, ("ESX-EMON", "user"): 99.8})
    return rows.rows


def latency() -> list[Row]:
    rows = _Rows("tier1-latency")
    t6 = paper.table("table6")
    names = t6["columns"]
    native = [paper.value("table6", "Native", "", c) for c in names]
    vm = [paper.value("table6", "VM", "", c) for c in names]
    r = paper.runs("rr-loopback")
    a = Analysis(r["Native"], guest=r["vPMC-Hybrid (VM)"], basis="native_total")
    hyb = a.as_dict()["hybrid"]
    lat = latency_report(names, native, vm, inflation=hyb["cycle_inflation"])
    for i, name in enumerate(names):
        printed = paper.printed("table6", "Overhead", "", name)
        rows.add("Table 6", f"{name} overhead (us)", paper.cell_value(printed), lat["overhead_us"][i], 0.5,
                 source="published", note=f"printed {printed!r}; computed VM - Native")
    for name, rel in zip(names, (50.0, 36.8, 20.5, 17.2)):
        rows.add("Table 6", f"{name} relative overhead (%)", rel, _pct(lat["relative_overhead"][names.index(name)]),
                 0.05, source="derived", note="B.8: overhead / native")
    rows.add("Table 6", "fixed part of the overhead, least squares (us)", 10.46, lat["fit_fixed_us"], 0.005,
             source="derived", note="B.8: least-squares overhead = fixed + slope x native")
    rows.add("Table 6", "variable part, least-squares slope", 0.0914, lat["fit_slope"], 0.00005, source="derived",
             note="B.8: least-squares overhead = fixed + slope x native")
    for name, fixed in zip(names, (10.9, 11.0, 11.0, 12.3)):
        rows.add("Table 6", f"{name} fixed part given Table 7's inflation (us)", fixed,
                 lat["fixed_us_given_inflation"][names.index(name)], 0.05, source="derived",
                 note="B.8: overhead - 0.08 x native, the 8% being Table 7's cycle inflation (7.98%)")
    for col, key in (("Native", "cpi_native"), ("vPMC-Hybrid (VM)", "cpi_virtual")):
        rows.cell("Table 7", f"Table 7 CPI {col}", paper.printed("table7", "CPI", "", col), hyb[key],
                  "computed: cycles / instructions (printed values look truncated, A.6.3-1)")
    rows.add("Table 7", "cycle increase (%)", 8, _pct(hyb["cycle_inflation"]), 0.5, source="published",
             note='"This takes 4% out of the 8% cycles increase"; 406B/376B - 1')
    rows.add("Table 7", "EPT walk cycles (% of native)", 4, hyb["ept_percent_of_native"], 0.5, source="published",
             note='"EPT walk cycles ... takes 4% out of the 8%"; 16B/376B')
    rows.add("Table 7", "instructions VM/native", 0.992, hyb["instructions_ratio"], 0.0005, source="derived",
             note='B.8: 259B/261B ("very similar")')
    rows.add("Table 7", "L1D miss increase (%)", 35.6, _pct(hyb["l1d_miss_increase"]), 0.05, source="derived",
             note="B.8: 6.1B/4.5B - 1")
    for col, key, target in (("Native", "ipc_native", 0.699), ("VM", "ipc_virtual", 0.641)):
        rows.add("Table 7", f"IPC {col}", target, hyb[key], IDENTITY_REL_TOLERANCE * target, source="derived",
                 note="B.8: 1 / printed CPI; computed instructions / cycles from the counts (1% identity tolerance)")
    rows.add("Table 7", "caches' share of native cycles (%)", 3, _pct(hyb["cycle_inflation"]) - hyb["ept_percent_of_native"]
             - hyb["non_ept_walk_increase_percent"], 1.0, source="published", judged=False,
             note='"3% out of 8% comes from L1/L2/L3 cache misses"; not judged (NOT-DERIVABLE: no L2/L3 counts or '
                  "per-miss cost); computed is what is left of 8% after EPT and the non-EPT walk growth")
    rows.add("Table 7", "non-EPT TLB walk growth (% of native)", 1, hyb["non_ept_walk_increase_percent"], 0.5,
             source="published", judged=False,
             note='"TLB cache misses (excluding EPT walk cycles) takes the remaining 1%"; not judged (INCONSISTENT): '
                  "the table gives (255B - 227B - 16B)/376B = 3.2%")
    rows.add("Table 7", "native TLB walk cycles (% of cycles)", 60.4,
             _pct(paper.value("table7", "TLB-misses-walk-cycles", "", "Native") /
                  paper.value("table7", "Unhalted Cycles", "", "Native")), 0.05, source="derived",
             note="B.8 anomaly: 227B/376B; implausible if taken literally (event semantics unknown)")
    return rows.rows


def table1() -> list[Row]:
    rows = _Rows("tier1-throughput")
    thr = {c: paper.value("table1", "Throughput (Trans/sec)", "", c) for c in ("Native", "vSphere 4.1", "vSphere 5.0")}
    iops = {c: paper.value("table1", "IOPS", "", c) for c in thr}
    for col in ("vSphere 4.1", "vSphere 5.0"):
        printed = paper.printed("table1", "Ratio to native", "", col)
        rows.add("Table 1", f"ratio to native {col} (%)", 100 * paper.cell_value(printed), 100 * thr[col] / thr["Native"],
                 1.0, source="published", note=f"printed {printed!r}; computed from the rounded throughputs 8.4K/10.6K "
                                                "(±1 point: the printed ratios come from unrounded throughputs)")
    for col, target in (("Native", 6.47), ("vSphere 4.1", 6.43), ("vSphere 5.0", 6.40)):
        rows.add("Table 1", f"IOPS per transaction {col}", target, iops[col] / thr[col], 0.005, source="derived",
                 note="B.2: IOPS / throughput")
    rows.add("Table 1", "G1 ratio to native in excess of 80% (%)", 80, 100 * thr["vSphere 5.0"] / thr["Native"], 1.0,
             source="published", note='G1 "The ratio to native is good, usually in excess of 80%"; OLTP sits at the '
                                      "edge (APPROX, ±1)")
    return rows.rows


TIER1_EXPERIMENTS = [
    Experiment("tier1-throughput", "Tier-1 Table 1: OLTP throughput ratio to native", "seed 001 §5.1, Table 1",
               table1, x_label="row", y_label="value"),
    Experiment("tier1-oltp", "Tier-1 Tables 2-3: OLTP counters per transaction, through vmtwin.methodology",
               "seed 001 §5.1, Tables 2-3", oltp, x_label="row", y_label="value"),
    Experiment("tier1-hadoop", "Tier-1 Tables 4-5: Hadoop counters per row, through vmtwin.methodology",
               "seed 001 §5.2, Tables 4-5", hadoop, x_label="row", y_label="value"),
    Experiment("tier1-latency", "Tier-1 Tables 6-7: request-response latency and hybrid vPMC counters",
               "seed 001 §5.3, Tables 6-7", latency, x_label="row", y_label="value"),
]


def presets() -> list[Row]:
    """Which cells calibrate the presets (not judged: they hold by construction) and which are predicted."""
    from vmtwin.methodology.nested_paging import LEVELS_2M, LEVELS_4K, OLTP_KERNEL, OLTP_USER, references
    from vmtwin.methodology.presets import LatencyPreset, calibrate_mode

    rows = _Rows("tier1-presets")
    for (n, m), target, pages in (((LEVELS_4K, LEVELS_4K), 24, "4K/4K"), ((LEVELS_2M, LEVELS_4K), 19, "2M guest/4K host"),
                                  ((LEVELS_4K, LEVELS_2M), 19, "4K guest/2M host"), ((LEVELS_2M, LEVELS_2M), 15, "2M/2M")):
        rows.add("walk model", f"2D walk references {pages}", target, references(n, m), 0, source="derived",
                 note="A.8: n x m + n + m (External, the result Figure 4 depicts); computed level by level")
    oltp = paper.runs("oltp")
    walk = {"user": OLTP_USER, "kernel": OLTP_KERNEL}
    calib_note = ("calibration point: the walk model's per-reference costs are fitted to it, so it holds by "
                  "construction (not judged)")
    for mode in ("user", "kernel"):
        rows.add("calibration", f"OLTP native DTLB cycles per walk {mode}", oltp["Native"].per_unit("dtlb_walk_cycles", mode)
                 / oltp["Native"].per_unit("dtlb_walks", mode), walk[mode].native_walk_cycles(), 0.05, source="derived",
                 judged=False, note=f"Table 3 native PMH cycles / walks; {calib_note}")
        g = oltp["Guest EMON"]
        rows.add("calibration", f"OLTP Guest EMON EPT cycles per walk {mode}",
                 g.per_unit("ept_walk_cycles", mode) / g.per_unit("dtlb_walks", mode), walk[mode].ept_walk_cycles(), 0.05,
                 source="derived", judged=False, note=f"Table 3 EPT cycles / walks; {calib_note}")
    rel = 0.03  # research C.4: simulated cells within ±3%
    for mode in ("user", "kernel"):
        g = oltp["Guest EMON"]
        target = (g.per_unit("dtlb_walk_cycles", mode) - g.per_unit("ept_walk_cycles", mode)) / g.per_unit("dtlb_walks", mode)
        rows.add("OLTP prediction", f"Guest EMON non-EPT cycles per walk {mode}", target, walk[mode].native_walk_cycles(),
                 rel * target, source="derived",
                 note="Table 3 (PMH - EPT) / walks; the model predicts the guest levels cost what they cost natively "
                      "(±3%)")
        preset = calibrate_mode(oltp["Native"], mode, walk[mode])
        pred = preset.cycles(g.per_unit("instructions", mode), g.per_unit("dtlb_walks", mode), nested=True)
        target = g.per_unit("dtlb_walk_cycles", mode)
        rows.add("OLTP prediction", f"Guest EMON PMH cycles/tx {mode} (K)", target / 1e3, pred["walk_cycles"] / 1e3,
                 rel * target / 1e3, source="published",
                 note="printed in Table 3; predicted: Guest EMON walks x nested cycles per walk (±3%)")
        target = g.per_unit("cycles", mode)
        rows.add("OLTP prediction", f"Guest EMON cycles/tx {mode} (K)", target / 1e3, pred["cycles"] / 1e3,
                 rel * target / 1e3, source="published",
                 note="printed in Table 2; predicted: Guest EMON path length x native CPI_base (native cycles minus walk "
                      "cycles, per instruction) + predicted walk cycles; no cache or I/O effects in the preset (±3%)")
    hadoop = paper.runs("hadoop")
    for mode in ("user", "kernel"):
        n, e = hadoop["Native"], hadoop["ESX-EMON"]
        walks = n.per_unit("dtlb_walk_cycles", mode) / walk[mode].native_walk_cycles()  # Table 5 has no walk counts
        for event, fn, label in (("dtlb_walk_cycles", walk[mode].nested_walk_cycles, "PMH"),
                                 ("ept_walk_cycles", walk[mode].ept_walk_cycles, "EPT")):
            target = e.per_unit(event, mode)
            rows.add("Hadoop prediction", f"ESX-EMON {label} cycles/row {mode}", target, walks * fn(), rel * target,
                     source="published",
                     note="printed in Table 5; predicted with OLTP's walk model: native PMH cycles / OLTP native cycles "
                          "per walk gives the walks, assumed unchanged under virtualization (Table 5 has no walk counts) "
                          "(±3%)")
    # latency: fixed part calibrated on Ping, inflation from Table 7's hybrid counters; the rest predicted
    inflation = (paper.value("table7", "Unhalted Cycles", "", "vPMC-Hybrid (VM)") /
                 paper.value("table7", "Unhalted Cycles", "", "Native") - 1)
    names = paper.table("table6")["columns"]
    lat = LatencyPreset.calibrate(paper.value("table6", "Native", "", "Ping"), paper.value("table6", "VM", "", "Ping"),
                                  inflation)
    for name in names:
        native, vm = paper.value("table6", "Native", "", name), paper.value("table6", "VM", "", name)
        judged = name != "Ping"
        rows.add("RR latency", f"{name} VM response time (us)", vm, lat.virtual_us(native), 1.5, source="published",
                 judged=judged, note=("printed in Table 6; " + (
                     f"predicted: native x 1.0798 (Table 7 cycle inflation) + {lat.fixed_us:.2f} us fixed (±1.5 us, "
                     "research C.4)" if judged else calib_note + ": the fixed part is fitted to Ping")))
    return rows.rows


TIER1_EXPERIMENTS.append(
    Experiment("tier1-presets", "Tier-1 presets: nested-paging walk model and RR latency, calibrated vs predicted cells",
               "seed 001 Tables 2-7; research A.8, C.3", presets, x_label="row", y_label="value"))

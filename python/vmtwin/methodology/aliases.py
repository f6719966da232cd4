"""Event alias table: vendor and tool event names -> canonical event names of :mod:`.schema`.

The paper names its events by what they mean (Table 2: "Unhalted core cycles"); the tools name
them by the vendor's event list. The table holds the Westmere names the paper's hardware used
(research A.6.1, Intel's event list: External), today's Intel names for the page-walk duration
events (``*.WALK_DURATION`` on Haswell/Broadwell, ``*.WALK_PENDING`` and ``EPT.WALK_PENDING`` on
Skylake and later: External), Linux perf's generic names, and the paper's own row titles, so
the paper's tables go through the same lookup as a perf file.

Mode suffixes are perf's modifiers: ``:u`` user, ``:k`` kernel; anything else (``:uk``, no
suffix) counts both modes. A PMU wrapper (``cpu/cycles/u``, ``cpu_core/instructions/``) is
unwrapped first. Lookup is case-insensitive; an unknown name is kept as it is (shown, never used
by the analysis).
"""

from __future__ import annotations

import re

_ALIASES: dict[str, tuple[str, ...]] = {
    "cycles": ("cycles", "cpu-cycles", "cpu_clk_unhalted.thread", "cpu_clk_unhalted.thread_p",
               "cpu_clk_unhalted.core", "unhalted core cycles", "unhalted cycles"),
    "instructions": ("instructions", "inst_retired.any", "inst_retired.any_p", "path length", "# instructions"),
    "ref_cycles": ("ref-cycles", "cpu_clk_unhalted.ref", "cpu_clk_unhalted.ref_tsc", "cpu_clk_unhalted.ref_p"),
    "branches": ("branches", "branch-instructions", "br_inst_retired.all_branches", "br_inst_retired.any"),
    # Westmere: DTLB_MISSES.* (0x49); Haswell+: DTLB_LOAD_MISSES.* (0x08), loads only
    "dtlb_walks": ("dtlb_misses.walk_completed", "dtlb_load_misses.walk_completed",
                   "dtlb miss page walks completed"),
    "dtlb_walk_cycles": ("dtlb_misses.walk_cycles", "dtlb_load_misses.walk_duration",
                         "dtlb_load_misses.walk_pending", "dtlb_load_misses.walk_active",
                         "dtlb miss pmh busy cycles", "dtlb miss pmh busy cycles (total miss cycles)",
                         "tlb-misses-walk-cycles"),
    "itlb_walks": ("itlb_misses.walk_completed", "itlb miss page walks completed"),
    "itlb_walk_cycles": ("itlb_misses.walk_cycles", "itlb_misses.walk_duration", "itlb_misses.walk_pending",
                         "itlb_misses.walk_active", "itlb miss page walk cycles"),
    "ept_walk_cycles": ("ept.walk_cycles", "ept.walk_pending", "extended page table walk cycles", "ept cycles",
                        "ept-walk-cycles"),
    "l1i_hits": ("l1i.hits",),
    "l1i_misses": ("l1i.misses", "l1-icache-load-misses", "icache.misses", "icache_64b.iftag_miss"),
    "l2_ifetch_hits": ("l2_rqsts.ifetch_hit", "l2_rqsts.code_rd_hit"),
    "l2_ifetch_misses": ("l2_rqsts.ifetch_miss", "l2_rqsts.code_rd_miss"),
    "l1d_misses": ("l1d.repl", "l1-dcache-load-misses", "l1-dcache-misses-all", "l1d.replacement"),
    "llc_misses": ("llc-load-misses", "longest_lat_cache.miss", "mem_load_retired.l3_miss"),
    "task_clock_ms": ("task-clock", "cpu-clock"),
    "context_switches": ("context-switches", "cs"),
    "cpu_migrations": ("cpu-migrations", "migrations"),
    "page_faults": ("page-faults", "faults"),
    "thread_util": ("thread util",),
    "ifetch_l1_hit_share": ("percent of instructions that hit in l1 cache",),
    "ifetch_l2_hit_share": ("percent of instructions that hit in l2 cache",),
    "ifetch_llc_hit_share": ("percent of instructions that hit in llc",),
}

#: vendor or tool name (lower case) -> canonical name
ALIASES: dict[str, str] = {alias: canonical for canonical, names in _ALIASES.items() for alias in names}

_PMU = re.compile(r"^[a-z0-9_]+/(?P<body>[^/]+)/(?P<mods>[a-zA-Z]*)$")
_MODIFIER = re.compile(r"^(?P<name>.+?):(?P<mods>[ukhHGpPSDIW]+)$")


def mode_of(modifiers: str) -> str:
    """perf modifiers -> mode: only ``u`` is user, only ``k`` is kernel, else all."""
    mods = set(modifiers) & {"u", "k"}
    if mods == {"u"}:
        return "user"
    if mods == {"k"}:
        return "kernel"
    return "all"


def canonical_event(name: str) -> tuple[str, str]:
    """``(canonical name, mode)`` of a perf or vendor event name.

    >>> canonical_event("cycles:u")
    ('cycles', 'user')
    >>> canonical_event("cpu/DTLB_MISSES.WALK_CYCLES/k")
    ('dtlb_walk_cycles', 'kernel')
    >>> canonical_event("EPT.WALK_PENDING")
    ('ept_walk_cycles', 'all')
    >>> canonical_event("msr/tsc/")
    ('msr/tsc/', 'all')
    """
    text = name.strip()
    mods = ""
    m = _PMU.match(text)
    if m and "=" not in m.group("body"):
        text, mods = m.group("body"), m.group("mods")
    else:
        m = _MODIFIER.match(text)
        if m:
            text, mods = m.group("name"), m.group("mods")
    canonical = ALIASES.get(text.lower())
    if canonical is None:
        return name.strip(), mode_of(mods)
    return canonical, mode_of(mods)

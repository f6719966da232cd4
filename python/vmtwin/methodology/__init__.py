"""The Tier-1 counter methodology: the cost of virtualization from hardware counters.

Buell et al., "Methodology for Performance Analysis of VMware vSphere under Tier-1
Applications" (research/perf-methodology.md) explain the gap between a native and a virtual run
of the same work by comparing hardware counts per unit of work, per mode (user, kernel) and per
counter source (native OS, the hypervisor's host view, the guest's virtual PMCs). This package
reads counts from Linux ``perf stat -x`` output or the project's canonical CSV/JSON, and computes
the paper's tables for them; ``vmtwin overhead`` is its command, ``vmtwin reproduce tier1-*``
reproduces the paper's own derived figures from its printed tables.

>>> from vmtwin.methodology import Analysis, paper
>>> r = paper.runs("oltp")
>>> a = Analysis(r["Native"], r["ESX-EMON"], r["Guest EMON"], basis="native_total")
>>> [(p["component"], round(p["percent"], 2)) for p in a.decomposition()["parts"]]
[('guest user', 9.87), ('guest kernel', 2.54), ('hypervisor (VMM + VMkernel)', 8.04), ('host user - guest user', 1.9)]
"""

from __future__ import annotations

from vmtwin.methodology import paper
from vmtwin.methodology.aliases import canonical_event
from vmtwin.methodology.method import BASES, Analysis, Profile, attribution, latency_report
from vmtwin.methodology.schema import EVENTS, Counter, Run, RunMetadata

__all__ = ["Analysis", "BASES", "Counter", "EVENTS", "Profile", "Run", "RunMetadata", "attribution",
           "canonical_event", "latency_report", "paper"]

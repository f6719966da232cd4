"""Registry of the papers' experiments, reproduced: scenario, extraction, published values.

Each experiment builds its scenarios in code, runs them on the engine, extracts the metric the
paper reports and returns :class:`Row` objects: published value, simulated value, tolerance and
verdict. Published values that the research extraction marks as not derivable are shown with the
verdict ``NOT JUDGED``; the rest are judged ``PASS`` or ``FAIL``. Misses are reported, never
hidden.

The registry is :data:`EXPERIMENTS`; ``vmtwin reproduce --list`` prints it (the CLI test checks
the IDs).
"""

from __future__ import annotations

from vmtwin.exceptions import scenario_error
from vmtwin.reproduce.base import Experiment, Row
from vmtwin.reproduce.cpu import CPU_EXPERIMENTS
from vmtwin.reproduce.cpu_cosched import CPU_COSCHED_EXPERIMENTS
from vmtwin.reproduce.cpu_esx import CPU_ESX_EXPERIMENTS
from vmtwin.reproduce.cpu_skew import CPU_SKEW_EXPERIMENTS
from vmtwin.reproduce.cpu_wide_numa import CPU_WIDE_NUMA_EXPERIMENTS
from vmtwin.reproduce.mem import MEM_EXPERIMENTS
from vmtwin.reproduce.mem_micro import MEM_MICRO_EXPERIMENTS
from vmtwin.reproduce.mem_apps import MEM_APPS_EXPERIMENTS
from vmtwin.reproduce.report import run_all
from vmtwin.reproduce.storage import STORAGE_EXPERIMENTS
from vmtwin.reproduce.tier1 import TIER1_EXPERIMENTS
from vmtwin.reproduce.tier1_sim import TIER1_SIM_EXPERIMENTS
from vmtwin.reproduce.vatm import VATM_EXPERIMENTS

EXPERIMENTS: dict[str, Experiment] = {e.id: e for e in [*CPU_EXPERIMENTS, *CPU_COSCHED_EXPERIMENTS, *CPU_ESX_EXPERIMENTS, *CPU_SKEW_EXPERIMENTS, *CPU_WIDE_NUMA_EXPERIMENTS, *TIER1_EXPERIMENTS, *TIER1_SIM_EXPERIMENTS, *VATM_EXPERIMENTS, *STORAGE_EXPERIMENTS, *MEM_EXPERIMENTS, *MEM_MICRO_EXPERIMENTS, *MEM_APPS_EXPERIMENTS]}


def get(experiment_id: str) -> Experiment:
    """The experiment with this ID, or a ScenarioError listing the IDs."""
    try:
        return EXPERIMENTS[experiment_id]
    except KeyError:
        raise scenario_error("reproduce ID", experiment_id, "one of " + ", ".join(sorted(EXPERIMENTS))) from None


__all__ = ["EXPERIMENTS", "Experiment", "Row", "get", "run_all"]

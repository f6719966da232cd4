"""HTML report of a run: one self-contained page with sortable tables and plotly figures.

``render_report(results_dir)`` reads a results folder (see :mod:`vmtwin.results`) and writes
``report.html`` next to the tables. The page inlines plotly.js, so it works offline, and is
deterministic: the same results give the same bytes.

The heavy modules (pandas, plotly) load on first use, so that ``import vmtwin`` and the
``vmtwin`` command start quickly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import os
    from pathlib import Path

    from vmtwin.report.summary import vm_summary
    from vmtwin.results import Results

__all__ = ["render_report", "vm_summary"]


def render_report(
    results_dir: str | os.PathLike[str] | Results,
    out_path: str | os.PathLike[str] | None = None,
    *,
    compare: str | os.PathLike[str] | Results | None = None,
) -> Path:
    """Write the HTML report of a run; see :func:`vmtwin.report.html.render_report`.

    This stand-in loads the report's modules when first called (``vmtwin`` re-exports it).
    """
    from vmtwin.report.html import render_report as render

    return render(results_dir, out_path, compare=compare)


def __getattr__(name: str) -> Any:
    if name == "vm_summary":
        from vmtwin.report.summary import vm_summary

        return vm_summary
    raise AttributeError(f"module 'vmtwin.report' has no attribute {name!r}")

"""HTML report of a run: one self-contained page with a summary table and plotly figures.

``render_report(results_dir)`` reads a results folder (see :mod:`vmtwin.results`) and writes
``report.html`` next to the tables. The page inlines plotly.js, so it works offline, and is
deterministic: the same results give the same bytes.
"""

from __future__ import annotations

from vmtwin.report.html import render_report
from vmtwin.report.summary import vm_summary

__all__ = ["render_report", "vm_summary"]

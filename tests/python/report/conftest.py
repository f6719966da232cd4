"""Fixtures for the report tests: a results folder written from synthetic engine output."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SYNTHETIC = Path(__file__).parents[1] / "results" / "synthetic.py"


def _synthetic():
    spec = importlib.util.spec_from_file_location("_vmtwin_synthetic_loader", _SYNTHETIC)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load()


synthetic = _synthetic()


@pytest.fixture(name="synthetic")
def synthetic_fixture():
    """The synthetic engine-output module (``engine_raw``)."""
    return synthetic


@pytest.fixture
def results_dir(tmp_path):
    from vmtwin.results import columns_from_engine, write_results

    raw, names = synthetic.engine_raw(seed=3, samples=60)
    manifest = {
        "vmtwin_version": "0.1.0",
        "scenario": {"name": "three-vms", "host": {"name": "esx01"}},
        "scenario_name": "three-vms",
        "seed": 3,
        "params": {},
        "duration_s": 120.0,
        "sample_interval_s": 2.0,
        "wall_time_s": 0.5,
        "event_count": 1000,
    }
    return write_results(tmp_path / "run", columns_from_engine(raw, names, "esx01"), manifest)

"""Fixtures for the results tests: synthetic engine output and a written results folder."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


def _synthetic():
    spec = importlib.util.spec_from_file_location(
        "_vmtwin_synthetic_loader", Path(__file__).with_name("synthetic.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load()


synthetic = _synthetic()


def _make_manifest(**extra):
    """A manifest with the documented keys."""
    manifest = {
        "vmtwin_version": "0.1.0",
        "scenario": {"name": "synthetic", "host": {"name": "esx01"}},
        "scenario_name": "synthetic",
        "seed": 42,
        "params": {"cpu_sched": {"quantum_ns": 50_000_000}},
        "duration_s": 60.0,
        "sample_interval_s": 2.0,
        "wall_time_s": 0.123,
        "event_count": 12345,
    }
    manifest.update(extra)
    return manifest


@pytest.fixture
def make_manifest():
    """Factory: ``make_manifest(**overrides)`` returns a manifest with the documented keys."""
    return _make_manifest


@pytest.fixture(name="synthetic")
def synthetic_fixture():
    """The synthetic engine-output module (``engine_raw``)."""
    return synthetic


@pytest.fixture
def raw_engine():
    """``(raw, vm_names)`` as ``Simulation.tables()`` / ``vm_names()`` return them."""
    return synthetic.engine_raw(seed=1)


@pytest.fixture
def tables(raw_engine):
    from vmtwin.results import columns_from_engine

    raw, names = raw_engine
    return columns_from_engine(raw, names, "esx01")  # as Simulation does: the host's name


@pytest.fixture
def results_dir(tmp_path, tables):
    from vmtwin.results import write_results

    return write_results(tmp_path / "run", tables, _make_manifest())

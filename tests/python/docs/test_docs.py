"""Docs and exports cannot drift from the code."""

import importlib.util
from pathlib import Path

import vmtwin
from vmtwin.scenario.models import CpuScheduler

ROOT = Path(__file__).resolve().parents[3]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_params_doc", ROOT / "scripts" / "gen_params_doc.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_parameters_page_is_up_to_date():
    gen = _generator()
    assert gen.OUT.read_text() == gen.render(), "docs/reference/parameters.md is stale: run scripts/gen_params_doc.py"


def test_parameters_page_lists_every_scheduler_tunable_with_a_default():
    text = (ROOT / "docs" / "reference" / "parameters.md").read_text()
    for key in CpuScheduler.model_fields:
        row = next((line for line in text.splitlines() if line.startswith(f"| `{key}` |")), None)
        assert row is not None, key
        assert "Default" in row


def test_public_api_matches_the_documented_list():
    doc = vmtwin.__doc__
    for name in vmtwin.__all__:
        if name != "__version__":
            assert f":class:`{name}`" in doc or f":func:`{name}`" in doc, name
        assert hasattr(vmtwin, name), name

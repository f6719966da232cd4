import pytest

from sweep_helpers import BASE_YAML


@pytest.fixture
def base_file(tmp_path):
    p = tmp_path / "base.yaml"
    p.write_text(BASE_YAML)
    return p

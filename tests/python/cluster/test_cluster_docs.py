"""docs/cluster.md: its Python block runs, and the error lines it shows are the ones users get."""

import re
from pathlib import Path

from test_cluster_errors import CASES

DOC = Path(__file__).resolve().parents[3] / "docs" / "cluster.md"


def test_cluster_doc_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert blocks
    namespace: dict = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{DOC}:block{i}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "big" in out and "small-1" in out
    res = namespace["res"]
    assert res.sql("SELECT host FROM placement WHERE vm = 'db'")["host"].tolist() == ["big"]


def test_cluster_doc_error_lines_are_real(cli, tmp_path):
    """Each error line of the page is what the matching bad input really prints (up to its '...')."""
    shown = re.findall(r"^error: (.*)$", DOC.read_text(), flags=re.M)
    assert len(shown) >= 4
    for line in shown:
        head = line.split("...")[0]
        case = next(c for c, (_, m) in CASES.items() if head.startswith(m) or m.startswith(head))
        path = tmp_path / f"{len(list(tmp_path.iterdir()))}.yaml"
        path.write_text(CASES[case][0])
        rc, _, err = cli("cluster", path, "--place-only")
        assert rc == 2 and head in err, (line, err)

"""``--backend ray``: a local Ray head on 127.0.0.1 runs a sweep; the dataset equals the pool's.

Needs Ray (``pip install 'vmtwin[ray]'``); skipped with that message where it is not installed.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from vmtwin.cli import main

from sweep_helpers import write_sweep_file

pytest.importorskip("ray", reason="Ray is not installed: pip install 'vmtwin[ray]' (or make test with the ray "
                                  "extra) to run the Ray backend test")

START_TIMEOUT_S = 120
STOP_GRACE_S = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ray_head():
    """A Ray head on 127.0.0.1 in its own session (so stopping it stops exactly its processes)."""
    ray_cli = str(Path(sys.executable).parent / "ray")
    port = _free_port()
    tmp = tempfile.mkdtemp(prefix="vmtray", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    address = f"127.0.0.1:{port}"
    proc = subprocess.Popen([ray_cli, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
                             "--num-cpus=2", "--include-dashboard=false", f"--temp-dir={tmp}",
                             "--disable-usage-stats", "--block"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail("ray start --head exited: " + proc.stdout.read()[-2000:])
            if subprocess.run([ray_cli, "status", f"--address={address}"], capture_output=True).returncode == 0:
                break
            if time.monotonic() > deadline:
                pytest.fail(f"the Ray head did not come up within {START_TIMEOUT_S} s")
            time.sleep(0.5)
        yield address
    finally:
        # every process of the head is in the session started here: stop exactly those, asking
        # first, then at once (a graceful Ray shutdown takes half a minute on a busy machine)
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        except ProcessLookupError:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        for _ in range(100):  # until the kernel has no process left in the group
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        shutil.rmtree(tmp, ignore_errors=True)


def test_ray_sweep_equals_process_pool(tmp_path, base_file, ray_head, capsys):
    sw = write_sweep_file(tmp_path, "host.cores_per_llc: [2, 3]\n", replications=2)
    assert main(["sweep", sw, "-o", str(tmp_path / "ray"), "--backend", "ray", "--address", ray_head]) == 0, \
        capsys.readouterr().err
    assert main(["sweep", sw, "-o", str(tmp_path / "pool"), "--workers", "1"]) == 0
    for name in ("runs.parquet", "vm.parquet", "vcpu.parquet", "host.parquet", "summary.parquet", "sweep.json"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "pool" / name).read_bytes(), name


def test_ray_needs_address_and_a_cluster(tmp_path, base_file, capsys):
    sw = write_sweep_file(tmp_path, "host.cores_per_llc: [2]\n", replications=1)
    assert main(["sweep", sw, "-o", str(tmp_path / "o"), "--backend", "ray"]) == 2
    assert "--address" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    assert main(["sweep", sw, "-o", str(tmp_path / "o"), "--backend", "ray", "--address", f"127.0.0.1:{_free_port()}"]) == 2
    assert "no Ray head answers there" in capsys.readouterr().err
    assert main(["sweep", sw, "-o", str(tmp_path / "o"), "--backend", "ray", "--address", "nonsense"]) == 2
    assert "HOST:PORT" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()

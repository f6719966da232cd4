"""Tiny scenarios for the sweep tests: a few always-busy single-vCPU VMs, a couple of seconds."""

import textwrap

BASE_YAML = textwrap.dedent("""\
    name: tiny
    seed: 7
    duration: 1s
    sample_interval: 250ms
    host: {cores_per_llc: 2, core_mhz: 2000MHz}
    vms:
      - name: busy
        count: 2
        workload: {type: cpu_bound, duty: 1.0}
      - name: half
        workload: {type: cpu_bound, duty: 0.5, burst: 20ms}
    """)


def write_sweep_file(folder, grid_yaml: str, replications: int = 2, extra: str = "") -> str:
    p = folder / "sweep.yaml"
    p.write_text(f"scenario: base.yaml\nseed: 3\nreplications: {replications}\n{extra}grid:\n"
                 + textwrap.indent(textwrap.dedent(grid_yaml), "  "))
    return str(p)

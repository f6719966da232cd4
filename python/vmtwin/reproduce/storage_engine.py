"""Storage reproductions run on the engine through scenarios (the model tables are in
:mod:`vmtwin.reproduce.storage`).

- ``psp-rr-vs-adaptive``: the PSP Adaptive paper's Figs. 3/4 setting as research/storage.md C3.10
  recommends it (the paper prints no workload): 8 VMs with Iometer-like workers of 32 outstanding
  50/50 random read/write requests on one LUN of a two-controller ALUA flash array, two 8 Gb/s
  HBA ports each with a path to both controllers (two AO, two AUO paths), DQLEN 64, swept over
  block sizes, PSP RR (``iops`` 1) against PSP Adaptive (t_a 1 ms, t_b 0.5 ms, t_c 10 ms, the
  thresholds the engine's PSP tests use; the paper sets none). Measured: the LUN's MB/s and
  IOPS over 10-20 s of each run.
- ``storage-sfqd-shares``: SFQ(D) by disk shares (Kraft et al. §3: ESX's per-LUN fair queueing,
  shares as weights): two backlogged VMs with shares 1:2, then 1:4, on an exponential device.
  Kraft et al. do not print a share experiment; the target, throughput in the ratio of the
  shares, is the definition of SFQ(D) they state (derived).
"""

from __future__ import annotations

from vmtwin.reproduce.base import Experiment, Row

#: Block sizes swept, kB (C3.10's recommendation).
PSP_BLOCKS_KB = (16, 32, 64, 128, 256)
#: PSP Adaptive thresholds used here, ns (chosen: the paper sets none).
PSP_TA_NS, PSP_TB_NS, PSP_TC_NS = 1_000_000, 500_000, 10_000_000


def _host(cores: int = 8) -> dict:
    return {"name": "esx01", "cores_per_llc": cores, "core_mhz": "2600MHz", "memory": "64GB"}


def _psp_scenario(block_kb: int, psp: dict) -> dict:
    return {
        "name": "psp", "seed": 7, "duration": "20s", "sample_interval": "10s", "host": _host(),
        "vms": [{"name": "vm", "count": 8, "workload": {"type": "idle"}}],
        "storage": {
            "adapters": [{"name": "vmhba1"}, {"name": "vmhba2"}],
            "arrays": [{"name": "fa1"}],
            "datastores": [{
                "name": "lun0", "device": {"type": "array", "array": "fa1", "owner": 0}, "dqlen": 64, "psp": psp,
                "paths": [{"adapter": "vmhba1", "controller": 0}, {"adapter": "vmhba2", "controller": 0},
                          {"adapter": "vmhba1", "controller": 1}, {"adapter": "vmhba2", "controller": 1}],
            }],
            "disks": [{"vm": "vm", "datastore": "lun0", "size": "100MB",
                       "workload": {"type": "iometer", "block_size": f"{block_kb}KB", "read_pct": 50, "random_pct": 100,
                                    "outstanding": 32}}],
        },
    }


def _lun_last(doc: dict) -> dict:
    from vmtwin.simulation import Simulation

    sim = Simulation(doc)
    sim.run()
    lun = sim.tables()["lun"].to_pandas()
    row = lun[lun["time_s"] == lun["time_s"].max()].iloc[0]
    return {"mbps": float(row["MBREAD/s"] + row["MBWRTN/s"]), "iops": float(row["CMDS/s"])}


def psp_gains() -> list[tuple[int, dict, dict]]:
    """(block kB, RR figures, Adaptive figures) per block size."""
    rr = {"policy": "round_robin", "iops": 1}
    ad = {"policy": "adaptive", "iops": 1, "ta": f"{PSP_TA_NS}ns", "tb": f"{PSP_TB_NS}ns", "tc": f"{PSP_TC_NS}ns"}
    return [(kb, _lun_last(_psp_scenario(kb, rr)), _lun_last(_psp_scenario(kb, ad))) for kb in PSP_BLOCKS_KB]


def _psp_rows() -> list[Row]:
    exp = "psp-rr-vs-adaptive"
    rows = []
    gains = []
    for kb, rr, ad in psp_gains():
        g = 100.0 * (ad["mbps"] / rr["mbps"] - 1.0)
        gains.append(g)
        rows.append(Row(exp, f"throughput gain at {kb} kB, %", 30.0, g, 0.0, judged=False, x=kb,
                        series="throughput gain",
                        note=f"RR {rr['mbps']:.0f} MB/s, Adaptive {ad['mbps']:.0f} MB/s; IOPS {rr['iops']:.0f} vs "
                             f"{ad['iops']:.0f}. The paper's only number is the maximum ('up to 30%'), shown beside "
                             "each size and not judged (Figs. 3/4 are not in the text).",
                        source="published"))
    rows.append(Row(exp, "largest throughput gain over block sizes, %", 30.0, max(gains), 10.0,
                    note="abstract: 'up to 30%'; research/storage.md C3.10 suggests accepting 20-40%",
                    source="published"))
    nondecreasing = float(all(b >= a - 1.0 for a, b in zip(gains, gains[1:])))
    rows.append(Row(exp, "gain non-decreasing in block size (1 = yes)", 1.0, nondecreasing, 0.0,
                    note="derived from 'the aggregated system throughput improvement also increases with increasing "
                         "I/O block size' (research/storage.md B2); 1 pp of slack between neighbours",
                    source="derived"))
    rows.append(Row(exp, "Adaptive >= RR at every block size (1 = yes)", 1.0, float(min(gains) >= -1.0), 0.0,
                    note="derived from Figs. 3/4's stated trend: Adaptive gives higher IOPS and throughput under "
                         "HBA contention (research/storage.md B2)", source="derived"))
    return rows


def _sfqd_scenario(shares: tuple[int, int]) -> dict:
    disks = [{"vm": f"v{k}", "datastore": "ds", "shares": s,
              "workload": {"type": "iometer", "block_size": "4KB", "read_pct": 100, "random_pct": 100, "outstanding": 32}}
             for k, s in enumerate(shares)]
    return {
        "name": "sfqd", "seed": 3, "duration": "60s", "sample_interval": "60s", "host": _host(2),
        "vms": [{"name": "v0", "workload": {"type": "idle"}}, {"name": "v1", "workload": {"type": "idle"}}],
        "storage": {
            "adapters": [{"name": "vmhba1"}],
            "datastores": [{"name": "ds", "device": {"type": "exponential", "servers": 1, "mean_service": "1ms"},
                            "dqlen": 1, "paths": [{"adapter": "vmhba1", "fabric_latency": "0s"}]}],
            "disks": disks,
        },
    }


def _sfqd_rows() -> list[Row]:
    from vmtwin.simulation import Simulation

    rows = []
    for shares in [(1000, 2000), (500, 2000)]:
        sim = Simulation(_sfqd_scenario(shares))
        sim.run()
        disk = sim.tables()["disk"].to_pandas()
        x = disk.groupby("vm")["CMDS/s"].sum()
        want = shares[1] / shares[0]
        rows.append(Row("storage-sfqd-shares", f"throughput ratio, shares {shares[0]}:{shares[1]}", want,
                        float(x["v1"] / x["v0"]), 0.03 * want, x=want,
                        note="derived: SFQ(D) serves backlogged flows in proportion to their weights (Kraft et al. "
                             "§3, disk shares as SFQ weights); the issue asks for the ratio within 3%. DQLEN 1 on "
                             "one exponential server, both VMs with 32 outstanding",
                        source="derived"))
    return rows


STORAGE_ENGINE_EXPERIMENTS = [
    Experiment("psp-rr-vs-adaptive", "PSP Adaptive vs RR under HBA contention (engine runs, Figs. 3/4 setting)",
               "PSP Adaptive paper (VMware Technical Journal), research/storage.md B2, C3.10", _psp_rows,
               x_label="block size (kB)", y_label="throughput gain (%)"),
    Experiment("storage-sfqd-shares", "SFQ(D) by disk shares: two backlogged VMs (engine runs)",
               "Kraft et al. 2013 §3, research/storage.md A2", _sfqd_rows,
               x_label="share ratio", y_label="throughput ratio"),
]

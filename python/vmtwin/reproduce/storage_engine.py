"""Storage reproductions run on the engine through scenarios (the model tables are in
:mod:`vmtwin.reproduce.storage`).

- ``psp-rr-vs-adaptive``: the PSP Adaptive paper's Figs. 3/4 setting as research/storage.md C3.10
  recommends it (the paper prints no workload): 8 VMs with Iometer-like workers of 32 outstanding
  50/50 random read/write requests on one LUN of a two-controller ALUA flash array, two 8 Gb/s
  HBA ports each with a path to both controllers (two AO, two AUO paths), DQLEN 64, swept over
  block sizes 4-256 kB, PSP RR (``iops`` 1) against PSP Adaptive (t_a 1 ms, t_b 0.5 ms, t_c
  10 ms, the thresholds the engine's PSP tests use; the paper sets none). Measured: the LUN's
  MB/s and IOPS over 10-20 s of each run.

  Where the bottleneck sits (research/storage.md C3.2, the paper is ambiguous): the array
  processes every command on the LUN's owning controller (per I/O; an AUO command is forwarded
  there, the "hop") and moves its data through the front end of the controller it arrived at
  (per byte), see ``storage/array.rs``. Each front end moves ``PSP_FRONT_END_BYTES_PER_S`` (one
  8 Gb/s port's worth, chosen so that the AO side saturates while the host's two HBA ports do
  not, as [P] §3 says). Small blocks are then bound by the owner's command processing, which
  spreading cannot relieve (gain 0); large blocks by the owner's front end, which spreading
  relieves by the bytes moved: with half the commands writes and writes spread evenly over two
  AO and two AUO paths, the owner's front end carries 3/4 of the bytes, so the gain is at most
  4/3 - 1 = 33.3 % (derived). No constant is fitted to a published number: the paper prints no
  per-size value, and its one number ("up to 30%") is compared, not calibrated on.
- ``storage-sfqd-shares``: SFQ(D) by disk shares (Kraft et al. §3: ESX's per-LUN fair queueing,
  shares as weights): two backlogged VMs with shares 1:2, then 1:4, on an exponential device.
  Kraft et al. do not print a share experiment; the target, throughput in the ratio of the
  shares, is the definition of SFQ(D) they state (derived).
"""

from __future__ import annotations

from vmtwin.reproduce.base import Experiment, Row

#: Block sizes swept, kB (C3.10's recommendation: 4 to 128 kB "and higher").
PSP_BLOCKS_KB = (4, 8, 16, 32, 64, 128, 256)
#: Each array controller's front-end data rate, bytes/s: one 8 Gb/s FC port's worth (chosen:
#: [P] §3, the AO side saturates while the host's two 8 Gb/s HBA ports, [P] Table 1, do not).
PSP_FRONT_END_BYTES_PER_S = 1_000_000_000
#: The engine's array defaults this reproduction's oracle rows use (storage/params.rs ArraySpec).
ARRAY_ENGINES, ARRAY_CONTROLLER_NS, ARRAY_MIRROR_NS = 16, 60_000, 40_000
#: PSP Adaptive thresholds used here, ns (chosen: the paper sets none).
PSP_TA_NS, PSP_TB_NS, PSP_TC_NS = 1_000_000, 500_000, 10_000_000
#: A t_a below RR's DAVG at 4 kB, ns: forces spreading where the owner's command processing binds.
PSP_LOW_TA_NS = 200_000


def _host(cores: int = 8) -> dict:
    return {"name": "esx01", "cores_per_llc": cores, "core_mhz": "2600MHz", "memory": "64GB"}


def _psp_scenario(block_kb: int, psp: dict) -> dict:
    return {
        "name": "psp", "seed": 7, "duration": "20s", "sample_interval": "10s", "host": _host(),
        "vms": [{"name": "vm", "count": 8, "workload": {"type": "idle"}}],
        "storage": {
            "adapters": [{"name": "vmhba1"}, {"name": "vmhba2"}],
            "arrays": [{"name": "fa1", "controller_bandwidth": f"{PSP_FRONT_END_BYTES_PER_S}B"}],
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
    tables = sim.tables()
    lun = tables["lun"].to_pandas()
    row = lun[lun["time_s"] == lun["time_s"].max()].iloc[0]
    path = tables["path"].to_pandas()
    last = path[path["time_s"] == path["time_s"].max()]
    auo = float(last[last["path_id"] >= 2]["CMDS/s"].sum())  # paths 2 and 3 reach controller 1
    return {"mbps": float(row["MBREAD/s"] + row["MBWRTN/s"]), "iops": float(row["CMDS/s"]),
            "davg": float(row["DAVG/cmd"]), "auo_cmds": auo}


def _spreading_windows(doc: dict) -> tuple[float, float, int]:
    """(LUN MB/s, AUO cmd/s, count) over the one-second samples in which writes used AUO paths
    (the first second, before any PSP decision, left out)."""
    from vmtwin.simulation import Simulation

    sim = Simulation({**doc, "sample_interval": "1s"})
    sim.run()
    tables = sim.tables()
    lun = tables["lun"].to_pandas().set_index("time_s")
    path = tables["path"].to_pandas()
    auo = path[path["path_id"] >= 2].groupby("time_s")["CMDS/s"].sum()
    on = [t for t, x in auo.items() if x > 0 and t > 1.0]
    if not on:
        return float("nan"), 0.0, 0
    mbps = (lun.loc[on, "MBREAD/s"] + lun.loc[on, "MBWRTN/s"]).mean()
    return float(mbps), float(auo.loc[on].mean()), len(on)


def psp_gains() -> list[tuple[int, dict, dict]]:
    """(block kB, RR figures, Adaptive figures) per block size."""
    rr = {"policy": "round_robin", "iops": 1}
    ad = {"policy": "adaptive", "iops": 1, "ta": f"{PSP_TA_NS}ns", "tb": f"{PSP_TB_NS}ns", "tc": f"{PSP_TC_NS}ns"}
    return [(kb, _lun_last(_psp_scenario(kb, rr)), _lun_last(_psp_scenario(kb, ad))) for kb in PSP_BLOCKS_KB]


def _why(kb: int, rr: dict, ad: dict) -> str:
    if ad["auo_cmds"] == 0:
        if rr["davg"] * 1e6 < PSP_TA_NS:
            return f"RR DAVG {rr['davg']:.2f} ms stays under t_a, so Adaptive never spreads"
        return "spreading was stopped (no 10% improvement)"
    return f"writes on AUO paths {ad['auo_cmds']:.0f} cmd/s"


def _as_predictions(rows: list[Row]) -> list[Row]:
    """``rows`` with their metric marked a prediction: no constant here is fitted to a row."""
    from dataclasses import replace

    return [replace(r, metric=f"{r.metric} (prediction)") for r in rows]


def _psp_rows() -> list[Row]:
    exp = "psp-rr-vs-adaptive"
    rows = []
    gains = []
    sweep = psp_gains()
    for kb, rr, ad in sweep:
        g = 100.0 * (ad["mbps"] / rr["mbps"] - 1.0)
        gains.append(g)
        rows.append(Row(exp, f"throughput gain at {kb} kB, %", 30.0, g, 0.0, judged=False, x=kb,
                        series="throughput gain",
                        note=f"RR {rr['mbps']:.0f} MB/s, Adaptive {ad['mbps']:.0f} MB/s; IOPS {rr['iops']:.0f} vs "
                             f"{ad['iops']:.0f}; {_why(kb, rr, ad)}. The paper's only number is the maximum "
                             "('up to 30%'), shown beside each size and not judged (Figs. 3/4 are not in the text).",
                        source="published"))
    rows.append(Row(exp, "largest throughput gain over block sizes, %", 30.0, max(gains), 10.0,
                    note="abstract: 'up to 30%'; research/storage.md C3.10 suggests accepting 20-40%. Not "
                         "calibrated on: no constant was chosen to meet it",
                    source="published"))
    nondecreasing = float(all(b >= a - 1.0 for a, b in zip(gains, gains[1:])))
    rows.append(Row(exp, "gain non-decreasing in block size (1 = yes)", 1.0, nondecreasing, 0.0,
                    note="derived from 'the aggregated system throughput improvement also increases with increasing "
                         "I/O block size' (research/storage.md B2); 1 pp of slack between neighbours. Here the gain "
                         "rises in one step (0 where the owner's command processing binds or DAVG stays under t_a, "
                         "the 4/3 bound where its front end binds), not gradually",
                    source="derived"))
    rows.append(Row(exp, "Adaptive >= RR at every block size (1 = yes)", 1.0, float(min(gains) >= -1.0), 0.0,
                    note="derived from Figs. 3/4's stated trend: Adaptive gives higher IOPS and throughput under "
                         "HBA contention (research/storage.md B2)", source="derived"))
    # oracle rows: the mechanism's own bounds, computed from the array's constants, not from the runs
    small_kb, small_rr, _ = sweep[0]
    mean_cmd_ns = ARRAY_CONTROLLER_NS + 0.5 * ARRAY_MIRROR_NS  # half writes pay the mirror (reads hit a warm cache)
    cap_iops = ARRAY_ENGINES * 1e9 / mean_cmd_ns
    rows.append(Row(exp, f"RR IOPS at {small_kb} kB / owner's command capacity", 1.0, small_rr["iops"] / cap_iops, 0.02,
                    x=small_kb, note=f"derived: {ARRAY_ENGINES} engines / {mean_cmd_ns / 1e3:.0f} us mean per command "
                                      f"= {cap_iops:.0f} IOPS: small blocks are bound per I/O on the owner",
                    source="derived"))
    # the same 4 kB run with t_a under RR's DAVG: spreading starts, and cannot help per-I/O-bound I/O
    low = {"policy": "adaptive", "iops": 1, "ta": f"{PSP_LOW_TA_NS}ns", "tb": f"{PSP_LOW_TA_NS // 2}ns",
           "tc": f"{PSP_TC_NS}ns"}
    spread_mbps, spread_auo, n = _spreading_windows(_psp_scenario(small_kb, low))
    rows.append(Row(exp, f"throughput gain at {small_kb} kB while spreading (t_a {PSP_LOW_TA_NS / 1e6:g} ms), %", 0.0,
                    100.0 * (spread_mbps / small_rr["mbps"] - 1.0), 2.0, x=small_kb,
                    note=f"derived: every command is processed on the owner, so moving writes to AUO paths adds no "
                         f"command capacity. Mean over the {n} one-second windows with writes on AUO paths "
                         f"({spread_auo:.0f} cmd/s there); the improvement test then stops spreading", source="derived"))
    big_kb, big_rr, big_ad = sweep[-1]
    mib = PSP_FRONT_END_BYTES_PER_S / 2**20
    rows.append(Row(exp, f"RR MB/s at {big_kb} kB / one front end's rate", 1.0, big_rr["mbps"] / mib, 0.02, x=big_kb,
                    note=f"derived: large blocks are bound by the owner's front end ({mib:.0f} MB/s)", source="derived"))
    rows.append(Row(exp, f"throughput gain at {big_kb} kB vs the bytes-moved bound, %", 100.0 / 3.0,
                    100.0 * (big_ad["mbps"] / big_rr["mbps"] - 1.0), 1.0, x=big_kb,
                    note="derived: 50% writes spread evenly over 2 AO + 2 AUO paths leave 3/4 of the bytes on the "
                         "owner's front end, so Adaptive moves at most 4/3 of RR's bytes",
                    source="derived"))
    return _as_predictions(rows)


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
    return _as_predictions(rows)


STORAGE_ENGINE_EXPERIMENTS = [
    Experiment("psp-rr-vs-adaptive", "PSP Adaptive vs RR under HBA contention (engine runs, Figs. 3/4 setting)",
               "PSP Adaptive paper (VMware Technical Journal), research/storage.md B2, C3.10", _psp_rows,
               x_label="block size (kB)", y_label="throughput gain (%)"),
    Experiment("storage-sfqd-shares", "SFQ(D) by disk shares: two backlogged VMs (engine runs)",
               "Kraft et al. 2013 §3, research/storage.md A2", _sfqd_rows,
               x_label="share ratio", y_label="throughput ratio"),
]

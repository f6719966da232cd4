"""A management scenario: a task stream, the platform, and the throttling policies to compare.

YAML (paths relative to the file)::

    name: morning-provisioning
    seed: 1
    seeds: 5                  # runs seeds seed .. seed+4; results are means over them
    tasks: morning.csv        # a task stream CSV (time, operation) ... or
    # workload: mixed         # one of the paper's: reconfigure_memory, power_on, mixed
    platform: {hosts: 3, vms_per_host: 200, powered_on_per_host: 100}
    operations:               # extra operations (or new costs for built-in ones), seconds per stage
      deploy_ovf: {vpxd_s: 0.1, cluster_s: 0.3, hostd_s: 6.0, db_s: 0.05, effect: add_vm}
    policies:                 # label: settings; default: naive static, optimal static, vATM at t_min 4
      naive: {kind: static, batch: 4}
      optimal: {kind: optimal-static}
      vatm: {kind: vatm, t_min: 4, rule: paper}

A bare CSV given to ``vmtwin manage`` is the same with every default. Every error names the key
(or file and line), the value and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Optional

import yaml

from vmtwin.exceptions import ScenarioError, scenario_error
from vmtwin.manage.control import VatmConfig
from vmtwin.manage.vcenter import OPERATIONS, Operation, VcenterParams
from vmtwin.manage.workloads import PAPER_WORKLOADS, TaskStream, paper_workload, read_task_csv

POLICY_SPEC_KINDS = ("static", "optimal-static", "vatm", "unthrottled")
DEFAULT_T_MIN = 4
TOP_KEYS = {"name", "seed", "seeds", "tasks", "workload", "platform", "operations", "policies"}


@dataclass(frozen=True)
class PolicySpec:
    """A policy as the scenario names it; ``optimal-static`` becomes a static batch after the sweep."""

    label: str
    kind: str
    batch: Optional[int] = None
    vatm: Optional[VatmConfig] = None
    max_batch: Optional[int] = None


@dataclass(frozen=True)
class ManageScenario:
    name: str
    seeds: tuple[int, ...]
    stream: TaskStream
    params: VcenterParams
    ops: dict[str, Operation]
    policies: tuple[PolicySpec, ...]


def default_policies(t_min: int = DEFAULT_T_MIN) -> tuple[PolicySpec, ...]:
    return (PolicySpec("naive-static", "static", batch=t_min), PolicySpec("optimal-static", "optimal-static"),
            PolicySpec("vatm", "vatm", vatm=VatmConfig(t_min=t_min)))


def _int(path: str, v: Any, lo: int = 0) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < lo:
        raise scenario_error(path, v, f"an integer of at least {lo}")
    return v


def _mapping(path: str, v: Any) -> dict:
    if not isinstance(v, dict):
        raise scenario_error(path, v, "a mapping of key: value")
    return v


def _known(path: str, d: dict, allowed: set[str]) -> None:
    for k in d:
        if k not in allowed:
            raise scenario_error(f"{path}.{k}" if path else str(k), d[k], "one of the keys " + ", ".join(sorted(allowed)))


def _policy(label: str, d: Any, t_min_default: int) -> PolicySpec:
    d = _mapping(f"policies.{label}", d if d is not None else {})
    kind = d.get("kind", label if label in POLICY_SPEC_KINDS else None)
    if kind not in POLICY_SPEC_KINDS:
        raise scenario_error(f"policies.{label}.kind", kind, ", ".join(POLICY_SPEC_KINDS))
    if kind == "static":
        _known(f"policies.{label}", d, {"kind", "batch"})
        return PolicySpec(label, kind, batch=_int(f"policies.{label}.batch", d.get("batch", t_min_default), 1))
    if kind == "optimal-static":
        _known(f"policies.{label}", d, {"kind", "max_batch"})
        mb = d.get("max_batch")
        return PolicySpec(label, kind, max_batch=None if mb is None else _int(f"policies.{label}.max_batch", mb, 1))
    if kind == "unthrottled":
        _known(f"policies.{label}", d, {"kind"})
        return PolicySpec(label, kind)
    names = {f.name for f in fields(VatmConfig)}
    _known(f"policies.{label}", d, names | {"kind"})
    cfg = {k: v for k, v in d.items() if k != "kind"}
    cfg.setdefault("t_min", t_min_default)
    try:
        return PolicySpec(label, kind, vatm=VatmConfig(**cfg))
    except ScenarioError as e:  # the config names "vatm.<field>"; say which policy
        raise scenario_error(e.path.replace("vatm.", f"policies.{label}.", 1), e.value, e.allowed) from None


def load_manage_scenario(path: str | Path, t_min: Optional[int] = None, seed: Optional[int] = None) -> ManageScenario:
    """Read a scenario YAML or a bare task CSV; ``t_min`` and ``seed`` override (CLI options)."""
    path = Path(path)
    if t_min is not None:
        _int("--t-min", t_min, 1)
    if seed is not None:
        _int("--seed", seed, 0)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
    if path.suffix.lower() == ".csv":
        tm = t_min or DEFAULT_T_MIN
        return ManageScenario(path.stem, (seed if seed is not None else 1,), read_task_csv(path), VcenterParams(),
                              dict(OPERATIONS), default_policies(tm))
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise scenario_error(str(path), "unreadable YAML", f"a YAML mapping ({str(e).splitlines()[0]})") from None
    if doc is None:
        raise scenario_error(str(path), "an empty file", "a YAML mapping with tasks or workload, and policies")
    doc = _mapping(str(path), doc)
    _known("", doc, TOP_KEYS)
    ops = dict(OPERATIONS)
    for name, spec in _mapping("operations", doc.get("operations") or {}).items():
        spec = _mapping(f"operations.{name}", spec)
        _known(f"operations.{name}", spec, {"vpxd_s", "cluster_s", "hostd_s", "db_s", "effect"})
        base = {f: getattr(ops[name], f) for f in ("vpxd_s", "cluster_s", "hostd_s", "db_s", "effect")} \
            if name in ops else {}
        ops[str(name)] = Operation(str(name), **{**base, **spec})
    plat = _mapping("platform", doc.get("platform") or {})
    _known("platform", plat, {f.name for f in fields(VcenterParams)})
    params = VcenterParams(**plat)
    has_tasks, has_workload = "tasks" in doc, "workload" in doc
    if has_tasks == has_workload:
        raise scenario_error("tasks", doc.get("tasks"), "exactly one of tasks (a CSV file) or workload ("
                             + ", ".join(PAPER_WORKLOADS) + ")")
    if has_tasks:
        csv_path = Path(str(doc["tasks"]))
        stream = read_task_csv(csv_path if csv_path.is_absolute() else path.parent / csv_path, ops)
    else:
        stream = paper_workload(doc["workload"])
    t_min_default = t_min or (PAPER_WORKLOADS[doc["workload"]][2] if has_workload else DEFAULT_T_MIN)
    first = seed if seed is not None else _int("seed", doc.get("seed", 1))
    n_seeds = _int("seeds", doc.get("seeds", 1), 1)
    if "policies" in doc:
        pol = _mapping("policies", doc["policies"])
        if not pol:
            raise scenario_error("policies", pol, "at least one policy")
        policies = tuple(_policy(str(k), v, t_min_default) for k, v in pol.items())
        if t_min is not None:  # --t-min sets every vATM's t_min
            policies = tuple(PolicySpec(p.label, p.kind, p.batch, VatmConfig(**{**p.vatm.__dict__, "t_min": t_min}),
                                        p.max_batch) if p.vatm else p for p in policies)
    else:
        policies = default_policies(t_min_default)
    name = str(doc.get("name", path.stem))
    return ManageScenario(name, tuple(range(first, first + n_seeds)), stream, params, ops, policies)


__all__ = ["DEFAULT_T_MIN", "ManageScenario", "POLICY_SPEC_KINDS", "PolicySpec", "default_policies",
           "load_manage_scenario"]

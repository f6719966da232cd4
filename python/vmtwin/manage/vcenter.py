"""vCenter task execution: management operations through queues of limited concurrency.

A task (one management operation on one VM) enters vCenter when the throttling policy issues it and
visits four *stages* in order; each is a FIFO queue in front of a fixed number of servers:

``vpxd``
    vCenter's task threads (``vpxd_threads``): validation, entity locks, dispatch.
``cluster``
    the cluster's serialised section (one holder at a time): the inventory update and, for a
    power-on, DRS placement. One server per cluster. The paper's numbers need such a stage: small
    batches already run at a rate (2-4 tasks/s) far below what their round latency alone allows,
    and the optimal static rates (148-256 tasks/min) are of the same order (research/management.md
    1B, implied throughputs).
``hostd``
    the host agent of the VM's host (``hostd_threads`` per host): the operation's own work (memory
    reconfiguration, power-on, disk copy, snapshot file).
``db``
    vCenter's database connections (``db_connections``): the task's result is persisted.

An operation costs a mean service time (seconds) at each stage it visits (a zero cost skips the
stage). Three effects make throughput against concurrency a hill whose top moves with load:

- *queueing*: with few tasks in flight the stages idle between them (rising side);
- *contention* in vCenter: each task in vCenter slows vCenter's own stages (``vpxd``, ``cluster``,
  ``db``) by ``contention_per_task`` (entity-lock conflicts, task-manager and property-collector
  updates that every task sends to every other), so a service started with ``n`` tasks in vCenter
  takes ``cost * (1 + contention_per_task * n)``; total work then grows as ``n**2`` (falling side);
- *background work*: every powered-on VM sends vCenter and its host periodic work (heartbeats,
  statistics, property updates). It is taken as a share of a stage's capacity (a fluid, not discrete
  jobs): a service takes ``cost * (1 + bg_per_vm * powered_on)``, counted over the cluster for
  vCenter's stages and over the host for ``hostd``. Power-ons raise it as they complete, which is
  what lowers the power-on workload's throughput late in the run (Fig. 4(d)).

Service times are gamma-distributed around their mean with coefficient of variation ``service_cv``
(1 = exponential: with one stage, no contention and no background the model is an M/M/c queue,
checked against Erlang C). Each task draws its four noise factors from the seeded numpy generator
in task order, so a run is reproducible bit for bit and the seeds pair across policies.

Every parameter (:class:`VcenterParams`, :data:`OPERATIONS`) is named with its default and the
published point that sets it; docs/manage.md tabulates them.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass
from typing import Callable

import numpy as np

from vmtwin.exceptions import scenario_error

STAGES = ("vpxd", "cluster", "hostd", "db")
#: Stages inside vCenter (slowed by contention and by the cluster's background work).
VCENTER_STAGES = frozenset({"vpxd", "cluster", "db"})
#: What an operation does to the inventory when it finishes.
EFFECTS = ("none", "power_on", "power_off", "add_vm")


@dataclass(frozen=True)
class Operation:
    """A management operation's cost profile: mean service seconds at each stage, and its effect."""

    name: str
    vpxd_s: float = 0.0
    cluster_s: float = 0.0
    hostd_s: float = 0.0
    db_s: float = 0.0
    effect: str = "none"

    def __post_init__(self) -> None:
        for stage in STAGES:
            v = getattr(self, f"{stage}_s")
            if not (isinstance(v, (int, float)) and v >= 0 and np.isfinite(v)):
                raise scenario_error(f"operations.{self.name}.{stage}_s", v, "a service time in seconds, >= 0")
        if self.effect not in EFFECTS:
            raise scenario_error(f"operations.{self.name}.effect", self.effect, ", ".join(EFFECTS))
        if self.total_s <= 0:
            raise scenario_error(f"operations.{self.name}", "all costs 0", "at least one stage cost > 0")

    @property
    def costs(self) -> tuple[float, float, float, float]:
        return (self.vpxd_s, self.cluster_s, self.hostd_s, self.db_s)

    @property
    def total_s(self) -> float:
        return float(sum(self.costs))


# The four operations of the paper's workloads (Sec. 4.1). Calibration (docs/manage.md, "Calibration"):
# each operation's unloaded latency (the sum of its costs) is set by its naive static round time
# (RAM 2.45 min / 40 rounds of 10, power-on 1.70 min / 40 rounds of 5, mixed 11.99 min / 200 rounds
# of 4); its cluster cost (the serialised part) by its optimal static latency (RAM 1.56 min,
# power-on 1.35 min, mixed 4.67 min; create and snapshot share one profile). vpxd and db costs are
# chosen small (validation and one result row); the rest of the latency is host work.
OPERATIONS: dict[str, Operation] = {
    "reconfigure_memory": Operation("reconfigure_memory", vpxd_s=0.05, cluster_s=0.167, hostd_s=1.14, db_s=0.05),
    "power_on": Operation("power_on", vpxd_s=0.05, cluster_s=0.276, hostd_s=0.45, db_s=0.05, effect="power_on"),
    "create": Operation("create", vpxd_s=0.05, cluster_s=0.245, hostd_s=1.93, db_s=0.05, effect="add_vm"),
    "snapshot": Operation("snapshot", vpxd_s=0.05, cluster_s=0.245, hostd_s=1.93, db_s=0.05),
    "power_off": Operation("power_off", vpxd_s=0.05, cluster_s=0.10, hostd_s=0.30, db_s=0.05, effect="power_off"),
}
#: Names users may also write for the built-in operations.
ALIASES = {"clone": "create", "create_vm": "create", "reconfig_ram": "reconfigure_memory",
           "reconfigure": "reconfigure_memory", "poweron": "power_on", "poweroff": "power_off",
           "snapshot_create": "snapshot"}


@dataclass(frozen=True)
class VcenterParams:
    """The platform's parameters: default, unit and source of each in docs/manage.md."""

    hosts: int = 3                      # Sec. 4.1: "a cluster of 3 ESX hosts"
    vms_per_host: int = 200             # Sec. 4.1: "hundreds of VMs on each of the host" (chosen: 200)
    powered_on_per_host: int = 100      # chosen: half on, so 200 power-ons find powered-off VMs
    vpxd_threads: int = 32              # chosen (vpxd task thread pool); never binding in the workloads
    hostd_threads: int = 8              # chosen (hostd worker threads per host)
    db_connections: int = 8             # chosen (vCenter's database connection pool)
    contention_per_task: float = 3.0e-4  # calibrated: boot-storm throughput peak at 200 (Fig. 1)
    bg_per_vm_cluster: float = 1.0e-3   # calibrated: cluster cost x1.3 with the 300 VMs on at the start
    bg_per_vm_host: float = 1.0e-3      # chosen: hostd slows by 0.1% per powered-on VM on its host
    service_cv: float = 0.3             # chosen: per-round fluctuation (Sec. 3.4a), not quantified

    def __post_init__(self) -> None:
        for name in ("hosts", "vms_per_host", "vpxd_threads", "hostd_threads", "db_connections"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise scenario_error(f"platform.{name}", v, "an integer of at least 1")
        if not isinstance(self.powered_on_per_host, int) or not 0 <= self.powered_on_per_host <= self.vms_per_host:
            raise scenario_error("platform.powered_on_per_host", self.powered_on_per_host,
                                 f"an integer from 0 to vms_per_host ({self.vms_per_host})")
        for name in ("contention_per_task", "bg_per_vm_cluster", "bg_per_vm_host", "service_cv"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and v >= 0 and np.isfinite(v)):
                raise scenario_error(f"platform.{name}", v, "a number >= 0")


class Inventory:
    """Hosts and their VMs with power state, the powered-on counts, and which VMs a power operation may take.

    ``idle[h][on]`` lists host ``h``'s VMs in power state ``on`` that no power operation holds; a
    power-on (power-off) takes the last of ``idle[h][False]`` (``[True]``) and the VM changes state
    when the operation finishes.
    """

    def __init__(self, p: VcenterParams) -> None:
        self.power = [[i < p.powered_on_per_host for i in range(p.vms_per_host)] for _ in range(p.hosts)]
        self.on_host = [p.powered_on_per_host] * p.hosts
        self.on_total = p.powered_on_per_host * p.hosts
        self.idle = [{on: [v for v in range(p.vms_per_host - 1, -1, -1) if self.power[h][v] == on]
                      for on in (False, True)} for h in range(p.hosts)]

    def take(self, host: int, on: bool) -> int:
        """A VM of ``host`` in state ``on`` for a power operation, or -1 if none is left."""
        pool = self.idle[host][on]
        return pool.pop() if pool else -1

    def set_power(self, host: int, vm: int, on: bool) -> None:
        if self.power[host][vm] != on:
            self.power[host][vm] = on
            d = 1 if on else -1
            self.on_host[host] += d
            self.on_total += d
        self.idle[host][on].insert(0, vm)

    def add_vm(self, host: int) -> None:
        self.power[host].append(False)
        self.idle[host][False].insert(0, len(self.power[host]) - 1)


class Vcenter:
    """The event loop and the stages. A policy drives it through :meth:`issue` and two callbacks.

    ``on_arrival(task, now)`` is called when a task of the stream arrives (the policy queues or
    issues it), ``on_done(task, now)`` when an issued task finishes its last stage. Times are
    seconds from the start of the stream. Internally each queue with its servers is a *station*:
    0 vpxd, 1 the cluster section, 2 .. 1+hosts the hosts' hostd, 2+hosts the database.
    """

    def __init__(self, params: VcenterParams, ops: list[Operation], task_ops: list[int], arrivals: list[float],
                 seed: int) -> None:
        self.p = params
        self.ops = ops
        self.task_ops = task_ops
        n = len(task_ops)
        cv = params.service_cv
        rng = np.random.default_rng(seed)
        if cv > 0:
            shape = 1.0 / (cv * cv)
            noise = rng.gamma(shape, 1.0 / shape, size=(n, len(STAGES)))
        else:
            noise = np.ones((n, len(STAGES)))
        op_costs = np.array([op.costs for op in ops], dtype=float).reshape(len(ops), len(STAGES))
        self._work = (op_costs[np.asarray(task_ops, dtype=np.intp)] * noise).tolist() if n else []
        self._effect = [ops[i].effect for i in task_ops]
        self.inventory = Inventory(params)
        h = params.hosts
        self._servers = [params.vpxd_threads, 1] + [params.hostd_threads] * h + [params.db_connections]
        self._busy = [0] * (h + 3)
        self._queues = [deque() for _ in range(h + 3)]
        self._in_vcenter_station = [True, True] + [False] * h + [True]
        self._heap: list = []
        self._seq = 0
        self.now = 0.0
        self.in_vcenter = 0
        self.host = [-1] * n
        self.vm = [-1] * n
        self.failed = [False] * n
        self.issue_time = [float("nan")] * n
        self.done_time = [float("nan")] * n
        self.wait = [0.0] * n  # time queued at the stages (not in the policy's queue)
        self._stage = [0] * n
        self._station = [0] * n
        self._enq = [0.0] * n
        self._next_host = 0
        for t, a in enumerate(arrivals):
            self._push(a, 0, t)
        self.on_arrival: Callable[[int, float], None] = lambda task, now: None
        self.on_done: Callable[[int, float], None] = lambda task, now: None

    # ---- the event loop --------------------------------------------------------------------------------
    def _push(self, time: float, kind: int, task: int) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (time, self._seq, kind, task))

    def run(self) -> None:
        """Process events until none is left."""
        heap = self._heap
        pop = heapq.heappop
        while heap:
            time, _, kind, task = pop(heap)
            self.now = time
            if kind == 0:
                self.on_arrival(task, time)
            else:
                self._finish_service(task)

    # ---- tasks -----------------------------------------------------------------------------------------
    def issue(self, task: int) -> None:
        """The policy hands ``task`` to vCenter now."""
        self.issue_time[task] = self.now
        self.in_vcenter += 1
        self._place(task)
        self._stage[task] = -1
        self._advance(task)

    def _place(self, task: int) -> None:
        """The target VM: hosts in turn; a power-on or power-off takes a VM in the other state."""
        effect = self._effect[task]
        hosts = self.p.hosts
        for k in range(hosts):
            h = (self._next_host + k) % hosts
            if effect == "power_on" or effect == "power_off":
                v = self.inventory.take(h, effect == "power_off")
                if v < 0:
                    continue
            else:
                v = task % len(self.inventory.power[h])
            self._next_host = (h + 1) % hosts
            self.host[task], self.vm[task] = h, v
            return
        self.failed[task] = True  # no VM in the needed power state: vCenter rejects it at validation
        self.host[task] = self._next_host

    def _advance(self, task: int) -> None:
        work = self._work[task]
        s = self._stage[task] + 1
        if s > 0 and self.failed[task]:
            s = 4
        while s < 4 and work[s] == 0.0:
            s += 1
        self._stage[task] = s
        if s == 4:
            self._complete(task)
            return
        st = s if s < 2 else (2 + self.host[task] if s == 2 else 2 + self.p.hosts)
        self._station[task] = st
        self._enq[task] = self.now
        if self._busy[st] < self._servers[st]:
            self._busy[st] += 1
            self._start(task)
        else:
            self._queues[st].append(task)

    def _start(self, task: int) -> None:
        p = self.p
        now = self.now
        self.wait[task] += now - self._enq[task]
        if self._in_vcenter_station[self._station[task]]:
            factor = (1.0 + p.contention_per_task * self.in_vcenter) * (
                1.0 + p.bg_per_vm_cluster * self.inventory.on_total)
        else:
            factor = 1.0 + p.bg_per_vm_host * self.inventory.on_host[self.host[task]]
        self._seq += 1
        heapq.heappush(self._heap, (now + self._work[task][self._stage[task]] * factor, self._seq, 1, task))

    def _finish_service(self, task: int) -> None:
        st = self._station[task]
        q = self._queues[st]
        if q:
            self._start(q.popleft())
        else:
            self._busy[st] -= 1
        self._advance(task)

    def _complete(self, task: int) -> None:
        self.in_vcenter -= 1
        self.done_time[task] = self.now
        effect = self._effect[task]
        if not self.failed[task] and effect != "none":
            h, v = self.host[task], self.vm[task]
            if effect == "add_vm":
                self.inventory.add_vm(h)
            else:
                self.inventory.set_power(h, v, effect == "power_on")
        self.on_done(task, self.now)


__all__ = ["ALIASES", "EFFECTS", "OPERATIONS", "STAGES", "Inventory", "Operation", "Vcenter", "VcenterParams"]

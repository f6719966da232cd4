"""A synthetic datacenter with ground truth for the correlation engine (extraction 2C-12).

**Topology.** A three-tier service: a load balancer ``lb``, ``web1..W``, ``app1..A`` (web i
calls app ((i-1) mod A)+1), one database ``db1`` on one datastore ``ds1``, every VM on one of two
hosts, and a storage array ``san1`` under ``ds1``. The dependency edges run from provider to
consumer (a fault flows that way): san1 -> ds1 -> db1 -> app* -> web* -> lb, host -> its VMs.

**Metrics.** Every resource has ``cpu``, ``mem`` and ``latency``, sampled every ``step_s``
(5 min): a base level, a daily cycle (peak at 14:00 UTC), a weekend dip and Gaussian noise.

**Hidden propagation DAG.** For each dependency edge one or two event-type edges (a metric of the
provider to a metric of the consumer, symptom ``above``), each with a propagation probability
drawn from [p_min, p_max]. A root fault starts on an event type that has children, at Poisson
times (``faults_per_day``); every child of an active event becomes anomalous with its edge's
probability after a lag drawn from [lag_min_s, lag_max_s]. Lifetimes are log-normal (median
``lifetime_median_s``, log-spread ``lifetime_sigma``).

**Distractors.** ``chronic`` metrics alarm in long, frequent bouts (high priors: the paper's
critical nodes); the rare ``san1:latency`` fault fans out to most of the system (a black swan);
``spurious_per_day`` independent alarms land on random metrics. Every anomaly shifts its
metric by a magnitude drawn from [magnitude_min, magnitude_max] noise standard deviations.

**Outages.** A root fault whose cascade reaches at least ``min_cascade`` events is a labelled
outage; its label is the root's resource and the moment ``label_delay_s`` after the root started.

Two entry points: :func:`generate` gives the events directly (tests the engine) and
:func:`render_metrics` turns them into metric series (tests thresholds + engine).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from vmtwin.analytics.events import Event

DAY_S = 86_400.0
WEEK_S = 7 * DAY_S
METRICS = ("cpu", "mem", "latency")

#: 2024-01-01 00:00 UTC, a Monday: the synthetic data's epoch.
T_START = 1_704_067_200.0


@dataclass(frozen=True)
class SyntheticSpec:
    seed: int = 1
    train_weeks: float = 3.0
    test_weeks: float = 1.0
    step_s: float = 300.0
    web: int = 4
    app: int = 3
    faults_per_day: float = 10.0
    p_min: float = 0.6
    p_max: float = 0.95
    lag_min_s: float = 300.0
    lag_max_s: float = 600.0
    lifetime_median_s: float = 2400.0
    lifetime_sigma: float = 0.5
    chronic: int = 3
    chronic_on_share: float = 0.6
    black_swan_per_week: float = 1.0
    spurious_per_day: float = 12.0
    min_cascade: int = 3
    label_delay_s: float = 900.0
    magnitude_min: float = 4.0
    magnitude_max: float = 10.0


@dataclass
class Outage:
    time: float          # label moment
    root_resource: str
    root_type: str       # event label of the root fault
    root_start: float
    cascade: int


@dataclass
class Synthetic:
    spec: SyntheticSpec
    resources: list[str]
    topology: list[tuple[str, str]]
    dag: dict = field(default_factory=dict)  # (parent label, child label) -> probability
    events: list[Event] = field(default_factory=list)
    outages: list[Outage] = field(default_factory=list)
    t0: float = T_START
    t_split: float = T_START
    t1: float = T_START


def _topology(spec: SyntheticSpec) -> tuple[list[str], list[tuple[str, str]]]:
    webs = [f"web{i}" for i in range(1, spec.web + 1)]
    apps = [f"app{i}" for i in range(1, spec.app + 1)]
    edges = [("san1", "ds1"), ("ds1", "db1")]
    edges += [("db1", a) for a in apps]
    edges += [(apps[i % len(apps)], w) for i, w in enumerate(webs)]
    edges += [(w, "lb") for w in webs]
    vms = ["db1", *apps, *webs]
    edges += [(f"host{1 + k % 2}", vm) for k, vm in enumerate(vms)]
    resources = ["san1", "ds1", "host1", "host2", "db1", *apps, *webs, "lb"]
    return resources, edges


def _lifetime(rng: np.random.Generator, spec: SyntheticSpec) -> float:
    return float(rng.lognormal(math.log(spec.lifetime_median_s), spec.lifetime_sigma))


def generate(spec: SyntheticSpec = SyntheticSpec()) -> Synthetic:
    """Events, hidden DAG and labelled outages (deterministic for a spec)."""
    rng = np.random.default_rng(spec.seed)
    resources, topo = _topology(spec)
    dag: dict[tuple[str, str], float] = {}
    for up, down in topo:
        if up == "san1":
            continue  # the black swan is wired below
        for _ in range(int(rng.integers(1, 3))):
            a, b = rng.choice(METRICS), rng.choice(METRICS)
            dag[(f"{up}:{a}:above", f"{down}:{b}:above")] = float(rng.uniform(spec.p_min, spec.p_max))
    swan = "san1:latency:above"
    inner = sorted({c for _, c in dag} | {p for p, _ in dag})
    for child in rng.choice(inner, size=min(len(inner), 12), replace=False):
        dag[(swan, str(child))] = 0.95
    children: dict[str, list[tuple[str, float]]] = {}
    for (p, c), q in sorted(dag.items()):
        children.setdefault(p, []).append((c, q))
    roots = sorted(p for p in children if p != swan)

    t0 = T_START
    t_split = t0 + spec.train_weeks * WEEK_S
    t1 = t_split + spec.test_weeks * WEEK_S
    events: list[Event] = []
    outages: list[Outage] = []

    def cascade(root: str, start: float) -> int:
        active = {root: start}
        queue = [root]
        events.append(Event(*root.split(":"), start, start + _lifetime(rng, spec), float(rng.uniform(spec.magnitude_min, spec.magnitude_max))))
        while queue:
            node = queue.pop(0)
            for child, q in children.get(node, []):
                if child in active or rng.random() >= q:
                    continue
                s = active[node] + float(rng.uniform(spec.lag_min_s, spec.lag_max_s))
                active[child] = s
                queue.append(child)
                events.append(Event(*child.split(":"), s, s + _lifetime(rng, spec), float(rng.uniform(spec.magnitude_min, spec.magnitude_max))))
        return len(active)

    t = t0
    while True:
        t += float(rng.exponential(DAY_S / spec.faults_per_day))
        if t >= t1:
            break
        root = str(rng.choice(roots))
        n = cascade(root, t)
        if n >= spec.min_cascade:
            outages.append(Outage(t + spec.label_delay_s, root.split(":")[0], root, t, n))
    t = t0
    while spec.black_swan_per_week > 0:
        t += float(rng.exponential(WEEK_S / spec.black_swan_per_week))
        if t >= t1:
            break
        n = cascade(swan, t)
        outages.append(Outage(t + spec.label_delay_s, "san1", swan, t, n))
    # the black swan's metric stays rare: no chronic bouts or spurious alarms land on it
    metric_types = [f"{r}:{m}" for r in resources for m in METRICS if f"{r}:{m}:above" != swan]
    for name in rng.choice(metric_types, size=spec.chronic, replace=False):
        r, m = str(name).split(":")
        t = t0
        while t < t1:  # on/off bouts, on for chronic_on_share of the time on average
            on = float(rng.exponential(4 * 3600.0 * spec.chronic_on_share))
            off = float(rng.exponential(4 * 3600.0 * (1 - spec.chronic_on_share)))
            t += off
            if t < t1:
                events.append(Event(r, m, "above", t, t + on, float(rng.uniform(spec.magnitude_min, spec.magnitude_max))))
            t += on
    t = t0
    while spec.spurious_per_day > 0:
        t += float(rng.exponential(DAY_S / spec.spurious_per_day))
        if t >= t1:
            break
        r, m = str(rng.choice(metric_types)).split(":")
        events.append(Event(r, m, "above", t, t + _lifetime(rng, spec), float(rng.uniform(spec.magnitude_min, spec.magnitude_max))))
    events = [e for e in events if e.start < t1]
    events = [Event(e.resource, e.attribute, e.symptom, e.start, e.end if e.end < t1 else None, e.magnitude)
              for e in events]
    events.sort(key=lambda e: (e.start, e.resource, e.attribute))
    outages.sort(key=lambda o: o.time)
    return Synthetic(spec, resources, topo, dag, events, outages, t0, t_split, t1)


def render_metrics(syn: Synthetic):
    """Metric series (long form: time_s, resource, metric, value) with the events drawn in.

    An event adds ``magnitude`` noise standard deviations to its metric while it lasts.
    """
    import pandas as pd

    spec = syn.spec
    rng = np.random.default_rng(spec.seed + 1)
    t = np.arange(syn.t0, syn.t1, spec.step_s)
    hour = ((t - syn.t0) % DAY_S) / 3600.0
    weekday = ((t - syn.t0) // DAY_S) % 7
    daily = np.cos((hour - 14.0) / 24.0 * 2 * math.pi)
    weekend = np.where(weekday >= 5, -1.0, 0.0)
    by_type: dict[str, list[Event]] = {}
    for e in syn.events:
        by_type.setdefault(f"{e.resource}:{e.attribute}", []).append(e)
    frames = []
    for r in syn.resources:
        for m in METRICS:
            base, amp, sd = float(rng.uniform(20, 60)), float(rng.uniform(2, 10)), float(rng.uniform(1, 3))
            v = base + amp * daily + 0.5 * amp * weekend + rng.normal(0, sd, t.size)
            for e in by_type.get(f"{r}:{m}", []):
                end = syn.t1 if e.end is None else e.end
                v[(t >= e.start) & (t < end)] += e.magnitude * sd * (1 if e.symptom == "above" else -1)
            frames.append(pd.DataFrame({"time_s": t, "resource": r, "metric": m, "value": v}))
    return pd.concat(frames, ignore_index=True)

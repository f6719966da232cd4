"""Census of the max-min property: which scenarios of a fixed set miss, and by how much.

The property tests in tests/python/simulation/test_maxmin_property.py stop at the first miss,
and two of them draw a new sample on every local run. A census judges every scenario of a fixed
set the same way (`violations`: the window's demands, max-min, widened to the fluid range where
a scenario is burst-exposed), so a scheduler change is judged by which scenarios it moves:

    python scripts/maxmin_census.py strict cases:bursts cases:split cases:hostlimit cases:open
    python scripts/maxmin_census.py flat pooled --seeds 0:800 -j 2
    python scripts/maxmin_census.py cases:open --window 30:120 -v

Sets:
  flat, pooled  `make_scenario(_RandomPick(seed))` for each seed of --seeds, without or with
                pool trees (the census of docs/cpu-scheduler.md since session 37: 0-799)
  strict        the strict test's sample (`attainable_sample`, 100 scenarios)
  cases:NAME    every file of tests/python/simulation/data/maxmin_NAME (bursts, split,
                hostlimit: strict cases; open: the open misses, each expected to miss);
                a NAME with a / in it is a folder of scenario files

--window FROM:TO judges from FROM s to TO s (the scenario runs to TO); the default is the
tests' 5 s to 60 s, `test_maxmin_steady.py` judges 30:120. Prints a line per miss (its VMs
off and their error in points of a pCPU), a summary per set, and with -v each miss's report.
Scenarios are judged in -j processes; the output is the same whatever -j.

Before session 43 this script drew Hypothesis samples judged by max-min alone (no window
accounting, no fluid range); the figures older notes give for `maxmin_census.py --examples`
come from that version (`git show 6553505:scripts/maxmin_census.py`).
"""

from __future__ import annotations

import argparse
import json
import sys
from multiprocessing import Pool
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "python" / "simulation" / "data"
sys.path.insert(0, str(HERE.parent / "tests" / "python" / "simulation"))
sys.path.insert(0, str(HERE.parent / "tests" / "python"))

import test_maxmin_property as prop  # noqa: E402

from vmtwin.scenario.loading import load_scenario  # noqa: E402

_strict = None  # the strict sample, built once per process


def _scenario(source):
    global _strict
    kind, arg = source
    if kind in ("flat", "pooled"):
        return prop.make_scenario(prop._RandomPick(arg), with_pools=kind == "pooled")
    if kind == "strict":
        if _strict is None:
            _strict = list(prop.attainable_sample())
        return _strict[arg]
    return load_scenario(arg)


def _judge(job):
    label, source, window, overrides = job
    sc = _scenario(source)
    if overrides:
        sc = sc.model_copy(update={"cpu_scheduler": sc.cpu_scheduler.model_copy(update=overrides)})
    if window is not None:
        sc = sc.model_copy(update={"duration": window[1] * 10**9})
    bad, report = prop.violations(sc, window)
    errors = [line.split()[0] + " " + line.split("<--")[0].split()[-1]
              for line in report.splitlines() if line.endswith("<-- off")]
    return label, bad, errors, report, sc.to_yaml() if bad else None


def _jobs(name, seeds):
    if name in ("flat", "pooled"):
        return [(f"{name}-{s}", (name, s)) for s in range(*seeds)]
    if name == "strict":
        return [(f"strict-{i}", ("strict", i)) for i in range(prop.ATTAINABLE_SAMPLE)]
    if name.startswith("cases:"):
        folder = Path(name[6:]) if "/" in name else DATA / f"maxmin_{name[6:]}"
        files = sorted(folder.glob("*.yaml"))
        if not files:
            raise ValueError(f"set {name!r}: no scenario files in {folder}")
        return [(p.stem, ("file", p)) for p in files]
    raise ValueError(f"set {name!r} is not one of flat, pooled, strict, cases:NAME")


def _span(text, what):
    try:
        lo, hi = (int(x) for x in text.split(":"))
    except ValueError:
        raise ValueError(f"{what} {text!r} is not FROM:TO (whole numbers)") from None
    if not 0 <= lo < hi:
        raise ValueError(f"{what} {text!r} needs 0 <= FROM < TO")
    return lo, hi


def _parse(args):
    seeds = _span(args.seeds, "--seeds")
    window = _span(args.window, "--window") if args.window else None
    overrides = {}
    for kv in args.set:
        key, sep, value = kv.partition("=")
        try:
            overrides[key] = json.loads(value) if sep else None
        except json.JSONDecodeError:
            overrides[key] = None
        if overrides[key] is None:
            raise ValueError(f"--set {kv!r} is not KEY=VALUE with a JSON value")
    return seeds, window, overrides, [(name, _jobs(name, seeds)) for name in args.sets]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sets", nargs="+", help="flat, pooled, strict or cases:NAME (see above)")
    ap.add_argument("--seeds", default="0:800", help="FROM:TO, the seeds of flat and pooled (default 0:800)")
    ap.add_argument("--window", help="FROM:TO in s, the judged window (default 5:60)")
    ap.add_argument("-j", type=int, default=1, help="processes (default 1)")
    ap.add_argument("-v", action="store_true", help="print each miss's report")
    ap.add_argument("--dump", type=Path, help="write each missed scenario here as <set>-<name>.yaml")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a cpu_scheduler setting for every scenario, in engine units (ns, bools as "
                         "true/false), e.g. --set demand_probe_margin=0")
    args = ap.parse_args()
    try:
        seeds, window, overrides, sets = _parse(args)
    except ValueError as e:
        ap.error(str(e))  # exit status 2
    with Pool(max(1, args.j)) as pool:
        for name, jobs in sets:
            results = pool.map(_judge, [(label, src, window, overrides) for label, src in jobs], chunksize=1)
            missed = 0
            for label, bad, errors, report, yaml_text in results:
                if not bad:
                    continue
                missed += 1
                print(f"MISS {name} {label}: {', '.join(errors)}", flush=True)
                if args.v:
                    print(report + "\n")
                if args.dump:
                    args.dump.mkdir(parents=True, exist_ok=True)
                    (args.dump / f"{Path(name).name.replace(':', '-')}-{label}.yaml").write_text(yaml_text)
            print(f"{name}: {len(results) - missed} of {len(results)} on their allocation", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Judge max-min misses against the fluid range: is a miss what serving under-share bursts at once costs?

    python scripts/maxmin_census.py --examples 400 --pools --dump DIR
    python scripts/maxmin_fluid_judge.py DIR/*.yaml

For each scenario (a census miss, or any open-loop scenario) prints every VM's CPU as the engine
delivers it, max-min on mean demands (`maxmin_oracle`), and the fluid references of
`fluid_oracle` (under-share bursts served at once, and every VM by shares at each instant), in
points of a pCPU, then whether each VM lies in the range those span (with the property test's
tolerance). The census itself is left alone: Hypothesis mixes the constants of every imported
module into its draws, so importing the fluid oracle there would change the sample it is known by.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "python" / "simulation"))
sys.path.insert(0, str(HERE.parent / "tests" / "python"))

import fluid_oracle  # noqa: E402
import test_maxmin_property as prop  # noqa: E402
from maxmin_oracle import expected_vm_mhz  # noqa: E402

from vmtwin.scenario.loading import load_scenario  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenarios", nargs="+", type=Path)
    args = ap.parse_args()
    misses = 0
    for path in args.scenarios:
        sc = load_scenario(path)
        core = sc.host.core_mhz
        got = prop.measure(sc)
        mean = expected_vm_mhz(sc)

        def tol(x: float) -> float:
            return max(prop.REL_TOL * x, prop.ABS_TOL_PCPU * core)

        exposed = fluid_oracle.burst_exposed(sc)
        first = fluid_oracle.expected_vm_mhz(sc, at_once=fluid_oracle.under_share(sc)) if exposed else mean
        shares = fluid_oracle.expected_vm_mhz(sc) if exposed else mean
        bad, _ = fluid_oracle.judge(sc, mean, got, tol)
        misses += bool(bad)
        print(f"{path}: {'MISS ' + ' '.join(bad) if bad else 'in range'}"
              f"{'' if exposed else ' (not burst-exposed: max-min alone)'}")
        print(f"  {'vm':6} {'engine':>8} {'max-min':>8} {'at once':>8} {'shares':>8}")
        for v in mean:
            print(f"  {v:6} {100 * got[v] / core:8.2f} {100 * mean[v] / core:8.2f} {100 * first[v] / core:8.2f}"
                  f" {100 * shares[v] / core:8.2f}{'  <-- off' if v in bad else ''}")
    print(f"summary: {len(args.scenarios) - misses}/{len(args.scenarios)} in the fluid range")
    return 0


if __name__ == "__main__":
    sys.exit(main())

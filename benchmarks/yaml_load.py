"""YAML loading speed: libyaml with our strict rules against the pure-Python reference loader.

Prints, for each YAML file of the shipped examples (``libra_opt/data/examples``) and for
all of them together, the median time of :func:`libra_opt.io.yaml_util.load_yaml` with
p10-p90 spread, as shipped (libyaml where PyYAML has it) and with the reference loader
alone (what every load used before libyaml), the two interleaved run by run so that load
from other processes weighs on both alike; then the same for
``load_scenario("gpt3_175b_4d")``; then how often each file is read per scenario load.

``gc.collect(); gc.freeze()`` runs after the imports and the warm-up, so a collection of
the import-time objects does not land in a timed run. Usage::

    python benchmarks/yaml_load.py [--repeats 301]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from libra_opt.io import yaml_util  # noqa: E402
from libra_opt.io.example_files import example_names  # noqa: E402
from libra_opt.io.scenario_file import load_scenario  # noqa: E402

EXAMPLES = ROOT / "libra_opt" / "data" / "examples"


def timings(fn: Callable[[], object], repeats: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(median, p10, p90) in ms of ``repeats`` calls with libyaml and as many with the
    reference loader alone, interleaved (so load from other processes hits both alike),
    after two warm-up calls of each."""
    runs: dict[bool, list[float]] = {True: [], False: []}
    for i in range(2 * repeats + 4):
        fast = i % 2 == 0
        with (nullcontext() if fast else reference_loader_only()):
            t0 = time.perf_counter()
            fn()
            dt = (time.perf_counter() - t0) * 1e3
        if i >= 4:
            runs[fast].append(dt)

    def summary(xs: list[float]) -> tuple[float, ...]:
        deciles = statistics.quantiles(xs, n=10)
        return statistics.median(xs), deciles[0], deciles[-1]

    return summary(runs[True]), summary(runs[False])


@contextmanager
def reference_loader_only() -> Iterator[None]:
    """Every YAML document read by the pure-Python reference loader (no libyaml)."""
    saved = yaml_util._C_LOADER
    yaml_util._C_LOADER = None
    try:
        yield
    finally:
        yaml_util._C_LOADER = saved


def fmt(t: tuple[float, ...]) -> str:
    return f"{t[0]:8.3f} ms  [{t[1]:.3f}-{t[2]:.3f}]"


def reads_per_load(name: str) -> dict[str, int]:
    """How often each file is read by one ``load_scenario(name)``."""
    counts: dict[str, int] = {}
    real = yaml_util.read_bytes

    def counting(path, **kw):  # type: ignore[no-untyped-def]
        key = str(Path(path).resolve().relative_to(ROOT / "libra_opt" / "data"))
        counts[key] = counts.get(key, 0) + 1
        return real(path, **kw)

    yaml_util.read_bytes = counting  # type: ignore[assignment]
    try:
        load_scenario(name)
    finally:
        yaml_util.read_bytes = real
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=301, help="timed runs per figure (default 301)")
    args = ap.parse_args(argv)
    files = sorted([*EXAMPLES.rglob("*.yaml"), *EXAMPLES.rglob("*.yml")])
    for f in files:  # warm every path once before freezing
        yaml_util.load_yaml(f)
    load_scenario("gpt3_175b_4d")
    gc.collect()
    gc.freeze()

    print(f"libyaml: {yaml_util._C_LOADER is not None}; {args.repeats} runs per figure, "
          "median [p10-p90]\n")
    print(f"{'load_yaml':48s} {'libyaml (now)':>28s} {'reference only (before)':>30s}  speed-up")
    rows = [(str(f.relative_to(EXAMPLES)), (lambda f=f: yaml_util.load_yaml(f))) for f in files]
    rows.append((f"all {len(files)} example files", lambda: [yaml_util.load_yaml(f) for f in files]))
    rows.append(("load_scenario('gpt3_175b_4d')", lambda: load_scenario("gpt3_175b_4d")))
    sums = [0.0, 0.0]
    for i, (label, fn) in enumerate(rows):
        gc.collect()
        fast, slow = timings(fn, args.repeats)
        print(f"{label:48s} {fmt(fast):>28s} {fmt(slow):>30s}  {slow[0] / fast[0]:5.1f}x")
        if i < len(files):
            sums[0] += fast[0]
            sums[1] += slow[0]
        if i == len(files) - 1:  # less exposed to other processes than one long timed run
            print(f"{'sum of the per-file medians':48s} {sums[0]:8.3f} ms{'':16s} "
                  f"{sums[1]:8.3f} ms{'':18s}{sums[1] / sums[0]:5.1f}x")

    print("\nfiles read per load_scenario (each must be 1):")
    worst = 0
    for name in example_names():
        counts = reads_per_load(name)
        worst = max(worst, *counts.values())
        print(f"  {name:28s} {len(counts)} files, read at most {max(counts.values())}x")
    return 0 if worst == 1 else 1


if __name__ == "__main__":
    sys.exit(main())

"""YAML loading speed: the plain block reader and libyaml with our strict rules, against the
pure-Python reference loader.

Prints, for each YAML file of the shipped examples (``libra_opt/data/examples``) and for
all of them together, the median time of :func:`libra_opt.io.read_yaml` with
p10-p90 spread in three set-ups, interleaved run by run so that load from other processes
weighs on all alike: as shipped (the plain block reader of :mod:`libra_opt.io._yaml.simple`
where a document is in its subset, else libyaml), libyaml alone (the plain reader off), and
the reference loader alone (what every load used before either); then the same for
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
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from libra_opt.io import files  # noqa: E402
from libra_opt.io._yaml import strict as yaml_util  # noqa: E402
from libra_opt.io._yaml.simple import NOT_SIMPLE  # noqa: E402
from libra_opt.io.example_files import example_names  # noqa: E402
from libra_opt.io.scenario_file import load_scenario  # noqa: E402

EXAMPLES = ROOT / "libra_opt" / "data" / "examples"


def timings(fn: Callable[[], object], repeats: int) -> list[tuple[float, ...]]:
    """(median, p10, p90) in ms of ``repeats`` calls in each set-up of :data:`SETUPS`,
    interleaved (so load from other processes hits all alike), after two warm-up calls of
    each."""
    runs: list[list[float]] = [[] for _ in SETUPS]
    for i in range(len(SETUPS) * (repeats + 2)):
        k = i % len(SETUPS)
        with SETUPS[k][1]():
            t0 = time.perf_counter()
            fn()
            dt = (time.perf_counter() - t0) * 1e3
        if i >= 2 * len(SETUPS):
            runs[k].append(dt)

    def summary(xs: list[float]) -> tuple[float, ...]:
        deciles = statistics.quantiles(xs, n=10)
        return statistics.median(xs), deciles[0], deciles[-1]

    return [summary(r) for r in runs]


@contextmanager
def libyaml_only() -> Iterator[None]:
    """The plain block reader off: libyaml (or the reference loader) reads every document."""
    saved = yaml_util.parse_simple
    yaml_util.parse_simple = lambda *args: NOT_SIMPLE  # type: ignore[assignment]
    try:
        yield
    finally:
        yaml_util.parse_simple = saved  # type: ignore[assignment]


@contextmanager
def reference_loader_only() -> Iterator[None]:
    """Every YAML document read by the pure-Python reference loader."""
    saved = yaml_util._C_LOADER
    yaml_util._C_LOADER = None
    try:
        with libyaml_only():
            yield
    finally:
        yaml_util._C_LOADER = saved


SETUPS: list[tuple[str, Callable[[], AbstractContextManager[None]]]] = [
    ("as shipped", nullcontext),
    ("libyaml only", libyaml_only),
    ("reference only", reference_loader_only),
]


def fmt(t: tuple[float, ...]) -> str:
    return f"{t[0]:7.3f} ms [{t[1]:.3f}-{t[2]:.3f}]"


def reads_per_load(name: str) -> dict[str, int]:
    """How often each file is read by one ``load_scenario(name)``."""
    counts: dict[str, int] = {}
    real = files.read_bytes

    def counting(path, **kw):  # type: ignore[no-untyped-def]
        key = str(Path(path).resolve().relative_to(ROOT / "libra_opt" / "data"))
        counts[key] = counts.get(key, 0) + 1
        return real(path, **kw)

    files.read_bytes = counting  # type: ignore[assignment]
    try:
        load_scenario(name)
    finally:
        files.read_bytes = real
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=301, help="timed runs per figure (default 301)")
    args = ap.parse_args(argv)
    files = sorted([*EXAMPLES.rglob("*.yaml"), *EXAMPLES.rglob("*.yml")])
    for f in files:  # warm every path once before freezing
        yaml_util.read_yaml(f)
    load_scenario("gpt3_175b_4d")
    gc.collect()
    gc.freeze()

    print(f"libyaml: {yaml_util._C_LOADER is not None}; {args.repeats} runs per figure, "
          "median [p10-p90]\n")
    print(f"{'read_yaml':44s}" + "".join(f"{name:>27s}" for name, _ in SETUPS)
          + "  speed-up vs libyaml / reference")
    rows = [(str(f.relative_to(EXAMPLES)), (lambda f=f: yaml_util.read_yaml(f))) for f in files]
    rows.append((f"all {len(files)} example files", lambda: [yaml_util.read_yaml(f) for f in files]))
    rows.append(("load_scenario('gpt3_175b_4d')", lambda: load_scenario("gpt3_175b_4d")))
    sums = [0.0] * len(SETUPS)
    for i, (label, fn) in enumerate(rows):
        gc.collect()
        t = timings(fn, args.repeats)
        print(f"{label:44s}" + "".join(f"{fmt(x):>27s}" for x in t)
              + f"  {t[1][0] / t[0][0]:5.1f}x / {t[2][0] / t[0][0]:5.1f}x")
        if i < len(files):
            sums = [a + x[0] for a, x in zip(sums, t, strict=True)]
        if i == len(files) - 1:  # less exposed to other processes than one long timed run
            print(f"{'sum of the per-file medians':44s}"
                  + "".join(f"{a:11.3f} ms{'':14s}" for a in sums)
                  + f"  {sums[1] / sums[0]:5.1f}x / {sums[2] / sums[0]:5.1f}x")

    print("\nfiles read per load_scenario (each must be 1):")
    worst = 0
    for name in example_names():
        counts = reads_per_load(name)
        worst = max(worst, *counts.values())
        print(f"  {name:28s} {len(counts)} files, read at most {max(counts.values())}x")
    return 0 if worst == 1 else 1


if __name__ == "__main__":
    sys.exit(main())

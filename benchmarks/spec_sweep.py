"""A 200-point structural sweep: edited as specs against re-reading YAML per point.

The sweep: GPT-3 175B on the shipped A100 cluster example (``gpt3_175b_a100_cluster``:
1,024 GPUs, a builder fabric, the ``current_2025`` catalog, the ``a100_80gb`` device and the
``gpt3_175b`` model presets), over ``--points`` values of
``workloads.gpt3_175b.parallelism.global_batch_size`` (multiples of the data-parallel
degree): every point regenerates the workload (traffic, compute, memory), builds its
bandwidth problem and solves it.

* **specs** (today's path): ``libra_opt.sweep`` on the loaded scenario; each point is
  ``spec.replace(path, value)`` and a compile in memory, no file read.
* **YAML per point** (the way before specs): each point edits the scenario's YAML
  document, writes it, and loads it again (``load_scenario``: the file, the model, device
  and catalog presets parsed anew), then builds and solves the same problem.

Both run in this process, one after the other; the scenario-building share is also timed
alone (the same points, no solve). Prints the times and their ratios.

Usage::

    python benchmarks/spec_sweep.py [--points 200]
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path

import yaml

import libra_opt as lo
from libra_opt.io.example_files import example_path
from libra_opt.io.scenario_file import load_scenario
from libra_opt.optimize.problem import build_problem, solve

PATH = "workloads.gpt3_175b.parallelism.global_batch_size"


def _values(n: int, dp: int) -> list[int]:
    return [dp * (16 + 2 * k) for k in range(n)]


def _yaml_point(doc: dict, value: int, directory: Path, base: Path) -> lo.Scenario:
    """One point the old way: edit the document, write it beside the example, read it."""
    d = copy.deepcopy(doc)
    d["workloads"][0]["parallelism"]["global_batch_size"] = value
    path = base / "_bench_point.yaml"
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    return load_scenario(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=200)
    args = ap.parse_args()
    src = example_path("gpt3_175b_a100_cluster")
    doc = yaml.safe_load(src.read_text())
    scen = load_scenario(src)
    dp = int(scen.spec.workloads[0].parallelism["dp"])
    values = _values(args.points, dp)

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)  # the example's relative paths: none (presets only)
        # building the scenario alone
        t0 = time.perf_counter()
        for v in values:
            lo.compile(scen.spec.replace(PATH, v))
        build_spec = time.perf_counter() - t0
        t0 = time.perf_counter()
        for v in values:
            _yaml_point(doc, v, base, base)
        build_yaml = time.perf_counter() - t0

        # the whole sweep: build, problem, solve
        t0 = time.perf_counter()
        df = lo.sweep(scen, {PATH: values}, progress=False)
        sweep_spec = time.perf_counter() - t0
        t0 = time.perf_counter()
        objs = []
        for v in values:
            objs.append(solve(build_problem(_yaml_point(doc, v, base, base)),
                              with_baselines=False).objective_value)
        sweep_yaml = time.perf_counter() - t0

    worst = max(abs(a - b) / abs(b) for a, b in zip(df["objective"], objs, strict=True))
    n = len(values)
    print(f"{n} points of {PATH} on gpt3_175b_a100_cluster (same answers: max rel. "
          f"difference {worst:.1e})")
    print(f"scenario per point:  specs {1e3 * build_spec / n:8.2f} ms   YAML re-read "
          f"{1e3 * build_yaml / n:8.2f} ms   ratio {build_yaml / build_spec:5.1f}x")
    print(f"whole sweep:         specs {sweep_spec:8.2f} s    YAML re-read "
          f"{sweep_yaml:8.2f} s    ratio {sweep_yaml / sweep_spec:5.1f}x")


if __name__ == "__main__":
    main()

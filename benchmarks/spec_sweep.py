"""A 200-point structural sweep: points edited as specs against points re-read from YAML.

The sweep: GPT-3 175B on the shipped A100 cluster example (``gpt3_175b_a100_cluster``:
1,024 GPUs, a builder fabric, the ``current_2025`` catalog, the ``a100_80gb`` device and the
``gpt3_175b`` model presets), over ``--points`` values of
``workloads.gpt3_175b.parallelism.global_batch_size`` (multiples of the data-parallel
degree): every point regenerates the workload (traffic, compute, memory), builds its
bandwidth problem and solves it.

* **specs**: ``libra_opt.sweep`` on the loaded scenario. A point is ``spec.replace(path,
  value)`` compiled in memory (no file read), reusing the parts of the base scenario the
  edit leaves unchanged (fabric, prices); checking the axis compiles each value once and
  its point reuses that scenario.
* **YAML per point** (the sweep before specs, its algorithm replayed here): each point
  edits a copy of the scenario's YAML document and loads the scenario from it
  (``scenario_from_dict``: the document validated, the model, device and catalog presets
  read and parsed anew, everything compiled), once when the axis is checked and once when
  the point runs, then builds and solves the same problem.

Both run in this process, one after the other, on the same values; the answers are compared.
Also timed: one scenario per point alone (spec edit + compile from the base against one
document load). Prints the times and their ratios.

Usage::

    python benchmarks/spec_sweep.py [--points 200]
"""

from __future__ import annotations

import argparse
import copy
import time

import yaml

import libra_opt as lo
from libra_opt.io.example_files import example_path
from libra_opt.io.scenario_file import load_scenario, scenario_from_dict
from libra_opt.optimize.problem import build_problem, solve
from libra_opt.scenario.compile import compile

PATH = "workloads.gpt3_175b.parallelism.global_batch_size"


def _from_yaml(doc: dict, value: int, source: str, base_dir: str) -> lo.Scenario:
    """One point the old way: edit a copy of the document and load the scenario from it."""
    d = copy.deepcopy(doc)
    d["workloads"][0]["parallelism"]["global_batch_size"] = value
    return scenario_from_dict(d, source, base_dir)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=200)
    args = ap.parse_args()
    src = example_path("gpt3_175b_a100_cluster")
    doc = yaml.safe_load(src.read_text())
    scen = load_scenario(src)
    dp = int(scen.spec.workloads[0].parallelism["dp"])
    values = [dp * (16 + 2 * k) for k in range(args.points)]
    n = len(values)
    where = (str(src), str(src.parent))

    t0 = time.perf_counter()
    for v in values:
        compile(scen.spec.replace(PATH, v), previous=scen)
    one_spec = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for v in values:
        _from_yaml(doc, v, *where)
    one_yaml = (time.perf_counter() - t0) / n

    t0 = time.perf_counter()
    df = lo.sweep(scen, {PATH: values}, progress=False)
    sweep_spec = time.perf_counter() - t0
    t0 = time.perf_counter()
    for v in values:  # the axis check: every value's scenario built once
        _from_yaml(doc, v, *where)
    objs = [solve(build_problem(_from_yaml(doc, v, *where)), with_baselines=False
                  ).objective_value for v in values]
    sweep_yaml = time.perf_counter() - t0

    assert list(df["status"]) == ["optimal"] * n
    worst = max(abs(a - b) / abs(b) for a, b in zip(df["objective"], objs, strict=True))
    print(f"{n} points of {PATH} on gpt3_175b_a100_cluster (same answers: largest relative "
          f"difference {worst:.1e})")
    print(f"one scenario:  spec edit + compile {1e3 * one_spec:7.2f} ms   YAML document load "
          f"{1e3 * one_yaml:7.2f} ms   ratio {one_yaml / one_spec:4.1f}x")
    print(f"whole sweep:   specs {sweep_spec:6.2f} s ({1e3 * sweep_spec / n:.1f} ms per point)"
          f"   YAML per point {sweep_yaml:6.2f} s ({1e3 * sweep_yaml / n:.1f} ms per point)"
          f"   ratio {sweep_yaml / sweep_spec:4.1f}x")


if __name__ == "__main__":
    main()

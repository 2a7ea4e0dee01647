"""Solver speed: compile and solve time against workload length and fabric dimensionality.

Prints a table and writes ``solver_speed.csv`` and ``solver_speed.png`` to ``--out``.

* Synthetic transformer-like workloads of 10, 100 and 1000 layers (each layer listed
  separately, as in an ASTRA-sim file) on 2- to 8-dimensional fabrics, objective ``perf``
  under a total-bandwidth constraint; and the same for ``perf_per_cost``.
* The 96-layer GPT-3 175B example (``gpt3_175b_4d``) on its 4-D fabric.

Targets (issue "Core"): GPT-3 on 4-D solves (compile + solve) in under 50 ms median, and a
1000-layer workload within 1.2x of a 10-layer one. Ratios are measured in the same run.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from libra_opt.cost.prices import CostModel  # noqa: E402
from libra_opt.fabric.dims import Dim, Fabric  # noqa: E402
from libra_opt.io import load_scenario  # noqa: E402
from libra_opt.optimize.problem import build_problem, solve  # noqa: E402
from libra_opt.scenario.constraints import parse_constraint  # noqa: E402
from libra_opt.scenario.scenario import Scenario  # noqa: E402
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload  # noqa: E402

TOPOLOGIES = ("ring", "fully_connected", "ring", "switch", "ring", "fully_connected", "ring", "switch")


def synthetic_fabric(n_dims: int) -> Fabric:
    sizes = [4, 4, 2, 8, 2, 4, 2, 4][:n_dims]
    return Fabric(tuple(
        Dim(f"d{i}", TOPOLOGIES[i] if i < n_dims - 1 else "switch", sizes[i], f"T{i}")
        for i in range(n_dims)
    ))


def synthetic_workload(n_layers: int, fabric: Fabric) -> Workload:
    """Alternating attention/MLP layers: TP all-reduce on the inner half of the fabric, DP
    all-reduce on the outer half, an all-gather/reduce-scatter pair every 4th layer."""
    n = fabric.n_dims
    half = max(1, n // 2)
    tp = tuple(d.size if i < half else 1 for i, d in enumerate(fabric.dims))
    dp = tuple(d.size if i >= half else 1 for i, d in enumerate(fabric.dims))
    kinds = [
        (Collective("all_reduce", 50e6, "tp"), Collective("all_reduce", 75e6, "dp"), 1.0e-3),
        (Collective("all_reduce", 50e6, "tp"), Collective("all_reduce", 150e6, "dp"), 2.0e-3),
        (Collective("all_gather", 6e6, "tp"), Collective("reduce_scatter", 100e6, "dp"), 1.5e-3),
        (Collective("all_reduce", 50e6, "tp"), Collective("all_reduce", 75e6, "dp"), 1.0e-3),
    ]
    layers = []
    for i in range(n_layers):
        fwd, wg, c = kinds[i % 4]
        layers.append(Layer(f"layer{i}", Phase(c, (fwd,)), Phase(c, (fwd,)), Phase(c, (wg,))))
    return Workload(f"synthetic{n_layers}", tuple(layers), {"tp": tp, "dp": dp})


def synthetic_scenario(n_layers: int, n_dims: int, objective: str) -> Scenario:
    f = synthetic_fabric(n_dims)
    prices = {f"T{i}": ({"link": 2.0 + i} if d.topology != "switch" else
                        {"link": 4.0 + i, "switch": 10.0, "nic": 20.0})
              for i, d in enumerate(f.dims)}
    return Scenario(
        f, CostModel.from_tables(prices), (synthetic_workload(n_layers, f),),
        constraints=(parse_constraint("sum(bw) == 1000", f),), objective=objective,  # type: ignore[arg-type]
        name=f"{n_layers}L-{n_dims}D",
    )


def measure(scen: Scenario, repeats: int) -> dict[str, float]:
    """Median over ``repeats`` fresh builds: compile (build + canonicalisation), solve
    (Clarabel), and wall time of build_problem + solve including the numpy re-check."""
    compile_s, solve_s, wall_s = [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        sol = solve(build_problem(scen), with_baselines=False)
        wall_s.append(time.perf_counter() - t0)
        compile_s.append(sol.solver.compile_s)
        solve_s.append(sol.solver.solve_s)
    return {
        "compile_ms": 1e3 * statistics.median(compile_s),
        "solve_ms": 1e3 * statistics.median(solve_s),
        "compile_plus_solve_ms": 1e3 * statistics.median(c + s for c, s in zip(compile_s, solve_s, strict=True)),
        "wall_ms": 1e3 * statistics.median(wall_s),
        "rel_gap": sol.solver.objective_rel_gap,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/bench", help="output directory")
    parser.add_argument("--repeats", type=int, default=15, help="runs per case (median)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    solve(synthetic_scenario(10, 2, "perf"))  # warm up imports and caches
    rows = []
    for objective in ("perf", "perf_per_cost"):
        for n_dims in range(2, 9):
            for n_layers in (10, 100, 1000):
                scen = synthetic_scenario(n_layers, n_dims, objective)
                r = measure(scen, args.repeats if n_layers < 1000 else max(5, args.repeats // 3))
                rows.append({"case": scen.name, "objective": objective, "dims": n_dims, "layers": n_layers, **r})
                print(f"{objective:14s} {n_dims}D {n_layers:5d} layers: compile {r['compile_ms']:7.2f} ms  "
                      f"solve {r['solve_ms']:6.2f} ms  wall {r['wall_ms']:7.2f} ms", flush=True)
    gpt3 = load_scenario("gpt3_175b_4d")
    r = measure(gpt3, max(args.repeats, 21))
    rows.append({"case": "gpt3_175b_4d (96 layers)", "objective": "perf", "dims": 4,
                 "layers": gpt3.workloads[0].n_layers, **r})
    df = pd.DataFrame(rows)
    df.to_csv(out / "solver_speed.csv", index=False)

    print()
    print(df.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    print()
    print(f"GPT-3 175B, 4-D: compile + solve median {r['compile_plus_solve_ms']:.1f} ms "
          f"(target < 50 ms); wall incl. LP checks and numpy re-check {r['wall_ms']:.1f} ms")
    for objective in ("perf", "perf_per_cost"):
        for n_dims in (2, 4, 8):
            sel = df[(df.objective == objective) & (df.dims == n_dims)].set_index("layers")
            ratio = sel.loc[1000, "compile_plus_solve_ms"] / sel.loc[10, "compile_plus_solve_ms"]
            wall = sel.loc[1000, "wall_ms"] / sel.loc[10, "wall_ms"]
            print(f"{objective:14s} {n_dims}D: 1000 / 10 layers compile+solve ratio {ratio:.2f}x "
                  f"(target <= 1.2x); wall ratio {wall:.2f}x")

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained", sharey=True)
    for ax, objective in zip(axes, ("perf", "perf_per_cost"), strict=True):
        for n_layers, marker in ((10, "o"), (100, "s"), (1000, "^")):
            sel = df[(df.objective == objective) & (df.layers == n_layers)]
            ax.plot(sel.dims, sel.compile_plus_solve_ms, marker=marker, label=f"{n_layers} layers")
        ax.axhline(50, color="grey", ls=":", label="50 ms")
        ax.set_xlabel("fabric dimensions")
        ax.set_title(f"objective {objective}")
        ax.legend(frameon=False)
    axes[0].set_ylabel("compile + solve, median (ms)")
    fig.savefig(out / "solver_speed.png", dpi=130)
    print(f"wrote {out / 'solver_speed.csv'} and {out / 'solver_speed.png'}")
    return 0 if math.isfinite(r["wall_ms"]) else 1


if __name__ == "__main__":
    sys.exit(main())

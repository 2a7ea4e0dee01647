"""Budget sweeps of the shipped workloads on LIBRA's 3-D and 4-D fabrics, and fabric families.

1. **Budget sweeps.** GPT-3 175B, the 1T transformer, Turing-NLG 17B, ResNet-50 and DLRM with
   LIBRA's communicators (see ``libra_case_studies.py``) on the 3-D (ring 16 x fully
   connected 8 x switch 32) and 4-D (ring 4 x fully connected 8 x ring 4 x switch 32) fabrics
   with LIBRA's example prices; the network budget is the only constraint and is swept over
   ``--points`` log-spaced values from $2M to $200M (:func:`libra_opt.explore.sweep.sweep`,
   serial). Every point spends its budget, so each curve is the cost / step-time Pareto front
   of its workload and fabric.
2. **Fabric families.** Each shipped example scenario's fabric re-wired as a rail-optimized
   fat-tree, a rail-only network and LIBRA's multi-dimensional fabric (radix-64 scale-out
   switches), compared at equal bandwidth and at equal scale-out budget
   (:func:`libra_opt.explore.compare.compare_fabrics`); the DeepSeek-V3-like MoE example at
   4,096 GPUs, where rail-only needs one switch tier fewer. The
   scenarios' own constraints are kept: where one pins the bandwidth (``sum(bw) == 1000`` in
   the LIBRA examples) a cheaper fabric cannot turn its saving into bandwidth, and the
   equal-budget rows show the saving as cost only.

Usage::

    python benchmarks/sweeps.py --out out/bench [--points 50]

Writes ``sweeps_budget.csv``, ``sweeps_budget.png``, ``sweeps_families.csv`` and
``sweeps_families.png`` into ``--out`` (nothing elsewhere), and prints the time per solved point.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from libra_case_studies import FABRICS, LABELS, scenario, workload  # noqa: E402

from libra_opt import apply_overrides  # noqa: E402
from libra_opt.errors import InputError  # noqa: E402
from libra_opt.explore.compare import compare_fabrics  # noqa: E402
from libra_opt.explore.sweep import sweep  # noqa: E402
from libra_opt.fabric.builders import as_family, fabric_family  # noqa: E402
from libra_opt.io.examples import load  # noqa: E402
from libra_opt.io.output import confined_path, save_figure_atomic, write_csv_atomic  # noqa: E402

FAMILY_EXAMPLES = ("gpt3_175b_4d", "transformer_1t_4d_ppc", "resnet50_4d_budget", "dlrm_4d",
                   "deepseek_v3_rail_only")
RADIX = 64


def budget_sweeps(points: int) -> tuple[pd.DataFrame, float]:
    """All workloads x fabrics; returns the rows and the wall time of the solves."""
    budgets = np.geomspace(2e6, 2e8, points)
    frames, wall = [], 0.0
    for name in LABELS:
        for fk in FABRICS:
            # the budget is the only constraint (no bandwidth total)
            scen = dataclasses.replace(scenario(workload(name, fk), fk, "perf"), constraints=())
            t0 = time.perf_counter()
            df = sweep(scen, {"budget_usd": budgets}, progress=False)
            wall += time.perf_counter() - t0
            df = df.rename(columns={c: c.replace(f"step_time_{name}_s", "step_time_s")
                                    for c in df.columns})
            frames.append(df.assign(workload=name, fabric=fk))
    out = pd.concat(frames, ignore_index=True)
    lead = ["workload", "fabric", "budget_usd", "status", "weighted_step_time_s",
            "network_cost_usd"]
    return out[lead + [c for c in out.columns if c not in lead]], wall


def plot_budget(df: pd.DataFrame):
    import matplotlib.pyplot as plt

    names = list(LABELS)
    fig, axes = plt.subplots(1, len(names), figsize=(3.3 * len(names), 3.8), layout="constrained")
    for ax, name in zip(axes, names, strict=True):
        for fk, style in zip(FABRICS, ("-", "--"), strict=True):
            sub = df[(df.workload == name) & (df.fabric == fk) & (df.status == "optimal")]
            ax.plot(sub.budget_usd / 1e6, sub.weighted_step_time_s * 1e3, style, label=f"{fk} fabric")
        ax.set_xscale("log")
        ax.set_xticks([2, 10, 50, 200], ["2", "10", "50", "200"])
        ax.minorticks_off()
        ax.set_xlabel("network budget ($M)")
        ax.set_ylabel("step time (ms)")   # each panel has its own scale
        ax.set_title(LABELS[name], fontsize=10)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=2, frameon=False)
    fig.suptitle("Step time vs network budget (each curve is a Pareto front), LIBRA prices")
    return fig


def families() -> pd.DataFrame:
    frames = []
    for ex in FAMILY_EXAMPLES:
        scen = load(ex)
        if ex == "deepseek_v3_rail_only" and scen.fabric.n_npus != 4096:
            # 4,096 GPUs: rail-only saves a tier there (2,048: both need 2 tiers)
            scen = apply_overrides(scen, {"fabric.n_npus": 4096,
                                          "workloads.deepseek_v3.parallelism.dp": 256})
        own = f"scenario ({fabric_family(scen.fabric)})"
        fabrics = {}
        for fam in ("fat_tree", "rail_only", "multi_dim"):
            f = as_family(scen.fabric, fam, RADIX)
            fabrics[own if f == scen.fabric else fam] = f
        fabrics.setdefault(own, scen.fabric)
        df = compare_fabrics(scen, fabrics, modes=("equal_bw", "equal_budget"))
        frames.append(df.assign(scenario=ex, n_npus=scen.fabric.n_npus))
    return pd.concat(frames, ignore_index=True)


def plot_families(df: pd.DataFrame):
    import matplotlib.pyplot as plt

    from libra_opt.report.plots import plot_comparison

    exs = list(dict.fromkeys(df.scenario))
    fig, axes = plt.subplots(2, len(exs), figsize=(4.4 * len(exs), 8.4), layout="constrained",
                             squeeze=False)
    for j, ex in enumerate(exs):
        sub = df[df.scenario == ex].copy()
        sub.attrs["baseline"] = "fat_tree"
        for i, mode in enumerate(("equal_bw", "equal_budget")):
            plot_comparison(sub, axes[i][j], mode=mode,
                            metrics=("network_cost_usd", "network_power_w", "step_time_s"))
            axes[i][j].set_title(f"{ex} ({int(sub.n_npus.iloc[0]):,} NPUs)\n"
                                 f"{mode.replace('_', ' ')}", fontsize=9)
    fig.suptitle("Fabric families relative to the rail-optimized fat-tree (radix 64)")
    return fig


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/bench", help="output directory")
    ap.add_argument("--points", type=int, default=50, help="budgets per sweep")
    args = ap.parse_args(argv)
    if args.points < 2:
        raise InputError(f"--points must be >= 2, got {args.points}", source="<cli>",
                         field="--points")
    out = Path(args.out)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df, wall = budget_sweeps(args.points)
    write_csv_atomic(df, confined_path(out, "sweeps_budget.csv"))
    fig = plot_budget(df)
    save_figure_atomic(fig, confined_path(out, "sweeps_budget.png"), dpi=130)
    plt.close(fig)
    n = len(df)
    print(f"budget sweeps: {n} points ({len(LABELS)} workloads x {len(FABRICS)} fabrics x "
          f"{args.points}) in {wall:.2f} s, {1e3 * wall / n:.2f} ms per point; "
          f"{int((df.status == 'optimal').sum())} optimal")
    t0 = time.perf_counter()
    fam = families()
    write_csv_atomic(fam, confined_path(out, "sweeps_families.csv"))
    fig = plot_families(fam)
    save_figure_atomic(fig, confined_path(out, "sweeps_families.png"), dpi=110)
    plt.close(fig)
    cols = ["scenario", "mode", "fabric", "scaleout_tiers", "step_time_s", "network_cost_usd",
            "cost_reduction_pct", "step_time_change_pct"]
    print(fam[cols].to_string(index=False, float_format=lambda v: f"{v:,.4g}"))
    print(f"fabric families: {len(fam)} rows in {time.perf_counter() - t0:.2f} s; wrote "
          f"{out}/sweeps_*.csv and .png")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except InputError as exc:
        print(f"sweeps: error: {exc.one_line()}", file=sys.stderr)
        sys.exit(2)

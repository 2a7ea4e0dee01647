"""GPT-3 175B on 1,024 A100s: how much scale-up and scale-out bandwidth the step needs when
tensor- and data-parallel communication overlap with compute.

Usage::

    python benchmarks/comm_overlap.py --out out/bench

writes ``comm_overlap.csv`` and ``comm_overlap.png`` into ``--out``.

Setup
-----
* The packaged example ``gpt3_175b_a100_cluster`` (GPT-3 175B, TP 8 x PP 16 x DP 8, global
  batch 1,536, full recomputation, A100 roofline model) in three variants: nothing
  overlapped (``no_overlap``, the example), ``tp_comm_overlap`` (Megatron-LM's asynchronous
  tensor-parallel backward collectives behind their GEMMs) and ``tp_comm_overlap`` +
  ``dp_comm_overlap`` (the gradient reduction behind the last micro-batch's backward
  pass); the two overlap variants run under ``training_loop: overlap``, as they must.
* Sweep 1: the scale-up (NVLink-class) bandwidth from 25 to 600 GB/s per GPU at the
  example's scale-out bound of 100 GB/s; sweep 2: the scale-out bandwidth from 1 to
  100 GB/s at 600 GB/s scale-up. Each point is the numpy step time
  (:func:`libra_opt.traffic.step_time.step_time`).
* The *knee* of a sweep is the smallest bandwidth whose step is within 2 % of the step at
  the sweep's largest bandwidth: below it the link starts to cost real time.
* Then the optimizer: each variant solved under the example's budget (4e7 $) and bounds.

What it shows (measured on this example): the tensor-parallel overlap lowers the
scale-up knee from 434 to 370 GB/s and the step by 1.6 % at the top of the sweep (and by
up to 8 % where scale-up bandwidth is scarce); the data-parallel overlap changes little
here -- with 96 micro-batches per step, the last micro-batch's backward compute on a stage
that is not already hiding a tensor-parallel collective is 0.07 s, too short to hide much of
the 2.9 GB gradient all-reduce -- and the
scale-out knee (14 -> 13 GB/s) is set by the pipeline's point-to-point traffic as much as
by that reduction. The optimum under the example's budget stays at the bounds (600 and
100 GB/s): the budget does not bind.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import bench_results as results
import numpy as np

from libra_opt.io._yaml import read_yaml
from libra_opt.io.examples import example_path
from libra_opt.io.scenario_file import scenario_from_dict
from libra_opt.optimize.problem import solve
from libra_opt.traffic.step_time import step_time
from libra_opt.traffic.timing import TimingModel

VARIANTS = {
    "no overlap": (False, False),
    "tp_comm_overlap": (True, False),
    "tp + dp_comm_overlap": (True, True),
}
KNEE = 0.02


def scenario(tp: bool, dp: bool):
    path = example_path("gpt3_175b_a100_cluster")
    data = read_yaml(path)
    par = data["workloads"][0]["parallelism"]
    par["tp_comm_overlap"], par["dp_comm_overlap"] = tp, dp
    data["training_loop"] = "overlap" if (tp or dp) else "no_overlap"
    return scenario_from_dict(data, str(path), path.parent)


def sweeps(points: int = 60):
    import pandas as pd

    hb = np.geomspace(25.0, 600.0, points)
    so = np.geomspace(1.0, 100.0, points)
    rows = []
    for label, (tp, dp) in VARIANTS.items():
        scen = scenario(tp, dp)
        (wl,) = scen.workloads
        loop = scen.training_loop
        for which, grid in (("scale-up", hb), ("scale-out", so)):
            for x in grid:
                bw = [x, 100.0] if which == "scale-up" else [600.0, x]
                t = step_time(wl, scen.fabric, bw, TimingModel(training_loop=loop)).step_time_s
                rows.append({"variant": label, "sweep": which, "bw_gbps": x, "step_s": t})
    return pd.DataFrame(rows)


def knees(df):
    out = {}
    for (label, which), g in df.groupby(["variant", "sweep"], sort=False):
        g = g.sort_values("bw_gbps")
        best = g.step_s.iloc[-1]
        ok = g[g.step_s <= best * (1 + KNEE)]
        out[(label, which)] = (float(ok.bw_gbps.iloc[0]), float(best))
    return out


def figure(df):
    """Step time against each bandwidth, one curve per overlap variant; curves that coincide
    stay visible (a marker and a line style each)."""
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), layout="constrained")
    styles = (dict(ls="-", marker="o", ms=6), dict(ls="--", marker="s", ms=5),
              dict(ls=":", marker="^", ms=5), dict(ls="-.", marker="x", ms=6))
    for ax, which, fixed in zip(axes, ("scale-up", "scale-out"),
                                ("scale-out 100 GB/s", "scale-up 600 GB/s"), strict=True):
        for i, label in enumerate(VARIANTS):
            g = df[(df.variant == label) & (df.sweep == which)]
            ax.plot(g.bw_gbps, g.step_s, label=label, markevery=max(len(g) // 12, 1),
                    lw=1.4, mfc="none", **styles[i % len(styles)])
        ax.set_xscale("log")
        ticks = [25, 50, 100, 200, 400, 600] if which == "scale-up" else [1, 3, 10, 30, 100]
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel(f"{which} bandwidth per GPU (GB/s); {fixed}")
        ax.set_ylabel("step time (s)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("GPT-3 175B, 1,024 A100 (TP 8, PP 16, DP 8): step time vs bandwidth")
    return fig


def plot(df, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = figure(df)
    fig.savefig(path, dpi=130)
    plt.close(fig)


JOINT_CAP = "bw.hb + 8 * bw.scaleout <= 700"


def figures() -> dict[str, str]:
    """The figures the README quotes: the tensor-parallel overlap's step saving at 600 and
    100 GB/s NVLink (scale-out 100 GB/s), and the optimum without and with it under the
    joint cap ``hb + 8 scaleout <= 700`` GB/s."""
    import dataclasses

    from libra_opt.scenario.constraints import parse_constraint

    out: dict[str, str] = {}
    base, tp = scenario(False, False), scenario(True, False)
    for hb in (600.0, 100.0):
        t0, t1 = (step_time(s.workloads[0], s.fabric, [hb, 100.0],
                            TimingModel(training_loop=s.training_loop)).step_time_s
                  for s in (base, tp))
        out[f"comm_overlap.tp_saving_at_{hb:.0f}_pct"] = f"{100 * (1 - t1 / t0):.1f}"
    for tag, s in (("no_overlap", base), ("tp", tp)):
        capped = dataclasses.replace(
            s, constraints=s.constraints + (parse_constraint(JOINT_CAP, s.fabric),))
        sol = solve(capped)
        out[f"comm_overlap.cap_{tag}_hb_gbps"] = f"{sol.bw_gbps[0]:.1f}"
        out[f"comm_overlap.cap_{tag}_scaleout_gbps"] = f"{sol.bw_gbps[1]:.1f}"
        out[f"comm_overlap.cap_{tag}_step_s"] = f"{sol.objective_value:.2f}"
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out", help="output directory (default out/)")
    results.add_arguments(p)
    args = p.parse_args(argv)
    t_start = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    df = sweeps()
    df.to_csv(out / "comm_overlap.csv", index=False)
    plot(df, out / "comm_overlap.png")
    print(f"knee: smallest bandwidth within {100 * KNEE:g} % of the step at the sweep's top")
    print(f"{'variant':<22}{'sweep':<11}{'knee GB/s':>10}{'step at top s':>15}")
    for (label, which), (knee, best) in knees(df).items():
        print(f"{label:<22}{which:<11}{knee:>10.1f}{best:>15.3f}")
    print("optimum under the example's budget and bounds:")
    for label, (tp, dp) in VARIANTS.items():
        sol = solve(scenario(tp, dp))
        bw = ", ".join(f"{x:.1f}" for x in sol.bw_gbps)
        print(f"  {label:<22} step {sol.objective_value:.3f} s at [{bw}] GB/s, "
              f"network ${sol.network_cost_usd:,.0f}")
    figs = figures()
    print(f"tensor-parallel overlap saves {figs['comm_overlap.tp_saving_at_600_pct']} % of the "
          f"step at 600 GB/s NVLink and {figs['comm_overlap.tp_saving_at_100_pct']} % at 100 GB/s;"
          f" under {JOINT_CAP} the optimum moves from {figs['comm_overlap.cap_no_overlap_hb_gbps']}"
          f" / {figs['comm_overlap.cap_no_overlap_scaleout_gbps']} to "
          f"{figs['comm_overlap.cap_tp_hb_gbps']} / {figs['comm_overlap.cap_tp_scaleout_gbps']} "
          f"GB/s and the step from {figs['comm_overlap.cap_no_overlap_step_s']} s to "
          f"{figs['comm_overlap.cap_tp_step_s']} s")
    results.record_from_args(args, "comm_overlap", figs)
    print(f"wrote {out / 'comm_overlap.csv'} and .png in {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

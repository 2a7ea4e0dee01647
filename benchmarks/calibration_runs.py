"""Calibration on a user's own runs: k = 2 measured runs fit the stack constant, the rest are
predicted (the development table of measured Megatron-DeepSpeed runs, vtrain_dev_a100).

For each model of the table, every pair of its runs plays the user's two measured runs: the
software stack's one constant is fitted on the pair (least squares in log error, as
:func:`libra_opt.explore.calibration.calibrate_stacks` does) and every other run of the model
is predicted with it -- each run is left out of every pair that does not contain it. The
script prints, per model, the average absolute error of those predictions over all pairs
(and the worst pair's), the rank correlation of predicted and measured cost over the
model's runs and the regret of the model's pick, and writes them to ``calibration_runs.csv``,
the errors' distribution to ``calibration_runs.png`` and the figures to
``benchmarks/RESULTS.md``.

The constant scales every kernel time by ``1 / eta`` and the runs time no collective behind
compute, so a run's step time is ``C / eta + D``: ``C`` and ``D`` come from two predictions
of the library (at ``eta`` 1 and 0.5) and are checked against a third; the fit of one pair per
model is checked against :func:`~libra_opt.explore.calibration.calibrate_stacks`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_results as results  # noqa: E402

from libra_opt.explore.calibration import ETA_BOUNDS, calibrate_stacks  # noqa: E402
from libra_opt.explore.ranking import spearman  # noqa: E402
from libra_opt.explore.validation import predict_row  # noqa: E402
from libra_opt.generators.stacks import with_stacks  # noqa: E402
from libra_opt.io.validation import load_validation_table  # noqa: E402

TABLE = "vtrain_dev_a100"
K = 2


def decompose(rows):
    """``(C, D)`` per row: the step time at stack constant ``eta`` is ``C / eta + D``."""
    out = []
    for r in rows:
        dev, stack = r.cluster.device, r.software_stack

        def t(eta, r=r, dev=dev, stack=stack):
            return predict_row(r, with_stacks(dev, {stack: eta})).step_time_s
        t1, t2, t3 = t(1.0), t(0.5), t(0.8)
        c = t2 - t1     # C / 0.5 - C
        d = t1 - c
        assert math.isclose(c / 0.8 + d, t3, rel_tol=1e-9), r.name   # linear in 1 / eta
        out.append((c, d))
    return np.array(out)


def fit_eta(cd: np.ndarray, measured: np.ndarray) -> float:
    """Least squares in log error over the rows, ``eta`` in the library's bounds."""
    def loss(x: float) -> float:
        return float(np.sum(np.log((cd[:, 0] / math.exp(x) + cd[:, 1]) / measured) ** 2))
    lo, hi = (math.log(b) for b in ETA_BOUNDS)
    return math.exp(minimize_scalar(loss, bounds=(lo, hi), method="bounded",
                                    options={"xatol": 1e-12}).x)


def check_against_library(table, rows, pair, eta: float) -> None:
    """The library's fit of the stack constant on the same two rows gives the same eta."""
    chosen = tuple(dataclasses.replace(rows[i], calibrate_stack=True, calibrate=False)
                   for i in pair)
    (cal,) = calibrate_stacks([dataclasses.replace(table, rows=chosen)])
    assert math.isclose(cal.after, eta, rel_tol=1e-5), (cal.after, eta)


def study(table) -> pd.DataFrame:
    sets: dict[str, list] = {}
    for r in table.rows:
        sets.setdefault(r.variant_set, []).append(r)
    records = []
    for name, rows in sets.items():
        cd = decompose(rows)
        meas = np.array([r.published for r in rows])
        cost_meas = meas * np.array([r.parallelism.n_npus / r.parallelism.global_batch_size
                                     for r in rows])
        for n_pair, pair in enumerate(itertools.combinations(range(len(rows)), K)):
            eta = fit_eta(cd[list(pair)], meas[list(pair)])
            if n_pair == 0:
                check_against_library(table, rows, pair, eta)
            pred = cd[:, 0] / eta + cd[:, 1]
            rest = [i for i in range(len(rows)) if i not in pair]
            err = pred[rest] / meas[rest] - 1.0
            cost_pred = pred * cost_meas / meas
            pick = int(np.argmin(cost_pred))
            records.append({
                "set": name, "calibration_runs": " | ".join(rows[i].name for i in pair),
                "eta": eta, "avg_abs_error": float(np.mean(np.abs(err))),
                "worst_abs_error": float(np.max(np.abs(err))),
                "spearman": spearman(list(cost_pred), list(cost_meas)),
                "regret": float(cost_meas[pick] / cost_meas.min() - 1.0),
            })
    return pd.DataFrame(records)


def figures(df: pd.DataFrame) -> dict[str, str]:
    out = {}
    for name, key in (("vtrain_gpt_3p6b_64gpu", "gpt_3p6b"),
                      ("vtrain_gpt_18p4b_256gpu", "gpt_18p4b")):
        d = df[df["set"] == name]
        out[f"calibration_runs.{key}_pairs"] = f"{len(d):,}"
        out[f"calibration_runs.{key}_loo_avg_pct"] = f"{100 * d['avg_abs_error'].mean():.2f}"
        out[f"calibration_runs.{key}_worst_pair_avg_pct"] = \
            f"{100 * d['avg_abs_error'].max():.2f}"
        out[f"calibration_runs.{key}_spearman"] = f"{d['spearman'].mean():.2f}"
        out[f"calibration_runs.{key}_regret_pct"] = f"{100 * d['regret'].mean():.2f}"
        out[f"calibration_runs.{key}_eta_range"] = \
            f"{d['eta'].min():.3f}-{d['eta'].max():.3f}"
    return out


def plot(df: pd.DataFrame, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for name, d in df.groupby("set"):
        ax.hist(100 * d["avg_abs_error"], bins=30, alpha=0.6,
                label=f"{name} ({len(d)} pairs)")
    ax.axvline(5.0, color="k", linestyle="--", linewidth=1, label="target 5 %")
    ax.set_xlabel("average |error| of the other runs, % (stack constant fitted on 2 runs)")
    ax.set_ylabel("pairs of calibration runs")
    ax.set_title("Calibration on two measured runs: prediction error of the rest")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    args, out = results.parse_out_args(__doc__, argv)
    df = study(load_validation_table(TABLE))
    df.to_csv(out / "calibration_runs.csv", index=False)
    plot(df, out / "calibration_runs.png")
    summary = df.groupby("set").agg(pairs=("eta", "size"), eta_min=("eta", "min"),
                                    eta_max=("eta", "max"),
                                    loo_avg_abs_error=("avg_abs_error", "mean"),
                                    worst_pair=("avg_abs_error", "max"),
                                    spearman=("spearman", "mean"), regret=("regret", "mean"))
    with pd.option_context("display.width", 200, "display.float_format", "{:.4f}".format):
        print(summary.to_string())
    results.record_from_args(args, "calibration_runs", figures(df))
    print(f"\nwrote {out / 'calibration_runs.csv'}, {out / 'calibration_runs.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

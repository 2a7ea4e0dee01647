"""In-network reduction (SHARP / NVLink SHARP): the all-reduce gain on 8 GPUs beside the
published NVLS figure, and where the optimizer buys it on a GPT-3 175B cluster.

Usage::

    python benchmarks/in_network.py --out out/bench

writes ``in_network_allreduce.csv``, ``in_network_choice.csv`` and ``in_network.png``.

Part 1: all-reduce bus bandwidth on 8 H100s (NVLink 4, 450 GB/s per GPU). Bus bandwidth is
nccl-tests' ``busbw = (M / T) x 2 (k - 1) / k``. The ``topology_aware`` phase times
(:func:`libra_opt.traffic.topology_aware.phase_time_terms`): a direct all-reduce through
the NVSwitch moves ``2 M (k-1)/k`` per GPU, the in-network one ``M``. With the measured
ring efficiency (370 of 450 GB/s, preset ``h100_nvlink``) for both, the model predicts
``busbw = 1.75 x 370 = 647 GB/s`` with NVLS; NVIDIA reports about 480 GB/s (1.30x, not
1.75x): the switch's reduction does not run at line rate. The implied NVLS efficiency
(480 / (1.75 x 450) = 0.61) is printed; set it as the dimension's efficiency to model
the measured gain.

Part 2: ``gpt3_175b_a100_cluster`` (1,024 A100s, TP 8 on the NVLink domain, PP 16, DP 8
over the scale-out) at several network budgets, with
:func:`libra_opt.explore.in_network.choose_in_network` over {hb, scaleout}: the step time
and network cost of every choice and the one the optimizer buys (catalog
``current_2025``: the SHARP / NVLS premiums are estimates, see the catalog's sources).

Published claim: NVIDIA, NVLink SHARP on DGX H100: about 480 GB/s all-reduce bus bandwidth
vs about 370 GB/s without (about 30% higher).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import bench_results as results
import pandas as pd

from libra_opt import apply_overrides
from libra_opt.explore.in_network import choose_in_network
from libra_opt.fabric.dims import Dim
from libra_opt.io import load_scenario
from libra_opt.traffic.topology_aware import LINE_RATE_PRESETS, phase_time_terms

CLAIM_GBPS = (370.0, 480.0)


def allreduce_table(link_gbps: float = 450.0, k: int = 8) -> pd.DataFrame:
    sw = Dim("nvl", "switch", k, "ScaleUp")
    eta = LINE_RATE_PRESETS["h100_nvlink"].fraction
    m = 1e9  # large message: bandwidth bound
    rows = []
    for inr in (False, True):
        coef, _ = phase_time_terms("all_reduce", "direct", sw, k, m, 0.0, 0.0, None, eta, inr)
        t = coef / link_gbps
        busbw = m / t / 1e9 * 2 * (k - 1) / k
        rows.append({"in_network": inr, "model_busbw_gbps": busbw,
                     "published_busbw_gbps": CLAIM_GBPS[int(inr)]})
    df = pd.DataFrame(rows)
    df["model_gain"] = df.model_busbw_gbps / df.model_busbw_gbps.iloc[0]
    df["published_gain"] = df.published_busbw_gbps / CLAIM_GBPS[0]
    df["implied_nvls_efficiency"] = [eta, CLAIM_GBPS[1] / (2 * (k - 1) / k * link_gbps)]
    return df


def choice_table(budgets) -> pd.DataFrame:
    base = load_scenario("gpt3_175b_a100_cluster")
    rows = []
    for budget in budgets:
        res = choose_in_network(apply_overrides(base, {"budget_usd": budget}))
        for rank, c in enumerate(res.choices):
            rows.append({"budget_usd": budget, "rank": rank, "in_network": ";".join(c.dims) or "none",
                         "feasible": c.feasible, "step_time_s": c.step_time_s,
                         "network_cost_usd": c.network_cost_usd,
                         "bw_hb_gbps": c.bw_gbps[0] if c.feasible else float("nan"),
                         "bw_scaleout_gbps": c.bw_gbps[1] if c.feasible else float("nan"),
                         "bought": rank == 0})
    return pd.DataFrame(rows)


def figure(ar: pd.DataFrame, ch: pd.DataFrame):
    """Left: all-reduce bus bandwidth, model vs published; right: step time over the budget
    for each in-network choice, its axis from zero (the choices differ by a few per cent:
    the legend says by how much)."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5), layout="constrained")
    x = range(2)
    a.bar([i - 0.2 for i in x], ar.model_busbw_gbps, 0.4, label="model (ring efficiency)")
    a.bar([i + 0.2 for i in x], ar.published_busbw_gbps, 0.4, label="published (NVIDIA)")
    a.set_xticks(list(x), ["NVLink, no SHARP", "NVLink SHARP"])
    a.set_ylabel("all-reduce bus bandwidth (GB/s)")
    a.set_title("8 x H100 all-reduce")
    a.set_ylim(bottom=0)
    a.legend(loc="upper left", fontsize=8)
    feasible = ch[ch.feasible]
    none = feasible[feasible.in_network == "none"].set_index("budget_usd").step_time_s
    markers = ("o", "s", "^", "D")
    for i, (name, g) in enumerate(feasible.groupby("in_network")):
        gain = 100 * (1 - g.set_index("budget_usd").step_time_s / none).dropna()
        what = (f", {gain.min():.1f}-{gain.max():.1f} % faster than none"
                if name != "none" and len(gain) else "")
        b.plot(g.budget_usd / 1e6, g.step_time_s, marker=markers[i % len(markers)],
               ls=("-", "--", ":", "-.")[i % 4], label=f"in-network: {name}{what}")
    best = ch[ch.bought]
    b.plot(best.budget_usd / 1e6, best.step_time_s, "k*", ms=12, label="optimizer buys")
    b.set_ylim(0, 1.15 * float(feasible.step_time_s.max()))
    b.set_xlabel("network budget ($M)")
    b.set_ylabel("step time (s)")
    b.set_title("GPT-3 175B, 1,024 A100s: per-dimension choice")
    b.legend(fontsize=8, loc="lower left")
    return fig


def plot(ar: pd.DataFrame, ch: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = figure(ar, ch)
    fig.savefig(path, dpi=130)
    plt.close(fig)


def figures(ar: pd.DataFrame, ch: pd.DataFrame) -> dict[str, str]:
    """The figures the README quotes, formatted as it quotes them."""
    lo_budget = ch.budget_usd.min()
    at = ch[ch.budget_usd == lo_budget]
    none = float(at[at.in_network == "none"].step_time_s.iloc[0])
    best = at[at.bought].iloc[0]
    return {
        "in_network.model_gain": f"{ar.model_gain.iloc[1]:.2f}x",
        "in_network.published_gain": f"{ar.published_gain.iloc[1]:.2f}x",
        "in_network.implied_efficiency": f"{ar.implied_nvls_efficiency.iloc[1]:.2f}",
        "in_network.bought_dims": str(best.in_network).replace(";", " and "),
        "in_network.bought_step_change_pct": f"{100 * (best.step_time_s / none - 1):+.1f}",
        "in_network.bought_budget_musd": f"{lo_budget / 1e6:g}",
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out", help="output directory (default out/)")
    results.add_arguments(p)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ar = allreduce_table()
    ch = choice_table([6e6, 8e6, 1.0e7, 1.2e7, 1.5e7])
    ar.to_csv(out / "in_network_allreduce.csv", index=False)
    ch.to_csv(out / "in_network_choice.csv", index=False)
    plot(ar, ch, out / "in_network.png")
    print(ar.to_string(index=False, float_format=lambda v: f"{v:,.3f}"))
    print(ch.to_string(index=False, float_format=lambda v: f"{v:,.4g}"))
    results.record_from_args(args, "in_network", figures(ar, ch))
    print(f"wrote in_network_*.csv and in_network.png to {out} in "
          f"{time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

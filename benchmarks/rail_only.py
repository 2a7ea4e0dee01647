"""Rail-only vs rail-optimized fat-tree: network cost, power and MoE forwarding overhead.

Reproduces the headline comparison of Wang, Ghobadi et al., "Rail-only: A Low-Cost
High-Performance Network for Training LLMs with Trillion Parameters" (arXiv:2307.12169):
network cost -38..-77 % and power -37..-75 % against a rail-optimized fat-tree, and an
8.2..11.2 % completion-time overhead for MoE all-to-all traffic forwarded through the HB
domain. Clusters of 4,096-32,768 GPUs, HB domains of 8-256 GPUs, radix-64 switches,
400 Gb/s (50 GB/s) per GPU, prices and watts from libra_opt's ``current_2025`` catalog
(override with --catalog / --override).

Usage::

    python benchmarks/rail_only.py --out out/

Writes ``rail_only_cost_power.csv``, ``rail_only_moe_overhead.csv``,
``rail_only_gpt_step.csv`` and ``rail_only.png`` into ``--out``, and the savings map:
``rail_only_savings.csv`` and ``rail_only_savings.png`` — network cost, power and step-time
change of rail-only against the fat-tree at equal bandwidth (the GPT-3-like MoE step) over
GPUs 2,048-32,768, HB domains 8-256 and radix 32, 64 and 128, through
:func:`libra_opt.explore.compare.compare_fabrics` (so any change of the pricing model is
picked up), printing the grid points where rail-only saves nothing or costs more.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import bench_results as results
import numpy as np
import pandas as pd

from libra_opt.cost.prices import cost_coefficients
from libra_opt.errors import InputError
from libra_opt.explore.compare import compare_fabrics
from libra_opt.fabric.builders import rail_only, rail_optimized_fat_tree
from libra_opt.fabric.inventory import dimension_inventory
from libra_opt.io.presets import load_catalog
from libra_opt.traffic.rail import forwarding_overhead
from libra_opt.traffic.timing import TimingModel
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

SAVINGS_NPUS = (2048, 4096, 8192, 16384, 32768)
SAVINGS_RADIX = (32, 64, 128)
PAPER = {"cost_pct": (38.0, 77.0), "power_pct": (37.0, 75.0), "moe_pct": (8.2, 11.2)}
N_NPUS = (4096, 8192, 16384, 32768)
HB_DOMAINS = (8, 16, 32, 64, 128, 256)


def cost_power_grid(cost_model, radix: int, bw_so: float, bw_hb: float) -> pd.DataFrame:
    """Scale-out network cost and power of both fabrics over the (N, HB) grid."""
    rows = []
    for n in N_NPUS:
        for h in HB_DOMAINS:
            out = {"n_npus": n, "hb_domain": h}
            for name, build in (("fat", rail_optimized_fat_tree), ("rail", rail_only)):
                f = build(n, h, radix)
                k = cost_coefficients(f, cost_model)
                inv = dimension_inventory(f, 1)
                usd = k.usd_by_component[1] * bw_so          # link(+optics), switch, nic
                w = k.w_by_component[1] * bw_so
                out[f"{name}_tiers"] = inv.tiers
                out[f"{name}_switches"] = inv.switches
                out[f"{name}_fabric_usd"] = usd[0] + usd[1]  # switches, optics, cables
                out[f"{name}_fabric_w"] = w[0] + w[1]
                out[f"{name}_scaleout_usd"] = usd.sum()      # + NICs
                out[f"{name}_scaleout_w"] = w.sum()
                out[f"{name}_total_usd"] = float(k.usd_per_gbps @ [bw_hb, bw_so])
            for what in ("fabric_usd", "fabric_w", "scaleout_usd", "scaleout_w", "total_usd"):
                out[f"reduction_{what}_pct"] = 100 * (1 - out[f"rail_{what}"] / out[f"fat_{what}"])
            rows.append(out)
    return pd.DataFrame(rows)


def moe_overhead(bw_hb: float, bw_so: float, domains_per_group: int) -> pd.DataFrame:
    """All-to-all over (HB domain x ``domains_per_group`` domains): forwarding overhead."""
    rows = []
    for h in HB_DOMAINS:
        n = h * max(domains_per_group, 2)
        f = rail_only(n, h, None)
        span = (h, domains_per_group)
        for model in ("sequential", "pipelined"):
            r = forwarding_overhead("all_to_all", 1e9, span, f, [bw_hb, bw_so],
                                    TimingModel(model))
            rows.append({"hb_domain": h, "ep_group": h * domains_per_group, "model": model,
                         "fat_tree_s": r["joined_time_s"], "rail_only_s": r["time_s"],
                         "extra_hb_bytes": float(r["extra_bytes"][0]),
                         "overhead_pct": r["overhead_pct"]})
    return pd.DataFrame(rows)


def gpt_workload(n: int, h: int, moe: bool) -> Workload:
    """Illustrative GPT-3-175B-like step: TP = HB domain, DP across rails (one layer x 96).

    Sizes: d_model 12288, 1.81e9 parameters per layer, bf16, global batch 1536 x 2048 tokens;
    compute at 50 % of 989 TFLOP/s. The MoE variant adds one all-to-all of the layer's
    activations over (HB domain x 8 domains) in forward and in backward (expert parallelism).
    """
    dp = n // h
    tokens = 1536 * 2048 / dp                      # per data-parallel replica
    layer_params = 12 * 12288**2
    fwd_s = 2 * layer_params * tokens / h / (0.5 * 989e12)
    act_bytes = tokens * 12288 * 2
    tp = Collective("all_reduce", act_bytes, "tp")
    colls_f = [tp, tp]
    colls_b = [tp, tp]
    groups = {"tp": (h, 1), "dp": (1, dp)}
    if moe:
        groups["ep"] = (h, 8)
        a2a = Collective("all_to_all", act_bytes, "ep")
        colls_f.append(a2a)
        colls_b.append(a2a)
    wg = Collective("all_reduce", layer_params / h * 2, "dp")
    layer = Layer("block", Phase(fwd_s, tuple(colls_f)), Phase(fwd_s, tuple(colls_b)),
                  Phase(fwd_s, (wg,)), count=96)
    return Workload("gpt3_moe" if moe else "gpt3", (layer,), groups)


def gpt_step(cost_model, radix: int, bw_hb: float, bw_so: float) -> pd.DataFrame:
    frames = []
    for n, h in ((4096, 8), (16384, 64)):
        fabrics = {"fat_tree": rail_optimized_fat_tree(n, h, radix), "rail_only": rail_only(n, h, radix)}
        for moe in (False, True):
            for model in ("pipelined", "sequential"):
                df = compare_fabrics(gpt_workload(n, h, moe), fabrics, cost_model=cost_model,
                                     bw_gbps=[bw_hb, bw_so],
                                     timing=TimingModel(model, traffic_model="native"))
                df.insert(0, "collective_model", model)
                df.insert(0, "workload", "gpt3_moe" if moe else "gpt3")
                df.insert(0, "hb_domain", h)
                df.insert(0, "n_npus", n)
                frames.append(df)
    return pd.concat(frames, ignore_index=True)


def savings_grid(cost_model, bw_hb: float, bw_so: float) -> pd.DataFrame:
    """Rail-only vs fat-tree at equal bandwidth over (radix, GPUs, HB domain).

    Cost and power reductions are of the whole network (HB domain, NICs and scale-out) and
    of the scale-out alone; the step-time change is that of the MoE GPT-3-like step
    (cross-rail all-to-all forwarded through the HB domain). Everything comes from
    :func:`compare_fabrics`, so the pricing is whatever :mod:`libra_opt.cost` does today.
    """
    rows = []
    for radix in SAVINGS_RADIX:
        for n in SAVINGS_NPUS:
            for h in HB_DOMAINS:
                try:
                    fabrics = {"fat_tree": rail_optimized_fat_tree(n, h, radix),
                               "rail_only": rail_only(n, h, radix)}
                except InputError:  # a Clos deeper than 3 tiers is not modelled
                    rows.append({"radix": radix, "n_npus": n, "hb_domain": h})
                    continue
                df = compare_fabrics(gpt_workload(n, h, True), fabrics, cost_model=cost_model,
                                     bw_gbps=[bw_hb, bw_so], modes=["equal_bw"],
                                     timing=TimingModel("sequential", traffic_model="native"),
                                     ).set_index("fabric")
                ft, ro = df.loc["fat_tree"], df.loc["rail_only"]
                so_red = 100 * (1 - ro.scaleout_cost_usd / ft.scaleout_cost_usd)
                rows.append({
                    "radix": radix, "n_npus": n, "hb_domain": h,
                    "fat_tiers": int(ft.scaleout_tiers), "rail_tiers": int(ro.scaleout_tiers),
                    "fat_scaleout_switches": int(ft.scaleout_switches),
                    "rail_scaleout_switches": int(ro.scaleout_switches),
                    "cost_reduction_pct": float(ro.cost_reduction_pct),
                    "scaleout_cost_reduction_pct": float(so_red),
                    "power_reduction_pct": float(ro.power_reduction_pct),
                    "step_time_change_pct": float(ro.step_time_change_pct),
                })
    out = pd.DataFrame(rows)
    num = [c for c in out.select_dtypes("number").columns if c.endswith("_pct")]
    out[num] = out[num].mask(out[num].abs() < 1e-9, 0.0)  # round-off of equal costs
    for c in ("fat_tiers", "rail_tiers", "fat_scaleout_switches", "rail_scaleout_switches"):
        out[c] = out[c].astype("Int64")
    return out


SAVINGS_METRICS = (("cost_reduction_pct", "network cost reduction (%)"),
                   ("power_reduction_pct", "network power reduction (%)"),
                   ("step_time_change_pct", "MoE step-time change (%)"))


def savings_figure(sav: pd.DataFrame):
    """Heatmaps: one row per metric, one column per radix; HB domain x GPUs; every colour
    bar labelled with its quantity and unit."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(SAVINGS_METRICS), len(SAVINGS_RADIX),
                             figsize=(4.6 * len(SAVINGS_RADIX), 3.6 * len(SAVINGS_METRICS)),
                             squeeze=False, layout="constrained")
    for i, (col, title) in enumerate(SAVINGS_METRICS):
        lim = max(float(np.nanmax(sav[col].abs().to_numpy())), 1e-9)
        for j, radix in enumerate(SAVINGS_RADIX):
            ax = axes[i][j]
            table = sav[sav.radix == radix].pivot(index="hb_domain", columns="n_npus", values=col)
            im = ax.imshow(table.to_numpy(), cmap="RdBu" if col != "step_time_change_pct"
                           else "RdBu_r", vmin=-lim, vmax=lim, aspect="auto", origin="lower")
            for (r, c), v in np.ndenumerate(table.to_numpy()):
                if not np.isfinite(v):
                    ax.text(c, r, "n/a", ha="center", va="center", fontsize=6, color="grey")
                    continue
                ax.text(c, r, f"{v:.0f}" if abs(v) >= 1 or v == 0 else f"{v:.1f}",
                        ha="center", va="center", fontsize=7,
                        color="white" if abs(v) > 0.6 * lim else "black")
            ax.set_xticks(range(table.shape[1]), [f"{c // 1024}k" for c in table.columns])
            ax.set_yticks(range(table.shape[0]), table.index)
            ax.set_xlabel("cluster size (GPUs)")
            ax.set_ylabel("HB domain (GPUs)")
            ax.set_title(f"{title}, radix {radix}", fontsize=9)
            fig.colorbar(im, ax=ax, shrink=0.8).set_label(title, fontsize=8)
    fig.suptitle("Rail-only vs rail-optimized fat-tree at equal bandwidth "
                 "(cost/power: > 0 saves; step time: > 0 slower)", fontsize=10)
    return fig


def plot_savings(sav: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = savings_figure(sav)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def print_savings(sav: pd.DataFrame) -> None:
    print("\nSavings map (rail_only_savings.csv / .png): rail-only vs fat-tree at equal bandwidth")
    for radix, sub in sav.groupby("radix"):
        print(f"  radix {radix:3d}: network cost {_range(sub.cost_reduction_pct)} %, "
              f"power {_range(sub.power_reduction_pct)} %, "
              f"MoE step time {_range(sub.step_time_change_pct)} %")
    cols = ["radix", "n_npus", "hb_domain", "fat_tiers", "rail_tiers", "fat_scaleout_switches",
            "rail_scaleout_switches", "cost_reduction_pct", "scaleout_cost_reduction_pct",
            "power_reduction_pct"]
    for what, sel in (("0 %", sav.cost_reduction_pct == 0),
                      ("negative", sav.cost_reduction_pct < 0)):
        print(f"\n  {int(sel.sum())} of {len(sav)} points where the network-cost saving is {what}"
              + (":" if sel.any() else ""))
        if sel.any():
            with pd.option_context("display.width", 200, "display.float_format", "{:.2f}".format):
                print(sav.loc[sel, cols].to_string(index=False))
    bad_power = sav[sav.power_reduction_pct <= 0]
    print(f"\n  {len(bad_power)} points where the power saving is 0 % or negative "
          f"({int((bad_power.power_reduction_pct < 0).sum())} negative)")
    skipped = sav[sav.cost_reduction_pct.isna()]
    if len(skipped):
        print(f"  {len(skipped)} points skipped: the fat-tree would need more than 3 tiers "
              f"(radix {', '.join(str(r) for r in sorted(set(skipped.radix)))}, "
              f"{', '.join(f'{n:,}' for n in sorted(set(skipped.n_npus)))} GPUs)")
    same = sav[sav.fat_tiers == sav.rail_tiers]
    print(f"  {len(same)} points where both fabrics have the same number of scale-out tiers "
          "(a tier step not crossed)")


def figure(grid: pd.DataFrame, moe: pd.DataFrame):
    """Scale-out cost and power reduction maps (labelled colour bars) and the MoE overhead."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), layout="constrained")
    for ax, col, title, paper in (
        (axes[0], "reduction_fabric_usd_pct", "Scale-out cost reduction vs fat-tree (%)",
         PAPER["cost_pct"]),
        (axes[1], "reduction_fabric_w_pct", "Scale-out power reduction vs fat-tree (%)",
         PAPER["power_pct"]),
    ):
        table = grid.pivot(index="hb_domain", columns="n_npus", values=col)
        im = ax.imshow(table.to_numpy(), cmap="viridis", vmin=0, vmax=80, aspect="auto",
                       origin="lower")
        for (i, j), v in np.ndenumerate(table.to_numpy()):
            ax.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=8,
                    color="white" if v < 50 else "black")
        ax.set_xticks(range(table.shape[1]), [f"{c:,}" for c in table.columns])
        ax.set_yticks(range(table.shape[0]), table.index)
        ax.set_xlabel("cluster size (GPUs)")
        ax.set_ylabel("HB domain size (GPUs)")
        ax.set_title(f"{title}\npaper: {paper[0]:.0f}-{paper[1]:.0f} %", fontsize=10)
        fig.colorbar(im, ax=ax, shrink=0.8).set_label(title, fontsize=8)
    ax = axes[2]
    for model, sub in moe.groupby("model"):
        ax.plot(sub.hb_domain, sub.overhead_pct, marker="o", label=f"{model} collective model")
    ax.axhspan(*PAPER["moe_pct"], color="grey", alpha=0.15, label="paper range")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("HB domain size (GPUs)")
    ax.set_ylabel("all-to-all time overhead (%)")
    ax.set_title("MoE all-to-all forwarded through the HB domain", fontsize=10)
    ax.legend(fontsize=7, frameon=False)
    return fig


def plot(grid: pd.DataFrame, moe: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = figure(grid, moe)
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _span(series, fmt: str = "{:.1f}") -> str:
    """``'27.5-55.0'``: the smallest and largest value."""
    lo, hi = float(min(series)), float(max(series))
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else \
        f"{fmt.format(lo)}-{fmt.format(hi)}"


def figures(grid: pd.DataFrame, sav: pd.DataFrame) -> dict[str, str]:
    """The figures the README quotes, formatted as it quotes them: the saving without and
    with NICs where rail-only removes a tier, and where it is a loss."""
    fewer = grid[grid.rail_tiers < grid.fat_tiers]
    loss = sav[sav.cost_reduction_pct < 0]
    return {
        "rail_only.fabric_cost_saving_pct": _span(fewer.reduction_fabric_usd_pct),
        "rail_only.fabric_power_saving_pct": _span(fewer.reduction_fabric_w_pct),
        "rail_only.scaleout_cost_saving_pct": _span(fewer.reduction_scaleout_usd_pct),
        "rail_only.scaleout_power_saving_pct": _span(fewer.reduction_scaleout_w_pct),
        "rail_only.loss_pct": _span(-loss.cost_reduction_pct, "{:.0f}"),
        "rail_only.loss_power_pct": _span(-loss.power_reduction_pct, "{:.0f}"),
        "rail_only.loss_gpus": _span(loss.n_npus, "{:,.0f}"),
        "rail_only.loss_hb_domain": _span(loss.hb_domain, "{:.0f}"),
        "rail_only.loss_radix": _span(loss.radix, "{:.0f}"),
        "rail_only.moe_step_overhead_pct": _span(sav.step_time_change_pct.dropna()),
        **{f"rail_only.loss_r{r}_{what}_pct": f"{-float(g[col].min()):.0f}"
           for r, g in loss.groupby("radix")
           for what, col in (("cost", "cost_reduction_pct"), ("power", "power_reduction_pct"))},
    }


def _range(series: pd.Series) -> str:
    return f"{series.min():5.1f} .. {series.max():5.1f}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out", help="output directory (default out/)")
    p.add_argument("--catalog", default="current_2025", help="price catalog name or path")
    p.add_argument("--override", action="append", default=[],
                   help="catalog override path=value, e.g. parts.osfp_400g_sr4.price_usd=500")
    p.add_argument("--radix", type=int, default=64)
    p.add_argument("--bw-scaleout-gbps", type=float, default=50.0, help="per GPU (400 Gb/s)")
    p.add_argument("--bw-hb-gbps", type=float, default=450.0, help="per GPU (NVLink 4)")
    results.add_arguments(p)
    args = p.parse_args(argv)
    overrides: dict[str, object] = {}
    for item in args.override:
        key, _, value = item.partition("=")
        try:
            overrides[key] = float(value) if value else None
        except ValueError:
            overrides[key] = value
    t0 = time.perf_counter()
    cat = load_catalog(args.catalog, overrides)
    cm = cat.cost_model()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    grid = cost_power_grid(cm, args.radix, args.bw_scaleout_gbps, args.bw_hb_gbps)
    moe = moe_overhead(args.bw_hb_gbps, args.bw_scaleout_gbps, 8)
    gpt = gpt_step(cm, args.radix, args.bw_hb_gbps, args.bw_scaleout_gbps)
    grid.to_csv(out / "rail_only_cost_power.csv", index=False)
    moe.to_csv(out / "rail_only_moe_overhead.csv", index=False)
    gpt.to_csv(out / "rail_only_gpt_step.csv", index=False)
    plot(grid, moe, out / "rail_only.png")
    sav = savings_grid(cm, args.bw_hb_gbps, args.bw_scaleout_gbps)
    sav.to_csv(out / "rail_only_savings.csv", index=False)
    plot_savings(sav, out / "rail_only_savings.png")

    print(f"Prices ({cat.name}, $ and W per GB/s; 1 GB/s = 8 Gb/s):")
    for tier in ("ScaleOut", "ScaleUp"):
        for comp, part in cat.tiers[tier].items():
            pt = cat.parts[part]
            print(f"  {tier:9s} {comp:11s} {pt.usd_per_gbps:8.3f} $  {pt.w_per_gbps or 0:6.3f} W"
                  f"  {pt.model}  [{pt.date}]")
    print(f"Radix {args.radix}; scale-out {args.bw_scaleout_gbps:g} GB/s and HB "
          f"{args.bw_hb_gbps:g} GB/s per GPU\n")
    cols = ["n_npus", "hb_domain", "fat_tiers", "rail_tiers", "fat_switches", "rail_switches",
            "reduction_fabric_usd_pct", "reduction_fabric_w_pct", "reduction_scaleout_usd_pct",
            "reduction_scaleout_w_pct", "reduction_total_usd_pct"]
    with pd.option_context("display.width", 200, "display.float_format", "{:.1f}".format):
        print(grid[cols].rename(columns=lambda c: c.replace("reduction_", "red_")).to_string(index=False))
    fewer = grid[grid.rail_tiers < grid.fat_tiers]
    print("\nReduction vs rail-optimized fat-tree (%), ours | paper:")
    print(f"  network cost  (switches+optics+cables) {_range(fewer.reduction_fabric_usd_pct)} | "
          f"{PAPER['cost_pct'][0]:.0f} .. {PAPER['cost_pct'][1]:.0f}")
    print(f"  network power (switches+optics)        {_range(fewer.reduction_fabric_w_pct)} | "
          f"{PAPER['power_pct'][0]:.0f} .. {PAPER['power_pct'][1]:.0f}")
    print(f"  with NICs counted: cost {_range(fewer.reduction_scaleout_usd_pct)}, power "
          f"{_range(fewer.reduction_scaleout_w_pct)}")
    print(f"  ({len(fewer)} of {len(grid)} grid points where rail-only needs fewer tiers; the "
          f"other {len(grid) - len(fewer)} have equal tiers and 0 % reduction)")
    seq = moe[moe.model == "sequential"].overhead_pct
    pip = moe[moe.model == "pipelined"].overhead_pct
    print(f"\nMoE all-to-all forwarding overhead (%), ours | paper: sequential {_range(seq)}, "
          f"pipelined {_range(pip)} | {PAPER['moe_pct'][0]} .. {PAPER['moe_pct'][1]}")
    eq = gpt[gpt["mode"] == "equal_bw"]
    print("\nGPT-3-like step at equal bandwidth (step_time_change_pct of rail-only):")
    sub = eq[eq.fabric == "rail_only"][["n_npus", "hb_domain", "workload", "collective_model",
                                        "step_time_s", "step_time_change_pct",
                                        "cost_reduction_pct"]]
    with pd.option_context("display.width", 200, "display.float_format", "{:.3g}".format):
        print(sub.to_string(index=False))
    print_savings(sav)
    figs = figures(grid, sav)
    print("\nHeadline, both ways: rail-only's scale-out switches, optics and cables cost "
          f"{figs['rail_only.fabric_cost_saving_pct']}% less than the rail-optimized fat-tree "
          "where a Clos tier is removed, but that leaves out the NICs; counting the whole "
          f"scale-out network (NICs included) the saving is "
          f"{figs['rail_only.scaleout_cost_saving_pct']}%. And it is a loss of "
          f"{figs['rail_only.loss_pct']}% of network cost at {figs['rail_only.loss_gpus']} GPUs "
          f"with {figs['rail_only.loss_hb_domain']}-GPU HB domains (radix "
          f"{figs['rail_only.loss_radix']}): tiny rails each buy a whole switch.")
    if args.radix == 64 and not args.override and args.catalog == "current_2025":
        results.record_from_args(args, "rail_only", figs)
    print(f"\nwrote {out}/rail_only_*.csv, rail_only.png and rail_only_savings.png in {time.perf_counter() - t0:.1f} s")
    assert np.isfinite(grid.select_dtypes("number").to_numpy()).all()
    return 0


if __name__ == "__main__":
    sys.exit(main())

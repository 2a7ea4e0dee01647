"""In-network optimizer (LuWu-style model-in-network data parallelism) vs ZeRO-3 on the same
fabric, for GPT-3 175B, beside LuWu's reported 3.98x.

Usage::

    python benchmarks/luwu.py --out out/bench

writes ``luwu.csv`` and ``luwu.png``.

Setup: GPT-3 175B (preset ``gpt3_175b``, Brown et al. 2020: 96 layers, h 12288) on 128
H100s (16 nodes of 8; a rail-optimized fat-tree, catalog ``current_2025``), TP 8 on the
NVLink domain, PP 2 and DP 8 (LuWu's "8 workers") on the scale-out network, micro-batch 1,
global batch 256, full recomputation. Data-parallel options
(``parallelism.zero`` / ``parallelism.dp_mode``):

* ``zero0`` (reference): plain all-reduce, full optimizer state on every GPU (does not fit:
  reported with its memory, not a feasible configuration);
* ``zero3``: FSDP -- parameters all-gathered in forward and backward and gradients
  reduce-scattered, every micro-batch (32 per step);
* ``zero1`` (reference): gradients reduce-scattered and parameters all-gathered once per step;
* ``in_network_optimizer``: gradients pushed and parameters pulled once per step through
  in-network aggregators holding the optimizer state
  (:mod:`libra_opt.generators.in_network_optimizer`);
* ``in_network_optimizer_host_paging`` (LuWu's out-of-core variant): the aggregators only
  sum gradients; each GPU keeps its optimizer state in host memory and pages it over its
  PCIe Gen5 x16 link (64 GB/s per direction) every step, running the update itself.

The aggregators are priced (:mod:`libra_opt.cost.aggregators`, estimated prices): their
ingress ports per GB/s of scale-out bandwidth are in the network cost (so the $5M budget
buys them too), their state memory is a fixed cost (column ``aggregator_state_usd``).

Each is evaluated at NVLink 450 GB/s and a scale-out of 100 Gb/s and 200 Gb/s per GPU
(12.5 / 25 GB/s: LuWu's bandwidths), and re-optimized under the same $5M network budget
(bounds NVLink 100-600 GB/s, scale-out 12.5-100 GB/s). Columns: step time, memory per GPU
(most loaded pipeline stage), and bytes each GPU sends per step on each dimension.

Published claim (arXiv:2409.00918, abstract): LuWu outperforms the state-of-the-art
(model-sharded data-parallel) training system by 3.98x on a 175B model with 8 workers at
100 Gb/s (or 200 Gb/s) inter-GPU bandwidth.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np
import pandas as pd

from libra_opt.generators.generator import generate_workload
from libra_opt.io.presets import load_device, load_model
from libra_opt.io.scenario_file import scenario_from_dict
from libra_opt.optimize.problem import solve
from libra_opt.scenario.evaluate import evaluate
from libra_opt.traffic.collectives import hierarchical_traffic_bytes
from libra_opt.traffic.workload import Phase, Workload, walk_collectives

CLAIM_SPEEDUP = 3.98
MODEL, DEVICE = "gpt3_175b", "h100_sxm"
MAPPING = {"tp": ["hb"], "pp": {"scaleout": 2}, "dp": {"scaleout": 8}}
BASE = {"tp": 8, "pp": 2, "dp": 8, "micro_batch_size": 1, "global_batch_size": 256,
        "recompute": "full"}
MODES = {"zero0": {"zero": 0}, "zero3": {"zero": 3}, "zero1": {"zero": 1},
         "in_network_optimizer": {"dp_mode": "in_network_optimizer"},
         "in_network_optimizer_host_paging": {"dp_mode": "in_network_optimizer",
                                              "optimizer_state": "host_paging"}}
BUDGET_USD = 5e6
HB_GBPS = 450.0

NOTE = """\
Why this differs from LuWu's 3.98x:
* Baseline. LuWu's baseline is a real model-sharded DP system on a commodity cluster, whose
  losses are collective/compute interference and "heavy CPU optimizer overhead" (its abstract);
  ours is analytical ZeRO-3 with fast on-GPU Adam and no offload, and TP 8 + PP 2 shrink the
  bytes each GPU must gather 16x. Our ZeRO-3 pays its gathers once per micro-batch
  (32 per step here), so its ratio grows with the micro-batch count, not with CPU overhead.
* Bandwidths. LuWu's 100/200 Gb/s is the inter-GPU bandwidth of an 8-worker commodity
  cluster; here it is per GPU on the scale-out dimension, beside 450 GB/s NVLink and TP 8
  inside each node; re-optimizing the fabric under a budget buys more scale-out bandwidth
  and shrinks the gap.
* Overlap. Both are modelled with no compute/communication overlap (LIBRA's no_overlap);
  real ZeRO-3 prefetches the next layer's parameters behind compute, and LuWu's measured
  gain includes its own scheduling of push, pull and in-network update; neither is
  credited here (the in-network update is assumed hidden, the GPU's optimizer step gone).
* Memory. Our in-network optimizer keeps bf16 weights and gradients on the GPU (LuWu
  streams parameters from the network node). Its aggregators are priced at estimated
  prices (ports with the network, state memory as a fixed cost); the paging variant moves
  the state to host memory and adds the PCIe transfer (12 bytes per parameter each way,
  overlapped with the GPU's update) to the step.
"""


def _scenario(par: dict) -> dict:
    return {
        "name": "luwu",
        "fabric": {"builder": "fat_tree", "n_npus": 128, "hb_domain": 8, "switch_radix": 64},
        "cost_model": {"catalog": "current_2025"},
        "workloads": [{"name": "gpt3_175b", "model": MODEL, "device": DEVICE,
                       "parallelism": par, "mapping": MAPPING, "check_memory": False}],
        "constraints": {"bounds": {"hb": [100, 600], "scaleout": [12.5, 100]},
                        "budget_usd": BUDGET_USD},
        "objective": "perf",
    }


def traffic_per_step_bytes(workload: Workload, n_dims: int) -> np.ndarray:
    """Bytes one NPU sends per step on each dimension (hierarchical model)."""
    out = np.zeros(n_dims)
    for c in walk_collectives(workload):
        out += c.count * hierarchical_traffic_bytes(c.kind, c.collective.size_bytes, c.span)
    return out


def table() -> pd.DataFrame:
    rows = []
    for mode, extra in MODES.items():
        par = {**BASE, **extra}
        scen = scenario_from_dict(_scenario(par), f"<luwu {mode}>")
        gen = generate_workload(load_model(MODEL), par, load_device(DEVICE), scen.fabric,
                                mapping=MAPPING, check_memory=False)
        wl = scen.workloads[0]
        traffic = traffic_per_step_bytes(wl, scen.fabric.n_dims)
        dp = traffic_per_step_bytes(_dp_only(wl), scen.fabric.n_dims)
        sol = solve(scen)
        agg = scen.cost_model.aggregators
        opt_layer = next(layer for layer in wl.layers if layer.name == "optimizer_step")
        for label, bw in (("100 Gb/s", [HB_GBPS, 12.5]), ("200 Gb/s", [HB_GBPS, 25.0]),
                          ("optimized", list(sol.bw_gbps))):
            ev = evaluate(scen, bw)
            rows.append({
                "dp_mode": mode, "fabric": label, "bw_hb_gbps": bw[0], "bw_scaleout_gbps": bw[1],
                "network_cost_usd": ev.cost.network_cost_usd,
                "step_time_s": ev.weighted_step_time_s,
                "memory_per_gpu_gb": gen.memory.total_bytes / 1e9,
                "optimizer_state_gb": gen.memory.optimizer_bytes / 1e9,
                "fits_80gb": gen.memory.fits,
                "traffic_hb_gb": traffic[0] / 1e9, "traffic_scaleout_gb": traffic[1] / 1e9,
                "dp_traffic_scaleout_gb": dp[1] / 1e9,
                "host_memory_per_gpu_gb": gen.memory.host_bytes / 1e9,
                "optimizer_step_s": opt_layer.forward.compute_s,
                "aggregator_port_usd": 0.0 if agg is None else sum(
                    agg.port_usd(scen.fabric.n_npus, bw[scen.fabric.index(d)])
                    for d in agg.dims),
                "aggregator_state_usd": 0.0 if agg is None else agg.state_usd,
            })
    df = pd.DataFrame(rows)
    ref = df[df.dp_mode == "zero3"].set_index("fabric").step_time_s
    df["speedup_vs_zero3"] = [ref[f] / t for f, t in zip(df.fabric, df.step_time_s, strict=True)]
    return df


def _dp_only(wl: Workload) -> Workload:
    """The workload restricted to its data-parallel group's collectives."""

    def keep(p: Phase) -> Phase:
        return Phase(0.0, tuple(c for c in p.collectives if c.group in ("dp", "edp")))

    layers = tuple(dataclasses.replace(layer, forward=keep(layer.forward),
                                       input_grad=keep(layer.input_grad),
                                       weight_grad=keep(layer.weight_grad))
                   for layer in wl.layers)
    return dataclasses.replace(wl, layers=layers)


def figure(df: pd.DataFrame):
    """Step time, memory per GPU and data-parallel traffic of each option (bars from zero,
    linear axes, plain tick labels, a legend on every panel)."""
    import matplotlib.pyplot as plt
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(17, 5.2), layout="constrained")
    fabrics = list(dict.fromkeys(df.fabric))
    modes = list(MODES)
    w = 0.8 / len(modes)
    for i, mode in enumerate(modes):
        g = df[df.dp_mode == mode].set_index("fabric").loc[fabrics]
        xs = [j + (i - (len(modes) - 1) / 2) * w for j in range(len(fabrics))]
        a.bar(xs, g.step_time_s, w, label=mode)
        c.bar(xs, g.dp_traffic_scaleout_gb, w, label=mode)
    a.set_xticks(range(len(fabrics)), fabrics)
    a.set_xlabel("scale-out bandwidth per GPU")
    a.set_ylabel("step time (s)")
    a.set_title(f"GPT-3 175B, 128 H100 (TP8 PP2 DP8); LuWu: {CLAIM_SPEEDUP}x")
    handles, labels = a.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(modes), fontsize=8,
               frameon=False, title="data-parallel mode (step time and traffic panels)",
               title_fontsize=8)
    mem = df.drop_duplicates("dp_mode").set_index("dp_mode").loc[modes]
    short = [m.replace("in_network_optimizer", "in-net opt").replace("_host_paging", "\n+paging")
             for m in modes]
    b.bar(short, mem.memory_per_gpu_gb - mem.optimizer_state_gb, label="weights+grads+activations")
    b.bar(short, mem.optimizer_state_gb, bottom=mem.memory_per_gpu_gb - mem.optimizer_state_gb,
          label="optimizer state")
    b.bar(short, mem.host_memory_per_gpu_gb, bottom=mem.memory_per_gpu_gb, hatch="//",
          color="none", edgecolor="gray", label="optimizer state in host memory")
    b.tick_params(axis="x", labelsize=7)
    b.set_ylim(0, 1.08 * float((mem.memory_per_gpu_gb + mem.host_memory_per_gpu_gb).max()))
    b.axhline(80, color="k", ls="--", lw=1, label="HBM 80 GB")
    b.set_ylabel("memory per GPU (GB)")
    b.set_title("memory of the most loaded GPU")
    b.legend(fontsize=8)
    c.set_xticks(range(len(fabrics)), fabrics)
    c.set_xlabel("scale-out bandwidth per GPU")
    c.set_ylabel("DP bytes per GPU per step on scale-out (GB)")
    c.set_title("data-parallel traffic per step")
    return fig


def plot(df: pd.DataFrame, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = figure(df)
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out", help="output directory (default out/)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    df = table()
    df.to_csv(out / "luwu.csv", index=False)
    plot(df, out / "luwu.png")
    cols = ["dp_mode", "fabric", "bw_hb_gbps", "bw_scaleout_gbps", "step_time_s",
            "speedup_vs_zero3", "memory_per_gpu_gb", "optimizer_state_gb", "fits_80gb",
            "host_memory_per_gpu_gb", "optimizer_step_s", "traffic_scaleout_gb",
            "dp_traffic_scaleout_gb", "network_cost_usd", "aggregator_port_usd",
            "aggregator_state_usd"]
    print(df[cols].to_string(index=False, float_format=lambda v: f"{v:,.4g}"))
    inopt = df[df.dp_mode == "in_network_optimizer"].set_index("fabric").speedup_vs_zero3
    print(f"\nin-network optimizer vs ZeRO-3: {inopt['100 Gb/s']:.2f}x at 100 Gb/s, "
          f"{inopt['200 Gb/s']:.2f}x at 200 Gb/s, {inopt['optimized']:.2f}x on the fabric "
          f"re-optimized under ${BUDGET_USD / 1e6:.0f}M; LuWu reports {CLAIM_SPEEDUP}x "
          "(175B, 8 workers, 100/200 Gb/s).")
    z1 = df[df.dp_mode == "zero1"].set_index("fabric").step_time_s
    io = df[df.dp_mode == "in_network_optimizer"].set_index("fabric").step_time_s
    mem = df.drop_duplicates("dp_mode").set_index("dp_mode").memory_per_gpu_gb
    print(f"against ZeRO-1 (which also fits here) the in-network optimizer is "
          f"{io['100 Gb/s'] / z1['100 Gb/s']:.3f}x the step time at 100 Gb/s (G + P bytes "
          f"instead of (G + P)(k-1)/k) and needs {mem['zero1'] - mem['in_network_optimizer']:.1f}"
          f" GB less per GPU; ZeRO-0 would need {mem['zero0']:.0f} GB per GPU.\n")
    pg = df[df.dp_mode == "in_network_optimizer_host_paging"].set_index("fabric")
    print(f"out-of-core paging variant: {pg.speedup_vs_zero3['100 Gb/s']:.2f}x vs ZeRO-3 at "
          f"100 Gb/s; a GPU of the most loaded stage keeps "
          f"{pg.host_memory_per_gpu_gb.iloc[0]:.1f} GB of optimizer state in host memory, "
          f"paged in and out every step ({pg.optimizer_step_s.iloc[0]:.2f} s of its step), "
          f"with the same {mem['in_network_optimizer_host_paging']:.1f} GB of HBM as with "
          "the state on the aggregators.\n")
    print(NOTE)
    print(f"wrote luwu.csv and luwu.png to {out} in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

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
* ``zero3_prefetch`` (the headline baseline): ZeRO-3 / FSDP as DeepSpeed and PyTorch run
  it -- parameters all-gathered in forward and backward and gradients reduce-scattered,
  every micro-batch (32 per step), each layer's gathers prefetched behind the previous
  layer's compute and its reduce-scatter behind the backward pass
  (:func:`libra_opt.generators.in_network_optimizer.zero3_prefetched`; Zhao et al., PyTorch
  FSDP, VLDB 2023; Rajbhandari et al., ZeRO-Infinity, SC 2021);
* ``zero3`` (reference): the same traffic with no compute/communication overlap;
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

import bench_results as results
import numpy as np
import pandas as pd

from libra_opt.generators.generator import generate_workload
from libra_opt.generators.in_network_optimizer import zero3_prefetched
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
MODES = {"zero0": {"zero": 0}, "zero3": {"zero": 3}, "zero3_prefetch": {"zero": 3},
         "zero1": {"zero": 1},
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
* Overlap. The headline baseline (zero3_prefetch) hides ZeRO-3's gathers and
  reduce-scatters behind each layer's compute as DeepSpeed ZeRO-3 and FSDP do; at 100 Gb/s
  its 32 gathers per step still dwarf the compute, so prefetch changes little there. The
  in-network optimizer's push and pull are not overlapped (LuWu's own scheduling of push,
  pull and in-network update is not credited; the in-network update is assumed hidden).
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
        if mode == "zero3_prefetch":   # as DeepSpeed ZeRO-3 / FSDP run it
            scen = dataclasses.replace(scen, workloads=(zero3_prefetched(scen.workloads[0]),),
                                       training_loop="overlap")
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
    for base in ("zero3", "zero3_prefetch", "zero1"):
        ref = df[df.dp_mode == base].set_index("fabric").step_time_s
        df[f"speedup_vs_{base}"] = [ref[f] / t
                                    for f, t in zip(df.fabric, df.step_time_s, strict=True)]
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


def figures(df: pd.DataFrame) -> dict[str, str]:
    """The figures the README quotes, formatted as it quotes them."""
    by = {m: g.set_index("fabric") for m, g in df.groupby("dp_mode")}
    io, pg = by["in_network_optimizer"], by["in_network_optimizer_host_paging"]
    out = {}
    for col, tag in (("speedup_vs_zero3_prefetch", "vs_zero3_prefetch"),
                     ("speedup_vs_zero3", "vs_zero3_no_overlap"), ("speedup_vs_zero1", "vs_zero1")):
        for fab, key in (("100 Gb/s", "100g"), ("200 Gb/s", "200g"), ("optimized", "opt")):
            out[f"luwu.inopt_{tag}_{key}"] = f"{io[col][fab]:.2f}x"
            out[f"luwu.paging_{tag}_{key}"] = f"{pg[col][fab]:.2f}x"
    z1, z3 = by["zero1"], by["zero3"]
    out["luwu.zero3_dp_traffic_gb"] = f"{z3.dp_traffic_scaleout_gb.iloc[0]:,.0f}"
    out["luwu.zero1_dp_traffic_gb"] = f"{z1.dp_traffic_scaleout_gb.iloc[0]:,.0f}"
    out["luwu.paging_pcie_s"] = f"{pg.optimizer_step_s.iloc[0]:.2f}"
    out["luwu.paging_host_memory_gb"] = f"{pg.host_memory_per_gpu_gb.iloc[0]:.1f}"
    out["luwu.inopt_memory_saving_vs_zero1_gb"] = (
        f"{z1.memory_per_gpu_gb.iloc[0] - io.memory_per_gpu_gb.iloc[0]:.1f}")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out", help="output directory (default out/)")
    results.add_arguments(p)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    df = table()
    df.to_csv(out / "luwu.csv", index=False)
    plot(df, out / "luwu.png")
    cols = ["dp_mode", "fabric", "bw_hb_gbps", "bw_scaleout_gbps", "step_time_s",
            "speedup_vs_zero3", "speedup_vs_zero3_prefetch", "speedup_vs_zero1",
            "memory_per_gpu_gb", "optimizer_state_gb", "fits_80gb",
            "host_memory_per_gpu_gb", "optimizer_step_s", "traffic_scaleout_gb",
            "dp_traffic_scaleout_gb", "network_cost_usd", "aggregator_port_usd",
            "aggregator_state_usd"]
    print(df[cols].to_string(index=False, float_format=lambda v: f"{v:,.4g}"))
    io_rows = df[df.dp_mode == "in_network_optimizer"].set_index("fabric")
    pre, nopre, z1x = (io_rows.speedup_vs_zero3_prefetch, io_rows.speedup_vs_zero3,
                       io_rows.speedup_vs_zero1)
    print("\nBaselines: ZeRO-3 gathers every layer's parameters in forward and backward and "
          "reduce-scatters its gradients, every micro-batch (32 per step here: "
          f"{df[df.dp_mode == 'zero3'].dp_traffic_scaleout_gb.iloc[0]:,.0f} GB of data-parallel"
          f" traffic per GPU and step against "
          f"{df[df.dp_mode == 'zero1'].dp_traffic_scaleout_gb.iloc[0]:,.0f} GB for ZeRO-1). "
          "'zero3_prefetch' runs it as DeepSpeed ZeRO-3 and PyTorch FSDP do: the next "
          "layer's gather and the gradient reduce-scatter behind the current layer's compute "
          "(Zhao et al., VLDB 2023, arXiv:2304.11277; Rajbhandari et al., SC 2021, "
          "arXiv:2104.07857); 'zero3' is the same traffic with no overlap (LIBRA's no_overlap "
          "loop).")
    print(f"in-network optimizer vs ZeRO-3 with prefetch overlap: {pre['100 Gb/s']:.2f}x at "
          f"100 Gb/s, {pre['200 Gb/s']:.2f}x at 200 Gb/s, {pre['optimized']:.2f}x on the "
          f"fabric re-optimized under ${BUDGET_USD / 1e6:.0f}M")
    print(f"  (vs ZeRO-3 without overlap: {nopre['100 Gb/s']:.2f}x, {nopre['200 Gb/s']:.2f}x, "
          f"{nopre['optimized']:.2f}x; vs ZeRO-1: {z1x['100 Gb/s']:.2f}x, {z1x['200 Gb/s']:.2f}x,"
          f" {z1x['optimized']:.2f}x); LuWu reports {CLAIM_SPEEDUP}x against its own "
          "model-sharded baseline (175B, 8 workers, 100/200 Gb/s).")
    z1 = df[df.dp_mode == "zero1"].set_index("fabric").step_time_s
    io = df[df.dp_mode == "in_network_optimizer"].set_index("fabric").step_time_s
    mem = df.drop_duplicates("dp_mode").set_index("dp_mode").memory_per_gpu_gb
    print(f"against ZeRO-1 (which also fits here) the in-network optimizer is "
          f"{io['100 Gb/s'] / z1['100 Gb/s']:.3f}x the step time at 100 Gb/s (G + P bytes "
          f"instead of (G + P)(k-1)/k) and needs {mem['zero1'] - mem['in_network_optimizer']:.1f}"
          f" GB less per GPU; ZeRO-0 would need {mem['zero0']:.0f} GB per GPU.\n")
    pg = df[df.dp_mode == "in_network_optimizer_host_paging"].set_index("fabric")
    print(f"out-of-core paging variant: {pg.speedup_vs_zero3_prefetch['100 Gb/s']:.2f}x vs ZeRO-3 "
          f"with prefetch at 100 Gb/s; a GPU of the most loaded stage keeps "
          f"{pg.host_memory_per_gpu_gb.iloc[0]:.1f} GB of optimizer state in host memory, "
          f"paged in and out every step ({pg.optimizer_step_s.iloc[0]:.2f} s of its step), "
          f"with the same {mem['in_network_optimizer_host_paging']:.1f} GB of HBM as with "
          "the state on the aggregators.\n")
    print(NOTE)
    print(f"wrote luwu.csv and luwu.png to {out} in {time.perf_counter() - t0:.1f} s")
    results.record_from_args(args, "luwu", figures(df))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

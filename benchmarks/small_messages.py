"""Small collectives and the optimal bandwidth split: topology-aware model vs LIBRA's.

LIBRA's collective model (``pipelined``: per-dimension traffic / bandwidth, max over
dimensions) ignores what dominates small collectives: every algorithm step pays link
latency x hops and an endpoint delay, per chunk; a ring all-to-all forwards messages around
the ring; reductions pay local memory traffic. This benchmark solves the same scenarios
under both models (:mod:`libra_opt.traffic.topology_aware`) for workloads built around
small collectives — tensor parallelism at small micro-batches, MoE all-to-all, pipeline
sends — and one bandwidth-bound control (large data-parallel all-reduce), and reports:

* the optimal allocation under each model;
* the step time the topology-aware model gives the LIBRA-optimal allocation, and how much
  slower that is than the topology-aware optimum (the loss of designing with LIBRA's model);
* how far LIBRA's model underestimates the step time of its own optimum;
* the same loss as the tensor-parallel message shrinks from 256 MiB to 64 KiB.

Fabric (innermost first): ``chiplet`` ring of 4 (0.1 us links), ``node`` switch of 8
(0.25 us per hop, 2 hops), ``pod`` switch of 32 (2 us per hop); 1,024 NPUs; ``sum(bw) == 1000``
GB/s per NPU; 4 chunks per collective, 10 ns endpoint delay, 1,600 GB/s local memory.

Usage::

    python benchmarks/small_messages.py --out out/

Writes ``small_messages.csv``, ``small_messages_sweep.csv`` and ``small_messages.png``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import bench_results as results
import numpy as np
import pandas as pd

from libra_opt.cost.prices import CostModel
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.optimize.problem import solve
from libra_opt.scenario.constraints import parse_constraint
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.topology_aware import CollectiveSettings
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

MIB = 2**20
LAYERS = 48


def fabric() -> Fabric:
    return Fabric((
        Dim("chiplet", "ring", 4, "A", latency_s=0.1e-6),
        Dim("node", "switch", 8, "B", latency_s=0.25e-6),
        Dim("pod", "switch", 32, "C", latency_s=2e-6),
    ))


def cost_model() -> CostModel:
    return CostModel.from_tables({
        "A": {"link": 2.0}, "B": {"link": 4.0, "switch": 13.0, "nic": 0.0},
        "C": {"link": 7.8, "switch": 18.0, "nic": 31.6},
    })


SETTINGS = CollectiveSettings(chunks=4, endpoint_delay_s=10e-9, local_memory_gbps=1600.0)
GROUPS = {"tp": (4, 2, 1), "dp": (1, 4, 32), "ep": (1, 1, 32), "pp": (1, 1, 2)}


def transformer(name: str, tp_bytes: float, *, a2a_bytes: float = 0.0, p2p_bytes: float = 0.0,
                dp_bytes: float = 0.0, compute_s: float = 50e-6) -> Workload:
    """``LAYERS`` layers: a TP all-reduce in forward and input-gradient phases, an optional
    MoE all-to-all pair, a pipeline send per layer boundary and a DP gradient all-reduce."""
    fwd = [Collective("all_reduce", tp_bytes, "tp")] if tp_bytes else []
    bwd = list(fwd)
    if a2a_bytes:
        fwd += [Collective("all_to_all", a2a_bytes, "ep")] * 2
        bwd += [Collective("all_to_all", a2a_bytes, "ep")] * 2
    if p2p_bytes:
        fwd.append(Collective("p2p", p2p_bytes, "pp"))
        bwd.append(Collective("p2p", p2p_bytes, "pp"))
    wg = [Collective("all_reduce", dp_bytes, "dp")] if dp_bytes else []
    layer = Layer("block", Phase(compute_s, tuple(fwd)), Phase(2 * compute_s, tuple(bwd)),
                  Phase(compute_s, tuple(wg)), count=LAYERS)
    return Workload(name, (layer,), dict(GROUPS))


def workloads() -> list[Workload]:
    return [
        transformer("tp_small_mb", 1 * MIB, dp_bytes=8 * MIB),
        transformer("moe_a2a", 1 * MIB, a2a_bytes=512 * 1024, dp_bytes=8 * MIB),
        transformer("pp_sends", 1 * MIB, p2p_bytes=256 * 1024, dp_bytes=8 * MIB),
        transformer("large_dp", 0.0, dp_bytes=512 * MIB, compute_s=2e-3),
    ]


def scenario(w: Workload, model: str) -> Scenario:
    f = fabric()
    return Scenario(f, cost_model(), (w,), constraints=(parse_constraint("sum(bw) == 1000", f),),
                    collective_model=model,  # type: ignore[arg-type]
                    collectives=SETTINGS)


def compare(w: Workload) -> dict:
    """Both optima, and the LIBRA optimum judged by the topology-aware model."""
    libra = scenario(w, "pipelined")
    ta = scenario(w, "topology_aware")
    sol_l = solve(libra, with_baselines=False)
    sol_t = solve(ta, with_baselines=False)
    t_ta_at_l = evaluate(ta, sol_l.bw_gbps).weighted_step_time_s
    t_ta_at_t = sol_t.objective_value
    row = {"workload": w.name}
    for name, b_l, b_t in zip(libra.fabric.names, sol_l.bw_gbps, sol_t.bw_gbps, strict=True):
        row[f"libra_bw_{name}_gbps"] = float(b_l)
        row[f"ta_bw_{name}_gbps"] = float(b_t)
    row.update({
        "libra_step_at_libra_opt_s": sol_l.objective_value,
        "ta_step_at_libra_opt_s": t_ta_at_l,
        "ta_step_at_ta_opt_s": t_ta_at_t,
        "loss_pct": 100.0 * (t_ta_at_l / t_ta_at_t - 1.0),
        "libra_underestimate_pct": 100.0 * (1.0 - sol_l.objective_value / t_ta_at_l),
    })
    return row


def sweep(sizes_bytes) -> pd.DataFrame:
    """Loss of the LIBRA-optimal split as the TP all-reduce shrinks (DP fixed at 64 MiB)."""
    rows = []
    for size in sizes_bytes:
        w = transformer(f"tp_{int(size)}", float(size), dp_bytes=64 * MIB)
        r = compare(w)
        r["tp_bytes"] = int(size)
        rows.append(r)
    return pd.DataFrame(rows)


def figure(table: pd.DataFrame, sw: pd.DataFrame):
    """Left: the optimal split per workload under both collective models (stacked bars, the
    legend above them, never over a bar); right: the loss of the LIBRA-model split."""
    import matplotlib.pyplot as plt

    names = [c.removeprefix("libra_bw_").removesuffix("_gbps") for c in table.columns
             if c.startswith("libra_bw_")]
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(12, 4.8), layout="constrained")
    x = np.arange(len(table))
    width = 0.4
    for j, (model, off) in enumerate((("libra", -width / 2), ("ta", width / 2))):
        bottom = np.zeros(len(table))
        for i, n in enumerate(names):
            v = table[f"{model}_bw_{n}_gbps"].to_numpy()
            ax0.bar(x + off, v, width, bottom=bottom, color=f"C{i}", alpha=1.0 if j else 0.55,
                    label=n if j == 0 else None, edgecolor="k", linewidth=0.4)
            bottom += v
    ax0.set_xticks(x, list(table.workload), fontsize=8)
    ax0.set_ylabel("bandwidth per NPU (GB/s)")
    ax0.set_title("Optimal split of 1000 GB/s per NPU\n(light: LIBRA model, dark: topology-aware)")
    top = float(sum(table[f"ta_bw_{n}_gbps"].max() for n in names))
    ax0.set_ylim(0, 1.3 * max(top, float(sum(table[f"libra_bw_{n}_gbps"].max() for n in names))))
    ax0.legend(title="dimension", loc="upper center", ncols=len(names), fontsize=8)
    ax1.semilogx(sw.tp_bytes / 1024, sw.loss_pct, "o-")
    ax1.set_xlabel("tensor-parallel all-reduce per layer (KiB)")
    ax1.set_ylabel("step time lost by the LIBRA-optimal split (%)")
    ax1.set_title("LIBRA-model allocation judged by the topology-aware model")
    ax1.grid(True, which="both", alpha=0.3)
    return fig


def plot(table: pd.DataFrame, sw: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = figure(table, sw)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def figures(table: pd.DataFrame) -> dict[str, str]:
    """The figures the README quotes: the loss of the LIBRA-model split on the small-message
    workloads and on the large all-reduce, and how far LIBRA's model underestimates."""
    small = table[table.workload != "large_dp"]
    large = table[table.workload == "large_dp"]

    def span(s, fmt):
        lo, hi = fmt.format(float(s.min())), fmt.format(float(s.max()))
        return lo if lo == hi else f"{lo}-{hi}"

    return {
        "small_messages.loss_pct": span(small.loss_pct, "{:.1f}"),
        "small_messages.large_loss_pct": span(large.loss_pct, "{:.2f}"),
        "small_messages.underestimate_pct": span(table.libra_underestimate_pct, "{:.0f}"),
    }


def main(argv=None) -> int:
    args, out = results.parse_out_args(__doc__, argv)
    table = pd.DataFrame([compare(w) for w in workloads()])
    sizes = [2**k for k in range(16, 29, 2)]  # 64 KiB .. 256 MiB
    sw = sweep(sizes)
    table.to_csv(out / "small_messages.csv", index=False)
    sw.to_csv(out / "small_messages_sweep.csv", index=False)
    plot(table, sw, out / "small_messages.png")
    show = table.copy()
    for c in show.columns:
        if c.endswith("_s"):
            show[c] = show[c] * 1e3
    show.columns = [c[:-2] + "_ms" if c.endswith("_s") else c for c in show.columns]
    with pd.option_context("display.width", 200, "display.max_columns", 20,
                           "display.float_format", "{:.3f}".format):
        print(show.to_string(index=False))
        print()
        print(sw[["tp_bytes", "libra_bw_chiplet_gbps", "ta_bw_chiplet_gbps",
                  "libra_bw_pod_gbps", "ta_bw_pod_gbps", "loss_pct"]].to_string(index=False))
    results.record_from_args(args, "small_messages", figures(table))
    print(f"\nwrote {out / 'small_messages.csv'}, {out / 'small_messages_sweep.csv'}, "
          f"{out / 'small_messages.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""LIBRA's case studies: optimal vs equal-split bandwidth on 3-D and 4-D fabrics, on LIBRA's
own input files (``--libra-dir``) and, separately, on libra_opt's derived workloads.

Won, Rashidi, Srinivasan, Krishna, "LIBRA: Enabling Workload-aware Multi-dimensional Network
Topology Optimization for Distributed Training of Large AI Models", ISPASS 2024
(arXiv:2109.11762), and its reference implementation (github.com/astra-sim/libra, inputs/).

Setup of the derived workloads (LIBRA's fabrics and prices)
-----------------------------------------------------------
* Fabrics: 3-D ``Ring(16) x FullyConnected(8) x Switch(32)`` priced as InterPackage,
  InterNode, InterPod; 4-D ``Ring(4) x FullyConnected(8) x Ring(4) x Switch(32)`` priced as
  InterChiplet, InterPackage, InterNode, InterPod; 4,096 NPUs each.
* Prices: LIBRA's example cost model ($ per GB/s; catalog ``libra_ispass24``).
* Constraint: 500 GB/s in total per NPU (``sum(bw) == 500``); pipelined collectives,
  no-overlap training loop (LIBRA's defaults).
* Workloads, with LIBRA's communicators: GPT-3 175B (TP 16 x DP 256), the 1T transformer
  (TP 128 x DP 32), ResNet-50 and DLRM (data parallel over all 4,096 NPUs), from the shipped
  ASTRA-sim files of ``libra_opt/data/examples``; Turing-NLG 17B (DP 4,096 as in LIBRA's
  communicator, ZeRO-1, A100 80 GB, micro-batch 1, full recomputation) generated from
  ``libra_opt/data/models/turing_nlg.yaml`` (78 layers, hidden 4256, 28 heads; Microsoft
  Research Blog, Feb 2020).

For each workload and fabric: the ``perf``-optimal and the ``perf_per_cost``-optimal
allocations against the equal split (500 / D GB/s per dimension): step-time speed-up
(``t_equal / t``), perf-per-cost gain (``(t_equal C_equal) / (t C)``) and network-cost change
(``C / C_equal - 1``). Plus LIBRA's own default example: 4-D GPT-3, ``sum(bw) == 1000``,
``bw[0] == 500``, ``bw[0] >= bw[1] >= bw[2]``, ``bw[2] + bw[3] == 200``.

Why a pure all-reduce's optimum does not depend on the number of dimensions
----------------------------------------------------------------------------
A hierarchical all-reduce of ``M`` bytes over all ``N = prod_d n_d`` NPUs sends
``s_d = 2 M (n_d - 1) / P_d`` bytes per NPU on dimension ``d``, with ``P_d = n_1 ... n_d``
(reduce-scatter inwards-out, the message shrinking by ``n_d`` per dimension, then the
mirror all-gather). With pipelined collectives its time is ``max_d s_d / B_d``; under
``sum_d B_d = B`` the minimum is reached at ``B_d = B s_d / sum_e s_e`` (every dimension
finishes together) and equals ``sum_d s_d / B``. The sum telescopes:

    sum_d s_d = 2 M sum_d (1/P_{d-1} - 1/P_d) = 2 M (1 - 1/N),

which depends on ``N`` only — not on how ``N`` is factored into dimensions nor on how many
there are. Every all-reduce (and every ZeRO reduce-scatter / all-gather pair, whose traffic
has the same shape) of such a workload has a traffic vector proportional to the same
``(n_d - 1) / P_d``, so one allocation balances all of them at once and the optimal step time
is ``compute + 2 (1 - 1/N) sum M / B`` on the 3-D and on the 4-D fabric alike (ResNet-50 and
Turing-NLG below). The same argument holds group by group when every parallelism group spans
whole dimensions and no two groups share one: the 1T transformer's TP 128 owns the HB
dimensions and its DP 32 the pod on both fabrics, so its time is
``compute + sum_g 2 M_g (1 - 1/|g|) / B_g`` with ``B_g`` the bandwidth of group ``g``'s
dimensions, and the best split of ``B`` between the groups is again fabric-independent.
GPT-3's groups share a dimension on the 4-D fabric (TP 4 and DP 2 of the 8 package NPUs) and
DLRM's all-to-all does not shrink its message, so their optima differ between fabrics. The
equal split, the perf-per-cost optimum and the network cost always depend on the fabric (its
prices and its ``s_d``).

Two tables, labelled
---------------------
* **LIBRA's inputs** (with ``--libra-dir PATH``, a checkout of github.com/astra-sim/libra):
  LIBRA's 2-layer model slices (``inputs/workload/*.txt``), its 3-D and 4-D networks, cost
  models and communicators, read by :mod:`libra_opt.io.libra` and
  :func:`libra_opt.io.astra_sim.read_astra_sim`, under LIBRA's ``total_bw_500gbps``
  constraint; each case's speed-up over the equal split. LIBRA ships no communicator for
  DLRM, so DLRM is skipped (and says so). Then LIBRA's default example
  (``inputs/libra_configs.py``: GPT_3 on the 4-D network, ``multiple_constraints``, perf),
  whose optimum is 500 / 300 / 151.2 / 48.8 GB/s (``bw[0] == 500``, the total and
  ``bw[2] + bw[3] == 200`` fix the first two; the split of the last 200 GB/s is the
  optimization, checked by a one-dimensional brute-force search in the tests). LIBRA's files are
  its data: they are not shipped with libra_opt; without ``--libra-dir`` the script says how
  to get them and runs the second table only.
* **derived workloads**: the setup above -- libra_opt's own ASTRA-sim files and a generated
  Turing-NLG on LIBRA's fabrics and prices. They are not LIBRA's inputs and their speed-ups
  differ from those on LIBRA's inputs.

Usage::

    python benchmarks/libra_case_studies.py --out out/bench [--libra-dir PATH]

Writes ``libra_case_studies.csv``, ``libra_case_studies.md``, ``libra_case_studies.png``,
``libra_default_example.csv`` and, with LIBRA's inputs, ``libra_case_studies_libra_inputs.csv``
into ``--out`` (and nothing elsewhere).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import bench_results as results
import numpy as np
import pandas as pd

from libra_opt.cost.prices import CostModel
from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.generators.generator import generate_workload
from libra_opt.io.astra_sim import read_astra_sim
from libra_opt.io.example_files import example_path
from libra_opt.io.libra import read_libra_communicator, read_libra_cost_model, read_libra_network
from libra_opt.io.output import (
    confined_path,
    save_figure_atomic,
    write_csv_atomic,
    write_text_atomic,
)
from libra_opt.io.presets import catalog_cost_model, load_device, load_model
from libra_opt.optimize.problem import solve
from libra_opt.scenario.constraints import parse_constraint
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.workload import Workload

TOTAL_GBPS = 500.0
FABRICS = {
    "3-D": Fabric((Dim("package", "ring", 16, "InterPackage"),
                   Dim("node", "fully_connected", 8, "InterNode"),
                   Dim("pod", "switch", 32, "InterPod"))),
    "4-D": Fabric((Dim("chiplet", "ring", 4, "InterChiplet"),
                   Dim("package", "fully_connected", 8, "InterPackage"),
                   Dim("node", "ring", 4, "InterNode"),
                   Dim("pod", "switch", 32, "InterPod"))),
}
# LIBRA's communicators (inputs/communicator/*_3d.yml, *_4d.yml), -1 written as 1.
_ALL = {"3-D": (16, 8, 32), "4-D": (4, 8, 4, 32)}
COMMUNICATORS = {
    "gpt3_175b": {"3-D": {"forward": (16, 1, 1), "input_grad": (16, 1, 1), "weight_grad": (1, 8, 32)},
                  "4-D": {"forward": (4, 4, 1, 1), "input_grad": (4, 4, 1, 1),
                          "weight_grad": (1, 2, 4, 32)}},
    "transformer_1t": {"3-D": {"forward": (16, 8, 1), "input_grad": (16, 8, 1),
                               "weight_grad": (1, 1, 32)},
                       "4-D": {"forward": (4, 8, 4, 1), "input_grad": (4, 8, 4, 1),
                               "weight_grad": (1, 1, 1, 32)}},
    "resnet50": {f: dict.fromkeys(("forward", "input_grad", "weight_grad"), s) for f, s in _ALL.items()},
    "dlrm": {f: dict.fromkeys(("forward", "input_grad", "weight_grad"), s) for f, s in _ALL.items()},
}
LABELS = {"gpt3_175b": "GPT-3 175B", "transformer_1t": "Transformer 1T",
          "turing_nlg": "Turing-NLG 17B", "resnet50": "ResNet-50", "dlrm": "DLRM"}
PURE_ALL_REDUCE = {"resnet50", "turing_nlg"}


def workload(name: str, fabric_key: str) -> Workload:
    """The workload ``name`` with LIBRA's communicator for ``fabric_key``."""
    fabric = FABRICS[fabric_key]
    if name == "turing_nlg":
        g = generate_workload(load_model("turing_nlg"),
                              {"dp": 4096, "zero": 1, "micro_batch_size": 1,
                               "global_batch_size": 4096, "recompute": "full"},
                              load_device("a100_80gb"), fabric)
        return g.workload
    path = example_path("gpt3_175b_4d").parent / name / "workload.txt"
    return read_astra_sim(path, COMMUNICATORS[name][fabric_key], name=name)


def scenario(wl: Workload, fabric_key: str, objective: str, constraints=None) -> Scenario:
    fabric = FABRICS[fabric_key]
    texts = constraints or [f"sum(bw) == {TOTAL_GBPS:g}"]
    return Scenario(fabric, catalog_cost_model("libra_ispass24"), (wl,),
                    constraints=tuple(parse_constraint(t, fabric) for t in texts),
                    objective=objective, name=f"{wl.name}_{fabric_key}")  # type: ignore[arg-type]


def case_rows() -> pd.DataFrame:
    """One row per workload, fabric and objective (perf, perf_per_cost)."""
    rows = []
    for name in LABELS:
        for fk, fabric in FABRICS.items():
            wl = workload(name, fk)
            eq = evaluate(scenario(wl, fk, "perf"), np.full(fabric.n_dims, TOTAL_GBPS / fabric.n_dims))
            for objective in ("perf", "perf_per_cost"):
                t0 = time.perf_counter()
                sol = solve(scenario(wl, fk, objective), with_baselines=False)
                rows.append(_row(name, fk, objective, sol, eq, time.perf_counter() - t0))
    return pd.DataFrame(rows)


def default_example() -> pd.DataFrame:
    """LIBRA's default example (inputs/libra_configs.py): 4-D GPT-3, multiple constraints."""
    cons = ["sum(bw) == 1000", "bw[0] == 500", "bw[0] >= bw[1]", "bw[1] >= bw[2]",
            "bw[2] + bw[3] == 200"]
    sol = solve(scenario(workload("gpt3_175b", "4-D"), "4-D", "perf", cons))
    row = {"example": "LIBRA default: GPT-3 on 4-D, perf",
           **{f"bw_{n}_gbps": float(b) for n, b in zip(FABRICS["4-D"].names, sol.bw_gbps, strict=True)},
           "step_time_s": sol.evaluation.weighted_step_time_s,
           "network_cost_usd": sol.network_cost_usd,
           "active_constraints": "; ".join(c.label for c in sol.active_constraints)}
    return pd.DataFrame([row])


# ----------------------------------------------------------------- LIBRA's own input files
GET_LIBRA = (
    "LIBRA's own input files are its data and are not shipped with libra_opt. Get them from "
    "the public reference implementation and point --libra-dir at the checkout:\n"
    "    git clone https://github.com/astra-sim/libra /path/to/libra\n"
    "    python benchmarks/libra_case_studies.py --libra-dir /path/to/libra\n"
    "(the directory holding inputs/network, inputs/cost_model, inputs/communicator and "
    "inputs/workload, or that inputs/ directory itself)")
#: LIBRA's default example (inputs/libra_configs.py, inputs/constraints/multiple_constraints.py).
LIBRA_DEFAULT_CONSTRAINTS = ("sum(bw) == 1000", "bw[0] == 500", "bw[0] >= bw[1]",
                             "bw[1] >= bw[2]", "bw[2] + bw[3] == 200")


def libra_inputs(libra_dir: str | Path | None) -> Path | None:
    """LIBRA's ``inputs/`` directory under ``libra_dir`` (or ``libra_dir`` itself), or
    ``None`` when it is not there."""
    if libra_dir is None:
        return None
    root = Path(libra_dir)
    for cand in (root / "inputs", root):
        if all((cand / sub).is_dir() for sub in ("network", "cost_model", "communicator",
                                                  "workload")):
            return cand
    return None


def _find(folder: Path, stem: str) -> Path | None:
    """``folder/<stem>.yml`` matched without regard to case (``Turing_NLG_3D.yml``)."""
    want = f"{stem}.yml".lower()
    return next((p for p in sorted(folder.iterdir()) if p.name.lower() == want), None)


def libra_fabrics(inputs: Path) -> dict[str, tuple[Fabric, CostModel]]:
    """``{"3d": (fabric, cost model), ...}``: each ``<key>_network.yml`` with the
    ``<key>_cost_model.yml`` beside it, read by :mod:`libra_opt.io.libra`."""
    out = {}
    for net in sorted((inputs / "network").glob("*_network.yml")):
        key = net.name.removesuffix("_network.yml")
        cost = inputs / "cost_model" / f"{key}_cost_model.yml"
        if cost.is_file():
            out[key] = (read_libra_network(net),
                        CostModel.from_tables(read_libra_cost_model(cost)))
    return out


def libra_scenario(inputs: Path, workload_stem: str, key: str, objective: str,
                   constraints) -> Scenario | None:
    """LIBRA's workload ``workload_stem`` on its ``key`` network, prices and communicator;
    ``None`` when LIBRA ships no communicator for the pair."""
    fabric, cost = libra_fabrics(inputs)[key]
    comm = _find(inputs / "communicator", f"{workload_stem}_{key}")
    if comm is None:
        return None
    wl = read_astra_sim(inputs / "workload" / f"{workload_stem}.txt",
                        read_libra_communicator(comm), name=workload_stem)
    return Scenario(fabric, cost, (wl,),
                    constraints=tuple(parse_constraint(t, fabric) for t in constraints),
                    objective=objective, name=f"{workload_stem}_{key}")  # type: ignore[arg-type]


def libra_case_rows(inputs: Path, total_gbps: float = TOTAL_GBPS) -> tuple[pd.DataFrame, list[str]]:
    """Every LIBRA workload on every LIBRA network (``sum(bw) == total_gbps``, LIBRA's
    ``total_bw_500gbps`` constraint): perf and perf-per-cost optima against the equal split.
    Returns the rows and the pairs skipped (no communicator in LIBRA's inputs)."""
    rows, skipped = [], []
    fabrics = libra_fabrics(inputs)
    for wl_path in sorted((inputs / "workload").glob("*.txt")):
        stem = wl_path.stem
        for key, (fabric, _) in fabrics.items():
            cons = [f"sum(bw) == {total_gbps:g}"]
            base = libra_scenario(inputs, stem, key, "perf", cons)
            if base is None:
                skipped.append(f"{stem} on {key}: LIBRA ships no communicator "
                               f"{stem}_{key}.yml")
                continue
            eq = evaluate(base, np.full(fabric.n_dims, total_gbps / fabric.n_dims))
            for objective in ("perf", "perf_per_cost"):
                scen = base if objective == "perf" else dataclasses.replace(
                    base, objective=objective)
                t0 = time.perf_counter()
                sol = solve(scen, with_baselines=False)
                rows.append(_row(stem, key, objective, sol, eq, time.perf_counter() - t0))
    return pd.DataFrame(rows), skipped


def _row(name: str, fabric: str, objective: str, sol, eq, wall: float) -> dict:
    t, c = sol.evaluation.weighted_step_time_s, sol.network_cost_usd
    t_eq, c_eq = eq.weighted_step_time_s, eq.cost.network_cost_usd
    return {"workload": name, "fabric": fabric, "objective": objective,
            "bw_gbps": " / ".join(f"{b:.1f}" for b in sol.bw_gbps),
            "step_time_s": t, "network_cost_usd": c,
            "equal_step_time_s": t_eq, "equal_network_cost_usd": c_eq,
            "speedup": t_eq / t, "perf_per_cost_gain": (t_eq * c_eq) / (t * c),
            "cost_change_pct": 100.0 * (c / c_eq - 1.0), "solve_wall_s": wall}


def libra_default_example(inputs: Path) -> pd.DataFrame | None:
    """LIBRA's default example on its own files: GPT_3 on the 4-D network, perf, the
    ``multiple_constraints`` set; ``None`` when those files are not there."""
    if not (inputs / "workload" / "GPT_3.txt").is_file() or "4d" not in libra_fabrics(inputs):
        return None
    scen = libra_scenario(inputs, "GPT_3", "4d", "perf", LIBRA_DEFAULT_CONSTRAINTS)
    if scen is None:
        return None
    sol = solve(scen)
    row = {"example": "LIBRA default (LIBRA's inputs): GPT_3 on 4d, perf",
           **{f"bw{i}_gbps": float(b) for i, b in enumerate(sol.bw_gbps)},
           "step_time_s": sol.evaluation.weighted_step_time_s,
           "network_cost_usd": sol.network_cost_usd,
           "active_constraints": "; ".join(c.label for c in sol.active_constraints)}
    return pd.DataFrame([row])


def _speedup(df: pd.DataFrame, workload: str, fabric: str) -> str:
    r = df[(df.workload == workload) & (df.fabric == fabric) & (df.objective == "perf")]
    return f"{float(r.speedup.iloc[0]):.3f}"


def libra_figures(lib: pd.DataFrame, default: pd.DataFrame | None) -> dict[str, str]:
    """Figures on LIBRA's inputs the README quotes (perf speed-ups, the default optimum)."""
    out = {f"libra_inputs.speedup_{w.lower()}_{f}": _speedup(lib, w, f)
           for w, f in lib[["workload", "fabric"]].drop_duplicates().itertuples(index=False)}
    if default is not None:
        d = default.iloc[0]
        out["libra_inputs.default_bw_gbps"] = " / ".join(
            f"{d[c]:.1f}".removesuffix(".0") for c in default.columns if c.startswith("bw"))
    return out


def derived_figures(df: pd.DataFrame, default: pd.DataFrame) -> dict[str, str]:
    """Figures on the derived workloads the README quotes."""
    out = {f"libra_case_studies.speedup_{w}_{f[0]}d": _speedup(df, w, f)
           for w, f in df[["workload", "fabric"]].drop_duplicates().itertuples(index=False)}
    d = default.iloc[0]
    out["libra_case_studies.default_bw_gbps"] = " / ".join(
        f"{d[c]:.1f}".removesuffix(".0") for c in default.columns if c.startswith("bw_"))
    return out


def markdown(df: pd.DataFrame, default: pd.DataFrame) -> str:
    lines = [
        "# LIBRA's case studies on derived workloads: optimal vs equal-split bandwidth "
        "(500 GB/s per NPU)", "",
        "Derived workloads: libra_opt's own ASTRA-sim files and a generated Turing-NLG on "
        "LIBRA's fabrics, not LIBRA's input files (run with --libra-dir for those; "
        "libra_case_studies_libra_inputs.csv). Prices: LIBRA's example cost model. Speed-up = equal-split step time / step time; "
        "perf-per-cost gain = (t C) of the equal split / (t C); cost change vs the equal split.",
        "",
        "| workload | fabric | objective | bandwidth (GB/s per dim) | step time (ms) | speed-up | "
        "perf/cost gain | network cost ($M) | cost change |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for _, r in df.iterrows():
        lines.append(
            f"| {LABELS[r.workload]} | {r.fabric} | {r.objective} | {r.bw_gbps} | "
            f"{1e3 * r.step_time_s:,.2f} | {r.speedup:.3f}x | {r.perf_per_cost_gain:.3f}x | "
            f"{r.network_cost_usd / 1e6:,.2f} | {r.cost_change_pct:+.1f}% |")
    d = default.iloc[0]
    bw = " / ".join(f"{d[c]:.1f}" for c in default.columns if c.startswith("bw_"))
    lines += [
        "", "## LIBRA's default example", "",
        "4-D GPT-3 175B, `sum(bw) == 1000`, `bw[0] == 500`, `bw[0] >= bw[1] >= bw[2]`, "
        "`bw[2] + bw[3] == 200`, objective perf:", "",
        f"optimum {bw} GB/s; step time {1e3 * d.step_time_s:,.3f} ms; network cost "
        f"${d.network_cost_usd / 1e6:,.3f}M; active: {d.active_constraints}.", "",
        "## Pure all-reduce workloads: why 3-D and 4-D reach the same perf optimum", "",
        "A hierarchical all-reduce of M bytes over all N NPUs sends s_d = 2 M (n_d - 1) / P_d "
        "bytes per NPU on dimension d (P_d = n_1 ... n_d). Pipelined, its time is "
        "max_d s_d / B_d; with sum B_d = B the optimum is B_d proportional to s_d and the time "
        "is sum_d s_d / B = 2 M (1 - 1/N) / B (the sum telescopes), whatever the number of "
        "dimensions. All of ResNet-50's and Turing-NLG's collectives (ZeRO-1 reduce-scatter and "
        "all-gather included) have traffic proportional to the same (n_d - 1) / P_d, so their "
        "perf-optimal step time is equal on both fabrics (rows above). The argument holds group by "
        "group when each parallelism group spans whole dimensions and no two groups share one: "
        "the 1T transformer (TP 128 on the HB dimensions, DP 32 on the pod) also reaches the "
        "same optimum on both fabrics. GPT-3 (TP and DP share the 4-D package dimension) and "
        "DLRM (all-to-all: its message does not shrink) do not. The equal split, the "
        "perf-per-cost optimum and the cost always depend on the fabric.",
    ]
    same = []
    for name in (*sorted(PURE_ALL_REDUCE), "transformer_1t"):
        t = df[(df.workload == name) & (df.objective == "perf")].set_index("fabric").step_time_s
        same.append(f"{LABELS[name]}: 3-D {1e3 * t['3-D']:.6f} ms, 4-D {1e3 * t['4-D']:.6f} ms "
                    f"(relative difference {abs(t['3-D'] / t['4-D'] - 1):.1e})")
    lines += ["", "Measured: " + "; ".join(same) + ".", ""]
    return "\n".join(lines)


def plot(df: pd.DataFrame):
    import matplotlib.pyplot as plt

    names = list(LABELS)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), layout="constrained")
    panels = [("perf", "speedup", "step-time speed-up of the perf optimum\n(x equal split)"),
              ("perf_per_cost", "perf_per_cost_gain",
               "perf-per-cost gain of the perf-per-cost optimum\n(x equal split)"),
              ("perf_per_cost", "cost_change_pct",
               "network cost of the perf-per-cost optimum\n(% change vs equal split)")]
    x = np.arange(len(names))
    for ax, (objective, col, title) in zip(axes, panels, strict=True):
        for i, fk in enumerate(FABRICS):
            sub = df[(df.objective == objective) & (df.fabric == fk)].set_index("workload")
            vals = [float(sub.loc[n, col]) for n in names]
            bars = ax.bar(x + (i - 0.5) * 0.38, vals, 0.38, label=f"{fk} fabric")
            fmt = "%+.0f%%" if col.endswith("pct") else "%.2fx"
            ax.bar_label(bars, fmt=fmt, fontsize=7, padding=2)
        ax.set_xticks(x, [LABELS[n].replace(" ", "\n", 1) for n in names], fontsize=8)
        ax.set_title(title, fontsize=10)
        if col.endswith("pct"):
            ax.axhline(0, color="0.3", lw=0.8)
            ax.set_ylabel("network cost change (%)")
        else:
            ax.axhline(1, color="0.3", lw=0.8, ls="--")
            ax.set_ylabel("gain over the equal split (x; 1 = none)")
        ax.margins(y=0.15)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=2, frameon=False)
    fig.suptitle("LIBRA's case studies on derived workloads (not LIBRA's input files): "
                 "500 GB/s per NPU, LIBRA's example prices")
    return fig


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/bench", help="output directory")
    ap.add_argument("--libra-dir", metavar="PATH",
                    help="a checkout of github.com/astra-sim/libra (or its inputs/ directory): "
                    "run the case studies on LIBRA's own input files too")
    results.add_arguments(ap)
    args = ap.parse_args(argv)
    out = Path(args.out)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    inputs = libra_inputs(args.libra_dir)
    if inputs is None:
        if args.libra_dir is not None:
            print(f"libra_case_studies: no LIBRA inputs under {args.libra_dir}", file=sys.stderr)
        print(GET_LIBRA)
        print("Running the derived-workload table only.\n")
    else:
        t0 = time.perf_counter()
        lib, skipped = libra_case_rows(inputs)
        lib_default = libra_default_example(inputs)
        write_csv_atomic(lib, confined_path(out, "libra_case_studies_libra_inputs.csv"))
        print(f"== LIBRA's inputs ({inputs}): speed-up of each optimum over the equal split "
              f"({TOTAL_GBPS:g} GB/s per NPU, LIBRA's networks, cost models and communicators)")
        print(lib[["workload", "fabric", "objective", "bw_gbps", "speedup", "perf_per_cost_gain",
                   "cost_change_pct"]].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        for s in skipped:
            print(f"  skipped: {s}")
        if lib_default is not None:
            d = lib_default.iloc[0]
            bw = " / ".join(f"{d[c]:.1f}" for c in lib_default.columns if c.startswith("bw"))
            print(f"LIBRA's default example on LIBRA's inputs (GPT_3, 4d, multiple_constraints, "
                  f"perf): {bw} GB/s; step time {d.step_time_s:.6g} s "
                  f"(LIBRA's inputs give compute in ns)")
        print(f"{len(lib)} solves in {time.perf_counter() - t0:.2f} s\n")
        results.record_from_args(args, "libra_inputs", libra_figures(lib, lib_default))
    print("== derived workloads (libra_opt's own ASTRA-sim files and a generated Turing-NLG "
          "on LIBRA's fabrics and prices; not LIBRA's inputs)")
    t0 = time.perf_counter()
    df = case_rows()
    default = default_example()
    elapsed = time.perf_counter() - t0
    write_csv_atomic(df, confined_path(out, "libra_case_studies.csv"))
    write_csv_atomic(default, confined_path(out, "libra_default_example.csv"))
    write_text_atomic(confined_path(out, "libra_case_studies.md"), markdown(df, default))
    fig = plot(df)
    save_figure_atomic(fig, confined_path(out, "libra_case_studies.png"), dpi=130)
    plt.close(fig)
    shown = df[["workload", "fabric", "objective", "bw_gbps", "speedup", "perf_per_cost_gain",
                "cost_change_pct"]]
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(default.T.to_string(header=False))
    print(f"{len(df)} solves + the default example in {elapsed:.2f} s; wrote {out}/libra_case_studies.*")
    results.record_from_args(args, "libra_case_studies", derived_figures(df, default))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except InputError as exc:
        print(f"libra_case_studies: error: {exc.one_line()}", file=sys.stderr)
        sys.exit(2)

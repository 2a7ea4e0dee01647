"""Two-site GPT-3 175B: site-link bandwidth needed for < 5% slowdown, DP vs DiLoCo vs Streaming.

Usage::

    python benchmarks/diloco.py --out out/bench

writes ``diloco_site_bandwidth.csv`` and ``diloco_site_bandwidth.png`` into ``--out``.

Setup
-----
* The packaged example ``gpt3_175b_a100_cluster`` (GPT-3 175B on 1,024 A100s, TP 8 x PP 16
  x DP 8, global batch 1,536) is solved for its optimal fabric; its step time ``T0`` and
  compute ``C`` are the inner step. The run is split over two sites of 512 GPUs: DP 4
  inside a site, 2 across (``S = 2``).
* Each GPU holds ``P_npu`` parameters: its data-parallel gradient per step (bf16) / 2.
* The site link: latency ``--site-latency-s`` per hop (default 2.5 ms, ~500 km of fibre
  one way), two switch steps per all-reduce. Its bandwidth is reported per GPU (GB/s)
  and per site (Gb/s, x 512 GPUs).
* Traffic on the site dimension of an all-reduce of ``x`` bytes over the DP group
  (4 in a site x 2 sites): hierarchical (:func:`hierarchical_traffic_bytes`), ``x / 4``.
* Data-parallel training across the sites: ``x`` = the bf16 gradient, every step,
  blocking. DiLoCo: ``x = P_npu b / 8`` every ``H`` steps, blocking. Streaming DiLoCo:
  ``F`` fragments of ``x / F``, one every ``H / F`` steps, each overlapped with
  ``tau = 1`` inner step. Required bandwidth: the closed form of
  :func:`libra_opt.traffic.diloco.min_bandwidth_for_slowdown_gbps` (checked by
  re-evaluating the exposed time at that bandwidth).

Published claim
---------------
Douillard et al., "Streaming DiLoCo with overlapping communication" (arXiv:2501.18512):
the combination of fragments, overlap and 4-bit outer gradients reaches similar quality
with about two orders of magnitude less required (peak) bandwidth than data-parallel
training. The ratio column here is the model's: DP bandwidth / DiLoCo bandwidth at equal
(< 5%) slowdown. It is ``H x 16 / b`` for blocking DiLoCo when latency is negligible
(latency makes large ``H`` a little better still relative to DP, since DP pays it every
step); overlap adds ``tau C`` to the time budget of each fragment.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import pandas as pd

from libra_opt.io import load_scenario
from libra_opt.optimize.problem import solve
from libra_opt.traffic.collectives import hierarchical_traffic_bytes
from libra_opt.traffic.diloco import (
    DiLoCoSettings,
    amortized_exposed_s,
    min_bandwidth_for_slowdown_gbps,
)
from libra_opt.traffic.workload import walk_collectives

GPUS_PER_SITE = 512
DP_IN, SITES = 4, 2
CLAIM = "Streaming DiLoCo (arXiv:2501.18512): ~2 orders of magnitude less bandwidth than DP"


def inner_step() -> tuple[float, float, float]:
    """``T0``, ``C`` and the bf16 DP gradient bytes per GPU of the example at its optimum."""
    scen = load_scenario("gpt3_175b_a100_cluster")
    sol = solve(scen, with_baselines=False)
    t = sol.evaluation.workloads[0]
    grad = sum(s.count * s.collective.size_bytes for s in walk_collectives(scen.workloads[0])
               if s.collective.group == "dp")
    return t.step_time_s, t.compute_s, grad


def rows(t0: float, compute: float, grad_bytes: float, lat_s: float, slowdown: float):
    params = grad_bytes / 2.0  # bf16 gradient
    site_lat = 2 * lat_s  # a switch all-reduce: two steps

    def site_bytes(x: float) -> float:
        return float(hierarchical_traffic_bytes("all_reduce", x, (DP_IN, SITES))[1])

    out = []
    cases = [("data_parallel", DiLoCoSettings(1, 1, 16.0))]
    for h in (10, 30, 100, 300, 1000):
        for b in (16.0, 8.0, 4.0):
            cases.append(("diloco", DiLoCoSettings(h, 1, b)))
        if h >= 100:
            cases.append(("streaming_diloco", DiLoCoSettings(h, h // 10 if h >= 100 else 1,
                                                             4.0, overlap_steps=1.0)))
    b_dp = None
    for method, s in cases:
        x = site_bytes(s.fragment_bytes(params))
        b = min_bandwidth_for_slowdown_gbps(x, site_lat, t0, compute, s, slowdown)
        exposed = amortized_exposed_s(x / (1e9 * b) + site_lat, compute, s) if math.isfinite(b) \
            else math.inf
        if b_dp is None:
            b_dp = b
        out.append({
            "method": method, "H": s.sync_every_steps, "fragments": s.fragments,
            "delta_bits": s.delta_bits, "overlap_steps": s.overlap_steps,
            "site_bytes_per_sync_per_gpu": x,
            "site_bw_per_gpu_gbps": b,
            "site_link_per_site_gbit_s": b * 8 * GPUS_PER_SITE,
            "slowdown_at_bw": exposed / t0,
            "bw_reduction_vs_dp": b_dp / b,
            "published_claim": CLAIM,
        })
    return pd.DataFrame(out)


def plot(df: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    dp = df[df.method == "data_parallel"].site_link_per_site_gbit_s.iloc[0]
    ax.axhline(dp, color="k", ls="--", label=f"data parallel across sites ({dp:,.0f} Gb/s)")
    ax.axhline(dp / 100, color="grey", ls=":", label="DP / 100 (Streaming DiLoCo's claim)")
    for b, g in df[df.method == "diloco"].groupby("delta_bits"):
        ax.plot(g.H, g.site_link_per_site_gbit_s, "o-", label=f"DiLoCo, {b:g}-bit deltas")
    st = df[df.method == "streaming_diloco"]
    ax.plot(st.H, st.site_link_per_site_gbit_s, "s-", label="Streaming DiLoCo, F = H/10, "
            "4-bit, 1-step overlap")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("inner steps between outer syncs H")
    ax.set_ylabel("site link per site (Gb/s) for < 5% slowdown")
    ax.set_title("GPT-3 175B on 2 x 512 A100s: inter-site bandwidth needed")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out", help="output directory (default out/)")
    p.add_argument("--site-latency-s", type=float, default=2.5e-3)
    p.add_argument("--slowdown", type=float, default=0.05)
    args = p.parse_args(argv)
    t_start = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0, compute, grad = inner_step()
    df = rows(t0, compute, grad, args.site_latency_s, args.slowdown)
    df.to_csv(out / "diloco_site_bandwidth.csv", index=False)
    plot(df, out / "diloco_site_bandwidth.png")
    print(f"inner step {t0:.3f} s (compute {compute:.3f} s), DP gradient {grad / 1e9:.2f} GB "
          f"per GPU, site latency {args.site_latency_s * 1e3:g} ms per hop")
    cols = ["method", "H", "fragments", "delta_bits", "site_link_per_site_gbit_s",
            "bw_reduction_vs_dp", "slowdown_at_bw"]
    print(df[cols].to_string(index=False, float_format=lambda v: f"{v:,.4g}"))
    print(CLAIM)
    print(f"wrote {out / 'diloco_site_bandwidth.csv'} and .png in "
          f"{time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

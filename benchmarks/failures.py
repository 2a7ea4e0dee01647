"""Failures and goodput: the Llama 3 405B run against its paper, job MTTF against Kokolis et
al., fat-tree against Rail-only from 2K to 32K GPUs, and whether counting failures changes
the co-design search's choice.

* Llama 3 405B (``llama3_405b_h100_tco``: 16,384 H100s, 54 days): expected unexpected
  interruptions against the 419 of Dubey et al. 2024, Table 5, and the goodput against
  their "more than 90 % effective training time", from the example's stated recovery
  assumptions (detection 2 min, restart 8 min, checkpoints at 2 TB/s).
* Job MTTF of rail-optimized fat-trees of 8-GPU hosts at 1,024, 16,384 and 131,072 GPUs
  (radix 64; 128 at 131,072, beyond a 3-tier radix-64 Clos) with the Table 5 rates,
  against Kokolis et al. 2024 ("Revisiting Reliability in Large-Scale Machine Learning
  Research Clusters", arXiv:2410.21680): 7.9 h, 1.8 h and about 14 min.
* Fat-tree and Rail-only (Wang et al., arXiv:2307.12169) goodput from 2,048 to 32,768 GPUs
  (:func:`libra_opt.explore.failures.goodput_by_size` on the Llama 3 example: the same
  TP 8 x PP 16, data parallelism and global batch scaled with the cluster).
* The co-design search ranked by the objective and by the objective under failures, on
  each shipped model-based example (a reliability section with the Llama example's
  recovery added where it has none), and the break-even fragility of a 16-GPU HB domain
  spanning two 8-GPU hosts: how many times the scale-out network's per-part rate its
  NVLink switches and cables must fail at before the search prefers 8-GPU domains.

Usage::

    python benchmarks/failures.py --out out/bench

Writes ``failures_by_size.csv``, ``failures_by_size.png`` and ``failures_search.csv`` into
``--out`` and the figures into ``benchmarks/RESULTS.md`` (section ``failures``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import bench_results as results
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

import libra_opt as lo  # noqa: E402
from libra_opt.cost.failures import DEFAULT_RATES_PER_H, failure_modes  # noqa: E402
from libra_opt.fabric.builders import rail_optimized_fat_tree  # noqa: E402

PAPER_INTERRUPTIONS = 419           # Dubey et al. 2024, Table 5 (unexpected)
KOKOLIS_MTTF_H = {1024: 7.9, 16384: 1.8, 131072: 14 / 60}
SIZES = (2048, 4096, 8192, 16384, 32768)
RECOVERY = {"reliability.detection_s": 120, "reliability.restart_s": 480}
#: A small space of the Llama 3 example (TP 8, full recomputation, ZeRO 1), its HB domains.
LLAMA_SPACE = dict(micro_batch_sizes=(1,), interleave=(1, 2), recompute=("full",), zero=(1,),
                   sequence_parallel=(True,), tp=(8,), cp=(1,))


def llama3() -> dict[str, float]:
    sol = lo.solve("llama3_405b_h100_tco")
    rep = sol.failures
    w = rep.workloads[0]
    return {"interruptions": rep.interruptions, "degradations": rep.degradations,
            "goodput": w.goodput, "mttf_h": rep.job_mttf_h, "checkpoint_tb": w.checkpoint_bytes / 1e12,
            "checkpoint_s": w.checkpoint_s, "interval_s": w.interval_s,
            "run_increase": rep.run_cost_usd / rep.failure_free_run_cost_usd - 1,
            "tokens_per_s": w.tokens_per_s, "effective_tokens_per_s": w.effective_tokens_per_s}


def job_mttf_h(n_npus: int) -> tuple[float, int]:
    radix = 64 if n_npus <= 65536 else 128
    modes = failure_modes(rail_optimized_fat_tree(n_npus, 8, radix), DEFAULT_RATES_PER_H, 8)
    return 1.0 / sum(m.failures_per_h for m in modes if m.stops), radix


def _top(scen, space, rank: str) -> pd.Series:
    res = lo.search(scen, top=1, space=space, rank=rank)
    return res.best(1).iloc[0]


def _key(row: pd.Series) -> tuple:
    return tuple(row[c] for c in ("fabric", "tp", "cp", "pp", "dp", "ep", "micro_batch_size",
                                  "interleave", "recompute", "zero", "placement"))


def search_choices() -> pd.DataFrame:
    cases = [
        ("llama3_405b_h100_tco", {}, lo.SearchSpace(hb_domains=(8, 16, 32, 64),
                                                     **LLAMA_SPACE)),
        ("gpt3_175b_a100_cluster", RECOVERY, lo.SearchSpace(hb_domains=(8, 16, 32, 64))),
        ("deepseek_v3_rail_only", RECOVERY, lo.SearchSpace(
            hb_domains=(8, 16, 32, 64), micro_batch_sizes=(1,), interleave=(1,),
            recompute=("full",), zero=(1,))),
    ]
    rows = []
    for name, edits, space in cases:
        scen = lo.apply_overrides(name, edits) if edits else lo.load_scenario(name)
        a, b = _top(scen, space, "objective"), _top(scen, space, "failures")
        rows.append({"scenario": name, "same_choice": _key(a) == _key(b),
                     "by_objective": f"{a['fabric']} pp {a['pp']} dp {a['dp']} {a['placement']}",
                     "by_failures": f"{b['fabric']} pp {b['pp']} dp {b['dp']} {b['placement']}",
                     "goodput": b["goodput"], "objective_gap_pct": 100 * (
                         b["objective"] / a["objective"] - 1)})
    return pd.DataFrame(rows)


def break_even_factor() -> tuple[float, str, str]:
    """Bisection on the factor f: NVLink (ScaleUp) switches and cables failing at f times
    the scale-out per-part rate; the least f at which the search (HB domains 8 and 16)
    prefers the 8-GPU domain."""
    base = lo.load_scenario("llama3_405b_h100_tco")
    space = lo.SearchSpace(hb_domains=(8, 16), **LLAMA_SPACE)
    rate = DEFAULT_RATES_PER_H["link"]

    def choice(f: float) -> pd.Series:
        scen = lo.apply_overrides(base, {"reliability.rates_per_h[link.ScaleUp]": f * rate,
                                         "reliability.rates_per_h[switch.ScaleUp]": f * rate})
        return _top(scen, space, "failures")

    lo_f, hi_f = 1.0, 64.0
    first, last = choice(lo_f), choice(hi_f)
    assert first["fabric"] == "hb 16" and last["fabric"] == "hb 8", (first, last)
    while hi_f / lo_f > 1.02:
        mid = (lo_f * hi_f) ** 0.5
        if choice(mid)["fabric"] == "hb 8":
            hi_f = mid
        else:
            lo_f = mid
    return hi_f, f"{first['fabric']} pp {first['pp']} dp {first['dp']}", \
        f"{last['fabric']} pp {last['pp']} dp {last['dp']}"


def figure(df: pd.DataFrame):
    """Goodput by size and family (left), failures that only slow the job (right)."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    lo.plot_goodput_by_size(df, ax=axes[0])
    for fam, rows in df.groupby("family", sort=False):
        axes[1].plot(rows["n_npus"], rows["degradations_per_day"], "o-", label=fam)
    axes[1].set_xscale("log", base=2)
    axes[1].set_xticks(SIZES, [f"{n:,}" for n in SIZES])
    axes[1].minorticks_off()
    axes[1].set_xlabel("cluster size (NPUs)")
    axes[1].set_ylabel("failures that only slow the job (per day)")
    axes[1].set_title("Degrading failures (spine-level parts)")
    axes[1].legend(frameon=False)
    return fig


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/bench")
    results.add_arguments(ap)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()

    ll = llama3()
    print(f"Llama 3 405B, 16,384 H100s, 54 days: {ll['interruptions']:.1f} interruptions "
          f"(paper {PAPER_INTERRUPTIONS}: {100 * (ll['interruptions'] / PAPER_INTERRUPTIONS - 1):+.1f}%), "
          f"{ll['degradations']:.1f} more that only slow the job; job MTTF {ll['mttf_h']:.2f} h; "
          f"checkpoint {ll['checkpoint_tb']:.2f} TB in {ll['checkpoint_s']:.2f} s every "
          f"{ll['interval_s']:.0f} s; goodput {100 * ll['goodput']:.2f}% (paper: > 90%); "
          f"tokens/s {ll['tokens_per_s']:,.0f} -> {ll['effective_tokens_per_s']:,.0f}; run cost "
          f"{100 * ll['run_increase']:+.1f}%")

    mttf = {n: job_mttf_h(n) for n in KOKOLIS_MTTF_H}
    print("\nJob MTTF, ours (Table 5 rates, fat-tree of 8-GPU hosts) | Kokolis et al.:")
    for n, (m, radix) in mttf.items():
        print(f"  {n:>7,} GPUs (radix {radix}): {m:7.2f} h | {KOKOLIS_MTTF_H[n]:.2f} h  "
              f"(ratio {m / KOKOLIS_MTTF_H[n]:.2f})")
    per_gpu_kokolis = 1 / (16384 * KOKOLIS_MTTF_H[16384])
    per_gpu_ours = 1 / (16384 * mttf[16384][0])
    print(f"  stopping failures per GPU-hour: ours {per_gpu_ours:.3g}, Kokolis' 16K and 131K "
          f"projections {per_gpu_kokolis:.3g} (131K: {1 / (131072 * KOKOLIS_MTTF_H[131072]):.3g})")

    df = lo.goodput_by_size(lo.load_scenario("llama3_405b_h100_tco"), SIZES)
    df.to_csv(out / "failures_by_size.csv", index=False)
    fig = figure(df)
    fig.savefig(out / "failures_by_size.png", dpi=130)
    plt.close(fig)
    with pd.option_context("display.width", 200, "display.float_format", "{:.4g}".format):
        print("\nGoodput by size and family (Llama 3 405B, TP 8 x PP 16):")
        print(df[["family", "n_npus", "goodput", "throughput_fraction", "job_mttf_h",
                  "interruptions_per_day", "degradations_per_day", "network_parts"]]
              .to_string(index=False))
    wide = df.pivot(index="n_npus", columns="family")
    gap = (wide["goodput"]["rail_only"] - wide["goodput"]["fat_tree"]).abs().max()
    tgap = (wide["throughput_fraction"]["rail_only"]
            - wide["throughput_fraction"]["fat_tree"]).max()
    deg = wide["degradations_per_day"]["rail_only"] / wide["degradations_per_day"]["fat_tree"]

    choices = search_choices()
    factor, small_f, large_f = break_even_factor()
    choices.to_csv(out / "failures_search.csv", index=False)
    with pd.option_context("display.width", 250, "display.max_colwidth", 70):
        print("\nSearch top-1 by the objective and under failures:")
        print(choices.to_string(index=False))
    print(f"Break-even: NVLink parts of a 16-GPU domain over two hosts failing at "
          f">= {factor:.1f}x the scale-out per-part rate turn the choice from {small_f} to "
          f"{large_f}")

    ft = df[df.family == "fat_tree"].set_index("n_npus")
    figs = {
        "failures.llama3_interruptions": f"{ll['interruptions']:.1f}",
        "failures.llama3_interruptions_vs_paper_pct":
            f"{100 * (ll['interruptions'] / PAPER_INTERRUPTIONS - 1):+.1f}",
        "failures.llama3_degradations": f"{ll['degradations']:.1f}",
        "failures.llama3_goodput_pct": f"{100 * ll['goodput']:.2f}",
        "failures.llama3_mttf_h": f"{ll['mttf_h']:.2f}",
        "failures.llama3_checkpoint_tb": f"{ll['checkpoint_tb']:.2f}",
        "failures.llama3_interval_s": f"{ll['interval_s']:.0f}",
        "failures.llama3_run_cost_pct": f"{100 * ll['run_increase']:+.1f}",
        "failures.mttf_1k_h": f"{mttf[1024][0]:.1f}",
        "failures.mttf_16k_h": f"{mttf[16384][0]:.2f}",
        "failures.mttf_131k_min": f"{60 * mttf[131072][0]:.0f}",
        "failures.per_gpu_rate_ratio": f"{per_gpu_kokolis / per_gpu_ours:.2f}",
        "failures.goodput_2k_pct": f"{100 * ft.loc[2048, 'goodput']:.1f}",
        "failures.goodput_32k_pct": f"{100 * ft.loc[32768, 'goodput']:.1f}",
        "failures.family_goodput_gap_pct": f"{100 * gap:.3f}",
        "failures.family_throughput_gap_pct": f"{100 * tgap:.3f}",
        "failures.rail_only_degradations_ratio": f"{deg.min():.2f}-{deg.max():.2f}",
        "failures.search_same_choice": f"{int(choices['same_choice'].sum())} of {len(choices)}",
        "failures.break_even_factor": f"{factor:.0f}",
    }
    results.record_from_args(args, "failures", figs)
    print(f"\nwrote {out}/failures_by_size.csv, failures_by_size.png, failures_search.csv in "
          f"{time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

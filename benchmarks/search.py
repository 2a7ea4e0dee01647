"""Speed and sanity of the co-design search (:mod:`libra_opt.explore.search.engine`).

Part 1, speed (one run, figures printed): Llama 3 405B on 16,384 H100s (the shipped
``llama3_405b_h100_tco`` scenario, objective ``tco``) over the full space -- every TP x CP
x PP x DP factorization the model allows, micro-batch 1/2/4, interleave 1/2/4/8, three
recomputation modes, sequence parallelism, ZeRO 0-3, every distinct placement and HB domain
in {8, 16, 32, 64, 72} -- with the exact bandwidth optimum of every surviving candidate;
then the same space with the bandwidth fixed at the base scenario's optimum (a
fixed-network parallelism search: every candidate evaluated, none solved). Targets: the
joint search under 60 s, and at most 3x the fixed-bandwidth one.

Part 1b, the candidate path: for a sample of the joint search's solved candidates, the
seconds to build the candidate's scenario by compiling its spec edit
(:func:`libra_opt.explore.search.spec.candidate_spec`, the pure compiler) against the
search's direct path (generation + the placement's groups; the search shares one generation
among a parallelization's placements, so its real cost is lower still).

Part 2, believability: the top choices for GPT-3 175B on 1,024 A100s
(``gpt3_175b_a100_cluster``, Narayanan et al. SC21, Table 1: TP 8, PP 16, DP 8, batch 1536)
and for Llama 3 405B on 16K H100s (Dubey et al. 2024, Table 4: TP 8, CP 1, PP 16, DP 128 at
8K sequence length), each beside the exact bandwidth optimum of the published layout; then
GPT-3 again with both tiers priced by measured NCCL curves (``collectives: {efficiency: {hb:
a100_nvlink_nccl, scaleout: ndr400_ib_nccl}}``; the validation tables price A100 NVLink so). A
curve on one tier alone would favour layouts that move small collectives to the other.

    .venv/bin/python benchmarks/search.py [--executor processes] [--workers 2] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from libra_opt.explore.search import SearchSpace, run_search, search_base
from libra_opt.generators.mapping import place_groups
from libra_opt.io.scenario_file import load_scenario
from libra_opt.optimize.problem import solve
from libra_opt.scenario.compile import compile as compile_spec

COLS = ["fabric", "tp", "cp", "pp", "dp", "ep", "micro_batch_size", "interleave", "recompute",
        "sequence_parallel", "zero", "step_time_s", "mfu", "bw_hb_gbps", "bw_scaleout_gbps",
        "objective", "placement"]


def _published(base):
    """The exact bandwidth optimum of the scenario's own (published) layout."""
    from libra_opt.explore.search import candidate_scenario, generate

    e = base.entry
    f = base.scenario.fabric
    g = generate(e, e.parallelism, f)
    scen = candidate_scenario(base, f, g, place_groups(f, e.parallelism.degrees(), e.mapping))
    return solve(scen, with_baselines=False), g


def _report(name, res, base, space=None, executor="serial", max_workers=None) -> None:
    s = res.stats
    print(f"\n== {name}: {int(s['enumerated']):,} candidates enumerated, "
          f"{int(s['memory']):,} out of memory, {int(s['pruned']):,} pruned, "
          f"{int(s['solved']):,} solved; search wall time {s['wall_s']:.1f} s, solver time "
          f"{s['solve_s']:.3g} s ({s['solves_per_solver_s']:.0f} solves per solver-second)")
    print(res.best(5)[COLS].to_string(index=False))
    sol, g = _published(base)
    p = base.entry.parallelism
    best = float(res.best(1)["objective"].iloc[0])
    print(f"published layout TP {p.tp} CP {p.cp} PP {p.pp} DP {p.dp} (v {p.interleave}, "
          f"mb {p.micro_batch_size}, recompute {p.recompute}, ZeRO {p.zero}): step "
          f"{sol.evaluation.weighted_step_time_s:.3f} s, objective {sol.objective_value:.6g}, "
          f"bw {sol.bw_gbps.round(1).tolist()} GB/s, memory {g.memory.total_bytes / 1e9:.1f} GB;"
          f" search best / published = {best / sol.objective_value:.3f}")
    if space is not None:  # the published degrees with the search's other knobs
        pub = run_search(base, dataclasses.replace(space, tp=(p.tp,), cp=(p.cp,), pp=(p.pp,),
                                                   hb_domains=None),
                         top=1, executor=executor, max_workers=max_workers, solutions=False)
        b = pub.best(1)
        if not b.empty:
            r = b.iloc[0]
            print(f"published degrees, best knobs and placement: v {r['interleave']}, mb "
                  f"{r['micro_batch_size']}, recompute {r['recompute']}, SP "
                  f"{r['sequence_parallel']}, ZeRO {r['zero']}, {r['placement']}: step "
                  f"{r['step_time_s']:.3f} s, MFU {r['mfu']:.3f}, objective "
                  f"{r['objective']:.6g}; search best / this = {best / r['objective']:.3f}")


def _candidate_paths(base, joint, n: int = 40) -> None:
    """Part 1b: compile(spec edit) against the direct path, per candidate."""
    from libra_opt.explore.search import candidate_scenario, candidate_spec, generate
    from libra_opt.explore.search.fabrics import fabric_shapes
    from libra_opt.scenario.compile import compile as compile_spec

    solved = joint.table[joint.table["status"] == "optimal"]
    rows = solved.iloc[:: max(1, len(solved) // n)].head(n)
    p0 = base.entry.parallelism
    knobs = ("tp", "cp", "pp", "dp", "ep", "micro_batch_size", "interleave", "recompute",
             "sequence_parallel", "zero")
    t_compile = t_direct = 0.0
    for _, r in rows.iterrows():
        par = p0.model_copy(update={k: (r[k].item() if hasattr(r[k], "item") else r[k])
                                    for k in knobs})
        hb = int(r["hb_domain"])
        fabric = fabric_shapes(base.scenario.fabric, (hb,), base.spec)[0].fabric
        pl = place_groups(fabric, par.degrees())
        t0 = time.perf_counter()
        candidate_scenario(base, fabric, generate(base.entry, par, fabric), pl)
        t_direct += time.perf_counter() - t0
        t0 = time.perf_counter()
        compile_spec(candidate_spec(base.spec, base.entry.name, p0, par, pl, hb),
                     previous=base.scenario)
        t_compile += time.perf_counter() - t0
    k = len(rows)
    n_solved = int(joint.stats["solved"])
    print(f"candidate path ({k} solved candidates sampled): compile(spec edit) "
          f"{t_compile / k * 1e3:.1f} ms, direct {t_direct / k * 1e3:.1f} ms per candidate "
          f"(solver {1e3 / joint.stats['solves_per_solver_s']:.1f} ms); compiling each of the "
          f"{n_solved:,} solved candidates would add {(t_compile - t_direct) / k * n_solved:.1f}"
          f" s of work")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--executor", choices=("serial", "processes"), default="processes")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="HB domain 8 only")
    args = ap.parse_args()
    hb = (8,) if args.quick else (8, 16, 32, 64, 72)

    base = search_base(load_scenario("llama3_405b_h100_tco"))
    space = SearchSpace(hb_domains=hb)
    t0 = time.perf_counter()
    joint = run_search(base, space, top=5, executor=args.executor, max_workers=args.workers,
                       solutions=False)
    t_joint = time.perf_counter() - t0
    fixed_bw = solve(base.scenario, with_baselines=False).bw_gbps
    t0 = time.perf_counter()
    fixed = run_search(base, space, top=5, executor=args.executor, max_workers=args.workers,
                       fixed_bw_gbps=fixed_bw, solutions=False)
    t_fixed = time.perf_counter() - t0
    s = joint.stats
    print(f"Llama 3 405B, 16,384 H100, HB domain in {list(hb)}, objective tco, "
          f"executor {args.executor} x {args.workers}")
    print(f"joint search: {int(s['enumerated']):,} candidates enumerated, "
          f"{int(s['memory']):,} out of memory, {int(s['pruned']):,} pruned by bounds, "
          f"{int(s['solved']):,} solved exactly; solver time {s['solve_s']:.3g} s "
          f"({s['solves_per_solver_s']:.0f} solves per solver-second); wall time "
          f"{t_joint:.1f} s (target < 60 s)")
    f = fixed.stats
    print(f"fixed bandwidth {fixed_bw.round(1).tolist()} GB/s: {int(f['solved']):,} evaluated, "
          f"{int(f['pruned']):,} pruned; {t_fixed:.1f} s; joint / fixed = "
          f"{t_joint / t_fixed:.2f}x (target <= 3x)")
    _candidate_paths(base, joint)
    print("fixed-network best:")
    print(fixed.best(3)[COLS].to_string(index=False))
    _report("Llama 3 405B on 16,384 H100 (joint)", joint, base, space, args.executor,
            args.workers)

    gpt = search_base(load_scenario("gpt3_175b_a100_cluster"))
    res = run_search(gpt, dataclasses.replace(space, hb_domains=None), top=5,
                     executor=args.executor, max_workers=args.workers, solutions=False)
    _report("GPT-3 175B on 1,024 A100 (perf, $40M budget)", res, gpt,
            dataclasses.replace(space, hb_domains=None), args.executor, args.workers)

    spec = load_scenario("gpt3_175b_a100_cluster").spec.replace(
        "collectives", {"efficiency": {"hb": "a100_nvlink_nccl", "scaleout": "ndr400_ib_nccl"}})
    curved = search_base(compile_spec(spec))
    res = run_search(curved, dataclasses.replace(space, hb_domains=None), top=5,
                     executor=args.executor, max_workers=args.workers, solutions=False)
    _report("GPT-3 175B on 1,024 A100, both tiers at NCCL's measured curves (perf, $40M budget)",
            res, curved, dataclasses.replace(space, hb_domains=None), args.executor,
            args.workers)


if __name__ == "__main__":
    main()

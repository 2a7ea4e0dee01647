"""Sweep speed: what a sweep point costs beside what its solve costs, this checkout against
another (``--ref``: default main as it was before sweep points reused their problems;
``--ref main`` for today's) in one run.

Cases (each run in a fresh process, on this checkout's ``libra_opt`` and on the other's, the
two alternating round after round so that both see the same load; medians over
``--rounds``, and over ``--tp-rounds`` for the TP axis, whose ratio moves most with the
machine):

* **budget**: ``gpt3_175b_4d`` (LIBRA's 4-D fabric, GPT-3 175B, ``sum(bw) == 1000``) over
  ``--points`` budgets from $20M to $60M (the README's example axis): a right-hand side of
  one built problem. Per point: the sweep's wall time over the points, beside the mean
  time Clarabel took per point (the ``solve_s`` column), serially.
* **weight**: the same scenario over ``--points`` weights of its workload, 0.5 to 2
  (``workloads.gpt3_175b.weight``): objective coefficients only.
* **tp**: GPT-3 175B generated on the A100 cluster example (``gpt3_175b_a100_cluster``,
  its fixed placement and ZeRO stage lifted: ``mapping`` none, ``zero`` 1, so every value
  fits) over TP 1, 2, 4, 8, 16 with DP 64 ... 4 (zipped): a structural axis, every point a
  new workload; the sweep is repeated ``--tp-repeats`` times. Per point: wall time.
* **solve**: time to a verified solution, ``solve(build_problem(scenario))`` (build, Clarabel,
  the numpy re-check, the constraint reports) of every shipped example, loaded once; the
  median of ``--solve-repeats`` runs each. Per example the ratio of the two checkouts'
  medians (this / other), and their geometric mean.
* **executors**: the weight axis over ``--process-points`` points serially and on the
  ``processes`` executor with ``--workers`` workers (wall times include starting and
  stopping the workers), and the CPU two busy processes get against one in the same
  run (the speed-up the machine allows at that moment; others share it).

The answers are compared too: the largest relative difference of the points' objectives
between the checkouts is printed (a checkout with another model differs), and the
executors' rows must be identical.

Usage::

    python benchmarks/sweep_speed.py [--ref REF] [--points 1500] [--rounds 3]

Writes the figures to ``benchmarks/RESULTS.md`` (section ``sweep_speed``; ``--no-results``
skips it), which the README quotes. The other checkout is a detached ``git worktree`` of
``--ref`` in a temporary folder, removed at the end (``--baseline DIR``: an existing
checkout instead).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import bench_results  # noqa: E402  (benchmarks/bench_results.py, beside this script)

#: The last commit of main before sweep points reused their problems (the figures' "before").
BEFORE = "66044b0"
#: The shipped examples the solve case times (all of them, in both checkouts).
EXAMPLES = ("gpt3_175b_4d", "dlrm_4d", "multi_4d", "resnet50_4d_budget", "transformer_1t_4d_ppc",
            "gpt3_175b_a100_cluster", "deepseek_v3_rail_only", "llama3_405b_h100_tco")
#: What a child process runs (``python -c CHILD CASE JSON``), against whichever
#: ``libra_opt`` its PYTHONPATH puts first; it uses only the API both checkouts share.
CHILD = r'''
import gc, json, os, sys, time
import numpy as np
import pandas  # imported before any timing (the sweep imports it for its table)
import libra_opt as lo

def spin(seconds):
    c0, t0 = time.process_time(), time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        pass
    return time.process_time() - c0

def timed(scen, axes, **kw):
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    df = lo.sweep(scen, axes, progress=False, **kw)
    return time.perf_counter() - t0, time.process_time() - c0, df

def main():
    case, a = sys.argv[1], json.loads(sys.argv[2])
    out = {"libra_opt": os.path.dirname(lo.__file__)}
    if case in ("budget", "weight"):
        scen = lo.load_scenario("gpt3_175b_4d")
        if case == "budget":
            axes = {"budget_usd": np.linspace(2e7, 6e7, a["points"])}
        else:
            axes = {"workloads.gpt3_175b.weight": np.linspace(0.5, 2.0, a["points"])}
        lo.sweep(scen, {k: v[::50] for k, v in axes.items()}, progress=False)  # warm-up
        wall, cpu, df = timed(scen, axes)
        out.update(point_s=wall / len(df), cpu_point_s=cpu / len(df),
                   solve_s=float(df["solve_s"].mean()),
                   optimal=int((df["status"] == "optimal").sum()),
                   objective=df["objective"].tolist())
    elif case == "tp":
        scen = lo.apply_overrides("gpt3_175b_a100_cluster", {
            "workloads.gpt3_175b.mapping": None, "workloads.gpt3_175b.parallelism.zero": 1})
        tp = [1, 2, 4, 8, 16]
        axes = {"workloads.gpt3_175b.parallelism.tp": tp,
                "workloads.gpt3_175b.parallelism.dp": [64 // t for t in tp]}
        lo.sweep(scen, axes, zip=True, progress=False)  # warm-up
        walls, cpus = [], []
        for _ in range(a["repeats"]):
            wall, cpu, df = timed(scen, axes, zip=True)
            walls.append(wall)
            cpus.append(cpu)
        out.update(point_s=sum(walls) / (len(walls) * len(df)),
                   cpu_point_s=sum(cpus) / (len(cpus) * len(df)),
                   optimal=int((df["status"] == "optimal").sum()),
                   objective=df["objective"].tolist())
    elif case == "solve":
        from libra_opt.optimize.problem import build_problem, solve
        times = {}
        for name in a["examples"]:
            scen = lo.load_scenario(name)
            for _ in range(5):  # warm-up
                solve(build_problem(scen), with_baselines=False)
            gc.collect()
            runs = []
            for _ in range(a["repeats"]):
                t0 = time.perf_counter()
                solve(build_problem(scen), with_baselines=False)
                runs.append(time.perf_counter() - t0)
            times[name] = sorted(runs)[len(runs) // 2]
        out.update(times=times)
    else:  # executors
        from concurrent.futures import ProcessPoolExecutor
        scen = lo.load_scenario("gpt3_175b_4d")
        axes = {"workloads.gpt3_175b.weight": np.linspace(0.5, 2.0, a["points"])}
        lo.sweep(scen, {k: v[::100] for k, v in axes.items()}, progress=False)  # warm-up
        with ProcessPoolExecutor(a["workers"]) as pool:
            one = pool.submit(spin, 2.0).result()
            bound = sum(pool.map(spin, [2.0] * a["workers"])) / one
        serial, _, ref = timed(scen, axes)
        procs, _, df = timed(scen, axes, executor="processes", max_workers=a["workers"])
        cols = ["status", "objective", "weighted_step_time_s"]
        same = bool(ref[cols].equals(df[cols]))
        out.update(serial_s=serial, processes_s=procs, bound=bound, identical=same,
                   points=len(df))
    print(json.dumps(out))

if __name__ == "__main__":
    main()
'''


def run_case(checkout: Path, case: str, args: dict) -> dict:
    """One case in a fresh process on ``checkout``'s ``libra_opt``."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    proc = subprocess.run([sys.executable, "-c", CHILD, case, json.dumps(args)], env=env,
                          capture_output=True, text=True, cwd=tempfile.gettempdir(),
                          timeout=3600)
    if proc.returncode:
        raise RuntimeError(f"{case} on {checkout} failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if Path(out["libra_opt"]).parent.resolve() != checkout.resolve():
        raise RuntimeError(f"{case} ran {out['libra_opt']}, not {checkout}'s libra_opt")
    return out


def agree(case: str, a: list[float], b: list[float], rtol: float = 1e-6) -> None:
    """Print the largest relative difference between the checkouts' objectives (NaN with
    NaN: 0); above ``rtol`` the two compute other models (or one is wrong): said loudly."""
    if len(a) != len(b):
        raise RuntimeError(f"{case}: {len(a)} points against {len(b)}")
    worst = max((abs(x - y) / max(abs(y), 1e-300) for x, y in zip(a, b, strict=True)
                 if not (x != x and y != y)), default=0.0)
    note = "" if worst <= rtol else "  <- NOT THE SAME ANSWERS: do the checkouts' models differ?"
    print(f"{case:<10} objectives agree to {worst:.1e} (relative){note}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", default=BEFORE, help="git ref to compare against (default: the "
                    "sweep before its points reused their problems, main at 66044b0)")
    ap.add_argument("--baseline", metavar="DIR", help="an existing checkout instead of --ref")
    ap.add_argument("--points", type=int, default=1500, help="points of the budget and "
                    "weight axes (default 1500)")
    ap.add_argument("--tp-repeats", type=int, default=20, help="runs of the 5-point TP axis")
    ap.add_argument("--process-points", type=int, default=20_000,
                    help="points of the executors case (default 20,000)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (median)")
    ap.add_argument("--tp-rounds", type=int, default=9, help="alternating rounds of the TP "
                    "case (median; a TP run takes seconds and its ratio is the noisiest)")
    ap.add_argument("--solve-repeats", type=int, default=201,
                    help="verified solves per example in the solve case (median)")
    ap.add_argument("--cases", default="budget,weight,tp,solve,executors")
    bench_results.add_arguments(ap)
    args = ap.parse_args(argv)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    params = {"budget": {"points": args.points}, "weight": {"points": args.points},
              "tp": {"repeats": args.tp_repeats},
              "solve": {"repeats": args.solve_repeats, "examples": list(EXAMPLES)},
              "executors": {"points": args.process_points, "workers": args.workers}}
    tmp = None
    if args.baseline:
        base = Path(args.baseline).resolve()
    else:
        tmp = Path(tempfile.mkdtemp(prefix="sweep-speed-"))
        base = tmp / "ref"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base),
                        args.ref], check=True, capture_output=True)
    label = args.baseline or args.ref
    print(f"this checkout {ROOT} against {label} ({base}); {os.cpu_count()} CPUs, load "
          f"average {os.getloadavg()[0]:.2f}")
    got: dict[str, dict[str, list[dict]]] = {c: {"base": [], "this": []} for c in cases}
    try:
        for r in range(max(args.rounds, args.tp_rounds)):
            for case in cases:
                if r >= (args.tp_rounds if case == "tp" else args.rounds):
                    continue
                for side, where in (("base", base), ("this", ROOT))[:: 1 if r % 2 else -1]:
                    got[case][side].append(run_case(where, case, params[case]))
    finally:
        if tmp is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(base)], capture_output=True)
            subprocess.run(["rm", "-rf", str(tmp)], capture_output=True)

    def med(case: str, side: str, key: str) -> float:
        return statistics.median(x[key] for x in got[case][side])

    def med_of(case: str, side: str, name: str) -> float:
        return statistics.median(x["times"][name] for x in got[case][side])

    figures: dict[str, str] = {}
    print(f"{'case':<10} {'':>14} {label:>14} {'this':>14}")
    for case in ("budget", "weight"):
        if case not in cases:
            continue
        agree(case, got[case]["this"][0]["objective"], got[case]["base"][0]["objective"])
        ratio = {s: statistics.median(x["point_s"] / x["solve_s"] for x in got[case][s])
                 for s in ("base", "this")}
        for key, what in (("point_s", "ms per point"), ("solve_s", "ms in Clarabel"),
                          ("cpu_point_s", "CPU ms per pt")):
            print(f"{case:<10} {what:>14} {1e3 * med(case, 'base', key):14.3f} "
                  f"{1e3 * med(case, 'this', key):14.3f}")
        print(f"{case:<10} {'point / solve':>14} {ratio['base']:13.2f}x {ratio['this']:13.2f}x")
        figures[f"sweep_speed.{case}_ratio"] = f"{ratio['this']:.2f}x"
        figures[f"sweep_speed.{case}_ratio_base"] = f"{ratio['base']:.2f}x"
        figures[f"sweep_speed.{case}_point_ms"] = f"{1e3 * med(case, 'this', 'point_s'):.3f}"
        figures[f"sweep_speed.{case}_point_ms_base"] = \
            f"{1e3 * med(case, 'base', 'point_s'):.3f}"
    if "tp" in cases:
        agree("tp", got["tp"]["this"][0]["objective"], got["tp"]["base"][0]["objective"])
        speedup = statistics.median(b["point_s"] / t["point_s"] for b, t in
                                    zip(got["tp"]["base"], got["tp"]["this"], strict=True))
        for key, what in (("point_s", "ms per point"), ("cpu_point_s", "CPU ms per pt")):
            print(f"{'tp':<10} {what:>14} {1e3 * med('tp', 'base', key):14.2f} "
                  f"{1e3 * med('tp', 'this', key):14.2f}")
        print(f"{'tp':<10} {'speed-up':>14} {'':>14} {speedup:13.2f}x")
        figures["sweep_speed.tp_point_ms"] = f"{1e3 * med('tp', 'this', 'point_s'):.2f}"
        figures["sweep_speed.tp_point_ms_base"] = f"{1e3 * med('tp', 'base', 'point_s'):.2f}"
        figures["sweep_speed.tp_speedup"] = f"{speedup:.2f}x"
    if "solve" in cases:
        ratios = {n: statistics.median(t["times"][n] / b["times"][n] for b, t in
                                       zip(got["solve"]["base"], got["solve"]["this"],
                                           strict=True)) for n in EXAMPLES}
        for n in EXAMPLES:
            print(f"{'solve':<10} {n[:14]:>14} {1e3 * med_of('solve', 'base', n):14.3f} "
                  f"{1e3 * med_of('solve', 'this', n):14.3f}   ms; this / other {ratios[n]:.3f}")
        geo = statistics.geometric_mean(ratios.values())
        print(f"{'solve':<10} {'this / other':>14} {'':>14} {geo:13.3f}   (geometric mean; "
              f"worst {max(ratios.values()):.3f})")
        figures["sweep_speed.solve_ratio"] = f"{geo:.3f}"
        figures["sweep_speed.solve_ratio_worst"] = f"{max(ratios.values()):.3f}"
    if "executors" in cases:
        for side in ("base", "this"):
            if not all(x["identical"] for x in got["executors"][side]):
                raise RuntimeError(f"serial and processes rows differ on {side}")
        sp = {s: statistics.median(x["serial_s"] / x["processes_s"]
                                   for x in got["executors"][s]) for s in ("base", "this")}
        bound = statistics.median(x["bound"] for s in ("base", "this")
                                  for x in got["executors"][s])
        for key, what in (("serial_s", "serial s"), ("processes_s", "processes s")):
            print(f"{'executors':<10} {what:>14} {med('executors', 'base', key):14.2f} "
                  f"{med('executors', 'this', key):14.2f}")
        print(f"{'executors':<10} {'speed-up':>14} {sp['base']:13.2f}x {sp['this']:13.2f}x"
              f"   (CPU bound {bound:.2f}x)")
        figures["sweep_speed.processes_speedup"] = f"{sp['this']:.2f}x"
        figures["sweep_speed.processes_speedup_base"] = f"{sp['base']:.2f}x"
        figures["sweep_speed.cpu_bound"] = f"{bound:.2f}x"
    figures["sweep_speed.load"] = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average after: {figures['sweep_speed.load']}")
    bench_results.record_from_args(args, "sweep_speed", figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Throughput of the sweep executors on one structural grid, measured in one run.

The grid: the shipped ``gpt3_175b_4d`` example swept over ``--points`` values (default
20,000) of its workload's weight (``workloads.gpt3_175b.weight``, 0.5 to 2). The weight is
a structural axis: every point rebuilds its problem (override, conic assembly) and solves
it, so the grid is ``--points`` independent build-and-solve tasks, the case the executors
exist for. Each executor (serial, a local process pool, a local Dask cluster of worker
processes) runs the same grid through :func:`libra_opt.explore.sweep.sweep`; the rows are
checked equal (timing columns aside), and the script prints each executor's wall time and
throughput (points per second) and the processes / serial and dask / serial speed-ups.
Wall times include starting and stopping the workers.

Usage::

    python benchmarks/executors.py [--points 20000] [--workers 2] [--executors serial,processes,dask]

Nothing is written to disk. On a shared machine the ratio depends on what else runs: the
speed-up is bounded by the CPU the kernel grants, not by the executor. The script therefore
also measures that bound in the same run: the CPU time two busy processes get together,
over what one gets alone, in the same wall time (with Linux's per-session autogroup
scheduling and other sessions busy, a session gets about the same CPU however many
processes it runs, and the bound is near 1). Each executor's CPU per point is printed too
(the same on every executor when the executor adds no work of its own).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

from libra_opt import sweep

SCENARIO = "gpt3_175b_4d"
AXIS = "workloads.gpt3_175b.weight"
TIMING = ["compile_s", "solve_s", "wall_s"]


def run(executor: str, points: int, workers: int) -> tuple[float, pd.DataFrame]:
    """Wall time (s) and rows of the grid on ``executor``."""
    values = np.linspace(0.5, 2.0, points)
    t0 = time.perf_counter()
    df = sweep(SCENARIO, {AXIS: values}, executor=executor, max_workers=workers,
               progress=False)
    return time.perf_counter() - t0, df


def _spin(seconds: float) -> float:
    """Busy-loop for ``seconds`` of wall time; the CPU seconds this process got."""
    c0, t0 = time.process_time(), time.perf_counter()
    x = 0
    while time.perf_counter() - t0 < seconds:
        x += 1
    return time.process_time() - c0


def cpu_bound(workers: int, seconds: float = 3.0) -> float:
    """CPU granted to ``workers`` busy processes together over that granted to one, in the
    same wall time: the speed-up this machine allows right now."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers) as pool:
        one = pool.submit(_spin, seconds).result()
        many = sum(pool.map(_spin, [seconds] * workers))
    return many / one


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--points", type=int, default=20_000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--executors", default="serial,processes,dask")
    args = p.parse_args(argv)
    names = [e.strip() for e in args.executors.split(",") if e.strip()]
    print(f"{SCENARIO}: {args.points:,} points of {AXIS} (structural), {args.workers} workers, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    times: dict[str, float] = {}
    frames: dict[str, pd.DataFrame] = {}
    bound = cpu_bound(args.workers)
    print(f"  CPU bound: {args.workers} busy processes get {bound:.2f}x the CPU of one "
          "(the best speed-up possible now)")
    for name in names:
        wall, df = run(name, args.points, args.workers)
        times[name], frames[name] = wall, df
        ok = int((df["status"] == "optimal").sum())
        print(f"  {name:<10} {wall:8.2f} s  {args.points / wall:9,.0f} points/s  "
              f"({ok:,} optimal; mean solve {1e3 * df['solve_s'].mean():.3f} ms, "
              f"mean point {1e3 * df['wall_s'].mean():.3f} ms)")
    ref = names[0]
    for name in names[1:]:
        pd.testing.assert_frame_equal(frames[ref].drop(columns=TIMING),
                                      frames[name].drop(columns=TIMING), check_exact=True)
    if len(names) > 1:
        print(f"  rows identical across {', '.join(names)}")
    for name in names:
        if name != "serial" and "serial" in times:
            print(f"  {name}/serial speed-up: {times['serial'] / times[name]:.2f}x")
    bound = cpu_bound(args.workers)
    print(f"  CPU bound: {args.workers} busy processes get {bound:.2f}x the CPU of one "
          "(the best speed-up possible now)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

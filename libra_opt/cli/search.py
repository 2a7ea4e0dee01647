"""``libra-opt search``: the co-design search of parallelization, placement, fabric shape and
bandwidth. Prints the counts, timings, top-k table and gain of co-design; ``--out DIR`` gets
the results, manifest and plot as one set (:func:`~libra_opt.io.results.write_run_folder`).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any

from libra_opt.cli.args import add_error_model_argument, add_executor_arguments, checked_executor
from libra_opt.errors import InputError, option_context
from libra_opt.options import OBJECTIVE_MEANING, OBJECTIVES, TOPOLOGIES

__all__ = ["register", "run", "format_top", "summary"]


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``search`` sub-command to ``subparsers`` and return its parser."""
    p = subparsers.add_parser(
        "search", help="co-design search: parallelization, placement, fabric and bandwidth",
        description="Search every parallelization (TP x CP x PP x DP, EP, micro-batch, "
        "interleaving, recomputation, sequence parallelism, ZeRO) and placement of a "
        "scenario's model workload, optionally over HB-domain sizes or the dimension sizes and "
        "topologies of a multi-dimensional fabric, each with its exact optimal bandwidth per "
        "dimension.")
    p.add_argument("scenario", help="scenario YAML file, or the name of a shipped example")
    p.add_argument("--top", type=int, default=5, help="best candidates to show (default 5)")
    p.add_argument("--objective", choices=OBJECTIVES, help="override the objective")
    p.add_argument("--rank", choices=("objective", "failures"), default="objective",
                   help="rank candidates by the objective (default) or by the objective "
                   "under failures (needs the scenario's reliability section)")
    p.add_argument("--hb-domain", metavar="N,N,...",
                   help="HB-domain sizes to search (two-level fat_tree / rail_only fabrics)")
    p.add_argument("--dim-sizes", metavar="AxBxC,...|factorizations",
                   help="dimension sizes to search (inline dims / multi_dim fabrics): size "
                   "tuples such as 4x8x4x32,8x8x2x32, or 'factorizations' (every ordered "
                   "factorization of the NPU count into the fabric's dimensions)")
    p.add_argument("--dim-topologies", metavar="T,T,...",
                   help=f"topologies each dimension may take: {', '.join(TOPOLOGIES)} "
                   "(torus: ring; every combination is a shape; default: each keeps its own)")
    p.add_argument("--unit-dims", action="store_true",
                   help="with --dim-sizes factorizations: also sizes of 1 (fewer dimensions)")
    p.add_argument("--placements", choices=("all", "auto"), default="all",
                   help="every distinct placement (default) or the automatic one only")
    p.add_argument("--space", action="append", default=[], metavar="KNOB=V1,V2",
                   help="restrict a knob (repeatable): tp, cp, pp, ep, micro_batch_sizes, "
                   "interleave, recompute, sequence_parallel, zero, max_cp; e.g. zero=1,3")
    p.add_argument("--out", metavar="DIR",
                   help="write DIR/results.csv, DIR/results.parquet (with pyarrow), "
                   "DIR/manifest.json and DIR/search.png, all moved in together when the "
                   "search completes (nothing is written on an error or Ctrl-C; a search "
                   "is not streamed to DIR and cannot be resumed); a non-empty DIR is "
                   "refused unless --overwrite")
    p.add_argument("--overwrite", action="store_true",
                   help="with --out: replace the earlier run's files in DIR (removed once "
                   "the new results are ready)")
    add_executor_arguments(p)
    add_error_model_argument(p, "the error bands")
    p.add_argument("--no-gains", action="store_true",
                   help="skip the equal-split and conventional-layout comparisons")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=run)
    return p


def _hb_domains(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise InputError(f"expected comma-separated integers, got {text!r}",
                         field="--hb-domain") from None
    if not values or any(v < 1 for v in values):
        raise InputError(f"expected positive integers, got {text!r}", field="--hb-domain")
    return values


def _dim_family(args: argparse.Namespace) -> dict[str, Any]:
    """``--dim-sizes``, ``--dim-topologies`` and ``--unit-dims`` as ``SearchSpace`` fields."""
    from libra_opt.fabric.topology import topology_names

    out: dict[str, Any] = {}
    text = args.dim_sizes
    if text is not None and text.strip() == "factorizations":
        out["dim_sizes"] = "factorizations"
    elif text is not None:
        try:
            out["dim_sizes"] = tuple(tuple(int(v) for v in item.split("x"))
                                     for item in text.split(","))
        except ValueError:
            raise InputError(f"expected size tuples such as 4x8x4x32,8x8x2x32 or "
                             f"'factorizations', got {text!r}", field="--dim-sizes") from None
        if any(v < 1 for t in out["dim_sizes"] for v in t):
            raise InputError(f"sizes must be positive, got {text!r}", field="--dim-sizes")
    if args.dim_topologies is not None:
        topos = tuple(v.strip() for v in args.dim_topologies.split(",") if v.strip())
        if not topos or any(t not in topology_names(aliases=True) for t in topos):
            raise InputError(f"expected some of {', '.join(topology_names())}, got "
                             f"{args.dim_topologies!r}", field="--dim-topologies")
        out["dim_topologies"] = topos
    if args.unit_dims:
        if out.get("dim_sizes") != "factorizations":
            raise InputError("--unit-dims needs --dim-sizes factorizations",
                             field="--unit-dims")
        out["unit_dims"] = True
    if out and args.hb_domain is not None:
        raise InputError("give one fabric family: --hb-domain or --dim-sizes / "
                         "--dim-topologies", field="--dim-sizes")
    return out


_INT_KNOBS = ("tp", "cp", "pp", "ep", "micro_batch_sizes", "interleave", "zero")


def parse_space(items: list[str]) -> dict[str, Any]:
    """``--space KNOB=V1,V2`` items as ``SearchSpace`` fields.

    Examples
    --------
    >>> parse_space(["zero=1,3", "recompute=full", "sequence_parallel=true", "max_cp=4"])
    {'zero': (1, 3), 'recompute': ('full',), 'sequence_parallel': (True,), 'max_cp': 4}
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        values = [v.strip() for v in text.split(",") if v.strip()]
        if not sep or not values:
            raise InputError(f"expected KNOB=V1,V2, got {item!r}", field="--space")
        try:
            if key in _INT_KNOBS:
                out[key] = tuple(int(v) for v in values)
            elif key == "max_cp":
                out[key] = int(values[0])
            elif key == "recompute":
                out[key] = tuple(values)
            elif key == "sequence_parallel":
                truth = {"true": True, "false": False}
                out[key] = tuple(truth[v.lower()] for v in values)
            else:
                raise InputError(f"unknown knob {key!r}; expected one of "
                                 f"{', '.join((*_INT_KNOBS, 'recompute', 'sequence_parallel', 'max_cp'))}",
                                 field="--space")
        except (ValueError, KeyError):
            raise InputError(f"bad values in {item!r}", field="--space") from None
    return out


def format_top(result: Any, k: int) -> str:
    """The ``k`` best designs as a fixed-width table, units in the headers; with error bands,
    the step time's band and the trust flags (:func:`~libra_opt.report.trust.trust_flags`)."""
    from libra_opt.report.text import format_number, table
    from libra_opt.report.trust import trust_flags

    best = result.best(k)
    banded = "band_pct" in best
    failures = getattr(result, "rank", "objective") == "failures"
    dims = [c for c in result.table.columns if c.startswith("bw_")]
    head = ["#", "fabric", "TP", "CP", "PP", "DP", "EP", "mb", "v", "recompute", "SP", "ZeRO",
            "step s", *(["+-band"] if banded else []), "tok/s", "MFU", "mem GB",
            *(c[3:-5] + " GB/s" for c in dims), "network cost ($M)",
            f"objective ({OBJECTIVE_MEANING[result.objective][1]})",
            *(("goodput", "with failures") if failures else ()),
            *(["trust"] if banded else []), "placement"]
    lines = []
    for _, r in best.iterrows():
        trust = [trust_flags(r)] if banded else []
        lines.append([
            str(int(r["rank"])), str(r["fabric"]), *(str(r[c]) for c in ("tp", "cp", "pp", "dp",
                                                                         "ep")),
            str(r["micro_batch_size"]), str(r["interleave"]), str(r["recompute"]),
            "y" if r["sequence_parallel"] else "n", str(r["zero"]),
            format_number(r["step_time_s"]),
            *([f"{r['band_pct']:.1f}%"] if banded else []),
            f"{r['tokens_per_s']:,.0f}", f"{100 * r['mfu']:.1f}%",
            f"{r['memory_per_npu_gb']:.1f}",
            *(f"{r[c]:.1f}" for c in dims), f"{r['network_cost_usd'] / 1e6:.2f}",
            format_number(r["objective"]),
            *((f"{100 * r['goodput']:.2f}%", format_number(r["effective_objective"]))
              if failures else ()), *trust, str(r["placement"]),
        ])
    header, _rule, *body = table(head, lines, "r" * (len(head) - 1) + "l").splitlines()
    return "\n".join([header, *body])


def run(args: argparse.Namespace) -> int:
    """Run ``libra-opt search``; returns the exit code (130 on Ctrl-C, nothing written)."""
    from libra_opt.explore.search import SearchSpace, search_base
    from libra_opt.io.results import check_run_folder
    from libra_opt.io.scenario_file import load_scenario

    if args.top < 1:
        raise InputError(f"--top {args.top} must be >= 1", field="--top")
    if args.workers is not None and args.workers < 1:
        raise InputError(f"--workers {args.workers} must be >= 1", field="--workers")
    if args.overwrite and args.out is None:
        raise InputError("--overwrite works on the --out directory: give --out DIR",
                         source="<cli>", field="--overwrite")
    from libra_opt.explore.executors import resolve_executor

    executor = checked_executor(args, lambda: resolve_executor(args.executor, args.scheduler))
    hb = _hb_domains(args.hb_domain)
    knobs = parse_space(args.space)
    family = _dim_family(args)
    if args.out is not None:  # every output path, before the work
        with option_context("--out"):
            check_run_folder(args.out, _out_names(), overwrite=args.overwrite)
    base = search_base(load_scenario(args.scenario))
    space = SearchSpace(hb_domains=hb, placements=args.placements, **knobs, **family)
    _check_shapes(base, space, args)
    try:
        return _search(args, base, space, executor)
    except KeyboardInterrupt:
        where = f"; {args.out!r} left as it was" if args.out is not None else ""
        print(f"libra-opt: interrupted: nothing written{where}", file=sys.stderr)
        return 130


def _out_names() -> list[str]:
    """The files ``--out`` writes besides the manifest."""
    from libra_opt.io.results import RESULTS_CSV, RESULTS_PARQUET

    return [RESULTS_CSV, RESULTS_PARQUET, "search.png"]


def _check_shapes(base: Any, space: Any, args: argparse.Namespace) -> None:
    """Refuse, before the work, a fabric family none of whose shapes can be built."""
    from libra_opt.explore.search.fabrics import require_buildable
    from libra_opt.explore.search.space import search_shapes

    flag = ("--dim-sizes" if args.dim_sizes is not None else
            "--dim-topologies" if args.dim_topologies is not None else "--hb-domain")
    try:
        require_buildable(search_shapes(base.scenario.fabric, space, base.spec), flag)
    except InputError as exc:
        if exc.field == flag or (exc.field or "").startswith("search."):
            raise InputError(exc.message, source="<cli>", field=flag) from None
        raise


def summary(result: Any, name: str) -> list[str]:
    """The lines above the top-k table: candidate counts, wall and solver time, and the
    fabric shapes not searched and why.

    Examples
    --------
    >>> import pandas as pd
    >>> from types import SimpleNamespace
    >>> t = pd.DataFrame({"status": ["optimal", "invalid_shape"], "fabric": ["hb 8", "hb 72"],
    ...                   "reason": ["", "HB domain 72 does not divide 16384 NPUs"]})
    >>> s = {"enumerated": 10, "memory": 4, "pruned": 5, "solved": 1, "wall_s": 2.0,
    ...      "solve_s": 0.004, "solves_per_solver_s": 250.0}
    >>> print("\\n".join(summary(SimpleNamespace(table=t, stats=s, objective="tco"), "x")))
    x: 10 candidates, 4 out of memory, 5 pruned by bounds, 1 solved exactly; objective tco
    search wall time 2.0 s; solver time 0.004 s (summed over workers): 250 solves per solver-second
    fabric shapes not searched: hb 72: HB domain 72 does not divide 16384 NPUs
    """
    from libra_opt.explore.search.fabrics import shape_reasons

    s, t = result.stats, result.table
    rate = float(s["solves_per_solver_s"])
    rate_text = "0" if int(s["solved"]) == 0 or not math.isfinite(rate) else f"{rate:,.0f}"
    out = [f"{name}: {int(s['enumerated']):,} candidates, {int(s['memory']):,} out of memory, "
           f"{int(s['pruned']):,} pruned by bounds, {int(s['solved']):,} solved exactly; "
           f"objective {result.objective}"
           + (" under failures" if getattr(result, "rank", "") == "failures" else ""),
           f"search wall time {s['wall_s']:.1f} s; solver time {s['solve_s']:.3g} s (summed "
           f"over workers): {rate_text} solves per solver-second"]
    dropped = t[t["status"] == "invalid_shape"]
    if len(dropped):
        out.append("fabric shapes not searched: "
                   + shape_reasons(zip(dropped["fabric"], dropped["reason"], strict=True)))
    return out


def _search(args: argparse.Namespace, base: Any, space: Any, executor: Any) -> int:
    from libra_opt.explore.search import codesign_gains, run_search
    from libra_opt.io.error_model import load_error_model
    from libra_opt.report.trust import trust_lines

    model = load_error_model(args.error_model)
    res = run_search(base, space, top=args.top, objective=args.objective,
                     executor=executor, max_workers=args.workers,
                     progress=not args.no_progress, error_model=model, rank=args.rank)
    print("\n".join(summary(res, base.scenario.name)))
    if not res.solutions:
        print("libra-opt: no candidate is feasible", file=sys.stderr)
        return 1
    print(format_top(res, args.top))
    print("\n".join(trust_lines(res, args.top, model)))
    if not args.no_gains:
        t0 = time.perf_counter()
        g = codesign_gains(base, res, space, executor=executor, max_workers=args.workers)
        conv = g["conventional_parallelism"]
        eq = "n/a" if math.isnan(g["equal_split"]) else f"{g['equal_split']:.3f}x"
        cv = (f"{g['conventional']:.3f}x" if not math.isnan(g["conventional"])
              else f"n/a ({g['conventional_reason']})")
        print(f"gain of co-design (another {time.perf_counter() - t0:.1f} s wall time): "
              f"{eq} vs the best parallelization with an equal bandwidth "
              f"split; {cv} vs the conventional layout (TP {conv['tp']} on the HB domain, "
              f"PP {conv['pp']} over scale-out, DP {conv['dp']}) with its optimal bandwidth"
              + ("; objectives without failures" if res.rank == "failures" else ""))
    if args.out is not None:
        for path in _write(res, base, args):
            print(f"wrote {path}")
    return 0


def _write(res: Any, base: Any, args: argparse.Namespace) -> list[Any]:
    """The ``--out`` set: staged, then moved in together with its manifest."""
    from libra_opt.cli.backend import save_drawn
    from libra_opt.explore.sink import spec_fingerprint
    from libra_opt.io.output import write_csv_atomic
    from libra_opt.io.results import (
        RESULTS_CSV,
        RESULTS_PARQUET,
        results_metadata,
        write_results,
        write_run_folder,
    )
    from libra_opt.report.search_plot import plot_search

    table = res.table.assign(index=res.table["index"].astype(str))
    meta = results_metadata(
        "search", base.scenario.name, spec_fingerprint(base), objective=res.objective,
        rank=res.rank,
        hb_domains=args.hb_domain, dim_sizes=args.dim_sizes,
        dim_topologies=args.dim_topologies, space=list(args.space),
        placements=args.placements, rows=len(table),
        stats=dict(res.stats))

    writers: dict[str, Any] = {
        RESULTS_CSV: lambda p: write_csv_atomic(table, p),
        RESULTS_PARQUET: lambda p: write_results(table, p, meta),
        "search.png": lambda p: save_drawn(lambda: plot_search(res, top=len(res.solutions)), p,
                                           bbox_inches="tight")}
    with option_context("--out"):
        return write_run_folder(args.out, writers, meta, overwrite=args.overwrite)

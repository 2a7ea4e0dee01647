"""Command-line interface: a thin layer over the Python API.

Exit codes: 0 success, 1 infeasible/unbounded design or solver failure, 2 bad input.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Sequence
from typing import NoReturn

import numpy as np

from libra_opt.cli import compare as cli_compare
from libra_opt.cli.args import parse_floats
from libra_opt.cli.backend import pyplot
from libra_opt.errors import (
    InfeasibleDesignError,
    InputError,
    LibraOptError,
    UnboundedDesignError,
    short_repr,
)
from libra_opt.options import OBJECTIVES, objective_label

__all__ = ["main", "build_parser"]


def _parse_values(text: str, param: str) -> list[float]:
    """``a,b,c`` or ``start:stop:count`` (linear) or ``start:stop:count:log``.

    At most :data:`~libra_opt.explore.sweep.MAX_SWEEP_POINTS` values (checked before any
    array is made); finite; and > 0 when ``param`` is ``budget_usd`` or ``power_w``.
    """
    from libra_opt.explore.sweep import MAX_SWEEP_POINTS, POSITIVE_LABELS

    def bad(message: str) -> InputError:
        return InputError(message, source="<cli>", field="--values")

    if ":" not in text:
        if text.count(",") >= MAX_SWEEP_POINTS:
            raise bad(f"more than {MAX_SWEEP_POINTS:,} values; a sweep solves at most "
                      f"{MAX_SWEEP_POINTS:,} points")
        vals = parse_floats(text, "--values")
        if not all(np.isfinite(vals)):
            raise bad(f"expected finite numbers, got {short_repr(text)}")
    else:
        parts = text.split(":")
        try:
            start, stop, count = float(parts[0]), float(parts[1]), int(parts[2])
        except (ValueError, IndexError):
            raise bad(f"expected start:stop:count[:log], got {text!r}") from None
        if count < 1 or len(parts) > 4 or (len(parts) == 4 and parts[3] != "log"):
            raise bad(f"expected start:stop:count[:log] with count >= 1, got {text!r}")
        if count > MAX_SWEEP_POINTS:
            raise bad(f"count {count:,} is too large; a sweep solves at most "
                      f"{MAX_SWEEP_POINTS:,} points")
        if not (np.isfinite(start) and np.isfinite(stop)):
            raise bad(f"start and stop must be finite numbers, got {text!r}")
        if len(parts) == 4:
            if start <= 0 or stop <= 0:
                raise bad("log spacing needs positive bounds")
            vals = [float(v) for v in np.geomspace(start, stop, count)]
        else:
            vals = [float(v) for v in np.linspace(start, stop, count)]
    if param in POSITIVE_LABELS:
        neg = [v for v in vals if v <= 0]
        if neg:
            raise bad(f"{param} values must be > 0, got {neg[0]:g}")
    return vals


def _load(args):
    from libra_opt.io import load_scenario

    scen = load_scenario(args.scenario)
    if getattr(args, "objective", None):
        scen = dataclasses.replace(scen, objective=args.objective)
    return scen


def _write_plots(sol, plot_dir: str) -> list[str]:
    """The allocation and breakdown PNGs, named after the scenario's slug, inside ``plot_dir``."""
    plt = pyplot()
    from libra_opt.io.output import confined_path, safe_slug, save_figure_atomic
    from libra_opt.report.plots import plot_allocation, plot_step_breakdown

    slug = safe_slug(sol.scenario.name)
    written = []
    for name, fn in (("allocation", plot_allocation), ("step_breakdown", plot_step_breakdown)):
        path = confined_path(plot_dir, f"{slug}_{name}.png", flag="--plot-dir")
        fig = fn(sol)
        try:
            save_figure_atomic(fig, path, dpi=130, flag="--plot-dir")
        finally:
            plt.close(fig)
        written.append(str(path))
    return written


def _cmd_solve(args) -> int:
    from libra_opt.io.output import check_output_dir
    from libra_opt.optimize.problem import solve
    from libra_opt.report.text import format_solution, solution_to_dict

    if args.plot_dir is not None:
        check_output_dir(args.plot_dir, "--plot-dir")
    sol = solve(_load(args))
    if args.json:
        print(_json(solution_to_dict(sol)))
    else:
        print(format_solution(sol))
    if args.plot_dir is not None:
        for p in _write_plots(sol, args.plot_dir):
            print(f"wrote {p}", file=sys.stderr if args.json else sys.stdout)
    return 0


def _cmd_evaluate(args) -> int:
    from libra_opt.report.text import evaluation_to_dict, format_evaluation
    from libra_opt.scenario.evaluate import evaluate
    from libra_opt.traffic.step_time import check_bandwidth

    scen = _load(args)
    try:
        bw = check_bandwidth(scen.fabric, parse_floats(args.bw, "--bw"), field="--bw")
    except InputError as exc:
        raise InputError(exc.message, source="<cli>", field="--bw") from None
    ev = evaluate(scen, bw)
    if args.json:
        print(_json(evaluation_to_dict(scen, ev)))
    else:
        print(format_evaluation(scen, ev))
        print(f"Objective ({scen.objective}): {objective_label(scen.objective)} = "
              f"{ev.objective_value:.6g}")
    return 0


def _cmd_sweep(args) -> int:
    from libra_opt.explore.sweep import check_sweep, sweep
    from libra_opt.io.output import (
        CSV_SUFFIXES,
        PLOT_SUFFIXES,
        check_writable_output,
        save_figure_atomic,
        write_csv_atomic,
    )
    from libra_opt.optimize.problem import build_problem

    # Outputs and flags first: nothing is loaded, built or solved for a bad command line.
    if args.csv is not None:
        check_writable_output(args.csv, "--csv", CSV_SUFFIXES)
    if args.plot is not None:
        check_writable_output(args.plot, "--plot", PLOT_SUFFIXES)
    if not args.param.strip():
        raise InputError("expected a constraint label, got an empty string", source="<cli>",
                         field="--param")
    values = _parse_values(args.values, args.param)
    problem = build_problem(_load(args))
    try:
        values = check_sweep(problem, args.param, values)
    except InputError as exc:
        flag = "--param" if exc.field == "label" else "--values"
        raise InputError(exc.message, source="<cli>", field=flag) from None

    def progress(i, n, v):
        print(f"[{i}/{n}] {args.param} = {v:,.6g}", file=sys.stderr)

    show = args.progress or sys.stderr.isatty()   # stderr of a script keeps only errors
    df = sweep(problem, args.param, values, progress=progress if show else None)
    if args.csv is not None:
        write_csv_atomic(df, args.csv, index=False, flag="--csv")
        print(f"wrote {args.csv}", file=sys.stderr)
    cols = ["value", "status", "weighted_step_time_s", "network_cost_usd"] + [
        c for c in df.columns if c.startswith("bw_")
    ]
    print(df[[c for c in cols if c in df.columns]].to_string(index=False, float_format=lambda x: f"{x:,.6g}"))
    if args.plot is not None:
        plt = pyplot()
        from libra_opt.report.plots import plot_sweep

        fig = plot_sweep(df, x_label=args.param)
        try:
            save_figure_atomic(fig, args.plot, dpi=130, flag="--plot")
        finally:
            plt.close(fig)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


def _export_workloads(workloads, directory: str) -> None:
    """Each workload as ASTRA-sim text + communicator, named by its slug, inside ``directory``."""
    from libra_opt.io.astra_sim import export_astra_sim
    from libra_opt.io.output import atomic_outputs, confined_path, safe_slug

    taken: set[str] = set()
    for wl in workloads:
        if wl.metrics is None:
            continue
        base = slug = safe_slug(wl.name)
        k = 1
        while slug.casefold() in taken:  # two names with one slug never overwrite each other
            k += 1
            slug = f"{base}_{k}"
        taken.add(slug.casefold())
        path = confined_path(directory, f"{slug}.txt", flag="--export")
        comm = confined_path(directory, f"{slug}_communicator.yml", flag="--export")
        with atomic_outputs(path, comm, flag="--export") as (tmp_path, tmp_comm):
            export_astra_sim(wl, tmp_path, communicator_path=tmp_comm)
        print(f"wrote {path} and {comm}")


def _cmd_workload(args) -> int:
    from libra_opt.io.output import check_output_dir
    from libra_opt.io.scenario_file import load_scenario_with_models
    from libra_opt.report.workload import workload_report
    from libra_opt.traffic.step_time import check_bandwidth

    if args.export is not None:
        check_output_dir(args.export, "--export")
    scen, generated = load_scenario_with_models(args.scenario)
    bw = None
    if args.bw:
        try:
            bw = check_bandwidth(scen.fabric, parse_floats(args.bw, "--bw"), field="--bw")
        except InputError as exc:
            raise InputError(exc.message, source="<cli>", field="--bw") from None
    if not generated:
        raise InputError(
            "no model-based workloads (entries with model/parallelism/device) in this scenario",
            source=scen.source,
            field="workloads",
        )
    for i, g in enumerate(generated.values()):
        if i:
            print()
        print(workload_report(g, scen.fabric, bw, scen.training_loop, scen.collective_model,
                              scen.traffic_model))
    if args.export is not None:
        _export_workloads(scen.workloads, args.export)
    return 0


class _Parser(argparse.ArgumentParser):
    """Argument errors as one line and exit code 2 (``--help`` still prints the usage)."""

    def error(self, message: str) -> NoReturn:
        # ``libra-opt: error:`` for sub-commands too, like every other bad-input error.
        self.exit(2, f"{self.prog.split()[0]}: error: {message} (see {self.prog} --help)\n")


def _json(obj) -> str:
    """JSON with non-finite numbers (an infinite step time) written as null."""

    def clean(x):
        if isinstance(x, float) and not np.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [clean(v) for v in x]
        return x

    return json.dumps(clean(obj), indent=2, allow_nan=False)


def build_parser() -> argparse.ArgumentParser:
    """The ``libra-opt`` argument parser."""
    parser = _Parser(
        prog="libra-opt",
        description="Exact bandwidth allocation for multi-dimensional AI training fabrics.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("solve", help="optimize the bandwidth allocation of a scenario")
    p.add_argument("scenario", help="scenario YAML file, or the name of a shipped example")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--objective", choices=OBJECTIVES, help="override the objective")
    p.add_argument("--plot-dir", help="write allocation and breakdown PNGs here (file names "
                   "from the scenario name, made safe)")
    p.set_defaults(func=_cmd_solve)

    p = sub.add_parser("evaluate", help="evaluate a given bandwidth allocation")
    p.add_argument("scenario", help="scenario YAML file, or the name of a shipped example")
    p.add_argument("--bw", required=True, help="GB/s per NPU for each dimension, e.g. 500,300,150,50")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--objective", choices=OBJECTIVES, help="override the objective")
    p.set_defaults(func=_cmd_evaluate)

    p = sub.add_parser("sweep", help="re-solve over a range of one constraint's bound")
    p.add_argument("scenario", help="scenario YAML file, or the name of a shipped example")
    p.add_argument("--param", required=True, help="budget_usd, power_w or a linear constraint's text")
    p.add_argument("--progress", action="store_true",
                   help="print one progress line per point on stderr (default: only on a terminal)")
    p.add_argument("--values", required=True,
                   help="a,b,c or start:stop:count[:log] (at most 100,000 points; "
                   "--values=-1,2 for a leading minus)")
    p.add_argument("--csv", help="write the table as CSV (.csv)")
    p.add_argument("--plot", help="write a plot of the sweep (.png, .svg or .pdf)")
    p.add_argument("--objective", choices=OBJECTIVES, help="override the objective")
    p.set_defaults(func=_cmd_sweep)

    p = sub.add_parser(
        "workload", help="per-step traffic, memory and FLOPs of the model-based workloads"
    )
    p.add_argument("scenario", help="scenario YAML file, or the name of a shipped example")
    p.add_argument("--bw", help="GB/s per NPU per dimension, to show times (default: none)")
    p.add_argument("--export", metavar="DIR",
                   help="write each workload as ASTRA-sim 1.0 text + LIBRA communicator in DIR")
    p.set_defaults(func=_cmd_workload)

    cli_compare.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``libra-opt``; returns the exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args))
    except InputError as exc:
        print(f"libra-opt: error: {exc.one_line()}", file=sys.stderr)
        return 2
    except (InfeasibleDesignError, UnboundedDesignError) as exc:
        print(f"libra-opt: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    except LibraOptError as exc:
        print(f"libra-opt: solver error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"libra-opt: error: {exc.filename or ''}: cannot write: {exc.strerror}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

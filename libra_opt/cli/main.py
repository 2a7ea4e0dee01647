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
from pathlib import Path
from typing import NoReturn

import numpy as np

from libra_opt.cli import compare as cli_compare
from libra_opt.cli.backend import pyplot
from libra_opt.errors import InfeasibleDesignError, InputError, LibraOptError, UnboundedDesignError
from libra_opt.options import OBJECTIVES, objective_label

__all__ = ["main", "build_parser"]


def _parse_floats(text: str, what: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"expected comma-separated numbers, got {text!r}", source="<cli>", field=what) from None
    if not vals or not all(np.isfinite(vals)):
        raise InputError(f"expected finite numbers, got {text!r}", source="<cli>", field=what)
    return vals


def _parse_values(text: str) -> list[float]:
    """``a,b,c`` or ``start:stop:count`` (linear) or ``start:stop:count:log``."""
    if ":" not in text:
        return _parse_floats(text, "--values")
    parts = text.split(":")
    try:
        start, stop, count = float(parts[0]), float(parts[1]), int(parts[2])
    except (ValueError, IndexError):
        raise InputError(
            f"expected start:stop:count[:log], got {text!r}", source="<cli>", field="--values"
        ) from None
    if count < 1 or len(parts) > 4 or (len(parts) == 4 and parts[3] != "log"):
        raise InputError(
            f"expected start:stop:count[:log] with count >= 1, got {text!r}",
            source="<cli>",
            field="--values",
        )
    if len(parts) == 4:
        if start <= 0 or stop <= 0:
            raise InputError("log spacing needs positive bounds", source="<cli>", field="--values")
        return list(np.geomspace(start, stop, count))
    return list(np.linspace(start, stop, count))


def _load(args):
    from libra_opt.io import load_scenario

    scen = load_scenario(args.scenario)
    if getattr(args, "objective", None):
        scen = dataclasses.replace(scen, objective=args.objective)
    return scen


def _write_plots(sol, plot_dir: str) -> list[str]:
    plt = pyplot()
    from libra_opt.report.plots import plot_allocation, plot_step_breakdown

    out = Path(plot_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fn in (("allocation", plot_allocation), ("step_breakdown", plot_step_breakdown)):
        fig = fn(sol)
        path = out / f"{sol.scenario.name}_{name}.png"
        fig.savefig(path, dpi=130)
        plt.close(fig)
        written.append(str(path))
    return written


def _cmd_solve(args) -> int:
    from libra_opt.optimize.problem import solve
    from libra_opt.report.text import format_solution, solution_to_dict

    sol = solve(_load(args))
    if args.json:
        print(_json(solution_to_dict(sol)))
    else:
        print(format_solution(sol))
    if args.plot_dir:
        for p in _write_plots(sol, args.plot_dir):
            print(f"wrote {p}", file=sys.stderr if args.json else sys.stdout)
    return 0


def _cmd_evaluate(args) -> int:
    from libra_opt.report.text import evaluation_to_dict, format_evaluation
    from libra_opt.scenario.evaluate import evaluate
    from libra_opt.traffic.step_time import check_bandwidth

    scen = _load(args)
    try:
        bw = check_bandwidth(scen.fabric, _parse_floats(args.bw, "--bw"), field="--bw")
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
    from libra_opt.explore.sweep import sweep
    from libra_opt.optimize.problem import build_problem

    scen = _load(args)
    values = _parse_values(args.values)
    problem = build_problem(scen)

    def progress(i, n, v):
        print(f"[{i}/{n}] {args.param} = {v:,.6g}", file=sys.stderr)

    df = sweep(problem, args.param, values, progress=progress)
    if args.csv:
        Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(args.csv, index=False)
        print(f"wrote {args.csv}", file=sys.stderr)
    cols = ["value", "status", "weighted_step_time_s", "network_cost_usd"] + [
        c for c in df.columns if c.startswith("bw_")
    ]
    print(df[[c for c in cols if c in df.columns]].to_string(index=False, float_format=lambda x: f"{x:,.6g}"))
    if args.plot:
        plt = pyplot()
        from libra_opt.report.plots import plot_sweep

        fig = plot_sweep(df, x_label=args.param)
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.plot, dpi=130)
        plt.close(fig)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


def _cmd_workload(args) -> int:
    from libra_opt.io.astra_sim import export_astra_sim
    from libra_opt.io.scenario_file import load_scenario_with_models
    from libra_opt.report.workload import workload_report
    from libra_opt.traffic.step_time import check_bandwidth

    scen, generated = load_scenario_with_models(args.scenario)
    bw = None
    if args.bw:
        try:
            bw = check_bandwidth(scen.fabric, _parse_floats(args.bw, "--bw"), field="--bw")
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
    if args.export:
        out = Path(args.export)
        out.mkdir(parents=True, exist_ok=True)
        for wl in scen.workloads:
            if wl.metrics is None:
                continue
            path = out / f"{wl.name}.txt"
            export_astra_sim(wl, path, communicator_path=out / f"{wl.name}_communicator.yml")
            print(f"wrote {path} and {out / (wl.name + '_communicator.yml')}")
    return 0


class _Parser(argparse.ArgumentParser):
    """Argument errors as one line and exit code 2 (``--help`` still prints the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


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
    p.add_argument("--plot-dir", help="write allocation and breakdown PNGs here")
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
    p.add_argument("--values", required=True, help="a,b,c or start:stop:count[:log]")
    p.add_argument("--csv", help="write the table as CSV")
    p.add_argument("--plot", help="write a PNG of the sweep")
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

"""Command-line interface, a thin layer over the Python API. Exit codes: 0 success, 1
infeasible/unbounded design or solver failure, 2 bad input."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import BrokenExecutor
from pathlib import Path
from typing import NoReturn

from libra_opt.cli import compare as cli_compare
from libra_opt.cli import in_network as cli_in_network
from libra_opt.cli import report as cli_report
from libra_opt.cli import search as cli_search
from libra_opt.cli import sweep as cli_sweep
from libra_opt.cli import validate as cli_validate
from libra_opt.cli.args import (
    add_error_model_argument,
    add_set_argument,
    load_with_sets,
    parse_floats,
)
from libra_opt.cli.backend import save_drawn
from libra_opt.errors import (
    InfeasibleDesignError,
    InputError,
    LibraOptError,
    UnboundedDesignError,
    option_context,
)
from libra_opt.options import OBJECTIVES, objective_label

__all__ = ["main", "build_parser"]


def _load(args):
    """The scenario of ``args``, with ``--set PATH=VALUE`` and ``--objective`` applied."""
    scen = load_with_sets(args.scenario, getattr(args, "set", None))
    if getattr(args, "objective", None):
        scen = dataclasses.replace(scen, objective=args.objective)
    return scen


def _plot_names(scen) -> list[str]:
    """The PNG names ``solve --plot-dir`` writes for ``scen``."""
    from libra_opt.io.output import safe_slug

    slug = safe_slug(scen.name)
    return [f"{slug}_allocation.png", f"{slug}_step_breakdown.png"]


def _write_plots(sol, plot_dir: str) -> list[str]:
    """The allocation and breakdown PNGs inside ``plot_dir``: drawn into a hidden sibling
    folder, then moved in together."""
    from libra_opt.io.output import staged_outputs
    from libra_opt.report.plots import plot_allocation, plot_step_breakdown

    names = _plot_names(sol.scenario)
    with staged_outputs(plot_dir, names, flag="--plot-dir") as staged:
        for name, fn in zip(names, (plot_allocation, plot_step_breakdown), strict=True):
            save_drawn(functools.partial(fn, sol), staged[name])
    return [str(Path(plot_dir) / n) for n in names]


def _cmd_solve(args) -> int:
    from libra_opt.io.output import check_output_dir, prepare_output_dir
    from libra_opt.optimize.problem import solve
    from libra_opt.report.text import format_solution, solution_to_dict

    if args.plot_dir is not None:
        with option_context("--plot-dir"):
            check_output_dir(args.plot_dir)
    errors = _error_model(args)
    scen = _load(args)
    if args.plot_dir is not None:  # the files themselves, before the solve
        prepare_output_dir(args.plot_dir, _plot_names(scen), "--plot-dir", create=False)
    try:
        sol = solve(scen)
    except (InfeasibleDesignError, UnboundedDesignError) as exc:
        if args.json:  # --json prints one object whatever the outcome (exit 1 follows)
            infeasible = isinstance(exc, InfeasibleDesignError)
            print(_json({
                "status": "infeasible" if infeasible else "unbounded",
                "scenario": scen.name, "objective": scen.objective,
                "message": " ".join(str(exc).split()),
                "conflicting_constraints": list(getattr(exc, "constraints", ())),
            }))
        raise
    _print_result(args, scen, sol.evaluation, lambda: solution_to_dict(sol),
                  lambda: format_solution(sol), errors)
    if args.plot_dir is not None:
        for p in _write_plots(sol, args.plot_dir):
            print(f"wrote {p}", file=sys.stderr if args.json else sys.stdout)
    return 0


def _cmd_evaluate(args) -> int:
    from libra_opt.report.text import evaluation_to_dict, format_evaluation
    from libra_opt.scenario.evaluate import evaluate
    from libra_opt.traffic.step_time import check_bandwidth

    errors = _error_model(args)
    scen = _load(args)
    with option_context("--bw", fields=("bw", "--bw")):
        ev = evaluate(scen, check_bandwidth(scen.fabric, parse_floats(args.bw, "--bw"),
                                            field="--bw"))
    _print_result(args, scen, ev, lambda: evaluation_to_dict(scen, ev), lambda: (
        f"{format_evaluation(scen, ev)}\nObjective ({scen.objective}): "
        f"{objective_label(scen.objective)} = {ev.objective_value:.6g}"), errors)
    return 0


def _error_model(args):
    """``--error-model`` read before any work (None: the packaged runs, read when needed)."""
    from libra_opt.io.error_model import load_error_model

    return None if args.error_model is None else load_error_model(args.error_model)


def _print_result(args, scen, ev, as_dict: Callable[[], dict], as_text: Callable[[], str],
                  errors) -> None:
    """The result as text or, with ``--json``, one JSON object, with the error band of each
    model-based workload (``errors`` or the packaged validated runs)."""
    from libra_opt.explore.trust import scenario_bands
    from libra_opt.io.error_model import load_error_model
    from libra_opt.report.trust import band_lines, bands_to_dict

    bands, times = {}, {t.name: t.step_time_s for t in ev.workloads}
    if scen.spec is not None and any(w.model is not None for w in scen.spec.workloads):
        bands = scenario_bands(load_error_model() if errors is None else errors, scen)
    if args.json:
        print(_json({**as_dict(), **({"error_band": bands_to_dict(bands, times)} if bands
                                      else {})}))
    else:
        print("\n".join([as_text(), *band_lines(bands, times)]))


def _check_exportable(workloads, source: str | None) -> None:
    """The export's own check, before anything is printed or written, blamed on ``--export``."""
    from libra_opt.io.astra_sim import check_exportable

    for wl in workloads:
        if wl.metrics is None:
            continue
        try:
            check_exportable(wl)
        except InputError as exc:
            raise InputError(
                f"workload {wl.name[:60]!r} of {source or 'the scenario'} cannot be written as "
                f"ASTRA-sim 1.0 text: {exc.message}", source="<cli>", field="--export") from None


def _export_workloads(workloads, directory: str) -> None:
    """Each workload as ASTRA-sim text + communicator, named by its slug, inside ``directory``."""
    from libra_opt.io.astra_sim import export_astra_sim
    from libra_opt.io.output import safe_slug, staged_outputs

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
        names = [f"{slug}.txt", f"{slug}_communicator.yml"]
        with staged_outputs(directory, names, flag="--export") as staged:
            export_astra_sim(wl, staged[names[0]], communicator_path=staged[names[1]])
        print(f"wrote {Path(directory) / names[0]} and {Path(directory) / names[1]}")


def _cmd_workload(args) -> int:
    from libra_opt.io.output import check_output_dir
    from libra_opt.report.workload import workload_report, workload_summary
    from libra_opt.scenario.compile import compile_with_models
    from libra_opt.traffic.step_time import check_bandwidth

    if args.export is not None:
        with option_context("--export"):
            check_output_dir(args.export)
    scen = load_with_sets(args.scenario, args.set)
    assert scen.spec is not None  # a scenario read from a file keeps its spec
    scen, generated = compile_with_models(scen.spec, previous=scen)
    if args.export is not None:  # refuse before anything is printed or written
        _check_exportable(scen.workloads, scen.source)
    bw = None
    if args.bw:
        with option_context("--bw", fields=("--bw",)):
            bw = check_bandwidth(scen.fabric, parse_floats(args.bw, "--bw"), field="--bw")
    if not generated:
        raise InputError("no model-based workloads (entries with model/parallelism/device) "
                         "in this scenario", source=scen.source, field="workloads")
    if args.json:
        print(_json([workload_summary(g, scen.fabric, bw, scen.timing)
                     for g in generated.values()]))
    else:
        print("\n\n".join(workload_report(g, scen.fabric, bw, scen.timing)
                          for g in generated.values()))
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
    return json.dumps(json.loads(json.dumps(obj), parse_constant=lambda _: None), indent=2,
                      allow_nan=False)


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
    add_error_model_argument(p)
    add_set_argument(p)
    p.set_defaults(func=_cmd_solve)

    p = sub.add_parser("evaluate", help="evaluate a given bandwidth allocation")
    p.add_argument("scenario", help="scenario YAML file, or the name of a shipped example")
    p.add_argument("--bw", required=True, help="GB/s per NPU for each dimension, e.g. 500,300,150,50")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--objective", choices=OBJECTIVES, help="override the objective")
    add_error_model_argument(p)
    add_set_argument(p)
    p.set_defaults(func=_cmd_evaluate)

    cli_sweep.register(sub)

    p = sub.add_parser(
        "workload", help="per-step traffic, memory and FLOPs of the model-based workloads"
    )
    p.add_argument("scenario", help="scenario YAML file, or the name of a shipped example")
    p.add_argument("--bw", help="GB/s per NPU per dimension, to show times (default: none)")
    p.add_argument("--export", metavar="DIR",
                   help="write each workload as ASTRA-sim 1.0 text + LIBRA communicator in DIR")
    p.add_argument("--json", action="store_true",
                   help="print the numbers (breakdown, MFU, HFU, tokens/s...) as JSON")
    add_set_argument(p)
    p.set_defaults(func=_cmd_workload)

    cli_compare.register(sub)
    cli_in_network.register(sub)
    cli_validate.register(sub)
    cli_report.register(sub)
    cli_search.register(sub)
    return parser


def _reader_gone() -> int:
    """The reader of stdout went away (``libra-opt solve ... | head -1``): stop quietly with
    the status of a Unix tool ended by SIGPIPE (128 + 13), writing nothing more."""
    # the final flush must not fail again (a captured stdout has no descriptor: no flush)
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 141


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``libra-opt``; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.command_line = ["libra-opt", *argv]  # what a report records as its command
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:
        return _reader_gone()
    except InputError as exc:
        print(f"libra-opt: error: {exc.one_line()}", file=sys.stderr)
        return 2
    except (InfeasibleDesignError, UnboundedDesignError) as exc:
        print(f"libra-opt: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    except LibraOptError as exc:
        print(f"libra-opt: solver error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    except BrokenExecutor as exc:  # a worker process died (killed, out of memory)
        print(f"libra-opt: a worker process died: {' '.join(str(exc).split())}",
              file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"libra-opt: error: {exc.filename or ''}: cannot write: {exc.strerror}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # outside a sweep's own handling: one line, no traceback
        print("libra-opt: interrupted", file=sys.stderr)
        return 130

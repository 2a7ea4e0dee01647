"""``libra-opt sweep``: solve a scenario over a grid of axes (any path of
:mod:`libra_opt.explore.overrides`) and print the table or write it to ``--out DIR``, whose
lock the run holds until its Parquet file, plots and manifest are written. SIGTERM stops
it as Ctrl-C does (finished points kept, staging folders removed).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import logging
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from libra_opt.cli.args import (
    add_executor_arguments,
    blamed_on_set,
    checked_executor,
    parse_floats,
    parse_sets,
)
from libra_opt.errors import InputError, short_repr
from libra_opt.explore.grid import MAX_GRID_POINTS
from libra_opt.options import OBJECTIVES

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["register", "run", "parse_values", "parse_axis"]

logger = logging.getLogger(__name__)

POSITIVE = ("budget_usd", "power_w", "constraints.budget_usd", "constraints.power_w")
_TOO_MANY = (f"more than {MAX_GRID_POINTS:,} values; a sweep solves at most "
             f"{MAX_GRID_POINTS:,} points")
#: Plots ``--plots`` may write into ``--out``.
PLOT_NAMES = ("sweep.png", "pareto.png", "bandwidth.png")


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``sweep`` sub-command to ``subparsers`` and return its parser."""
    p = subparsers.add_parser(
        "sweep", help="re-solve over a grid of budgets, bounds or scenario fields",
        description="Solve a scenario at every point of a grid. An axis is budget_usd, "
        "power_w, a linear constraint's text or any scenario field by dotted path "
        "(the paths of --set). Budgets, caps, constraints' right-hand sides and workload "
        "weights re-solve one built problem with new numbers.")
    p.add_argument("scenario", help="scenario YAML file, or the name of a shipped example")
    p.add_argument("--axis", action="append", default=[], metavar="NAME=VALUES",
                   help="NAME=start:stop:count[:log] or NAME=v1,v2,... (repeatable); "
                   "list values are YAML flow lists, split at the commas outside brackets: "
                   "'in_network_reduction=[],[pod],[pod,node]' is three points")
    p.add_argument("--zip", action="store_true",
                   help="pair the axes' values (one length) instead of their product")
    p.add_argument("--out", metavar="DIR", help="write DIR/results.csv (created if missing) "
                   "instead of printing the table")
    p.add_argument("--plots", action="store_true",
                   help="with --out: also write DIR/sweep.png, DIR/pareto.png and, for a "
                   "budget axis, DIR/bandwidth.png (a second axis with many values is shown "
                   "at a dozen of them, evenly spaced)")
    p.add_argument("--parquet", action="store_true",
                   help="with --out: also write DIR/results.parquet (its metadata in the "
                   "Parquet schema) when the run completes")
    add_executor_arguments(p)
    p.add_argument("--batch-size", type=int, metavar="N",
                   help="points per task shipped to a worker and per write to --out "
                   "(default: about four batches per worker, at most 1000)")
    p.add_argument("--resume", action="store_true",
                   help="with --out: continue the interrupted run in DIR, solving only the "
                   "points missing from DIR/results.csv")
    p.add_argument("--overwrite", action="store_true",
                   help="with --out: remove the earlier run's files in DIR first (a "
                   "non-empty DIR is refused otherwise)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                   help="override a scenario field before sweeping (repeatable)")
    p.add_argument("--objective", choices=OBJECTIVES, help="override the objective")
    p.set_defaults(func=run)
    return p


def _axis_error(message: str) -> InputError:
    return InputError(message, source="<cli>", field="--axis")


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def parse_values(text: str, name: str) -> list[Any]:
    """``a,b,c`` or ``start:stop:count`` (linear) or ``start:stop:count:log``.

    At most :data:`~libra_opt.explore.grid.MAX_GRID_POINTS` values (checked before any array
    is made); budgets and power caps > 0. A ``text`` holding ``[`` or ``{`` is YAML flow
    values separated by the commas outside brackets (:func:`_flow_values`).

    Examples
    --------
    >>> parse_values("1:3:3", "x"), parse_values("1e7:1e9:3:log", "budget_usd")
    ([1.0, 2.0, 3.0], [10000000.0, 100000000.0, 1000000000.0])
    >>> parse_values("pipelined, sequential", "collective_model")
    ['pipelined', 'sequential']
    >>> parse_values("[],[pod],[pod, node]", "in_network_reduction")
    [[], ['pod'], ['pod', 'node']]
    """
    from libra_opt.explore.overrides import parse_value

    vals: list[Any]
    if "[" in text or "{" in text:
        vals = _flow_values(text)
        if name in POSITIVE and not all(map(_is_number, vals)):
            raise _axis_error(f"{name} takes numbers, got {short_repr(text)}")
    elif ":" not in text:
        if text.count(",") >= MAX_GRID_POINTS:
            raise _axis_error(_TOO_MANY)
        vals = [parse_value(x) for x in text.split(",") if x.strip()]
        numeric = [v for v in vals if _is_number(v)]
        if not vals or (name in POSITIVE and len(numeric) < len(vals)):
            parse_floats(text, "--axis")  # "expected comma-separated numbers"
        if not all(np.isfinite(v) for v in numeric):
            raise _axis_error(f"expected finite numbers, got {short_repr(text)}")
    else:
        parts = text.split(":")
        try:
            start, stop, count = float(parts[0]), float(parts[1]), int(parts[2])
        except (ValueError, IndexError):
            raise _axis_error(f"expected start:stop:count[:log], got {short_repr(text)}") from None
        if count < 1 or len(parts) > 4 or (len(parts) == 4 and parts[3] != "log"):
            raise _axis_error("expected start:stop:count[:log] with count >= 1, got "
                              f"{short_repr(text)}")
        if count > MAX_GRID_POINTS:
            raise _axis_error(f"count {count:,} is too large; a sweep solves at most "
                              f"{MAX_GRID_POINTS:,} points")
        if not (np.isfinite(start) and np.isfinite(stop)):
            raise _axis_error(f"start and stop must be finite numbers, got {short_repr(text)}")
        if len(parts) == 4 and (start <= 0 or stop <= 0):
            raise _axis_error("log spacing needs positive bounds")
        vals = (np.geomspace if len(parts) == 4 else np.linspace)(start, stop, count).tolist()
    neg = [v for v in vals if v <= 0] if name in POSITIVE else []
    if neg:
        raise _axis_error(f"{name} values must be > 0, got {neg[0]:g}")
    return vals


def _flow_values(text: str) -> list[Any]:
    """YAML flow values separated by the commas outside brackets: ``[],[pod],[pod,node]`` is
    three values, ``[pod,node]`` alone one, ``none,[pod]`` a scalar and a list."""
    from libra_opt.explore.overrides import parse_value

    closing = {"]": "[", "}": "{"}
    items: list[str] = []
    stack: list[str] = []
    start = 0
    for i, ch in enumerate(text):
        if ch in "[{":
            stack.append(ch)
        elif ch in "]}" and (not stack or stack.pop() != closing[ch]):
            stack = ["?"]
            break
        elif ch == "," and not stack:
            items.append(text[start:i])
            start = i + 1
    if stack:
        raise _axis_error(f"unbalanced brackets in {short_repr(text)}; expected YAML flow "
                          "values separated by commas, e.g. [],[a],[a,b]")
    items.append(text[start:])
    if len(items) > MAX_GRID_POINTS:
        raise _axis_error(_TOO_MANY)
    vals: list[Any] = []
    for item in items:
        if not item.strip():
            raise _axis_error(f"empty value in {short_repr(text)} (two commas in a row, or a "
                              "comma at an end)")
        try:
            vals.append(parse_value(item))
        except InputError:
            raise _axis_error(f"malformed list or mapping {short_repr(item.strip())}: expected "
                              "a YAML flow value such as [a, b] or {k: v}") from None
    return vals


def parse_axis(text: str) -> tuple[str, list[Any]]:
    """``NAME=VALUES`` split at the last ``=`` (a constraint's text holds ``==``, ``>=``).

    Examples
    --------
    >>> parse_axis("sum(bw) == 1000=500:1000:2")
    ('sum(bw) == 1000', [500.0, 1000.0])
    """
    name, sep, values = text.rpartition("=")
    name = name.strip()
    if not sep or not name or not values.strip() or name[-1] in "=<>!":
        raise _axis_error("expected NAME=start:stop:count[:log] or NAME=v1,v2,..., got "
                          f"{short_repr(text)}")
    try:
        return name, parse_values(values, name)
    except InputError as exc:
        raise _axis_error(f"{name}: {exc.message}") from None


def _check_outputs(args: argparse.Namespace) -> Any:
    """The outputs and the executor flags, checked before anything else; returns the
    executor options."""
    from libra_opt.io.output import prepare_output_dir

    if args.out is not None:
        from libra_opt.io.results import (
            MANIFEST,
            RESULTS_CSV,
            RESULTS_PARQUET,
            check_results_folder,
        )

        names = [RESULTS_CSV, MANIFEST, *(PLOT_NAMES if args.plots else ()),
                 *((RESULTS_PARQUET,) if args.parquet else ())]
        prepare_output_dir(args.out, names, "--out", create=False)
        check_results_folder(args.out, resume=args.resume, overwrite=args.overwrite)
    for flag in ("plots", "resume", "overwrite", "parquet"):
        if getattr(args, flag) and args.out is None:
            raise InputError(f"--{flag} works on the --out directory: give --out DIR",
                             source="<cli>", field=f"--{flag}")
    if args.workers is not None and args.workers < 1:
        raise InputError(f"expected a number of workers >= 1, got {args.workers}",
                         source="<cli>", field="--workers")
    if args.batch_size is not None and args.batch_size < 1:
        raise InputError(f"expected a batch size >= 1, got {args.batch_size}",
                         source="<cli>", field="--batch-size")
    from libra_opt.explore.executors import ExecutorOptions

    return checked_executor(args, lambda: ExecutorOptions(
        args.executor, max_workers=args.workers, scheduler=args.scheduler,
        batch_size=args.batch_size, progress=False if args.no_progress else None))


def _axes(args: argparse.Namespace) -> dict[str, list[Any]]:
    axes: dict[str, list[Any]] = {}
    for text in args.axis:
        name, values = parse_axis(text)
        if name in axes:
            raise _axis_error(f"axis {short_repr(name, 80)} is given twice")
        axes[name] = values
    if not axes:
        raise _axis_error("give at least one --axis NAME=VALUES")
    return axes


def _draw_plots(df: pd.DataFrame, axes: dict[str, list[Any]], staged: dict) -> list[str]:
    """Draw the sweep, its Pareto front and, for a budget axis, the bandwidth bought into
    ``staged`` (name -> path); returns the names."""
    from libra_opt.cli.backend import pyplot, save_drawn

    pyplot()
    from libra_opt.report.plots import plot_bandwidth_vs_budget, plot_pareto, plot_sweep

    draws = [("sweep.png", lambda: plot_sweep(df, x=next(iter(axes)))),
             ("pareto.png", lambda: plot_pareto(df))]
    if "budget_usd" in axes:
        draws.append(("bandwidth.png", lambda: plot_bandwidth_vs_budget(df, x="budget_usd")))
    for name, draw in draws:
        save_drawn(draw, staged[name], flag="--out")
    return [name for name, _ in draws]


def run(args: argparse.Namespace) -> int:
    """Execute ``sweep`` for parsed ``args``; returns 0 (errors raise)."""
    from libra_opt.explore.overrides import ScenarioBase

    # The command line first (outputs, flags, values), then the scenario, then the work.
    options = _check_outputs(args)
    axes = _axes(args)
    sets = parse_sets(args.set)
    if args.objective:
        sets["objective"] = args.objective
    from libra_opt.io import load_scenario
    from libra_opt.io.scenario_file import resolve_spec

    base = ScenarioBase.of(load_scenario(args.scenario), resolve_spec)
    if sets:
        with blamed_on_set():
            base = base.derive(sets)
    sweep = importlib.import_module("libra_opt.explore.sweep")
    sink = None
    if args.out is not None:
        from libra_opt.io.results import results_stream

        sink = results_stream(args.out, resume=args.resume, overwrite=args.overwrite,
                              hold_after_finish=True)   # held until its plots are written
    t0 = time.perf_counter()
    signals: list[int] = []
    with _signals_interrupt(signals), contextlib.ExitStack() as held:
        if sink is not None:  # the folder stays held until its other files are written
            held.callback(sink.close)
        try:
            df = sweep.sweep(base, axes, zip=args.zip, options=dataclasses.replace(
                options, stop=lambda: bool(signals), out=sink))
        except sweep.SweepInterrupted as exc:
            kept = (f"kept {exc.kept:,} of {exc.total:,} points in "
                    f"{exc.path}/results.csv; continue with --resume" if exc.path else
                    f"stopped after {exc.kept:,} of {exc.total:,} points; nothing written "
                    "(--out DIR keeps finished points)")
            print(f"libra-opt: interrupted: {kept}", file=sys.stderr)
            return 128 + (signals[-1] if signals else signal.SIGINT)
        except InputError as exc:
            if exc.field in axes:
                raise InputError(f"{exc.field}: {exc.message}", source="<cli>",
                                 field="--axis") from None
            raise
        wall_s = time.perf_counter() - t0
        try:
            _write_outputs(args, df, axes, wall_s,
                           0 if sink is None else sink.kept_at_open, lambda: bool(signals))
        except KeyboardInterrupt:  # the plots' staging folder is gone with its block
            kept = (f"; every point is kept in {args.out}/results.csv: run again with "
                    "--resume to write the rest" if args.out is not None else "")
            print(f"libra-opt: interrupted while writing the outputs{kept}", file=sys.stderr)
            return 128 + (signals[-1] if signals else signal.SIGINT)
    return 0


def _write_outputs(args: argparse.Namespace, df: pd.DataFrame, axes: dict[str, list[Any]],
                   wall_s: float, kept: int, stopped: Callable[[], bool]) -> None:
    """Print the table of a finished sweep or, holding the folder's lock, write ``--out``'s
    Parquet file, plots (moved in only if not ``stopped()``: a signal whose
    ``KeyboardInterrupt`` was swallowed still stops them) and manifest. ``kept`` points were
    taken from an earlier run, the rest solved in ``wall_s``."""
    if args.out is None:
        cols = [c for c in df.columns if c in axes or c.endswith("_axis")]
        cols += ["status", "weighted_step_time_s", "network_cost_usd"]
        cols += [c for c in df.columns if c.startswith("bw_")]
        cols += [c for c in ("goodput", "job_mttf_h", "effective_objective") if c in df]
        print(df[cols].to_string(index=False, float_format=lambda x: f"{x:,.6g}"))
        return
    from libra_opt.io.output import confined_path, staged_outputs
    from libra_opt.io.results import (
        RESULTS_CSV,
        RESULTS_PARQUET,
        read_metadata,
        record_run_files,
        write_results,
    )

    path = confined_path(args.out, "results.csv", flag="--out")
    summary = ", ".join(f"{n} {s}" for s, n in df["status"].value_counts().items())
    n = len(df)
    solved = n - kept   # the time and rate are those of the points solved now
    took = f"in {wall_s:.2f} s, {1e3 * wall_s / max(solved, 1):.2f} ms per point"
    if not kept:
        done = f" {took}"
    else:  # resumed
        done = (f": {solved:,} solved now" + (f" {took}" if solved else "")
                + f", {kept:,} from the earlier run")
    print(f"wrote {path}: {n:,} points ({summary}){done}")
    # the results folder is still held (locked) by the finished sweep's stream
    if args.parquet:
        pq = confined_path(args.out, "results.parquet", flag="--out")
        write_results(df, pq, read_metadata(args.out), flag="--out")
        print(f"wrote {pq}")
    if args.plots:
        # every plot is drawn into a hidden sibling folder, then all are moved in together
        with staged_outputs(args.out, PLOT_NAMES, flag="--out") as staged:
            written = _draw_plots(df, axes, staged)
            if stopped():
                raise KeyboardInterrupt
        for name in written:
            print(f"wrote {confined_path(args.out, name, flag='--out')}")
    record_run_files(args.out, (RESULTS_CSV, RESULTS_PARQUET, *PLOT_NAMES))


@contextlib.contextmanager
def _signals_interrupt(received: list[int]):
    """Inside, SIGTERM stops the sweep like Ctrl-C; ``received`` collects the signal numbers
    (the sweep polls it: a ``KeyboardInterrupt`` raised in C code can be lost). An ignored
    signal stays ignored."""

    def stop(signum, frame):
        received.append(signum)
        raise KeyboardInterrupt

    old = {}
    try:
        for s in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(s) is not signal.SIG_IGN:
                old[s] = signal.signal(s, stop)
    except ValueError:  # not the main thread: leave the handlers alone
        yield
        return
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)

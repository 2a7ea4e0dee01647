"""``libra-opt report``: a design-review report of a scenario, ``DIR/report.html`` and
``DIR/report.md`` with its PNGs (:func:`libra_opt.write_report`)."""

from __future__ import annotations

import argparse
import shlex
import sys

from libra_opt.cli.args import add_set_argument, load_with_sets, parse_sets
from libra_opt.cli.backend import pyplot
from libra_opt.errors import InputError, option_context

__all__ = ["register", "run"]

MAX_REPORT_POINTS = 1000   # of the report's budget sweep


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``report`` sub-command to ``subparsers`` and return its parser."""
    p = subparsers.add_parser(
        "report", help="write a self-contained HTML report (and Markdown) of a scenario",
        description="Solve a scenario and write DIR/report.html (one self-contained file) and "
        "DIR/report.md with its PNGs: the solution, constraints and shadow prices, baselines, "
        "sensitivity, a budget sweep with its Pareto front, the fabric-family comparison, and a "
        "co-design search of a model-based workload's parallelization and placement.")
    p.add_argument("scenario", help="scenario YAML file, or the name of a shipped example")
    p.add_argument("--out", required=True, metavar="DIR", help="directory to write into "
                   "(created if missing); a non-empty DIR is refused unless --overwrite")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the earlier run's files in DIR (those this report does not "
                   "write are removed once the new report is ready)")
    p.add_argument("--budget-points", type=int, default=25,
                   help="points of the budget sweep (default 25)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_set_argument(p)
    p.add_argument("--no-search", action="store_true",
                   help="skip the co-design search section's search")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Execute ``report`` for parsed ``args``; prints the written paths and returns 0."""
    import libra_opt as lo
    from libra_opt.io.results import check_run_folder
    from libra_opt.report.html import HTML_NAME, MARKDOWN_NAME, Provenance

    # the command line first (the folder, empty unless --overwrite), then the work
    with option_context("--out"):
        check_run_folder(args.out, [HTML_NAME, MARKDOWN_NAME], overwrite=args.overwrite)
    if not 2 <= args.budget_points <= MAX_REPORT_POINTS:
        raise InputError(f"expected 2 to {MAX_REPORT_POINTS} points, got {args.budget_points}",
                         source="<cli>", field="--budget-points")
    sets = parse_sets(args.set)
    pyplot()   # draw with Agg: the command only writes files
    scen = load_with_sets(args.scenario, args.set)
    command = shlex.join(getattr(args, "command_line", None) or ["libra-opt", *sys.argv[1:]])
    prov = Provenance(command=command, overrides=tuple(f"{k}={v}" for k, v in sets.items()))
    with option_context("--out", fields=("out_dir",)):  # write_report names its out_dir
        written = lo.write_report(scen, args.out, budget_points=args.budget_points,
                                  progress=False if args.no_progress else None,
                                  provenance=prov, search=not args.no_search,
                                  overwrite=args.overwrite)
    n_png = sum(k.startswith("png:") for k in written)
    print(f"wrote {written['html']}")
    print(f"wrote {written['markdown']} and {n_png} PNGs")
    return 0

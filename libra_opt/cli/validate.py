"""``libra-opt validate``: the step-time model against published (or your own) runs.

Register it in the main CLI with ``cli_validate.register(sub)``; errors surface as
:class:`~libra_opt.errors.InputError` (one line, exit code 2) through the main ``try``.
"""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``validate`` sub-command to ``subparsers`` and return its parser."""
    p = subparsers.add_parser(
        "validate",
        help="compare the step-time model with published training runs",
        description="Predict every row of the packaged validation tables (or --table) and "
        "print published vs predicted values, the error per row and the average and worst "
        "error per table (calibration rows excluded).",
    )
    p.add_argument("--table", action="append", metavar="NAME",
                   help="a packaged table name or a YAML file of your own runs (repeatable; "
                   "default: every packaged table)")
    p.add_argument("--out", metavar="DIR",
                   help="write validation.png (predicted vs published) into DIR")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Execute ``validate`` for parsed ``args``; prints the table and returns 0."""
    from libra_opt.generators.validation import validate
    from libra_opt.io.output import check_output_dir, confined_path, save_figure_atomic
    from libra_opt.io.validation import load_validation_table, validation_table_names
    from libra_opt.report.validation import validation_report

    if args.out is not None:
        check_output_dir(args.out, "--out")
    names = args.table or list(validation_table_names())
    tables = [load_validation_table(n) for n in names]
    results = [validate(t) for t in tables]
    print(validation_report(results))
    if args.out is not None:
        from libra_opt.cli.backend import pyplot
        from libra_opt.report.validation import plot_validation

        plt = pyplot()
        fig = plot_validation(results)
        path = confined_path(args.out, "validation.png", flag="--out")
        try:
            save_figure_atomic(fig, path, dpi=130, flag="--out")
        finally:
            plt.close(fig)
        print(f"wrote {path}")
    return 0

"""``libra-opt validate``: the step-time model against published (or your own) runs."""

from __future__ import annotations

import argparse
from dataclasses import replace

__all__ = ["register", "run"]

_DEVICES_FILE = "calibrated_devices.yaml"


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``validate`` sub-command to ``subparsers`` and return its parser."""
    p = subparsers.add_parser(
        "validate", help="compare the step-time model with published training runs",
        description="Predict every row of the packaged validation tables (or --table) and "
        "print published vs predicted values, the error per row and the average and worst "
        "error per table (calibration rows excluded). With --calibrate, first fit one or two "
        "device constants on the rows marked 'calibrate: true' (per device) and predict with "
        "them: the way to see how far to trust the model on your own hardware.")
    p.add_argument("--table", action="append", metavar="NAME",
                   help="a packaged table name or a YAML file of your own runs (repeatable; "
                   "default: every packaged table)")
    p.add_argument("--calibrate", metavar="CONSTANTS",
                   help="comma-separated device constants to fit before predicting, one or "
                   "two of default_efficiency, mem_efficiency, gemm_k_overhead, "
                   "kernel_overhead_s")
    p.add_argument("--calibrate-rows", choices=("marked", "all"), default="marked",
                   help="rows the constants are fitted on: 'marked' (calibrate: true; the "
                   "others validate) or 'all' (an in-sample least-squares fit on every row: how "
                   "close these constants can bring the model to all the rows at once, not a "
                   "validation)")
    p.add_argument("--calibrate-stacks", action="store_true",
                   help="first fit the one efficiency constant of each software stack on the "
                   "rows marked 'calibrate: stack' (per stack and device) and predict with the "
                   "fitted constants (the packaged constants are these fits)")
    p.add_argument("--error-model", metavar="FILE",
                   help="write the validated runs (each row's error and what it ran) to FILE: "
                   "the error model that search, solve and evaluate draw their error bands "
                   "from (give it to them with --error-model)")
    p.add_argument("--out", metavar="DIR",
                   help="write validation.png (predicted vs published), variants.png (predicted vs "
                   "measured cost of each variant set) into DIR, and with "
                   f"--calibrate {_DEVICES_FILE} (device entries for scenario files)")
    p.set_defaults(func=run)
    return p


def _constants(text: str) -> list[str]:
    from libra_opt.errors import InputError
    from libra_opt.explore.calibration import CALIBRABLE

    names = [n.strip() for n in text.split(",")]
    bad = [n for n in names if n not in CALIBRABLE]
    if bad or not 1 <= len(names) <= 2 or len(set(names)) != len(names):
        raise InputError(
            f"expected one or two distinct names of {', '.join(CALIBRABLE)} separated by a "
            f"comma, got {text[:80]!r}", source="<cli>", field="--calibrate")
    return names


def _with_devices(table, devices):
    """``table`` with its clusters' devices replaced by ``devices`` (by key)."""
    rows = tuple(replace(r, cluster=replace(r.cluster, device=devices[r.cluster.device.key]))
                 if r.cluster.device.key in devices else r for r in table.rows)
    return replace(table, rows=rows)


def run(args: argparse.Namespace) -> int:
    """Execute ``validate`` for parsed ``args``; prints the table and returns 0."""
    from libra_opt.errors import InputError, option_context
    from libra_opt.explore.calibration import DeviceCalibration, calibrate_tables
    from libra_opt.explore.ranking import stack_summaries, variant_rankings
    from libra_opt.explore.validation import validate
    from libra_opt.generators.devices import Device
    from libra_opt.io.output import (
        check_output_dir,
        check_writable_output,
        confined_path,
        write_text_atomic,
    )
    from libra_opt.io.validation import load_validation_table, validation_table_names
    from libra_opt.report.validation import stack_report, validation_report, variant_report

    constants = _constants(args.calibrate) if args.calibrate is not None else None
    if constants is None and args.calibrate_rows != "marked":
        raise InputError("--calibrate-rows needs --calibrate", source="<cli>",
                         field="--calibrate-rows")
    if args.out is not None:
        with option_context("--out"):
            check_output_dir(args.out)
    if args.error_model is not None:
        check_writable_output(args.error_model, "--error-model", (".yaml", ".yml"))
    names = args.table or list(validation_table_names())
    tables = [load_validation_table(n) for n in names]
    devices: dict[str, Device] = {}
    calibrations: tuple[DeviceCalibration, ...] = ()
    if constants is not None:
        with option_context("--calibrate", fields=("calibrate", "rows")):
            calibrations = calibrate_tables(tables, constants, rows=args.calibrate_rows)
        devices = {c.device.key: c.device for c in calibrations}
        for c in calibrations:
            print(c.describe())
        if args.calibrate_rows == "all":
            print("in-sample fit on every row (least squares in log error): how close these "
                  "constants can bring the model to all the rows at once, not a validation")
    if args.calibrate_stacks:
        from libra_opt.explore.calibration import calibrate_stacks
        from libra_opt.generators.stacks import with_stacks

        if devices:  # fit the stacks on top of freshly fitted device constants
            tables = [_with_devices(t, devices) for t in tables]
        stacks = calibrate_stacks(tables)
        if not stacks:
            raise InputError("no row is marked 'calibrate: stack'", source="<cli>",
                             field="--calibrate-stacks")
        for st in stacks:
            print(st.describe())
            base = devices.get(st.device) or next(
                r.cluster.device for t in tables for r in t.rows
                if r.cluster.device.key == st.device)
            devices[st.device] = with_stacks(base, {st.stack: st.after})
    results = [validate(t, devices) for t in tables]
    if args.calibrate_rows == "all":  # every row was fitted: report all of them
        results = [replace(r, rows=tuple(replace(x, calibrate=False) for x in r.rows))
                   for r in results]
    print(validation_report(results, in_sample=args.calibrate_rows == "all"))
    variant_sets = variant_rankings(results)
    print(stack_report(stack_summaries(results), in_sample=args.calibrate_rows == "all"))
    print(variant_report(variant_sets))
    if args.error_model is not None:
        from libra_opt import __version__
        from libra_opt.explore.trust import validated_runs
        from libra_opt.generators.error_model import ErrorModel
        from libra_opt.io.error_model import error_model_yaml

        model = ErrorModel(validated_runs(tables, results))
        with option_context("--error-model"):
            write_text_atomic(args.error_model, error_model_yaml(model, names, __version__))
        print(f"wrote {args.error_model}")
    if args.out is not None:
        from libra_opt.cli.backend import save_drawn
        from libra_opt.report.validation import plot_validation, plot_variants

        if calibrations:
            from libra_opt.io.presets import calibrated_devices_yaml

            with option_context("--out"):
                path = confined_path(args.out, _DEVICES_FILE)
                write_text_atomic(path, calibrated_devices_yaml(calibrations, names))
            print(f"wrote {path}")
        figures = [("validation.png", lambda: plot_validation(results))]
        if any(r.variant_set for t in results for r in t.rows):
            figures.append(("variants.png", lambda: plot_variants(variant_sets)))
        for name, draw in figures:
            with option_context("--out"):
                path = save_drawn(draw, confined_path(args.out, name))
            print(f"wrote {path}")
    return 0

"""Parsing of the command-line values shared by the commands."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from libra_opt.errors import InputError, short_repr

if TYPE_CHECKING:
    from libra_opt.scenario.scenario import Scenario

__all__ = ["SET_HELP", "add_error_model_argument", "add_executor_arguments", "add_set_argument",
           "blamed_on_set", "checked_executor", "load_with_sets", "parse_floats", "parse_sets"]

T = TypeVar("T")
SET_HELP = ("override a scenario field by dotted path, e.g. budget_usd=3e7, "
            "fabric.hb_domain=16, workloads.NAME.parallelism.tp=4, 'sum(bw) == 1000=1200' "
            "(repeatable)")


def parse_floats(text: str, flag: str) -> list[float]:
    """Comma-separated numbers given to ``flag``; range checks are left to the caller.

    Examples
    --------
    >>> parse_floats("450, 50", "--bw")
    [450.0, 50.0]
    >>> parse_floats("450,abc", "--bw")
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: <cli>: --bw: expected comma-separated numbers, got '450,abc'
    """
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        vals = []
    if not vals:
        raise InputError(f"expected comma-separated numbers, got {short_repr(text)}",
                         source="<cli>", field=flag)
    return vals


def parse_sets(items: Sequence[str] | None, flag: str = "--set") -> dict[str, str]:
    """``--set PATH=VALUE`` items as path -> value text (parsed against the path later).

    Examples
    --------
    >>> parse_sets(["fabric.hb_domain=16", "sum(bw) == 1000=1200"])
    {'fabric.hb_domain': '16', 'sum(bw) == 1000': '1200'}
    >>> parse_sets(["a=1", "a=2"])
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: <cli>: --set: 'a' is set twice
    """
    from libra_opt.explore.overrides import parse_assignment

    out: dict[str, str] = {}
    for text in items or ():
        path, value = parse_assignment(text, flag)
        if path in out:
            raise InputError(f"{short_repr(path, 80)} is set twice", source="<cli>", field=flag)
        out[path] = value
    return out


def add_executor_arguments(parser) -> None:
    """``--executor``, ``--scheduler`` and ``--workers``: where a sweep's or a search's work
    runs."""
    from libra_opt.explore.executors import EXECUTORS, SCHEDULER_ENV

    parser.add_argument("--executor", choices=EXECUTORS, default="serial",
                        help="serial (default), processes (a local process pool) or dask (a "
                        "loopback cluster of worker processes, or the cluster at --scheduler)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run on the existing Dask cluster whose scheduler is at ADDRESS "
                        f"(tcp://host:port); with --executor dask the default is "
                        f"${SCHEDULER_ENV}")
    parser.add_argument("--workers", type=int, help="workers of the processes/dask executors")


def checked_executor(args, make: Callable[[], T]) -> T:
    """``make()``, the executor (or its options) of ``--executor`` and ``--scheduler``, with a
    scheduler address checked reachable before the work and errors naming the flag; a Dask
    cluster's INFO logs are kept off stderr unless ``--verbose``."""
    from libra_opt.explore.executors import check_scheduler

    try:
        made = make()
        executor = getattr(made, "executor", made)
        if isinstance(executor, str) and "://" in executor:
            check_scheduler(executor)
    except InputError as exc:
        flag = {"executor": "--executor", "scheduler": "--scheduler"}.get(exc.field or "")
        raise InputError(exc.message, source="<cli>", field=flag or exc.field) from None
    if executor not in ("serial", "processes") and not getattr(args, "verbose", False):
        # set after importing distributed, which configures its loggers on import
        importlib.import_module("distributed")
        for name in ("distributed", "tornado"):
            logging.getLogger(name).setLevel(logging.WARNING)
    return made


def add_set_argument(parser) -> None:
    """Add the repeatable ``--set PATH=VALUE`` option (read by :func:`load_with_sets`)."""
    parser.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                        help=SET_HELP)


def add_error_model_argument(parser, what: str = "the model-based workloads' error bands"
                             ) -> None:
    """Add ``--error-model FILE``: the validated runs error bands come from."""
    parser.add_argument("--error-model", metavar="FILE",
                        help=f"validated runs {what} come from (written by libra-opt validate "
                        "--error-model; default: the packaged validation tables' runs)")


@contextmanager
def blamed_on_set(flag: str = "--set") -> Iterator[None]:
    """Inside: an :class:`InputError` (of an edit) is blamed on ``flag`` and its path.

    Examples
    --------
    >>> with blamed_on_set():
    ...     raise InputError("expected a number > 0", source="ex.yaml", field="budget_usd")
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: <cli>: --set: budget_usd: expected a number > 0
    """
    try:
        yield
    except InputError as exc:
        raise InputError(f"{exc.field}: {exc.message}" if exc.field else exc.message,
                         source="<cli>", field=flag) from None


def load_with_sets(scenario: str, items: Sequence[str] | None, flag: str = "--set"
                   ) -> Scenario:
    """The scenario named on the command line with the ``--set PATH=VALUE`` items (checked
    before the file is read) applied; an error of an edit names ``flag`` and the path.

    Examples
    --------
    >>> load_with_sets("gpt3_175b_a100_cluster", ["budget_usd=3e7"]).budget_usd
    30000000.0
    >>> load_with_sets("gpt3_175b_a100_cluster", ["budget_usd=-1"])
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: <cli>: --set: budget_usd: budget_usd -1.0 is out of range: expected a number > 0
    """
    from libra_opt.io import load_scenario

    sets = parse_sets(items, flag)
    scen = load_scenario(scenario)  # an error here is the scenario file's
    if not sets:
        return scen
    from libra_opt.explore.overrides import apply_overrides
    from libra_opt.io.scenario_file import resolve_spec

    with blamed_on_set(flag):
        return apply_overrides(scen, sets, resolve=resolve_spec)

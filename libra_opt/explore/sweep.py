"""Parameter sweeps: solve a scenario over the product (or the zip) of several axes,
serially, on local processes or on a Dask cluster, into one pandas DataFrame (the grid:
:mod:`libra_opt.explore.grid`). With ``out=`` finished batches are streamed into a results
sink (:mod:`libra_opt.explore.sink`), where an interrupted sweep resumes.
"""

from __future__ import annotations

import builtins
import importlib.util
import logging
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from libra_opt.errors import InputError
from libra_opt.explore.executors import ExecutorOptions, executor_label, make_batches, run_batches
from libra_opt.explore.executors import batch_size as default_batch_size
from libra_opt.explore.grid import (
    Plan,
    check_axes,
    chunks,
    frame,
    grid_points,
    run_batch,
    shadow_labels,
    with_caps,
)
from libra_opt.explore.overrides import Resolver, ScenarioBase
from libra_opt.explore.sink import spec_fingerprint
from libra_opt.optimize.problem import BandwidthProblem, build_problem
from libra_opt.options import POINT_COLUMN
from libra_opt.scenario.scenario import Scenario
from libra_opt.scenario.spec import ScenarioSpec

if TYPE_CHECKING:  # pandas is imported on first use: a fifth of a second
    import pandas as pd

__all__ = ["sweep", "Progress", "SweepInterrupted"]

logger = logging.getLogger(__name__)

#: A progress callback: ``progress(done, total, point)`` with ``point`` the last point's axes.
Progress = Callable[[int, int, Mapping[str, Any]], None]


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()  # type: ignore[attr-defined]
    except AttributeError:
        return False
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def _bar_class() -> Any:
    """tqdm's notebook bar in a notebook with ipywidgets, else the text bar (``tqdm.auto``
    would warn in a notebook without ipywidgets)."""
    if _in_notebook() and importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.auto import tqdm as auto

        return auto
    from tqdm import tqdm

    return tqdm


def _progress(progress: bool | Progress | None, total: int, initial: int,
              point_of: Callable[[int], Mapping[str, Any]]
              ) -> tuple[Callable[[int, int, int], None] | None, Callable[[], None]]:
    """(update(done, n, last point index) or None, close()) for ``progress``; ``initial``
    points are done before the run (a resumed sweep)."""
    if progress is None:
        progress = _in_notebook() or sys.stderr.isatty()
    if callable(progress) and not isinstance(progress, bool):
        cb = progress

        def update(done: int, n: int, last: int) -> None:
            cb(done, total, point_of(last))

        return update, lambda: None
    if not progress:
        return None, lambda: None
    bar = _bar_class()(total=total, initial=initial, desc="sweep", unit="pt")

    def tick(done: int, n: int, last: int) -> None:
        bar.update(n)

    return tick, bar.close


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C (or a signal turned into it) after ``kept`` of ``total``
    points were solved (and, with ``out``, written to ``path``)."""

    def __init__(self, kept: int, total: int, path: str | None = None) -> None:
        super().__init__(f"interrupted after {kept:,} of {total:,} points")
        self.kept, self.total, self.path = kept, total, path


def _execute(plan: Plan, batches: list, options: ExecutorOptions,
             update: Callable[[int, int, int], None] | None,
             on_batch: Callable[[list], None], done0: int) -> None:
    """Run ``batches`` on ``options``' executor, reporting points to ``update`` and every
    finished batch to ``on_batch`` (in completion order)."""
    on_items = None
    if update is not None:
        report = update
        done = [done0]
        seen = [0] * len(batches)
        flat = [[i for ch in b for i, _, _ in ch.points] for b in batches]

        def on_items(index: int, n: int) -> None:
            k = seen[index] = seen[index] + n
            done[0] += n
            report(done[0], n, flat[index][k - 1])

    it = run_batches(run_batch, batches, options, on_items=on_items, shared=plan)
    try:
        for _, out in it:
            on_batch(out)
    finally:
        it.close()  # type: ignore[attr-defined]  # a generator: stops the workers now


def sweep(
    problem: Scenario | BandwidthProblem | ScenarioBase | ScenarioSpec,
    axes: Mapping[str, Sequence[Any]],
    *,
    zip: bool = False,  # noqa: A002 - the documented keyword
    resolve: Resolver | None = None,
    options: ExecutorOptions | None = None,
    **run: Any,
) -> pd.DataFrame:
    """Solve ``problem`` at every point of a grid of axes (see :mod:`libra_opt.explore.grid`).

    Parameters
    ----------
    problem : Scenario, BandwidthProblem, ScenarioBase or ScenarioSpec
        What to sweep; structural axes edit its spec (a scenario compiled from one, or a
        ``ScenarioBase`` from :meth:`~libra_opt.explore.overrides.ScenarioBase.derive`).
        :func:`libra_opt.sweep` also takes a file or example name.
    axes : mapping of str to sequence
        Path (:mod:`libra_opt.explore.overrides`) -> values: a cap, a constraint's label, a
        workload's weight, any scenario field.
    zip : bool
        Pair the axes' values (all of one length) instead of taking their product.
    resolve : callable, optional
        Reads the files an axis names (a model or device by name,
        :func:`libra_opt.io.resolve_spec`); structural axes that name none read nothing.
    options : ExecutorOptions, optional
        Where the points are solved and how the run reports
        (:class:`~libra_opt.explore.executors.ExecutorOptions`: executor, max_workers,
        scheduler, progress, batch_size, stop, out). Every executor gives the same rows.
        ``progress`` is a tqdm bar (default on in a terminal or a notebook) or
        ``progress(done, total, point)``. With ``out`` (a
        :class:`~libra_opt.explore.sink.ResultsSink`) finished points are streamed into
        it, those it already holds are not solved again, and the table returned is the
        sink's, with a ``point`` column first.
    **run
        The fields of ``options``, given one by one instead (``executor="processes"``).

    Returns
    -------
    pandas.DataFrame
        One row per point, in grid order (the last axis varies fastest); columns as
        :func:`~libra_opt.explore.grid.result_columns`.

    Raises
    ------
    InputError
        Naming the axis, for a bad axis name or value (before anything is solved); naming
        the option; naming ``out`` for a folder that cannot be written or holds another run.
    SweepInterrupted
        On Ctrl-C, after stopping the workers; the points finished are kept in ``out``.

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> df = sweep(toy_scenario(), {"sum(bw) == 300": [150, 300, 600]}, progress=False)
    >>> df["weighted_step_time_s"].round(6).tolist()   # 0.01 + 1.5 GB / total
    [0.02, 0.015, 0.0125]
    >>> df[["bw_node_gbps", "bw_pod_gbps"]].iloc[1].round(3).tolist()
    [200.0, 100.0]
    >>> df = sweep(toy_scenario(), {"budget_usd": [2e5, 4e5], "fabric.dims.pod.size": [4, 8]},
    ...            progress=False)
    >>> df.shape[0], df.columns[:3].tolist()
    (4, ['budget_usd', 'fabric.dims.pod.size', 'status'])
    """
    if options is None:
        options = ExecutorOptions(**run)
    elif run:
        raise InputError(f"give the options in options= or one by one, not both (got "
                         f"{', '.join(run)})", field="options")
    given = problem if isinstance(problem, BandwidthProblem) else None
    if isinstance(problem, ScenarioBase):
        base = problem if resolve is None else replace(problem, resolve=resolve)
    elif isinstance(problem, Scenario | ScenarioSpec | BandwidthProblem):
        base = ScenarioBase.of(problem.scenario if isinstance(problem, BandwidthProblem)
                               else problem, resolve)
    else:
        raise InputError(f"expected a Scenario, ScenarioSpec or BandwidthProblem, got "
                         f"{type(problem).__name__} (libra_opt.sweep reads a file or example "
                         "name)", field="problem")
    ax = check_axes(base, axes, options)
    base = with_caps(base, ax)
    scen = base.scenario
    points = grid_points(ax, zip)
    root = given if given is not None and given.scenario is scen else None
    if root is None and not any(a.kind == "structural" for a in ax):
        # one problem serves every point: built here (a scenario it cannot take is refused
        # before any work), and used as it is by the points solved in this process
        root = build_problem(scen)
    plan = Plan(base, root)  # a worker builds its own (a Plan is pickled without it)
    workloads = [w.name for w in scen.workloads]
    dims = list(scen.fabric.names)
    shadows = shadow_labels(scen, ax)
    failures = scen.reliability is not None
    names = [a.name for a in ax]
    store = options.out
    kept0: frozenset[int] = frozenset()
    if store is not None:
        kept0 = store.open({
            "kind": "sweep", "scenario": scen.name, "spec_hash": spec_fingerprint(base),
            "axes": {a.name: list(a.values) for a in ax}, "zip": bool(zip),
            "points": len(points)})
    todo = [i for i in range(len(points)) if i not in kept0]
    if options.batch_size is not None:
        size = options.batch_size
    elif options.executor == "serial":  # no shipping to amortise: batches are writes to out
        size = len(todo) if store is None else default_batch_size(len(todo), 1, max_items=100)
    else:
        size = default_batch_size(len(todo), options.workers)
    # batches of the default size taper toward the end so the workers finish together; a
    # batch size the caller gives is kept exactly (it is also the size of a write to out)
    taper = options.executor != "serial" and options.batch_size is None
    batches = make_batches(chunks(ax, points, math.ceil(size / 16) if taper else size, todo),
                           size, weight=lambda ch: len(ch.points),
                           workers=options.workers if taper else None)
    results: dict[int, Any] = {}

    def on_batch(out_: list) -> None:
        results.update(out_)
        if store is not None:
            idx = [i for i, _ in out_]
            store.append(frame(ax, points, results, workloads, dims, shadows, idx, failures)
                         .assign(**{POINT_COLUMN: idx}))

    done0 = len(points) - len(todo)
    update, close = _progress(options.progress, len(points), done0,
                              lambda i: dict(builtins.zip(names, points[i], strict=True)))
    t0 = time.perf_counter()
    try:
        _execute(plan, batches, options, update, on_batch, done0)
    except KeyboardInterrupt:
        # on disk: the batches whose write completed (one cut short is redone on resume)
        kept = done0 + len(results) if store is None else len(store.done_points())
        raise SweepInterrupted(kept, len(points), None if store is None else
                               store.location) from None
    finally:
        close()
        if store is not None and len(store.done_points()) < len(points):
            store.close()  # stopped: release the folder now (a traceback keeps this frame)
    logger.info("sweep of %d points in %.3f s (%s)", len(todo), time.perf_counter() - t0,
                executor_label(options.executor))
    if store is not None:
        return store.finish()
    return frame(ax, points, results, workloads, dims, shadows, failures=failures)

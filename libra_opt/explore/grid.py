"""Grid sweeps: solve a scenario over the product of several axes, serially, on local
processes or on a Dask cluster, into one pandas DataFrame.

An axis is a path of :mod:`libra_opt.explore.overrides` with a sequence of values.
Right-hand-side axes (``budget_usd``, ``power_w``, a constraint's label) re-solve one built
problem (:func:`libra_opt.optimize.problem.solve` with ``rhs=``); every other axis is
structural and rebuilds the problem once per distinct combination of structural values.
Points are grouped by those values, cut into chunks and packed into batches of a few hundred
points (:mod:`libra_opt.explore.executors`), so a task builds each problem it needs once and
ships enough work to amortise its overhead. With ``out=`` finished batches are streamed into
a results sink as they finish (:mod:`libra_opt.explore.sink`; a results folder is
:func:`libra_opt.io.results.results_stream`), and an interrupted sweep resumes there.

The result always has the same columns in the same order (:func:`result_columns`): the axes,
``status`` (``optimal``/``infeasible``/``unbounded``/``error``), ``message`` (``""`` when
fine), ``objective`` (the objective's value), ``weighted_step_time_s``,
``step_time_<workload>_s``, ``network_cost_usd``, ``network_power_w`` (NaN when no power
model), ``bw_<dim>_gbps``, ``shadow_<label>`` of the ``budget_usd``, ``power_w`` and
total-bandwidth rows and of every swept right-hand side (objective units per $, W or
GB/s; NaN where the row is absent), ``compile_s``, ``solve_s`` and ``wall_s``; with a failure
model (``reliability``) ``goodput``, ``job_mttf_h`` and ``effective_objective`` (the objective
under failures, :func:`~libra_opt.scenario.failures.failure_report`). An axis named
like a result column (``objective``) is stored as ``<name>_axis``.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from libra_opt.errors import (
    InfeasibleDesignError,
    InputError,
    LibraOptError,
    UnboundedDesignError,
    short_repr,
)
from libra_opt.explore.executors import (
    EXECUTORS,
    default_workers,
    executor_label,
    make_batches,
    resolve_executor,
    run_batches,
)
from libra_opt.explore.executors import batch_size as default_batch_size
from libra_opt.explore.overrides import Resolver, ScenarioBase, canonical_path
from libra_opt.explore.sink import ResultsSink, spec_fingerprint
from libra_opt.optimize.problem import BandwidthProblem, build_problem, solve
from libra_opt.options import POINT_COLUMN
from libra_opt.scenario.scenario import MAX_RHS, Scenario
from libra_opt.scenario.spec import ScenarioSpec

if TYPE_CHECKING:  # pandas is imported on first use: a fifth of a second
    import pandas as pd

__all__ = ["sweep_grid", "result_columns", "EXECUTORS", "MAX_GRID_POINTS", "Progress",
           "SweepInterrupted"]

logger = logging.getLogger(__name__)

#: Most points one sweep solves.
MAX_GRID_POINTS = 100_000
#: Result columns besides the axes and the per-workload, per-dimension and shadow columns.
_STATUS_COLS = ("status", "message", "objective", "weighted_step_time_s")
_TIMING_COLS = ("compile_s", "solve_s", "wall_s")
_FAILURE_COLS = ("goodput", "job_mttf_h", "effective_objective")  #: with a failure model
#: A progress callback: ``progress(done, total, point)`` with ``point`` the last point's axes.
Progress = Callable[[int, int, Mapping[str, Any]], None]


_zip = zip  # ``sweep_grid`` takes a keyword named ``zip``


@dataclass(frozen=True)
class _Axis:
    name: str  # as the user spelled it (the column)
    path: str  # canonical path
    kind: str  # rhs | structural
    values: tuple[Any, ...]


@dataclass(frozen=True)
class _Chunk:
    """Work for one task: a base, structural overrides and the points to solve."""

    base: ScenarioBase | None  # None: solve ``problem`` as given (no structural axis)
    structural: tuple[tuple[str, Any], ...]
    points: tuple[tuple[int, tuple[tuple[str, float], ...]], ...]  # (index, rhs)


@dataclass(frozen=True)
class _Record:
    status: str
    message: str = ""
    objective: float = math.nan
    weighted_step_time_s: float = math.nan
    step_time_s: tuple[tuple[str, float], ...] = ()
    network_cost_usd: float = math.nan
    network_power_w: float = math.nan
    bw_gbps: tuple[tuple[str, float], ...] = ()
    shadow: tuple[tuple[str, float], ...] = ()
    failures: tuple[float, ...] = ()  # _FAILURE_COLS, with a failure model
    compile_s: float = math.nan
    solve_s: float = math.nan
    wall_s: float = math.nan


def _solve_point(problem: BandwidthProblem, rhs: Mapping[str, float]) -> _Record:
    t0 = time.perf_counter()
    try:
        sol = solve(problem, rhs=rhs, with_baselines=False)
    except InfeasibleDesignError as exc:
        rec = _Record("infeasible", str(exc))
    except UnboundedDesignError as exc:
        rec = _Record("unbounded", str(exc))
    except LibraOptError as exc:  # a failure at one point does not end the sweep
        logger.warning("sweep point %s: %s", dict(rhs), exc)
        rec = _Record("error", str(exc))
    else:
        ev = sol.evaluation
        power = ev.cost.network_power_w
        rep = sol.failures
        rec = _Record(
            "optimal",
            objective=float(sol.objective_value),
            weighted_step_time_s=float(ev.weighted_step_time_s),
            step_time_s=tuple((t.name, float(t.step_time_s)) for t in ev.workloads),
            network_cost_usd=float(ev.cost.network_cost_usd),
            network_power_w=math.nan if power is None else float(power),
            bw_gbps=tuple(zip(sol.scenario.fabric.names, map(float, sol.bw_gbps), strict=True)),
            shadow=tuple((c.label, float(c.shadow_price)) for c in sol.constraints),
            failures=() if rep is None else (rep.goodput, rep.job_mttf_h,
                                             rep.effective_objective_value),
            compile_s=float(sol.solver.compile_s),
            solve_s=float(sol.solver.solve_s),
        )
    return replace(rec, wall_s=time.perf_counter() - t0)


def _problem_of(chunk: _Chunk, built: dict[Any, BandwidthProblem | LibraOptError] | None,
                given: BandwidthProblem | None) -> BandwidthProblem | LibraOptError:
    """The chunk's problem: ``given`` (no structural axis), else built once per structural
    combination. ``built`` keeps the last one (a failure as the error): the chunks of one
    combination are consecutive, so a larger cache would only hold memory."""
    if chunk.base is None:
        assert given is not None
        return given
    key = _key(chunk.structural)
    if built is not None and key in built:
        return built[key]
    try:
        scen = chunk.base.apply(dict(chunk.structural)) if chunk.structural else \
            chunk.base.scenario
        problem: BandwidthProblem | LibraOptError = build_problem(scen)
    except LibraOptError as exc:
        problem = exc
    if built is not None:
        built.clear()
        built[key] = problem
    return problem


def _run_batch(batch: Sequence[_Chunk], built: dict | None = None,
               given: BandwidthProblem | None = None) -> Iterator[tuple[int, _Record]]:
    """Solve a batch's points in order, building each chunk's problem once; yields
    ``(point index, record)`` per point (the task function of every executor)."""
    local: dict[Any, BandwidthProblem | LibraOptError] = {} if built is None else built
    for chunk in batch:
        t0 = time.perf_counter()
        problem = _problem_of(chunk, local, given)
        if isinstance(problem, LibraOptError):
            rec = _Record("error", str(problem), wall_s=time.perf_counter() - t0)
            for i, _ in chunk.points:
                yield i, rec
            continue
        for i, rhs in chunk.points:
            yield i, _solve_point(problem, dict(rhs))


def _check_rhs(axis: str, path: str, values: Sequence[Any]) -> tuple[float, ...]:
    out = []
    for v in values:
        if isinstance(v, str):
            try:
                v = float(v)
            except ValueError:
                raise InputError(f"expected numbers, got {short_repr(v)}", field=axis) from None
        if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
            raise InputError(f"expected numbers, got {short_repr(v)}", field=axis)
        f = float(v)
        if not math.isfinite(f) or abs(f) > MAX_RHS:
            raise InputError(f"values must be finite numbers of magnitude <= {MAX_RHS:g}, "
                             f"got {f!r}", field=axis)
        if path in ("budget_usd", "power_w") and f <= 0:
            raise InputError(f"{path} values must be > 0, got {f:g}", field=axis)
        out.append(f)
    return tuple(out)


def _value_errors(base: ScenarioBase, path: str, values: Sequence[Any]) -> list[str | None]:
    """The message of the error each value of a one-structural-axis sweep raises when it
    alone edits the scenario (``None`` when it builds): the axis check of :func:`_axes`,
    run in a worker for the process and Dask executors."""
    out: list[str | None] = []
    for value in values:
        try:
            base.apply({path: value})
            out.append(None)
        except InputError as exc:
            out.append(exc.message)
    return out


#: Distinct values of a one-structural-axis sweep from which a parallel executor checks
#: them in its workers (fewer: in the caller; the check builds each value's scenario).
PARALLEL_CHECK_VALUES = 1000


def _axes(base: ScenarioBase, axes: Mapping[str, Sequence[Any]], executor: Any = "serial",
          max_workers: int | None = None) -> list[_Axis]:
    if not isinstance(axes, Mapping) or not axes:
        raise InputError("expected a mapping of axis name -> values with at least one axis",
                         field="axes")
    out = []
    seen: set[str] = set()
    for name, values in axes.items():
        if not isinstance(name, str) or not name.strip():
            raise InputError(f"axis names are paths, got {short_repr(name)}", field="axes")
        path = canonical_path(name)
        if path in seen:
            raise InputError("the same path is swept twice", field=name)
        seen.add(path)
        if isinstance(values, str | bytes | Mapping) or not hasattr(values, "__iter__"):
            raise InputError(f"expected a sequence of values, got {short_repr(values)}",
                             field=name)
        values = [v.item() if isinstance(v, np.generic) else v for v in values]
        if not values:
            raise InputError("no values to sweep", field=name)
        if len(values) > MAX_GRID_POINTS:
            raise InputError(f"{len(values):,} values; a sweep solves at most "
                             f"{MAX_GRID_POINTS:,} points", field=name)
        if base.classify(path) == "rhs":
            out.append(_Axis(name, path, "rhs", _check_rhs(name, path, values)))
        else:
            try:
                checked = tuple(base.check(path, v) for v in values)
            except InputError as exc:
                raise InputError(exc.message, field=name) from None
            out.append(_Axis(name, path, "structural", checked))
    structural = [a for a in out if a.kind == "structural"]
    if len(structural) == 1:
        # With one structural axis each value alone makes a point's scenario: a value the
        # scenario rejects (a negative size, an objective without its model) is bad input,
        # refused before anything is solved, not a failed point.
        a = structural[0]
        first: dict[Any, Any] = {}  # each distinct value once (one pass: not quadratic)
        for x in a.values:
            first.setdefault(_key(x), x)
        distinct = list(first.values())
        errors: Iterable[str | None]
        if executor != "serial" and len(distinct) >= PARALLEL_CHECK_VALUES:
            # the check builds every value's scenario: in the workers, not in the caller
            # (the same messages; the first failing value in axis order is reported)
            workers = max_workers or default_workers()
            batches = make_batches(distinct, default_batch_size(len(distinct), workers))
            found: dict[int, list[str | None]] = {}
            for i, msgs in run_batches(functools.partial(_value_errors, base, a.path),
                                       batches, executor=executor, max_workers=max_workers):
                found[i] = msgs
            errors = [m for i in sorted(found) for m in found[i]]
        else:  # lazily: nothing after the first failing value is built
            errors = (_value_errors(base, a.path, [value])[0] for value in distinct)
        for value, msg in zip(distinct, errors, strict=True):
            if msg is not None:
                raise InputError(f"value {short_repr(value, 80)}: {msg}", field=a.name)
    return out


def _points(axes: list[_Axis], zipped: bool) -> list[tuple[Any, ...]]:
    if zipped:
        n = {len(a.values) for a in axes}
        if len(n) > 1:
            lengths = ", ".join(f"{a.name}: {len(a.values)}" for a in axes)
            raise InputError(f"zip=True needs axes of one length, got {lengths}",
                             field=axes[0].name)
        return list(zip(*(a.values for a in axes), strict=True))
    total = math.prod(len(a.values) for a in axes)
    if total > MAX_GRID_POINTS:
        raise InputError(f"the grid has {total:,} points; a sweep solves at most "
                         f"{MAX_GRID_POINTS:,}", field=axes[-1].name)
    return list(itertools.product(*(a.values for a in axes)))


def _with_caps(base: ScenarioBase, axes: list[_Axis]) -> ScenarioBase:
    """Add the budget / power cap rows a sweep of them needs (at a middle value)."""
    caps = {}
    for a in axes:
        if a.path in ("budget_usd", "power_w") and getattr(base.scenario, a.path) is None:
            caps[a.path] = sorted(a.values)[len(a.values) // 2]
    if not caps:
        return base
    try:
        return base.derive(caps)
    except InputError as exc:
        name = next((a.name for a in axes if a.path in caps and a.path in (exc.field or "")),
                    next(a.name for a in axes if a.path in caps))
        raise InputError(exc.message, field=name) from None


def _key(value: Any) -> Any:
    """A hashable stand-in for a structural value (lists and mappings given as values)."""
    if isinstance(value, Mapping):
        return tuple(sorted((k, _key(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_key(v) for v in value)
    return value


def _chunks(
    base: ScenarioBase | None, axes: list[_Axis], points: list[tuple[Any, ...]], size: int,
    todo: Sequence[int] | None = None,
) -> list[_Chunk]:
    """The points ``todo`` (default all) grouped by their structural values, in grid order,
    each group cut into chunks of at most ``size`` points."""
    groups: dict[Any, tuple[tuple[tuple[str, Any], ...], list]] = {}
    for i in (range(len(points)) if todo is None else todo):
        p = points[i]
        structural = tuple((a.path, v) for a, v in zip(axes, p, strict=True)
                           if a.kind == "structural")
        rhs = tuple((a.path, float(v)) for a, v in zip(axes, p, strict=True) if a.kind == "rhs")
        key = _key(structural)
        groups.setdefault(key, (structural, []))[1].append((i, rhs))
    out = []
    for structural, pts in groups.values():
        for j in range(0, len(pts), size):
            out.append(_Chunk(base, structural, tuple(pts[j:j + size])))
    return out


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
    if _in_notebook():
        try:
            import ipywidgets  # noqa: F401
        except ImportError:
            pass
        else:
            from tqdm.auto import tqdm as auto

            return auto
    from tqdm import tqdm

    return tqdm


def _progress(progress: bool | Progress | None, total: int,
              initial: int = 0) -> tuple[Callable, Callable]:
    """(update(done, n, point), close()) for ``progress``; ``initial`` points are done
    before the run (a resumed sweep)."""
    if progress is None:
        progress = _in_notebook() or sys.stderr.isatty()
    if callable(progress) and not isinstance(progress, bool):
        cb = progress

        def update(done: int, n: int, point: Mapping[str, Any]) -> None:
            cb(done, total, point)

        return update, lambda: None
    if not progress:
        return (lambda done, n, point: None), (lambda: None)
    bar = _bar_class()(total=total, initial=initial, desc="sweep", unit="pt")

    def tick(done: int, n: int, point: Mapping[str, Any]) -> None:
        bar.update(n)

    return tick, bar.close


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C (or a signal turned into it) after ``kept`` of ``total``
    points were solved (and, with ``out``, written to ``path``)."""

    def __init__(self, kept: int, total: int, path: str | None = None) -> None:
        super().__init__(f"interrupted after {kept:,} of {total:,} points")
        self.kept, self.total, self.path = kept, total, path


def _execute(
    batches: list[tuple[_Chunk, ...]], executor: Any, max_workers: int | None,
    update: Callable, given: BandwidthProblem | None,
    point_of: Callable[[int], Mapping[str, Any]],
    on_batch: Callable[[list[tuple[int, _Record]]], None], done0: int = 0,
    stop: Callable[[], bool] | None = None,
) -> None:
    """Run ``batches`` on ``executor``, reporting every point to ``update`` and every
    finished batch to ``on_batch`` (in completion order)."""
    done = [done0]
    seen = [0] * len(batches)
    flat = [[i for ch in b for i, _ in ch.points] for b in batches]

    def on_items(index: int, n: int) -> None:
        k = seen[index] = seen[index] + n
        done[0] += n
        update(done[0], n, point_of(flat[index][k - 1]))

    if executor == "serial":
        built: dict[Any, Any] = {}
        fn: Callable = functools.partial(_run_batch, built=built, given=given)
    else:
        fn = _run_batch
    it = run_batches(fn, batches, executor=executor, max_workers=max_workers,
                     on_items=on_items, stop=stop)
    try:
        for _, out in it:
            on_batch(out)
    finally:
        it.close()  # type: ignore[attr-defined]  # a generator: stops the workers now


def result_columns(
    axis_names: Sequence[str], workloads: Sequence[str], dims: Sequence[str],
    shadow_labels: Sequence[str], failures: bool = False,
) -> list[str]:
    """The columns of a sweep's DataFrame, in order.

    Examples
    --------
    >>> result_columns(["budget_usd"], ["gpt3"], ["node", "pod"], ["budget_usd"])[:6]
    ['budget_usd', 'status', 'message', 'objective', 'weighted_step_time_s', 'step_time_gpt3_s']
    """
    reserved = set(_STATUS_COLS) | set(_TIMING_COLS) | {"network_cost_usd", "network_power_w"}
    cols = [f"{a}_axis" if a in reserved else a for a in axis_names]
    cols += list(_STATUS_COLS)
    cols += [f"step_time_{w}_s" for w in workloads]
    cols += list(_FAILURE_COLS) if failures else []
    cols += ["network_cost_usd", "network_power_w"]
    cols += [f"bw_{d}_gbps" for d in dims]
    cols += [f"shadow_{label}" for label in shadow_labels]
    cols += list(_TIMING_COLS)
    return cols


def _shadow_labels(problem_rows: Sequence[Any], scen: Scenario, axes: list[_Axis]) -> list[str]:
    """Rows whose shadow price is reported: caps, total-bandwidth rows, swept right-hand sides."""
    totals = {c.label for c in scen.constraints
              if all(x == 1 for x in c.bw_coef) and not c.cost_coef and not c.power_coef}
    swept = {a.path for a in axes if a.kind == "rhs"}
    out = []
    for r in problem_rows:
        label = r.label
        base_label = label.split(" (#")[0]
        if label in ("budget_usd", "power_w") or base_label in totals or label in swept:
            out.append(label)
    return list(dict.fromkeys(out))


def _frame(
    axes: list[_Axis], points: list[tuple[Any, ...]], results: Mapping[int, _Record],
    workloads: list[str], dims: list[str], shadows: list[str],
    indices: Sequence[int] | None = None, failures: bool = False,
) -> pd.DataFrame:
    """The rows of ``indices`` (default every point), in that order."""
    if indices is not None:
        points = [points[i] for i in indices]
        results = {k: results[i] for k, i in enumerate(indices)}
    n = len(points)
    recs = [results[i] for i in range(n)]
    for r in recs:  # points of rebuilt problems may add names
        workloads += [w for w, _ in r.step_time_s if w not in workloads]
        dims += [d for d, _ in r.bw_gbps if d not in dims]
    cols = result_columns([a.name for a in axes], workloads, dims, shadows, failures)
    data: dict[str, Any] = {}
    for j in range(len(axes)):
        data[cols[j]] = [p[j] for p in points]
    data["status"] = [r.status for r in recs]
    data["message"] = [r.message for r in recs]
    for c in ("objective", "weighted_step_time_s"):
        data[c] = np.array([getattr(r, c) for r in recs], dtype=float)
    for w in workloads:
        data[f"step_time_{w}_s"] = np.array([dict(r.step_time_s).get(w, np.nan) for r in recs])
    for j, c in enumerate(_FAILURE_COLS if failures else ()):
        data[c] = np.array([r.failures[j] if r.failures else np.nan for r in recs])
    for c in ("network_cost_usd", "network_power_w"):
        data[c] = np.array([getattr(r, c) for r in recs], dtype=float)
    for d in dims:
        data[f"bw_{d}_gbps"] = np.array([dict(r.bw_gbps).get(d, np.nan) for r in recs])
    for label in shadows:
        data[f"shadow_{label}"] = np.array([dict(r.shadow).get(label, np.nan) for r in recs])
    for c in _TIMING_COLS:
        data[c] = np.array([getattr(r, c) for r in recs], dtype=float)
    import pandas as pd

    df = pd.DataFrame(data, columns=cols)
    if n:
        for j, a in enumerate(axes):
            if a.kind == "rhs":
                df[cols[j]] = df[cols[j]].astype(float)
    return df


def sweep_grid(
    problem: Scenario | BandwidthProblem | ScenarioBase | ScenarioSpec,
    axes: Mapping[str, Sequence[Any]],
    *,
    zip: bool = False,  # noqa: A002 - the documented keyword
    executor: Any = "serial",
    progress: bool | Progress | None = None,
    max_workers: int | None = None,
    resolve: Resolver | None = None,
    scheduler: str | None = None,
    batch_size: int | None = None,
    out: ResultsSink | None = None,
    stop: Callable[[], bool] | None = None,
) -> pd.DataFrame:
    """Solve ``problem`` at every point of a grid of axes (see the module notes).

    Parameters
    ----------
    problem : Scenario, BandwidthProblem, ScenarioBase or ScenarioSpec
        What to sweep; structural axes edit its spec (a scenario compiled from one, or a
        ``ScenarioBase`` from :meth:`~libra_opt.explore.overrides.ScenarioBase.derive`).
        :func:`libra_opt.sweep` also takes a file or example name.
    axes : mapping of str to sequence
        Path (:mod:`libra_opt.explore.overrides`) -> values.
    zip : bool
        Pair the axes' values (all of one length) instead of taking their product.
    executor : {'serial', 'processes', 'dask'}, a scheduler address or a Client
        Where points are solved (:mod:`libra_opt.explore.executors`). ``processes``: a local
        process pool; ``dask``: a ``LocalCluster`` of worker processes on loopback (started
        and closed here), or the cluster named by ``DASK_SCHEDULER_ADDRESS`` when set;
        ``tcp://host:port`` or a ``distributed.Client``: that cluster. Every executor gives
        the same rows.
    progress : bool or callable, optional
        A tqdm bar (notebook-aware); default on when stderr is a terminal or in a notebook.
        A callable is called as ``progress(done, total, point)`` as points finish.
    max_workers : int, optional
        Workers of the ``processes`` pool and of the local ``dask`` cluster.
    resolve : callable, optional
        Reads the files an axis names (a model or device by name,
        :func:`libra_opt.io.resolve_spec`); structural axes that name none read nothing.
    scheduler : str, optional
        Address of an existing Dask scheduler (instead of ``executor``'s cluster).
    batch_size : int, optional
        Points per task shipped to a worker (and per write to ``out``); default
        :func:`~libra_opt.explore.executors.batch_size`.
    out : ResultsSink, optional
        Where finished points are streamed as batches finish
        (:class:`~libra_opt.explore.sink.ResultsSink`; a results folder is
        :func:`libra_opt.io.results.results_stream`, made by ``libra_opt.sweep(...,
        out=DIR, resume=..., overwrite=...)``). The points it already holds (a resumed
        run) are not solved again; the table returned is then the sink's, with a ``point``
        column (the row's index in grid order) first.
    stop : callable, optional
        Polled while points are solved; true stops the sweep as Ctrl-C does (see
        :func:`~libra_opt.explore.executors.run_batches`).

    Returns
    -------
    pandas.DataFrame
        One row per point, in grid order (the last axis varies fastest).

    Raises
    ------
    InputError
        Naming the axis, for a bad axis name or value (before anything is solved); naming
        ``out`` for a folder that cannot be written or holds another run.
    SweepInterrupted
        On Ctrl-C, after stopping the workers; the points finished are kept in ``out``.

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> df = sweep_grid(toy_scenario(), {"sum(bw) == 300": [150, 300, 600]}, progress=False)
    >>> df["weighted_step_time_s"].round(6).tolist()   # 0.01 + 1.5 GB / total
    [0.02, 0.015, 0.0125]
    >>> df[["bw_node_gbps", "bw_pod_gbps"]].iloc[1].round(3).tolist()
    [200.0, 100.0]
    """
    executor = resolve_executor(executor, scheduler)
    if max_workers is not None and (isinstance(max_workers, bool)
                                    or not isinstance(max_workers, int) or max_workers < 1):
        raise InputError(f"max_workers {short_repr(max_workers)} must be an integer >= 1",
                         field="max_workers")
    if batch_size is not None and (isinstance(batch_size, bool)
                                   or not isinstance(batch_size, int) or batch_size < 1):
        raise InputError(f"batch_size {short_repr(batch_size)} must be an integer >= 1",
                         field="batch_size")
    if out is not None and not isinstance(out, ResultsSink):
        raise InputError(f"expected a results sink, got {short_repr(out)} (libra_opt.sweep "
                         "and libra_opt.io.results.results_stream open a folder)", field="out")
    given = problem if isinstance(problem, BandwidthProblem) else None
    if isinstance(problem, ScenarioBase):
        base = problem if resolve is None else replace(problem, resolve=resolve)
    else:
        base = ScenarioBase.of(problem.scenario if isinstance(problem, BandwidthProblem)
                               else problem, resolve)
    ax = _axes(base, axes, executor, max_workers)
    base = _with_caps(base, ax)
    scen = base.scenario
    points = _points(ax, zip)
    structural = any(a.kind == "structural" for a in ax)
    if given is not None and scen is given.scenario and not structural:
        prob: BandwidthProblem | None = given
    else:
        prob = None
    ref = prob if prob is not None else build_problem(scen)
    if prob is None and not structural:
        prob = ref  # one problem serves every point
    workloads = [w.name for w in scen.workloads]
    dims = list(scen.fabric.names)
    shadows = _shadow_labels(ref.rows, scen, ax)
    failures = scen.reliability is not None
    names = [a.name for a in ax]
    store = out
    kept0: frozenset[int] = frozenset()
    if store is not None:
        kept0 = store.open({
            "kind": "sweep", "scenario": scen.name, "spec_hash": spec_fingerprint(base),
            "axes": {a.name: list(a.values) for a in ax}, "zip": bool(zip),
            "points": len(points)})
    todo = [i for i in range(len(points)) if i not in kept0]
    workers = max_workers or default_workers()
    if batch_size is not None:
        size = batch_size
    elif executor == "serial":  # no shipping to amortise: batches are writes to ``out``
        size = len(todo) if store is None else default_batch_size(len(todo), 1, max_items=100)
    else:
        size = default_batch_size(len(todo), workers)
    chunks = _chunks(None if (prob is not None and executor == "serial") else base, ax,
                     points, size, todo)
    batches = make_batches(chunks, size, weight=lambda ch: len(ch.points))
    results: dict[int, _Record] = {}

    def point_of(i: int) -> Mapping[str, Any]:
        return dict(_zip(names, points[i], strict=True))

    def on_batch(out_: list[tuple[int, _Record]]) -> None:
        results.update(out_)
        if store is not None:
            idx = [i for i, _ in out_]
            store.append(_frame(ax, points, results, workloads, dims, shadows, idx, failures)
                         .assign(**{POINT_COLUMN: idx}))

    done0 = len(points) - len(todo)
    update, close = _progress(progress, len(points), done0)
    t0 = time.perf_counter()
    try:
        _execute(batches, executor, max_workers, update, prob, point_of, on_batch, done0,
                 stop)
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
                executor_label(executor))
    if store is not None:
        return store.finish()
    return _frame(ax, points, results, workloads, dims, shadows, failures=failures)


def iter_points(axes: Mapping[str, Sequence[Any]], zipped: bool = False) -> Iterator[dict]:
    """The points of a grid as dicts, in sweep order (last axis fastest).

    Examples
    --------
    >>> list(iter_points({"a": [1, 2], "b": ["x", "y"]}, zipped=True))
    [{'a': 1, 'b': 'x'}, {'a': 2, 'b': 'y'}]
    """
    names = list(axes)
    rows = zip(*axes.values(), strict=True) if zipped else itertools.product(*axes.values())
    for p in rows:
        yield dict(zip(names, p, strict=True))

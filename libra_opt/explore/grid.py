"""Grid sweeps: solve a scenario over the product of several axes, serially, on local
processes or on a Dask cluster, into one pandas DataFrame.

An axis is a path of :mod:`libra_opt.explore.overrides` with a sequence of values.
Right-hand-side axes (``budget_usd``, ``power_w``, a constraint's label) re-solve one built
problem (:func:`libra_opt.optimize.problem.solve` with ``rhs=``); every other axis is
structural and rebuilds the problem once per distinct combination of structural values.
Points are grouped by those values and cut into contiguous chunks, one per worker and
group, so each worker builds each problem it needs once.

The result always has the same columns in the same order (:func:`result_columns`): the axes,
``status`` (``optimal``/``infeasible``/``unbounded``/``error``), ``message`` (``""`` when
fine), ``objective`` (the objective's value), ``weighted_step_time_s``,
``step_time_<workload>_s``, ``network_cost_usd``, ``network_power_w`` (NaN when no power
model), ``bw_<dim>_gbps``, ``shadow_<label>`` of the ``budget_usd``, ``power_w`` and
total-bandwidth rows and of every swept right-hand side (objective units per $, W or
GB/s; NaN where the row is absent), ``compile_s``, ``solve_s`` and ``wall_s``. An axis named
like a result column (``objective``) is stored as ``<name>_axis``.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
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
from libra_opt.explore.overrides import Resolver, ScenarioBase, canonical_path
from libra_opt.optimize.problem import BandwidthProblem, build_problem, solve
from libra_opt.scenario.scenario import MAX_RHS, Scenario
from libra_opt.scenario.spec import ScenarioSpec

if TYPE_CHECKING:  # pandas is imported on first use: a fifth of a second
    import pandas as pd

__all__ = ["sweep_grid", "result_columns", "EXECUTORS", "MAX_GRID_POINTS", "Progress"]

logger = logging.getLogger(__name__)

#: Most points one sweep solves.
MAX_GRID_POINTS = 100_000
#: Executors :func:`sweep_grid` understands (or a ``dask.distributed.Client``).
EXECUTORS = ("serial", "processes", "dask")
#: Result columns besides the axes and the per-workload, per-dimension and shadow columns.
_STATUS_COLS = ("status", "message", "objective", "weighted_step_time_s")
_TIMING_COLS = ("compile_s", "solve_s", "wall_s")
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
        rec = _Record(
            "optimal",
            objective=float(sol.objective_value),
            weighted_step_time_s=float(ev.weighted_step_time_s),
            step_time_s=tuple((t.name, float(t.step_time_s)) for t in ev.workloads),
            network_cost_usd=float(ev.cost.network_cost_usd),
            network_power_w=math.nan if power is None else float(power),
            bw_gbps=tuple(zip(sol.scenario.fabric.names, map(float, sol.bw_gbps), strict=True)),
            shadow=tuple((c.label, float(c.shadow_price)) for c in sol.constraints),
            compile_s=float(sol.solver.compile_s),
            solve_s=float(sol.solver.solve_s),
        )
    return replace(rec, wall_s=time.perf_counter() - t0)


def _run_chunk(chunk: _Chunk, problem: BandwidthProblem | None = None) -> list[tuple[int, _Record]]:
    """Build the chunk's problem once (unless given) and solve its points in order."""
    if problem is None:
        t0 = time.perf_counter()
        try:
            assert chunk.base is not None
            scen = chunk.base.apply(dict(chunk.structural)) if chunk.structural else \
                chunk.base.scenario
            problem = build_problem(scen)
        except LibraOptError as exc:
            rec = _Record("error", str(exc), wall_s=time.perf_counter() - t0)
            return [(i, rec) for i, _ in chunk.points]
    return [(i, _solve_point(problem, dict(rhs))) for i, rhs in chunk.points]


def _run_chunk_remote(chunk: _Chunk) -> list[tuple[int, _Record]]:
    """Task entry point of the process and Dask executors (built in the worker)."""
    return _run_chunk(chunk)


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


def _axes(base: ScenarioBase, axes: Mapping[str, Sequence[Any]]) -> list[_Axis]:
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
        for v in dict.fromkeys(_key(x) for x in a.values):
            value = next(x for x in a.values if _key(x) == v)
            try:
                base.apply({a.path: value})
            except InputError as exc:
                raise InputError(f"value {short_repr(value, 80)}: {exc.message}",
                                 field=a.name) from None
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
    base: ScenarioBase | None, axes: list[_Axis], points: list[tuple[Any, ...]], n_chunks: int
) -> list[_Chunk]:
    groups: dict[Any, tuple[tuple[tuple[str, Any], ...], list]] = {}
    for i, p in enumerate(points):
        structural = tuple((a.path, v) for a, v in zip(axes, p, strict=True)
                           if a.kind == "structural")
        rhs = tuple((a.path, float(v)) for a, v in zip(axes, p, strict=True) if a.kind == "rhs")
        key = _key(structural)
        groups.setdefault(key, (structural, []))[1].append((i, rhs))
    total = len(points)
    per = max(1, math.ceil(total / max(1, n_chunks)))
    out = []
    for structural, pts in groups.values():
        for j in range(0, len(pts), per):
            out.append(_Chunk(base, structural, tuple(pts[j:j + per])))
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


def _progress(progress: bool | Progress | None, total: int) -> tuple[Callable, Callable]:
    """(update(done, point), close()) for ``progress``."""
    if progress is None:
        progress = _in_notebook() or sys.stderr.isatty()
    if callable(progress) and not isinstance(progress, bool):
        cb = progress

        def update(done: int, n: int, point: Mapping[str, Any]) -> None:
            cb(done, total, point)

        return update, lambda: None
    if not progress:
        return (lambda done, n, point: None), (lambda: None)
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc="sweep", unit="pt")

    def tick(done: int, n: int, point: Mapping[str, Any]) -> None:
        bar.update(n)

    return tick, bar.close


def _execute(
    chunks: list[_Chunk], executor: Any, max_workers: int | None, update: Callable,
    problem: BandwidthProblem | None, point_of: Callable[[int], Mapping[str, Any]],
) -> dict[int, _Record]:
    results: dict[int, _Record] = {}

    def collect(out: list[tuple[int, _Record]]) -> None:
        for i, rec in out:
            results[i] = rec
        if out:
            update(len(results), len(out), point_of(out[-1][0]))

    if executor == "serial":
        built: dict[Any, BandwidthProblem] = {}
        for ch in chunks:
            if ch.base is None:
                assert problem is not None
                collect(_run_chunk_serial(ch, problem, update, point_of, results))
                continue
            key = _key(ch.structural)
            if key not in built:
                try:
                    scen = ch.base.apply(dict(ch.structural)) if ch.structural else \
                        ch.base.scenario
                    built[key] = build_problem(scen)
                except LibraOptError:
                    collect(_run_chunk(ch))  # error rows
                    continue
            collect(_run_chunk_serial(ch, built[key], update, point_of, results))
        return results
    if executor == "processes":
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
        ctx = multiprocessing.get_context(method)
        with ProcessPoolExecutor(max_workers=max_workers, mp_context=ctx) as pool:
            futures = [pool.submit(_run_chunk_remote, ch) for ch in chunks]
            for fut in as_completed(futures):
                collect(fut.result())
        return results
    # A cluster started here keeps its scratch files in a private temporary directory,
    # removed afterwards (dask's default is ./dask-scratch-space or the system temp dir).
    with tempfile.TemporaryDirectory(prefix="libra-opt-dask-") as scratch:
        client, own = _dask_client(executor, max_workers, scratch)
        try:
            from distributed import as_completed as dask_completed

            futures = client.map(_run_chunk_remote, chunks, pure=False)
            for fut in dask_completed(futures):
                collect(fut.result())
        finally:
            if own:
                cluster = client.cluster
                client.close()
                if cluster is not None:
                    cluster.close()
    return results


def _run_chunk_serial(
    chunk: _Chunk, problem: BandwidthProblem, update: Callable,
    point_of: Callable[[int], Mapping[str, Any]], results: dict[int, _Record],
) -> list[tuple[int, _Record]]:
    """Solve a chunk point by point on the caller's problem, reporting each point."""
    for i, rhs in chunk.points:
        results[i] = _solve_point(problem, dict(rhs))
        update(len(results), 1, point_of(i))
    return []


def _dask_client(executor: Any, max_workers: int | None, scratch: str) -> tuple[Any, bool]:
    """The given ``dask.distributed.Client``, or a new one on a loopback LocalCluster whose
    scratch files go to ``scratch``."""
    if executor != "dask":
        return executor, False
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set({"temporary-directory": scratch}):
        cluster = LocalCluster(n_workers=max_workers or min(2, os.cpu_count() or 1),
                               threads_per_worker=1, processes=False, protocol="tcp://",
                               host="127.0.0.1", dashboard_address=None,
                               local_directory=scratch)
    return Client(cluster), True


def _executor_ok(executor: Any) -> bool:
    if isinstance(executor, str):
        return executor in EXECUTORS
    return callable(getattr(executor, "map", None)) and hasattr(executor, "gather")


def result_columns(
    axis_names: Sequence[str], workloads: Sequence[str], dims: Sequence[str],
    shadow_labels: Sequence[str],
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
) -> pd.DataFrame:
    n = len(points)
    recs = [results[i] for i in range(n)]
    for r in recs:  # points of rebuilt problems may add names
        workloads += [w for w, _ in r.step_time_s if w not in workloads]
        dims += [d for d, _ in r.bw_gbps if d not in dims]
    cols = result_columns([a.name for a in axes], workloads, dims, shadows)
    data: dict[str, Any] = {}
    for j in range(len(axes)):
        data[cols[j]] = [p[j] for p in points]
    data["status"] = [r.status for r in recs]
    data["message"] = [r.message for r in recs]
    for c in ("objective", "weighted_step_time_s"):
        data[c] = np.array([getattr(r, c) for r in recs], dtype=float)
    for w in workloads:
        data[f"step_time_{w}_s"] = np.array([dict(r.step_time_s).get(w, np.nan) for r in recs])
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
    executor : {'serial', 'processes', 'dask'} or dask.distributed.Client
        Where points are solved. ``processes``: a local process pool; ``dask``: a
        ``LocalCluster`` on loopback (threads, started and closed here); a ``Client`` runs
        on its cluster. Every executor gives the same rows.
    progress : bool or callable, optional
        A tqdm bar (notebook-aware); default on when stderr is a terminal or in a notebook.
        A callable is called as ``progress(done, total, point)``.
    max_workers : int, optional
        Workers of the ``processes`` pool and of the ``dask`` cluster.
    resolve : callable, optional
        Reads the files an axis names (a model or device by name,
        :func:`libra_opt.io.resolve_spec`); structural axes that name none read nothing.

    Returns
    -------
    pandas.DataFrame
        One row per point, in grid order (the last axis varies fastest).

    Raises
    ------
    InputError
        Naming the axis, for a bad axis name or value (before anything is solved).

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> df = sweep_grid(toy_scenario(), {"sum(bw) == 300": [150, 300, 600]}, progress=False)
    >>> df["weighted_step_time_s"].round(6).tolist()   # 0.01 + 1.5 GB / total
    [0.02, 0.015, 0.0125]
    >>> df[["bw_node_gbps", "bw_pod_gbps"]].iloc[1].round(3).tolist()
    [200.0, 100.0]
    """
    if not _executor_ok(executor):
        raise InputError(f"executor {short_repr(executor)} is not one of "
                         f"{', '.join(EXECUTORS)} or a dask.distributed.Client", field="executor")
    if max_workers is not None and (isinstance(max_workers, bool)
                                    or not isinstance(max_workers, int) or max_workers < 1):
        raise InputError(f"max_workers {short_repr(max_workers)} must be an integer >= 1",
                         field="max_workers")
    given = problem if isinstance(problem, BandwidthProblem) else None
    if isinstance(problem, ScenarioBase):
        base = problem if resolve is None else replace(problem, resolve=resolve)
    else:
        base = ScenarioBase.of(problem.scenario if isinstance(problem, BandwidthProblem)
                               else problem, resolve)
    ax = _axes(base, axes)
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
    if executor == "serial":
        n_chunks = 1
    else:
        n_chunks = max_workers or (os.cpu_count() or 1)
    chunks = _chunks(None if (prob is not None and executor == "serial") else base, ax, points,
                     n_chunks)
    names = [a.name for a in ax]

    def point_of(i: int) -> Mapping[str, Any]:
        return dict(_zip(names, points[i], strict=True))

    update, close = _progress(progress, len(points))
    t0 = time.perf_counter()
    try:
        results = _execute(chunks, executor, max_workers, update, prob, point_of)
    finally:
        close()
    logger.info("sweep of %d points in %.3f s (%s)", len(points), time.perf_counter() - t0,
                executor if isinstance(executor, str) else "dask client")
    return _frame(ax, points, results, workloads, dims, shadows)


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

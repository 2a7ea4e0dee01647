"""The grid of a sweep: its axes, its points grouped into work, the task that solves them and
the table they make (:func:`libra_opt.explore.sweep.sweep` runs it).

An axis is a path of :mod:`libra_opt.explore.overrides` with values, of one of three kinds:
``rhs`` (a cap or a constraint's label) and ``weight`` (``workloads.<name>.weight``) are data
of the built program: the points of one structural combination re-solve one problem with new
numbers, up to :data:`_GROUP` at a time re-checked together
(:func:`~libra_opt.optimize.batch.solve_many`; a point it leaves, alone by
:func:`~libra_opt.optimize.problem.solve` with ``rhs=`` and ``weights=``);
``structural`` (any other path) edits the spec, compiled once per distinct combination, and
its problem is built from the base problem (``build_problem(like=)``), keeping what the edit
leaves alone. Points are grouped by their structural values into chunks and batches
(:mod:`libra_opt.explore.executors`); the base goes to each worker once (:class:`Plan`).

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

import itertools
import logging
import math
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from libra_opt.errors import (
    InfeasibleDesignError,
    InputError,
    LibraOptError,
    UnboundedDesignError,
    short_repr,
)
from libra_opt.explore.executors import ExecutorOptions, make_batches, run_batches
from libra_opt.explore.executors import batch_size as default_batch_size
from libra_opt.explore.overrides import ScenarioBase, canonical_path, edit_key
from libra_opt.optimize.batch import PointAnswer, solve_many
from libra_opt.optimize.problem import BandwidthProblem, build_problem, same_terms, solve
from libra_opt.scenario.scenario import MAX_RHS, Scenario

if TYPE_CHECKING:  # pandas is imported on first use: a fifth of a second
    import pandas as pd

__all__ = ["result_columns", "MAX_GRID_POINTS", "Plan"]

logger = logging.getLogger(__name__)

#: Most points one sweep solves.
MAX_GRID_POINTS = 100_000
#: Result columns besides the axes and the per-workload, per-dimension and shadow columns.
_STATUS_COLS = ("status", "message", "objective", "weighted_step_time_s")
_TIMING_COLS = ("compile_s", "solve_s", "wall_s")
_FAILURE_COLS = ("goodput", "job_mttf_h", "effective_objective")  #: with a failure model
#: Distinct values of a one-structural-axis sweep from which a parallel executor checks
#: them in its workers (fewer: in the caller; the check builds each value's scenario).
PARALLEL_CHECK_VALUES = 1000


@dataclass(frozen=True)
class Axis:
    """One axis: its name as the user spelled it (the column), its canonical path, its kind
    (``rhs``, ``weight`` or ``structural``), its checked values and, for a weight, the
    workload it weighs."""

    name: str
    path: str
    kind: str
    values: tuple[Any, ...]
    workload: str = ""


@dataclass(frozen=True)
class _Chunk:
    """Work for one task: structural edits and the points to solve, each point its index
    and its data edits (right-hand sides by label, weights by workload)."""

    structural: tuple[tuple[str, Any], ...]
    points: tuple[tuple[int, tuple[tuple[str, float], ...], tuple[tuple[str, float], ...]], ...]


class _Record(NamedTuple):
    """One point's row (a tuple: cheap to make, and to send back from a worker)."""

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


class Plan:
    """What every batch of one sweep needs: the ``base`` its points edit, sent to each worker
    once (``run_batches(shared=)``). Each process keeps the problems it builds (the base's,
    or ``given``, and the last structural combination's), never pickled."""

    def __init__(self, base: ScenarioBase, given: BandwidthProblem | None = None) -> None:
        self.base = base
        self._root: BandwidthProblem | LibraOptError | None = given
        self._last: tuple[Any, BandwidthProblem | LibraOptError] | None = None
        self._sharing = 0  # structural combinations met that keep the base's workloads

    def __getstate__(self) -> dict[str, Any]:
        return {"base": self.base, "_root": None, "_last": None, "_sharing": 0}

    def root(self) -> BandwidthProblem | LibraOptError:
        """The base scenario's problem (built once per process)."""
        if self._root is None:
            try:
                self._root = build_problem(self.base.scenario)
            except LibraOptError as exc:
                self._root = exc
        return self._root

    def problem(self, structural: tuple[tuple[str, Any], ...]) -> BandwidthProblem | LibraOptError:
        """The problem of a structural combination (``()``: the base's), or why it has none."""
        if not structural:
            return self.root()
        key = edit_key(structural)
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        problem: BandwidthProblem | LibraOptError
        try:
            scen = self.base.apply(dict(structural))
            root = None
            if same_terms(self.base.scenario, scen):
                # an edit of bounds, prices or the like: from the second such combination
                # on, its problem is the base problem's with new numbers
                self._sharing += 1
                if self._root is not None or self._sharing > 1:
                    root = self.root()
            problem = build_problem(scen, like=root if isinstance(root, BandwidthProblem)
                                    else None)
        except LibraOptError as exc:
            problem = exc
        self._last = (key, problem)
        return problem


def _solve_point(problem: BandwidthProblem, rhs: Mapping[str, float],
                 weights: Mapping[str, float]) -> _Record:
    t0 = time.perf_counter()
    try:
        sol = solve(problem, rhs=rhs, weights=weights or None, with_baselines=False)
    except InfeasibleDesignError as exc:
        return _Record("infeasible", str(exc), wall_s=time.perf_counter() - t0)
    except UnboundedDesignError as exc:
        return _Record("unbounded", str(exc), wall_s=time.perf_counter() - t0)
    except LibraOptError as exc:  # a failure at one point does not end the sweep
        logger.warning("sweep point %s: %s", {**rhs, **weights}, exc)
        return _Record("error", str(exc), wall_s=time.perf_counter() - t0)
    ev = sol.evaluation
    power = ev.cost.network_power_w
    rep = sol.failures
    return _Record(
        "optimal",
        objective=float(sol.objective_value),
        weighted_step_time_s=float(ev.weighted_step_time_s),
        step_time_s=tuple((t.name, float(t.step_time_s)) for t in ev.workloads),
        network_cost_usd=float(ev.cost.network_cost_usd),
        network_power_w=math.nan if power is None else float(power),
        bw_gbps=tuple(zip(ev.dim_names, sol.bw_gbps.tolist(), strict=True)),
        shadow=tuple((c.label, float(c.shadow_price)) for c in sol.constraints),
        failures=() if rep is None else (rep.goodput, rep.job_mttf_h,
                                         rep.effective_objective_value),
        compile_s=float(sol.solver.compile_s),
        solve_s=float(sol.solver.solve_s),
        wall_s=time.perf_counter() - t0,
    )


#: Points of one chunk solved and re-checked together (:func:`solve_many`).
_GROUP = 100


def _answer_record(problem: BandwidthProblem, a: PointAnswer) -> _Record:
    scen = problem.scenario
    return _Record(
        "optimal",
        objective=a.objective_value,
        weighted_step_time_s=a.weighted_step_time_s,
        step_time_s=tuple(zip((w.name for w in scen.workloads), a.step_time_s, strict=True)),
        network_cost_usd=a.network_cost_usd,
        network_power_w=math.nan if a.network_power_w is None else a.network_power_w,
        bw_gbps=tuple(zip(scen.fabric.names, a.bw_gbps, strict=True)),
        shadow=a.shadow,
        compile_s=a.compile_s,
        solve_s=a.solve_s,
        wall_s=a.wall_s,
    )


def run_batch(plan: Plan, batch: Sequence[_Chunk]) -> Iterator[tuple[int, _Record]]:
    """Solve a batch's points in order, each chunk's problem built once; yields
    ``(point index, record)`` per point (the task of every executor)."""
    for chunk in batch:
        t0 = time.perf_counter()
        problem = plan.problem(chunk.structural)
        if isinstance(problem, LibraOptError):
            rec = _Record("error", str(problem), wall_s=time.perf_counter() - t0)
            for i, _, _ in chunk.points:
                yield i, rec
            continue
        for at in range(0, len(chunk.points), _GROUP):
            group = chunk.points[at: at + _GROUP]
            answers = (solve_many(problem, [(dict(r), dict(w)) for _, r, w in group])
                       if len(group) > 1 else [None])
            for (i, rhs, weights), answer in zip(group, answers, strict=True):
                yield i, (_solve_point(problem, dict(rhs), dict(weights)) if answer is None
                          else _answer_record(problem, answer))


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


def _value_errors(axis: tuple[ScenarioBase, str], values: Sequence[Any]) -> list[str | None]:
    """The error message of each value of a one-structural-axis sweep (``None`` when it
    builds; ``axis``: the base and the path): :func:`check_axes`, run in a worker."""
    base, path = axis
    out: list[str | None] = []
    for value in values:
        try:
            base.apply({path: value})
            out.append(None)
        except InputError as exc:
            out.append(exc.message)
    return out


def _weight(value: Any) -> float | None:
    """``value`` as a weight when it plainly is one (a finite number > 0), else ``None``."""
    if isinstance(value, int | float) and not isinstance(value, bool) \
            and math.isfinite(value) and value > 0:
        return float(value)
    return None


def _check_values(base: ScenarioBase, name: str, path: str, values: list[Any]) -> Axis:
    """One axis's values checked against its kind (a plain weight needs no spec edit)."""
    if base.classify(path) == "rhs":
        return Axis(name, path, "rhs", _check_rhs(name, path, values))
    workload = base.weight_of(path)
    try:
        if workload is None:
            return Axis(name, path, "structural", tuple(base.check(path, v) for v in values))
        base.check(path, values[0])  # the path, as the spec reads it
        weights = tuple(_weight(v) or float(base.check(path, v)) for v in values)
    except InputError as exc:
        raise InputError(exc.message, field=name) from None
    return Axis(name, path, "weight", weights, workload)


def check_axes(base: ScenarioBase, axes: Mapping[str, Sequence[Any]],
               options: ExecutorOptions) -> list[Axis]:
    """The axes checked before anything is solved (a structural axis alone: each of its
    values compiled, in the workers of a parallel ``options`` for many values).

    Raises
    ------
    InputError
        Naming the axis.
    """
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
        out.append(_check_values(base, name, path, values))
    structural = [a for a in out if a.kind == "structural"]
    if len(structural) == 1:
        # With one structural axis each value alone makes a point's scenario: a value the
        # scenario rejects (a negative size, an objective without its model) is bad input,
        # refused before anything is solved, not a failed point.
        a = structural[0]
        first: dict[Any, Any] = {}  # each distinct value once (one pass: not quadratic)
        for x in a.values:
            first.setdefault(edit_key(x), x)
        distinct = list(first.values())
        errors: Iterable[str | None]
        if options.executor != "serial" and len(distinct) >= PARALLEL_CHECK_VALUES:
            # the check builds every value's scenario: in the workers, not in the caller
            # (the same messages; the first failing value in axis order is reported)
            batches = make_batches(distinct, default_batch_size(len(distinct),
                                                                options.workers))
            found = dict(run_batches(_value_errors, batches, options,
                                     shared=(base, a.path)))
            errors = [m for i in sorted(found) for m in found[i]]
        else:  # lazily: nothing after the first failing value is built
            errors = (_value_errors((base, a.path), [value])[0] for value in distinct)
        for value, msg in zip(distinct, errors, strict=True):
            if msg is not None:
                raise InputError(f"value {short_repr(value, 80)}: {msg}", field=a.name)
    return out


def grid_points(axes: list[Axis], zipped: bool) -> list[tuple[Any, ...]]:
    """The points: the axes' values zipped (one length) or their product (last fastest)."""
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


def with_caps(base: ScenarioBase, axes: list[Axis]) -> ScenarioBase:
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


def chunks(axes: list[Axis], points: list[tuple[Any, ...]], size: int,
           todo: Sequence[int]) -> list[_Chunk]:
    """The points ``todo`` grouped by their structural values, in grid order, each group cut
    into chunks of at most ``size`` points."""
    kinds = {kind: [j for j, a in enumerate(axes) if a.kind == kind]
             for kind in ("structural", "rhs", "weight")}
    groups: dict[Any, tuple[tuple[tuple[str, Any], ...], list]] = {}
    for i in todo:
        p = points[i]
        structural = tuple((axes[j].path, p[j]) for j in kinds["structural"])
        rhs = tuple((axes[j].path, float(p[j])) for j in kinds["rhs"])
        weights = tuple((axes[j].workload, float(p[j])) for j in kinds["weight"])
        key = edit_key(structural) if structural else ()
        groups.setdefault(key, (structural, []))[1].append((i, rhs, weights))
    out = []
    for structural, pts in groups.values():
        for j in range(0, len(pts), size):
            out.append(_Chunk(structural, tuple(pts[j:j + size])))
    return out


def result_columns(
    axis_names: Sequence[str], workloads: Sequence[str], dims: Sequence[str],
    shadow_labels: Sequence[str], failures: bool = False,
) -> list[str]:
    """The columns of a sweep's DataFrame, in order (``failures``: with the failure model's
    columns).

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


def shadow_labels(scen: Scenario, axes: list[Axis]) -> list[str]:
    """Rows whose shadow price is reported: caps, total-bandwidth rows, swept right-hand sides."""
    totals = {c.label for c in scen.constraints
              if all(x == 1 for x in c.bw_coef) and not c.cost_coef and not c.power_coef}
    swept = {a.path for a in axes if a.kind == "rhs"}
    out = []
    for r in scen.rows:
        label = r.label
        base_label = label.split(" (#")[0]
        if label in ("budget_usd", "power_w") or base_label in totals or label in swept:
            out.append(label)
    return list(dict.fromkeys(out))


def frame(
    axes: list[Axis], points: list[tuple[Any, ...]], results: Mapping[int, _Record],
    workloads: list[str], dims: list[str], shadows: list[str],
    indices: Sequence[int] | None = None, failures: bool = False,
) -> pd.DataFrame:
    """The rows of ``indices`` (default every point), in that order (``failures``: with the
    failure model's columns)."""
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
    named = [(dict(r.step_time_s), dict(r.bw_gbps), dict(r.shadow)) for r in recs]
    for w in workloads:
        data[f"step_time_{w}_s"] = np.array([t.get(w, np.nan) for t, _, _ in named])
    for j, c in enumerate(_FAILURE_COLS if failures else ()):
        data[c] = np.array([r.failures[j] if r.failures else np.nan for r in recs])
    for c in ("network_cost_usd", "network_power_w"):
        data[c] = np.array([getattr(r, c) for r in recs], dtype=float)
    for d in dims:
        data[f"bw_{d}_gbps"] = np.array([b.get(d, np.nan) for _, b, _ in named])
    for label in shadows:
        data[f"shadow_{label}"] = np.array([sh.get(label, np.nan) for _, _, sh in named])
    for c in _TIMING_COLS:
        data[c] = np.array([getattr(r, c) for r in recs], dtype=float)
    import pandas as pd

    df = pd.DataFrame(data)  # filled in the order of cols
    if n:
        for j, a in enumerate(axes):
            if a.kind != "structural":
                df[cols[j]] = df[cols[j]].astype(float)
    return df

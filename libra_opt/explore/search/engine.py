"""The co-design search's enumeration, pruning and executors.

Each candidate of :mod:`~libra_opt.explore.search.space` gets the exact bandwidth optimum of
the scenario's objective unless a bound proves it cannot be among the ``top`` best: the
exact memory check, bound 2 per parallelization, bound 3 per parallelization and shape,
bounds 1 and 1' per candidate (:mod:`~libra_opt.explore.search.bounds`), each pruning when
it exceeds the ``top``-th best found so far by more than :data:`PRUNE_RTOL`.
Parallelizations are visited in increasing bound 2 in rounds of 1, 2, 4, ... chunks, each
chunk pruning against the best values known when its round started and its own solves, so
the rows are the same whatever executor (:mod:`libra_opt.explore.executors`) runs them.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from libra_opt.errors import InputError, LibraOptError
from libra_opt.explore.executors import ExecutorOptions, executor_session, make_batches, run_batches
from libra_opt.explore.search.bounds import (
    GroupTimes,
    SyncFloor,
    additive,
    failure_bounds,
    shape_bounds,
)
from libra_opt.explore.search.candidates import (
    Candidate,
    SearchBase,
    _Context,
    _generate_shared,
    _inner,
    _matrices,
    _placed,
    _resolve,
    _row,
    _ShapeContext,
    candidate_scenario,
    conventional_parallelism,
    generate,
)
from libra_opt.explore.search.results import designs, search_stats, search_table, trust_columns
from libra_opt.explore.search.space import (
    LayerTimeCache,
    MemoryModel,
    SearchSpace,
    compute_lower_bound_s,
    group_spans,
    groups_of,
    parallelisms,
    placement_of,
    search_shapes,
)
from libra_opt.explore.trust import timing_outside
from libra_opt.fabric.heterogeneous import slowest_fractions
from libra_opt.generators.error_model import ErrorModel
from libra_opt.generators.mapping import place_groups
from libra_opt.generators.parallelism import Parallelism
from libra_opt.optimize.problem import build_problem, solve
from libra_opt.optimize.solution import Solution
from libra_opt.options import OBJECTIVES
from libra_opt.scenario.accuracy import SAME_REL_TOL, same
from libra_opt.scenario.constraints import LinearConstraint
from libra_opt.traffic.in_network import in_network_dims
from libra_opt.traffic.step_time import walk_arrays

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SearchResult", "run_search", "codesign_gains", "PRUNE_RTOL", "RANKS", "iter_chunk"]

logger = logging.getLogger(__name__)

#: A candidate is pruned when its lower bound exceeds the incumbent by this relative margin:
#: more than solver round-off (:data:`~libra_opt.scenario.accuracy.SAME_REL_TOL`), so no
#: candidate that ties the incumbent is dropped.
PRUNE_RTOL = SAME_REL_TOL
#: Parallelizations per chunk of work (one batch of an executor).
CHUNK = 8
RANKS = ("objective", "failures")  #: the objective, or the objective under failures
#: A progress callback: ``progress(done_candidates, total_candidates)``.
Progress = Callable[[int, int], None]


def _top_values(values: Iterable[float], k: int) -> list[float]:
    """The ``k`` smallest distinct (up to round-off) ``values``, ascending: one design counts
    once, as :func:`~libra_opt.explore.search.results.designs` ranks them."""
    out: list[float] = []
    for v in sorted(values):
        if not out or not same(out[-1], v):
            out.append(v)
            if len(out) == k:
                break
    return out


def _kth(values: Sequence[float], k: int) -> float:
    top = _top_values(values, k)
    return top[k - 1] if len(top) >= k else math.inf


def iter_chunk(ctx: _Context, items: Sequence[tuple[int, Parallelism, float]],
               best: Sequence[float]) -> Iterator[list[dict]]:
    """The rows of each parallelization of one chunk, one list per item, in item order.

    ``items`` are ``(index, Parallelism, bound 2)`` in increasing bound; ``best`` the best
    objective values known when the chunk's round started.
    """
    best = list(best)
    cache: dict = {}
    shared: dict = {}
    units: dict = {}
    weight = ctx.base.scenario.weights[0] if ctx.base.scenario.weights else 1.0

    def threshold() -> float:
        return _kth(best, ctx.top) * (1 + PRUNE_RTOL) if ctx.prune else math.inf

    live = [(si, sc) for si, sc in enumerate(ctx.shapes) if sc.bounds is not None]

    def one(pi: int, par: Parallelism, lb_par: float) -> list[dict]:
        rows: list[dict] = []
        if lb_par > threshold():
            for si, sc in live:
                rows.append(_row((pi, si, -1), sc.shape, par, "*", "pruned",
                                 "compute + bubble bound exceeds the incumbent",
                                 len(_matrices(ctx, sc.shape, par, cache)), lower_bound=lb_par))
            return rows
        fabric0 = live[0][1].shape.fabric
        assert fabric0 is not None
        n_all = sum(len(_matrices(ctx, sc.shape, par, cache)) for _, sc in live)
        try:
            g = _generate_shared(ctx, par, fabric0, shared)
        except InputError as exc:
            rows.append(_row((pi, -1, -1), None, par, "*", "error", exc.one_line(), n_all))
            return rows
        mem_gb = g.memory.total_bytes / 1e9
        if not g.memory.fits:
            rows.append(_row((pi, -1, -1), None, par, "*", "memory", g.memory.describe(), n_all,
                             memory_per_npu_gb=mem_gb))
            return rows
        flat = g.workload.flat
        cands = []
        for si, sc in live:
            shape, scen, bounds = sc.shape, sc.scenario, sc.bounds
            assert shape.fabric is not None and scen is not None and bounds is not None
            mats = _matrices(ctx, shape, par, cache)
            if additive(scen) and not g.workload.hidden_window_s:
                times = GroupTimes(
                    flat, float(flat.phase_count @ flat.phase_compute_s),
                    bounds.rows_gbps * slowest_fractions(shape.fabric), shape.fabric,
                    scen.timing, units.setdefault(si, {}), g.workload.flat_ring_groups)
                floor = bounds.objective_bound(
                    times.floor_s(group_spans(shape.fabric.sizes, par.degrees())), weight)
                if floor > threshold():
                    rows.append(_row((pi, si, -1), shape, par, "*", "pruned",
                                     "bound over all placements exceeds the incumbent",
                                     len(mats), lower_bound=floor, memory_per_npu_gb=mem_gb))
                    continue
                for qi, m in enumerate(mats):
                    lb = bounds.objective_bound(times.step_times_s(groups_of(m)), weight)
                    cands.append((lb, (pi, si, qi), sc, m))
            else:
                for qi, m in enumerate(mats):
                    walk = walk_arrays(_placed(g, placement_of(shape.fabric, m)), shape.fabric,
                                       scen.timing)
                    lb = bounds.objective_lower_bound(
                        bounds.step_time_lower_bound_s(walk, scen), weight)
                    if lb <= threshold():
                        lb = max(lb, bounds.level_lower_bound(walk, scen, weight))
                    cands.append((lb, (pi, si, qi), sc, m))
        cands.sort(key=lambda c: (c[0], c[1]))
        for lb, index, sc, m in cands:
            shape = sc.shape
            assert shape.fabric is not None
            pl = placement_of(shape.fabric, m)
            if lb > threshold():
                rows.append(_row(index, shape, par, pl.describe(), "pruned",
                                 "bandwidth best-case bound exceeds the incumbent",
                                 lower_bound=lb, memory_per_npu_gb=mem_gb))
                continue
            t0 = time.perf_counter()
            scen = candidate_scenario(ctx.base, shape.fabric, g, pl)
            status, reason, values = _inner(ctx, scen, g)
            values["solve_s"] = time.perf_counter() - t0
            if status == "optimal":
                best.append(values[ctx.rank_key])
                best[:] = _top_values(best, ctx.top)
            values.setdefault("memory_per_npu_gb", mem_gb)
            rows.append(_row(index, shape, par, pl.describe(), status, reason,
                             lower_bound=lb, **values))
        return rows

    for pi, par, lb_par in items:
        yield one(pi, par, lb_par)


@dataclass(frozen=True, repr=False)
class SearchResult:
    """The outcome of :func:`run_search`.

    ``table`` (pandas) has one row per candidate, or per group pruned together (their count in
    ``n_candidates``, ``placement`` ``*``), in enumeration order: the knobs
    (:data:`~.results.KNOB_COLUMNS`), ``status`` (``optimal``, ``pruned``, ``memory``,
    ``infeasible``, ``unbounded``, ``error``, ``invalid_shape``), ``reason``, ``lower_bound``,
    ``objective``, ``step_time_s``, ``tokens_per_s``, ``mfu`` (a fraction), ``memory_per_npu_gb``,
    ``bw_<dim>_gbps``, ``network_cost_usd``, ``network_power_w``, ``run_cost_usd`` (NaN without
    a TCO run length), ``run_cost_usd_per_mtoken``, ``solve_s``, with failures ``goodput`` and
    ``effective_objective``, and ``rank`` (1 = best, NA when not solved; see also
    :func:`~libra_opt.explore.search.results.designs`). ``solutions`` and ``candidates`` are the
    ``top`` best (none at a fixed bandwidth); ``stats`` the counts, ``wall_s``, ``solve_s``
    (summed over workers) and ``solves_per_solver_s``; ``gains`` the :func:`codesign_gains`.
    """

    table: pd.DataFrame
    solutions: tuple[Solution, ...]
    candidates: tuple[Candidate, ...]
    stats: Mapping[str, float]
    objective: str
    gains: Mapping[str, Any] | None = None
    device: str = ""
    stack: str = ""
    rank: str = "objective"

    def best(self, k: int = 5) -> pd.DataFrame:
        """The ``k`` best solved rows, best first."""
        t = self.table
        return t[t["rank"].notna()].sort_values("rank").head(k)

    def __repr__(self) -> str:
        s = self.stats
        return (f"SearchResult({self.objective}: {int(s['enumerated']):,} candidates, "
                f"{int(s['solved']):,} solved, {int(s['pruned']):,} pruned, "
                f"{int(s['memory']):,} out of memory; {s['wall_s']:.1f} s)")


def _rounds(n: int, chunk: int) -> Iterator[tuple[int, int]]:
    """(start, stop) of rounds of 1, 2, 4, ... chunks over ``n`` items."""
    start, size = 0, 1
    while start < n:
        stop = min(n, start + size * chunk if start else 1)
        yield start, stop
        start, size = stop, min(size * 2, 16)


def run_search(
    base: SearchBase,
    space: SearchSpace | None = None,
    *,
    top: int = 5,
    objective: str | None = None,
    fixed_bw_gbps: Sequence[float] | None = None,
    prune: bool = True,
    executor: Any = "serial",
    max_workers: int | None = None,
    scheduler: str | None = None,
    progress: bool | Progress = False,
    extra_constraints: Sequence[LinearConstraint] = (),
    solutions: bool = True,
    error_model: ErrorModel | None = None,
    rank: str = "objective",
) -> SearchResult:
    """Search parallelization, placement, fabric shape and bandwidth together.

    ``base`` comes from :func:`libra_opt.explore.search.base.search_base`; ``space`` defaults to
    every knob and placement on the base fabric. The ``top`` best candidates are exact (pruning
    keeps them; ``prune=False`` solves every one that fits) and, with ``solutions``, re-solved
    for their full :class:`Solution`. ``objective`` overrides the scenario's;
    ``fixed_bw_gbps`` evaluates every candidate at one bandwidth instead of optimizing it;
    ``extra_constraints`` are added (e.g. an equal split); ``executor``, ``max_workers`` and
    ``scheduler`` say where the chunks run (:func:`libra_opt.explore.executors.resolve_executor`;
    the rows are the same on all); ``progress`` is a bar on stderr (``True``) or a callable of
    ``(done, total)``; ``error_model`` adds each solved row's error band and envelope columns;
    ``rank='failures'`` ranks by the objective under failures (a ``reliability`` section).

    Examples
    --------
    >>> import libra_opt as lo
    >>> from libra_opt.explore.search.base import search_base
    >>> base = search_base(lo.load_scenario("gpt3_175b_a100_cluster"))
    >>> space = SearchSpace(micro_batch_sizes=(1,), interleave=(1,), recompute=("full",),
    ...                     sequence_parallel=(True,), zero=(1,), tp=(8,), cp=(1,))
    >>> res = run_search(base, space, top=1)
    >>> res.best(1)[["tp", "pp", "dp", "status"]].to_dict("records")
    [{'tp': 8, 'pp': 2, 'dp': 64, 'status': 'optimal'}]
    >>> bool(res.solutions[0].objective_value == res.best(1)["objective"].iloc[0])
    True
    """

    t_start = time.perf_counter()
    space = space if space is not None else SearchSpace()
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise InputError(f"top {top!r} must be a positive integer", field="top")
    options = ExecutorOptions(executor, max_workers, scheduler)  # checked before the work
    scen, spec = base.scenario, base.spec
    if rank not in RANKS:
        raise InputError(f"rank {rank!r} is not one of {', '.join(RANKS)}", field="rank")
    if rank == "failures" and scen.reliability is None:
        raise InputError("ranking with failures (rank 'failures') needs a failure model: "
                         "the scenario has no reliability section", source=scen.source,
                         field="reliability")
    if objective is not None:
        if objective not in OBJECTIVES:
            raise InputError(f"objective {objective!r} is not one of {', '.join(OBJECTIVES)}",
                             field="objective")
        scen = dataclasses.replace(scen, objective=objective)
        spec = None if spec is None else spec.replace("objective", objective)
    if extra_constraints:
        scen = dataclasses.replace(scen, constraints=(*scen.constraints, *extra_constraints))
    base = dataclasses.replace(base, scenario=scen, spec=spec)
    entry = base.entry
    fixed = None
    if fixed_bw_gbps is not None:
        fixed = tuple(float(b) for b in fixed_bw_gbps)
        if len(fixed) != scen.fabric.n_dims or not all(math.isfinite(b) and b > 0 for b in fixed):
            raise InputError(f"expected {scen.fabric.n_dims} positive bandwidths, got "
                             f"{fixed_bw_gbps!r}", field="fixed_bw_gbps")
    shapes = []
    for shape in search_shapes(scen.fabric, space, spec):
        if shape.fabric is None:
            shapes.append(_ShapeContext(shape, None, None))
            continue
        try:  # a shape the cost model cannot price, or that cannot host the base layout
            g0 = generate(entry, entry.parallelism, shape.fabric)
            sc = candidate_scenario(base, shape.fabric, g0, place_groups(
                shape.fabric, entry.parallelism.degrees()))
        except InputError as exc:
            shapes.append(_ShapeContext(dataclasses.replace(
                shape, fabric=None, reason=exc.one_line()), None, None))
            continue
        bounds = shape_bounds(sc, None if fixed is None else np.asarray(fixed))
        bounds = failure_bounds(sc, bounds) if rank == "failures" else bounds
        if not bounds.feasible:
            shapes.append(_ShapeContext(dataclasses.replace(
                shape, reason="the constraints admit no bandwidth"), None, None))
        else:
            shapes.append(_ShapeContext(shape, sc, bounds))
    ctx = _Context(base, tuple(shapes), scen.fabric.names, fixed,
                   space.placements == "all", top, prune,
                   None if extra_constraints else spec, rank == "failures")
    live = [sc for sc in shapes if sc.bounds is not None]
    rows: list[dict] = []
    for si, shape_ctx in enumerate(shapes):
        if shape_ctx.bounds is None:
            rows.append(_row((-1, si, -1), shape_ctx.shape, entry.parallelism, "*",
                             "invalid_shape", shape_ctx.shape.reason, 0))
    weight = scen.weights[0] if scen.weights else 1.0

    memory = MemoryModel(entry.model, entry.device.hbm_bytes)
    layer_times = LayerTimeCache(entry.model, entry.device, entry.efficiency)
    floors = [_sync_floor(sc) for sc in live]
    count_cache: dict[tuple, int] = {}

    def n_cands(par: Parallelism) -> int:
        key = tuple(par.degrees().values())
        if key not in count_cache:
            count_cache[key] = sum(len(_matrices(ctx, sc.shape, par)) for sc in live)
        return count_cache[key]

    work: list[tuple[float, int, Parallelism]] = []
    total = 0
    for pi, par in enumerate(parallelisms(entry.model, scen.fabric.n_npus,
                                          entry.parallelism, space)):
        n = n_cands(par) if live else 0
        total += n
        mem = memory.bytes_per_npu(par)
        if mem > entry.device.hbm_bytes:
            rows.append(_row((pi, -1, -1), None, par, "*", "memory",
                             f"{mem / 1e9:.1f} GB per NPU, the device has "
                             f"{entry.device.hbm_bytes / 1e9:.0f} GB", n,
                             memory_per_npu_gb=mem / 1e9))
            continue
        if not live:
            continue
        work.append((_bound_2(par, compute_lower_bound_s(entry.model, par, layer_times),
                              memory, live, floors, weight), pi, par))
    work.sort(key=lambda w: (w[0], w[1]))

    bar = _progress_bar(progress, total)
    done = sum(r["n_candidates"] for r in rows)
    bar(done, total)
    best: list[float] = []
    try:
        with executor_session(options.executor, iter_chunk, max_workers) as ex:
            for start, stop in _rounds(len(work), CHUNK):
                thr = _kth(best, top)
                batch = work[start:stop]
                if prune and batch[0][0] > thr * (1 + PRUNE_RTOL):
                    rest = [(pi, par, lb) for lb, pi, par in work[start:]]
                    # rows only: every item is pruned
                    pruned = [r for rows in iter_chunk(ctx, rest, best) for r in rows]
                    rows.extend(pruned)
                    done += sum(r["n_candidates"] for r in pruned)
                    bar(done, total)
                    break
                chunks = make_batches([(pi, par, lb) for lb, pi, par in batch], CHUNK)
                weights = [[n_cands(par) for _, par, _ in c] for c in chunks]
                seen = [0] * len(chunks)

                def on_items(i: int, n: int, weights: list[list[int]] = weights,
                             seen: list[int] = seen) -> None:
                    nonlocal done
                    done += sum(weights[i][seen[i]:seen[i] + n])
                    seen[i] += n
                    bar(done, total)

                task = functools.partial(iter_chunk, ctx, best=tuple(best))
                it = run_batches(task, chunks, ExecutorOptions(ex), on_items=on_items)
                try:
                    results: dict[int, list[list[dict]]] = dict(it)
                finally:
                    it.close()  # type: ignore[attr-defined]  # a generator: stops the workers
                for i in range(len(chunks)):  # chunk order: deterministic whatever finished first
                    for par_rows in results[i]:
                        rows.extend(par_rows)
                        best.extend(r[ctx.rank_key] for r in par_rows
                                    if r["status"] == "optimal")
                best = _top_values(best, top)
    finally:
        bar(-1, total)

    table = designs(search_table(rows, scen.fabric.names, ctx.rank_key), ctx.rank_key)
    if error_model is not None:
        table = table.assign(**trust_columns(error_model, table, entry, ctx.rank_key,
                                             timing_outside(scen)))
    stats = search_stats(table, time.perf_counter() - t_start)
    resolved: list[tuple[Candidate, Solution]] = []
    if solutions and fixed is None:
        ranked = table[table["rank"].notna()].sort_values("rank").head(top)
        resolved = [_resolve(ctx, r) for _, r in ranked.iterrows()]
    return SearchResult(table, tuple(sol for _, sol in resolved),
                        tuple(cand for cand, _ in resolved), stats, scen.objective, rank=rank,
                        device=entry.device.key,
                        stack=entry.parallelism.software_stack or entry.device.calibration_stack)


def _sync_floor(sc: _ShapeContext) -> SyncFloor | None:
    """Bound 2' of a shape, where the step time is additive (see :class:`SyncFloor`)."""
    scen, bounds, fabric = sc.scenario, sc.bounds, sc.shape.fabric
    assert scen is not None and bounds is not None and fabric is not None
    if not additive(scen):
        return None
    return SyncFloor(fabric, bounds.rows_gbps * slowest_fractions(fabric),
                     scen.collective_model, scen.traffic_model,
                     in_network_dims(scen.in_network_dims, fabric))


def _bound_2(par: Parallelism, compute_s: float, memory: MemoryModel,
             live: Sequence[_ShapeContext], floors: Sequence[SyncFloor | None],
             weight: float) -> float:
    """Bound 2 (and 2' where it applies) of a parallelization: the least over the shapes
    of the objective bound of ``T_c + t_sync`` at the shape's bandwidth rows."""
    syncs = (par.dp_mode == "collective" and par.zero < 3 and not par.dp_comm_overlap)
    params = memory.min_dense_params(par) if syncs else 0.0
    prec = par.precision
    out = math.inf
    for sc, floor in zip(live, floors, strict=True):
        assert sc.bounds is not None
        times = np.full(sc.bounds.rows_gbps.shape[0], compute_s)
        if floor is not None and syncs:
            times = times + floor.sync_s(par.zero, par.dp * par.cp, params, prec.grad_bytes,
                                         prec.param_bytes)
        out = min(out, sc.bounds.objective_bound(times, weight))
    return out


def _progress_bar(progress: bool | Progress, total: int) -> Callable[[int, int], None]:
    if callable(progress):
        return lambda done, n: progress(done, n) if done >= 0 else None
    if not progress:
        return lambda done, n: None
    from tqdm.auto import tqdm

    bar = tqdm(total=total, unit="cand", desc="search", leave=False)

    def update(done: int, n: int) -> None:
        if done < 0:
            bar.close()
            return
        bar.update(done - bar.n)

    return update


def codesign_gains(base: SearchBase, result: SearchResult, space: SearchSpace | None = None,
                   **kwargs: Any) -> dict[str, Any]:
    """The gain of choosing everything together, as ratios of objective values (>= 1: the
    co-design is better): ``equal_split``, the best parallelization when every dimension gets
    the same bandwidth, and ``conventional``, the optimum of the conventional layout
    (:func:`conventional_parallelism`) on the base fabric, each over the co-design optimum.
    ``kwargs`` go to :func:`run_search` for the equal-split search.
    """
    scen = base.scenario
    if result.objective != scen.objective:
        scen = dataclasses.replace(scen, objective=result.objective)  # type: ignore[arg-type]
        spec = None if base.spec is None else base.spec.replace("objective", result.objective)
        base = dataclasses.replace(base, scenario=scen, spec=spec)
    solved = result.table[result.table["rank"] == 1]
    if solved.empty:
        return {"equal_split": math.nan, "conventional": math.nan, "best": math.nan}
    best = float(solved["objective"].iloc[0])
    names = scen.fabric.names
    eq = tuple(
        LinearConstraint(f"bw.{names[0]} == bw.{names[d]} (equal split)",
                         tuple(1.0 if i == 0 else -1.0 if i == d else 0.0
                               for i in range(len(names))), 0.0, 0.0, "==", 0.0)
        for d in range(1, len(names)))
    eq_res = run_search(base, space, top=1, extra_constraints=eq, solutions=False,
                        **{k: v for k, v in kwargs.items() if k != "top"})
    eq_best = eq_res.table[eq_res.table["rank"] == 1]
    eq_value = float(eq_best["objective"].iloc[0]) if not eq_best.empty else math.nan
    par, mapping = conventional_parallelism(base)
    conv_value, conv_reason = math.nan, ""
    try:
        fabric = scen.fabric
        g = generate(base.entry, par, fabric)
        if not g.memory.fits:
            conv_reason = "does not fit: " + g.memory.describe()
        else:
            pl = place_groups(fabric, par.degrees(), mapping)
            conv_value = solve(build_problem(candidate_scenario(base, fabric, g, pl)),
                               with_baselines=False).objective_value
    except LibraOptError as exc:
        conv_reason = " ".join(str(exc).split())
    return {
        "best": best,
        "equal_split": eq_value / best,
        "equal_split_best": eq_best.iloc[0].to_dict() if not eq_best.empty else {},
        "conventional": conv_value / best,
        "conventional_parallelism": {"tp": par.tp, "pp": par.pp, "dp": par.dp,
                                     "cp": par.cp},
        "conventional_reason": conv_reason,
    }


"""Independent numpy evaluation of a scenario at one bandwidth allocation: the reference
every optimizer answer is checked against (every workload walked phase by phase, no solver;
a heterogeneous dimension timed at its slowest member's bandwidth ``f_min B_d``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from libra_opt.cost.prices import CostBreakdown, network_cost_breakdown
from libra_opt.errors import InputError, short_repr
from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.frozen import FrozenAtInit, FrozenMap, FrozenOnUnpickle, readonly_array
from libra_opt.fabric.heterogeneous import slowest_fractions
from libra_opt.scenario.accuracy import same
from libra_opt.scenario.constraints import Row
from libra_opt.scenario.display import format_usd, html_table
from libra_opt.scenario.scenario import Scenario, scenario_rows
from libra_opt.traffic.step_time import (
    WalkArrays,
    WorkloadTimes,
    check_bandwidth,
    step_time_from_walk,
    step_times_s,
    walk_arrays,
)

__all__ = ["Evaluation", "Evaluations", "evaluate", "evaluate_many", "scenario_walks"]


@dataclass(frozen=True, repr=False)
class Evaluation(FrozenOnUnpickle):
    """A scenario evaluated at one bandwidth allocation.

    Attributes
    ----------
    bw_gbps : numpy.ndarray
        Bandwidth per dimension (GB/s per NPU).
    workloads : tuple of WorkloadTimes
    weighted_step_time_s : float
        ``sum_w weight_w * step_time_w``.
    cost : CostBreakdown
    objective_value : float
        The objective's value (:mod:`libra_opt.scenario.objective`).
    residuals : mapping
        Constraint label -> signed violation (> 0 means violated) in the row's units.
    residual_scales : mapping
        Constraint label -> ``max(1, |rhs|, |a| . B)``, the scale violations are judged by.
    dim_names : tuple of str
        The fabric's dimension names, in the order of ``bw_gbps``.
    """

    bw_gbps: np.ndarray
    workloads: tuple[WorkloadTimes, ...]
    weighted_step_time_s: float
    cost: CostBreakdown
    objective_value: float
    residuals: Mapping[str, float]
    residual_scales: Mapping[str, float]
    dim_names: tuple[str, ...] = ()

    #: Its arrays are read-only from construction.
    ARRAYS_FROZEN_AT_INIT: ClassVar[bool] = True

    def __post_init__(self) -> None:
        # read-only and owned (the workloads' times and the cost freeze their own arrays)
        object.__setattr__(self, "bw_gbps", readonly_array(self.bw_gbps))
        for key in ("residuals", "residual_scales"):
            if type(getattr(self, key)) is not FrozenMap:  # a FrozenMap is read-only already
                object.__setattr__(self, key, FrozenMap(getattr(self, key)))

    def violated(self) -> tuple[str, ...]:
        """Labels of the constraints broken by more than solver round-off: a residual that
        is not the same as 0 at its row's scale (:func:`~libra_opt.scenario.accuracy.same`)."""
        scales = self.residual_scales
        return tuple(k for k, v in self.residuals.items()
                     if v > 0 and not same(v, 0.0, scale=scales[k]))

    def feasible(self, rel_tol: float | None = None) -> bool:
        """True when no constraint is :meth:`violated`; with ``rel_tol``, when every
        constraint holds within ``rel_tol`` of its scale."""
        if rel_tol is None:
            return not self.violated()
        scales = self.residual_scales
        return all(v <= rel_tol * scales[k] for k, v in self.residuals.items())

    @property
    def step_time_s(self) -> dict[str, float]:
        """Workload name -> step time in seconds."""
        return {w.name: w.step_time_s for w in self.workloads}

    def _summary(self) -> list[str]:
        items = [
            f"weighted step time {self.weighted_step_time_s:.6g} s",
            f"network cost {format_usd(self.cost.network_cost_usd)}",
        ]
        if self.cost.network_power_w is not None:
            items.append(f"network power {self.cost.network_power_w:,.0f} W")
        if self.feasible():
            items.append("feasible")
        else:
            bad = self.violated()
            more = f" (+{len(bad) - 3} more)" if len(bad) > 3 else ""
            items.append("infeasible: " + ", ".join(bad[:3]) + more)
        return items

    def __repr__(self) -> str:
        """One line: bandwidth per dimension (GB/s), weighted step time, cost, feasibility.

        Examples
        --------
        >>> from libra_opt.scenario.examples import toy_scenario
        >>> evaluate(toy_scenario(), [200.0, 100.0])
        Evaluation(bw GB/s [200.0, 100.0], weighted step time 0.015 s, network cost $121,600, network power 608 W, feasible)
        >>> evaluate(toy_scenario(), [100.0, 100.0])
        Evaluation(bw GB/s [100.0, 100.0], weighted step time 0.02 s, network cost $115,200, network power 576 W, infeasible: sum(bw) == 300)
        """
        bw = ", ".join(f"{b:.1f}" for b in self.bw_gbps)
        return f"Evaluation(bw GB/s [{bw}], " + ", ".join(self._summary()) + ")"

    def _repr_html_(self) -> str:
        """HTML for notebooks: a table of the dimensions (by name) and one of the workloads.

        Examples
        --------
        >>> from libra_opt.scenario.examples import toy_scenario
        >>> h = evaluate(toy_scenario(), [200.0, 100.0])._repr_html_()
        >>> h.count("<table>"), h.count("<tr>")   # 2 dims + header, 1 workload + header
        (2, 5)
        >>> "<td>node</td><td>200.0</td>" in h and "dim #" not in h
        True
        """
        usd = self.cost.usd_by_dim_component.sum(axis=1)
        w = self.cost.w_by_dim_component
        power = None if w is None else w.sum(axis=1)
        dims = html_table(
            ["dim", "bandwidth GB/s", "cost $"] + ([] if power is None else ["power W"]),
            [[self.dim_names[d] if d < len(self.dim_names) else f"#{d}", f"{b:.1f}",
              f"{usd[d]:,.0f}"] + ([] if power is None else [f"{power[d]:,.0f}"])
             for d, b in enumerate(self.bw_gbps)],
            caption="Evaluation: " + "; ".join(self._summary()))
        wls = html_table(
            ["workload", "step time s", "compute s", "exposed comm s"],
            [[t.name, f"{t.step_time_s:.6g}", f"{t.compute_s:.6g}", f"{t.exposed_comm_s:.6g}"]
             for t in self.workloads])
        return f"<div>{dims}{wls}</div>"


def scenario_walks(scenario: Scenario) -> tuple[WalkArrays, ...]:
    """Every workload's walk (:func:`~libra_opt.traffic.step_time.walk_arrays`) on the
    scenario's fabric: build once, then pass to :func:`evaluate` as many times as needed."""
    with np.errstate(over="ignore", invalid="ignore"):  # :func:`evaluate` refuses overflow
        return tuple(walk_arrays(w, scenario.fabric, scenario.timing) for w in scenario.workloads)


def _row_residuals(rows: tuple[Row, ...], bw: np.ndarray) -> tuple[list[float], list[float]]:
    """Each row's signed violation at ``bw`` (> 0: violated) and its scale ``max(1, |rhs|,
    |a| . B)``: the one definition :func:`evaluate` and :func:`evaluate_many` use."""
    a = np.array([r.a for r in rows]).reshape(len(rows), bw.size)
    lhs, mag = (a @ bw).tolist(), (np.abs(a) @ bw).tolist()
    return ([v - r.rhs if r.sense == "<=" else r.rhs - v if r.sense == ">=" else abs(v - r.rhs)
             for r, v in zip(rows, lhs, strict=True)],
            [max(1.0, abs(r.rhs), m) for r, m in zip(rows, mag, strict=True)])


def _check_finite(fabric: Fabric, bw: np.ndarray, times: tuple[WorkloadTimes, ...],
                  weighted: float, cost: CostBreakdown, objective: float,
                  residuals: dict[str, float], scales: dict[str, float],
                  walks: tuple[WalkArrays, ...], source: str | None) -> None:
    """Refuse an evaluation with a non-finite figure: its feasibility and objective mean
    nothing."""
    isfinite = math.isfinite
    power = cost.network_power_w
    if (isfinite(weighted) and isfinite(cost.network_cost_usd) and isfinite(objective)
            and (power is None or isfinite(power))
            and all(isfinite(t.step_time_s) for t in times)
            and all(map(isfinite, residuals.values())) and all(map(isfinite, scales.values()))):
        return  # every figure finite (the usual case): no message to name one
    figures = [(f"step time of {t.name!r}", t.step_time_s) for t in times]
    figures += [("weighted step time", weighted), ("network cost", cost.network_cost_usd)]
    if cost.network_power_w is not None:
        figures.append(("network power", cost.network_power_w))
    figures.append(("objective", objective))
    figures += [(f"constraint {k!r}", v) for d in (residuals, scales) for k, v in d.items()]
    what, value = next((w, v) for w, v in figures if not math.isfinite(v))
    traffic = sum((t.traffic_by_dim_bytes for t in times), np.zeros(fabric.n_dims))
    starved = [n for n, b, m in zip(fabric.names, bw, traffic, strict=True) if b == 0 and m > 0]
    if not np.isfinite(traffic).all() or not all(np.isfinite(w.latency_s).all() for w in walks):
        raise InputError(f"the {what} is {value}: a collective's traffic or latency "
                         "overflows double precision (check the fabric's latency_s and the "
                         "workloads' sizes)", source=source, field="fabric.dims.latency_s")
    why = (f"dimension {starved[0]!r} carries traffic at 0 GB/s" if starved else
           "the bandwidths are outside the range the model computes in double precision")
    raise InputError(f"at bandwidths {short_repr([float(b) for b in bw])} GB/s the {what} is "
                     f"{value}: {why}", field="bw")


def evaluate(scenario: Scenario, bw_gbps: npt.ArrayLike,
             walks: tuple[WalkArrays, ...] | None = None) -> Evaluation:
    """Evaluate ``scenario`` at ``bw_gbps`` (by position, or by dimension name from a mapping
    or a labelled ``pandas.Series``) with plain numpy; ``walks`` (:func:`scenario_walks`)
    saves re-walking the workloads when one scenario is evaluated many times.

    Raises
    ------
    InputError
        ``field="bw"`` for bandwidths that are not one finite number >= 0 per dimension, or
        at which a figure is not finite.

    Examples
    --------
    >>> from libra_opt.cost.prices import CostModel
    >>> from libra_opt.fabric.dims import Dim, Fabric
    >>> from libra_opt.traffic.workload import Collective, Layer, Phase, Workload
    >>> f = Fabric((Dim("a", "ring", 4, "T"),))
    >>> w = Workload("w", (Layer("l", Phase(0.5, (Collective("all_reduce", 4e9, "g"),))),),
    ...              {"g": (4,)})
    >>> s = Scenario(f, CostModel.from_tables({"T": {"link": 2.0}}), (w,))
    >>> e = evaluate(s, [100.0])
    >>> round(e.objective_value, 6), e.cost.network_cost_usd   # cost = 2 $ x 4 NPUs x 100
    (0.56, 800.0)
    """
    fabric = scenario.fabric
    bw = check_bandwidth(fabric, bw_gbps)  # by position, or by name from a mapping
    if walks is None:
        walks = scenario_walks(scenario)
    # Overflow and 1/0 are caught below as non-finite results, not warned about.
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        slowest_bw = bw * slowest_fractions(fabric)  # the slowest member bounds a collective
        times = tuple(step_time_from_walk(walk, slowest_bw, scenario.timing) for walk in walks)
        assert scenario.weights is not None
        weighted = float(sum(wt * t.step_time_s
                             for wt, t in zip(scenario.weights, times, strict=True)))
        coeffs = scenario.coefficients
        cost = network_cost_breakdown(coeffs, bw)
        objective = scenario.objective_model.value(scenario, weighted, cost.network_cost_usd, bw)
        rows = scenario_rows(scenario, coeffs)
        res, sc = _row_residuals(rows, bw)
        residuals = {r.label: v for r, v in zip(rows, res, strict=True)}
        scales = {r.label: v for r, v in zip(rows, sc, strict=True)}
        _check_finite(fabric, bw, times, weighted, cost, objective, residuals, scales, walks,
                      scenario.source)
    return Evaluation(bw_gbps=bw, workloads=times, weighted_step_time_s=weighted, cost=cost,
                      objective_value=objective, residuals=FrozenMap(residuals),
                      residual_scales=FrozenMap(scales), dim_names=fabric.names)


@dataclass(frozen=True)
class Evaluations(FrozenAtInit):
    """Scenarios of one family (one fabric, workloads, timing, prices and objective; their
    weights and right-hand sides differ) evaluated at one allocation each, as arrays: what
    :func:`evaluate` gives for each, the breakdowns left out.

    Attributes
    ----------
    bw_gbps : numpy.ndarray
        ``(N, D)`` bandwidth per dimension (GB/s per NPU).
    step_time_s : numpy.ndarray
        ``(N, W)`` step time of each workload (s).
    weighted_step_time_s, network_cost_usd, objective_value : numpy.ndarray
        ``(N,)``.
    network_power_w : numpy.ndarray or None
        ``(N,)`` W, ``None`` when no power model was given.
    residuals, residual_scales : numpy.ndarray
        ``(N, R)`` signed violation of each row of :attr:`labels` and its scale
        (:attr:`Evaluation.residuals`).
    labels : tuple of str
    """

    bw_gbps: np.ndarray
    step_time_s: np.ndarray
    weighted_step_time_s: np.ndarray
    network_cost_usd: np.ndarray
    network_power_w: np.ndarray | None
    objective_value: np.ndarray
    residuals: np.ndarray
    residual_scales: np.ndarray
    labels: tuple[str, ...]

    def finite(self) -> np.ndarray:
        """``(N,)`` whether every figure of an allocation is finite (:func:`evaluate` refuses
        the others, naming the figure)."""
        parts = [self.step_time_s, self.weighted_step_time_s[:, None],
                 self.network_cost_usd[:, None], self.objective_value[:, None],
                 self.residuals, self.residual_scales]
        if self.network_power_w is not None:
            parts.append(self.network_power_w[:, None])
        return np.isfinite(np.hstack(parts)).all(axis=1)


def evaluate_many(scenarios: Sequence[Scenario], bw_gbps: npt.ArrayLike,
                  walks: tuple[WalkArrays, ...] | None = None) -> Evaluations:
    """:func:`evaluate` of ``scenarios[i]`` at ``bw_gbps[i]`` for every ``i`` at once.

    The scenarios must share their fabric, workloads, timing, cost coefficients and objective
    (a sweep's points over weights and right-hand sides); ``walks``, when given, are theirs.
    Step times, weighted step time, cost, power and objective are the same bits as
    :func:`evaluate` gives one by one; a non-finite figure is returned, not refused
    (:meth:`Evaluations.finite`).

    Raises
    ------
    InputError
        ``field="bw"`` for bandwidths that are not ``(N, D)`` finite numbers >= 0, or
        ``field="scenarios"`` for scenarios of more than one family.

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> s = toy_scenario()
    >>> many = evaluate_many([s, s], [[200.0, 100.0], [100.0, 100.0]])
    >>> many.weighted_step_time_s.tolist(), many.network_cost_usd.tolist()
    ([0.015, 0.02], [121600.0, 115200.0])
    >>> [evaluate(s, b).objective_value for b in ([200.0, 100.0], [100.0, 100.0])]
    [0.015, 0.02]
    """
    if not scenarios:
        raise InputError("evaluate_many needs at least one scenario", field="scenarios")
    s0 = scenarios[0]
    fabric = s0.fabric
    keep = ("fabric", "workloads", "timing", "cost_model", "in_network_reduction", "objective")
    if any(getattr(s, k) is not getattr(s0, k) and getattr(s, k) != getattr(s0, k)
           for s in scenarios[1:] for k in keep):
        raise InputError("evaluate_many takes scenarios that differ only in weights, "
                         "limits and constraint right-hand sides", field="scenarios")
    try:
        bw = np.asarray(bw_gbps, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"bandwidths {short_repr(bw_gbps)} must be numbers (GB/s)",
                         field="bw") from None
    if bw.shape != (len(scenarios), fabric.n_dims) or not (np.isfinite(bw) & (bw >= 0)).all():
        raise InputError(f"expected {len(scenarios)} x {fabric.n_dims} finite bandwidths >= 0 "
                         f"GB/s, got shape {bw.shape}", field="bw")
    if walks is None:
        walks = scenario_walks(s0)
    coeffs = s0.coefficients
    rows = [scenario_rows(s, coeffs) for s in scenarios]
    kinds = [(r.label, r.sense) for r in rows[0]]
    if any([(r.label, r.sense) for r in rs] != kinds for rs in rows[1:]):
        raise InputError("evaluate_many takes scenarios with the same constraints",
                         field="scenarios")
    n, n_rows = len(scenarios), len(kinds)
    weights = np.array([s.weights for s in scenarios], dtype=float)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        slowest = bw * slowest_fractions(fabric)
        times = np.column_stack([step_times_s(w, slowest, s0.timing) for w in walks])
        weighted = np.zeros(n)
        for j in range(len(walks)):  # as evaluate's sum over the workloads
            weighted = weighted + weights[:, j] * times[:, j]
        usd = (coeffs.usd_by_component * bw[:, :, None]).reshape(n, -1).sum(axis=1)
        power = (None if coeffs.w_by_component is None else
                 (coeffs.w_by_component * bw[:, :, None]).reshape(n, -1).sum(axis=1)
                 + coeffs.fixed_w)
        cost = usd + coeffs.fixed_usd
        objective = np.array([s.objective_model.value(s, float(t), float(c), b)
                              for s, t, c, b in zip(scenarios, weighted, cost, bw, strict=True)])
        pairs = [_row_residuals(rs, b) for rs, b in zip(rows, bw, strict=True)]
        residuals = np.array([p[0] for p in pairs], dtype=float).reshape(n, n_rows)
        scales = np.array([p[1] for p in pairs], dtype=float).reshape(n, n_rows)
    labels = tuple(k[0] for k in kinds)
    return Evaluations(bw_gbps=bw, step_time_s=times, weighted_step_time_s=weighted,
                       network_cost_usd=cost, network_power_w=power, objective_value=objective,
                       residuals=residuals, residual_scales=scales, labels=labels)

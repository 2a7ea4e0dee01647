"""Results: frozen records of an optimized design, its constraints, baselines and solver data."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from libra_opt.fabric.frozen import FrozenOnUnpickle, readonly_array
from libra_opt.optimize.scaling import ProgramRun, RowScaling
from libra_opt.options import OBJECTIVE_MEANING, Objective
from libra_opt.scenario.accuracy import same_each
from libra_opt.scenario.constraints import Row
from libra_opt.scenario.display import format_usd, html_table
from libra_opt.scenario.evaluate import Evaluation, evaluate
from libra_opt.scenario.failures import FailureReport, failure_report
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.step_time import WalkArrays

__all__ = [
    "SOLUTION_FORMAT",
    "ConstraintReport",
    "SolverInfo",
    "Baseline",
    "Solution",
    "baselines",
    "constraint_reports",
]


SOLUTION_FORMAT = "libra-opt solution"
"""The ``format`` of a :meth:`Solution.to_json` document."""


@dataclass(frozen=True)
class ConstraintReport:
    """One constraint at the optimum.

    Attributes
    ----------
    label : str
    lhs : float
        ``a . B`` at the optimum.
    sense : str
    rhs : float
    slack : float
        Distance to the bound (>= 0 when satisfied; 0 for equalities).
    active : bool
        The constraint holds with equality up to solver round-off
        (:func:`~libra_opt.scenario.accuracy.same` at the row's scale).
    shadow_price : float
        d objective / d rhs at the optimum: objective units per unit of rhs (GB/s, $ or W).
        Negative means relaxing the bound improves the objective.
    """

    label: str
    lhs: float
    sense: str
    rhs: float
    slack: float
    active: bool
    shadow_price: float


@dataclass(frozen=True)
class SolverInfo:
    """How the answer was found.

    Attributes
    ----------
    solver : str
        Numerical solver (``CLARABEL``).
    method : str
        ``convex`` (perf), ``convex-perspective`` (the exact perf-per-cost and TCO
        transform) or ``pinned``: the rows pin every used bandwidth to within 1e-6 relative
        (a budget at its floor), so linear programs decide the point and no conic solve
        does (shadow prices are then reported as 0).
    status : str
    compile_s, solve_s : float
        Problem construction/canonicalisation time and numerical solve time, seconds.
    n_solves : int
        Convex solves performed.
    objective_rel_gap : float
        Relative difference between the solver's objective and the numpy evaluator's.
    """

    solver: str
    method: str
    status: str
    compile_s: float
    solve_s: float
    n_solves: int
    objective_rel_gap: float


@dataclass(frozen=True, repr=False)
class Baseline(FrozenOnUnpickle):
    """A reference allocation with the same total bandwidth as the optimum."""

    name: str
    evaluation: Evaluation
    feasible: bool
    step_time_ratio: float
    """Baseline weighted step time / optimal weighted step time (> 1: the baseline is slower;
    an infeasible baseline may be faster)."""
    objective_ratio: float
    """Baseline objective / optimal objective (equals ``step_time_ratio`` for ``perf``)."""

    def __repr__(self) -> str:
        """One line: name, ratios to the optimum, feasibility and bandwidth (GB/s).

        Examples
        --------
        >>> from libra_opt.optimize.problem import solve
        >>> from libra_opt.scenario.examples import toy_scenario
        >>> solve(toy_scenario()).baselines[0]
        Baseline('equal split': step time ratio 1.111x, objective ratio 1.111x, feasible, bw GB/s [150.0, 150.0])
        """
        bw = ", ".join(f"{b:.1f}" for b in self.evaluation.bw_gbps)
        return (
            f"Baseline({self.name!r}: step time ratio {self.step_time_ratio:.4g}x, "
            f"objective ratio {self.objective_ratio:.4g}x, "
            f"{'feasible' if self.feasible else 'infeasible'}, bw GB/s [{bw}])"
        )


@dataclass(frozen=True, repr=False)
class Solution(FrozenOnUnpickle):
    """An optimized bandwidth allocation, re-checked by the numpy evaluator.

    Attributes
    ----------
    scenario : Scenario
    bw_gbps : numpy.ndarray
        Bandwidth per NPU of each dimension in GB/s (read-only).
    objective : str
    objective_value : float
        Seconds (``perf``) or seconds x $ (``perf_per_cost``).
    evaluation : Evaluation
        Step times, breakdowns, cost and power at ``bw_gbps``.
    constraints : tuple of ConstraintReport
    baselines : tuple of Baseline
        Equal split and traffic-proportional split at the optimum's total bandwidth,
        evaluated when first read (empty when ``with_baselines`` is false).
    solver : SolverInfo
    with_baselines : bool
        Whether :attr:`baselines` are evaluated (``False``: it is empty).
    walks : tuple of WalkArrays, optional
        The scenario's walks, kept to evaluate the baselines.
    """

    scenario: Scenario
    bw_gbps: np.ndarray
    objective: Objective
    objective_value: float
    evaluation: Evaluation
    constraints: tuple[ConstraintReport, ...]
    solver: SolverInfo
    with_baselines: bool = True
    walks: tuple[WalkArrays, ...] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Read-only and owned (the evaluation freezes itself, a problem its walks).
        object.__setattr__(self, "bw_gbps", readonly_array(self.bw_gbps))

    @cached_property
    def baselines(self) -> tuple[Baseline, ...]:
        """The equal-split and traffic-proportional baselines (:func:`baselines`), evaluated
        when first read: a solve that never reports them (a sweep point, a benchmark) does
        not pay for them."""
        if not self.with_baselines:
            return ()
        return baselines(self.scenario, self.evaluation, self.walks)

    @cached_property
    def failures(self) -> FailureReport | None:
        """The design under failures (:func:`~libra_opt.scenario.failures.failure_report`:
        goodput, effective throughput, the run's cost with failures), or ``None`` when the
        scenario has no ``reliability`` section."""
        if self.scenario.reliability is None:
            return None
        return failure_report(self.scenario, self.evaluation, self.walks)

    @property
    def step_time_s(self) -> dict[str, float]:
        """Workload name -> step time (s)."""
        return self.evaluation.step_time_s

    @property
    def network_cost_usd(self) -> float:
        """Network cost in $."""
        return self.evaluation.cost.network_cost_usd

    @property
    def network_power_w(self) -> float | None:
        """Network power in W, ``None`` when no power model was given."""
        return self.evaluation.cost.network_power_w

    @property
    def active_constraints(self) -> tuple[ConstraintReport, ...]:
        """Constraints that hold with equality at the optimum."""
        return tuple(c for c in self.constraints if c.active)

    def _objective_text(self) -> str:
        """``'perf (weighted step time) = 0.015 s'``: objective, meaning, value and unit."""
        what, unit = OBJECTIVE_MEANING[self.objective]  # type: ignore[index]
        v = self.objective_value
        value = format_usd(v) if unit == "$" else f"{v:.6g} {unit}"
        return f"{self.objective} ({what}) = {value}"

    def _cost_text(self) -> str:
        """Network cost, and power when modelled."""
        out = f"network cost {format_usd(self.network_cost_usd)}"
        if self.network_power_w is not None:
            out += f"; network power {self.network_power_w:,.0f} W"
        return out

    def __repr__(self) -> str:
        """A few lines: status, objective, bandwidth per dimension, step time, cost, power.

        Examples
        --------
        >>> from libra_opt.optimize.problem import solve
        >>> from libra_opt.scenario.examples import toy_scenario
        >>> solve(toy_scenario())
        Solution('toy': optimal)
          objective perf (weighted step time) = 0.015 s
          bandwidth GB/s: node=200.0, pod=100.0
          weighted step time 0.015 s; network cost $121,600; network power 608 W
          active constraints (1 of 1): sum(bw) == 300
        """
        names = self.scenario.fabric.names
        bw = ", ".join(f"{n}={b:.1f}" for n, b in zip(names, self.bw_gbps, strict=True))
        step = f"weighted step time {self.evaluation.weighted_step_time_s:.6g} s"
        times = self.evaluation.workloads
        if len(times) > 1:
            per = [f"{t.name} {t.step_time_s:.6g} s" for t in times[:6]]
            per += [f"... ({len(times) - 6} more)"] if len(times) > 6 else []
            step += " (" + ", ".join(per) + ")"
        active = [c.label for c in self.active_constraints]
        shown = ", ".join(active[:4]) + (f", ... ({len(active) - 4} more)" if len(active) > 4 else "")
        lines = [
            f"Solution({self.scenario.name!r}: {self.solver.status})",
            f"  objective {self._objective_text()}",
            f"  bandwidth GB/s: {bw}",
            f"  {step}; {self._cost_text()}",
            f"  active constraints ({len(active)} of {len(self.constraints)}): {shown or 'none'}",
        ]
        return "\n".join(lines)

    def to_json(self, **metadata: Any) -> str:
        """This solution as one JSON document (``libra-opt solution``, format 1).

        It holds the scenario's name and source, the objective and its value, the bandwidth
        of each dimension by name (GB/s), the step times, cost and power, every constraint's
        report, the solver's record and ``metadata`` (keyword arguments: JSON values, such as
        a spec hash, a library version and a date). Non-finite numbers are written as
        ``null``. :meth:`from_json` (or ``libra_opt.load_solution``) rebuilds the solution
        from it and the scenario, re-evaluating the design.

        Examples
        --------
        >>> import json
        >>> from libra_opt.optimize.problem import solve
        >>> from libra_opt.scenario.examples import toy_scenario
        >>> doc = json.loads(solve(toy_scenario()).to_json())
        >>> doc["format"], {k: round(v, 3) for k, v in doc["bw_gbps"].items()}
        ('libra-opt solution', {'node': 200.0, 'pod': 100.0})
        """
        import json

        def num(x: Any) -> float | None:
            x = float(x)
            return x if np.isfinite(x) else None

        ev = self.evaluation
        power = ev.cost.network_power_w
        doc = {
            "format": SOLUTION_FORMAT,
            "format_version": 1,
            "scenario": self.scenario.name,
            "scenario_source": self.scenario.source,
            "objective": self.objective,
            "objective_value": num(self.objective_value),
            "bw_gbps": {d: num(b) for d, b in zip(self.scenario.fabric.names, self.bw_gbps,
                                                   strict=True)},
            "weighted_step_time_s": num(ev.weighted_step_time_s),
            "step_time_s": {k: num(v) for k, v in self.step_time_s.items()},
            "network_cost_usd": num(ev.cost.network_cost_usd),
            "network_power_w": None if power is None else num(power),
            "constraints": [
                {"label": c.label, "lhs": num(c.lhs), "sense": c.sense, "rhs": num(c.rhs),
                 "slack": num(c.slack), "active": bool(c.active),
                 "shadow_price": num(c.shadow_price)} for c in self.constraints],
            "solver": {"solver": self.solver.solver, "method": self.solver.method,
                       "status": self.solver.status, "compile_s": num(self.solver.compile_s),
                       "solve_s": num(self.solver.solve_s),
                       "n_solves": int(self.solver.n_solves),
                       "objective_rel_gap": num(self.solver.objective_rel_gap)},
            "with_baselines": bool(self.with_baselines),
            "metadata": dict(metadata),
        }
        return json.dumps(doc, indent=2, allow_nan=False) + "\n"

    @classmethod
    def from_json(cls, document: str | Mapping[str, Any], scenario: Scenario, *,
                  rtol: float = 1e-9) -> Solution:
        """The solution a :meth:`to_json` document records, for ``scenario``.

        The design is re-evaluated at the recorded bandwidths by the numpy evaluator; the
        objective value and the step times must agree with the record (relative ``rtol``),
        so a document paired with another scenario (or a changed one) is refused.

        Raises
        ------
        InputError
            ``field`` naming what is wrong: not a solution document, a dimension missing,
            another objective, or values the scenario does not reproduce.

        Examples
        --------
        >>> from libra_opt.optimize.problem import solve
        >>> from libra_opt.scenario.examples import toy_scenario
        >>> sol = solve(toy_scenario())
        >>> again = Solution.from_json(sol.to_json(), toy_scenario())
        >>> again.bw_gbps.tolist() == sol.bw_gbps.tolist(), again.objective_value == sol.objective_value
        (True, True)
        """
        import json

        from libra_opt.errors import InputError

        try:
            doc = json.loads(document) if isinstance(document, str) else dict(document)
        except ValueError as exc:
            raise InputError(f"not JSON: {exc}", field="document") from None
        if not isinstance(doc, dict) or doc.get("format") != SOLUTION_FORMAT:
            raise InputError(f"not a {SOLUTION_FORMAT} document", field="format")

        def f(x: Any) -> float:
            return math.nan if x is None else float(x)

        try:
            recorded = doc["bw_gbps"]
            missing = [d for d in scenario.fabric.names if d not in recorded]
            if missing or len(recorded) != len(scenario.fabric.names):
                raise InputError(f"the document's dimensions {list(recorded)} are not the "
                                 f"scenario's {list(scenario.fabric.names)}", field="bw_gbps")
            bw = np.array([f(recorded[d]) for d in scenario.fabric.names])
            if doc["objective"] != scenario.objective:
                raise InputError(f"the document's objective is {doc['objective']!r}, the "
                                 f"scenario's {scenario.objective!r}", field="objective")
            ev = evaluate(scenario, bw)
            value = f(doc["objective_value"])
            got = {"objective_value": (float(ev.objective_value), value)}
            got.update({f"step_time_s.{k}": (float(v), f(doc["step_time_s"].get(k)))
                        for k, v in ((t.name, t.step_time_s) for t in ev.workloads)})
            for key, (mine, theirs) in got.items():
                if not np.isclose(mine, theirs, rtol=rtol, atol=0.0):
                    raise InputError(f"the scenario gives {mine!r} at the recorded bandwidths, "
                                     f"the document {theirs!r}: it was solved for another "
                                     "scenario", field=key)
            constraints = tuple(
                ConstraintReport(str(c["label"]), f(c["lhs"]), str(c["sense"]), f(c["rhs"]),
                                 f(c["slack"]), bool(c["active"]), f(c["shadow_price"]))
                for c in doc["constraints"])
            sv = doc["solver"]
            solver = SolverInfo(str(sv["solver"]), str(sv["method"]), str(sv["status"]),
                                f(sv["compile_s"]), f(sv["solve_s"]), int(sv["n_solves"]),
                                f(sv["objective_rel_gap"]))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(f"malformed {SOLUTION_FORMAT} document ({exc!r})",
                             field="document") from None
        bw.flags.writeable = False
        return cls(scenario, bw, scenario.objective, value, ev, constraints, solver,
                   with_baselines=bool(doc.get("with_baselines", True)))

    def _repr_html_(self) -> str:
        """HTML for notebooks: one table row per dimension, the totals in the caption.

        Examples
        --------
        >>> from libra_opt.optimize.problem import solve
        >>> from libra_opt.scenario.examples import toy_scenario
        >>> h = solve(toy_scenario())._repr_html_()
        >>> h.count("<table>"), h.count("<tr>")   # header + one row per dimension
        (1, 3)
        >>> "<td>node</td><td>ring</td><td>4</td><td>200.0</td>" in h
        True
        """
        cost = self.evaluation.cost
        usd = cost.usd_by_dim_component.sum(axis=1)
        power = None if cost.w_by_dim_component is None else cost.w_by_dim_component.sum(axis=1)
        caption = (
            f"Solution {self.scenario.name!r} ({self.solver.status}): "
            f"objective {self._objective_text()}; weighted step time "
            f"{self.evaluation.weighted_step_time_s:.6g} s; {self._cost_text()}"
        )
        rows = [
            [d.name, d.topology, f"{d.size:,}", f"{b:.1f}", f"{usd[i]:,.0f}"]
            + ([] if power is None else [f"{power[i]:,.0f}"])
            for i, (d, b) in enumerate(zip(self.scenario.fabric.dims, self.bw_gbps, strict=True))
        ]
        header = ["dim", "topology", "size", "bandwidth GB/s", "cost $"]
        return html_table(header + ([] if power is None else ["power W"]), rows, caption)


def _ratio(a: float, b: float) -> float:
    """``a / b``, with 0 / 0 = 1 (nothing to speed up)."""
    if b == 0:
        return 1.0 if a == 0 else float("inf")
    return a / b


def baselines(
    scenario: Scenario, optimum: Evaluation, walks: tuple[WalkArrays, ...] | None = None,
) -> tuple[Baseline, ...]:
    """Equal split and traffic-proportional split at the optimum's total bandwidth.

    ``walks`` (:func:`~libra_opt.scenario.evaluate.scenario_walks`) saves re-walking the
    workloads.

    The traffic-proportional split gives dimension ``d`` a share of the total equal to its
    share of the weighted per-NPU bytes per step.
    """
    total = float(np.sum(optimum.bw_gbps))
    n = scenario.fabric.n_dims
    assert scenario.weights is not None
    traffic = np.asarray(sum(
        wt * t.traffic_by_dim_bytes
        for wt, t in zip(scenario.weights, optimum.workloads, strict=True)
    ), dtype=float)
    splits: list[tuple[str, np.ndarray]] = [("equal split", np.full(n, total / n))]
    if np.sum(traffic) > 0:
        splits.append(("traffic-proportional", total * traffic / np.sum(traffic)))
    out = []
    for name, bw in splits:
        ev = evaluate(scenario, bw, walks)
        feasible = ev.feasible()
        step_ratio = _ratio(ev.weighted_step_time_s, optimum.weighted_step_time_s)
        ratio = _ratio(ev.objective_value, optimum.objective_value)
        out.append(Baseline(name, ev, feasible, float(step_ratio), float(ratio)))
    return tuple(out)


def constraint_reports(
    rows: tuple[Row, ...], bw: np.ndarray, prog: RowScaling, result: ProgramRun, factor: float
) -> tuple[ConstraintReport, ...]:
    """Slack, activity and shadow price of every row.

    For ``perf`` the shadow price of a row ``a . B <= r`` is ``-lambda / s`` (``lambda`` the
    dual of the row scaled by ``s``). In the perspective form the objective is
    ``ref_cost * V`` and the row reads ``a . y <= r u``, so ``d f / d r`` gains the factor
    ``ref_cost * u``. Rows the solver added (caps on unbounded dimensions) are not reported.
    """
    shadow = shadow_prices(prog, result.le_dual, result.eq_dual, factor, len(rows)).tolist()
    a = np.array([r.a for r in rows]).reshape(len(rows), bw.size)
    rhs = np.array([r.rhs for r in rows], dtype=float)
    lhs = a @ bw
    # active: equal to the bound as :func:`~libra_opt.scenario.accuracy.same` decides, at
    # the row's scale max(1, |rhs|, |a| . B)
    scale = np.maximum(np.maximum(np.abs(rhs), np.abs(a) @ bw), 1.0)
    near = same_each(lhs, rhs, scale).tolist()
    lhs_l = lhs.tolist()
    out = []
    for i, r in enumerate(rows):
        slack = (r.rhs - lhs_l[i] if r.sense == "<=" else lhs_l[i] - r.rhs if r.sense == ">="
                 else 0.0)
        active = r.sense == "==" or near[i]
        # Complementary slackness: a row with slack has a zero multiplier; what the interior
        # point leaves there is round-off of the order of the solver's tolerance.
        out.append(ConstraintReport(r.label, lhs_l[i], r.sense, r.rhs, slack, active,
                                    shadow[i] if active else 0.0))
    return tuple(out)


def shadow_prices(prog: RowScaling, le_dual: np.ndarray, eq_dual: np.ndarray,
                  factor: float | np.ndarray, n_rows: int) -> np.ndarray:
    """``d f / d r`` of every row of an answer (see :func:`constraint_reports`), by row index
    (beyond ``n_rows``, the rows the solver added); with a leading axis on the duals and
    ``factor``, of many answers, each the same bits as alone."""
    f, lead = (factor[:, None], factor.shape) if isinstance(factor, np.ndarray) else (factor, ())
    shadow = np.zeros((*lead, max([n_rows, *prog.le_rows, *prog.eq_rows], default=0) + 1))
    if le_dual.size:  # none from a pinned answer
        shadow[..., prog.le_rows] = -le_dual * prog.le_sign / prog.le_scale * f
    if eq_dual.size:
        shadow[..., prog.eq_rows] = -eq_dual / prog.eq_scale * f
    return shadow


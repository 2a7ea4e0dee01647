"""A design scenario: fabric, prices, workloads, constraints and objective, as one frozen value."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from libra_opt.cost.failures import failure_modes
from libra_opt.cost.goodput import ReliabilityModel
from libra_opt.cost.prices import CostCoefficients, CostModel, cost_coefficients
from libra_opt.cost.tco import TcoModel, cluster_rate_coefficients
from libra_opt.errors import InputError, input_context
from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.frozen import FrozenOnUnpickle
from libra_opt.fabric.heterogeneous import check_uneven_sizes
from libra_opt.options import CollectiveModel, Objective, TrafficModel, TrainingLoop
from libra_opt.scenario._values import unique_labels
from libra_opt.scenario.constraints import LinearConstraint, Row, constraint_rows
from libra_opt.scenario.display import format_usd, html_table
from libra_opt.scenario.objective import Objective as ObjectiveModel
from libra_opt.scenario.objective import objective_of
from libra_opt.traffic.in_network import in_network_dims
from libra_opt.traffic.timing import TimingModel
from libra_opt.traffic.topology_aware import CollectiveSettings, collective_phases
from libra_opt.traffic.workload import Workload, check_on_fabric

if TYPE_CHECKING:
    from libra_opt.scenario.spec import ScenarioSpec

__all__ = ["Scenario", "scenario_rows", "unique_labels", "MAX_RHS", "COEF_RANGE"]

#: Largest magnitude of a constraint's right-hand side, in the constraint's own units (GB/s,
#: $ or W; also the largest budget_usd and power_w). The LP and conic solvers work in double
#: precision and take 1e20 as infinity; 1e15 keeps every scaled row well inside that.
MAX_RHS = 1e15
#: Smallest and largest magnitude of a nonzero coefficient in a linear constraint. HiGHS drops
#: matrix entries below 1e-9 and rejects those above 1e15 (the cost and power substitutions
#: multiply coefficients by up to ~1e11 $ or W per GB/s).
COEF_RANGE = (1e-9, 1e9)


@dataclass(frozen=True, repr=False)
class Scenario(FrozenOnUnpickle):
    """Everything the optimizer needs.

    Parameters
    ----------
    fabric : Fabric
    cost_model : CostModel
    workloads : tuple of Workload
    weights : tuple of float, optional
        Weight of each workload's step time in the objective (default 1 each).
    constraints : tuple of LinearConstraint
        User linear constraints (see :mod:`libra_opt.scenario.constraints`).
    budget_usd, power_w : float, optional
        Network cost cap in $ and power cap in W (the latter needs a power model).
    objective, collective_model, training_loop, traffic_model : str
        The choices of :mod:`libra_opt.options` (:mod:`libra_opt.scenario.objective`,
        :class:`~libra_opt.traffic.timing.TimingModel`).
    tco : TcoModel, optional
        Accelerator, host, energy and lifetime parameters (objective ``tco`` and reports).
    reliability : ReliabilityModel, optional
        Failure rates, recovery and spares (:mod:`libra_opt.scenario.failures`); the
        optimum's bandwidths do not depend on it.
    collectives : CollectiveSettings, optional
        Settings of the ``topology_aware`` model; the other collective models take its
        ``efficiency`` only.
    in_network_reduction : tuple of str
        Switch dimensions that reduce in the network (:mod:`libra_opt.traffic.in_network`).
    name : str
    source : str, optional
        File the scenario was read from; errors raised while checking it name this file.

    Attributes
    ----------
    spec : ScenarioSpec or None
        The recipe this scenario was compiled from (:func:`libra_opt.scenario.compile.compile`
        sets it); ``None`` for a scenario built from objects. Not an argument: a copy made
        by :func:`dataclasses.replace` no longer follows its recipe and has none.
    """

    fabric: Fabric
    cost_model: CostModel
    workloads: tuple[Workload, ...]
    weights: tuple[float, ...] | None = None
    constraints: tuple[LinearConstraint, ...] = ()
    budget_usd: float | None = None
    power_w: float | None = None
    objective: Objective = "perf"
    collective_model: CollectiveModel = "pipelined"
    training_loop: TrainingLoop = "no_overlap"
    traffic_model: TrafficModel = "hierarchical"
    tco: TcoModel | None = None
    reliability: ReliabilityModel | None = None
    collectives: CollectiveSettings | None = None
    in_network_reduction: tuple[str, ...] = ()
    name: str = "scenario"
    source: str | None = field(default=None, compare=False)
    spec: ScenarioSpec | None = field(default=None, init=False, compare=False)

    def __post_init__(self) -> None:
        with input_context(self.source):  # the file (when read from one) names every error
            self._check()

    def _check(self) -> None:
        """Normalise the sequences and reject an inconsistent scenario (InputError)."""
        object.__setattr__(self, "workloads", tuple(self.workloads))
        object.__setattr__(self, "constraints", tuple(self.constraints))
        if not self.workloads:
            raise InputError("a scenario needs at least one workload", field="workloads")
        names = [w.name for w in self.workloads]
        if len(set(names)) != len(names):
            raise InputError(f"workload names must be unique, got {names}", field="workloads")
        self._check_weights()
        for wl in self.workloads:
            check_on_fabric(wl, self.fabric)
        self._check_limits()
        inr = self.in_network_reduction
        if isinstance(inr, str) or not all(isinstance(n, str) for n in inr):
            raise InputError(f"expected a list of dimension names, got {inr!r}",
                             field="in_network_reduction")
        object.__setattr__(self, "in_network_reduction", tuple(sorted(set(inr))))
        self.objective_model  # noqa: B018 - the objective's name, checked by its type
        self.timing  # noqa: B018 - the collective model, training loop and traffic model
        in_network_dims(self.in_network_reduction, self.fabric)
        if self.collectives is not None:
            self.collectives.check(self.fabric)
        check_uneven_sizes(self.fabric, self.workloads, self.timing.uneven_sizes_refusal(),
                           self.in_network_dims)
        refusal = self.timing.native_traffic_refusal()
        if refusal is not None:
            raise InputError(refusal, field="traffic_model")
        if self.timing.uses_topology_aware:
            settings = self.collective_settings
            assert settings is not None
            for wl in self.workloads:
                for kind, size, group in wl.flat.collectives:
                    collective_phases(kind, size, wl.groups[group], self.fabric, settings)

        if self.reliability is not None:
            self._check_reliability(self.reliability)
        if self.objective_model.needs_tco:
            if self.tco is None:
                raise InputError("objective 'tco' needs a tco section (accelerator, host, "
                                 "energy, lifetime, run length)", field="tco")
            self.tco.n_steps  # noqa: B018 - raises InputError when the run length is missing

        if self.timing.overlapped and any(w.hidden_window_s > 0 for w in self.workloads):
            # a window hides a sync behind compute on links idle during compute; under an
            # overlapped loop the step's own collectives use those links then
            raise InputError(
                "a hidden window (Workload.hidden_window_s, from DiLoCo's overlap_steps > 0) "
                "needs training_loop: no_overlap: under an overlapped loop the links are "
                "busy with the step's own collectives while it computes, which the window "
                "does not charge (use training_loop no_overlap, or overlap_steps 0 when a "
                "workload is in overlap form from tp_comm_overlap or dp_comm_overlap)",
                field="diloco.overlap_steps")
        formed = [w.name for w in self.workloads if w.overlap_form]
        if formed and not self.timing.overlapped:
            raise InputError(
                f"workload {formed[0]!r} is in overlap form (generated with "
                "parallelism.tp_comm_overlap or dp_comm_overlap: its phases say exactly which "
                "collectives hide behind which compute) and is timed only by training_loop: "
                "overlap; set training_loop: overlap, or turn those options off",
                field="training_loop")
        self._check_rows()

    def _check_reliability(self, rel: ReliabilityModel) -> None:
        """The failure model fits the fabric, and every workload's checkpoint has a size."""
        rel.check(self.fabric)
        failure_modes(self.fabric, rel.rates, rel.gpus_per_host)
        if rel.checkpoint_bytes is None:
            unsized = [w.name for w in self.workloads
                       if w.metrics is None or w.metrics.checkpoint_bytes is None]
            if unsized:
                raise InputError(
                    f"workload {unsized[0]!r} has no model to size its checkpoint from: give "
                    "reliability.checkpoint_bytes", field="reliability.checkpoint_bytes")

    def _check_weights(self) -> None:
        """The weights: one finite number > 0 per workload (default 1 each)."""
        weights = self.weights if self.weights is not None else (1.0,) * len(self.workloads)
        weights = tuple(float(w) for w in weights)
        if len(weights) != len(self.workloads):
            raise InputError(f"{len(weights)} weights for {len(self.workloads)} workloads",
                             field="workloads.weight")
        for w, wl in zip(weights, self.workloads, strict=True):
            if not math.isfinite(w) or w <= 0:
                raise InputError(f"weight {w!r} of workload {wl.name!r} must be a finite number "
                                 "> 0", field=f"workloads[{wl.name}].weight")
        object.__setattr__(self, "weights", weights)

    def _check_limits(self, constraints: bool = True) -> None:
        """The constraints' shapes and magnitudes (unless known good) and the caps' ranges."""
        for c in self.constraints if constraints else ():
            if len(c.bw_coef) != self.fabric.n_dims:
                raise InputError(f"constraint {c.label!r} has {len(c.bw_coef)} bandwidth "
                                 f"coefficients, the fabric has {self.fabric.n_dims} dimensions",
                                 field="constraints.linear")
            _check_magnitudes(c, self.fabric.names)
        for key in ("budget_usd", "power_w"):
            v = getattr(self, key)
            if v is not None and (not math.isfinite(float(v)) or not 0 < float(v) <= MAX_RHS):
                raise InputError(f"{key} {v!r} is out of range: expected a number in "
                                 f"(0, {MAX_RHS:g}]", field=f"constraints.{key}")
        if self.power_w is not None and not self.cost_model.has_power:
            raise InputError("power_w is set but no power model was given (W per GB/s per "
                             "component)", field="constraints.power_w")

    def _check_rows(self) -> None:
        """The constraints as priced rows and the caps against the network's fixed part."""
        self.rows  # noqa: B018 - builds (and keeps) the rows, raising on a bad one
        if self.tco is not None:  # TCO counts the network's energy: it needs its power
            cluster_rate_coefficients(self.tco, self.fabric, self.coefficients)
        coeffs = self.coefficients
        for cap, fixed, what in ((self.budget_usd, coeffs.fixed_usd, "budget_usd"),
                                 (self.power_w, coeffs.fixed_w, "power_w")):
            if cap is not None and fixed > 0 and not cap > fixed:
                unit = format_usd(fixed) if what == "budget_usd" else f"{fixed:,.0f} W"
                raise InputError(
                    f"{what} {cap:g} does not cover the network's fixed part ({unit} of "
                    "in-network aggregator state memory): raise it, or move the state to "
                    "host memory (parallelism.optimizer_state: host_paging)",
                    field=f"constraints.{what}")

    def with_limits(self, **changes: Any) -> Scenario:
        """A copy with new ``constraints``, ``budget_usd``, ``power_w`` or ``weights``, checked
        as :func:`dataclasses.replace` would check it, but running only the checks that
        depend on those fields and keeping the cached :attr:`timing` and
        :attr:`coefficients` (a re-solve with new right-hand sides or weights uses it). As
        after :func:`dataclasses.replace`, the copy has no :attr:`spec`.

        Raises
        ------
        InputError
            As :func:`dataclasses.replace` would, naming the constraint or cap.

        Examples
        --------
        >>> from libra_opt.scenario.examples import toy_scenario
        >>> s = toy_scenario()
        >>> t = s.with_limits(budget_usd=1e6)
        >>> t == replace(s, budget_usd=1e6), t.coefficients is s.coefficients
        (True, True)
        """
        unknown = sorted(set(changes) - {"constraints", "budget_usd", "power_w", "weights"})
        if unknown:
            raise TypeError(f"with_limits() takes constraints, budget_usd, power_w, weights, "
                            f"not {', '.join(unknown)}")
        if "constraints" in changes:
            changes["constraints"] = tuple(changes["constraints"])
        limits = set(changes) != {"weights"}
        rows = self.__dict__.get("rows")
        # new values of caps it has, or only weights: the same rows, but for the caps' rhs
        same = rows is not None and "constraints" not in changes and all(
            (getattr(self, k) is None) == (v is None) for k, v in changes.items()
            if k != "weights")
        # fields and cached values without the rows (__getstate__); not copy.copy, whose
        # __setstate__ would walk every (read-only) array again
        new = object.__new__(type(self))
        new.__dict__.update(self.__getstate__())
        for key, value in changes.items():
            object.__setattr__(new, key, value)
        object.__setattr__(new, "spec", None)
        if same:
            assert rows is not None
            new.__dict__["rows"] = _with_caps(rows, new)
        with input_context(new.source):  # as in __post_init__: the file names every error
            if "weights" in changes:
                new._check_weights()
            if limits:
                new._check_limits(constraints=not same)
                new._check_rows()
        return new

    @property
    def objective_model(self) -> ObjectiveModel:
        """The :class:`~libra_opt.scenario.objective.Objective` of :attr:`objective` (its
        label, unit and numpy evaluation)."""
        return objective_of(self.objective)

    @property
    def collective_settings(self) -> CollectiveSettings | None:
        """The ``topology_aware`` model's settings (defaults when none were given), or
        ``None`` under the other collective models."""
        return self.timing.collectives

    @cached_property
    def timing(self) -> TimingModel:
        """:meth:`timing_with` the scenario's own choices, resolved once."""
        return self.timing_with()

    def timing_with(self, collective_model: CollectiveModel | None = None,
                    training_loop: TrainingLoop | None = None,
                    traffic_model: TrafficModel | None = None) -> TimingModel:
        """The scenario's :class:`~libra_opt.traffic.timing.TimingModel` with other choices
        of collective model, training loop or traffic model (``None``: the scenario's own);
        its collective settings go to ``topology_aware``, their efficiency alone elsewhere.

        Examples
        --------
        >>> from libra_opt.scenario.examples import toy_scenario
        >>> t = toy_scenario().timing_with(training_loop="overlap", traffic_model="native")
        >>> t.collective_model, t.training_loop, t.traffic_model
        ('pipelined', 'overlap', 'native')
        """
        model = collective_model or self.collective_model
        settings = None  # TimingModel keeps settings only under topology_aware
        if TimingModel(model).uses_topology_aware:
            settings = self.collectives if self.collectives is not None else CollectiveSettings()
            if set(self.in_network_dims) != set(settings.in_network_reduction):
                settings = replace(settings, in_network_reduction=self.in_network_dims)
        efficiency = () if self.collectives is None or settings is not None else \
            self.collectives.efficiency
        return TimingModel(model, training_loop or self.training_loop,
                           traffic_model or self.traffic_model, settings, self.in_network_dims,
                           efficiency)

    @property
    def in_network_dims(self) -> tuple[str, ...]:
        """Names of the dimensions that reduce in the network: ``in_network_reduction`` and
        ``collectives.in_network_reduction`` together (sorted)."""
        extra = () if self.collectives is None else self.collectives.in_network_reduction
        return tuple(sorted(set(self.in_network_reduction) | set(extra)))

    def __getstate__(self) -> dict[str, object]:
        """Fields and cached values, without the rows (rebuilt on first use after unpickling
        or copying: a copy does not keep their arrays read-only)."""
        state = dict(self.__dict__)
        state.pop("rows", None)
        state.pop("_compiled_parts", None)  # a compile's reusable parts (a cache)
        return state

    @cached_property
    def rows(self) -> tuple[Row, ...]:
        """All constraints as labelled rows (:func:`scenario_rows`), built once: their
        arrays are read-only."""
        rows = _scenario_rows(self, self.coefficients)
        for row in rows:
            row.a.setflags(write=False)
        return rows

    @cached_property
    def coefficients(self) -> CostCoefficients:
        """Linear cost and power coefficients of the fabric under the cost model."""
        return cost_coefficients(self.fabric, self.cost_model,
                                 in_network_dims(self.in_network_dims, self.fabric))

    def _summary(self) -> list[str]:
        """Objective, model choices and caps, one item each (shared by both reprs)."""
        obj = self.objective_model
        what, unit = obj.what, obj.unit
        items = [
            f"objective {self.objective} ({what}, {unit})",
            self.timing.describe(),
            f"{len(self.constraints)} linear constraint{'s' if len(self.constraints) != 1 else ''}",
        ]
        if self.budget_usd is not None:
            items.append(f"budget {format_usd(self.budget_usd)}")
        if self.power_w is not None:
            items.append(f"power cap {self.power_w:,.0f} W")
        if self.in_network_dims:
            items.append("in-network reduction on " + ", ".join(self.in_network_dims))
        slow = [f"{d.name} (slowest member at {d.members.effective_fraction(d.size):g} B)"
                for d in self.fabric.dims if d.members is not None]
        if slow:
            items.append("heterogeneous " + ", ".join(slow))
        return items

    def __repr__(self) -> str:
        """A few lines: name, NPUs, dimensions, workloads, objective, constraints and caps.

        Examples
        --------
        >>> from libra_opt.scenario.examples import toy_scenario
        >>> toy_scenario()
        Scenario('toy': 32 NPUs, objective perf (weighted step time, s))
          dims: node ring x 4, pod switch x 8
          workloads: toy (weight 1)
          pipelined collectives, no_overlap loop, hierarchical traffic; 1 linear constraint
        """
        objective, models, *caps = self._summary()
        assert self.weights is not None
        wls = [f"{w.name} (weight {wt:g})" for w, wt in zip(self.workloads, self.weights, strict=True)]
        if len(wls) > 8:
            wls[8:] = [f"... ({len(wls) - 8} more)"]
        return "\n".join([
            f"Scenario({self.name!r}: {self.fabric.n_npus:,} NPUs, {objective})",
            "  dims: " + ", ".join(f"{d.name} {d.topology} x {d.size}" for d in self.fabric.dims),
            "  workloads: " + ", ".join(wls),
            "  " + "; ".join([models, *caps]),
        ])

    def _repr_html_(self) -> str:
        """HTML for notebooks: a table of dimensions and a table of workloads.

        Examples
        --------
        >>> from libra_opt.scenario.examples import toy_scenario
        >>> h = toy_scenario()._repr_html_()
        >>> h.count("<table>"), h.count("<tr>")   # 2 dims + header, 1 workload + header
        (2, 5)
        """
        assert self.weights is not None
        dims = html_table(
            ["dim", "topology", "size", "tier", "latency s"],
            [[d.name, d.topology, f"{d.size:,}", d.tier, f"{d.latency_s:g}"]
             for d in self.fabric.dims],
            caption=f"Scenario {self.name!r}: {self.fabric.n_npus:,} NPUs; "
            + "; ".join(self._summary()))
        wls = html_table(
            ["workload", "weight", "layers", "groups"],
            [[w.name, f"{wt:g}", f"{w.n_layers:,}",
              ", ".join(f"{g}={'x'.join(map(str, s))}" for g, s in w.groups.items())]
             for w, wt in zip(self.workloads, self.weights, strict=True)])
        return f"<div>{dims}{wls}</div>"


def _check_magnitudes(c: LinearConstraint, names: tuple[str, ...]) -> None:
    """Reject a constraint whose right-hand side or coefficients lie outside the ranges the
    solvers handle in double precision (:data:`MAX_RHS`, :data:`COEF_RANGE`)."""
    label = c.label if len(c.label) <= 80 else c.label[:77] + "..."
    if not math.isfinite(c.rhs) or abs(c.rhs) > MAX_RHS:
        raise InputError(f"constraint {label!r}: right-hand side {c.rhs:g} is out of range: "
                         f"expected |rhs| <= {MAX_RHS:g} (GB/s, $ or W)",
                         field="constraints.linear")
    lo, hi = COEF_RANGE
    terms = [*(f"bw.{n}" for n in names), "cost", "power"]
    for term, v in zip(terms, (*c.bw_coef, c.cost_coef, c.power_coef), strict=True):
        if v and not lo <= abs(v) <= hi:
            raise InputError(f"constraint {label!r}: coefficient {v:g} of {term} is out of "
                             f"range: expected 0 or a magnitude in [{lo:g}, {hi:g}]",
                             field="constraints.linear")


def _with_caps(rows: tuple[Row, ...], scenario: Scenario) -> tuple[Row, ...]:
    """``rows`` (a scenario's, which has the caps ``scenario`` has) with ``scenario``'s cap
    values: the last rows, as :func:`_scenario_rows` writes them."""
    coeffs = scenario.coefficients
    caps = [float(cap) - fixed for cap, fixed in ((scenario.budget_usd, coeffs.fixed_usd),
                                                   (scenario.power_w, coeffs.fixed_w))
            if cap is not None]
    k = len(rows) - len(caps)
    return rows[:k] + tuple(Row(r.label, r.a, r.sense, rhs)
                            for r, rhs in zip(rows[k:], caps, strict=True))


def scenario_rows(scenario: Scenario, coeffs: CostCoefficients | None = None) -> tuple[Row, ...]:
    """All constraints of ``scenario`` as labelled rows ``a . B (sense) rhs`` in GB/s.

    The budget and power caps become rows labelled ``budget_usd`` and ``power_w``. With
    the scenario's own coefficients (the default) these are :attr:`Scenario.rows`, built
    once per scenario.
    """
    if coeffs is None or coeffs is scenario.__dict__.get("coefficients"):
        return scenario.rows
    return _scenario_rows(scenario, coeffs)


def _scenario_rows(scenario: Scenario, coeffs: CostCoefficients) -> tuple[Row, ...]:
    rows = list(constraint_rows(scenario.constraints, coeffs))
    # a fixed part of the network's cost and power (in-network aggregators' state memory)
    # comes off the caps: kappa . B + fixed <= budget
    if scenario.budget_usd is not None:
        rows.append(Row("budget_usd", coeffs.usd_per_gbps.copy(), "<=",
                        float(scenario.budget_usd) - coeffs.fixed_usd))
    if scenario.power_w is not None:
        pi = coeffs.w_per_gbps
        assert pi is not None
        rows.append(Row("power_w", pi.copy(), "<=", float(scenario.power_w) - coeffs.fixed_w))
    labels = unique_labels([r.label for r in rows])
    return tuple(Row(lab, r.a, r.sense, r.rhs) for lab, r in zip(labels, rows, strict=True))

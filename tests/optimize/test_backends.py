"""The two optimizer backends against each other, and the default one against finite differences.

``backend="clarabel"`` (the default, :mod:`libra_opt.optimize.conic`) assembles Clarabel's conic
data by hand; ``backend="cvxpy"`` (:mod:`libra_opt.optimize.program`) is the reference
formulation. Hypothesis draws random well-posed scenarios (2-8 dimensions, every objective,
collective model, training loop and constraint kind, latency on or off, sometimes a workload
with a hidden window such as DiLoCo's overlapped outer sync) and both backends must
reach the same optimum and the same shadow prices (or, where the optimal value has a kink in a
right-hand side and the multiplier is not unique, two valid ones), and pass the numpy re-check.

The structure of a scenario (dimensions, groups, collectives, which constraints) is drawn by
hypothesis; its continuous numbers (prices, sizes, times, right-hand sides) come from a numpy
generator seeded by hypothesis, so that they are generic: hypothesis's favourite simple values
(1.0 everywhere, equal slacks) would otherwise build coincidences such as three bounds meeting
at one point of a plane, where the multipliers are not unique and two correct solvers may
legitimately report different shadow prices.

``LIBRA_BACKEND_EXAMPLES`` sets the number of hypothesis examples (default 150);
``LIBRA_BACKEND_SHRINK=1`` lets hypothesis shrink a failing example (slow).
"""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import Phase as HypothesisPhase
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from libra_opt.cost.prices import CostModel
from libra_opt.cost.tco import TcoModel
from libra_opt.errors import InfeasibleDesignError, UnboundedDesignError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.optimize.problem import build_problem, solve
from libra_opt.scenario.constraints import parse_constraint
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.scenario import Scenario, scenario_rows
from libra_opt.traffic.topology_aware import CollectiveSettings
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

N_EXAMPLES = int(os.environ.get("LIBRA_BACKEND_EXAMPLES", "150"))
# An example costs up to ~1 s, so shrinking a failure can take minutes: off unless asked for
# (the failing scenario is printed in full either way).
PHASES = tuple(HypothesisPhase) if os.environ.get("LIBRA_BACKEND_SHRINK") else tuple(
    p for p in HypothesisPhase if p is not HypothesisPhase.shrink)

KINDS = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "p2p")
TOPOLOGIES = ("ring", "fully_connected", "switch")
OBJ_RTOL = 1e-7  # objective agreement required between the backends
SHADOW_RTOL = 1e-3
SHADOW_ATOL = 1e-6  # in units of objective / row scale (an elasticity)


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def _loguniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(math.log(lo), math.log(hi))))


@st.composite
def scenarios(draw) -> Scenario:
    """A random, well-posed scenario (see the module notes on where the numbers come from).

    Every constraint holds at a random positive bandwidth ``B*`` (strictly, except a total
    ``sum(bw) == sum(B*)``), so the scenario is feasible, unless an infeasible pair is added on
    purpose; something always bounds every dimension from above (total bandwidth, budget, power
    or one bound per dimension); ``perf_per_cost`` gets something that keeps the cost away from
    zero, unless left out on purpose (then no optimum is attained).
    """
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1), label="seed"))
    n = draw(st.integers(2, 8), label="n_dims")
    latency = draw(st.booleans(), label="latency")
    dims, usd, watts = [], {}, {}
    for d in range(n):
        topo = draw(st.sampled_from(TOPOLOGIES))
        size = draw(st.integers(2, 8))
        lat = _loguniform(rng, 1e-7, 1e-5) if latency and rng.random() < 0.7 else 0.0
        dims.append(Dim(f"d{d}", topo, size, f"T{d}", lat))
        comps = ("link", "switch", "nic") if topo == "switch" else ("link",)
        usd[f"T{d}"] = {c: _loguniform(rng, 0.5, 20.0) for c in comps}
        watts[f"T{d}"] = {c: _loguniform(rng, 1e-3, 0.2) for c in comps}
    fabric = Fabric(tuple(dims))
    cost_model = CostModel.from_tables(usd, watts)

    workloads = []
    for w in range(draw(st.integers(1, 3), label="n_workloads")):
        groups = {}
        for g in range(draw(st.integers(1, 3))):
            span = tuple(draw(st.sampled_from(_divisors(dim.size))) for dim in dims)
            groups[f"g{g}"] = span
        layers = []
        for i in range(draw(st.integers(1, 4))):
            phases = []
            for _ in range(3):
                colls = tuple(
                    Collective(draw(st.sampled_from(KINDS)), _loguniform(rng, 1e7, 2e9),
                               draw(st.sampled_from(sorted(groups))))
                    for _ in range(draw(st.integers(0, 2)))
                )
                compute = _loguniform(rng, 1e-5, 1e-2) if rng.random() < 0.8 else 0.0
                phases.append(Phase(compute, colls))
            layers.append(Layer(f"l{i}", *phases, count=draw(st.integers(1, 50))))
        workloads.append(Workload(f"w{w}", tuple(layers), groups))
    weights = tuple(_loguniform(rng, 0.3, 3.0) for _ in workloads)

    objective = draw(st.sampled_from(("perf", "perf_per_cost", "tco")), label="objective")
    tco = None
    if objective == "tco" or draw(st.booleans()):
        tco = TcoModel(
            _loguniform(rng, 1e3, 3e4), _loguniform(rng, 1e2, 1e4), _loguniform(rng, 100, 1000),
            _loguniform(rng, 10, 500), rng.uniform(1.0, 1.6), _loguniform(rng, 0.03, 0.3),
            rng.uniform(2, 6), steps=_loguniform(rng, 1e3, 1e6),
        )

    # Constraints, all true at b_star.
    b_star = np.array([_loguniform(rng, 10.0, 1000.0) for _ in range(n)])
    star = [float(b) for b in b_star]
    probe = Scenario(fabric, cost_model, tuple(workloads))
    kappa = probe.coefficients.usd_per_gbps
    pi = probe.coefficients.w_per_gbps

    def slack() -> float:
        return float(rng.uniform(0.05, 1.0))

    def bw(d: int) -> str:  # both spellings of a dimension
        return f"bw[{d}]" if rng.random() < 0.5 else f"bw.{dims[d].name}"

    texts: list[str] = []
    budget = power = None
    bounders = draw(
        st.sets(st.sampled_from(("total", "budget", "power", "per_dim")), min_size=1),
        label="bounders",
    )
    total_eq = False
    if "total" in bounders:
        total_eq = draw(st.booleans(), label="total ==")
        s = float(b_star.sum())
        texts.append(f"sum(bw) == {s!r}" if total_eq else f"sum(bw) <= {s * (1 + slack())!r}")
    if "budget" in bounders:
        budget = float(kappa @ b_star) * (1 + slack())
    if "power" in bounders:
        power = float(pi @ b_star) * (1 + slack())
    uppers = set(range(n)) if "per_dim" in bounders else set()
    lowers: set[int] = set()
    for d in draw(st.sets(st.integers(0, n - 1), max_size=n), label="extra bounds"):
        if draw(st.booleans()):
            uppers.add(d)
        else:
            lowers.add(d)
    texts += [f"{bw(d)} <= {star[d] * (1 + slack())!r}" for d in sorted(uppers)]
    texts += [f"{bw(d)} >= {star[d] * (1 - slack() * 0.9)!r}" for d in sorted(lowers)]
    pairs = draw(st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3),
                 label="orderings")
    for i, j in sorted({tuple(sorted(p)) for p in pairs if p[0] != p[1]}):
        hi, lo = (i, j) if b_star[i] > b_star[j] else (j, i)
        texts.append(f"{bw(hi)} >= {bw(lo)}")
    if n >= 3:
        subsets = draw(st.sets(st.frozensets(st.integers(0, n - 1), min_size=2, max_size=n - 1),
                               max_size=2), label="partial sums")
        for sub in sorted(sorted(s) for s in subsets):
            part = float(b_star[sub].sum())
            lhs = " + ".join(bw(d) for d in sub)
            if draw(st.booleans()):
                texts.append(f"{lhs} <= {part * (1 + slack())!r}")
            else:
                texts.append(f"{lhs} >= {part * (1 - 0.9 * slack())!r}")
    if objective == "perf_per_cost" and not (total_eq or lowers) and draw(
        st.integers(0, 9), label="keep cost above zero"
    ) != 5:  # hypothesis favours the ends of a range: a middle value is the rare case
        texts.append(f"sum(bw) >= {float(b_star.sum()) * (1 - 0.9 * slack())!r}")
    if draw(st.integers(0, 19), label="infeasible") == 10:
        d = draw(st.integers(0, n - 1))
        texts += [f"bw[{d}] >= {2 * star[d]!r}", f"bw[{d}] <= {1.5 * star[d]!r}"]
    constraints = tuple(parse_constraint(t, fabric) for t in texts)
    model = draw(st.sampled_from(("pipelined", "sequential", "topology_aware")),
                 label="collectives")
    settings = None
    if model == "topology_aware":
        settings = CollectiveSettings(
            chunks=draw(st.sampled_from((1, 4, 64, 4096)), label="chunks"),
            endpoint_delay_s=draw(st.sampled_from((0.0, 1e-6)), label="endpoint delay"),
            local_memory_gbps=draw(st.sampled_from((None, 500.0)), label="memory"),
        )
    loop = draw(st.sampled_from(("no_overlap", "overlap")), label="loop")
    if rng.random() < 0.25:  # numpy, not hypothesis: the drawn structure stays as before
        workloads, weights = _with_window(rng, dims, workloads, weights, b_star, objective,
                                          loop)
    return Scenario(
        fabric, cost_model, tuple(workloads), weights=weights, constraints=constraints,
        budget_usd=budget, power_w=power, objective=objective,
        collective_model=model, collectives=settings, training_loop=loop,
        tco=tco, name="random",
    )


def _with_window(rng, dims, workloads, weights, b_star, objective, loop):
    """The workloads plus one with a hidden window (DiLoCo's overlapped outer sync): no
    compute, one or two collectives, and a window between 0.2 and 1.5 times its
    communication at ``B*`` (so both branches of ``max(T - W, 0)`` occur). Under
    ``no_overlap`` only (Scenario refuses windows under an overlapped loop); under
    ``perf_per_cost`` and ``tco`` with the window covered by the other workloads' compute
    (terms.AggregatedTerms.check_windows).
    Drawn from the numpy generator only, so the hypothesis examples are those without it."""
    from libra_opt.traffic.step_time import step_time

    span = tuple(int(rng.choice(_divisors(dim.size))) for dim in dims)
    colls = tuple(Collective(str(rng.choice(KINDS)), _loguniform(rng, 1e7, 2e9), "s")
                  for _ in range(int(rng.integers(1, 3))))
    sync = Workload("sync", (Layer("sync", weight_grad=Phase(0.0, colls)),), {"s": span})
    t = step_time(sync, Fabric(tuple(dims)), b_star).step_time_s
    weight = _loguniform(rng, 0.03, 1.0)
    window = t * rng.uniform(0.2, 1.5)
    if loop != "no_overlap":  # windows need idle links during compute (Scenario refuses)
        return workloads, weights
    if objective != "perf":
        cover = sum(a * w.compute_s for a, w in zip(weights, workloads, strict=True))
        if window <= 0 or cover <= 0:
            return workloads, weights
        weight = min(weight, 0.9 * cover / window)
    event("hidden window")
    return (workloads + [dataclasses.replace(sync, hidden_window_s=window)],
            (*weights, weight))


def _solve_or_error(scen: Scenario, backend: str):
    """The problem built with ``backend`` and its solution, or the design error it raises."""
    problem = None
    try:
        problem = build_problem(scen, backend=backend)
        return problem, problem.solve(with_baselines=False)
    except (InfeasibleDesignError, UnboundedDesignError) as exc:
        return problem, exc


def _row_scale(sol, row) -> float:
    return max(abs(row.rhs), float(np.abs(row.a) @ sol.bw_gbps), 1e-300)


def _one_sided_slopes(problem, label: str, rhs: float, f0: float, h: float):
    """Backward and forward differences of the optimal objective in one right-hand side, or
    ``None`` when a perturbed problem has no optimum."""
    try:
        up = problem.solve(rhs={label: rhs + h}, with_baselines=False).objective_value
        dn = problem.solve(rhs={label: rhs - h}, with_baselines=False).objective_value
    except (InfeasibleDesignError, UnboundedDesignError):
        return None
    return (f0 - dn) / h, (up - f0) / h


def check_shadow_prices(scen, fast, ref, problem):
    """Shadow prices agree (rtol ``SHADOW_RTOL``, atol ``SHADOW_ATOL`` x objective / row scale),
    or the row sits at a kink of the optimal value, where the multiplier is not unique.

    A kink is typical of these programs: an ordering ``bw[i] >= bw[j]`` holds with equality
    exactly where dimension ``j`` stops being a bottleneck, so tightening it costs and relaxing
    it gains nothing. Any number between the one-sided derivatives is then a correct
    multiplier, and two formulations may legitimately return different ones; the check is that
    both lie between the one-sided differences and that those differ (a real kink).
    """
    rows = {r.label: r for r in scenario_rows(scen)}
    ref_reports = {c.label: c for c in ref.constraints}
    assert set(ref_reports) == {c.label for c in fast.constraints} == set(rows)
    for c in fast.constraints:
        r = ref_reports[c.label]
        norm = abs(fast.objective_value) / _row_scale(fast, rows[c.label])
        atol = SHADOW_ATOL * norm
        if math.isclose(c.shadow_price, r.shadow_price, rel_tol=SHADOW_RTOL, abs_tol=atol):
            continue
        h = 1e-4 * _row_scale(fast, rows[c.label])
        slopes = _one_sided_slopes(problem, c.label, c.rhs, fast.objective_value, h)
        msg = (c.label, c.shadow_price, r.shadow_price, c.active, r.active, slopes)
        assert slopes is not None, msg
        lo, hi = min(slopes), max(slopes)
        tol = SHADOW_RTOL * max(abs(lo), abs(hi)) + 1e-4 * norm  # finite-difference noise
        assert hi - lo > 2 * tol, ("no kink, yet the multipliers differ", *msg)
        for price in (c.shadow_price, r.shadow_price):
            assert lo - tol <= price <= hi + tol, ("not a subgradient", *msg)
        event("shadow prices differ at a kink (both valid)")


def describe(scen: Scenario) -> str:
    lines = [repr(scen), f"constraints: {[c.label for c in scen.constraints]}",
             f"budget {scen.budget_usd!r}, power {scen.power_w!r}"]
    lines += [repr(w) for w in scen.workloads]
    return "\n".join(lines)


@settings(max_examples=N_EXAMPLES, deadline=None, derandomize=True, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenarios())
def test_backends_agree(scen):
    note(describe(scen))
    fast_problem, fast = _solve_or_error(scen, "clarabel")
    _, ref = _solve_or_error(scen, "cvxpy")
    if isinstance(fast, Exception) or isinstance(ref, Exception):
        event(f"both raise {type(ref).__name__}")
        assert type(fast) is type(ref), (fast, ref)
        return
    event(f"solved: {scen.objective}, {scen.collective_model}, {scen.training_loop}")
    for sol in (fast, ref):
        assert sol.solver.objective_rel_gap <= 1e-6
        assert sol.evaluation.feasible(1e-6)
    assert_allclose(fast.objective_value, ref.objective_value, rtol=OBJ_RTOL, atol=0.0)
    # Each backend's design, priced by the independent numpy evaluator, is as good as the
    # other's optimum.
    for a, b in ((fast, ref), (ref, fast)):
        ev = evaluate(scen, a.bw_gbps)
        assert ev.feasible(1e-6)
        assert ev.objective_value <= b.objective_value * (1 + OBJ_RTOL)
    check_shadow_prices(scen, fast, ref, fast_problem)


# --- shadow prices against finite differences (default backend) -----------------------------


def fabric_3d() -> Fabric:
    return Fabric((
        Dim("a", "ring", 4, "A", 2e-6), Dim("b", "fully_connected", 4, "B"),
        Dim("c", "switch", 8, "C", 5e-6),
    ))


def cost_3d() -> CostModel:
    return CostModel.from_tables(
        {"A": {"link": 1.0}, "B": {"link": 3.0}, "C": {"link": 5.0, "switch": 5.0, "nic": 10.0}},
    )


def workload_3d() -> Workload:
    return Workload(
        "w3",
        (
            Layer("x", Phase(1e-3, (Collective("all_reduce", 1e9, "g1"),)), count=3),
            Layer("y", weight_grad=Phase(1e-3, (Collective("reduce_scatter", 4e9, "g2"),))),
            Layer("z", input_grad=Phase(2e-4, (Collective("all_to_all", 5e8, "g3"),)), count=2),
        ),
        {"g1": (2, 4, 1), "g2": (4, 1, 8), "g3": (1, 2, 2)},
    )


def scenario_3d(constraints, objective, budget_usd) -> Scenario:
    f = fabric_3d()
    return Scenario(f, cost_3d(), (workload_3d(),),
                    constraints=tuple(parse_constraint(c, f) for c in constraints),
                    budget_usd=budget_usd, objective=objective)


FD_CASES = {
    # perf wants every GB/s: the total caps the cheap ring and the budget the rest.
    "perf": (["sum(bw) <= 60", "bw.b >= bw.c"], 3.6e4),
    # perf_per_cost would buy little: a minimum total forces bandwidth, the budget its price.
    "perf_per_cost": (["sum(bw) >= 150", "bw.b >= bw.c"], 3.0e4),
}


@pytest.mark.parametrize("objective", sorted(FD_CASES))
def test_shadow_prices_match_central_differences(objective):
    cons, budget = FD_CASES[objective]
    problem = build_problem(scenario_3d(cons, objective, budget))
    assert problem.backend == "clarabel"
    sol = problem.solve(with_baselines=False)
    active = {c.label: c for c in sol.constraints if c.active}
    assert {"budget_usd", cons[0]} <= set(active), sol.constraints
    for label in ("budget_usd", cons[0]):
        c = active[label]
        assert c.shadow_price != 0.0
        h = 1e-4 * abs(c.rhs)
        up = problem.solve(rhs={label: c.rhs + h}, with_baselines=False).objective_value
        dn = problem.solve(rhs={label: c.rhs - h}, with_baselines=False).objective_value
        assert_allclose(c.shadow_price, (up - dn) / (2 * h), rtol=1e-4, err_msg=label)
    # Sign: more budget never hurts; under perf a larger total cap never hurts, under
    # perf_per_cost a larger forced minimum never helps.
    prices = {c.label: c.shadow_price for c in sol.constraints}
    assert prices["budget_usd"] < 0
    assert (prices[cons[0]] < 0) if objective == "perf" else (prices[cons[0]] > 0)


# --- a budget sweep on one built problem equals fresh solves ---------------------------------


SWEEP_BUDGETS = np.exp(np.random.default_rng(20261123).uniform(math.log(5e3), math.log(5e5), 30))


def sweep_scenario() -> Scenario:
    """Sequential collectives make the step time strictly convex in every used bandwidth, so
    the optimum is unique; with only the budget binding it has a closed form (Lagrange):
    ``B_d = budget sqrt(a_d / kappa_d) / sum_j sqrt(a_j kappa_j)``, with ``a_d`` the GB a step
    sends on dimension ``d`` (the ordering row never binds: ``B_b / B_c`` does not depend on
    the budget and is about 3.6)."""
    return dataclasses.replace(scenario_3d(["bw.b >= bw.c"], "perf", 1e5),
                               collective_model="sequential")


def closed_form_bw(scen: Scenario, budget: float) -> np.ndarray:
    terms = build_problem(scen).terms
    a = (terms.collective_counts @ terms.traffic_gb)[0]
    kappa = scen.coefficients.usd_per_gbps
    return budget * np.sqrt(a / kappa) / np.sum(np.sqrt(a * kappa))


def test_budget_sweep_equals_fresh_solves():
    """One built problem re-solved at 30 random budgets (right-hand side only) gives the
    objective of a fresh solve, and the closed-form optimum, within 1e-6."""
    base = sweep_scenario()
    problem = build_problem(base)
    for budget in map(float, SWEEP_BUDGETS):
        a = problem.solve(budget_usd=budget, with_baselines=False)
        b = solve(dataclasses.replace(base, budget_usd=budget), with_baselines=False)
        assert a.scenario.budget_usd == b.scenario.budget_usd == budget
        exact = evaluate(a.scenario, closed_form_bw(base, budget))
        assert exact.residuals["bw.b >= bw.c"] < 0  # the closed form applies
        assert_allclose(a.objective_value, b.objective_value, rtol=1e-6, err_msg=str(budget))
        assert_allclose(a.objective_value, exact.objective_value, rtol=1e-6, err_msg=str(budget))
        assert a.evaluation.feasible(1e-6)
    assert problem.n_solves >= len(SWEEP_BUDGETS)


def test_budget_sweep_bandwidths_equal_fresh_solves():
    """Bandwidths too, to the accuracy an objective gap determines them: the step time is
    flat at the optimum (quadratic in the distance), so a relative gap of 1e-12 fixes the
    bandwidths to about its square root, 1e-6; measured, re-solves and fresh solves differ
    by up to about 1e-6 and both lie within 1e-5 of the closed form."""
    base = sweep_scenario()
    problem = build_problem(base)
    for budget in map(float, SWEEP_BUDGETS):
        a = problem.solve(budget_usd=budget, with_baselines=False)
        b = solve(dataclasses.replace(base, budget_usd=budget), with_baselines=False)
        exact = closed_form_bw(base, budget)
        assert_allclose(a.bw_gbps, exact, rtol=1e-5, err_msg=str(budget))
        assert_allclose(b.bw_gbps, exact, rtol=1e-5, err_msg=str(budget))
        assert_allclose(a.bw_gbps, b.bw_gbps, rtol=1e-5, err_msg=str(budget))


# --- the cvxpy reference stays DCP and DPP ---------------------------------------------------


@pytest.mark.parametrize("objective", ["perf", "perf_per_cost", "tco"])
@pytest.mark.parametrize("mode", ["pipelined", "sequential"])
@pytest.mark.parametrize("loop", ["no_overlap", "overlap"])
def test_cvxpy_form_is_dcp_and_dpp(objective, mode, loop):
    f = fabric_3d()
    tco = TcoModel(20000, 5000, 700, 300, 1.3, 0.08, 3, steps=1e5)
    cm = CostModel.from_tables(
        {"A": {"link": 1.0}, "B": {"link": 3.0}, "C": {"link": 5.0, "switch": 5.0, "nic": 10.0}},
        {"A": {"link": 0.01}, "B": {"link": 0.02}, "C": {"link": 0.02, "switch": 0.05, "nic": 0.1}},
    )
    scen = Scenario(f, cm, (workload_3d(),),
                    constraints=(parse_constraint("sum(bw) == 300", f),
                                 parse_constraint("bw.a >= bw.b", f)),
                    budget_usd=1e6, power_w=1e4, objective=objective, collective_model=mode,
                    training_loop=loop, tco=tco)
    p = build_problem(scen, backend="cvxpy")
    assert p.program.problem.is_dcp(dpp=True)
    assert p.program.problem.parameters()


# --- reductions of failures the property test once found (each fixed; kept as regressions) --


def two_dim_scenario(workload, constraints, **kw) -> Scenario:
    f = Fabric((Dim("a", "ring", 2, "A"), Dim("b", "ring", 2, "B")))
    cm = CostModel.from_tables({"A": {"link": 5.0}, "B": {"link": 10.0}})  # kappa = (20, 40)
    return Scenario(f, cm, (workload,), constraints=tuple(parse_constraint(c, f) for c in constraints),
                    **kw)


@pytest.mark.parametrize("backend", ["clarabel", "cvxpy"])
def test_perf_per_cost_without_traffic_and_free_cost_is_unbounded(backend):
    """No collective at all and nothing keeping the cost above zero: as with traffic
    (tests/optimize/test_problem.py::test_unbounded_perf_per_cost), no attained optimum."""
    scen = two_dim_scenario(Workload("w", (Layer("l", Phase(1e-3)),), {}), ["sum(bw) <= 100"],
                            objective="perf_per_cost")
    with pytest.raises(UnboundedDesignError):
        solve(scen, backend=backend, with_baselines=False)


@pytest.mark.parametrize("backend", ["clarabel", "cvxpy"])
def test_perf_per_cost_with_slack_budget(backend):
    """perf_per_cost, dimension a unused but held at >= 33.8 GB/s, b carries one all-reduce.
    The optimum (cost $1,606) does not depend on a budget of $2M that it leaves unused;
    without the budget (or with $1e5) both backends solve it."""
    wl = Workload("w", (Layer("l", Phase(5e-3, (Collective("all_reduce", 1.6e8, "g"),))),),
                  {"g": (1, 2)})
    free = solve(two_dim_scenario(wl, ["bw.a >= 33.8"], objective="perf_per_cost"),
                 backend=backend, with_baselines=False)
    capped = solve(two_dim_scenario(wl, ["bw.a >= 33.8"], objective="perf_per_cost",
                                    budget_usd=2e6), backend=backend, with_baselines=False)
    assert_allclose(capped.objective_value, free.objective_value, rtol=1e-7)


def test_backends_agree_when_clarabel_almost_solves():
    """perf, pipelined: four dimensions (one unused), latency on two, sum(bw) == T."""
    f = Fabric((Dim("a", "ring", 3, "T"), Dim("b", "ring", 2, "T"),
                Dim("c", "ring", 2, "T", 1.1190245822669143e-07),
                Dim("d", "fully_connected", 7, "T", 1.857371103574662e-07)))
    wl = Workload("w", (
        Layer("l0", Phase(0.0036827227678006415, (Collective("reduce_scatter", 24263586.271516576, "g"),)),
              Phase(0.0, (Collective("all_gather", 1077206130.8774347, "g"),)), count=17),
        Layer("l1", Phase(0.004378141795698627)),
        Layer("l2", Phase(0.0), Phase(0.0, (Collective("all_reduce", 873574076.3789092, "g"),)),
              Phase(3.493124829912122e-05)),
    ), {"g": (3, 1, 2, 7)})
    scen = Scenario(f, CostModel.from_tables({"T": {"link": 1.0}}), (wl,),
                    weights=(2.7598665865933585,),
                    constraints=(parse_constraint("sum(bw) == 577.2960998773586", f),))
    fast = solve(scen, with_baselines=False)
    ref = solve(scen, backend="cvxpy", with_baselines=False)
    assert_allclose(fast.objective_value, ref.objective_value, rtol=OBJ_RTOL, atol=0.0)


@pytest.mark.parametrize("backend", ["clarabel", "cvxpy"])
def test_closed_form_optimum_under_a_power_cap(backend):
    """One pipelined reduce-scatter over four dimensions and only a power cap: the optimum
    equalises c_d / B_d = t, so t = (pi . c) / P, and with the overlapped loop the step is
    compute (another phase) + t. Two dimensions or less solve to 1e-11; four do not."""
    f = Fabric((Dim("a", "switch", 4, "A"), Dim("b", "fully_connected", 5, "B"),
                Dim("c", "fully_connected", 4, "C"), Dim("d", "switch", 2, "D")))
    cm = CostModel.from_tables(
        {"A": {"link": 1.0, "switch": 1.0, "nic": 5.0}, "B": {"link": 0.6}, "C": {"link": 2.4},
         "D": {"link": 1.7, "switch": 8.4, "nic": 4.4}},
        {"A": {"link": 0.002, "switch": 0.0015, "nic": 0.15}, "B": {"link": 0.0014},
         "C": {"link": 0.027}, "D": {"link": 0.044, "switch": 0.155, "nic": 0.094}},
    )
    wl = Workload("w", (Layer("l", input_grad=Phase(0.0, (Collective("reduce_scatter", 8.2e8, "g"),)),
                              weight_grad=Phase(7.4e-3)),), {"g": (2, 5, 2, 2)})
    scen = Scenario(f, cm, (wl,), power_w=1e6, training_loop="overlap")
    c = build_problem(scen).terms.traffic_gb[0]
    assert (c > 0).all()
    exact = 7.4e-3 + float(scen.coefficients.w_per_gbps @ c) / 1e6
    sol = solve(scen, backend=backend, with_baselines=False)
    assert_allclose(sol.objective_value, exact, rtol=1e-7)


@pytest.mark.parametrize("backend", ["clarabel", "cvxpy"])
def test_zero_objective_passes_verification(backend):
    """A workload with no compute and no traffic: every design has objective 0."""
    f = Fabric((Dim("a", "switch", 3, "A"), Dim("b", "switch", 4, "B")))
    cm = CostModel.from_tables({"A": {"link": 17.4, "switch": 11.1, "nic": 3.1},
                                "B": {"link": 3.7, "switch": 5.6, "nic": 5.1}})
    scen = Scenario(f, cm, (Workload("w", (Layer("l", Phase(0.0)),), {}),),
                    constraints=(parse_constraint("bw.b <= 478", f),
                                 parse_constraint("sum(bw) >= 760", f)),
                    budget_usd=521430.0, objective="perf_per_cost", training_loop="overlap")
    assert solve(scen, backend=backend, with_baselines=False).objective_value == 0.0

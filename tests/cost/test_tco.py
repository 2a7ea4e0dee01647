"""TCO formulas by hand, and the ``tco`` objective against brute force.

The ``tco`` objective (minimize steps x step_time(B) x (r0 + r . B)) is not wired into
``libra_opt.optimize.problem.build_problem`` yet. ``test_tco_objective_matches_brute_force`` checks
the formulation the lead will wire: ``libra_opt.optimize.program.build_program(...,
product=(r0 / ref, r / ref), ...)`` with ``r0, r = libra_opt.cost.tco.cluster_rate_coefficients``.
"""

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import minimize

from libra_opt.cost.prices import CostModel, cost_coefficients
from libra_opt.cost.tco import TcoModel, cluster_rate_coefficients, tco_breakdown
from libra_opt.errors import InputError
from libra_opt.fabric.builders import multi_dim
from libra_opt.optimize.program import CLARABEL_SETTINGS as _CLARABEL_SETTINGS
from libra_opt.optimize.program import build_program as _build_program
from libra_opt.optimize.terms import aggregate_terms
from libra_opt.traffic.step_time import step_time
from libra_opt.traffic.timing import TimingModel
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

FABRIC = multi_dim((4, 8), ("ring", "switch"), tiers=("A", "B"))
COST = CostModel.from_tables(
    {"A": {"link": 2.0}, "B": {"link": 4.0, "switch": 10.0, "nic": 20.0}},
    {"A": {"link": 0.01}, "B": {"link": 0.02, "switch": 0.05, "nic": 0.1}},
)
TCO = TcoModel(accelerator_usd=20000, host_usd_per_npu=5000, npu_power_w=700,
               host_power_w_per_npu=300, pue=1.25, electricity_usd_per_kwh=0.08,
               lifetime_years=4, steps=50000, maintenance_fraction_per_year=0.05)


def test_rate_coefficients_by_hand():
    k = cost_coefficients(FABRIC, COST)
    # kappa = 32 x (2) and 32 x (4 + 10 + 20); pi = 32 x 0.01 and 32 x 0.17.
    assert k.usd_per_gbps.tolist() == [64.0, 1088.0]
    hours = 4 * 8760
    capex_factor = 1 + 0.05 * 4
    usd_per_w = 1.25 * 0.08 * hours / 1000          # $ per W over the lifetime
    r0_hand = (32 * 25000 * capex_factor + 32 * 1000 * usd_per_w) / (hours * 3600)
    r_hand = (np.array([64.0, 1088.0]) * capex_factor
              + np.array([0.32, 32 * 0.17]) * usd_per_w) / (hours * 3600)
    r0, r = cluster_rate_coefficients(TCO, FABRIC, k)
    assert r0 == pytest.approx(r0_hand, rel=1e-12)
    np.testing.assert_allclose(r, r_hand, rtol=1e-12)


def test_breakdown_consistent_with_rate_and_hand_numbers():
    k = cost_coefficients(FABRIC, COST)
    bw = np.array([200.0, 100.0])
    b = tco_breakdown(TCO, FABRIC, k, bw, step_time_s=0.5)
    assert b.network_usd == 64 * 200 + 1088 * 100
    assert b.accelerators_usd == 32 * 20000
    assert b.it_power_w == pytest.approx(32 * 1000 + 0.32 * 200 + 5.44 * 100)
    assert b.energy_usd == pytest.approx(b.it_power_w / 1000 * 1.25 * 0.08 * 4 * 8760)
    capex = 32 * 25000 + b.network_usd
    assert b.maintenance_usd == pytest.approx(capex * 0.2)
    assert b.total_usd == pytest.approx(capex * 1.2 + b.energy_usd)
    r0, r = cluster_rate_coefficients(TCO, FABRIC, k)
    assert b.usd_per_hour == pytest.approx(3600 * (r0 + r @ bw), rel=1e-12)
    assert b.run_usd == pytest.approx(50000 * 0.5 * (r0 + r @ bw), rel=1e-12)


def test_tokens_and_validation():
    t = TcoModel(1, 0, 1, 0, 1, 0.1, 1, tokens=2e12, tokens_per_step=4e6)
    assert t.n_steps == 5e5
    for kwargs, match in [({"pue": 0.9}, "pue"), ({"lifetime_years": 0}, "lifetime_years"),
                          ({"steps": 1, "tokens": 1, "tokens_per_step": 1}, "not both"),
                          ({"tokens": 1}, "go together"), ({"accelerator_usd": "x"}, "number")]:
        base = dict(accelerator_usd=1, host_usd_per_npu=0, npu_power_w=1,
                    host_power_w_per_npu=0, pue=1, electricity_usd_per_kwh=0.1,
                    lifetime_years=1)
        base.update(kwargs)
        with pytest.raises(InputError, match=match):
            TcoModel(**base)
    with pytest.raises(InputError, match="run length"):
        _ = TcoModel(1, 0, 1, 0, 1, 0.1, 1).n_steps
    with pytest.raises(InputError, match="unknown key"):
        TcoModel.from_mapping({"accelerator_usd": 1, "gpu_price": 2})
    no_power = cost_coefficients(FABRIC, CostModel.from_tables(
        {"A": {"link": 2.0}, "B": {"link": 4.0, "switch": 10.0, "nic": 20.0}}))
    with pytest.raises(InputError, match="power"):
        cluster_rate_coefficients(TCO, FABRIC, no_power)
    r0, r = cluster_rate_coefficients(TCO, FABRIC, no_power, allow_missing_power=True)
    assert r0 > 0 and (r > 0).all()


def _workload():
    ar = Collective("all_reduce", 4e9, "dp")
    return Workload("w", (Layer("l", Phase(0.02, (ar,)), count=10),), {"dp": (4, 8)})


def test_tco_objective_matches_brute_force():
    """EXPECTS the lead's ``tco`` objective to be ``_build_program(product=(r0/ref, r/ref))``."""
    w = _workload()
    k = cost_coefficients(FABRIC, COST)
    r0, r = cluster_rate_coefficients(TCO, FABRIC, k)
    steps = TCO.n_steps

    def run_cost(bw):
        bw = np.asarray(bw, dtype=float)
        if (bw <= 0).any():
            return np.inf
        return steps * step_time(w, FABRIC, bw).step_time_s * (r0 + r @ bw)

    # Brute force: a log grid, then a local polish from the best grid point.
    grid = np.geomspace(1.0, 1e5, 161)
    vals = np.array([[run_cost((a, b)) for b in grid] for a in grid])
    i, j = np.unravel_index(np.argmin(vals), vals.shape)
    res = minimize(lambda z: run_cost(np.exp(z)), np.log([grid[i], grid[j]]),
                   method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000})
    brute = min(res.fun, vals[i, j])

    terms = aggregate_terms([w], FABRIC)
    b_ref = 100.0
    t_ref = step_time(w, FABRIC, [b_ref, b_ref]).step_time_s
    ref = r0 + r @ np.array([b_ref, b_ref])
    prog = _build_program(terms, np.array([1.0]), (), FABRIC.n_dims, TimingModel(),
                          (r0 / ref, r / ref), b_ref, t_ref)
    prog.problem.solve(solver=cp.CLARABEL, **_CLARABEL_SETTINGS)
    assert prog.problem.status == cp.OPTIMAL
    u = float(prog.u.value)
    bw = prog.b_ref * np.asarray(prog.x.value) / u
    solver_obj = steps * ref * t_ref * float(prog.step_value.value)
    assert run_cost(bw) == pytest.approx(solver_obj, rel=1e-6)
    assert solver_obj <= brute * (1 + 1e-7)
    assert solver_obj == pytest.approx(brute, rel=1e-5)
    # The optimum balances compute-bound cost against network price: not at a bound.
    assert 1.0 < bw.min() and bw.max() < 1e5

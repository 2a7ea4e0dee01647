"""A budget at its floor (a fixed network cost plus the least-cost bandwidths the bounds
allow): below it the design is infeasible, naming the budget; at or above it the optimum
respects the budget and matches a brute-force search. Never a numpy disagreement."""

from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import InfeasibleDesignError
from libra_opt.io import load_scenario
from libra_opt.optimize.problem import build_problem, solve
from libra_opt.scenario.evaluate import evaluate

EXAMPLE = Path(__file__).resolve().parents[2] / "libra_opt/data/examples/gpt3_175b_a100_cluster.yaml"


@pytest.fixture(scope="module")
def in_network(tmp_path_factory):
    """The A100 GPT-3 example with the in-network optimizer: its aggregators' state memory
    is a fixed network cost."""
    text = EXAMPLE.read_text()
    old = "recompute: full}"
    assert text.count(old) == 1
    path = tmp_path_factory.mktemp("floor") / "s.yaml"
    path.write_text(text.replace(old, "recompute: full, dp_mode: in_network_optimizer, zero: 0}"))
    return load_scenario(path)


def floor_usd(scen):
    """Every $/GB/s is positive, so the least cost the bounds ``hb >= 100``,
    ``scaleout >= 12.5`` allow is at that corner: kappa . (100, 12.5) + fixed."""
    k = scen.coefficients
    assert scen.fabric.names == ("hb", "scaleout") and k.fixed_usd > 0
    assert np.all(k.usd_per_gbps > 0)
    return float(k.usd_per_gbps @ np.array([100.0, 12.5])) + k.fixed_usd


@pytest.mark.parametrize("below_usd", [0.29, 0.14, 0.09, 1e-3])
def test_below_the_floor_is_infeasible_naming_the_budget(in_network, below_usd):
    budget = floor_usd(in_network) - below_usd  # 3e-10 .. 8e-8 relative below
    with pytest.raises(InfeasibleDesignError) as info:
        solve(in_network, budget_usd=budget)
    assert "budget_usd" in info.value.constraints


@pytest.mark.parametrize("above_usd", [0.0, 0.01, 1.0, 100.0])
def test_at_the_floor_the_optimum_respects_the_budget(in_network, above_usd):
    budget = floor_usd(in_network) + above_usd
    sol = solve(build_problem(in_network), budget_usd=budget, with_baselines=False)
    # an interior-point answer on a binding budget breaks it by round-off, which the solve
    # accepts up to 1e-11 of the row's scale (libra_opt.optimize.attempts._in_trouble)
    assert sol.network_cost_usd <= budget * (1 + 1e-11)
    assert sol.bw_gbps[0] >= 100.0 and sol.bw_gbps[1] >= 12.5
    # Brute force: the step shortens with bandwidth, so the optimum spends the budget; the
    # budget's edge of the feasible triangle is hb = 100 + t x / k0, scaleout = 12.5 +
    # (1 - t) x / k1 with x = budget - floor, t in [0, 1].
    k = in_network.coefficients.usd_per_gbps
    ts = np.linspace(0.0, 1.0, 401)
    objs = [evaluate(in_network, [100.0 + t * above_usd / k[0],
                                  12.5 + (1 - t) * above_usd / k[1]]).objective_value
            for t in ts]
    assert_allclose(sol.objective_value, min(objs), rtol=1e-7)
    # no worse than any brute-force point, up to the conic solver's relative gap (1e-8)
    assert sol.objective_value <= min(objs) * (1 + 1e-8)

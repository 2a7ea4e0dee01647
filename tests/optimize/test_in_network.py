"""The optimizer with in-network reduction: hand-derived step times, brute force over
bandwidths and over the per-dimension choice, both backends, DCP of the cvxpy form."""

import dataclasses

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.cost.prices import CostModel
from libra_opt.errors import InputError
from libra_opt.explore.in_network import choose_in_network
from libra_opt.optimize.problem import build_problem, solve
from libra_opt.scenario.evaluate import evaluate
from libra_opt.traffic.topology_aware import CollectiveSettings
from tests.fixtures import scenario_2d
from tests.optimize.test_problem import KAPPA_2D, brute_2d, check

#: the in-network premium of tier B: 3 $ and 0.01 W per GB/s of switch port; 32 NPUs, one
#: port each -> +96 $ and +0.32 W per GB/s of B_pod.
PREMIUM_USD = 32 * 3.0


def cost_inr():
    return CostModel.from_tables(
        {"A": {"link": 2.0},
         "B": {"link": 4.0, "switch": 10.0, "nic": 20.0, "in_network_reduction": 3.0}},
        {"A": {"link": 0.01},
         "B": {"link": 0.02, "switch": 0.05, "nic": 0.1, "in_network_reduction": 0.01}},
    )


def scen(cons=(), objective="perf", inr=("pod",), **kw):
    return dataclasses.replace(scenario_2d(list(cons), objective, **kw), cost_model=cost_inr(),
                               in_network_reduction=tuple(inr))


def step_inr(b0, b1, inr=True, lat=0.0):
    """Step time (s) of tests.fixtures.workload_2d, pipelined, by hand. c2 (all-reduce 2 GB
    over (2, 8)): ring RS/AG on node 2/b0 (2 steps); on pod the 1 GB shard all-reduced in
    the switch: 1.0/b1, one step (without: 2 x 1 x 7/8 = 1.75/b1, two steps)."""
    c1 = 1.5 / b0 + 6 * lat
    pod = (1.0 / b1 + lat) if inr else (1.75 / b1 + 2 * lat)
    c2 = np.maximum(2.0 / b0 + 2 * lat, pod)
    c3 = np.maximum(0.375 / b0 + 3 * lat, 0.4375 / b1 + lat)
    return 3.5e-3 + c1 + c2 + c3


def kappa(inr):
    return np.array([KAPPA_2D[0], KAPPA_2D[1] + (PREMIUM_USD if inr else 0.0)])


def test_cost_coefficients_add_the_premium():
    s = scen(["sum(bw) == 40"])
    assert_allclose(s.coefficients.usd_per_gbps, kappa(True))
    assert_allclose(s.coefficients.w_per_gbps, [0.32, 32 * 0.17 + 0.32])
    assert_allclose(scen(["sum(bw) == 40"], inr=()).coefficients.usd_per_gbps, kappa(False))


@pytest.mark.parametrize("lat", [0.0, 2e-4])
def test_evaluator_matches_hand_derivation(lat):
    for inr in (True, False):
        s = scen(latency_s=lat, inr=("pod",) if inr else ())
        for bw in ([10.0, 30.0], [123.0, 7.5]):
            assert_allclose(evaluate(s, bw).weighted_step_time_s, step_inr(*bw, inr, lat),
                            rtol=1e-12)


@pytest.mark.parametrize("objective", ["perf", "perf_per_cost"])
def test_budget_brute_force(objective):
    budget = 1.5e5
    sol = solve(scen(["sum(bw) >= 100"], objective, budget_usd=budget))
    k = kappa(True)

    def mask(a, b):
        return (a + b >= 100) & (k[0] * a + k[1] * b <= budget)

    def obj(a, b):
        s = step_inr(a, b)
        return s if objective == "perf" else s * (k[0] * a + k[1] * b)

    best, _ = brute_2d(mask, obj)
    check(sol, best)


@pytest.mark.parametrize("budget", [3e4, 1.5e5, 4e5])
def test_choice_brute_force(budget):
    """choose_in_network's best and runner-up are the two choices ranked by a brute-force
    grid over (B_node, B_pod) of each choice under its own prices."""
    base = scen(["sum(bw) >= 10"], budget_usd=budget, inr=())
    res = choose_in_network(base)
    assert [c.dims for c in res.choices] in ([("pod",), ()], [(), ("pod",)])
    brute = {}
    for inr in (False, True):
        k = kappa(inr)
        brute[inr], _ = brute_2d(lambda a, b, k=k: (a + b >= 10) & (k[0] * a + k[1] * b <= budget),
                                 lambda a, b, inr=inr: step_inr(a, b, inr),
                                 hi=min(2000.0, 1.2 * budget / k[0]))
    for c in res.choices:
        b = brute[bool(c.dims)]
        assert c.objective_value <= b * (1 + 1e-7)
        assert b <= c.objective_value * (1 + 2e-4)
    want = ("pod",) if brute[True] < brute[False] else ()
    assert res.best.dims == want
    assert res.runner_up is not None and res.runner_up.dims != want
    assert "in-network dims" in repr(res) and "<table>" in res._repr_html_()


def test_choice_depends_on_the_premium():
    """With a premium of 0 in-network reduction cannot be worse; with a huge one the
    budget no longer buys it."""
    free = scen(["sum(bw) >= 10"], budget_usd=1.5e5, inr=())
    free = dataclasses.replace(free, cost_model=CostModel.from_tables(
        {"A": {"link": 2.0},
         "B": {"link": 4.0, "switch": 10.0, "nic": 20.0, "in_network_reduction": 0.0}}))
    assert choose_in_network(free).best.dims == ("pod",)
    dear = dataclasses.replace(free, cost_model=CostModel.from_tables(
        {"A": {"link": 2.0},
         "B": {"link": 4.0, "switch": 10.0, "nic": 20.0, "in_network_reduction": 1e4}}))
    assert choose_in_network(dear).best.dims == ()


@pytest.mark.parametrize("model", ["pipelined", "sequential", "topology_aware"])
@pytest.mark.parametrize("objective", ["perf", "perf_per_cost"])
def test_backends_agree(model, objective):
    kw = {}
    if model == "topology_aware":
        kw["collectives"] = CollectiveSettings(chunks=4, endpoint_delay_s=1e-5,
                                               local_memory_gbps=100.0)
    s = scen(["sum(bw) == 40"], objective, latency_s=1e-5, collective_model=model, **kw)
    a = solve(build_problem(s, backend="clarabel"))
    b = solve(build_problem(s, backend="cvxpy"))
    assert_allclose(a.objective_value, b.objective_value, rtol=1e-7)
    p = build_problem(s, backend="cvxpy")
    assert p.program.problem.is_dcp()


def test_topology_aware_in_network_is_faster_on_pod_all_reduce():
    """One chunk, no latency: the topology_aware time of c2's pod phase is the traffic
    model's 1.0 GB / B_pod, as derived in step_inr (the ring node phases: RS 1/b0, AG 1/b0,
    one chunk -> summed: sequential)."""
    s = scen(collective_model="topology_aware")
    b0, b1 = 50.0, 20.0
    c1 = 1.5 / b0  # ring all-reduce over 4: 3 steps of 2 x (1/4) / b0
    c2 = 2.0 / b0 + 1.0 / b1
    c3 = 6 * (0.5 / 4) / b0 + 7 * (0.5 / 8) / b1
    assert_allclose(evaluate(s, [b0, b1]).weighted_step_time_s, 3.5e-3 + c1 + c2 + c3,
                    rtol=1e-12)


def test_scenario_rejects_a_ring_dimension_and_a_missing_price():
    with pytest.raises(InputError, match="needs a switch dimension"):
        scen(inr=("node",))
    with pytest.raises(InputError, match="in_network_reduction price"):
        scenario_2d([], in_network_reduction=("pod",))

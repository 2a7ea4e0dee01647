"""The numpy evaluator against hand derivations, and the bundled example scenarios."""

from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.io import load_scenario
from libra_opt.optimize.problem import solve
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.scenario import scenario_rows
from libra_opt.traffic.step_time import step_time
from libra_opt.traffic.timing import TimingModel
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "libra_opt" / "data" / "examples"


def test_libra_style_step_time_by_hand():
    """One LIBRA-format layer on 4x8 (ring, switch) at B = (100, 25) GB/s:
    forward AR 80 MB over (4, 1): 2*80e6*3/4 = 120 MB on dim 0 -> 1.2 ms;
    input-grad AG shard 10 MB over (4, 8): dim1 10e6*7 = 70 MB, m -> 80 MB; dim0 80e6*3 =
    240 MB -> max(2.4 ms, 2.8 ms) = 2.8 ms (pipelined) or 5.2 ms (sequential);
    weight-grad A2A 40 MB over (1, 8): 40e6*7/8 = 35 MB on dim 1 -> 1.4 ms.
    Compute 1 + 2 + 3 ms."""
    f = Fabric((Dim("a", "ring", 4, "T"), Dim("b", "switch", 8, "T")))
    wl = Workload(
        "w",
        (Layer(
            "l",
            Phase(1e-3, (Collective("all_reduce", 80e6, "tp"),)),
            Phase(2e-3, (Collective("all_gather", 10e6, "all"),)),
            Phase(3e-3, (Collective("all_to_all", 40e6, "ep"),)),
            count=2,
        ),),
        {"tp": (4, 1), "all": (4, 8), "ep": (1, 8)},
    )
    t = step_time(wl, f, [100.0, 25.0])
    assert_allclose(t.step_time_s, 2 * (6e-3 + 1.2e-3 + 2.8e-3 + 1.4e-3), rtol=1e-12)
    assert_allclose(t.comm_by_phase_s["input_grad"], 2 * 2.8e-3, rtol=1e-12)
    assert_allclose(t.comm_by_group_s["ep"], 2 * 1.4e-3, rtol=1e-12)
    assert_allclose(t.traffic_by_dim_bytes, 2 * np.array([120e6 + 240e6, 70e6 + 35e6]))
    assert_allclose(t.busy_by_dim_s, 2 * np.array([1.2e-3 + 2.4e-3, 2.8e-3 + 1.4e-3]))
    seq = step_time(wl, f, [100.0, 25.0], TimingModel("sequential"))
    assert_allclose(seq.step_time_s, 2 * (6e-3 + 1.2e-3 + 5.2e-3 + 1.4e-3), rtol=1e-12)
    ov = step_time(wl, f, [100.0, 25.0], TimingModel(training_loop="overlap"))
    assert_allclose(ov.step_time_s, 2 * (1.2e-3 + 2.8e-3 + 3e-3), rtol=1e-12)
    with pytest.raises(InputError, match="expected 2 bandwidths"):
        step_time(wl, f, [1.0])
    with pytest.raises(InputError, match="finite"):
        step_time(wl, f, [1.0, float("nan")])


def _feasible_points(scen, center, n_vertices=6, seed=0):
    """Feasible allocations found independently of the optimizer: vertices of the
    constraint polytope (``scipy.optimize.linprog`` with random costs, boxed at 4x the
    largest optimum bandwidth) and the midpoints between them and ``center`` (feasible by
    convexity)."""
    from scipy.optimize import linprog

    rows = scenario_rows(scen)
    d = scen.fabric.n_dims
    a_ub = [r.a if r.sense == "<=" else -r.a for r in rows if r.sense != "=="]
    b_ub = [r.rhs if r.sense == "<=" else -r.rhs for r in rows if r.sense != "=="]
    a_eq = [r.a for r in rows if r.sense == "=="]
    b_eq = [r.rhs for r in rows if r.sense == "=="]
    box = 4.0 * float(np.max(center))
    rng = np.random.default_rng(seed)
    points = []
    for _ in range(n_vertices):
        res = linprog(rng.normal(size=d), A_ub=np.array(a_ub) if a_ub else None,
                      b_ub=b_ub or None, A_eq=np.array(a_eq) if a_eq else None,
                      b_eq=b_eq or None, bounds=[(1e-3, box)] * d, method="highs")
        assert res.status == 0, res.message
        points += [res.x, 0.5 * (res.x + center), 0.9 * center + 0.1 * res.x]
    return points


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.yaml")))
def test_example_scenarios_solve(name):
    """Every example: the answer is feasible and no worse than every baseline that is
    feasible, nor than 18 feasible allocations found by linear programming (so every
    example asserts something, including those whose baselines break a constraint)."""
    scen = load_scenario(EXAMPLES / f"{name}.yaml")
    sol = solve(scen)
    assert sol.solver.objective_rel_gap < 1e-6
    ev = evaluate(scen, sol.bw_gbps)
    assert ev.feasible(1e-6)
    assert_allclose(ev.objective_value, sol.objective_value, rtol=1e-6)
    for b in sol.baselines:
        if b.feasible:  # the optimum is at least as good as any feasible baseline
            assert b.objective_ratio >= 1 - 1e-7
    points = _feasible_points(scen, sol.bw_gbps)
    for bw in points:
        other = evaluate(scen, bw)
        assert other.feasible(1e-6)
        assert other.objective_value >= sol.objective_value * (1 - 1e-7), bw


def test_resnet50_example_matches_published_size():
    """workloads/derive_examples.py derives ResNet-50 from its layer table: 25.5 M conv+FC
    weights (25.6 M with batch norm, He et al. 2016) and 4.09 G multiply-adds per image."""
    import sys

    sys.path.insert(0, str(ROOT / "workloads"))
    from derive_examples import resnet50_stages

    stages = resnet50_stages()
    assert sum(p for _, p, _ in stages) == 25_503_912
    assert_allclose(sum(m for *_, m in stages), 4.089e9, rtol=1e-3)

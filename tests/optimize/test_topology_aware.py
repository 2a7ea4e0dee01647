"""The optimizer under the ``topology_aware`` collective model: brute-force grids on the 2-D
fixture (every phase time derived by hand below) and the two backends against each other."""

import dataclasses

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.optimize.problem import build_problem, solve
from libra_opt.scenario.evaluate import evaluate
from libra_opt.traffic.topology_aware import CollectiveSettings
from tests.fixtures import scenario_2d
from tests.optimize.test_problem import KAPPA_2D, PI_2D, brute_2d, brute_line, check


def phases_2d(b0, b1, chunks, alpha, e, mem_gbps):
    """Phase times (s) of one chunk of each collective of tests.fixtures.workload_2d on
    fabric_2d (node: ring of 4, 1 hop; pod: switch of 8, 2 hops, ``direct``), derived by hand.

    With ``x`` the chunk (GB), ``n = x / k`` the message, ``l = h alpha + e`` and the
    reduction ``3 n / M``:

    * c1, all-reduce 1 GB over (4, 1): one ring all-reduce on node, ``n = x/4``:
      ``3 (2 n / b0 + 2 l + 3 n / M)``.
    * c2, all-reduce 2 GB over (2, 8): ring reduce-scatter on node (``k = 2``, ``n = x/2``):
      ``x/2 / b0 + l + 3 (x/2) / M``; direct all-reduce on pod of the shard ``x/2``
      (``n = x/16``, 7 messages through the port, twice): ``2 * 7 x/16 / b1 + 2 l_pod +
      7 * 3 (x/16) / M``; ring all-gather on node back to ``x``: ``x/2 / b0 + l``.
    * c3, all-to-all 0.5 GB over (4, 8): ring all-to-all on node, ``k(k-1)/2 = 6`` steps of
      ``n = x/4``: ``6 (x/4 / b0 + l)``; direct on pod: ``7 x/8 / b1 + l_pod``.
    """
    l0, l1 = alpha + e, 2 * alpha + e
    red = 0.0 if mem_gbps is None else 3.0 / mem_gbps
    x1, x2, x3 = 1.0 / chunks, 2.0 / chunks, 0.5 / chunks
    c1 = [3 * (2 * (x1 / 4) / b0 + 2 * l0 + red * x1 / 4)]
    c2 = [
        (x2 / 2) / b0 + l0 + red * x2 / 2,
        2 * 7 * (x2 / 16) / b1 + 2 * l1 + 7 * red * x2 / 16,
        (x2 / 2) / b0 + l0,
    ]
    c3 = [6 * ((x3 / 4) / b0 + l0), 7 * (x3 / 8) / b1 + l1]
    return c1, c2, c3


def step_ta(b0, b1, chunks=1, alpha=0.0, e=0.0, mem_gbps=None, loop="no_overlap"):
    """Step time (s): per collective ``T = sum_p t_p + (S - 1) max_d u_d`` with ``u_d`` the
    per-chunk busy time of dimension ``d`` (c2 visits node twice: ``u_node = t_RS + t_AG``);
    one collective per phase, compute 1 ms, 2 ms, 0.5 ms."""
    c1, c2, c3 = phases_2d(b0, b1, chunks, alpha, e, mem_gbps)
    busy = [c1, [c2[0] + c2[2], c2[1]], c3]
    colls = []
    for ph, u in zip((c1, c2, c3), busy, strict=True):
        colls.append(sum(ph) + (chunks - 1) * np.maximum.reduce(u))
    compute = [1e-3, 2e-3, 0.5e-3]
    if loop == "no_overlap":
        return sum(a + b for a, b in zip(compute, colls, strict=True))
    return sum(np.maximum(a, b) for a, b in zip(compute, colls, strict=True))


def ta_scenario(constraints, objective="perf", chunks=1, alpha=0.0, e=0.0, mem_gbps=None,
                **kw):
    settings = CollectiveSettings(chunks=chunks, endpoint_delay_s=e, local_memory_gbps=mem_gbps)
    return scenario_2d(constraints, objective, collective_model="topology_aware",
                       collectives=settings, latency_s=alpha, **kw)


CASES = [  # chunks, alpha, e, M
    (1, 0.0, 0.0, None),
    (4, 2e-5, 1e-5, 50.0),
    (16, 5e-6, 0.0, 200.0),
]


@pytest.mark.parametrize(("chunks", "alpha", "e", "mem"), CASES)
def test_evaluator_matches_hand_derivation(chunks, alpha, e, mem):
    scen = ta_scenario([], chunks=chunks, alpha=alpha, e=e, mem_gbps=mem)
    for bw in ([10.0, 30.0], [123.0, 7.5]):
        got = evaluate(scen, bw).weighted_step_time_s
        assert_allclose(got, step_ta(*bw, chunks, alpha, e, mem), rtol=1e-12)


@pytest.mark.parametrize("loop", ["no_overlap", "overlap"])
@pytest.mark.parametrize(("chunks", "alpha", "e", "mem"), CASES)
@pytest.mark.parametrize("objective", ["perf", "perf_per_cost"])
def test_2d_equality_brute_force(chunks, alpha, e, mem, loop, objective):
    scen = ta_scenario(["sum(bw) == 40"], objective, chunks, alpha, e, mem, training_loop=loop)
    sol = solve(scen)

    def obj(a, b):
        s = step_ta(a, b, chunks, alpha, e, mem, loop)
        return s if objective == "perf" else s * (KAPPA_2D[0] * a + KAPPA_2D[1] * b)

    best, _ = brute_line(40.0, obj)
    check(sol, best, 1e-6)


@pytest.mark.parametrize("objective", ["perf", "perf_per_cost"])
def test_2d_budget_and_ordering_brute_force(objective):
    chunks, alpha, e, mem = 4, 2e-5, 1e-5, 50.0
    cons = ["bw[0] >= 2 * bw.pod", "sum(bw) >= 100"]
    sol = solve(ta_scenario(cons, objective, chunks, alpha, e, mem, budget_usd=1.5e5))

    def mask(a, b):
        return (a >= 2 * b) & (a + b >= 100) & (KAPPA_2D[0] * a + KAPPA_2D[1] * b <= 1.5e5)

    def obj(a, b):
        s = step_ta(a, b, chunks, alpha, e, mem)
        return s if objective == "perf" else s * (KAPPA_2D[0] * a + KAPPA_2D[1] * b)

    best, _ = brute_2d(mask, obj)
    check(sol, best)


@pytest.mark.parametrize("loop", ["no_overlap", "overlap"])
@pytest.mark.parametrize("objective", ["perf", "perf_per_cost"])
@pytest.mark.parametrize("active", [None, 1, 2])
def test_backends_agree(objective, loop, active):
    settings = CollectiveSettings(chunks=8, active_chunks=active, endpoint_delay_s=1e-5,
                                  local_memory_gbps=100.0, algorithm={"pod": "ring"})
    scen = scenario_2d(["sum(bw) == 40"], objective, collective_model="topology_aware",
                       collectives=settings, latency_s=1e-5, training_loop=loop)
    a = solve(build_problem(scen, backend="clarabel"))
    b = solve(build_problem(scen, backend="cvxpy"))
    assert_allclose(a.objective_value, b.objective_value, rtol=1e-7)
    assert_allclose(a.bw_gbps, b.bw_gbps, rtol=1e-4)


def test_cvxpy_program_is_dcp_and_dpp():
    scen = ta_scenario(["sum(bw) == 40"], "perf_per_cost", 4, 2e-5, 1e-5, 50.0)
    p = build_problem(scen, backend="cvxpy")
    assert p.program.problem.is_dcp(dpp=True)


def test_one_chunk_without_overheads_is_sequential_for_a_ring_dimension():
    """One chunk, no latency, no reduction cost, ring on every dimension: the phase
    serializations add up to LIBRA's sequential traffic except for the ring all-to-all
    (k/2 times LIBRA's m(k-1)/k) — so with the all-to-all removed the optima coincide."""
    base = scenario_2d(["sum(bw) == 40"])
    wl = base.workloads[0]
    no_a2a = dataclasses.replace(wl, layers=wl.layers[:2])
    seq = dataclasses.replace(base, workloads=(no_a2a,), collective_model="sequential")
    ta = dataclasses.replace(seq, collective_model="topology_aware",
                             collectives=CollectiveSettings(algorithm={"pod": "ring"}))
    assert_allclose(solve(ta).objective_value, solve(seq).objective_value, rtol=1e-7)


def test_more_chunks_approach_pipelined_max():
    """Without latency, S -> infinity approaches LIBRA's pipelined max of the whole buffer:
    T(S) = sum/S + (S-1)/S max -> max."""
    base = scenario_2d([], collective_model="pipelined")
    bw = [10.0, 30.0]
    libra = evaluate(base, bw).weighted_step_time_s
    ring_pod = {"pod": "ring"}
    prev = np.inf
    for s in (1, 4, 64, 4096):
        ta = dataclasses.replace(base, collective_model="topology_aware",
                                 collectives=CollectiveSettings(chunks=s, algorithm=ring_pod))
        t = evaluate(ta, bw).weighted_step_time_s
        assert t < prev
        prev = t
    # the remaining gap is the ring all-to-all's forwarding (6 x/4 vs 3 x/4 on node):
    # c3's node phase 6 * 0.125 / 10 = 0.075 s vs LIBRA's max(0.0375, 0.0146) = 0.0375 s
    assert_allclose(prev - libra, 0.075 - 0.0375, rtol=2e-3)


def test_tco_objective_brute_force():
    """The tco objective (steps x step time x cluster $/s, see
    tests/optimize/test_problem.py::test_tco_objective_brute_force) under topology_aware."""
    from libra_opt.cost.tco import TcoModel

    chunks, alpha, e, mem = 4, 2e-5, 1e-5, 50.0
    tco = TcoModel(20000, 5000, 700, 300, 1.3, 0.08, 3, steps=1e5)
    scen = ta_scenario(["sum(bw) >= 50", "bw.pod <= 400"], "tco", chunks, alpha, e, mem, tco=tco)
    seconds = 3 * 8760 * 3600
    usd_per_ws = 1.3 * 0.08 / 1000 / 3600

    def obj(a, b):
        rate = (32 * 25000 + KAPPA_2D[0] * a + KAPPA_2D[1] * b) / seconds
        rate = rate + (32 * 1000 + PI_2D[0] * a + PI_2D[1] * b) * usd_per_ws
        return 1e5 * step_ta(a, b, chunks, alpha, e, mem) * rate

    best, _ = brute_2d(lambda a, b: (a + b >= 50) & (b <= 400), obj, hi=4000)
    for backend in ("clarabel", "cvxpy"):
        check(solve(scen, backend=backend), best)


@pytest.mark.parametrize("chunks", [1024, 65536])
@pytest.mark.parametrize("objective", ["perf", "perf_per_cost"])
def test_thousands_of_chunks_brute_force(chunks, objective):
    """With S - 1 ~ 1e3-1e5 weighting the per-chunk max, the program stays well scaled: the
    optimum matches the brute-force line search and both backends agree."""
    alpha, e, mem = 2e-6, 1e-6, 100.0
    scen = ta_scenario(["sum(bw) == 40"], objective, chunks, alpha, e, mem)
    sol = solve(scen)

    def obj(a, b):
        s = step_ta(a, b, chunks, alpha, e, mem)
        return s if objective == "perf" else s * (KAPPA_2D[0] * a + KAPPA_2D[1] * b)

    best, _ = brute_line(40.0, obj)
    check(sol, best, 1e-6)
    ref = solve(scen, backend="cvxpy")
    assert ref.objective_value == pytest.approx(sol.objective_value, rel=1e-7)


@pytest.mark.parametrize("objective", ["perf", "perf_per_cost"])
@pytest.mark.parametrize(("backend", "queues", "active"), [
    ("congestion_unaware", 1, 1), ("congestion_aware", 1, 2), ("congestion_aware", 2, 2)])
def test_astra_sim_backends_brute_force_and_agree(objective, backend, queues, active):
    """Under ASTRA-sim's semantics (pipeline pieces with negative coefficients for the
    hidden phases, per-collective algorithms) the program stays exact: the conic optimum
    matches a brute-force line search of the numpy evaluator, and cvxpy agrees."""
    settings = CollectiveSettings(chunks=4, endpoint_delay_s=1e-5, local_memory_gbps=100.0,
                                  backend=backend, queues_per_dim=queues,
                                  active_chunks_per_dim=active,
                                  collective_algorithm={("all_to_all", "pod"): "ring"})
    scen = scenario_2d(["sum(bw) == 40"], objective, collective_model="topology_aware",
                       collectives=settings, latency_s=1e-5)
    sol = solve(scen)

    def obj(a):
        s = evaluate(scen, [a, 40.0 - a]).weighted_step_time_s
        return s if objective == "perf" else s * (KAPPA_2D[0] * a + KAPPA_2D[1] * (40 - a))

    grid = np.linspace(0.02, 39.98, 1001)  # coarse, then fine around the best
    a0 = grid[np.argmin([obj(a) for a in grid])]
    fine = np.linspace(max(a0 - 0.05, 1e-3), min(a0 + 0.05, 40 - 1e-3), 1001)
    best = min(obj(a) for a in fine)
    check(sol, best, 1e-5)
    ref = solve(scen, backend="cvxpy")
    assert_allclose(ref.objective_value, sol.objective_value, rtol=1e-6)

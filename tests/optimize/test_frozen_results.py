"""Results are frozen all the way down: no array a solution, an evaluation or a scenario
exposes can be written, and none is a view of an array the caller still holds."""

import dataclasses
from collections.abc import Mapping

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.io import examples
from libra_opt.optimize.problem import solve
from libra_opt.scenario.evaluate import evaluate


def reachable_arrays(obj, path="", seen=None, depth=0):
    """Every numpy array reachable through dataclass fields, cached properties, tuples and
    mappings, with its path."""
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 8:
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        yield path, obj
    elif isinstance(obj, (str, bytes, int, float, type(None))):
        return
    elif isinstance(obj, Mapping):
        for k, v in obj.items():
            yield from reachable_arrays(v, f"{path}[{k!r}]", seen, depth + 1)
    elif isinstance(obj, (tuple, list)):
        for i, v in enumerate(obj):
            yield from reachable_arrays(v, f"{path}[{i}]", seen, depth + 1)
    elif hasattr(obj, "__dict__") or dataclasses.is_dataclass(obj):
        for k, v in vars(obj).items():
            yield from reachable_arrays(v, f"{path}.{k}", seen, depth + 1)


def test_no_array_of_a_solution_or_its_scenario_is_writable():
    scen = examples.load("gpt3_175b_4d")
    sol = solve(scen)
    _ = sol.baselines, scen.coefficients, [w.flat for w in scen.workloads]
    found = dict(reachable_arrays(sol, "sol"))
    # the walk, the evaluation, the cost, the workloads' flat walks are all reached
    ids = {id(a) for a in found.values()}
    assert id(sol.walks[0].phase_compute_s) in ids
    assert id(sol.walks[0].traffic_bytes) in ids
    assert id(sol.evaluation.cost.usd_by_dim_component) in ids
    assert id(sol.baselines[0].evaluation.bw_gbps) in ids
    assert len(found) >= 20
    writable = [p for p, a in found.items() if a.flags.writeable]
    assert writable == []


def test_writing_into_a_solution_cannot_change_later_answers():
    scen = examples.load("gpt3_175b_4d")
    bw = np.array([250.0, 250.0, 250.0, 250.0])
    before = evaluate(scen, bw).weighted_step_time_s
    sol = solve(scen)
    with pytest.raises(ValueError, match="read-only"):
        sol.walks[0].phase_compute_s[:] = 0
    with pytest.raises(ValueError, match="read-only"):
        sol.bw_gbps[0] = 0
    with pytest.raises(ValueError, match="read-only"):
        sol.evaluation.workloads[0].busy_by_dim_s[:] = 0
    with pytest.raises(TypeError):
        sol.evaluation.residuals["sum(bw) == 1000"] = -1.0  # type: ignore[index]
    assert_allclose(evaluate(scen, bw).weighted_step_time_s, before, rtol=1e-12)
    again = solve(scen)  # the scenario still solves to the same optimum
    assert_allclose(again.bw_gbps, sol.bw_gbps, rtol=1e-9)


def test_evaluation_owns_its_bandwidth_array():
    scen = examples.load("gpt3_175b_4d")
    bw = np.array([250.0, 250.0, 250.0, 250.0])
    ev = evaluate(scen, bw)
    bw[0] = 1.0  # the caller's array stays the caller's (and stays writable)
    assert ev.bw_gbps.tolist() == [250.0] * 4
    assert not ev.bw_gbps.flags.writeable


def test_results_stay_read_only_after_a_pickle_round_trip():
    """Process and Dask executors ship results by pickle: every array of the unpickled
    solution, its evaluation, baselines, walks and scenario is read-only again."""
    import pickle

    scen = examples.load("gpt3_175b_4d")
    sol = solve(scen)
    _ = sol.baselines, scen.coefficients, scen.rows, [w.flat for w in scen.workloads]
    back = pickle.loads(pickle.dumps(sol))
    found = dict(reachable_arrays(back, "sol"))
    ids = {id(a) for a in found.values()}
    assert id(back.bw_gbps) in ids
    assert id(back.walks[0].traffic_bytes) in ids
    assert id(back.evaluation.cost.usd_by_dim_component) in ids
    assert id(back.baselines[0].evaluation.bw_gbps) in ids
    assert len(found) >= 20
    assert [p for p, a in found.items() if a.flags.writeable] == []
    assert_allclose(back.bw_gbps, sol.bw_gbps, rtol=0)
    with pytest.raises(ValueError, match="read-only"):
        back.bw_gbps[0] = 1.0
    # an evaluation and a scenario shipped on their own, and the scenario's rows rebuilt
    ev = pickle.loads(pickle.dumps(sol.evaluation))
    scen2 = pickle.loads(pickle.dumps(scen))
    _ = scen2.rows, scen2.coefficients, [w.flat for w in scen2.workloads]
    for root, name in ((ev, "ev"), (scen2, "scen")):
        arrays = dict(reachable_arrays(root, name))
        assert arrays
        assert [p for p, a in arrays.items() if a.flags.writeable] == []
    assert all(not r.a.flags.writeable for r in scen2.rows)

"""Notebook representations of Solution and Baseline, and the step-time ratio of baselines."""

import dataclasses
from functools import cache

import pytest
from numpy.testing import assert_allclose

from libra_opt.io.examples import load, names
from libra_opt.optimize.problem import solve
from libra_opt.optimize.solution import Baseline, Solution
from libra_opt.options import OBJECTIVE_MEANING
from libra_opt.scenario.examples import toy_scenario
from tests.scenario.test_scenario import parse_tables

EXAMPLES = names()


@cache
def _solved(name: str) -> Solution:
    return solve(load(name))


@pytest.mark.parametrize("name", EXAMPLES)
def test_solution_repr_is_short_and_complete(name):
    sol = _solved(name)
    r = repr(sol)
    assert len(r) < 2000
    assert len(r.splitlines()) <= 6
    assert r.startswith(f"Solution({sol.scenario.name!r}: {sol.solver.status})")
    for dim, b in zip(sol.scenario.fabric.names, sol.bw_gbps, strict=True):
        assert f"{dim}={b:.1f}" in r
    what, unit = OBJECTIVE_MEANING[sol.objective]
    value = f"${sol.objective_value:,.0f}" if unit == "$" else f"{sol.objective_value:.6g} {unit}"
    assert f"objective {sol.objective} ({what}) = {value}" in r
    assert f"weighted step time {sol.evaluation.weighted_step_time_s:.6g} s" in r
    assert f"network cost ${sol.network_cost_usd:,.0f}" in r
    if sol.network_power_w is None:
        assert "power" not in r
    else:
        assert f"network power {sol.network_power_w:,.0f} W" in r


@pytest.mark.parametrize("name", EXAMPLES)
def test_solution_html_has_one_row_per_dimension(name):
    sol = _solved(name)
    p = parse_tables(sol._repr_html_())
    assert len(p.tables) == 1
    (rows,) = p.tables
    fabric = sol.scenario.fabric
    assert len(rows) == fabric.n_dims + 1  # header + one row per dimension
    assert rows[0][:5] == ["dim", "topology", "size", "bandwidth GB/s", "cost $"]
    usd = sol.evaluation.cost.usd_by_dim_component.sum(axis=1)
    assert [row[:5] for row in rows[1:]] == [
        [d.name, d.topology, f"{d.size:,}", f"{b:.1f}", f"{c:,.0f}"]
        for d, b, c in zip(fabric.dims, sol.bw_gbps, usd, strict=True)
    ]
    assert ("power W" in rows[0]) == (sol.network_power_w is not None)
    caption = p.captions[0]
    assert sol.scenario.name in caption and sol.solver.status in caption
    assert f"weighted step time {sol.evaluation.weighted_step_time_s:.6g} s" in caption
    assert f"network cost ${sol.network_cost_usd:,.0f}" in caption


def test_solution_html_escapes_names():
    sol = solve(dataclasses.replace(toy_scenario(), name="<i>a&b</i>"))
    h = sol._repr_html_()
    assert "<i>" not in h and "&lt;i&gt;a&amp;b&lt;/i&gt;" in h
    assert "<i>a&b</i>" in parse_tables(h).captions[0]


def test_solution_repr_lists_workload_step_times_when_several():
    sol = _solved("multi_4d")
    r = repr(sol)
    for t in sol.evaluation.workloads:
        assert f"{t.name} {t.step_time_s:.6g} s" in r


def test_solution_and_baseline_stay_frozen_dataclasses():
    sol = solve(toy_scenario())
    for obj in (sol, sol.baselines[0], sol.constraints[0], sol.solver):
        assert dataclasses.is_dataclass(obj)
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.name = "x"  # type: ignore[misc,union-attr]


def test_baseline_step_time_ratio():
    sol = solve(toy_scenario())
    field_names = [f.name for f in dataclasses.fields(Baseline)]
    assert "step_time_ratio" in field_names and "speedup" not in field_names
    for b in sol.baselines:
        want = b.evaluation.weighted_step_time_s / sol.evaluation.weighted_step_time_s
        assert_allclose(b.step_time_ratio, want, rtol=1e-12)
        r = repr(b)
        assert len(r) < 300 and "\n" not in r
        assert f"step time ratio {b.step_time_ratio:.4g}x" in r
    eq = sol.baselines[0]  # 0.01 + 1 / 150 against 0.01 + 1 / 200 seconds
    assert_allclose(eq.step_time_ratio, (0.01 + 1 / 150) / 0.015, rtol=1e-6)

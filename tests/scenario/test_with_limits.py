"""Scenario.with_limits: the same scenario, the same refusals as dataclasses.replace."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from libra_opt.errors import InputError
from libra_opt.scenario.constraints import parse_constraint
from libra_opt.scenario.examples import toy_scenario


def _rows(s):
    return [(r.label, r.a.tolist(), r.sense, r.rhs) for r in s.rows]


@pytest.mark.parametrize("changes", [
    {"budget_usd": 2.5e6},
    {"budget_usd": None},
    {"constraints": ()},
    {"constraints": ("sum(bw) <= 450", "bw[0] >= bw[1]")},
    {"weights": (2.5,)},
    {"weights": (0.5,), "budget_usd": 1e6},
])
def test_same_scenario_as_replace(changes):
    base = toy_scenario()
    if "constraints" in changes:
        changes = {"constraints": tuple(parse_constraint(c, base.fabric)
                                        for c in changes["constraints"])}
    want = dataclasses.replace(base, **changes)
    got = base.with_limits(**changes)
    assert got == want
    assert got.spec is None and want.spec is None
    assert _rows(got) == _rows(want)
    np.testing.assert_allclose(got.coefficients.usd_per_gbps, want.coefficients.usd_per_gbps,
                               rtol=0, atol=0)
    assert all(not r.a.flags.writeable for r in got.rows)
    # the original keeps its own limits and rows
    assert base.budget_usd is None and [r.label for r in base.rows] == ["sum(bw) == 300"]


@pytest.mark.parametrize("changes", [
    {"budget_usd": -5.0},  # out of range
    {"budget_usd": float("inf")},
    {"power_w": -1.0},  # out of range
    {"constraints": "bad-rhs"},  # |rhs| beyond MAX_RHS
    {"weights": (0.0,)},
    {"weights": (float("nan"),)},
    {"weights": (1.0, 2.0)},  # two weights, one workload
])
def test_same_refusal_as_replace(changes):
    base = toy_scenario()
    if changes.get("constraints") == "bad-rhs":
        changes = {"constraints": (parse_constraint("sum(bw) <= 1e300", base.fabric),)}
    with pytest.raises(InputError) as want:
        dataclasses.replace(base, **changes)
    with pytest.raises(InputError) as got:
        base.with_limits(**changes)
    assert str(got.value) == str(want.value)
    assert got.value.field == want.value.field


def test_other_fields_refused():
    with pytest.raises(TypeError, match="objective"):
        toy_scenario().with_limits(objective="perf_per_cost")

"""The co-design search ranked by the objective under failures: exact against exhaustive
enumeration, and its bounds below every ranked value."""

from __future__ import annotations

import dataclasses

import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.explore.search import run_search, search_base
from libra_opt.scenario.compile import compile
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.failures import failure_report
from libra_opt.scenario.spec import thaw
from tests.explore.test_search import SMALL_SPACE, _base, _model
from tests.explore.test_search import template as template  # noqa: F401 - the fixture


def _fragile(base, **changes):
    """The base with a failure model whose goodput and spares differ across HB domains:
    4-GPU hosts (larger domains span hosts, their switches and cables stop the job), one
    hot spare per domain, an hour to bring a replacement without one."""
    rel = {**thaw(base.spec.reliability), "gpus_per_host": 4, "spares_per_domain": 1,
           "replace_s": 3600, "run_days": None, **changes}
    rel = {k: v for k, v in rel.items() if v is not None}
    return search_base(compile(base.spec.replace("reliability", rel)))


@pytest.mark.parametrize(("objective", "n_npus"), [("tco", 128), ("perf_per_cost", 64)])
def test_failure_ranking_equals_exhaustive_enumeration(template, objective, n_npus) -> None:
    base = _fragile(_base(template, _model(3, 8, 2, False), n_npus, 4, objective,
                          gbs=max(32, n_npus // 4)))
    space = dataclasses.replace(SMALL_SPACE, micro_batch_sizes=(1,), zero=(1,),
                                recompute=("full",), tp=(1, 2, 4), pp=(1, 2),
                                hb_domains=(4, 8, 16))
    pruned = run_search(base, space, top=3, solutions=False, rank="failures")
    full = run_search(base, space, top=3, prune=False, solutions=False, rank="failures")
    assert full.stats["pruned"] == 0
    assert pruned.stats["enumerated"] == full.stats["enumerated"]
    a = pruned.table[pruned.table["rank"].between(1, 3)].sort_values("rank")
    b = full.table[full.table["rank"].between(1, 3)].sort_values("rank")
    assert_allclose(a["effective_objective"].to_numpy(), b["effective_objective"].to_numpy(),
                    rtol=1e-6)
    solved = full.table[full.table["status"] == "optimal"]
    assert solved["goodput"].nunique() > 1   # the shapes differ in goodput
    # the bounds (times each shape's least 1 / goodput) stay below the ranked values
    assert (solved["lower_bound"] <= solved["effective_objective"] * (1 + 1e-9)).all()
    assert (solved["effective_objective"] > solved["objective"]).all()
    lbs = pruned.table.loc[pruned.table["status"] == "pruned", "lower_bound"]
    assert (lbs >= b["effective_objective"].iloc[-1] * (1 - 1e-6)).all()


def test_ranked_values_are_the_failure_report(template) -> None:
    base = _fragile(_base(template, _model(2, 8, 2, False), 64, 4, "tco", gbs=32))
    space = dataclasses.replace(SMALL_SPACE, micro_batch_sizes=(1,), zero=(1,),
                                recompute=("full",), tp=(2, 4), pp=(1,), hb_domains=(4, 8))
    res = run_search(base, space, top=2, rank="failures")
    assert res.rank == "failures"
    for sol, (_, row) in zip(res.solutions, res.best(2).iterrows(), strict=True):
        rep = failure_report(sol.scenario, evaluate(sol.scenario, sol.bw_gbps))
        assert_allclose((rep.goodput, rep.effective_objective_value),
                        (row["goodput"], row["effective_objective"]), rtol=1e-6)


def test_failure_ranking_needs_a_failure_model(template) -> None:
    base = _base(template, _model(2, 8, 2, False), 64, 8, "perf", budget=3.0e6)
    bare = search_base(compile(base.spec.replace("reliability", None)))
    with pytest.raises(InputError, match="reliability section") as exc:
        run_search(bare, SMALL_SPACE, rank="failures")
    assert exc.value.field == "reliability"   # what is missing, in the scenario's file
    with pytest.raises(InputError, match="not one of objective, failures"):
        run_search(base, SMALL_SPACE, rank="goodput")

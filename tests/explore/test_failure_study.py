"""Failure studies: sweep axes over the failure model, and goodput against cluster size for
the fat-tree and Rail-only families."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

import libra_opt as lo
from libra_opt.errors import InputError
from libra_opt.explore.failures import goodput_by_size

LLAMA = "llama3_405b_h100_tco"


@pytest.fixture(scope="module")
def llama():
    return lo.load_scenario(LLAMA)


def test_sweep_axes_over_a_rate_the_checkpoint_bandwidth_and_spares(llama) -> None:
    base = lo.apply_overrides(llama, {"reliability.replace_s": 3600})
    axes = {"reliability.rates_per_h.gpu": [5e-6, 2e-5],
            "reliability.checkpoint_write_gbps": [100, 2000],
            "reliability.spares_per_domain": [0, 1]}
    df = lo.sweep(base, axes, progress=False)
    assert (df["status"] == "optimal").all() and len(df) == 8
    for _, row in df.iterrows():   # each point as its own scenario, solved again
        point = {k: row[k].item() if hasattr(row[k], "item") else row[k] for k in axes}
        rep = lo.solve(lo.apply_overrides(base, point)).failures
        assert_allclose((row["goodput"], row["job_mttf_h"], row["effective_objective"]),
                        (rep.goodput, rep.job_mttf_h, rep.effective_objective_value),
                        rtol=1e-9)
    g = df.set_index(list(axes))["goodput"]
    assert (g.xs(5e-6, level=0) > g.xs(2e-5, level=0)).all()      # fewer GPU failures
    assert (g.xs(2000, level=1) > g.xs(100, level=1)).all()       # faster checkpoints
    assert (g.xs(1, level=2) > g.xs(0, level=2)).all()            # spares skip the wait
    # the objective (failure-free) does not move; the spares' cost shows under failures
    assert np.ptp(df["objective"]) < 1e-6 * df["objective"].iloc[0]


def test_goodput_by_size_fat_tree_against_rail_only(llama) -> None:
    df = goodput_by_size(llama, [2048, 4096]).set_index(["family", "n_npus"])
    assert (df["status"] == "optimal").all()
    # 2,048 GPUs: both a 2-tier Clos of the same switches; 4,096: the fat-tree needs a
    # third tier, rail-only's rails of 512 do not. A leaf or NIC cable stops both alike,
    # so the stopping failures (and goodput) are equal; rail-only has fewer parts that
    # only slow the job.
    for col in ("goodput", "job_mttf_h", "interruptions_per_day"):
        assert_allclose(df.loc[("fat_tree", 4096), col], df.loc[("rail_only", 4096), col],
                        rtol=1e-12)
    assert_allclose(df.loc[("fat_tree", 2048), "network_parts"],
                    df.loc[("rail_only", 2048), "network_parts"])
    assert df.loc[("rail_only", 4096), "degradations_per_day"] < \
        df.loc[("fat_tree", 4096), "degradations_per_day"]
    # half the GPUs, half the failures: the interruption rate scales with the cluster
    assert_allclose(df.loc[("fat_tree", 4096), "interruptions_per_day"] / 2,
                    df.loc[("fat_tree", 2048), "interruptions_per_day"], rtol=0.01)
    assert df.loc[("fat_tree", 2048), "goodput"] > df.loc[("fat_tree", 4096), "goodput"]


def test_goodput_by_size_refuses_what_it_cannot_scale() -> None:
    with pytest.raises(InputError, match="reliability section"):
        goodput_by_size(lo.load_scenario("deepseek_v3_rail_only"), [4096])
    s = lo.apply_overrides("gpt3_175b_4d", {"reliability": {
        "detection_s": 60, "restart_s": 300, "checkpoint_bytes": 2.45e12, "gpus_per_host": 4}})
    with pytest.raises(InputError, match="fat_tree or rail_only builder"):
        goodput_by_size(s, [4096])

"""The README's "Python API" example: GPT-3 175B on a 2-D fabric with compression and DiLoCo,
built with keyword arguments (no scenario file), solved, and swept over the tensor-parallel
degree."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

import libra_opt as lo
from libra_opt.scenario.spec import (
    CompressionSpec,
    ConstraintsSpec,
    DiLoCoSpec,
    DimSpec,
    FabricSpec,
    WorkloadSpec,
)


def gpt3_spec():
    """512 H100s: four sites of 128 (one switched cluster each) joined by a datacenter
    interconnect; DiLoCo across the sites, data-parallel gradients in FP8."""
    return lo.ScenarioSpec(
        name="gpt3_2d",
        fabric=FabricSpec(dims=(DimSpec("cluster", "switch", 128, "ScaleOut"),
                                DimSpec("site", "switch", 4, "DCI", latency_s=1e-3))),
        cost_model={"ScaleOut": {"link": 8.0, "switch": 18.0, "nic": 30.0},
                    "DCI": {"link": 400.0, "switch": 100.0, "nic": 100.0}},
        workloads=(WorkloadSpec(
            "gpt3", model="gpt3_175b", device="h100_sxm",
            parallelism={"tp": 8, "pp": 16, "dp": 4, "zero": 1, "global_batch_size": 1536,
                         "recompute": "full"},
            mapping={"dp": ["site"]}),),
        constraints=ConstraintsSpec(budget_usd=4e7),
        compression=CompressionSpec(groups={"dp": "fp8"}),
        diloco=DiLoCoSpec(site_dim="site", params_per_npu=175e9 / 128, sync_every_steps=100,
                          delta_bits=4),
    )


def test_build_solve_and_sweep_tp_without_a_file():
    spec = gpt3_spec()
    sol = lo.solve(lo.compile(spec))
    assert sol.scenario.spec.workloads[0].parallelism == spec.workloads[0].parallelism
    # the budget binds: the allocation spends it (the design is cost-limited)
    assert_allclose(sol.network_cost_usd, 4e7, rtol=1e-6)
    df = lo.sweep(spec, {"workloads.gpt3.parallelism.tp": [2, 4, 8],
                         "workloads.gpt3.parallelism.cp": [4, 2, 1]}, zip=True, progress=False)
    assert list(df["status"]) == ["optimal"] * 3
    # the tp = 8 point is the spec solved above
    assert_allclose(df["objective"].iloc[2], sol.objective_value, rtol=1e-6)
    # each point equals a fresh compile of the edited spec
    for i, (tp, cp) in enumerate([(2, 4), (4, 2)]):
        edited = spec.replace("workloads.gpt3.parallelism.tp", tp).replace(
            "workloads.gpt3.parallelism.cp", cp)
        want = lo.solve(lo.compile(edited), with_baselines=False)
        assert_allclose(df["objective"].iloc[i], want.objective_value, rtol=1e-6)
    # the spec is a file away: YAML and back
    import yaml

    from libra_opt.io.scenario_file import resolve_spec, spec_from_dict

    assert spec_from_dict(yaml.safe_load(spec.to_yaml()), "<yaml>", ".") == resolve_spec(spec)
    assert np.isfinite(df["weighted_step_time_s"]).all()


def test_compression_and_diloco_change_the_answer():
    """FP8 gradients halve the data-parallel bytes of BF16 and DiLoCo syncs them every
    100 steps: without either the same budget buys a slower step."""
    spec = gpt3_spec()
    plain = spec.edit({"compression": None, "diloco": None})
    fast = lo.solve(lo.compile(spec), with_baselines=False)
    slow = lo.solve(lo.compile(plain), with_baselines=False)
    assert fast.objective_value < slow.objective_value
    with pytest.raises(lo.InputError, match="diloco.site_dim"):
        spec.replace("diloco.site_dim", 3)

"""ZeRO-3 as DeepSpeed ZeRO-3 / FSDP run it: gathers and reduce-scatters behind compute."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from libra_opt.cost.prices import CostModel
from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.generators.in_network_optimizer import zero3_prefetched
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def _scen(wl: Workload, loop: str) -> Scenario:
    fab = Fabric((Dim("hb", "switch", 8, "T"), Dim("so", "switch", 8, "T")))
    cm = CostModel.from_tables({"T": {"link": 1.0, "switch": 1.0, "nic": 1.0}})
    return Scenario(fab, cm, (wl,), training_loop=loop)  # type: ignore[arg-type]


def test_prefetched_step_time_by_hand():
    """One layer, 4 repeats, at hb = 100 GB/s and so = 10 GB/s per NPU.

    ZeRO-3 gather of a 0.1 GB shard over dp = 8 (the ``so`` dimension): 7 x 0.1 GB = 0.7 GB,
    70 ms; gradient reduce-scatter of 0.8 GB: 0.8 x 7/8 = 0.7 GB, 70 ms; tensor-parallel
    all-reduce of 0.8 GB over tp = 8 (``hb``): 2 x 0.8 x 7/8 = 1.4 GB, 14 ms.
    Phases (compute, ZeRO-3, TP): forward (50 ms, gather, all-reduce), input gradient
    (100 ms, gather), weight gradient (20 ms, reduce-scatter).

    No overlap: 4 x (50 + 70 + 14 + 100 + 70 + 20 + 70) ms = 4 x 394 ms = 1.576 s.
    Prefetched: 4 x (max(50, 70) + 14 + max(100, 70) + max(20, 70)) ms = 4 x 254 ms = 1.016 s.
    """
    ag = Collective("all_gather", 0.1e9, "dp")
    rs = Collective("reduce_scatter", 0.8e9, "dp")
    ar = Collective("all_reduce", 0.8e9, "tp")
    wl = Workload("w", (Layer("l", Phase(0.05, (ag, ar)), Phase(0.1, (ag,)), Phase(0.02, (rs,)),
                              count=4),), {"dp": (1, 8), "tp": (8, 1)})
    bw = [100.0, 10.0]
    plain = evaluate(_scen(wl, "no_overlap"), bw).weighted_step_time_s
    pre = evaluate(_scen(zero3_prefetched(wl), "overlap"), bw).weighted_step_time_s
    np.testing.assert_allclose(plain, 1.576, rtol=1e-9)
    np.testing.assert_allclose(pre, 1.016, rtol=1e-9)
    with pytest.raises(InputError, match="already in overlap form"):
        zero3_prefetched(zero3_prefetched(wl))
    with pytest.raises(InputError, match="no ZeRO-3 collective"):
        zero3_prefetched(Workload("t", (Layer("l", Phase(1.0, (ar,))),), {"tp": (8, 1)}))


def test_luwu_baseline_same_bytes_less_time():
    """The benchmark's GPT-3 175B ZeRO-3: prefetching moves the same bytes per step and is
    never slower; the headline baseline is the prefetched one."""
    luwu = pytest.importorskip("luwu")
    from libra_opt.io.scenario_file import scenario_from_dict

    par = {**luwu.BASE, "zero": 3}
    scen = scenario_from_dict(luwu._scenario(par), "<luwu zero3>")
    pre = dataclasses.replace(scen, workloads=(zero3_prefetched(scen.workloads[0]),),
                              training_loop="overlap")
    n = scen.fabric.n_dims
    np.testing.assert_allclose(luwu.traffic_per_step_bytes(pre.workloads[0], n),
                               luwu.traffic_per_step_bytes(scen.workloads[0], n), rtol=1e-12)
    for bw in ([450.0, 12.5], [450.0, 100.0]):
        t0 = evaluate(scen, bw).weighted_step_time_s
        t1 = evaluate(pre, bw).weighted_step_time_s
        assert t1 < t0
    assert "zero3_prefetch" in luwu.MODES

"""benchmarks/libra_case_studies.py: the telescoping all-reduce result, derived by hand."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
cs = pytest.importorskip("libra_case_studies")

from libra_opt.optimize.problem import solve  # noqa: E402


def test_pure_all_reduce_optimum_is_the_same_on_3d_and_4d():
    """ResNet-50, data parallel over all N = 4,096 NPUs: t = compute + 2 (1 - 1/N) sum M / B."""
    n, total = 4096, cs.TOTAL_GBPS * 1e9
    times = {}
    for fk in cs.FABRICS:
        wl = cs.workload("resnet50", fk)
        compute = sum(ph.compute_s for layer in wl.layers for _, ph in layer.phases())
        m = sum(c.size_bytes for layer in wl.layers for _, ph in layer.phases()
                for c in ph.collectives)
        assert {c.kind for layer in wl.layers for _, ph in layer.phases()
                for c in ph.collectives} == {"all_reduce"}
        times[fk] = solve(cs.scenario(wl, fk, "perf"), with_baselines=False)
        expected = compute + 2 * (1 - 1 / n) * m / total
        assert times[fk].evaluation.weighted_step_time_s == pytest.approx(expected, rel=1e-6)
    # B_d proportional to (n_d - 1) / P_d on each fabric
    for fk, sol in times.items():
        sizes = np.array(cs.FABRICS[fk].sizes, dtype=float)
        share = (sizes - 1) / np.cumprod(sizes)
        np.testing.assert_allclose(sol.bw_gbps, total / 1e9 * share / share.sum(), rtol=1e-4)


def test_tables_and_default_example(tmp_path):
    df = cs.case_rows()
    assert len(df) == 5 * 2 * 2
    perf = df[df.objective == "perf"]
    assert (perf.speedup >= 1 - 1e-9).all()   # the optimum never loses to the equal split
    ppc = df[df.objective == "perf_per_cost"]
    assert (ppc.perf_per_cost_gain >= 1 - 1e-9).all()
    d = cs.default_example().iloc[0]
    assert d.bw_chiplet_gbps == pytest.approx(500, rel=1e-6)
    assert d.bw_node_gbps + d.bw_pod_gbps == pytest.approx(200, rel=1e-6)
    assert d.bw_chiplet_gbps + d.bw_package_gbps + d.bw_node_gbps + d.bw_pod_gbps == \
        pytest.approx(1000, rel=1e-6)

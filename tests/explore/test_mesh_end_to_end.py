"""A chiplet mesh end to end: solve, a sweep over the mesh's size, the co-design search and
the failure model."""

from __future__ import annotations

import pandas as pd
import pytest
from numpy.testing import assert_allclose

import libra_opt as lo
from libra_opt.cli.main import main
from libra_opt.cost.failures import failure_modes
from libra_opt.fabric.builders import multi_dim
from libra_opt.fabric.inventory import dimension_inventory
from libra_opt.optimize.problem import solve
from libra_opt.scenario.failures import failure_report
from tests.cli.test_search import MODEL

SCENARIO = """name: chiplet_mesh
fabric:
  dims:
    - {name: chip, topology: mesh, size: 4, tier: InterChiplet}
    - {name: pod, topology: switch, size: 16, tier: InterPod}
cost_model:
  InterChiplet: {link: 2.0}
  InterPod: {link: 7.8, switch: 18.0, nic: 31.6}
workloads: [{name: tiny, model: tiny.yaml, device: h100_sxm,
             parallelism: {tp: 4, dp: 16, global_batch_size: 64, recompute: full, zero: 1}}]
constraints: {bounds: {chip: [50, 2000], pod: [12.5, 400]}, budget_usd: 1.0e6}
objective: perf
"""


@pytest.fixture()
def scenario(tmp_path):
    tmp_path.joinpath("tiny.yaml").write_text(MODEL)
    tmp_path.joinpath("mesh.yaml").write_text(SCENARIO)
    return tmp_path / "mesh.yaml"


def test_solve_prices_and_times_the_line(scenario, tmp_path):
    scen = lo.load_scenario(scenario)
    assert [str(d.topology) for d in scen.fabric.dims] == ["mesh", "switch"]
    sol = solve(scen)
    assert sol.solver.status == "optimal"  # re-checked by the numpy evaluator on the way
    # 16 lines of 3 cables, each two links of B/2 at $2: $96 per GB/s of the chip's B
    assert_allclose(sol.evaluation.cost.usd_by_dim_component[0].sum(), 96 * sol.bw_gbps[0],
                    rtol=1e-9)
    # the same design on rings: the chip dimension (TP's all-reduces, reduce-scatters and
    # all-gathers) carries half the bytes and takes half the time; the pod is unchanged
    ring_path = tmp_path / "ring.yaml"
    ring_path.write_text(SCENARIO.replace("topology: mesh", "topology: ring"))
    ring = lo.load_scenario(ring_path)
    (mesh_w,), (ring_w,) = (lo.evaluate(s, sol.bw_gbps).workloads for s in (scen, ring))
    assert_allclose(mesh_w.traffic_by_dim_bytes, ring_w.traffic_by_dim_bytes * [2, 1],
                    rtol=1e-12)
    assert_allclose(mesh_w.comm_by_group_s["tp"], 2 * ring_w.comm_by_group_s["tp"],
                    rtol=1e-12)
    assert_allclose(mesh_w.comm_by_group_s["dp"], ring_w.comm_by_group_s["dp"], rtol=1e-12)


def test_sweep_over_the_mesh_size(scenario):
    df = lo.sweep(scenario, {"fabric.dims.chip.size": [2, 4, 8], "fabric.dims.pod.size":
                             [32, 16, 8]}, zip=True, progress=False)
    assert df["status"].tolist() == ["optimal"] * 3
    assert df["fabric.dims.chip.size"].tolist() == [2, 4, 8]


def test_search_takes_mesh_dimensions(scenario, tmp_path, capsys):
    space = lo.SearchSpace(dim_sizes=((4, 16), (8, 8)), dim_topologies=("mesh", "switch"),
                           micro_batch_sizes=(1,), recompute=("full",), zero=(1,),
                           interleave=(1,), tp=(4,))
    res = lo.search(lo.load_scenario(scenario), top=3, space=space, progress=False)
    assert {"4x16 M,SW", "8x8 M,M", "8x8 SW,M"} <= set(res.table["fabric"])
    assert res.stats["solved"] > 0
    out = tmp_path / "out"
    assert main(["search", str(scenario), "--dim-sizes", "8x8", "--dim-topologies",
                 "mesh,torus,switch", "--space", "micro_batch_sizes=1", "--space",
                 "recompute=full", "--space", "zero=1", "--space", "tp=4", "--top", "2",
                 "--out", str(out), "--no-progress"]) == 0
    assert {"8x8 M,M", "8x8 R,SW", "8x8 M,SW"} <= set(pd.read_csv(out / "results.csv")["fabric"])
    capsys.readouterr()


def test_a_mesh_cable_failure_stops_the_job():
    # 4 lines of 4: 12 cables; each splits its line in two (the job stops), where a ring's
    # cable only halves its ring's bandwidth
    mesh = multi_dim((4, 4), ("mesh", "switch"))
    modes = {m.where: m for m in failure_modes(mesh, gpus_per_host=1)}
    m = modes["chiplet mesh cable"]
    assert (m.kind, m.count, m.stops, m.dim) == ("link", 12, True, None)
    assert m.count == dimension_inventory(mesh, 0).cables
    ring = {m.where: m for m in failure_modes(multi_dim((4, 4), ("ring", "switch")),
                                              gpus_per_host=1)}["chiplet ring cable"]
    assert (ring.count, ring.stops, ring.bw_factor) == (16, False, 0.5)
    stops = [sum(x.failures_per_h for x in failure_modes(f, gpus_per_host=1) if x.stops)
             for f in (mesh, multi_dim((4, 4), ("ring", "switch")))]
    assert_allclose(stops[0] - stops[1], 12 * m.rate_per_h, rtol=1e-12)


def test_goodput_of_a_mesh_counts_its_cables(scenario, tmp_path):
    text = SCENARIO + "reliability: {detection_s: 120, restart_s: 480, gpus_per_host: 1}\n"
    reports = []
    for topology in ("mesh", "ring"):
        p = tmp_path / f"{topology}.yaml"
        p.write_text(text.replace("topology: mesh", f"topology: {topology}"))
        s = lo.load_scenario(p)
        reports.append(failure_report(s, lo.evaluate(s, [500.0, 100.0])))
    mesh, ring = reports
    # the line's 48 cables stop the job, the ring's 64 only slow it
    assert mesh.job_mttf_h < ring.job_mttf_h and mesh.goodput < ring.goodput

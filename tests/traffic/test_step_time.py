"""Step time and per-group traffic under the scenario's traffic model."""

from numpy.testing import assert_allclose

from libra_opt.fabric.builders import rail_only, rail_optimized_fat_tree
from libra_opt.traffic.step_time import step_time, traffic_by_group_bytes
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload


def _a2a(count=3):
    a2a = Collective("all_to_all", 64.0, "ep")
    return Workload("moe", (Layer("l", Phase(0.0, (a2a,)), count=count),), {"ep": (8, 4)})


def test_traffic_by_group_follows_the_traffic_model():
    """All-to-all of 64 B over (8, 4), 3 times a step. Hierarchical: 64*7/8 = 56 B on the HB
    dimension and 64*3/4 = 48 B on scale-out. A fat-tree delivers directly: the HB dimension
    carries only the bytes for the 7 peers of the same domain and rail column, 64*7/32 = 14 B.
    A Rail-only fabric forwards cross-rail bytes through the HB domain: 56 B again."""
    w = _a2a()
    ft, ro = rail_optimized_fat_tree(32, 8, 8), rail_only(32, 8, 8)
    n, b = traffic_by_group_bytes(w, ft)["ep"]
    assert n == 3
    assert_allclose(b, [3 * 56.0, 3 * 48.0])
    assert_allclose(traffic_by_group_bytes(w, ft, "native")["ep"][1], [3 * 14.0, 3 * 48.0])
    assert_allclose(traffic_by_group_bytes(w, ro, "native")["ep"][1], [3 * 56.0, 3 * 48.0])


def test_step_time_native_by_hand():
    """Sequential, 50 GB/s on both dims, 64 GB all-to-all: fat-tree (14 + 48)/50 = 1.24 s,
    hierarchical (56 + 48)/50 = 2.08 s."""
    w = Workload("moe", (Layer("l", Phase(0.0, (Collective("all_to_all", 64e9, "ep"),))),),
                 {"ep": (8, 4)})
    ft = rail_optimized_fat_tree(32, 8, 8)
    assert_allclose(step_time(w, ft, [50, 50], "sequential", traffic_model="native").step_time_s,
                    1.24)
    assert_allclose(step_time(w, ft, [50, 50], "sequential").step_time_s, 2.08)

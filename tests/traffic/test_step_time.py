"""Step time and per-group traffic under the scenario's traffic model."""

from numpy.testing import assert_allclose

from libra_opt.fabric.builders import rail_only, rail_optimized_fat_tree
from libra_opt.traffic.step_time import step_time, traffic_by_group_bytes
from libra_opt.traffic.timing import TimingModel
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

NATIVE = TimingModel(traffic_model="native")


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
    assert_allclose(traffic_by_group_bytes(w, ft, NATIVE)["ep"][1], [3 * 14.0, 3 * 48.0])
    assert_allclose(traffic_by_group_bytes(w, ro, NATIVE)["ep"][1], [3 * 56.0, 3 * 48.0])


def test_step_time_native_by_hand():
    """Sequential, 50 GB/s on both dims, 64 GB all-to-all: fat-tree (14 + 48)/50 = 1.24 s,
    hierarchical (56 + 48)/50 = 2.08 s."""
    w = Workload("moe", (Layer("l", Phase(0.0, (Collective("all_to_all", 64e9, "ep"),))),),
                 {"ep": (8, 4)})
    ft = rail_optimized_fat_tree(32, 8, 8)
    assert_allclose(step_time(w, ft, [50, 50], TimingModel("sequential", traffic_model="native")).step_time_s,
                    1.24)
    assert_allclose(step_time(w, ft, [50, 50], TimingModel("sequential")).step_time_s, 2.08)


def test_hidden_window_by_hand():
    """A workload with a hidden window W (no compute of its own) takes max(T - W, 0):
    an all-reduce of 4 GB over a ring of 4 at 100 GB/s is 2 x 4 x 3/4 / 100 = 60 ms,
    0.1 ms latency per step x 2 x 3 steps on top; W = 50 ms leaves 10.6 ms, W = 1 s none."""
    import pytest

    from libra_opt.errors import InputError
    from libra_opt.fabric.dims import Dim, Fabric

    f = Fabric((Dim("a", "ring", 4, "T", 1e-4),))
    ar = Collective("all_reduce", 4e9, "g")
    for loop in ("no_overlap", "overlap"):
        for window, want in ((0.0, 0.0606), (0.05, 0.0106), (1.0, 0.0)):
            w = Workload("w", (Layer("l", weight_grad=Phase(0.0, (ar,))),), {"g": (4,)},
                         hidden_window_s=window)
            t = step_time(w, f, [100.0], TimingModel(training_loop=loop))
            assert_allclose(t.step_time_s, want, rtol=1e-12, atol=1e-15)
            assert_allclose(t.exposed_comm_s, want, rtol=1e-12, atol=1e-15)
            assert_allclose(t.comm_s, 0.0606, rtol=1e-12)  # hidden or not
    with pytest.raises(InputError, match="no compute") as err:
        Workload("w", (Layer("l", Phase(1e-3, (ar,))),), {"g": (4,)}, hidden_window_s=0.1)
    assert err.value.field == "workload.hidden_window_s"
    for bad in (-1.0, float("nan"), "soon"):
        with pytest.raises(InputError) as err:
            Workload("w", (Layer("l", Phase(0.0, (ar,))),), {"g": (4,)}, hidden_window_s=bad)
        assert err.value.field == "workload.hidden_window_s"

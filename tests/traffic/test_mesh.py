"""A mesh (a line of NPUs, each link B/2 per direction) in every collective model, against
link loads counted link by link on the line and hand derivations."""

from __future__ import annotations

import math

import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.fabric.builders import multi_dim
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.fabric.heterogeneous import DimMembers, check_uneven_sizes
from libra_opt.traffic.astra_sim_model import sim_phase
from libra_opt.traffic.collectives import hierarchical_traffic_bytes
from libra_opt.traffic.in_network import in_network_dims
from libra_opt.traffic.routing import collective_traffic
from libra_opt.traffic.topology_aware import CollectiveSettings, collective_phases, phase_time_terms
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

B = 100.0  # GB/s per NPU: every link of the line carries B/2 = 50 GB/s each way


def line_loads(kind: str, x: float, k: int) -> dict[tuple[int, int], float]:
    """Bytes on every directed link (i, i +- 1) of a line of ``k`` NPUs.

    * reduce-scatter of ``x`` (shards ``x/k``), the chain: shard ``j`` is summed on its way
      to NPU ``j`` from both sides, so link (i, i+1) carries one partial sum of every shard
      ``j > i`` and (i+1, i) one of every shard ``j <= i``;
    * all-gather of a shard ``x``: shard ``j`` travels to every other NPU, crossing each
      link between ``j`` and its destinations once, in the direction away from ``j``;
    * all-to-all of ``x`` (``x/k`` to every peer): each message crosses every link between
      its ends; point-to-point: ``x`` from NPU 0 to NPU 1.
    """
    loads: dict[tuple[int, int], float] = {}

    def cross(a: int, b: int, size: float) -> None:
        step = 1 if b > a else -1
        for i in range(a, b, step):
            loads[(i, i + step)] = loads.get((i, i + step), 0.0) + size

    if kind == "reduce_scatter":
        for j in range(k):
            for i in range(j):            # the partial of shard j leaving i towards j
                loads[(i, i + 1)] = loads.get((i, i + 1), 0.0) + x / k
            for i in range(j + 1, k):
                loads[(i, i - 1)] = loads.get((i, i - 1), 0.0) + x / k
    elif kind == "all_gather":
        for j in range(k):
            cross(j, k - 1, x)
            cross(j, 0, x)
    elif kind == "all_to_all":
        for a in range(k):
            for b in range(k):
                if a != b:
                    cross(a, b, x / k)
    else:
        cross(0, 1, x)
    return loads


def line_time_s(kind: str, x: float, k: int) -> float:
    """The busiest directed link's bytes at B/2 (an all-reduce: reduce-scatter, then the
    all-gather of the reduced shard)."""
    if kind == "all_reduce":
        return line_time_s("reduce_scatter", x, k) + line_time_s("all_gather", x / k, k)
    return max(line_loads(kind, x, k).values()) / (B / 2 * 1e9)


@pytest.mark.parametrize("kind", ["reduce_scatter", "all_gather", "all_reduce", "all_to_all",
                                  "p2p"])
@pytest.mark.parametrize("k", [2, 3, 4, 5, 8])
def test_hierarchical_time_is_the_lines_busiest_link(kind, k):
    x = 8e6
    f = Fabric((Dim("chip", "mesh", k, "T"),))
    traffic, lat = collective_traffic(kind, x, (k,), f)
    assert_allclose(traffic[0] / (B * 1e9), line_time_s(kind, x, k), rtol=1e-12)
    assert lat.tolist() == [0.0]
    # the same collective on a ring of k: LIBRA's bytes over B
    ring = collective_traffic(kind, x, (k,), Fabric((Dim("chip", "ring", k, "T"),)))[0]
    assert_allclose(ring, hierarchical_traffic_bytes(kind, x, (k,)), rtol=0)


def test_hand_derivations_on_a_line_of_four():
    # x = 8 MB, k = 4: reduce-scatter 2 x 6 MB (an end NPU sends 3 shards of 2 MB on one
    # link); all-reduce twice that; all-to-all: the middle cable carries 2 x 2 messages of
    # 2 MB each way, 8 MB at B/2 = 16 MB over B; point-to-point 2 x 8 MB.
    f = Fabric((Dim("chip", "mesh", 4, "T"),))
    got = {kind: collective_traffic(kind, 8e6, (4,), f)[0][0]
           for kind in ("reduce_scatter", "all_reduce", "all_to_all", "p2p")}
    assert got == pytest.approx({"reduce_scatter": 12e6, "all_reduce": 24e6,
                                 "all_to_all": 16e6, "p2p": 16e6}, rel=1e-12)
    assert collective_traffic("all_gather", 2e6, (4,), f)[0][0] == pytest.approx(12e6)


def test_a_mesh_in_a_hierarchy_and_under_native_routing():
    # all-reduce of 8 MB over a line of 4 and a switch of 8: the line carries twice LIBRA's
    # 2 x 8 x 3/4 = 12 MB; the switch LIBRA's 2 x 2 x 7/8 = 3.5 MB (the buffer shrunk by 4).
    f = multi_dim((4, 8), ("mesh", "switch"))
    t, _ = collective_traffic("all_reduce", 8e6, (4, 8), f)
    assert_allclose(t, [24e6, 3.5e6], rtol=1e-12)
    # all-to-all under native routing: the fat-tree delivers across pods, the line carries
    # 8 x 3/4 / 8 = 0.75 MB (LIBRA), x 8/3 on the line
    t, _ = collective_traffic("all_to_all", 8e6, (4, 8), f, "native")
    assert_allclose(t, [0.75e6 * 8 / 3, 7e6], rtol=1e-12)


def test_latency_steps_on_a_line():
    # k - 1 neighbour steps, one hop each; twice for all-reduce; one for a pipeline send
    f = Fabric((Dim("chip", "mesh", 5, "T", latency_s=1e-6),))
    steps = {kind: collective_traffic(kind, 1e6, (5,), f)[1][0] / 1e-6
             for kind in ("reduce_scatter", "all_gather", "all_reduce", "all_to_all", "p2p")}
    assert steps == pytest.approx({"reduce_scatter": 4, "all_gather": 4, "all_reduce": 8,
                                   "all_to_all": 4, "p2p": 1})


ALPHA = 1e-6
MESH = Dim("m", "mesh", 6, "T", latency_s=ALPHA)


def phase_s(op, algorithm, k, x):
    c, l_s = phase_time_terms(op, algorithm, MESH, k, x, ALPHA)
    return c / B + l_s


def test_topology_aware_model_on_a_line():
    x, k = 6e6, 6
    n = x / k
    # ring (the chain): 5 steps of a 1 MB message on one 50 GB/s link, one hop each
    assert phase_s("reduce_scatter", "ring", k, x) == pytest.approx(5 * (n / 50e9 + ALPHA))
    assert phase_s("all_reduce", "ring", k, x) == pytest.approx(10 * (n / 50e9 + ALPHA))
    # direct: every peer at once along the line; the middle cable carries 3 x 3 messages
    # each way at 50 GB/s, the farthest peer is 5 hops away
    assert phase_s("all_to_all", "direct", k, x) == pytest.approx(9 * n / 50e9 + 5 * ALPHA)
    assert phase_s("p2p", "ring", k, x) == pytest.approx(x / 50e9 + ALPHA)
    with pytest.raises(InputError, match="needs a fully_connected or switch dimension"):
        phase_s("all_reduce", "halving_doubling", 4, x)
    assert CollectiveSettings().algorithm_of(MESH) == "ring"


@pytest.mark.parametrize("kind", ["reduce_scatter", "all_gather", "all_reduce", "p2p"])
def test_topology_aware_meets_the_hierarchical_model_on_a_whole_line(kind):
    # no latency, the group spans the whole line: the chain's time is the line's bottleneck
    f = Fabric((Dim("m", "mesh", 6, "T"),))
    phases = collective_phases(kind, 6e6, (6,), f, CollectiveSettings(chunks=4))
    assert_allclose(phases.time_s([B]), collective_traffic(kind, 6e6, (6,), f)[0][0] / (B * 1e9),
                    rtol=1e-12)


def test_astra_sim_has_no_mesh():
    f = multi_dim((4, 8), ("mesh", "switch"))
    with pytest.raises(InputError, match="ASTRA-sim's analytical backends have no mesh: "
                                         "dimension 'chiplet' is a mesh") as exc:
        CollectiveSettings(backend="congestion_unaware").check(f)
    assert exc.value.field == "collectives.backend"
    CollectiveSettings().check(f)
    with pytest.raises(InputError, match="no mesh"):
        sim_phase("all_gather", "ring", f.dims[0], 4, 1e6, backend="congestion_aware",
                  link_latency_s=0.0, endpoint_delay_s=0.0, local_memory_gbps=None)


def test_no_in_network_reduction_on_a_line():
    with pytest.raises(InputError, match="'chiplet' is a mesh: in-network reduction needs a "
                                         "switch"):
        in_network_dims(["chiplet"], multi_dim((4, 8), ("mesh", "switch")))


def test_uneven_blocks_of_a_line_refuse_all_to_all():
    # blocks of 4 and 2 NPUs: a reduce-scatter's line bytes scale as (k-1)/k (x 2 in both),
    # an all-to-all's do not (x 8/3 on 4, x 2 on 2)
    dim = Dim("m", "mesh", 4, "T", members=DimMembers((1.0, 1.0), (0.5, 0.5), size=(4, 2)))
    f = Fabric((dim,))

    def workload(kind):
        return Workload("w", (Layer("l", Phase(0.0, (Collective(kind, 1e6, "g"),))),),
                        {"g": (4,)})

    check_uneven_sizes(f, [workload("reduce_scatter")])
    with pytest.raises(InputError, match="on a mesh its bytes do not scale"):
        check_uneven_sizes(f, [workload("all_to_all")])
    assert math.isclose(dim.topology.traffic_factor("all_to_all", 4), 8 / 3)

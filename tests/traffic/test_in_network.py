"""In-network reduction: per-collective traffic, steps and topology-aware phase times, each
derived by hand in the test (SHARP: every NPU sends its buffer once into the switch and
receives the reduced result once)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.traffic.in_network import (
    in_network_dims,
    in_network_latency_steps,
    in_network_traffic_bytes,
)
from libra_opt.traffic.routing import collective_traffic
from libra_opt.traffic.topology_aware import CollectiveSettings, collective_phases, phase_time_terms

M = 64e6


def test_all_reduce_on_one_switch_sends_m_instead_of_2m_k_minus_1_over_k():
    # ring/direct: 2 M 7/8 = 112 MB; in the network: M = 64 MB
    assert in_network_traffic_bytes("all_reduce", M, (8,), ()).tolist() == [112e6]
    assert in_network_traffic_bytes("all_reduce", M, (8,), {0}).tolist() == [64e6]


def test_reduce_scatter_and_all_gather():
    # RS: send M, receive M/8 -> port busy M (ring: 7/8 M = 56 MB)
    assert in_network_traffic_bytes("reduce_scatter", M, (8,), {0}).tolist() == [64e6]
    # AG of an 8 MB shard: send 8 MB once (multicast), receive 7 x 8 MB = 56 MB
    assert in_network_traffic_bytes("all_gather", 8e6, (8,), {0}).tolist() == [56e6]


def test_hierarchical_all_reduce_with_outer_and_inner_in_network_dims():
    # (4 ring, 8 switch): ring RS 3/4 M twice = 96 MB; shard 16 MB; outer AR in-network 16 MB
    t = in_network_traffic_bytes("all_reduce", M, (4, 8), {1})
    assert_allclose(t, [96e6, 16e6], rtol=1e-15)
    # (8 switch, 4 ring), inner in-network: RS M=64 + AG 7/8 x 64 = 56 -> 120 MB (ring: 112);
    # the outer ring all-reduces the 8 MB shard: 2 x 8 x 3/4 = 12 MB
    t = in_network_traffic_bytes("all_reduce", M, (8, 4), {0})
    assert_allclose(t, [120e6, 12e6], rtol=1e-15)


@pytest.mark.parametrize("kind", ["all_to_all", "p2p"])
def test_kinds_without_reduction_are_unchanged(kind):
    base = in_network_traffic_bytes(kind, M, (4, 8), ())
    assert_allclose(in_network_traffic_bytes(kind, M, (4, 8), {1}), base)


def test_latency_steps():
    topo = ("ring", "switch")
    # ring AR over 4: 2 x 3 = 6 steps; switch AR in the network: 1 (direct: 2)
    assert in_network_latency_steps("all_reduce", (4, 8), topo, {1}).tolist() == [6.0, 1.0]
    assert in_network_latency_steps("all_reduce", (4, 8), topo, ()).tolist() == [6.0, 2.0]
    assert in_network_latency_steps("reduce_scatter", (4, 8), topo, {1}).tolist() == [3.0, 1.0]
    # inner in-network dim of an all-reduce: its RS and its AG, one step each
    assert in_network_latency_steps("all_reduce", (8, 4), ("switch", "ring"), {0}).tolist() \
        == [2.0, 6.0]


def test_collective_traffic_latency_with_in_network():
    f = Fabric((Dim("node", "ring", 4, "T", 1e-6), Dim("pod", "switch", 8, "T", 1e-6)))
    t, lat = collective_traffic("all_reduce", M, (4, 8), f, "hierarchical", {1})
    assert_allclose(t, [96e6, 16e6])
    assert_allclose(lat, [6e-6, 1e-6])
    t_n, lat_n = collective_traffic("all_reduce", M, (4, 8), f, "native", {1})
    assert_allclose(t_n, t)
    assert_allclose(lat_n, lat)


def test_only_switch_dimensions_may_reduce_in_the_network():
    f = Fabric((Dim("node", "ring", 4, "T"), Dim("pod", "switch", 8, "T")))
    assert in_network_dims(["pod"], f) == frozenset({1})
    with pytest.raises(InputError, match="needs a switch"):
        in_network_dims(["node"], f)
    with pytest.raises(InputError, match="no dimension named"):
        in_network_dims(["rack"], f)
    with pytest.raises(InputError, match="in_network_reduction"):
        CollectiveSettings(in_network_reduction=("node",)).check(f)


def test_topology_aware_phase_times_by_hand():
    sw = Dim("pod", "switch", 8, "T")
    alpha, e, eff = 1e-6, 2e-7, 0.8
    lat = 2 * alpha + e  # one step NPU -> switch -> NPU
    x = 8e9
    c, k = phase_time_terms("all_reduce", "direct", sw, 8, x, alpha, e, 100.0, eff, True)
    assert_allclose([c, k], [8.0 / eff, lat])  # x / (eta B), no reduction cost on the NPU
    c, k = phase_time_terms("reduce_scatter", "direct", sw, 8, x, alpha, e, 100.0, eff, True)
    assert_allclose([c, k], [8.0 / eff, lat])
    c, k = phase_time_terms("all_gather", "direct", sw, 8, x, alpha, e, None, eff, True)
    assert_allclose([c, k], [7.0 / eff, lat])  # (k-1) n, n = x / 8
    # without it: direct all-reduce 2 x 7 n and two latencies
    c, k = phase_time_terms("all_reduce", "direct", sw, 8, x, alpha, e, None, eff, False)
    assert_allclose([c, k], [14.0 / eff, 2 * lat])


def test_topology_aware_collective_matches_hierarchical_traffic():
    f = Fabric((Dim("node", "ring", 4, "T"), Dim("pod", "switch", 8, "T")))
    s = CollectiveSettings(in_network_reduction=("pod",))
    c = collective_phases("all_reduce", M, (4, 8), f, s)
    busy = np.bincount(np.array(c.dims), weights=np.array(c.coef_gb), minlength=2)
    # one chunk, no latency, line rate: GB per dimension = the traffic model's bytes / 1e9
    assert_allclose(busy * 1e9, in_network_traffic_bytes("all_reduce", M, (4, 8), {1}))

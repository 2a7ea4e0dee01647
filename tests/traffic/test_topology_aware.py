"""The topology-aware collective model against times derived by hand.

Common setting unless stated: a ring of 8 at B = 100 GB/s (two links of 50), a clique of 4
at B = 60 GB/s (three links of 20), a switch of 8 at B = 50 GB/s (one port); link latency
alpha = 1 us per hop (ring and clique 1 hop, switch 2), endpoint delay e = 0.2 us, local
memory M = 400 GB/s, so a step's latency is 1.2 us (ring, clique) or 2.2 us (switch) and a
reduction of n bytes costs 3 n / 400e9 s.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.traffic.links import LINE_RATE_PRESETS, bw_from_link_gbps
from libra_opt.traffic.step_time import step_time
from libra_opt.traffic.timing import TimingModel
from libra_opt.traffic.topology_aware import (
    ChunkedCollective,
    CollectiveSettings,
    collective_phases,
    phase_time_terms,
)
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

US = 1e-6
ALPHA, E, MEM = 1e-6, 0.2e-6, 400.0
RING = Dim("r", "ring", 8, "T", latency_s=ALPHA)
CLIQUE = Dim("c", "fully_connected", 4, "T", latency_s=ALPHA)
SWITCH = Dim("s", "switch", 8, "T", latency_s=ALPHA)
BW = {"r": 100.0, "c": 60.0, "s": 50.0}


def phase_s(op, algo, dim, k, buf, mem=MEM, eff=1.0):
    c, l_s = phase_time_terms(op, algo, dim, k, buf, ALPHA, E, mem, eff)
    return c / BW[dim.name] + l_s


CASES = [
    # op, algorithm, dim, k, buffer bytes, expected us, derivation (n = buffer / k)
    # ring on a ring: tau = n / B = 1e6 / 100e9 = 10 us, rho = 3e6 / 400e9 = 7.5 us
    ("reduce_scatter", "ring", RING, 8, 8e6, 7 * (10 + 1.2 + 7.5)),
    ("all_gather", "ring", RING, 8, 8e6, 7 * (10 + 1.2)),
    ("all_reduce", "ring", RING, 8, 8e6, 7 * (20 + 2.4 + 7.5)),
    ("all_to_all", "ring", RING, 8, 8e6, 28 * (10 + 1.2)),  # k(k-1)/2 = 28 steps
    # direct on a clique of 4: each of 3 messages of 1e6 on its own 20 GB/s link: 50 us
    ("reduce_scatter", "direct", CLIQUE, 4, 4e6, 50 + 1.2 + 3 * 7.5),
    ("all_gather", "direct", CLIQUE, 4, 4e6, 50 + 1.2),
    ("all_reduce", "direct", CLIQUE, 4, 4e6, 100 + 2.4 + 3 * 7.5),
    ("all_to_all", "direct", CLIQUE, 4, 4e6, 50 + 1.2),
    # ring on a clique: two of the three links, tau = 1e6 / 40e9 = 25 us
    ("reduce_scatter", "ring", CLIQUE, 4, 4e6, 3 * (25 + 1.2 + 7.5)),
    ("all_to_all", "ring", CLIQUE, 4, 4e6, 6 * (25 + 1.2)),
    # halving-doubling on a clique: one 20 GB/s link per step, 3e6 bytes in all, 2 steps
    ("reduce_scatter", "halving_doubling", CLIQUE, 4, 4e6, 150 + 2 * 1.2 + 3 * 7.5),
    ("all_gather", "halving_doubling", CLIQUE, 4, 4e6, 150 + 2 * 1.2),
    # switch of 8: 7 messages of 1e6 through one 50 GB/s port: 140 us; 2 hops
    ("reduce_scatter", "direct", SWITCH, 8, 8e6, 140 + 2.2 + 7 * 7.5),
    ("all_gather", "direct", SWITCH, 8, 8e6, 140 + 2.2),
    ("all_reduce", "direct", SWITCH, 8, 8e6, 280 + 4.4 + 7 * 7.5),
    ("all_to_all", "direct", SWITCH, 8, 8e6, 140 + 2.2),
    ("reduce_scatter", "ring", SWITCH, 8, 8e6, 7 * (20 + 2.2 + 7.5)),
    ("all_to_all", "ring", SWITCH, 8, 8e6, 28 * (20 + 2.2)),
    ("reduce_scatter", "halving_doubling", SWITCH, 8, 8e6, 140 + 3 * 2.2 + 7 * 7.5),
    ("all_reduce", "halving_doubling", SWITCH, 8, 8e6, 280 + 6 * 2.2 + 7 * 7.5),
    ("all_to_all", "halving_doubling", SWITCH, 8, 8e6, 140 + 2.2),  # runs direct
    # point-to-point of 1e6: one link (ring 50, clique 20, switch 50 GB/s)
    ("p2p", "ring", RING, 2, 1e6, 20 + 1.2),
    ("p2p", "direct", CLIQUE, 2, 1e6, 50 + 1.2),
    ("p2p", "direct", SWITCH, 2, 1e6, 20 + 2.2),
]


@pytest.mark.parametrize(("op", "algo", "dim", "k", "buf", "expected_us"), CASES)
def test_phase_time_by_hand(op, algo, dim, k, buf, expected_us):
    assert_allclose(phase_s(op, algo, dim, k, buf) / US, expected_us, rtol=1e-12)


def test_efficiency_scales_serialization_only():
    # ring reduce-scatter at half the line rate: tau doubles to 20 us
    assert_allclose(phase_s("reduce_scatter", "ring", RING, 8, 8e6, eff=0.5) / US,
                    7 * (20 + 1.2 + 7.5), rtol=1e-12)


def test_no_memory_model_makes_reductions_free():
    assert_allclose(phase_s("all_reduce", "ring", RING, 8, 8e6, mem=None) / US,
                    7 * (20 + 2.4), rtol=1e-12)


def test_halving_doubling_needs_power_of_two():
    with pytest.raises(InputError, match="power-of-two"):
        phase_time_terms("all_reduce", "halving_doubling", SWITCH, 6, 6e6, ALPHA)


def test_direct_on_a_ring_by_hand():
    """Every peer at once, each the shorter way round the ring of 8: sum_j min(j, 8-j) =
    1+2+3+4+3+2+1 = 16 link-hops of 1 MB per NPU over its two 50 GB/s links: 16 MB / 100
    GB/s = 160 us; the farthest peer is 4 hops: 4 x 1 us + 0.2 us."""
    assert_allclose(phase_s("all_gather", "direct", RING, 8, 8e6) / US, 160 + 4.2,
                    rtol=1e-12)
    assert_allclose(phase_s("reduce_scatter", "direct", RING, 8, 8e6) / US,
                    160 + 4.2 + 7 * 7.5, rtol=1e-12)
    CollectiveSettings(algorithm={"r": "direct"}).check(Fabric((RING,)))


def test_halving_doubling_on_a_ring_is_rejected():
    with pytest.raises(InputError, match="fully_connected or switch"):
        phase_time_terms("all_reduce", "halving_doubling", RING, 8, 8e6, ALPHA)
    f = Fabric((RING,))
    with pytest.raises(InputError) as exc:
        CollectiveSettings(algorithm={"r": "halving_doubling"}).check(f)
    assert exc.value.field == "collectives.algorithm.r"


def message_time_s(size_bytes, dim, bw_gbps, hops):
    """ASTRA-sim's congestion-unaware message: ``size x links_per_npu / (1e9 B_d) + hops
    x alpha`` (one link's serialization plus the link latencies)."""
    links = {"ring": 2, "fully_connected": dim.size - 1, "switch": 1}[dim.topology]
    return size_bytes * links / (1e9 * bw_gbps) + hops * dim.latency_s


@pytest.mark.parametrize(("topology", "hops", "expected_ns"),
                         [("ring", 3, 21031.25), ("fully_connected", 1, 20031.25),
                          ("switch", 2, 20531.25)])
def test_astra_sim_point_to_point_reference(topology, hops, expected_ns):
    """ASTRA-sim's analytical-backend reference: 1 MiB between two NPUs of a 16-NPU
    dimension at 50 GB/s per link, GB = 2^30 B, 500 ns links: 2^20 / (50 x 2^30) s =
    19,531.25 ns of serialization + hops x 500 ns. Our B_d is per NPU: the link bandwidth
    times the links per NPU (2, 15, 1)."""
    dim = Dim("d", topology, 16, "T", latency_s=500e-9)
    bw = bw_from_link_gbps(dim, 50 * 2**30 / 1e9)
    assert dim.topology.links_per_npu(16) == {"ring": 2, "fully_connected": 15, "switch": 1}[topology]
    assert_allclose(message_time_s(2**20, dim, bw, hops=hops) * 1e9, expected_ns, rtol=1e-12)


FABRIC_2D = Fabric((Dim("r", "ring", 8, "T"), Dim("s", "switch", 8, "T")))
BW_2D = np.array([100.0, 50.0])


def test_hierarchical_all_reduce_chunked_by_hand():
    """64 MB all-reduce over 8 x 8 in 4 chunks (16 MB), no latency: ring RS 7 x 2 MB /
    100 GB/s = 140 us; direct AR on the switch of the 2 MB shard, 2 x 7 x 0.25 MB / 50 GB/s =
    70 us; ring AG 140 us. Sum 350 us; the ring is busy 280 us per chunk, the switch 70:
    T = 350 + 3 x 280 = 1190 us (LIBRA's pipelined max: 1120 us)."""
    s = CollectiveSettings(chunks=4)
    c = collective_phases("all_reduce", 64e6, (8, 8), FABRIC_2D, s)
    assert c.dims == (0, 1, 0)
    assert_allclose(c.phase_times_s(BW_2D) / US, [140, 70, 140], rtol=1e-12)
    assert_allclose(c.time_s(BW_2D) / US, 1190, rtol=1e-12)
    one_at_a_time = CollectiveSettings(chunks=4, active_chunks=1)
    assert_allclose(collective_phases("all_reduce", 64e6, (8, 8), FABRIC_2D, one_at_a_time)
                    .time_s(BW_2D) / US, 4 * 350, rtol=1e-12)


def test_full_all_reduce_by_hand():
    """Full variant, one chunk: ring AR of 64 MB, 2 x 7 x 8 MB / 100 GB/s = 1120 us; direct
    AR of 64 MB on the switch, 2 x 7 x 8 MB / 50 GB/s = 2240 us."""
    s = CollectiveSettings(all_reduce="full")
    c = collective_phases("all_reduce", 64e6, (8, 8), FABRIC_2D, s)
    assert c.dims == (0, 1)
    assert_allclose(c.time_s(BW_2D) / US, 3360, rtol=1e-12)


def test_all_gather_order_and_latency_by_hand():
    """Shard 1 MB over 8 x 8 with 1 us links: the switch first (output 8 MB, 7 x 1 MB / 50
    GB/s = 140 us + 2 hops), then the ring (shard 8 MB, 7 x (80 + 1) us)."""
    f = Fabric((Dim("r", "ring", 8, "T", latency_s=US), Dim("s", "switch", 8, "T",
                                                              latency_s=US)))
    c = collective_phases("all_gather", 1e6, (8, 8), f, CollectiveSettings())
    assert c.dims == (1, 0)
    assert_allclose(c.time_s(BW_2D) / US, 142 + 7 * 81, rtol=1e-12)


def test_all_to_all_keeps_the_buffer_and_p2p_crosses_each_dim():
    c = collective_phases("all_to_all", 8e6, (8, 8), FABRIC_2D, CollectiveSettings())
    # ring: 28 x 1 MB / 100 GB/s = 280 us; switch direct: 7 x 1 MB / 50 GB/s = 140 us
    assert_allclose(c.phase_times_s(BW_2D) / US, [280, 140], rtol=1e-12)
    p = collective_phases("p2p", 1e6, (2, 1), FABRIC_2D, CollectiveSettings())
    assert_allclose(p.time_s(BW_2D) / US, 20, rtol=1e-12)  # one 50 GB/s ring link


def test_zero_bytes_and_unspanned_have_no_phases():
    s = CollectiveSettings(chunks=3)
    assert collective_phases("all_reduce", 0.0, (8, 8), FABRIC_2D, s).time_s(BW_2D) == 0.0
    assert collective_phases("all_reduce", 1e6, (1, 1), FABRIC_2D, s).dims == ()


def test_many_chunks_approach_libra_pipelined():
    """No latency, ring everywhere: S -> infinity gives max_d (traffic_d / B_d)."""
    s = CollectiveSettings(chunks=10**6, algorithm={"s": "ring"})
    c = collective_phases("all_reduce", 64e6, (8, 8), FABRIC_2D, s)
    # ring 2 x 64 MB x 7/8 / 100 GB/s = 1120 us; switch 2 x 8 MB x 7/8 / 50 GB/s = 280 us
    assert_allclose(c.time_s(BW_2D) / US, 1120, rtol=1e-5)


def test_step_time_walk_matches_chunked_collective():
    s = CollectiveSettings(chunks=4, endpoint_delay_s=E, local_memory_gbps=MEM)
    f = Fabric((Dim("r", "ring", 8, "T", latency_s=ALPHA), Dim("s", "switch", 8, "T",
                                                                 latency_s=ALPHA)))
    w = Workload("w", (
        Layer("a", Phase(1e-3, (Collective("all_reduce", 64e6, "dp"),
                                Collective("all_to_all", 8e6, "ep"))), count=5),
        Layer("b", Phase(2e-4, (Collective("p2p", 1e6, "pp"),))),
    ), {"dp": (8, 8), "ep": (8, 8), "pp": (1, 2)})
    t = step_time(w, f, BW_2D, TimingModel("topology_aware", collectives=s))
    expect = 5 * (1e-3 + collective_phases("all_reduce", 64e6, (8, 8), f, s).time_s(BW_2D)
                  + collective_phases("all_to_all", 8e6, (8, 8), f, s).time_s(BW_2D))
    expect += 2e-4 + collective_phases("p2p", 1e6, (1, 2), f, s).time_s(BW_2D)
    assert_allclose(t.step_time_s, expect, rtol=1e-12)
    # p2p over the switch in 4 chunks of 250 kB: one phase, 4 x (5 us + 2.2 us)
    assert_allclose(collective_phases("p2p", 1e6, (1, 2), f, s).time_s(BW_2D) / US,
                    4 * (5 + 2.2), rtol=1e-12)


def test_chunked_collective_time_formula():
    c = ChunkedCollective((0, 1, 0), (1.0, 2.0, 0.5), (0.0, 0.1, 0.0), chunks=3,
                          active_chunks=2)
    t = np.array([0.01, 0.12, 0.005])  # at 100 GB/s
    busy = max(0.015, 0.12)
    cycle = max(busy, t.sum() / 2)
    assert_allclose(c.time_s([100.0, 100.0]), t.sum() + 2 * cycle, rtol=1e-12)


def test_settings_validation():
    with pytest.raises(InputError, match="chunks"):
        CollectiveSettings(chunks=0)
    with pytest.raises(InputError, match="preset"):
        CollectiveSettings(efficiency={"r": "a200_nvlink"})
    with pytest.raises(InputError, match="fraction"):
        CollectiveSettings(efficiency={"r": 1.5})
    with pytest.raises(InputError):
        CollectiveSettings(algorithm={"r": "tree"})
    with pytest.raises(InputError, match="no dimension named"):
        CollectiveSettings(efficiency={"x": 0.5}).check(FABRIC_2D)
    s = CollectiveSettings(efficiency={"r": "a100_nvlink"})
    assert dict(s.efficiency)["r"] == LINE_RATE_PRESETS["a100_nvlink"].fraction == 0.68

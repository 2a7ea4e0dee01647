"""The topology-aware model with an ASTRA-sim 2.0 configuration (``backend`` set) against
times derived by hand from the simulator's algorithms, and against an event-by-event replay
of them (benchmarks/astra_sim_parity.py, a second formulation sharing no code).

Units as ASTRA-sim's: a network ``bandwidth`` of X GB/s is X * 2^30 bytes/s per link, so X
GB/s moves X * 1.073741824 bytes per ns; latencies and the endpoint delay in ns;
``local-mem-bw`` of M is M * 1e9 bytes/s, M bytes per ns.
"""

import importlib.util
from pathlib import Path

import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.io.astra_sim_network import network_from_mapping, settings_from_mapping
from libra_opt.traffic.topology_aware import CollectiveSettings, collective_phases

MIB = 2**20
NS = 1e-9


def bpns(gbps):
    """ASTRA-sim GB/s -> bytes per ns."""
    return gbps * 2**30 / 1e9


def model_ns(topology, npus, bw, lat, system, kind, size, backend, queues=1):
    net = network_from_mapping({"topology": topology, "npus_count": npus, "bandwidth": bw,
                                "latency": lat})
    s = settings_from_mapping(system, net.fabric.names, backend=backend, queues_per_dim=queues)
    c = collective_phases(kind, size, tuple(npus), net.fabric, s)
    return c.time_s(net.bw_gbps) / NS


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware"])
def test_issue_example_fully_connected_ring_all_gather(backend):
    """FullyConnected[8], 100 GB/s, 500 ns, ring all-gather of a 128 MiB shard (1 GiB
    gathered), one chunk, endpoint delay 10 ns: one direction (one queue), so each of the
    7 steps moves 128 MiB over one 107.37 B/ns link: 7 x 1,250,000 ns; 7 x 500 ns of
    links; 8 endpoint passes (one before the first send, one per reception): 80 ns. Each
    message crosses one link, so both backends agree."""
    sys_ = {"preferred-dataset-splits": 1, "endpoint-delay": 10,
            "all-gather-implementation": ["ring"]}
    got = model_ns(["FullyConnected"], [8], [100.0], [500.0], sys_, "all_gather", 128 * MIB,
                   backend)
    assert_allclose(7 * 128 * MIB / bpns(100.0), 8_750_000.0, rtol=1e-12)
    assert_allclose(got, 8_750_000 + 3_500 + 80, rtol=1e-12)


@pytest.mark.parametrize(("backend", "per_step_ns"), [
    # unaware: one serialization, 2 hops of latency
    ("congestion_unaware", 8 * MIB / bpns(400.0) + 2 * 936.25),
    # aware: the switch stores and forwards, serialization paid on both links
    ("congestion_aware", 2 * 8 * MIB / bpns(400.0) + 2 * 936.25),
])
def test_switch_ring_all_reduce_store_and_forward(backend, per_step_ns):
    """ASTRA-sim's HGX-H100 example: Switch[8], 400 GB/s, 936.25 ns, ring all-reduce of 64
    MiB in one chunk, endpoint 10 ns, local-mem-bw 3350: 14 steps of 8 MiB (19,531.25 ns
    each on a link), 15 endpoint passes, 7 reductions of 3 x 8 MiB / 3350 B/ns."""
    sys_ = {"preferred-dataset-splits": 1, "endpoint-delay": 10, "local-mem-bw": 3350,
            "all-reduce-implementation": ["ring"]}
    got = model_ns(["Switch"], [8], [400.0], [936.25], sys_, "all_reduce", 64 * MIB, backend)
    assert_allclose(8 * MIB / bpns(400.0), 19_531.25, rtol=1e-12)
    expect = 14 * per_step_ns + 15 * 10 + 7 * 3 * 8 * MIB / 3350
    assert_allclose(got, expect, rtol=1e-12)


@pytest.mark.parametrize(("backend", "latency_ns", "expect_ns"), [
    # every message at once, no sharing: one serialization, the farthest peer 4 hops
    ("congestion_unaware", 500.0, 2 * 10 + 19_531.25 + 4 * 500),
    # shorter routes, ties clockwise: a clockwise link carries 1+2+3+4 = 10 messages and is
    # busy throughout, two latencies exposed (ASTRA-sim 2.0 reports 196,330 ns)
    ("congestion_aware", 500.0, 2 * 10 + 10 * 19_531.25 + 2 * 500),
    # latency-bound: the farthest message's 4 hops, 7 transmissions queued on its way
    # (ASTRA-sim 2.0 reports 296,737 ns)
    ("congestion_aware", 40_000.0, 2 * 10 + 7 * 19_531.25 + 4 * 40_000),
])
def test_direct_all_to_all_on_a_ring(backend, latency_ns, expect_ns):
    """Ring[8], 50 GB/s, direct all-to-all of 8 MiB, one chunk: 7 messages of 1 MiB
    (19,531.25 ns on a link) sent at once; 2 endpoint passes. Congestion-aware, the larger
    of the two regimes: at 500 ns 10 x 19,531.25 + 2 x 500 beats 7 x 19,531.25 + 4 x 500;
    at 40 us the other way round."""
    sys_ = {"preferred-dataset-splits": 1, "endpoint-delay": 10,
            "all-to-all-implementation": ["direct"]}
    got = model_ns(["Ring"], [8], [50.0], [latency_ns], sys_, "all_to_all", 8 * MIB, backend)
    assert_allclose(got, expect_ns, rtol=1e-12)


def test_local_memory_bandwidth_is_1e9_bytes_per_second():
    """Ring[4] reduce-scatter of 4 MiB, local-mem-bw 1000 (1000 bytes per ns): 3 steps of
    1 MiB at 50 GB/s + 500 ns, 4 endpoint passes of 10 ns, 3 reductions of 3 MiB / 1000."""
    sys_ = {"preferred-dataset-splits": 1, "endpoint-delay": 10, "local-mem-bw": 1000,
            "reduce-scatter-implementation": ["ring"]}
    got = model_ns(["Ring"], [4], [50.0], [500.0], sys_, "reduce_scatter", 4 * MIB,
                   "congestion_unaware")
    expect = 3 * (MIB / bpns(50.0) + 500) + 4 * 10 + 3 * 3 * MIB / 1000
    assert_allclose(got, expect, rtol=1e-12)


def test_halving_doubling_reduce_scatter_by_hand():
    """FullyConnected[8] (one link per pair, 1 hop), 100 GB/s, 200 ns: halving-doubling
    sends 4, 2, 1 MiB of an 8 MiB buffer; 4 endpoint passes; the simulator reduces the
    receptions 1 and 2, sized as the next message (2 and 1 MiB) at 500 bytes per ns."""
    sys_ = {"preferred-dataset-splits": 1, "endpoint-delay": 20, "local-mem-bw": 500,
            "reduce-scatter-implementation": ["halvingDoubling"]}
    got = model_ns(["FullyConnected"], [8], [100.0], [200.0], sys_, "reduce_scatter",
                   8 * MIB, "congestion_aware")
    expect = 7 * MIB / bpns(100.0) + 3 * 200 + 4 * 20 + 3 * (2 + 1) * MIB / 500
    assert_allclose(got, expect, rtol=1e-12)


def test_active_chunks_per_dimension_run_in_waves_without_sharing():
    """Congestion-unaware Ring[8], all-gather in 4 chunks of a 1 MiB shard, one queue: one
    chunk at a time takes 4 t; two at once (active-chunks-per-dimension 2), sharing no
    bandwidth in this backend, 2 t; with t = 8 x 10 + 7 (1 MiB / 53.69 B/ns + 500)."""
    t = 8 * 10 + 7 * (MIB / bpns(50.0) + 500)
    for active, waves in ((1, 4), (2, 2), (4, 1)):
        sys_ = {"preferred-dataset-splits": 4, "endpoint-delay": 10,
                "active-chunks-per-dimension": active, "all-gather-implementation": ["ring"]}
        got = model_ns(["Ring"], [8], [50.0], [500.0], sys_, "all_gather", 4 * MIB,
                       "congestion_unaware")
        assert_allclose(got, waves * t, rtol=1e-12)


def test_two_queues_run_the_ring_both_ways():
    """Congestion-aware Ring[8], all-gather in 2 chunks, 2 queues of one chunk each: the
    first queue runs clockwise, the second anticlockwise, on different links: the two
    chunks take one chunk's time. With one queue running both, they share the clockwise
    links: the second chunk waits one step (1 MiB on a link) and the link carries 14
    steps back to back: 14 steps of 19,531.25 ns plus the last step's latency."""
    base = {"preferred-dataset-splits": 2, "endpoint-delay": 10,
            "active-chunks-per-dimension": 2, "all-gather-implementation": ["ring"]}
    s = MIB / bpns(50.0)
    t = 8 * 10 + 7 * (s + 500)
    got = model_ns(["Ring"], [8], [50.0], [500.0], base, "all_gather", 2 * MIB,
                   "congestion_aware", queues=2)
    assert_allclose(got, t, rtol=1e-12)
    one = model_ns(["Ring"], [8], [50.0], [500.0], base, "all_gather", 2 * MIB,
                   "congestion_aware", queues=1)
    # the link is the bottleneck (s = 19.5 us >> 510 ns of latency per step): 2 x 7 steps
    # serialized, then the last one's 500 ns link and 10 ns endpoint, after the first 10 ns
    assert_allclose(one, 10 + 14 * s + 500 + 10, rtol=1e-12)


def test_baseline_runs_an_all_reduce_on_every_dimension():
    """collective-optimization baseline: a full all-reduce per dimension (2 phases on a
    2-D fabric); localBWAware: reduce-scatter, all-reduce, all-gather (3 phases)."""
    f = Fabric((Dim("a", "ring", 4, "T"), Dim("b", "switch", 4, "T")))
    sys_ = {"preferred-dataset-splits": 1, "all-reduce-implementation": ["ring", "direct"]}
    for opt, dims in (("baseline", (0, 1)), ("localBWAware", (0, 1, 0))):
        s = settings_from_mapping({**sys_, "collective-optimization": opt}, f.names,
                                  backend="congestion_aware")
        assert collective_phases("all_reduce", 1e6, (4, 4), f, s).dims == dims


def test_refusals_name_the_setting():
    with pytest.raises(InputError) as exc:
        CollectiveSettings(backend="garnet")
    assert exc.value.field == "collectives.backend"
    with pytest.raises(InputError) as exc:
        CollectiveSettings(backend="congestion_aware", queues_per_dim=0)
    assert exc.value.field == "collectives.queues_per_dim"
    with pytest.raises(InputError) as exc:
        CollectiveSettings(backend="congestion_aware", in_network_reduction=("b",))
    assert exc.value.field == "collectives.in_network_reduction"
    f = Fabric((Dim("a", "switch", 8, "T"),))
    s = CollectiveSettings(backend="congestion_unaware", algorithm={"a": "halving_doubling"})
    with pytest.raises(InputError, match="no all-to-all"):
        collective_phases("all_to_all", 1e6, (8,), f, s)


def _replay_module():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "astra_sim_parity.py"
    spec = importlib.util.spec_from_file_location("astra_sim_parity", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


REPLAY_CASES = [
    # network, system knobs, queues, kind, size, backend, tolerance
    ((["Ring", "Switch"], [4, 4], [200.0, 50.0], [100.0, 1000.0]),
     {"preferred-dataset-splits": 4, "active-chunks-per-dimension": 1, "local-mem-bw": 1600,
      "all-reduce-implementation": ["ring", "ring"]}, 1, "all_reduce", 64 * MIB,
     "congestion_unaware", 1e-9),
    ((["FullyConnected", "Ring"], [4, 4], [150.0, 25.0], [250.0, 2000.0]),
     {"preferred-dataset-splits": 4, "active-chunks-per-dimension": 2, "local-mem-bw": 1600,
      "all-gather-implementation": ["ring", "ring"]}, 2, "all_gather", 64 * MIB,
     "congestion_aware", 0.10),
    ((["Switch"], [8], [400.0], [936.25]),
     {"preferred-dataset-splits": 4, "active-chunks-per-dimension": 2, "local-mem-bw": 3350,
      "reduce-scatter-implementation": ["ring"]}, 1, "reduce_scatter", 64 * MIB,
     "congestion_aware", 0.10),
    ((["Ring", "FullyConnected", "Switch"], [2, 4, 2], [300.0, 100.0, 25.0],
      [100.0, 500.0, 5000.0]),
     {"preferred-dataset-splits": 2, "endpoint-delay": 20, "local-mem-bw": 2000,
      "collective-optimization": "baseline",
      "all-reduce-implementation": ["halvingDoubling"] * 3}, 1, "all_reduce", 1 * MIB,
     "congestion_aware", 0.25),
]


@pytest.mark.parametrize(("net", "system", "queues", "kind", "size", "backend", "rtol"),
                         REPLAY_CASES)
def test_against_the_replay(net, system, queues, kind, size, backend, rtol):
    """The issue's bands: 10 % at >= 64 MiB, 25 % at 1 MiB (the congestion-unaware
    pipeline with one chunk per queue is exact)."""
    mod = _replay_module()
    topology, npus, bw, lat = net
    case = {"network": {"topology": topology, "npus_count": npus, "bandwidth": bw,
                        "latency": lat},
            "system": system, "queues": queues, "backend": backend, "kind": kind,
            "size_bytes": size}
    assert_allclose(mod.model(case), mod.replay(case), rtol=rtol)

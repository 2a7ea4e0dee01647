"""ASTRA-sim 2.0 network YAML and system JSON import: unit conversion, strict parsing."""

import json

import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.io.astra_sim_network import (
    astra_gbps_to_gbps,
    read_astra_sim_network,
    read_astra_sim_system,
)
from tests.traffic.test_topology_aware import message_time_s

NETWORK = """\
topology: [ Ring, FullyConnected, Switch ]
npus_count: [ 16, 16, 16 ]
bandwidth: [ 50.0, 50.0, 50.0 ]  # GB/s
latency: [ 500.0, 500.0, 500.0 ]  # ns
"""

SYSTEM = {
    "scheduling-policy": "LIFO",
    "endpoint-delay": 10,
    "active-chunks-per-dimension": 1,
    "preferred-dataset-splits": 4,
    "all-reduce-implementation": ["ring", "direct", "halvingDoubling"],
    "all-gather-implementation": ["ring", "direct", "halvingDoubling"],
    "reduce-scatter-implementation": ["ring", "direct", "halvingDoubling"],
    "all-to-all-implementation": ["ring", "direct", "direct"],
    "collective-optimization": "localBWAware",
    "local-mem-bw": 1600,
    "boost-mode": 0,
}


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_unit_conversion():
    # 1 ASTRA-sim GB/s = 2^30 B/s = 1.073741824 of our GB/s (7.4 % more)
    assert astra_gbps_to_gbps(1.0) == 1.073741824


def test_network_import_reproduces_point_to_point_reference(tmp_path):
    """1 MiB between two NPUs of each 16-NPU dimension, 50 GB/s (2^30) links of 500 ns:
    ring 3 hops 21,031 ns, clique 1 hop 20,031 ns, switch 2 hops 20,531 ns."""
    net = read_astra_sim_network(write(tmp_path, "net.yml", NETWORK))
    assert [d.topology for d in net.fabric.dims] == ["ring", "fully_connected", "switch"]
    link = 50 * 2**30 / 1e9
    assert_allclose(net.link_gbps, [link] * 3, rtol=1e-15)
    assert_allclose(net.bw_gbps, [2 * link, 15 * link, link], rtol=1e-15)
    for dim, bw, hops, ns in zip(net.fabric.dims, net.bw_gbps, (3, 1, 2),
                                 (21031.25, 20031.25, 20531.25), strict=True):
        assert dim.latency_s == 500e-9
        assert_allclose(message_time_s(2**20, dim, bw, hops=hops) * 1e9, ns, rtol=1e-12)


def test_system_import(tmp_path):
    p = write(tmp_path, "sys.json", json.dumps(SYSTEM))
    s = read_astra_sim_system(p, ["a", "b", "c"], backend="congestion_aware", queues_per_dim=2)
    assert s.chunks == 4
    assert s.endpoint_delay_s == 10e-9
    # Sys.cc: local_mem_bw = local-mem-bw x 1e9 bytes/s, our GB/s exactly
    assert s.local_memory_gbps == 1600.0
    assert dict(s.algorithm) == {"a": "ring", "b": "direct", "c": "halving_doubling"}
    # all-to-all runs direct on dimension c, the others halving-doubling
    assert dict(s.collective_algorithm) == {("all_to_all", "c"): "direct"}
    assert s.active_chunks_per_dim == 1 and s.active_chunks is None
    assert (s.backend, s.queues_per_dim) == ("congestion_aware", 2)
    assert s.all_reduce == "hierarchical"  # localBWAware


def test_system_defaults_and_baseline(tmp_path):
    """No endpoint-delay: the simulator's 10 ns; baseline: an all-reduce on every dimension;
    the scheduling keys ASTRA-sim 2.0 does not read are accepted."""
    data = {k: v for k, v in SYSTEM.items() if k != "endpoint-delay"}
    data.update({"collective-optimization": "baseline", "intra-dimension-scheduling": "RG",
                 "inter-dimension-scheduling": "roundRobin", "local-reduction-delay": 1})
    s = read_astra_sim_system(write(tmp_path, "sys.json", json.dumps(data)), ["a", "b", "c"],
                              backend="congestion_unaware")
    assert s.endpoint_delay_s == 10e-9
    assert s.all_reduce == "full"
    assert s.backend == "congestion_unaware" and s.queues_per_dim == 1


def test_system_backend_is_named_not_defaulted(tmp_path):
    """The backend is not in the system file and the two time it differently, so the reader
    takes no default: a call without it fails, and a backend other than the two is refused
    naming ``backend`` and the file."""
    p = write(tmp_path, "sys.json", json.dumps(SYSTEM))
    with pytest.raises(TypeError, match="backend"):
        read_astra_sim_system(p, ["a", "b", "c"])  # type: ignore[call-arg]
    with pytest.raises(InputError) as exc:
        read_astra_sim_system(p, ["a", "b", "c"], backend="garnet")  # type: ignore[arg-type]
    assert (exc.value.field, exc.value.source) == ("backend", str(p))


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("topology: [Ring]\nnpus_count: [4]\nbandwidth: [50]\nlatency: [500]\nfoo: 1\n", "foo"),
        ("topology: [Torus]\nnpus_count: [4]\nbandwidth: [50]\nlatency: [500]\n", "topology[0]"),
        ("topology: [Ring]\nnpus_count: [4, 2]\nbandwidth: [50]\nlatency: [500]\n", "topology"),
        ("topology: [Ring]\nnpus_count: [4]\nbandwidth: [-5]\nlatency: [500]\n", "bandwidth[0]"),
        ("topology: [Ring]\nnpus_count: [4.5]\nbandwidth: [5]\nlatency: [500]\n",
         "npus_count[0]"),
        ("topology: [Ring]\nnpus_count: [4]\nbandwidth: [5]\n", "latency"),
    ],
)
def test_network_errors_name_file_and_field(tmp_path, text, field):
    p = write(tmp_path, "bad.yml", text)
    with pytest.raises(InputError) as exc:
        read_astra_sim_network(p)
    assert exc.value.field == field
    assert exc.value.source == str(p)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"bogus-key": 1}, "bogus-key"),
        ({"preferred-dataset-splits": 0}, "preferred-dataset-splits"),
        ({"preferred-dataset-splits": None}, "preferred-dataset-splits"),
        ({"all-reduce-implementation": ["ring", "direct"]}, "all-reduce-implementation"),
        ({"all-reduce-implementation": ["ring", "doubleBinaryTree", "direct"]},
         "all-reduce-implementation[1]"),
        ({"all-reduce-implementation": ["ring", "oneRing", "direct"]},
         "all-reduce-implementation[1]"),
        ({"all-gather-implementation": ["ring", "direct4", "direct"]},
         "all-gather-implementation[1]"),
        ({"all-to-all-implementation": ["ring", "direct", "halvingDoubling"]},
         "all-to-all-implementation[2]"),
        ({"all-reduce-implementation-custom": ["x.et"]}, "all-reduce-implementation-custom"),
        ({"model-shared-bus": 1}, "model-shared-bus"),
        ({"scheduling-policy": "RANDOM"}, "scheduling-policy"),
        ({"collective-optimization": "fast"}, "collective-optimization"),
        ({"active-chunks-per-dimension": 0}, "active-chunks-per-dimension"),
        ({"local-mem-bw": -1}, "local-mem-bw"),
    ],
)
def test_system_errors_name_file_and_field(tmp_path, change, field):
    p = write(tmp_path, "bad.json", json.dumps({**SYSTEM, **change}))
    with pytest.raises(InputError) as exc:
        read_astra_sim_system(p, ["a", "b", "c"], backend="congestion_aware")
    assert exc.value.field == field
    assert exc.value.source == str(p)

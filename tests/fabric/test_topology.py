"""The topology classes: names, parsing, and a mesh's counts against its explicit graph."""

import json
import pickle

import networkx as nx
import pytest
from numpy.testing import assert_allclose

from libra_opt.cost.prices import CostModel, cost_coefficients
from libra_opt.errors import InputError
from libra_opt.fabric.builders import multi_dim
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.fabric.graphs import fabric_graph
from libra_opt.fabric.inventory import dimension_inventory
from libra_opt.fabric.topology import (
    TOPOLOGY_CLASSES,
    Mesh,
    Ring,
    Topology,
    topology_names,
    topology_of,
)
from libra_opt.io.libra import write_libra_network
from libra_opt.options import TOPOLOGIES
from tests.fabric.graph_checks import graph_counts


def test_the_vocabulary_is_the_classes():
    assert TOPOLOGIES == ("ring", "fully_connected", "switch", "mesh")
    assert TOPOLOGIES == tuple(c.name for c in TOPOLOGY_CLASSES)
    assert len({c.abbr for c in TOPOLOGY_CLASSES}) == len(TOPOLOGY_CLASSES)
    assert topology_names(aliases=True) == ("ring", "torus", "fully_connected", "switch", "mesh")


@pytest.mark.parametrize("latency", ["abc", None, True, -1e-6, float("nan"), float("inf")])
def test_a_latency_that_is_not_a_number_is_an_input_error(latency):
    with pytest.raises(InputError, match=r"dim 'a'.latency_s: latency_s .* must be a finite"):
        Dim("a", "ring", 4, "T", latency_s=latency)


def test_parsing_names_and_aliases():
    assert type(topology_of("mesh")) is Mesh
    assert type(topology_of("torus", aliases=True)) is Ring
    m = Mesh()
    assert topology_of(m) is m
    with pytest.raises(InputError, match="topology 'torus' is not one of ring, fully_connected, "
                                         "switch, mesh") as exc:
        topology_of("torus", "fabric.dims[0].topology")
    assert exc.value.field == "fabric.dims[0].topology"
    with pytest.raises(InputError, match="is not one of ring, torus, fully_connected"):
        multi_dim((4,), ("hypercube",))
    with pytest.raises(InputError, match="dim 'a'.topology"):
        Dim("a", "line", 4, "T")


def test_a_topology_is_its_name():
    d = Dim("chip", "mesh", 4, "T")
    assert isinstance(d.topology, Mesh) and d.topology == "mesh" and str(d.topology) == "mesh"
    assert repr(d).startswith("Dim(name='chip', topology='mesh', size=4")
    assert {d.topology: 1}["mesh"] == 1 and json.dumps(d.topology) == '"mesh"'
    back = pickle.loads(pickle.dumps(Fabric((d,))))
    assert back.dims[0] == d and type(back.dims[0].topology) is Mesh


@pytest.mark.parametrize("cls", TOPOLOGY_CLASSES)
def test_cables_closed_form_is_the_wiring(cls):
    t = cls()
    for n in range(max(2, t.min_size), 10):
        assert len(t.wiring(n)) == (0 if t.switched else t.cables(n))
        assert all(0 <= a < n and 0 <= b < n and a != b for a, b in t.wiring(n))


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_mesh_counts_on_its_graph(n):
    """A line of n NPUs: n - 1 cables (bidirectional links), two link ports per NPU but one
    at each end, every link B/2 per direction; counted on the explicit graph."""
    f = Fabric((Dim("chip", "mesh", n, "T"), Dim("pod", "switch", 3, "T")))
    bw = [10.0, 1.0]
    g = fabric_graph(f, bw)
    line = nx.MultiGraph([(u, v) for u, v, a in g.edges(data=True) if a["dim"] == 0])
    assert line.number_of_edges() == 3 * (n - 1)                   # 3 lines of n - 1 cables
    assert nx.number_connected_components(line) == 3 and nx.is_forest(line)
    degrees = sorted(d for _, d in line.degree())
    assert degrees == sorted([1, 1] * 3 + [2] * 3 * (n - 2))       # ends 1, inner NPUs 2
    assert {a["bw_gbps"] for *_, a in g.edges(data=True) if a["dim"] == 0} == {5.0}
    inv = dimension_inventory(f, 0)
    assert (inv.blocks, inv.links_per_block, inv.link_share, inv.cables, inv.transceivers) == (
        3, 2 * (n - 1), 0.5, 3 * (n - 1), 6 * (n - 1))
    c = graph_counts(fabric_graph(f), 2)[0]
    assert (c.cables, c.libra_links, c.switches, c.nic_ports, c.tiers) == (
        inv.cables, inv.blocks * inv.links_per_block, 0, 0, 0)
    assert_allclose(c.link_gbps, inv.link_gbps_per_gbps, rtol=1e-12)
    # B_d is what an inner NPU drives: the line buys (n - 1) B of links, a ring n B
    assert_allclose(inv.link_gbps_per_gbps, 3 * (n - 1))
    ring = dimension_inventory(Fabric((Dim("chip", "ring", n, "T"), f.dims[1])), 0)
    assert_allclose(ring.link_gbps_per_gbps, 3 * n)


def test_mesh_cost_by_hand():
    # 4 lines of 4 chiplets at $2 per GB/s of link and 0.5 W: 4 x 3 cables x 2 directions x
    # B/2 = 12 B of links -> $24 and 6 W per GB/s of B; a ring would buy 16 B.
    f = multi_dim((4, 4), ("mesh", "ring"), tiers=("C", "C"))
    k = cost_coefficients(f, CostModel.from_tables({"C": {"link": 2.0}}, {"C": {"link": 0.5}}))
    assert_allclose(k.usd_per_gbps, [24.0, 32.0])
    assert_allclose(k.w_per_gbps, [6.0, 8.0])
    with pytest.raises(InputError, match="needs a link price"):
        cost_coefficients(f, CostModel.from_tables({"C": {"switch": 1.0}}))


def test_libra_format_has_no_mesh(tmp_path):
    with pytest.raises(InputError, match="LIBRA's network format has no mesh") as exc:
        write_libra_network(multi_dim((4, 2), ("mesh", "switch")), tmp_path / "n.yml")
    assert exc.value.field == "fabric.dims.chiplet.topology"
    assert not (tmp_path / "n.yml").exists()


def test_the_base_class_is_abstract():
    assert issubclass(Mesh, Topology) and not hasattr(Topology, "name")


@pytest.mark.parametrize("cls", TOPOLOGY_CLASSES)
def test_only_a_topology_that_says_so_scales_traffic(cls):
    t = cls()
    factors = {t.traffic_factor(kind, k) for k in range(2, 9)
               for kind in ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "p2p")}
    assert (factors != {1.0}) == t.scales_traffic

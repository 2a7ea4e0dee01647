"""Cost and power coefficients: hand derivations and counts on explicit networkx graphs."""

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from libra_opt.cost.prices import CostModel, cost_coefficients, network_cost_breakdown
from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.fabric.inventory import dimension_inventory


def build_graph(fabric: Fabric, bw_gbps):
    """Explicit multigraph of LIBRA's building blocks: per ring (and line) both directions
    between neighbours (B/2 each), per clique every ordered pair (B/(n-1)), per switch block one
    switch node and, per NPU, a NIC and a NIC-switch link of B."""
    g = nx.MultiDiGraph()
    sizes = fabric.sizes
    coords = list(itertools.product(*[range(s) for s in sizes]))
    for c in coords:
        g.add_node(("npu", c), kind="npu")
    for d, dim in enumerate(fabric.dims):
        n, b = dim.size, bw_gbps[d]
        if n == 1:
            continue
        for c in coords:
            if dim.topology in ("ring", "mesh"):
                for step in (1, -1):
                    if dim.topology == "mesh" and not 0 <= c[d] + step < n:
                        continue  # a line: no wrap-around link
                    nxt = list(c)
                    nxt[d] = (c[d] + step) % n
                    g.add_edge(("npu", c), ("npu", tuple(nxt)), dim=d, bw=b / 2, kind="link")
            elif dim.topology == "fully_connected":
                for j in range(n):
                    if j != c[d]:
                        nxt = list(c)
                        nxt[d] = j
                        g.add_edge(("npu", c), ("npu", tuple(nxt)), dim=d, bw=b / (n - 1), kind="link")
            else:
                block = (d, c[d + 1:])  # one switch per block of dims 0..d
                g.add_node(("switch", block), kind="switch", dim=d)
                g.add_node(("nic", d, c), kind="nic", dim=d)
                g.add_edge(("npu", c), ("nic", d, c), dim=d, bw=b, kind="host")
                g.add_edge(("nic", d, c), ("switch", block), dim=d, bw=b, kind="link")
    return g


def graph_counts(g, d):
    links = [e for e in g.edges(data=True) if e[2]["dim"] == d and e[2]["kind"] == "link"]
    switches = [n for n, a in g.nodes(data=True) if a["kind"] == "switch" and a["dim"] == d]
    ports = sum(g.in_degree(s) for s in switches)
    nics = [n for n, a in g.nodes(data=True) if a["kind"] == "nic" and a["dim"] == d]
    return sum(e[2]["bw"] for e in links), len(links), len(switches), ports, len(nics)


topologies = st.sampled_from(["ring", "fully_connected", "switch", "mesh"])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(topologies, st.integers(2, 5)), min_size=1, max_size=3))
def test_inventory_matches_graph(dims):
    fabric = Fabric(tuple(Dim(f"d{i}", t, n, "T") for i, (t, n) in enumerate(dims)))
    bw = [10.0 * (i + 1) for i in range(fabric.n_dims)]
    g = build_graph(fabric, bw)
    for d in range(fabric.n_dims):
        inv = dimension_inventory(fabric, d)
        link_bw, n_links, n_sw, ports, nics = graph_counts(g, d)
        assert n_links == inv.blocks * inv.links_per_block
        assert_allclose(link_bw, inv.link_gbps_per_gbps * bw[d], rtol=1e-12)
        assert (n_sw, ports, nics) == (
            (inv.blocks, inv.switch_ports, inv.nics) if dims[d][0] == "switch" else (0, 0, 0)
        )


def test_libra_4d_coefficients_by_hand():
    """LIBRA 4-D fabric (4x8x4x32 = 4096 NPUs): every topology buys N*B of links."""
    f = Fabric((
        Dim("chiplet", "ring", 4, "InterChiplet"),
        Dim("package", "fully_connected", 8, "InterPackage"),
        Dim("node", "ring", 4, "InterNode"),
        Dim("pod", "switch", 32, "InterPod"),
    ))
    cm = CostModel.from_tables({
        "InterChiplet": {"link": 2.0},
        "InterPackage": {"link": 4.0, "switch": 13.0},
        "InterNode": {"link": 4.0, "switch": 13.0},
        "InterPod": {"link": 7.8, "switch": 18.0, "nic": 31.6},
    })
    k = cost_coefficients(f, cm)
    assert_allclose(k.usd_per_gbps, 4096 * np.array([2.0, 4.0, 4.0, 7.8 + 18.0 + 31.6]))
    # At B = (500, 300, 150, 50): 4096*(1000 + 1200 + 600 + 2870) = 23,224,320 $.
    cb = network_cost_breakdown(k, [500, 300, 150, 50])
    assert_allclose(cb.network_cost_usd, 4096 * 5670.0)
    assert_allclose(cb.usd_by_dim_component[3], 4096 * 50 * np.array([7.8, 18.0, 31.6]))
    assert cb.network_power_w is None
    # The switch of dim 3 spans the whole machine: one switch, 4096 ports.
    inv = dimension_inventory(f, 3)
    assert (inv.blocks, inv.links_per_block, inv.switch_ports) == (1, 4096, 4096)


def test_power_coefficients():
    f = Fabric((Dim("a", "fully_connected", 4, "A"), Dim("b", "switch", 2, "B")))
    cm = CostModel.from_tables(
        {"A": {"link": 1.0}, "B": {"link": 1.0, "switch": 2.0, "nic": 3.0}},
        {"A": {"link": 0.5}, "B": {"link": 0.1, "switch": 0.2, "nic": 0.3}},
    )
    k = cost_coefficients(f, cm)
    assert_allclose(k.w_per_gbps, [8 * 0.5, 8 * 0.6])
    assert_allclose(network_cost_breakdown(k, [2.0, 10.0]).network_power_w, 8 + 48)


def test_missing_prices_are_errors():
    f = Fabric((Dim("pod", "switch", 4, "P"),))
    with pytest.raises(InputError, match="needs a nic price"):
        cost_coefficients(f, CostModel.from_tables({"P": {"link": 1.0, "switch": 1.0}}))
    with pytest.raises(InputError, match="does not price"):
        cost_coefficients(f, CostModel.from_tables({"Q": {"link": 1.0}}))
    with pytest.raises(InputError, match="no power entry"):
        CostModel.from_tables({"P": {"link": 1.0}, "Q": {"link": 1.0}}, {"P": {"link": 0.0}})
    with pytest.raises(InputError, match="finite"):
        CostModel.from_tables({"P": {"link": math.nan}})
    with pytest.raises(InputError, match="unknown component"):
        CostModel.from_tables({"P": {"optics": 1.0}})


# ---- whole-switch pricing keeps the problem linear in B: the solver stays exact -------------


def _scenario_radix_12(constraints, objective="perf", pricing="whole_switch", **kw):
    """tests.fixtures' 2-D scenario with the pod switch built from radix-12 switches.

    Pod block of 32 NPUs, radix 12: 2 tiers (one switch reaches 12, two 72), ceil(64/12) = 6
    leaves and ceil(32/12) = 3 spines: 9 switches, 108 ports bought, 3 x 32 = 96 used,
    2 x 32 = 64 links. Pod $ per GB/s (link 4, switch 10, nic 20): 64 x 4 + 108 x 10 +
    32 x 20 = 1,976 whole switches; 1,856 used ports. The ring: 32 x 2 = 64.
    """
    from libra_opt.scenario.constraints import parse_constraint
    from libra_opt.scenario.scenario import Scenario
    from tests.fixtures import cost_2d, workload_2d

    f = Fabric((Dim("node", "ring", 4, "A"),
                Dim("pod", "switch", 8, "B", switch_radix=12, switch_pricing=pricing)))
    cons = tuple(parse_constraint(c, f) for c in constraints)
    return Scenario(f, cost_2d(), (workload_2d(),), constraints=cons, objective=objective, **kw)


@pytest.mark.parametrize(("pricing", "kappa_pod"), [("whole_switch", 1976.0),
                                                    ("used_ports", 1856.0)])
def test_whole_switch_solve_is_exact_brute_force(pricing, kappa_pod):
    from libra_opt.optimize.problem import solve
    from libra_opt.scenario.evaluate import evaluate
    from tests.optimize.test_problem import brute_2d, brute_line, check, step_2d

    kappa = np.array([64.0, kappa_pod])
    base = _scenario_radix_12([], pricing=pricing)
    assert_allclose(cost_coefficients(base.fabric, base.cost_model).usd_per_gbps, kappa)
    # perf_per_cost on sum(bw) == 300: the optimum moves with the pod price.
    sol = solve(_scenario_radix_12(["sum(bw) == 300"], "perf_per_cost", pricing=pricing))
    best, arg = brute_line(300.0, lambda a, b: step_2d(a, b) * (kappa[0] * a + kappa[1] * b))
    check(sol, best, 1e-6)
    assert_allclose(sol.bw_gbps, arg, rtol=1e-3)
    assert sol.network_cost_usd == pytest.approx(kappa @ sol.bw_gbps, rel=1e-9)
    # perf under a $150k budget: grid search and the hand cost at the optimum.
    scen = _scenario_radix_12(["sum(bw) >= 100"], budget_usd=1.5e5, pricing=pricing)
    sol = solve(scen)
    best, _ = brute_2d(lambda a, b: (a + b >= 100) & (kappa[0] * a + kappa[1] * b <= 1.5e5),
                       step_2d)
    check(sol, best)
    assert sol.network_cost_usd == pytest.approx(kappa @ sol.bw_gbps, rel=1e-9)
    assert sol.network_cost_usd <= 1.5e5 * (1 + 1e-6)
    ev = evaluate(scen, sol.bw_gbps)
    assert ev.cost.network_cost_usd == pytest.approx(sol.network_cost_usd, rel=1e-9)
    assert ev.weighted_step_time_s == pytest.approx(step_2d(*sol.bw_gbps), rel=1e-9)
    assert ev.objective_value == pytest.approx(sol.objective_value, rel=1e-6)


def test_scenario_dims_carry_pricing_and_copper():
    from libra_opt.errors import input_context
    from libra_opt.scenario.compile import compile_fabric
    from libra_opt.scenario.spec import FabricSpec, from_mapping

    def _fabric(data, source, base):  # the file's fabric section, read then compiled
        with input_context(source):
            return compile_fabric(from_mapping(FabricSpec, data, "fabric", strict=True), source)

    dims = [{"name": "hb", "topology": "switch", "size": 8, "tier": "ScaleUp"},
            {"name": "so", "topology": "switch", "size": 100, "tier": "ScaleOut",
             "switch_radix": 16, "switch_pricing": "used_ports", "copper_levels": 1}]
    f = _fabric({"dims": dims}, "<test>", None)
    assert (f.dims[1].switch_pricing, f.dims[1].copper_levels) == ("used_ports", 1)
    assert (f.dims[0].switch_pricing, f.dims[0].copper_levels) == ("whole_switch", 0)
    dims[1]["copper_levels"] = 3  # a block of 800 NPUs on radix 16 has 3 tiers: fine
    assert _fabric({"dims": dims}, "<test>", None).dims[1].copper_levels == 3
    dims[1]["size"] = 2  # 16 NPUs: one switch, one cable level
    with pytest.raises(InputError, match=r"fabric\.dims.*use 0\.\.1"):
        _fabric({"dims": dims}, "<test>", None)
    dims[1]["switch_pricing"] = "per_port"
    with pytest.raises(InputError, match="switch_pricing"):
        _fabric({"dims": dims}, "<test>", None)

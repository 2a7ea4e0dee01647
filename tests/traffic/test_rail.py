"""Rail-only forwarding and direct any-to-any routing, checked by enumerating every byte."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.fabric.builders import rail_only, rail_optimized_fat_tree
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.optimize.terms import native_terms
from libra_opt.traffic.collectives import hierarchical_traffic_bytes
from libra_opt.traffic.rail import (
    check_rail_mapping,
    classify_collective,
    forwarding_overhead,
    joined_rails,
    native_step_time_s,
    rail_report,
)
from libra_opt.traffic.routing import native_traffic_bytes
from libra_opt.traffic.timing import TimingModel
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

SEQ = TimingModel("sequential")


def routed_bytes(kind, m, span, fabric):
    """Route every (source, destination) byte explicitly: a byte crosses the outermost
    dimension where the coordinates differ, and stops there if that dimension reaches the
    whole block directly (block-scope switch); otherwise it goes on inward."""
    ks = list(span)
    spanned = [d for d, k in enumerate(ks) if k > 1]
    out = np.zeros(len(ks))
    if kind == "p2p":
        dsts = [tuple(1 if d in spanned else 0 for d in range(len(ks)))]
        share = m
    else:
        dsts = list(itertools.product(*[range(k) for k in ks]))
        share = m / math.prod(ks)
    for dst in dsts:
        diff = [d for d in range(len(ks)) if dst[d] != 0]
        for e in sorted(diff, reverse=True):
            out[e] += share
            dim = fabric.dims[e]
            if dim.topology == "switch" and dim.switch_scope == "block" and dim.size > 1:
                break
    return out


@st.composite
def fabric_and_span(draw):
    n = draw(st.integers(1, 3))
    dims, span = [], []
    for i in range(n):
        topo = draw(st.sampled_from(["ring", "fully_connected", "switch"]))
        size = draw(st.sampled_from([2, 4, 6]))
        scope = draw(st.sampled_from(["block", "rail"])) if topo == "switch" else "block"
        dims.append(Dim(f"d{i}", topo, size, "T", switch_scope=scope))
        span.append(draw(st.sampled_from([k for k in (1, 2, 3, 4, 6) if size % k == 0])))
    return Fabric(tuple(dims)), tuple(span)


@settings(max_examples=150, deadline=None)
@given(fabric_and_span(), st.sampled_from(["all_to_all", "p2p"]))
def test_native_traffic_equals_byte_by_byte_routing(fs, kind):
    fabric, span = fs
    if kind == "p2p" and any(k not in (1, 2) for k in span):
        span = tuple(min(k, 2) if fabric.sizes[d] % 2 == 0 else 1 for d, k in enumerate(span))
    got = native_traffic_bytes(kind, 6e6, span, fabric)
    np.testing.assert_allclose(got, routed_bytes(kind, 6e6, span, fabric), rtol=1e-12)
    # A rail-only fabric (no block-scope switch) is exactly LIBRA's hierarchical model.
    if not any(d.topology == "switch" and d.switch_scope == "block" for d in fabric.dims):
        np.testing.assert_allclose(got, hierarchical_traffic_bytes(kind, 6e6, span))


@settings(max_examples=60, deadline=None)
@given(fabric_and_span(), st.sampled_from(["all_reduce", "reduce_scatter", "all_gather"]))
def test_hierarchical_collectives_are_rail_aligned(fs, kind):
    fabric, span = fs
    np.testing.assert_array_equal(native_traffic_bytes(kind, 1e6, span, fabric),
                                  hierarchical_traffic_bytes(kind, 1e6, span))


@pytest.mark.parametrize("h", [8, 16, 64, 256])
def test_forwarded_bytes_by_hand(h):
    # All-to-all of m over (h, 8): the rail-only HB dimension carries m (h-1)/h, the
    # fat-tree's m (h-1)/(8h); the difference is forwarded to other rails.
    m, k = 1e9, 8 * h
    ro, ft = rail_only(h * 8, h, None), rail_optimized_fat_tree(h * 8, h, None)
    assert native_traffic_bytes("all_to_all", m, (h, 8), ro)[0] == pytest.approx(m * (h - 1) / h)
    assert native_traffic_bytes("all_to_all", m, (h, 8), ft)[0] == pytest.approx(m * (h - 1) / k)
    r = forwarding_overhead("all_to_all", m, (h, 8), ro, [450.0, 50.0], SEQ)
    assert r["extra_bytes"][0] == pytest.approx(m * (h - 1) * (k - h) / (h * k))
    so = m * 7 / 8 / 50e9
    expected = (so + m * (h - 1) / h / 450e9) / (so + m * (h - 1) / k / 450e9) - 1
    assert r["overhead_pct"] == pytest.approx(100 * expected)
    # Pipelined: HB is 9x faster than the NIC, so forwarding hides behind the NIC.
    assert forwarding_overhead("all_to_all", m, (h, 8), ro, [450.0, 50.0])["overhead_pct"] == 0.0
    # ... until the HB dimension becomes the bottleneck.
    slow = forwarding_overhead("all_to_all", m, (h, 8), ro, [40.0, 50.0])
    assert slow["overhead_pct"] == pytest.approx(100 * ((h - 1) / h / 40 / (7 / 8 / 50) - 1))


def test_p2p_across_rails_pays_an_extra_hop():
    ro = Fabric((Dim("hb", "switch", 8, "A", 1e-6), Dim("rail", "switch", 4, "B", 5e-6,
                                                        switch_scope="rail")))
    ft = joined_rails(ro)
    w = Workload("pp", (Layer("l", Phase(0.0, (Collective("p2p", 1e9, "pp"),))),),
                 {"pp": (2, 2)})
    # Fat-tree: 1 GB over the scale-out only, + 5 us; rail-only: also 1 GB over HB, + 1 us.
    assert native_step_time_s(w, ft, [100.0, 10.0], SEQ) == pytest.approx(0.1 + 5e-6)
    assert native_step_time_s(w, ro, [100.0, 10.0], SEQ) == pytest.approx(
        0.1 + 5e-6 + 0.01 + 1e-6)


def test_classification_and_rejection():
    f = rail_only(64, 8, 8)
    assert classify_collective("p2p", (1, 2), f).category == "within_rail"
    assert classify_collective("p2p", (2, 2), f).category == "forwarded"
    assert classify_collective("all_to_all", (8, 1), f).category == "no_rail"
    assert classify_collective("all_to_all", (8, 8), joined_rails(f)).category == "no_rail"
    w = Workload("moe", (Layer("l", Phase(0.0, (Collective("all_to_all", 1.0, "ep"),
                                                 Collective("all_reduce", 1.0, "dp")))),),
                 {"ep": (8, 2), "dp": (8, 8)})
    assert check_rail_mapping([w], f) == {"moe.ep": "forwarded", "moe.dp": "rail_aligned"}
    with pytest.raises(InputError, match=r"workloads\[moe\]\.groups\.ep.*crosses rails"):
        check_rail_mapping([w], f, allow_forwarding=False)
    bad = Workload("x", (Layer("l", Phase(0.0, (Collective("all_to_all", 1.0, "g"),))),),
                   {"g": (2, 2, 2)})
    with pytest.raises(InputError, match="spans 3 dimensions"):
        check_rail_mapping([bad], f)


def test_native_terms_reproduce_layer_by_layer_time():
    rng = np.random.default_rng(0)
    f = rail_only(64, 8, 8)
    colls = [Collective("all_to_all", 3e8, "ep"), Collective("all_reduce", 2e8, "dp"),
             Collective("p2p", 1e8, "pp")]
    w = Workload("w", (Layer("a", Phase(1e-3, (colls[0], colls[1])), Phase(2e-3, (colls[2],)),
                             count=7),
                       Layer("b", Phase(5e-4, (colls[0],)), count=3)),
                 {"ep": (4, 2), "dp": (1, 8), "pp": (2, 2)})
    t = native_terms([w], f)
    for _ in range(5):
        bw = rng.uniform(10, 500, size=2)
        coll_t = (t.traffic_gb / bw + t.latency_s).max(axis=1)
        from_terms = float(t.phase_counts[0] @ (t.phase_compute_s + t.phase_members @ coll_t))
        assert from_terms == pytest.approx(native_step_time_s(w, f, bw), rel=1e-12)
    report = rail_report(w, f, [450.0, 50.0], SEQ)
    assert set(report.category) == {"forwarded", "within_rail"}
    row = report[report.group == "ep"].iloc[0]
    assert row["count"] == 10
    assert row["extra_time_per_step_s"] == pytest.approx(10 * (row.time_s - row.joined_time_s))


@pytest.mark.parametrize("in_network", [(), ("scaleout",)])
def test_rail_report_times_match_the_step_time_model_for_a_flat_ring_tp(in_network):
    """A generated workload's TP group spans both dimensions and runs as one flat ring; the
    rail report must price each collective as the step-time model does (flat ring, in-network
    reduction), not with the hierarchical routing."""
    from libra_opt.generators import generate_workload
    from libra_opt.io.presets import load_device, load_model
    from libra_opt.traffic.collectives import collective_time_s
    from libra_opt.traffic.step_time import walk_arrays
    from libra_opt.traffic.timing import TimingModel

    fabric = rail_only(32, 8, hb_latency_s=1e-6, scale_out_latency_s=5e-6)
    w = generate_workload(load_model("llama3_8b"), {"tp": 16, "dp": 2, "global_batch_size": 8},
                          load_device("a100_80gb"), fabric).workload
    assert w.groups["tp"] == (8, 2) and "tp" in w.flat_ring_groups
    bw = np.array([300.0, 10.0])
    timing = TimingModel("pipelined", traffic_model="native", in_network_dims=in_network)
    # the step-time model's per-collective bytes and latency, timed one by one
    arrays = walk_arrays(w, fabric, timing)
    model = {key: collective_time_s(arrays.traffic_bytes[j], bw, arrays.latency_s[j],
                                    "pipelined")
             for j, key in enumerate(w.flat.collectives)}
    rep = rail_report(w, fabric, bw, timing)
    tp = rep[rep["group"] == "tp"]
    assert len(tp) >= 2
    for row in rep.itertuples():
        assert_allclose(row.time_s, model[(row.kind, row.size_bytes, row.group)], rtol=1e-12)
    # an all-reduce of m bytes over the 16-GPU ring (no in-network reduction): NIC carries
    # 2 m 15/16 x 2/16 bytes at 10 GB/s (slower than NVLink's 2 m 15/16 x 14/16 at 300),
    # plus 30 ring steps at the 5 us NIC latency
    if not in_network:
        ar = tp[tp["kind"] == "all_reduce"].iloc[0]
        m = ar["size_bytes"]
        by_hand = 2 * m * 15 / 16 * 2 / 16 / 10e9 + 30 * 5e-6
        assert_allclose(ar["time_s"], by_hand, rtol=1e-9)

"""Per-dimension traffic of hierarchical collectives, derived by hand."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.traffic.collectives import (
    collective_time_s,
    hierarchical_traffic_bytes,
    latency_steps,
)

# 3-D fabric, group spanning 2 of 4 on dim 0 and 4 of 8 on dim 1, not dim 2; M = 64 bytes.
# all-reduce: dim0 2*64*(1/2) = 64, m -> 32; dim1 2*32*(3/4) = 48.
# reduce-scatter: half of that.  all-gather (shard 64, reverse order): dim1 64*3 = 192,
# m -> 256; dim0 256*1 = 256.  all-to-all: 64*(1/2) = 32, 64*(3/4) = 48.  p2p: 64 each.
CASES_3D = [
    ("all_reduce", (2, 4, 1), [64.0, 48.0, 0.0]),
    ("reduce_scatter", (2, 4, 1), [32.0, 24.0, 0.0]),
    ("all_gather", (2, 4, 1), [256.0, 192.0, 0.0]),
    ("all_to_all", (2, 4, 1), [32.0, 48.0, 0.0]),
    ("p2p", (2, 4, 1), [64.0, 64.0, 0.0]),
    # spans the two outer dims: dim1 2*64/2 = 64, m -> 32; dim2 2*32*3/4 = 48
    ("all_reduce", (1, 2, 4), [0.0, 64.0, 48.0]),
    # all-gather on (1, 2, 4): dim2 64*3 = 192, m -> 256; dim1 256*1 = 256
    ("all_gather", (1, 2, 4), [0.0, 256.0, 192.0]),
    ("all_to_all", (1, 2, 4), [0.0, 32.0, 48.0]),
]

# 2-D fabric, group (4, 2), M = 1 MB: all-reduce dim0 2e6*3/4 = 1.5e6, m -> 2.5e5;
# dim1 2*2.5e5/2 = 2.5e5.
CASES_2D = [
    ("all_reduce", (4, 2), [1.5e6, 2.5e5]),
    ("reduce_scatter", (4, 2), [7.5e5, 1.25e5]),
    ("all_gather", (4, 2), [6.0e6, 1.0e6]),
    ("all_to_all", (4, 2), [7.5e5, 5.0e5]),
    ("p2p", (1, 2), [0.0, 1e6]),
]


@pytest.mark.parametrize(("kind", "span", "expected"), CASES_3D)
def test_traffic_3d_partial_groups(kind, span, expected):
    assert_allclose(hierarchical_traffic_bytes(kind, 64.0, span), expected, rtol=1e-15)


@pytest.mark.parametrize(("kind", "span", "expected"), CASES_2D)
def test_traffic_2d(kind, span, expected):
    assert_allclose(hierarchical_traffic_bytes(kind, 1e6, span), expected, rtol=1e-15)


spans = st.lists(st.sampled_from([1, 2, 3, 4, 8]), min_size=1, max_size=6)


@given(spans, st.floats(1.0, 1e10))
def test_all_reduce_is_reduce_scatter_then_all_gather(span, size):
    """AR(M) = RS(M) + AG(M / p), and AG of the shard moves what RS moved."""
    p = int(np.prod(span))
    rs = hierarchical_traffic_bytes("reduce_scatter", size, span)
    ag = hierarchical_traffic_bytes("all_gather", size / p, span)
    ar = hierarchical_traffic_bytes("all_reduce", size, span)
    assert_allclose(ag, rs, rtol=1e-12)
    assert_allclose(ar, rs + ag, rtol=1e-12)


@given(spans, st.floats(1.0, 1e10))
def test_single_dimension_ring_formula(span, size):
    """Total reduce-scatter traffic equals the flat formula M (p - 1) / p."""
    p = int(np.prod(span))
    total = hierarchical_traffic_bytes("reduce_scatter", size, span).sum()
    assert_allclose(total, size * (p - 1) / p, rtol=1e-12)


def test_latency_steps():
    assert_allclose(latency_steps("all_reduce", (4, 8, 1), ("ring", "switch", "ring")), [6, 2, 0])
    assert_allclose(latency_steps("all_gather", (4, 8), ("ring", "fully_connected")), [3, 1])
    assert_allclose(latency_steps("p2p", (1, 2), ("ring", "ring")), [0, 1])


def test_collective_time_modes():
    traffic = np.array([2e9, 1e9, 0.0])
    bw = np.array([100.0, 20.0, 0.0])  # a dimension without traffic may have zero bandwidth
    assert collective_time_s(traffic, bw) == pytest.approx(0.05)  # max(0.02, 0.05)
    assert collective_time_s(traffic, bw, mode="sequential") == pytest.approx(0.07)
    lat = np.array([1e-3, 0.0, 5.0])
    assert collective_time_s(traffic, bw, lat) == pytest.approx(0.05)
    assert collective_time_s(traffic, bw, lat, mode="sequential") == pytest.approx(0.071)
    assert collective_time_s(traffic, np.array([0.0, 20.0, 1.0])) == np.inf


@pytest.mark.parametrize(
    ("kind", "size", "span"),
    [("broadcast", 1.0, (2,)), ("all_reduce", -1.0, (2,)), ("all_reduce", np.nan, (2,)),
     ("all_reduce", 1.0, (0,)), ("all_reduce", 1.0, (1.5,))],
)
def test_bad_collectives(kind, size, span):
    with pytest.raises(InputError):
        hierarchical_traffic_bytes(kind, size, span)

"""Per-collective latency of generated workloads on validation clusters.

The clusters of the validation tables give every collective step NCCL's per-step ring latency
(NCCL src/graph/tuning.cc, ring / Simple protocol: 3.4 us over NVLink, 9.6 us over the
network), and the tensor-parallel groups of generated workloads run NCCL's ring: an
all-reduce over ``k`` GPUs pays ``2 (k - 1)`` steps. Numbers below are derived by hand.
"""

from numpy.testing import assert_allclose

from libra_opt.generators import generate_workload
from libra_opt.generators.validation import NCCL_NET_STEP_S, NCCL_NVLINK_STEP_S
from libra_opt.io.presets import load_device, load_model
from libra_opt.io.validation import validation_table_from_dict
from libra_opt.traffic.step_time import step_time, walk_arrays
from libra_opt.traffic.timing import TimingModel
from libra_opt.traffic.workload import Workload


def _table(node=None, pod=None):
    # no NCCL curve: a curve's measurement carries the link's latency (tested below)
    node = {"tier": "NVLink", "bw_gbps": 300.0, "efficiency": "none", **(node or {})}
    pod = {"tier": "InfiniBand", "bw_gbps": 25.0, **(pod or {})}
    return validation_table_from_dict({
        "name": "t", "clusters": {"c": {"device": "a100_80gb", "gpus_per_node": 8,
                                        "node": node, "pod": pod}},
        "rows": [{"name": "r", "source": "x", "metric": "step_time_s", "published": 1.0,
                  "cluster": "c", "model": "llama3_8b",
                  "parallelism": {"tp": 8, "dp": 2, "global_batch_size": 8}}]}, "t.yaml")


def test_nccl_step_latencies_are_the_published_constants():
    assert (NCCL_NVLINK_STEP_S, NCCL_NET_STEP_S) == (3.4e-6, 9.6e-6)
    row = _table().rows[0]
    fabric, _ = row.cluster.fabric(16)
    assert [d.latency_s for d in fabric.dims] == [3.4e-6, 9.6e-6]
    # a table may state its own
    row = _table(node={"latency_s": 1e-6}, pod={"latency_s": 2e-5}).rows[0]
    fabric, _ = row.cluster.fabric(16)
    assert [d.latency_s for d in fabric.dims] == [1e-6, 2e-5]


def test_tp_all_reduce_pays_the_ring_steps():
    row = _table().rows[0]
    fabric, bw = row.cluster.fabric(16)
    g = generate_workload(load_model("llama3_8b"), row.parallelism, load_device("a100_80gb"),
                          fabric)
    w = g.workload
    walk = walk_arrays(w, fabric)
    tp_ar = [i for i, (kind, _, group) in enumerate(w.flat.collectives)
             if group == "tp" and kind == "all_reduce"]
    assert tp_ar
    # TP 8 within a node: 2 x 7 ring steps of 3.4 us = 47.6 us, on the NVLink dim only
    for i in tp_ar:
        assert_allclose(walk.latency_s[i], [47.6e-6, 0.0], rtol=1e-12)
    # the same workload routed hierarchically pays the switch's 2 direct steps (6.8 us)
    hier = Workload(w.name, w.layers, w.groups, overlap_form=w.overlap_form)
    walk_h = walk_arrays(hier, fabric)
    for i in tp_ar:
        assert_allclose(walk_h.latency_s[i], [6.8e-6, 0.0], rtol=1e-12)
    # and the difference in step time is (47.6 - 6.8) us per TP all-reduce occurrence
    n_ar = sum(walk.phase_count[walk.coll_phase[j]]
               for j in range(walk.coll_distinct.size) if walk.coll_distinct[j] in tp_ar)
    loop = "overlap" if w.overlap_form else "no_overlap"
    t_flat = step_time(w, fabric, bw, TimingModel(training_loop=loop)).step_time_s
    t_hier = step_time(hier, fabric, bw, TimingModel(training_loop=loop)).step_time_s
    assert_allclose(t_flat - t_hier, n_ar * 40.8e-6, rtol=1e-9)


def test_a_link_with_an_nccl_curve_runs_each_collective_at_the_measured_fraction():
    """A100 NVLink at its 300 GB/s line rate with the device's nccl-tests curve: a 64 MiB
    all-reduce over 8 GPUs moves 2 x 7/8 x 64 MiB at the 166.63 GB/s bus bandwidth measured at
    that size (Azure ND A100 v4, NCCL 2.18.5) and pays no latency of its own; over 2 GPUs of
    the node at 197/229 of it (the 2-GPU plateau measured beside the 8-GPU one); over the
    InfiniBand pod (no curve) at the 25 GB/s line rate with NCCL's 9.6 us per ring step (2
    steps); without the curve the NVLink all-reduce runs at 300 GB/s with NCCL's 3.4 us per
    step."""
    from libra_opt.generators.validation import Cluster
    from libra_opt.traffic.workload import Collective, Layer, Phase

    size = 64 * 2**20

    def t(span, curve=None):
        c = Cluster("c", load_device("a100_80gb"), 8, 300.0, 25.0, node_efficiency=curve)
        fabric, bw = c.fabric(16)
        w = Workload("w", (Layer("l", Phase(0.0, (Collective("all_reduce", size, "g"),))),),
                     {"g": span})
        return step_time(w, fabric, bw, c.timing()).step_time_s

    assert_allclose(t((8, 1)), 2 * 7 / 8 * size / 166.63e9, rtol=1e-9)
    assert_allclose(t((2, 1)), 2 * 1 / 2 * size / (166.63e9 * 197 / 229), rtol=1e-9)
    assert_allclose(t((1, 2)), 2 * 1 / 2 * size / 25e9 + 2 * 9.6e-6, rtol=1e-9)
    # (a group not run as a flat ring: two latency steps on the switch)
    assert_allclose(t((8, 1), curve="none"), 2 * 7 / 8 * size / 300e9 + 2 * 3.4e-6, rtol=1e-9)


def test_an_unknown_nccl_curve_is_refused_naming_the_file_and_field():
    import pytest

    from libra_opt.errors import InputError

    table = {"name": "t", "clusters": {"c": {
        "device": "a100_80gb", "gpus_per_node": 8,
        "node": {"bw_gbps": 300, "efficiency": "a100_nvlink_x"}, "pod": {"bw_gbps": 25}}},
        "rows": [{"name": "r", "source": "me", "metric": "step_time_s", "published": 1.0,
                  "cluster": "c", "model": "llama3_8b",
                  "parallelism": {"tp": 8, "global_batch_size": 8}}]}
    with pytest.raises(InputError, match=r"my\.yaml: clusters\.c\.node\.efficiency: "
                       r"'a100_nvlink_x' is neither a fraction in \(0, 1\], none nor a preset"):
        validation_table_from_dict(table, "my.yaml")


def test_a_link_latency_beside_a_curve_and_an_unknown_device_curve_are_refused():
    import pytest

    from libra_opt.errors import InputError
    from libra_opt.generators.devices import device_from_dict

    row = {"name": "r", "source": "me", "metric": "step_time_s", "published": 1.0,
           "cluster": "c", "model": "llama3_8b", "parallelism": {"tp": 8, "global_batch_size": 8}}
    table = {"name": "t", "clusters": {"c": {
        "device": "a100_80gb", "gpus_per_node": 8,   # the A100's own curve on its node link
        "node": {"bw_gbps": 300, "latency_s": 1e-6}, "pod": {"bw_gbps": 25}}}, "rows": [row]}
    with pytest.raises(InputError, match=r"my\.yaml: clusters\.c\.node\.latency_s: latency_s and "
                       r"the NCCL curve 'a100_nvlink_nccl' on one link"):
        validation_table_from_dict(table, "my.yaml")
    entry = {"name": "X", "peak_flops": {"bf16": 1e15}, "hbm_bytes": 8e10, "hbm_gbps": 3000,
             "source": "d", "date": "2025", "default_efficiency": 0.5,
             "scale_up_efficiency": "nvlink"}
    with pytest.raises(InputError, match=r"x\.scale_up_efficiency: 'nvlink' is neither a "
                       r"fraction in \(0, 1\], none nor a preset"):
        device_from_dict("x", entry)

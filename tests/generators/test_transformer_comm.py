"""Collective bytes per group for small configurations, derived by hand.

Tiny model: h = 16, FFN 64 (GELU, two matrices), 4 heads of 4, vocabulary 32, sequence 8,
2 layers, RMSNorm, no biases, untied embeddings, bf16 (2 bytes).

Parameters by hand: attention 4 x 16 x 16 = 1024, MLP 2 x 16 x 64 = 2048, norms 2 x 16 = 32
per layer (3104); embedding 32 x 16 = 512; output layer 512 + final norm 16.
"""

import pytest

from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.generators import generate_workload, model_from_dict
from libra_opt.io.presets import load_device
from libra_opt.traffic.collectives import hierarchical_traffic_bytes

FABRIC = Fabric((Dim("node", "switch", 4, "A"), Dim("pod", "switch", 2, "B")))
BASE = dict(kind="transformer", name="tiny", n_layers=2, hidden_size=16, ffn_hidden_size=64,
            n_heads=4, vocab_size=32, seq_len=8, norm="rmsnorm")


def tiny(**kw):
    return model_from_dict({**BASE, **kw})


def gen(par, model=None, fabric=FABRIC):
    return generate_workload(model or tiny(), par, load_device("a100_80gb"), fabric, efficiency=0.5)


def layer(g, name):
    (lay,) = [x for x in g.workload.layers if x.name == name]
    return lay


def sig(phase):
    return [(c.kind, c.size_bytes, c.group) for c in phase.collectives]


def test_tensor_parallel_with_sequence_parallelism():
    # T = 2 sequences x 8 tokens = 16 tokens; one activation A = 16 x 16 x 2 = 512 bytes.
    g = gen({"tp": 4, "sequence_parallel": True, "dp": 2, "micro_batch_size": 2,
             "global_batch_size": 4})
    assert g.workload.groups["tp"] == (4, 1) and g.workload.groups["dp"] == (1, 2)
    dense = layer(g, "dense_layer")
    assert dense.count == 2  # 1 micro-batch x 2 layers
    per_block = [("all_gather", 128.0, "tp"), ("reduce_scatter", 512.0, "tp")]
    assert sig(dense.forward) == per_block * 2
    assert sig(dense.input_grad) == per_block * 2
    assert sig(dense.weight_grad) == [("all_gather", 128.0, "tp")] * 2
    # every AG (shard 128 x 3) and RS (512 x 3/4) sends 384 bytes per NPU on 'node'
    fwd = sum(hierarchical_traffic_bytes(k, s, (4, 1)) for k, s, _ in sig(dense.forward))
    assert fwd.tolist() == [4 * 384.0, 0.0]
    assert sig(layer(g, "embedding").forward) == [("reduce_scatter", 512.0, "tp")]
    assert sig(layer(g, "embedding").input_grad) == [("all_gather", 128.0, "tp")]
    out = layer(g, "output_layer")
    # gather the final hidden states; cross-entropy all-reduces 3 fp32 values per token
    assert sig(out.forward) == [("all_gather", 128.0, "tp"), ("all_reduce", 192.0, "tp")]
    assert sig(out.input_grad) == [("reduce_scatter", 512.0, "tp")]
    # gradient all-reduce over dp: per NPU (1024 + 2048)/4 + 32 per layer, 512/4 embedding,
    # 512/4 + 16 output layer = 1872 parameters x 2 bytes
    assert sig(layer(g, "dp_grad_sync").weight_grad) == [("all_reduce", 3744.0, "dp")]


def test_tensor_parallel_without_sp_and_full_recompute():
    g = gen({"tp": 4, "dp": 2, "micro_batch_size": 2, "global_batch_size": 4,
             "recompute": "full"})
    dense = layer(g, "dense_layer")
    assert sig(dense.forward) == [("all_reduce", 512.0, "tp")] * 2
    # backward all-reduces plus the recomputed forward's
    assert sig(dense.input_grad) == [("all_reduce", 512.0, "tp")] * 4
    assert sig(dense.weight_grad) == []


def test_zero3_gathers_parameters_every_micro_batch():
    g = gen({"dp": 8, "zero": 3, "global_batch_size": 16})  # 2 micro-batches
    dense = layer(g, "dense_layer")
    assert dense.count == 2 * 2
    assert sig(dense.forward) == [("all_gather", 3104 * 2 / 8, "dp")]
    assert sig(dense.input_grad) == [("all_gather", 3104 * 2 / 8, "dp")]
    assert sig(dense.weight_grad) == [("reduce_scatter", 3104 * 2.0, "dp")]
    assert sig(layer(g, "embedding").forward) == [("all_gather", 512 * 2 / 8, "dp")]
    names = [x.name for x in g.workload.layers]
    assert "dp_grad_sync" not in names
    assert sig(layer(g, "optimizer_step").forward) == []


def test_zero1_reduce_scatter_and_all_gather_once_per_step():
    g = gen({"dp": 8, "zero": 1, "global_batch_size": 16})
    params = 2 * 3104 + 512 + 512 + 16
    assert sig(layer(g, "dp_grad_sync").weight_grad) == [("reduce_scatter", params * 2.0, "dp")]
    assert sig(layer(g, "optimizer_step").forward) == [("all_gather", params * 2 / 8, "dp")]
    assert layer(g, "dp_grad_sync").count == 1


def test_expert_parallel_top2_all_to_all():
    moe = tiny(moe={"n_experts": 8, "top_k": 2, "expert_ffn_hidden_size": 32})
    g = gen({"dp": 8, "ep": 4, "global_batch_size": 8}, model=moe)
    assert g.workload.groups["ep"] == (4, 1)
    assert g.workload.groups["edp"] == (1, 2)
    assert g.workload.groups["dp"] == (4, 2)
    moe_layer = layer(g, "moe_layer")
    # 8 tokens x top-2 x h 16 x 2 bytes = 512 bytes, dispatch + combine
    assert sig(moe_layer.forward) == [("all_to_all", 512.0, "ep")] * 2
    assert sig(moe_layer.input_grad) == [("all_to_all", 512.0, "ep")] * 2
    # each NPU sends 3/4 of every all-to-all on 'node'
    assert hierarchical_traffic_bytes("all_to_all", 512.0, (4, 1)).tolist() == [384.0, 0.0]
    # dense gradients over dp (8): attention 1024 + router 16 x 8 + norms 32 per layer,
    # embedding 512, output 512 + 16; expert gradients over edp (2): 2 layers x 2 local
    # experts (8 experts / ep 4) x 2 x 16 x 32 parameters
    sync = sig(layer(g, "dp_grad_sync").weight_grad)
    assert sync == [("all_reduce", (2 * 1184 + 1040) * 2.0, "dp"),
                    ("all_reduce", 2 * 2 * 1024 * 2.0, "edp")]
    padded = gen({"dp": 8, "ep": 4, "global_batch_size": 8, "capacity_factor": 1.25}, model=moe)
    assert sig(layer(padded, "moe_layer").forward) == [("all_to_all", 640.0, "ep")] * 2


def test_pipeline_boundaries_bubble_and_send_recv():
    m4 = tiny(n_layers=4)
    g = gen({"pp": 2, "dp": 4, "global_batch_size": 16}, model=m4)  # m = 4 micro-batches
    assert g.workload.groups["pp"] == (1, 2)
    counts = {x.name: x.count for x in g.workload.layers}
    # the last stage (2 layers + output layer) is the slowest
    assert counts["dense_layer"] == 4 * 2
    assert counts["output_layer"] == 4
    # flow-shop fill and drain: the first stage's time, in passes of the slowest (last) one
    t_first, t_last = g.stage_compute_s
    r = t_first / t_last
    assert 0.5 < r < 1
    assert counts["bubble_dense_layer"] == 1  # floor(2 layers x r) whole passes
    assert counts["bubble_dense_layer_part"] == counts["bubble_output_layer_part"] == 1
    bubble = [x for x in g.workload.layers if x.name.startswith("bubble_")]
    bubble_s = sum(x.count * (x.forward.compute_s + x.input_grad.compute_s + x.weight_grad.compute_s)
                   for x in bubble)
    assert bubble_s == pytest.approx(t_first / 4, rel=1e-12)   # one micro-batch of stage 0
    assert g.bubble_compute_s == pytest.approx(t_first / 4, rel=1e-12)
    # v m + p - 1 transfers of one activation (8 tokens x 16 x 2 bytes) each way
    sr = layer(g, "pp_send_recv")
    assert sr.count == 4 + 1
    assert sig(sr.forward) == [("p2p", 256.0, "pp")]
    assert sig(sr.input_grad) == [("p2p", 256.0, "pp")]
    assert g.bubble_fraction == pytest.approx(r / 4)   # (p - 1) / m = 1 / 4 for equal stages
    gi = gen({"pp": 2, "interleave": 2, "dp": 4, "global_batch_size": 16}, model=m4)
    counts = {x.name: x.count for x in gi.workload.layers}
    assert "bubble_dense_layer" not in counts   # 2 layers x r / v < 1 pass: one scaled copy
    assert gi.bubble_fraction == pytest.approx(r / 2 / 4)
    assert counts["pp_send_recv"] == 2 * 4 + 1


def test_pipeline_scatter_gather_with_tensor_parallelism():
    g = gen({"tp": 4, "pp": 2, "global_batch_size": 2}, model=tiny(n_layers=2))
    sr = layer(g, "pp_send_recv")
    # each TP rank sends 1/4 of the 256-byte activation, the receiver all-gathers it
    assert sig(sr.forward) == [("p2p", 64.0, "pp"), ("all_gather", 64.0, "tp")]


def test_tied_embedding_gradients_summed_once_per_step_between_first_and_last_stage():
    """The first and the last stage each hold the 32 x 16 word embedding (tied); with TP 2
    each rank holds 32 x 16 / 2 = 256 values, whose bf16 gradients (512 bytes) the two stages
    sum once per step: a ring all-reduce of two ranks, in which each sends its whole copy
    once -- one 512-byte transfer on the pipeline group."""
    tied = tiny(n_layers=4, tied_embeddings=True)
    g = gen({"tp": 2, "pp": 2, "dp": 2, "global_batch_size": 4}, model=tied)
    sync = layer(g, "tied_embedding_grad_sync")
    assert sync.count == 1
    assert sig(sync.weight_grad) == [("p2p", 512.0, "pp")]
    assert sync.forward.collectives == sync.input_grad.collectives == ()
    assert sync.weight_grad.compute_s == 0.0
    # untied, or a single stage holding both: nothing to sum
    for other in (gen({"tp": 2, "pp": 2, "dp": 2, "global_batch_size": 4}, model=tiny(n_layers=4)),
                  gen({"tp": 2, "dp": 4, "global_batch_size": 4}, model=tied)):
        assert "tied_embedding_grad_sync" not in {x.name for x in other.workload.layers}
    # fp32 gradients: twice the bytes
    g32 = gen({"tp": 2, "pp": 2, "dp": 2, "global_batch_size": 4,
               "precision": {"compute_dtype": "bf16", "param_bytes": 2, "grad_bytes": 4,
                             "optimizer_bytes": 12}}, model=tied)
    assert sig(layer(g32, "tied_embedding_grad_sync").weight_grad) == [("p2p", 1024.0, "pp")]
    # ZeRO-3 keeps a 1 / dp shard of each gradient: the two stages sum their shards
    g3 = gen({"tp": 2, "pp": 2, "dp": 2, "zero": 3, "global_batch_size": 4}, model=tied)
    assert sig(layer(g3, "tied_embedding_grad_sync").weight_grad) == [("p2p", 256.0, "pp")]
    # the in-network optimizer's aggregators receive both copies in the push and sum them
    gi = gen({"tp": 2, "pp": 2, "dp": 2, "dp_mode": "in_network_optimizer",
              "global_batch_size": 4}, model=tied)
    assert "tied_embedding_grad_sync" not in {x.name for x in gi.workload.layers}


def test_tied_embedding_sum_is_exposed_in_overlap_form():
    """With the data-parallel reduction behind the backward pass (overlap form) the sum
    hides behind nothing: the step is longer by exactly its own time."""
    from dataclasses import replace

    from libra_opt.traffic.step_time import step_time
    from libra_opt.traffic.timing import TimingModel

    tied = tiny(n_layers=4, tied_embeddings=True)
    g = gen({"tp": 2, "pp": 2, "dp": 2, "dp_comm_overlap": True, "global_batch_size": 4},
            model=tied)
    w = g.workload
    assert w.overlap_form
    sync = [x for x in w.layers if x.name.startswith("tied_embedding_grad_sync")]
    assert len(sync) == 1
    bw, over = [10.0, 1.0], TimingModel(training_loop="overlap")
    without = replace(w, layers=tuple(x for x in w.layers if x not in sync))
    alone = replace(w, layers=tuple(sync))
    t_sync = step_time(alone, FABRIC, bw, over).step_time_s
    assert t_sync > 0
    assert step_time(w, FABRIC, bw, over).step_time_s == pytest.approx(
        step_time(without, FABRIC, bw, over).step_time_s + t_sync, rel=1e-12)


def test_context_parallel_kv_exchange():
    g = gen({"cp": 2, "dp": 4, "global_batch_size": 4})
    # 4 tokens per CP rank x 4 KV heads x (4 + 4) x 2 bytes = 256 bytes
    dense = layer(g, "dense_layer")
    assert sig(dense.forward) == [("all_gather", 256.0, "cp")]
    assert sig(dense.input_grad) == [("reduce_scatter", 512.0, "cp")]
    # dense gradients reduce over dp x cp
    assert g.workload.groups["dp"] == (4, 2)

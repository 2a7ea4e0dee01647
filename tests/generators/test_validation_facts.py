"""Facts of the published runs the validation tables rely on, checked by hand.

* Llama 3 405B pipeline: one layer per model chunk (Dubey et al. 2024, Sec. 3.3.2: "the first
  model chunk on the first stage has only the embedding, and the last model chunk on the
  last stage has only output projection and loss calculation"), so 126 layers + 2 chunks
  on 16 ranks is 8 virtual stages per rank.
* Fused attention on H100 priced at the published FlashAttention-2 speed (Dao 2023,
  arXiv:2307.08691, Fig. 7: up to 335 TFLOP/s forward + backward on H100 SXM5, FLOPs counted
  as executed).
* NVLink tiers of the packaged clusters at NCCL's effective bandwidth (NCCL maintainer:
  ~230 GB/s on A100, github.com/NVIDIA/nccl-tests/issues/149; 370 GB/s on H100,
  github.com/NVIDIA/nccl-tests/issues/212).
"""

import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.generators.operators import Operator, transformer_layer_operators
from libra_opt.generators.parallelism import Parallelism
from libra_opt.generators.pipeline import stage_plan
from libra_opt.generators.roofline import operator_time_s
from libra_opt.io.presets import load_device, load_model
from libra_opt.io.validation import load_validation_table, validation_table_names


def test_llama3_pipeline_one_layer_per_chunk():
    m = load_model("llama3_405b")
    assert m.n_layers == 126
    plan = stage_plan(m, 16, 8)  # 16 x 8 = 128 chunks = 126 layers + embedding + output
    assert [s.n_layers for s in plan] == [7] + [8] * 14 + [7]
    assert plan[0].has_embedding and plan[-1].has_head
    assert not any(s.has_embedding or s.has_head for s in plan[1:-1])


def test_stage_plan_falls_back_to_partition_layers_and_refuses_empty_chunks():
    m = load_model("llama3_405b")
    assert [s.n_layers for s in stage_plan(m, 16, 1)] == [7] + [8] * 14 + [7]
    with pytest.raises(InputError):
        stage_plan(m, 16, 9)  # 144 chunks: 18 would be empty


def test_llama3_rows_use_the_derived_interleave():
    for row in load_validation_table("llama3_h100").rows:
        assert row.parallelism.pp * row.parallelism.interleave == row.model.n_layers + 2


def test_flash_attention_priced_at_the_published_h100_speed():
    h100 = load_device("h100_sxm")
    assert_allclose(h100.attention_efficiency * 989.4e12, 335e12, rtol=1e-3)
    ops = transformer_layer_operators(load_model("llama3_405b"),
                                      Parallelism(tp=8, sequence_parallel=True, global_batch_size=1),
                                      moe=False)
    fa = next(o for o in ops.forward if o.name == "flash_attention")
    # one 8192-token sequence, 16 query heads of 128 per rank, causal: 2 b a s^2 (d_qk + d_v) / 2
    flops = 2 * 16 * 8192**2 * 256 / 2
    assert_allclose(fa.flops, flops)
    assert_allclose(operator_time_s(fa, h100, "bf16"), flops / 335e12, rtol=1e-3)


def test_devices_without_an_attention_benchmark_price_it_as_a_gemm():
    a100 = load_device("a100_80gb")
    assert a100.attention_efficiency == 0
    op = Operator("flash_attention", "attention", 1e12, 1e6, (8192, 128, 8192, 16),
                  fused_attention=True)
    plain = Operator("gemm", "attention", 1e12, 1e6, (8192, 128, 8192, 16))
    assert operator_time_s(op, a100, "bf16") == operator_time_s(plain, a100, "bf16")


@pytest.mark.parametrize("name", validation_table_names())
def test_nvlink_tiers_at_their_line_rate_and_the_device_efficiency(name):
    """Every table states the NVLink line rate (300 GB/s per direction on A100, 450 on H100,
    the datasheets); what collectives reach of it is the device's: the A100's measured NCCL
    curve, whose plateau is the ~230 GB/s the NCCL maintainers give (nccl-tests issue #149),
    and the H100's NCCL-effective 370 GB/s (issue #212)."""
    from libra_opt.traffic.collective_settings import link_efficiency_value
    from libra_opt.traffic.links import LINE_RATE_PRESETS
    from libra_opt.traffic.nccl_curves import NCCL_CURVES
    line = {"a100_80gb": 300.0, "h100_sxm": 450.0}
    for row in load_validation_table(name).rows:
        c = row.cluster
        assert c.node_tier == "NVLink"
        assert c.node_bw_gbps == line[c.device.key]
        assert c.node_efficiency == link_efficiency_value(c.device.scale_up_efficiency, "x")
        if c.device.key == "a100_80gb":
            assert 225.0 <= NCCL_CURVES[c.node_efficiency].busbw_gbps[-1] <= 235.0
            assert c.timing().efficiency[0] == ("node", "a100_nvlink_nccl")
        else:
            assert_allclose(c.node_bw_gbps * LINE_RATE_PRESETS["h100_nvlink"].fraction, 370.0,
                            rtol=1e-12)


def test_jean_zay_omni_path_at_the_nccl_rate_measured_there():
    """BigScience's all_reduce_bench on 4 Jean Zay A100 nodes (experiments/bandwidth, NCCL
    2.10.3 over the four hfi1 Omni-Path ports): an all_reduce of a 500,000 x 2,000 fp32
    tensor (4.0 GB) over 32 GPUs takes 1.519-1.531 s on every rank after the first trial. Its bus bandwidth is
    ``S / t x 2 (n - 1) / n`` = 4.0 / 1.53 x 62 / 32 = 5.07 GB/s, the rate of the one port
    per direction the log shows the ring crossing each node through; four ports shared by
    eight GPUs give each 4 x 5.07 / 8 = 2.53 GB/s, the BLOOM table's Omni-Path tier."""
    size_bytes, duration_s, n = 500_000 * 2_000 * 4, 1.53, 32
    busbw_gbps = size_bytes / duration_s * 2 * (n - 1) / n / 1e9
    assert_allclose(busbw_gbps, 5.065, atol=5e-4)
    per_gpu_gbps = 4 * busbw_gbps / 8
    rows = load_validation_table("bloom_prequel_a100").rows
    assert {r.cluster.pod_tier for r in rows} == {"OmniPath"}
    # the line rate (4 x 100 Gb/s ports per 8 GPUs) and the fraction NCCL reached of a port
    assert {r.cluster.pod_bw_gbps for r in rows} == {4 * 12.5 / 8}
    assert {r.cluster.pod_efficiency for r in rows} == {round(busbw_gbps / 12.5, 4)} == {0.4052}
    assert_allclose(6.25 * 0.4052, per_gpu_gbps, atol=1e-3)

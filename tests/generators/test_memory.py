"""Memory per NPU against published figures and formulas."""

import pytest

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.generators import Parallelism, generate_workload, model_from_dict
from libra_opt.generators.memory import transformer_layer_activation_bytes
from libra_opt.io.presets import load_device, load_model


def gpt_7_5b():
    """Megatron's 7.5B GPT (Narayanan et al. SC'21 Table 1: h 4096, 36 layers, 32 heads)."""
    return model_from_dict(
        dict(kind="transformer", name="gpt_7.5b", n_layers=36, hidden_size=4096,
             ffn_hidden_size=16384, n_heads=32, vocab_size=51200, seq_len=2048, bias=True,
             tied_embeddings=True, learned_position_embeddings=True, dropout=True)
    )


@pytest.mark.parametrize(("zero", "published_gb"), [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure1_model_states(zero, published_gb):
    """ZeRO (Rajbhandari et al. SC'20) Fig. 1: 7.5B parameters, 64 data-parallel GPUs,
    mixed-precision Adam (K = 12): 120 GB baseline, 31.4 GB (P_os), 16.6 GB (P_os+g),
    1.9 GB (P_os+g+p) of model states per GPU."""
    fabric = Fabric((Dim("node", "switch", 8, "A"), Dim("pod", "switch", 8, "B")))
    g = generate_workload(
        gpt_7_5b(), {"dp": 64, "zero": zero, "global_batch_size": 64}, load_device("a100_80gb"), fabric,
        efficiency=0.5, check_memory=False,
    )
    states = g.memory.weights_bytes + g.memory.grads_bytes + g.memory.optimizer_bytes
    assert states / 1e9 == pytest.approx(published_gb, rel=0.02)


def test_korthikanti_activation_formulas():
    """Korthikanti et al. (MLSys'23) Table 2, per layer, with s b h (34 + 5 a s / h) base."""
    m = load_model("gpt3_175b")
    s, h, a, t, b = 2048, 12288, 96, 8, 1

    def act(**kw):
        return transformer_layer_activation_bytes(m, Parallelism(global_batch_size=8, **kw), False)

    sbh = s * b * h
    assert act() == pytest.approx(sbh * (34 + 5 * a * s / h))
    assert act(tp=t) == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    assert act(tp=t, sequence_parallel=True) == pytest.approx(sbh / t * (34 + 5 * a * s / h))
    assert act(tp=t, sequence_parallel=True, recompute="selective") == pytest.approx(34 * sbh / t)
    assert act(tp=t, recompute="full") == pytest.approx(2 * sbh)


def test_pipeline_first_stage_holds_p_micro_batches():
    """Korthikanti et al. Sec. 4.2.3: with 1F1B the first stage keeps p micro-batches, so its
    activation memory is that of all L layers for one micro-batch (x (1 + (p-1)/(p v)))."""
    m = load_model("gpt3_175b")
    fabric = Fabric((Dim("node", "switch", 8, "A"), Dim("pod", "switch", 64, "B")))
    par = {"tp": 8, "sequence_parallel": True, "pp": 8, "dp": 8, "global_batch_size": 512,
           "recompute": "selective"}
    g = generate_workload(m, par, load_device("a100_80gb"), fabric, efficiency=0.5)
    per_layer = 34 * 2048 * 12288 / 8
    assert g.memory.where == "pipeline stage 0"
    assert g.memory.activations_bytes == pytest.approx(96 * per_layer)
    gi = generate_workload(m, {**par, "interleave": 2}, load_device("a100_80gb"), fabric, efficiency=0.5)
    assert gi.memory.activations_bytes == pytest.approx(96 * per_layer * (1 + 7 / 16))


def test_does_not_fit_raises_a_clear_error():
    fabric = Fabric((Dim("node", "switch", 8, "A"),))
    with pytest.raises(InputError) as e:
        generate_workload(load_model("gpt3_175b"), {"tp": 8, "global_batch_size": 1},
                          load_device("a100_80gb"), fabric)
    msg = e.value.one_line()
    assert "does not fit" in msg and "of 80 GB" in msg and "weights" in msg
    assert e.value.field == "parallelism"

"""The development set of measured Megatron-DeepSpeed runs (vtrain_dev_a100.yaml): the table
copies its source's 41 rows, and the mechanisms the model gained on it behave as derived."""

import csv
import math
from pathlib import Path

import pytest
from numpy.testing import assert_allclose

from libra_opt.explore.ranking import variant_rankings
from libra_opt.explore.validation import validate
from libra_opt.generators.operators import fused_softmax, transformer_layer_operators
from libra_opt.io.validation import load_validation_table

RUNS = Path(__file__).resolve().parents[2].parent / "shared/measured/vtrain_dev/runs.csv"


@pytest.fixture(scope="module")
def table():
    return load_validation_table("vtrain_dev_a100")


@pytest.mark.skipif(not RUNS.exists(), reason="the measured runs are not beside the clone")
def test_the_table_copies_the_41_measured_runs(table):
    runs = list(csv.DictReader(RUNS.open()))
    assert len(runs) == len(table.rows) == 41
    for run, row in zip(runs, table.rows, strict=True):
        p, m = row.parallelism, row.model
        assert (p.tp, p.pp, p.dp, p.micro_batch_size, p.global_batch_size) == tuple(
            int(run[k]) for k in ("tp", "pp", "dp", "micro_batch", "global_batch"))
        assert (m.hidden_size, m.n_heads, m.n_layers, m.seq_len) == tuple(
            int(run[k]) for k in ("hidden_size", "attention_heads", "layers", "seq_len"))
        assert row.published == pytest.approx(float(run["iteration_time_ms"]) / 1000, abs=5e-6)
        assert p.n_npus == int(run["gpus"]) and m.ffn_hidden_size == 4 * m.hidden_size


def test_vocabulary_is_gpt2s_padded_to_128_tp(table):
    # 50,257 rounded up to a multiple of 128 x TP
    padded = {1: 50304, 2: 50432, 4: 50688, 8: 51200, 16: 51200}
    for row in table.rows:
        assert row.model.vocab_size == padded[row.parallelism.tp]
        assert row.model.vocab_size % (128 * row.parallelism.tp) == 0


def test_one_variant_set_per_model_and_named_calibration_rows(table):
    sets = {}
    for r in table.rows:
        sets.setdefault(r.variant_set, []).append(r)
    assert {k: len(v) for k, v in sets.items()} == {"vtrain_gpt_3p6b_64gpu": 26,
                                                    "vtrain_gpt_18p4b_256gpu": 15}
    assert [r.name for r in table.rows if r.calibrate_stack] == [
        "GPT 3.6B, TP 1, PP 1, DP 64, MBS 8", "GPT 18.4B, TP 8, PP 1, DP 32, MBS 8"]
    assert not any(r.calibrate for r in table.rows)
    assert {r.software_stack for r in table.rows} == {"megatron_deepspeed_2023"}


def test_the_fused_softmax_needs_4_divide_the_score_matrices():
    # Megatron's FusedScaleMaskSoftmax: micro-batch x heads on the rank a multiple of 4
    assert fused_softmax(2 * 48 // 8, 2048, 2048)          # 18.4B, TP 8: 12 matrices
    assert not fused_softmax(2 * 48 // 16, 2048, 2048)     # TP 16: 6
    assert not fused_softmax(4, 2048, 16) and not fused_softmax(4, 2048, 8192)


def test_the_unfused_softmax_streams_fp32_copies(table):
    """fp16 scores -> fp32 (2 + 4 bytes), scale (4 + 4), mask (4 + 4), softmax (4 + 4),
    -> fp16 (4 + 2): 36 bytes per score forward; backward the same casts, the softmax
    gradient (reads 8, writes 4), mask and scale gradients: 40 bytes; fused 4 and 6."""
    rows = {r.name: r for r in table.rows}
    wide = rows["GPT 18.4B, TP 16, PP 1, DP 16, MBS 2"]
    narrow = rows["GPT 18.4B, TP 8, PP 1, DP 32, MBS 2"]
    for row, name, fwd, bwd in ((wide, "softmax_unfused", 36, 40), (narrow, "softmax", 4, 6)):
        ops = transformer_layer_operators(row.model, row.parallelism, moe=False)
        scores = 2 * (48 // row.parallelism.tp) * 2048 * 2048
        (f,) = [o for o in ops.forward if o.name == name]
        (b,) = [o for o in ops.input_grad if o.name == f"{name}_bwd"]
        assert (f.size_bytes, b.size_bytes) == (fwd * scores, bwd * scores)


def test_dev_set_errors_and_rankings(table):
    """Average |error| per model with the stack's constant (target <= 8 %), Spearman and
    regret as reached today (targets: >= 0.9, <= 3 %)."""
    res = validate(table)
    sets = {v.name: v for v in variant_rankings([res])}
    small, large = sets["vtrain_gpt_3p6b_64gpu"], sets["vtrain_gpt_18p4b_256gpu"]
    assert small.mean_abs_error <= 0.08 and large.mean_abs_error <= 0.08
    assert small.meets_target and small.spearman >= 0.96
    assert large.spearman >= 0.72 and large.regret <= 0.045
    # the stack row of each model is reproduced by the one constant within 1.6 %
    for r in res.rows:
        if r.calibrate_stack:
            assert abs(r.error) < 0.016
    assert math.isclose(sum(r.role == "validation" for r in res.rows), 39)


def test_the_two_gpu_plateau_slows_tp_2_collectives_by_the_measured_ratio():
    from libra_opt.traffic.nccl_curves import NCCL_CURVES

    c = NCCL_CURVES["a100_nvlink_nccl"]
    assert_allclose(c.efficiency_at(2**30, 2) / c.efficiency_at(2**30, 8), 197 / 229)
    assert_allclose(c.efficiency_at(2**27, 4) / c.efficiency_at(2**27), (197 / 229) ** 0.5)
    assert c.efficiency_at(2**27, 16) == c.efficiency_at(2**27)

"""Model descriptors: presets load, parameter counts match published figures, errors name
file and field."""

from pathlib import Path

import pytest

from libra_opt.errors import InputError, input_context
from libra_opt.generators import model_from_dict
from libra_opt.generators.dlrm import dlrm_params
from libra_opt.generators.resnet import resnet_stage_counts
from libra_opt.generators.transformer_counts import active_params, total_params
from libra_opt.io.presets import load_model, model_presets

ROOT = Path(__file__).resolve().parents[2]

# (preset, published total parameters, published active parameters, source)
PUBLISHED_PARAMS = [
    # Narayanan et al. SC'21 Table 2 uses 174.6B for GPT-3.
    ("gpt3_175b", 174.6e9, None),
    # Narayanan et al. SC'21 Table 1: 1008.0B.
    ("megatron_1t", 1008.0e9, None),
    # Meta model cards (huggingface.co/meta-llama): 8.03B, 70.6B, 405.9B (rounded to 3 digits).
    ("llama3_8b", 8.03e9, None),
    ("llama3_70b", 70.6e9, None),
    ("llama3_405b", 406e9, None),
    # Jiang et al. 2024 (Mixtral of Experts), Sec. 2: 47B total, 13B active.
    ("mixtral_8x7b", 46.7e9, 12.9e9),
    # DeepSeek-V3 technical report, abstract: 671B total, 37B activated.
    ("deepseek_v3", 671e9, 37e9),
]


def test_every_preset_loads_and_is_mirrored_in_workloads():
    names = model_presets()
    assert set(names) >= {
        "gpt3_175b",
        "megatron_1t",
        "llama3_8b",
        "llama3_70b",
        "llama3_405b",
        "mixtral_8x7b",
        "deepseek_v3",
        "dlrm_criteo_1tb",
        "resnet50",
    }
    for name in names:
        load_model(name)


def test_every_preset_cites_its_sources():
    for name in model_presets():
        text = (ROOT / "libra_opt" / "data" / "models" / f"{name}.yaml").read_text()
        assert "Sources:" in text
        assert "arXiv" in text or "CVPR" in text


@pytest.mark.parametrize(("preset", "total", "active"), PUBLISHED_PARAMS)
def test_parameter_counts_match_published(preset, total, active):
    m = load_model(preset)
    assert total_params(m) == pytest.approx(total, rel=0.006)
    if active is not None:
        assert active_params(m) == pytest.approx(active, rel=0.02)


@pytest.mark.parametrize(
    ("layers", "hidden", "heads", "published_b"),
    [(48, 8192, 64, 39.1), (60, 10240, 80, 76.1), (80, 12288, 96, 145.6), (96, 16384, 128, 310.1),
     (105, 20480, 128, 529.6)],
)
def test_megatron_table1_parameter_counts(layers, hidden, heads, published_b):
    """Narayanan et al. SC'21 Table 1, vocabulary 51200, sequence 2048."""
    m = model_from_dict(
        dict(kind="transformer", name="g", n_layers=layers, hidden_size=hidden,
             ffn_hidden_size=4 * hidden, n_heads=heads, vocab_size=51200, seq_len=2048,
             bias=True, tied_embeddings=True, learned_position_embeddings=True)
    )
    assert round(total_params(m) / 1e9, 1) == published_b


def test_resnet50_counts_match_torchvision_and_he_et_al():
    m = load_model("resnet50")
    st = resnet_stage_counts(m)
    # torchvision resnet50 docs: 25,557,032 parameters, 4.09 GFLOPS (multiply-accumulates).
    assert sum(s.params for s in st) == 25_557_032
    assert sum(s.macs for s in st) == pytest.approx(4.09e9, rel=0.002)
    # He et al. 2016 Table 1 (stride in the first 1x1 conv): 3.8e9 multiply-adds.
    v1 = m.model_copy(update={"downsample_on_3x3": False})
    assert sum(s.macs for s in resnet_stage_counts(v1)) == pytest.approx(3.8e9, rel=0.02)


def test_dlrm_parameter_count_by_hand():
    emb, mlp = dlrm_params(load_model("dlrm_criteo_1tb"))
    rows = 187_767_399  # sum of the 26 MLPerf Criteo-1TB table sizes
    assert emb == rows * 128
    bottom = 13 * 512 + 512 + 512 * 256 + 256 + 256 * 128 + 128
    top = 479 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 512 + 512 + 512 * 256 + 256 + 257
    assert mlp == bottom + top


def test_unknown_key_names_file_and_field(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text(
        "kind: transformer\nname: x\nn_layers: 2\nhidden_size: 8\nffn_hidden_size: 8\n"
        "n_heads: 2\nvocab_size: 8\nseq_len: 4\nmoe: {n_experts: 4, top_k: 2, "
        "expert_ffn_hidden_size: 8, capacity: 1.0}\n"
    )
    with pytest.raises(InputError) as e:
        load_model(p)
    assert e.value.source == str(p)
    assert e.value.field == "moe"
    assert "unknown key 'capacity'" in e.value.message


def test_bad_value_names_field():
    with pytest.raises(InputError) as e, input_context("m.yaml"):
        model_from_dict(
            {"kind": "transformer", "name": "x", "n_layers": 0, "hidden_size": 8,
             "ffn_hidden_size": 8, "n_heads": 2, "vocab_size": 8, "seq_len": 4},
        )
    assert e.value.field == "n_layers" and e.value.source == "m.yaml"


def test_inconsistent_heads_are_rejected():
    with pytest.raises(InputError, match="n_kv_heads"):
        model_from_dict(
            {"kind": "transformer", "name": "x", "n_layers": 1, "hidden_size": 8,
             "ffn_hidden_size": 8, "n_heads": 4, "n_kv_heads": 3, "vocab_size": 8, "seq_len": 4}
        )


def test_top_k_larger_than_experts_is_rejected():
    with pytest.raises(InputError, match="top_k 4 exceeds n_experts 2"):
        model_from_dict(
            {"kind": "transformer", "name": "x", "n_layers": 1, "hidden_size": 8,
             "ffn_hidden_size": 8, "n_heads": 2, "vocab_size": 8, "seq_len": 4,
             "moe": {"n_experts": 2, "top_k": 4, "expert_ffn_hidden_size": 8}}
        )


def test_missing_kind_and_unknown_preset():
    with pytest.raises(InputError, match="kind"):
        model_from_dict({"name": "x"})
    with pytest.raises(InputError, match="unknown model preset 'gpt5'"):
        load_model("gpt5")


def test_relative_path_resolves_against_base_dir(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "tiny.yaml").write_text(
        "kind: resnet\nname: r\nstages: [{blocks: 1, width: 8}]\n"
    )
    assert load_model("m/tiny.yaml", base_dir=tmp_path).name == "r"
    with pytest.raises(InputError, match="file not found"):
        load_model("m/none.yaml", base_dir=tmp_path)

"""``libra-opt search``: table, files, errors."""

from __future__ import annotations

import pandas as pd
import pytest

from libra_opt.cli.main import main

MODEL = """kind: transformer
name: tiny
n_layers: 4
hidden_size: 512
ffn_hidden_size: 2048
n_heads: 8
n_kv_heads: 2
vocab_size: 32000
seq_len: 2048
gated_mlp: true
norm: rmsnorm
"""

SCENARIO = """name: tiny_search
fabric: {builder: fat_tree, n_npus: 64, hb_domain: 8, switch_radix: 64}
cost_model: {catalog: current_2025}
workloads:
  - name: tiny
    model: tiny.yaml
    device: h100_sxm
    parallelism: {tp: 8, dp: 8, global_batch_size: 32, recompute: full, zero: 1}
constraints:
  bounds: {hb: [100, 900], scaleout: [12.5, 200]}
  budget_usd: 2.0e6
objective: perf
"""


@pytest.fixture()
def scenario(tmp_path):
    (tmp_path / "tiny.yaml").write_text(MODEL)
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO)
    return p


def test_search_prints_the_top_and_writes_files(scenario, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    code = main(["search", str(scenario), "--top", "3", "--hb-domain", "8,16",
                 "--space", "micro_batch_sizes=1", "--space", "recompute=full", "--space",
                 "zero=1", "--space", "interleave=1,2",
                 "--out", str(out), "--no-progress"])
    text = capsys.readouterr().out
    assert code == 0
    assert "candidates" in text and "gain of co-design" in text
    assert (out / "search.png").stat().st_size > 1000
    df = pd.read_csv(out / "results.csv")
    assert df["n_candidates"].sum() > 0
    best = df[df["rank"] == 1].iloc[0]
    # the printed first row is the rank-1 candidate
    first = [line for line in text.splitlines() if line.lstrip().startswith("1 ")][0]
    assert f"{best['objective']:.6g}" in first
    assert set(df["fabric"]) >= {"hb 8", "hb 16"}


def test_search_refuses_bad_flags_before_the_work(scenario, tmp_path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["search", str(scenario), "--out", str(blocker)]) == 2
    assert "--out" in capsys.readouterr().err
    assert main(["search", str(scenario), "--hb-domain", "8,x"]) == 2
    assert "--hb-domain" in capsys.readouterr().err
    assert main(["search", str(scenario), "--top", "0"]) == 2
    assert main(["search", str(scenario), "--space", "colour=red"]) == 2
    assert "--space" in capsys.readouterr().err

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


DIMS_SCENARIO = """name: tiny_dims
fabric:
  dims:
    - {name: chiplet, topology: ring, size: 4, tier: InterChiplet}
    - {name: package, topology: fully_connected, size: 4, tier: InterPackage}
    - {name: node, topology: switch, size: 4, tier: InterNode}
cost_model:
  InterChiplet: {link: 1.0, switch: 0.5, nic: 0.5}
  InterPackage: {link: 3.0, switch: 2.0, nic: 1.0}
  InterNode: {link: 8.0, switch: 4.0, nic: 2.0}
workloads:
  - name: tiny
    model: tiny.yaml
    device: h100_sxm
    parallelism: {tp: 4, dp: 16, global_batch_size: 32, recompute: full, zero: 1}
constraints:
  linear: ["sum(bw) <= 900"]
  bounds: {node: [10, null]}
objective: perf
"""


def test_search_over_dimension_sizes_and_topologies(tmp_path, capsys) -> None:
    (tmp_path / "tiny.yaml").write_text(MODEL)
    p = tmp_path / "dims.yaml"
    p.write_text(DIMS_SCENARIO)
    out = tmp_path / "out"
    knobs = ["--space", "micro_batch_sizes=1", "--space", "interleave=1", "--space", "tp=4",
             "--space", "pp=1", "--space", "sequence_parallel=true", "--space", "max_cp=1"]
    code = main(["search", str(p), "--top", "2", "--dim-sizes", "4x4x4,8x4x2,4x16x1",
                 "--dim-topologies", "ring,switch", *knobs, "--no-gains", "--no-progress",
                 "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    df = pd.read_csv(out / "results.csv")
    # 4x4x4 and 8x4x2: {ring, switch}^3 = 8 shapes each; 4x16x1: the size-1 'node' keeps
    # its own topology (switch), 2^2 = 4 shapes, every one refused because the minimum on
    # 'node' would be met by bandwidth on the dimension it removes (the maximum
    # 'sum(bw) <= 900' alone would not refuse it): 8 + 8 + 4 = 20 fabrics
    assert df["fabric"].nunique() == 20
    refused = df[df["status"] == "invalid_shape"]
    assert sorted(refused["fabric"]) == ["4x16x1 R,R,SW", "4x16x1 R,SW,SW", "4x16x1 SW,R,SW",
                                         "4x16x1 SW,SW,SW"]
    assert refused["reason"].str.contains("removes dimension 'node'").all()
    assert refused["reason"].str.contains("bw.node >= 10.0", regex=False).all()
    assert (df["status"] == "optimal").sum() >= 1
    # bad flags exit 2 naming the flag, before any work
    for flags, name in ((["--dim-sizes", "4x4xq"], "--dim-sizes"),
                        (["--dim-topologies", "mesh"], "--dim-topologies"),
                        (["--unit-dims"], "--unit-dims"),
                        (["--dim-sizes", "factorizations", "--hb-domain", "8"], "--dim-sizes")):
        assert main(["search", str(p), *flags]) == 2
        assert name in capsys.readouterr().err

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
    assert f" {best['objective']:,.6g} " in first
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
                        (["--dim-topologies", "hypercube"], "--dim-topologies"),
                        (["--unit-dims"], "--unit-dims"),
                        (["--dim-sizes", "factorizations", "--hb-domain", "8"], "--dim-sizes")):
        assert main(["search", str(p), *flags]) == 2
        assert name in capsys.readouterr().err


KNOBS = ["--space", "micro_batch_sizes=1", "--space", "recompute=full", "--space", "zero=1",
         "--space", "interleave=1", "--space", "pp=1", "--space", "max_cp=1",
         "--no-gains", "--no-progress"]


def _one_line_error(capsys, code: int, expected: int = 2) -> str:
    err = capsys.readouterr().err
    assert code == expected, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_a_family_with_no_buildable_shape_is_bad_input(scenario, tmp_path, capsys) -> None:
    # 64 NPUs: 7 and 5 divide neither (64 = 2^6), so no HB-domain shape can be built
    err = _one_line_error(capsys, main(["search", str(scenario), "--hb-domain", "7,5",
                                        *KNOBS]))
    assert "--hb-domain" in err and "does not divide 64 NPUs" in err
    assert "hb 7" in err and "hb 5" in err
    (tmp_path / "dims.yaml").write_text(DIMS_SCENARIO)
    # 3x3x3 = 27 and 2x2x2 = 8 NPUs, not the fabric's 4 * 4 * 4 = 64
    err = _one_line_error(capsys, main(["search", str(tmp_path / "dims.yaml"), "--dim-sizes",
                                        "3x3x3,2x2x2", *KNOBS]))
    assert "--dim-sizes" in err and "multiplying to 64 NPUs" in err


def test_nothing_solved_prints_a_rate_of_zero(scenario, capsys) -> None:
    # a budget of 1 USD admits no bandwidth above the bounds' minima: every shape is built,
    # nothing is solved, the design is infeasible (exit 1), and the rate is 0 (not nan)
    text = scenario.read_text().replace("budget_usd: 2.0e6", "budget_usd: 1.0")
    scenario.write_text(text)
    code = main(["search", str(scenario), "--hb-domain", "8", *KNOBS])
    out = capsys.readouterr()
    assert code == 1, out.err
    assert "0 solved exactly;" in out.out and "nan" not in out.out
    assert ": 0 solves per solver-second" in out.out
    # the one shape's constraints admit no bandwidth: said on one line
    assert "fabric shapes not searched: hb 8: the constraints admit no bandwidth\n" in out.out
    assert "no candidate is feasible" in out.err


@pytest.fixture(scope="module")
def three_shapes(tmp_path_factory):
    """``libra-opt search --hb-domain 8,24,16 --top 3 --out DIR`` on the tiny scenario (24 does
    not divide its 64 NPUs): the printed lines and the results table."""
    import contextlib
    import io

    d = tmp_path_factory.mktemp("three_shapes")
    (d / "tiny.yaml").write_text(MODEL)
    (d / "s.yaml").write_text(SCENARIO)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["search", str(d / "s.yaml"), "--top", "3", "--hb-domain", "8,24,16",
                     "--out", str(d / "out"), *KNOBS])
    assert code == 0
    return buf.getvalue().splitlines(), d / "out", pd.read_csv(d / "out" / "results.csv")


def test_summary_says_wall_time_solver_time_and_the_shapes_not_searched(three_shapes) -> None:
    import re

    from numpy.testing import assert_allclose

    lines, _, df = three_shapes
    solved = df[df["status"] == "optimal"]
    # wall time of the search, solver time (the CSV's solve_s summed) and solves per
    # second of solver time (not of wall time), each labelled
    m = re.fullmatch(r"search wall time ([\d.]+) s; solver time ([\d.e+-]+) s \(summed over "
                     r"workers\): ([\d,]+) solves per solver-second", lines[1])
    assert m, lines[1]
    wall, solver, rate = float(m[1]), float(m[2]), float(m[3].replace(",", ""))
    assert_allclose(solver, df["solve_s"].sum(), rtol=5e-3)
    assert abs(rate - len(solved) / df["solve_s"].sum()) <= 0.5
    assert wall + 0.05 >= solver  # serial: the solves are part of the search's wall time
    assert lines[0].endswith(f"{len(solved)} solved exactly; objective perf")
    # the HB domain 24 is not searched, and the summary says why on one line
    assert lines[2] == "fabric shapes not searched: hb 24: HB domain 24 does not divide 64 NPUs"
    assert df.loc[df["status"] == "invalid_shape", "fabric"].tolist() == ["hb 24"]


def test_unranked_rows_have_no_rank_in_the_files(three_shapes) -> None:
    import csv
    import importlib.util

    _, out, df = three_shapes
    solved = df[df["status"] == "optimal"].sort_values("rank")
    # rank: 1..n on the solved rows; an empty cell (CSV) and null (Parquet) elsewhere
    assert solved["rank"].tolist() == list(range(1, len(solved) + 1))
    unranked = df["status"] != "optimal"
    assert unranked.sum() > 0 and df.loc[unranked, "rank"].isna().all()
    with open(out / "results.csv", newline="") as f:
        assert {r["rank"] for r in csv.DictReader(f) if r["status"] != "optimal"} == {""}
    if importlib.util.find_spec("pyarrow") is not None:
        import pyarrow.parquet as pq

        column = pq.read_table(out / "results.parquet").column("rank")
        assert str(column.type) == "int64" and column.null_count == unranked.sum()


def test_printed_top_shows_mfu_in_percent_and_tokens_with_separators(three_shapes) -> None:
    lines, _, df = three_shapes
    solved = df[df["status"] == "optimal"].sort_values("rank")
    # MFU as a percentage (the column is a fraction), as `libra-opt solve` prints it;
    # tokens/s whole with thousands separators; rank 1 first
    for rank in (1, 2, 3):
        r = solved.iloc[rank - 1]
        row = next(line for line in lines if line.lstrip().startswith(f"{rank} "))
        assert 0 < r["mfu"] < 1 and r["tokens_per_s"] > 1000
        assert f" {100 * r['mfu']:.1f}% " in row and f" {r['tokens_per_s']:,.0f} " in row


def _listing(path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def _no_work(*args, **kwargs):
    raise AssertionError("the search ran before the outputs were checked")


def test_a_non_empty_out_is_refused_before_the_work(scenario, tmp_path, capsys,
                                                     monkeypatch) -> None:
    import libra_opt.explore.search as search

    monkeypatch.setattr(search, "run_search", _no_work)
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.csv").write_text("earlier\n")
    before = _listing(out)
    err = _one_line_error(capsys, main(["search", str(scenario), "--out", str(out), *KNOBS]))
    assert "--out" in err and "not empty" in err and "--overwrite" in err
    assert _listing(out) == before
    err = _one_line_error(capsys, main(["search", str(scenario), "--overwrite", *KNOBS]))
    assert "--overwrite" in err and "--out" in err


def test_overwrite_replaces_the_earlier_run_as_one_set(scenario, tmp_path, capsys) -> None:
    import importlib.util
    import json

    from libra_opt.io.results import library_version, read_metadata, read_results

    out = tmp_path / "out"
    out.mkdir()
    (out / "results.csv").write_text("old\n")
    (out / "bandwidth.png").write_bytes(b"an earlier sweep's plot")
    (out / "notes.txt").write_text("not a run's file")
    code = main(["search", str(scenario), "--hb-domain", "8,16", "--out", str(out),
                 "--overwrite", *KNOBS])
    text = capsys.readouterr().out
    assert code == 0
    parquet = importlib.util.find_spec("pyarrow") is not None
    written = ["results.csv", *(["results.parquet"] if parquet else []), "search.png",
               "manifest.json"]
    wrote = [line.removeprefix("wrote ") for line in text.splitlines()
             if line.startswith("wrote ")]
    assert wrote == [str(out / n) for n in written]
    # the stale plot is gone, a file no run writes stays, no staging folder is left
    assert sorted(p.name for p in out.iterdir()) == sorted([*written, "notes.txt"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "search" and manifest["scenario"] == "tiny_search"
    assert manifest["library_version"] == library_version()
    assert len(manifest["spec_hash"]) == 64 and manifest["created_utc"].endswith("Z")
    assert manifest["files"] == written[:-1] and manifest["complete"] is True
    assert read_metadata(out)["spec_hash"] == manifest["spec_hash"]
    df = read_results(out / "results.csv")
    assert set(df["fabric"]) >= {"hb 8", "hb 16"}
    if parquet:
        assert read_metadata(out / "results.parquet")["spec_hash"] == manifest["spec_hash"]
        assert len(pd.read_parquet(out / "results.parquet")) == len(df)


def test_ctrl_c_leaves_the_folder_as_it_was(scenario, tmp_path, capsys, monkeypatch) -> None:
    import libra_opt.explore.search as search
    import libra_opt.report.search_plot as search_plot

    out = tmp_path / "out"
    out.mkdir()
    (out / "results.csv").write_text("earlier\n")
    (out / "bandwidth.png").write_bytes(b"an earlier sweep's plot")
    before = _listing(out)
    argv = ["search", str(scenario), "--hb-domain", "8", "--out", str(out), "--overwrite",
            *KNOBS]

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    # during the search
    with monkeypatch.context() as m:
        m.setattr(search, "run_search", interrupt)
        err = _one_line_error(capsys, main(argv), 130)
    assert "interrupted" in err and _listing(out) == before
    # while the files are written (the plot is drawn after the tables are staged)
    with monkeypatch.context() as m:
        m.setattr(search_plot, "plot_search", interrupt)
        err = _one_line_error(capsys, main(argv), 130)
    assert "interrupted" in err and _listing(out) == before
    # into a folder that did not exist: none is left behind
    fresh = tmp_path / "fresh"
    with monkeypatch.context() as m:
        m.setattr(search_plot, "plot_search", interrupt)
        _one_line_error(capsys, main([*argv[:4], "--out", str(fresh), *KNOBS]), 130)
    assert not fresh.exists()


def test_printed_top_step_time_and_objective_have_six_digits_and_a_unit(three_shapes) -> None:
    """The top-k table printed step times to 3 decimals ('0.123') beside 6-digit objectives,
    and its objective column named no unit."""
    from numpy.testing import assert_allclose

    lines, _, df = three_shapes
    head = next(line for line in lines if line.lstrip().startswith("# "))
    assert "  objective (s)  " in head   # objective perf: the weighted step time, in s
    solved = df[df["status"] == "optimal"].sort_values("rank")
    for rank in (1, 2, 3):
        r = solved.iloc[rank - 1]
        row = next(line for line in lines if line.lstrip().startswith(f"{rank} "))
        for column, value in (("step s", r["step_time_s"]), ("objective (s)", r["objective"])):
            # the cell right-aligned under its header, in 6 significant digits (the values
            # are between 1e-4 and 1e5: no separator, no exponent)
            assert 1e-4 < value < 1e5
            cell = row[:head.index(column) + len(column)].split()[-1]
            assert cell == f"{value:.6g}", (column, cell, value)
            assert_allclose(float(cell), value, rtol=5e-6)

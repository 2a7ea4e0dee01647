"""``libra-opt validate``."""

from libra_opt.cli.main import main


def test_validate_prints_rows_statistics_and_writes_the_plot(tmp_path, capsys):
    assert main(["validate", "--table", "llama3_h100", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "Llama 3 405B, 16384 GPUs, seq 8K" in out
    assert "llama3_h100: 2 validation rows, average |error|" in out
    assert (tmp_path / "out" / "validation.png").stat().st_size > 1000


def test_validate_a_users_table(tmp_path, capsys):
    table = tmp_path / "mine.yaml"
    table.write_text(
        "name: mine\n"
        "clusters: {c: {device: h100_sxm, gpus_per_node: 8, node: {bw_gbps: 450}, pod: {bw_gbps: 50}}}\n"
        "defaults: {cluster: c}\n"
        "rows:\n"
        "  - {name: r1, source: me, metric: step_time_s, published: 2.0, model: llama3_8b,\n"
        "     parallelism: {tp: 8, global_batch_size: 8}}\n"
    )
    assert main(["validate", "--table", str(table)]) == 0
    assert "mine: 1 validation rows" in capsys.readouterr().out


def test_bad_table_is_one_line_exit_2(tmp_path, capsys):
    table = tmp_path / "bad.yaml"
    table.write_text(
        "name: bad\n"
        "clusters: {c: {device: h100_sxm, gpus_per_node: 8, node: {bw_gbps: 450}, pod: {bw_gbps: 50}}}\n"
        "rows: [{name: r, source: s, metric: step_time_s, published: -1, model: llama3_8b,\n"
        "        cluster: c, parallelism: {global_batch_size: 8}}]\n"
    )
    assert main(["validate", "--table", str(table)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "bad.yaml" in err and "rows[0].published" in err
    assert main(["validate", "--table", "nope"]) == 2
    assert "unknown validation table 'nope'" in capsys.readouterr().err

"""``libra-opt validate``."""

import re

import pytest

from libra_opt.cli.main import main


def test_validate_prints_rows_statistics_and_writes_the_plot(tmp_path, capsys):
    assert main(["validate", "--table", "llama3_h100", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "Llama 3 405B, 16384 GPUs, seq 8K" in out
    # one row, one noun: never "1 validation rows"
    assert "llama3_h100: 1 validation row, average |error|" in out
    assert "  llama3_meta: 1 out-of-sample row, average |error|" in out
    assert " 1 validation rows" not in out and " 1 out-of-sample rows" not in out
    assert "stack llama3_meta" in out and "conv +-16%" in out
    assert "llama3_405b_8k_dp: 2 variants, Spearman +1.00, regret 0.00 %" in out
    assert (tmp_path / "out" / "variants.png").stat().st_size > 0
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
    assert "mine: 1 validation row, " in capsys.readouterr().out


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


def test_calibrate_fits_prints_and_writes_device_entries_that_read_back(tmp_path, capsys):
    import yaml

    from libra_opt.explore.calibration import calibrate_tables
    from libra_opt.io.presets import device_from_value, load_device
    from libra_opt.io.validation import load_validation_table

    out = tmp_path / "out"
    assert main(["validate", "--table", "llama3_h100", "--calibrate", "default_efficiency",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    preset = load_device("h100_sxm").default_efficiency
    head = f"calibrated h100_sxm on 1 row: default_efficiency {preset:.5g} -> "
    assert text.startswith(head)
    # the packaged constant is the fit on this row, rounded to 4 digits
    fitted = float(text[len(head):].split(";")[0])
    assert abs(fitted - preset) < 1e-4
    assert "those rows reproduced within 0.00 %" in text
    assert "llama3_h100: 1 validation row, " in text
    written = yaml.safe_load((out / "calibrated_devices.yaml").read_text())
    (expected,) = calibrate_tables([load_validation_table("llama3_h100")], ["default_efficiency"])
    assert device_from_value(written["h100_sxm"], "f.yaml") == expected.device
    assert (out / "validation.png").stat().st_size > 1000


def test_calibrate_all_rows_reports_an_in_sample_fit(capsys):
    assert main(["validate", "--table", "llama3_h100", "--calibrate", "default_efficiency",
                 "--calibrate-rows", "all"]) == 0
    text = capsys.readouterr().out
    assert "calibrated h100_sxm on 3 rows" in text
    assert "in-sample fit on every row" in text
    assert "llama3_h100: 3 fitted rows (in-sample)" in text


@pytest.mark.parametrize("argv, flag, words", [
    (["--calibrate", "peak_flops"], "--calibrate", "expected one or two distinct names"),
    (["--calibrate", "default_efficiency,default_efficiency"], "--calibrate", "distinct"),
    (["--calibrate-rows", "all"], "--calibrate-rows", "needs --calibrate"),
    (["--calibrate", "default_efficiency,gemm_k_overhead"], "--calibrate",
     "device h100_sxm has 1 row to fit and 2 constants"),
])
def test_calibrate_errors_are_one_line_exit_2(argv, flag, words, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["validate", "--table", "llama3_h100", "--out", str(out), *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and flag in err and words in err
    assert not list(out.glob("*")) if out.exists() else True


def test_calibrate_stacks_refits_the_packaged_stack_constant(capsys):
    from libra_opt.io.presets import load_device

    assert main(["validate", "--table", "mtnlg_a100", "--calibrate-stacks"]) == 0
    out = capsys.readouterr().out
    eta = load_device("a100_80gb").software_stacks["megatron_deepspeed"]
    head = f"software stack megatron_deepspeed on a100_80gb: efficiency {eta:.5g} -> "
    assert out.startswith(head)
    assert abs(float(out[len(head):].split(" ")[0]) - eta) < 1e-4
    assert "stack megatron_deepspeed" in out and "mtnlg_530b_dp: 3 variants" in out


def test_calibrate_stacks_without_marked_rows_is_one_line_exit_2(capsys):
    assert main(["validate", "--table", "korthikanti22_a100", "--calibrate-stacks"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--calibrate-stacks: no row is marked 'calibrate: stack'" in err[0]


def test_readme_stack_table_quotes_what_validate_prints(capsys):
    """The README's per-stack table quoted llama3_meta at 0.81 % | 0.81 % (the model of an
    earlier commit: 0.8055 %) while ``libra-opt validate`` prints 0.80 % (0.8046 %): both
    must be the two-decimal figures of :func:`libra_opt.report.validation.error_summary`."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    start = next(i for i, ln in enumerate(lines)
                 if ln.startswith("| software stack (table, calibration rows) |"))
    quoted = {}
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        # the figures are quoted from benchmarks/RESULTS.md between markers
        plain = re.sub(r"<!-- /?results[^>]*-->", "", ln)
        name, n, avg, worst = (c.strip() for c in plain.strip("|").split("|"))
        rows = "row" if n == "1" else "rows"
        quoted[name.split(" (")[0]] = (f"{n} out-of-sample {rows}, average |error| {avg}, "
                                       f"worst {worst}")
    assert main(["validate"]) == 0
    out = capsys.readouterr().out
    assert len(quoted) >= 7
    for stack, figures in quoted.items():
        prefix = "pooled over all stacks: " if stack == "pooled" else f"  {stack}: "
        assert f"{prefix}{figures}" in out, (stack, figures)

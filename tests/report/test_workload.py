"""``libra-opt workload``'s report of a generated workload."""

from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.generators import generate_workload
from libra_opt.io.presets import load_device, load_model
from libra_opt.report.workload import workload_report
from libra_opt.traffic.step_time import step_time

FABRIC = Fabric((Dim("node", "switch", 4, "A"), Dim("pod", "switch", 2, "B")))


def _llama8b():
    par = {"tp": 4, "sequence_parallel": True, "dp": 2, "global_batch_size": 8}
    return generate_workload(load_model("llama3_8b"), par, load_device("h100_sxm"), FABRIC)


def test_report_lists_traffic_memory_flops_and_throughput():
    g = _llama8b()
    text = workload_report(g, FABRIC, bw_gbps=[400.0, 50.0])
    assert "traffic per NPU per step (GB)" in text
    assert "memory per NPU" in text and "FLOPs per step" in text
    lines = [ln.split() for ln in text.splitlines()]
    groups = {ln[0] for ln in lines if ln and ln[0] in ("tp", "dp", "pp", "cp", "ep")}
    assert groups == {"tp", "dp"}
    assert "MFU" in text and "tokens/s" in text
    t = step_time(g.workload, FABRIC, [400.0, 50.0]).step_time_s
    step_line = next(ln for ln in text.splitlines() if ln.strip().startswith("step time"))
    assert step_line.split()[2] == f"{t:.6g}"   # the step time's 6 digits, as everywhere
    tokens = 8 * load_model("llama3_8b").seq_len
    assert f"{tokens / t:,.0f} tokens/s" in text


def test_report_has_breakdown_mfu_hfu_and_json_summary():
    from numpy.testing import assert_allclose

    from libra_opt.report.workload import workload_summary

    g = _llama8b()
    text = workload_report(g, FABRIC, bw_gbps=[400.0, 50.0])
    assert "time by class" in text and "HFU" in text and "gemm" in text
    d = workload_summary(g, FABRIC, [400.0, 50.0])
    t = step_time(g.workload, FABRIC, [400.0, 50.0])
    assert_allclose(d["step_time_s"], t.step_time_s, rtol=1e-12)
    # the per-class compute adds up to the workload's compute time (no pipeline here)
    assert_allclose(sum(d["compute_breakdown_s"].values()), g.workload.compute_s, rtol=1e-9)
    assert 0 < d["mfu"] < d["hfu"] <= 1 or d["mfu"] == d["hfu"]
    assert_allclose(d["tokens_per_s"], 8 * 8192 / t.step_time_s, rtol=1e-12)


def test_workload_json_cli(capsys):
    import json

    from libra_opt.cli.main import main

    assert main(["workload", "gpt3_175b_a100_cluster", "--bw", "300,25", "--json"]) == 0
    (d,) = json.loads(capsys.readouterr().out)
    assert d["model"] == "gpt3_175b" and d["mfu"] > 0.2
    assert len(d["stage_compute_s"]) > 1 and d["bubble_compute_s"] > 0


def test_both_bubble_figures_name_their_base():
    """'pipeline bubble 7.5 %' (over the bubble-free compute) and 'bubble 1.622 s (6.3 %)'
    (of the step) were printed with no base."""
    from libra_opt.io import load_scenario
    from libra_opt.scenario.compile import compile_with_models

    scen = load_scenario("gpt3_175b_a100_cluster")
    scen, generated = compile_with_models(scen.spec, previous=scen)
    (g,) = generated.values()
    bw = [600.0, 100.0]
    text = workload_report(g, scen.fabric, bw, scen.timing)
    free = sum(g.compute_breakdown_s.values())           # compute without the bubble
    assert f"pipeline bubble {100 * g.bubble_compute_s / free:.1f} % of the bubble-free " \
           "compute" in text
    assert "pipeline bubble 7.5 % of the bubble-free compute" in text
    t = step_time(g.workload, scen.fabric, bw, scen.timing)
    line = next(ln for ln in text.splitlines() if "time by class" in ln)
    assert f"(% of the {t.step_time_s:.6g} s step)" in line
    assert f"bubble {g.bubble_compute_s:.4g} s ({100 * g.bubble_compute_s / t.step_time_s:.1f} %)" \
        in line
    assert "bubble 1.622 s (6.3 %)" in line
    # without a bandwidth the shares are of the compute, bubble included
    line = next(ln for ln in workload_report(g, scen.fabric).splitlines()
                if "time by class" in ln)
    assert f"(% of the {g.workload.compute_s:.6g} s compute, bubble included)" in line

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
    assert step_line.split()[2] == f"{t:.4g}"
    tokens = 8 * load_model("llama3_8b").seq_len
    assert f"{tokens / t:.4g} tokens/s" in text

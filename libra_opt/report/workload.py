"""Text report of a generated workload (``libra-opt workload``): traffic per group and
dimension, memory, FLOPs and tokens, and at a bandwidth step time, throughput and MFU."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from libra_opt.fabric.dims import Fabric
from libra_opt.generators.generated import (
    GeneratedWorkload,
    achieved_flops_per_npu,
    model_flops_utilization,
    throughput_tokens_per_s,
)
from libra_opt.report.text import format_number, format_whole
from libra_opt.traffic.step_time import step_time, traffic_by_group_bytes
from libra_opt.traffic.timing import TimingModel

__all__ = ["workload_report", "workload_summary"]


def _hfu(g: GeneratedWorkload, step_s: float) -> float:
    """Hardware FLOPs utilization: executed (counted, with recomputation) FLOP/s over peak."""
    peak = g.device.peak_flops_for(g.compute_dtype)
    return achieved_flops_per_npu(g, step_s, hardware=True) / peak


def workload_summary(generated: GeneratedWorkload, fabric: Fabric,
                     bw_gbps: Sequence[float] | np.ndarray | None = None,
                     timing: TimingModel | None = None) -> dict:
    """The numbers of :func:`workload_report` as a JSON-ready dict (with ``bw_gbps`` also
    ``step_time_s``, ``exposed_comm_s``, ``tokens_per_s``, ``mfu`` and ``hfu``).

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim
    >>> from libra_opt.generators import generate_workload
    >>> from libra_opt.io.presets import load_device, load_model
    >>> f = Fabric((Dim("node", "switch", 8, "NVLink"),))
    >>> g = generate_workload(load_model("llama3_8b"), {"tp": 8, "global_batch_size": 4},
    ...                       load_device("h100_sxm"), f)
    >>> d = workload_summary(g, f, [450.0])
    >>> sorted(d["compute_breakdown_s"])
    ['attention', 'elementwise', 'embedding', 'gemm', 'loss', 'optimizer']
    >>> 0 < d["mfu"] <= d["hfu"] < 1
    True
    """
    g = generated
    w = g.workload
    timing = timing if timing is not None else TimingModel()
    traffic = traffic_by_group_bytes(w, fabric, timing)
    same = ("compute_dtype", "tokens_per_step", "samples_per_step", "micro_batches",
            "bubble_fraction", "model_flops_per_step", "hardware_flops_per_step")
    out: dict = {
        "workload": w.name, "model": g.model_name, "n_npus": g.n_npus, "device": g.device.key,
        "compute_model": g.efficiency.describe(), **{k: getattr(g, k) for k in same},
        "compute_s": w.compute_s, "compute_breakdown_s": dict(g.compute_breakdown_s),
        "bubble_compute_s": g.bubble_compute_s, "stage_compute_s": list(g.stage_compute_s),
        "memory_bytes": {k: getattr(g.memory, f"{k}_bytes") for k in (
            "weights", "grads", "optimizer", "activations", "capacity")},
        "traffic_bytes": {
            group: dict(zip(fabric.names, (float(x) for x in b), strict=True))
            for group, (_, b) in sorted(traffic.items())
        },
    }
    if bw_gbps is not None:
        t = step_time(w, fabric, bw_gbps, timing)
        out.update({
            "bw_gbps": [float(b) for b in bw_gbps],
            "step_time_s": t.step_time_s,
            "exposed_comm_s": t.exposed_comm_s,
            "tokens_per_s": throughput_tokens_per_s(g, t.step_time_s),
            "mfu": model_flops_utilization(g, t.step_time_s),
            "hfu": _hfu(g, t.step_time_s),
        })
    return out


def _breakdown_lines(g: GeneratedWorkload, exposed_s: float | None) -> list[str]:
    """Time per step by class and its share of the step (with the exposed communication)
    or of the compute, bubble included."""
    parts = dict(g.compute_breakdown_s)
    if g.bubble_compute_s:
        parts["bubble"] = g.bubble_compute_s
    if exposed_s is not None:
        parts["exposed comm"] = exposed_s
    total = sum(parts.values())
    if total <= 0:
        return []
    base = (f"% of the {format_number(total)} s step" if exposed_s is not None
            else f"% of the {format_number(total)} s compute, bubble included")
    return [f"  time by class    ({base}) " + ", ".join(
        f"{k} {v:.4g} s ({100 * v / total:.1f} %)" for k, v in parts.items() if v > 0
    )]


def _gb(x: float) -> str:
    return f"{x / 1e9:10.3f}"


def workload_report(generated: GeneratedWorkload, fabric: Fabric,
                    bw_gbps: Sequence[float] | np.ndarray | None = None,
                    timing: TimingModel | None = None) -> str:
    """Human-readable summary of a generated workload; with ``bw_gbps`` (GB/s per NPU per
    dimension) also step time, throughput and MFU under ``timing`` (``Scenario.timing``).

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim
    >>> from libra_opt.generators import generate_workload
    >>> from libra_opt.io.presets import load_device, load_model
    >>> f = Fabric((Dim("node", "switch", 8, "NVLink"), Dim("pod", "switch", 2, "IB")))
    >>> g = generate_workload(load_model("llama3_8b"), {"tp": 8, "dp": 2, "global_batch_size": 16},
    ...                       load_device("h100_sxm"), f)
    >>> print(workload_report(g, f).splitlines()[0])
    workload llama3_8b: model llama3_8b on 16 x NVIDIA H100 SXM5 80GB
    """
    g = generated
    w = g.workload
    lines = [
        f"workload {w.name}: model {g.model_name} on {g.n_npus} x {g.device.name}",
        f"  placement        {g.placement.describe()}",
        "  groups (k_d)     "
        + ", ".join(f"{k}={v}" for k, v in w.groups.items() if np.prod(v) > 1),
        f"  tokens per step  {format_number(g.tokens_per_step)}  (samples "
        f"{format_number(g.samples_per_step)}, "
        f"micro-batches {g.micro_batches}, pipeline bubble {100 * g.bubble_fraction:.1f} % "
        "of the bubble-free compute)",
        f"  FLOPs per step   model {g.model_flops_per_step:.4g}, with recomputation "
        f"{g.hardware_flops_per_step:.4g}",
        f"  compute          {w.compute_s:.4g} s per step per NPU at "
        f"{g.efficiency.describe()} ({g.compute_dtype})",
        f"  memory per NPU   {g.memory.describe()}",
    ]
    if len(g.stage_compute_s) > 1:
        lines.append("  stage compute    " + ", ".join(f"{x:.4g}" for x in g.stage_compute_s)
                     + " s per step (first stage first; bubble excluded)")
    for note in g.notes:
        lines.append(f"  note             {note}")
    timing = timing if timing is not None else TimingModel()
    traffic = traffic_by_group_bytes(w, fabric, timing)
    header = f"  {'group':<8}{'colls/step':>11}" + "".join(f"{n[:10]:>11}" for n in fabric.names)
    lines += ["", "  traffic per NPU per step (GB)", header]
    total = np.zeros(fabric.n_dims)
    for group, (n, b) in sorted(traffic.items()):
        total += b
        lines.append(f"  {group:<8}{n:>11}" + "".join(f" {_gb(x)}" for x in b))
    lines.append(f"  {'total':<8}{'':>11}" + "".join(f" {_gb(x)}" for x in total))
    if bw_gbps is None:
        lines += _breakdown_lines(g, None)
    else:
        t = step_time(w, fabric, bw_gbps, timing)
        lines += _breakdown_lines(g, t.exposed_comm_s)
        lines += [
            "",
            f"  at bandwidth {', '.join(f'{n}={b:g}' for n, b in zip(fabric.names, bw_gbps, strict=True))} GB/s",
            f"  step time        {format_number(t.step_time_s)} s (compute "
            f"{format_number(t.compute_s)}, exposed communication "
            f"{format_number(t.exposed_comm_s)})",
            f"  throughput       {format_whole(throughput_tokens_per_s(g, t.step_time_s))} "
            "tokens/s, "
            f"{achieved_flops_per_npu(g, t.step_time_s) / 1e12:.1f} model TFLOP/s per NPU, "
            f"MFU {100 * model_flops_utilization(g, t.step_time_s):.1f} %, "
            f"HFU {100 * _hfu(g, t.step_time_s):.1f} %",
        ]
    return "\n".join(lines)

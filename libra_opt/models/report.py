"""Text report of a generated workload and export to ASTRA-sim 1.0 text.

:func:`workload_report` is the body of ``libra-opt workload SCENARIO.yaml``: per-step
traffic per group and fabric dimension, memory per NPU, FLOPs and tokens, and -- given a
bandwidth vector -- step time, throughput and MFU. :func:`export_astra_sim` writes the
workload (and its LIBRA communicator) in the reference's formats where they can hold it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from libra_opt.collectives import hierarchical_traffic_bytes
from libra_opt.errors import InputError
from libra_opt.evaluate import step_time
from libra_opt.fabric import Fabric
from libra_opt.io.astra_sim import write_astra_sim
from libra_opt.io.libra import write_libra_communicator
from libra_opt.models.generated import (
    GeneratedWorkload,
    achieved_flops_per_npu,
    model_flops_utilization,
    throughput_tokens_per_s,
)
from libra_opt.models.scenario_entry import generated_from_entry
from libra_opt.workload import Collective, Phase, Workload

__all__ = [
    "traffic_by_group_bytes",
    "workload_report",
    "entry_report",
    "merge_phase_collectives",
    "export_astra_sim",
]


def traffic_by_group_bytes(workload: Workload, n_dims: int) -> dict[str, tuple[int, np.ndarray]]:
    """Per group: (collectives per step, bytes per NPU per dimension per step).

    Examples
    --------
    >>> from libra_opt.workload import Collective, Layer, Phase
    >>> w = Workload("w", (Layer("l", Phase(0.0, (Collective("all_reduce", 1e6, "dp"),)),
    ...                     count=3),), {"dp": (4, 2)})
    >>> n, b = traffic_by_group_bytes(w, 2)["dp"]
    >>> n, b.tolist()
    (3, [4500000.0, 750000.0])
    """
    out: dict[str, tuple[int, np.ndarray]] = {}
    for layer in workload.layers:
        for _, phase in layer.phases():
            for c in phase.collectives:
                t = hierarchical_traffic_bytes(c.kind, c.size_bytes, workload.groups[c.group])
                n, acc = out.get(c.group, (0, np.zeros(n_dims)))
                out[c.group] = (n + layer.count, acc + layer.count * t)
    return out


def _gb(x: float) -> str:
    return f"{x / 1e9:10.3f}"


def workload_report(
    generated: GeneratedWorkload,
    fabric: Fabric,
    bw_gbps: Sequence[float] | None = None,
    training_loop: str = "no_overlap",
    collective_model: str = "pipelined",
) -> str:
    """Human-readable summary of a generated workload.

    Parameters
    ----------
    generated : GeneratedWorkload
    fabric : Fabric
    bw_gbps : sequence of float, optional
        Bandwidth per dimension (GB/s per NPU); adds step time, throughput and MFU.
    training_loop, collective_model : str
        Passed to :func:`libra_opt.evaluate.step_time`.

    Returns
    -------
    str
        Several lines of text (no trailing newline).
    """
    g = generated
    w = g.workload
    lines = [
        f"workload {w.name}: model {g.model_name} on {g.n_npus} x {g.device.name}",
        f"  placement        {g.placement.describe()}",
        "  groups (k_d)     "
        + ", ".join(f"{k}={v}" for k, v in w.groups.items() if np.prod(v) > 1),
        f"  tokens per step  {g.tokens_per_step:.6g}  (samples {g.samples_per_step:.6g}, "
        f"micro-batches {g.micro_batches}, pipeline bubble {100 * g.bubble_fraction:.1f} %)",
        f"  FLOPs per step   model {g.model_flops_per_step:.4g}, with recomputation "
        f"{g.hardware_flops_per_step:.4g}",
        f"  compute          {w.compute_s:.4g} s per step per NPU at "
        f"{g.efficiency.describe()} ({g.compute_dtype})",
        f"  memory per NPU   {g.memory.describe()}",
    ]
    for note in g.notes:
        lines.append(f"  note             {note}")
    traffic = traffic_by_group_bytes(w, fabric.n_dims)
    header = f"  {'group':<8}{'colls/step':>11}" + "".join(f"{n[:10]:>11}" for n in fabric.names)
    lines += ["", "  traffic per NPU per step (GB)", header]
    total = np.zeros(fabric.n_dims)
    for group, (n, b) in sorted(traffic.items()):
        total += b
        lines.append(f"  {group:<8}{n:>11}" + "".join(f" {_gb(x)}" for x in b))
    lines.append(f"  {'total':<8}{'':>11}" + "".join(f" {_gb(x)}" for x in total))
    if bw_gbps is not None:
        t = step_time(w, fabric, bw_gbps, collective_model, training_loop)
        lines += [
            "",
            f"  at bandwidth {', '.join(f'{n}={b:g}' for n, b in zip(fabric.names, bw_gbps, strict=True))} GB/s",
            f"  step time        {t.step_time_s:.4g} s (compute {t.compute_s:.4g}, exposed "
            f"communication {t.exposed_comm_s:.4g})",
            f"  throughput       {throughput_tokens_per_s(g, t.step_time_s):.4g} tokens/s, "
            f"{achieved_flops_per_npu(g, t.step_time_s) / 1e12:.1f} model TFLOP/s per NPU, "
            f"MFU {100 * model_flops_utilization(g, t.step_time_s):.1f} %",
        ]
    return "\n".join(lines)


def entry_report(
    entry: Mapping[str, Any],
    fabric: Fabric,
    base_dir: Path,
    source: str,
    bw_gbps: Sequence[float] | None = None,
    training_loop: str = "no_overlap",
    collective_model: str = "pipelined",
) -> str:
    """:func:`workload_report` of one model-based scenario entry.

    Examples
    --------
    >>> from pathlib import Path
    >>> from libra_opt.fabric import Dim
    >>> f = Fabric((Dim("node", "switch", 8, "NVLink"), Dim("pod", "switch", 2, "IB")))
    >>> entry = {"name": "l8", "model": "llama3_8b", "device": "h100_sxm",
    ...          "parallelism": {"tp": 8, "dp": 2, "global_batch_size": 16}}
    >>> print(entry_report(entry, f, Path("."), "s.yaml").splitlines()[0])
    workload l8: model llama3_8b on 16 x NVIDIA H100 SXM5 80GB
    """
    g = generated_from_entry(entry, fabric, base_dir, source)
    return workload_report(g, fabric, bw_gbps, training_loop, collective_model)


def merge_phase_collectives(workload: Workload) -> Workload:
    """Merge collectives of the same kind and group within a phase into one.

    Per-NPU traffic is linear in the size, so the merged collective moves exactly the same
    bytes; only latency terms (one per collective) differ.

    Examples
    --------
    >>> from libra_opt.workload import Layer
    >>> w = Workload("w", (Layer("l", Phase(0.0, (Collective("all_reduce", 1.0, "tp"),
    ...                                           Collective("all_reduce", 2.0, "tp")))),),
    ...              {"tp": (2,)})
    >>> merge_phase_collectives(w).layers[0].forward.collectives
    (Collective(kind='all_reduce', size_bytes=3.0, group='tp'),)
    """
    layers = []
    for layer in workload.layers:
        phases = []
        for _, phase in layer.phases():
            merged: dict[tuple[str, str], float] = {}
            for c in phase.collectives:
                merged[(c.kind, c.group)] = merged.get((c.kind, c.group), 0.0) + c.size_bytes
            colls = tuple(Collective(k, s, g) for (k, g), s in merged.items())  # type: ignore[arg-type]
            phases.append(Phase(phase.compute_s, colls))
        layers.append(replace(layer, forward=phases[0], input_grad=phases[1], weight_grad=phases[2]))
    return Workload(workload.name, tuple(layers), workload.groups)


def export_astra_sim(
    workload: Workload | GeneratedWorkload,
    path: str | Path,
    communicator_path: str | Path | None = None,
    merge: bool = True,
) -> dict[str, tuple[int, ...]]:
    """Write ASTRA-sim 1.0 workload text (and optionally the LIBRA communicator YAML).

    Parameters
    ----------
    workload : Workload or GeneratedWorkload
    path : path
        Workload text file (with the ``HYBRID_CUSTOMIZED`` / layer-count header).
    communicator_path : path, optional
        Where to write the communicator (``Forward``/``InputGrad``/``WeightGrad`` spans).
    merge : bool
        First merge same-kind, same-group collectives of a phase
        (:func:`merge_phase_collectives`).

    Returns
    -------
    dict
        Phase -> span of the group its collectives use.

    Raises
    ------
    InputError
        When the format cannot hold the workload, saying why: it has one collective per
        phase, one group per phase for the whole file, and no point-to-point transfers
        (so pipeline parallelism, sequence parallelism's all-gather + reduce-scatter pairs,
        or tensor- and data-parallel collectives in the same phase cannot be written).
    """
    w = workload.workload if isinstance(workload, GeneratedWorkload) else workload
    if merge:
        w = merge_phase_collectives(w)
    used: dict[str, tuple[str, str]] = {}
    for layer in w.layers:
        for pname, phase in layer.phases():
            kinds = [f"{c.kind} on {c.group}" for c in phase.collectives]
            if len(kinds) > 1:
                raise InputError(
                    f"layer {layer.name!r}, {pname}: {', '.join(kinds)}; ASTRA-sim 1.0 text "
                    "holds one collective per phase",
                    field="workload",
                )
            for c in phase.collectives:
                if c.kind == "p2p":
                    raise InputError(
                        f"layer {layer.name!r}, {pname}: point-to-point transfers (pipeline "
                        "parallelism) have no ASTRA-sim 1.0 text form",
                        field="workload",
                    )
                first = used.setdefault(pname, (layer.name, c.group))
                if first[1] != c.group:
                    raise InputError(
                        f"{pname} uses group {first[1]!r} (layer {first[0]!r}) and {c.group!r} "
                        f"(layer {layer.name!r}); ASTRA-sim 1.0 has one communicator group "
                        "per phase",
                        field="workload",
                    )
    spans = write_astra_sim(w, path, header=True)
    if communicator_path is not None:
        ones = (1,) * len(next(iter(w.groups.values())))
        full = {p: spans.get(p, ones) for p in ("forward", "input_grad", "weight_grad")}
        write_libra_communicator(full, communicator_path)
    return spans

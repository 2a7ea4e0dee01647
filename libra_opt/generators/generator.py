"""Model + parallelism + device + fabric -> :class:`GeneratedWorkload`: the one entry point
that dispatches on the model kind and resolves placement, device and efficiency.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric
from libra_opt.generators.descriptors import DLRMSpec, ResNetSpec, TransformerSpec
from libra_opt.generators.devices import ComputeEfficiency, Device, efficiency_from_value
from libra_opt.generators.dlrm import dlrm_params, dlrm_workload
from libra_opt.generators.generated import GeneratedWorkload
from libra_opt.generators.mapping import place_groups
from libra_opt.generators.memory import checkpoint_bytes
from libra_opt.generators.parallelism import Parallelism, Precision, parallelism_from_dict
from libra_opt.generators.resnet import resnet_stage_counts, resnet_workload
from libra_opt.generators.stacks import stack_efficiency, timing_device
from libra_opt.generators.transformer_counts import total_params
from libra_opt.generators.transformer_workload import transformer_workload

__all__ = ["generate_workload", "model_checkpoint_bytes", "timing_model"]


def timing_model(
    model: TransformerSpec | DLRMSpec | ResNetSpec,
    parallelism: Parallelism,
    device: Device,
    efficiency: ComputeEfficiency | float | Mapping[str, Any] | None = None,
) -> tuple[Device, ComputeEfficiency]:
    """The device and compute model that price ``model``'s kernels under ``parallelism``'s
    software stack: the one place the stack's constant ``eta_s`` is applied.

    Returns
    -------
    (Device, ComputeEfficiency)
        :func:`~libra_opt.generators.stacks.timing_device` of ``device`` at ``eta_s``, and the
        efficiency: the roofline model with the scaled device's GEMM fraction when none is
        requested; a constant or saturating value times ``eta_s``; for DLRM and ResNet (no
        operator model) the device's whole-model constant times ``eta_s``.

    Examples
    --------
    >>> from libra_opt.io.presets import load_device, load_model
    >>> d = load_device("h100_sxm")
    >>> par = Parallelism(tp=8, global_batch_size=8, software_stack="nemo_megatron_core")
    >>> dev, eff = timing_model(load_model("llama3_8b"), par, d)
    >>> round(dev.default_efficiency / d.default_efficiency, 4), eff.kind
    (1.0546, 'roofline')
    >>> round(eff.value, 12) == round(dev.default_efficiency, 12)
    True
    """
    eta = stack_efficiency(device, parallelism.software_stack)
    dev = timing_device(device, eta)
    eff = None if efficiency is None else efficiency_from_value(efficiency, device=dev)
    if eff is None or eff.from_device:
        eff = ComputeEfficiency("roofline", dev.default_efficiency)
    if eff.kind == "roofline" and not isinstance(model, TransformerSpec):
        # no operator model: the legacy whole-model efficiency of the device
        eff = ComputeEfficiency("constant", (device.flops_efficiency or device.default_efficiency)
                                * eta)
    elif eff.kind != "roofline" and eta != 1.0:
        eff = replace(eff, value=eff.value * eta)
    return dev, eff


def generate_workload(model: TransformerSpec | DLRMSpec | ResNetSpec,
                      parallelism: Parallelism | Mapping[str, Any], device: Device, fabric: Fabric,
                      mapping: Mapping[str, Any] | None = None,
                      efficiency: ComputeEfficiency | float | Mapping[str, Any] | None = None,
                      name: str | None = None, check_memory: bool = True) -> GeneratedWorkload:
    """Generate the training-step workload of ``model`` on ``fabric``.

    Parameters
    ----------
    fabric : Fabric
        Its NPU count must equal ``tp x cp x dp x pp``.
    mapping : mapping, optional
        Placement of groups on dimensions (:mod:`libra_opt.generators.mapping`); default
        automatic.
    efficiency : ComputeEfficiency, float or mapping, optional
        Default: the per-operator roofline model (transformers; DLRM and ResNet use
        ``FLOPs / (peak x flops_efficiency)``); a number or ``{kind: constant | saturating}``
        selects the FLOPs-over-peak model.
    name : str, optional
        Workload name (default the model's).
    check_memory : bool
        Raise when the most loaded NPU does not fit in HBM.

    Raises
    ------
    InputError
        Bad degrees, a mapping that does not fit the fabric, or a model that does not fit.

    Examples
    --------
    Llama 3 8B, TP 8 inside an 8-GPU node, 4 nodes of data parallelism:

    >>> from libra_opt.fabric.dims import Dim
    >>> from libra_opt.io.presets import load_device, load_model
    >>> f = Fabric((Dim("node", "switch", 8, "NVLink"), Dim("pod", "switch", 4, "IB")))
    >>> g = generate_workload(load_model("llama3_8b"),
    ...     {"tp": 8, "sequence_parallel": True, "dp": 4, "global_batch_size": 32},
    ...     load_device("h100_sxm"), f, efficiency=0.5)
    >>> g.workload.groups["tp"], g.workload.groups["dp"], g.micro_batches
    ((8, 1), (1, 4), 8)
    >>> [(layer.name, layer.count) for layer in g.workload.layers]
    [('embedding', 8), ('dense_layer', 256), ('output_layer', 8), ('dp_grad_sync', 1), ('optimizer_step', 1)]
    """
    par = parallelism if isinstance(parallelism, Parallelism) else parallelism_from_dict(
        dict(parallelism), prefix="parallelism"
    )
    if not isinstance(device, Device):
        raise InputError(f"device {device!r} is not a Device; load a preset with "
                         "libra_opt.io.presets.load_device(name)", field="device")
    eta = stack_efficiency(device, par.software_stack)
    dev, eff = timing_model(model, par, device, efficiency)
    if par.dp_mode != "collective" and not isinstance(model, TransformerSpec):
        raise InputError(f"dp_mode {par.dp_mode!r} is only modelled for transformer models",
                         field="parallelism.dp_mode")
    placement = place_groups(fabric, par.degrees(), mapping)
    args = (par, dev, fabric, placement, eff, name, check_memory)
    if isinstance(model, TransformerSpec):
        g = transformer_workload(model, *args)
    elif isinstance(model, DLRMSpec):
        g = dlrm_workload(model, *args)
    else:
        g = resnet_workload(model, *args)
    if eta == 1.0:
        return g
    note = f"software stack {par.software_stack}: kernels at {eta:.4g} of the device's speed"
    return replace(g, device=device, notes=(*g.notes, note))


def model_checkpoint_bytes(model: TransformerSpec | DLRMSpec | ResNetSpec,
                           precision: Precision) -> float:
    """:func:`~libra_opt.generators.memory.checkpoint_bytes` of ``model``'s parameters.

    Examples
    --------
    >>> from libra_opt.io.presets import load_model
    >>> round(model_checkpoint_bytes(load_model("llama3_405b"), Precision()) / 1e12, 3)
    5.682
    """
    if isinstance(model, TransformerSpec):
        return checkpoint_bytes(total_params(model), precision)
    if isinstance(model, DLRMSpec):
        emb, mlp = dlrm_params(model)
        return checkpoint_bytes(emb + mlp, precision, optimizer_params=mlp)
    return checkpoint_bytes(sum(s.params for s in resnet_stage_counts(model)), precision)

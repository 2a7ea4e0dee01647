"""Bottleneck ResNet: exact parameter and multiply-accumulate counts, data-parallel workload.

Each stage is one layer with its gradient all-reduce in its weight-gradient phase (hidden by
the ``overlap`` loop as bucketed DDP does, Li et al. 2020); with several micro-batches the
all-reduces move to a ``dp_grad_sync`` layer.
"""

from __future__ import annotations

from dataclasses import dataclass

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric
from libra_opt.generators.descriptors import ResNetSpec
from libra_opt.generators.devices import ComputeEfficiency, Device, compute_time_s, memory_time_s
from libra_opt.generators.generated import GeneratedWorkload
from libra_opt.generators.mapping import Placement
from libra_opt.generators.memory import MemoryBreakdown, model_state_bytes
from libra_opt.generators.parallelism import Parallelism
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

__all__ = ["StageCounts", "resnet_stage_counts", "resnet_workload", "check_data_parallel_only",
           "data_parallel_workload"]


@dataclass(frozen=True)
class StageCounts:
    """Parameters, multiply-accumulates and output elements (every convolution's, kept for the
    backward pass) of one ResNet stage per image.
    """

    name: str
    params: int
    macs: int
    activation_elements: int


def _conv(k: int, cin: int, cout: int, hw_out: int) -> tuple[int, int, int]:
    """(params with batch-norm, MACs, output elements) of a bias-free conv + BN."""
    return k * k * cin * cout + 2 * cout, k * k * cin * cout * hw_out * hw_out, cout * hw_out * hw_out


def resnet_stage_counts(spec: ResNetSpec) -> tuple[StageCounts, ...]:
    """Per-stage counts: stem (conv + BN + max-pool), every bottleneck stage, fc.

    Notes
    -----
    A bottleneck block of width ``w`` has convs ``1x1 c_in->w``, ``3x3 w->w``, ``1x1 w->4w``
    (each with batch norm, 2 parameters per channel) and, first in a stage, a ``1x1`` projection
    ``c_in->4w`` [1]_; a conv's MACs are ``k^2 c_in c_out H_out W_out``.

    References
    ----------
    .. [1] K. He, X. Zhang, S. Ren, J. Sun, "Deep Residual Learning for Image Recognition",
       CVPR 2016, Table 1.

    Examples
    --------
    ResNet-50 has 25,557,032 parameters and 4.09 G multiply-accumulates (torchvision):

    >>> from libra_opt.io.presets import load_model
    >>> st = resnet_stage_counts(load_model("resnet50"))
    >>> sum(s.params for s in st), round(sum(s.macs for s in st) / 1e9, 2)
    (25557032, 4.09)
    """
    hw = (spec.image_size + 1) // 2  # 7x7 stride-2 stem, padding 3
    p, m, a = _conv(7, spec.in_channels, spec.stem_channels, hw)
    stages = [StageCounts("stem", p, m, a)]
    hw = (hw + 1) // 2  # 3x3 stride-2 max-pool, padding 1
    cin = spec.stem_channels
    for i, st in enumerate(spec.stages):
        w, cout = st.width, st.width * spec.expansion
        params = macs = acts = 0
        for b in range(st.blocks):
            stride = 2 if (i > 0 and b == 0) else 1
            hw_out = (hw + stride - 1) // stride
            hw_first = hw_out if not spec.downsample_on_3x3 else hw
            parts = [_conv(1, cin, w, hw_first), _conv(3, w, w, hw_out), _conv(1, w, cout, hw_out)]
            if b == 0:
                parts.append(_conv(1, cin, cout, hw_out))
            for pp_, mm, aa in parts:
                params, macs, acts = params + pp_, macs + mm, acts + aa
            cin, hw = cout, hw_out
        stages.append(StageCounts(f"res{i + 2}", params, macs, acts))
    fc_params = cin * spec.n_classes + spec.n_classes
    stages.append(StageCounts("fc", fc_params, cin * spec.n_classes, spec.n_classes))
    return tuple(stages)


def check_data_parallel_only(par: Parallelism, what: str) -> None:
    """Raise :class:`InputError` unless ``par`` is pure data parallelism."""
    for key in ("tp", "pp", "cp", "ep"):
        if getattr(par, key) != 1:
            raise InputError(f"{what} workloads are data-parallel only; {key} must be 1 (got "
                             f"{getattr(par, key)})", field=f"parallelism.{key}")
    if par.dp_comm_overlap:
        raise InputError(
            f"dp_comm_overlap is modelled for transformer steps only; a {what} step with one "
            "micro-batch puts each layer's gradient all-reduce in that layer's "
            "weight-gradient phase, where training_loop: overlap or fine_grained_overlap "
            "hides it; with several micro-batches its reduction follows the backward "
            "passes and is not overlapped",
            field="parallelism.dp_comm_overlap")


def resnet_workload(spec: ResNetSpec, par: Parallelism, device: Device, fabric: Fabric,
                    placement: Placement, efficiency: ComputeEfficiency, name: str | None = None,
                    check_memory: bool = True) -> GeneratedWorkload:
    """Data-parallel ResNet training step on one NPU: ``2 MACs b`` FLOPs per pass and stage, a
    gradient all-reduce of ``params x grad_bytes`` on ``dp``, activations ``2 x
    activation_elements x b x beta``.
    """
    check_data_parallel_only(par, "ResNet")
    dtype = par.precision.compute_dtype
    b, m = par.micro_batch_size, par.micro_batches
    stages = resnet_stage_counts(spec)
    total_params = sum(s.params for s in stages)
    layers = []
    sync: list[Collective] = []
    for s in stages:
        f = 2.0 * s.macs * b
        t = compute_time_s(f, device, dtype, efficiency)
        ar = ((Collective("all_reduce", s.params * par.precision.grad_bytes, "dp"),)
              if par.dp > 1 else ())
        if m == 1:
            layers.append(Layer(s.name, Phase(t), Phase(t), Phase(t, ar)))
        else:
            layers.append(Layer(s.name, Phase(t), Phase(t), Phase(t), count=m))
            sync.extend(ar)
    if sync:
        layers.append(Layer("dp_grad_sync", weight_grad=Phase(0.0, tuple(sync))))
    act = 2.0 * sum(s.activation_elements for s in stages) * b * par.precision.activation_bytes
    return data_parallel_workload(
        spec.name, layers, placement.groups(), total_params, 0.0, act,
        6.0 * sum(s.macs for s in stages), par, device, fabric, placement, efficiency, name,
        check_memory, ("tokens_per_step counts images",))


def data_parallel_workload(model_name: str, layers: list[Layer], groups: dict, params: float,
                           extra_weight_bytes: float, activation_bytes: float,
                           flops_per_sample: float, par: Parallelism, device: Device,
                           fabric: Fabric, placement: Placement, efficiency: ComputeEfficiency,
                           name: str | None, check_memory: bool, notes: tuple[str, ...]
                           ) -> GeneratedWorkload:
    """A data-parallel step of ``layers`` then the memory-bound optimizer step of the
    ``params`` every NPU replicates (ZeRO-sharded), with every NPU's memory (those parameters'
    state, ``extra_weight_bytes`` and ``activation_bytes``) checked to fit when
    ``check_memory``; ``flops_per_sample`` counts forward and backward. A token is a sample.
    """
    prec = par.precision
    shard = params / par.dp if par.zero >= 1 else params
    update_bytes = shard * (prec.grad_bytes + 2 * prec.optimizer_bytes + prec.param_bytes)
    layers = [*layers, Layer("optimizer_step", Phase(memory_time_s(update_bytes, device)))]
    w, g, o = model_state_bytes(params, prec, par.zero, par.dp)
    memory = MemoryBreakdown(weights_bytes=w + extra_weight_bytes, grads_bytes=g,
                             optimizer_bytes=o, activations_bytes=activation_bytes,
                             capacity_bytes=device.hbm_bytes, where="every NPU")
    if check_memory and not memory.fits:
        raise InputError(f"{model_name} does not fit: {memory.describe()}", field="parallelism")
    flops = flops_per_sample * par.global_batch_size
    return GeneratedWorkload(
        workload=Workload(name or model_name, tuple(layers), groups),
        model_name=model_name,
        n_npus=fabric.n_npus,
        device=device,
        efficiency=efficiency,
        compute_dtype=prec.compute_dtype,
        model_flops_per_step=flops,
        hardware_flops_per_step=flops,
        tokens_per_step=float(par.global_batch_size),
        samples_per_step=float(par.global_batch_size),
        memory=memory,
        placement=placement,
        micro_batches=par.micro_batches,
        notes=notes,
    )

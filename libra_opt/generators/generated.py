"""The result of a workload generator and the metrics derived from a step time."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from libra_opt.errors import LibraOptError
from libra_opt.generators.devices import ComputeEfficiency, Device
from libra_opt.generators.mapping import Placement
from libra_opt.generators.memory import MemoryBreakdown
from libra_opt.traffic.workload import StepMetrics, Workload

__all__ = ["GeneratedWorkload", "step_metrics", "throughput_tokens_per_s",
           "achieved_flops_per_npu", "model_flops_utilization"]


@dataclass(frozen=True)
class GeneratedWorkload:
    """A :class:`~libra_opt.traffic.workload.Workload` with what it was generated from.

    Attributes
    ----------
    workload : Workload
        One training step on the slowest NPU.
    model_flops_per_step : float
        Useful FLOPs of one step over the cluster (no recomputation): the numerator of MFU
        (Chowdhery et al. 2022), attention counted over the causal half
        (:func:`~libra_opt.generators.transformer_counts.model_flops_per_token` ``causal=True``),
        so MFU cannot exceed 1 unless the compute model is wrong.
    hardware_flops_per_step : float
        FLOPs executed including recomputation (Narayanan et al.), causal attention.
    tokens_per_step, samples_per_step : float
        Tokens (samples for DLRM and ResNet) and sequences / samples / images per step.
    memory : MemoryBreakdown
        Peak memory of the most loaded NPU.
    placement : Placement
        Spans of the parallelism axes on the fabric.
    micro_batches : int
        Micro-batches per step per pipeline.
    bubble_fraction : float
        Pipeline idle time over the slowest stage's busy time (``(p - 1) / (v m)`` if equal).
    notes : tuple of str
        Modelling choices worth reading next to the numbers.
    stage_compute_s : tuple of float
        Compute seconds per step of each pipeline stage (no bubble), first stage first.
    compute_breakdown_s : mapping of str to float
        Compute seconds per step of the described NPU by operator class, bubble excluded.
    bubble_compute_s : float
        Compute seconds of the pipeline bubble, ``sum_{s != r} t_s / v``.
    published_model_flops_per_step, published_hardware_flops_per_step : float
        The same counts with attention over the full ``s x s`` matrix (Narayanan et al. eq. (3),
        PaLM's ``12 L H Q T``), to compare with published TFLOP/s only (0: equal).
    """

    workload: Workload
    model_name: str
    n_npus: int
    device: Device
    efficiency: ComputeEfficiency
    compute_dtype: str
    model_flops_per_step: float
    hardware_flops_per_step: float
    tokens_per_step: float
    samples_per_step: float
    memory: MemoryBreakdown
    placement: Placement
    micro_batches: int = 1
    bubble_fraction: float = 0.0
    notes: tuple[str, ...] = ()
    stage_compute_s: tuple[float, ...] = ()
    compute_breakdown_s: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    bubble_compute_s: float = 0.0
    published_model_flops_per_step: float = 0.0
    published_hardware_flops_per_step: float = 0.0


def step_metrics(generated: GeneratedWorkload, checkpoint_bytes: float | None = None
                 ) -> StepMetrics:
    """What one step of ``generated`` accomplishes (tokens, FLOPs, memory), for reports;
    ``checkpoint_bytes``: its model's checkpoint size, when known."""
    return StepMetrics(
        tokens_per_step=generated.tokens_per_step,
        samples_per_step=generated.samples_per_step,
        model_flops_per_step=generated.model_flops_per_step,
        n_npus=generated.n_npus,
        peak_flops_per_npu=generated.device.peak_flops_for(generated.compute_dtype),
        memory_per_npu_bytes=generated.memory.total_bytes,
        memory_capacity_bytes=generated.memory.capacity_bytes,
        checkpoint_bytes=checkpoint_bytes,
    )


def throughput_tokens_per_s(generated: GeneratedWorkload, step_time_s: float) -> float:
    """Tokens (samples for non-token models) processed per second by the whole cluster.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> throughput_tokens_per_s(SimpleNamespace(tokens_per_step=4e6), 2.0)
    2000000.0
    """
    return generated.tokens_per_step / step_time_s


def achieved_flops_per_npu(generated: GeneratedWorkload, step_time_s: float,
                           hardware: bool = False) -> float:
    """FLOP/s per NPU: model (or hardware, as Narayanan et al. 2021 report) FLOPs per step over
    step time x NPUs.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> g = SimpleNamespace(model_flops_per_step=6e18, hardware_flops_per_step=8e18, n_npus=1000)
    >>> achieved_flops_per_npu(g, 20.0), achieved_flops_per_npu(g, 20.0, hardware=True)
    (300000000000000.0, 400000000000000.0)
    """
    flops = generated.hardware_flops_per_step if hardware else generated.model_flops_per_step
    return flops / (step_time_s * generated.n_npus)


def model_flops_utilization(generated: GeneratedWorkload, step_time_s: float) -> float:
    """Model FLOPs utilization: model FLOP/s per NPU over the device's peak for the dtype [1]_.

    Raises
    ------
    LibraOptError
        MFU above 1, an error of the model (naming the workload and the step time).

    References
    ----------
    .. [1] A. Chowdhery et al., "PaLM: Scaling Language Modeling with Pathways",
       arXiv:2204.02311, Appendix B.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from libra_opt.io.presets import load_device
    >>> g = SimpleNamespace(model_flops_per_step=989.4e12 * 8 * 0.4, n_npus=8,
    ...                     device=load_device("h100_sxm"), compute_dtype="bf16", model_name="m")
    >>> round(model_flops_utilization(g, 1.0), 6)
    0.4
    >>> model_flops_utilization(g, 0.3)
    Traceback (most recent call last):
    ...
    libra_opt.errors.LibraOptError: model error: MFU 133.3 % > 100 % for m at a step time of 0.3 s (model FLOPs 3.166e+15 over 8 NPUs at 9.894e+14 FLOP/s): the step is faster than the peak
    """
    peak = generated.device.peak_flops_for(generated.compute_dtype)
    mfu = achieved_flops_per_npu(generated, step_time_s) / peak
    if mfu > 1.0 + 1e-9:
        raise LibraOptError(
            f"model error: MFU {100 * mfu:.1f} % > 100 % for {generated.model_name} at a step "
            f"time of {step_time_s:.6g} s (model FLOPs {generated.model_flops_per_step:.4g} over "
            f"{generated.n_npus} NPUs at {peak:.4g} FLOP/s): the step is faster than the peak")
    return mfu

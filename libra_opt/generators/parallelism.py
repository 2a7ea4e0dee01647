"""Parallelism descriptor: how a model is split over NPUs (``tp * cp * dp * pp`` of them,
``ep`` inside ``dp``) and how a step is scheduled."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from libra_opt.schema import StrictModel, validate_as

__all__ = ["Precision", "Parallelism", "parallelism_from_dict"]


class Precision(StrictModel):
    """Bytes per element of each kind of state, and the matrix-multiply data type.

    Parameters
    ----------
    compute_dtype : {'fp32', 'tf32', 'bf16', 'fp16', 'fp8'}
        Data type whose peak FLOP/s the device's compute time uses.
    param_bytes : float
        Bytes per parameter of the working weights (2 for bf16/fp16).
    grad_bytes : float
        Bytes per gradient element, in memory and in the data-parallel reduction (2, or 4
        when gradients are accumulated and reduced in fp32).
    optimizer_bytes : float
        Optimizer state per parameter: 12 for mixed-precision Adam (fp32 master weights,
        momentum and variance; Rajbhandari et al. 2020, Sec. 3.1).
    activation_bytes : float
        Bytes per activation element (and per element of activation collectives).

    Examples
    --------
    >>> p = Precision()
    >>> p.param_bytes + p.grad_bytes + p.optimizer_bytes   # ZeRO's 16 bytes per parameter
    16.0
    """

    compute_dtype: Literal["fp32", "tf32", "bf16", "fp16", "fp8"] = "bf16"
    param_bytes: float = Field(default=2.0, gt=0)
    grad_bytes: float = Field(default=2.0, gt=0)
    optimizer_bytes: float = Field(default=12.0, ge=0)
    activation_bytes: float = Field(default=2.0, gt=0)


class Parallelism(StrictModel):
    """Parallel degrees, batch and memory options of one training configuration.

    Parameters
    ----------
    tp : int
        Tensor parallelism (Megatron-LM, Shoeybi et al. 2019).
    pp : int
        Pipeline parallelism, 1F1B schedule (Narayanan et al. 2021).
    dp : int
        Data parallelism.
    ep : int
        Expert parallelism, carved out of ``dp`` (it divides ``dp``; Megatron-Core,
        DeepSeek-V3): experts sharded over ``ep`` ranks, replicated over the ``dp / ep``.
    cp : int
        Context parallelism: the sequence split into ``cp`` parts exchanging keys and values
        (Liu et al. 2023 ring attention; Llama 3's all-gather variant).
    sequence_parallel : bool
        Megatron sequence parallelism: tensor-parallel all-reduces become reduce-scatter +
        all-gather and norm/dropout activations are sharded.
    interleave : int
        Virtual pipeline stages (model chunks) per device; the bubble shrinks by this factor.
    pp_scatter_gather : bool
        Each tensor-parallel rank sends ``1/tp`` of the stage-boundary activation and the
        receiver all-gathers it over ``tp`` (Narayanan et al. 2021, Sec. 4.1). Automatic with
        sequence parallelism (activations are already sharded).
    zero : {0, 1, 2, 3}
        ZeRO stage (Rajbhandari et al. 2020): 0 all-reduce; 1/2 reduce-scatter of gradients
        and all-gather of parameters once per step; 3 (FSDP) both every micro-batch.
    dp_mode : {'collective', 'in_network_optimizer'}
        ``collective`` (default): the ZeRO stage's collectives. ``in_network_optimizer``
        (LuWu, arXiv:2409.00918; needs ``zero: 0``): gradients pushed to and parameters
        pulled from in-network aggregators holding the optimizer state
        (:mod:`libra_opt.generators.in_network_optimizer`).
    optimizer_state : {'aggregator', 'host_paging'}
        With ``dp_mode: in_network_optimizer``: the aggregators hold the optimizer state and
        run the update (default), or each GPU pages it from its host memory every step.
    host_link_gbps : float
        GB/s per direction of each GPU's host link for ``host_paging`` (default 64: PCIe
        Gen5 x16, NVIDIA H100 SXM datasheet).
    micro_batch_size : int
        Sequences (samples) per micro-batch.
    global_batch_size : int
        Sequences (samples) per optimizer step over the whole cluster.
    recompute : {'none', 'selective', 'full'}
        Activation recomputation (Korthikanti et al. 2022).
    capacity_factor : float, optional
        Overrides the model's MoE capacity factor.
    flash_attention : bool
        Attention runs as one fused FlashAttention kernel (default); ``False`` prices the
        unfused ``Q K^T`` / softmax / dropout / ``P V`` kernels of Megatron-LM before 2023.
    gradient_accumulation_fusion : bool
        Megatron-LM's ``--gradient-accumulation-fusion`` (default); ``False`` adds an
        accumulation kernel per weight and micro-batch.
    tp_comm_overlap : bool
        Megatron-LM's asynchronous tensor-parallel backward collectives, each hidden behind
        its linear's GEMM (needs ``tp > 1``).
    dp_comm_overlap : bool
        The data-parallel gradient reduction runs during the last micro-batch's backward
        pass (PyTorch DDP, Megatron-LM ``--overlap-grad-reduce``; needs ``dp x cp > 1``,
        ZeRO 0-2, ``dp_mode: collective``).
    zero3_overlap : bool
        With ``zero: 3``, each layer's gathers and reduce-scatters run behind its compute
        (FSDP prefetching; :func:`~libra_opt.generators.comm_overlap.zero3_overlapped`).

        The three overlap options (default off) make an overlap-form workload, which needs
        ``training_loop: overlap`` (:mod:`libra_opt.generators.comm_overlap`; the README
        says what each hides).
    software_stack : str, optional
        The training framework (and version) that runs the step, e.g. ``megatron_lm_2022``,
        ``megatron_deepspeed``, ``nemo_megatron_core``: its one efficiency constant scales
        the compute speed (:mod:`libra_opt.generators.stacks`). Default: the stack the
        device constants were calibrated on (``Device.calibration_stack``).
    precision : Precision

    Examples
    --------
    >>> p = Parallelism(tp=8, pp=8, dp=16, global_batch_size=1536)
    >>> p.n_npus, p.micro_batches
    (1024, 96)
    """

    tp: int = Field(default=1, gt=0, strict=True)
    sequence_parallel: bool = False
    pp: int = Field(default=1, gt=0, strict=True)
    interleave: int = Field(default=1, gt=0, strict=True)
    pp_scatter_gather: bool = True
    dp: int = Field(default=1, gt=0, strict=True)
    zero: Literal[0, 1, 2, 3] = 0
    dp_mode: Literal["collective", "in_network_optimizer"] = "collective"
    optimizer_state: Literal["aggregator", "host_paging"] = "aggregator"
    host_link_gbps: float = Field(default=64.0, gt=0, allow_inf_nan=False)
    ep: int = Field(default=1, gt=0, strict=True)
    cp: int = Field(default=1, gt=0, strict=True)
    micro_batch_size: int = Field(default=1, gt=0, strict=True)
    global_batch_size: int = Field(gt=0, strict=True)
    recompute: Literal["none", "selective", "full"] = "none"
    capacity_factor: float | None = Field(default=None, gt=0)
    flash_attention: bool = True
    gradient_accumulation_fusion: bool = True
    tp_comm_overlap: bool = False
    dp_comm_overlap: bool = False
    zero3_overlap: bool = False
    software_stack: str | None = Field(default=None, min_length=1, max_length=64)
    precision: Precision = Field(default_factory=Precision)

    @model_validator(mode="after")
    def _check(self) -> Parallelism:
        if self.dp % self.ep:
            raise ValueError(
                f"ep {self.ep} must divide dp {self.dp} (expert parallelism is carved out of "
                "data parallelism)"
            )
        per_step = self.dp * self.micro_batch_size
        if self.global_batch_size % per_step:
            raise ValueError(
                f"global_batch_size {self.global_batch_size} is not a multiple of dp x "
                f"micro_batch_size = {self.dp} x {self.micro_batch_size} = {per_step}"
            )
        if self.tp_comm_overlap and self.tp == 1:
            raise ValueError("tp_comm_overlap needs tp > 1 (there is no tensor-parallel "
                             "collective to overlap)")
        if self.dp_comm_overlap and (self.dp * self.cp == 1 or self.zero == 3
                                     or self.dp_mode != "collective"):
            raise ValueError("dp_comm_overlap needs a data-parallel gradient reduction to "
                             "overlap: dp x cp > 1, zero 0, 1 or 2 and dp_mode collective")
        if self.zero3_overlap and (self.zero != 3 or self.dp * self.cp == 1):
            raise ValueError("zero3_overlap needs zero 3 and dp x cp > 1 (ZeRO-3 collectives "
                             "to overlap)")
        if self.interleave > 1 and self.pp == 1:
            raise ValueError("interleave > 1 needs pp > 1")
        if self.dp_mode == "in_network_optimizer" and self.zero != 0:
            raise ValueError(
                f"dp_mode in_network_optimizer needs zero 0, not {self.zero} (the optimizer "
                "state lives in the network, there is nothing for ZeRO to shard)"
            )
        if self.optimizer_state != "aggregator" and self.dp_mode != "in_network_optimizer":
            raise ValueError(
                f"optimizer_state {self.optimizer_state} is a variant of dp_mode "
                "in_network_optimizer (set dp_mode: in_network_optimizer)"
            )
        return self

    @property
    def n_npus(self) -> int:
        """NPUs used: ``tp * cp * dp * pp``."""
        return self.tp * self.cp * self.dp * self.pp

    @property
    def micro_batches(self) -> int:
        """Micro-batches per step per pipeline: ``global_batch / (dp * micro_batch)``."""
        return self.global_batch_size // (self.dp * self.micro_batch_size)

    @property
    def expert_dp(self) -> int:
        """Replicas of each expert: ``dp / ep``."""
        return self.dp // self.ep

    def degrees(self) -> dict[str, int]:
        """Degrees of the orthogonal axes placed on the fabric: tp, cp, ep, edp, pp.

        ``edp = dp / ep``; the data-parallel group is ``ep x edp``.
        """
        return {"tp": self.tp, "cp": self.cp, "ep": self.ep, "edp": self.expert_dp, "pp": self.pp}


def parallelism_from_dict(data: object, source: str | None = None, prefix: str | None = None) -> Parallelism:
    """Validate a parallelism mapping (as read from YAML).

    Raises
    ------
    InputError
        Naming ``source``, the field and the problem.

    Examples
    --------
    >>> parallelism_from_dict({"tp": 8, "dp": 3, "global_batch_size": 16}, "s.yaml", "parallelism")
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: s.yaml: parallelism: Value error, global_batch_size 16 is not a multiple of dp x micro_batch_size = 3 x 1 = 3
    """
    return validate_as(Parallelism, data, source, prefix)

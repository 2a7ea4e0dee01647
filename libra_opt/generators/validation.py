"""Published training runs as values: the clusters they ran on and the tables they form (read
by :mod:`libra_opt.io.validation`; predicted and fitted in :mod:`libra_opt.explore`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.fabric.topology import Switch
from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.generators.devices import Device
from libra_opt.generators.parallelism import Parallelism
from libra_opt.options import TrainingLoop
from libra_opt.traffic.collective_settings import link_efficiency_value
from libra_opt.traffic.timing import TimingModel

__all__ = ["Cluster", "ValidationRow", "ValidationTable", "check_device_keys", "NCCL_NVLINK_STEP_S",
           "NCCL_NET_STEP_S"]

Metric = Literal["step_time_s", "hardware_tflops_per_gpu", "model_tflops_per_gpu", "mfu",
                 "tokens_per_s_per_gpu"]

#: Per-step latency of an NCCL ring over NVLink, seconds: NCCL's tuning model, ring
#: algorithm, Simple protocol (the protocol of large messages), ``hwLat`` for NVLink, 3.4 us
#: (NVIDIA NCCL, src/graph/tuning.cc).
NCCL_NVLINK_STEP_S = 3.4e-6
#: Per-step latency of an NCCL ring step that crosses the network, seconds: the same table's
#: ``hwLat`` for NET, ring, Simple protocol, 9.6 us.
NCCL_NET_STEP_S = 9.6e-6


@dataclass(frozen=True)
class Cluster:
    """Hardware of a published run: ``gpus_per_node`` devices on a node switch, nodes on a pod
    switch, each with its per-GPU line rate (GB/s, one direction) and per-step collective latency
    (default NCCL's ring latencies :data:`NCCL_NVLINK_STEP_S`, :data:`NCCL_NET_STEP_S`).

    What collectives reach of each line rate is the device's ``scale_up_efficiency`` /
    ``scale_out_efficiency`` unless ``node_efficiency`` / ``pod_efficiency`` replace it (a curve,
    a preset, a fraction or ``none``); a link priced with a curve has no latency of its own.
    """

    name: str
    device: Device
    gpus_per_node: int
    node_bw_gbps: float
    pod_bw_gbps: float
    node_tier: str = "NVLink"
    pod_tier: str = "InfiniBand"
    node_latency_s: float = NCCL_NVLINK_STEP_S
    pod_latency_s: float = NCCL_NET_STEP_S
    node_efficiency: float | str | None = None
    pod_efficiency: float | str | None = None

    def __post_init__(self) -> None:
        for level, default in (("node", self.device.scale_up_efficiency),
                               ("pod", self.device.scale_out_efficiency)):
            value = getattr(self, f"{level}_efficiency")
            value = (default or "none") if value is None else value
            object.__setattr__(self, f"{level}_efficiency",
                               link_efficiency_value(value, f"{level}.efficiency"))

    def _curve(self, level: str) -> bool:
        return isinstance(getattr(self, f"{level}_efficiency"), str)

    def timing(self, training_loop: TrainingLoop = "no_overlap") -> TimingModel:
        """Pipelined collectives at the links' line rates times what collectives reach of them.

        Examples
        --------
        >>> from libra_opt.io.presets import load_device
        >>> a100 = Cluster("c", load_device("a100_80gb"), 8, 300.0, 25.0)
        >>> a100.node_efficiency, a100.timing().efficiency   # the device's curve
        ('a100_nvlink_nccl', (('node', 'a100_nvlink_nccl'),))
        >>> Cluster("c", load_device("a100_80gb"), 8, 300.0, 25.0, node_efficiency="none").timing().efficiency
        ()
        """
        eff: tuple[tuple[str, float | str], ...] = tuple(
            (level, v) for level, v in (("node", self.node_efficiency),
                                        ("pod", self.pod_efficiency))
            if v is not None and v != 1.0)
        return TimingModel("pipelined", training_loop, efficiency=eff)

    def fabric(self, n_npus: int) -> tuple[Fabric, list[float]]:
        """Two-level switch fabric for ``n_npus`` devices and its line-rate vector; a link
        priced with a curve has no latency of its own.

        Examples
        --------
        >>> from libra_opt.io.presets import load_device
        >>> f, bw = Cluster("c", load_device("a100_80gb"), 8, 300.0, 25.0).fabric(16)
        >>> bw, [d.latency_s for d in f.dims]
        ([300.0, 25.0], [0.0, 9.6e-06])
        """
        per = min(self.gpus_per_node, n_npus)
        if n_npus % per:
            raise InputError(
                f"{n_npus} GPUs is not a multiple of gpus_per_node {per}", field="parallelism"
            )
        node_lat = 0.0 if self._curve("node") else self.node_latency_s
        dims = [Dim("node", Switch(), per, self.node_tier, node_lat)]
        bw = [self.node_bw_gbps]
        if n_npus // per > 1:
            pod_lat = 0.0 if self._curve("pod") else self.pod_latency_s
            dims.append(Dim("pod", Switch(), n_npus // per, self.pod_tier, pod_lat))
            bw.append(self.pod_bw_gbps)
        return Fabric(tuple(dims)), bw


@dataclass(frozen=True)
class ValidationRow:
    """One published run.

    Attributes
    ----------
    name, source : str
        The row and its citation key (explained in the table's ``sources``).
    metric : {'step_time_s', 'hardware_tflops_per_gpu', 'model_tflops_per_gpu', 'mfu', 'tokens_per_s_per_gpu'}
    published : float
        The published value of ``metric``.
    calibrate, calibrate_stack : bool
        Used to calibrate the device constants / its software stack's constant (excluded from
        the error statistics).
    convention : str
        What the published metric depends on that its source does not state (reported, not
        judged), and ``convention_band`` how far that can move it.
    variant_set : str
        The set of parallelization variants of one model the row belongs to, judged by
        ``variant_judge`` (``rank`` or ``regret``, :mod:`libra_opt.explore.ranking`).
    """

    name: str
    source: str
    cluster: Cluster
    metric: Metric
    published: float
    model: TransformerSpec
    parallelism: Parallelism
    calibrate: bool = False
    check_memory: bool = True
    notes: str = ""
    calibrate_stack: bool = False
    convention: str = ""
    convention_band: float = 0.0
    variant_set: str = ""
    variant_judge: Literal["rank", "regret"] = "rank"

    @property
    def software_stack(self) -> str:
        """The stack the row ran (its parallelism's, else the device's calibration stack)."""
        return self.parallelism.software_stack or self.cluster.device.calibration_stack


@dataclass(frozen=True)
class ValidationTable:
    """A named list of published runs with the sources they cite."""

    name: str
    title: str
    rows: tuple[ValidationRow, ...]
    sources: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    source: str = ""
    """The file the table was read from (for error messages)."""


def check_device_keys(tables: Sequence[ValidationTable]) -> None:
    """Raise :class:`InputError` when two clusters give different devices the same key."""
    seen: dict[str, tuple[Device, str]] = {}
    for t in tables:
        for r in t.rows:
            d = r.cluster.device
            where = f"{t.name}: cluster {r.cluster.name}"
            if d.key in seen and seen[d.key][0] != d:
                raise InputError(
                    f"{seen[d.key][1]} and {where} use different devices with the same key "
                    f"{d.key!r}; give one its own name (device: {{preset: {d.key}, key: "
                    f"<name>, ...}})", source=t.source or t.name, field="clusters")
            seen.setdefault(d.key, (d, where))

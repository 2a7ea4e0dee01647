"""Schema of the scenario YAML (the file boundary): strict pydantic models of every
section, checked before anything is built (:mod:`libra_opt.io.scenario_file` documents the
format and builds the :class:`~libra_opt.scenario.scenario.Scenario`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, StrictInt, field_validator

from libra_opt.cost.aggregators import (
    USD_PER_PORT_GBPS,
    USD_PER_STATE_GB,
    W_PER_PORT_GBPS,
    W_PER_STATE_GB,
)
from libra_opt.errors import short_repr
from libra_opt.options import (
    AllReduceVariant,
    CollectiveAlgorithm,
    CollectiveModel,
    Objective,
    SwitchPricing,
    SwitchScope,
    TopologyName,
    TrafficModel,
    TrainingLoop,
)
from libra_opt.schema import StrictModel

__all__ = [
    "CollectivesSpec",
    "CompressionSpec",
    "ConstraintsSpec",
    "DiLoCoSpec",
    "DimSpec",
    "FabricSpec",
    "InNetworkOptimizerSpec",
    "MembersSpec",
    "OverlapSpec",
    "ScenarioFile",
    "WorkloadSpec",
]


class MembersSpec(StrictModel):
    """``members:`` of a dimension (see :mod:`libra_opt.fabric.heterogeneous`); values are
    checked by :class:`~libra_opt.fabric.heterogeneous.DimMembers`."""

    fraction: list[float]
    share: list[float]
    price_factor: list[float] | None = None
    power_factor: list[float] | None = None
    size: list[StrictInt] | None = None


class DimSpec(StrictModel):
    name: str
    topology: TopologyName
    size: StrictInt = Field(gt=0)
    tier: str
    latency_s: float = Field(default=0.0, ge=0)
    switch_radix: int | None = Field(default=None, gt=1)
    switch_scope: SwitchScope = "block"
    switch_pricing: SwitchPricing = "whole_switch"
    copper_levels: StrictInt = Field(default=0, ge=0, le=3)
    members: MembersSpec | None = None


class FabricSpec(StrictModel):
    dims: list[DimSpec] | None = None
    libra_network: str | None = None


class WorkloadSpec(StrictModel):
    """An ASTRA-sim workload (``astra_sim`` + ``communicator``) or a model-based one
    (``model`` + ``parallelism`` + ``device``, see :mod:`libra_opt.io.model_entry`)."""

    name: str
    weight: float = Field(default=1.0, gt=0)
    astra_sim: str | None = None
    communicator: str | None = None
    model: str | None = None
    parallelism: dict[str, Any] | None = None
    device: str | dict[str, Any] | None = None
    mapping: dict[str, Any] | None = None
    efficiency: float | dict[str, Any] | None = None
    check_memory: bool | None = None


class ConstraintsSpec(StrictModel):
    linear: list[str] = Field(default_factory=list)
    bounds: dict[str, list[float | None]] = Field(default_factory=dict)
    budget_usd: float | None = Field(default=None, gt=0)
    power_w: float | None = Field(default=None, gt=0)
    rhs: dict[str, float] = Field(default_factory=dict)

    @field_validator("bounds")
    @classmethod
    def _pairs(cls, v: dict[str, list[float | None]]) -> dict[str, list[float | None]]:
        for key, pair in v.items():
            if len(pair) != 2:
                raise ValueError(
                    f"bounds of {short_repr(key, 80)} must be [min, max] (null for none)"
                )
        return v


class CollectivesSpec(StrictModel):
    """``collectives:`` (settings of the ``topology_aware`` model, see
    :class:`~libra_opt.traffic.topology_aware.CollectiveSettings`)."""

    algorithm: dict[str, CollectiveAlgorithm] = Field(default_factory=dict)
    chunks: StrictInt = Field(default=1, ge=1, le=1_000_000)
    active_chunks: StrictInt | None = Field(default=None, ge=1)
    endpoint_delay_s: float = Field(default=0.0, ge=0)
    local_memory_gbps: float | None = Field(default=None, gt=0)
    all_reduce: AllReduceVariant = "hierarchical"
    efficiency: dict[str, float | str] = Field(default_factory=dict)
    link_latency_s: dict[str, float] = Field(default_factory=dict)
    backend: str | None = None
    queues_per_dim: StrictInt = Field(default=1, ge=1)
    active_chunks_per_dim: StrictInt = Field(default=1, ge=1)
    collective_algorithm: dict[str, dict[str, CollectiveAlgorithm]] = Field(default_factory=dict)
    astra_sim_system: str | None = None


class CompressionSpec(StrictModel):
    """``compression:`` (see :class:`~libra_opt.traffic.compression.Compression`)."""

    baseline: str = "bf16"
    groups: dict[str, str | dict[str, str]] = Field(default_factory=dict)


class OverlapSpec(StrictModel):
    """``fine_grained_overlap:`` (see :class:`~libra_opt.traffic.overlap.OverlapPolicy`)."""

    presets: list[str] = Field(default_factory=list)
    groups: dict[str, float | dict[str, float]] = Field(default_factory=dict)


class DiLoCoSpec(StrictModel):
    """``diloco:`` (see :func:`~libra_opt.traffic.diloco.diloco_workloads`)."""

    site_dim: str
    params_per_npu: float = Field(gt=0)
    sync_every_steps: StrictInt = Field(ge=1)
    fragments: StrictInt = Field(default=1, ge=1)
    delta_bits: float = Field(default=16.0, gt=0, le=32)
    overlap_steps: float = Field(default=0.0, ge=0)
    dp_group: str = "dp"


class InNetworkOptimizerSpec(StrictModel):
    """``in_network_optimizer:`` (aggregators of ``dp_mode: in_network_optimizer``; see
    :class:`~libra_opt.cost.aggregators.Aggregators`, whose defaults are estimates)."""

    dims: list[str] | None = None
    usd_per_port_gbps: float = Field(default=USD_PER_PORT_GBPS, ge=0, allow_inf_nan=False)
    w_per_port_gbps: float = Field(default=W_PER_PORT_GBPS, ge=0, allow_inf_nan=False)
    usd_per_state_gb: float = Field(default=USD_PER_STATE_GB, ge=0, allow_inf_nan=False)
    w_per_state_gb: float = Field(default=W_PER_STATE_GB, ge=0, allow_inf_nan=False)


class ScenarioFile(StrictModel):
    """Schema of the scenario YAML (see :mod:`libra_opt.io.scenario_file`)."""

    name: str | None = None
    fabric: dict[str, Any]
    cost_model: str | dict[str, Any]
    power_model: str | dict[str, dict[str, float]] | None = None
    workloads: list[WorkloadSpec] = Field(min_length=1)
    constraints: ConstraintsSpec = Field(default_factory=ConstraintsSpec)
    objective: Objective = "perf"
    collective_model: CollectiveModel = "pipelined"
    training_loop: TrainingLoop = "no_overlap"
    traffic_model: TrafficModel = "hierarchical"
    collectives: CollectivesSpec | None = None
    in_network_reduction: list[str] = Field(default_factory=list)
    compression: CompressionSpec | None = None
    fine_grained_overlap: OverlapSpec | None = None
    diloco: DiLoCoSpec | None = None
    in_network_optimizer: InNetworkOptimizerSpec | None = None
    tco: dict[str, Any] | None = None
    reliability: dict[str, Any] | None = None

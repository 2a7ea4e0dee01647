"""What moves and how long it takes: workloads, collectives, routing, step time of a workload."""

from libra_opt.traffic.collectives import collective_time_s, hierarchical_traffic_bytes
from libra_opt.traffic.routing import collective_traffic, native_traffic_bytes
from libra_opt.traffic.step_time import WorkloadTimes, check_bandwidth, step_time
from libra_opt.traffic.timing import TimingModel
from libra_opt.traffic.topology_aware import CollectiveSettings, collective_phases
from libra_opt.traffic.workload import (
    Collective,
    Layer,
    Phase,
    StepMetrics,
    Workload,
    walk_collectives,
    walk_phases,
)

__all__ = [
    "Collective",
    "CollectiveSettings",
    "Layer",
    "Phase",
    "StepMetrics",
    "TimingModel",
    "Workload",
    "WorkloadTimes",
    "check_bandwidth",
    "collective_phases",
    "collective_time_s",
    "collective_traffic",
    "hierarchical_traffic_bytes",
    "native_traffic_bytes",
    "step_time",
    "walk_collectives",
    "walk_phases",
]

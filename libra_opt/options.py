"""The option vocabularies: every choice a user can spell, defined once.

Each option set is a ``Literal`` type and the tuple of its values (``typing.get_args``);
the scenario schema, the CLI's ``choices=``, the validators and the reports all use these.

Examples
--------
>>> OBJECTIVES
('perf', 'perf_per_cost', 'tco')
>>> objective_label("tco")
'cost of one training run ($)'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

from libra_opt.fabric.builders import FABRIC_FAMILIES, FabricFamily
from libra_opt.fabric.topology import (
    SWITCH_PRICINGS,
    SWITCH_SCOPES,
    TOPOLOGY_CLASSES,
    SwitchPricing,
    SwitchScope,
)

__all__ = [
    "POINT_COLUMN",
    "TopologyName",
    "TOPOLOGIES",
    "SwitchScope",
    "SWITCH_SCOPES",
    "SwitchPricing",
    "SWITCH_PRICINGS",
    "CollectiveKind",
    "COLLECTIVE_KINDS",
    "PhaseName",
    "PHASES",
    "Objective",
    "OBJECTIVES",
    "OBJECTIVE_MEANING",
    "objective_label",
    "CollectiveModel",
    "COLLECTIVE_MODELS",
    "CollectiveAlgorithm",
    "COLLECTIVE_ALGORITHMS",
    "AllReduceVariant",
    "ALL_REDUCE_VARIANTS",
    "TrainingLoop",
    "TRAINING_LOOPS",
    "TrafficModel",
    "TRAFFIC_MODELS",
    "FabricFamily",
    "FABRIC_FAMILIES",
    "Component",
    "COMPONENTS",
    "PricedComponent",
    "PRICED_COMPONENTS",
    "CompareMode",
    "COMPARE_MODES",
]

#: Topology of one fabric dimension: the names of the topology classes; ``TopologyName`` is
#: their ``Literal`` at run time, ``str`` to a type checker (it reads no tuple-built Literal).
TOPOLOGIES: tuple[str, ...] = tuple(t.name for t in TOPOLOGY_CLASSES)
if TYPE_CHECKING:
    TopologyName = str
else:
    TopologyName = Literal[TOPOLOGIES]

#: Collective operations (``p2p``: a pipeline send/receive).
CollectiveKind = Literal["all_reduce", "reduce_scatter", "all_gather", "all_to_all", "p2p"]
COLLECTIVE_KINDS: tuple[CollectiveKind, ...] = get_args(CollectiveKind)

#: Phases of a layer in a training step, in step order.
PhaseName = Literal["forward", "input_grad", "weight_grad"]
PHASES: tuple[PhaseName, ...] = get_args(PhaseName)

#: Optimization objectives.
Objective = Literal["perf", "perf_per_cost", "tco"]
OBJECTIVES: tuple[Objective, ...] = get_args(Objective)

#: Objective -> (what its value is, unit).
OBJECTIVE_MEANING: dict[Objective, tuple[str, str]] = {
    "perf": ("weighted step time", "s"),
    "perf_per_cost": ("weighted step time x network cost", "s*$"),
    "tco": ("cost of one training run", "$"),
}

#: How a collective's time is modelled: LIBRA's per-dimension traffic / bandwidth combined
#: by max (``pipelined``) or sum (``sequential``), or :mod:`libra_opt.traffic.topology_aware`.
CollectiveModel = Literal["pipelined", "sequential", "topology_aware"]
COLLECTIVE_MODELS: tuple[CollectiveModel, ...] = get_args(CollectiveModel)

#: Algorithm a collective runs on one dimension (``topology_aware`` model): ``ring``
#: (``k - 1`` neighbour steps), ``direct`` (one step to every peer), ``halving_doubling``
#: (``log2 k`` steps, recursive halving / doubling; ``k`` a power of two).
CollectiveAlgorithm = Literal["ring", "direct", "halving_doubling"]
COLLECTIVE_ALGORITHMS: tuple[CollectiveAlgorithm, ...] = get_args(CollectiveAlgorithm)

#: Multi-dimensional all-reduce (``topology_aware`` model): ``hierarchical`` (reduce-scatter
#: up the dimensions, all-reduce on the last, all-gather down) or ``full`` (an all-reduce of
#: the whole buffer on every dimension).
AllReduceVariant = Literal["hierarchical", "full"]
ALL_REDUCE_VARIANTS: tuple[AllReduceVariant, ...] = get_args(AllReduceVariant)

#: Whether a phase's collectives add to its compute or hide behind it.
TrainingLoop = Literal["no_overlap", "overlap"]
TRAINING_LOOPS: tuple[TrainingLoop, ...] = get_args(TrainingLoop)

#: Which bytes cross which dimension: LIBRA's hierarchical model or the fabric's own routing.
TrafficModel = Literal["hierarchical", "native"]
TRAFFIC_MODELS: tuple[TrafficModel, ...] = get_args(TrafficModel)

#: Cost columns of a dimension (bought per GB/s of its bandwidth).
Component = Literal["link", "switch", "nic"]
COMPONENTS: tuple[Component, ...] = get_args(Component)

#: Components a tier may price: the three columns, ``transceiver`` and ``copper`` (a DAC)
#: folded into ``link``, ``in_network_reduction`` (a SHARP-class premium) into ``switch``.
PricedComponent = Literal["link", "switch", "nic", "transceiver", "copper", "in_network_reduction"]
PRICED_COMPONENTS: tuple[PricedComponent, ...] = get_args(PricedComponent)

#: How ``compare`` equalizes fabrics: the same bandwidth; the same scale-out budget with the
#: HB domain held fixed; the same total budget, HB and scale-out re-optimized together.
CompareMode = Literal["equal_bw", "equal_budget", "equal_budget_joint"]
COMPARE_MODES: tuple[CompareMode, ...] = get_args(CompareMode)


def objective_label(objective: Objective) -> str:
    """What the objective's value measures, with its unit, e.g. ``'weighted step time (s)'``."""
    what, unit = OBJECTIVE_MEANING[objective]
    return f"{what} ({unit})"


#: Column of a sweep's streamed results that numbers its grid points (the results folder's
#: bookkeeping for ``--resume``): never a sweep axis.
POINT_COLUMN = "point"

"""How a step is timed, as one frozen value: :class:`TimingModel`.

It holds the collective model, traffic model, training loop, the ``topology_aware``
settings and the in-network dimensions, checked once, and answers the questions the code
asks of them, so no other module compares an option's name.

Examples
--------
>>> t = TimingModel("topology_aware", "overlap")
>>> t.uses_topology_aware, t.overlapped, t.is_pipelined, t.collectives is not None
(True, True, False, True)
>>> TimingModel("sequential").describe()
'sequential collectives, no_overlap loop, hierarchical traffic'
>>> TimingModel("chunked")
Traceback (most recent call last):
...
libra_opt.errors.InputError: collective_model: collective_model 'chunked' is not one of pipelined, sequential, topology_aware
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from libra_opt.errors import InputError, short_repr
from libra_opt.fabric.dims import Dim
from libra_opt.options import (
    COLLECTIVE_MODELS,
    TRAFFIC_MODELS,
    TRAINING_LOOPS,
    CollectiveModel,
    TrafficModel,
    TrainingLoop,
)
from libra_opt.traffic.topology_aware import CollectiveSettings, collective_buffers_bytes

__all__ = ["TimingModel", "as_timing"]


@dataclass(frozen=True)
class TimingModel:
    """The step-time model's choices, checked.

    Attributes
    ----------
    collective_model : {"pipelined", "sequential", "topology_aware"}
        Per-dimension times combined by max or sum, or the chunk-phase model.
    training_loop : {"no_overlap", "overlap"}
        Whether a phase's collectives add to its compute or hide behind it.
    traffic_model : {"hierarchical", "native"}
        LIBRA's hierarchical routing or the fabric's own.
    collectives : CollectiveSettings or None
        The ``topology_aware`` model's settings (its defaults when not given); ``None`` under
        the other collective models.
    in_network_dims : tuple of str
        Names of the dimensions that reduce in the network (sorted).
    efficiency : tuple of (dim name, fraction or curve name)
        Under ``pipelined`` and ``sequential``: the achievable fraction of a dimension's
        bandwidth, as ``collectives.efficiency`` gives it to ``topology_aware``.
    """

    collective_model: CollectiveModel = "pipelined"
    training_loop: TrainingLoop = "no_overlap"
    traffic_model: TrafficModel = "hierarchical"
    collectives: CollectiveSettings | None = None
    in_network_dims: tuple[str, ...] = ()
    efficiency: tuple[tuple[str, float | str], ...] = ()

    def __post_init__(self) -> None:
        for field, value, allowed in (("collective_model", self.collective_model,
                                       COLLECTIVE_MODELS),
                                      ("training_loop", self.training_loop, TRAINING_LOOPS),
                                      ("traffic_model", self.traffic_model, TRAFFIC_MODELS)):
            if value not in allowed:
                raise InputError(f"{field} {value!r} is not one of {', '.join(allowed)}",
                                 field=field)
        if self.collective_model == "topology_aware":
            if self.efficiency:
                raise InputError("under topology_aware the efficiency is a collective setting "
                                 "(collectives.efficiency), not a separate one",
                                 field="efficiency")
            if self.collectives is None:
                object.__setattr__(self, "collectives", CollectiveSettings())
        else:
            if self.collectives is not None:
                object.__setattr__(self, "collectives", None)
            if self.efficiency:  # resolved and checked as the topology_aware settings do
                settings = CollectiveSettings(efficiency=self.efficiency)
                object.__setattr__(self, "efficiency", settings.efficiency)
                object.__setattr__(self, "_efficiency_settings", settings)
        object.__setattr__(self, "in_network_dims", tuple(sorted(set(self.in_network_dims))))

    def efficiency_by_dim(self, dims: Sequence[Dim], kind: str, size_bytes: float,
                          span: Sequence[int], flat_ring: bool = False) -> np.ndarray | None:
        """The fraction of each dimension's bandwidth a collective reaches under :attr:`efficiency`;
        ``None`` when it names none.

        A dimension not spanned or not named runs at 1; a curve is read at the buffer the
        dimension's phase handles (:func:`~libra_opt.traffic.topology_aware.
        collective_buffers_bytes`). ``eta_d`` fixed per collective keeps every phase
        ``coef / B_d + const``.

        Examples
        --------
        >>> from libra_opt.fabric.dims import Dim
        >>> t = TimingModel(efficiency={"nvl": "a100_nvlink_nccl", "ib": 0.5})
        >>> dims = (Dim("nvl", "switch", 8, "NVLink"), Dim("ib", "switch", 4, "IB"))
        >>> t.efficiency_by_dim(dims, "all_reduce", 64 * 2**20, (8, 4)).round(4).tolist()
        [0.5554, 0.5]
        >>> t.efficiency_by_dim(dims, "all_gather", 8 * 2**20, (8, 1)).round(4).tolist()
        [0.5554, 1.0]
        >>> TimingModel().efficiency_by_dim(dims, "all_reduce", 1e6, (8, 1)) is None
        True
        """
        if not self.efficiency:
            return None
        settings: CollectiveSettings = self.__dict__["_efficiency_settings"]
        buffers = collective_buffers_bytes(kind, size_bytes, span, flat_ring)
        groups = [int(np.prod(span))] * len(dims) if flat_ring else list(map(int, span))
        return np.array([settings.efficiency_of(d, buffers[i], groups[i])
                         if buffers[i] > 0 else 1.0 for i, d in enumerate(dims)])

    # --- the collective model -------------------------------------------------------------
    @property
    def is_pipelined(self) -> bool:
        """A collective takes the longest of its dimensions' times (LIBRA's pipelined model)."""
        return self.collective_model == "pipelined"

    @property
    def is_sequential(self) -> bool:
        """A collective takes the sum of its dimensions' times."""
        return self.collective_model == "sequential"

    @property
    def uses_topology_aware(self) -> bool:
        """Collectives are timed by the ``topology_aware`` chunk-phase model."""
        return self.collective_model == "topology_aware"

    @property
    def dims_at_once(self) -> CollectiveModel:
        """The per-dimension rule of :func:`~libra_opt.traffic.collectives.collective_time_s`
        (``pipelined`` under ``topology_aware``).
        """
        return "sequential" if self.is_sequential else "pipelined"

    # --- the training loop ----------------------------------------------------------------
    @property
    def overlapped(self) -> bool:
        """A phase's collectives hide behind its compute (``training_loop: overlap``)."""
        return self.training_loop == "overlap"

    # --- the traffic model ----------------------------------------------------------------
    @property
    def native_traffic(self) -> bool:
        """Bytes follow the fabric's own routing (``traffic_model: native``)."""
        return self.traffic_model == "native"

    @property
    def hierarchical_traffic(self) -> bool:
        """Bytes follow LIBRA's hierarchical per-dimension model."""
        return self.traffic_model == "hierarchical"

    # --- checks and text ------------------------------------------------------------------
    def uneven_sizes_refusal(self) -> str | None:
        """Why asymmetric block sizes are not modelled under this timing, or ``None``."""
        if self.uses_topology_aware:
            return f"collective_model {self.collective_model!r}"
        if not self.hierarchical_traffic:
            return f"traffic_model {self.traffic_model!r}"
        return None

    def native_traffic_refusal(self) -> str | None:
        """Why this timing cannot run (``topology_aware`` with ``native`` traffic), or ``None``.

        Examples
        --------
        >>> TimingModel("topology_aware", traffic_model="native").native_traffic_refusal()
        "collective_model 'topology_aware' runs collectives dimension by dimension: it does not model 'native' routing; use 'hierarchical' (its default)"
        >>> TimingModel("pipelined", traffic_model="native").native_traffic_refusal() is None
        True
        """
        if self.uses_topology_aware and not self.hierarchical_traffic:
            return ("collective_model 'topology_aware' runs collectives dimension by dimension: "
                    "it does not model 'native' routing; use 'hierarchical' (its default)")
        return None

    def describe(self) -> str:
        """``<collective model> collectives, <loop> loop, <traffic model> traffic``, efficiency."""
        eff = "".join(f", {name} at {v if isinstance(v, str) else f'{v:g}'}"
                      for name, v in self.efficiency)
        return (f"{self.collective_model} collectives, {self.training_loop} loop, "
                f"{self.traffic_model} traffic{eff}")


def as_timing(timing: TimingModel | None = None) -> TimingModel:
    """``timing``, or :class:`TimingModel`'s defaults for ``None``.

    Examples
    --------
    >>> as_timing().describe()
    'pipelined collectives, no_overlap loop, hierarchical traffic'
    >>> as_timing("sequential")
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: timing: expected a TimingModel (e.g. TimingModel('sequential')), got 'sequential'
    """
    if timing is None:
        return TimingModel()
    if not isinstance(timing, TimingModel):
        raise InputError(f"expected a TimingModel (e.g. TimingModel('sequential')), got "
                         f"{short_repr(timing)}", field="timing")
    return timing

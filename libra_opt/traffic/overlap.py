"""Fine-grained overlap: the fraction of each group's collectives that hides behind compute.

Real systems hide part of a phase's communication: DP gradient all-reduces under the backward
pass [1]_, TP collectives behind the producing GEMMs (T3 [2]_), MoE all-to-alls behind expert
computation (Comet [3]_). With ``f_c`` the fraction of collective ``c`` (time ``X_c``) that can
run concurrently with the phase's compute ``C``:

.. math::

    T = \\max\\Big(C, \\sum_c f_c X_c\\Big) + \\sum_c (1 - f_c) X_c

convex in ``1 / B``; ``f = 0`` is ``no_overlap``, ``f = 1`` is ``overlap``.
:func:`overlap_workload` realizes it under the ``overlap`` loop: each phase keeps its compute
and the hidden parts, a zero-compute layer ``<name>~exposed`` carries the rest. A split
collective pays its latency in both parts (conservative by one latency).

References
----------
.. [1] S. Li et al., "PyTorch Distributed: Experiences on Accelerating Data Parallel
   Training", VLDB 2020, arXiv:2006.15704.
.. [2] S. Pati et al., "T3: Transparent Tracking & Triggering for Fine-grained Overlap of
   Compute & Collectives", ASPLOS 2024, arXiv:2401.16677.
.. [3] S. Zhang et al., "Comet: Fine-grained Computation-communication Overlapping for
   Mixture-of-Experts", arXiv:2502.19811.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from libra_opt.errors import InputError
from libra_opt.options import PHASES
from libra_opt.traffic.workload import Layer, Phase, Workload

__all__ = ["OVERLAP_PRESETS", "OverlapPolicy", "overlap_workload"]

#: Presets: name -> rules ``(group, phase or 'all', fraction)``: DP gradient all-reduce fully
#: hidden by the backward pass [1]_; TP collectives (T3 [2]_) and MoE all-to-all (Comet [3]_)
#: half hidden, a conservative planning estimate.
OVERLAP_PRESETS: Mapping[str, tuple[tuple[str, str, float], ...]] = MappingProxyType({
    "dp_backward": (("dp", "weight_grad", 1.0),),
    "tp_layer": (("tp", "all", 0.5),),
    "moe_all_to_all": (("ep", "all", 0.5),),
})


@dataclass(frozen=True)
class OverlapPolicy:
    """Overlappable fraction per group and phase.

    Parameters
    ----------
    rules : tuple of (group, phase, fraction)
        ``phase`` one of :data:`~libra_opt.options.PHASES` or ``all`` (a phase rule wins);
        ``fraction`` in [0, 1]. Unlisted collectives: 0.

    Examples
    --------
    >>> p = OverlapPolicy.from_presets(["dp_backward"], (("tp", "forward", 0.25),))
    >>> p.fraction("dp", "weight_grad"), p.fraction("tp", "forward"), p.fraction("ep", "forward")
    (1.0, 0.25, 0.0)
    """

    rules: tuple[tuple[str, str, float], ...] = ()

    def __post_init__(self) -> None:
        rules = []
        for group, phase, frac in self.rules:
            fld = f"fine_grained_overlap.groups.{group}"
            if phase != "all" and phase not in PHASES:
                raise InputError(f"phase {phase!r} is not one of all, {', '.join(PHASES)}",
                                 field=fld)
            if isinstance(frac, bool) or not isinstance(frac, int | float) or not (
                    math.isfinite(frac) and 0 <= frac <= 1):
                raise InputError(f"fraction {frac!r} must be a number in [0, 1]",
                                 field=fld if phase == "all" else f"{fld}.{phase}")
            rules.append((str(group), phase, float(frac)))
        object.__setattr__(self, "rules", tuple(rules))

    @classmethod
    def from_presets(cls, names, rules=()) -> OverlapPolicy:
        """Presets (:data:`OVERLAP_PRESETS`) followed by ``rules`` (later rules win)."""
        out: list[tuple[str, str, float]] = []
        for name in names:
            if name not in OVERLAP_PRESETS:
                raise InputError(f"{name!r} is not one of {', '.join(OVERLAP_PRESETS)}",
                                 field="fine_grained_overlap.presets")
            out += OVERLAP_PRESETS[name]
        return cls(tuple(out) + tuple(rules))

    def fraction(self, group: str, phase: str) -> float:
        """``f`` of ``group``'s collectives in ``phase``."""
        by_phase = {p: f for g, p, f in self.rules if g == group}
        return float(by_phase.get(phase, by_phase.get("all", 0.0)))


def overlap_workload(workload: Workload, policy: OverlapPolicy) -> Workload:
    """``workload`` rewritten so that the ``overlap`` loop times every phase as
    ``max(C, sum f X) + sum (1 - f) X``; groups the policy names but the workload lacks are
    ignored.

    Examples
    --------
    10 ms compute and a 20 ms DP all-reduce, half overlappable: ``max(10, 10) + 10 = 20`` ms.

    >>> from libra_opt.fabric.dims import Dim, Fabric
    >>> from libra_opt.traffic.step_time import step_time
    >>> from libra_opt.traffic.workload import Collective
    >>> f = Fabric((Dim("a", "switch", 2, "T"),))
    >>> w = Workload("w", (Layer("l", weight_grad=Phase(0.01, (Collective("all_reduce", 2e9, "dp"),))),),
    ...              {"dp": (2,)})
    >>> o = overlap_workload(w, OverlapPolicy((("dp", "all", 0.5),)))
    >>> from libra_opt.traffic.timing import TimingModel
    >>> round(step_time(o, f, [100.0], TimingModel(training_loop="overlap")).step_time_s, 9)
    0.02
    """
    if workload.overlap_form:
        raise InputError(
            f"workload {workload.name!r} is in overlap form (generated with "
            "tp_comm_overlap or dp_comm_overlap): it already states which collectives hide "
            "behind which compute; drop fine_grained_overlap or those options",
            field="fine_grained_overlap")
    out: list[Layer] = []
    behind: dict[str, bool] = {}  # group -> some overlappable collective shares a phase with compute
    where: dict[str, str] = {}
    for layer in workload.layers:
        hidden, exposed = {}, {}
        for name in PHASES:
            phase: Phase = getattr(layer, name)
            h, e = [], []
            for c in phase.collectives:
                f = policy.fraction(c.group, name)
                if f > 0:
                    behind[c.group] = behind.get(c.group, False) or phase.compute_s > 0
                    where.setdefault(c.group, f"layer {layer.name!r}, {name}")
                    h.append(dataclasses.replace(c, size_bytes=c.size_bytes * f))
                if f < 1:
                    e.append(dataclasses.replace(c, size_bytes=c.size_bytes * (1 - f)))
            hidden[name] = dataclasses.replace(phase, collectives=tuple(h))
            exposed[name] = Phase(0.0, tuple(e))
        out.append(dataclasses.replace(layer, forward=hidden["forward"],
                                       input_grad=hidden["input_grad"],
                                       weight_grad=hidden["weight_grad"]))
        if any(p.collectives for p in exposed.values()):
            out.append(Layer(f"{layer.name}~exposed", exposed["forward"],
                             exposed["input_grad"], exposed["weight_grad"], count=layer.count))
    idle = sorted(g for g, ok in behind.items() if not ok)
    if idle:
        g = idle[0]
        raise InputError(
            f"fine_grained_overlap would hide {g!r} collectives behind their phase's compute, "
            f"but in workload {workload.name!r} every one of them is in a phase without "
            f"compute ({where[g]}): nothing can hide them there. A generated step with "
            "several micro-batches reduces gradients after its backward passes; for a "
            "transformer step use parallelism.dp_comm_overlap (and tp_comm_overlap) instead",
            field="fine_grained_overlap")
    return dataclasses.replace(workload, layers=tuple(out))

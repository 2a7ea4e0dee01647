"""Compressed collectives: fewer bytes per element for a group's collectives in some phases.

Collective sizes assume one element size (``baseline``, bf16 by default); sending fp8 or int4
scales every byte of those collectives by ``bytes(dtype) / bytes(baseline)`` (latency steps
unchanged), applied to the workload (:func:`compress_workload`) so every model sees it alike.

A traffic model only: convergence with compressed gradients (scaling, error feedback [1]_
[2]_ [3]_) and higher-precision partial sums inside a reduction are not modelled.

References
----------
.. [1] F. Seide, H. Fu, J. Droppo, G. Li, D. Yu, "1-Bit Stochastic Gradient Descent and its
   Application to Data-Parallel Distributed Training of Speech DNNs", Interspeech 2014.
.. [2] H. Tang et al., "1-bit Adam: Communication Efficient Large-Scale Training with Adam's
   Convergence Speed", ICML 2021, arXiv:2102.02888.
.. [3] P. Micikevicius et al., "FP8 Formats for Deep Learning", arXiv:2209.05433.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from libra_opt.errors import InputError
from libra_opt.options import PHASES
from libra_opt.traffic.workload import Phase, Workload

__all__ = ["DTYPE_BYTES", "Compression", "compress_workload"]

#: Bytes per element of each element type.
DTYPE_BYTES: Mapping[str, float] = MappingProxyType({
    "fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5,
})


@dataclass(frozen=True)
class Compression:
    """Element types of collectives, per group and phase.

    Parameters
    ----------
    rules : tuple of (group, phase, dtype)
        ``phase`` one of :data:`~libra_opt.options.PHASES` or ``all`` (a phase rule wins).
    baseline : str
        Element type the workload's sizes assume (a key of :data:`DTYPE_BYTES`).

    Examples
    --------
    >>> c = Compression((("dp", "all", "fp8"), ("dp", "forward", "bf16")))
    >>> c.factor("dp", "weight_grad"), c.factor("dp", "forward"), c.factor("tp", "forward")
    (0.5, 1.0, 1.0)
    """

    rules: tuple[tuple[str, str, str], ...] = ()
    baseline: str = "bf16"

    def __post_init__(self) -> None:
        if self.baseline not in DTYPE_BYTES:
            raise InputError(f"{self.baseline!r} is not one of {', '.join(DTYPE_BYTES)}",
                             field="compression.baseline")
        rules = []
        for rule in self.rules:
            group, phase, dtype = (str(x) for x in rule)
            fld = f"compression.groups.{group}"
            if phase != "all" and phase not in PHASES:
                raise InputError(f"phase {phase!r} is not one of all, {', '.join(PHASES)}",
                                 field=fld)
            if dtype not in DTYPE_BYTES:
                raise InputError(f"{dtype!r} is not one of {', '.join(DTYPE_BYTES)}",
                                 field=fld if phase == "all" else f"{fld}.{phase}")
            rules.append((group, phase, dtype))
        object.__setattr__(self, "rules", tuple(rules))

    def factor(self, group: str, phase: str) -> float:
        """Traffic multiplier of ``group``'s collectives in ``phase``."""
        by_phase = {p: d for g, p, d in self.rules if g == group}
        dtype = by_phase.get(phase, by_phase.get("all"))
        return 1.0 if dtype is None else DTYPE_BYTES[dtype] / DTYPE_BYTES[self.baseline]


def compress_workload(workload: Workload, compression: Compression) -> Workload:
    """``workload`` with every collective scaled by :meth:`Compression.factor`.

    Raises
    ------
    InputError
        When a rule names a group the workload does not define.

    Examples
    --------
    >>> from libra_opt.traffic.workload import Collective, Layer
    >>> w = Workload("w", (Layer("l", Phase(1e-3), Phase(0.0),
    ...                          Phase(2e-3, (Collective("all_reduce", 1e9, "dp"),))),),
    ...              {"dp": (8,)})
    >>> c = compress_workload(w, Compression((("dp", "all", "int4"),)))
    >>> c.layers[0].weight_grad.collectives[0].size_bytes   # 1 GB of bf16 as int4
    250000000.0
    """
    if not compression.rules:
        return workload
    missing = sorted({g for g, _, _ in compression.rules} - set(workload.groups))
    if missing:
        raise InputError(
            f"workload {workload.name!r} has no group {missing[0]!r} (groups: "
            f"{', '.join(workload.groups)})", field=f"compression.groups.{missing[0]}")
    done: dict[tuple[int, str], Phase] = {}

    def phase_of(phase: Phase, name: str) -> Phase:
        key = (id(phase), name)
        if key not in done:
            colls = tuple(
                dataclasses.replace(c, size_bytes=c.size_bytes * compression.factor(c.group, name))
                for c in phase.collectives)
            done[key] = dataclasses.replace(phase, collectives=colls)
        return done[key]

    layers = tuple(
        dataclasses.replace(layer, forward=phase_of(layer.forward, "forward"),
                            input_grad=phase_of(layer.input_grad, "input_grad"),
                            weight_grad=phase_of(layer.weight_grad, "weight_grad"))
        for layer in workload.layers)
    return dataclasses.replace(workload, layers=layers)


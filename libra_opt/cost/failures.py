"""What breaks in a fabric, how often (a rate per component-hour of each kind of part,
counted from the inventory), and what each break does to a training job (its *blast radius*,
:func:`failure_modes`): it stops the job, or leaves a dimension at ``f`` of its bandwidth. A spine or core switch of a Clos of radix ``k`` takes ``ceil(L / S)`` of the ``L``
uplinks a lower switch deals round-robin over ``S``, ``f = 1 - ceil(L / S) / L`` for the
worst; a cable above the leaves ``f = 1 - 1/L``; either stops the job when ``f`` would be 0.
A cable between NPUs leaves the topology's
:meth:`~libra_opt.fabric.topology.Topology.cable_failure_factor`. Dimensions inside one host
have no failures of their own (Table 5 of [1]_ files NVLink errors under the GPU).

Defaults (:data:`DEFAULT_RATES_PER_H`) divide each category of Table 5 of [1]_ (419
interruptions in 54 days of Llama 3 405B on 16,384 H100s in 2,048 hosts of 8) by its
component-hours, "network switch/cable" spread evenly over the 1,280 switches and 49,152
cables of that job's scale-out Clos as modelled here (``llama3_405b_h100_tco``).

References
----------
.. [1] A. Dubey et al. (Llama team, Meta), "The Llama 3 Herd of Models", arXiv:2407.21783,
   2024, Sec. 3.3.4 and Table 5.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from libra_opt.errors import InputError, short_repr
from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.frozen import FrozenMap
from libra_opt.fabric.inventory import dimension_inventory, switch_block_npus
from libra_opt.fabric.topology import clos_level_switches

__all__ = [
    "COMPONENT_KINDS",
    "DEFAULT_RATES_PER_H",
    "LLAMA3_TABLE5",
    "FailureMode",
    "check_rates",
    "failure_modes",
    "host_dims",
    "rate_of",
]

#: Kinds of parts that fail.
Kind = Literal["gpu", "hbm", "host", "nic", "switch", "link", "software"]
COMPONENT_KINDS: tuple[Kind, ...] = ("gpu", "hbm", "host", "nic", "switch", "link", "software")

#: Llama 3 405B, Table 5 of [1]: unexpected interruptions by root cause over the snapshot,
#: grouped by the kind of part they are charged to (rows of the table in the comments).
LLAMA3_TABLE5: Mapping[str, int] = FrozenMap({
    "gpu": 196,       # faulty GPU 148, GPU SRAM 19, GPU system processor 17,
                      # GPU thermal interface + sensor 6, silent data corruption 6
    "hbm": 72,        # GPU HBM3 memory
    "host": 46,       # host maintenance 32, SSD 3, power supply 3, server chassis 2,
                      # IO expansion board 2, CPU 2, system memory 2
    "nic": 7,         # NIC
    "network": 35,    # network switch/cable
    "software": 63,   # software bug 54, NCCL watchdog timeouts 7, dependency 2
})
_HOURS = 54 * 24.0          # the snapshot: 54 days
_GPUS, _HOSTS = 16384, 2048
_NETWORK_PARTS = 1280 + 49152  # switches + cables of the example's scale-out Clos

#: Failures per component-hour derived from Table 5 of [1] (see the module notes):
#: ``gpu``, ``hbm``, ``software`` per NPU, ``host`` per host, ``nic`` per NIC port,
#: ``switch`` and ``link`` per switch and per cable (with its transceivers).
DEFAULT_RATES_PER_H: Mapping[str, float] = FrozenMap({
    "gpu": LLAMA3_TABLE5["gpu"] / (_GPUS * _HOURS),
    "hbm": LLAMA3_TABLE5["hbm"] / (_GPUS * _HOURS),
    "host": LLAMA3_TABLE5["host"] / (_HOSTS * _HOURS),
    "nic": LLAMA3_TABLE5["nic"] / (_GPUS * _HOURS),
    "switch": LLAMA3_TABLE5["network"] / (_NETWORK_PARTS * _HOURS),
    "link": LLAMA3_TABLE5["network"] / (_NETWORK_PARTS * _HOURS),
    "software": LLAMA3_TABLE5["software"] / (_GPUS * _HOURS),
})


#: Kinds whose rate may be given per cost tier (``link.ScaleUp``).
_TIERED = ("switch", "link", "nic")


def rate_of(rates: Mapping[str, float], kind: str, tier: str) -> float:
    """The rate of ``kind`` on a dimension of cost ``tier`` (a ``<kind>.<tier>`` entry if
    any, else the kind's).

    Examples
    --------
    >>> rate_of({"link": 1e-6, "link.ScaleUp": 5e-6}, "link", "ScaleUp")
    5e-06
    """
    return rates.get(f"{kind}.{tier}", rates[kind])


def check_rates(rates_per_h: Mapping[str, float] | None = None,
                mtbf_h: Mapping[str, float] | None = None,
                field: str = "reliability") -> dict[str, float]:
    """The rate of every kind: the defaults, replaced by ``rates_per_h`` (failures per
    component-hour) or ``mtbf_h`` (hours), ``<kind>.<tier>`` (``link.ScaleUp``) for a network
    kind on one cost tier (:func:`rate_of`). An unknown kind, a kind given both ways or a value
    that is not a finite number > 0 is an :class:`~libra_opt.errors.InputError` naming it.

    Examples
    --------
    >>> r = check_rates({"gpu": 1e-5}, {"switch": 1e6})
    >>> r["gpu"], r["switch"], r["hbm"] == DEFAULT_RATES_PER_H["hbm"]
    (1e-05, 1e-06, True)
    >>> check_rates(mtbf_h={"gpu": 0})
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: reliability.mtbf_h.gpu: 0 must be a finite number > 0 (hours)
    """
    out = dict(DEFAULT_RATES_PER_H)
    given = {"rates_per_h": rates_per_h or {}, "mtbf_h": mtbf_h or {}}
    for key, values in given.items():
        if not isinstance(values, Mapping):
            raise InputError(f"expected a mapping of {', '.join(COMPONENT_KINDS)} to numbers",
                             field=f"{field}.{key}")
        unit = "failures per component-hour" if key == "rates_per_h" else "hours"
        for kind, v in values.items():
            where = f"{field}.{key}.{kind}"
            head, _, tier = str(kind).partition(".")
            if head not in COMPONENT_KINDS or (tier and head not in _TIERED) \
                    or (not tier and "." in str(kind)):
                raise InputError(f"unknown component {short_repr(kind, 60)}; expected "
                                 f"{', '.join(COMPONENT_KINDS)}, or "
                                 f"{'/'.join(_TIERED)}.<tier>", field=where)
            if isinstance(v, bool) or not isinstance(v, int | float) \
                    or not math.isfinite(v) or not v > 0:
                raise InputError(f"{short_repr(v, 60)} must be a finite number > 0 ({unit})",
                                 field=where)
            out[kind] = float(v) if key == "rates_per_h" else 1.0 / float(v)
    both = sorted(set(given["rates_per_h"]) & set(given["mtbf_h"]))
    if both:
        raise InputError(f"{both[0]} is given both as a rate and as an MTBF; give one",
                         field=f"{field}.mtbf_h.{both[0]}")
    return out


@dataclass(frozen=True)
class FailureMode:
    """One kind of part (:data:`COMPONENT_KINDS`) of one place in the fabric (``where``:
    ``"NPU"``, ``"scaleout leaf"``...), its ``count`` and failures per part-hour, and what a
    failure does: it ``stops`` the job (checkpoint restart), or leaves dimension ``dim`` at
    ``bw_factor`` of its bandwidth while the part is down; ``spare``: a hot spare NPU can take
    the failed part's place (GPU, HBM, NIC).
    """

    kind: Kind
    where: str
    count: int
    rate_per_h: float
    stops: bool
    dim: int | None = None
    bw_factor: float = 1.0
    spare: bool = False

    @property
    def failures_per_h(self) -> float:
        """``count x rate_per_h``: failures per hour of this mode in the whole fabric."""
        return self.count * self.rate_per_h


def host_dims(fabric: Fabric, gpus_per_host: int) -> tuple[bool, ...]:
    """Per dimension, whether every one of its networks lies within one host (its blocks of
    ``prod(size_0..size_d)`` NPUs tile a host of ``gpus_per_host``).

    Examples
    --------
    >>> from libra_opt.fabric.builders import rail_optimized_fat_tree
    >>> host_dims(rail_optimized_fat_tree(64, 8, 16), 8), host_dims(rail_optimized_fat_tree(64, 16, 16), 8)
    ((True, False), (False, False))
    """
    out, block = [], 1
    for n in fabric.sizes:
        block *= n
        out.append(gpus_per_host % block == 0)
    return tuple(out)


def _uplinks(n: int, k: int, t: int) -> list[list[tuple[int, int]]]:
    """Per switch level above the leaves, ``(L, S)`` of each kind of lower switch: its
    ``L`` uplinks dealt round-robin over ``S`` switches of the level (the wiring of
    :func:`libra_opt.fabric.graphs.fabric_graph`)."""
    half, top = k // 2, -(-n // k)

    def leaves(m: int) -> set[int]:  # uplinks of the leaves serving m endpoints
        return {min(half, m - i) for i in range(0, m, half)}

    if t == 2:
        return [[(u, top) for u in leaves(n)]]
    pod = half * half
    pods = {min(pod, n - p) for p in range(0, n, pod)}
    up1, up2 = [], []
    for m in pods:
        aggs = -(-m // half)
        up1 += [(u, aggs) for u in leaves(m)]
        up2 += [(u, top) for u in {m // aggs, -(-m // aggs)}]  # round-robin agg loads
    return [up1, up2]


def _switch_modes(fabric: Fabric, d: int, rates: Mapping[str, float]) -> list[FailureMode]:
    """Switches and cables of a switch dimension, level by level (leaf = 0)."""
    dim, inv = fabric.dims[d], dimension_inventory(fabric, d)
    n_big, block = fabric.n_npus, switch_block_npus(fabric, d)
    levels = clos_level_switches(block, dim.switch_radix)
    rates = {kind: rate_of(rates, kind, dim.tier) for kind in ("switch", "link")}
    names = {1: ("switch",), 2: ("leaf", "spine")}.get(len(levels),
                                                      ("leaf", "aggregation", "core"))
    out = [FailureMode("switch", f"{dim.name} {names[0]}", inv.blocks * levels[0],
                       rates["switch"], True),
           FailureMode("link", f"{dim.name} host cable", n_big, rates["link"], True)]
    if len(levels) == 1:
        return out
    assert dim.switch_radix is not None
    for lv, pairs in enumerate(_uplinks(block, dim.switch_radix, len(levels)), start=1):
        # the worst lower switch: the most of its uplinks one upper switch (or cable) carries
        lost_switch = max(-(-u // s) / u for u, s in pairs)
        lost_cable = max(1.0 / u for u, _ in pairs)
        for kind, where, count, lost in (
                ("switch", f"{dim.name} {names[lv]}", inv.blocks * levels[lv], lost_switch),
                ("link", f"{dim.name} {names[lv - 1]}-{names[lv]} cable", n_big, lost_cable)):
            stops = lost >= 1.0
            out.append(FailureMode(kind, where, count, rates[kind], stops,  # type: ignore[arg-type]
                                   None if stops else d, 1.0 if stops else 1.0 - lost))
    return out


def failure_modes(fabric: Fabric, rates_per_h: Mapping[str, float] | None = None,
                  gpus_per_host: int = 8) -> tuple[FailureMode, ...]:
    """Every failure mode of ``fabric`` (NPU parts and hosts first, then each dimension's NICs,
    switches and cables): counts from its inventory, blast radius by family (module notes);
    ``gpus_per_host`` must divide the NPU count.

    Examples
    --------
    A rail-optimized fat-tree of 4,096 H100s (3-tier Clos of radix 64): the leaves and
    the NIC-to-leaf cables stop the job, the rest slows it.

    >>> from libra_opt.fabric.builders import rail_optimized_fat_tree
    >>> modes = failure_modes(rail_optimized_fat_tree(4096, 8, 64))
    >>> [(m.where, m.count, m.stops, round(m.bw_factor, 4)) for m in modes if m.dim is not None]
    [('scaleout aggregation', 128, False, 0.9688), ('scaleout leaf-aggregation cable', 4096, False, 0.9688), ('scaleout core', 64, False, 0.9688), ('scaleout aggregation-core cable', 4096, False, 0.9688)]
    >>> sum(m.count for m in modes if m.kind in ("switch", "link") and m.stops)
    4224
    """
    rates = DEFAULT_RATES_PER_H if rates_per_h is None else rates_per_h
    n_big = fabric.n_npus
    if isinstance(gpus_per_host, bool) or not isinstance(gpus_per_host, int) \
            or gpus_per_host < 1 or n_big % gpus_per_host:
        raise InputError(f"gpus_per_host {short_repr(gpus_per_host)} must be a positive "
                         f"integer dividing the {n_big:,} NPUs", field="reliability.gpus_per_host")
    out = [
        FailureMode("gpu", "NPU", n_big, rates["gpu"], True, spare=True),
        FailureMode("hbm", "NPU memory", n_big, rates["hbm"], True, spare=True),
        FailureMode("software", "job (per NPU)", n_big, rates["software"], True),
        FailureMode("host", "host", n_big // gpus_per_host, rates["host"], True),
    ]
    inside = host_dims(fabric, gpus_per_host)
    for d, dim in enumerate(fabric.dims):
        if inside[d] or dim.size == 1:
            continue
        inv = dimension_inventory(fabric, d)
        link = rate_of(rates, "link", dim.tier)
        if dim.topology.switched:
            out.append(FailureMode("nic", f"{dim.name} NIC", inv.nics,
                                   rate_of(rates, "nic", dim.tier), True, spare=True))
            out.extend(_switch_modes(fabric, d, rates))
        else:
            f = dim.topology.cable_failure_factor(dim.size)
            out.append(FailureMode("link", f"{dim.name} {dim.topology.block} cable", inv.cables,
                                   link, f == 0, None if f == 0 else d, f or 1.0))
    return tuple(out)

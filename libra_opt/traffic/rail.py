"""Routing-aware traffic: Rail-only forwarding through the HB domain against rails joined by a
spine.

A Rail-only fabric sends a byte between rails first inside the HB domain to the NPU on the
destination's rail, then over that rail [1]_ (LIBRA's dimension-ordered routing); a
``block``-scope switch (a fat-tree) reaches its block directly. The forwarding overhead is the
difference between the two (:func:`forwarding_overhead`); hierarchical reduce-scatter,
all-gather and all-reduce are rail-aligned and need no forwarding.

References
----------
.. [1] W. Wang, M. Ghobadi et al., "Rail-only: A Low-Cost High-Performance Network for
   Training LLMs with Trillion Parameters", arXiv:2307.12169 (forwarding of all-to-all
   traffic through the HB domain).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TypedDict

import numpy as np
import numpy.typing as npt

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric
from libra_opt.traffic.collectives import collective_time_s
from libra_opt.traffic.in_network import in_network_dims
from libra_opt.traffic.routing import collective_traffic
from libra_opt.traffic.step_time import check_bandwidth, step_time
from libra_opt.traffic.timing import TimingModel, as_timing
from libra_opt.traffic.workload import Workload, walk_collectives

__all__ = ["joined_rails", "RailUse", "classify_collective", "ForwardingOverhead",
           "forwarding_overhead", "rail_report", "check_rail_mapping", "native_step_time_s"]

def joined_rails(fabric: Fabric) -> Fabric:
    """``fabric`` with every ``rail``-scope dimension in ``block`` scope (a spine joins the rails).

    Examples
    --------
    >>> from libra_opt.fabric.builders import rail_only, rail_optimized_fat_tree
    >>> joined_rails(rail_only(1024, 8)) == rail_optimized_fat_tree(1024, 8)
    True
    """
    return Fabric(tuple(dataclasses.replace(d, switch_scope="block") for d in fabric.dims))


@dataclass(frozen=True)
class RailUse:
    """How a collective uses a fabric's rails.

    ``category`` is ``no_rail`` (no rail-scoped dimension spanned), ``within_rail`` (one rail),
    ``rail_aligned`` (rails and inner dimensions, hierarchical: each phase in one HB domain or one
    rail) or ``forwarded`` (all-to-all / p2p across rails: relayed through the HB domain).
    """

    kind: str
    span: tuple[int, ...]
    category: str


def classify_collective(kind: str, span: Sequence[int], fabric: Fabric) -> RailUse:
    """Classify one collective on ``fabric`` (see :class:`RailUse`).

    Examples
    --------
    >>> from libra_opt.fabric.builders import rail_only
    >>> f = rail_only(64, 8, 8)
    >>> [classify_collective(k, s, f).category for k, s in
    ...  [("all_reduce", (8, 1)), ("all_reduce", (1, 8)), ("all_reduce", (8, 8)),
    ...   ("all_to_all", (8, 8))]]
    ['no_rail', 'within_rail', 'rail_aligned', 'forwarded']
    """
    span = tuple(int(k) for k in span)
    category = "no_rail"
    for e, dim in enumerate(fabric.dims):
        if dim.switch_scope != "rail" or span[e] <= 1:
            continue
        if not any(k > 1 for k in span[:e]):
            category = max(category, "within_rail", key=_RANK.__getitem__)
        elif kind in ("all_to_all", "p2p"):
            category = "forwarded"
        else:
            category = max(category, "rail_aligned", key=_RANK.__getitem__)
    return RailUse(kind, span, category)


_RANK = {"no_rail": 0, "within_rail": 1, "rail_aligned": 2, "forwarded": 3}


class ForwardingOverhead(TypedDict):
    """What :func:`forwarding_overhead` returns (a plain ``dict`` at run time)."""

    extra_bytes: np.ndarray
    time_s: float
    joined_time_s: float
    overhead_pct: float


def forwarding_overhead(kind: str, size_bytes: float, span: Sequence[int], fabric: Fabric,
                        bw_gbps: npt.ArrayLike, timing: TimingModel | None = None, *,
                        flat_ring: bool = False) -> ForwardingOverhead:
    """Extra traffic and time of one collective on ``fabric`` against its rails joined, under
    ``timing``'s collective model, efficiency and in-network dimensions (``flat_ring``: the group
    runs as one flat ring).

    Returns
    -------
    dict
        ``extra_bytes`` (per dimension), ``time_s`` on ``fabric``, ``joined_time_s`` on
        :func:`joined_rails`, ``overhead_pct = 100 (time_s / joined_time_s - 1)``.

    Notes
    -----
    Bytes and latencies under the ``native`` traffic model
    (:func:`libra_opt.traffic.routing.collective_traffic`), timed by
    :func:`libra_opt.traffic.collectives.collective_time_s`.

    Examples
    --------
    All-to-all over 8 HB domains of 8 GPUs, NVLink 450 GB/s, NIC 50 GB/s:

    >>> from libra_opt.fabric.builders import rail_only
    >>> f = rail_only(64, 8, 8)
    >>> seq = TimingModel("sequential")
    >>> r = forwarding_overhead("all_to_all", 1e9, (8, 8), f, [450, 50], seq)
    >>> round(r["overhead_pct"], 2)   # 100 (7/8 - 7/64) / 450 / (7/8 / 50 + 7/64 / 450)
    9.59
    """
    bw = check_bandwidth(fabric, bw_gbps)
    model = as_timing(timing)
    mode = model.collective_model
    joined = joined_rails(fabric)
    inr = in_network_dims(model.in_network_dims, fabric)
    t_r, lat_r = collective_traffic(kind, size_bytes, span, fabric, "native", inr, flat_ring)
    t_j, lat_j = collective_traffic(kind, size_bytes, span, joined, "native", inr, flat_ring)
    eff_r = model.efficiency_by_dim(fabric.dims, kind, size_bytes, span, flat_ring)
    eff_j = model.efficiency_by_dim(joined.dims, kind, size_bytes, span, flat_ring)
    time_r = collective_time_s(t_r if eff_r is None else t_r / eff_r, bw, lat_r, mode)
    time_j = collective_time_s(t_j if eff_j is None else t_j / eff_j, bw, lat_j, mode)
    pct = 100.0 * (time_r / time_j - 1.0) if time_j > 0 else 0.0
    return {"extra_bytes": t_r - t_j, "time_s": time_r, "joined_time_s": time_j,
            "overhead_pct": pct}


def rail_report(workload: Workload, fabric: Fabric, bw_gbps: npt.ArrayLike,
                timing: TimingModel | None = None):
    """One row per distinct collective of ``workload``: rail use and forwarding overhead.

    Returns
    -------
    pandas.DataFrame
        Columns ``group``, ``kind``, ``size_bytes``, ``count`` (per step), ``category``,
        ``extra_hb_bytes``, ``time_s``, ``joined_time_s``, ``overhead_pct``,
        ``extra_time_per_step_s``.

    Examples
    --------
    >>> from libra_opt.fabric.builders import rail_only
    >>> from libra_opt.traffic.workload import Collective, Layer, Phase
    >>> w = Workload("moe", (Layer("l", Phase(0.0, (Collective("all_to_all", 1e9, "ep"),)),
    ...                            count=4),), {"ep": (8, 8)})
    >>> r = rail_report(w, rail_only(64, 8, 8), [450, 50], TimingModel("sequential"))
    >>> r[["category", "count"]].values.tolist()
    [['forwarded', 4]]
    """
    import pandas as pd

    rows: dict[tuple, dict] = {}
    for step in walk_collectives(workload):
        c = step.collective
        key = (c.group, c.kind, c.size_bytes)
        if key in rows:
            rows[key]["count"] += step.count
            continue
        ov = forwarding_overhead(c.kind, c.size_bytes, step.span, fabric, bw_gbps, timing,
                                 flat_ring=c.group in workload.flat_ring_groups)
        rows[key] = {
            "group": c.group, "kind": c.kind, "size_bytes": c.size_bytes,
            "count": step.count,
            "category": classify_collective(c.kind, step.span, fabric).category,
            "extra_hb_bytes": float(np.sum(ov["extra_bytes"])),
            "time_s": ov["time_s"], "joined_time_s": ov["joined_time_s"],
            "overhead_pct": ov["overhead_pct"],
        }
    df = pd.DataFrame(list(rows.values()))
    if not df.empty:
        df["extra_time_per_step_s"] = df["count"] * (df["time_s"] - df["joined_time_s"])
    return df


def check_rail_mapping(workloads: Sequence[Workload], fabric: Fabric,
                       allow_forwarding: bool = True) -> dict[str, str]:
    """Check that ``fabric`` can serve every group; return group -> worst category.

    Raises
    ------
    InputError
        When ``allow_forwarding`` is False and a collective needs HB-domain forwarding, naming
        the workload, group and collective and what would fix it.

    Examples
    --------
    >>> from libra_opt.fabric.builders import rail_only
    >>> from libra_opt.traffic.workload import Collective, Layer, Phase
    >>> w = Workload("w", (Layer("l", Phase(0.0, (Collective("all_to_all", 1e6, "ep"),))),),
    ...              {"ep": (8, 2)})
    >>> check_rail_mapping([w], rail_only(64, 8, 8))
    {'w.ep': 'forwarded'}
    >>> check_rail_mapping([w], rail_only(64, 8, 8), allow_forwarding=False)
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: workloads[w].groups.ep: all_to_all over span (8, 2) ...
    """
    out: dict[str, str] = {}
    for w in workloads:
        for step in walk_collectives(w):
            c, span = step.collective, step.span
            if len(span) != fabric.n_dims:
                raise InputError(f"group {c.group!r} spans {len(span)} dimensions, the fabric has "
                                 f"{fabric.n_dims}", field=f"workloads[{w.name}].groups.{c.group}")
            use = classify_collective(c.kind, span, fabric)
            if use.category == "forwarded" and not allow_forwarding:
                raise InputError(f"{c.kind} over span {tuple(span)} crosses rails and the fabric "
                                 "has no spine; expected the group inside one rail (span 1 on the "
                                 "dimensions inside the rail) or allow_forwarding=True",
                                 field=f"workloads[{w.name}].groups.{c.group}")
            key = f"{w.name}.{c.group}"
            prev = out.get(key, "no_rail")
            out[key] = max(prev, use.category, key=_RANK.__getitem__)
    return out


def native_step_time_s(workload: Workload, fabric: Fabric, bw_gbps: npt.ArrayLike,
                       timing: TimingModel | None = None) -> float:
    """Step time of ``workload`` under ``timing`` with the ``native`` traffic model.

    Examples
    --------
    >>> from libra_opt.fabric.builders import rail_only, rail_optimized_fat_tree
    >>> from libra_opt.traffic.workload import Collective, Layer, Phase
    >>> w = Workload("w", (Layer("l", Phase(0.0, (Collective("all_to_all", 64e9, "ep"),))),),
    ...              {"ep": (8, 4)})
    >>> seq = TimingModel("sequential")
    >>> native_step_time_s(w, rail_only(32, 8, 8), [50, 50], seq)   # (56+48)/50
    2.08
    >>> native_step_time_s(w, rail_optimized_fat_tree(32, 8, 8), [50, 50], seq)
    1.24
    """
    native = replace(as_timing(timing), traffic_model="native")
    return step_time(workload, fabric, bw_gbps, native).step_time_s

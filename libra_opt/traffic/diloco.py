"""Low-communication training across sites (DiLoCo [1]_ / Streaming DiLoCo [2]_): amortized
outer sync.

Each site trains its replica with ordinary data parallelism; every ``H`` inner steps the sites
average their parameter change over the *site* dimension. Streaming DiLoCo syncs ``F``
fragments at staggered times, overlaps each with ``tau`` inner steps of compute and quantizes
the delta to ``b`` bits. A fragment's all-reduce carries ``x = P_npu b / (8 F)`` bytes per
NPU over the data-parallel group, taking ``T_f(B)`` (convex in ``1 / B``); per inner step the
exposed outer sync is

.. math:: E(B) = \\frac{F}{H} \\max(T_f(B) - \\tau C, 0)

with ``C`` the *compute* time of one inner step (not the step time, which depends on ``B``).
:func:`diloco_workloads` models it exactly as a hidden window ``tau C``; ``tau <= H / F``.

References
----------
.. [1] A. Douillard et al., "DiLoCo: Distributed Low-Communication Training of Language
   Models", arXiv:2311.08105.
.. [2] A. Douillard et al., "Streaming DiLoCo with overlapping communication: Towards a
   Distributed Free Lunch", arXiv:2501.18512.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload, walk_collectives

__all__ = ["DiLoCoSettings", "diloco_workloads", "amortized_exposed_s",
           "min_bandwidth_for_slowdown_gbps"]


@dataclass(frozen=True)
class DiLoCoSettings:
    """Outer synchronization of DiLoCo / Streaming DiLoCo.

    Parameters
    ----------
    sync_every_steps : int
        ``H``: inner steps between two syncs of the same parameters.
    fragments : int
        ``F <= H``: fragments synchronized at staggered times (1: plain DiLoCo).
    delta_bits : float
        ``b``: bits per parameter of the transmitted delta.
    overlap_steps : float
        ``tau <= H / F``: inner steps of compute a fragment's sync may overlap (0: blocking).

    Examples
    --------
    >>> s = DiLoCoSettings(100, fragments=4, delta_bits=4)
    >>> s.fragment_bytes(1e9)   # 1e9 parameters per NPU, 4 bits, a quarter of them
    125000000.0
    """

    sync_every_steps: int
    fragments: int = 1
    delta_bits: float = 16.0
    overlap_steps: float = 0.0

    def __post_init__(self) -> None:
        h, f = self.sync_every_steps, self.fragments
        for name, v in (("sync_every_steps", h), ("fragments", f)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"{name} {v!r} must be an integer >= 1", field=f"diloco.{name}")
        if f > h:
            raise InputError(f"fragments {f} exceed sync_every_steps {h} (one fragment per "
                             "inner step at most)", field="diloco.fragments")
        b = self.delta_bits
        if isinstance(b, bool) or not isinstance(b, int | float) or not 0 < b <= 32:
            raise InputError(f"delta_bits {b!r} must be in (0, 32]", field="diloco.delta_bits")
        t = self.overlap_steps
        if isinstance(t, bool) or not (isinstance(t, int | float) and math.isfinite(t)
                                       and t >= 0):
            raise InputError(f"overlap_steps {t!r} must be a finite number >= 0",
                             field="diloco.overlap_steps")
        if t * f > h:
            raise InputError(f"overlap_steps {t!r} exceed sync_every_steps / fragments = "
                             f"{h / f:g} (a fragment's sync must end before the next one "
                             "starts)", field="diloco.overlap_steps")

    @property
    def syncs_per_step(self) -> float:
        """``F / H``: fragment syncs per inner step."""
        return self.fragments / self.sync_every_steps

    def fragment_bytes(self, params_per_npu: float) -> float:
        """``P_npu b / (8 F)``: the buffer of one fragment's outer all-reduce per NPU."""
        return params_per_npu * self.delta_bits / 8.0 / self.fragments


def amortized_exposed_s(fragment_time_s: float, inner_compute_s: float,
                        settings: DiLoCoSettings) -> float:
    """Exposed outer-sync time per inner step, ``T_f`` the fragment's all-reduce time and ``C``
    the inner step's compute time.

    Notes
    -----
    .. math:: E = \\frac{F}{H} \\max(T_f - \\tau C, 0)

    Examples
    --------
    >>> amortized_exposed_s(2.0, 0.5, DiLoCoSettings(100, 4, overlap_steps=2))
    0.04
    """
    s = settings
    return s.syncs_per_step * max(fragment_time_s - s.overlap_steps * inner_compute_s, 0.0)


def min_bandwidth_for_slowdown_gbps(fragment_site_bytes: float, latency_s: float,
                                    inner_step_s: float, inner_compute_s: float,
                                    settings: DiLoCoSettings, slowdown: float = 0.05) -> float:
    """Smallest site bandwidth (GB/s per NPU) with exposed outer sync ``<= slowdown x`` the inner
    step time.

    Parameters
    ----------
    fragment_site_bytes : float
        Bytes per NPU one fragment's sync sends on the site dimension.
    latency_s : float
        Constant latency of one fragment's sync on the site dimension.
    inner_step_s, inner_compute_s : float
        ``T0`` (the reference of the slowdown) and ``C``.
    slowdown : float
        ``s``, e.g. 0.05 for 5%.

    Notes
    -----
    From ``F/H max(x/B + l - tau C, 0) <= s T0`` (only the site dimension charged):

    .. math:: B \\ge \\frac{x}{s T_0 H / F + \\tau C - l}

    ``inf`` when the denominator is not positive.

    Examples
    --------
    1 GB per sync, no latency, 1 s steps, 5%: every step -> 20 GB/s; every 100 -> 0.2 GB/s.

    >>> min_bandwidth_for_slowdown_gbps(1e9, 0.0, 1.0, 1.0, DiLoCoSettings(1))
    20.0
    >>> round(min_bandwidth_for_slowdown_gbps(1e9, 0.0, 1.0, 1.0, DiLoCoSettings(100)), 9)
    0.2
    """
    s = settings
    denom = slowdown * inner_step_s / s.syncs_per_step + s.overlap_steps * inner_compute_s \
        - latency_s
    if denom <= 0:
        return math.inf
    return fragment_site_bytes / (1e9 * denom)


def diloco_workloads(workloads: Sequence[Workload], weights: Sequence[float], fabric: Fabric,
                     site_dim: str, settings: DiLoCoSettings, params_per_npu: float,
                     dp_group: str = "dp") -> tuple[tuple[Workload, ...], tuple[float, ...]]:
    """Inner and outer-sync workloads and their weights.

    Notes
    -----
    Workload ``w`` (weight ``a``) becomes ``w`` with ``dp_group`` not spanning the site dimension
    (weight ``a``) and ``w_outer``: one all-reduce of ``P_npu b / (8 F)`` bytes over ``dp_group``
    (weight ``a F / H``) with the hidden window ``tau C``, ``C = w.compute_s``: the weighted step
    time is ``T_inner + (F / H) max(T_f - tau C, 0)`` exactly.

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim
    >>> f = Fabric((Dim("node", "ring", 4, "A"), Dim("site", "switch", 2, "W")))
    >>> ar = Collective("all_reduce", 2e9, "dp")
    >>> w = Workload("w", (Layer("l", weight_grad=Phase(0.2, (ar,))),), {"dp": (4, 2)})
    >>> ws, wts = diloco_workloads([w], [1.0], f, "site", DiLoCoSettings(10, 2, 4), 1e9)
    >>> [x.name for x in ws], wts, ws[1].layers[0].weight_grad.collectives[0].size_bytes
    (['w', 'w_outer'], (1.0, 0.2), 250000000.0)
    >>> s = DiLoCoSettings(10, 2, 4, overlap_steps=2.5)   # hides behind 2.5 x 0.2 s
    >>> diloco_workloads([w], [1.0], f, "site", s, 1e9)[0][1].hidden_window_s
    0.5
    """
    if site_dim not in fabric.names:
        raise InputError(f"no dimension named {site_dim!r}; names: {', '.join(fabric.names)}",
                         field="diloco.site_dim")
    s = fabric.index(site_dim)
    if not params_per_npu > 0:
        raise InputError(f"params_per_npu {params_per_npu!r} must be > 0",
                         field="diloco.params_per_npu")
    out_w: list[Workload] = []
    out_wt: list[float] = []
    for wl, wt in zip(workloads, weights, strict=True):
        if dp_group not in wl.groups or wl.groups[dp_group][s] < 2:
            raise InputError(f"workload {wl.name!r}: group {dp_group!r} does not span "
                             f"{site_dim!r}", field="diloco.dp_group")
        used = {c.collective.group for c in walk_collectives(wl)}
        for g, span in wl.groups.items():
            if g != dp_group and g in used and span[s] > 1:
                raise InputError(f"workload {wl.name!r}: group {g!r} also crosses the sites "
                                 f"(only {dp_group!r} may)", field="diloco.dp_group")
        inner_groups = {g: tuple(1 if d == s else k for d, k in enumerate(span))
                        for g, span in wl.groups.items()}
        out_w.append(dataclasses.replace(wl, groups=inner_groups))
        sync = Collective("all_reduce", settings.fragment_bytes(params_per_npu), dp_group)
        out_w.append(Workload(f"{wl.name}_outer",
                              (Layer("outer_sync", weight_grad=Phase(0.0, (sync,))),),
                              {dp_group: wl.groups[dp_group]},
                              hidden_window_s=settings.overlap_steps * wl.compute_s))
        out_wt += [float(wt), float(wt) * settings.syncs_per_step]
    return tuple(out_w), tuple(out_wt)

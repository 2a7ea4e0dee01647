"""Low-communication training across sites (DiLoCo / Streaming DiLoCo): amortized outer sync.

Each site trains its own replica with ordinary (intra-site) data parallelism; every ``H``
inner steps the sites average their parameter change (the *outer* gradient, or delta)
over the slow datacenter interconnect, the *site* dimension [1]_. Streaming DiLoCo [2]_
splits the parameters into ``F`` fragments synchronized at staggered times (one fragment
every ``H / F`` steps), overlaps each fragment's sync with ``tau`` inner steps of
compute, and sends the delta quantized to ``b`` bits per parameter.

Per NPU, a fragment's outer all-reduce carries ``x = P_npu b / (8 F)`` bytes (``P_npu``
the parameters one NPU holds: the model over its tensor and pipeline parallel degrees),
and it runs hierarchically over the data-parallel group (the intra-site dimensions and
the site dimension; :func:`~libra_opt.traffic.collectives.hierarchical_traffic_bytes`).
Its time is ``T_f(B) = max_d (c_d / B_d + l_d)`` (or any collective model), a convex
function of ``1 / B``.

Overlapped with ``tau`` inner steps of compute, a fragment's sync is exposed only beyond
that window, so per inner step the outer sync costs

.. math:: E(B) = \\frac{F}{H} \\max(T_f(B) - \\tau C, 0)

with ``C`` the *compute* time of one inner step: :attr:`Workload.compute_s
<libra_opt.traffic.workload.Workload.compute_s>` of the workload (every phase's compute,
summed; not the inner step time, whose exposed communication is not compute and, since it
depends on ``B``, would make ``E`` a difference of convex functions). ``E`` is convex (a
max of ``T_f - tau C`` and 0). :func:`diloco_workloads` gives the outer-sync workload the
hidden window ``tau C`` (:attr:`Workload.hidden_window_s
<libra_opt.traffic.workload.Workload.hidden_window_s>`), so the optimizer (both backends)
and the numpy re-check use ``E`` exactly; :func:`amortized_exposed_s` is the same formula
in closed form. The model charges each fragment's sync on its own, so a sync must end
within the ``H / F`` steps before the next fragment's starts: ``tau <= H / F``.

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

__all__ = [
    "DiLoCoSettings",
    "diloco_workloads",
    "amortized_exposed_s",
    "min_bandwidth_for_slowdown_gbps",
]


@dataclass(frozen=True)
class DiLoCoSettings:
    """Outer synchronization of DiLoCo / Streaming DiLoCo.

    Parameters
    ----------
    sync_every_steps : int
        ``H``: inner steps between two syncs of the same parameters (1: every step).
    fragments : int
        ``F``: fragments synchronized at staggered times (1: plain DiLoCo), ``F <= H``.
    delta_bits : float
        ``b``: bits per parameter of the transmitted delta (16: bf16; 4: 4-bit).
    overlap_steps : float
        ``tau``: inner steps of compute a fragment's sync may overlap (0: blocking), at most
        ``H / F`` (the steps between two fragments' syncs: syncs in flight together would
        share the site link, which the model does not charge).

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
    """Exposed outer-sync time per inner step.

    Parameters
    ----------
    fragment_time_s : float
        ``T_f``: time of one fragment's outer all-reduce.
    inner_compute_s : float
        ``C``: compute time of one inner step (the window a fragment hides behind is
        ``tau C``): the workload's :attr:`~libra_opt.traffic.workload.Workload.compute_s`.
    settings : DiLoCoSettings

    Notes
    -----
    .. math:: E = \\frac{F}{H} \\max(T_f - \\tau C, 0)

    Convex in ``1/B`` (a max of affine functions of ``T_f``, itself convex); the optimizer
    minimizes it exactly through the outer workload's hidden window
    (:func:`diloco_workloads`). With ``tau = 0`` it is the plain amortization ``T_f F / H``.

    Examples
    --------
    >>> amortized_exposed_s(2.0, 0.5, DiLoCoSettings(100, 4, overlap_steps=2))
    0.04
    """
    s = settings
    return s.syncs_per_step * max(fragment_time_s - s.overlap_steps * inner_compute_s, 0.0)


def min_bandwidth_for_slowdown_gbps(
    fragment_site_bytes: float, latency_s: float, inner_step_s: float, inner_compute_s: float,
    settings: DiLoCoSettings, slowdown: float = 0.05,
) -> float:
    """Smallest site bandwidth (GB/s per NPU) with exposed outer sync ``<= slowdown x`` the
    inner step time.

    Parameters
    ----------
    fragment_site_bytes : float
        Bytes per NPU one fragment's sync sends on the site dimension.
    latency_s : float
        Constant latency of one fragment's sync on the site dimension.
    inner_step_s, inner_compute_s : float
        ``T0`` (the inner step, the reference of the slowdown) and ``C``.
    settings : DiLoCoSettings
    slowdown : float
        ``s``, e.g. 0.05 for 5%.

    Notes
    -----
    From ``F/H max(x/B + l - tau C, 0) <= s T0``:

    .. math:: B \\ge \\frac{x}{s T_0 H / F + \\tau C - l}

    (``inf`` when the denominator is not positive: latency alone is too slow). Only the
    site dimension is charged (the intra-site part of the sync is assumed not to be the
    bottleneck). Data-parallel training across the sites is ``H = F = 1``, ``b = 16``.

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


def diloco_workloads(
    workloads: Sequence[Workload], weights: Sequence[float], fabric: Fabric, site_dim: str,
    settings: DiLoCoSettings, params_per_npu: float, dp_group: str = "dp",
) -> tuple[tuple[Workload, ...], tuple[float, ...]]:
    """Inner and outer-sync workloads and their weights (see
    :func:`libra_opt.explore.diloco.diloco_scenario`).

    Notes
    -----
    Workload ``w`` (weight ``a``) becomes ``w`` with ``dp_group``'s span on the site
    dimension set to 1 (weight ``a``) and ``w_outer``: one all-reduce of
    ``P_npu b / (8 F)`` bytes over the whole ``dp_group`` (weight ``a F / H``), no
    compute, and the hidden window ``tau C`` with ``C = w.compute_s``
    (:attr:`Workload.hidden_window_s <libra_opt.traffic.workload.Workload.hidden_window_s>`;
    0 for a blocking sync). The weighted step time is then
    ``T_inner + (F / H) max(T_f - tau C, 0)`` per inner step, exactly, in the optimizer
    and in the numpy re-check.

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

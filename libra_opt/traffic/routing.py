"""Traffic models: which bytes cross which dimension, given the fabric's routing.

* ``hierarchical`` (LIBRA, the default): every byte crosses each dimension in which source and
  destination differ (dimension-ordered routing).
* ``native``: the fabric's own routing (:func:`native_traffic_bytes`): a ``block``-scope
  switch (a fat-tree) reaches every NPU of its block directly; a ``rail``-scope switch does
  not, and cross-rail bytes are forwarded through the HB domain [1]_.

A dimension's bytes are scaled by its topology's
:meth:`~libra_opt.fabric.topology.Topology.traffic_factor`; every term stays ``c / B_d``.

References
----------
.. [1] W. Wang, M. Ghobadi et al., "Rail-only: A Low-Cost High-Performance Network for
   Training LLMs with Trillion Parameters", arXiv:2307.12169.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric
from libra_opt.options import TRAFFIC_MODELS
from libra_opt.traffic.collectives import (
    flat_ring_latency_s,
    flat_ring_traffic_bytes,
    hierarchical_traffic_bytes,
    latency_steps,
)
from libra_opt.traffic.in_network import in_network_latency_steps, in_network_traffic_bytes

__all__ = ["native_traffic_bytes", "collective_traffic"]


def native_traffic_bytes(kind: str, size_bytes: float, span: Sequence[int],
                         fabric: Fabric) -> np.ndarray:
    """Bytes each NPU sends on every dimension under the fabric's own routing.

    Parameters
    ----------
    kind, size_bytes, span
        As in :func:`libra_opt.traffic.collectives.hierarchical_traffic_bytes`.

    Notes
    -----
    Reduce-scatter, all-gather and all-reduce: hierarchical. All-to-all, over the spanned
    dimensions outermost first, ``m`` starting at ``size_bytes``: ``t_e = m (k_e - 1) / k_e``,
    then ``m <- m / k_e`` if ``e`` is any-to-any (a ``block``-scope switch), else ``m`` unchanged
    (forwarded). Point-to-point: ``t_e = m`` from the outermost spanned dimension inward until an
    any-to-any dimension is crossed.

    Examples
    --------
    >>> from libra_opt.fabric.builders import rail_only, rail_optimized_fat_tree
    >>> native_traffic_bytes("all_to_all", 64.0, (8, 4), rail_optimized_fat_tree(32, 8, 8))
    array([14., 48.])
    >>> native_traffic_bytes("all_to_all", 64.0, (8, 4), rail_only(32, 8, 8))
    array([56., 48.])
    """
    if kind not in ("all_to_all", "p2p"):
        return hierarchical_traffic_bytes(kind, size_bytes, span)
    base = hierarchical_traffic_bytes(kind, size_bytes, span)  # validates the arguments
    ks = [int(k) for k in span]
    if len(ks) != fabric.n_dims:
        raise InputError(f"span {tuple(span)} has {len(ks)} entries, the fabric has "
                         f"{fabric.n_dims} dims", field="collective.group")
    out = np.zeros_like(base)
    m = float(size_bytes)
    for e in range(len(ks) - 1, -1, -1):
        k = ks[e]
        if k <= 1:
            continue
        if kind == "all_to_all":
            out[e] = m * (k - 1) / k
            if fabric.dims[e].any_to_any:
                m /= k
        else:
            out[e] = m
            if fabric.dims[e].any_to_any:
                break
    return out


def collective_traffic(kind: str, size_bytes: float, span: Sequence[int], fabric: Fabric,
                       traffic_model: str = "hierarchical", in_network: Collection[int] = (),
                       flat_ring: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Bytes per NPU and constant latency (s) of one collective on every dimension.

    ``flat_ring``: an all-reduce, reduce-scatter or all-gather runs as one flat ring over all
    members (:func:`~libra_opt.traffic.collectives.flat_ring_traffic_bytes`), under both traffic
    models. ``in_network``: indices of switch dimensions that reduce in the network, whose
    reductions and gathers follow
    :func:`~libra_opt.traffic.in_network.in_network_traffic_bytes`.

    Examples
    --------
    >>> from libra_opt.fabric.builders import multi_dim, rail_only
    >>> collective_traffic("all_reduce", 8.0, (4,), multi_dim((4,), ("mesh",)))[0].tolist()
    [24.0]
    >>> t, lat = collective_traffic("all_to_all", 64.0, (8, 4), rail_only(32, 8, 8), "native")
    >>> t.tolist(), lat.tolist()
    ([56.0, 48.0], [0.0, 0.0])
    """
    if traffic_model == "hierarchical":
        traffic = hierarchical_traffic_bytes(kind, size_bytes, span)
    elif traffic_model == "native":
        traffic = native_traffic_bytes(kind, size_bytes, span, fabric)
    else:
        raise InputError(f"traffic_model {traffic_model!r} is not one of "
                         f"{', '.join(TRAFFIC_MODELS)}", field="traffic_model")
    alpha = np.array([d.latency_s for d in fabric.dims])
    topologies = [d.topology for d in fabric.dims]
    if in_network and kind in ("all_reduce", "reduce_scatter", "all_gather"):
        traffic = in_network_traffic_bytes(kind, size_bytes, span, in_network)
        steps = in_network_latency_steps(kind, span, topologies, in_network)
        lat = np.where(traffic > 0, alpha * steps, 0.0)
    elif flat_ring and kind in ("all_reduce", "reduce_scatter", "all_gather") and \
            any(int(k) > 1 for k in span):
        traffic = flat_ring_traffic_bytes(kind, size_bytes, span)
        lat = flat_ring_latency_s(kind, span, [d.latency_s for d in fabric.dims])
    elif alpha.any():
        lat = np.where(traffic > 0, alpha * latency_steps(kind, span, topologies), 0.0)
    else:
        lat = np.zeros(fabric.n_dims)
    if any(d.topology.scales_traffic for d in fabric.dims):
        traffic = traffic * [d.topology.traffic_factor(kind, int(k))
                             for d, k in zip(fabric.dims, span, strict=True)]
    return traffic, lat

"""Fabric builders: :func:`multi_dim` (LIBRA's fabrics [2]_), :func:`rail_optimized_fat_tree`
(an HB domain plus one full-bisection Clos over all NPUs) and :func:`rail_only` (the same HB
domain plus one Clos per rail [1]_). The two-level builders give the same dimension names
(``hb``, ``scaleout``) and sizes, so they compare one-to-one.

References
----------
.. [1] W. Wang, M. Ghobadi, K. Shakeri, Y. Zhang, N. Hasani, "Rail-only: A Low-Cost
   High-Performance Network for Training LLMs with Trillion Parameters", arXiv:2307.12169.
.. [2] W. Won et al., "LIBRA", ISPASS 2024, arXiv:2109.11762.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, get_args

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.fabric.heterogeneous import attach_members
from libra_opt.fabric.topology import Switch, clos_tiers, topology_of

__all__ = [
    "FABRIC_FAMILIES",
    "FabricFamily",
    "LIBRA_TIERS",
    "multi_dim",
    "rail_optimized_fat_tree",
    "rail_only",
    "fabric_family",
    "as_family",
    "fabric_from_spec",
]

#: Default cost tiers of a multi-dimensional fabric, innermost first (LIBRA's names).
LIBRA_TIERS: tuple[str, ...] = ("InterChiplet", "InterPackage", "InterNode", "InterPod")
#: Fabric families the builders make, :func:`as_family` rewires and ``compare`` compares.
FabricFamily = Literal["multi_dim", "fat_tree", "rail_only"]
FABRIC_FAMILIES: tuple[FabricFamily, ...] = get_args(FabricFamily)


def multi_dim(
    shape: Sequence[int],
    topologies: Sequence[str],
    tiers: Sequence[str] | None = None,
    names: Sequence[str] | None = None,
    switch_radix: int | None = None,
    latency_s: float | Sequence[float] = 0.0,
) -> Fabric:
    """A multi-dimensional fabric, innermost dimension first: NPUs along each dimension
    (``shape``), their topologies (``torus`` read as ``ring``), cost tiers (default
    :data:`LIBRA_TIERS`, up to four dimensions), names (default the tiers without ``Inter`` in
    lower case, or ``dim0``, ``dim1``... when tiers are given), the radix of every switch
    dimension (``None``: ideal switches) and per-step latencies (one value or one per dimension).

    Examples
    --------
    A 4 x 4 torus inside a switch of 8:

    >>> f = multi_dim((4, 4, 8), ("torus", "torus", "switch"))
    >>> f.names, f.n_npus, [d.topology for d in f.dims]
    (('chiplet', 'package', 'node'), 128, ['ring', 'ring', 'switch'])
    """
    shape = tuple(shape)
    n = len(shape)
    if len(topologies) != n:
        raise InputError(
            f"{len(topologies)} topologies for {n} dimensions", field="fabric.topologies"
        )
    topos = [topology_of(t, "fabric.topologies", aliases=True) for t in topologies]
    if tiers is None:
        if n > len(LIBRA_TIERS):
            raise InputError(
                f"give tiers for a {n}-dimensional fabric (defaults cover {len(LIBRA_TIERS)})",
                field="fabric.tiers",
            )
        tiers = LIBRA_TIERS[:n]
        default_names = tuple(t[5:].lower() for t in tiers)
    else:
        tiers = tuple(tiers)
        default_names = tuple(f"dim{i}" for i in range(n))
    names = tuple(names) if names is not None else default_names
    lat = (latency_s,) * n if isinstance(latency_s, int | float) else tuple(latency_s)
    for what, key, values in (("tiers", "tiers", tiers), ("names", "names", names),
                              ("latencies", "latency_s", lat)):
        if len(values) != n:
            raise InputError(f"{len(values)} {what} for {n} dimensions", field=f"fabric.{key}")
    dims = tuple(
        Dim(names[i], topos[i], int(shape[i]), tiers[i], float(lat[i]),
            switch_radix=switch_radix if topos[i].switched else None)
        for i in range(n)
    )
    return Fabric(dims)


def _two_level(
    n_npus: int,
    hb_domain: int,
    switch_radix: int | None,
    scope: str,
    hb_topology: str,
    hb_tier: str,
    scale_out_tier: str,
    hb_latency_s: float,
    scale_out_latency_s: float,
    switch_pricing: str,
    copper_levels: int,
) -> Fabric:
    """The HB dimension and the scale-out switch dimension of ``scope`` (the other arguments
    are those of :func:`rail_optimized_fat_tree`)."""
    for key, v in (("n_npus", n_npus), ("hb_domain", hb_domain)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{key} {v!r} must be a positive integer", field=f"fabric.{key}")
    if n_npus % hb_domain:
        raise InputError(
            f"n_npus {n_npus} is not a multiple of hb_domain {hb_domain}",
            field="fabric.n_npus",
        )
    hb = Dim("hb", topology_of(hb_topology, "dim 'hb'.topology", aliases=True), hb_domain,
             hb_tier, hb_latency_s)
    so = Dim(
        "scaleout", Switch(), n_npus // hb_domain, scale_out_tier, scale_out_latency_s,
        switch_radix=switch_radix, switch_scope=scope,
        switch_pricing=switch_pricing, copper_levels=copper_levels,  # type: ignore[arg-type]
    )
    clos_tiers(n_npus if scope == "block" else so.size, switch_radix)  # fail early if > 3
    return Fabric((hb, so))


def rail_optimized_fat_tree(n_npus: int, hb_domain: int, switch_radix: int | None = 64, *,
                            hb_topology: str = "switch", hb_tier: str = "ScaleUp",
                            scale_out_tier: str = "ScaleOut", hb_latency_s: float = 0.0,
                            scale_out_latency_s: float = 0.0, switch_pricing: str = "whole_switch",
                            copper_levels: int = 0) -> Fabric:
    """HB domains of ``hb_domain`` NPUs (8 for a DGX H100, 72 for an NVL72) plus one
    full-bisection Clos of ``switch_radix``-port switches (``None``: one ideal switch) over all
    ``n_npus`` NPUs: dimensions ``hb`` and ``scaleout`` (``block`` scope).

    Keyword-only: ``hb_topology`` of the HB domain, the cost tiers ``hb_tier`` and
    ``scale_out_tier``, the per-step latencies ``hb_latency_s`` and ``scale_out_latency_s``,
    ``switch_pricing`` (``whole_switch`` or ``used_ports``) and ``copper_levels`` (lowest
    cable levels of the Clos on copper).

    Examples
    --------
    >>> from libra_opt.fabric.inventory import dimension_inventory
    >>> f = rail_optimized_fat_tree(4096, 8, 64)
    >>> f.sizes, dimension_inventory(f, 1).tiers
    ((8, 512), 3)
    """
    return _two_level(n_npus, hb_domain, switch_radix, "block", hb_topology, hb_tier,
                      scale_out_tier, hb_latency_s, scale_out_latency_s, switch_pricing,
                      copper_levels)


def rail_only(n_npus: int, hb_domain: int, switch_radix: int | None = 64, *,
              hb_topology: str = "switch", hb_tier: str = "ScaleUp",
              scale_out_tier: str = "ScaleOut", hb_latency_s: float = 0.0,
              scale_out_latency_s: float = 0.0, switch_pricing: str = "whole_switch",
              copper_levels: int = 0) -> Fabric:
    """HB domains of ``hb_domain`` NPUs plus one Clos per rail, no spine across rails: the
    ``scaleout`` dimension has ``rail`` scope, ``hb_domain`` Clos networks of ``N / hb_domain``
    NPUs with fewer tiers than the fat-tree's; traffic between rails is forwarded through the
    HB domain (:mod:`libra_opt.traffic.rail`). Parameters are :func:`rail_optimized_fat_tree`'s.

    Examples
    --------
    >>> from libra_opt.fabric.inventory import dimension_inventory
    >>> f = rail_only(4096, 64, 64)     # rails of 64 NPUs: one switch each
    >>> inv = dimension_inventory(f, 1)
    >>> inv.tiers, inv.switches, inv.switch_ports
    (1, 64, 4096)
    """
    return _two_level(n_npus, hb_domain, switch_radix, "rail", hb_topology, hb_tier,
                      scale_out_tier, hb_latency_s, scale_out_latency_s, switch_pricing,
                      copper_levels)


def fabric_family(fabric: Fabric) -> str:
    """``rail_only`` if any dimension is rail-scoped, ``fat_tree`` if the outermost dimension
    is a Clos (a switch with a radix), else ``multi_dim``.

    Examples
    --------
    >>> fabric_family(rail_only(1024, 8)), fabric_family(rail_optimized_fat_tree(1024, 8))
    ('rail_only', 'fat_tree')
    >>> fabric_family(multi_dim((4, 8), ("ring", "switch")))
    'multi_dim'
    """
    if any(d.switch_scope == "rail" for d in fabric.dims):
        return "rail_only"
    if fabric.dims[-1].switch_radix is not None:  # only a switch has a radix
        return "fat_tree"
    return "multi_dim"


def as_family(fabric: Fabric, family: str, switch_radix: int | None = 64) -> Fabric:
    """The same shape re-wired as another family (dimension names and sizes kept).

    ``fat_tree`` and ``rail_only`` turn the outermost dimension into a Clos of radix
    ``switch_radix`` (one per rail for ``rail_only``); ``multi_dim`` removes every radix and
    rail scope. The inner dimensions are left as they are.

    Examples
    --------
    >>> f = multi_dim((8, 16), ("switch", "switch"), tiers=("ScaleUp", "ScaleOut"),
    ...               names=("hb", "scaleout"))
    >>> as_family(f, "rail_only", 64) == rail_only(128, 8, 64)
    True
    """
    if family not in FABRIC_FAMILIES:
        raise InputError(
            f"fabric family {family!r} is not one of {', '.join(FABRIC_FAMILIES)}", field="fabrics"
        )
    if family == "multi_dim":
        dims = tuple(dataclasses.replace(d, switch_radix=None, switch_scope="block")
                     for d in fabric.dims)
        return Fabric(dims)
    last = dataclasses.replace(
        fabric.dims[-1],
        topology=Switch(),
        switch_radix=switch_radix,
        switch_scope="block" if family == "fat_tree" else "rail",
    )
    return Fabric((*fabric.dims[:-1], last))


_SPEC_KEYS = {
    "multi_dim": {"builder", "shape", "topologies", "tiers", "names", "switch_radix",
                  "latency_s"},
    "fat_tree": {"builder", "n_npus", "hb_domain", "switch_radix", "hb_topology", "hb_tier",
                 "scale_out_tier", "hb_latency_s", "scale_out_latency_s", "switch_pricing",
                 "copper_levels"},
}
_SPEC_KEYS["rail_only"] = _SPEC_KEYS["fat_tree"]


def fabric_from_spec(spec: Mapping[str, Any]) -> Fabric:
    """A fabric from a mapping such as a scenario's ``fabric:`` section: ``builder``
    (``multi_dim``, ``fat_tree`` or ``rail_optimized_fat_tree``, ``rail_only``), its parameters
    and ``members`` (:func:`~libra_opt.fabric.heterogeneous.attach_members`); an unknown key or
    a bad value is an :class:`~libra_opt.errors.InputError`.

    Examples
    --------
    >>> fabric_from_spec({"builder": "rail_only", "n_npus": 2048, "hb_domain": 8}).sizes
    (8, 256)
    >>> f = fabric_from_spec({"builder": "fat_tree", "n_npus": 64, "hb_domain": 8,
    ...                       "members": {"scaleout": {"fraction": [1, 0.5], "share": [0.5, 0.5]}}})
    >>> f.dims[1].members.slowest_fraction
    0.5
    """
    if isinstance(spec, Mapping) and "members" in spec:
        rest = {k: v for k, v in spec.items() if k != "members"}
        return attach_members(fabric_from_spec(rest), spec["members"])
    if not isinstance(spec, Mapping):
        raise InputError("expected a mapping", field="fabric")
    builder = spec.get("builder")
    if builder == "rail_optimized_fat_tree":
        builder = "fat_tree"
    if builder not in _SPEC_KEYS:
        raise InputError(
            f"builder {builder!r} is not one of {', '.join(FABRIC_FAMILIES)}",
            field="fabric.builder",
        )
    unknown = sorted(set(spec) - _SPEC_KEYS[builder])
    if unknown:
        raise InputError(
            f"unknown key(s) {', '.join(map(str, unknown))} for builder {builder!r}; expected "
            f"{', '.join(sorted((_SPEC_KEYS[builder] - {'builder'}) | {'members'}))}",
            field="fabric",
        )
    kwargs = {k: v for k, v in spec.items() if k != "builder"}
    for key in ("shape", "topologies") if builder == "multi_dim" else ("n_npus", "hb_domain"):
        if key not in kwargs:
            raise InputError("required field is missing", field=f"fabric.{key}")
    fn: dict[str, Callable[..., Fabric]] = {
        "multi_dim": multi_dim, "fat_tree": rail_optimized_fat_tree, "rail_only": rail_only}
    return fn[builder](**kwargs)

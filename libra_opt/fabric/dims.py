"""Multi-dimensional fabric: an ordered list of network dimensions, innermost first. The
optimizer's decision variable for dimension ``d`` is ``B_d``, the aggregate bandwidth per NPU
into it, in GB/s (1 GB/s = 1e9 bytes/s).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from dataclasses import field as dc_field

from libra_opt.errors import InputError, input_context
from libra_opt.fabric.heterogeneous import DimMembers, members_from_mapping
from libra_opt.fabric.topology import (
    SWITCH_PRICINGS,
    SWITCH_SCOPES,
    SwitchPricing,
    Topology,
    clos_tiers,
    topology_of,
)

__all__ = ["Dim", "Fabric", "MAX_NPUS"]

#: Most NPUs a fabric may have (the product of the dimension sizes), and so the largest
#: size of one dimension. Beyond it inputs are taken as mistakes, not designs.
MAX_NPUS = 10**9


@dataclass(frozen=True)
class Dim:
    """One network dimension.

    Parameters
    ----------
    name : str
        Identifier used in constraints (``bw.<name>``) and reports.
    topology : Topology or str
        Building block of the dimension, a :class:`~libra_opt.fabric.topology.Topology` or
        its name (``ring``, ``fully_connected``, ``switch``, ``mesh``).
    size : int
        NPUs along the dimension (>= 1).
    tier : str
        Cost tier, the key of the unit-price table in the cost model.
    latency_s : float
        Per-algorithm-step latency alpha_d in seconds (0 disables the latency term).
    switch_radix : int, optional
        Ports per physical switch (switch dimensions only; even, >= 4): a network larger than
        one switch is priced as a folded Clos (:func:`~libra_opt.fabric.topology.clos_tiers`);
        ``None`` (default): LIBRA's one ideal switch.
    switch_scope : {'block', 'rail'}
        One switch network over every NPU of the block ``prod(size_0..size_d)`` (``block``,
        default, LIBRA), or one per rail, the ``size`` NPUs sharing all other coordinates.
    switch_pricing : {'whole_switch', 'used_ports'}
        With a radix, price (and power) every port of every switch of the Clos
        (``whole_switch``, default: what a buyer pays) or only the ports in use
        (``used_ports``, ``2t - 1`` per NPU: a shared chassis).
    copper_levels : int
        Switch dimensions only: how many of the lowest cable levels of each switch network
        are copper (no transceivers; the tier's ``copper`` part): 0 (default) all optics, 1
        the NIC-to-leaf cables, 2 also leaf-to-spine, ... up to the network's tier count.
    members : DimMembers or mapping, optional
        Member groups of a heterogeneous dimension (:mod:`libra_opt.fabric.heterogeneous`);
        ``None`` (default): every NPU at full speed. Not shown in the repr.

    Examples
    --------
    >>> Fabric((Dim("so", "switch", 64, "T", switch_radix=64, copper_levels=2),))
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: dim 'so'.copper_levels: dimension 'so': copper_levels 2 is more than the 1 cable level(s) of its switch network (64 NPUs, radix 64); use 0..1
    >>> Dim("pod", "switch", 32, "InterPod").size
    32
    >>> Dim("rail", "switch", 512, "ScaleOut", switch_radix=64, switch_scope="rail").switch_scope
    'rail'
    """

    name: str
    topology: Topology
    size: int
    tier: str
    latency_s: float = 0.0
    switch_radix: int | None = None
    switch_scope: str = "block"
    switch_pricing: SwitchPricing = "whole_switch"
    copper_levels: int = 0
    members: DimMembers | None = dc_field(default=None, repr=False)

    def __post_init__(self) -> None:
        field = f"dim '{self.name}'"
        with input_context(None, field):
            object.__setattr__(self, "members", members_from_mapping(self.members))
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise InputError(
                f"dimension name {self.name!r} must be an identifier (letters, digits, _)",
                field="fabric.dims.name",
            )
        object.__setattr__(self, "topology", topology_of(self.topology, f"{field}.topology"))
        with input_context(None, field):
            self._check(self.topology)

    def _check(self, topo: Topology) -> None:
        """The values' ranges, and the switch settings against the topology."""
        size, k, c = self.size, self.switch_radix, self.copper_levels
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InputError(f"size {size!r} must be a positive integer", field="size")
        if size > MAX_NPUS:
            raise InputError(f"size {size:,} is out of range: at most {MAX_NPUS:,} NPUs",
                             field="size")
        if size < topo.min_size:
            raise InputError(f"a {topo} dimension needs size >= {topo.min_size}", field="size")
        if not isinstance(self.tier, str) or not self.tier:
            raise InputError("tier must be a non-empty string", field="tier")
        lat = self.latency_s
        if isinstance(lat, bool) or not isinstance(lat, numbers.Real) or not 0 <= lat < math.inf:
            raise InputError(f"latency_s {self.latency_s!r} must be a finite number >= 0",
                             field="latency_s")
        if k is not None and not topo.switched:
            raise InputError("switch_radix is only meaningful for a switch dimension, not "
                             f"{topo}", field="switch_radix")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 4 or k % 2):
            raise InputError(f"switch_radix {k!r} must be an even integer >= 4 (ports per "
                             "switch)", field="switch_radix")
        for key, allowed in (("switch_scope", SWITCH_SCOPES), ("switch_pricing", SWITCH_PRICINGS)):
            if getattr(self, key) not in allowed:
                raise InputError(f"{key} {getattr(self, key)!r} is not one of "
                                 f"{', '.join(allowed)}", field=key)
        if self.switch_scope == "rail" and not topo.switched:
            raise InputError(f"switch_scope 'rail' needs a switch dimension, not {topo}",
                             field="switch_scope")
        if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c <= 3:
            raise InputError(f"copper_levels {c!r} must be an integer in 0..3 (cable levels of "
                             "copper, lowest first)", field="copper_levels")
        if c and not topo.switched:
            raise InputError("copper_levels counts the cable levels of a switch network; "
                             f"dimension {self.name!r} is a {topo}", field="copper_levels")

    @property
    def any_to_any(self) -> bool:
        """A ``block``-scope switch network of more than one NPU: it reaches every NPU of
        its block directly (a fat-tree; not a ``rail``-scope one, nor NPUs cabled together)."""
        return self.topology.switched and self.switch_scope == "block" and self.size > 1


@dataclass(frozen=True)
class Fabric:
    """An ordered tuple of :class:`Dim`, innermost first.

    Examples
    --------
    >>> f = Fabric((Dim("node", "ring", 4, "A"), Dim("pod", "switch", 8, "B")))
    >>> f.n_npus, f.n_dims, f.index("pod")
    (32, 2, 1)
    """

    dims: tuple[Dim, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "dims", tuple(self.dims))
        if not self.dims:
            raise InputError("a fabric needs at least one dimension", field="fabric.dims")
        names = [d.name for d in self.dims]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise InputError(f"dimension names must be unique; repeated: {', '.join(dup)}",
                             field="fabric.dims")
        if self.n_npus > MAX_NPUS:
            raise InputError(
                f"{self.n_npus:,} NPUs (the product of the dimension sizes) is out of range: "
                f"at most {MAX_NPUS:,}",
                field="fabric.dims",
            )
        for d in range(len(self.dims)):
            self._check_copper_levels(d)

    def _check_copper_levels(self, d: int) -> None:
        """A switch network of ``t`` tiers has ``t`` cable levels (an ideal switch one);
        a dimension of size 1 has no cables and accepts any ``copper_levels``."""
        dim = self.dims[d]
        if not dim.copper_levels or dim.size == 1:
            return
        block = dim.size if dim.switch_scope == "rail" else math.prod(self.sizes[: d + 1])
        t = clos_tiers(block, dim.switch_radix)
        if dim.copper_levels > t:
            raise InputError(
                f"dimension {dim.name!r}: copper_levels {dim.copper_levels} is more than the "
                f"{t} cable level(s) of its switch network ({block} NPUs, radix "
                f"{dim.switch_radix or 'ideal'}); use 0..{t}",
                field=f"dim '{dim.name}'.copper_levels",
            )

    @property
    def n_dims(self) -> int:
        """Number of dimensions D."""
        return len(self.dims)

    @property
    def n_npus(self) -> int:
        """Total NPUs N = prod(size_d)."""
        return math.prod(d.size for d in self.dims)

    @property
    def names(self) -> tuple[str, ...]:
        """Dimension names in fabric order."""
        return tuple(d.name for d in self.dims)

    @property
    def sizes(self) -> tuple[int, ...]:
        """Dimension sizes in fabric order."""
        return tuple(d.size for d in self.dims)

    def index(self, name: str) -> int:
        """Position of the dimension called ``name``.

        Raises
        ------
        InputError
            If no dimension has that name.
        """
        for i, d in enumerate(self.dims):
            if d.name == name:
                return i
        raise InputError(f"no dimension named {name!r}; the fabric has {', '.join(self.names)}",
                         field="fabric.dims")

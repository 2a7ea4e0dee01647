"""Multi-dimensional fabric: an ordered list of network dimensions, innermost first.

A dimension has a topology (``ring``, ``fully_connected`` or ``switch``), a size (NPUs
along it), a cost tier (which unit-price table applies) and an optional per-step latency.
The optimizer's decision variable for dimension ``d`` is ``B_d``, the aggregate bandwidth
per NPU into that dimension, in GB/s (1 GB/s = 1e9 bytes/s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from libra_opt.errors import InputError

__all__ = ["TOPOLOGIES", "Dim", "Fabric", "Topology"]

Topology = Literal["ring", "fully_connected", "switch"]
TOPOLOGIES: tuple[str, ...] = ("ring", "fully_connected", "switch")


@dataclass(frozen=True)
class Dim:
    """One network dimension.

    Parameters
    ----------
    name : str
        Identifier used in constraints (``bw.<name>``) and reports.
    topology : {'ring', 'fully_connected', 'switch'}
        Building block of the dimension.
    size : int
        NPUs along the dimension (>= 1).
    tier : str
        Cost tier, the key of the unit-price table in the cost model.
    latency_s : float
        Per-algorithm-step latency alpha_d in seconds (0 disables the latency term).

    Examples
    --------
    >>> Dim("pod", "switch", 32, "InterPod").size
    32
    """

    name: str
    topology: Topology
    size: int
    tier: str
    latency_s: float = 0.0

    def __post_init__(self) -> None:
        field = f"dim '{self.name}'"
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise InputError(
                f"dimension name {self.name!r} must be an identifier (letters, digits, _)",
                field="fabric.dims.name",
            )
        if self.topology not in TOPOLOGIES:
            raise InputError(
                f"topology {self.topology!r} is not one of {', '.join(TOPOLOGIES)}",
                field=f"{field}.topology",
            )
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise InputError(
                f"size {self.size!r} must be a positive integer", field=f"{field}.size"
            )
        if self.topology == "fully_connected" and self.size < 2:
            raise InputError(
                "a fully_connected dimension needs size >= 2", field=f"{field}.size"
            )
        if not isinstance(self.tier, str) or not self.tier:
            raise InputError("tier must be a non-empty string", field=f"{field}.tier")
        lat = float(self.latency_s)
        if not math.isfinite(lat) or lat < 0:
            raise InputError(
                f"latency_s {self.latency_s!r} must be a finite number >= 0",
                field=f"{field}.latency_s",
            )


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
            raise InputError(
                f"dimension names must be unique; repeated: {', '.join(dup)}",
                field="fabric.dims",
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
        raise InputError(
            f"no dimension named {name!r}; the fabric has {', '.join(self.names)}",
            field="fabric.dims",
        )

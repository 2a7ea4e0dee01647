"""Price and power of the in-network optimizer's aggregation nodes (LuWu class [1]_).

With ``dp_mode: in_network_optimizer`` every NPU pushes its gradients to aggregation nodes.
Their ingress ports are linear in the bandwidth: ``N p_port B_d`` $ and ``N w_port B_d`` W
join the ``nic`` column of the dimension they attach to (times ``sum_g share_g fraction_g``
on a heterogeneous one). Their state memory (``S`` bytes of optimizer state, none with
``optimizer_state: host_paging``) is a constant,
:attr:`~libra_opt.cost.prices.CostCoefficients.fixed_usd` / ``fixed_w``.

Default prices are **estimates** (no public list price exists): a port is one dual-socket
server (15,000 $, 700 W) with four 400 Gb/s NICs (the ``current_2025`` catalog's, 2,200 $
and 20 W each), **119 $ and 3.9 W per GB/s**; state memory is DDR5 at 300 $ and 10 W per
64 GB module (2024-2025 reseller listings), **4.6875 $ and 0.15625 W per GB**. A scenario
overrides them (``in_network_optimizer: {usd_per_port_gbps: ...}``).

References
----------
.. [1] "LuWu: An End-to-End In-Network Out-of-Core Optimizer for 100B-Scale
   Model-in-Network Data-Parallel Training on Distributed GPUs", arXiv:2409.00918 (2024).

Examples
--------
>>> a = Aggregators(("scaleout",), state_bytes=2.1e12)
>>> round(a.state_usd), round(a.state_w)        # 2,100 GB of Adam state
(9844, 328)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from libra_opt.errors import InputError

__all__ = [
    "USD_PER_PORT_GBPS",
    "W_PER_PORT_GBPS",
    "USD_PER_STATE_GB",
    "W_PER_STATE_GB",
    "Aggregators",
]

#: $ per GB/s of aggregator ingress port (estimate, see module notes).
USD_PER_PORT_GBPS = (15_000.0 + 4 * 2_200.0) / 200.0
#: W per GB/s of aggregator ingress port (estimate, see module notes).
W_PER_PORT_GBPS = (700.0 + 4 * 20.0) / 200.0
#: $ per GB (1e9 bytes) of optimizer-state memory (estimate, see module notes).
USD_PER_STATE_GB = 300.0 / 64.0
#: W per GB of optimizer-state memory (estimate, see module notes).
W_PER_STATE_GB = 10.0 / 64.0


@dataclass(frozen=True)
class Aggregators:
    """Where the aggregation nodes attach (``dims``: one GB/s of port per GB/s of ``B_d`` per
    NPU), the optimizer state they hold (bytes, whole cluster) and their $ and W per GB/s of
    port and per GB of state; a negative or non-finite number is an
    :class:`~libra_opt.errors.InputError` naming ``in_network_optimizer.<name>``.
    """

    dims: tuple[str, ...]
    state_bytes: float = 0.0
    usd_per_port_gbps: float = USD_PER_PORT_GBPS
    w_per_port_gbps: float = W_PER_PORT_GBPS
    usd_per_state_gb: float = USD_PER_STATE_GB
    w_per_state_gb: float = W_PER_STATE_GB

    def __post_init__(self) -> None:
        if isinstance(self.dims, str):
            raise InputError(f"expected a list of dimension names, got {self.dims!r}",
                             field="in_network_optimizer.dims")
        object.__setattr__(self, "dims", tuple(self.dims))
        for key in ("state_bytes", "usd_per_port_gbps", "w_per_port_gbps", "usd_per_state_gb",
                    "w_per_state_gb"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) \
                    or v < 0:
                raise InputError(f"{key} {v!r} must be a finite number >= 0",
                                 field=f"in_network_optimizer.{key}")
            object.__setattr__(self, key, float(v))

    @property
    def state_usd(self) -> float:
        """``S / 1e9 x p_mem``: $ of the state memory (a constant)."""
        return self.state_bytes / 1e9 * self.usd_per_state_gb

    @property
    def state_w(self) -> float:
        """``S / 1e9 x w_mem``: W of the state memory (a constant)."""
        return self.state_bytes / 1e9 * self.w_per_state_gb

    def port_usd(self, n_npus: int, bw_gbps: float) -> float:
        """``N B_d p_port``: $ of the ports on one dimension at ``bw_gbps`` per NPU.

        Examples
        --------
        >>> Aggregators(("so",)).port_usd(64, 25.0)    # 64 x 25 GB/s x 119 $
        190400.0
        """
        return n_npus * bw_gbps * self.usd_per_port_gbps

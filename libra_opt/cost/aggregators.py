"""Price and power of the in-network optimizer's aggregation nodes (LuWu class).

With ``dp_mode: in_network_optimizer`` (:mod:`libra_opt.generators.in_network_optimizer`)
every NPU pushes its gradients to aggregation nodes in the network and pulls the result
back; in the default placement the aggregators also hold the optimizer state of the whole
model. Two things are bought for them:

* **ingress ports**, linear in the bandwidth: every NPU pushes at its line rate ``B_d`` on
  the dimension the aggregators attach to, so absorbing all pushes at once takes
  ``N B_d`` GB/s of aggregator port (``N`` NPUs; ``N B_d sum_g share_g fraction_g`` when
  the dimension has slower member groups, :mod:`libra_opt.fabric.heterogeneous`). Cost
  ``N p_port B_d`` and power ``N w_port B_d`` join that dimension's ``kappa_d`` and ``pi_d``
  (reported in the ``nic`` column, not discounted by the members' price factors), so
  budgets, power caps, ``perf_per_cost`` and ``tco`` see them exactly;
* **state memory**, a constant: ``S`` bytes of optimizer state (``Psi_total k_o``, 12 bytes
  per parameter for mixed-precision Adam, once per model: the data-parallel replicas share
  it) at ``p_mem`` $ and ``w_mem`` W per GB. It does not depend on ``B``; it is carried as
  :attr:`~libra_opt.cost.prices.CostCoefficients.fixed_usd` / ``fixed_w``: it is part of the
  reported network cost and power, it comes off ``budget_usd``, ``power_w`` and ``cost`` /
  ``power`` rows (``kappa . B + F <= cap``), it is the constant of the cost in
  ``perf_per_cost`` (``T(B) (F + kappa . B)``) and it enters the TCO's constant rate ``r0``
  (:func:`libra_opt.cost.tco.cluster_rate_coefficients`).

With the out-of-core variant (``optimizer_state: host_paging``) the state lives in the
GPU servers' host memory (priced with the hosts, ``tco.host_usd_per_npu``) and the
aggregators only sum gradients: ports are bought, state memory is not.

Default prices are **estimates** (no public list price of an aggregation node exists):

* port: one dual-socket aggregation server (estimate 15,000 $ without memory, 700 W)
  with four 400 Gb/s NICs (the ``cx7_nic_400g`` part of the ``current_2025`` catalog,
  2,200 $ and 20 W each, itself an estimate from reseller listings): 200 GB/s of ingress for
  23,800 $ and 780 W, i.e. **119 $ and 3.9 W per GB/s**;
* state memory: DDR5 RDIMMs, estimate 300 $ and 10 W per 64 GB module from 2024-2025
  reseller listings and typical module power, i.e. **4.6875 $ and 0.15625 W per GB**.

Override any of them in the scenario (``in_network_optimizer: {usd_per_port_gbps: ...}``).

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
    """Where the aggregation nodes attach, what state they hold and their unit prices.

    Parameters
    ----------
    dims : tuple of str
        Dimensions whose per-NPU bandwidth feeds aggregator ports (one GB/s of port per
        GB/s of ``B_d`` per NPU).
    state_bytes : float
        Optimizer state held by the aggregators (bytes, whole cluster); 0 when it lives in
        host memory.
    usd_per_port_gbps, w_per_port_gbps : float
        $ and W per GB/s of aggregator ingress port.
    usd_per_state_gb, w_per_state_gb : float
        $ and W per GB of state memory.

    Raises
    ------
    InputError
        A negative or non-finite number (field ``in_network_optimizer.<name>``).
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

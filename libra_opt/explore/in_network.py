"""Should a switch dimension reduce in the network? In-network reduction (SHARP class,
:mod:`libra_opt.traffic.in_network`) changes a dimension's traffic and price by an integer
choice, so each of the ``2^E`` choices is solved to its global optimum and the best of them
is the exact optimum of the joint choice.

Examples
--------
>>> from libra_opt.cost.prices import CostModel
>>> from libra_opt.fabric.dims import Dim, Fabric
>>> from libra_opt.scenario.scenario import Scenario
>>> from libra_opt.scenario.constraints import parse_constraint
>>> from libra_opt.traffic.workload import Collective, Layer, Phase, Workload
>>> f = Fabric((Dim("pod", "switch", 8, "S"),))
>>> cm = CostModel.from_tables({"S": {"link": 1.0, "switch": 1.0, "nic": 1.0,
...                                   "in_network_reduction": 0.5}})
>>> w = Workload("w", (Layer("l", Phase(0.0, (Collective("all_reduce", 8e9, "g"),))),),
...              {"g": (8,)})
>>> s = Scenario(f, cm, (w,), budget_usd=8 * 3.5 * 100)
>>> r = choose_in_network(s)
>>> r.best.dims, round(r.best.step_time_s, 6), r.runner_up.dims
(('pod',), 0.08, ())
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from libra_opt.errors import InfeasibleDesignError, InputError
from libra_opt.optimize.problem import solve
from libra_opt.scenario.display import format_usd, html_table
from libra_opt.scenario.scenario import Scenario

__all__ = ["InNetworkChoice", "InNetworkResult", "choose_in_network"]


@dataclass(frozen=True)
class InNetworkChoice:
    """The optimum of one choice of in-network dimensions: the objective (``inf`` when
    infeasible), weighted step time (s), network cost and bandwidths (empty when infeasible).
    """

    dims: tuple[str, ...]
    feasible: bool
    objective_value: float
    step_time_s: float
    network_cost_usd: float
    bw_gbps: np.ndarray


@dataclass(frozen=True)
class InNetworkResult:
    """Every choice, best first (infeasible last)."""

    choices: tuple[InNetworkChoice, ...]
    objective: str

    @property
    def best(self) -> InNetworkChoice:
        """The optimal choice."""
        return self.choices[0]

    @property
    def runner_up(self) -> InNetworkChoice | None:
        """The second best choice (``None`` with a single choice)."""
        return self.choices[1] if len(self.choices) > 1 else None

    def _table(self) -> tuple[list[str], list[list[str]]]:
        head = ["in-network dims", f"objective ({self.objective})", "step time s",
                "network cost", "bw GB/s"]
        return head, [[", ".join(c.dims) or "none",
                       f"{c.objective_value:.6g}" if c.feasible else "infeasible",
                       f"{c.step_time_s:.6g}" if c.feasible else "-",
                       format_usd(c.network_cost_usd) if c.feasible else "-",
                       " / ".join(f"{b:.1f}" for b in c.bw_gbps) if c.feasible else "-"]
                      for c in self.choices]

    def __repr__(self) -> str:
        head, rows = self._table()
        lines = [f"In-network reduction: {len(self.choices)} choices, each solved exactly, "
                 "best first", "  " + " | ".join(head)]
        return "\n".join([*lines, *("  " + " | ".join(r) for r in rows)])

    def _repr_html_(self) -> str:
        return html_table(*self._table(),
                          caption="In-network reduction: every choice solved exactly, best first")


def choose_in_network(
    scenario: Scenario, dims: Sequence[str] | None = None, *, backend: str = "clarabel",
) -> InNetworkResult:
    """Solve ``scenario`` for every subset of ``dims`` (default every switch dimension, at most
    12) reducing in the network; an infeasible choice (say, a budget the premium no longer
    fits) is reported as such.
    """
    fabric = scenario.fabric
    if dims is None:
        dims = [d.name for d in fabric.dims if d.topology.switched]
    dims = list(dict.fromkeys(dims))
    if len(dims) > 12:
        raise InputError(f"{len(dims)} candidate dimensions: 2^{len(dims)} solves is too many "
                         "(at most 12)", field="in_network_reduction")
    c = scenario.collectives  # without its own in-network dimensions
    settings = c if c is None else dataclasses.replace(c, in_network_reduction=())
    out = []
    for r in range(len(dims) + 1):
        for subset in itertools.combinations(dims, r):
            scen = dataclasses.replace(scenario, in_network_reduction=tuple(subset),
                                       collectives=settings)
            try:
                sol = solve(scen, with_baselines=False, backend=backend)
            except InfeasibleDesignError:
                out.append(InNetworkChoice(tuple(sorted(subset)), False, float("inf"),
                                           float("inf"), float("inf"), np.zeros(0)))
                continue
            ev = sol.evaluation
            out.append(InNetworkChoice(tuple(sorted(subset)), True, float(sol.objective_value),
                                       ev.weighted_step_time_s, ev.cost.network_cost_usd,
                                       np.asarray(sol.bw_gbps, dtype=float)))
    out.sort(key=lambda c: (not c.feasible, c.objective_value, len(c.dims)))
    return InNetworkResult(tuple(out), scenario.objective)

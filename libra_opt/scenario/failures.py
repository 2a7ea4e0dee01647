"""Goodput of a design: what its broken parts cost a training run.

:func:`failure_report` gives per workload of a scenario with a ``reliability:`` section:

* the job's mean time to a stopping failure ``M`` (the stopping modes' rates of
  :func:`~libra_opt.cost.failures.failure_modes`), the checkpoint time ``delta``, the
  checkpoint interval (Daly's optimum unless given) and the goodput of checkpoint/restart
  (:func:`~libra_opt.cost.goodput.expected_goodput`), each stopping failure recovering in
  detection + restart, plus ``replace_s`` when no hot spare takes the failed NPU's place;
* the expected step time with degraded parts: each degrading mode ``j`` has ``m_j =
  rate_j x repair_h`` parts down on average (Little's law), each slowing the step from
  ``T`` to ``T_j``, the step time *evaluated at the design's bandwidths* with the failed
  dimension's bandwidth times the mode's factor (nothing is re-solved):
  ``E[T] = T + sum_j m_j (T_j - T)`` (first order in ``m_j``: exact while at most one part
  is down at a time);
* the effective step time ``E[T] / goodput``, effective tokens/s, and the objective and the
  run's cost including failures and the spares' cost.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from libra_opt.cost.failures import FailureMode, failure_modes
from libra_opt.cost.goodput import (
    daly_interval_s,
    expected_goodput,
    spare_shortfall_probability,
    spares_rate_usd_per_s,
)
from libra_opt.cost.tco import cluster_rate_coefficients
from libra_opt.errors import InputError
from libra_opt.fabric.heterogeneous import slowest_fractions
from libra_opt.scenario.evaluate import Evaluation, scenario_walks
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.step_time import WalkArrays, step_time_from_walk

__all__ = ["FailureReport", "WorkloadGoodput", "failure_report", "recovery_terms"]


@dataclass(frozen=True)
class WorkloadGoodput:
    """One workload under failures.

    Attributes
    ----------
    name : str
    checkpoint_bytes, checkpoint_s, interval_s : float
        Checkpoint size, write time and the compute seconds between checkpoints.
    goodput : float
        Fraction of wall time that advances training (checkpoint/restart).
    step_time_s, expected_step_time_s, effective_step_time_s : float
        The failure-free step time ``T``, with degraded parts ``E[T]`` (module notes), and
        ``E[T] / goodput``: wall seconds per step of progress.
    tokens_per_s, effective_tokens_per_s : float or None
        Throughput without and with failures (``None`` without model metrics).
    """

    name: str
    checkpoint_bytes: float
    checkpoint_s: float
    interval_s: float
    goodput: float
    step_time_s: float
    expected_step_time_s: float
    effective_step_time_s: float
    tokens_per_s: float | None = None
    effective_tokens_per_s: float | None = None


@dataclass(frozen=True)
class FailureReport:
    """A design under failures (see the module notes).

    Attributes
    ----------
    modes : tuple of FailureMode
    down_parts : tuple of float
        ``m_j``, parts of each mode down on average (0 for stopping modes).
    degraded_step_time_s : tuple of tuple of float
        ``T_j`` per mode and workload (the failure-free ``T`` for stopping modes).
    job_mttf_h, stop_failures_per_h, degrade_failures_per_h : float
        Mean hours between stopping failures of the job; failure rates per hour.
    recovery_s : float
        Mean recovery time of a stopping failure.
    spare_shortfall : float
        Probability that an NPU failure finds its domain's spares all taken.
    n_spares : int
        Hot spare NPUs in the cluster.
    run_h : float or None
        Wall hours interruptions are counted over.
    workloads : tuple of WorkloadGoodput
    objective_value, effective_objective_value : float
        The objective without failures, and with them (effective step times; for ``tco``
        the spares' cost added).
    run_cost_usd, failure_free_run_cost_usd : float or None
        One training run's cost with and without failures (with a TCO and a run length).
    spares_usd : float or None
        Capex of the hot spares (with a TCO).
    """

    modes: tuple[FailureMode, ...]
    down_parts: tuple[float, ...]
    degraded_step_time_s: tuple[tuple[float, ...], ...]
    job_mttf_h: float
    stop_failures_per_h: float
    degrade_failures_per_h: float
    recovery_s: float
    spare_shortfall: float
    n_spares: int
    run_h: float | None
    workloads: tuple[WorkloadGoodput, ...]
    objective_value: float
    effective_objective_value: float
    run_cost_usd: float | None = None
    failure_free_run_cost_usd: float | None = None
    spares_usd: float | None = None

    @property
    def interruptions(self) -> float | None:
        """Expected stopping failures over :attr:`run_h` (``None`` without one)."""
        return None if self.run_h is None else self.stop_failures_per_h * self.run_h

    @property
    def degradations(self) -> float | None:
        """Expected degrading failures over :attr:`run_h`."""
        return None if self.run_h is None else self.degrade_failures_per_h * self.run_h

    @property
    def goodput(self) -> float:
        """The lowest goodput of the workloads."""
        return min(w.goodput for w in self.workloads)


def recovery_terms(scenario: Scenario, modes: tuple[FailureMode, ...] | None = None
                   ) -> tuple[float, np.ndarray, np.ndarray, float]:
    """``(M, R, p, q)`` of a scenario's stopping failures: the job's mean time between them
    (s), the recovery times ``R_i`` and their probabilities ``p_i`` for
    :func:`~libra_opt.cost.goodput.expected_goodput`, and the spare shortfall ``q``.

    ``E_i[e^{R_i/M}]`` bounds ``1 / goodput`` from below for any checkpoint size (the
    co-design search prunes with it).
    """
    rel = scenario.reliability
    assert rel is not None
    fabric = scenario.fabric
    if modes is None:
        modes = failure_modes(fabric, rel.rates, rel.gpus_per_host)
    stops = [m for m in modes if m.stops]
    rate_h = sum(m.failures_per_h for m in stops)
    domains = fabric.n_npus // fabric.sizes[0]
    spare_h = sum(m.failures_per_h for m in stops if m.spare) / domains
    q = spare_shortfall_probability(spare_h, rel.repair_h, rel.spares_per_domain)
    fast = rel.detection_s + rel.restart_s
    r, p = [], []
    for m in stops:
        w = m.failures_per_h / rate_h
        if m.spare:  # a spare takes the NPU's place at once, unless all are taken
            r += [fast, fast + rel.replace_s]
            p += [w * (1.0 - q), w * q]
        else:  # software needs no replacement; a host or network part does
            r += [fast if m.kind == "software" else fast + rel.replace_s]
            p += [w]
    return 3600.0 / rate_h, np.array(r), np.array(p), q


def failure_report(scenario: Scenario, evaluation: Evaluation,
                   walks: tuple[WalkArrays, ...] | None = None) -> FailureReport:
    """The scenario's design at ``evaluation``'s bandwidths under failures.

    Raises
    ------
    InputError
        When the scenario has no failure model (``reliability``).

    Examples
    --------
    >>> import libra_opt as lo
    >>> s = lo.load_scenario("llama3_405b_h100_tco")
    >>> rep = failure_report(s, lo.evaluate(s, [656.99, 18.565]))
    >>> round(rep.interruptions), round(rep.job_mttf_h, 2), round(rep.goodput, 3)
    (396, 3.27, 0.93)
    """
    rel = scenario.reliability
    if rel is None:
        raise InputError("the scenario has no failure model: add a reliability section",
                         field="reliability")
    fabric = scenario.fabric
    modes = failure_modes(fabric, rel.rates, rel.gpus_per_host)
    mtbf_s, r, p, q = recovery_terms(scenario, modes)
    walks = scenario_walks(scenario) if walks is None else walks
    base_bw = evaluation.bw_gbps * slowest_fractions(fabric)
    base_t = np.array([t.step_time_s for t in evaluation.workloads])
    cache: dict[tuple[int, float], np.ndarray] = {}
    down, slow = [], []
    for m in modes:
        if m.stops or m.dim is None:
            down.append(0.0)
            slow.append(base_t)
            continue
        key = (m.dim, m.bw_factor)
        if key not in cache:
            bw = base_bw.copy()
            bw[m.dim] *= m.bw_factor
            cache[key] = np.array([step_time_from_walk(w, bw, scenario.timing).step_time_s
                                   for w in walks])
        down.append(m.failures_per_h * rel.repair_h)
        slow.append(cache[key])
    expected_t = base_t + sum((n * (t - base_t) for n, t in zip(down, slow, strict=True)),
                              np.zeros_like(base_t))
    out = []
    for i, (wl, t) in enumerate(zip(scenario.workloads, evaluation.workloads, strict=True)):
        size = rel.checkpoint_bytes
        if size is None:
            assert wl.metrics is not None and wl.metrics.checkpoint_bytes is not None
            size = wl.metrics.checkpoint_bytes
        delta = size / (rel.checkpoint_write_gbps * 1e9)
        tau = rel.checkpoint_interval_s or daly_interval_s(delta, mtbf_s)
        g = expected_goodput(tau, delta, mtbf_s, r, p)
        eff = float(expected_t[i]) / g
        tok = None if wl.metrics is None else wl.metrics.tokens_per_step
        out.append(WorkloadGoodput(
            wl.name, size, delta, tau, g, t.step_time_s, float(expected_t[i]), eff,
            None if tok is None else tok / t.step_time_s, None if tok is None else tok / eff))
    assert scenario.weights is not None
    weighted = sum(wt * w.effective_step_time_s
                   for wt, w in zip(scenario.weights, out, strict=True))
    ratio = weighted / evaluation.weighted_step_time_s
    n_spares = rel.spares_per_domain * (fabric.n_npus // fabric.sizes[0])
    effective = evaluation.objective_value * ratio
    run = free = spares_usd = None
    tco = scenario.tco
    run_h = None if rel.run_days is None else 24.0 * rel.run_days
    if tco is not None:
        spares_usd = n_spares * (tco.accelerator_usd + tco.host_usd_per_npu)
        try:
            r0, rb = cluster_rate_coefficients(tco, fabric, scenario.coefficients)
            steps = tco.n_steps
        except InputError:  # no run length, or no network power for the energy
            pass
        else:
            rate = r0 + float(rb @ evaluation.bw_gbps)
            spare_rate = spares_rate_usd_per_s(tco, n_spares)
            free = steps * evaluation.weighted_step_time_s * rate
            run = steps * weighted * (rate + spare_rate)
            if scenario.objective_model.needs_tco:
                effective *= (rate + spare_rate) / rate
            if run_h is None:
                run_h = steps * weighted / 3600.0
    stop_h = 3600.0 / mtbf_s
    degrade_h = sum(m.failures_per_h for m in modes if not m.stops)
    return FailureReport(
        modes=modes, down_parts=tuple(down),
        degraded_step_time_s=tuple(tuple(float(x) for x in t) for t in slow),
        job_mttf_h=mtbf_s / 3600.0, stop_failures_per_h=stop_h,
        degrade_failures_per_h=degrade_h, recovery_s=float(p @ r), spare_shortfall=q,
        n_spares=n_spares, run_h=run_h, workloads=tuple(out),
        objective_value=evaluation.objective_value, effective_objective_value=effective,
        run_cost_usd=run, failure_free_run_cost_usd=free, spares_usd=spares_usd)

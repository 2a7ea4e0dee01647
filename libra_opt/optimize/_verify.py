"""Acceptance of an answer: the independent numpy re-check must agree with the solver, and
the optimum must be of a sane magnitude."""

from __future__ import annotations

import numpy as np

from libra_opt.errors import InputError
from libra_opt.scenario.accuracy import CONSTRAINT_REL_TOL, OBJECTIVE_REL_TOL
from libra_opt.scenario.evaluate import Evaluation
from libra_opt.scenario.scenario import Scenario

__all__ = ["CONSTRAINT_REL_TOL", "MAX_BW_GBPS", "MAX_STEP_S", "OBJECTIVE_REL_TOL",
           "check_magnitudes", "verification_failure"]

#: Longest optimal step time accepted, in seconds (about 32 years). An optimum beyond it comes
#: from absurd inputs (tiny bandwidth, huge collectives or compute): :func:`solve` raises
#: :class:`~libra_opt.errors.InputError` instead of reporting it.
MAX_STEP_S = 1e9
#: Largest optimal bandwidth accepted on one dimension, in GB/s per NPU (1 EB/s): beyond it
#: communication vanishes below double precision next to compute, and an answer is an
#: artefact of the constraints' magnitudes; :func:`solve` raises
#: :class:`~libra_opt.errors.InputError`.
MAX_BW_GBPS = 1e9


def verification_failure(ev: Evaluation, gap: float, solver_objective: float) -> str | None:
    """Why the numpy evaluation ``ev`` does not confirm an answer, or ``None`` when it does: a
    finite objective within :data:`OBJECTIVE_REL_TOL` (relative ``gap``) of the solver's
    ``solver_objective``, and every constraint met to :data:`CONSTRAINT_REL_TOL`."""
    if not np.isfinite(ev.objective_value) or gap > OBJECTIVE_REL_TOL:
        return (f"numpy evaluation {ev.objective_value!r} disagrees with the solver's "
                f"objective {solver_objective!r} (relative gap {gap:.2e})")
    if not ev.feasible(CONSTRAINT_REL_TOL):
        bad = [k for k, r in ev.residuals.items() if r > CONSTRAINT_REL_TOL * ev.residual_scales[k]]
        return f"solver answer violates constraints: {', '.join(bad)}"
    return None


def check_magnitudes(scen: Scenario, bw: np.ndarray, ev: Evaluation) -> None:
    """Raise :class:`~libra_opt.errors.InputError` when the optimum ``bw`` (GB/s per NPU)
    has a bandwidth above :data:`MAX_BW_GBPS` or ``ev`` a step time above
    :data:`MAX_STEP_S` (absurd inputs, not a design)."""
    big = [d for d in range(scen.fabric.n_dims) if not bw[d] <= MAX_BW_GBPS]
    if big:
        d = big[0]
        raise InputError(
            f"the optimum gives dimension {scen.fabric.names[d]!r} {bw[d]:.3g} GB/s per NPU, "
            f"beyond the sane limit of {MAX_BW_GBPS:g} GB/s: check the constraints' "
            "right-hand sides (total bandwidth, budget, bounds)",
            source=scen.source,
            field="constraints",
        )
    for t in ev.workloads:
        if not t.step_time_s <= MAX_STEP_S:
            raise InputError(
                f"the optimal step time of workload {t.name!r} is {t.step_time_s:.3g} s, beyond "
                f"the sane limit of {MAX_STEP_S:g} s: check its collective sizes and compute "
                "times and the bandwidth the constraints allow",
                source=scen.source,
                field=f"workloads[{t.name}]",
            )

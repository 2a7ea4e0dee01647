"""How far a model-based step time is trusted: its error band, the validated envelope and the
best measured MFU, from the validation tables.

The model has been checked against validated runs (:class:`ValidatedRun`, built by
:func:`libra_opt.explore.trust.validated_runs`; stored by :mod:`libra_opt.io.error_model`),
each with its relative error ``e = t_predicted / t_measured - 1``. :class:`ErrorModel`:

* **Band.** The largest ``|e|`` of the out-of-sample runs (role ``validation``) of the device
  and stack when there are at least :data:`MIN_RUNS`, else of the device, else of every run:
  a predicted ``t`` stands for a measured time in ``[t / (1 + b), t / (1 - b)]``.
* **Envelope.** The range of each knob of :data:`KNOBS` and the recomputation kinds over the
  device's runs. Outside it the band is the largest ``|e|`` of every out-of-sample run
  (:attr:`ErrorModel.worst_band`) and the answer is flagged with what lies outside.
* **Ranking band.** ``max |(1 + e_i) / (1 + e_j) - 1|`` over the published variant sets of
  the device and stack (else device, else all): objectives closer than that are not told
  apart.
* **MFU ceiling.** The highest MFU measured on the device.

The band is the worst error seen, not a confidence interval.

Examples
--------
>>> runs = (ValidatedRun("a", "t", "gpu", "s", "validation", 0.02, tp=8, pp=8),
...         ValidatedRun("b", "t", "gpu", "s", "validation", -0.03, tp=8, pp=4),
...         ValidatedRun("c", "t", "gpu", "s", "validation", 0.01, tp=4, pp=8),
...         ValidatedRun("d", "t", "other", "s", "validation", 0.12, tp=8, pp=8))
>>> m = ErrorModel(runs)
>>> m.band("gpu", "s", {"tp": 8, "pp": 4}).rel_error
0.03
>>> b = m.band("gpu", "s", {"tp": 16, "pp": 4})
>>> b.rel_error, b.outside
(0.12, ('tp 16 (validated 4-8)',))
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["KNOBS", "MIN_RUNS", "ValidatedRun", "Band", "ErrorModel"]

#: Knobs whose validated range makes the envelope (numeric; recomputation is checked by kind).
KNOBS = ("tp", "cp", "pp", "ep", "micro_batch_size", "interleave", "seq_len", "n_npus")
#: Fewest out-of-sample runs a device and stack need for a band of their own.
MIN_RUNS = 3
_LABEL = {"micro_batch_size": "micro-batch", "seq_len": "sequence", "n_npus": "GPUs"}


@dataclass(frozen=True)
class ValidatedRun:
    """One published or measured run the model was checked against.

    Attributes
    ----------
    name, table, device, stack : str
        The row, its table, the device key and the software stack.
    role : {'validation', 'device', 'stack', 'convention'}
        Out of sample, fitted on (device or stack constants) or convention-dependent.
    error : float
        ``t_predicted / t_measured - 1``.
    variant_set : str
        The set of parallelization variants it belongs to ('' for none).
    mfu_measured : float or None
        MFU implied by the measured step time.
    """

    name: str
    table: str
    device: str
    stack: str
    role: str
    error: float
    variant_set: str = ""
    tp: int = 1
    cp: int = 1
    pp: int = 1
    ep: int = 1
    micro_batch_size: int = 1
    interleave: int = 1
    seq_len: int = 2048
    n_npus: int = 1
    recompute: str = "none"
    mfu_measured: float | None = None


@dataclass(frozen=True)
class Band:
    """The error band of a model-based step time: the largest ``|t_predicted / t_measured - 1|``
    it allows, the runs it comes from and what lies outside the validated envelope.
    """

    rel_error: float
    basis: str
    outside: tuple[str, ...] = ()

    @property
    def inside(self) -> bool:
        """Whether the answer lies inside the validated envelope."""
        return not self.outside

    def interval_s(self, step_time_s: float) -> tuple[float, float]:
        """Measured step times the band allows for a predicted ``step_time_s``: ``(t / (1 + b),
        t / (1 - b))``, infinite above for ``b >= 1``.

        Examples
        --------
        >>> Band(0.25, "x").interval_s(1.0)
        (0.8, 1.3333333333333333)
        """
        b = self.rel_error
        return step_time_s / (1.0 + b), (step_time_s / (1.0 - b) if b < 1.0 else math.inf)

    def describe(self) -> str:
        """One line: the band, its basis and, outside the envelope, what lies outside."""
        text = f"+-{100 * self.rel_error:.1f} % ({self.basis})"
        if self.outside:
            text += "; outside the validated envelope: " + ", ".join(self.outside)
        return text


@dataclass(frozen=True)
class ErrorModel:
    """Bands, envelope, ranking band and MFU ceiling from validated runs (module notes)."""

    runs: tuple[ValidatedRun, ...]

    def _judged(self, device: str | None = None, stack: str | None = None) -> list[ValidatedRun]:
        return [r for r in self.runs if r.role == "validation"
                and (device is None or r.device == device)
                and (stack is None or r.stack == stack)]

    @property
    def worst_band(self) -> float:
        """The largest ``|error|`` of every out-of-sample run (NaN when there are none)."""
        errs = [abs(r.error) for r in self._judged()]
        return max(errs) if errs else math.nan

    def devices(self) -> tuple[str, ...]:
        """Devices with runs, in order of appearance."""
        return tuple(dict.fromkeys(r.device for r in self.runs))

    def envelope(self, device: str) -> dict[str, tuple[int, int] | tuple[str, ...]]:
        """Validated ``(lo, hi)`` of each knob on ``device`` and the ``recompute`` kinds seen."""
        runs = [r for r in self.runs if r.device == device]
        if not runs:
            return {}
        out: dict[str, tuple[int, int] | tuple[str, ...]] = {
            k: (min(getattr(r, k) for r in runs), max(getattr(r, k) for r in runs))
            for k in KNOBS}
        out["recompute"] = tuple(sorted({r.recompute for r in runs}))
        return out

    def outside(self, device: str, stack: str,
                knobs: Mapping[str, int | str]) -> tuple[str, ...]:
        """What of ``knobs`` lies outside ``device``'s validated envelope, and the device or stack
        itself when it has no runs.
        """
        env = self.envelope(device)
        if not env:
            return (f"device {device} (no validated runs)",)
        out = []
        if not any(r.stack == stack for r in self.runs if r.device == device):
            out.append(f"software stack {stack} (no validated runs on {device})")
        for k, v in knobs.items():
            if k not in env:
                continue
            rng = env[k]
            if k == "recompute":
                if v not in rng:
                    out.append(f"recompute {v} (validated {', '.join(map(str, rng))})")
                continue
            lo, hi = int(rng[0]), int(rng[1])
            if not lo <= int(v) <= hi:
                span = f"{lo}" if lo == hi else f"{lo}-{hi}"
                out.append(f"{_LABEL.get(k, k)} {v} (validated {span})")
        return tuple(out)

    def band(self, device: str, stack: str, knobs: Mapping[str, int | str]) -> Band:
        """The error band of a step time predicted on ``device`` with ``stack`` at
        ``knobs`` (module notes)."""
        outside = self.outside(device, stack, knobs)
        if outside:
            return Band(self.worst_band, f"the largest error of any of the "
                        f"{len(self._judged())} validated runs", outside)
        for dev, stk, what in ((device, stack, f"{device} / {stack}"),
                               (device, None, f"{device}, every stack"),
                               (None, None, "every device")):
            judged = self._judged(dev, stk)
            if len(judged) >= MIN_RUNS or dev is None:
                errs = [abs(r.error) for r in judged]
                return Band(max(errs) if errs else math.nan,
                            f"largest error of {len(judged)} validated runs, {what}")
        raise AssertionError("unreachable")

    def rank_band(self, device: str, stack: str) -> float:
        """Largest error of the model's ratio of two variants' step times (NaN without a set).

        Examples
        --------
        >>> runs = tuple(ValidatedRun(n, "t", "g", "s", "validation", e, variant_set="v")
        ...              for n, e in (("a", 0.02), ("b", -0.01), ("c", 0.0)))
        >>> round(ErrorModel(runs).rank_band("g", "s"), 6)   # 1.02 / 0.99 - 1
        0.030303
        """
        for dev, stk in ((device, stack), (device, None), (None, None)):
            sets: dict[str, list[float]] = {}
            for r in self.runs:
                if (r.variant_set and (dev is None or r.device == dev)
                        and (stk is None or r.stack == stk)):
                    sets.setdefault(f"{r.table}/{r.variant_set}", []).append(r.error)
            pairs = [abs((1 + a) / (1 + b) - 1) for errs in sets.values() if len(errs) > 1
                     for a in errs for b in errs]
            if pairs:
                return max(pairs)
        return math.nan

    def best_mfu(self, device: str) -> tuple[float, str] | None:
        """The highest measured MFU on ``device`` and the run that reached it."""
        runs = [(r.mfu_measured, r.name) for r in self.runs
                if r.device == device and r.mfu_measured is not None]
        return max(runs) if runs else None

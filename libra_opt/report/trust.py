"""The model's error band as text: of model-based workloads (:func:`band_lines`) and of a
search's best designs (:func:`trust_lines`)."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import groupby
from typing import Any

from libra_opt.generators.error_model import Band, ErrorModel
from libra_opt.report.text import format_quantity

__all__ = ["band_lines", "bands_to_dict", "trust_flags", "trust_lines"]


def band_lines(bands: Mapping[str, Band], step_times_s: Mapping[str, float]) -> list[str]:
    """One line per model-based workload: its step time, the measured times its error band
    allows and where the band comes from.

    Examples
    --------
    >>> from libra_opt.generators.error_model import Band
    >>> band_lines({"w": Band(0.03, "6 runs")}, {"w": 10.0})
    ['Model error band: w step time 10 s stands for a measured 9.70874 s to 10.3093 s (+-3.0 %, 6 runs)']
    """
    out = []
    for name, b in bands.items():
        t = step_times_s[name]
        lo, hi = b.interval_s(t)
        line = (f"Model error band: {name} step time {format_quantity(t, 's')} stands for a "
                f"measured {format_quantity(lo, 's')} to {format_quantity(hi, 's')} "
                f"(+-{100 * b.rel_error:.1f} %, {b.basis})")
        if b.outside:
            line += "; outside the validated envelope: " + ", ".join(b.outside)
        out.append(line)
    return out


def bands_to_dict(bands: Mapping[str, Band], step_times_s: Mapping[str, float]
                  ) -> dict[str, Any]:
    """:func:`band_lines` as JSON values, by workload name."""
    return {name: {"rel_error": b.rel_error,
                   "step_time_range_s": list(b.interval_s(step_times_s[name])),
                   "basis": b.basis, "outside_envelope": list(b.outside)}
            for name, b in bands.items()}


def trust_flags(row: Any) -> str:
    """A search row's trust flags: ``=`` the model does not tell it from the best, ``E``
    outside the validated envelope, ``M`` an MFU above the best measured (``-``: none).

    Examples
    --------
    >>> trust_flags({"indistinguishable": True, "outside_envelope": "tp 16",
    ...              "mfu_above_measured": False})
    '=E'
    """
    return "".join(c for c, on in (("=", row["indistinguishable"]),
                                   ("E", bool(row["outside_envelope"])),
                                   ("M", row["mfu_above_measured"])) if on) or "-"


def _ranks(ranks: list[int]) -> str:
    """``#1-#3, #5`` for ``[1, 2, 3, 5]``."""
    runs = [[r for _, r in g] for _, g in groupby(enumerate(ranks), lambda p: p[1] - p[0])]
    return ", ".join(f"#{r[0]}" if len(r) == 1 else f"#{r[0]}-#{r[-1]}" for r in runs)


def trust_lines(result: Any, k: int, model: ErrorModel) -> list[str]:
    """What the error bands say about the ``k`` best designs: the band inside and outside
    the validated envelope, the rows outside it, above the best measured MFU or not told
    from the best, and each design's alternatives."""
    best = result.best(k)
    if "band_pct" not in best or best.empty:
        return []
    device, stack = result.device, result.stack
    inside = model.band(device, stack, {})
    out = [f"error band (trust: = not told apart from #1, E outside the validated envelope, "
           f"M MFU above the best measured): inside the validated envelope "
           f"{inside.describe()}; outside it +-{100 * model.worst_band:.1f} % (the largest "
           f"error of any of the {sum(r.role == 'validation' for r in model.runs)} validated "
           f"runs)"]
    env = [f"#{int(r['rank'])} {r['outside_envelope']}" for _, r in best.iterrows()
           if r["outside_envelope"]]
    if env:
        out.append("outside the validated envelope: " + "; ".join(env))
    mfu = [int(r["rank"]) for _, r in best.iterrows() if r["mfu_above_measured"]]
    top = model.best_mfu(device)
    if mfu and top is not None:
        out.append(f"MFU above the best measured on {device} ({100 * top[0]:.1f} %, "
                   f"{top[1]}): {_ranks(mfu)}")
    same = [int(r["rank"]) for _, r in best.iterrows() if r["indistinguishable"]]
    band = model.rank_band(device, stack)
    if len(same) > 1:
        out.append(f"not told apart by the model: {_ranks(same)} are within its ranking "
                   f"error ({100 * band:.1f} %, the largest error of its ratio of two "
                   f"published variants' step times on {device}) of #1")
    alts = [f"#{int(r['rank'])} also as {r['alternatives']}" for _, r in best.iterrows()
            if r.get("alternatives")]
    if alts:
        out.append("same design, other knobs: " + "; ".join(alts))
    return out

"""Checks a figure must pass before it goes in front of a review board.

:func:`figure_problems` lists what would mislead or confuse a reader of a matplotlib figure:

- a numeric axis without a label, or whose label names no unit (``'step time (ms)'``,
  ``'saving (%)'``; a ratio ``'predicted / published step time'`` has none; a label made of a count noun such as ``'GPUs'`` is accepted when it is
  given as the unit in parentheses);
- several series in one axes and no legend (on the axes or the figure); a legend over bars;
- a bar chart whose value axis does not include zero, or is logarithmic (bars encode
  length: an axis starting at 24 s makes 2 % look several-fold);
- a colour bar without a label;
- tick labels in scientific or offset form (``2x10^1``, ``1e7``);
- text (tick labels, axis labels, titles, legends, annotations) outside the figure, i.e.
  cut off when saved;
- two annotations of one axes drawn over each other (labels that cannot be read).

The package's plots, the report's, the benchmark scripts' and the notebooks' figures are
tested with it (``tests/report/test_figure_check.py``, ``tests/test_notebooks.py``).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.container import BarContainer
from matplotlib.figure import Figure

__all__ = ["figure_problems"]

_UNIT = re.compile(r"\(([^()]+)\)\s*$|\(([^()]+)\)[;,]|%|\[[^\]]+\]|\w / \w")
_SCI = re.compile(r"[0-9.]\s*[×x]\s*10|10\^|\$.*\^|[0-9]e[+-]?[0-9]")


def _drawn_ticklabels(axis) -> list:
    """The tick labels ``axis`` draws: visible, non-empty, inside the view interval."""
    lo, hi = sorted(axis.get_view_interval())
    span = (hi - lo) * 1e-9
    out = []
    for tick in axis.get_major_ticks():
        loc = tick.get_loc()
        if loc is None or not lo - span <= loc <= hi + span:
            continue
        for t in (tick.label1, tick.label2):
            if t.get_visible() and t.get_text():
                out.append(t)
    return out


def _is_colorbar(ax: Axes) -> bool:
    return getattr(ax, "_colorbar", None) is not None or ax.get_label() == "<colorbar>"


def _has_data(ax: Axes) -> bool:
    return bool(ax.lines or ax.patches or ax.collections or ax.images or ax.containers)


def _numeric(ax: Axes, which: str) -> bool:
    """Whether ``which`` axis shows numbers (not category names)."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    texts = [t.get_text() for t in _drawn_ticklabels(axis)]
    if not texts:
        return False
    def num(t: str) -> bool:
        t = t.replace("−", "-").replace(",", "").replace("$", "").strip()
        t = re.sub(r"[kMGB%]$", "", t)
        try:
            float(t)
        except ValueError:
            return False
        return True
    return sum(num(t) for t in texts) > len(texts) / 2


def _series(ax: Axes) -> int:
    """Distinct data series in ``ax``: lines of two or more points that are not reference
    lines (``axhline``/``axvline``), bar groups and filled areas."""
    n = 0
    for line in ax.lines:
        npts = len(np.atleast_1d(np.asarray(line.get_xdata(), dtype=object)))
        label = str(line.get_label())
        if npts < 2 and line.get_marker() in (None, "None", "", " "):
            continue
        if label.startswith("_child") and npts == 2 and (
                line.get_transform() is not ax.transData):
            continue  # axhline / axvline
        if label.startswith("_child") and npts < 2:
            continue  # a single unlabelled point is an annotation
        n += 1
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    n += len(bars)
    n += sum(1 for c in ax.collections if type(c).__name__ in ("PolyCollection", "FillBetweenPolyCollection"))
    return n


def _legend(ax: Axes, fig: Figure) -> bool:
    if ax.get_legend() is not None or fig.legends:
        return True
    return any(a.get_legend() is not None for a in fig.axes if a is not ax
               and a.bbox.bounds == ax.bbox.bounds)   # a twin axes' legend


def figure_problems(fig: Figure) -> list[str]:
    """What in ``fig`` would mislead or confuse a reader; empty when it is fine.

    The figure is drawn first (tick labels and layout are final only then).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> _ = ax.bar(["a", "b"], [24.4, 25.3]); _ = ax.set_ylim(24, 25.5)
    >>> _ = ax.set_ylabel("step time (s)")
    >>> figure_problems(fig)
    ['axes 0: bar chart whose value axis does not include zero (24 to 25.5)']
    >>> plt.close(fig)

    Two labels written at one point:

    >>> fig, ax = plt.subplots()
    >>> _ = ax.plot([0, 1], [0, 1]); _ = ax.set_xlabel("x (s)"); _ = ax.set_ylabel("y (s)")
    >>> _ = ax.annotate("#1 best", (0.5, 0.5)); _ = ax.annotate("#2 next", (0.5, 0.5))
    >>> figure_problems(fig)
    ["axes 0: annotations '#1 best' and '#2 next' overlap"]
    >>> plt.close(fig)
    """
    if not hasattr(fig.canvas, "get_renderer"):   # a closed figure: draw it with Agg
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    canvas: Any = fig.canvas
    canvas.draw()
    renderer = canvas.get_renderer()
    fbox = fig.bbox
    out: list[str] = []
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        tag = f"axes {i}" + (f" ({ax.get_title()[:40]!r})" if ax.get_title() else "")
        if _is_colorbar(ax):
            if not (ax.get_ylabel() or ax.get_xlabel()):
                out.append(f"{tag}: colour bar without a label")
            continue
        if not _has_data(ax):
            continue
        for which in ("x", "y"):
            label = ax.get_xlabel() if which == "x" else ax.get_ylabel()
            twin_label = any(a is not ax and a.bbox.bounds == ax.bbox.bounds
                             and (a.get_xlabel() if which == "x" else a.get_ylabel())
                             for a in fig.axes)
            axis = ax.xaxis if which == "x" else ax.yaxis
            if not axis.get_visible() or not _numeric(ax, which):
                continue
            shared = (ax.get_shared_x_axes() if which == "x" else ax.get_shared_y_axes())
            sibling = any(a is not ax and shared.joined(a, ax)
                          and (a.get_xlabel() if which == "x" else a.get_ylabel())
                          for a in fig.axes)
            if not label:
                if not (sibling or twin_label):
                    out.append(f"{tag}: numeric {which} axis without a label")
            elif not _UNIT.search(label):
                out.append(f"{tag}: {which} label {label!r} names no unit")
            for t in _drawn_ticklabels(axis):
                if _SCI.search(t.get_text()):
                    out.append(f"{tag}: {which} tick label {t.get_text()!r} in scientific form")
                    break
            if axis.get_offset_text().get_text():
                out.append(f"{tag}: {which} axis has an offset "
                           f"{axis.get_offset_text().get_text()!r}")
        if _series(ax) >= 2 and not _legend(ax, fig):
            out.append(f"{tag}: {_series(ax)} series and no legend")
        for c in ax.containers:
            if not isinstance(c, BarContainer):
                continue
            horizontal = c.orientation == "horizontal"
            lo, hi = ax.get_xlim() if horizontal else ax.get_ylim()
            scale = ax.get_xscale() if horizontal else ax.get_yscale()
            if scale != "linear":
                out.append(f"{tag}: bar chart on a {scale} value axis")
            elif not min(lo, hi) <= 0 <= max(lo, hi):
                out.append(f"{tag}: bar chart whose value axis does not include zero "
                           f"({lo:.4g} to {hi:.4g})")
            break
        legend = ax.get_legend()
        if legend is not None and legend.get_visible():
            lbox = legend.get_window_extent(renderer)
            bars = [p for c in ax.containers if isinstance(c, BarContainer) for p in c
                    if p.get_height() and p.get_width()]
            if any(p.get_window_extent(renderer).overlaps(lbox) for p in bars):
                out.append(f"{tag}: the legend covers bars")
        for im in ax.images:
            cb = getattr(im, "colorbar", None)
            if cb is not None and not (cb.ax.get_ylabel() or cb.ax.get_xlabel()):
                out.append(f"{tag}: colour bar without a label")
    texts: list[Any] = []
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        notes = [t for t in ax.texts if t.get_visible() and t.get_text().strip()]
        boxes = [t.get_window_extent(renderer) for t in notes]
        clash = next(((a, b) for j, a in enumerate(notes) for k, b in enumerate(notes)
                      if j < k and boxes[j].overlaps(boxes[k])), None)
        if clash is not None:
            out.append(f"axes {i}: annotations {clash[0].get_text()[:30]!r} and "
                       f"{clash[1].get_text()[:30]!r} overlap")
        texts += notes
        texts += _drawn_ticklabels(ax.xaxis) + _drawn_ticklabels(ax.yaxis)
        texts += [ax.xaxis.label, ax.yaxis.label, ax.title]
        if ax.get_legend() is not None:
            texts.append(ax.get_legend())
    texts += list(fig.legends)
    suptitle = getattr(fig, "_suptitle", None)
    if suptitle is not None:
        texts.append(suptitle)
    for t in texts:
        if hasattr(t, "get_text") and not t.get_text():
            continue
        if not t.get_visible():
            continue
        box = t.get_window_extent(renderer)
        if (box.x0 < fbox.x0 - 1 or box.y0 < fbox.y0 - 1 or box.x1 > fbox.x1 + 1
                or box.y1 > fbox.y1 + 1):
            what = t.get_text() if hasattr(t, "get_text") else "legend"
            out.append(f"text {what[:40]!r} is outside the figure (cut off when saved)")
    return list(dict.fromkeys(out))

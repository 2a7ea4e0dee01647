"""The look of every plot: axis labels with units in engineering steps (``ms``, ``$M``,
``kW``), plain tick numbers (never an offset such as ``1e7``), legends that cover no data."""

from __future__ import annotations

import math
import textwrap
import weakref

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter

__all__ = ["quantity", "format_value", "series_styles"]

_UNITS = {
    "s": ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")),
    "usd": ((1e9, "$B"), (1e6, "$M"), (1e3, "$k"), (1.0, "$")),
    "w": ((1e6, "MW"), (1e3, "kW"), (1.0, "W")),
    "gbps": ((1.0, "GB/s"),),
    "bytes": ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1.0, "B")),
    "npus": ((1.0, "NPUs"),),
    "": ((1.0, ""),),
}
_NAMES = {
    "budget_usd": ("network budget", "usd"),
    "power_w": ("network power cap", "w"),
    "network_cost_usd": ("network cost", "usd"),
    "network_power_w": ("network power", "w"),
    "weighted_step_time_s": ("weighted step time", "s"),
    "step_time_s": ("step time", "s"),
    "objective": ("objective", ""),
}
_SUFFIX_KIND = (("_usd", "usd"), ("_gbps", "gbps"), ("_bytes", "bytes"), ("_w", "w"), ("_s", "s"))
_OWN: weakref.WeakSet = weakref.WeakSet()   # figures made here (constrained layout)
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p")


def series_styles(n: int) -> list[tuple[str | tuple[float, ...], str]]:
    """A ``(colour, marker)`` for each of ``n`` series, no two alike for any ``n``.

    The colour cycle in turn, the marker changing each time the colours come round again;
    beyond colours x markers series, colours sampled from the ``turbo`` colour map.

    Examples
    --------
    >>> styles = series_styles(13)
    >>> styles[0], styles[10], len(set(styles))
    (('C0', 'o'), ('C0', 's'), 13)
    >>> len({(tuple(c), m) for c, m in series_styles(200)})
    200
    """
    k = len(plt.rcParams["axes.prop_cycle"].by_key().get("color", ())) or 1
    if n <= k * len(_MARKERS):
        return [(f"C{i % k}", _MARKERS[i // k]) for i in range(n)]
    colours = plt.get_cmap("turbo")(np.linspace(0.0, 1.0, n))
    return [(tuple(float(v) for v in c), _MARKERS[i % len(_MARKERS)])
            for i, c in enumerate(colours)]


def quantity(name: str) -> tuple[str, str]:
    """Human label and unit kind (``s``, ``usd``, ``w``, ``gbps``, ``bytes`` or ``''``) of a column.

    Examples
    --------
    >>> quantity("budget_usd")
    ('network budget', 'usd')
    >>> quantity("step_time_gpt3_s"), quantity("bw_pod_gbps")
    (('step time of gpt3', 's'), ('bandwidth of pod', 'gbps'))
    >>> quantity("sum(bw) == 1000")
    ("right-hand side of 'sum(bw) == 1000'", 'gbps')
    >>> quantity("fabric.hb_domain")
    ('HB domain', 'npus')
    >>> quantity("fabric.dims.3.size")
    ('fabric.dims.3.size', '')
    """
    if name in _NAMES:
        return _NAMES[name]
    if name == "hb_domain" or name.endswith(".hb_domain"):
        return "HB domain", "npus"
    if name.startswith("step_time_") and name.endswith("_s"):
        return f"step time of {name[10:-2]}", "s"
    if name.startswith("bw_") and name.endswith("_gbps"):
        return f"bandwidth of {name[3:-5]}", "gbps"
    if any(op in name for op in ("==", "<=", ">=")):   # a linear constraint's text
        unit = "usd" if "cost" in name else "w" if "power" in name else "gbps"
        return f"right-hand side of {name!r}", unit
    for suffix, kind in _SUFFIX_KIND:
        if name.endswith(suffix):
            return name[: -len(suffix)].replace("_", " "), kind
    return name, ""


def _unit(values, kind: str) -> tuple[float, str]:
    """The largest engineering unit of ``kind`` not above the largest finite |value|."""
    arr = np.abs(np.asarray(pd.to_numeric(pd.Series(np.ravel(values)), errors="coerce"),
                            dtype=float))
    arr = arr[np.isfinite(arr)]
    top = float(arr.max()) if arr.size else 0.0
    steps = _UNITS.get(kind, _UNITS[""])
    return next((step for step in steps if top >= step[0]), steps[-1] if top > 0 else steps[0])


def _num(x: float) -> str:
    return "0" if abs(x) < 1e-12 else f"{x:,.4g}"


def format_value(x: float, kind: str) -> str:
    """``x`` in its engineering unit: ``'6.5 ms'``, ``'$12.3M'``, ``'450 GB/s'``.

    Examples
    --------
    >>> format_value(0.0065, "s"), format_value(1.23e7, "usd"), format_value(450.0, "gbps")
    ('6.5 ms', '$12.3M', '450 GB/s')
    >>> format_value(float("nan"), "w")
    'n/a'
    """
    if x is None or not math.isfinite(float(x)):
        return "n/a"
    scale, unit = _unit([x], kind)
    if unit.startswith("$"):
        return f"${_num(x / scale)}{unit[1:]}"
    return f"{_num(x / scale)} {unit}".strip()


def _axis(ax, which: str, values, name_or_label: str, kind: str | None = None) -> float:
    """Label an axis ``'label (unit)'`` and format its ticks in that unit; returns the scale."""
    label, k = quantity(name_or_label) if kind is None else (name_or_label, kind)
    scale, unit = _unit(values, k)
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_formatter(FuncFormatter(lambda x, _pos: _num(x / scale)))
    text = f"{label} ({unit})" if unit else label
    (ax.set_xlabel if which == "x" else ax.set_ylabel)(text)
    return scale


def _axes(ax, figsize=(7.0, 4.0)):
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
        _OWN.add(fig)   # ours to lay out: legends go below the axes
        return fig, ax
    return ax.figure, ax


def _legend_below(ax, handles=None, labels=None, ncols: int | None = None):
    """A frameless legend: below everything in a figure of our own (:func:`_fit_legend`),
    where it covers the least data in the caller's axes."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    n = ncols or min(len(handles), 4)
    fig = ax.figure
    if fig in _OWN:
        return _fit_legend(fig, list(handles), [str(t) for t in labels], n)
    return ax.legend(handles, labels, loc="best", frameon=False, fontsize=8)


def _fit_legend(fig, handles: list, labels: list[str], ncols: int):
    """A figure legend below everything, no wider than the figure: the most columns (up to
    ``ncols``) that fit, then long labels wrapped at spaces if one column does not."""
    room = 0.98 * fig.bbox.width

    def make(texts: list[str], n: int):
        return fig.legend(handles, texts, loc="outside lower center", ncols=n, frameon=False,
                          fontsize=8)

    n = max(1, min(ncols, len(handles)))
    legend = make(labels, n)
    while n > 1 and legend.get_window_extent().width > room:
        legend.remove()
        n -= 1
        legend = make(labels, n)
    width = legend.get_window_extent().width
    chars = max(len(t) for t in labels)
    while width > room and chars > 10:   # one column, still too wide: wrap the long labels
        chars = max(10, int(chars * room / width) - 1)
        legend.remove()
        legend = make([textwrap.fill(t, chars, break_long_words=False) for t in labels], 1)
        width = legend.get_window_extent().width
    return legend

"""The CLI's plotting backend: it only writes files, so it draws with Agg (library modules
never choose a backend)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["pyplot", "save_drawn"]


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend, imported on first use (``--help`` stays fast)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_drawn(draw: Callable[[], Any], path: Any, **kwargs: Any) -> Any:
    """The figure ``draw()`` makes, saved to ``path`` atomically (dpi 130 unless given) and
    closed; returns the path written."""
    plt = pyplot()
    from libra_opt.io.output import save_figure_atomic

    fig = draw()
    try:
        return save_figure_atomic(fig, path, **{"dpi": 130, **kwargs})
    finally:
        plt.close(fig)

"""The CLI's plotting backend: it only writes files, so it draws with Agg.

Library modules never choose a matplotlib backend; the command line does, for itself.
"""

from __future__ import annotations

__all__ = ["pyplot"]


def pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg backend.

    matplotlib is imported here, on first use, so ``libra-opt --help`` starts at once.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt

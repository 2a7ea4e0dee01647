"""Doctests of the library draw plots off-screen (the library itself never picks a backend)."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

"""Parsing of the command-line values shared by the commands."""

from __future__ import annotations

from libra_opt.errors import InputError, short_repr

__all__ = ["parse_floats"]


def parse_floats(text: str, flag: str) -> list[float]:
    """Comma-separated numbers given to ``flag``; range checks are left to the caller.

    Examples
    --------
    >>> parse_floats("450, 50", "--bw")
    [450.0, 50.0]
    >>> parse_floats("450,abc", "--bw")
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: <cli>: --bw: expected comma-separated numbers, got '450,abc'
    """
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        vals = []
    if not vals:
        raise InputError(f"expected comma-separated numbers, got {short_repr(text)}",
                         source="<cli>", field=flag)
    return vals

"""Parsing of the command-line values shared by the commands."""

from __future__ import annotations

from libra_opt.errors import InputError, short_repr

__all__ = ["parse_floats", "parse_sets"]


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


def parse_sets(items: list[str] | None, flag: str = "--set") -> dict[str, str]:
    """``--set PATH=VALUE`` items as path -> value text (parsed against the path later).

    Examples
    --------
    >>> parse_sets(["fabric.hb_domain=16", "sum(bw) == 1000=1200"])
    {'fabric.hb_domain': '16', 'sum(bw) == 1000': '1200'}
    >>> parse_sets(["a=1", "a=2"])
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: <cli>: --set: 'a' is set twice
    """
    from libra_opt.explore.overrides import parse_assignment

    out: dict[str, str] = {}
    for text in items or ():
        path, value = parse_assignment(text, flag)
        if path in out:
            raise InputError(f"{short_repr(path, 80)} is set twice", source="<cli>", field=flag)
        out[path] = value
    return out

"""Money and HTML formatting shared by the notebook representations of scenarios and results."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

__all__ = ["format_usd", "html_table"]


def format_usd(x: float) -> str:
    """Dollars rounded to the unit with thousands separators: ``'$1,234'``."""
    return f"${x:,.0f}"


def html_table(
    header: Sequence[str], rows: Iterable[Sequence[str]], caption: str | None = None
) -> str:
    """An HTML ``<table>``: one header row, then one ``<tr>`` per row; all text escaped.

    Examples
    --------
    >>> html_table(["a", "b"], [["1", "<2>"]], caption="x & y")
    '<table><caption>x &amp; y</caption><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td>&lt;2&gt;</td></tr></tbody></table>'
    """
    esc = html.escape
    cap = "" if caption is None else f"<caption>{esc(caption)}</caption>"
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

"""User constraints: linear (in)equalities over bandwidth (GB/s per NPU), network cost ($)
and power (W), written as text (``"bw[0] >= bw[1]"``, ``"bw.node + bw.pod == 200"``,
``"cost <= 2e7"``, ``"sum(bw) == 1000"``) and parsed by a small recursive-descent parser
(no ``eval``); every error names the constraint and the column.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, NoReturn

import numpy as np

from libra_opt.cost.prices import CostCoefficients
from libra_opt.errors import InputError, short_repr
from libra_opt.fabric.dims import Fabric

__all__ = [
    "LinearConstraint",
    "parse_constraint",
    "Row",
    "constraint_rows",
    "MAX_CONSTRAINT_CHARS",
    "MAX_CONSTRAINT_DEPTH",
]

#: Longest constraint text (characters).
MAX_CONSTRAINT_CHARS = 10_000
#: Deepest nesting of parentheses and unary signs in a constraint (the parser recurses).
MAX_CONSTRAINT_DEPTH = 100

Sense = Literal["<=", ">=", "=="]
#: Comparison token -> sense (``=`` is accepted for ``==``).
_SENSE_OF_OP: dict[str, Sense] = {"<=": "<=", ">=": ">=", "==": "==", "=": "=="}

_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"
    r"|(?P<op><=|>=|==|=|<|>|[-+*/()\[\].]))"
)


@dataclass(frozen=True)
class LinearConstraint:
    """``bw_coef . B + cost_coef * cost + power_coef * power  (sense)  rhs``.

    Attributes
    ----------
    label : str
        Name shown in reports and infeasibility messages.
    bw_coef : tuple of float
        Coefficient of each dimension's bandwidth (GB/s).
    cost_coef, power_coef : float
        Coefficients of network cost ($) and power (W).
    sense : {'<=', '>=', '=='}
    rhs : float
    """

    label: str
    bw_coef: tuple[float, ...]
    cost_coef: float
    power_coef: float
    sense: Sense
    rhs: float


_Vec = tuple[float, ...] | None


def _unit(size: int, ones: Iterable[int]) -> tuple[float, ...]:
    hot = set(ones)
    return tuple(1.0 if i in hot else 0.0 for i in range(size))


def _axpy(a: _Vec, b: _Vec, s: float) -> _Vec:
    """``a + s b``."""
    if b is None:
        return a
    if a is None:
        a = (0.0,) * len(b)
    return tuple(x + s * y for x, y in zip(a, b, strict=True))


def _scale(a: _Vec, k: float, d: float = 1.0) -> _Vec:
    """``a k`` (or ``a / d``)."""
    if a is None:
        return None
    return tuple(x * k for x in a) if d == 1.0 else tuple(x / d for x in a)


def _nonzero(a: _Vec) -> bool:
    return a is not None and any(a)


class _Parser:
    def __init__(self, text: str, fabric: Fabric, field: str):
        self.text, self.fabric, self.field = text, fabric, field
        self.depth = 0
        self.tokens: list[tuple[str, str, int]] = []
        if len(text) > MAX_CONSTRAINT_CHARS:
            self.fail(f"{len(text)} characters; the limit is {MAX_CONSTRAINT_CHARS}")
        pos = 0
        stripped = text.rstrip()
        while pos < len(stripped):
            m = _TOKEN.match(stripped, pos)
            if not m or m.end() == pos:
                col = pos + len(stripped[pos:]) - len(stripped[pos:].lstrip()) + 1
                self.fail(f"unexpected character {stripped[col - 1]!r}", col)
            kind = m.lastgroup or "op"
            start = m.start(kind)
            self.tokens.append((kind, m.group(kind), start + 1))
            pos = m.end()
        self.i = 0

    def fail(self, msg: str, col: int | None = None) -> NoReturn:
        where = f" (column {col})" if col else ""
        raise InputError(f"constraint {short_repr(self.text, 120)}{where}: {msg}",
                         field=self.field)

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str, int]:
        tok = self.peek()
        if tok is None:
            self.fail("unexpected end of text")
        self.i += 1
        return tok

    def expect(self, value: str) -> None:
        tok = self.peek()
        if tok is None or tok[1] != value:
            self.fail(f"expected {value!r}", tok[2] if tok else len(self.text) + 1)
        self.i += 1

    # A linear expression: coefficient vector over [bw_0..bw_{D-1}, cost, power] + constant.
    # Vectors are tuples of floats (IEEE arithmetic, as numpy's), or None for all zeros:
    # the few operations a constraint needs cost less on tuples than on small arrays.
    def expr(self) -> tuple[_Vec, float]:
        coef, const = self.term()
        while (tok := self.peek()) is not None and tok[1] in "+-" and tok[0] == "op":
            self.i += 1
            c2, k2 = self.term()
            sign = 1.0 if tok[1] == "+" else -1.0
            coef, const = _axpy(coef, c2, sign), const + sign * k2
        return coef, const

    def term(self) -> tuple[_Vec, float]:
        coef, const = self.factor()
        while (tok := self.peek()) is not None and tok[1] in ("*", "/"):
            self.i += 1
            c2, k2 = self.factor()
            if tok[1] == "*":
                if _nonzero(coef) and _nonzero(c2):
                    self.fail("product of two variables is not linear", tok[2])
                if _nonzero(coef):
                    coef, const = _scale(coef, k2), const * k2
                else:
                    coef, const = _scale(c2, const), const * k2
            else:
                if _nonzero(c2):
                    self.fail("division by a variable is not linear", tok[2])
                if k2 == 0:
                    self.fail("division by zero", tok[2])
                coef, const = _scale(coef, 1.0, k2), const / k2
        return coef, const

    def factor(self) -> tuple[_Vec, float]:
        # Each nested parenthesis or unary sign recurses: bound the depth, never RecursionError.
        self.depth += 1
        try:
            return self._factor()
        finally:
            self.depth -= 1

    def _factor(self) -> tuple[_Vec, float]:
        if self.depth > MAX_CONSTRAINT_DEPTH:
            tok = self.peek()
            self.fail(f"nested more than {MAX_CONSTRAINT_DEPTH} levels deep (parentheses or "
                      "signs)", tok[2] if tok else None)
        n = self.fabric.n_dims
        tok = self.take()
        kind, val, col = tok
        if kind == "op" and val in "+-":
            c, k = self.factor()
            return (c, k) if val == "+" else (_scale(c, -1.0), -k)
        if kind == "num":
            return None, float(val)
        if kind == "op" and val == "(":
            c, k = self.expr()
            self.expect(")")
            return c, k
        if kind == "name":
            if val == "cost":
                return _unit(n + 2, [n]), 0.0
            if val == "power":
                return _unit(n + 2, [n + 1]), 0.0
            if val == "sum":
                self.expect("(")
                inner = self.take()
                if inner[1] != "bw":
                    self.fail("sum(...) takes only bw, as in sum(bw)", inner[2])
                self.expect(")")
                return _unit(n + 2, range(n)), 0.0
            if val == "bw":
                nxt = self.take()
                if nxt[1] == "[":
                    idx_tok = self.take()
                    if idx_tok[0] != "num" or not idx_tok[1].isdigit() or len(idx_tok[1]) > 9:
                        self.fail("expected a dimension index, as in bw[0]", idx_tok[2])
                    idx = int(idx_tok[1])
                    if idx >= n:
                        self.fail(f"no dimension {idx}; the fabric has {n} "
                                  f"(bw[0]..bw[{n - 1}])", idx_tok[2])
                    self.expect("]")
                elif nxt[1] == ".":
                    name_tok = self.take()
                    if name_tok[0] != "name" or name_tok[1] not in self.fabric.names:
                        self.fail(f"no dimension named {name_tok[1]!r}; names: "
                                  f"{', '.join(self.fabric.names)}", name_tok[2])
                    idx = self.fabric.index(name_tok[1])
                else:
                    self.fail("expected bw[i] or bw.<dimension name>", nxt[2])
                return _unit(n + 2, [idx]), 0.0
            self.fail(f"unknown name {val!r}; use bw[i], bw.<dimension>, sum(bw), cost or "
                      "power", col)
        self.fail(f"unexpected {val!r}", col)


def parse_constraint(text: str, fabric: Fabric, *, label: str | None = None,
                     field: str = "constraints.linear") -> LinearConstraint:
    """Parse one linear constraint written as text (``"bw[0] >= 2 * bw.pod"``; one of
    ``<=``, ``>=``, ``==``, ``=`` meaning ``==``) on ``fabric``, variables moved to the left
    and constants to the right; ``label`` defaults to the text, ``field`` is named in errors.

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim
    >>> f = Fabric((Dim("node", "ring", 4, "A"), Dim("pod", "switch", 8, "B")))
    >>> c = parse_constraint("2*bw.pod - 0.5 * bw[0] <= 10 + bw[0]", f)
    >>> c.bw_coef, c.sense, c.rhs
    ((-1.5, 2.0), '<=', 10.0)
    """
    if not isinstance(text, str) or not text.strip():
        raise InputError("a constraint must be non-empty text", field=field)
    p = _Parser(text, fabric, field)
    ops = [t for t in p.tokens if t[0] == "op" and t[1] in ("<=", ">=", "==", "=", "<", ">")]
    if len(ops) != 1:
        p.fail("expected exactly one of <=, >=, ==" if not ops else "only one comparison allowed",
               ops[1][2] if len(ops) > 1 else None)
    op = ops[0]
    if op[1] in ("<", ">"):
        p.fail(f"strict {op[1]!r} is not supported; use {op[1]}=", op[2])
    lhs_c, lhs_k = p.expr()
    tok = p.take()
    if tok is not op:
        p.fail(f"unexpected {tok[1]!r}", tok[2])
    rhs_c, rhs_k = p.expr()
    if (extra := p.peek()) is not None:
        p.fail(f"unexpected {extra[1]!r}", extra[2])
    coef = _axpy(lhs_c, rhs_c, -1.0)
    rhs = rhs_k - lhs_k
    if coef is None or not _nonzero(coef):
        p.fail("no variable left after simplification (it is always true or always false)")
    if not math.isfinite(rhs) or not all(map(math.isfinite, coef)):
        p.fail("coefficients must be finite")
    n = fabric.n_dims
    return LinearConstraint(
        label=label or " ".join(text.split()), bw_coef=tuple(float(x) + 0.0 for x in coef[:n]),
        cost_coef=float(coef[n]), power_coef=float(coef[n + 1]), sense=_SENSE_OF_OP[op[1]],
        rhs=float(rhs))


@dataclass(frozen=True)
class Row:
    """A constraint in bandwidth only: ``a . B (sense) rhs``, with its label."""

    label: str
    a: np.ndarray
    sense: Sense
    rhs: float


def constraint_rows(constraints: Sequence[LinearConstraint], coeffs: CostCoefficients
                    ) -> tuple[Row, ...]:
    """Substitute ``cost = kappa . B + F`` and ``power = pi . B + F_w`` into each constraint
    (``F``, ``F_w``: the fixed parts, :attr:`~libra_opt.cost.prices.CostCoefficients.fixed_usd`
    and ``fixed_w``, moved to the right-hand side).

    Raises
    ------
    InputError
        If a constraint uses ``power`` and the cost model has no power table.
    """
    rows = []
    kappa = coeffs.usd_per_gbps
    pi = coeffs.w_per_gbps
    for c in constraints:
        a = np.array(c.bw_coef, dtype=float) + c.cost_coef * kappa
        rhs = c.rhs - c.cost_coef * coeffs.fixed_usd
        if c.power_coef:
            if pi is None:
                raise InputError(f"constraint {c.label!r} uses power, but no power model was "
                                 "given", field="power_model")
            a = a + c.power_coef * pi
            rhs -= c.power_coef * coeffs.fixed_w
        rows.append(Row(c.label, a, c.sense, rhs))
    return tuple(rows)

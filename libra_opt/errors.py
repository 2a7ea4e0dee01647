"""The exception hierarchy of libra_opt.

Every error the package raises on purpose derives from :class:`LibraOptError`, so a caller
(and the CLI) can catch one type. Input errors carry the file, the field and what was expected.
"""

from __future__ import annotations

__all__ = [
    "LibraOptError",
    "InputError",
    "InfeasibleDesignError",
    "UnboundedDesignError",
    "SolverError",
    "VerificationError",
]


class LibraOptError(Exception):
    """Base class of every error raised by libra_opt."""


class InputError(LibraOptError, ValueError):
    """A descriptor, scenario or argument is malformed.

    Parameters
    ----------
    message : str
        What is wrong and what was expected.
    source : str, optional
        The file (or ``"<api>"``/``"<cli>"``) the bad value came from.
    field : str, optional
        Dotted path of the offending field, e.g. ``"fabric.dims[2].size"``.
    """

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None):
        self.message = message
        self.source = source
        self.field = field
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """The error as one line: ``file: field: message``."""
        parts = [p for p in (self.source, self.field) if p]
        prefix = ": ".join(parts)
        text = " ".join(self.message.split())
        return f"{prefix}: {text}" if prefix else text


class InfeasibleDesignError(LibraOptError):
    """No bandwidth allocation satisfies the constraints.

    Attributes
    ----------
    constraints : tuple of str
        Labels of an irreducible set of constraints that cannot hold together.
    """

    def __init__(self, message: str, constraints: tuple[str, ...] = ()):
        self.constraints = tuple(constraints)
        super().__init__(" ".join(message.split()))


class UnboundedDesignError(LibraOptError):
    """The objective has no attained optimum (e.g. nothing bounds bandwidth away from zero)."""


class SolverError(LibraOptError):
    """The numerical solver failed or returned an unusable status."""


class VerificationError(SolverError):
    """The independent numpy re-evaluation disagrees with the solver's answer."""

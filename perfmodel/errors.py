"""The exception tree of perfmodel.

Every error a user can cause (bad file, bad option, unknown name) is a
:class:`PerfmodelError`; the CLI turns it into a one-paragraph message and exit
code 2, the app into ``st.error``. Anything else is a bug and is allowed to
surface with its traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

__all__ = [
    "PerfmodelError",
    "ValidationError",
    "ImportFormatError",
    "UnknownNameError",
    "StoreError",
    "NotFoundError",
    "Problem",
    "as_written",
    "problems_from_pydantic",
]


class PerfmodelError(Exception):
    """Base class of every error caused by user input or configuration."""


def as_written(value: object) -> str:
    """A value for a message, close to how the user wrote it: ``-4``, ``0.5``, ``inf``, ``'abc'``
    (``7`` rather than ``7.0``, never a numpy repr)."""
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        value = value.item()  # np.float64(-4.0) -> -4.0; a numpy repr means nothing to a user
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, int | str):
        return repr(value)
    return repr(str(value))


class Problem:
    """One located problem: where (file, row, column) and what was expected.

    Parameters
    ----------
    message
        What is wrong and what was expected, in plain words.
    file, row, column
        Where, as precisely as known. ``row`` is 1-based as a user would count
        it in the source (the data row for CSV, the record for JSON lists).
    """

    __slots__ = ("message", "file", "row", "column")

    def __init__(self, message: str, *, file: str | None = None, row: int | None = None,
                 column: str | None = None) -> None:
        self.message = message
        self.file = file
        self.row = row
        self.column = column

    def where(self) -> str:
        parts = []
        if self.file:
            parts.append(str(self.file))
        if self.row is not None:
            parts.append(f"row {self.row}")
        if self.column:
            parts.append(f"column {self.column!r}")
        return ", ".join(parts)

    def __str__(self) -> str:
        w = self.where()
        return f"{w}: {self.message}" if w else self.message

    def __repr__(self) -> str:
        return f"Problem({str(self)!r})"


def _summarise(problems: Sequence[Problem], limit: int) -> str:
    lines = [str(p) for p in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"... and {len(problems) - limit} more problem(s)")
    return "\n".join(f"  - {line}" for line in lines)


class ValidationError(PerfmodelError):
    """A table or a set of options failed validation; lists every problem found.

    Attributes
    ----------
    problems
        Every :class:`Problem`, in the order found.
    """

    def __init__(self, headline: str, problems: Iterable[Problem] = (), *, limit: int = 20) -> None:
        self.problems: list[Problem] = list(problems)
        self.headline = headline
        body = _summarise(self.problems, limit)
        super().__init__(f"{headline}\n{body}" if body else headline)


class ImportFormatError(PerfmodelError):
    """A file could not be read as any (or the requested) benchmark format."""


class UnknownNameError(PerfmodelError, KeyError):
    """A hardware, model or option name is not known; the message lists close matches."""

    def __init__(self, kind: str, name: str, suggestions: Sequence[str] = (), *, hint: str = "") -> None:
        self.kind = kind
        self.name = name
        self.suggestions = list(suggestions)
        msg = f"unknown {kind} {name!r}"
        if self.suggestions:
            msg += "; closest known: " + ", ".join(self.suggestions)
        if hint:
            msg += f". {hint}"
        super().__init__(msg)

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class StoreError(PerfmodelError):
    """The data store could not complete an operation (nothing was changed)."""


class NotFoundError(StoreError, KeyError):
    """A dataset, model or analysis id/name does not exist in the store."""

    def __str__(self) -> str:
        return str(self.args[0])


def problems_from_pydantic(exc: Any, source: str | None, *, extra: str,
                           missing: Callable[[str], str] | None = None, empty_loc: str = "") -> list[Problem]:
    """One :class:`Problem` per error of a pydantic ``ValidationError``, naming the option in ``column``.

    Parameters
    ----------
    exc
        The pydantic ``ValidationError``.
    source
        File name for messages.
    extra
        The message for an option the model does not have.
    missing
        Option name -> the message for a required option left out; None keeps pydantic's.
    empty_loc
        The column named by an error of the whole model (empty location).

    Returns
    -------
    list of Problem
    """
    problems = []
    for e in exc.errors():
        loc = ".".join(str(x) for x in e["loc"]) or empty_loc
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = extra
        elif e["type"] == "missing":
            if missing is not None:
                msg = missing(loc)
        elif "input" in e and e["type"] != "value_error":
            msg += f" (got {e['input']!r})"
        problems.append(Problem(msg, file=source, column=loc))
    return problems

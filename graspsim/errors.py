"""Errors graspsim raises on purpose.  Each names what is wrong and where."""
from __future__ import annotations

import difflib
from typing import Iterable


class ModelError(ValueError):
    """A model file (robot, object or world YAML, or a mesh it names) is invalid.

    Attributes: ``file`` (path or None), ``line`` (1-based or None), ``field`` (dotted path such as
    ``joints[2].limits``) and ``problem`` (what is wrong).  ``str(err)`` is one line:
    ``FILE:LINE: FIELD: PROBLEM``.
    """

    def __init__(self, problem: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None):
        self.file = str(file) if file is not None else None
        self.line = line
        self.field = field
        self.problem = problem
        super().__init__(self._format())

    def _format(self) -> str:
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line else "") + ": "
        fld = f"{self.field}: " if self.field else ""
        return f"{where}{fld}{self.problem}"


class ModelErrors(ModelError):
    """Several model problems found in one validation pass (``errors`` holds each)."""

    def __init__(self, errors: list[ModelError]):
        self.errors = list(errors)
        first = errors[0]
        super().__init__(first.problem, file=first.file, line=first.line, field=first.field)

    def _format(self) -> str:  # one line per problem
        return "\n".join(e._format() for e in self.errors) if hasattr(self, "errors") else super()._format()


class ModelWarning(UserWarning):
    """A model loads, but something was substituted (e.g. an open mesh replaced by its convex hull).

    The message is one line, ``FILE:LINE: element: what was done``.
    """


class SimulationError(RuntimeError):
    """The time stepper could not advance the state (e.g. an unsolvable LCP or a non-finite state).

    The simulator's state is left as it was before the failed step, so the caller can save it.
    """


class CollisionError(RuntimeError):
    """Contact localisation failed, e.g. bodies already interpenetrate and cannot be separated."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` or an empty string."""
    m = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{m[0]}'?)" if m else ""

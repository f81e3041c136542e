"""Errors graspsim raises on purpose.  Each names what is wrong and where."""
from __future__ import annotations

import difflib
import unicodedata
from typing import Iterable

#: Unicode categories never shown raw in a message: control (C0/C1, e.g. ESC), format (e.g. the
#: right-to-left override U+202E, zero-width characters), surrogates, private use, unassigned,
#: line and paragraph separators.  They could rewrite the terminal or hide text.
UNSAFE_CATEGORIES = frozenset(("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"))


def unsafe_char(text: str) -> str | None:
    """The first character of ``text`` that must not be shown raw (see :data:`UNSAFE_CATEGORIES`), or None."""
    if text.isascii():
        for ch in text:
            if ch < " " or ch == "\x7f":
                return ch
        return None
    for ch in text:
        if unicodedata.category(ch) in UNSAFE_CATEGORIES:
            return ch
    return None


def escape(text: str, limit: int | None = None) -> str:
    """``text`` safe for one terminal line: unsafe characters as ``\\x1b`` / ``\\u202e`` escapes;
    longer than ``limit`` characters: its head and tail around ``...(N characters)...``."""
    text = str(text)
    if limit is not None and len(text) > limit:
        k = max(limit // 2 - 12, 4)
        text = f"{text[:k]}...({len(text)} characters)...{text[-k:]}"
    if unsafe_char(text) is None:
        return text
    out = []
    for ch in text:
        if (ch < " " or ch == "\x7f") or (not ch.isascii() and unicodedata.category(ch) in UNSAFE_CATEGORIES):
            o = ord(ch)
            out.append(f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}")
        else:
            out.append(ch)
    return "".join(out)


def quote(text, limit: int = 60) -> str:
    """``'text'`` for a message: escaped (see :func:`escape`) and shortened to about ``limit`` characters."""
    return f"'{escape(str(text), limit)}'"


class ModelError(ValueError):
    """A model file (robot, object or world YAML, or a mesh it names) is invalid.

    Attributes: ``file`` (path or None), ``line`` (1-based or None), ``field`` (dotted path such as
    ``joints[2].limits``) and ``problem`` (what is wrong).  ``str(err)`` is one line:
    ``FILE:LINE: FIELD: PROBLEM``, with control and other invisible characters escaped and
    overlong parts shortened, so a hostile file cannot rewrite the terminal.
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
            where = escape(self.file, 300) + (f":{self.line}" if self.line else "") + ": "
        fld = f"{escape(self.field, 200)}: " if self.field else ""
        return f"{where}{fld}{escape(self.problem, 1000)}"


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
    word = str(word)
    if len(word) > 100:     # difflib is quadratic; nobody mistypes a 100-character name
        return ""
    m = difflib.get_close_matches(word, [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {quote(m[0])}?)" if m else ""


def caused_by_interrupt(e: BaseException) -> bool:
    """Was ``e`` caused (directly or through its ``__cause__``/``__context__`` chain) by a
    KeyboardInterrupt?  A Ctrl-C that lands while a compiled (numba) kernel calls back into Python
    surfaces as the kernel's SystemError ("returned a result with an exception set") with the
    KeyboardInterrupt as its cause: it is the user's stop, not a failure of the computation."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


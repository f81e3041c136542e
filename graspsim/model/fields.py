"""Typed, unit-aware reading of YAML model fields that collects every problem it finds.

A :class:`Reader` walks one file.  Each accessor records a :class:`ModelError` (file, line, dotted
field path, what is wrong) instead of raising, so ``graspsim validate`` can report all problems of a
file at once; :meth:`Reader.raise_if_errors` raises them together at the end.
"""
from __future__ import annotations

import math
import re
from typing import Iterable

import numpy as np

from ..errors import ModelError, ModelErrors, did_you_mean, quote, unsafe_char
from .. import spatial
from .bounds import MAX_DESCRIPTION, MAX_NAME, MAX_PATH, POSITION, TURN, describe
from .yamlio import Overflow, YList, YMap

LENGTH_UNITS = {"m": 1.0, "cm": 0.01, "mm": 0.001, "um": 1e-6, "in": 0.0254}
ANGLE_UNITS = {"rad": 1.0, "deg": math.pi / 180.0}
_VALUE_WITH_UNIT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]+)\s*$")
#: most problems recorded per file (a hostile file could otherwise produce millions of lines)
MAX_ERRORS = 100
# numbers YAML 1.1 reads but a model refuses (see graspsim.model.yamlio): why, for the message
_YAML11_NUMBERS = (
    (re.compile(r"^[-+]?0[xX][0-9a-fA-F_]+$"), "hexadecimal numbers are not accepted; write it in decimal"),
    (re.compile(r"^[-+]?0[oO]?[0-9_]+$"), "a leading zero is ambiguous (octal in YAML 1.1, decimal in YAML 1.2); "
                                          "write the number without it"),
    (re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$"), "base-60 numbers such as 1:30 (YAML 1.1) "
                                                                       "are not accepted; write it in decimal"),
    (re.compile(r"^(?=.*_)[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?$"), "digit separators '_' are not accepted"),
    (re.compile(r"^[-+]?0[bB][01_]+$"), "binary numbers are not accepted; write it in decimal"),
)


class Reader:
    """Reads fields of one YAML file.  ``length_scale``/``angle_scale`` convert file units to SI.

    ``max_text``: longest string :meth:`string` accepts unless told otherwise (model files pass
    :data:`~graspsim.model.bounds.MAX_NAME` for their names); a ``description`` may be longer and
    hold newlines and tabs.
    """

    def __init__(self, file: str, *, max_text: int = MAX_PATH):
        self.max_text = max_text
        self.file = str(file)
        self.errors: list[ModelError] = []
        self.length_scale = 1.0
        self.angle_scale = 1.0

    # -- error bookkeeping -------------------------------------------------------------------
    def error(self, line: int | None, field: str, problem: str) -> None:
        if len(self.errors) >= MAX_ERRORS:
            self.dropped = getattr(self, "dropped", 0) + 1
            return
        self.errors.append(ModelError(problem, file=self.file, line=line, field=field))

    def suggest(self, word, choices) -> str:
        """`` (did you mean 'x'?)`` while problems are still being recorded (difflib is slow: a
        hostile file with 100,000 unknown keys must not compute 100,000 suggestions)."""
        return "" if len(self.errors) >= MAX_ERRORS else did_you_mean(str(word), choices)

    def raise_if_errors(self) -> None:
        errs = list(self.errors)
        if getattr(self, "dropped", 0):
            errs.append(ModelError(f"{self.dropped} more problems not shown (only the first {MAX_ERRORS} are)",
                                   file=self.file))
        if len(errs) == 1:
            raise errs[0]
        if errs:
            raise ModelErrors(errs)

    # -- structure ---------------------------------------------------------------------------
    def mapping(self, value, field: str, line: int | None) -> YMap | None:
        if isinstance(value, YMap):
            return value
        self.error(line, field, f"expected a mapping (key: value pairs), got {_describe(value)}")
        return None

    def sequence(self, value, field: str, line: int | None) -> YList | None:
        if isinstance(value, YList):
            return value
        self.error(line, field, f"expected a list, got {_describe(value)}")
        return None

    def check_keys(self, m: YMap, field: str, allowed: Iterable[str], required: Iterable[str] = ()) -> None:
        allowed = list(allowed)
        for k in m:
            if k not in allowed:
                self.error(m.line_of(k), _join(field, str(k)),
                           f"unknown key {quote(k)}{self.suggest(str(k), allowed)}; allowed: {', '.join(allowed)}")
        for k in required:
            if k not in m:
                self.error(m.line, _join(field, k), f"missing required key '{k}'")

    # -- scalars -----------------------------------------------------------------------------
    def string(self, m: YMap, key: str, field: str, *, required: bool = False, default=None,
               choices: Iterable[str] | None = None, max_len: int | None = None,
               allow: str | None = None) -> str | None:
        """A non-empty string of at most ``max_len`` characters without control or invisible
        characters (those in ``allow``, e.g. a newline in a description, excepted)."""
        if key not in m:
            if required:
                self.error(m.line, _join(field, key), f"missing required key '{key}'")
            return default
        v = m[key]
        f = _join(field, key)
        if not isinstance(v, str) or not v.strip():
            self.error(m.line_of(key), f, f"expected a non-empty string, got {_describe(v)}")
            return default
        if max_len is None:
            max_len = MAX_DESCRIPTION if key == "description" else self.max_text
        if allow is None:
            allow = "\n\t" if key == "description" else ""
        problem = text_problem(v, max_len, allow)
        if problem:
            self.error(m.line_of(key), f, problem)
            return default
        if choices is not None:
            choices = list(choices)
            if v not in choices:
                self.error(m.line_of(key), f, f"{quote(v)} is not one of {', '.join(choices)}{self.suggest(v, choices)}")
                return default
        return v

    def number(self, m: YMap, key: str, field: str, *, required: bool = False, default=None,
               unit: str | None = None, positive: bool = False, nonnegative: bool = False,
               bounds: tuple | None = None) -> float | None:
        """A finite number; ``unit`` 'length' or 'angle' converts to SI and accepts '25 mm' strings;
        ``bounds`` (see :mod:`graspsim.model.bounds`) is the range of the SI value."""
        if key not in m:
            if required:
                self.error(m.line, _join(field, key), f"missing required key '{key}'")
            return default
        v = self.scalar(m[key], _join(field, key), m.line_of(key), unit)
        if v is None:
            return default
        f = _join(field, key)
        raw = m[key]
        # the value as the file wrote it (in its units: 'clearance: -5' in a file in mm is -5, not -0.005)
        shown = raw if isinstance(raw, str) else f"{float(raw):g}"
        if positive and not v > 0:
            self.error(m.line_of(key), f, f"must be > 0, got {shown}")
            return default
        if nonnegative and not v >= 0:
            self.error(m.line_of(key), f, f"must be >= 0, got {shown}")
            return default
        if bounds is not None and not self.in_bounds(v, bounds, f, m.line_of(key)):
            return default
        return v

    def in_bounds(self, v: float, bounds: tuple, field: str, line: int | None) -> bool:
        """Check ``v`` (SI) against ``bounds``; record an error naming the range if it is outside."""
        lo, hi, unit, low_open = bounds
        if (v > lo if low_open else v >= lo) and v <= hi:
            return True
        # (in degrees it would fit: the usual slip in a file whose angles are radians)
        hint = degrees_hint(v) if unit == "rad" and self.angle_scale == 1.0 and lo <= math.radians(v) <= hi else ""
        self.error(line, field, f"must be within {describe(bounds)}, got {v:g}{' ' + unit if unit else ''}{hint}")
        return False

    def scalar(self, v, field: str, line: int | None, unit: str | None = None) -> float | None:
        scale = self._scale(unit)
        if isinstance(v, bool):
            self.error(line, field, f"expected a number, got {_describe(v)}")
            return None
        if isinstance(v, (int, float)):
            try:
                x = float(v) * scale
            except OverflowError:        # an int beyond the float range (e.g. from a dict)
                x = math.inf
        elif isinstance(v, str) and unit is not None and len(v) <= 64 and (mt := _VALUE_WITH_UNIT.match(v)):
            table = LENGTH_UNITS if unit == "length" else ANGLE_UNITS
            u = mt.group(2)
            if u not in table:
                self.error(line, field, f"unknown {unit} unit '{u}'{self.suggest(u, table)}; use one of {', '.join(table)}")
                return None
            x = float(mt.group(1)) * table[u]
        else:
            hint = ""
            if isinstance(v, str) and len(v) <= 64:
                hint = next((f" ({why})" for rx, why in _YAML11_NUMBERS if rx.match(v.strip())), "")
            self.error(line, field, f"expected a number, got {_describe(v)}{hint}")
            return None
        if not math.isfinite(x):
            self.error(line, field, "must be a finite number, got " + (
                "NaN" if math.isnan(x) else "a number beyond the floating-point range (|x| > 1.8e308)"
                if isinstance(v, Overflow) or not (isinstance(v, float) and math.isinf(v)) else "infinity"))
            return None
        return x

    def vector(self, m: YMap, key: str, field: str, n: int, *, required: bool = False, default=None,
               unit: str | None = None, nonzero: bool = False, bounds: tuple | None = None) -> np.ndarray | None:
        if key not in m:
            if required:
                self.error(m.line, _join(field, key), f"missing required key '{key}'")
            return None if default is None else np.asarray(default, dtype=float)
        return self.vector_value(m[key], _join(field, key), m.line_of(key), n, unit=unit, nonzero=nonzero,
                                 default=default, bounds=bounds)

    def vector_value(self, v, field: str, line: int | None, n: int, *, unit: str | None = None,
                     nonzero: bool = False, default=None, bounds: tuple | None = None) -> np.ndarray | None:
        """A list of ``n`` finite numbers (SI), each within ``bounds`` if given."""
        if not isinstance(v, YList) or len(v) != n:
            self.error(line, field, f"expected a list of {n} numbers, got {_describe(v)}")
            return None if default is None else np.asarray(default, dtype=float)
        out = []
        for i, x in enumerate(v):
            s = self.scalar(x, f"{field}[{i}]", v.line_of(i), unit)
            if s is None or (bounds is not None and not self.in_bounds(s, bounds, f"{field}[{i}]", v.line_of(i))):
                return None if default is None else np.asarray(default, dtype=float)
            out.append(s)
        arr = np.array(out, dtype=float)
        if nonzero and not np.linalg.norm(arr) > 1e-12:
            self.error(line, field, "must not be the zero vector")
            return None if default is None else np.asarray(default, dtype=float)
        return arr

    def _scale(self, unit: str | None) -> float:
        if unit == "length":
            return self.length_scale
        if unit == "angle":
            return self.angle_scale
        return 1.0

    # -- units and poses ---------------------------------------------------------------------
    def unit_name(self, unit: str) -> str:
        """The name of the file's ``unit`` ("length" or "angle"): 'mm', 'deg', ..."""
        table, scale = (ANGLE_UNITS, self.angle_scale) if unit == "angle" else (LENGTH_UNITS, self.length_scale)
        return next((k for k, v in table.items() if v == scale), "")

    def read_units(self, m: YMap) -> None:
        """Top-level ``units: mm`` or ``units: {length: mm, angle: deg}`` (default m and rad)."""
        if "units" not in m:
            return
        u = m["units"]
        line = m.line_of("units")
        if isinstance(u, str):
            u = {("angle" if u in ANGLE_UNITS else "length"): u}
        elif not isinstance(u, YMap):
            self.error(line, "units", f"expected e.g. 'mm' or {{length: mm, angle: deg}}, got {_describe(u)}")
            return
        else:
            self.check_keys(u, "units", ["length", "angle"])
        for key, table in (("length", LENGTH_UNITS), ("angle", ANGLE_UNITS)):
            if key not in u:
                continue
            v = u[key]
            if isinstance(v, str) and v in table:
                if key == "length":
                    self.length_scale = table[v]
                else:
                    self.angle_scale = table[v]
            else:
                what = f"unknown {key} unit {quote(v)}{self.suggest(v, table)}" if isinstance(v, str) \
                    else f"expected a {key} unit, got {_describe(v)}"
                self.error(line, f"units.{key}", f"{what}; use one of {', '.join(table)}")

    def pose(self, m: YMap, key: str, field: str) -> np.ndarray:
        """``{xyz: [...], rpy: [...]}`` or ``{xyz: [...], quat: [w, x, y, z]}`` -> 4x4 (identity if absent)."""
        if key not in m:
            return np.eye(4)
        f = _join(field, key)
        p = self.mapping(m[key], f, m.line_of(key))
        if p is None:
            return np.eye(4)
        self.check_keys(p, f, ["xyz", "rpy", "quat"])
        xyz = self.vector(p, "xyz", f, 3, unit="length", default=np.zeros(3), bounds=POSITION)
        if "rpy" in p and "quat" in p:
            self.error(p.line, f, "give either 'rpy' or 'quat', not both")
        R = np.eye(3)
        if "rpy" in p:
            rpy = self.vector(p, "rpy", f, 3, unit="angle", bounds=TURN)
            if rpy is not None:
                R = spatial.rpy_to_matrix(rpy)
        elif "quat" in p:
            q = self.vector(p, "quat", f, 4, nonzero=True, bounds=(-2.0, 2.0, "", False))
            if q is not None:
                n = np.linalg.norm(q)
                if abs(n - 1.0) > 1e-3:
                    self.error(p.line_of("quat"), _join(f, "quat"),
                               f"quaternion [w, x, y, z] must have unit length, has {n:.6g}")
                R = spatial.quat_to_matrix(q / n)
        return spatial.transform(R, xyz if xyz is not None else np.zeros(3))


def degrees_hint(v: float) -> str:
    """What to add to a message about the angle ``v`` read as radians that fits in degrees."""
    return f"; angles are in radians unless the file says units: {{angle: deg}} (or write '{v:g} deg')"


def _join(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def _describe(v) -> str:
    if v is None:
        return "nothing"
    if isinstance(v, bool):
        return f"the boolean {v}"
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        return f"a list of {len(v)}"
    if isinstance(v, str):
        return f"the string {quote(v, 40)}"
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else "infinity"
    return quote(repr(v), 40)[1:-1]


def text_problem(v: str, max_len: int = MAX_NAME, allow: str = "") -> str | None:
    """What is wrong with ``v`` as a name or other text of a model (None if nothing)."""
    if len(v) > max_len:
        return f"longer than {max_len} characters ({len(v)})"
    bad = unsafe_char(v.translate({ord(c): None for c in allow}) if allow else v)
    if bad is not None:
        return (f"contains the control or invisible character U+{ord(bad):04X}; names and texts must be "
                "printable")
    return None

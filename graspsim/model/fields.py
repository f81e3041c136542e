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

from ..errors import ModelError, ModelErrors, did_you_mean
from .. import spatial
from .yamlio import YList, YMap

LENGTH_UNITS = {"m": 1.0, "cm": 0.01, "mm": 0.001, "um": 1e-6, "in": 0.0254}
ANGLE_UNITS = {"rad": 1.0, "deg": math.pi / 180.0}
_VALUE_WITH_UNIT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]+)\s*$")


class Reader:
    """Reads fields of one YAML file.  ``length_scale``/``angle_scale`` convert file units to SI."""

    def __init__(self, file: str):
        self.file = str(file)
        self.errors: list[ModelError] = []
        self.length_scale = 1.0
        self.angle_scale = 1.0

    # -- error bookkeeping -------------------------------------------------------------------
    def error(self, line: int | None, field: str, problem: str) -> None:
        self.errors.append(ModelError(problem, file=self.file, line=line, field=field))

    def raise_if_errors(self) -> None:
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise ModelErrors(self.errors)

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
                           f"unknown key '{k}'{did_you_mean(str(k), allowed)}; allowed: {', '.join(allowed)}")
        for k in required:
            if k not in m:
                self.error(m.line, _join(field, k), f"missing required key '{k}'")

    # -- scalars -----------------------------------------------------------------------------
    def string(self, m: YMap, key: str, field: str, *, required: bool = False, default=None,
               choices: Iterable[str] | None = None) -> str | None:
        if key not in m:
            if required:
                self.error(m.line, _join(field, key), f"missing required key '{key}'")
            return default
        v = m[key]
        f = _join(field, key)
        if not isinstance(v, str) or not v.strip():
            self.error(m.line_of(key), f, f"expected a non-empty string, got {_describe(v)}")
            return default
        if choices is not None:
            choices = list(choices)
            if v not in choices:
                self.error(m.line_of(key), f, f"'{v}' is not one of {', '.join(choices)}{did_you_mean(v, choices)}")
                return default
        return v

    def number(self, m: YMap, key: str, field: str, *, required: bool = False, default=None,
               unit: str | None = None, positive: bool = False, nonnegative: bool = False) -> float | None:
        """A finite number; ``unit`` 'length' or 'angle' converts to SI and accepts '25 mm' strings."""
        if key not in m:
            if required:
                self.error(m.line, _join(field, key), f"missing required key '{key}'")
            return default
        v = self.scalar(m[key], _join(field, key), m.line_of(key), unit)
        if v is None:
            return default
        f = _join(field, key)
        if positive and not v > 0:
            self.error(m.line_of(key), f, f"must be > 0, got {v:g}")
            return default
        if nonnegative and not v >= 0:
            self.error(m.line_of(key), f, f"must be >= 0, got {v:g}")
            return default
        return v

    def scalar(self, v, field: str, line: int | None, unit: str | None = None) -> float | None:
        scale = self._scale(unit)
        if isinstance(v, bool):
            self.error(line, field, f"expected a number, got {_describe(v)}")
            return None
        if isinstance(v, (int, float)):
            x = float(v) * scale
        elif isinstance(v, str) and unit is not None and (mt := _VALUE_WITH_UNIT.match(v)):
            table = LENGTH_UNITS if unit == "length" else ANGLE_UNITS
            u = mt.group(2)
            if u not in table:
                self.error(line, field, f"unknown {unit} unit '{u}'{did_you_mean(u, table)}; use one of {', '.join(table)}")
                return None
            x = float(mt.group(1)) * table[u]
        else:
            self.error(line, field, f"expected a number, got {_describe(v)}")
            return None
        if not math.isfinite(x):
            self.error(line, field, f"must be finite, got {v}")
            return None
        return x

    def vector(self, m: YMap, key: str, field: str, n: int, *, required: bool = False, default=None,
               unit: str | None = None, nonzero: bool = False) -> np.ndarray | None:
        if key not in m:
            if required:
                self.error(m.line, _join(field, key), f"missing required key '{key}'")
            return None if default is None else np.asarray(default, dtype=float)
        return self.vector_value(m[key], _join(field, key), m.line_of(key), n, unit=unit, nonzero=nonzero,
                                 default=default)

    def vector_value(self, v, field: str, line: int | None, n: int, *, unit: str | None = None,
                     nonzero: bool = False, default=None) -> np.ndarray | None:
        if not isinstance(v, YList) or len(v) != n:
            self.error(line, field, f"expected a list of {n} numbers, got {_describe(v)}")
            return None if default is None else np.asarray(default, dtype=float)
        out = []
        for i, x in enumerate(v):
            s = self.scalar(x, f"{field}[{i}]", v.line_of(i), unit)
            if s is None:
                return None if default is None else np.asarray(default, dtype=float)
            out.append(s)
        arr = np.array(out)
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
        if "length" in u:
            if u["length"] in LENGTH_UNITS:
                self.length_scale = LENGTH_UNITS[u["length"]]
            else:
                self.error(line, "units.length", f"unknown length unit '{u['length']}'"
                           f"{did_you_mean(str(u['length']), LENGTH_UNITS)}; use one of {', '.join(LENGTH_UNITS)}")
        if "angle" in u:
            if u["angle"] in ANGLE_UNITS:
                self.angle_scale = ANGLE_UNITS[u["angle"]]
            else:
                self.error(line, "units.angle", f"unknown angle unit '{u['angle']}'"
                           f"{did_you_mean(str(u['angle']), ANGLE_UNITS)}; use one of {', '.join(ANGLE_UNITS)}")

    def pose(self, m: YMap, key: str, field: str) -> np.ndarray:
        """``{xyz: [...], rpy: [...]}`` or ``{xyz: [...], quat: [w, x, y, z]}`` -> 4x4 (identity if absent)."""
        if key not in m:
            return np.eye(4)
        f = _join(field, key)
        p = self.mapping(m[key], f, m.line_of(key))
        if p is None:
            return np.eye(4)
        self.check_keys(p, f, ["xyz", "rpy", "quat"])
        xyz = self.vector(p, "xyz", f, 3, unit="length", default=np.zeros(3))
        if "rpy" in p and "quat" in p:
            self.error(p.line, f, "give either 'rpy' or 'quat', not both")
        R = np.eye(3)
        if "rpy" in p:
            rpy = self.vector(p, "rpy", f, 3, unit="angle")
            if rpy is not None:
                R = spatial.rpy_to_matrix(rpy)
        elif "quat" in p:
            q = self.vector(p, "quat", f, 4, nonzero=True)
            if q is not None:
                n = np.linalg.norm(q)
                if abs(n - 1.0) > 1e-3:
                    self.error(p.line_of("quat"), _join(f, "quat"),
                               f"quaternion [w, x, y, z] must have unit length, has {n:.6g}")
                R = spatial.quat_to_matrix(q / n)
        return spatial.transform(R, xyz if xyz is not None else np.zeros(3))


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
        return f"the string '{v}'"
    return repr(v)

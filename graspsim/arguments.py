"""Argument checks shared by the public functions (auto-grasp, lift test, IK, planner): a ValueError
(KeyError for an unknown name, like ``world.robots``) naming the argument, before any work -- not a
ZeroDivisionError from deep inside, nor a run that silently does nothing (a NaN timeout ends at once)."""
from __future__ import annotations

import math
import numbers


def positive(name: str, value, *, zero: bool = False) -> float:
    """``value`` as a finite float > 0 (>= 0 with ``zero``); ValueError naming ``name``."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not (math.isfinite(x) and (x >= 0.0 if zero else x > 0.0)):
        raise ValueError(f"{name} must be a finite number {'>=' if zero else '>'} 0, got {value!r}")
    return x


def whole(name: str, value, least: int) -> int:
    """``value`` as an int >= ``least`` (an integer type, not a bool); ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"{name} must be a whole number >= {least}, got {value!r}")
    return int(value)


def object_name(world, obj) -> None:
    """KeyError naming what the world has when ``obj`` (not None) is not one of its objects."""
    if obj is not None:
        world.bodies[obj]     # (the world's KeyError lists its objects)

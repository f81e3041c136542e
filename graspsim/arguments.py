"""Argument checks shared by the public functions (auto-grasp, lift test, IK, planner): a ValueError
(KeyError for an unknown name, like ``world.robots``) naming the argument, before any work -- not a
ZeroDivisionError from deep inside, nor a run that silently does nothing (a NaN timeout ends at once)."""
from __future__ import annotations

import math
import numbers
import os
from pathlib import Path

import numpy as np


def real(name: str, value) -> float:
    """``value`` as a float, from a number (not a bool: ``dt=True`` is no 1 s step; not a string:
    the Python API takes numbers, the model files parse their own); ValueError naming ``name``."""
    if not isinstance(value, (bool, np.bool_, str, bytes)):
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError):
            pass
    raise ValueError(f"{name} must be a number, got {value!r}")


def positive(name: str, value, *, zero: bool = False) -> float:
    """``value`` as a finite float > 0 (>= 0 with ``zero``); ValueError naming ``name``."""
    x = real(name, value)
    if not (math.isfinite(x) and (x >= 0.0 if zero else x > 0.0)):
        raise ValueError(f"{name} must be a finite number {'>=' if zero else '>'} 0, got {value!r}")
    return x


def whole(name: str, value, least: int) -> int:
    """``value`` as an int >= ``least`` (an integer type, not a bool); ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(f"{name} must be a whole number >= {least}, got {value!r}")
    return int(value)


_WORLD: list = []      # graspsim.world.World, imported at the first check (it imports this module's users)


def world_arg(fn: str, world) -> None:
    """ValueError naming ``fn`` unless ``world`` is a graspsim World (anything else met an
    AttributeError deep inside: 'int' object has no attribute 'robots')."""
    if not _WORLD:
        from .world import World

        _WORLD.append(World)
    if not isinstance(world, _WORLD[0]):
        raise ValueError(f"{fn} needs a graspsim World (graspsim.load_world), got {type(world).__name__}")


def object_name(world, obj) -> None:
    """KeyError naming what the world has when ``obj`` (not None) is not one of its objects."""
    if obj is not None:
        world.bodies[obj]     # (the world's KeyError lists its objects)


def output_file(name: str, path) -> Path:
    """A file about to be written (a result, a plot, a database): its folder made if missing, as
    every writer of graspsim does; ValueError naming ``name`` and the path when ``path`` is a folder
    or its folder cannot be made or written into (a file in the way) -- not an OSError from deep
    inside, nor one at the end of a long run whose results it would lose: commands check their
    output files before the work."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{name} '{path}' is a folder; give the file to write")
    _writable_folder(p.parent, f"{name} '{path}': its folder '{p.parent}'")
    return p


def output_folder(name: str, path) -> Path:
    """A folder files are about to be written into, made if missing; ValueError naming ``name``
    when a file is in the way or it is not writable (see :func:`output_file`)."""
    d = Path(path)
    _writable_folder(d, f"{name} '{path}'")
    return d


def _writable_folder(folder: Path, what: str) -> None:
    """Make ``folder`` (and its parents) if missing; ValueError "``what``: ..." when it cannot be
    made (a file in the way) or written into."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ValueError(f"{what} cannot be made: a file is in the way") from None
    except OSError as e:
        raise ValueError(f"{what} cannot be made: {e.strerror or e}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{what} is not writable")

"""graspsim: a Python grasping simulator.

Load a world with :func:`load_world`, inspect and move its robots and bodies, find contacts
(:mod:`graspsim.collision`), simulate (:class:`Simulator`), auto-grasp (:mod:`graspsim.control`) and
analyse grasps (:mod:`graspsim.grasp`).  Heavy modules import lazily so the CLI starts fast.
"""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from .errors import CollisionError, ModelError, SimulationError


def _numba_cache_dir() -> None:
    """Cache compiled kernels in a directory keyed by the package's source.

    numba's on-disk cache checks only the timestamp of the file that holds a function; a compiled
    kernel that calls a kernel of another file (the island solver calls the Lemke kernel) keeps the
    old callee after that file changes.  A directory per source hash makes any change start from a
    clean cache.  ``NUMBA_CACHE_DIR`` set by the user wins.
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    h = hashlib.sha1()
    root = Path(__file__).resolve().parent
    for f in sorted(root.rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode())
        h.update(f.read_bytes())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    d = base / "graspsim" / "numba" / h.hexdigest()[:16]
    os.environ["NUMBA_CACHE_DIR"] = str(d)
    if "numba" in sys.modules:     # numba already configured: set its live value too
        try:
            sys.modules["numba"].config.CACHE_DIR = str(d)
        except AttributeError:
            pass


_numba_cache_dir()

__version__ = "0.1.0"

__all__ = ["load_world", "load_robot", "load_object", "ModelError", "SimulationError", "CollisionError",
           "World", "__version__", "data_path"]


def data_path(*parts: str) -> Path:
    """Path of a shipped model (``robots/``, ``objects/``, ``worlds/`` next to the package)."""
    return Path(__file__).resolve().parent.parent.joinpath(*parts)


def load_world(path):
    """Load a world YAML file and return a :class:`graspsim.world.World` in its initial state."""
    from .model.loader import load_world as _lw
    from .world import World

    return World(_lw(path))


def load_robot(path):
    """Load a robot YAML file into an immutable :class:`graspsim.model.Robot` description."""
    from .model.loader import load_robot as _lr

    return _lr(path)


def load_object(path):
    """Load an object YAML file into an immutable :class:`graspsim.model.Object` description."""
    from .model.loader import load_object as _lo

    return _lo(path)


def __getattr__(name):  # lazy access to heavier parts of the API
    if name == "World":
        from .world import World

        return World
    if name == "Simulator":
        from .dynamics.simulator import Simulator

        return Simulator
    if name in ("rigidbody", "grasp", "collision", "control", "dynamics", "kinematics", "lcp"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'graspsim' has no attribute {name!r}")

"""graspsim: a Python grasping simulator.

Load a world with :func:`load_world`, inspect and move its robots and bodies, find contacts
(:mod:`graspsim.collision`), simulate (:class:`Simulator`), auto-grasp (:mod:`graspsim.control`) and
analyse grasps (:mod:`graspsim.grasp`).  Heavy modules import lazily so the CLI starts fast.
"""
from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

from .errors import CollisionError, ModelError, SimulationError


_KERNEL_IMPORT = re.compile(rb"^(?:from numba import|import numba\b|from \.+_jit import)", re.M)
_KEEP_CACHES = 4
_PRUNE_IDLE = 3600.0    # s: a cache directory used more recently than this is never deleted


def _numba_cache_dir() -> None:
    """Cache compiled kernels in a directory keyed by the source of the kernel files only.

    numba's on-disk cache checks only the source of the file that holds a function; a compiled
    kernel that calls a kernel of another file (the island solver calls the Lemke kernel) keeps the
    old callee after that file changes.  A directory per hash of every file that imports numba makes
    a kernel change start from a clean cache, while edits elsewhere keep it.  The locator in
    :mod:`graspsim._numba_locator` (used by the kernels' cache, :mod:`graspsim._jit`) files kernels
    by their place in the package, not by the checkout's absolute path, so clones share one cache.
    The newest few directories are kept, and any used within ``_PRUNE_IDLE`` seconds (another
    checkout on the same machine may be running at another version).  ``NUMBA_CACHE_DIR`` set by
    the user wins.
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    h = hashlib.sha1()
    root = Path(__file__).resolve().parent
    for f in sorted(root.rglob("*.py")):
        data = f.read_bytes()
        if _KERNEL_IMPORT.search(data):
            h.update(f.relative_to(root).as_posix().encode())
            h.update(data)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "graspsim" / "numba"
    d = base / h.hexdigest()[:16]
    if not d.is_dir():
        _prune_caches(base, _KEEP_CACHES - 1)
    else:
        try:
            os.utime(d)     # marks it as recently used for the pruning
        except OSError:
            pass
    os.environ["NUMBA_CACHE_DIR"] = str(d)
    if "numba" in sys.modules:     # numba already configured: set its live value too
        cfg = getattr(sys.modules["numba"], "config", None)
        if cfg is not None:
            cfg.CACHE_DIR = str(d)


def _prune_caches(base: Path, keep: int, idle: float | None = None) -> None:
    """Delete the kernel caches under ``base`` beyond the ``keep`` most recently used ones that
    have not been used for ``idle`` seconds (default ``_PRUNE_IDLE``)."""
    import shutil
    import time

    idle = _PRUNE_IDLE if idle is None else idle
    try:
        dirs = sorted(((p.stat().st_mtime, p) for p in base.iterdir() if p.is_dir()), reverse=True)
    except OSError:
        return
    now = time.time()
    for mtime, p in dirs[keep:]:
        if now - mtime > idle:
            shutil.rmtree(p, ignore_errors=True)


_numba_cache_dir()

__version__ = "0.1.0"

__all__ = ["load_world", "load_robot", "load_object", "ModelError", "SimulationError", "CollisionError",
           "World", "__version__", "data_path"]


def data_path(*parts: str) -> Path:
    """Path of a shipped model (``robots/``, ``objects/``, ``worlds/`` next to the package)."""
    return Path(__file__).resolve().parent.parent.joinpath(*parts)


def _file_path(fn: str, path):
    """``path`` unless it is not a file path (str or os.PathLike): then a ModelError naming ``fn``
    (os.fspath's own TypeError says neither what was called nor what to give)."""
    if isinstance(path, (str, os.PathLike)):
        return path
    from .errors import ModelError

    raise ModelError(f"{fn} needs the path of a file (str or pathlib.Path), got {type(path).__name__}")


def load_world(path):
    """Load a world YAML file and return a :class:`graspsim.world.World` in its initial state."""
    from .model.loader import load_world as _lw
    from .world import World

    return World(_lw(_file_path("load_world", path)))


def load_robot(path):
    """Load a robot YAML file into an immutable :class:`graspsim.model.Robot` description."""
    from .model.loader import load_robot as _lr

    return _lr(_file_path("load_robot", path))


def load_object(path):
    """Load an object YAML file, a mesh (STL, OBJ, PLY, OFF, GLB) or a one-link URDF into an
    immutable :class:`graspsim.model.Object` description (docs/objects.md)."""
    from .model.loader import load_object as _lo

    return _lo(_file_path("load_object", path))


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

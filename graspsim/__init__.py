"""graspsim: a Python grasping simulator.

Load a world with :func:`load_world`, inspect and move its robots and bodies, find contacts
(:mod:`graspsim.collision`), simulate (:class:`Simulator`), auto-grasp (:mod:`graspsim.control`) and
analyse grasps (:mod:`graspsim.grasp`).  Heavy modules import lazily so the CLI starts fast.
"""
from __future__ import annotations

from pathlib import Path

from .errors import CollisionError, ModelError, SimulationError

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

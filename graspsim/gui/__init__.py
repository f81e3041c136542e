"""The interactive viewer: ``graspsim view WORLD`` (a pyglet OpenGL 3.3 window).

Importing this package does not import pyglet (pyglet's window module needs a display at import
time); :func:`open_viewer` and the ``view`` command import the window lazily.  Pure parts:
:mod:`.camera` (orbit camera math), :mod:`.script` (scripted mode), :mod:`.session` (what the
viewer shows and does), :mod:`.actions` (the calls into collision, grasp, dynamics, control).
"""
from __future__ import annotations

__all__ = ["open_viewer"]


def open_viewer(world, width: int = 1280, height: int = 720, *, headless: bool = False, **kwargs):
    """Open a viewer window on ``world`` (a :class:`graspsim.World` or a world file path).

    ``headless=True`` renders offscreen through EGL (no X display needed).  Returns a
    :class:`graspsim.gui.app.Viewer`; call its ``run()`` for the interactive loop.
    """
    import pyglet

    if headless:
        pyglet.options["headless"] = True
    from .app import Viewer

    if not hasattr(world, "body_poses"):
        from .. import load_world

        world = load_world(world)
    return Viewer(world, width, height, **kwargs)

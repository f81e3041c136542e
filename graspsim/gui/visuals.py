"""Triangles of the visual geometry (URDF ``<visual>``) the viewer draws instead of contact shapes.

A :class:`~graspsim.model.description.Visual` names a primitive or a mesh file; this module turns it
into vertices (m, in the visual's own frame, placed by ``Visual.X_LS`` in the link frame) and
faces.  Mesh files are read here, on first use, not when the model loads: visual meshes are
often ten times larger than the collision meshes and only the viewer needs them.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np


@lru_cache(maxsize=64)
def _mesh(path: str, mtime_ns: int, scale: tuple):
    import trimesh

    m = trimesh.load(path, force="mesh", process=False)
    return np.asarray(m.vertices, float) * np.asarray(scale, float), np.asarray(m.faces, np.int64)


def visual_triangles(v) -> tuple[np.ndarray, np.ndarray] | None:
    """``(vertices (n, 3) m, faces (k, 3))`` of a Visual in its frame, or None if it cannot be read."""
    from ..geometry import _tessellate

    if v.kind != "mesh":
        return _tessellate(v.kind, tuple(float(x) for x in v.size))
    try:
        p = Path(v.mesh)
        return _mesh(str(p), p.stat().st_mtime_ns, tuple(v.scale))
    except Exception:  # noqa: BLE001 - a broken visual must not stop the viewer: draw the contact shape
        return None


def body_visuals(world) -> list[tuple]:
    """Per body of ``world.table``: the Visual entries of a robot link (empty for everything else)."""
    t = world.table
    out = []
    for i in range(len(t)):
        if t.robot[i] >= 0:
            link = world.description.robots[t.robot[i]].robot.links[t.link[i]]
            out.append(tuple(getattr(link, "visuals", ())))
        else:
            out.append(())
    return out

"""FCL geometry of every shape, built once per process, and FCL collision objects per model.

FCL objects are not picklable and python-fcl holds the GIL, so each process (and each
:class:`~graspsim.collision.CollisionData`) builds its own objects; the geometry itself (BVHs cost
milliseconds) is cached by content (:func:`~graspsim.collision.pool.content_key`) in a
least-recently-used cache with a byte budget.  Primitives map to FCL
primitives with the same conventions (centred, axis along z); meshes become ``BVHModel`` (OBBRSS).

Only FCL's boolean ``collide`` and ``distance`` (with nearest points) are used: its contact points,
normals and depths for meshes are unreliable (see docs/collision.md).
"""
from __future__ import annotations

import os

import numpy as np

from .pool import ContentCache, content_key

#: bytes (estimated: BVH of a mesh ~ 3x its arrays) of FCL geometry kept (GRASPSIM_GEOMETRY_CACHE_MB)
CACHE = ContentCache(int(float(os.environ.get("GRASPSIM_GEOMETRY_CACHE_MB", "256")) * 2 ** 20))


def _fcl():
    import fcl  # lazy: ~0.25 s cold import

    return fcl


def fcl_geometry(shape):
    """The FCL geometry of ``shape`` (cached by content)."""
    n = 3 * (shape.vertices.nbytes + shape.faces.nbytes) if shape.kind == "mesh" else 64
    return CACHE.get(content_key(shape), lambda: _build(shape), lambda g: n)


def _build(shape):
    fcl = _fcl()
    k, s = shape.kind, shape.size
    if k == "box":
        g = fcl.Box(*s)
    elif k == "sphere":
        g = fcl.Sphere(s[0])
    elif k == "cylinder":
        g = fcl.Cylinder(s[0], s[1])
    elif k == "capsule":
        g = fcl.Capsule(s[0], s[1])
    else:
        g = fcl.BVHModel()
        V = np.ascontiguousarray(shape.vertices, dtype=np.float64)
        F = np.ascontiguousarray(shape.faces, dtype=np.int32)
        g.beginModel(len(V), len(F))
        g.addSubModel(V, F)
        g.endModel()
    return g


class FCLObjects:
    """One FCL collision object per body of a table (None for bodies without a shape)."""

    def __init__(self, shapes):
        fcl = _fcl()
        self._fcl = fcl
        self.objects = [None if s is None else fcl.CollisionObject(fcl_geometry(s), fcl.Transform())
                        for s in shapes]
        self.kinds = [None if s is None else s.kind for s in shapes]
        self._X = [None] * len(shapes)

    def set_pose(self, i: int, X_WS: np.ndarray) -> None:
        """Place body i's shape frame at the world pose ``X_WS`` (4x4)."""
        self.objects[i].setTransform(self._fcl.Transform(np.ascontiguousarray(X_WS[:3, :3]),
                                                         np.ascontiguousarray(X_WS[:3, 3])))
        self._X[i] = X_WS

    def collide(self, i: int, j: int) -> bool:
        """FCL boolean collision (touching counts) of the current poses."""
        fcl = self._fcl
        return fcl.collide(self.objects[i], self.objects[j], fcl.CollisionRequest(), fcl.CollisionResult()) > 0

    def distance(self, i: int, j: int):
        """(distance, nearest point on i, nearest point on j), world frame; meaningless when colliding."""
        fcl = self._fcl
        res = fcl.DistanceResult()
        d = fcl.distance(self.objects[i], self.objects[j], fcl.DistanceRequest(enable_nearest_points=True), res)
        p, q = np.array(res.nearest_points[0], float), np.array(res.nearest_points[1], float)
        ki, kj = self.kinds[i], self.kinds[j]
        if (ki == "mesh") != (kj == "mesh"):
            # python-fcl 0.7 returns a mesh-primitive pair's points as (on the mesh, on the primitive)
            # whatever the argument order, and for a sphere both in their own shape frames
            # (measured for every primitive kind in both orders; tests/test_collision.py checks it)
            prim = j if ki == "mesh" else i
            if self.kinds[prim] == "sphere":
                Xm, Xp = self._X[i if prim == j else j], self._X[prim]
                p = Xm[:3, :3] @ p + Xm[:3, 3]
                q = Xp[:3, :3] @ q + Xp[:3, 3]
            if prim == i:
                p, q = q, p
        return float(d), p, q

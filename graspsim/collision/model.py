"""CollisionModel: array-based contact, penetration and distance queries over a body table.

Conventions (every quantity SI, world frame W):

* ``poses`` (N, 4, 4): world poses of the body frames L, in :class:`~graspsim.model.bodies.BodyTable`
  order (``World.body_poses()``).  Shapes sit at ``X_LS`` in their body frame.
* A contact between body a and body b (a = the first index of the pair; the table's pairs have
  a < b, so a robot link comes before an object and an object before an obstacle) has its unit
  ``normal`` pointing **from a towards b**: a compressive normal force f_n >= 0 acts on b as
  ``+normal * f_n`` and on a as ``-normal * f_n``.  For a hand link touching an object the normal
  therefore points into the object (GraspIt's convention for grasp analysis).
* ``separation`` is signed: > 0 apart, 0 touching, < 0 interpenetrating (m).
* ``point`` is the midpoint of ``point_a`` (on a's surface) and ``point_b`` (on b's surface); they
  differ by ``separation * normal``.
* ``tangent1``, ``tangent2``: unit friction directions, (tangent1, tangent2, normal) right-handed;
  ``tangent1 = unit(e_k x normal)`` with ``e_k`` the world axis of the normal's smallest
  component, so the frame depends on the normal alone and does not flip from step to step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import kernels as K
from .pool import NONE, GeometryPool

__all__ = ["CollisionModel", "ContactSet", "MAX_THRESHOLD"]

#: largest contact threshold (m) the contact kernels are exact for (checked on the shipped worlds)
MAX_THRESHOLD = 5e-3


@dataclass(frozen=True)
class ContactSet:
    """Contacts as a struct of arrays (k contacts; see the module docstring for the conventions).

    ``names`` (the body table's names, set by :meth:`CollisionModel.contacts`) only serves printing:
    ``print(cs)`` shows a short table with the bodies by name.
    """

    body_a: np.ndarray      # (k,) int, body index (BodyTable order)
    body_b: np.ndarray      # (k,) int
    point: np.ndarray       # (k, 3) m, world
    normal: np.ndarray      # (k, 3) unit, from body_a towards body_b
    separation: np.ndarray  # (k,) m, signed (> 0 apart)
    tangent1: np.ndarray    # (k, 3)
    tangent2: np.ndarray    # (k, 3)
    point_a: np.ndarray     # (k, 3) on body_a's surface
    point_b: np.ndarray     # (k, 3) on body_b's surface
    # body names of the table the indices refer to (for printing); None: bodies shown by index
    names: tuple | None = field(default=None, compare=False)

    #: rows :meth:`__repr__` shows before it summarises the rest
    MAX_ROWS = 20

    def __len__(self) -> int:
        return int(self.body_a.shape[0])

    def __repr__(self) -> str:
        """A short table: index, body names, point (m), normal, separation (mm); world frame."""
        k = len(self)
        head = f"ContactSet: {k} contact{'' if k == 1 else 's'} (world frame; normal from body_a towards body_b)"
        if k == 0:
            return head
        shown = min(k, self.MAX_ROWS)
        a = [self._name(i) for i in self.body_a[:shown]]
        b = [self._name(i) for i in self.body_b[:shown]]
        wa = max(6, *map(len, a))
        wb = max(6, *map(len, b))
        rows = [head, f"{'#':>3}  {'body_a':<{wa}}  {'body_b':<{wb}}  {'point (m)':<26}  {'normal':<23}  sep (mm)"]
        for r in range(shown):
            rows.append(f"{r:>3}  {a[r]:<{wa}}  {b[r]:<{wb}}  {_vec(self.point[r], 8, 4):<26}  "
                        f"{_vec(self.normal[r], 7, 3):<23}  {round(1e3 * float(self.separation[r]), 4) + 0.0:8.4f}")
        if k > shown:
            rows.append(f"... and {k - shown} more")
        return "\n".join(rows)

    def _name(self, i) -> str:
        return str(self.names[int(i)]) if self.names is not None else f"body {int(i)}"

    def pairs(self) -> np.ndarray:
        """(m, 2) distinct (body_a, body_b) pairs in contact, in order."""
        if len(self) == 0:
            return np.zeros((0, 2), np.int64)
        ab = np.stack([self.body_a, self.body_b], axis=1)
        _, first = np.unique(ab, axis=0, return_index=True)
        return ab[np.sort(first)]

    def select(self, mask) -> "ContactSet":
        """The contacts where ``mask`` (bool or index array) is set."""
        arrays = (getattr(self, f)[mask] for f in self.__dataclass_fields__ if f != "names")
        return ContactSet(*arrays, names=self.names)


def _vec(v, width: int, decimals: int) -> str:
    """``[x y z]`` with fixed-width numbers; values that round to zero print without a sign."""
    return "[" + " ".join(f"{round(float(x), decimals) + 0.0:{width}.{decimals}f}" for x in v) + "]"


class CollisionModel:
    """Contact geometry (numba arrays) and FCL objects for every body of a table, built once.

    Holds per-instance workspace; stateless across calls (every query takes the poses).  FCL
    objects cannot be pickled: build one model per process.

    Parameters: ``table`` (BodyTable), ``threshold`` (contact threshold, m; default 0.1 mm),
    ``normal_tol_deg`` (contacts whose normals differ by less belong to one region),
    ``pen_tol`` (m; a pair FCL reports colliding counts as interpenetrating only when deeper).
    """

    def __init__(self, table, threshold: float = 1e-4, *, normal_tol_deg: float = 10.0, pen_tol: float = 1e-6,
                 region_tol: float | None = None):
        if not 0 < threshold <= MAX_THRESHOLD:
            # the contact regions (bisection along edges, sharp-feature passes, region reduction)
            # assume a threshold far below feature sizes: at 2 cm a Barrett finger beside the mug
            # already reports contacts 17 mm deep while nothing interpenetrates
            raise ValueError(f"contact threshold must be in (0, {MAX_THRESHOLD * 1e3:g} mm], got {threshold} m")
        if not 0 <= pen_tol < threshold:
            raise ValueError(f"pen_tol must be in [0, threshold), got {pen_tol}")
        self.table = table
        self.threshold = float(threshold)
        self.pen_tol = float(pen_tol)
        self.cos_tol = math.cos(math.radians(normal_tol_deg))
        self.region_tol = 2.0 * self.threshold if region_tol is None else float(region_tol)
        self.pool = GeometryPool(table.shapes)
        self._P = self.pool.arrays()
        self._valid = self.pool.kind != NONE
        self._X_LS = self.pool.X_LS
        self._offset = self.pool.has_offset
        pairs = np.asarray(table.collision_pairs, dtype=np.int64).reshape(-1, 2)
        self.pairs = np.ascontiguousarray(pairs[self._valid[pairs[:, 0]] & self._valid[pairs[:, 1]]])
        self._C = np.empty((512, 10))
        self._C2 = np.empty((512, 10))
        self._O_ab = np.empty((256, 2), np.int64)
        self._O_f = np.empty((256, 19))
        self._fcl = None

    # -- poses -----------------------------------------------------------------------------------

    def shape_poses(self, poses: np.ndarray) -> np.ndarray:
        """World poses (N, 4, 4) of the shape frames S from the body poses (X_WS = X_WL X_LS)."""
        poses = np.asarray(poses, dtype=np.float64)
        if poses.shape != (len(self._valid), 4, 4):
            raise ValueError(f"poses must be ({len(self._valid)}, 4, 4), got {poses.shape}")
        if not self._offset.any():
            return np.ascontiguousarray(poses)
        return np.matmul(poses, self._X_LS)

    def _pairs(self, pairs) -> np.ndarray:
        if pairs is None:
            return self.pairs
        p = np.ascontiguousarray(np.asarray(pairs, dtype=np.int64).reshape(-1, 2))
        ok = self._valid[p[:, 0]] & self._valid[p[:, 1]]
        return p if ok.all() else np.ascontiguousarray(p[ok])

    # -- contacts --------------------------------------------------------------------------------

    def contacts(self, poses: np.ndarray, pairs=None) -> ContactSet:
        """Every contact of the pairs (default: the table's collision pairs) within the threshold.

        Order: pairs in the given order, then regions (by increasing separation of their closest
        point), then the region's points (a line's two ends along the line, a polygon's vertices
        counter-clockwise about the normal).
        """
        X = self.shape_poses(poses)
        pr = self._pairs(pairs)
        while True:
            k, worst = K.contacts_kernel(X, pr, self._P, self._valid, self.threshold, self.cos_tol,
                                         self.region_tol, self._C, self._C2, self._O_ab, self._O_f)
            if worst > self._C.shape[0]:
                self._grow(worst)
                continue
            if k > self._O_f.shape[0]:
                self._O_ab = np.empty((2 * k, 2), np.int64)
                self._O_f = np.empty((2 * k, 19))
                continue
            break
        # one contiguous copy per column (the buffers are reused): compiled consumers then see one
        # (C) layout only (#16)
        f, ab = self._O_f[:k], self._O_ab[:k]
        return ContactSet(ab[:, 0].copy(), ab[:, 1].copy(), f[:, 0:3].copy(), f[:, 3:6].copy(), f[:, 6].copy(),
                          f[:, 13:16].copy(), f[:, 16:19].copy(), f[:, 7:10].copy(), f[:, 10:13].copy(),
                          names=self.table.names)

    def _grow(self, n: int) -> None:
        self._C = np.empty((2 * n, 10))
        self._C2 = np.empty((2 * n, 10))

    def _candidates(self, X, i: int, j: int) -> np.ndarray:
        """Raw contact candidates (m, 10) of one pair (see kernels)."""
        while True:
            m = K.pair_candidates(i, j, X, self._P, self.threshold, self._C, self._C2)
            if m <= self._C.shape[0]:
                return self._C[:m]
            self._grow(m)

    # -- FCL-backed queries ------------------------------------------------------------------------

    @property
    def fcl(self):
        """The FCL objects (built on first use)."""
        if self._fcl is None:
            from .fcl_geometry import FCLObjects

            self._fcl = FCLObjects(self.table.shapes)
        return self._fcl

    def candidate_pairs(self, poses: np.ndarray, margin: float, pairs=None) -> np.ndarray:
        """(m, 2) pairs whose world bounding boxes are within ``margin`` (m) of each other."""
        X = self.shape_poses(poses)
        pr = self._pairs(pairs)
        sel = K.broadphase(X, pr, self.pool.lo, self.pool.hi, self._valid, float(margin))
        return pr[sel]

    def _place(self, X, bodies) -> None:
        f = self.fcl
        for b in bodies:
            f.set_pose(int(b), X[b])

    def _sdf_min(self, X, i: int, j: int):
        """Most negative signed distance of body i's tessellation vertices to body j's shape.

        Returns (sd, vertex in world, nearest surface point on j in world).
        """
        s = self.table.shapes[i]
        V = s.vertices
        R, t = X[j][:3, :3], X[j][:3, 3]
        Xi = X[i]
        pts_w = V @ Xi[:3, :3].T + Xi[:3, 3]
        pts = np.ascontiguousarray((pts_w - t) @ R)
        sd = K.sdf_points(self._P, j, pts)
        m = int(np.argmin(sd))
        return float(sd[m]), pts_w[m], pts_w[m]

    def _contained(self, X, i: int, j: int) -> bool:
        """Guard for a shape entirely inside another (FCL reports no collision then)."""
        lo, hi = K.world_aabbs(X, self.pool.lo, self.pool.hi, self._valid)
        for a, b in ((i, j), (j, i)):
            if np.all(lo[a] >= lo[b]) and np.all(hi[a] <= hi[b]):
                s = self.table.shapes[a]
                p = X[a][:3, :3] @ s.vertices[0] + X[a][:3, 3]
                q = np.ascontiguousarray(((p - X[b][:3, 3]) @ X[b][:3, :3]).reshape(1, 3))
                if K.sdf_points(self._P, b, q)[0] < 0:
                    return True
        return False

    def _is_penetrating(self, X, i: int, j: int) -> bool:
        """FCL collide, except a touching pair (closest candidate not deeper than pen_tol); containment."""
        if self.fcl.collide(i, j):
            c = self._candidates(X, i, j)
            if len(c) == 0:
                return True
            return bool(c[:, 9].min() < -self.pen_tol)
        return self._contained(X, i, j)

    def penetrating(self, poses: np.ndarray, pairs=None) -> list:
        """Pairs (i, j) that interpenetrate by more than ``pen_tol`` (touching pairs are not listed)."""
        X = self.shape_poses(poses)
        cand = self.candidate_pairs(poses, 0.0, pairs)
        if len(cand) == 0:
            return []
        self._place(X, np.unique(cand))
        return [(int(i), int(j)) for i, j in cand if self._is_penetrating(X, int(i), int(j))]

    def separations(self, poses: np.ndarray, pairs=None, *, margin: float = 0.01):
        """(smallest separation over the pairs, that pair), or (inf, None) when none is within ``margin``.

        Separations come from FCL ``distance``; a pair that interpenetrates reports its depth
        estimate as a negative separation (see :meth:`distance`).  Pairs whose bounding boxes are
        farther apart than ``margin`` (m) are not measured.
        """
        X = self.shape_poses(poses)
        cand = self.candidate_pairs(poses, margin, pairs)
        best, arg = math.inf, None
        if len(cand) == 0:
            return best, arg
        self._place(X, np.unique(cand))
        for i, j in cand:
            d = self._pair_distance(X, int(i), int(j))[0]
            if d < best:
                best, arg = d, (int(i), int(j))
        return best, arg

    def pair_separations(self, poses: np.ndarray, pairs) -> np.ndarray:
        """Separation (m) of each given pair (FCL distance; minus the depth estimate if interpenetrating)."""
        X = self.shape_poses(poses)
        pr = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        self._place(X, np.unique(pr))
        return np.array([self._pair_distance(X, int(i), int(j))[0] for i, j in pr])

    def _pair_distance(self, X, i: int, j: int):
        if self.fcl.collide(i, j):
            c = self._candidates(X, i, j)
            if len(c) and c[:, 9].min() >= -self.pen_tol:
                # touching: FCL's distance is 0 with meaningless points; the contact kernel's
                # closest candidate has the exact pair of surface points
                k = int(np.argmin(c[:, 9]))
                return max(float(c[k, 9]), 0.0), c[k, 0:3].copy(), c[k, 3:6].copy()
        if self._is_penetrating(X, i, j):
            s1, p1, _ = self._sdf_min(X, i, j)
            s2, p2, _ = self._sdf_min(X, j, i)
            if s1 <= s2:
                return min(s1, 0.0), p1, p1
            return min(s2, 0.0), p2, p2
        d, pi, pj = self.fcl.distance(i, j)
        return max(d, 0.0), pi, pj

    def distance(self, i: int, j: int, poses: np.ndarray):
        """(d, p_i, p_j): distance (m) and closest points (world) of bodies i and j (FCL).

        When they interpenetrate (deeper than ``pen_tol``), ``d`` is minus an estimate of the depth
        (the deepest tessellation vertex of either body inside the other; a lower bound) and both
        points are that vertex.
        """
        X = self.shape_poses(poses)
        self._place(X, (i, j))
        return self._pair_distance(X, int(i), int(j))

    def penetration_depth(self, i: int, j: int, poses: np.ndarray) -> float:
        """Depth (m, >= 0) of the deepest tessellation vertex of either body inside the other."""
        X = self.shape_poses(poses)
        return max(0.0, -self._sdf_min(X, i, j)[0], -self._sdf_min(X, j, i)[0])

    def interpenetrations(self, poses: np.ndarray, pairs=None) -> list:
        """[(i, j, depth m)] for every pair that interpenetrates (see :meth:`penetrating`)."""
        out = []
        for i, j in self.penetrating(poses, pairs):
            out.append((i, j, self.penetration_depth(i, j, poses)))
        return out

    def names(self, i: int) -> str:
        return self.table.names[i]



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
from . import _intersect_kernel as IX
from ._impact_kernel import overlap_status
from ._simplify_kernel import REGION_COS_TOL, limit_regions_in_place
from ..spatial import RIGID_TOL, rigid_problem
from .pool import CYLINDER, NONE, GeometryPool

__all__ = ["CollisionModel", "CollisionData", "ContactSet", "MAX_THRESHOLD"]

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
    # the shapes (table's flat shape index) the contact is between: which of a body's shapes touches
    # (for the viewer and per-shape materials); None in sets built without them
    shape_a: np.ndarray | None = None   # (k,) int
    shape_b: np.ndarray | None = None   # (k,) int
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
        idx = np.asarray(mask)
        if idx.dtype == bool:
            if idx.shape != (len(self),):
                raise IndexError(f"boolean mask of shape {idx.shape} for {len(self)} contacts")
            idx = np.flatnonzero(idx)
        # (k, 3) columns by take along the rows: numpy's fancy indexing of a 2-D array costs several
        # times more (the simulator selects a region's points every step); 1-D ones by indexing
        arrays = [None if a is None else (a.take(idx, axis=0) if a.ndim > 1 else a[idx])
                  for a in map(self.__getattribute__, _COLUMNS)]
        return ContactSet(*arrays, names=self.names)


def concat_contacts(sets) -> ContactSet:
    """One ContactSet of the contacts of ``sets`` (ContactSets of one body table), in order."""
    sets = list(sets)
    cols = []
    for f in _COLUMNS:
        parts = [getattr(c, f) for c in sets]
        cols.append(None if any(x is None for x in parts) else np.concatenate(parts))
    return _contact_set(tuple(cols), sets[0].names if sets else None)


#: ContactSet's array fields, in constructor order
_COLUMNS = tuple(f for f in ContactSet.__dataclass_fields__ if f != "names")


def _contact_set(columns: tuple, names) -> ContactSet:
    """``ContactSet(*columns, names=names)`` without the frozen dataclass's per-field
    ``object.__setattr__`` (its __init__ has no checks; this runs every simulation step)."""
    cs = object.__new__(ContactSet)
    cs.__dict__.update(zip(_COLUMNS, columns), names=names)
    return cs


def _vec(v, width: int, decimals: int) -> str:
    """``[x y z]`` with fixed-width numbers; values that round to zero print without a sign."""
    return "[" + " ".join(f"{round(float(x), decimals) + 0.0:{width}.{decimals}f}" for x in v) + "]"



class CollisionData:
    """Everything a :class:`CollisionModel`'s queries change: kernel scratch buffers (grown on
    demand) and the FCL collision objects (built lazily, in the process that uses them; not
    picklable).  One per simulator / worker: two owners querying one model at once each need
    their own (``model.new_data()``)."""

    def __init__(self, model: "CollisionModel"):
        self.C = np.empty((512, 10))       # one shape pair's candidates
        self.C2 = np.empty((512, 10))      # its sharp-feature candidates
        self.C3 = np.empty((512, 10))      # a multi-shape body pair's gathered candidates
        self.RS = np.empty((512, 2), np.int64)   # the shapes of each candidate row
        self.MP = np.empty((64, 4), np.int64)    # meeting shape pairs (_intersect_kernel.meeting_pairs)
        self.pair1 = np.empty((1, 2), np.int64)  # one shape pair and its threshold (CollisionModel._closest)
        self.t1 = np.empty(1)
        self.out(256)
        self._shapes = model.table.shape_list
        self._fcl = None

    def out(self, k: int) -> None:
        """Room for k contacts (column blocks, see kernels._write)."""
        self.O_ab = np.empty((4, k), np.int64)     # body_a, body_b, shape_a, shape_b
        self.O_v = np.empty((6, k, 3))             # point, normal, point_a, point_b, t1, t2
        self.O_s = np.empty(k)                     # separation

    def grow(self, n: int) -> None:
        """Room for ``n`` candidates of one pair."""
        self.C = np.empty((2 * n, 10))
        self.C2 = np.empty((2 * n, 10))
        self.C3 = np.empty((2 * n, 10))
        self.RS = np.empty((2 * n, 2), np.int64)

    @property
    def fcl(self):
        """The FCL objects, one per shape (built on first use)."""
        if self._fcl is None:
            from .fcl_geometry import FCLObjects

            self._fcl = FCLObjects(self._shapes)
        return self._fcl


class CollisionModel:
    """Contact geometry of every shape of a body table (numba arrays), built once; immutable.

    Bodies own 0..k shapes (``table.body_shape_start/count``); queries take and report *bodies*
    (a body pair's contacts gather every pair of their shapes; a body pair's distance is the
    minimum over its shape pairs).  The model holds no per-query state: buffers and FCL objects live
    in a :class:`CollisionData` (``data=``; by default one the model keeps for the calling
    process, which is not pickled: ``pickle.dumps(model)`` ships the geometry only).

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
        self.pool = GeometryPool(table.shape_list)
        self._P = self.pool.arrays()
        n = len(table)
        self._svalid = self.pool.kind != NONE
        # the kernels' cylinder routines are compiled only for worlds with a cylinder (see
        # kernels.pair_candidates): None otherwise
        self._cyl = True if (self.pool.kind == CYLINDER).any() else None
        # writable copies of the table's read-only arrays: numba types read-only arrays apart
        # (another compiled signature), and every other kernel argument is writable
        self._X_LS = np.array(table.shape_X_LS, dtype=float).reshape(-1, 4, 4)
        self._shape_body = np.array(table.shape_body, dtype=np.int64)
        self._bstart = np.array(table.body_shape_start, dtype=np.int64)
        self._bcount = np.array(table.body_shape_count, dtype=np.int64)
        self._valid = self._bcount > 0
        # one shape per body in body order (every world before multi-shape bodies): shape poses
        # are the body poses times X_LS, with no gather
        self._one_to_one = len(self._shape_body) == n and bool(np.all(self._shape_body == np.arange(n)))
        self._offset = bool(np.any(np.abs(self._X_LS - np.eye(4)) != 0))
        pairs = np.asarray(table.collision_pairs, dtype=np.int64).reshape(-1, 2)
        self.pairs = np.ascontiguousarray(pairs[self._valid[pairs[:, 0]] & self._valid[pairs[:, 1]]])
        # the body pairs expanded to shape pairs, once (docs/collision_model_data.md)
        sp, spb = [], []
        for q, (a, b) in enumerate(self.pairs):
            A = np.arange(self._bstart[a], self._bstart[a] + self._bcount[a])
            B = np.arange(self._bstart[b], self._bstart[b] + self._bcount[b])
            sp.append(np.stack(np.meshgrid(A, B, indexing="ij"), axis=-1).reshape(-1, 2))
            spb.append(np.full(len(A) * len(B), q, np.int64))
        self.shape_pairs = np.concatenate(sp).astype(np.int64) if sp else np.zeros((0, 2), np.int64)
        self.shape_pair_body_pair = np.concatenate(spb) if spb else np.zeros(0, np.int64)
        self._data = None

    # -- data ------------------------------------------------------------------------------------

    def new_data(self) -> CollisionData:
        """A fresh :class:`CollisionData` for this model (one per simulator / worker)."""
        return CollisionData(self)

    @property
    def data(self) -> CollisionData:
        """The model's own :class:`CollisionData` (used when a query is given none)."""
        if self._data is None:
            self._data = CollisionData(self)
        return self._data

    def __getstate__(self):
        st = self.__dict__.copy()
        st["_data"] = None      # scratch and FCL objects stay in their process
        return st

    @property
    def fcl(self):
        """The FCL objects of the model's own data (one per shape)."""
        return self.data.fcl

    def shapes_of(self, i: int) -> range:
        """Flat indices of body i's shapes."""
        s = int(self._bstart[i])
        return range(s, s + int(self._bcount[i]))

    # -- poses -----------------------------------------------------------------------------------

    def shape_poses(self, poses: np.ndarray) -> np.ndarray:
        """World poses (S, 4, 4) of the shape frames S from the body poses (X_WS = X_WL X_LS).
        ValueError naming the body unless every pose is a finite rigid transform (every query's check)."""
        try:
            poses = np.asarray(poses, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"poses must be a ({len(self._valid)}, 4, 4) array of body poses, got "
                             f"{type(poses).__name__}") from None
        if poses.shape != (len(self._valid), 4, 4):
            raise ValueError(f"poses must be ({len(self._valid)}, 4, 4), got {poses.shape}")
        # a NaN or sheared pose gave NaN contacts, "interpenetrating" pairs or a division by zero
        # inside the kernels; one compiled pass (~0.3 us) is the check, the body is named when it
        # fails; the same pass composes the shape frames when a shape sits off its body's frame
        poses = np.ascontiguousarray(poses)
        if self._one_to_one and not self._offset:
            i, X = K.shape_frames(poses, RIGID_TOL, K.NO_SHAPES, K.NO_FRAMES)[0], poses
        else:
            i, X = K.shape_frames(poses, RIGID_TOL, self._shape_body, self._X_LS)
        if i >= 0:
            problem = rigid_problem(poses[i]) or "has an entry beyond 1e150 in magnitude"
            raise ValueError(f"poses: the pose of body '{self.table.names[i]}' (index {i}) {problem}; every body "
                             "pose must be a finite rigid 4x4 transform")
        return X

    def _checked_pairs(self, pairs) -> np.ndarray:
        """``pairs`` as a C-contiguous (k, 2) int64 array of body indices (table order); ValueError
        naming the first bad pair unless every entry is a whole number in [0, N)."""
        p = self._pair_array(pairs)
        st = K.pair_status(p, self._valid)
        if st < 0:
            self._bad_pair(p, st)
        return p

    def _pair_array(self, pairs) -> np.ndarray:
        """``pairs`` as a C-contiguous (k, 2) int64 array (whole numbers typed as floats taken);
        ValueError unless it has that form.  The indices' range is :func:`.kernels.pair_status`'."""
        n = len(self._valid)
        try:
            a = np.asarray(pairs)
        except (TypeError, ValueError):
            a = np.asarray(None)
        if a.size == 0 and a.dtype.kind in "iuf":
            return np.zeros((0, 2), np.int64)
        if a.dtype.kind not in "iu" or a.ndim not in (1, 2) or a.shape[-1] != 2:
            if (a.dtype.kind == "f" and a.ndim in (1, 2) and a.shape[-1] == 2 and np.isfinite(a).all()
                    and np.all(a == np.round(a))):
                a = a.astype(np.int64)      # whole numbers typed as floats
            else:
                raise ValueError(f"pairs must be (k, 2) whole body indices in [0, {n}), got an array of shape "
                                 f"{a.shape} and type {a.dtype}")
        return np.ascontiguousarray(a.reshape(-1, 2), dtype=np.int64)

    def _bad_pair(self, p: np.ndarray, status: int) -> None:
        """ValueError naming the pair that :func:`.kernels.pair_status` (< 0) found out of range."""
        n, i = len(self._valid), -1 - status
        raise ValueError(f"pairs[{i}] = {tuple(p[i].tolist())}: body indices must be in [0, {n}) "
                         f"(this model has {n} bodies; a negative index does not count from the end)")

    def _body(self, i, what: str) -> int:
        """Body index ``i`` as an int; ValueError naming ``what`` unless a whole number in [0, N)."""
        n = len(self._valid)
        try:
            k = int(i)
        except (TypeError, ValueError):
            raise ValueError(f"{what} must be a body index in [0, {n}), got {i!r}") from None
        if k != i or not 0 <= k < n:
            raise ValueError(f"{what} must be a body index in [0, {n}), got {i!r}")
        return k

    def _pairs(self, pairs) -> np.ndarray:
        """The pairs to search: the model's, or ``pairs`` checked, without pairs of a shapeless body."""
        if pairs is None:
            return self.pairs
        if (type(pairs) is np.ndarray and pairs.dtype == np.int64 and pairs.ndim == 2 and pairs.shape[1] == 2
                and pairs.flags.c_contiguous):
            p = pairs               # the callers' usual form
        else:
            p = self._pair_array(pairs)
        st = K.pair_status(p, self._valid)      # one compiled pass checks and counts
        if st < 0:
            self._bad_pair(p, st)
        if st == 0:
            return p
        return np.ascontiguousarray(p[self._valid[p[:, 0]] & self._valid[p[:, 1]]])

    # -- contacts --------------------------------------------------------------------------------

    def contacts(self, poses: np.ndarray, pairs=None, *, data: CollisionData | None = None,
                 max_region_points: int = 0) -> ContactSet:
        """Every contact of the body pairs (default: the table's collision pairs) within the threshold.

        Order: pairs in the given order, then regions (by increasing separation of their closest
        point), then the region's points (a line's two ends along the line, a polygon's vertices
        counter-clockwise about the normal).  Each column is a contiguous array.
        ``max_region_points`` > 0: at most that many points per region, as
        :func:`graspsim.collision.simplify.limit_region_points` keeps them (the dynamics' contacts).
        """
        d = self.data if data is None else data
        X = self.shape_poses(poses)
        pr = self._pairs(pairs)
        while True:
            k, worst = K.contacts_kernel(X, pr, self._bstart, self._bcount, self._P, self._svalid, self.threshold,
                                         self.cos_tol, self.region_tol, d.C, d.C2, d.C3, d.RS, d.O_ab, d.O_v,
                                         d.O_s, self._cyl)
            if worst > d.C.shape[0]:
                d.grow(worst)
                continue
            if k > d.O_s.shape[0]:
                d.out(2 * k)
                continue
            break
        if 0 < max_region_points < k:
            k = limit_regions_in_place(d.O_ab, d.O_v, d.O_s, k, int(max_region_points), REGION_COS_TOL)
        ab = d.O_ab[:, :k].copy()     # column blocks: every column below is a contiguous slice
        v = d.O_v[:, :k].copy()
        return _contact_set((ab[0], ab[1], v[0], v[1], d.O_s[:k].copy(), v[4], v[5], v[2], v[3], ab[2], ab[3]),
                            self.table.names)

    def _closest(self, X, sa: int, sb: int, thr: float, d: CollisionData) -> float:
        """Separation (m) of the closest contact candidate of *shapes* sa, sb within ``thr`` (inf:
        none), edge/vertex candidates included (:func:`.kernels.closest_candidate`): whether a pair
        overlaps does not depend on which candidates the contact list keeps."""
        # through the impact screen's kernel (pen_tol inf: the separation only), which the first job
        # needs anyway: kernels.closest_candidate itself would be one more public kernel to compile
        d.pair1[0, 0], d.pair1[0, 1], d.t1[0] = sa, sb, thr
        while True:
            sep = float(overlap_status(X, X, d.pair1, d.t1, self._P, math.inf, thr, d.C, d.C2, self._cyl)[1][0])
            if not math.isnan(sep):
                return sep
            d.grow(2 * d.C.shape[0])                       # the candidates overflowed the buffers

    def _candidates(self, X, sa: int, sb: int, d: CollisionData) -> np.ndarray:
        """Raw contact candidates (m, 10) of one *shape* pair (see kernels); a view of d.C."""
        while True:
            m = K.pair_candidates(sa, sb, X, self._P, self.threshold, d.C, d.C2, self._cyl)
            if m <= d.C.shape[0]:
                return d.C[:m]
            d.grow(m)

    # -- FCL-backed queries ------------------------------------------------------------------------

    def candidate_pairs(self, poses: np.ndarray, margin: float, pairs=None) -> np.ndarray:
        """(m, 2) body pairs whose world bounding boxes are within ``margin`` (m) of each other."""
        try:
            m = float(margin)
        except (TypeError, ValueError):
            m = math.nan
        if not 0.0 <= m < math.inf:
            raise ValueError(f"margin must be a finite distance >= 0 (m), got {margin!r}")
        margin = m
        X = self.shape_poses(poses)
        pr = self._pairs(pairs)
        if self._one_to_one:
            sel = K.broadphase(X, pr, self.pool.lo, self.pool.hi, self._valid, float(margin))
            return pr[sel]
        slo, shi = K.world_aabbs(X, self.pool.lo, self.pool.hi, self._svalid)
        n = len(self._valid)
        lo, hi = np.full((n, 3), np.inf), np.full((n, 3), -np.inf)
        np.minimum.at(lo, self._shape_body, slo)
        np.maximum.at(hi, self._shape_body, shi)
        a, b = pr[:, 0], pr[:, 1]
        ok = np.all((lo[a] <= hi[b] + margin) & (lo[b] <= hi[a] + margin), axis=1)
        return pr[ok]

    def _place(self, X, bodies, d: CollisionData) -> None:
        f = d.fcl
        if self._one_to_one:
            for b in bodies:
                f.set_pose(b, X[b])
            return
        for b in bodies:
            for s in self.shapes_of(int(b)):
                f.set_pose(s, X[s])

    def _sdf_shape(self, X, sa: int, sb: int, near: float | None = None):
        """Most negative signed distance of shape sa's tessellation vertices to shape sb.

        Returns (sd, that vertex in world).  ``near`` (m): only the vertices within ``near`` of sb's
        bounding box (in its frame) are measured; (inf, None) when there are none.  Every vertex
        farther out is outside sb by more than ``near``, so a negative minimum (a depth) is the
        same; the signed distance to a mesh costs a pass over all its triangles per vertex.
        """
        V = self.table.shape_list[sa].vertices
        R, t = X[sb][:3, :3], X[sb][:3, 3]
        Xa = X[sa]
        pts_w = V @ Xa[:3, :3].T + Xa[:3, 3]
        pts = (pts_w - t) @ R
        if near is not None:
            lo, hi = self.pool.lo[sb] - near, self.pool.hi[sb] + near
            keep = np.flatnonzero(((pts >= lo) & (pts <= hi)).all(axis=1))
            if not len(keep):
                return math.inf, None
            pts, pts_w = pts[keep], pts_w[keep]
        sd = K.sdf_points(self._P, sb, np.ascontiguousarray(pts))
        m = int(np.argmin(sd))
        return float(sd[m]), pts_w[m]

    def _sdf_min(self, X, i: int, j: int, near: float | None = None):
        """Most negative signed distance of body i's shapes' tessellation vertices to any of body j's
        shapes: (sd, that vertex in world, the same vertex); ``near`` as in :meth:`_sdf_shape`."""
        if self._one_to_one:
            sd, q = self._sdf_shape(X, i, j, near)
            return sd, q, q
        best, p = math.inf, None
        for sa in self.shapes_of(i):
            for sb in self.shapes_of(j):
                sd, q = self._sdf_shape(X, sa, sb, near)
                if sd < best:
                    best, p = sd, q
        return best, p, p

    def _contained(self, X, sa: int, sb: int) -> bool:
        """Guard for a shape entirely inside another (FCL reports no collision then): as the
        surfaces do not cross, one surface point of the inner shape decides."""
        lo, hi = K.world_aabbs(X, self.pool.lo, self.pool.hi, self._svalid)
        # the two boxes on Python floats (NaN fails every comparison, as with np.all)
        box = {sa: (lo[sa].tolist(), hi[sa].tolist()), sb: (lo[sb].tolist(), hi[sb].tolist())}
        for a, b in ((sa, sb), (sb, sa)):
            (la, ha), (lb, hb) = box[a], box[b]
            if (la[0] >= lb[0] and la[1] >= lb[1] and la[2] >= lb[2]
                    and ha[0] <= hb[0] and ha[1] <= hb[1] and ha[2] <= hb[2]):
                s = self.table.shape_list[a]
                p = X[a][:3, :3] @ s.surface_point + X[a][:3, 3]     # any one: no surface crossing
                q = np.ascontiguousarray(((p - X[b][:3, 3]) @ X[b][:3, :3]).reshape(1, 3))
                if K.sdf_points(self._P, b, q)[0] < 0:
                    return True
        return False

    def _shape_penetrating(self, X, sa: int, sb: int, d: CollisionData) -> bool:
        """FCL collide, except a touching pair (closest candidate not deeper than pen_tol); containment."""
        if d.fcl.collide(sa, sb):
            sep = self._closest(X, sa, sb, self.threshold, d)
            # colliding without a candidate within thr: deeper than the kernel's band looks
            return bool(sep == math.inf or sep < -self.pen_tol)
        return self._contained(X, sa, sb)

    def penetrating(self, poses: np.ndarray, pairs=None, *, data: CollisionData | None = None) -> list:
        """Body pairs (i, j) that interpenetrate by more than ``pen_tol`` (touching pairs are not listed).

        Which shape pairs meet is compiled (:mod:`._intersect_kernel`, FCL's collide semantics; FCL
        itself for a cylinder); a pair that meets interpenetrates when its closest contact
        candidate is deeper than ``pen_tol`` or it has none within the threshold (deeper than the
        contact kernel's band), one whose bounds nest when a surface point of one is inside the
        other."""
        d = self.data if data is None else data
        X = self.shape_poses(poses)
        pr = self._pairs(pairs)
        while True:
            k = IX.meeting_pairs(X, pr, self._bstart, self._bcount, self._P, self._svalid, d.MP)
            if k <= d.MP.shape[0]:
                break
            d.MP = np.empty((2 * k, 4), np.int64)
        hit = []
        for p, sa, sb, ans in d.MP[:k].tolist():
            if hit and hit[-1] == p:
                continue                    # (rows come pair by pair: this pair is decided)
            if ans == IX.MEET:
                sep = self._closest(X, sa, sb, self.threshold, d)
                pen = sep == math.inf or sep < -self.pen_tol
            elif ans == IX.NESTED:
                pen = self._contained(X, sa, sb)
            else:                           # a cylinder: FCL's exact one
                pen = self._fcl_penetrating(X, sa, sb, d)
            if pen:
                hit.append(p)
        return [tuple(pr[p].tolist()) for p in hit]

    def separations(self, poses: np.ndarray, pairs=None, *, margin: float = 0.01,
                    data: CollisionData | None = None):
        """(smallest separation over the pairs, that pair), or (inf, None) when none is within ``margin``.

        Separations come from FCL ``distance``; a pair that interpenetrates reports its depth
        estimate as a negative separation (see :meth:`distance`).  Pairs whose bounding boxes are
        farther apart than ``margin`` (m) are not measured.
        """
        d = self.data if data is None else data
        X = self.shape_poses(poses)
        cand = self.candidate_pairs(poses, margin, pairs)
        best, arg = math.inf, None
        if len(cand) == 0:
            return best, arg
        self._place(X, np.unique(cand), d)
        for i, j in cand:
            dist = self._pair_distance(X, int(i), int(j), d)[0]
            if dist < best:
                best, arg = dist, (int(i), int(j))
        return best, arg

    def pair_separations(self, poses: np.ndarray, pairs, *, data: CollisionData | None = None) -> np.ndarray:
        """Separation (m) of each given body pair (FCL distance; minus the depth estimate if interpenetrating)."""
        d = self.data if data is None else data
        X = self.shape_poses(poses)
        pr = self._checked_pairs(pairs)
        self._place(X, np.unique(pr), d)
        return np.array([self._pair_distance(X, int(i), int(j), d)[0] for i, j in pr])

    def contact_separations(self, poses: np.ndarray, pairs, threshold: float | None = None, *,
                            data: CollisionData | None = None) -> np.ndarray:
        """Separation (m) of each body pair as the contact kernel sees it: its closest contact
        candidate within ``threshold`` (default the model's; at most MAX_THRESHOLD), 0 when
        touching within ``pen_tol``, inf when no candidate is that near.  What the impact search
        needs (is the pair within the threshold, i.e. will its contact be seen?), compiled, instead of
        FCL's exact distance (:meth:`pair_separations`; the pairs beyond the threshold are not
        measured)."""
        try:
            thr = self.threshold if threshold is None else float(threshold)
        except (TypeError, ValueError):
            thr = math.nan
        if not thr > 0.0:
            raise ValueError(f"threshold must be a distance > 0 (m), got {threshold!r}")
        if not thr <= MAX_THRESHOLD:
            return self.pair_separations(poses, pairs, data=data)
        d = self.data if data is None else data
        X = self.shape_poses(poses)
        out = []
        for i, j in self._checked_pairs(pairs).tolist():
            sep = min(self._closest(X, sa, sb, thr, d) for sa in self.shapes_of(i) for sb in self.shapes_of(j))
            out.append(0.0 if -self.pen_tol <= sep < 0.0 else sep)
        return np.array(out)

    def _shape_distance(self, X, sa: int, sb: int, d: CollisionData):
        """(distance, point on sa, point on sb) of one shape pair (see :meth:`distance`)."""
        f = d.fcl
        if f.collide(sa, sb):
            c = self._candidates(X, sa, sb, d)
            if len(c) and c[:, 9].min() >= -self.pen_tol:
                # touching: FCL's distance is 0 with meaningless points; the contact kernel's
                # closest candidate has the exact pair of surface points
                k = int(np.argmin(c[:, 9]))
                return max(float(c[k, 9]), 0.0), c[k, 0:3].copy(), c[k, 3:6].copy()
        if self._shape_penetrating(X, sa, sb, d):
            s1, p1 = self._sdf_shape(X, sa, sb)
            s2, p2 = self._sdf_shape(X, sb, sa)
            if s1 <= s2:
                return min(s1, 0.0), p1, p1
            return min(s2, 0.0), p2, p2
        dist, pa, pb = f.distance(sa, sb)
        return max(dist, 0.0), pa, pb

    def _pair_distance(self, X, i: int, j: int, d: CollisionData):
        """A body pair's distance: the minimum over its shape pairs (with that pair's points)."""
        if self._one_to_one:
            return self._shape_distance(X, i, j, d)
        best = None
        for sa in self.shapes_of(i):
            for sb in self.shapes_of(j):
                r = self._shape_distance(X, sa, sb, d)
                if best is None or r[0] < best[0]:
                    best = r
        return best

    def distance(self, i: int, j: int, poses: np.ndarray, *, data: CollisionData | None = None):
        """(d, p_i, p_j): distance (m) and closest points (world) of bodies i and j (FCL; the
        minimum over their shape pairs).

        When they interpenetrate (deeper than ``pen_tol``), ``d`` is minus an estimate of the depth
        (the deepest tessellation vertex of either body inside the other; a lower bound) and both
        points are that vertex.
        """
        i, j = self._body(i, "i"), self._body(j, "j")
        if i == j:
            raise ValueError(f"distance needs two different bodies, got body {i} ('{self.table.names[i]}') twice")
        d = self.data if data is None else data
        X = self.shape_poses(poses)
        self._place(X, (i, j), d)
        return self._pair_distance(X, i, j, d)

    def penetration_depth(self, i: int, j: int, poses: np.ndarray) -> float:
        """Depth (m, >= 0) of the deepest tessellation vertex of either body inside the other
        (of any of one's shapes inside any of the other's)."""
        i, j = self._body(i, "i"), self._body(j, "j")
        X = self.shape_poses(poses)
        # a depth is a negative distance: the vertices near the other body's box are enough
        near = self.threshold
        return max(0.0, -self._sdf_min(X, i, j, near)[0], -self._sdf_min(X, j, i, near)[0])

    def interpenetrations(self, poses: np.ndarray, pairs=None) -> list:
        """[(i, j, depth m)] for every pair that interpenetrates (see :meth:`penetrating`).  Through
        FCL's collide (:meth:`_penetrating_fcl`): this is the check of a world as it is loaded or a
        simulator built, which then does not wait for the compiled test's first compile (the warm-up
        helper compiles it meanwhile)."""
        out = []
        for i, j in self._penetrating_fcl(poses, pairs):
            out.append((i, j, self.penetration_depth(i, j, poses)))
        return out

    def _penetrating_fcl(self, poses: np.ndarray, pairs=None, data: CollisionData | None = None) -> list:
        """:meth:`penetrating` with FCL's collide in place of the compiled "do they meet" (the same
        answers but where FCL's own tolerance, ~5e-7 m at a capsule's edge, decides)."""
        d = self.data if data is None else data
        X = self.shape_poses(poses)
        return [(i, j) for i, j in self.candidate_pairs(poses, 0.0, pairs).tolist()
                if any(self._fcl_penetrating(X, sa, sb, d) for sa in self.shapes_of(i) for sb in self.shapes_of(j))]

    def _fcl_penetrating(self, X, sa: int, sb: int, d: CollisionData) -> bool:
        """:meth:`_shape_penetrating` of two shapes placed at their poses ``X`` first."""
        d.fcl.set_pose(sa, X[sa])
        d.fcl.set_pose(sb, X[sb])
        return self._shape_penetrating(X, sa, sb, d)

    def names(self, i: int) -> str:
        return self.table.names[i]

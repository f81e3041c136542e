"""Step 3 of the time step (Miller & Christensen 2003, section 4): after the trial move, is there a
new interpenetration, and if so, when did the first contact happen?

What the step guarantees (and the tests check):

* a pair that was apart at the start of the step and interpenetrates (deeper than ``pen_tol``) at
  the end of the move cuts the move at its first contact, localised by binary search (the paper's
  step 3; :func:`graspsim.collision.localize_impact`) to a separation in (0, thr];
* a pair touching at the start that overlaps at every fraction of the move is a contact already
  (its rows act): the move goes on as far as its overlap stays within half the threshold.  So
  does a pair whose first contact falls within a millionth of the move (it touched at the start).
  When that is less than a millionth of the move too, the move is taken whole: the overlap was
  there at the start, unseen by the start's test (a depth that jumps: a non-convex mesh's face
  whose prism a capsule's core enters), and cuts of nanoseconds would stall the simulation;
* a body does not pass through a thinner convex one within one step (tunnelling): a pair whose
  travel may exceed the thinner body's thickness and that ends the move apart is advanced
  conservatively (the distance shrinks by at most the pair's travel bound per unit fraction of the
  step) to its first contact.  Not for a non-convex mesh (its walls' thickness is not known; only
  the end of the move is checked, as for any pair before);
* a pair already interpenetrating at the start of the step is left to the error correction.

The common case costs one compiled call and the contact kernel the step needs anyway:
:func:`._impact_kernel.screen_pairs` bounds, per body pair, the relative travel ``T`` against a lower
bound of the start separation (bounding boxes).  A pair with ``T`` below that bound plus the
threshold can at most overlap by less than the threshold at the end, and the exact contact kernel
at the trial pose sees such an overlap: only if it reports one is FCL asked whether it is new.  The
other pairs (a fast body close to another, a tumbling box in a pile) cannot be deeper than ``T``:
the contact kernel run per pair with the threshold ``T`` (exact up to 5 mm) sees their overlap,
at the end and at the start of the move (:func:`._impact_kernel.overlap_status`, compiled).  FCL
only for a pair beyond that, the bisection of a new overlap, and the conservative advancement.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ._impact_kernel import overlap_status, screen_pairs
from .kernels import BOX, CAPSULE, CYLINDER, MESH, SPHERE
from .model import MAX_THRESHOLD

__all__ = ["body_extents", "convex_thickness", "first_impact"]

#: most distance queries of the conservative advancement of one pair in one step
MAX_ADVANCE = 32
#: halvings of the search for the largest fraction whose overlap stays within half the threshold
FALLBACK_HALVINGS = 30
#: below this fraction of the move that search gives up cutting: the overlap is a contact already
FALLBACK_MIN_FRACTION = 2.0 ** -20


def body_extents(table, pool) -> tuple[np.ndarray, np.ndarray]:
    """Per body (N,): ``radius``, an upper bound (m) of the distance of any point of its shapes from
    the body's com (the vertices for a box or mesh: a polytope's farthest point is a vertex; the
    core's ends plus the radius for a sphere, capsule or cylinder), and ``thickness``, the width (m)
    of its thinnest direction (a body passing through it travels at least that far): exact for a
    convex primitive, a lower bound for a convex mesh (:func:`convex_thickness`), 0 for any other
    mesh (possibly thin walls) and for a body of several shapes, inf for a shapeless body.
    ``pool`` is the collision model's per-shape geometry pool (``table.shape_list`` order).
    Cached on the table (immutable, as the pool derived from it): a batch builds a simulator per
    trial of one world, and a mesh's thickness test takes milliseconds."""
    got = table.__dict__.get("_body_extents")
    if got is not None:
        return got
    n = len(table)
    r, t = np.zeros(n), np.full(n, np.inf)
    start, count = table.body_shape_start, table.body_shape_count
    X_LS = np.asarray(table.shape_X_LS, float).reshape(-1, 4, 4)
    for i in range(n):
        for s in range(int(start[i]), int(start[i]) + int(count[i])):
            shape, k = table.shape_list[s], int(pool.kind[s])
            if shape is None or k not in (SPHERE, CAPSULE, CYLINDER, BOX, MESH):
                continue
            X, rad, half = X_LS[s], pool.radius[s], pool.half[s]
            if k in (BOX, MESH):
                P, grow = np.asarray(shape.vertices, float), 0.0
            else:
                P, grow = np.array([[0.0, 0.0, -half[2]], [0.0, 0.0, half[2]]]), rad
            P = P @ X[:3, :3].T + X[:3, 3]
            r[i] = max(r[i], float(np.max(np.linalg.norm(P - table.com[i], axis=1))) + grow)
            if count[i] > 1:
                t[i] = 0.0           # the gaps between a body's shapes: its thickness is not known
                continue
            t[i] = {SPHERE: 2 * rad, CAPSULE: 2 * rad, CYLINDER: 2 * min(rad, half[2]),
                    BOX: 2 * half.min()}.get(k, 0.0)
            if k == MESH:
                t[i] = convex_thickness(shape.vertices, shape.faces)
    table.__dict__["_body_extents"] = (r, t)     # (writeable: the kernels are compiled for such arrays)
    return r, t


def body_boxes(model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per body (N,): a box frame in the body frame (N, 4, 4) and its bounds ``lo``, ``hi`` (N, 3)
    that hold every shape of the body (the shape's own frame and bounds for a body of one shape;
    for several, the body frame and the box around the corners of their boxes).  Cached on the model."""
    got = model.__dict__.get("_impact_boxes")
    if got is not None:
        return got
    pool, n = model.pool, len(model.table)
    start, count = model._bstart, model._bcount
    X = np.tile(np.eye(4), (n, 1, 1))
    lo, hi = np.zeros((n, 3)), np.zeros((n, 3))
    corners = np.array([[i & 1, (i >> 1) & 1, (i >> 2) & 1] for i in range(8)], float)
    for i in range(n):
        ss = range(int(start[i]), int(start[i]) + int(count[i]))
        if len(ss) == 1:
            s = ss[0]
            X[i], lo[i], hi[i] = model._X_LS[s], pool.lo[s], pool.hi[s]
        elif len(ss) > 1:
            P = np.concatenate([(pool.lo[s] + corners * (pool.hi[s] - pool.lo[s])) @ model._X_LS[s][:3, :3].T
                                + model._X_LS[s][:3, 3] for s in ss])
            lo[i], hi[i] = P.min(axis=0), P.max(axis=0)
    got = (np.ascontiguousarray(X), lo, hi)
    model.__dict__["_impact_boxes"] = got
    return got


def convex_thickness(V: np.ndarray, F: np.ndarray, chunk: int = 256) -> float:
    """A lower bound (m) of the width of a closed mesh (vertices ``V`` (n, 3), outward triangles ``F``
    (m, 3)) in its thinnest direction: twice the distance from the vertices' mean to the nearest face
    plane (the diameter of a ball inside) if the mesh is closed (every edge shared by two triangles)
    and convex (every vertex behind every face's plane, to 1e-9 of its size), else 0."""
    V = np.asarray(V, float)
    F = np.asarray(F, np.int64)
    if len(F) < 4:
        return 0.0
    E = np.sort(np.concatenate([F[:, [0, 1]], F[:, [1, 2]], F[:, [2, 0]]]), axis=1)
    if np.any(np.unique(E, axis=0, return_counts=True)[1] != 2):
        return 0.0                                        # open (a cup): its walls may be thin
    A, B, C = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    n = np.cross(B - A, C - A)
    ln = np.linalg.norm(n, axis=1)
    ok = ln > 0
    n = n[ok] / ln[ok, None]
    off = np.einsum("ij,ij->i", n, A[ok])                  # face planes n.x = off
    tol = 1e-9 * max(float(np.ptp(V, axis=0).max()), 1e-12)
    for k in range(0, len(n), chunk):
        if (V @ n[k:k + chunk].T - off[k:k + chunk]).max() > tol:
            return 0.0
    return 2.0 * max(0.0, float((off - n @ V.mean(axis=0)).min()))


def first_impact(model, X0: np.ndarray, X1: np.ndarray, vel: np.ndarray, extents: tuple, h: float,
                 move: Callable[[float], np.ndarray], find_contacts: Callable):
    """The largest fraction of the trial move free of new interpenetration (see the module doc).

    ``model`` a :class:`~graspsim.collision.CollisionModel`; ``X0``, ``X1`` (N, 4, 4) body poses at
    the start and the end of the trial move; ``vel`` (N, 6) [v_com; w] per body (W, zeros for static
    bodies, and bodies whose prescribed motion is not part of the move); ``extents`` (radius (N,),
    thickness (N,)) from :func:`body_extents`; ``h`` the step (s); ``move(f)`` the body poses at fraction f of the move; ``find_contacts(X)``
    the step's contacts (step 4) at poses X.  Returns ``(1.0, find_contacts(X1))`` or
    ``(fraction < 1, False)``: cut the move there and find the contacts at the cut pose.
    """
    thr = model.threshold
    pairs = model.pairs
    T = np.empty(len(pairs))
    lb = np.empty(len(pairs))
    radius, thickness = extents
    bX, blo, bhi = body_boxes(model)
    fail = screen_pairs(X0, bX, pairs, blo, bhi, vel, radius, float(h),
                        thr, T, lb)
    if len(fail):
        a, b = pairs[fail, 0], pairs[fail, 1]
        frac = _check_fast_pairs(model, X0, X1, pairs[fail], T[fail], np.minimum(thickness[a], thickness[b]),
                                 move, thr)
        if frac < 1.0:
            return frac, False
    cs = find_contacts(X1)
    # (a Python min over the few separations: cheaper than numpy's reduction on a small array)
    if cs is not None and len(cs) and min(cs.separation.tolist()) < -model.pen_tol:
        # a shallow overlap (any pair's is shallower than thr now): a new one is localised too
        deep = cs.separation < -model.pen_tol
        shallow = np.unique(np.stack([cs.body_a[deep], cs.body_b[deep]], 1), axis=0)
        end = model.penetrating(X1, pairs=shallow)
        before = set(model.penetrating(X0, pairs=end)) if end else ()
        new = [p for p in end if p not in before]
        if new:
            frac = _localize(model, new, move, thr)
            if frac < 1.0:
                return frac, False
    return 1.0, cs


def _check_fast_pairs(model, X0, X1, pairs, T, thick, move, thr) -> float:
    """The fraction (1.0: the whole move) for the pairs whose travel may exceed their start
    separation plus the threshold (``T`` their travel bounds, m; ``thick`` the thinner body's
    thickness, m)."""
    # below a face by less than T is inside the body only if the body is thicker than T: a thinner
    # one (or a mesh: thin walls possible) is left to FCL
    thin = T < thick
    Tk = np.where(thin, T, np.inf)
    # the kernel answers for pairs of one-shape bodies (by shape index) that travel less than the
    # thinner body is thick (for the others it answers 3, undecided, without looking: not asked,
    # which in a grasp of a mesh object is most of them); the undecided ask FCL
    status = np.full(len(pairs), 3, np.int64)
    if thin.any():
        one = thin & (model._bcount[pairs[:, 0]] == 1) & (model._bcount[pairs[:, 1]] == 1)
        if one.any():
            sp = np.ascontiguousarray(model._bstart[pairs[one]])
            d = model.data
            status[one] = overlap_status(model.shape_poses(X0), model.shape_poses(X1), sp,
                                         np.ascontiguousarray(T[one]), model._P, model.pen_tol, MAX_THRESHOLD,
                                         d.C, d.C2, model._cyl)[0]
    cand = list(map(tuple, pairs.tolist()))                       # (i, j) as Python ints
    status_l = status.tolist()
    new = [p for p, st in zip(cand, status_l) if st == 1]
    ended = {p for p, st in zip(cand, status_l) if st in (1, 2)}
    ask = pairs[status == 3]                                      # undecided: FCL
    view = None
    if new:      # the kernel sees their overlap at every fraction of the move (depth <= T)
        from .localize import KernelPairView
        view = KernelPairView(model, new, [float(Tk[cand.index(p)]) for p in new])
    if len(ask):
        end = model.penetrating(X1, pairs=ask)
        before = set(model.penetrating(X0, pairs=end)) if end else ()   # overlapping already
        fcl_new = [p for p in end if p not in before]
        if fcl_new:
            new, view = new + fcl_new, None
        ended |= set(end)
    frac = _localize(model, new, move, thr, view) if new else 1.0
    # ended apart: passing through the other body needs a travel beyond the thinner one (of known
    # thickness: a non-convex mesh is not checked, a mid-step graze would cut its steps for nothing)
    travel = dict(zip(cand, T.tolist()))
    check = [p for p, t in zip(cand, thick.tolist()) if p not in ended and 0.0 < t <= travel[p]]
    if check:
        for p, d in zip(check, model.pair_separations(X0, check).tolist()):     # exact (FCL)
            if travel[p] >= max(d, 0.0) + thr:
                frac = min(frac, _advance(model, p, d, travel[p], X1, move, thr, frac))
    return frac


def _localize(model, new, move, thr, view=None) -> float:
    """Bisection to the first contact of the pairs ``new`` (apart at the start, interpenetrating at
    the end of the move), asking ``view`` (default: FCL through a :class:`PairView`)."""
    from .. import collision as C            # through the package: tests substitute localize_impact
    from ..errors import CollisionError

    try:
        frac = C.localize_impact(move, view or C.PairView(model, new), threshold=thr)
    except CollisionError:
        # the pair already touches (separation ~0) at the start of the step, so no fraction puts
        # it in (0, threshold]: it is a contact already -- let its rows (with error correction)
        # handle it rather than stop time
        return 1.0
    if frac >= FALLBACK_MIN_FRACTION:
        return frac
    # a pair touching at the start (separation ~0, e.g. a point dropped from a contact region) that
    # overlaps at every fraction > 0, or at every fraction beyond a millionth of the move (then its
    # start separation is within the threshold plus 1e-6 of its travel: 1 um at 400 m/s, h = 2.5
    # ms): it is a contact already.  Stepping 0 s (floored to 1 ns)
    # would repeat this step forever; instead move as far as its overlap stays within half the
    # threshold, where the contact kernel sees it and its rows act.
    lo, hi = 0.0, 1.0
    for _ in range(FALLBACK_HALVINGS):
        mid = 0.5 * (lo + hi)
        P = move(mid)
        if max(model.penetration_depth(i, j, P) for i, j in new) <= 0.5 * thr:
            lo = mid
        else:
            hi = mid
    if lo < FALLBACK_MIN_FRACTION:
        # deeper than half the threshold within a millionth of the move (a travel of 1 um at
        # 400 m/s): the overlap was there at the start, unseen by the start's test (a non-convex
        # mesh's face whose prism the core has just entered: that depth jumps), or at the edge of
        # half the threshold already.  A contact already, as above: cuts of a few ns would repeat
        # this step until the stall guard stops the simulation
        return 1.0
    return lo


def _advance(model, pair, d0: float, T: float, X1, move, thr: float, f_max: float) -> float:
    """First contact of a pair that ends the move apart but whose travel ``T`` (m, over the whole
    step) exceeds its start separation ``d0`` plus the threshold: it may have passed through the
    other body.  Conservative advancement: at fraction f with separation d (exact, FCL), no contact
    happens before f + (d - thr / 2) / T.  Returns the fraction of the first contact (within the
    threshold), or 1.0 when the pair is in contact at the end of the move (a landing), touches at
    the start (a sliding contact: its rows act) or cannot reach deeper than the threshold before
    the end (or before ``f_max``, an earlier cut)."""
    if not np.isfinite(T) or d0 <= thr:
        return 1.0
    if float(model.pair_separations(X1, [pair])[0]) <= thr:
        return 1.0
    f, d = 0.0, d0
    for _ in range(MAX_ADVANCE):
        if d + thr > T * (1.0 - f):
            return 1.0
        if d <= thr:
            return f
        f += (d - 0.5 * thr) / T
        if f >= f_max:
            return 1.0
        d = float(model.pair_separations(move(f), [pair])[0])
    return f

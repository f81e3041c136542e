"""Numba kernels: broad phase and contact regions of every touching pair, in one call.

Conventions (all lengths in metres):

* ``X`` (N, 4, 4): world poses of the *shape* frames S (body pose times the shape's ``X_LS``).
* A contact candidate (row of ``C``) is ``[p_a (3), p_b (3), n (3), sep]`` in the world frame:
  ``p_a`` on body a's surface, ``p_b`` on body b's, ``n`` the unit normal pointing from a towards b,
  ``sep`` the signed separation (> 0 apart, < 0 interpenetrating).

Region rules (see docs/collision.md):

* polyhedron-polyhedron (box, mesh): every sharp edge of either body (flat edges that only split a
  face are skipped) is clipped, in closed form, to the prism of each face of the other body that
  it looks at and to the height band [-thr, thr] above that face; the clipped ends are contact
  points with the face's normal and the (signed) height as separation.  These are the vertices of
  the contact polygon: vertices of either face inside the other, and crossings of the edges with
  the region's boundary.  Only when a pair has no such face contact do sharp edge-edge and
  vertex-edge closest points (within thr) count, with the normal along the closest points.
* round shapes (sphere = point + radius, capsule = segment + radius): the part of the core that
  projects inside a face with its surface within the threshold (closed form), plus, without face
  contacts, the closest points to sharp edges/vertices (and the overlap ends of an edge parallel to
  the capsule): a capsule lying on a face gives a line, a capsule crossing an edge one point (not
  the 2-3 mm band its curvature would give).
* cylinder against a polyhedron: per face, the cylinder's lowest generator segment (or its rim,
  when a cap lies flat) clipped to the face; without face contacts, the sharp edges against the
  side and the sharp vertices against the whole cylinder, in closed form.
* the candidates of a pair are grouped by normal, clustered within ``region_tol`` in the tangent
  plane (each cluster represented by its point of smallest separation) and reduced: one point, the
  two ends of a line, or the vertices of the 2-D convex hull.
"""
from __future__ import annotations

import math

import numpy as np
from .._borrow import borrow
from .._jit import njit

from .primitives import (FACE, VA, VC, EAB, add, axpy, closest_pt_seg, closest_pt_tri, closest_seg_seg,
                         closest_seg_tri, cross, cylinder_closest, dist2, dot, mul, neg, norm, sub, tangent_basis, v3)

SPHERE, CAPSULE, BOX, CYLINDER, MESH = 0, 1, 2, 3, 4

# indices into the pool tuple (GeometryPool.arrays())
P_KIND, P_RAD, P_HALF, P_LO, P_HI, P_VOFF, P_VCNT, P_TOFF, P_TCNT, P_EOFF, P_ECNT, P_V, P_T, P_N, P_E, P_PV, \
    P_PE, P_TBLO, P_TBHI, P_TE, P_ESH, P_VSH, P_EN, P_COFF, P_CCNT, P_CLT, P_CLLO, P_CLHI, P_CLS = range(29)

LINE_TOL = 1e-6        # m, hull vertices closer than this to the line of their neighbours are dropped
PARALLEL_SIN = 1e-4    # a segment and an axis making a smaller angle are parallel (line contact)
RIM_SAMPLES = 16       # points on a cylinder's rim when its cap lies flat on a face
#: a segment crossing a face's height band at a steeper angle than 30 deg contributes only its own
#: ends (vertices) to the face contact, not the points where it enters/leaves the band or the
#: face's prism: those are edge-edge situations (handled with the closest-point normal)
STEEP_SIN = 0.5
FACING = 0.0175        # an edge makes face contacts only with faces its own faces look at: -n_adj.n_f > sin(1 deg)
RUN = 8                # the reduction's merge sorts start from runs of this many sorted by insertion
#: leaf clusters per super cluster (the culling hierarchy's upper level; pool.py lays them out)
SUPER = 8
#: m added to the margin of a super cluster's test: a super cluster contains its clusters exactly, so
#: it passes whenever one of them does, with room for the rounding of the carried bounds (~1e-16 m);
#: and shapes whose oriented boxes are further apart than the threshold plus this have no candidate
CULL_EPS = 1e-9


# ---------------------------------------------------------------------------------------------
# small helpers

@njit(cache=True)
def _mv(R, x):
    return (R[0, 0] * x[0] + R[0, 1] * x[1] + R[0, 2] * x[2],
            R[1, 0] * x[0] + R[1, 1] * x[1] + R[1, 2] * x[2],
            R[2, 0] * x[0] + R[2, 1] * x[1] + R[2, 2] * x[2])


@njit(cache=True)
def _mtv(R, x):
    return (R[0, 0] * x[0] + R[1, 0] * x[1] + R[2, 0] * x[2],
            R[0, 1] * x[0] + R[1, 1] * x[1] + R[2, 1] * x[2],
            R[0, 2] * x[0] + R[1, 2] * x[1] + R[2, 2] * x[2])


@njit(cache=True)
def _rt(X):
    """Contiguous rotation (3, 3) and translation tuple of a 4x4 pose."""
    R = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            R[i, j] = X[i, j]
    return R, (X[0, 3], X[1, 3], X[2, 3])


@njit(cache=True)
def _rel(XA, XB):
    """(R, t) of frame A in frame B: x_B = R x_A + t."""
    R = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            s = 0.0
            for k in range(3):
                s += XB[k, i] * XA[k, j]
            R[i, j] = s
    # t = XB_R^T (XA_t - XB_t), summed in the same order as before (scalars: no array to allocate)
    t0 = 0.0
    t1 = 0.0
    t2 = 0.0
    for k in range(3):
        d = XA[k, 3] - XB[k, 3]
        t0 += XB[k, 0] * d
        t1 += XB[k, 1] * d
        t2 += XB[k, 2] * d
    return R, (t0, t1, t2)


@njit(cache=True)
def _emit(C, cnt, R, t, pa, pb, n, sep, flip):
    """Append a candidate given in a frame (R, t) -> world; swap the roles when ``flip``."""
    if cnt < C.shape[0]:
        wa = add(_mv(R, pa), t)
        wb = add(_mv(R, pb), t)
        wn = _mv(R, n)
        if flip:
            wa, wb = wb, wa
            wn = neg(wn)
        for j in range(3):
            C[cnt, j] = wa[j]
            C[cnt, 3 + j] = wb[j]
            C[cnt, 6 + j] = wn[j]
        C[cnt, 9] = sep
    return cnt + 1


@njit(cache=True)
def _box_overlap(alo, ahi, blo, bhi, m):
    for k in range(3):
        if alo[k] > bhi[k] + m or blo[k] > ahi[k] + m:
            return False
    return True


@njit(cache=True)
def _seg_box(p, q, blo, bhi, m):
    """Whether the bounds of segment pq meet the box [blo, bhi] inflated by m."""
    for k in range(3):
        if min(p[k], q[k]) > bhi[k] + m or max(p[k], q[k]) < blo[k] - m:
            return False
    return True


@njit(cache=True)
def _aabb_in(R, t, lo, hi):
    """Bounds (arrays) of the box [lo, hi] (frame A) after x -> R x + t."""
    olo = np.empty(3)
    ohi = np.empty(3)
    for i in range(3):
        c = t[i]
        h = 0.0
        for k in range(3):
            c += R[i, k] * 0.5 * (lo[k] + hi[k])
            h += abs(R[i, k]) * 0.5 * (hi[k] - lo[k])
        olo[i] = c - h
        ohi[i] = c + h
    return olo, ohi


@njit(cache=True)
def _boxes_meet(lo, hi, r, blo, bhi, m):
    """Do the bounds lo[r], hi[r] meet [blo, bhi] inflated by m?"""
    for j in range(3):
        if lo[r, j] > bhi[j] + m or hi[r, j] < blo[j] - m:
            return False
    return True


@njit(cache=True)
def _carried_meets(lo, hi, r, R, t, blo, bhi, m):
    """Do the bounds lo[r], hi[r], carried by x' = R x + t into another frame (their bounding box
    there), meet [blo, bhi] inflated by m?"""
    for j in range(3):
        c = t[j]
        e = 0.0
        for k in range(3):
            ck = 0.5 * (lo[r, k] + hi[r, k])
            ek = 0.5 * (hi[r, k] - lo[r, k])
            c += R[j, k] * ck
            e += abs(R[j, k]) * ek
        if c - e > bhi[j] + m or c + e < blo[j] - m:
            return False
    return True


@njit(cache=True)
def _n_super(ncl):
    """Super clusters of a shape with ``ncl`` clusters (none for a few: the leaves are tested directly)."""
    return (ncl + SUPER - 1) // SUPER if ncl > SUPER else 0


@njit(cache=True)
def _cull(P, ib, blo, bhi, m, carried, R, t, olo, ohi):
    """Indices (ascending) of body ib's triangles whose bounds meet [blo, bhi] inflated by m (ib's
    shape frame); clusters of triangles whose joint bounds miss are skipped whole, and so are super
    clusters (SUPER consecutive clusters; their rows follow the shape's clusters) that miss by more
    than CULL_EPS.  With ``carried``, a triangle (cluster) must also meet [olo, ohi] + m in the other
    body's frame, its bounds carried there by x_O = R x + t: [blo, bhi] is then the other body's
    bounds seen from ib, which for a large or tilted body (a table under a held mug) covers all of
    ib, and the second test is the tight one."""
    nt = P[P_TCNT][ib]
    t0 = P[P_TOFF][ib]
    t_end = t0 + nt
    CLT = P[P_CLT]
    CLS = P[P_CLS]
    CLLO = P[P_CLLO]
    CLHI = P[P_CLHI]
    TBLO = P[P_TBLO]
    TBHI = P[P_TBHI]
    c0 = P[P_COFF][ib]
    c1 = c0 + P[P_CCNT][ib]
    nsup = _n_super(c1 - c0)
    ms = m + CULL_EPS
    out = np.empty(nt, np.int64)
    k = 0
    for s in range(max(nsup, 1)):
        ca = c0
        cb = c1
        if nsup:
            r = c1 + s
            if not _boxes_meet(CLLO, CLHI, r, blo, bhi, ms) or (
                    carried and not _carried_meets(CLLO, CLHI, r, R, t, olo, ohi, ms)):
                continue
            ca = c0 + s * SUPER
            cb = min(ca + SUPER, c1)
        for c in range(ca, cb):
            if not _boxes_meet(CLLO, CLHI, c, blo, bhi, m) or (
                    carried and not _carried_meets(CLLO, CLHI, c, R, t, olo, ohi, m)):
                continue
            end = CLS[c + 1] if c + 1 < c1 else t_end
            for x in range(CLS[c], end):
                tr = CLT[x]
                if _boxes_meet(TBLO, TBHI, tr, blo, bhi, m) and (
                        not carried or _carried_meets(TBLO, TBHI, tr, R, t, olo, ohi, m)):
                    out[k] = tr
                    k += 1
    # ascending (distinct indices): a few by insertion, many by marking them -- no library sort
    if k <= 32:
        _insertion_sort(out, k)
    else:
        mark = np.zeros(nt, np.bool_)
        for i in range(k):
            mark[out[i] - t0] = True
        k = 0
        for j in range(nt):
            if mark[j]:
                out[k] = t0 + j
                k += 1
    return out[:k]


@njit(cache=True)
def _insertion_sort(a, k):
    """a[:k] ascending in place (a few entries: cheaper than a library sort, and none to compile)."""
    for i in range(1, k):
        e = a[i]
        j = i
        while j > 0 and a[j - 1] > e:
            a[j] = a[j - 1]
            j -= 1
        a[j] = e


@njit(cache=True, inline="always")
def _cull_tris(P, ib, blo, bhi, m):
    """:func:`_cull` in ib's frame only.  Inlined (numba's IR): as a call of its own it passed the
    29-array geometry tuple twice, by value, with a reference taken to every array each time
    (2 us of the mug hold's 34 us contact query); :func:`_cull` itself stays a call (inlined into
    its eight call sites it added seconds to the first run's compile)."""
    # a writable identity (not a global constant, which numba types read-only: a second compile of _cull)
    return _cull(P, ib, blo, bhi, m, False, np.eye(3), (0.0, 0.0, 0.0), blo, bhi)


@njit(cache=True)
def _tri(P, tr):
    V = P[P_V]
    T = P[P_T]
    return v3(V[T[tr, 0]]), v3(V[T[tr, 1]]), v3(V[T[tr, 2]]), v3(P[P_N][tr])


@njit(cache=True)
def _signed_nearest(P, x, d2, y, f, tr):
    """(signed distance, nearest point y) of point x whose nearest point y (squared distance d2) is
    on feature f of triangle tr (-1: none, then 1e300): the sign from the feature's pseudo-normal."""
    if tr < 0:
        return 1e300, y
    pn = _feature_pn(P, tr, f)
    d = math.sqrt(d2)
    return (d if dot(sub(x, y), pn) >= 0.0 else -d), y


@njit(cache=True)
def _signed_poly(x, P, tris):
    """Signed distance of point x to the polyhedron over triangles ``tris`` (sign: pseudo-normals).

    Returns (sd, nearest point y); sd = 1e300 when ``tris`` is empty.
    """
    best = 1e300
    by = x
    bf = 0
    bt = -1
    for t in tris:
        a, b, c, n = _tri(P, t)
        y, f = closest_pt_tri(x, a, b, c)
        d2 = dist2(x, y)
        if d2 < best:
            best = d2
            by = y
            bf = f
            bt = t
    return _signed_nearest(P, x, best, by, bf, bt)


@njit(cache=True)
def _feature_sharp(P, tr, f):
    """Whether feature f (edge or vertex code) of triangle tr is a sharp edge/vertex."""
    if f == FACE:
        return False
    if f <= VC:
        return P[P_VSH][P[P_T][tr, f - VA]]
    return P[P_ESH][P[P_TE][tr, f - EAB]]


@njit(cache=True)
def _feature_pn(P, tr, f):
    if f == FACE:
        return v3(P[P_N][tr])
    if f <= VC:
        return v3(P[P_PV][tr, f - VA])
    return v3(P[P_PE][tr, f - EAB])


@njit(cache=True)
def _face_clip(p, q, a, b, c, n, hlo, hhi):
    """Parameters [s0, s1] of segment pq that project inside triangle abc (unit normal n) with
    height h(s) = (p(s) - a).n in [hlo, hhi] (empty when s0 > s1); also h0 = h(0), hd = dh/ds."""
    s0 = 0.0
    s1 = 1.0
    d = sub(q, p)
    for k in range(3):
        if k == 0:
            u = a
            w = b
        elif k == 1:
            u = b
            w = c
        else:
            u = c
            w = a
        mvec = cross(n, sub(w, u))  # in-plane normal of edge uw, pointing inside
        f0 = dot(sub(p, u), mvec)
        fd = dot(d, mvec)
        if abs(fd) <= 1e-300:
            if f0 < 0.0:
                return 1.0, 0.0, 0.0, 0.0
        elif fd > 0.0:
            s0 = max(s0, -f0 / fd)
        else:
            s1 = min(s1, -f0 / fd)
        if s0 > s1:
            return 1.0, 0.0, 0.0, 0.0
    h0 = dot(sub(p, a), n)
    hd = dot(d, n)
    if abs(hd) <= 1e-300:
        if h0 > hhi or h0 < hlo:
            return 1.0, 0.0, h0, hd
    elif hd > 0.0:
        s1 = min(s1, (hhi - h0) / hd)
        s0 = max(s0, (hlo - h0) / hd)
    else:
        s0 = max(s0, (hhi - h0) / hd)
        s1 = min(s1, (hlo - h0) / hd)
    return s0, s1, h0, hd


@njit(cache=True)
def _face_clip_m(p, d, h0, TD, j, hlo, hhi):
    """:func:`_face_clip` of segment p + s d against triangle row j of ``TD`` (corners, normal,
    in-plane side normals: see _poly_pass), h0 = (p - a).n given: the same arithmetic, so the same
    numbers."""
    s0 = 0.0
    s1 = 1.0
    for k in range(3):
        u = (TD[j, 3 * k], TD[j, 3 * k + 1], TD[j, 3 * k + 2])
        mvec = (TD[j, 12 + 3 * k], TD[j, 13 + 3 * k], TD[j, 14 + 3 * k])
        f0 = dot(sub(p, u), mvec)
        fd = dot(d, mvec)
        if abs(fd) <= 1e-300:
            if f0 < 0.0:
                return 1.0, 0.0, 0.0, 0.0
        elif fd > 0.0:
            s0 = max(s0, -f0 / fd)
        else:
            s1 = min(s1, -f0 / fd)
        if s0 > s1:
            return 1.0, 0.0, 0.0, 0.0
    hd = dot(d, (TD[j, 9], TD[j, 10], TD[j, 11]))
    if abs(hd) <= 1e-300:
        if h0 > hhi or h0 < hlo:
            return 1.0, 0.0, h0, hd
    elif hd > 0.0:
        s1 = min(s1, (hhi - h0) / hd)
        s0 = max(s0, (hlo - h0) / hd)
    else:
        s0 = max(s0, (hhi - h0) / hd)
        s1 = min(s1, (hlo - h0) / hd)
    return s0, s1, h0, hd


# ---------------------------------------------------------------------------------------------
# pair kernels

@njit(cache=True)
def _poly_pass(ia, ib, X, P, thr, C, cnt, C2, cnt2, flip, sharp):
    """Edges of polyhedron ia against faces of polyhedron ib, in ib's frame.

    Face contacts go to C (the edge clipped to the face's prism and height band [-thr, thr]);
    with ``sharp``, contacts of sharp edges with sharp edges/vertices go to C2.  Returns
    (cnt, cnt2, near): ``near`` is False when no edge came within thr of a triangle's plane inside
    its bounds, in which case the same pass with ``sharp`` cannot find anything either.
    """
    R, t = _rel(X[ia], X[ib])
    V = P[P_V]
    E = P[P_E]
    TE = P[P_TE]
    ESH = P[P_ESH]
    v0 = P[P_VOFF][ia]
    nv = P[P_VCNT][ia]
    e0 = P[P_EOFF][ia]
    blo = P[P_LO][ib]
    bhi = P[P_HI][ib]
    # only ia's sharp edges near ib's bounds can touch ib: the edges of ia's triangles that meet
    # the bounds of ib's box seen in ia's frame (x_A = R^T (x_B - t)), inflated by 2 thr
    # the two pairs of bounds below in one allocation (rows of a C array: the same array type)
    bounds = np.empty((4, 3))
    clo, chi, alo, ahi = bounds[0], bounds[1], bounds[2], bounds[3]
    for j in range(3):
        clo[j] = np.inf
        chi[j] = -np.inf
        alo[j] = np.inf
        ahi[j] = -np.inf
    for corner in range(8):
        cb = (bhi[0] if corner & 1 else blo[0], bhi[1] if corner & 2 else blo[1], bhi[2] if corner & 4 else blo[2])
        for i in range(3):
            x = 0.0
            for k in range(3):
                x += R[k, i] * (cb[k] - t[k])
            clo[i] = min(clo[i], x)
            chi[i] = max(chi[i], x)
    tris_a = _cull(P, ia, clo, chi, 2.0 * thr, True, R, t, blo, bhi)
    if tris_a.size == 0:
        return cnt, cnt2, False
    seen = np.zeros(P[P_ECNT][ia], np.bool_)
    edges = np.empty(3 * tris_a.size, np.int64)
    ne_ = 0
    for tr in tris_a:
        for k in range(3):
            e = TE[tr, k]
            if ESH[e] and not seen[e - e0]:   # an edge inside a flat face never bounds a region
                seen[e - e0] = True
                edges[ne_] = e
                ne_ += 1
    # ascending (the edges are distinct: any sort gives the same order); a few by insertion, many
    # by a scan of ``seen`` -- no library sort to compile on the first run
    if ne_ <= 32:
        _insertion_sort(edges, ne_)
    else:
        ne_ = 0
        for j in range(seen.shape[0]):
            if seen[j]:
                edges[ne_] = e0 + j
                ne_ += 1
    edges = edges[:ne_]
    # ia's vertices on those edges, in ib's frame
    VA_ = np.empty((nv, 3))
    done = np.zeros(nv, np.bool_)
    for e in edges:
        for side in range(2):
            k = E[e, side] - v0
            if done[k]:
                continue
            done[k] = True
            x = add(_mv(R, V[v0 + k]), t)
            for j in range(3):
                VA_[k, j] = x[j]
    # the edges that meet ib's bounds, and their joint bounds (ib's triangles are culled by these:
    # a long edge far from ib, e.g. a table's rim around a mug, no longer widens them)
    nl = 0
    for e in edges:
        p = v3(VA_[E[e, 0] - v0])
        q = v3(VA_[E[e, 1] - v0])
        if not _seg_box(p, q, blo, bhi, thr):
            continue
        edges[nl] = e
        nl += 1
        for j in range(3):
            alo[j] = min(alo[j], p[j], q[j])
            ahi[j] = max(ahi[j], p[j], q[j])
    if nl == 0:
        return cnt, cnt2, False
    edges = edges[:nl]
    tris = _cull_tris(P, ib, alo, ahi, thr)
    if tris.size == 0:
        return cnt, cnt2, False
    TBlo = P[P_TBLO]
    TBhi = P[P_TBHI]
    EN = P[P_EN]
    RB, tB = _rt(X[ib])
    # ib's triangles once for all edges: corners, normal and the in-plane normals of the sides
    # (what _face_clip computes per edge-triangle pair)
    TD = np.empty((tris.size, 21))
    for j in range(tris.size):
        a, b, c, n = _tri(P, tris[j])
        m0 = cross(n, sub(b, a))
        m1 = cross(n, sub(c, b))
        m2 = cross(n, sub(a, c))
        for i in range(3):
            TD[j, i] = a[i]
            TD[j, 3 + i] = b[i]
            TD[j, 6 + i] = c[i]
            TD[j, 9 + i] = n[i]
            TD[j, 12 + i] = m0[i]
            TD[j, 15 + i] = m1[i]
            TD[j, 18 + i] = m2[i]
    near = False
    for e in edges:
        p = v3(VA_[E[e, 0] - v0])
        q = v3(VA_[E[e, 1] - v0])
        d = sub(q, p)
        Ld = norm(d)
        n1 = _mv(R, EN[e, 0])  # normals of the edge's faces, in ib's frame
        n2 = _mv(R, EN[e, 1])
        for j in range(tris.size):
            tr = tris[j]
            if not _seg_box(p, q, TBlo[tr], TBhi[tr], thr):
                continue
            a = (TD[j, 0], TD[j, 1], TD[j, 2])
            n = (TD[j, 9], TD[j, 10], TD[j, 11])
            hp = dot(sub(p, a), n)
            hq = dot(sub(q, a), n)
            if (hp > thr and hq > thr) or (hp < -thr and hq < -thr):
                continue  # the edge never comes within thr of the triangle's plane
            near = True
            b = (TD[j, 3], TD[j, 4], TD[j, 5])
            c = (TD[j, 6], TD[j, 7], TD[j, 8])
            if not sharp:
                if -dot(n1, n) <= FACING and -dot(n2, n) <= FACING:
                    continue  # grazing: neither of the edge's faces looks at this face
                s0, s1, h0, hd = _face_clip_m(p, d, hp, TD, j, -thr, thr)
                if s0 <= s1:
                    steep = abs(hd) > STEEP_SIN * Ld
                    if s0 == 0.0 or not steep:
                        x = axpy(s0, d, p)
                        h = h0 + s0 * hd
                        cnt = _emit(C, cnt, RB, tB, x, axpy(-h, n, x), neg(n), h, flip)
                    if s1 > s0 and (s1 == 1.0 or not steep):
                        x = axpy(s1, d, p)
                        h = h0 + s1 * hd
                        cnt = _emit(C, cnt, RB, tB, x, axpy(-h, n, x), neg(n), h, flip)
            else:
                s, x, y, d2, f = closest_seg_tri(p, q, a, b, c, n)
                if d2 <= thr * thr and _feature_sharp(P, tr, f):
                    pn = _feature_pn(P, tr, f)
                    dd = math.sqrt(d2)
                    out = dot(sub(x, y), pn) >= 0.0
                    if dd > 1e-12:
                        nn = mul(sub(y, x), 1.0 / dd) if out else mul(sub(x, y), 1.0 / dd)
                    else:
                        nn = neg(pn)
                    cnt2 = _emit(C2, cnt2, RB, tB, x, y, nn, dd if out else -dd, flip)
    return cnt, cnt2, near


@njit(cache=True)
def _round_poly(ia, ib, X, P, thr, C, cnt, C2, cnt2, flip):
    """Sphere/capsule ia against polyhedron ib (box, mesh or a cylinder's prism), in ib's frame."""
    R, t = _rel(X[ia], X[ib])
    r = P[P_RAD][ia]
    hl = P[P_HALF][ia][2]
    ax = (R[0, 2], R[1, 2], R[2, 2])
    p = axpy(-hl, ax, t)
    q = axpy(hl, ax, t)
    lo = np.empty(3)
    hi = np.empty(3)
    for j in range(3):
        lo[j] = min(p[j], q[j]) - r
        hi[j] = max(p[j], q[j]) + r
    tris = _cull_tris(P, ib, lo, hi, thr)
    if tris.size == 0:
        return cnt, cnt2
    V = P[P_V]
    T = P[P_T]
    ESH = P[P_ESH]
    TE = P[P_TE]
    RB, tB = _rt(X[ib])
    band = r + thr
    d = sub(q, p)
    L = 2.0 * hl
    for tr in tris:
        a, b, c, n = _tri(P, tr)
        hp = dot(sub(p, a), n)
        hq = dot(sub(q, a), n)
        if (hp > band and hq > band) or (hp < -band and hq < -band):
            continue
        s, x, y, d2, f = closest_seg_tri(p, q, a, b, c, n)
        if d2 > band * band:
            continue
        # face region: core in front of the face, surface within thr: 0 <= h <= r + thr
        s0, s1, h0, hd = _face_clip(p, q, a, b, c, n, 0.0, band)
        if s0 <= s1:
            steep = abs(hd) > STEEP_SIN * L
            if s0 == 0.0 or not steep:
                x0 = axpy(s0, d, p)
                h = h0 + s0 * hd
                cnt = _emit(C, cnt, RB, tB, axpy(-r, n, x0), axpy(-h, n, x0), neg(n), h - r, flip)
            if s1 > s0 and hl > 0.0 and (s1 == 1.0 or not steep):
                x0 = axpy(s1, d, p)
                h = h0 + s1 * hd
                cnt = _emit(C, cnt, RB, tB, axpy(-r, n, x0), axpy(-h, n, x0), neg(n), h - r, flip)
        # sharp edges / vertices: the closest point; for an edge parallel to the core, the overlap ends
        if _feature_sharp(P, tr, f):
            dd = math.sqrt(d2)
            if dd > 1e-12:
                nn = mul(sub(y, x), 1.0 / dd)
                cnt2 = _emit(C2, cnt2, RB, tB, axpy(r, nn, x), y, nn, dd - r, flip)
        if hl > 0.0:
            u = mul(d, 1.0 / L)
            for k in range(3):
                if not ESH[TE[tr, k]]:
                    continue
                ea = v3(V[T[tr, k]])
                eb = v3(V[T[tr, (k + 1) % 3]])
                ed = sub(eb, ea)
                if norm(cross(u, ed)) >= PARALLEL_SIN * norm(ed):
                    continue
                t0 = dot(sub(ea, p), u) / L
                t1 = dot(sub(eb, p), u) / L
                lo_ = max(0.0, min(t0, t1))
                hi_ = min(1.0, max(t0, t1))
                if lo_ > hi_:
                    continue
                for tt in (lo_, hi_):
                    xc = axpy(tt, d, p)
                    yc, _ = closest_pt_seg(xc, ea, eb)
                    dv = sub(yc, xc)
                    dd = norm(dv)
                    if dd > 1e-12 and dd - r <= thr:
                        nn = mul(dv, 1.0 / dd)
                        cnt2 = _emit(C2, cnt2, RB, tB, axpy(r, nn, xc), yc, nn, dd - r, flip)
    return cnt, cnt2


@njit(cache=True)
def _round_round(ia, ib, X, P, thr, C, cnt):
    """Sphere/capsule against sphere/capsule (world frame): one point, or a line for parallel capsules."""
    ra = P[P_RAD][ia]
    rb = P[P_RAD][ib]
    ha = P[P_HALF][ia][2]
    hb = P[P_HALF][ib][2]
    XA = X[ia]
    XB = X[ib]
    ua = (XA[0, 2], XA[1, 2], XA[2, 2])
    ub = (XB[0, 2], XB[1, 2], XB[2, 2])
    ca = (XA[0, 3], XA[1, 3], XA[2, 3])
    cb = (XB[0, 3], XB[1, 3], XB[2, 3])
    pa = axpy(-ha, ua, ca)
    qa = axpy(ha, ua, ca)
    pb = axpy(-hb, ub, cb)
    qb = axpy(hb, ub, cb)
    s, tt, xa, xb = closest_seg_seg(pa, qa, pb, qb)
    I = np.eye(3)
    z = (0.0, 0.0, 0.0)
    params = np.empty(3)
    params[0] = s
    npar = 1
    if ha > 0.0 and hb > 0.0 and norm(cross(ua, ub)) < PARALLEL_SIN:
        # parallel capsules: the overlap of the two segments along a's axis
        La = 2 * ha
        t0 = dot(sub(pb, pa), ua) / La
        t1 = dot(sub(qb, pa), ua) / La
        lo_ = max(0.0, min(t0, t1))
        hi_ = min(1.0, max(t0, t1))
        if lo_ <= hi_:
            params[1] = lo_
            params[2] = hi_
            npar = 3
    for k in range(npar):
        x = axpy(params[k], sub(qa, pa), pa)
        y, _ = closest_pt_seg(x, pb, qb)
        dv = sub(y, x)
        d = norm(dv)
        sep = d - ra - rb
        if sep > thr:
            continue
        n = mul(dv, 1.0 / d) if d > 1e-12 else (0.0, 0.0, 1.0)
        cnt = _emit(C, cnt, I, z, axpy(ra, n, x), axpy(-rb, n, y), n, sep, False)
    return cnt


@njit(cache=True)
def _cyl_sphere(ia, ib, X, P, thr, C, cnt, flip):
    """Cylinder ia against sphere ib (cylinder frame)."""
    R, t = _rel(X[ib], X[ia])
    rb = P[P_RAD][ib]
    q, sd, nrm = cylinder_closest(t, P[P_RAD][ia], P[P_HALF][ia][2])
    sep = sd - rb
    if sep <= thr:
        RA, tA = _rt(X[ia])
        cnt = _emit(C, cnt, RA, tA, q, axpy(-rb, nrm, t), nrm, sep, flip)
    return cnt


@njit(cache=True)
def _cyl_poly(ia, ib, X, P, thr, C, cnt, C2, cnt2, flip):
    """Cylinder ia against polyhedron ib, in ib's frame (see module docstring)."""
    R, t = _rel(X[ia], X[ib])
    r = P[P_RAD][ia]
    hl = P[P_HALF][ia][2]
    ax = (R[0, 2], R[1, 2], R[2, 2])
    e1 = (R[0, 0], R[1, 0], R[2, 0])
    e2 = (R[0, 1], R[1, 1], R[2, 1])
    lo, hi = _aabb_in(R, t, P[P_LO][ia], P[P_HI][ia])
    tris = _cull_tris(P, ib, lo, hi, thr)
    if tris.size == 0:
        return cnt, cnt2
    V = P[P_V]
    E = P[P_E]
    ESH = P[P_ESH]
    VSH = P[P_VSH]
    RB, tB = _rt(X[ib])
    # (a) faces of ib against the cylinder's lowest generator / flat cap
    for tr in tris:
        a, b, c, n = _tri(P, tr)
        na = dot(n, ax)
        u = axpy(na, ax, neg(n))  # direction in the cap plane towards the face
        lu = norm(u)
        if 2.0 * r * lu <= thr:
            # a cap lies flat on the face: points of the lower cap's rim inside the triangle
            cc = axpy(-hl if na > 0.0 else hl, ax, t)
            for k in range(RIM_SAMPLES):
                ang = 2.0 * math.pi * k / RIM_SAMPLES
                x = axpy(r * math.cos(ang), e1, axpy(r * math.sin(ang), e2, cc))
                s0, s1, h0, hd = _face_clip(x, x, a, b, c, n, -thr, thr)
                if s0 <= s1:
                    cnt = _emit(C, cnt, RB, tB, x, axpy(-h0, n, x), neg(n), h0, flip)
            continue
        u = mul(u, 1.0 / lu)
        p = axpy(r, u, axpy(-hl, ax, t))
        q = axpy(r, u, axpy(hl, ax, t))
        s0, s1, h0, hd = _face_clip(p, q, a, b, c, n, -thr, thr)
        if s0 <= s1:
            d = sub(q, p)
            steep = abs(hd) > STEEP_SIN * 2.0 * hl
            if s0 == 0.0 or not steep:
                x = axpy(s0, d, p)
                h = h0 + s0 * hd
                cnt = _emit(C, cnt, RB, tB, x, axpy(-h, n, x), neg(n), h, flip)
            if s1 > s0 and (s1 == 1.0 or not steep):
                x = axpy(s1, d, p)
                h = h0 + s1 * hd
                cnt = _emit(C, cnt, RB, tB, x, axpy(-h, n, x), neg(n), h, flip)
    if cnt > 0:
        return cnt, cnt2  # edge/vertex contacts would be discarded anyway
    # (b) sharp edges of ib against the cylinder's side (closest point of the axis strictly inside)
    pa = axpy(-hl, ax, t)
    qa = axpy(hl, ax, t)
    ss = np.empty(3)
    e0 = P[P_EOFF][ib]
    for e in range(e0, e0 + P[P_ECNT][ib]):
        if not ESH[e]:
            continue
        p = v3(V[E[e, 0]])
        q = v3(V[E[e, 1]])
        if not _seg_box(p, q, lo, hi, thr):
            continue
        ed = sub(q, p)
        npar = 1
        s, te, xa, xe = closest_seg_seg(pa, qa, p, q)
        ss[0] = s
        if norm(cross(ax, ed)) < PARALLEL_SIN * norm(ed):
            t0 = dot(sub(p, pa), ax) / (2 * hl)
            t1 = dot(sub(q, pa), ax) / (2 * hl)
            ss[1] = max(0.0, min(t0, t1))
            ss[2] = min(1.0, max(t0, t1))
            if ss[1] <= ss[2]:
                npar = 3
        for k in range(npar):
            s = ss[k]
            if s <= 0.0 or s >= 1.0:
                continue
            xa = axpy(s, sub(qa, pa), pa)
            xe, _ = closest_pt_seg(xa, p, q)
            if abs(dot(sub(xe, t), ax)) >= hl:
                continue  # beside a cap, not the side
            dv = sub(xe, xa)
            dv = axpy(-dot(dv, ax), ax, dv)
            dd = norm(dv)
            if dd <= 1e-12 or dd - r > thr:
                continue
            n = mul(dv, 1.0 / dd)
            cnt2 = _emit(C2, cnt2, RB, tB, axpy(-(dd - r), n, xe), xe, n, dd - r, flip)
    # (c) sharp vertices of ib against the whole cylinder
    v0 = P[P_VOFF][ib]
    for k in range(v0, v0 + P[P_VCNT][ib]):
        if not VSH[k]:
            continue
        x = v3(V[k])
        if not _seg_box(x, x, lo, hi, thr):
            continue
        qc, sd, nrm = cylinder_closest(_mtv(R, sub(x, t)), r, hl)
        if sd > thr:
            continue
        cnt2 = _emit(C2, cnt2, RB, tB, add(_mv(R, qc), t), x, _mv(R, nrm), sd, flip)
    return cnt, cnt2


# ---------------------------------------------------------------------------------------------
# reduction of a pair's candidates to its contact set

@njit(cache=True)
def _cross2(ox, oy, ax_, ay, bx, by):
    return (ax_ - ox) * (by - oy) - (ay - oy) * (bx - ox)


@njit(cache=True)
def _lex_gt(uv, a, b):
    """Does point a come after point b in (u, v) order?"""
    return uv[a, 0] > uv[b, 0] or (uv[a, 0] == uv[b, 0] and uv[a, 1] > uv[b, 1])


@njit(cache=True)
def _lexorder(uv, idx):
    """idx sorted by (u, v), ties in their order (a stable sort: one permutation whatever the
    algorithm), bottom-up merge sort from runs of RUN sorted by insertion."""
    n = idx.size
    a = idx.copy()
    for lo in range(0, n, RUN):
        hi = min(lo + RUN, n)
        for i in range(lo + 1, hi):
            e = a[i]
            j = i
            while j > lo and _lex_gt(uv, a[j - 1], e):
                a[j] = a[j - 1]
                j -= 1
            a[j] = e
    b = np.empty(n, np.int64)
    w = RUN
    while w < n:
        for lo in range(0, n, 2 * w):
            mid = min(lo + w, n)
            hi = min(lo + 2 * w, n)
            i = lo
            j = mid
            for o in range(lo, hi):
                if i < mid and (j >= hi or not _lex_gt(uv, a[i], a[j])):   # left first on ties (stable)
                    b[o] = a[i]
                    i += 1
                else:
                    b[o] = a[j]
                    j += 1
        a, b = b, a
        w *= 2
    return a


@njit(cache=True)
def _stable_order(C, m, col):
    """Indices of rows 0..m-1 of C by increasing C[:, col], ties in row order: the permutation
    of np.argsort(kind="mergesort") (any stable sort gives it), by a bottom-up merge sort written
    out so that the first run compiles no library sort."""
    a = np.empty(m, np.int64)
    b = np.empty(m, np.int64)
    for lo in range(0, m, RUN):     # runs of RUN by insertion (stable: strict comparison)
        hi = min(lo + RUN, m)
        for i in range(lo, hi):
            x = C[i, col]
            j = i
            while j > lo and C[a[j - 1], col] > x:
                a[j] = a[j - 1]
                j -= 1
            a[j] = i
    w = RUN
    while w < m:
        for lo in range(0, m, 2 * w):
            mid = min(lo + w, m)
            hi = min(lo + 2 * w, m)
            i = lo
            j = mid
            for o in range(lo, hi):
                if i < mid and (j >= hi or C[a[i], col] <= C[a[j], col]):   # <=: left first (stable)
                    b[o] = a[i]
                    i += 1
                else:
                    b[o] = a[j]
                    j += 1
        a, b = b, a
        w *= 2
    return a


@njit(cache=True)
def _write(C, i, ia, ib, sa, sb, RS, O_ab, O_v, O_s, k):
    """Contact k from candidate row i of body pair (ia, ib): shapes (sa, sb), or RS[i] when sa < 0.

    Outputs are column blocks, so a contact set's columns are contiguous slices: O_ab (4, K)
    body_a, body_b, shape_a, shape_b; O_v (6, K, 3) point, normal, point_a, point_b, t1, t2; O_s
    (K,) separation.
    """
    if k < O_s.shape[0]:
        O_ab[0, k] = ia
        O_ab[1, k] = ib
        if sa >= 0:
            O_ab[2, k] = sa
            O_ab[3, k] = sb
        else:
            O_ab[2, k] = RS[i, 0]
            O_ab[3, k] = RS[i, 1]
        a1, a2 = tangent_basis(v3(C[i, 6:9]))
        for j in range(3):
            O_v[0, k, j] = 0.5 * (C[i, j] + C[i, 3 + j])
            O_v[1, k, j] = C[i, 6 + j]
            O_v[2, k, j] = C[i, j]
            O_v[3, k, j] = C[i, 3 + j]
            O_v[4, k, j] = a1[j]
            O_v[5, k, j] = a2[j]
        O_s[k] = C[i, 9]
    return k + 1


@njit(cache=True)
def _reduce(C, m, ia, ib, sa, sb, RS, cos_tol, region_tol, O_ab, O_v, O_s, k):
    """Group C[:m] (the candidates of body pair (ia, ib), all from shape pair (sa, sb), or, when
    sa < 0, from several: RS[row] = the row's shapes) by normal, reduce each group, append to the
    outputs from row k; return new k.

    Per group (points clustered within region_tol in the tangent plane, each cluster represented
    by its point of smallest separation): diameter <= region_tol -> one point (the closest); all within region_tol of
    the diameter's line -> the two ends (at each end the closest candidate); else the vertices of
    the 2-D convex hull, counter-clockwise about the normal, neighbours nearer than region_tol
    merged.  Outputs: see :func:`_write`.
    """
    if m == 0:
        return k
    order = _stable_order(C, m, 9)
    grp = np.empty(m, np.int64)
    gref = np.empty((m, 3))
    ng = 0
    for ii in range(m):
        i = order[ii]
        n = v3(C[i, 6:9])
        g = -1
        for gg in range(ng):
            if dot(v3(gref[gg]), n) >= cos_tol:
                g = gg
                break
        if g < 0:
            gref[ng, 0] = n[0]
            gref[ng, 1] = n[1]
            gref[ng, 2] = n[2]
            g = ng
            ng += 1
        grp[ii] = g
    idx = np.empty(m, np.int64)   # candidate row of each kept point
    uv = np.empty((m, 2))
    sep = np.empty(m)
    byu = np.empty(m, np.int64)   # the kept points by increasing u
    # a kept point whose u differs by more than this cannot be within region_tol (it fails the
    # test below, rounding included): only the kept points in that window of u are tested
    win = 1.0001 * region_tol
    for g in range(ng):
        t1, t2 = tangent_basis(v3(gref[g]))
        nk = 0
        for ii in range(m):
            if grp[ii] != g:
                continue
            i = order[ii]
            mid = mul(add(v3(C[i, 0:3]), v3(C[i, 3:6])), 0.5)
            u = dot(mid, t1)
            v = dot(mid, t2)
            # first position in byu with u >= u - win (binary search)
            lo = 0
            hi = nk
            while lo < hi:
                md = (lo + hi) // 2
                if uv[byu[md], 0] < u - win:
                    lo = md + 1
                else:
                    hi = md
            dup = False
            for q in range(lo, nk):
                j = byu[q]
                if uv[j, 0] > u + win:
                    break
                if (uv[j, 0] - u) ** 2 + (uv[j, 1] - v) ** 2 <= region_tol * region_tol:
                    dup = True
                    break
            if not dup:
                idx[nk] = i
                uv[nk, 0] = u
                uv[nk, 1] = v
                sep[nk] = C[i, 9]
                q = nk          # insert into byu, after the kept points of equal or smaller u
                while q > 0 and uv[byu[q - 1], 0] > u:
                    byu[q] = byu[q - 1]
                    q -= 1
                byu[q] = nk
                nk += 1
        # points are in order of increasing separation: point 0 is the closest
        bi = 0
        bj = 0
        bd = 0.0
        for i in range(nk):
            for j in range(i + 1, nk):
                dd = (uv[i, 0] - uv[j, 0]) ** 2 + (uv[i, 1] - uv[j, 1]) ** 2
                if dd > bd:
                    bd = dd
                    bi = i
                    bj = j
        L = math.sqrt(bd)
        if L <= region_tol:
            k = _write(C, idx[0], ia, ib, sa, sb, RS, O_ab, O_v, O_s, k)
            continue
        dx = (uv[bj, 0] - uv[bi, 0]) / L
        dy = (uv[bj, 1] - uv[bi, 1]) / L
        dev = 0.0
        for i in range(nk):
            dev = max(dev, abs((uv[i, 0] - uv[bi, 0]) * dy - (uv[i, 1] - uv[bi, 1]) * dx))
        if dev <= region_tol:
            # a line: at each end the closest candidate within region_tol of the end
            if uv[bi, 0] > uv[bj, 0] or (uv[bi, 0] == uv[bj, 0] and uv[bi, 1] > uv[bj, 1]):
                dx = -dx
                dy = -dy
            pmin = 1e300
            pmax = -1e300
            for i in range(nk):
                pr = uv[i, 0] * dx + uv[i, 1] * dy
                pmin = min(pmin, pr)
                pmax = max(pmax, pr)
            for end in range(2):
                for i in range(nk):  # first hit = smallest separation
                    pr = uv[i, 0] * dx + uv[i, 1] * dy
                    if (end == 0 and pr <= pmin + region_tol) or (end == 1 and pr >= pmax - region_tol):
                        k = _write(C, idx[i], ia, ib, sa, sb, RS, O_ab, O_v, O_s, k)
                        break
            continue
        # monotone-chain convex hull, counter-clockwise, collinear points dropped
        o = np.empty(nk, np.int64)    # 0..nk-1 (a loop, not np.arange: one library function fewer to compile)
        for i in range(nk):
            o[i] = i
        o = _lexorder(uv, o)
        H = np.empty(2 * nk + 1, np.int64)
        h = 0
        for pas in range(2):
            start = h
            for jj in range(nk):
                i = o[jj] if pas == 0 else o[nk - 1 - jj]
                while h >= start + 2:
                    a_ = H[h - 2]
                    b_ = H[h - 1]
                    cr = _cross2(uv[a_, 0], uv[a_, 1], uv[b_, 0], uv[b_, 1], uv[i, 0], uv[i, 1])
                    base = math.sqrt((uv[i, 0] - uv[a_, 0]) ** 2 + (uv[i, 1] - uv[a_, 1]) ** 2)
                    if cr <= LINE_TOL * base:
                        h -= 1
                    else:
                        break
                H[h] = i
                h += 1
            h -= 1
        # merge runs of hull vertices closer than region_tol (keep the closest of each run)
        keep = np.ones(h, np.bool_)
        for j in range(h):
            if not keep[j]:
                continue
            for jn in range(1, h):
                j2 = (j + jn) % h
                if j2 == j or not keep[j2]:
                    break
                a_ = H[j]
                b_ = H[j2]
                if (uv[a_, 0] - uv[b_, 0]) ** 2 + (uv[a_, 1] - uv[b_, 1]) ** 2 > region_tol * region_tol:
                    break
                if sep[b_] < sep[a_]:
                    H[j] = b_
                keep[j2] = False
        for j in range(h):
            if keep[j]:
                k = _write(C, idx[H[j]], ia, ib, sa, sb, RS, O_ab, O_v, O_s, k)
    return k


# ---------------------------------------------------------------------------------------------
# broad phase and driver

@njit(cache=True)
def pair_status(pairs, valid):
    """Check of body pairs (k, 2) against ``valid`` (N,) (bodies with a shape): -1 - i for the first
    pair i with an index outside [0, N), else the number of pairs with a shapeless body."""
    n = valid.shape[0]
    skip = 0
    for i in range(pairs.shape[0]):
        a = pairs[i, 0]
        b = pairs[i, 1]
        if a < 0 or a >= n or b < 0 or b >= n:
            return -1 - i
        if not (valid[a] and valid[b]):
            skip += 1
    return skip


@njit(cache=True)
def _bad_pose(X, tol):
    """Index of the first pose in ``X`` (N, 4, 4) that is not a finite rigid transform with entries
    below 1e150 in magnitude (max |R^T R - I| and the last row's distance from [0, 0, 0, 1] within
    ``tol``, and no reflection: what the contact kernels assume), or -1: the collision queries' input
    check, ~0.3 us for a world's poses.  Stricter than :func:`graspsim.spatial.rigid_problem` only
    in the 1e150 bound, so a pose it passes is a rigid transform there too."""
    for i in range(X.shape[0]):
        for j in range(4):
            for k in range(4):
                if not abs(X[i, j, k]) < 1e150:          # NaN fails too
                    return i
        if (abs(X[i, 3, 0]) > tol or abs(X[i, 3, 1]) > tol or abs(X[i, 3, 2]) > tol
                or abs(X[i, 3, 3] - 1.0) > tol):
            return i
        for a in range(3):
            for b in range(a, 3):
                d = X[i, 0, a] * X[i, 0, b] + X[i, 1, a] * X[i, 1, b] + X[i, 2, a] * X[i, 2, b]
                if abs(d - (1.0 if a == b else 0.0)) > tol:
                    return i
        # the determinant's sign, as rigid_problem computes it (a reflection mirrors normals)
        if (X[i, 0, 0] * (X[i, 1, 1] * X[i, 2, 2] - X[i, 1, 2] * X[i, 2, 1])
                - X[i, 0, 1] * (X[i, 1, 0] * X[i, 2, 2] - X[i, 1, 2] * X[i, 2, 0])
                + X[i, 0, 2] * (X[i, 1, 0] * X[i, 2, 1] - X[i, 1, 1] * X[i, 2, 0])) < 0.0:
            return i
    return -1


#: :func:`shape_frames` with these asks for the pose check alone
NO_SHAPES = np.zeros(0, np.int64)
NO_FRAMES = np.zeros((0, 4, 4))


@njit(cache=True, fastmath={"contract"})
def shape_frames(X, tol, body, X_LS):
    """The collision queries' input check and shape frames in one pass: (:func:`_bad_pose`'s answer
    for the body poses ``X`` (N, 4, 4), the shape frames X_WS = X[body[s]] X_LS[s] (S, 4, 4)); the
    frames are not computed (empty) when a pose is bad, and none are asked for with an empty
    ``body`` (the check alone, ~0.3 us for a world's poses).  Each entry is a 4-term sum of fused
    multiply-adds in k order, which is what the BLAS kernel behind ``numpy.matmul`` computes for
    these 4 x 4 products (the same bits: ``tests/test_collision.py``), without a BLAS call
    per shape."""
    i = _bad_pose(X, tol)
    if i >= 0:
        return i, np.empty((0, 4, 4))
    n = body.shape[0]
    out = np.empty((n, 4, 4))
    for s in range(n):
        b = body[s]
        for r in range(4):
            for c in range(4):
                t = 0.0
                for k in range(4):
                    t += X[b, r, k] * X_LS[s, k, c]
                out[s, r, c] = t
    return -1, out


@njit(cache=True)
def world_aabbs(X, lo, hi, valid):
    """World bounds (N, 3) lo/hi of every shape from its shape-frame bounds."""
    n = X.shape[0]
    wlo = np.empty((n, 3))
    whi = np.empty((n, 3))
    for i in range(n):
        if not valid[i]:
            wlo[i] = 1e300
            whi[i] = -1e300
            continue
        for j in range(3):
            c = X[i, j, 3]
            h = 0.0
            for k in range(3):
                ck = 0.5 * (lo[i, k] + hi[i, k])
                hk = 0.5 * (hi[i, k] - lo[i, k])
                c += X[i, j, k] * ck
                h += abs(X[i, j, k]) * hk
            wlo[i, j] = c - h
            whi[i, j] = c + h
    return wlo, whi


@njit(cache=True)
def broadphase(X, pairs, lo, hi, valid, margin):
    """Indices of ``pairs`` whose world bounds are within ``margin`` of each other."""
    wlo, whi = world_aabbs(X, lo, hi, valid)
    out = np.empty(pairs.shape[0], np.int64)
    k = 0
    for p in range(pairs.shape[0]):
        a = pairs[p, 0]
        b = pairs[p, 1]
        if _box_overlap(wlo[a], whi[a], wlo[b], whi[b], margin):
            out[k] = p
            k += 1
    return out[:k]


@njit(cache=True)
def _sat_axis(XA, XB, ax):
    """Separating axis ``ax`` (0-14) of two boxes with frames XA, XB (world 4x4): A's three axes,
    B's three, then the crosses A_p x B_q (p, q = (ax - 6) // 3, (ax - 6) % 3), not normalised."""
    if ax < 3:
        return XA[0, ax], XA[1, ax], XA[2, ax]
    if ax < 6:
        return XB[0, ax - 3], XB[1, ax - 3], XB[2, ax - 3]
    p = (ax - 6) // 3
    q = (ax - 6) % 3
    a0, a1, a2 = XA[0, p], XA[1, p], XA[2, p]
    b0, b1, b2 = XB[0, q], XB[1, q], XB[2, q]
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(cache=True)
def _obb_apart(XA, loA, hiA, XB, loB, hiB, d):
    """Are two oriented boxes (world poses ``X`` (4, 4) of their frames, bounds ``lo``/``hi`` (3,)
    there) more than ``d`` apart along one of the 15 separating axes?  Then every point of one is
    more than d from every point of the other (a projection on a unit axis never lengthens a
    distance)."""
    ca0 = XA[0, 3]
    ca1 = XA[1, 3]
    ca2 = XA[2, 3]
    cb0 = XB[0, 3]
    cb1 = XB[1, 3]
    cb2 = XB[2, 3]
    for k in range(3):
        ma = 0.5 * (loA[k] + hiA[k])
        mb = 0.5 * (loB[k] + hiB[k])
        ca0 += XA[0, k] * ma
        ca1 += XA[1, k] * ma
        ca2 += XA[2, k] * ma
        cb0 += XB[0, k] * mb
        cb1 += XB[1, k] * mb
        cb2 += XB[2, k] * mb
    d0 = cb0 - ca0
    d1 = cb1 - ca1
    d2 = cb2 - ca2
    for ax in range(15):
        l0, l1, l2 = _sat_axis(XA, XB, ax)
        n = math.sqrt(l0 * l0 + l1 * l1 + l2 * l2)
        if n < 1e-3:        # (nearly) parallel edges: no axis (skipping one only tests less)
            continue
        rA = 0.0
        rB = 0.0
        for k in range(3):
            rA += 0.5 * (hiA[k] - loA[k]) * abs(l0 * XA[0, k] + l1 * XA[1, k] + l2 * XA[2, k])
            rB += 0.5 * (hiB[k] - loB[k]) * abs(l0 * XB[0, k] + l1 * XB[1, k] + l2 * XB[2, k])
        if abs(l0 * d0 + l1 * d1 + l2 * d2) - rA - rB > d * n:
            return True
    return False


@njit(cache=True)
def _cyl_candidates(ia, ib, X, P, thr, C, C2):
    """Candidates of a cylinder against a sphere or a polyhedron: (cnt, cnt2, handled); handled is
    False for any other pair (then :func:`pair_candidates` goes on as without cylinders)."""
    ka = P[P_KIND][ia]
    kb = P[P_KIND][ib]
    cnt = 0
    cnt2 = 0
    if ka == CYLINDER and kb == SPHERE:
        return _cyl_sphere(ia, ib, X, P, thr, C, cnt, False), cnt2, True
    if kb == CYLINDER and ka == SPHERE:
        return _cyl_sphere(ib, ia, X, P, thr, C, cnt, True), cnt2, True
    if ka == CYLINDER and (kb == BOX or kb == MESH):
        cnt, cnt2 = _cyl_poly(ia, ib, X, P, thr, C, cnt, C2, cnt2, False)
        return cnt, cnt2, True
    if kb == CYLINDER and (ka == BOX or ka == MESH):
        cnt, cnt2 = _cyl_poly(ib, ia, X, P, thr, C, cnt, C2, cnt2, True)
        return cnt, cnt2, True
    return cnt, cnt2, False


@njit(cache=True)
def _raw_candidates(ia, ib, X, P, thr, C, C2, cyl):
    """Face contacts into C and sharp edge/vertex contacts into C2 of shapes ia, ib (see
    :func:`pair_candidates`): (cnt, cnt2), either may exceed its buffer."""
    # every candidate joins points of the two shapes within thr (up to rounding): none for shapes
    # whose oriented boxes are further apart (the broad phase's world boxes of a finger beside a
    # mug meet, their own boxes need not)
    if _obb_apart(X[ia], P[P_LO][ia], P[P_HI][ia], X[ib], P[P_LO][ib], P[P_HI][ib], thr + CULL_EPS):
        return 0, 0
    ka = P[P_KIND][ia]
    kb = P[P_KIND][ib]
    ra = ka == SPHERE or ka == CAPSULE
    rb = kb == SPHERE or kb == CAPSULE
    cnt = 0
    cnt2 = 0
    done = False
    if cyl is not None:
        cnt, cnt2, done = _cyl_candidates(ia, ib, X, P, thr, C, C2)
    if done:
        pass
    elif ra and rb:
        cnt = _round_round(ia, ib, X, P, thr, C, cnt)
    elif ra:
        cnt, cnt2 = _round_poly(ia, ib, X, P, thr, C, cnt, C2, cnt2, False)
    elif rb:
        cnt, cnt2 = _round_poly(ib, ia, X, P, thr, C, cnt, C2, cnt2, True)
    else:  # polyhedra (a cylinder against a cylinder: their prisms)
        cnt, cnt2, near_ab = _poly_pass(ia, ib, X, P, thr, C, cnt, C2, cnt2, False, False)
        cnt, cnt2, near_ba = _poly_pass(ib, ia, X, P, thr, C, cnt, C2, cnt2, True, False)
        if cnt == 0:   # sharp features only where some edge came near a face's plane
            if near_ab:
                cnt, cnt2, _ = _poly_pass(ia, ib, X, P, thr, C, cnt, C2, cnt2, False, True)
            if near_ba:
                cnt, cnt2, _ = _poly_pass(ib, ia, X, P, thr, C, cnt, C2, cnt2, True, True)
    return cnt, cnt2


@njit(cache=True)
def pair_candidates(ia, ib, X, P, thr, C, C2, cyl=None):
    """All contact candidates of pair (ia, ib) into C; returns their number (may exceed len(C)).

    Edge/vertex contacts of sharp features (C2) count when the pair has no face contact, and
    otherwise those deeper than every face contact by more than ``thr``: a face contact's boundary
    would otherwise add spurious points with tilted normals (at about the face contacts' depth).

    ``cyl``: None (the default) when no shape of the world is a cylinder, True otherwise.  numba
    prunes the ``cyl is not None`` branch from the None-typed compile, so worlds without a cylinder
    never compile the cylinder routines (about 2 s); with None a cylinder would be taken for its
    prism (callers pass True for worlds with one: ``CollisionModel._cyl``).
    """
    cnt, cnt2 = _raw_candidates(ia, ib, X, P, thr, C, C2, cyl)
    if cnt == 0 and cnt2 > 0:
        if cnt2 > C2.shape[0] or cnt2 > C.shape[0]:
            return max(cnt2, C.shape[0] + 1)
        for i in range(cnt2):
            for j in range(10):
                C[i, j] = C2[i, j]
        return cnt2
    if cnt2 > 0:
        # with face contacts, an edge/vertex contact deeper than all of them by more than thr is an
        # overlap they do not see (a fingertip on a mug's wall whose end sinks into the handle's
        # edge; a capsule tilted over a box edge): it counts too
        if cnt > C.shape[0] or cnt2 > C2.shape[0]:
            return max(cnt + cnt2, C.shape[0] + 1)
        smin = np.inf
        for i in range(cnt):
            smin = min(smin, C[i, 9])
        k = cnt
        for i in range(cnt2):
            if C2[i, 9] < smin - thr:
                if k < C.shape[0]:
                    for j in range(10):
                        C[k, j] = C2[i, j]
                k += 1
        return k
    return cnt


@njit(cache=True)
def closest_candidate(ia, ib, X, P, thr, C, C2, cyl=None):
    """Separation (m) of the closest contact candidate of shapes ia and ib within ``thr`` (inf:
    none), over the face *and* every sharp edge/vertex candidate (:func:`pair_candidates` keeps only
    those of the latter that face contacts do not stand for): whether a pair interpenetrates does
    not jump when an edge candidate crosses that rule's line.  ``(sep, needed)``: ``needed`` > the
    buffers' rows when they overflowed (then sep is meaningless: grow them and ask again)."""
    cnt, cnt2 = _raw_candidates(ia, ib, X, P, thr, C, C2, cyl)
    if cnt > C.shape[0] or cnt2 > C2.shape[0]:
        return np.nan, max(cnt, cnt2)
    s = np.inf
    for i in range(cnt):
        s = min(s, C[i, 9])
    for i in range(cnt2):
        s = min(s, C2[i, 9])
    return s, max(cnt, cnt2)


@njit(cache=True)
def contacts_kernel(X, pairs, bstart, bcount, P, valid, thr, cos_tol, region_tol, C, C2, C3, RS, O_ab, O_v, O_s,
                    cyl=None):
    """Broad phase, candidates and reduction for every body pair.

    ``X`` (S, 4, 4) are the world poses of the shape frames; ``pairs`` (P, 2) are body pairs, each
    expanded to its shape pairs through the CSR arrays ``bstart``/``bcount`` (body i's shapes are
    bstart[i] .. bstart[i] + bcount[i]).  The candidates of all shape pairs of one body pair are
    reduced together (one region per body pair and normal: two boxes of a link on one face give one
    polygon).  ``cyl``: see :func:`pair_candidates`.  Outputs: see :func:`_write`.  Returns (number of contacts written (may exceed len(O_s):
    call again with more room),
    largest candidate count of one shape pair or body pair (may exceed len(C): likewise)).
    """
    # the arrays every helper below takes, borrowed: no reference counting of the geometry's 29
    # arrays per helper call, several calls per shape pair (graspsim._borrow; none is returned)
    X, P, C, C2, C3, RS, O_ab, O_v, O_s = borrow((X, P, C, C2, C3, RS, O_ab, O_v, O_s))
    wlo, whi = world_aabbs(X, P[P_LO], P[P_HI], valid)
    k = 0
    worst = 0
    for p in range(pairs.shape[0]):
        ia = pairs[p, 0]
        ib = pairs[p, 1]
        a0 = bstart[ia]
        b0 = bstart[ib]
        if bcount[ia] == 1 and bcount[ib] == 1:   # one shape each (most bodies): no gathering
            if not _box_overlap(wlo[a0], whi[a0], wlo[b0], whi[b0], thr):
                continue
            m = pair_candidates(a0, b0, X, P, thr, C, C2, cyl)
            if m > worst:
                worst = m
            if m > C.shape[0]:
                continue
            k = _reduce(C, m, ia, ib, a0, b0, RS, cos_tol, region_tol, O_ab, O_v, O_s, k)
            continue
        mt = 0
        for sa in range(a0, a0 + bcount[ia]):
            for sb in range(b0, b0 + bcount[ib]):
                if not _box_overlap(wlo[sa], whi[sa], wlo[sb], whi[sb], thr):
                    continue
                m = pair_candidates(sa, sb, X, P, thr, C, C2, cyl)
                if m > worst:
                    worst = m
                if m > C.shape[0]:
                    continue
                for i in range(m):
                    if mt + i < C3.shape[0]:
                        for j in range(10):
                            C3[mt + i, j] = C[i, j]
                        RS[mt + i, 0] = sa
                        RS[mt + i, 1] = sb
                mt += m
        if mt > worst:
            worst = mt
        if mt > C3.shape[0]:
            continue
        k = _reduce(C3, mt, ia, ib, -1, -1, RS, cos_tol, region_tol, O_ab, O_v, O_s, k)
    return k, worst


# ---------------------------------------------------------------------------------------------
# signed distance of points to a whole shape (interpenetration depth, containment guard)

@njit(cache=True)
def _box_d2(lo, hi, r, x):
    """Squared distance (m^2) of point x from the box lo[r], hi[r] (0 inside)."""
    s = 0.0
    for j in range(3):
        if x[j] < lo[r, j]:
            s += (lo[r, j] - x[j]) ** 2
        elif x[j] > hi[r, j]:
            s += (x[j] - hi[r, j]) ** 2
    return s


@njit(cache=True)
def _signed_mesh(x, P, ib, cd2):
    """:func:`_signed_poly` over all of shape ib's triangles, the same answer (among equally near
    triangles the lowest index, as its pass in index order keeps), without measuring every
    triangle: the cluster nearest by its bounds gives a first nearest distance, then only clusters
    and triangles whose bounds are not farther are measured (the bounds contain their triangles, so
    a farther one holds no nearer point; 1e-12 of slack for the rounding of the measured distances).
    ``cd2``: scratch of at least the shape's cluster count."""
    TBLO = P[P_TBLO]
    TBHI = P[P_TBHI]
    CLT = P[P_CLT]
    CLS = P[P_CLS]
    c0 = P[P_COFF][ib]
    c1 = c0 + P[P_CCNT][ib]
    t_end = P[P_TOFF][ib] + P[P_TCNT][ib]
    best = 1e300
    by = x
    bf = 0
    bt = -1
    seed = -1
    for c in range(c0, c1):
        cd2[c - c0] = _box_d2(P[P_CLLO], P[P_CLHI], c, x)
        if seed < 0 or cd2[c - c0] < cd2[seed - c0]:
            seed = c
    for rnd in range(2):
        for c in range(c0, c1):
            if (rnd == 0) != (c == seed) or cd2[c - c0] > best * (1.0 + 1e-12) + 1e-300:
                continue
            end = CLS[c + 1] if c + 1 < c1 else t_end
            for j in range(CLS[c], end):
                t = CLT[j]
                if _box_d2(TBLO, TBHI, t, x) > best * (1.0 + 1e-12) + 1e-300:
                    continue
                a, b, cc, n = _tri(P, t)
                y, f = closest_pt_tri(x, a, b, cc)
                d2 = dist2(x, y)
                if d2 < best or (d2 == best and t < bt):
                    best = d2
                    by = y
                    bf = f
                    bt = t
    return _signed_nearest(P, x, best, by, bf, bt)


@njit(cache=True)
def sdf_points(P, ib, pts):
    """Signed distances (m, < 0 inside) of points given in body ib's shape frame to its shape."""
    k = P[P_KIND][ib]
    r = P[P_RAD][ib]
    h = P[P_HALF][ib]
    out = np.empty(pts.shape[0])
    cd2 = np.empty(P[P_CCNT][ib])
    for i in range(pts.shape[0]):
        x = v3(pts[i])
        if k == SPHERE:
            out[i] = norm(x) - r
        elif k == CAPSULE:
            y, _ = closest_pt_seg(x, (0.0, 0.0, -h[2]), (0.0, 0.0, h[2]))
            out[i] = norm(sub(x, y)) - r
        elif k == BOX:
            o = 0.0
            inn = -1e300
            for j in range(3):
                q = abs(x[j]) - h[j]
                if q > 0.0:
                    o += q * q
                inn = max(inn, q)
            out[i] = math.sqrt(o) + min(inn, 0.0)
        elif k == CYLINDER:
            _, sd, _ = cylinder_closest(x, r, h[2])
            out[i] = sd
        else:
            sd, _ = _signed_mesh(x, P, ib, cd2)
            out[i] = sd
    return out

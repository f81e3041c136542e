"""Compiled answer to FCL's boolean ``collide`` for the shape pairs of
:meth:`graspsim.collision.CollisionModel.penetrating`: do two shapes meet at their poses?

The semantics are FCL's (``fcl_geometry``): spheres, capsules and boxes are *solids*, meshes are
*surfaces* (a ``BVHModel`` of their triangles), and touching counts.  So

* round (sphere, capsule) against round: the cores' distance <= the sum of the radii;
* round against a box: a core end inside the box, or the core within the radius of one of the
  box's faces; round against a mesh: the core within the radius of one of its triangles;
* box against box: the 15 separating axes of two boxes;
* a mesh triangle against a box: separating-axis test of the triangle and the box (13 axes, used
  as computed: an axis from nearly parallel edges is short, not wrong);
* mesh against mesh: two triangles meet when an edge of one comes within 1e-12 m of the other
  (the closest points of segment and triangle, exact up to rounding).

Cylinders are not handled here (FCL's cylinder is exact, the pool's is a prism): pairs with one
are answered ``ASK`` and the caller asks FCL.  Neither is "one shape inside the other without the
boundaries meeting" (FCL reports no collision then either): pairs whose world bounds nest are
answered ``NESTED`` and the caller checks a surface point's signed distance, as before.
"""
from __future__ import annotations

import numpy as np

from .._jit import njit
from .kernels import (BOX, CAPSULE, CULL_EPS, CYLINDER, P_HALF, P_HI, P_KIND, P_LO, P_RAD, SPHERE, _aabb_in,
                      _cull, _cull_tris, _mv, _rel, _sat_axis, _tri, world_aabbs)
from .primitives import add, closest_seg_seg, closest_seg_tri, cross, dist2, dot, sub

APART, MEET, NESTED, ASK = 0, 1, 2, 3
#: m^2: a triangle edge this close to another triangle touches it (mesh against mesh)
TOUCH2 = 1e-24


@njit(cache=True)
def _core(P, i, R, t):
    """Ends (in the other frame: x' = R x + t) of round shape i's core (a sphere: both at its centre)."""
    hl = P[P_HALF][i][2] if P[P_KIND][i] == CAPSULE else 0.0
    p = (t[0] - hl * R[0, 2], t[1] - hl * R[1, 2], t[2] - hl * R[2, 2])
    q = (t[0] + hl * R[0, 2], t[1] + hl * R[1, 2], t[2] + hl * R[2, 2])
    return p, q


@njit(cache=True)
def _in_box(x, h):
    return abs(x[0]) <= h[0] and abs(x[1]) <= h[1] and abs(x[2]) <= h[2]


@njit(cache=True)
def _round_round(ia, ib, X, P):
    R, t = _rel(X[ia], X[ib])
    p, q = _core(P, ia, R, t)
    hb = P[P_HALF][ib][2] if P[P_KIND][ib] == CAPSULE else 0.0
    _, _, c1, c2 = closest_seg_seg(p, q, (0.0, 0.0, -hb), (0.0, 0.0, hb))
    r = P[P_RAD][ia] + P[P_RAD][ib]
    return dist2(c1, c2) <= r * r


@njit(cache=True)
def _round_tris(p, q, r, P, tris):
    """Is segment pq within r of one of the triangles ``tris`` (same frame)?"""
    r2 = r * r
    for tr in tris:
        a, b, c, n = _tri(P, tr)
        _, _, _, d2, _ = closest_seg_tri(p, q, a, b, c, n)
        if d2 <= r2:
            return True
    return False


@njit(cache=True)
def _round_poly(ia, ib, X, P):
    """Round shape ia against box or mesh ib, in ib's frame."""
    R, t = _rel(X[ia], X[ib])
    p, q = _core(P, ia, R, t)
    r = P[P_RAD][ia]
    if P[P_KIND][ib] == BOX:
        h = P[P_HALF][ib]
        if _in_box(p, h) or _in_box(q, h):
            return True
    lo = np.empty(3)
    hi = np.empty(3)
    for j in range(3):
        lo[j] = min(p[j], q[j]) - r
        hi[j] = max(p[j], q[j]) + r
    return _round_tris(p, q, r, P, _cull_tris(P, ib, lo, hi, CULL_EPS))


@njit(cache=True)
def _axis_apart(ax, a, b, c, h):
    """Do triangle abc and the box |x_k| <= h_k project apart on axis ``ax`` (not normalised)?"""
    pa = dot(ax, a)
    pb = dot(ax, b)
    pc = dot(ax, c)
    rr = h[0] * abs(ax[0]) + h[1] * abs(ax[1]) + h[2] * abs(ax[2])
    return min(pa, pb, pc) > rr or max(pa, pb, pc) < -rr


@njit(cache=True)
def _tri_box(a, b, c, h):
    """Does triangle abc meet the solid box |x_k| <= h_k (both in the box frame)?  Separating axes:
    the box's 3, the triangle's normal and the 9 crosses of a box axis with a triangle edge."""
    for k in range(3):
        if min(a[k], b[k], c[k]) > h[k] or max(a[k], b[k], c[k]) < -h[k]:
            return False
    if _axis_apart(cross(sub(b, a), sub(c, b)), a, b, c, h):
        return False
    for j in range(3):
        f = sub(b, a) if j == 0 else (sub(c, b) if j == 1 else sub(a, c))
        if (_axis_apart((0.0, -f[2], f[1]), a, b, c, h) or _axis_apart((f[2], 0.0, -f[0]), a, b, c, h)
                or _axis_apart((-f[1], f[0], 0.0), a, b, c, h)):
            return False
    return True


@njit(cache=True)
def _mesh_box(im, ib, X, P):
    """Mesh im's triangles against the solid box ib, in the box's frame."""
    R, t = _rel(X[im], X[ib])            # x_box = R x_mesh + t
    h = P[P_HALF][ib]
    # the box's bounds seen from the mesh, and the tighter test of each triangle's bounds carried
    # into the box's frame
    blo, bhi = P[P_LO][ib], P[P_HI][ib]
    Rb, tb = _rel(X[ib], X[im])
    clo, chi = _aabb_in(Rb, tb, blo, bhi)
    tris = _cull(P, im, clo, chi, CULL_EPS, True, R, t, blo, bhi)
    for tr in tris:
        a, b, c, _ = _tri(P, tr)
        if _tri_box(add(_mv(R, a), t), add(_mv(R, b), t), add(_mv(R, c), t), h):
            return True
    return False


@njit(cache=True)
def _box_box(ia, ib, X, P):
    """Two solid boxes: the 15 separating axes (3 + 3 face normals, 9 edge crosses), each used as
    computed (an axis from parallel edges is zero and separates nothing: the face normals cover
    that case), so exact up to rounding (``kernels._obb_apart`` skips short axes: a bound only)."""
    XA = X[ia]
    XB = X[ib]
    ha = P[P_HALF][ia]
    hb = P[P_HALF][ib]
    d0 = XB[0, 3] - XA[0, 3]
    d1 = XB[1, 3] - XA[1, 3]
    d2 = XB[2, 3] - XA[2, 3]
    for ax in range(15):
        l0, l1, l2 = _sat_axis(XA, XB, ax)
        rA = 0.0
        rB = 0.0
        for k in range(3):
            rA += ha[k] * abs(l0 * XA[0, k] + l1 * XA[1, k] + l2 * XA[2, k])
            rB += hb[k] * abs(l0 * XB[0, k] + l1 * XB[1, k] + l2 * XB[2, k])
        if abs(l0 * d0 + l1 * d1 + l2 * d2) > rA + rB:
            return False
    return True


@njit(cache=True)
def _tris_meet(a1, b1, c1, n1, a2, b2, c2, n2):
    """Do two triangles (one frame) meet: an edge of one within 1e-12 m of the other?"""
    for k in range(6):
        # (one call site: numba's callee is compiled into this function once)
        e = k % 3
        if k < 3:
            p = a1 if e == 0 else (b1 if e == 1 else c1)
            q = b1 if e == 0 else (c1 if e == 1 else a1)
            ta, tb, tc, tn = a2, b2, c2, n2
        else:
            p = a2 if e == 0 else (b2 if e == 1 else c2)
            q = b2 if e == 0 else (c2 if e == 1 else a2)
            ta, tb, tc, tn = a1, b1, c1, n1
        _, _, _, d2, _ = closest_seg_tri(p, q, ta, tb, tc, tn)
        if d2 <= TOUCH2:
            return True
    return False


@njit(cache=True)
def _mesh_mesh(ia, ib, X, P):
    """Two triangle surfaces, in ib's frame: ia's triangles near ib's bounds against ib's near
    those triangles' joint bounds (pairs whose bounds miss skipped)."""
    R, t = _rel(X[ia], X[ib])
    clo, chi = _aabb_in(R, t, P[P_LO][ia], P[P_HI][ia])
    tb_ = _cull_tris(P, ib, clo, chi, CULL_EPS)
    if tb_.size == 0:
        return False
    # ib's near triangles' bounds seen from ia: ia's triangles that can meet them
    blo = np.full(3, np.inf)
    bhi = np.full(3, -np.inf)
    for w in tb_:
        a, b, c, _ = _tri(P, w)
        for j in range(3):
            blo[j] = min(blo[j], a[j], b[j], c[j])
            bhi[j] = max(bhi[j], a[j], b[j], c[j])
    Rb, tb = _rel(X[ib], X[ia])
    olo, ohi = _aabb_in(Rb, tb, blo, bhi)
    ta_ = _cull(P, ia, olo, ohi, CULL_EPS, True, R, t, blo, bhi)
    for u in ta_:
        a, b, c, n = _tri(P, u)
        a1 = add(_mv(R, a), t)
        b1 = add(_mv(R, b), t)
        c1 = add(_mv(R, c), t)
        n1 = _mv(R, n)
        lo0 = min(a1[0], b1[0], c1[0]) - CULL_EPS
        hi0 = max(a1[0], b1[0], c1[0]) + CULL_EPS
        lo1 = min(a1[1], b1[1], c1[1]) - CULL_EPS
        hi1 = max(a1[1], b1[1], c1[1]) + CULL_EPS
        lo2 = min(a1[2], b1[2], c1[2]) - CULL_EPS
        hi2 = max(a1[2], b1[2], c1[2]) + CULL_EPS
        for w in tb_:
            a2, b2, c2, n2 = _tri(P, w)
            if (min(a2[0], b2[0], c2[0]) > hi0 or max(a2[0], b2[0], c2[0]) < lo0
                    or min(a2[1], b2[1], c2[1]) > hi1 or max(a2[1], b2[1], c2[1]) < lo1
                    or min(a2[2], b2[2], c2[2]) > hi2 or max(a2[2], b2[2], c2[2]) < lo2):
                continue
            if _tris_meet(a1, b1, c1, n1, a2, b2, c2, n2):
                return True
    return False


@njit(cache=True)
def shapes_meet(ia, ib, X, P):
    """MEET or APART for shapes ia, ib at their world poses ``X`` (as FCL's collide), ASK when one
    is a cylinder."""
    ka = P[P_KIND][ia]
    kb = P[P_KIND][ib]
    if ka == CYLINDER or kb == CYLINDER:
        return ASK
    ra = ka == SPHERE or ka == CAPSULE
    rb = kb == SPHERE or kb == CAPSULE
    if ra and rb:
        hit = _round_round(ia, ib, X, P)
    elif ra:
        hit = _round_poly(ia, ib, X, P)
    elif rb:
        hit = _round_poly(ib, ia, X, P)
    elif ka == BOX and kb == BOX:
        hit = _box_box(ia, ib, X, P)
    elif kb == BOX:
        hit = _mesh_box(ia, ib, X, P)
    elif ka == BOX:
        hit = _mesh_box(ib, ia, X, P)
    else:
        hit = _mesh_mesh(ia, ib, X, P)
    return MEET if hit else APART


@njit(cache=True)
def meeting_pairs(X, pairs, bstart, bcount, P, valid, out):
    """Every shape pair of the body ``pairs`` (P, 2) whose world bounds meet, answered by
    :func:`shapes_meet` (``X`` the shapes' world poses; body i's shapes are bstart[i] ..
    bstart[i] + bcount[i]); an APART one whose world bounds nest (one box inside the other) is
    NESTED.  Writes rows (pair index, shape a, shape b, answer) for the answers other than APART
    into ``out`` (m, 4) and returns their number (may exceed m: call again with more rows)."""
    wlo, whi = world_aabbs(X, P[P_LO], P[P_HI], valid)
    k = 0
    for p in range(pairs.shape[0]):
        ia = pairs[p, 0]
        ib = pairs[p, 1]
        for sa in range(bstart[ia], bstart[ia] + bcount[ia]):
            for sb in range(bstart[ib], bstart[ib] + bcount[ib]):
                meet = True
                a_in_b = True
                b_in_a = True
                for j in range(3):
                    if wlo[sa, j] > whi[sb, j] or wlo[sb, j] > whi[sa, j]:
                        meet = False
                    a_in_b = a_in_b and wlo[sa, j] >= wlo[sb, j] and whi[sa, j] <= whi[sb, j]
                    b_in_a = b_in_a and wlo[sb, j] >= wlo[sa, j] and whi[sb, j] <= whi[sa, j]
                if not meet:
                    continue
                ans = shapes_meet(sa, sb, X, P)
                if ans == APART and (a_in_b or b_in_a):
                    ans = NESTED
                if ans == APART:
                    continue
                if k < out.shape[0]:
                    out[k, 0] = p
                    out[k, 1] = sa
                    out[k, 2] = sb
                    out[k, 3] = ans
                k += 1
    return k

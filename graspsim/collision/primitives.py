"""Closed-form closest-point queries between points, segments, triangles and cylinders (numba).

3-vectors are tuples of three floats (stack values: no allocation in the hot loops); ``v3``
converts an array row.  All functions are exact up to rounding (no iteration) and are the
building blocks of the contact kernels in :mod:`graspsim.collision.kernels`.

Triangle feature codes returned by :func:`closest_pt_tri`:
``0`` face interior, ``1, 2, 3`` vertex a, b, c, ``4, 5, 6`` edge ab, bc, ca.
"""
from __future__ import annotations

import math

from .._jit import njit

FACE, VA, VB, VC, EAB, EBC, ECA = 0, 1, 2, 3, 4, 5, 6


@njit(cache=True)
def v3(a):
    """Array row -> tuple."""
    return (a[0], a[1], a[2])


@njit(cache=True)
def add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit(cache=True)
def sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit(cache=True)
def mul(a, s):
    return (a[0] * s, a[1] * s, a[2] * s)


@njit(cache=True)
def axpy(s, x, y):
    """y + s x."""
    return (y[0] + s * x[0], y[1] + s * x[1], y[2] + s * x[2])


@njit(cache=True)
def neg(a):
    return (-a[0], -a[1], -a[2])


@njit(cache=True)
def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True)
def cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(cache=True)
def norm(a):
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@njit(cache=True)
def dist2(a, b):
    x = a[0] - b[0]
    y = a[1] - b[1]
    z = a[2] - b[2]
    return x * x + y * y + z * z


@njit(cache=True)
def closest_pt_tri(p, a, b, c):
    """Closest point of triangle abc to p: returns (q, feature code).  Ericson, RTCD 5.1.5."""
    ab = sub(b, a)
    ac = sub(c, a)
    ap = sub(p, a)
    d1 = dot(ab, ap)
    d2 = dot(ac, ap)
    if d1 <= 0.0 and d2 <= 0.0:
        return a, VA
    bp = sub(p, b)
    d3 = dot(ab, bp)
    d4 = dot(ac, bp)
    if d3 >= 0.0 and d4 <= d3:
        return b, VB
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        return axpy(v, ab, a), EAB
    cp = sub(p, c)
    d5 = dot(ab, cp)
    d6 = dot(ac, cp)
    if d6 >= 0.0 and d5 <= d6:
        return c, VC
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        return axpy(w, ac, a), ECA
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return axpy(w, sub(c, b), b), EBC
    denom = 1.0 / (va + vb + vc)
    v = vb * denom
    w = vc * denom
    return axpy(w, ac, axpy(v, ab, a)), FACE


@njit(cache=True)
def closest_pt_seg(p, a, b):
    """Closest point of segment ab to p: returns (q, t) with q = a + t (b - a), t in [0, 1]."""
    ab = sub(b, a)
    L2 = dot(ab, ab)
    if L2 <= 1e-300:
        return a, 0.0
    t = dot(sub(p, a), ab) / L2
    if t < 0.0:
        t = 0.0
    elif t > 1.0:
        t = 1.0
    return axpy(t, ab, a), t


@njit(cache=True)
def closest_seg_seg(p1, q1, p2, q2):
    """Closest points of segments p1q1 and p2q2: returns (s, t, c1, c2).  Ericson, RTCD 5.1.9."""
    d1 = sub(q1, p1)
    d2 = sub(q2, p2)
    r = sub(p1, p2)
    a = dot(d1, d1)
    e = dot(d2, d2)
    f = dot(d2, r)
    eps = 1e-300
    if a <= eps and e <= eps:
        return 0.0, 0.0, p1, p2
    if a <= eps:
        s = 0.0
        t = min(max(f / e, 0.0), 1.0)
    else:
        c = dot(d1, r)
        if e <= eps:
            t = 0.0
            s = min(max(-c / a, 0.0), 1.0)
        else:
            b = dot(d1, d2)
            denom = a * e - b * b
            if denom > 1e-14 * a * e:
                s = min(max((b * f - c * e) / denom, 0.0), 1.0)
            else:  # parallel
                s = 0.0
            t = (b * s + f) / e
            if t < 0.0:
                t = 0.0
                s = min(max(-c / a, 0.0), 1.0)
            elif t > 1.0:
                t = 1.0
                s = min(max((b - c) / a, 0.0), 1.0)
    return s, t, axpy(s, d1, p1), axpy(t, d2, p2)


@njit(cache=True)
def seg_tri_intersect(p, q, a, b, c, n):
    """Parameter s in [0, 1] where segment pq crosses triangle abc (unit normal n), or -1."""
    d = sub(q, p)
    den = dot(n, d)
    if abs(den) < 1e-300:
        return -1.0
    s = dot(n, sub(a, p)) / den
    if s < 0.0 or s > 1.0:
        return -1.0
    x = axpy(s, d, p)
    if dot(cross(sub(b, a), sub(x, a)), n) < 0.0:
        return -1.0
    if dot(cross(sub(c, b), sub(x, b)), n) < 0.0:
        return -1.0
    if dot(cross(sub(a, c), sub(x, c)), n) < 0.0:
        return -1.0
    return s


@njit(cache=True)
def closest_seg_tri(p, q, a, b, c, n):
    """Closest points of segment pq and triangle abc (unit normal n).

    Returns (s, x, y, d2, feature): x = p + s (q - p) on the segment, y on the triangle, d2 = |x - y|^2,
    feature the triangle feature code of y (FACE also when the segment crosses the triangle).
    """
    s_hit = seg_tri_intersect(p, q, a, b, c, n)
    if s_hit >= 0.0:
        x = axpy(s_hit, sub(q, p), p)
        return s_hit, x, x, 0.0, FACE
    y, f = closest_pt_tri(p, a, b, c)
    best = dist2(p, y)
    bs = 0.0
    bx = p
    by = y
    bf = f
    y, f = closest_pt_tri(q, a, b, c)
    d2 = dist2(q, y)
    if d2 < best:
        best = d2
        bs = 1.0
        bx = q
        by = y
        bf = f
    for k in range(3):
        if k == 0:
            u = a
            v = b
        elif k == 1:
            u = b
            v = c
        else:
            u = c
            v = a
        s, t, c1, c2 = closest_seg_seg(p, q, u, v)
        d2 = dist2(c1, c2)
        if d2 < best:
            best = d2
            bs = s
            bx = c1
            by = c2
            if t <= 0.0:
                bf = VA + k
            elif t >= 1.0:
                bf = VA + (k + 1) % 3
            else:
                bf = EAB + k
    return bs, bx, by, best, bf


@njit(cache=True)
def tangent_basis(n):
    """Deterministic unit tangents (t1, t2) with (t1, t2, n) right-handed.

    t1 = unit(e_k x n) with e_k the axis of the smallest |component| of n (ties: lowest k).
    """
    ax = abs(n[0])
    ay = abs(n[1])
    az = abs(n[2])
    if ax <= ay and ax <= az:
        e = (1.0, 0.0, 0.0)
    elif ay <= az:
        e = (0.0, 1.0, 0.0)
    else:
        e = (0.0, 0.0, 1.0)
    t1 = cross(e, n)
    t1 = mul(t1, 1.0 / norm(t1))
    return t1, cross(n, t1)


@njit(cache=True)
def cylinder_closest(p, r, hl):
    """Closest point on the surface of the solid cylinder (axis z, radius r, half-length hl) to p.

    Returns (q, signed distance (negative inside), outward unit normal at q).
    """
    rho = math.sqrt(p[0] * p[0] + p[1] * p[1])
    z = p[2]
    if rho > 1e-300:
        ux = p[0] / rho
        uy = p[1] / rho
    else:
        ux = 1.0
        uy = 0.0
    if abs(z) <= hl and rho <= r:  # inside: nearest of side and caps
        ds = r - rho
        dc = hl - abs(z)
        if ds < dc:
            return (r * ux, r * uy, z), -ds, (ux, uy, 0.0)
        sz = 1.0 if z > 0 else -1.0
        return (p[0], p[1], sz * hl), -dc, (0.0, 0.0, sz)
    rc = min(rho, r)
    zc = min(max(z, -hl), hl)
    q = (rc * ux, rc * uy, zc)
    d = sub(p, q)
    dist = norm(d)
    if dist > 1e-300:
        return q, dist, mul(d, 1.0 / dist)
    return q, dist, (ux, uy, 0.0)

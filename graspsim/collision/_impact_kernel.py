"""Compiled screen of step 3 (impact check) of the time step: which body pairs can have reached a
new interpenetration deeper than the contact threshold during the trial move?

For a pair (a, b) every point of a moves at fraction f of the step by at most
f h (|v_a| + |w_a| r_a) (the com moves by f h v_a; the rotation about the com by angle
2 atan(f h |w_a| / 2) <= f h |w_a| moves a point at distance <= r_a from the com by at most that arc),
so the distance between the two shapes shrinks during the move by at most the relative travel

    T_ab = h (|v_a - v_b| + |w_a| r_a + |w_b| r_b)      (m; v the com velocity, w the angular one)

If the shapes were at least ``lb >= 0`` apart at the start of the step, no point of one is deeper than
``T_ab - lb`` inside the other at any fraction of the step.  So a pair with ``T_ab < lb + thr``
can at most overlap by less than the threshold: the exact contact kernel run at the trial pose sees
such an overlap (it reports separations down to -thr), and nothing can have tunnelled.  Only the
other pairs need FCL and the bisection.  ``lb`` is a lower bound of the start separation: the
largest gap of the two shapes' world bounding boxes along the world axes, or of their oriented
shape-frame boxes along the 15 separating axes (a projection on a unit axis never lengthens a
distance).
"""
from __future__ import annotations

import math

import numpy as np

from .._jit import njit
from .kernels import closest_candidate


@njit(cache=True)
def obb_gap(XA, loA, hiA, XB, loB, hiB):
    """Largest gap (m; <= 0 when no axis separates) between two oriented boxes along the 15
    separating axes: a lower bound of the distance between the boxes.  ``X`` (4, 4) world pose of a
    box frame, ``lo``/``hi`` (3,) its bounds in that frame.  (Scalars and tuples, no arrays: the
    impact screen calls it for many pairs every step.)"""
    eA = (0.5 * (hiA[0] - loA[0]), 0.5 * (hiA[1] - loA[1]), 0.5 * (hiA[2] - loA[2]))
    eB = (0.5 * (hiB[0] - loB[0]), 0.5 * (hiB[1] - loB[1]), 0.5 * (hiB[2] - loB[2]))
    d0 = _centre(XB, loB, hiB, 0) - _centre(XA, loA, hiA, 0)
    d1 = _centre(XB, loB, hiB, 1) - _centre(XA, loA, hiA, 1)
    d2 = _centre(XB, loB, hiB, 2) - _centre(XA, loA, hiA, 2)
    best = -np.inf
    for ax in range(15):
        if ax < 3:
            L0, L1, L2 = XA[0, ax], XA[1, ax], XA[2, ax]
        elif ax < 6:
            L0, L1, L2 = XB[0, ax - 3], XB[1, ax - 3], XB[2, ax - 3]
        else:
            p = (ax - 6) // 3
            q = (ax - 6) % 3
            a0, a1, a2 = XA[0, p], XA[1, p], XA[2, p]
            b0, b1, b2 = XB[0, q], XB[1, q], XB[2, q]
            L0 = a1 * b2 - a2 * b1
            L1 = a2 * b0 - a0 * b2
            L2 = a0 * b1 - a1 * b0
        n = math.sqrt(L0 * L0 + L1 * L1 + L2 * L2)
        if n < 1e-9:        # parallel edges: their cross product is no axis
            continue
        rA = 0.0
        rB = 0.0
        for k in range(3):
            rA += eA[k] * abs(L0 * XA[0, k] + L1 * XA[1, k] + L2 * XA[2, k])
            rB += eB[k] * abs(L0 * XB[0, k] + L1 * XB[1, k] + L2 * XB[2, k])
        gap = (abs(L0 * d0 + L1 * d1 + L2 * d2) - rA - rB) / n
        if gap > best:
            best = gap
    return best


@njit(cache=True, inline="always")
def _centre(X, lo, hi, i):
    """World coordinate i of the centre of the box [lo, hi] in frame X."""
    s = X[i, 3]
    for k in range(3):
        s += X[i, k] * 0.5 * (lo[k] + hi[k])
    return s


@njit(cache=True)
def _shape_pose(X, X_LS, i, out):
    """World pose of body i's shape frame, X_WL X_LS, into ``out`` (4, 4)."""
    for r in range(4):
        for c in range(4):
            acc = 0.0
            for k in range(4):
                acc += X[i, r, k] * X_LS[i, k, c]
            out[r, c] = acc
    return out


@njit(cache=True)
def _aabb_gap(XA, loA, hiA, XB, loB, hiB):
    """Largest gap (m) of the two shapes' world bounding boxes along the world axes."""
    g = -np.inf
    for j in range(3):
        ca = XA[j, 3]
        cb = XB[j, 3]
        ha = 0.0
        hb = 0.0
        for k in range(3):
            ca += XA[j, k] * 0.5 * (loA[k] + hiA[k])
            cb += XB[j, k] * 0.5 * (loB[k] + hiB[k])
            ha += abs(XA[j, k]) * 0.5 * (hiA[k] - loA[k])
            hb += abs(XB[j, k]) * 0.5 * (hiB[k] - loB[k])
        g = max(g, abs(cb - ca) - ha - hb)
    return g


@njit(cache=True)
def screen_pairs(X0, X_LS, pairs, lo, hi, vel, radius, h, thr, T, lb):
    """Pairs that may end the trial move interpenetrating deeper than ``thr`` (see the module doc).

    ``X0`` (N, 4, 4) body poses at the start of the step, ``X_LS`` (N, 4, 4) the shape frames in the
    body frames, ``pairs`` (P, 2), ``lo``/``hi`` (N, 3) shape-frame bounds, ``vel`` (N, 6)
    [v_com; w] per body (W; zeros for static bodies), ``radius`` (N,) largest distance (m) of a shape
    point from the body's com, ``h`` (s), ``thr`` (m).  Writes the relative travel
    ``T`` (P,) and the start-separation lower bound ``lb`` (P,; only where needed, else 0) of every
    pair and returns the indices of the pairs that fail the bound T < max(lb, 0) + thr.
    """
    out = np.empty(pairs.shape[0], np.int64)
    XAB = np.empty((2, 4, 4))     # (a pair's two shape poses: one buffer for every pair)
    XA = XAB[0]
    XB = XAB[1]
    k = 0
    for p in range(pairs.shape[0]):
        a = pairs[p, 0]
        b = pairs[p, 1]
        lb[p] = 0.0
        dv = 0.0
        wa = 0.0
        wb = 0.0
        for j in range(3):
            x = vel[a, j] - vel[b, j]
            dv += x * x
            wa += vel[a, 3 + j] * vel[a, 3 + j]
            wb += vel[b, 3 + j] * vel[b, 3 + j]
        t = h * (math.sqrt(dv) + math.sqrt(wa) * radius[a] + math.sqrt(wb) * radius[b])
        T[p] = t
        if t < thr:
            continue
        _shape_pose(X0, X_LS, a, XA)
        _shape_pose(X0, X_LS, b, XB)
        g = max(0.0, _aabb_gap(XA, lo[a], hi[a], XB, lo[b], hi[b]))
        if t < g + thr:
            lb[p] = g
            continue
        g = max(g, obb_gap(XA, lo[a], hi[a], XB, lo[b], hi[b]))
        lb[p] = g
        if t < g + thr:
            continue
        out[k] = p
        k += 1
    return out[:k]


@njit(cache=True)
def _closest(a, b, X, P, t, C, C2, cyl):
    """Separation (m) of the closest contact candidate of shapes a and b at poses X within the
    threshold t (inf: none), edge/vertex candidates included (:func:`.kernels.closest_candidate`); NaN
    when the candidates overflow the buffers C, C2."""
    s, _ = closest_candidate(a, b, X, P, t, C, C2, cyl)
    return s


@njit(cache=True)
def overlap_status(X0, X1, pairs, T, P, pen_tol, max_thr, C, C2, cyl=None):
    """Does each pair (that failed :func:`screen_pairs`) end the move interpenetrating, and is that new?

    ``X0``, ``X1`` (N, 4, 4) *shape* poses at the start and the end of the move, ``pairs`` (m, 2),
    ``T`` (m,) their travel bounds (m), ``P`` the geometry pool tuple, ``pen_tol`` (m), ``C``, ``C2``
    candidate buffers, ``cyl`` see :func:`.kernels.pair_candidates`.  A pair apart at the start is
    at most T deep at the end, so the exact contact
    kernel run with the threshold T sees its whole overlap (exact up to ``max_thr``).  Returns per
    pair: 0 no overlap deeper than pen_tol at the end, 1 a new one, 2 one that was there at the start,
    3 undecided (T beyond ``max_thr``, or more candidates than the buffers hold: ask FCL); and per
    pair the separation (m) of its closest candidate within T at the end (inf: none; NaN: not
    asked, or the buffers overflowed).  With ``pen_tol`` = inf it asks only that: the collision
    model's closest-candidate query is this kernel, so the first job compiles one public kernel of
    the candidate search less (1.4 s of compile CPU, docs/dynamics_performance.md, eleventh pass).
    """
    out = np.empty(pairs.shape[0], np.int64)
    first = np.empty(pairs.shape[0])
    for p in range(pairs.shape[0]):
        a = pairs[p, 0]
        b = pairs[p, 1]
        t = T[p]
        first[p] = np.nan
        if not t <= max_thr:
            out[p] = 3
            continue
        s = _closest(a, b, X1, P, t, C, C2, cyl)
        first[p] = s
        if np.isnan(s):
            out[p] = 3
        elif s >= -pen_tol:
            out[p] = 0
        else:
            s = _closest(a, b, X0, P, t, C, C2, cyl)
            out[p] = 3 if np.isnan(s) else (2 if s < -pen_tol else 1)
    return out, first

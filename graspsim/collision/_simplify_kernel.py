"""Compiled core of :mod:`graspsim.collision.simplify` (numba, cached on disk)."""
from __future__ import annotations

import numpy as np
from .._jit import njit

#: cosine between a region's normals (the contacts of one body pair grouped into one region)
REGION_COS_TOL = 0.985


@njit(cache=True)
def reduce_polygon(uv, k):
    """Indices of ``k`` vertices of the convex polygon ``uv`` (m, 2): vertices sorted by angle about
    the centroid, then the vertex whose removal loses the least area (the triangle it forms with
    its two neighbours) is dropped until ``k`` remain.  Ties go to the first in angular order."""
    m = uv.shape[0]
    cx = 0.0
    cy = 0.0
    for i in range(m):
        cx += uv[i, 0]
        cy += uv[i, 1]
    cx /= m
    cy /= m
    ang = np.empty(m)
    for i in range(m):
        ang[i] = np.arctan2(uv[i, 1] - cy, uv[i, 0] - cx)
    # index array sorted by angle with an insertion sort (m is a region's point count, small):
    # np.argsort and a reflected list cost about 2 s of compile for this one kernel
    keep = np.empty(m, dtype=np.int64)
    for i in range(m):
        j = i
        while j > 0 and ang[keep[j - 1]] > ang[i]:
            keep[j] = keep[j - 1]
            j -= 1
        keep[j] = i
    n = m
    while n > k:
        best = 0
        best_a = np.inf
        for j in range(n):
            p = keep[j - 1] if j > 0 else keep[n - 1]
            c = keep[j]
            q = keep[j + 1] if j + 1 < n else keep[0]
            a = 0.5 * abs((uv[c, 0] - uv[p, 0]) * (uv[q, 1] - uv[p, 1]) -
                          (uv[c, 1] - uv[p, 1]) * (uv[q, 0] - uv[p, 0]))
            if a < best_a:
                best_a = a
                best = j
        for j in range(best, n - 1):
            keep[j] = keep[j + 1]
        n -= 1
    return keep[:n].copy()


@njit(cache=True)
def limit_regions(body_a, body_b, point, normal, tangent1, tangent2, max_points, cos_tol):
    """Keep-mask (k,) of :func:`graspsim.collision.simplify.limit_region_points`: contacts of one body
    pair whose normal is within ``cos_tol`` of the first unassigned one's form a region; a region with
    more than ``max_points`` contacts keeps the ``max_points`` vertices :func:`reduce_polygon` keeps
    of its points in the tangent plane (tangent1, tangent2) of that first contact."""
    n = body_a.shape[0]
    keep = np.ones(n, dtype=np.bool_)
    done = np.zeros(n, dtype=np.bool_)
    grp = np.empty(n, dtype=np.int64)
    for i in range(n):
        if done[i]:
            continue
        m = 0
        for j in range(i, n):
            if done[j] or body_a[j] != body_a[i] or body_b[j] != body_b[i]:
                continue
            if normal[j, 0] * normal[i, 0] + normal[j, 1] * normal[i, 1] + normal[j, 2] * normal[i, 2] >= cos_tol:
                grp[m] = j
                m += 1
                done[j] = True
        if m <= max_points:
            continue
        uv = np.empty((m, 2))
        for r in range(m):
            g = grp[r]
            uv[r, 0] = point[g, 0] * tangent1[i, 0] + point[g, 1] * tangent1[i, 1] + point[g, 2] * tangent1[i, 2]
            uv[r, 1] = point[g, 0] * tangent2[i, 0] + point[g, 1] * tangent2[i, 1] + point[g, 2] * tangent2[i, 2]
        kept = reduce_polygon(uv, max_points)
        for r in range(m):
            keep[grp[r]] = False
        for r in range(kept.shape[0]):
            keep[grp[kept[r]]] = True
    return keep


@njit(cache=True)
def limit_regions_in_place(O_ab, O_v, O_s, k, max_points, cos_tol):
    """:func:`limit_regions` on the first ``k`` contacts of the contact kernel's output blocks
    (``O_ab`` (4, K), ``O_v`` (6, K, 3), ``O_s`` (K,); see ``kernels._write``), keeping the kept
    contacts in order at the front.  Returns how many are kept."""
    keep = limit_regions(O_ab[0, :k], O_ab[1, :k], O_v[0, :k], O_v[1, :k], O_v[4, :k], O_v[5, :k],
                         max_points, cos_tol)
    j = 0
    for i in range(k):
        if not keep[i]:
            continue
        if j != i:
            for r in range(4):
                O_ab[r, j] = O_ab[r, i]
            for r in range(6):
                for c in range(3):
                    O_v[r, j, c] = O_v[r, i, c]
            O_s[j] = O_s[i]
        j += 1
    return j

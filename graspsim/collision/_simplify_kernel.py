"""Compiled core of :mod:`graspsim.collision.simplify` (numba, cached on disk)."""
from __future__ import annotations

import numpy as np
from .._jit import njit


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
    keep = list(np.argsort(ang))
    while len(keep) > k:
        n = len(keep)
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
        keep.pop(best)
    out = np.empty(len(keep), dtype=np.int64)
    for i in range(len(keep)):
        out[i] = keep[i]
    return out

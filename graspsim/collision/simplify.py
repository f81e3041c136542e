"""Simplify large contact regions for the dynamics.

A planar contact region is reduced to the vertices of its 2-D convex hull (as the paper does); a
round base (a mug's 48-gon rim) then still gives 48 contacts and a 480-row LCP.  For the time
stepper only the support polygon matters, so regions with more than ``max_points`` vertices are
cut down by repeatedly dropping the vertex whose removal loses the least area (a regular octagon
inscribed in a circle keeps 90 % of its area and every support direction to within 8 %).  Grasp
analysis keeps every point.
"""
from __future__ import annotations

import numpy as np

from .model import ContactSet

__all__ = ["limit_region_points"]


def _reduce_polygon(uv: np.ndarray, k: int) -> np.ndarray:
    """Indices of ``k`` vertices of the convex polygon ``uv`` (m, 2) kept by least-area removal."""
    from ._simplify_kernel import reduce_polygon

    return reduce_polygon(np.ascontiguousarray(uv, dtype=np.float64), int(k))


def limit_region_points(cs: ContactSet, max_points: int = 8, cos_tol: float = 0.985) -> ContactSet:
    """At most ``max_points`` contacts per (body pair, normal) region (see the module docstring)."""
    n = len(cs)
    if n <= max_points:
        return cs
    keep = np.ones(n, dtype=bool)
    pairs, inv, counts = np.unique(np.stack([cs.body_a, cs.body_b], 1), axis=0, return_inverse=True,
                                   return_counts=True)
    inv = inv.reshape(-1)
    for p in np.flatnonzero(counts > max_points):
        idx = np.flatnonzero(inv == p)
        # group by normal within the pair
        remaining = list(idx)
        while remaining:
            ref = cs.normal[remaining[0]]
            grp = [i for i in remaining if cs.normal[i] @ ref >= cos_tol]
            remaining = [i for i in remaining if i not in grp]
            if len(grp) <= max_points:
                continue
            grp = np.array(grp)
            t1, t2 = cs.tangent1[grp[0]], cs.tangent2[grp[0]]
            uv = np.stack([cs.point[grp] @ t1, cs.point[grp] @ t2], 1)
            kept = grp[_reduce_polygon(uv, max_points)]
            keep[np.setdiff1d(grp, kept)] = False
    return cs.select(keep)

"""Simplify large contact regions for the dynamics.

A planar contact region is reduced to the vertices of its 2-D convex hull (as the paper does); a
round base (a mug's 48-gon rim) then still gives 48 contacts and a 480-row LCP.  For the time
stepper only the support polygon matters, so regions with more than ``max_points`` vertices are
cut down by repeatedly dropping the vertex whose removal loses the least area (a regular octagon
inscribed in a circle keeps 90 % of its area and every support direction to within 8 %).  Grasp
analysis keeps every point.  One compiled call per step (:func:`._simplify_kernel.limit_regions`).
"""
from __future__ import annotations

import numpy as np

from ._simplify_kernel import REGION_COS_TOL, limit_regions, reduce_polygon
from .model import ContactSet

__all__ = ["limit_region_points"]


def _reduce_polygon(uv: np.ndarray, k: int) -> np.ndarray:
    """Indices of ``k`` vertices of the convex polygon ``uv`` (m, 2) kept by least-area removal."""
    return reduce_polygon(np.ascontiguousarray(uv, dtype=np.float64), int(k))


def limit_region_points(cs: ContactSet, max_points: int = 8, cos_tol: float = REGION_COS_TOL) -> ContactSet:
    """At most ``max_points`` contacts per (body pair, normal) region (see the module docstring):
    a region is the contacts of one body pair whose normals are within ``cos_tol`` (cosine) of its
    first contact's; its points are reduced in that contact's tangent plane.  Returns ``cs`` itself
    when nothing is dropped."""
    if len(cs) <= max_points:
        return cs
    c = np.ascontiguousarray
    keep = limit_regions(c(cs.body_a, dtype=np.int64), c(cs.body_b, dtype=np.int64), c(cs.point, dtype=float),
                         c(cs.normal, dtype=float), c(cs.tangent1, dtype=float), c(cs.tangent2, dtype=float),
                         int(max_points), float(cos_tol))
    return cs if keep.all() else cs.select(keep)

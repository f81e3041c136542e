"""Binary search of the instant of impact, and of the instant a joint reaches its limit.

The dynamics takes a trial step; if it ends with bodies interpenetrating, :func:`localize_impact`
bisects the step fraction until no pair interpenetrates and the pairs that did are separated by a
distance in (0, threshold].  :func:`localize_joint_limit` does the same for joint limits.  Both run
a bounded number of halvings and raise :class:`~graspsim.errors.CollisionError` when they cannot
succeed (never loop forever).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..errors import CollisionError

__all__ = ["localize_impact", "localize_joint_limit"]


def _describe(model, pairs, poses) -> str:
    parts = []
    for i, j in pairs[:5]:
        depth = model.penetration_depth(i, j, poses)
        parts.append(f"'{model.table.names[i]}' and '{model.table.names[j]}' (depth {depth * 1e3:.3g} mm)")
    more = f" and {len(pairs) - 5} more pairs" if len(pairs) > 5 else ""
    return "; ".join(parts) + more


def localize_impact(move: Callable[[float], np.ndarray], model, *, threshold: float | None = None,
                    max_halvings: int = 30) -> float:
    """Largest step fraction s in [0, 1] at which no pair interpenetrates, found by bisection.

    ``move(s)`` returns the (N, 4, 4) body poses at fraction s of a trial move; s = 0 must be free of
    interpenetration.  Returns 1.0 when the whole move is free.  Otherwise returns s such that no
    pair interpenetrates at s and the closest of the pairs that interpenetrated is separated by a
    distance in (0, threshold] (default: the model's threshold): as the contact kernel measures it
    (``model.contact_separations``: its closest contact candidate, so that the contact is seen
    there) when the model offers that, else ``model.pair_separations``.  Raises ``CollisionError`` naming
    the bodies (with the depth) when s = 0 already interpenetrates, and when ``max_halvings``
    halvings do not bring the separation into (0, threshold] (the move is then too large for the
    threshold: about 2**-max_halvings of it must be shorter than the threshold).
    """
    thr = model.threshold if threshold is None else float(threshold)
    # separations as the contact kernel sees them (is the pair within thr?) where the model offers
    # them, else its exact ones
    kernel_sep = getattr(model, "contact_separations", None)
    separations = (lambda P, pairs: kernel_sep(P, pairs, thr)) if kernel_sep is not None else model.pair_separations
    P1 = move(1.0)
    watch = model.penetrating(P1)
    if not watch:
        return 1.0
    P0 = move(0.0)
    pen0 = model.penetrating(P0)
    if pen0:
        raise CollisionError("cannot localize the impact: the bodies interpenetrate before the move: "
                             + _describe(model, pen0, P0))
    lo, hi = 0.0, 1.0
    for _ in range(max_halvings):
        mid = 0.5 * (lo + hi)
        Pm = move(mid)
        pen = model.penetrating(Pm)
        if pen:
            hi, watch = mid, pen
            continue
        d = float(np.min(separations(Pm, watch)))
        if 0.0 < d <= thr:
            return mid
        if d <= 0.0:
            hi = mid  # touching exactly: step back a little more
        else:
            lo = mid
    d = float(np.min(separations(move(lo), watch)))
    if 0.0 < d <= thr:
        return lo
    names = ", ".join(f"'{model.table.names[i]}'-'{model.table.names[j]}'" for i, j in watch[:5])
    raise CollisionError(f"cannot localize the impact of {names} within {max_halvings} halvings: separation at "
                         f"s={lo:.3g} is {d * 1e3:.4g} mm, threshold {thr * 1e3:g} mm (move too large?)")


def localize_joint_limit(q_of_s: Callable[[float], np.ndarray], lower, upper, *, prismatic=None,
                         tol_revolute: float = math.radians(0.1), tol_prismatic: float = 1e-4,
                         max_halvings: int = 60) -> tuple[float, int | None]:
    """Largest step fraction s at which every joint is within its limits, found by bisection.

    ``q_of_s(s)`` returns joint values (rad or m) at fraction s of a trial move (s = 0 within the
    limits, up to the tolerance).  ``prismatic`` (bool per joint, default all revolute) selects the
    tolerance: 0.1 deg for revolute, 0.1 mm for prismatic joints.  Returns ``(1.0, None)`` if
    q(1) is within the limits, else ``(s, k)`` with joint k (the one that crossed) within its
    tolerance of the limit at s and every joint within its limits.  Raises ``CollisionError`` when
    q(0) is already beyond a limit by more than the tolerance.
    """
    lower = np.asarray(lower, float)
    upper = np.asarray(upper, float)
    tol = np.full(lower.shape, tol_revolute)
    if prismatic is not None:
        tol = np.where(np.asarray(prismatic, bool), tol_prismatic, tol_revolute)

    def excess(q):  # > 0 beyond a limit
        return np.maximum(q - upper, lower - q)

    e1 = excess(np.asarray(q_of_s(1.0), float))
    if np.all(e1 <= 0):
        return 1.0, None
    e0 = excess(np.asarray(q_of_s(0.0), float))
    if np.any(e0 > tol):
        k = int(np.argmax(e0 - tol))
        raise CollisionError(f"joint {k} starts beyond its limit by {e0[k]:.4g} (limits [{lower[k]:.4g}, {upper[k]:.4g}])")
    lo, hi, k = 0.0, 1.0, int(np.argmax(e1 / tol))
    for _ in range(max_halvings):
        mid = 0.5 * (lo + hi)
        e = excess(np.asarray(q_of_s(mid), float))
        if np.any(e > 0):
            hi, k = mid, int(np.argmax(e / tol))
            continue
        lo = mid
        if -e[k] <= tol[k]:
            return mid, k
    return lo, k


class PairView:
    """A collision model restricted to some pairs: what :func:`localize_impact` needs, for searches
    that must watch only some bodies (a hand's links, pairs that newly interpenetrate)."""

    def __init__(self, model, pairs):
        self.model, self.pairs, self.threshold, self.table = model, pairs, model.threshold, model.table

    def penetrating(self, poses, pairs=None):
        return self.model.penetrating(poses, pairs=self.pairs if pairs is None else pairs)

    def pair_separations(self, poses, pairs):
        return self.model.pair_separations(poses, pairs)

    def contact_separations(self, poses, pairs, threshold=None):
        return self.model.contact_separations(poses, pairs, threshold)

    def penetration_depth(self, i, j, poses):
        return self.model.penetration_depth(i, j, poses)



class KernelPairView(PairView):
    """A :class:`PairView` answering from the exact contact kernel instead of FCL, for pairs whose
    overlap during the move is known to stay within a depth ``T`` (m, per pair; <= the kernel's
    exact range, and below both bodies' thickness): the kernel run with the threshold T then sees
    every overlap, and its closest candidate within T is the separation.  One compiled call per
    pair and query instead of FCL's collide, containment guard and distance."""

    def __init__(self, model, pairs, T):
        super().__init__(model, pairs)
        self.T = dict(zip(pairs, T))

    def _min_sep(self, X, pair) -> float:
        m = self.model
        # the pairs are bodies with one shape each (first_impact asks FCL for the others)
        return m._closest(X, int(m._bstart[pair[0]]), int(m._bstart[pair[1]]), self.T[pair], m.data)

    def penetrating(self, poses, pairs=None):
        X = self.model.shape_poses(poses)
        return [p for p in (self.pairs if pairs is None else pairs) if self._min_sep(X, p) < -self.model.pen_tol]

    def pair_separations(self, poses, pairs):
        """Separation (m) of each pair: its closest kernel candidate (0 when touching within pen_tol;
        inf beyond T)."""
        X = self.model.shape_poses(poses)
        s = np.array([self._min_sep(X, p) for p in pairs])
        return np.where((s < 0) & (s >= -self.model.pen_tol), 0.0, s)

    def contact_separations(self, poses, pairs, threshold=None):
        """:meth:`pair_separations` (the kernel's, within each pair's T >= the threshold)."""
        return self.pair_separations(poses, pairs)

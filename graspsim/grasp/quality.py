"""Grasp wrench space quality: force closure, epsilon (Ferrari-Canny), volume.

Spaces (``w_ij`` from :mod:`graspsim.grasp.wrenches`, eq. 2):

* ``gws="L1"`` (sum of normal forces bounded by 1, GraspIt's default)::

      P_1 = conv{ w_ij : all i, j }                                   (eq. 5)

* ``gws="Linf"`` (each normal force in [0, 1])::

      P_inf = (+)_i conv({0} U {w_ij}_j)      (Minkowski sum)          (eq. 6)

  Each contact may carry no force, so ``P_1`` is a subset of ``P_inf`` and
  ``epsilon_inf >= epsilon_1``.  (Ferrari & Canny's variant without the zero
  wrench is not contained in ``P_1`` in general, e.g. frictionless contacts.)

Support functions (the only access the epsilon search needs)::

      h_1(u)   = max_ij w_ij.u                                         (eq. 7)
      h_inf(u) = sum_i max(0, max_j w_ij.u)                            (eq. 8)

Quality measures:

* ``force_closure``: origin strictly inside the space (same for L1/Linf).
* ``epsilon = min_{|u|=1} h(u)`` when force closure holds (the radius of the
  largest origin-centred ball inside the space = distance from the origin to
  the nearest facet; Ferrari & Canny 1992), else 0.0.           (eq. 9)
* ``volume``: 6-volume of the space (0.0 when lower-dimensional).  Computed
  lazily on first access of ``GraspQuality.volume`` by the same
  support-driven hull run to completion; the volume is the sum over facets of
  the simplex cones from a vertex ``c`` of the hull,
  ``|det(v_1-c, ..., v_6-c)| / 6!``.  ``analyze(..., volume=True)`` runs only
  that full hull: every facet of it is verified, so its smallest facet offset
  is epsilon as well (one kernel call instead of two).

The epsilon search never builds the whole hull: see :mod:`._hull` (an
expanding-polytope search that refines only facets nearer than the current
lower bound, with exact termination when the nearest facet is verified by a
support query).  The L-infinity space is never enumerated (``8^k`` points).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _hull
from .closure import RANK_RTOL, _affine_rank, _points, _rank
from .wrenches import primitive_wrenches

__all__ = [
    "GraspQuality",
    "WrenchMargin",
    "analyze",
    "analyze_wrenches",
    "gws_volume",
    "support_function",
    "wrench_margin",
    "qhull_quality",
    "minkowski_points",
]

FloatArray = NDArray[np.float64]

#: relative tolerances (multiplied by the size of the wrench space, see _scale)
GEOM_RTOL = 1e-11     # facet verification / visibility
CLOSURE_RTOL = 1e-10  # epsilon must exceed this for force closure
DEGEN_RTOL = 1e-13    # pivot threshold for a degenerate facet
SIMPLEX_RTOL = 1e-9   # least width of the initial simplex's support points
MAX_SEARCH_ITER = 200_000
#: default facet limit for the full-hull volume computation
MAX_VOLUME_FACETS = 2_000_000
_SPACES = ("L1", "Linf")


def _check_space(gws: str) -> str:
    if gws not in _SPACES:
        raise ValueError(f"gws must be one of {_SPACES}, got {gws!r}")
    return gws


def _as_wrench_array(wrenches: ArrayLike) -> FloatArray:
    W = np.asarray(wrenches, dtype=np.float64)
    if W.ndim == 2:
        W = W[:, None, :]
    if W.ndim != 3 or W.shape[2] < 2:
        raise ValueError(f"wrenches must have shape (k, m, d) or (k, d), got {np.shape(wrenches)}")
    bad = ~np.isfinite(W)
    if bad.any():
        i, j = np.argwhere(bad)[0][:2]
        raise ValueError(f"wrenches: contact {i}, generator {j} contains NaN or inf")
    return np.ascontiguousarray(W)


def _kernel_space(W: FloatArray, gws: str) -> tuple[FloatArray, bool]:
    """Generator array and include-origin flag for the numba support query."""
    if gws == "L1":
        return np.ascontiguousarray(W.reshape(1, -1, W.shape[2])), False
    return W, True


def _scale(W: FloatArray, gws: str) -> float:
    """Size of the space: largest generator norm (times k for Linf)."""
    s = float(np.sqrt((W * W).sum(axis=2)).max()) if W.size else 0.0
    return s * (W.shape[0] if gws == "Linf" else 1)


def _space_rank(W: FloatArray, gws: str) -> int:
    flat = W.reshape(-1, W.shape[2])
    # L1: affine hull of the generators; Linf: the zero wrench is in every
    # summand, so the space spans the linear span of the generators.
    return _affine_rank(flat) if gws == "L1" else _rank(flat, RANK_RTOL)      # (W checked by the caller)


def support_function(wrenches: ArrayLike, u: ArrayLike,
                     gws: str = "L1") -> tuple[float, FloatArray]:
    """``(h(u), support point)`` of the space (eqs. 7-8); ``u`` (d,)."""
    W = _as_wrench_array(wrenches)
    G, inc = _kernel_space(W, _check_space(gws))
    out = np.empty(W.shape[2])
    uu = np.ascontiguousarray(u, dtype=np.float64)
    if uu.shape != (W.shape[2],):
        raise ValueError(f"u must have shape ({W.shape[2]},), got {np.shape(u)}")
    if not np.isfinite(uu).all():
        raise ValueError(f"u must be finite, got {uu.tolist()}")
    h = _hull.support(G, inc, np.zeros(W.shape[2]), uu, out)
    return float(h), out


def _search(W: FloatArray, gws: str, offset: FloatArray | None = None, *, full: bool = False,
            max_facets: int = MAX_VOLUME_FACETS, S: float | None = None):
    """Run the numba kernel; returns (status, b_min, u_min, n_added, n_facets, volume).

    ``S``: the size of the space (:func:`_scale`) when the caller has it already.
    """
    d = W.shape[2]
    G, inc = _kernel_space(W, gws)
    if S is None:
        S = _scale(W, gws)
    if offset is None:
        off = np.zeros(d)
    else:
        off = np.ascontiguousarray(offset, dtype=np.float64)
        S = max(S, float(np.abs(off).max(initial=0.0)))
    st, b, u, n_added, n_f, vol, _n_slots = _hull.hull_search(
        G, inc, off, SIMPLEX_RTOL * S, GEOM_RTOL * S, CLOSURE_RTOL * S, DEGEN_RTOL * S, full,
        max_facets, MAX_SEARCH_ITER)
    return int(st), float(b), u, int(n_added), int(n_f), float(vol)


@dataclass
class GraspQuality:
    """Result of :func:`analyze`.

    Attributes:
        force_closure: origin strictly inside the wrench space.
        epsilon: Ferrari-Canny quality (eq. 9), in wrench units (force units,
            torques multiplied by ``torque_scale``); 0.0 without closure.
        gws: ``"L1"`` or ``"Linf"``.
        wrenches: (k, M, 6) primitive wrenches the space was built from.
        weakest_direction: (6,) unit outward normal of the nearest facet
            (the wrench direction the grasp resists least), or None when the
            space is lower-dimensional / empty.  Without closure it is the
            normal of a separating facet (``h(u) <= 0``).
        rank: dimension of the space.
        n_support_points: vertices added by the search (diagnostic; with
            ``volume=True`` by the full hull, i.e. about all hull vertices).
        volume: 6-volume of the space (lazy property, computed on first
            access; 0.0 if lower-dimensional).
    """

    force_closure: bool
    epsilon: float
    gws: str
    wrenches: FloatArray = field(repr=False)
    weakest_direction: FloatArray | None = field(default=None, repr=False)
    rank: int = 0
    n_support_points: int = 0
    _volume: float | None = field(default=None, repr=False)

    @property
    def volume(self) -> float:
        """6-D volume of the grasp wrench space (computed once, cached)."""
        return self.compute_volume()

    def compute_volume(self, max_facets: int = MAX_VOLUME_FACETS) -> float:
        """The volume (cached), computing the hull with at most ``max_facets`` facets (an
        L-infinity hull of k contacts with M generators can have far more than the default:
        about 170 bytes and 2-5 us per facet); beyond that :func:`gws_volume` raises RuntimeError."""
        if self._volume is None:
            W = _as_wrench_array(self.wrenches)
            # analyze() already decided the rank: a full-rank result skips the rank's SVD
            self._volume = _volume(W, self.gws, max_facets, full_rank=self.rank >= W.shape[2])
        return self._volume

    def margin(self, wrench: ArrayLike) -> "WrenchMargin":
        """Shortcut for :func:`wrench_margin` on this result."""
        return wrench_margin(self, wrench)


def _fallback_hull(W: FloatArray, gws: str) -> tuple[bool, float, float]:
    """qhull on explicit points (only when the fast search reports a failure)."""
    pts = W.reshape(-1, W.shape[2]) if gws == "L1" else minkowski_points(W)
    fc, eps, vol = qhull_quality(pts)
    return fc, eps, vol


def analyze_wrenches(wrenches: ArrayLike, gws: str = "L1", *, volume: bool = False) -> GraspQuality:
    """Quality of a grasp given its primitive wrenches ``(k, M, d)`` (or (k, d)).

    The object-level entry point: build wrenches with
    :func:`~graspsim.grasp.wrenches.primitive_wrenches` (or any contact model)
    and call this.  See :func:`analyze` for the meaning of the result.
    """
    return _analyze(_as_wrench_array(wrenches), _check_space(gws), volume)


def _rank_certified(W: FloatArray, gws: str, eps: float, S: float) -> bool:
    """Does a ball of radius ``eps`` about the origin inside the space prove that the rank test
    (:func:`_space_rank`: singular values above ``RANK_RTOL`` times the largest) finds full rank?

    Then the SVD is not needed.  ``n`` wrenches, ``S`` = :func:`_scale`.  L1: the width of
    ``conv(W)`` is at least ``2 eps`` in every direction u, so the two extreme wrenches alone give
    ``sum_j ((w_j - mean).u)^2 >= 2 eps^2``, i.e. ``sigma_min >= sqrt(2) eps``, while ``sigma_max
    <= |W - mean|_F <= 2 sqrt(n) S``.  Linf: ``eps <= h(u) <= k max(0, max_j w_j.u)`` (eq. 8), so
    ``sigma_min >= eps / k``, while ``sigma_max <= sqrt(n) S / k``.  A factor 2 to spare.
    """
    n = W.shape[0] * W.shape[1]
    if gws == "L1":
        return np.sqrt(2.0) * eps > 2.0 * RANK_RTOL * 2.0 * np.sqrt(n) * S
    return eps > 2.0 * RANK_RTOL * np.sqrt(n) * S


def _analyze(W: FloatArray, gws: str, volume: bool) -> GraspQuality:
    """:func:`analyze_wrenches` on a checked (k, M, d) array."""
    k, _, d = W.shape
    if k == 0:
        return GraspQuality(False, 0.0, gws, W, None, 0, 0, 0.0)
    S = _scale(W, gws)
    # The search runs first: when it finds closure with an epsilon well above the rank threshold,
    # the space is full-dimensional (_rank_certified) and the rank's SVD is skipped.  Otherwise the
    # rank decides as before: a lower-dimensional space has no interior and no volume, whatever
    # the search found on it (and qhull is never called for it).
    rank = 0
    if volume:
        # One full hull gives both: every facet is verified, so the smallest facet offset is
        # epsilon (eq. 9) when it is positive, and the volume is the hull's.  Numerical trouble:
        # the epsilon search below, then the volume as gws_volume computes it.
        st, b, u, n_added, _, vol = _search(W, gws, full=True, S=S)
        fc = st == 0 and b > CLOSURE_RTOL * S
        rank = d if fc and _rank_certified(W, gws, b, S) else _space_rank(W, gws)
        if rank < d:
            return GraspQuality(False, 0.0, gws, W, None, rank, 0, 0.0)
        if st == -3:
            raise _facet_limit(W, gws, MAX_VOLUME_FACETS)
        if st == 0:
            return GraspQuality(bool(fc), b if fc else 0.0, gws, W, u.copy(), rank, n_added, vol)
    st, b, u, n_added, _, _ = _search(W, gws, S=S)
    fc = st == 0 and b > CLOSURE_RTOL * S
    if rank < d:
        rank = d if fc and _rank_certified(W, gws, b, S) else _space_rank(W, gws)
        if rank < d:
            return GraspQuality(False, 0.0, gws, W, None, rank, 0, 0.0)
    if st == 0:
        res = GraspQuality(bool(fc), b if fc else 0.0, gws, W, u.copy(), rank, n_added)
    elif st == 2:
        res = GraspQuality(False, 0.0, gws, W, u.copy(), rank, n_added)
    else:  # numerical trouble in the search: exact but slow fallback
        fc, eps, vol = _fallback_hull(W, gws)
        res = GraspQuality(fc, eps, gws, W, None, rank, n_added, vol)
    if volume:
        _ = res.volume
    return res


def analyze(
    points: ArrayLike,
    normals: ArrayLike,
    mu: ArrayLike,
    *,
    center: ArrayLike,
    torque_scale: float,
    edges: int = 8,
    tangents: ArrayLike | None = None,
    gws: str = "L1",
    soft: Any = False,
    gamma: ArrayLike = 0.0,
    volume: bool = False,
) -> GraspQuality:
    """Force closure, epsilon and volume of a grasp.

    Args:
        points: (k, 3) contact points.
        normals: (k, 3) contact normals pointing into the object
            (normalised here; zero length -> ValueError).
        mu: scalar or (k,) friction coefficients, >= 0 (0: frictionless).
        center: (3,) torque origin, the object's centre of mass.
        torque_scale: factor on torques (> 0); GraspIt uses
            1 / max distance from the centre of mass to the surface.
        edges: friction-cone generators per contact (>= 3), eq. 1.
        tangents: optional (k, 3) first tangent per contact.
        gws: ``"L1"`` (eq. 5) or ``"Linf"`` (eq. 6).
        soft: bool or (k,) bool: soft-finger contacts (eq. 3).
        gamma: scalar or (k,) torsional friction coefficient (length units).
        volume: compute the volume now (otherwise lazily on first access).

    Returns:
        :class:`GraspQuality` with ``force_closure``, ``epsilon``, ``volume``.

    Raises:
        ValueError: NaN/inf (naming argument and row), bad shapes, negative
            ``mu``/``gamma``, zero normals, ``torque_scale <= 0``, ``edges < 3``.
    """
    gws = _check_space(gws)
    W = primitive_wrenches(points, normals, mu, center=center, torque_scale=torque_scale,
                           edges=edges, tangents=tangents, soft=soft, gamma=gamma)
    return _analyze(_as_wrench_array(W), gws, volume)


def _facet_limit(W: FloatArray, gws: str, max_facets: int) -> RuntimeError:
    return RuntimeError(
        f"{gws} wrench space volume: the hull exceeds max_facets={max_facets} facets "
        f"({W.shape[0]} contacts x {W.shape[1]} generators); epsilon and force closure "
        "remain available; raise max_facets or reduce contacts/edges for the volume")


def gws_volume(wrenches: ArrayLike, gws: str = "L1", *,
               max_facets: int = MAX_VOLUME_FACETS) -> float:
    """6-volume (d-volume) of the L1 or Linf space; 0.0 if lower-dimensional.

    Runs the support-driven hull to completion (every facet verified).  The
    L-infinity space of many contacts has very many facets (Minkowski sum):
    beyond ``max_facets`` a ``RuntimeError`` says so instead of running for
    hours.
    """
    return _volume(_as_wrench_array(wrenches), _check_space(gws), max_facets)


def _volume(W: FloatArray, gws: str, max_facets: int, full_rank: bool = False) -> float:
    if W.shape[0] == 0 or (not full_rank and _space_rank(W, gws) < W.shape[2]):
        return 0.0
    st, _, _, _, nf, vol = _search(W, gws, full=True, max_facets=max_facets)
    if st == -3:
        raise _facet_limit(W, gws, max_facets)
    if st != 0:
        return _fallback_hull(W, gws)[2]
    return vol


# --------------------------------------------------------------------------- margins


@dataclass(frozen=True)
class WrenchMargin:
    """How a wrench sits relative to the grasp wrench space.

    Attributes:
        scale: largest ``t >= 0`` with ``t * w`` in the space (``inf`` for
            ``w = 0`` when the origin is inside; 0.0 if no such ``t``).  The
            wrench is inside iff ``scale >= 1``; ``1/scale`` is the fraction
            of the unit normal-force budget it uses.
        distance: signed Euclidean distance from ``w`` to the boundary of the
            space, positive inside (the epsilon of the space shifted by
            ``-w``), negative outside (minus the distance to the nearest point).
    """

    scale: float
    distance: float


def _margin_scale(W: FloatArray, gws: str, w: FloatArray) -> float:
    from scipy.optimize import linprog  # lazy

    k, m, d = W.shape
    n = k * m
    flat = W.reshape(n, d)
    # variables [lam (n), t]; maximise t subject to t w = sum lam_j w_j
    c = np.zeros(n + 1)
    c[-1] = -1.0
    A_eq = np.zeros((d, n + 1))
    A_eq[:, :n] = flat.T
    A_eq[:, n] = -w
    b_eq = np.zeros(d)
    if gws == "L1":  # convex combination: sum lam = 1
        A_eq = np.vstack([A_eq, np.r_[np.ones(n), 0.0]])
        b_eq = np.r_[b_eq, 1.0]
        A_ub = b_ub = None
    else:            # each contact's weights sum to <= 1
        A_ub = np.zeros((k, n + 1))
        for i in range(k):
            A_ub[i, i * m:(i + 1) * m] = 1.0
        b_ub = np.ones(k)
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq,
                  bounds=[(0, None)] * (n + 1), method="highs")
    if res.status == 3:
        return float("inf")
    if res.status != 0:
        return 0.0
    return float(res.x[-1])


def _min_norm_point(W: FloatArray, gws: str, w: FloatArray, max_iter: int = 1000) -> float:
    """Euclidean distance from ``w`` to the space (Wolfe's minimum-norm-point
    algorithm on ``P - w`` using support queries only)."""
    G, inc = _kernel_space(W, gws)
    d = W.shape[2]
    S = max(_scale(W, gws), float(np.abs(w).max()))
    tol = 1e-12 * S * S
    out = np.empty(d)

    def lmo(g: FloatArray) -> FloatArray:  # argmin_{x in P-w} g.x
        _hull.support(G, inc, w, -g, out)
        return out.copy()

    pts = [lmo(-w if np.any(w) else np.ones(d))]
    lam = np.array([1.0])
    x = pts[0]
    for _ in range(max_iter):
        p = lmo(x)
        if x @ x - x @ p <= tol:
            break
        pts.append(p)
        lam = np.r_[lam, 0.0]
        while True:
            A = np.array(pts)
            n = len(pts)
            K = np.zeros((n + 1, n + 1))
            K[:n, :n] = A @ A.T
            K[:n, n] = K[n, :n] = 1.0
            rhs = np.zeros(n + 1)
            rhs[n] = 1.0
            alpha = np.linalg.lstsq(K, rhs, rcond=None)[0][:n]
            if np.all(alpha > 1e-14):
                lam = alpha
                break
            neg = alpha <= 1e-14
            theta = np.min(lam[neg] / (lam[neg] - alpha[neg]))
            lam = theta * alpha + (1.0 - theta) * lam
            keep = lam > 1e-14
            keep[np.argmax(lam)] = True
            pts = [q for q, kk in zip(pts, keep) if kk]
            lam = lam[keep] / lam[keep].sum()
        x = np.array(pts).T @ lam
    return float(np.linalg.norm(x))


def wrench_margin(result_or_wrenches: GraspQuality | ArrayLike, wrench: ArrayLike,
                  gws: str | None = None) -> WrenchMargin:
    """Position of a (e.g. measured contact-force) wrench relative to the GWS.

    Args:
        result_or_wrenches: a :class:`GraspQuality` or primitive wrenches
            (k, M, d).
        wrench: (d,) wrench in the same coordinates as the GWS, i.e.
            ``[f, torque_scale * tau]`` about the same centre, and normalised
            to the same force budget (divide by the total normal force for L1
            or by the largest normal force for Linf to compare shapes).
        gws: space, defaults to the result's space (or "L1").

    Returns:
        :class:`WrenchMargin` (``scale`` by LP, ``distance`` by the epsilon
        search on the shifted space when inside, by Wolfe's minimum-norm-point
        algorithm when outside).
    """
    if isinstance(result_or_wrenches, GraspQuality):
        W = result_or_wrenches.wrenches
        gws = gws or result_or_wrenches.gws
    else:
        W = _as_wrench_array(result_or_wrenches)
        gws = gws or "L1"
    gws = _check_space(gws)
    w = np.ascontiguousarray(wrench, dtype=np.float64)
    if w.shape != (W.shape[2],):
        raise ValueError(f"wrench must have shape ({W.shape[2]},), got {np.shape(wrench)}")
    if not np.isfinite(w).all():
        raise ValueError("wrench contains NaN or inf")
    if W.shape[0] == 0:
        return WrenchMargin(0.0, -float(np.linalg.norm(w)))
    scale = _margin_scale(W, gws, w)
    if _space_rank(W, gws) < W.shape[2]:
        # no interior: inside points are on the boundary
        dist = _min_norm_point(W, gws, w)
        return WrenchMargin(scale, -dist)
    st, b, _, _, _, _ = _search(W, gws, offset=w)
    S = _scale(W, gws)
    if st == 0 and b > CLOSURE_RTOL * S:
        return WrenchMargin(scale, float(b))
    return WrenchMargin(scale, -_min_norm_point(W, gws, w))


# --------------------------------------------------------------------------- references


def qhull_quality(points: ArrayLike) -> tuple[bool, float, float]:
    """Reference ``(force_closure, epsilon, volume)`` of ``conv(points)`` by qhull.

    Slow (full hull); used by the tests and as a fallback.  Rank is checked
    first (qhull fails on lower-dimensional sets and on fewer than d+1
    points).  ``hull.equations`` rows are ``[n, c]`` with ``n.x + c <= 0``
    inside, so the facet distance from the origin is ``-c``.
    """
    X = _points("points", points)
    d = X.shape[1]
    if X.shape[0] <= d or _affine_rank(X) < d:
        return False, 0.0, 0.0
    from scipy.spatial import ConvexHull, QhullError  # lazy: ~0.8 s cold import

    try:
        hull = ConvexHull(X)
    except QhullError:
        # precision errors of symmetric sets (coplanar contacts, e.g. a flat jaw's corners: a
        # "wide merge"): allow wide merges, else joggle (QJ, ~1e-11 of the points' scale)
        try:
            hull = ConvexHull(X, qhull_options="Qx Q12")
        except QhullError:
            hull = ConvexHull(X, qhull_options="QJ")
    off = -hull.equations[:, -1]
    eps = float(off.min())
    S = float(np.linalg.norm(X, axis=1).max())
    fc = eps > CLOSURE_RTOL * S
    return bool(fc), eps if fc else 0.0, float(hull.volume)


def minkowski_points(wrenches: ArrayLike, include_origin: bool = True,
                     max_points: int = 2_000_000) -> FloatArray:
    """Explicit vertices (superset) of the Linf space (eq. 6), for small grasps.

    Sums the per-contact point sets one contact at a time, pruning each
    partial sum to its hull vertices (qhull) when it is full-dimensional.
    Raises ``ValueError`` when an intermediate set would exceed
    ``max_points`` (the naive product has ``(M+1)^k`` points).
    """
    W = _as_wrench_array(wrenches)
    k, m, d = W.shape
    acc = np.zeros((1, d))
    for i in range(k):
        S = W[i]
        if include_origin:
            S = np.vstack([np.zeros((1, d)), S])
        S = np.unique(S, axis=0)
        if acc.shape[0] * S.shape[0] > max_points:
            raise ValueError(
                f"Minkowski sum of {k} contacts needs more than {max_points} points; "
                "use the support-function search (analyze_wrenches) instead")
        acc = (acc[:, None, :] + S[None, :, :]).reshape(-1, d)
        if acc.shape[0] > 4 * d and _affine_rank(acc) == d:
            from scipy.spatial import ConvexHull

            acc = acc[ConvexHull(acc).vertices]
    return acc

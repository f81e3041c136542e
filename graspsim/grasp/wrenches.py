"""Contact models: linearised friction cones and primitive contact wrenches.

Conventions (GraspIt-compatible, Ferrari & Canny 1992; Miller & Allen 1999):

* All vectors are expressed in one common frame (world or object frame, the
  caller's choice); rotating everything rotates the wrench space isometrically.
* ``normals[i]`` points **into** the object: it is the direction in which the
  finger pushes.  Non-unit normals are *normalised*; zero-length normals are
  rejected with ``ValueError``.
* Hard finger (point contact with Coulomb friction), unit normal force, cone
  linearised with ``m = edges`` generators (eq. 1)::

      f_ij = n_i + mu_i (cos(2 pi j/m) t1_i + sin(2 pi j/m) t2_i),  j = 0..m-1

  ``t1_i`` is ``tangents[i]`` with its normal component removed and normalised
  (a deterministic orthonormal choice when ``tangents`` is None) and
  ``t2_i = n_i x t1_i``.  ``mu_i = 0`` degenerates the cone to the normal
  (all generators equal ``n_i``).
* Primitive wrench (eq. 2), torque about ``center`` and scaled by
  ``torque_scale`` (GraspIt: 1 / max distance from the centre of mass to the
  object surface, so force and torque coordinates are comparable)::

      w_ij = [ f_ij ,  torque_scale * (p_i - center) x f_ij ]   in R^6

* Soft finger (optional, per contact): a torsional moment about the normal of
  at most ``gamma_i * f_n`` (``gamma`` has units of length, like a torque per
  unit normal force).  We use the elliptic soft-finger model
  ``|f_t|^2/mu^2 + tau_n^2/gamma^2 <= f_n^2`` (Howe & Cutkosky 1996) and
  linearise it by the inscribed polytope whose generators are the m cone edges
  (no torsion) plus the two pure-torsion generators (eq. 3)::

      w_i^(+-) = [ n_i ,  torque_scale * ((p_i - center) x n_i  +-  gamma_i n_i) ]

  i.e. the usual linearisation adds ``+- torque_scale * gamma_i * n_i`` pure
  torsion to the normal-force generator.  The result is conservative (inner
  approximation of the ellipsoid, exact at the equator and at the poles).

Arrays returned by :func:`primitive_wrenches` have shape ``(k, M, 6)`` with a
common ``M`` per contact: contacts with fewer generators (hard contacts in a
mixed hard/soft grasp) are padded by repeating generator 0, which changes
neither the convex hull nor the Minkowski sum.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "validate_contacts",
    "tangent_basis",
    "friction_cone_edges",
    "primitive_wrenches",
    "resultant_wrench",
]

FloatArray = NDArray[np.float64]

#: normals shorter than this are rejected as zero-length
ZERO_NORMAL = 1e-12
#: the (x, y) part of the default first-tangent seed: row 0 for e_y, row 1 for e_x
_AXES = np.array([[0.0, 1.0], [1.0, 0.0]])
_AXES.flags.writeable = False


def _cross(a: FloatArray, b: FloatArray, out: FloatArray | None = None) -> FloatArray:
    """``a x b`` over the last axis (broadcast), the same arithmetic as ``np.cross``
    (``a1 b2 - a2 b1``, ...) without its axis juggling, which costs more than the products
    for the few contacts of a grasp.  ``out``: where to write it (the broadcast shape)."""
    if out is None:
        out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


@lru_cache(maxsize=16)
def _cone_table(m: int) -> tuple[FloatArray, FloatArray]:
    """``cos``/``sin`` of the m generator angles ``2 pi j / m`` (eq. 1), shape (m, 1), read-only."""
    ang = 2.0 * np.pi * np.arange(m) / m
    cs, sn = np.cos(ang)[:, None], np.sin(ang)[:, None]
    cs.flags.writeable = False
    sn.flags.writeable = False
    return cs, sn


def _finite_rows(name: str, a: FloatArray) -> None:
    """Raise ``ValueError`` naming ``name`` and the first row with NaN/inf."""
    if np.isfinite(a).all():
        return
    bad = ~np.isfinite(a)
    if bad.any():
        if a.ndim == 0:
            raise ValueError(f"{name} is not finite ({float(a)})")
        row = int(np.argwhere(bad)[0][0])
        # (plain numbers: numpy 2's repr of a scalar reads np.float64(nan))
        raise ValueError(f"{name}: row {row} contains NaN or inf ({np.asarray(a[row]).tolist()})")


def _as_rows(name: str, x: ArrayLike, k: int | None, width: int) -> FloatArray:
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a ({'k' if k is None else k}, {width}) array of numbers, "
                         f"got {type(x).__name__}") from None
    if a.ndim == 1 and a.shape[0] == width and k in (None, 1):
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] != width or (k is not None and a.shape[0] != k):
        want = f"({'k' if k is None else k}, {width})"
        raise ValueError(f"{name} must have shape {want}, got {np.shape(x)}")
    _finite_rows(name, a)
    return a


def _center_and_scale(center: ArrayLike, torque_scale: float) -> tuple[FloatArray, float]:
    """The wrench reference point (3,) (m, W) and torque scale (1/m, finite > 0), checked."""
    try:
        C = np.asarray(center, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"center must be 3 numbers, got {type(center).__name__}") from None
    if C.shape != (3,):
        raise ValueError(f"center must have shape (3,), got {np.shape(center)}")
    _finite_rows("center", C)
    try:
        ts = float(torque_scale)
    except (TypeError, ValueError):
        ts = math.nan
    if not math.isfinite(ts) or ts <= 0.0:
        raise ValueError(f"torque_scale must be finite and > 0, got {torque_scale!r}")
    return C, ts


def _per_contact(name: str, x: ArrayLike, k: int, *, nonneg: bool = True) -> FloatArray:
    if type(x) is float or type(x) is int:      # the common scalar: checked without numpy
        v = float(x)
        if math.isfinite(v) and (v >= 0.0 or not nonneg):
            return np.full(k, v)
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number or {k} numbers, got {type(x).__name__}") from None
    if a.ndim == 0:
        a = np.full(k, float(a))
    if a.shape != (k,):
        raise ValueError(f"{name} must be a scalar or have shape ({k},), got {np.shape(x)}")
    _finite_rows(name, a)
    if nonneg and (a < 0).any():
        row = int(np.argmax(a < 0))
        raise ValueError(f"{name}: row {row} is negative ({float(a[row])}); must be >= 0")
    return a


def validate_contacts(
    points: ArrayLike,
    normals: ArrayLike,
    mu: ArrayLike,
    center: ArrayLike,
    torque_scale: float,
    tangents: ArrayLike | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, float, FloatArray | None]:
    """Check shapes/values and return float arrays; normals are normalised.

    Raises ``ValueError`` (naming the argument and the row) for NaN/inf,
    wrong shapes, zero-length normals, negative ``mu`` and a non-positive
    ``torque_scale``.
    """
    P = _as_rows("points", points, None, 3)
    k = P.shape[0]
    N = _as_rows("normals", normals, k, 3)
    length = np.sqrt(np.add.reduce(N * N, axis=1))      # np.linalg.norm's arithmetic, less glue
    if (length < ZERO_NORMAL).any():
        row = int(np.argmax(length < ZERO_NORMAL))
        raise ValueError(f"normals: row {row} has zero length ({N[row].tolist()})")
    N = N / length[:, None]
    MU = _per_contact("mu", mu, k)
    C, ts = _center_and_scale(center, torque_scale)
    T = None if tangents is None else _as_rows("tangents", tangents, k, 3)
    return P, N, MU, C, ts, T


def tangent_basis(normals: FloatArray, tangents: FloatArray | None = None
                  ) -> tuple[FloatArray, FloatArray]:
    """Orthonormal tangents ``(t1, t2)``, each (k, 3), with ``t2 = n x t1``.

    ``normals`` (k, 3) must be unit.  ``tangents`` (k, 3): the preferred first
    tangent per contact (its normal component is removed); a tangent parallel
    to its normal raises ``ValueError``.  When None, ``t1`` is built from the
    world axis least aligned with ``n`` (deterministic, frame dependent).
    """
    n = np.asarray(normals, dtype=np.float64)
    if tangents is None:
        # a = e_x, or e_y where the normal is near x: a.n is n_x or n_y exactly, and a - (a.n) n
        # is -(a.n) n plus 1 in a's coordinate (the same roundings as the general formula)
        use_x = np.abs(n[:, 0]) < 0.9
        t1 = np.where(use_x, n[:, 0], n[:, 1])[:, None] * n
        np.negative(t1, out=t1)
        t1[:, :2] += _AXES[use_x.view(np.int8)]
        a_len = 1.0
    else:
        a = np.asarray(tangents, dtype=np.float64)
        t1 = a - np.sum(a * n, axis=1, keepdims=True) * n
        a_len = np.maximum(np.linalg.norm(a, axis=1), 1e-300)
    length = np.sqrt(np.add.reduce(t1 * t1, axis=1))    # np.linalg.norm's arithmetic
    tiny = length < 1e-9 * a_len
    if tiny.any():
        row = int(np.argmax(tiny))
        raise ValueError(f"tangents: row {row} is zero or parallel to its normal")
    t1 /= length[:, None]
    t2 = _cross(n, t1, np.empty_like(t1))
    return t1, t2


def friction_cone_edges(normals: FloatArray, mu: FloatArray, edges: int = 8,
                        tangents: FloatArray | None = None) -> FloatArray:
    """Cone generators ``f_ij`` (eq. 1), shape (k, edges, 3), unit normal part.

    ``normals`` (k, 3) unit, ``mu`` (k,) >= 0, ``edges`` >= 3.
    """
    if int(edges) != edges or edges < 3:
        raise ValueError(f"edges must be an integer >= 3, got {edges!r}")
    m = int(edges)
    t1, t2 = tangent_basis(normals, tangents)
    cs, sn = _cone_table(m)
    mu = np.asarray(mu, dtype=np.float64)
    return (normals[:, None, :]
            + mu[:, None, None] * (cs * t1[:, None, :] + sn * t2[:, None, :]))


def primitive_wrenches(
    points: ArrayLike,
    normals: ArrayLike,
    mu: ArrayLike,
    *,
    center: ArrayLike,
    torque_scale: float,
    edges: int = 8,
    tangents: ArrayLike | None = None,
    soft: Any = False,
    gamma: ArrayLike = 0.0,
) -> FloatArray:
    """Primitive contact wrenches ``w_ij`` (eqs. 2-3), shape (k, M, 6).

    Parameters (all in one frame, lengths in model units):
        points (k, 3): contact points.  normals (k, 3): into the object.
        mu: scalar or (k,) Coulomb coefficients (>= 0).
        center (3,): torque origin (centre of mass).
        torque_scale: > 0, multiplies torques (units 1/length).
        edges: cone generators per contact (>= 3).
        tangents: optional (k, 3) first tangent direction per contact.
        soft: bool or (k,) bool, soft-finger contacts.
        gamma: scalar or (k,) torsional coefficient (length), used where soft.

    ``M = edges`` for hard grasps, ``edges + 2`` when any contact is soft.
    Wrench coordinates are ``[fx, fy, fz, s*tx, s*ty, s*tz]`` with
    ``s = torque_scale``.
    """
    P, N, MU, C, ts, T = validate_contacts(points, normals, mu, center, torque_scale, tangents)
    k = P.shape[0]
    F = friction_cone_edges(N, MU, edges, T) if k else np.zeros((0, int(edges), 3))
    r = P - C
    W = np.empty(F.shape[:2] + (6,))
    W[:, :, :3] = F
    _cross(r[:, None, :], F, W[:, :, 3:])
    if ts != 1.0:       # (x * 1.0 is x)
        W[:, :, 3:] *= ts
    if type(soft) is bool:      # the common case, without numpy
        soft_a = None
        any_soft = soft and k > 0
    else:
        soft_in = np.asarray(soft)
        if soft_in.ndim > 1 or (soft_in.ndim == 1 and soft_in.shape != (k,)):
            raise ValueError(f"soft must be a bool or have shape ({k},), got {soft_in.shape}")
        soft_a = np.broadcast_to(soft_in.astype(bool), (k,))
        any_soft = bool(soft_a.any())
    g = _per_contact("gamma", gamma, k)
    if any_soft:
        if soft_a is None:
            soft_a = np.ones(k, bool)
        base = np.concatenate([N, ts * _cross(r, N)], axis=1)  # (k, 6)
        tors = np.zeros((k, 6))
        tors[:, 3:] = ts * g[:, None] * N
        extra = np.stack([base + tors, base - tors], axis=1)     # (k, 2, 6)
        extra[~soft_a] = W[~soft_a, :1, :]                         # padding
        W = np.concatenate([W, extra], axis=1)
    return W


def resultant_wrench(
    points: ArrayLike,
    forces: ArrayLike,
    *,
    center: ArrayLike,
    torque_scale: float,
    normals: ArrayLike | None = None,
    budget: str | None = None,
) -> FloatArray:
    """Net wrench of contact forces in GWS coordinates, shape (6,).

    ``w = sum_i [f_i, torque_scale * (p_i - center) x f_i]`` for forces
    ``forces`` (k, 3) applied by the fingers at ``points`` (k, 3) (e.g. the
    contact impulses of a dynamic step divided by the time step).  To compare
    with a unit-budget wrench space pass ``normals`` (into the object) and
    ``budget``: ``"L1"`` divides by the total normal force
    ``sum_i max(f_i.n_i, 0)``, ``"Linf"`` by the largest normal force.  Then
    :func:`graspsim.grasp.wrench_margin` tells how deep inside the space
    (or how far outside) the actual grasp force is.
    """
    P = _as_rows("points", points, None, 3)
    k = P.shape[0]
    F = _as_rows("forces", forces, k, 3)
    if normals is None:
        N = None
    else:  # reuse the contact validation (normalises, rejects zero normals)
        _, N, _, _, _, _ = validate_contacts(P, normals, 0.0, center, torque_scale)
    C, ts = _center_and_scale(center, torque_scale)
    w = np.concatenate([F.sum(axis=0), ts * np.cross(P - C, F).sum(axis=0)])
    if budget is None:
        return w
    if N is None:
        raise ValueError("budget normalisation needs normals")
    fn = np.maximum(np.sum(F * N, axis=1), 0.0)
    if budget == "L1":
        total = float(fn.sum())
    elif budget == "Linf":
        total = float(fn.max(initial=0.0))
    else:
        raise ValueError(f"budget must be None, 'L1' or 'Linf', got {budget!r}")
    if total <= 0.0:
        raise ValueError("no compressive normal force: cannot normalise the wrench")
    return w / total

"""Rigid-body spatial helpers: rotations, unit quaternions (Euler parameters), homogeneous transforms.

Conventions (used everywhere in graspsim):

* Quaternions are ``(w, x, y, z)`` with ``w`` the scalar part (GraspIt's Euler parameters q4..q7).
* ``X_AB`` is a 4x4 homogeneous transform giving the pose of frame B in frame A:
  ``p_A = X_AB @ [p_B, 1]``.
* Roll-pitch-yaw ``(r, p, y)`` means ``R = Rz(y) @ Ry(p) @ Rx(r)`` (fixed axes x, then y, then z).
* All lengths in metres, angles in radians.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = [
    "skew", "rot_x", "rot_y", "rot_z", "rot_axis_angle", "rpy_to_matrix", "matrix_to_rpy",
    "quat_to_matrix", "matrix_to_quat", "quat_multiply", "quat_normalize", "quat_conjugate",
    "quat_from_axis_angle", "transform", "inverse", "dh_transform", "translation", "rotation_log",
    "euler_parameter_rate_matrix", "quat_integrate", "slerp", "RIGID_TOL", "rigid_problem", "check_rigid",
    "UNIT_QUAT_TOL", "unit_quat_problems",
]


def skew(v: np.ndarray) -> np.ndarray:
    """(3,) -> (3, 3) cross-product matrix, ``skew(a) @ b == cross(a, b)``."""
    x, y, z = v
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def rot_x(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[1.0, 0, 0], [0, c, -s], [0, s, c]])


def rot_y(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1.0, 0], [-s, 0, c]])


def rot_z(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])


def rot_axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues' formula; ``axis`` need not be normalised (must be non-zero)."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    K = skew(a)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def rpy_to_matrix(rpy) -> np.ndarray:
    r, p, y = rpy
    return rot_z(y) @ rot_y(p) @ rot_x(r)


def matrix_to_rpy(R: np.ndarray) -> np.ndarray:
    """Inverse of :func:`rpy_to_matrix` (pitch in [-pi/2, pi/2])."""
    p = np.arcsin(np.clip(-R[2, 0], -1.0, 1.0))
    if abs(np.cos(p)) < 1e-12:  # gimbal lock: put everything into yaw
        r = 0.0
        y = np.arctan2(-R[0, 1], R[1, 1])
    else:
        r = np.arctan2(R[2, 1], R[2, 2])
        y = np.arctan2(R[1, 0], R[0, 0])
    return np.array([r, p, y])


def quat_to_matrix(q) -> np.ndarray:
    """Unit quaternion(s) (w, x, y, z) -> rotation matrix: (4,) -> (3, 3), or (..., 4) -> (..., 3, 3).

    The one numpy conversion of the package (the compiled step has its own, ``rotations`` in
    dynamics/_rows_kernel.py, checked against this one in tests/test_compiled_step.py).
    """
    q = np.asarray(q, dtype=float)
    if q.ndim == 1:
        w, x, y, z = q
        return np.array([
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ])
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    R = np.empty(q.shape[:-1] + (3, 3))
    R[..., 0, 0] = 1 - 2 * (y * y + z * z); R[..., 0, 1] = 2 * (x * y - w * z); R[..., 0, 2] = 2 * (x * z + w * y)
    R[..., 1, 0] = 2 * (x * y + w * z); R[..., 1, 1] = 1 - 2 * (x * x + z * z); R[..., 1, 2] = 2 * (y * z - w * x)
    R[..., 2, 0] = 2 * (x * z - w * y); R[..., 2, 1] = 2 * (y * z + w * x); R[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def matrix_to_quat(R: np.ndarray) -> np.ndarray:
    """Rotation matrix -> unit quaternion (w, x, y, z) with w >= 0 (Shepperd's method):
    (3, 3) -> (4,), or (..., 3, 3) -> (..., 4) one matrix at a time (set-up code, not a step)."""
    R = np.asarray(R, dtype=float)
    if R.ndim > 2:
        flat = R.reshape(-1, 3, 3)
        return np.array([_matrix_to_quat(r) for r in flat]).reshape(R.shape[:-2] + (4,))
    return _matrix_to_quat(R)


def _matrix_to_quat(R: np.ndarray) -> np.ndarray:
    t = np.trace(R)
    if t > 0:
        s = np.sqrt(t + 1.0) * 2
        q = np.array([0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s])
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = np.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2]) * 2
        q = np.array([(R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s])
    elif R[1, 1] > R[2, 2]:
        s = np.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2]) * 2
        q = np.array([(R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s])
    else:
        s = np.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1]) * 2
        q = np.array([(R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s])
    if q[0] < 0:
        q = -q
    return q / np.linalg.norm(q)


def quat_multiply(a, b) -> np.ndarray:
    """Hamilton product a * b (rotation b first, then a)."""
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
    ])


def quat_conjugate(q) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]])


def quat_normalize(q) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    return q / np.linalg.norm(q)


def quat_from_axis_angle(axis, angle: float) -> np.ndarray:
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * a])


def euler_parameter_rate_matrix(q) -> np.ndarray:
    """The 4x3 matrix B of Miller & Christensen eq. (10): ``q_dot = B @ omega_body``.

    ``q`` is (w, x, y, z) = (q4, q5, q6, q7) in the paper's numbering; ``omega_body`` is the angular
    velocity expressed in the body frame.  With a world-frame angular velocity use ``B @ R.T @ omega``
    (eq. 11).
    """
    w, x, y, z = q
    return 0.5 * np.array([[-x, -y, -z], [w, -z, y], [z, w, -x], [-y, x, w]])


def quat_integrate(q, omega_world, h: float) -> np.ndarray:
    """Advance an orientation by world angular velocity ``omega_world`` (rad/s) over ``h`` seconds.

    Uses the exact exponential of a constant rate (equal to eq. 12 to first order, but it keeps
    the quaternion on the unit sphere without drift), then renormalises.
    """
    wv = np.asarray(omega_world, dtype=float)
    ang = np.linalg.norm(wv) * h
    if ang < 1e-15:
        return np.asarray(q, dtype=float).copy()
    dq = quat_from_axis_angle(wv, ang)
    out = quat_multiply(dq, q)
    return out / np.linalg.norm(out)


def translation(p) -> np.ndarray:
    X = np.eye(4)
    X[:3, 3] = p
    return X


def transform(R: np.ndarray | None = None, p=None) -> np.ndarray:
    """Build a 4x4 transform from a rotation (3, 3) and a translation (3,)."""
    X = np.eye(4)
    if R is not None:
        X[:3, :3] = R
    if p is not None:
        X[:3, 3] = p
    return X


def inverse(X: np.ndarray) -> np.ndarray:
    """Inverse of a rigid transform."""
    Xi = np.eye(4)
    R = X[:3, :3]
    Xi[:3, :3] = R.T
    Xi[:3, 3] = -R.T @ X[:3, 3]
    return Xi


def dh_transform(theta: float, d: float, a: float, alpha: float) -> np.ndarray:
    """Standard (distal) Denavit-Hartenberg transform ``Rz(theta) Tz(d) Tx(a) Rx(alpha)``."""
    ct, st = np.cos(theta), np.sin(theta)
    ca, sa = np.cos(alpha), np.sin(alpha)
    return np.array([
        [ct, -st * ca, st * sa, a * ct],
        [st, ct * ca, -ct * sa, a * st],
        [0.0, sa, ca, d],
        [0.0, 0.0, 0.0, 1.0],
    ])


def rotation_log(R: np.ndarray) -> np.ndarray:
    """Rotation vector (axis * angle, (3,)) of a rotation matrix; robust near 0 and pi."""
    cos = np.clip((np.trace(R) - 1.0) / 2.0, -1.0, 1.0)
    angle = np.arccos(cos)
    if angle < 1e-7:
        return 0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if np.pi - angle < 1e-5:
        # near pi: axis from the symmetric part
        B = (R + np.eye(3)) / 2.0
        i = int(np.argmax(np.diag(B)))
        axis = B[:, i] / np.sqrt(max(B[i, i], 1e-300))
        axis /= np.linalg.norm(axis)
        # fix sign with the skew part
        v = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
        if axis @ v < 0:
            axis = -axis
        return axis * angle
    return angle / (2.0 * np.sin(angle)) * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])


def slerp(q0, q1, s: float) -> np.ndarray:
    """Spherical linear interpolation between unit quaternions, s in [0, 1] (shortest arc)."""
    q0 = np.asarray(q0, dtype=float)
    q1 = np.asarray(q1, dtype=float)
    d = float(q0 @ q1)
    if d < 0:
        q1, d = -q1, -d
    if d > 0.9995:
        q = q0 + s * (q1 - q0)
        return q / np.linalg.norm(q)
    th = np.arccos(d)
    return (np.sin((1 - s) * th) * q0 + np.sin(s * th) * q1) / np.sin(th)


#: tolerance of a rigid pose: max |R^T R - I| and max |last row - [0, 0, 0, 1]| (so lengths are kept to
#: 1e-6 relative, 1 um per metre: far below the 0.1 mm contact threshold at robot scale, well above
#: the rounding of poses composed through kinematic chains or typed with 7 significant digits)
RIGID_TOL = 1e-6


def rigid_problem(X, tol: float = RIGID_TOL) -> str | None:
    """Why ``X`` is not a finite rigid 4x4 transform (orthonormal rotation with det +1, last row
    [0, 0, 0, 1], each to ``tol``), or None when it is one."""
    try:
        X = np.asarray(X, dtype=float)
    except (TypeError, ValueError):
        return "is not an array of numbers"
    if X.shape != (4, 4):
        return f"must be a 4x4 transform, got shape {X.shape}"
    # on Python floats: a 4x4 is too small for numpy calls to pay (this runs per step for a moving base)
    (a, b, c, x), (d, e, f, y), (g, h, i, z), last = X.tolist()
    if not all(map(math.isfinite, (a, b, c, x, d, e, f, y, g, h, i, z, *last))):
        return "has non-finite entries (NaN or inf)"
    if max(abs(last[0]), abs(last[1]), abs(last[2]), abs(last[3] - 1.0)) > tol:
        return f"last row must be [0, 0, 0, 1] (to {tol:g}), got {last}"
    # R^T R - I: column norms and dot products
    err = max(abs(a * a + d * d + g * g - 1.0), abs(b * b + e * e + h * h - 1.0), abs(c * c + f * f + i * i - 1.0),
              abs(a * b + d * e + g * h), abs(a * c + d * f + g * i), abs(b * c + e * f + h * i))
    if err > tol:
        return (f"rotation part is not orthonormal: max |R^T R - I| = {err:.3g} > {tol:g} "
                "(a scaled or sheared matrix is not a pose)")
    if a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g) < 0:
        return "rotation part has determinant -1 (a reflection, not a rotation)"
    return None


def finite_vector(name: str, value, n: int) -> np.ndarray:
    """``value`` as a new float (n,) array of finite numbers; ValueError naming ``name``."""
    try:
        a = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {n} numbers, got {value!r}") from None
    if a.shape != (n,) or not np.isfinite(a).all():
        raise ValueError(f"{name} must be {n} finite numbers, got {value!r}")
    return a


def check_rigid(X, what: str, tol: float = RIGID_TOL) -> np.ndarray:
    """``X`` as a new float (4, 4) array; ValueError naming ``what`` unless it is a finite rigid
    transform (see :func:`rigid_problem`)."""
    problem = rigid_problem(X, tol)
    if problem is not None:
        raise ValueError(f"{what}: {problem}")
    return np.array(X, dtype=float)


#: quaternions within this of unit norm are renormalised; others are refused (see unit_quat_problems)
UNIT_QUAT_TOL = 1e-6


def unit_quat_problems(q: np.ndarray, tol: float = UNIT_QUAT_TOL) -> list[tuple[int, str]]:
    """Rows of ``q`` (n, 4) that are not finite quaternions of norm within ``tol`` of 1, as
    ``(row, problem)``.  A zero or far-from-unit quaternion is refused rather than normalised: it
    is not a rotation anyone meant, and normalising it would pick one at random."""
    q = np.asarray(q, dtype=float)
    n = np.sqrt(np.einsum("ij,ij->i", q, q))
    bad = np.flatnonzero(~(np.abs(n - 1.0) <= tol))      # NaN norms fail the comparison too
    out = []
    for r in bad:
        if not np.isfinite(q[r]).all():
            out.append((int(r), f"non-finite quaternion {q[r].tolist()}"))
        elif n[r] == 0.0:
            out.append((int(r), "zero quaternion (no rotation)"))
        else:
            out.append((int(r), f"quaternion {q[r].tolist()} has norm {n[r]:.9g}, not 1 (to {tol:g})"))
    return out

"""Spatial (6-D) vector algebra after Featherstone, *Rigid Body Dynamics Algorithms* (RBDA, 2008), ch. 2.

Plain-numpy reference implementations used by the model builder, the tests and anyone who wants to
work with the quantities the recursive algorithms (:mod:`graspsim.rigidbody._kernels`) compute.

Conventions (used everywhere in :mod:`graspsim.rigidbody`):

* A **motion vector** (spatial velocity, acceleration, joint axis) is ``m = [w; v]``: angular part
  first (rad/s), then the linear velocity (m/s) of the body-fixed point that is at the frame origin.
  Pai, Ascher & Kry write the same ``phi = (w, v)``.
* A **force vector** (spatial force, wrench) is ``f = [n; f]``: the moment about the frame origin
  (N m) first, then the force (N).  Like Pai-Ascher-Kry we do not swap the halves; forces are dual
  to motions (``f . m`` is power, W).
* ``B_X_A`` is the Plücker transform taking motion vectors from A coordinates to B coordinates.
  If frame B has pose ``(R, p)`` in A (``R = A_R_B``, ``p`` = origin of B in A), then with
  ``E = R.T``::

      B_X_A = [[ E,          0 ],
               [-E skew(p),  E ]]           (RBDA eq. 2.24)

  Forces transform with ``B_X*_A = B_X_A^{-T} = [[E, -E skew(p)], [0, E]]``; the transpose
  ``B_X_A.T`` takes a force from B back to A (it is ``A_X*_B``).  Pai-Ascher-Kry's adjoint
  ``Ad`` is the same matrix.
* A **spatial inertia** about the frame origin for mass ``m`` (kg), centre of mass ``c`` (m) and
  rotational inertia ``Ic`` about the com (kg m^2, frame axes)::

      I = [[Ic + m skew(c) skew(c).T,  m skew(c)],
           [m skew(c).T,               m 1      ]]   (RBDA eq. 2.63)

  and it transforms as ``I_A = A_X*_B I_B B_X_A = B_X_A.T I_B B_X_A``.
* Cross products: ``crm(v) = [[w x, 0], [v x, w x]]`` acts on motions, ``crf(v) = -crm(v).T`` on
  forces (RBDA eqs. 2.31-2.32); the Newton-Euler equation of one body is
  ``f = I a + crf(v) I v`` (RBDA eq. 2.67; Pai-Ascher-Kry eq. 1 with ``b = -[phi]^T M phi``).
"""
from __future__ import annotations

import numpy as np

__all__ = ["skew", "crm", "crf", "plucker", "plucker_from_pose", "plucker_inverse", "force_transform",
           "spatial_inertia", "transform_inertia", "inertia_com", "pose_from_plucker"]


def skew(v: np.ndarray) -> np.ndarray:
    """(3,) -> (3, 3) cross-product matrix: ``skew(a) @ b == cross(a, b)``."""
    x, y, z = v
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def crm(v: np.ndarray) -> np.ndarray:
    """Motion cross-product matrix (6, 6): ``crm(v) @ m`` is ``v x m`` for a motion vector ``m``."""
    W, V = skew(v[:3]), skew(v[3:])
    out = np.zeros((6, 6))
    out[:3, :3] = W
    out[3:, :3] = V
    out[3:, 3:] = W
    return out


def crf(v: np.ndarray) -> np.ndarray:
    """Force cross-product matrix (6, 6): ``crf(v) @ f`` is ``v x* f``; ``crf(v) = -crm(v).T``."""
    return -crm(v).T


def plucker(E: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``B_X_A`` (6, 6) from ``E`` (rotation A->B coordinates, ``E = A_R_B.T``) and ``r`` (origin of B in A, m)."""
    X = np.zeros((6, 6))
    X[:3, :3] = E
    X[3:, 3:] = E
    X[3:, :3] = -E @ skew(r)
    return X


def plucker_from_pose(X_AB: np.ndarray) -> np.ndarray:
    """``B_X_A`` (6, 6) from the 4x4 pose of frame B in frame A."""
    return plucker(X_AB[:3, :3].T, X_AB[:3, 3])


def pose_from_plucker(X: np.ndarray) -> np.ndarray:
    """The 4x4 pose of B in A from ``B_X_A`` (inverse of :func:`plucker_from_pose`)."""
    E = X[:3, :3]
    Sr = -E.T @ X[3:, :3]          # skew(r)
    T = np.eye(4)
    T[:3, :3] = E.T
    T[:3, 3] = [Sr[2, 1], Sr[0, 2], Sr[1, 0]]
    return T


def plucker_inverse(X: np.ndarray) -> np.ndarray:
    """``A_X_B`` from ``B_X_A`` without a general inverse: ``[[E.T, 0], [skew(r) E.T, E.T]]``."""
    E = X[:3, :3]
    out = np.zeros((6, 6))
    out[:3, :3] = E.T
    out[3:, 3:] = E.T
    out[3:, :3] = X[3:, :3].T
    return out


def force_transform(X: np.ndarray) -> np.ndarray:
    """``B_X*_A = B_X_A^{-T}`` (6, 6) taking force vectors from A to B coordinates."""
    return plucker_inverse(X).T


def spatial_inertia(mass: float, com: np.ndarray, I_com: np.ndarray) -> np.ndarray:
    """Spatial inertia (6, 6) about the frame origin (RBDA eq. 2.63); SI units, frame axes."""
    C = skew(np.asarray(com, dtype=float))
    out = np.zeros((6, 6))
    out[:3, :3] = np.asarray(I_com, dtype=float) + mass * C @ C.T
    out[:3, 3:] = mass * C
    out[3:, :3] = mass * C.T
    out[3:, 3:] = mass * np.eye(3)
    return out


def inertia_com(I: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Inverse of :func:`spatial_inertia`: ``(mass, com, I_com)`` of a spatial inertia."""
    m = I[3, 3]
    C = I[:3, 3:] / m
    c = np.array([C[2, 1], C[0, 2], C[1, 0]])
    return m, c, I[:3, :3] - m * C @ C.T


def transform_inertia(X: np.ndarray, I_B: np.ndarray) -> np.ndarray:
    """Spatial inertia in A coordinates from ``I_B`` and ``X = B_X_A``: ``X.T @ I_B @ X`` (RBDA eq. 2.66)."""
    return X.T @ I_B @ X

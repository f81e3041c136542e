"""Inverse dynamics by the recursive Newton-Euler algorithm (tree coordinates).

``tau = H(q) qdd + C(q, qd) - sum_k J_k(q)^T f_ext_k``: Pai-Ascher-Kry eqs. (2)-(4) (outward
velocity/acceleration recursion (3), inward force recursion (2), projection (4)); RBDA Table 5.1 for
fixed bases and sec. 9.3 for floating bases.  Gravity enters as the fictitious root acceleration
``-g``.  Units: rad, m, s; torques in N m (revolute) or N (prismatic); a floating base's six
generalised forces are the base wrench ``[moment about the base origin; force]`` in base axes.
"""
from __future__ import annotations

import numpy as np

from . import _kernels as K
from .tree import RigidBodyModel

__all__ = ["rnea", "bias_forces", "gravity_forces", "rnea_free_floating"]


def _vec(x, n: int, name: str) -> np.ndarray:
    """``x`` as a C-contiguous float (n,) array; ValueError naming ``name`` (and the entry) unless
    it has that shape and only finite numbers (a NaN would come out as NaN torques or accelerations)."""
    try:
        a = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {n} numbers, got {x!r}") from None
    if a.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {a.shape}")
    if not float(a @ a) < 1e300:              # a NaN, an inf or an entry beyond ~1e150 (they overflow)
        big = np.flatnonzero(~(np.abs(a) < 1e150))
        i = int(big[0]) if len(big) else int(np.argmax(np.abs(a)))
        raise ValueError(f"{name}[{i}] must be a finite number below 1e150 in magnitude, got {float(a[i])}")
    return a


def rnea(model: RigidBodyModel, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray, f_ext=None,
         gravity: np.ndarray | None = None) -> np.ndarray:
    """Generalised forces (nv,) that produce accelerations ``qdd`` at state ``(q, qd)``.

    ``q`` (nq,), ``qd``/``qdd`` (nv,) in tree coordinates (:mod:`graspsim.rigidbody.tree`).
    ``f_ext``: external forces on links, see :meth:`RigidBodyModel.body_fext`.  ``gravity``: world
    frame (m/s^2), default ``model.gravity``.
    """
    q = _vec(q, model.nq, "q")
    qd = _vec(qd, model.nv, "qd")
    qdd = _vec(qdd, model.nv, "qdd")
    tau = np.empty(model.nv)
    K.rnea(*model.kernel_tree(), q, qd, qdd, model.root_acceleration(gravity), model.body_fext(f_ext), tau)
    return tau


def bias_forces(model: RigidBodyModel, q: np.ndarray, qd: np.ndarray, f_ext=None,
                gravity: np.ndarray | None = None) -> np.ndarray:
    """``C(q, qd)`` (nv,): Coriolis, centrifugal, gravity and external-force terms (``rnea`` at ``qdd = 0``)."""
    return rnea(model, q, qd, np.zeros(model.nv), f_ext, gravity)


def gravity_forces(model: RigidBodyModel, q: np.ndarray, gravity: np.ndarray | None = None) -> np.ndarray:
    """Generalised gravity forces ``G(q)`` (nv,) (``rnea`` at rest)."""
    z = np.zeros(model.nv)
    return rnea(model, q, z, z, None, gravity)


def rnea_free_floating(model: RigidBodyModel, q: np.ndarray, qd: np.ndarray, qdd_joints: np.ndarray,
                       f_ext=None, gravity: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Floating-base inverse dynamics with no actuation on the base (RBDA sec. 9.4).

    Given joint accelerations (nv - 6,), returns ``(a_base, tau_joints)``: the base spatial
    acceleration (6,) in base coordinates that is consistent with a zero base wrench, and the joint
    forces.  Solves ``H_bb a_b = -(C_b + H_bj qdd_j)``, ``tau_j = C_j + H_jb a_b + H_jj qdd_j``.
    """
    if not model.floating:
        raise ValueError("rnea_free_floating needs a floating-base model")
    from .crbm import crba

    qdd = np.zeros(model.nv)
    qdd[6:] = qdd_joints
    tau0 = rnea(model, q, qd, qdd, f_ext, gravity)     # with zero base acceleration
    H = crba(model, q)
    a_b = -np.linalg.solve(H[:6, :6], tau0[:6])
    return a_b, tau0[6:] + H[6:, :6] @ a_b

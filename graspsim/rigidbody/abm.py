"""Forward dynamics by the articulated-body method (O(n)) and the modified ABM.

The ABM is the block elimination of Pai-Ascher-Kry's system (5) that keeps its sparsity (sec. 5):
articulated inertias ``M^_{k+1} = M_{k+1} + Ad^T (M^_k - M^_k H_k D_k^{-1} H_k^T M^_k) Ad``,
pivots ``D_k = H_k^T M^_k H_k``, and the matching bias-force recursion (Featherstone 1983; RBDA
Table 7.1; floating base RBDA sec. 9.3).  The modified ABM (Pai-Ascher-Kry sec. 7; Ascher, Pai &
Cloutier 1997) forms the pivot as ``D = H^T M H + H^T M~ H`` -- the body's own inertia and the
projected inertia of its subtree enter the quadratic form separately -- to reduce cancellation.
Tree coordinates throughout; see :mod:`graspsim.rigidbody.tree`.
"""
from __future__ import annotations

import numpy as np

from . import _kernels as K
from .rnea import _vec
from .tree import RigidBodyModel

__all__ = ["forward_dynamics_abm", "forward_dynamics_modified_abm", "forward_dynamics_abm_multi"]


def _fd(model, q, qd, tau, f_ext, gravity, modified: bool) -> np.ndarray:
    q = _vec(q, model.nq, "q")
    qd = _vec(qd, model.nv, "qd")
    tau = _vec(tau, model.nv, "tau")
    qdd = np.empty(model.nv)
    ok = K.fd_abm(*model.kernel_tree(), q, qd, tau, model.root_acceleration(gravity), model.body_fext(f_ext),
                  modified, qdd)
    if not ok:
        raise np.linalg.LinAlgError("floating-base articulated inertia is not positive definite")
    return qdd


def forward_dynamics_abm(model: RigidBodyModel, q: np.ndarray, qd: np.ndarray, tau: np.ndarray, f_ext=None,
                         gravity: np.ndarray | None = None) -> np.ndarray:
    """Accelerations (nv,) by the articulated-body method, O(n)."""
    return _fd(model, q, qd, tau, f_ext, gravity, False)


def forward_dynamics_modified_abm(model: RigidBodyModel, q: np.ndarray, qd: np.ndarray, tau: np.ndarray, f_ext=None,
                                  gravity: np.ndarray | None = None) -> np.ndarray:
    """Accelerations (nv,) by the modified ABM (pivot ``S.I S + S.A~ S``, Pai-Ascher-Kry sec. 7), O(n)."""
    return _fd(model, q, qd, tau, f_ext, gravity, True)


def forward_dynamics_abm_multi(model: RigidBodyModel, q: np.ndarray, qd: np.ndarray, tau: np.ndarray,
                               B: np.ndarray, f_ext=None, gravity: np.ndarray | None = None,
                               modified: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(H^{-1}(tau - C), H^{-1} B)`` from one articulated-body factorisation, O(n) per column.

    ``B`` (nv, m) holds extra generalised-force columns (no bias, no gravity); used to enforce
    DOF couplings (:func:`graspsim.rigidbody.dofs.forward_dynamics`).
    """
    q = _vec(q, model.nq, "q")
    qd = _vec(qd, model.nv, "qd")
    tau = _vec(tau, model.nv, "tau")
    B = np.ascontiguousarray(B, dtype=np.float64).reshape(model.nv, -1)
    qdd = np.empty(model.nv)
    Y = np.empty_like(B)
    ok = K.fd_abm_multi(*model.kernel_tree(), q, qd, tau, model.root_acceleration(gravity), model.body_fext(f_ext),
                        modified, B, qdd, Y)
    if not ok:
        raise np.linalg.LinAlgError("floating-base articulated inertia is not positive definite")
    return qdd, Y

"""Joint-space inertia by the composite-rigid-body method; forward dynamics by its Cholesky factor.

``H = H^T A^T M A H`` in Pai-Ascher-Kry's notation (sec. 4), formed as in their footnote 1 from
composite inertias ``Ic_p = I_p + sum_c X_c^T Ic_c X_c`` (Walker & Orin 1982; RBDA Table 6.2);
``H qdd = tau - C`` is then solved by ``H = L L^T`` (O(n^3)).  Tree coordinates throughout.
"""
from __future__ import annotations

import numpy as np

from . import _kernels as K
from .rnea import _vec
from .tree import RigidBodyModel

__all__ = ["crba", "forward_dynamics_crb", "condition_number"]


def crba(model: RigidBodyModel, q: np.ndarray) -> np.ndarray:
    """Joint-space inertia matrix ``H(q)`` (nv, nv), symmetric positive definite (kg m^2, kg m, kg)."""
    q = _vec(q, model.nq, "q")
    H = np.empty((model.nv, model.nv))
    K.crba(*model.kernel_tree(), q, H)
    return H


def forward_dynamics_crb(model: RigidBodyModel, q: np.ndarray, qd: np.ndarray, tau: np.ndarray, f_ext=None,
                         gravity: np.ndarray | None = None) -> np.ndarray:
    """Accelerations ``qdd = H^{-1}(tau - C)`` (nv,) by CRBM + Cholesky (no pivoting).

    Raises :class:`numpy.linalg.LinAlgError` if ``H`` is not numerically positive definite (which
    happens for very ill-conditioned chains, cond(H) ~ 1/eps).
    """
    q = _vec(q, model.nq, "q")
    qd = _vec(qd, model.nv, "qd")
    tau = _vec(tau, model.nv, "tau")
    qdd = np.empty(model.nv)
    ok = K.fd_crb(*model.kernel_tree(), q, qd, tau, model.root_acceleration(gravity), model.body_fext(f_ext), qdd)
    if not ok:
        raise np.linalg.LinAlgError("joint-space inertia is not numerically positive definite")
    return qdd


def condition_number(model: RigidBodyModel, q: np.ndarray) -> float:
    """2-norm condition number of ``H(q)`` (ratio of extreme eigenvalues)."""
    w = np.linalg.eigvalsh(crba(model, q))
    return float(w[-1] / w[0]) if w[0] > 0 else float("inf")

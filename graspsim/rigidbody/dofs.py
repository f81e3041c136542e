"""Dynamics in the robot's DOF coordinates (coupled joints honoured): what a controller uses.

A DOF drives one or more joints, ``joint = ratio * dof + offset`` (the Barrett finger DOF drives its
proximal joint with ratio 1 and its distal joint with ratio 1/3).  With the (nv, nvd) coupling
matrix ``R = model.Rq`` (a floating base adds an identity block for its six velocities):

* ``q_tree = R q_dof + offset`` (floating base: the 7 base coordinates are copied),
  ``qd_tree = R qd_dof``, ``qdd_tree = R qdd_dof``;
* virtual work gives ``tau_dof = R^T tau_tree`` and ``H_dof = R^T H R``, ``C_dof = R^T C``;
* forward dynamics solves ``H_dof qdd_dof = tau_dof - C_dof``.  By CRBM this is a Cholesky solve of
  ``H_dof``.  By (modified) ABM the coupling is a set of constraints ``G qdd_tree = 0`` (rows of
  ``G`` span the complement of range(R)): ``qdd = y0 + Y lambda`` with ``y0 = H^{-1}(R^+T tau - C)``,
  ``Y = H^{-1} G^T`` from one O(n) factorisation, and ``(G Y) lambda = -G y0`` (m x m, m = number of
  coupling constraints).  Uncoupled robots skip the constraint step.

Passive joints (``dof = -1`` and not fixed) are locked at 0, as :func:`graspsim.kinematics.joint_values`
does.  Joint friction (``coulomb``, ``viscous``) is not part of the rigid-body model.
"""
from __future__ import annotations

import numpy as np

from . import abm as _abm
from . import crbm as _crbm
from . import rnea as _rnea
from .tree import RigidBodyModel

__all__ = ["tree_coordinates", "dof_coordinates", "inverse_dynamics", "mass_matrix", "bias_forces",
           "forward_dynamics", "feedforward_torque", "computed_torque"]


def _aux(model: RigidBodyModel) -> dict:
    """Cached coupling helpers: pseudo-inverse of R and a basis G of range(R)'s complement."""
    d = model.__dict__.get("_dof_aux")
    if d is None:
        R = model.Rq
        Rp = np.linalg.pinv(R)
        U, s, _ = np.linalg.svd(R)
        rank = int(np.sum(s > 1e-12 * max(1.0, s.max() if s.size else 1.0)))
        if rank < R.shape[1]:
            raise ValueError("DOF coupling matrix is rank deficient (a DOF drives no moving joint)")
        G = np.ascontiguousarray(U[:, rank:].T)
        identity = R.shape[0] == R.shape[1] and np.array_equal(R, np.eye(R.shape[0]))
        d = {"Rp": Rp, "G": G, "GT": np.ascontiguousarray(G.T), "identity": identity,
             "qo": 7 if model.floating else 0, "vo": 6 if model.floating else 0}
        model.__dict__["_dof_aux"] = d
    return d


def tree_coordinates(model: RigidBodyModel, q: np.ndarray, qd: np.ndarray | None = None,
                     qdd: np.ndarray | None = None) -> tuple:
    """Tree ``(q, qd, qdd)`` from DOF coordinates (entries given as None stay None)."""
    a = _aux(model)
    q = _rnea._vec(q, model.nqd, "q")
    qo, vo = a["qo"], a["vo"]
    qt = np.empty(model.nq)
    qt[:qo] = q[:qo]
    qt[qo:] = model.Rq[vo:, vo:] @ q[qo:] + model.offset[qo:]
    out = [qt]
    for x in (qd, qdd):
        if x is None:
            out.append(None)
        else:
            out.append(model.Rq @ _rnea._vec(x, model.nvd, "qd" if x is qd else "qdd"))
    return tuple(out)


def dof_coordinates(model: RigidBodyModel, q_tree: np.ndarray, qd_tree: np.ndarray | None = None) -> tuple:
    """DOF ``(q, qd)`` from tree coordinates that satisfy the coupling (least squares otherwise)."""
    a = _aux(model)
    qo, vo = a["qo"], a["vo"]
    q = np.empty(model.nqd)
    q[:qo] = q_tree[:qo]
    q[qo:] = a["Rp"][vo:, vo:] @ (np.asarray(q_tree)[qo:] - model.offset[qo:])
    return q, (None if qd_tree is None else a["Rp"] @ np.asarray(qd_tree, dtype=float))


def inverse_dynamics(model: RigidBodyModel, q: np.ndarray, qd: np.ndarray, qdd_desired: np.ndarray, f_ext=None,
                     gravity: np.ndarray | None = None) -> np.ndarray:
    """Computed-torque feed-forward: DOF forces (nvd,) giving ``qdd_desired`` at ``(q, qd)``.

    ``tau_dof = R^T RNEA(q_tree, R qd, R qdd)`` (N m for revolute DOFs, N for prismatic ones; a
    floating base's first six entries are the base wrench in base axes).  ``f_ext`` per link as in
    :meth:`RigidBodyModel.body_fext`; gravity in the world frame (default ``model.gravity``).
    """
    qt, qdt, qddt = tree_coordinates(model, q, qd, qdd_desired)
    return model.Rq.T @ _rnea.rnea(model, qt, qdt, qddt, f_ext, gravity)


def mass_matrix(model: RigidBodyModel, q: np.ndarray) -> np.ndarray:
    """``H_dof = R^T H R`` (nvd, nvd), symmetric positive definite."""
    qt = tree_coordinates(model, q)[0]
    return model.Rq.T @ _crbm.crba(model, qt) @ model.Rq


def bias_forces(model: RigidBodyModel, q: np.ndarray, qd: np.ndarray, f_ext=None,
                gravity: np.ndarray | None = None) -> np.ndarray:
    """``C_dof = R^T C(q, qd)`` (nvd,)."""
    qt, qdt, _ = tree_coordinates(model, q, qd)
    return model.Rq.T @ _rnea.bias_forces(model, qt, qdt, f_ext, gravity)


def forward_dynamics(model: RigidBodyModel, q: np.ndarray, qd: np.ndarray, tau: np.ndarray, method: str = "abm",
                     f_ext=None, gravity: np.ndarray | None = None) -> np.ndarray:
    """DOF accelerations (nvd,) for DOF forces ``tau`` (nvd,) by ``method`` 'abm', 'modified_abm' or 'crb'."""
    a = _aux(model)
    qt, qdt, _ = tree_coordinates(model, q, qd)
    tau = _rnea._vec(tau, model.nvd, "tau")
    if method == "crb":
        if a["identity"]:
            return _crbm.forward_dynamics_crb(model, qt, qdt, tau, f_ext, gravity)
        H = model.Rq.T @ _crbm.crba(model, qt) @ model.Rq
        C = model.Rq.T @ _rnea.bias_forces(model, qt, qdt, f_ext, gravity)
        L = np.linalg.cholesky(H)
        return np.linalg.solve(L.T, np.linalg.solve(L, tau - C))
    if method not in ("abm", "modified_abm"):
        raise ValueError(f"method must be 'abm', 'modified_abm' or 'crb', not {method!r}")
    modified = method == "modified_abm"
    if a["identity"]:
        return _abm._fd(model, qt, qdt, tau, f_ext, gravity, modified)
    tau_t = a["Rp"].T @ tau                     # a tree force with R^T tau_t = tau
    if a["G"].shape[0] == 0:
        y0 = _abm._fd(model, qt, qdt, tau_t, f_ext, gravity, modified)
        return a["Rp"] @ y0
    y0, Y = _abm.forward_dynamics_abm_multi(model, qt, qdt, tau_t, a["GT"], f_ext, gravity, modified)
    G = a["G"]
    lam = np.linalg.solve(G @ Y, -(G @ y0))
    return a["Rp"] @ (y0 + Y @ lam)


def feedforward_torque(model: RigidBodyModel, q_des: np.ndarray, qd_des: np.ndarray, qdd_des: np.ndarray,
                       gravity: np.ndarray | None = None) -> np.ndarray:
    """Feed-forward DOF forces of a desired trajectory: ``inverse_dynamics`` at the desired state.

    Add a PD term ``kp (q_des - q) + kd (qd_des - qd)`` to obtain "computed-torque feed-forward plus PD".
    """
    return inverse_dynamics(model, q_des, qd_des, qdd_des, None, gravity)


def computed_torque(model: RigidBodyModel, q: np.ndarray, qd: np.ndarray, q_des: np.ndarray, qd_des: np.ndarray,
                    qdd_des: np.ndarray, kp, kd, gravity: np.ndarray | None = None) -> np.ndarray:
    """Computed-torque control law ``ID(q, qd, qdd_des + kd (qd_des - qd) + kp (q_des - q))`` (fixed base).

    ``kp`` (1/s^2) and ``kd`` (1/s) are acceleration gains, scalars or (nvd,) arrays; the closed-loop
    error then obeys ``e'' + kd e' + kp e = 0`` for an exact model.
    """
    if model.floating:
        raise ValueError("computed_torque is for fixed-base models")
    for name, g in (("kp", kp), ("kd", kd)):
        try:
            ga = np.asarray(g, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"computed_torque: {name} must be a number or one per DOF, got {g!r}") from None
        # (a negative or NaN gain makes e'' + kd e' + kp e = 0 unstable or meaningless)
        if not (np.isfinite(ga).all() and (ga >= 0).all()):
            raise ValueError(f"computed_torque: {name} must be finite and >= 0, got {ga.tolist()}")
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    acc = np.asarray(qdd_des, dtype=float) + kd * (np.asarray(qd_des) - qd) + kp * (np.asarray(q_des) - q)
    return inverse_dynamics(model, q, qd, acc, None, gravity)

"""Poses, energies, momentum and external-force helpers of a :class:`RigidBodyModel` (tree coordinates)."""
from __future__ import annotations

import numpy as np

from .. import spatial
from . import _kernels as K
from .rnea import _vec
from .spatial_algebra import plucker
from .tree import RigidBodyModel

__all__ = ["body_transforms", "body_poses", "link_poses", "body_velocities", "kinetic_energy",
           "potential_energy", "total_energy", "spatial_momentum", "wrench_on_link", "configuration_derivative"]


def body_transforms(model: RigidBodyModel, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-body ``(E, r)``: rotation parent->body coordinates (nb, 3, 3) and body origin in the parent (nb, 3)."""
    q = _vec(q, model.nq, "q")
    E = np.empty((model.nb, 3, 3))
    r = np.empty((model.nb, 3))
    K.joint_transforms(model.jtype, model.qidx, model.axis, model.Rt, model.pt, q, E, r)
    return E, r


def body_poses(model: RigidBodyModel, q: np.ndarray) -> np.ndarray:
    """World poses (nb, 4, 4) of the body frames (joint frames after their motion)."""
    E, r = body_transforms(model, q)
    out = np.empty((model.nb, 4, 4))
    root = np.eye(4) if model.floating else model.X_WB
    for i in range(model.nb):
        T = np.eye(4)
        T[:3, :3] = E[i].T
        T[:3, 3] = r[i]
        p = model.parent[i]
        out[i] = (out[p] if p >= 0 else root) @ T
    return out


def link_poses(model: RigidBodyModel, q: np.ndarray) -> np.ndarray:
    """World poses (n_links, 4, 4) of the robot's link frames (compare :func:`graspsim.kinematics.forward_kinematics`)."""
    B = body_poses(model, q)
    out = np.empty((model.n_links, 4, 4))
    for li in range(model.n_links):
        b = model.link_body[li]
        T = np.eye(4)
        T[:3, :3] = model.R_BL[li]
        T[:3, 3] = model.p_BL[li]
        out[li] = (B[b] if b >= 0 else model.X_WB) @ T
    return out


def body_velocities(model: RigidBodyModel, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Spatial velocities (nb, 6) ``[w; v]`` of the bodies in body coordinates (rad/s, m/s)."""
    q = _vec(q, model.nq, "q")
    qd = _vec(qd, model.nv, "qd")
    v = np.empty((model.nb, 6))
    K.body_velocities(model.parent, model.jtype, model.qidx, model.vidx, model.axis, model.S, model.Rt, model.pt,
                      q, qd, v)
    return v


def kinetic_energy(model: RigidBodyModel, q: np.ndarray, qd: np.ndarray) -> float:
    """``sum_i v_i . I_i v_i / 2`` (J); equals ``qd . H qd / 2``."""
    v = body_velocities(model, q, qd)
    return 0.5 * float(np.einsum("bi,bij,bj->", v, model.inertia, v))


def potential_energy(model: RigidBodyModel, q: np.ndarray, gravity: np.ndarray | None = None) -> float:
    """``-sum_i m_i g . c_i`` (J), c_i the world com of body i (zero at the world origin)."""
    g = model.gravity if gravity is None else np.asarray(gravity, dtype=float)
    P = body_poses(model, q)
    c = np.einsum("bij,bj->bi", P[:, :3, :3], model.com) + P[:, :3, 3]
    return -float(np.sum(model.mass * (c @ g)))


def total_energy(model: RigidBodyModel, q: np.ndarray, qd: np.ndarray, gravity: np.ndarray | None = None) -> float:
    """Kinetic plus potential energy (J)."""
    return kinetic_energy(model, q, qd) + potential_energy(model, q, gravity)


def spatial_momentum(model: RigidBodyModel, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Total spatial momentum ``[angular momentum about the world origin; linear momentum]`` in world axes."""
    P = body_poses(model, q)
    v = body_velocities(model, q, qd)
    h = np.zeros(6)
    for i in range(model.nb):
        X = plucker(P[i][:3, :3].T, P[i][:3, 3])        # body <- world
        h += X.T @ (model.inertia[i] @ v[i])
    return h


def wrench_on_link(model: RigidBodyModel, q: np.ndarray, link: int, point_W: np.ndarray, force_W: np.ndarray,
                   torque_W: np.ndarray | None = None) -> np.ndarray:
    """Link-frame spatial force (6,) of a world force (N) applied at a world point (m), plus a pure torque (N m).

    Use the result as the ``link`` row of ``f_ext``.
    """
    X = link_poses(model, q)[link]
    R, o = X[:3, :3], X[:3, 3]
    F = np.asarray(force_W, dtype=float)
    n = np.cross(np.asarray(point_W, dtype=float) - o, F)
    if torque_W is not None:
        n = n + np.asarray(torque_W, dtype=float)
    return np.concatenate([R.T @ n, R.T @ F])


def configuration_derivative(model: RigidBodyModel, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """``dq/dt`` (nq,) from tree velocities: joints ``qd``; a floating base ``p' = R v_B`` and
    ``quat' = quat * (0, w_B) / 2``."""
    q = np.asarray(q, dtype=float)
    qd = np.asarray(qd, dtype=float)
    if not model.floating:
        return qd.copy()
    out = np.empty(model.nq)
    quat = q[3:7] / np.linalg.norm(q[3:7])
    w, x, y, z = quat
    R = spatial.quat_to_matrix(quat)
    out[:3] = R @ qd[3:6]
    wx, wy, wz = qd[0:3]
    out[3] = 0.5 * (-x * wx - y * wy - z * wz)
    out[4] = 0.5 * (w * wx + y * wz - z * wy)
    out[5] = 0.5 * (w * wy + z * wx - x * wz)
    out[6] = 0.5 * (w * wz + x * wy - y * wx)
    out[7:] = qd[6:]
    return out


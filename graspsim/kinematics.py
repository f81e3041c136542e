"""Kinematics of robot trees: coupled DOFs -> joint values, forward kinematics, Jacobians, IK.

Functions take the immutable :class:`~graspsim.model.description.Robot` and plain arrays; nothing
here keeps state.  Poses are 4x4 transforms in the world frame W; Jacobians are geometric, rows
``[linear velocity of the point; angular velocity of the link]`` in W.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np

from . import spatial
from .arguments import whole
from .model.description import FIXED, PRISMATIC, REVOLUTE, Robot

__all__ = ["joint_values", "dof_values_from_joints", "joint_motion", "forward_kinematics", "link_poses",
           "joint_frames", "jacobian", "inverse_kinematics", "IKResult", "pose_error"]


def as_robot(robot, fn: str) -> Robot:
    """``robot`` as a robot description (a world's robot, ``world.robots[name]``, gives its own);
    ValueError naming ``fn`` for anything else (an AttributeError from inside before)."""
    if type(robot) is Robot:
        return robot
    if isinstance(getattr(robot, "description", None), Robot):
        return robot.description
    if isinstance(robot, Robot):
        return robot
    raise ValueError(f"{fn} needs a robot description (graspsim.load_robot, or a world's robot "
                     f"world.robots[name]), got {type(robot).__name__}")


def joint_values(robot: Robot, dofs: np.ndarray) -> np.ndarray:
    """Joint values (nj,) from DOF values (ndof,): ``joint = ratio * dof + offset`` (fixed/passive: 0)."""
    robot = as_robot(robot, "joint_values")
    try:
        dofs = np.asarray(dofs, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"robot '{robot.name}': DOF values must be {len(robot.dofs)} numbers, got {dofs!r}") from None
    if dofs.shape != (len(robot.dofs),):
        raise ValueError(f"robot '{robot.name}': {len(robot.dofs)} DOF values expected, got shape {dofs.shape}")
    if not np.isfinite(dofs).all():
        k = int(np.flatnonzero(~np.isfinite(dofs))[0])
        raise ValueError(f"robot '{robot.name}': DOF '{robot.dofs[k].name}' value must be finite, got {float(dofs[k])}")
    q = np.zeros(len(robot.joints))
    for n, j in enumerate(robot.joints):
        if j.dof >= 0:
            q[n] = j.ratio * dofs[j.dof] + j.offset
    return q


def dof_values_from_joints(robot: Robot, q: np.ndarray) -> np.ndarray:
    """DOF values read from the first joint each DOF drives (the inverse of :func:`joint_values`)."""
    robot = as_robot(robot, "dof_values_from_joints")
    q, _ = _fk_inputs(robot, q, None)
    out = np.zeros(len(robot.dofs))
    for d, dof in enumerate(robot.dofs):
        j0 = dof.joints[0]
        out[d] = (q[j0] - dof.offsets[0]) / dof.ratios[0]
    return out


def joint_motion(kind: str, axis: np.ndarray, q: float) -> np.ndarray:
    """The 4x4 motion of a joint in its own frame J: rotation about / translation along ``axis``."""
    if kind == REVOLUTE:
        return spatial.transform(spatial.rot_axis_angle(axis, q))
    if kind == PRISMATIC:
        return spatial.translation(axis * q)
    return np.eye(4)


def forward_kinematics(robot: Robot, q: np.ndarray, X_WB: np.ndarray | None = None) -> np.ndarray:
    """World poses (nl, 4, 4) of every link frame for joint values ``q`` (nj,) and base pose ``X_WB``
    (numpy, joint by joint; :func:`link_poses` is the compiled one for hot loops)."""
    robot = as_robot(robot, "forward_kinematics")
    q, X_WB = _fk_inputs(robot, q, X_WB)
    if not (math.isfinite(q.sum()) and math.isfinite(X_WB.sum())):
        _not_finite(robot, q, X_WB)
    X = np.empty((len(robot.links), 4, 4))
    X[robot.base_link] = X_WB
    for n, j in enumerate(robot.joints):  # parents come before children
        X[j.child] = X[j.parent] @ j.X_PJ @ joint_motion(j.kind, j.axis, q[n]) @ j.X_JC
    return X


def link_poses(robot: Robot, q: np.ndarray, X_WB: np.ndarray | None = None) -> np.ndarray:
    """:func:`forward_kinematics` compiled (:func:`graspsim._kinematics_kernel.link_poses`; equal to
    rounding, ~1e-16): ~4 us instead of ~110 us for a Barrett hand, for loops that pose a hand
    thousands of times (the static auto-grasp).  Imports numba on first use."""
    robot = as_robot(robot, "link_poses")
    arrays = _FK.get(robot)
    if arrays is None:
        arrays = _FK[robot] = _fk_arrays(robot)
    q, X_WB = _fk_inputs(robot, q, X_WB)
    from ._kinematics_kernel import link_poses as kernel

    X = kernel(*arrays, q, X_WB)
    if len(X) != arrays[-1]:        # the kernel found a NaN or inf in q or X_WB
        _not_finite(robot, q, X_WB)
    return X


def _fk_inputs(robot: Robot, q, X_WB) -> tuple[np.ndarray, np.ndarray]:
    """``q`` as a float (nj,) array and ``X_WB`` as a C-contiguous float (4, 4) one (identity for
    None); ValueError naming the robot and the argument when a shape is wrong."""
    try:
        q = np.ascontiguousarray(q, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"robot '{robot.name}': joint values q must be {len(robot.joints)} numbers, "
                         f"got {q!r}") from None
    if q.shape != (len(robot.joints),):
        raise ValueError(f"robot '{robot.name}': {len(robot.joints)} joint values expected, got shape {q.shape}")
    if X_WB is None:
        return q, _EYE4
    try:
        X_WB = np.ascontiguousarray(X_WB, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"robot '{robot.name}': base pose X_WB must be a 4x4 transform, got {X_WB!r}") from None
    if X_WB.shape != (4, 4):
        raise ValueError(f"robot '{robot.name}': base pose X_WB must be a 4x4 transform, got shape {X_WB.shape}")
    return q, X_WB


def _link_index(robot: Robot, link, what: str) -> int:
    """``link`` as an int in [0, nlinks); ValueError naming the robot otherwise."""
    n = len(robot.links)
    if isinstance(link, (int, np.integer)) and not isinstance(link, bool) and 0 <= link < n:
        return int(link)
    raise ValueError(f"robot '{robot.name}': {what} must be a link index in [0, {n}), got {link!r}")


def _not_finite(robot: Robot, q: np.ndarray, X_WB: np.ndarray):
    """ValueError naming what is not finite: a joint value (which joint) or the base pose."""
    bad = np.flatnonzero(~(np.abs(q) < 1e150))
    if len(bad):
        j = int(bad[0])
        raise ValueError(f"robot '{robot.name}': joint value q[{j}] (joint '{robot.joints[j].name}') is NaN, inf or "
                         f"beyond 1e150: {q[j]!r}")
    raise ValueError(f"robot '{robot.name}': base pose X_WB is not finite (NaN, inf or beyond 1e150)")


_FK: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # robot -> its arrays for the kernel
_EYE4 = np.eye(4)
_KIND = {REVOLUTE: 0, PRISMATIC: 1}


def _fk_arrays(robot: Robot) -> tuple:
    """(kind, axis, X_PJ, X_JC, parent, child, base, nl) of :func:`~graspsim._kinematics_kernel.link_poses`."""
    js = robot.joints
    kind = np.array([_KIND.get(j.kind, 2) for j in js], np.int64)
    axis = np.zeros((len(js), 3))
    for n, j in enumerate(js):
        a = np.asarray(j.axis, dtype=float)
        axis[n] = a / np.linalg.norm(a) if j.kind == REVOLUTE else a
    stack = lambda attr: np.ascontiguousarray(np.array([getattr(j, attr) for j in js], float).reshape(len(js), 4, 4))
    return (kind, axis, stack("X_PJ"), stack("X_JC"), np.array([j.parent for j in js], np.int64),
            np.array([j.child for j in js], np.int64), int(robot.base_link), len(robot.links))


def joint_frames(robot: Robot, X_links: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World position (nj, 3) of each joint frame origin and its world axis (nj, 3)."""
    robot = as_robot(robot, "joint_frames")
    nj = len(robot.joints)
    origins, axes = np.zeros((nj, 3)), np.zeros((nj, 3))
    for n, j in enumerate(robot.joints):
        X_WJ = X_links[j.parent] @ j.X_PJ
        origins[n] = X_WJ[:3, 3]
        axes[n] = X_WJ[:3, :3] @ j.axis
    return origins, axes


def _chain(robot: Robot, link: int) -> list[int]:
    """Joint indices from the base to ``link``."""
    out = []
    k = robot.parent_joint[link]
    while k >= 0:
        out.append(k)
        k = robot.parent_joint[robot.joints[k].parent]
    return out[::-1]


def jacobian(robot: Robot, q: np.ndarray, X_WB: np.ndarray | None, link: int, point_W: np.ndarray | None = None,
             *, wrt: str = "dofs", X_links: np.ndarray | None = None) -> np.ndarray:
    """Geometric Jacobian (6, n) of a point fixed on ``link`` (default: the link frame origin).

    ``wrt="joints"`` gives one column per joint, ``wrt="dofs"`` one per DOF (columns of coupled
    joints summed with their ratios).  Rows: linear velocity (m/s) then angular velocity (rad/s), W.
    """
    robot = as_robot(robot, "jacobian")
    link = _link_index(robot, link, "link")
    if X_links is None:
        X_links = forward_kinematics(robot, q, X_WB)
    p = X_links[link][:3, 3] if point_W is None else \
        spatial.finite_vector(f"robot '{robot.name}': point_W", point_W, 3)
    Jj = np.zeros((6, len(robot.joints)))
    for n in _chain(robot, link):
        j = robot.joints[n]
        if j.kind == FIXED:
            continue
        X_WJ = X_links[j.parent] @ j.X_PJ
        a = X_WJ[:3, :3] @ j.axis
        if j.kind == REVOLUTE:
            Jj[:3, n] = np.cross(a, p - X_WJ[:3, 3])
            Jj[3:, n] = a
        else:
            Jj[:3, n] = a
    if wrt == "joints":
        return Jj
    if wrt != "dofs":
        raise ValueError(f"wrt must be 'dofs' or 'joints', not {wrt!r}")
    Jd = np.zeros((6, len(robot.dofs)))
    for n, j in enumerate(robot.joints):
        if j.dof >= 0:
            Jd[:, j.dof] += j.ratio * Jj[:, n]
    return Jd


def pose_error(X: np.ndarray, X_target: np.ndarray) -> np.ndarray:
    """6-vector [position error (m); rotation vector error (rad)] taking X to X_target, in W."""
    e = np.empty(6)
    e[:3] = X_target[:3, 3] - X[:3, 3]
    e[3:] = spatial.rotation_log(X_target[:3, :3] @ X[:3, :3].T)
    return e


@dataclass
class IKResult:
    """Outcome of :func:`inverse_kinematics`: DOF values, success, residual errors and iterations."""

    dofs: np.ndarray
    success: bool
    position_error: float   # m
    rotation_error: float   # rad
    iterations: int


def inverse_kinematics(robot: Robot, X_target: np.ndarray, *, link: int | None = None,
                       X_WB: np.ndarray | None = None, dofs0: np.ndarray | None = None,
                       X_LE: np.ndarray | None = None, tol_position: float = 1e-6, tol_rotation: float = 1e-6,
                       max_iterations: int = 200, damping: float = 1e-3, restarts: int = 8,
                       seed: int = 0) -> IKResult:
    """Damped-least-squares IK for the pose of a frame E on ``link`` (default: the last link).

    ``X_LE`` places E on the link (default identity).  Joint limits are respected by clamping each
    update to the DOF limits; if the solve from ``dofs0`` stalls, it restarts from deterministic
    random configurations (``restarts``, ``seed``).  Returns the best :class:`IKResult` found.
    """
    robot = as_robot(robot, "inverse_kinematics")
    if link is None:
        link = robot.joints[-1].child if robot.joints else robot.base_link
    link = _link_index(robot, link, "link")
    X_target = spatial.check_rigid(X_target, f"inverse_kinematics of robot '{robot.name}': X_target")
    X_LE = np.eye(4) if X_LE is None else spatial.check_rigid(X_LE, f"inverse_kinematics of robot '{robot.name}': X_LE")
    for name, v in (("tol_position", tol_position), ("tol_rotation", tol_rotation), ("damping", damping)):
        if not (isinstance(v, (int, float, np.floating)) and 0 < v < math.inf):
            raise ValueError(f"inverse_kinematics of robot '{robot.name}': {name} must be a number > 0, got {v!r}")
    whole(f"inverse_kinematics of robot '{robot.name}': max_iterations", max_iterations, 1)
    whole(f"inverse_kinematics of robot '{robot.name}': restarts", restarts, 0)
    lim = robot.dof_limits
    lo = np.where(np.isfinite(lim[:, 0]), lim[:, 0], -np.pi)
    hi = np.where(np.isfinite(lim[:, 1]), lim[:, 1], np.pi)
    x0 = np.array([d.default for d in robot.dofs]) if dofs0 is None else \
        spatial.finite_vector(f"robot '{robot.name}': dofs0", dofs0, len(robot.dofs))
    rng = np.random.default_rng(seed)
    best = None
    for attempt in range(restarts + 1):
        x = np.clip(x0 if attempt == 0 else rng.uniform(lo, hi), lim[:, 0], lim[:, 1])
        for it in range(1, max_iterations + 1):
            X_links = forward_kinematics(robot, joint_values(robot, x), X_WB)
            X_E = X_links[link] @ X_LE
            e = pose_error(X_E, X_target)
            pe, re = np.linalg.norm(e[:3]), np.linalg.norm(e[3:])
            if pe < tol_position and re < tol_rotation:
                return IKResult(x, True, pe, re, it)
            J = jacobian(robot, None, None, link, X_E[:3, 3], X_links=X_links)
            # damped least squares (Levenberg-Marquardt style): dx = J^T (J J^T + l^2 I)^-1 e
            lam2 = damping ** 2 + 1e-2 * min(1.0, pe + re) ** 2
            dx = J.T @ np.linalg.solve(J @ J.T + lam2 * np.eye(6), e)
            step = np.max(np.abs(dx))
            if step > 0.5:
                dx *= 0.5 / step
            x_new = np.clip(x + dx, lim[:, 0], lim[:, 1])
            if np.max(np.abs(x_new - x)) < 1e-12:
                break
            x = x_new
        if best is None or pe + re < best.position_error + best.rotation_error:
            best = IKResult(x, False, pe, re, it)
    return best

"""The planner's search space: the hand's pose about the object and its eigengrasp amplitudes.

A state is a row vector ``x`` (m units per column, see :class:`GraspSpace`):

* ``x[0:3]`` -- a unit vector ``s`` (world frame W): the palm sits on the ray from the object's
  centre ``c`` along ``s``, and the hand approaches along ``a = -s`` (GraspIt's approach-direction
  parametrisation: a point on a sphere around the object);
* ``x[3]`` -- the roll about the approach axis (rad; :func:`graspsim.batch.candidates.approach_frame`);
* ``x[4]`` -- the stand-off ``r``: distance from ``c`` to the palm origin (m);
* ``x[5:]`` -- eigengrasp amplitudes ``alpha``: DOFs = clip(origin + E^T alpha, limits)
  (Ciocarlie & Allen, "Hand posture subspaces for dexterous robotic grasping", IJRR 2009).

Every hand gets eigengrasps: the ones its robot file lists, or else one "close all" vector made
of each DOF's closing direction (the sign of its auto-grasp velocity), so hands loaded from any
format (URDF too) can be planned for.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..batch.candidates import approach_frame
from ..model.description import PRISMATIC, REVOLUTE

__all__ = ["Eigengrasps", "eigengrasps", "closing_vector", "GraspSpace", "batch_forward_kinematics", "approach_frames"]


def closing_vector(robot) -> np.ndarray:
    """Unit (ndof,) "close all" direction: sign of each DOF's auto-grasp velocity (all ones if none moves)."""
    v = np.sign(np.array([d.velocity for d in robot.dofs], dtype=float))
    if not v.any():
        v = np.ones(len(robot.dofs))
    return v / np.linalg.norm(v)


@dataclass(frozen=True)
class Eigengrasps:
    """origin (ndof,), vectors E (k, ndof) unit rows, amplitude bounds (k, 2) keeping the DOFs in limits."""

    origin: np.ndarray
    vectors: np.ndarray
    bounds: np.ndarray
    fallback: bool            # True: the "close all" vector (the robot file lists none)


def eigengrasps(robot) -> Eigengrasps:
    """The robot's eigengrasps (origin, unit vectors, amplitude bounds); ValueError if they do not fit its DOFs."""
    nd = len(robot.dofs)
    lim = np.asarray(robot.dof_limits, dtype=float)
    E = np.asarray(robot.eigengrasps, dtype=float)
    fallback = E.size == 0
    if fallback:
        E = closing_vector(robot)[None, :]
    if E.ndim != 2 or E.shape[1] != nd:
        raise ValueError(f"robot '{robot.name}': eigengrasp vectors have {E.shape[-1]} entries but the hand has "
                         f"{nd} DOFs ({', '.join(robot.dof_names)})")
    if not np.all(np.isfinite(E)) or np.any(np.linalg.norm(E, axis=1) == 0):
        raise ValueError(f"robot '{robot.name}': eigengrasp vectors must be finite and non-zero")
    E = E / np.linalg.norm(E, axis=1, keepdims=True)
    o = np.clip(np.asarray(robot.eigengrasp_origin, dtype=float).reshape(-1), lim[:, 0], lim[:, 1])
    if o.shape != (nd,):
        raise ValueError(f"robot '{robot.name}': eigengrasp origin has {o.size} entries, the hand {nd} DOFs")
    bounds = np.zeros((len(E), 2))
    for k, e in enumerate(E):
        nz = np.abs(e) > 1e-12
        t1 = (lim[nz, 0] - o[nz]) / e[nz]
        t2 = (lim[nz, 1] - o[nz]) / e[nz]
        # the amplitudes over which every DOF this vector moves stays within its limits
        bounds[k] = (np.max(np.minimum(t1, t2)), np.min(np.maximum(t1, t2)))
        if not bounds[k, 1] > bounds[k, 0]:
            raise ValueError(f"robot '{robot.name}': eigengrasp {k} cannot move from its origin within the DOF limits")
    return Eigengrasps(o, E, bounds, fallback)


def _cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise cross products (B, 3) (np.cross costs more than the arithmetic on small batches)."""
    return np.stack([u[:, 1] * v[:, 2] - u[:, 2] * v[:, 1], u[:, 2] * v[:, 0] - u[:, 0] * v[:, 2],
                     u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]], axis=1)


def approach_frames(a: np.ndarray, roll: np.ndarray) -> np.ndarray:
    """:func:`graspsim.batch.candidates.approach_frame` for many unit directions a (B, 3) and rolls (B,):
    frames (B, 3, 3) with columns [r1, r2, a], r1 the reference perpendicular (from the world axis
    of a's smallest component) turned by the roll about a."""
    a = a / np.sqrt(np.einsum("ij,ij->i", a, a))[:, None]
    e = np.zeros_like(a)
    e[np.arange(len(a)), np.argmin(np.abs(a), axis=1)] = 1.0
    b1 = _cross(e, a)
    b1 /= np.sqrt(np.einsum("ij,ij->i", b1, b1))[:, None]
    b2 = _cross(a, b1)
    r1 = np.cos(roll)[:, None] * b1 + np.sin(roll)[:, None] * b2
    r2 = _cross(a, r1)
    return np.stack([r1, r2, a], axis=2)


def _chain_arrays(robot) -> tuple:
    """The joint chain as arrays for :func:`graspsim.planner._kernels.batch_fk` (cached on the
    robot description, which is immutable: no process-wide table keyed by ``id()``)."""
    hit = robot.__dict__.get("_planner_chain")
    if hit is not None:
        return hit
    J = robot.joints
    kinds = {REVOLUTE: 1, PRISMATIC: 2}
    axes = np.array([np.asarray(j.axis, float) / max(np.linalg.norm(j.axis), 1e-300) for j in J]).reshape(-1, 3)
    arr = (np.array([j.parent for j in J], np.int64), np.array([j.child for j in J], np.int64),
           np.array([j.dof for j in J], np.int64), np.array([j.ratio for j in J], float),
           np.array([j.offset for j in J], float), np.array([kinds.get(j.kind, 0) for j in J], np.int64),
           np.ascontiguousarray(axes), np.ascontiguousarray(np.array([j.X_PJ for j in J], float).reshape(-1, 4, 4)),
           np.ascontiguousarray(np.array([j.X_JC for j in J], float).reshape(-1, 4, 4)),
           int(robot.base_link), len(robot.links))
    robot.__dict__["_planner_chain"] = arr
    return arr


def batch_forward_kinematics(robot, dofs: np.ndarray) -> np.ndarray:
    """Link poses (B, nlinks, 4, 4) in the robot's base frame for DOF values (B, ndof): the same
    coupling and joint chain as :func:`graspsim.kinematics.forward_kinematics`, for B postures in
    one compiled call."""
    from ._kernels import batch_fk

    dofs = np.ascontiguousarray(np.atleast_2d(np.asarray(dofs, dtype=float)))
    return batch_fk(dofs, *_chain_arrays(robot))


class GraspSpace:
    """The search space of one hand about one object (see the module docstring).

    ``center`` (3,) m, W: the object's bounding-box centre; ``r_range`` (2,) m: palm distance from
    it.  ``jump`` (n,) is each column's range, the unit of the annealing neighbourhood.
    """

    def __init__(self, robot, center: np.ndarray, r_range: tuple[float, float]):
        self.robot = robot
        self.eig = eigengrasps(robot)
        self.center = np.asarray(center, dtype=float)
        self.r_range = (float(r_range[0]), float(r_range[1]))
        self.k = len(self.eig.vectors)
        self.n = 5 + self.k
        self.lo = np.concatenate([[-1, -1, -1, -np.pi, self.r_range[0]], self.eig.bounds[:, 0]])
        self.hi = np.concatenate([[1, 1, 1, np.pi, self.r_range[1]], self.eig.bounds[:, 1]])
        self.jump = self.hi - self.lo
        self.jump[0:3] = 1.0                      # the direction: steps on the unit sphere
        # the palm's own reference frame about its approach axis (as the batch runner's candidates)
        self._F_P = approach_frame(np.asarray(robot.approach, float), 0.0)

    def random(self, rng: np.random.Generator, m: int) -> np.ndarray:
        """(m, n) states uniform in the space (directions uniform on the sphere)."""
        x = self.lo + rng.random((m, self.n)) * (self.hi - self.lo)
        s = rng.standard_normal((m, 3))
        x[:, 0:3] = s / np.linalg.norm(s, axis=1, keepdims=True)
        return x

    def project(self, x: np.ndarray) -> np.ndarray:
        """States with the direction renormalised, the roll wrapped and the rest clipped to the bounds."""
        x = np.array(x, dtype=float)
        x[:, 0:3] /= np.maximum(np.linalg.norm(x[:, 0:3], axis=1, keepdims=True), 1e-12)
        x[:, 3] = (x[:, 3] + np.pi) % (2 * np.pi) - np.pi
        x[:, 4:] = np.clip(x[:, 4:], self.lo[4:], self.hi[4:])
        return x

    def dofs(self, x: np.ndarray) -> np.ndarray:
        """DOF values (B, ndof), rad or m: origin + E^T alpha, clipped to the limits."""
        lim = self.robot.dof_limits
        return np.clip(self.eig.origin + x[:, 5:] @ self.eig.vectors, lim[:, 0], lim[:, 1])

    def palm_poses(self, x: np.ndarray) -> np.ndarray:
        """Palm poses (B, 4, 4) in W: on the ray c + r s, approach axis along -s, rolled about it."""
        B = len(x)
        X = np.broadcast_to(np.eye(4), (B, 4, 4)).copy()
        X[:, :3, :3] = approach_frames(-x[:, 0:3], x[:, 3]) @ self._F_P.T
        X[:, :3, 3] = self.center + x[:, 4:5] * x[:, 0:3]
        return X

    def link_poses(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(link poses (B, nl, 4, 4) in W, base poses (B, 4, 4) in W, DOFs (B, ndof)) of states x."""
        q = self.dofs(x)
        L = batch_forward_kinematics(self.robot, q)
        X_WP = self.palm_poses(x)
        X_WB = X_WP @ np.linalg.inv(L[:, self.robot.palm_link])
        return X_WB[:, None] @ L, X_WB, q

"""A numeric rigid-body tree built once from a :class:`~graspsim.model.description.Robot`.

Bodies and frames
-----------------
There is one body per robot joint (in the robot's joint order, parents first), carrying the joint's
child link.  A fixed-base model is rooted at the base link, whose frame is the *root frame*
(gravity is expressed there through ``X_WB``).  A floating-base model adds body 0 for the base link
with a 6-DOF free joint to the world.

The frame of a joint body is the joint frame J *after* the joint motion (``J' = X_PJ motion(q)``).
The robot's link frame is ``J' X_JC`` (``X_JC`` is the Denavit-Hartenberg remainder), so the motion
subspace ``S = [axis; 0]`` (revolute) or ``[0; axis]`` (prismatic) is constant and, for the usual
axes, a coordinate axis -- which keeps the articulated-body projections exact (see
:func:`~graspsim.rigidbody._kernels.abm_factor`).

Coordinates
-----------
*Tree coordinates* (what :func:`~graspsim.rigidbody.rnea.rnea` & co. take): one coordinate per
moving (revolute or prismatic) joint in robot joint order; a floating base prepends its position
``p_WB`` (m) and unit quaternion ``(w, x, y, z)`` (``nq = 7 + n``) and its spatial velocity in base
coordinates ``[w_B; v_B]`` (rad/s, m/s; ``nv = 6 + n``; ``v_B`` is the velocity of the base origin
in base axes).  For a floating base, ``qdd[:6]`` is the base's spatial acceleration in base
coordinates, which equals ``d/dt qd[:6]`` (RBDA sec. 9.3).

*DOF coordinates* (:mod:`graspsim.rigidbody.dofs`): the robot's DOFs.  With
``joint = R dof + offset`` (coupled joints; passive joints, which the kinematics holds at 0, are
locked), ``qd_tree = R qd_dof``, ``H_dof = R^T H R`` and ``tau_dof = R^T tau_tree``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model.description import FIXED, PRISMATIC, REVOLUTE, Robot
from . import _kernels as K
from .spatial_algebra import spatial_inertia

__all__ = ["RigidBodyModel", "from_robot", "DEFAULT_GRAVITY"]

DEFAULT_GRAVITY = np.array([0.0, 0.0, -9.81])
_JT = {REVOLUTE: K.REVOLUTE, PRISMATIC: K.PRISMATIC, FIXED: K.FIXED}


@dataclass(eq=False)
class RigidBodyModel:
    """Arrays of a rigid-body tree (see the module docstring for frames and coordinates).

    Treat as read-only after :func:`from_robot`.  ``nb`` bodies; ``nq``/``nv`` tree position and
    velocity sizes; ``nqd``/``nvd`` the DOF-space sizes.
    """

    robot: Robot | None
    floating: bool
    X_WB: np.ndarray                 # (4, 4) base pose (fixed base; ignored when floating)
    gravity: np.ndarray              # (3,) world frame, m/s^2
    parent: np.ndarray               # (nb,) int64
    jtype: np.ndarray                # (nb,) int64
    qidx: np.ndarray                 # (nb,) int64
    vidx: np.ndarray                 # (nb,) int64
    axis: np.ndarray                 # (nb, 3)
    S: np.ndarray                    # (nb, 6)
    Rt: np.ndarray                   # (nb, 3, 3) joint frame in parent body frame
    pt: np.ndarray                   # (nb, 3)
    inertia: np.ndarray              # (nb, 6, 6) about the body origin, body axes
    mass: np.ndarray                 # (nb,)
    com: np.ndarray                  # (nb, 3) in body frame
    link_body: np.ndarray            # (n_links,) body carrying each link, -1 for a fixed base link
    R_BL: np.ndarray                 # (n_links, 3, 3) link frame in its body frame
    p_BL: np.ndarray                 # (n_links, 3)
    joint_column: np.ndarray         # (n_joints,) tree velocity column of each robot joint, -1 if fixed
    body_joint: np.ndarray           # (nb,) robot joint of each body, -1 for a floating base body
    Rq: np.ndarray                   # (nv, nvd) DOF -> tree velocity map (coupling)
    offset: np.ndarray               # (nq,) tree position offset: q_tree = G(q_dof) (see dofs)
    nq: int = 0
    nv: int = 0
    nqd: int = 0
    nvd: int = 0
    _zero_fext: np.ndarray = field(default=None, repr=False)

    @property
    def nb(self) -> int:
        return int(self.parent.shape[0])

    @property
    def n_links(self) -> int:
        return int(self.link_body.shape[0])

    @property
    def total_mass(self) -> float:
        """Mass (kg) of the moving bodies (a fixed base link is not counted)."""
        return float(self.mass.sum())

    def kernel_tree(self) -> tuple:
        """The tree arrays in the order the kernels take them."""
        return (self.parent, self.jtype, self.qidx, self.vidx, self.axis, self.S, self.Rt, self.pt,
                self.inertia)

    def root_acceleration(self, gravity: np.ndarray | None = None) -> np.ndarray:
        """Fictitious root acceleration ``[0; -g]`` (RBDA sec. 5.3) in the root frame: the base
        frame for a fixed base (``g_B = R_WB^T g``), the world for a floating base."""
        g = self.gravity if gravity is None else np.asarray(gravity, dtype=float)
        a = np.zeros(6)
        a[3:] = -(g if self.floating else self.X_WB[:3, :3].T @ g)
        return a

    def body_fext(self, f_ext) -> np.ndarray:
        """External spatial forces per body (nb, 6) from per-link forces.

        ``f_ext`` is None, an array (n_links, 6) or a dict ``{link index or name: (6,)}``; each entry
        is ``[moment about the link frame origin (N m); force (N)]`` in link-frame axes.  Forces on a
        fixed base link are reacted by the ground and ignored.  See :func:`wrench_on_link` for
        world-frame point forces.
        """
        if f_ext is None:
            return self._zero_fext
        if isinstance(f_ext, dict):
            arr = np.zeros((self.n_links, 6))
            for k, val in f_ext.items():
                li = self.robot.link_index[k] if isinstance(k, str) else int(k)
                arr[li] += np.asarray(val, dtype=float)
        else:
            arr = np.asarray(f_ext, dtype=float).reshape(self.n_links, 6)
        out = np.zeros((self.nb, 6))
        for li in range(self.n_links):
            b = self.link_body[li]
            if b < 0 or not arr[li].any():
                continue
            R, p = self.R_BL[li], self.p_BL[li]
            fo = R @ arr[li, 3:]
            out[b, :3] += R @ arr[li, :3] + np.cross(p, fo)
            out[b, 3:] += fo
        return out

    def tree_q_from_joints(self, q_joints: np.ndarray, base: np.ndarray | None = None) -> np.ndarray:
        """Tree positions from robot joint values (n_joints,) (and base ``[p; quat]`` if floating)."""
        q = np.zeros(self.nq)
        if self.floating:
            q[:7] = [0, 0, 0, 1, 0, 0, 0] if base is None else base
        o = 1 if self.floating else 0
        for n, col in enumerate(self.joint_column):
            if col >= 0:
                q[self.qidx[n + o]] = q_joints[n]
        return q

    def joints_from_tree_q(self, q: np.ndarray) -> np.ndarray:
        """Robot joint values (n_joints,) from tree positions (fixed joints: 0)."""
        out = np.zeros(len(self.joint_column))
        o = 1 if self.floating else 0
        for n, col in enumerate(self.joint_column):
            if col >= 0:
                out[n] = q[self.qidx[n + o]]
        return out

    def neutral_q(self) -> np.ndarray:
        """Tree positions with every joint at 0 and an identity floating-base pose."""
        q = np.zeros(self.nq)
        if self.floating:
            q[3] = 1.0
        return q


def _pose(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.array(X[:3, :3], dtype=float), np.array(X[:3, 3], dtype=float)


def _rotation_z_to(a: np.ndarray) -> np.ndarray:
    """The minimal rotation taking e_z to the unit vector ``a``."""
    c = float(a[2])
    if c < -1.0 + 1e-12:
        return np.diag([1.0, -1.0, -1.0])
    v = np.array([-a[1], a[0], 0.0])                 # e_z x a
    Kx = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + Kx + Kx @ Kx / (1.0 + c)


def _snap(A: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """Round entries within 8 ulp of 0 or +-scale to exactly that (cleans rotation round-off)."""
    A = A.copy()
    tol = 8 * np.finfo(float).eps * scale
    A[np.abs(A) < tol] = 0.0
    for t in (scale, -scale):
        A[np.abs(A - t) < tol] = t
    return A


def from_robot(robot: Robot, floating_base: bool = False, X_WB: np.ndarray | None = None,
               gravity: np.ndarray | None = None, align_axes: bool = True) -> RigidBodyModel:
    """Build the arrays of a :class:`RigidBodyModel` from a robot description (done once).

    ``X_WB`` is the fixed base pose in the world (default identity); with ``floating_base`` the base
    link becomes a free body whose pose is part of the state.  ``gravity`` (world, m/s^2) defaults to
    (0, 0, -9.81).

    ``align_axes``: a joint whose axis is not a coordinate axis of its frame J gets a body frame
    rotated so that the axis is its z axis (``B = J' R_a``, ``R_a e_z = axis``; the same motion,
    since ``Rot(a, q) R_a = R_a Rot(e_z, q)``), and round-off in the resulting constant transforms is
    snapped to exact 0/+-1.  Then every motion subspace is a coordinate vector and the ABM's
    projected inertias have exactly zero rows and columns (see ``docs/reduced_coordinates.md``).
    Link frames, poses and all results are unaffected; only the internal body frames differ.
    """
    from ..kinematics import as_robot

    robot = as_robot(robot, "from_robot")       # (a world's robot: its description)
    joints = robot.joints
    nj = len(joints)
    off = 1 if floating_base else 0
    nb = nj + off
    parent = np.full(nb, -1, dtype=np.int64)
    jtype = np.zeros(nb, dtype=np.int64)
    qidx = np.full(nb, -1, dtype=np.int64)
    vidx = np.full(nb, -1, dtype=np.int64)
    axis = np.zeros((nb, 3))
    S = np.zeros((nb, 6))
    Rt = np.tile(np.eye(3), (nb, 1, 1))
    pt = np.zeros((nb, 3))
    inertia = np.zeros((nb, 6, 6))
    mass = np.zeros(nb)
    com = np.zeros((nb, 3))
    nl = len(robot.links)
    link_body = np.full(nl, -1, dtype=np.int64)
    R_BL = np.tile(np.eye(3), (nl, 1, 1))
    p_BL = np.zeros((nl, 3))
    joint_column = np.full(nj, -1, dtype=np.int64)
    body_joint = np.full(nb, -1, dtype=np.int64)

    nq = nv = 0
    if floating_base:
        jtype[0] = K.FREE
        qidx[0], vidx[0] = 0, 0
        nq, nv = 7, 6
        link_body[robot.base_link] = 0
    for n, j in enumerate(joints):
        b = n + off
        body_joint[b] = n
        jtype[b] = _JT[j.kind]
        pj = robot.parent_joint[j.parent]
        if pj >= 0:
            parent[b] = pj + off
            X_par = np.asarray(joints[pj].X_JC) @ np.asarray(j.X_PJ)     # J_n in the parent's body frame
        else:
            parent[b] = 0 if floating_base else -1
            X_par = np.asarray(j.X_PJ)
        Rt[b], pt[b] = _pose(X_par)
        if j.kind != FIXED:
            a = np.asarray(j.axis, dtype=float)
            a = a / np.linalg.norm(a)
            axis[b] = a
            if j.kind == REVOLUTE:
                S[b, :3] = a
            else:
                S[b, 3:] = a
            qidx[b], vidx[b] = nq, nv
            joint_column[n] = nv
            nq += 1
            nv += 1
        link_body[j.child] = b
        R_BL[j.child], p_BL[j.child] = _pose(np.asarray(j.X_JC))
    if align_axes:
        Ra = np.tile(np.eye(3), (nb, 1, 1))
        for b in range(nb):
            a = axis[b]
            if jtype[b] in (K.REVOLUTE, K.PRISMATIC) and np.count_nonzero(a) > 1:
                Ra[b] = _rotation_z_to(a)
                axis[b] = (0.0, 0.0, 1.0)
                S[b] = (0, 0, 1.0, 0, 0, 0) if jtype[b] == K.REVOLUTE else (0, 0, 0, 0, 0, 1.0)
        for b in range(nb):
            Rp = Ra[parent[b]] if parent[b] >= 0 else np.eye(3)
            Rt[b] = _snap(Rp.T @ Rt[b] @ Ra[b])
            pt[b] = _snap(Rp.T @ pt[b], max(1.0, float(np.abs(pt[b]).max())))
        for li in range(nl):
            b = link_body[li]
            if b >= 0:
                R_BL[li] = _snap(Ra[b].T @ R_BL[li])
                p_BL[li] = Ra[b].T @ p_BL[li]
    for li, link in enumerate(robot.links):
        b = link_body[li]
        if b < 0:
            continue
        R, p = R_BL[li], p_BL[li]
        m = float(link.inertial.mass)
        c = R @ np.asarray(link.inertial.com, dtype=float) + p
        Ic = R @ np.asarray(link.inertial.inertia, dtype=float) @ R.T
        inertia[b] += spatial_inertia(m, c, Ic)
        mass[b] += m
        com[b] = c
    # DOF coupling: tree velocity = Rq dof velocity; tree position = G(dof) (offset on joints)
    nd = len(robot.dofs)
    nvd = nd + (6 if floating_base else 0)
    nqd = nd + (7 if floating_base else 0)
    Rq = np.zeros((nv, nvd))
    offset = np.zeros(nq)
    if floating_base:
        Rq[:6, :6] = np.eye(6)
    bo = 6 if floating_base else 0
    for n, j in enumerate(joints):
        col = joint_column[n]
        if col >= 0 and j.dof >= 0:
            Rq[col, bo + j.dof] = j.ratio
            offset[qidx[n + off]] = j.offset
    X = np.eye(4) if X_WB is None else np.asarray(X_WB, dtype=float)
    g = DEFAULT_GRAVITY.copy() if gravity is None else np.asarray(gravity, dtype=float)
    model = RigidBodyModel(robot=robot, floating=floating_base, X_WB=X, gravity=g, parent=parent, jtype=jtype,
                           qidx=qidx, vidx=vidx, axis=axis, S=S, Rt=np.ascontiguousarray(Rt), pt=pt,
                           inertia=inertia, mass=mass, com=com, link_body=link_body, R_BL=R_BL, p_BL=p_BL,
                           joint_column=joint_column, body_joint=body_joint, Rq=Rq, offset=offset,
                           nq=nq, nv=nv, nqd=nqd, nvd=nvd, _zero_fext=np.zeros((nb, 6)))
    return model

"""Joints in maximal coordinates: constraint rows (eq. 7, 16), joint values, limits (eq. 9).

Every joint of every robot, plus one fixed joint per mounted robot (hand on arm), becomes a
:class:`JointSet` entry.  A joint's frame J is carried by the parent (``X_WJ = X_WP X_PJ``) and by the
child (``X_WJ' = X_WC inv(X_JC)``); the constraint keeps J' where the joint's motion puts it:
revolute -- same origin and axis (5 rows), prismatic -- same orientation, origin on the axis
(5 rows), fixed -- identical (6 rows).  Rows measure child-minus-parent velocities; their position
errors (child side minus parent side) drive the error-correction velocities of eq. (16).
Joint rates and joint-torque wrenches are built by the compiled step only
(``rate_rows``/``joint_wrenches`` in dynamics/_rows_kernel.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import spatial
from ..model.bodies import BodyTable
from ..model.description import FIXED, PRISMATIC, REVOLUTE, World
from .rows import Rows, cross

KIND_CODE = {REVOLUTE: 0, PRISMATIC: 1, FIXED: 2}


@dataclass(frozen=True, eq=False)
class JointSet:
    """Flat arrays over all joints of a world (robots' joints, then mount joints)."""

    names: tuple
    kind: np.ndarray        # 0 revolute, 1 prismatic, 2 fixed
    parent: np.ndarray      # table index of the parent body
    child: np.ndarray       # table index of the child body
    X_PJ: np.ndarray        # (nj, 4, 4)
    X_CJ: np.ndarray        # (nj, 4, 4) = inv(X_JC): J' seen from the child
    axis: np.ndarray        # (nj, 3) in J
    perp: np.ndarray        # (nj, 2, 3) two unit vectors in J perpendicular to the axis
    limits: np.ndarray      # (nj, 2)
    coulomb: np.ndarray
    viscous: np.ndarray
    dof: np.ndarray         # global DOF index or -1
    ratio: np.ndarray
    offset: np.ndarray
    robot: np.ndarray       # robot index, -1 for mounts
    local: np.ndarray       # joint index within the robot, -1 for mounts

    def __len__(self) -> int:
        return len(self.kind)


@dataclass(frozen=True, eq=False)
class DofSet:
    """Flat arrays over all DOFs of a world (robot by robot)."""

    names: tuple
    robot: np.ndarray
    local: np.ndarray
    joints: tuple           # per DOF: array of global joint indices (first = the driven one)
    ratios: tuple
    offsets: tuple
    limits: np.ndarray      # (nd, 2)
    kp: np.ndarray
    kd: np.ndarray
    effort: np.ndarray
    velocity: np.ndarray
    breakaway: np.ndarray   # bool
    breakaway_torque: np.ndarray
    robot_slices: tuple     # per robot: slice of its DOFs in the global arrays

    def __len__(self) -> int:
        return len(self.names)


def _perp(axis: np.ndarray) -> np.ndarray:
    a = axis / np.linalg.norm(axis)
    u = cross(a, np.eye(3)[int(np.argmin(np.abs(a)))])
    u /= np.linalg.norm(u)
    return np.stack([u, cross(a, u)])


def build_joint_sets(world: World, table: BodyTable) -> tuple[JointSet, DofSet]:
    names, kind, parent, child, XPJ, XCJ, axis, perp, lim, coul, visc, dof, ratio, off, rob, loc = ([] for _ in range(16))
    dnames, drob, dloc, djoints, dratios, doffs, dlim, kp, kd, eff, vel, brk, brkt, slices = ([] for _ in range(14))
    joint_base = []
    nd = 0
    for ri, inst in enumerate(world.robots):
        rl = table.robot_links[ri]
        base_j = len(kind)
        joint_base.append(base_j)
        for n, j in enumerate(inst.robot.joints):
            names.append(f"{inst.name}/{j.name}")
            kind.append(KIND_CODE[j.kind]); parent.append(rl[j.parent]); child.append(rl[j.child])
            XPJ.append(j.X_PJ); XCJ.append(spatial.inverse(j.X_JC)); axis.append(j.axis); perp.append(_perp(j.axis))
            lim.append(j.limits); coul.append(j.coulomb); visc.append(j.viscous)
            dof.append(nd + j.dof if j.dof >= 0 else -1); ratio.append(j.ratio); off.append(j.offset)
            rob.append(ri); loc.append(n)
        for k, d in enumerate(inst.robot.dofs):
            dnames.append(f"{inst.name}/{d.name}"); drob.append(ri); dloc.append(k)
            djoints.append(np.array([base_j + jj for jj in d.joints])); dratios.append(d.ratios); doffs.append(d.offsets)
            dlim.append(d.limits); kp.append(d.kp); kd.append(d.kd); eff.append(d.effort); vel.append(d.velocity)
            brk.append(d.kind == "breakaway"); brkt.append(d.breakaway_torque)
        slices.append(slice(nd, nd + len(inst.robot.dofs)))
        nd += len(inst.robot.dofs)
    for ri, inst in enumerate(world.robots):  # a hand mounted on an arm: a fixed joint
        if inst.mount is None:
            continue
        pi, pl, X_LB = inst.mount
        names.append(f"{inst.name}/mount")
        kind.append(2); parent.append(table.robot_links[pi][pl]); child.append(table.robot_links[ri][inst.robot.base_link])
        XPJ.append(X_LB); XCJ.append(np.eye(4)); axis.append(np.array([0, 0, 1.0])); perp.append(_perp(np.array([0, 0, 1.0])))
        lim.append(np.array([-np.inf, np.inf])); coul.append(0.0); visc.append(0.0)
        dof.append(-1); ratio.append(0.0); off.append(0.0); rob.append(-1); loc.append(-1)
    js = JointSet(tuple(names), np.array(kind, dtype=np.int64), np.array(parent, dtype=np.int64),
                  np.array(child, dtype=np.int64), np.array(XPJ).reshape(-1, 4, 4), np.array(XCJ).reshape(-1, 4, 4),
                  np.array(axis).reshape(-1, 3), np.array(perp).reshape(-1, 2, 3), np.array(lim).reshape(-1, 2),
                  np.array(coul, float), np.array(visc, float), np.array(dof, dtype=np.int64), np.array(ratio, float),
                  np.array(off, float), np.array(rob, dtype=np.int64), np.array(loc, dtype=np.int64))
    ds = DofSet(tuple(dnames), np.array(drob, dtype=np.int64), np.array(dloc, dtype=np.int64), tuple(djoints),
                tuple(dratios), tuple(doffs), np.array(dlim).reshape(-1, 2), np.array(kp, float), np.array(kd, float),
                np.array(eff, float), np.array(vel, float), np.array(brk, bool), np.array(brkt, float), tuple(slices))
    return js, ds


@dataclass
class JointFrames:
    """World frames of every joint as seen from the parent (J) and from the child (J')."""

    o: np.ndarray        # (nj, 3) origin of J (parent side)
    o_c: np.ndarray      # (nj, 3) origin of J' (child side)
    R: np.ndarray        # (nj, 3, 3) R_WJ
    R_c: np.ndarray      # (nj, 3, 3) R_WJ'
    axis: np.ndarray     # (nj, 3) joint axis in W (parent side)
    perp: np.ndarray     # (nj, 2, 3) perpendicular directions in W


def joint_frames(js: JointSet, X: np.ndarray) -> JointFrames:
    """Joint frames from body poses ``X`` (N, 4, 4) in table order."""
    XJ = X[js.parent] @ js.X_PJ
    XJc = X[js.child] @ js.X_CJ
    R = XJ[:, :3, :3]
    return JointFrames(XJ[:, :3, 3], XJc[:, :3, 3], R, XJc[:, :3, :3], np.einsum("nij,nj->ni", R, js.axis),
                       np.einsum("nij,nkj->nki", R, js.perp))


def joint_values(js: JointSet, F: JointFrames, previous: np.ndarray | None = None) -> np.ndarray:
    """Joint values (rad or m); revolute angles are unwrapped against ``previous``."""
    q = np.zeros(len(js))
    rev = js.kind == 0
    if np.any(rev):
        # angle about the axis taking J to J': compare the first perpendicular vector
        u = F.perp[rev, 0]
        w = F.perp[rev, 1]
        Ru = np.einsum("nij,nj->ni", F.R_c[rev], js.perp[rev, 0])
        ang = np.arctan2(np.einsum("ni,ni->n", Ru, w), np.einsum("ni,ni->n", Ru, u))
        if previous is not None:
            prev = previous[rev]
            ang = prev + (ang - prev + np.pi) % (2 * np.pi) - np.pi
        q[rev] = ang
    pri = js.kind == 1
    if np.any(pri):
        q[pri] = np.einsum("ni,ni->n", F.o_c[pri] - F.o[pri], F.axis[pri])
    return q


# row types of the joint template: linear along a world axis, angular about a world axis,
# linear along a perpendicular of the joint axis, angular about such a perpendicular
LIN_E, ANG_E, LIN_P, ANG_P = 0, 1, 2, 3
_TEMPLATE = {0: [(LIN_E, 0), (LIN_E, 1), (LIN_E, 2), (ANG_P, 0), (ANG_P, 1)],     # revolute
             1: [(ANG_E, 0), (ANG_E, 1), (ANG_E, 2), (LIN_P, 0), (LIN_P, 1)],     # prismatic
             2: [(LIN_E, 0), (LIN_E, 1), (LIN_E, 2), (ANG_E, 0), (ANG_E, 1), (ANG_E, 2)]}  # fixed


def row_template(js: JointSet) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row_joint, row_type, row_k) for every equality row of every joint (5, 5 or 6 per joint)."""
    cached = js.__dict__.get("_template")
    if cached is None:
        rj, rt, rk = [], [], []
        for n, kind in enumerate(js.kind):
            for t, k in _TEMPLATE[int(kind)]:
                rj.append(n); rt.append(t); rk.append(k)
        cached = (np.array(rj, dtype=np.int64), np.array(rt, dtype=np.int64), np.array(rk, dtype=np.int64))
        object.__setattr__(js, "_template", cached)
    return cached


def equality_rows(js: JointSet, F: JointFrames, slot: np.ndarray, com_W: np.ndarray,
                  V_static: np.ndarray | None = None) -> Rows:
    """The joint constraint rows J^T v = 0 (eq. 7) with each row's position error in ``rhs``.

    Revolute: 3 linear rows at the joint origin + 2 angular rows perpendicular to the axis;
    prismatic: 3 angular rows + 2 linear rows perpendicular to the axis; fixed: 3 + 3.
    ``rhs`` holds the position error (child side minus parent side, m or rad) that eq. (16) turns
    into a correction velocity.  One vectorised pass over a precomputed row template.
    """
    rj, rt, rk = row_template(js)
    if not len(rj):
        return Rows.empty()
    eye = np.eye(3)
    perp_type = (rt == LIN_P) | (rt == ANG_P)
    d = np.where(perp_type[:, None], F.perp[rj, np.minimum(rk, 1)], eye[rk])
    lin = (rt == LIN_E) | (rt == LIN_P)
    o = F.o[rj]
    jc = np.zeros((len(rj), 6))
    jp = np.zeros((len(rj), 6))
    jc[lin, :3] = d[lin]
    jc[lin, 3:] = cross(o[lin] - com_W[js.child[rj[lin]]], d[lin])
    jp[lin, :3] = d[lin]
    jp[lin, 3:] = cross(o[lin] - com_W[js.parent[rj[lin]]], d[lin])
    ang = ~lin
    jc[ang, 3:] = d[ang]
    jp[ang, 3:] = d[ang]
    # position errors (child side minus parent side)
    d_o = F.o_c - F.o
    Rerr = np.einsum("nij,nkj->nik", F.R_c, F.R)       # R_c R^T: small rotation from J to J'
    rot = 0.5 * np.stack([Rerr[:, 2, 1] - Rerr[:, 1, 2], Rerr[:, 0, 2] - Rerr[:, 2, 0], Rerr[:, 1, 0] - Rerr[:, 0, 1]], 1)
    a_c = np.einsum("nij,nj->ni", F.R_c, js.axis)
    mis = cross(F.axis, a_c)                           # axis misalignment (revolute)
    err = np.empty(len(rj))
    m = rt == LIN_E
    err[m] = d_o[rj[m], rk[m]]
    m = rt == ANG_E
    err[m] = rot[rj[m], rk[m]]
    m = rt == LIN_P
    err[m] = np.einsum("ni,ni->n", d_o[rj[m]], d[m])
    m = rt == ANG_P
    err[m] = np.einsum("ni,ni->n", mis[rj[m]], d[m])
    bodies = np.stack([slot[js.parent[rj]], slot[js.child[rj]]], 1)
    const = None
    if V_static is not None:   # velocities of kinematic (moving static) bodies
        const = np.einsum("rc,rc->r", jc, V_static[js.child[rj]]) - np.einsum("rc,rc->r", jp, V_static[js.parent[rj]])
    rows = Rows(bodies, np.stack([-jp, jc], 1), err, None, const)
    # rows between two static bodies carry no unknowns
    return rows.select(np.any(bodies >= 0, axis=1))

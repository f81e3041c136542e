"""Synthetic robots for tests, benchmarks and the formulation-stiffness study.

Every builder returns an ordinary immutable :class:`~graspsim.model.description.Robot` (shapes are
None), so the same :func:`~graspsim.rigidbody.tree.from_robot` path and
:mod:`graspsim.kinematics` cross-checks apply.
"""
from __future__ import annotations

import numpy as np

from .. import spatial
from ..model.description import DOF, FIXED, PRISMATIC, REVOLUTE, Inertial, Joint, Link, Robot
from ..model.readonly import ReadOnlyDict

__all__ = ["make_robot", "planar_chain", "serial_chain", "random_tree", "random_rotation"]


def _ro(a) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


def make_robot(name: str, links: list[tuple], joints: list[dict], dofs: list[list[tuple]] | None = None) -> Robot:
    """A :class:`Robot` from plain data.

    ``links``: ``(name, mass, com (3,), inertia about com (3, 3))`` in link frames; link 0 is the base.
    ``joints``: dicts with ``name, kind, parent, child`` (link indices), ``X_PJ``, optional ``X_JC``
    (default identity) and ``axis``; parents must come before children.  ``dofs``: per DOF a list of
    ``(joint index, ratio, offset)``; default one DOF per moving joint with ratio 1.
    """
    L = tuple(Link(n, None, Inertial(float(m), _ro(c), _ro(I)), "default", (0.7, 0.7, 0.7)) for (n, m, c, I) in links)
    if dofs is None:
        dofs = [[(k, 1.0, 0.0)] for k, j in enumerate(joints) if j["kind"] != FIXED]
    dof_of = {}
    for d, entries in enumerate(dofs):
        for (k, ratio, off) in entries:
            dof_of[k] = (d, float(ratio), float(off))
    J = []
    for k, j in enumerate(joints):
        d, ratio, off = dof_of.get(k, (-1, 0.0, 0.0))
        J.append(Joint(j["name"], j["kind"], int(j["parent"]), int(j["child"]), _ro(j["X_PJ"]),
                       _ro(j.get("X_JC", np.eye(4))), _ro(j.get("axis", (0.0, 0.0, 1.0))), _ro([-np.inf, np.inf]),
                       0.0, 0.0, d, ratio, off))
    D = tuple(DOF(f"dof{d}", tuple(e[0] for e in entries), _ro([e[1] for e in entries]), _ro([e[2] for e in entries]),
                  _ro([-np.inf, np.inf]), "rigid", 0.0, 0.0, 0.0, np.inf, 0.0, 0.0) for d, entries in enumerate(dofs))
    parent_joint = [-1] * len(L)
    for n, j in enumerate(J):
        parent_joint[j.child] = n
    return Robot(name=name, file="<synthetic>", links=L, joints=tuple(J), dofs=D, base_link=0, palm_link=0,
                 approach=_ro([0, 0, 1]), eigengrasps=_ro(np.zeros((0, len(D)))),
                 eigengrasp_origin=_ro(np.zeros(len(D))), no_collide=frozenset(),
                 link_index=ReadOnlyDict({l.name: i for i, l in enumerate(L)}),
                 joint_index=ReadOnlyDict({j.name: i for i, j in enumerate(J)}),
                 dof_index=ReadOnlyDict({d.name: i for i, d in enumerate(D)}), parent_joint=tuple(parent_joint))


def _T(R=None, p=None) -> np.ndarray:
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    if p is not None:
        T[:3, 3] = p
    return T


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random rotation matrix (3, 3)."""
    q = rng.normal(size=4)
    return spatial.quat_to_matrix(q / np.linalg.norm(q))


def planar_chain(lengths, masses, widths=1.0, frame_rotation: np.ndarray | None = None,
                 name: str = "planar_chain") -> Robot:
    """Cloutier's PRRRobot: a planar chain of uniform rectangular plates joined by revolute joints.

    Link k (length ``l_k`` m, width ``w_k`` m, mass ``m_k`` kg) lies along the x axis of its frame,
    from its joint to the next; joints turn about y, so the chain moves in the vertical x-z plane and
    at q = 0 it is horizontal.  Inertia about the com: ``I_yy = m (l^2 + w^2) / 12`` (the plate's
    polar moment), ``I_xx = m w^2 / 12``, ``I_zz = m l^2 / 12``.  The base link is massless.

    ``frame_rotation`` Q re-expresses every link frame as ``F = N Q`` (N the natural frame above):
    the same physical system, but joint axes (``Q^T e_y``) and inertias are no longer aligned with
    the coordinate axes -- the situation of Pai-Ascher-Kry sec. 7.
    """
    l = np.broadcast_to(np.asarray(lengths, dtype=float), (len(lengths),))
    m = np.broadcast_to(np.asarray(masses, dtype=float), l.shape)
    w = np.broadcast_to(np.asarray(widths, dtype=float), l.shape)
    Q = np.eye(3) if frame_rotation is None else np.asarray(frame_rotation, dtype=float)
    links = [("base", 0.0, np.zeros(3), np.zeros((3, 3)))]
    joints = []
    for k in range(len(l)):
        I_N = np.diag([m[k] * w[k] ** 2 / 12, m[k] * (l[k] ** 2 + w[k] ** 2) / 12, m[k] * l[k] ** 2 / 12])
        links.append((f"link{k + 1}", m[k], Q.T @ np.array([l[k] / 2, 0.0, 0.0]), Q.T @ I_N @ Q))
        if k == 0:
            X_PJ = _T(Q)                                      # base frame is the natural frame
        else:
            X_PJ = _T(np.eye(3), Q.T @ np.array([l[k - 1], 0.0, 0.0]))
        joints.append(dict(name=f"j{k + 1}", kind=REVOLUTE, parent=k, child=k + 1, X_PJ=X_PJ,
                           axis=Q.T @ np.array([0.0, 1.0, 0.0])))
    return make_robot(name, links, joints)


def serial_chain(n: int, length: float = 0.3, mass: float = 1.0, radius: float = 0.03,
                 name: str = "serial_chain") -> Robot:
    """A spatial chain of ``n`` identical rods (along x, length m, mass kg) with joint axes alternating z, y."""
    I_rod = np.diag([mass * radius ** 2 / 2, mass * (3 * radius ** 2 + length ** 2) / 12,
                     mass * (3 * radius ** 2 + length ** 2) / 12])
    links = [("base", 0.0, np.zeros(3), np.zeros((3, 3)))]
    joints = []
    for k in range(n):
        links.append((f"link{k + 1}", mass, np.array([length / 2, 0, 0]), I_rod))
        joints.append(dict(name=f"j{k + 1}", kind=REVOLUTE, parent=k, child=k + 1,
                           X_PJ=_T(p=[length if k else 0.0, 0, 0]), axis=(0, 0, 1) if k % 2 == 0 else (0, 1, 0)))
    return make_robot(name, links, joints)


def _random_inertia(rng: np.random.Generator, mass: float, size: float) -> np.ndarray:
    """Random physically valid rotational inertia about the com (principal moments obey the triangle inequality)."""
    d = rng.uniform(0.2, 1.0, 3) * mass * size ** 2
    d = np.array([d[1] + d[2], d[0] + d[2], d[0] + d[1]]) / 2     # a = (y+z)/2 etc. -> triangle inequality
    R = random_rotation(rng)
    return R @ np.diag(d) @ R.T


def random_tree(n: int, rng: np.random.Generator, *, prismatic: float = 0.2, fixed: float = 0.1,
                coupled: float = 0.3, branching: float = 0.5, axis_aligned: float = 0.5,
                mass_range=(0.2, 5.0), name: str = "random_tree") -> Robot:
    """A random tree of ``n`` joints (and links) with random placements, axes, DH remainders, inertias.

    Fractions: ``prismatic`` and ``fixed`` joints; ``branching`` of links attach to a random earlier
    link rather than the previous one; ``coupled`` moving joints are driven by an earlier DOF with a
    random ratio and offset (like the Barrett finger); ``axis_aligned`` joints use a coordinate axis.
    """
    links = [("base", float(rng.uniform(*mass_range)), rng.uniform(-0.1, 0.1, 3),
              _random_inertia(rng, 1.0, 0.2))]
    joints = []
    dofs: list[list[tuple]] = []
    for k in range(n):
        m = float(rng.uniform(*mass_range))
        links.append((f"l{k + 1}", m, rng.uniform(-0.2, 0.2, 3), _random_inertia(rng, m, 0.15)))
        par = k if (k == 0 or rng.random() > branching) else int(rng.integers(0, k + 1))
        u = rng.random()
        kind = PRISMATIC if u < prismatic else FIXED if u < prismatic + fixed else REVOLUTE
        if rng.random() < axis_aligned:
            axis = np.eye(3)[rng.integers(3)] * rng.choice([-1.0, 1.0])
        else:
            axis = rng.normal(size=3)
            axis /= np.linalg.norm(axis)
        X_PJ = _T(random_rotation(rng), rng.uniform(-0.4, 0.4, 3))
        X_JC = _T(random_rotation(rng), rng.uniform(-0.2, 0.2, 3)) if rng.random() < 0.5 else np.eye(4)
        joints.append(dict(name=f"j{k + 1}", kind=kind, parent=par, child=k + 1, X_PJ=X_PJ, X_JC=X_JC, axis=axis))
        if kind != FIXED:
            if dofs and rng.random() < coupled:
                d = int(rng.integers(len(dofs)))
                dofs[d].append((k, float(rng.choice([-1, 1]) * rng.uniform(0.3, 1.5)), float(rng.uniform(-0.5, 0.5))))
            else:
                dofs.append([(k, 1.0, 0.0)])
    return make_robot(name, links, joints, dofs)

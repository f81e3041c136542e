"""Generators of LCP test problems (pure numpy; used by tests and benchmarks).

* Frictional-contact LCPs built the Anitescu-Potra / Miller-Christensen way
  (GraspIt dynamics, eqs. 18-21): :func:`contact_lcp` assembles one from
  bodies, contacts, revolute joints and joint limits; the scene builders
  (:func:`box_on_plane`, :func:`box_stack`, :func:`three_finger_grasp`) and
  :func:`contact_corpus` produce the families used for timing and testing.
* Classical hard instances: :func:`murty`, :func:`fathi`.

Nothing here imports the rest of graspsim.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

GRAVITY = np.array([0.0, 0.0, -9.81])


# ---------------------------------------------------------------------------
# classical exponential instances
# ---------------------------------------------------------------------------
def murty(n):
    """Murty (1978): lower-triangular P-matrix, 1 on the diagonal and 2 below
    it, q = -e.  Unique solution z = e_1.  Lemke from the standard start with
    d = e and the lexicographic rule makes 2^n pivots (the count includes the
    first pivot that brings in z0)."""
    M = np.eye(n) + 2.0 * np.tril(np.ones((n, n)), -1)
    return M, -np.ones(n)


def fathi(n):
    """Fathi (1979): symmetric positive definite M = L L^T with L as in
    :func:`murty`, q = -e.  Unique solution z = e_1; Lemke (d = e,
    lexicographic rule) makes 2^n pivots."""
    L, q = murty(n)
    return L @ L.T, q


# ---------------------------------------------------------------------------
# rigid-body contact LCPs
# ---------------------------------------------------------------------------
def _skew(r):
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])


def _rot(axis, angle):
    axis = np.asarray(axis, float)
    axis = axis / np.linalg.norm(axis)
    K = _skew(axis)
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def _box_inertia(m, half):
    a, b, c = 2 * np.asarray(half, float)
    return m / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])


def _tangents(nrm):
    nrm = nrm / np.linalg.norm(nrm)
    ref = np.array([1.0, 0.0, 0.0]) if abs(nrm[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = np.cross(nrm, ref)
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(nrm, t1)


@dataclass
class Body:
    mass: float
    inertia: np.ndarray            # world-frame 3x3 inertia about the centre of mass
    com: np.ndarray                # world position of the centre of mass
    vel: np.ndarray = field(default_factory=lambda: np.zeros(6))   # [linear, angular]


@dataclass
class Contact:
    a: int                         # body index, -1 = fixed world
    b: int
    point: np.ndarray
    normal: np.ndarray             # unit normal pointing from A towards B
    mu: float = 0.5
    eps: float = 0.0               # required separating velocity (b_n = -eps)


@dataclass
class Joint:                       # revolute joint: 3 position + 2 orientation rows
    a: int
    b: int
    anchor: np.ndarray
    axis: np.ndarray


@dataclass
class Limit:                       # joint-limit row: sign * relative spin about axis >= 0
    a: int
    b: int
    axis: np.ndarray
    sign: float = 1.0
    scale: float = 1.0             # row scaling (units)


def _wrench(nb, body, point, direction, com):
    """6nb column of the constraint force `direction` applied at `point` on
    `body` (zero for the fixed world)."""
    out = np.zeros(6 * nb)
    if body >= 0:
        out[6 * body:6 * body + 3] = direction
        out[6 * body + 3:6 * body + 6] = np.cross(point - com[body], direction)
    return out


def _spin(nb, body, axis):
    out = np.zeros(6 * nb)
    if body >= 0:
        out[6 * body + 3:6 * body + 6] = axis
    return out


def contact_lcp(bodies, contacts, joints=(), limits=(), u=4, h=0.01,
                gravity=GRAVITY, eps_joint=None, limit_ratio=None):
    """Assemble LCP(M, q) in z = [c_l, c_n, beta, lambda] (Miller &
    Christensen 2003, eqs. 18-21, after Anitescu & Potra 1997):

        G = H^T M^-1 H - H^T M^-1 J (J^T M^-1 J)^-1 J^T M^-1 H,   H = [l, n, D, 0]
        LCP matrix = G + N,  N = [[0,0,0,0],[0,0,0,0],[0,0,0,E],[0,mu,-E^T,0]]
        q = b + H^T M^-1 a - H^T M^-1 J (J^T M^-1 J)^-1 (J^T M^-1 a - eps_j)
        a = M v + h k,  b = [0, -eps_n, 0, 0]

    Returns (Mlcp, q, info); info holds the block sizes (limits, contacts,
    u, bodies, joints, n), the matrices H, J, Minv, the vector a, the
    friction coefficients mu, the masses and ``velocity(z)`` giving the
    post-step velocity for an LCP solution z.

    With `limit_ratio`, each joint-limit column of H is rescaled (a change of
    units) so that its diagonal entry of G is `limit_ratio` times the mean
    diagonal entry of the contact-normal rows."""
    nb = len(bodies)
    com = [np.asarray(b.com, float) for b in bodies]
    Mm = np.zeros((6 * nb, 6 * nb))
    Minv = np.zeros_like(Mm)
    a = np.zeros(6 * nb)
    for i, b in enumerate(bodies):
        blk = np.zeros((6, 6))
        blk[:3, :3] = b.mass * np.eye(3)
        blk[3:, 3:] = b.inertia
        Mm[6 * i:6 * i + 6, 6 * i:6 * i + 6] = blk
        Minv[6 * i:6 * i + 6, 6 * i:6 * i + 6] = np.linalg.inv(blk)
        k = np.zeros(6)
        k[:3] = b.mass * np.asarray(gravity, float)
        a[6 * i:6 * i + 6] = blk @ np.asarray(b.vel, float) + h * k
    c = len(contacts)
    nl = len(limits)
    cols_l = [lim.sign * lim.scale * (_spin(nb, lim.b, lim.axis) - _spin(nb, lim.a, lim.axis))
              for lim in limits]
    cols_n, cols_d, mus, eps_n = [], [], [], []
    for ct in contacts:
        nrm = np.asarray(ct.normal, float)
        nrm = nrm / np.linalg.norm(nrm)
        p = np.asarray(ct.point, float)
        cols_n.append(_wrench(nb, ct.b, p, nrm, com) - _wrench(nb, ct.a, p, nrm, com))
        t1, t2 = _tangents(nrm)
        for kk in range(u):
            th = 2.0 * np.pi * kk / u
            dk = np.cos(th) * t1 + np.sin(th) * t2
            cols_d.append(_wrench(nb, ct.b, p, dk, com) - _wrench(nb, ct.a, p, dk, com))
        mus.append(ct.mu)
        eps_n.append(ct.eps)
    m = nl + c + c * u + c
    H = np.zeros((6 * nb, m))
    if nl:
        H[:, :nl] = np.array(cols_l).T
    if c:
        H[:, nl:nl + c] = np.array(cols_n).T
        H[:, nl + c:nl + c + c * u] = np.array(cols_d).T
    jcols = []
    for jt in joints:
        p = np.asarray(jt.anchor, float)
        ax = np.asarray(jt.axis, float)
        ax = ax / np.linalg.norm(ax)
        for e in np.eye(3):
            jcols.append(_wrench(nb, jt.b, p, e, com) - _wrench(nb, jt.a, p, e, com))
        t1, t2 = _tangents(ax)
        for t in (t1, t2):
            jcols.append(_spin(nb, jt.b, t) - _spin(nb, jt.a, t))
    if jcols:
        J = np.array(jcols).T
        S = J.T @ Minv @ J
        ej = np.zeros(J.shape[1]) if eps_joint is None else np.asarray(eps_joint, float)
        MJ = Minv @ J
        P = Minv - MJ @ np.linalg.solve(S, MJ.T)
        G = H.T @ P @ H
        q = H.T @ P @ a + H.T @ MJ @ np.linalg.solve(S, ej)
    else:
        J = np.zeros((6 * nb, 0))
        ej = np.zeros(0)
        P = Minv
        G = H.T @ Minv @ H
        q = H.T @ Minv @ a
    if limit_ratio is not None and nl and c:
        target = limit_ratio * np.mean(np.diag(G)[nl:nl + c])
        f = np.sqrt(target / np.maximum(np.diag(G)[:nl], 1e-300))
        H[:, :nl] *= f
        G[:nl, :] *= f[:, None]
        G[:, :nl] *= f[None, :]
        q[:nl] *= f

    def velocity(zsol):
        """Post-step generalized velocity v+ = M^-1 (a + H z + J c_J) with the
        joint impulses c_J eliminated as in eq. 20."""
        f = a + H @ zsol
        if J.shape[1]:
            cj = np.linalg.solve(J.T @ Minv @ J, ej - J.T @ Minv @ f)
            f = f + J @ cj
        return Minv @ f
    N = np.zeros((m, m))
    E = np.kron(np.eye(c), np.ones((u, 1)))
    ib, il, inn = nl + c, nl + c + c * u, nl
    N[ib:il, il:] = E
    N[il:, inn:inn + c] = np.diag(mus)
    N[il:, ib:il] = -E.T
    b = np.zeros(m)
    b[nl:nl + c] = -np.asarray(eps_n, float)
    G = 0.5 * (G + G.T)
    Mlcp = G + N
    q = q + b
    info = dict(limits=nl, contacts=c, u=u, bodies=nb, joints=len(joints), n=m,
                H=H, J=J, Minv=Minv, a=a, mu=np.asarray(mus, float), velocity=velocity,
                masses=np.array([b.mass for b in bodies]))
    return Mlcp, q, info


# ---------------------------------------------------------------------------
# scenes
# ---------------------------------------------------------------------------
def box_on_plane(u=4, mu=0.5, vel=None, yaw=0.0, half=(0.1, 0.08, 0.05), mass=1.0,
                 duplicate=False, edge=False, h=0.01):
    """A box resting on the plane z = 0 with its 4 bottom corners in contact
    (degenerate: the 4 normal rows tie and q = 0 in every friction row when it
    is at rest).  `vel` gives it a velocity (sliding/tumbling); `duplicate`
    lists every contact twice; `edge` keeps only 2 corners (box on an edge)."""
    half = np.asarray(half, float)
    R = _rot([0, 0, 1], yaw)
    I = R @ _box_inertia(mass, half) @ R.T
    com = np.array([0.0, 0.0, half[2]])
    body = Body(mass, I, com, np.zeros(6) if vel is None else np.asarray(vel, float))
    corners = [np.array([sx * half[0], sy * half[1], -half[2]])
               for sx in (-1, 1) for sy in (-1, 1)]
    if edge:
        corners = corners[:2]
    pts = [com + R @ c for c in corners]
    contacts = [Contact(-1, 0, p, np.array([0.0, 0.0, 1.0]), mu) for p in pts]
    if duplicate:
        contacts = contacts + [Contact(-1, 0, p.copy(), np.array([0.0, 0.0, 1.0]), mu)
                               for p in pts]
    return contact_lcp([body], contacts, u=u, h=h)


def box_stack(levels=3, u=4, mu=0.5, rng=None, h=0.01, jitter=0.0):
    """`levels` boxes stacked on the plane, 4 corner contacts per interface
    (4*levels contacts).  `jitter` adds random velocities and yaws."""
    rng = np.random.default_rng(rng)
    half = np.array([0.1, 0.1, 0.05])
    bodies, contacts = [], []
    for k in range(levels):
        yaw = jitter * rng.uniform(-0.3, 0.3)
        R = _rot([0, 0, 1], yaw)
        mass = 1.0 + jitter * rng.uniform(0.0, 2.0)
        com = np.array([0.0, 0.0, half[2] * (2 * k + 1)])
        vel = np.zeros(6)
        if jitter:
            vel[:3] = jitter * rng.normal(0, 0.05, 3)
            vel[3:] = jitter * rng.normal(0, 0.3, 3)
        bodies.append(Body(mass, R @ _box_inertia(mass, half) @ R.T, com, vel))
        for sx in (-1, 1):
            for sy in (-1, 1):
                p = com + R @ np.array([sx * half[0] * 0.9, sy * half[1] * 0.9, -half[2]])
                contacts.append(Contact(k - 1, k, p, np.array([0.0, 0.0, 1.0]),
                                        mu if not jitter else rng.uniform(0.2, 1.0)))
    return contact_lcp(bodies, contacts, u=u, h=h)


def three_finger_grasp(u=4, mu=0.6, rng=None, limit_ratio=1e4, table=True,
                       link_contacts=False, extra_limits=0, h=0.01, squeeze=0.2,
                       jitter=0.0):
    """A cube (0.1 m, 0.5 kg) on a table grasped by a three-finger hand.

    Each finger has a proximal and a distal link joined by revolute joints
    (palm = fixed world), 5 equality rows per joint (6 joints, J has 30
    columns).  The distal links touch the +x, -x and +y faces; with
    `link_contacts` the proximal links touch the upper edges too.  Each joint
    has a limit row (active in the default scene, random side with `jitter`)
    whose units are scaled so that its diagonal is `limit_ratio` times the
    contact-normal rows' (1e4 by default)."""
    rng = np.random.default_rng(rng)
    hc = 0.05
    cube_c = np.array([0.0, 0.0, hc])
    bodies = [Body(0.5, _box_inertia(0.5, [hc] * 3), cube_c,
                   np.r_[jitter * rng.normal(0, 0.02, 3), jitter * rng.normal(0, 0.2, 3)])]
    contacts, joints, limits = [], [], []
    if table:
        for sx in (-1, 1):
            for sy in (-1, 1):
                contacts.append(Contact(-1, 0, cube_c + np.array([sx * hc, sy * hc, -hc]),
                                        np.array([0.0, 0.0, 1.0]), mu))
    lm, lI = 0.05, np.diag([2e-5, 2e-5, 1e-5])
    for f, ang in enumerate((0.0, np.pi, 0.5 * np.pi)):
        radial = np.array([np.cos(ang), np.sin(ang), 0.0])
        axis = np.cross(np.array([0.0, 0.0, 1.0]), radial)     # finger curls in radial-z plane
        R = np.column_stack([radial, axis, np.cross(radial, axis)])
        tip = cube_c + hc * radial + np.array([0, 0, 0.01 * (f - 1)])
        distal_c = tip + 0.02 * radial + np.array([0, 0, 0.02])
        prox_c = tip + 0.05 * radial + np.array([0, 0, 0.07])
        base = tip + 0.07 * radial + np.array([0, 0, 0.11])
        knuckle = tip + 0.035 * radial + np.array([0, 0, 0.04])
        ip = len(bodies)
        vclose = -squeeze * radial * (1.0 + jitter * rng.uniform(-0.5, 0.5))
        bodies.append(Body(lm, R @ lI @ R.T, prox_c, np.r_[0.6 * vclose, np.zeros(3)]))
        bodies.append(Body(lm, R @ lI @ R.T, distal_c, np.r_[vclose, np.zeros(3)]))
        joints.append(Joint(-1, ip, base, axis))
        joints.append(Joint(ip, ip + 1, knuckle, axis))
        contacts.append(Contact(0, ip + 1, tip, radial, mu))
        if link_contacts:
            edge = cube_c + hc * radial + np.array([0, 0, hc * 0.95])
            contacts.append(Contact(0, ip, edge, radial, mu))
        s1, s2 = (-1.0, 1.0) if not jitter else rng.choice([-1.0, 1.0], 2)
        limits.append(Limit(-1, ip, axis, s1))
        limits.append(Limit(ip, ip + 1, axis, s2))
    for k in range(extra_limits):          # duplicated limit rows
        limits.append(limits[k % len(limits)])
    return contact_lcp(bodies, contacts, joints, limits, u=u, h=h, limit_ratio=limit_ratio)


def contact_corpus(count=200, seed=0):
    """A reproducible list of (name, M, q) frictional-contact LCPs of sizes
    12 to ~122 mixing the scenes above with random velocities, friction and
    orientation (u = 4 and 8)."""
    rng = np.random.default_rng(seed)
    out = []
    kinds = ("rest", "edge", "slide", "dup", "stack2", "stack3", "grasp", "grasp_links")
    for k in range(count):
        kind = kinds[k % len(kinds)]
        u = 4 if rng.random() < 0.5 else 8
        mu = float(rng.uniform(0.1, 1.0))
        if kind == "rest":
            M, q, _ = box_on_plane(u=u, mu=mu, yaw=rng.uniform(0, np.pi))
        elif kind == "edge":
            M, q, _ = box_on_plane(u=u, mu=mu, edge=True,
                                   vel=np.r_[0, 0, -0.1, rng.normal(0, 1, 3)])
        elif kind == "slide":
            v = np.r_[rng.normal(0, 0.5, 2), rng.uniform(-0.2, 0.0), rng.normal(0, 1.0, 3)]
            M, q, _ = box_on_plane(u=u, mu=mu, vel=v, yaw=rng.uniform(0, np.pi))
        elif kind == "dup":
            v = np.r_[rng.normal(0, 0.2, 2), -0.05, rng.normal(0, 0.3, 3)]
            M, q, _ = box_on_plane(u=u, mu=mu, vel=v, duplicate=True)
        elif kind == "stack2":
            M, q, _ = box_stack(2, u=u, mu=mu, rng=rng, jitter=float(rng.random() < 0.7))
        elif kind == "stack3":
            M, q, _ = box_stack(3, u=u, mu=mu, rng=rng, jitter=float(rng.random() < 0.7))
        elif kind == "grasp":
            M, q, _ = three_finger_grasp(u=u, mu=mu, rng=rng, jitter=1.0,
                                         table=rng.random() < 0.7)
        else:
            M, q, _ = three_finger_grasp(u=u, mu=mu, rng=rng, jitter=1.0, link_contacts=True,
                                         extra_limits=2 if u == 8 else 0)
        out.append((f"{kind}-u{u}", M, q))
    return out

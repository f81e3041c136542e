"""Grasp energies over batches of states: GraspIt's contact energy and a quality energy.

**Virtual contacts** (GraspIt puts a few on each link's inner surface): for every link that the
"close all" motion moves (at mid-range of the DOFs), and for the palm, the faces of the link's tessellated shape whose outward
normal points within 30 deg of the direction the face moves when the hand closes, at no less
than 0.3 of the link's fastest face speed (the palm: within 30 deg of its approach axis) are the inner surface; on it, up to three points are picked by farthest-point
sampling starting from the point nearest its middle, each with that face's normal (link frame).

**Contact energy** of a state (dimensionless, >= 0): the mean over virtual contacts i of
``d_i / 1 cm + (1 + n_i . m_i)`` with ``d_i`` the distance from the point to the object surface,
``n_i`` the contact's outward normal and ``m_i`` the object's outward surface normal at the
nearest surface point (0 when the link faces the surface squarely).  Distances come from a dense
area-weighted sample of the object's surface (``spacing`` about 2 mm) in a k-d tree, searched to
within 5 % of the distance: the energy only steers the search; collisions (FCL) and the final grasp (auto-grasp, exact contacts) are exact.

**Collisions** between the hand and anything else (the object, obstacles) are rejected states:
their energy is +inf, never a penalty.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from .space import GraspSpace, batch_forward_kinematics, closing_vector

__all__ = ["VirtualContacts", "virtual_contacts", "finger_links", "SurfaceSamples", "surface_samples", "contact_energy",
           "DIST_SCALE"]

#: distance that costs as much as a fully misaligned normal (m)
DIST_SCALE = 0.01
#: the k-d tree's approximate search: the sample returned is within (1 + eps) of the nearest
#: sample's distance (3x faster on far points, which visit many nodes of a thin shell)
NEAREST_EPS = 0.05


class VirtualContacts:
    """Virtual contacts: ``link`` (m,) link index, ``points`` and ``normals`` (m, 3) in the link frame."""

    def __init__(self, link, points, normals):
        self.link = np.asarray(link, dtype=np.int64)
        self.points = np.asarray(points, dtype=float).reshape(-1, 3)
        self.normals = np.asarray(normals, dtype=float).reshape(-1, 3)

    def __len__(self) -> int:
        return len(self.link)

    def world(self, link_poses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Points and normals (B, m, 3) in W for link poses (B, nl, 4, 4)."""
        X = link_poses[:, self.link]                        # (B, m, 4, 4)
        p = np.einsum("bmij,mj->bmi", X[..., :3, :3], self.points) + X[..., :3, 3]
        n = np.einsum("bmij,mj->bmi", X[..., :3, :3], self.normals)
        return p, n


def _triangles(shape, X: np.ndarray):
    """The shape's non-degenerate triangles at pose X: (V, F, ok, A, B, C, unit normals from the
    winding, areas); ``ok`` marks the rows of F kept."""
    V = shape.vertices_in(X)
    F = np.asarray(shape.faces, dtype=np.int64)
    A, B, C = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    cr = np.cross(B - A, C - A)
    area = 0.5 * np.linalg.norm(cr, axis=1)
    ok = area > 1e-14
    A, B, C, cr, area = A[ok], B[ok], C[ok], cr[ok], area[ok]
    return V, F, ok, A, B, C, cr / np.linalg.norm(cr, axis=1, keepdims=True), area


def _faces(shape, X_LS_link=np.eye(4)):
    V, _, _, A, B, C, n, area = _triangles(shape, X_LS_link)
    cen = (A + B + C) / 3.0
    # link shapes are convex: orient every normal away from the shape's middle
    flip = np.einsum("ij,ij->i", n, cen - V.mean(axis=0)) < 0
    n[flip] *= -1
    return A, B, C, n, area, cen


def _farthest(points: np.ndarray, k: int) -> np.ndarray:
    """Indices of up to k points by farthest-point sampling, from the one nearest the mean."""
    first = int(np.argmin(np.linalg.norm(points - points.mean(axis=0), axis=1)))
    idx = [first]
    d = np.linalg.norm(points - points[first], axis=1)
    while len(idx) < min(k, len(points)):
        j = int(np.argmax(d))
        if d[j] < 1e-6:
            break
        idx.append(j)
        d = np.minimum(d, np.linalg.norm(points - points[j], axis=1))
    return np.array(idx)


def virtual_contacts(robot, per_link: int = 3, eps: float = 1e-3) -> VirtualContacts:
    """Virtual contacts of a hand from its link geometry (see the module docstring)."""
    lim = robot.dof_limits
    v = closing_vector(robot)
    # at mid-range, where no DOF sits at a limit that would block the closing step (a hand whose
    # default is closed, e.g. the Panda's); a point's direction of motion is fixed in its link frame
    q0 = lim.mean(axis=1)
    q1 = q0 + eps * v
    X0, X1 = batch_forward_kinematics(robot, np.stack([q0, q1]))
    approach = np.asarray(robot.approach, float)
    links, pts, nrm = [], [], []
    for li, link in enumerate(robot.links):
        if link.shape is None:
            continue
        A, B, C, n, _, cen = _faces(link.shape)
        if li == robot.palm_link:
            vel = np.broadcast_to(approach, cen.shape)
        else:
            # how each face centre moves (link frame) when the hand closes a little
            cw0 = cen @ X0[li][:3, :3].T + X0[li][:3, 3]
            cw1 = cen @ X1[li][:3, :3].T + X1[li][:3, 3]
            vel = (cw1 - cw0) @ X0[li][:3, :3]
            if np.max(np.linalg.norm(vel, axis=1)) < 1e-9:
                continue                                   # not moved by closing (e.g. a knuckle)
        vn = vel / np.maximum(np.linalg.norm(vel, axis=1, keepdims=True), 1e-15)
        cos = np.einsum("ij,ij->i", n, vn)
        speed = np.linalg.norm(vel, axis=1)
        # faces that face the closing motion and move with it (not the end face at the joint axis)
        keep = (cos > np.cos(np.radians(30.0))) & (speed >= 0.3 * speed.max())
        if not keep.any():
            keep = cos >= cos.max() - 1e-9
        # interior points of the inner faces: centroids and halfway to each corner
        cand = np.concatenate([cen[keep], (cen[keep] + A[keep]) / 2, (cen[keep] + B[keep]) / 2,
                               (cen[keep] + C[keep]) / 2])
        cn = np.concatenate([n[keep]] * 4)
        sel = _farthest(cand, per_link)
        links += [li] * len(sel)
        pts.append(cand[sel])
        nrm.append(cn[sel])
    return VirtualContacts(links, np.concatenate(pts), np.concatenate(nrm))


def finger_links(robot, vc: VirtualContacts | None = None) -> list[int]:
    """Link indices (sorted) of the hand's fingers: the links carrying virtual contacts (those the
    closing moves towards the object), the palm excluded.  ``vc``: the robot's virtual contacts
    if already computed.  Centring measures their gaps to the object
    (:func:`graspsim.control.centring.centre`)."""
    vc = virtual_contacts(robot) if vc is None else vc
    return sorted({int(li) for li in vc.link if li != robot.palm_link})


class SurfaceSamples:
    """Points and outward normals (m, 3) on an object's surface (W), with a k-d tree over the points."""

    def __init__(self, points: np.ndarray, normals: np.ndarray):
        self.points, self.normals = points, normals
        self.tree = cKDTree(points)

    def nearest(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(distance (...,), outward normal (..., 3)) of the nearest sample to each point p (..., 3)
        (to within NEAREST_EPS of its distance)."""
        d, i = self.tree.query(p.reshape(-1, 3), eps=NEAREST_EPS)
        return d.reshape(p.shape[:-1]), self.normals[i].reshape(p.shape)


def surface_samples(shape, X_WO: np.ndarray, spacing: float = 0.002, max_points: int = 200_000) -> SurfaceSamples:
    """Area-weighted samples of a shape's surface at pose X_WO, about ``spacing`` (m) apart,
    plus its vertices; normals from the triangle winding (outward for closed meshes)."""
    V, F, ok, A, B, C, n, area = _triangles(shape, X_WO)
    m = int(min(max_points, max(len(A), np.ceil(area.sum() / spacing ** 2))))
    rng = np.random.default_rng(0)                       # fixed: the energy is the same for every seed
    f = rng.choice(len(A), size=m, p=area / area.sum())
    u = rng.random((m, 2))
    flip = u.sum(axis=1) > 1
    u[flip] = 1 - u[flip]
    P = A[f] + u[:, :1] * (B[f] - A[f]) + u[:, 1:] * (C[f] - A[f])
    # vertices too (sharp edges and corners), each with the mean normal of its triangles
    vn = np.zeros_like(V)
    for k in range(3):
        np.add.at(vn, F[ok][:, k], n)
    used = np.linalg.norm(vn, axis=1) > 1e-12
    vn[used] /= np.linalg.norm(vn[used], axis=1, keepdims=True)
    return SurfaceSamples(np.concatenate([P, V[used]]), np.concatenate([n[f], vn[used]]))


def contact_energy(vc: VirtualContacts, surface: SurfaceSamples, link_poses: np.ndarray,
                   with_distance: bool = False):
    """Contact energy (B,) of hand link poses (B, nl, 4, 4) in W (see the module docstring); with
    ``with_distance`` also the mean distance (B,) of the virtual contacts to the surface, m."""
    p, n = vc.world(link_poses)
    d, m = surface.nearest(p)
    e = np.mean(d / DIST_SCALE + (1.0 + np.einsum("bmi,bmi->bm", n, m)), axis=1)
    return (e, d.mean(axis=1)) if with_distance else e

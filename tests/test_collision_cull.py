"""The contact kernel's shortcuts skip only work whose result is known (issue 18): the super-cluster
level of the triangle culling, the oriented-box test before a shape pair's candidates, and the
reduction's sorts (the permutations of numpy's stable sorts)."""
from __future__ import annotations

import numpy as np
import pytest
import trimesh

import graspsim
from graspsim.collision import kernels as K
from graspsim.collision import pool as PL
from graspsim.collision.fcl_geometry import FCLObjects
from graspsim.geometry import load_mesh_shape, make_primitive
from graspsim.spatial import quat_to_matrix

THR = 1e-4      # m, the default contact threshold


def _pose(R, c):
    X = np.eye(4)
    X[:3, :3] = R
    X[:3, 3] = c
    return X


def _rot(rng):
    q = rng.normal(size=4)
    return quat_to_matrix(q / np.linalg.norm(q))


def _without_supers(pool):
    """The pool's kernel arrays with every super cluster's bounds widened to +-1 km: each passes, so
    the cull walks every cluster, as without the super level."""
    P = list(pool.arrays())
    lo, hi = P[K.P_CLLO].copy(), P[K.P_CLHI].copy()
    for i in range(len(pool.c_off)):
        a, k = int(pool.c_off[i]), int(pool.c_cnt[i])
        s = PL.n_super(k)
        lo[a + k:a + k + s] = -1e3
        hi[a + k:a + k + s] = 1e3
    P[K.P_CLLO], P[K.P_CLHI] = lo, hi
    return tuple(P)


def test_super_clusters_are_laid_out_after_each_shapes_clusters():
    mug = load_mesh_shape(graspsim.data_path("objects", "meshes", "mug.obj"))
    pool = PL.GeometryPool([mug, make_primitive("box", (0.02, 0.05, 0.02)), None, mug])
    ncl = int(pool.c_cnt[0])
    assert ncl == -(-int(pool.t_cnt[0]) // PL.CLUSTER) and PL.n_super(ncl) == -(-ncl // PL.SUPER)
    assert pool.c_cnt[1] == 1 and PL.n_super(1) == 0
    assert list(pool.c_off) == [0, ncl + PL.n_super(ncl), ncl + PL.n_super(ncl) + 1, ncl + PL.n_super(ncl) + 1]
    # a super cluster's bounds are its clusters' joint bounds
    for j in range(PL.n_super(ncl)):
        rows = slice(j * PL.SUPER, min((j + 1) * PL.SUPER, ncl))
        np.testing.assert_array_equal(pool.CLlo[ncl + j], pool.CLlo[rows].min(0))
        np.testing.assert_array_equal(pool.CLhi[ncl + j], pool.CLhi[rows].max(0))


def test_culling_and_box_test_give_the_candidates_of_the_full_walk():
    """A finger-sized box placed at random within +-2 thresholds of the mug's surface, in random
    orientations: the candidates (both orders of the pair) are bit for bit those of a cull that
    walks every cluster, and none joins points further apart than the threshold (what the
    oriented-box test relies on)."""
    mug = load_mesh_shape(graspsim.data_path("objects", "meshes", "mug.obj"))
    box = make_primitive("box", (0.02, 0.05, 0.015))
    pool = PL.GeometryPool([mug, box])
    P, P_all = pool.arrays(), _without_supers(pool)
    tm = trimesh.Trimesh(mug.vertices, mug.faces, process=False)
    rng = np.random.default_rng(3)
    C, C2 = np.empty((4096, 10)), np.empty((4096, 10))
    D, D2 = np.empty((4096, 10)), np.empty((4096, 10))
    touching = 0
    for _ in range(150):
        k = rng.integers(len(tm.vertices))
        p, n = tm.vertices[k], tm.vertex_normals[k]
        R = _rot(rng)
        reach = float(np.abs(R.T @ n) @ (0.5 * np.asarray(box.size)))   # the box's half extent along n
        X = np.stack([np.eye(4),                                          # the mug at the origin
                      _pose(R, p + n * (reach + rng.uniform(-2 * THR, 2 * THR)))])
        for a, b in ((0, 1), (1, 0)):
            m = K.pair_candidates(a, b, X, P, THR, C, C2, None)
            m_all = K.pair_candidates(a, b, X, P_all, THR, D, D2, None)
            assert m == m_all
            np.testing.assert_array_equal(C[:min(m, 4096)], D[:min(m, 4096)])
            if 0 < m <= 4096:
                touching += 1
                gap = np.linalg.norm(C[:m, 3:6] - C[:m, 0:3], axis=1)
                assert gap.max() <= THR * (1 + 1e-9)
    assert touching > 50         # most placements touch: the comparison is not about empty sets


def test_oriented_box_test_is_a_lower_bound_of_the_distance():
    """Whenever two random boxes are found more than d apart along a separating axis, FCL's exact
    distance between them exceeds d."""
    rng = np.random.default_rng(11)
    apart = 0
    for _ in range(200):
        sizes = [rng.uniform(0.01, 0.1, 3) for _ in range(2)]
        shapes = [make_primitive("box", s) for s in sizes]
        X = [_pose(_rot(rng), np.zeros(3)), _pose(_rot(rng), rng.normal(size=3) * 0.06)]
        objs = FCLObjects(shapes)
        for i in range(2):
            objs.set_pose(i, X[i])
        dist = objs.distance(0, 1)[0]
        if dist <= 0:
            continue
        d = dist * rng.uniform(0.5, 1.5)
        lo = [-0.5 * np.asarray(s) for s in sizes]
        hi = [0.5 * np.asarray(s) for s in sizes]
        if K._obb_apart(X[0], lo[0], hi[0], X[1], lo[1], hi[1], d):
            apart += 1
            assert dist > d - 1e-9
    assert apart > 30


def test_reduction_sorts_are_numpys_stable_sorts():
    rng = np.random.default_rng(5)
    for m in (0, 1, 7, 8, 9, 33, 100, 264):
        C = np.zeros((m, 10))
        C[:, 9] = np.round(rng.normal(size=m), 1)           # many ties
        np.testing.assert_array_equal(K._stable_order(C, m, 9), np.argsort(C[:, 9], kind="stable"))
        uv = np.round(rng.normal(size=(m, 2)), 1)
        idx = rng.permutation(m).astype(np.int64)
        want = idx[np.lexsort((uv[idx, 1], uv[idx, 0]))]    # by u, then v, ties in idx order
        np.testing.assert_array_equal(K._lexorder(uv, idx), want)


def _tri_distance(p, T):
    """(m,) distances of point p from triangles T (m, 3, 3): to the plane when the projection falls
    inside the triangle, else to the nearest of its three edges."""
    a, b, c = T[:, 0], T[:, 1], T[:, 2]
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1)[:, None]
    h = np.einsum("ij,ij->i", p - a, n)
    q = p - h[:, None] * n
    inside = np.ones(len(T), bool)
    for x, y in ((a, b), (b, c), (c, a)):
        inside &= np.einsum("ij,ij->i", np.cross(y - x, q - x), n) >= 0

    def seg(x, y):
        d = y - x
        t = np.clip(np.einsum("ij,ij->i", p - x, d) / np.einsum("ij,ij->i", d, d), 0.0, 1.0)
        return np.linalg.norm(x + t[:, None] * d - p, axis=1)
    return np.where(inside, np.abs(h), np.minimum(np.minimum(seg(a, b), seg(b, c)), seg(c, a)))


@pytest.mark.parametrize("mesh", ["mug.obj", "long_box.stl"])
def test_mesh_signed_distance_is_the_pass_over_every_triangle(mesh):
    """sdf_points skips clusters and triangles whose bounds are farther than the nearest point found
    so far: bit for bit the signed distances of the pass over every triangle (_signed_poly), for
    points near the surface (within 1e-5..1e-2 m: inside and outside) and far from it; and their
    size is the distance to the nearest of all triangles (:func:`_tri_distance`; trimesh's
    ``proximity.closest_point`` and ``triangles.closest_point`` both miss the nearest face of some
    of these points, by up to 44 um), their sign trimesh's ``contains``."""
    shape = load_mesh_shape(graspsim.data_path("objects", "meshes", mesh))
    pool = PL.GeometryPool([shape])
    P = pool.arrays()
    rng = np.random.default_rng(5)
    V = shape.vertices
    near = V[rng.integers(0, len(V), 300)] + rng.normal(size=(300, 3)) * rng.choice([1e-5, 1e-3, 1e-2], (300, 1))
    far = rng.uniform(-0.3, 0.3, size=(60, 3))
    pts = np.ascontiguousarray(np.vstack([near, far, V[:40]]))     # (vertices: ties between triangles)
    sd = K.sdf_points(P, 0, pts)
    allt = np.arange(int(pool.t_off[0]), int(pool.t_off[0]) + int(pool.t_cnt[0]))
    ref = np.array([K._signed_poly(K.v3(p), P, allt)[0] for p in pts])
    np.testing.assert_array_equal(sd, ref)
    assert (sd < 0).any() and (sd > 0).any()
    tm = trimesh.Trimesh(V, shape.faces, process=False)
    dist = np.array([_tri_distance(p, tm.triangles).min() for p in pts])
    np.testing.assert_allclose(np.abs(sd), dist, rtol=1e-9, atol=1e-15)
    clear = np.abs(sd) > 1e-6                   # (a point within rounding of the surface: either side)
    np.testing.assert_array_equal(sd[clear] < 0, tm.contains(pts[clear]))

"""Tests of graspsim.grasp: closed forms, invariances, qhull agreement, degenerate input.

Run: cd /work/main && python -m pytest tests/test_grasp*.py -q
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graspsim.grasp as g
from graspsim.grasp.quality import CLOSURE_RTOL

Z3 = np.zeros(3)


# ----------------------------------------------------------------------------- helpers


def sphere_grasp(rng: np.random.Generator, k: int, radius: float = 1.0):
    """k contacts on a sphere about the origin, normals pointing to the centre."""
    d = rng.normal(size=(k, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return radius * d, -d


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def cube_frictionless(c: float):
    """12 frictionless contacts on the cube [-1, 1]^3 (centre 0).

    Derivation (torque tau = r x n, inward normals):
      face +x, n = -e1, r = (1, 0, +-c)  -> tau = (0, -+c, 0)
      face -x, n = +e1, r = (-1, 0, +-c) -> tau = (0, +-c, 0)
      face +y, n = -e2, r = (+-c, 1, 0)  -> tau = (0, 0, -+c)
      face -y, n = +e2, r = (+-c, -1, 0) -> tau = (0, 0, +-c)
      face +z, n = -e3, r = (0, +-c, 1)  -> tau = (-+c, 0, 0)
      face -z, n = +e3, r = (0, +-c, -1) -> tau = (+-c, 0, 0)
    so with s = c * torque_scale the wrenches are {(+-e_i, +-s e_{i+1})}: three
    rectangles [-1,1] x [-s,s] in the orthogonal coordinate planes
    (f1, t2), (f2, t3), (f3, t1).
    """
    P, N = [], []
    for ax in range(3):
        nxt = (ax + 2) % 3  # coordinate of r that is +-c
        for sg in (1.0, -1.0):
            for sc in (c, -c):
                p = np.zeros(3)
                p[ax] = sg
                p[nxt] = sc
                n = np.zeros(3)
                n[ax] = -sg
                P.append(p)
                N.append(n)
    return np.array(P), np.array(N)


# ----------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("c, ts", [(0.5, 1 / np.sqrt(3)), (0.8, 2.0), (0.3, 1.0)])
def test_cube_closed_form_L1_and_Linf(c, ts):
    """L1 = free sum of three rectangles R = [-1,1]x[-s,s] in orthogonal planes.

    Polar of a free sum = product of polars; the polar of R is the diamond
    |y1| + s|y2| <= 1 with vertices of norm 1 and 1/s, so the farthest polar
    vertex has norm sqrt(3) max(1, 1/s) and eps_1 = min(1, s) / sqrt(3).
    Free-sum volume (2!2!2!/6!) vol(R)^3 = (8/720) (4s)^3 = 32 s^3 / 45.
    Linf (each contact a segment [0, w]) = zonotope = product of three
    diamonds conv{(+-2, 0), (0, +-2s)}: eps_inf = 2s / sqrt(1 + s^2) (edge
    distance of the diamond), volume (8s)^3 = 512 s^3.
    """
    P, N = cube_frictionless(c)
    s = c * ts
    W = g.primitive_wrenches(P, N, 0.0, center=Z3, torque_scale=ts)
    # the derivation's wrench set, checked explicitly
    expect = set()
    for i in range(3):
        for a in (1, -1):
            for b in (1, -1):
                w = np.zeros(6)
                w[i] = a
                w[3 + (i + 1) % 3] = b * s
                expect.add(tuple(np.round(w, 12)))
    assert {tuple(np.round(w, 12)) for w in W[:, 0, :]} == expect

    r1 = g.analyze(P, N, 0.0, center=Z3, torque_scale=ts, gws="L1")
    assert r1.force_closure
    assert r1.epsilon == pytest.approx(min(1.0, s) / np.sqrt(3), abs=1e-12)
    assert r1.volume == pytest.approx(32 * s**3 / 45, rel=1e-10)
    ri = g.analyze(P, N, 0.0, center=Z3, torque_scale=ts, gws="Linf")
    assert ri.force_closure
    assert ri.epsilon == pytest.approx(2 * s / np.sqrt(1 + s * s), abs=1e-12)
    assert ri.volume == pytest.approx(512 * s**3, rel=1e-10)


def test_two_antipodal_contacts_hard_vs_soft():
    """Two antipodal hard contacts: torque about the contact line is
    impossible (r x f is orthogonal to r = +-R e_x), rank 5: never force
    closure.  Soft fingers add +-gamma torsion about that line: closure."""
    P = np.array([[1.0, 0, 0], [-1.0, 0, 0]])
    N = -P
    for gws in ("L1", "Linf"):
        hard = g.analyze(P, N, 0.8, center=Z3, torque_scale=1.0, gws=gws)
        assert not hard.force_closure and hard.epsilon == 0.0
        assert hard.rank == 5 and hard.volume == 0.0
        soft = g.analyze(P, N, 0.8, center=Z3, torque_scale=1.0, gws=gws, soft=True, gamma=0.2)
        assert soft.force_closure and soft.epsilon > 0.01
    assert not g.force_closure_lp(hard.wrenches)
    soft = g.analyze(P, N, 0.8, center=Z3, torque_scale=1.0, soft=True, gamma=0.2)
    assert g.force_closure_lp(soft.wrenches)
    fc, eps, vol = g.qhull_quality(soft.wrenches.reshape(-1, 6))
    assert fc and soft.epsilon == pytest.approx(eps, abs=1e-9)
    assert soft.volume == pytest.approx(vol, rel=1e-9)


def test_soft_finger_generators():
    P = np.array([[0.3, 0.1, 0.0], [0.0, 1.0, 0.0]])
    N = np.array([[0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
    W = g.primitive_wrenches(P, N, 0.5, center=Z3, torque_scale=2.0, edges=6,
                             soft=[True, False], gamma=0.1)
    assert W.shape == (2, 8, 6)
    base = np.r_[N[0], 2.0 * np.cross(P[0], N[0])]
    tors = np.r_[0, 0, 0, 2.0 * 0.1 * N[0]]
    np.testing.assert_allclose(W[0, 6], base + tors, atol=1e-15)
    np.testing.assert_allclose(W[0, 7], base - tors, atol=1e-15)
    np.testing.assert_allclose(W[1, 6:], W[1, [0, 0]])  # hard contact padded


def test_cone_edges_formula():
    n = np.array([[0.0, 0.0, 1.0]])
    F = g.friction_cone_edges(n, np.array([0.5]), 8, tangents=np.array([[1.0, 0.0, 0.3]]))
    j = np.arange(8)
    expect = np.stack([0.5 * np.cos(2 * np.pi * j / 8), 0.5 * np.sin(2 * np.pi * j / 8),
                       np.ones(8)], axis=1)
    np.testing.assert_allclose(F[0], expect, atol=1e-15)
    # frictionless: the cone degenerates to the normal
    F0 = g.friction_cone_edges(n, np.array([0.0]), 8)
    np.testing.assert_allclose(F0[0], np.repeat(n, 8, axis=0))


def test_three_and_four_contacts_and_clustered():
    ang = 2 * np.pi * np.arange(3) / 3
    d3 = np.stack([np.cos(ang), np.sin(ang), np.zeros(3)], axis=1)
    r3 = g.analyze(d3, -d3, 0.5, center=Z3, torque_scale=1.0)
    assert r3.force_closure and r3.epsilon > 0.01
    assert g.force_closure_lp(r3.wrenches)
    d4 = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]]) / np.sqrt(3)
    r4 = g.analyze(d4, -d4, 0.5, center=Z3, torque_scale=1.0)
    assert r4.force_closure and r4.epsilon > r3.epsilon
    # four contacts within 15 degrees of the north pole, mu = 0.2: every force
    # has fz < 0, so u = (0,0,1,0,0,0) has h(u) < 0
    rng = np.random.default_rng(1)
    th = np.deg2rad(rng.uniform(0, 15, 4))
    ph = rng.uniform(0, 2 * np.pi, 4)
    dc = np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], axis=1)
    for gws in ("L1", "Linf"):
        rc = g.analyze(dc, -dc, 0.2, center=Z3, torque_scale=1.0, gws=gws)
        assert not rc.force_closure and rc.epsilon == 0.0
    assert not g.force_closure_lp(rc.wrenches)
    assert g.support_function(rc.wrenches, np.r_[0, 0, 1.0, 0, 0, 0])[0] < 0


# ----------------------------------------------------------------------------- invariances


def test_rotation_invariance():
    rng = np.random.default_rng(2)
    checked = 0
    for _ in range(10):
        P, N = sphere_grasp(rng, 5, 1.3)
        P = P + 0.1 * rng.normal(size=P.shape)
        T = rng.normal(size=(5, 3))
        C = rng.normal(size=3) * 0.1
        R = random_rotation(rng)
        for gws in ("L1", "Linf"):
            a = g.analyze(P, N, 0.6, center=C, torque_scale=0.7, tangents=T, gws=gws)
            b = g.analyze(P @ R.T + 5.0, N @ R.T, 0.6, center=C @ R.T + 5.0, torque_scale=0.7,
                          tangents=T @ R.T, gws=gws)
            assert a.force_closure == b.force_closure
            assert b.epsilon == pytest.approx(a.epsilon, abs=1e-9)
            if gws == "L1":
                assert b.volume == pytest.approx(a.volume, rel=1e-9)
            checked += a.force_closure
    assert checked >= 10


def test_linf_epsilon_at_least_l1():
    rng = np.random.default_rng(3)
    n_fc = 0
    for _ in range(20):
        k = int(rng.integers(3, 7))
        P, N = sphere_grasp(rng, k)
        r1 = g.analyze(P, N, 0.5, center=Z3, torque_scale=1.0)
        ri = g.analyze(P, N, 0.5, center=Z3, torque_scale=1.0, gws="Linf")
        assert r1.force_closure == ri.force_closure
        assert ri.epsilon >= r1.epsilon - 1e-12
        n_fc += r1.force_closure
    assert n_fc >= 8


def test_torque_scale_behaviour():
    """Scaling torques by s is the linear map A = diag(I3, s I3) (det s^3):
    closure is invariant, the volume scales by s^3 exactly, and since
    min(1,s) B <= A B <= max(1,s) B for the unit ball B:
    min(1,s) eps(1) <= eps(s) <= max(1,s) eps(1)."""
    rng = np.random.default_rng(4)
    for _ in range(5):
        P, N = sphere_grasp(rng, 5)
        P = P * rng.uniform(0.8, 1.2, size=(5, 1))
        base = g.analyze(P, N, 0.5, center=Z3, torque_scale=1.0)
        for s in (0.25, 3.0):
            r = g.analyze(P, N, 0.5, center=Z3, torque_scale=s)
            assert r.force_closure == base.force_closure
            assert r.volume == pytest.approx(base.volume * s**3, rel=1e-9)
            if base.force_closure:
                lo, hi = min(1, s) * base.epsilon, max(1, s) * base.epsilon
                assert lo - 1e-12 <= r.epsilon <= hi + 1e-12
    # torques -> 0: epsilon tends to 0 (the torque facets approach the origin)
    P, N = cube_frictionless(0.5)
    r = g.analyze(P, N, 0.0, center=Z3, torque_scale=1e-3)
    assert r.epsilon == pytest.approx(0.5e-3 / np.sqrt(3), rel=1e-9)


# ----------------------------------------------------------------------------- agreement with qhull


def test_l1_matches_qhull_on_random_grasps():
    rng = np.random.default_rng(5)
    n_fc = n_full = 0
    for trial in range(120):
        k = int(rng.integers(3, 9))
        if trial % 3 == 0:
            P, N = sphere_grasp(rng, k, rng.uniform(0.5, 2.0))
        else:
            P, N = rng.normal(size=(k, 3)), rng.normal(size=(k, 3))
        mu = float(rng.choice([0.1, 0.3, 0.6, 1.0]))
        edges = int(rng.choice([4, 6, 8]))
        ts = float(rng.uniform(0.3, 2.0))
        soft = bool(trial % 5 == 0)
        r = g.analyze(P, N, mu, center=Z3, torque_scale=ts, edges=edges, soft=soft, gamma=0.1)
        fc, eps, vol = g.qhull_quality(r.wrenches.reshape(-1, 6))
        assert r.force_closure == fc == g.force_closure_lp(r.wrenches)
        assert r.epsilon == pytest.approx(eps, abs=1e-9)
        assert r.volume == pytest.approx(vol, rel=1e-9, abs=1e-14)
        n_fc += fc
        n_full += vol > 0
    assert n_fc >= 40 and n_full >= 100


def test_compiled_hull_matches_qhull_on_random_wrench_sets():
    """Epsilon and volume of the compiled hull vs scipy's ConvexHull, 1e-9 relative, on explicit
    6-D point sets (L1): Gaussian clouds around a shifted centre (closure or not), clouds with
    duplicated and interior points, and 5-contact grasps; both the one-pass ``volume=True`` path
    and the epsilon search + lazy volume."""
    from scipy.spatial import ConvexHull

    rng = np.random.default_rng(18)
    n_fc = 0
    for trial in range(60):
        if trial % 3 == 2:
            P, N = sphere_grasp(rng, 5)
            W = g.primitive_wrenches(P, N, 0.5, center=Z3, torque_scale=1.0).reshape(-1, 6)
        else:
            W = rng.normal(size=(int(rng.integers(8, 60)), 6)) + rng.uniform(-1.0, 1.0, 6)
            if trial % 3 == 1:  # duplicates and interior points leave the hull unchanged
                W = np.vstack([W, W[:5], 0.1 * W[5:10] + 0.9 * W.mean(axis=0)])
        hull = ConvexHull(W)
        eps_q = float(-hull.equations[:, -1].max())  # n.x + c <= 0 inside: distance -c
        fc_q = eps_q > CLOSURE_RTOL * np.linalg.norm(W, axis=1).max()
        one_pass = g.analyze_wrenches(W, volume=True)
        lazy = g.analyze_wrenches(W)
        for r in (one_pass, lazy):
            assert r.force_closure == fc_q
            assert r.volume == pytest.approx(hull.volume, rel=1e-9)
            if fc_q:
                assert r.epsilon == pytest.approx(eps_q, rel=1e-9)
            else:
                assert r.epsilon == 0.0
        # the lazy volume runs the same full hull as the one-pass path: identical bits
        assert one_pass.volume == lazy.volume
        n_fc += fc_q
    assert 10 <= n_fc <= 50


def test_linf_matches_explicit_minkowski_sum():
    """Support-function search vs qhull of the enumerated Minkowski sum."""
    rng = np.random.default_rng(6)
    n_fc = 0
    for trial in range(9):
        k, edges = (3, 4) if trial % 4 else (4, 3)
        P, N = sphere_grasp(rng, k)
        r = g.analyze(P, N, 0.5, center=Z3, torque_scale=1.0, edges=edges, gws="Linf",
                      soft=trial in (1, 6), gamma=0.15)
        pts = g.minkowski_points(r.wrenches)
        fc, eps, vol = g.qhull_quality(pts)
        assert r.force_closure == fc
        assert r.epsilon == pytest.approx(eps, abs=1e-9)
        if k == 3 and trial < 4:
            assert r.volume == pytest.approx(vol, rel=1e-9)
        u = rng.normal(size=6)
        assert g.support_function(r.wrenches, u, "Linf")[0] == pytest.approx((pts @ u).max(),
                                                                            abs=1e-12)
        n_fc += fc
    assert n_fc >= 3


def test_minkowski_enumeration_limit_is_explicit():
    rng = np.random.default_rng(7)
    P, N = sphere_grasp(rng, 12)
    W = g.primitive_wrenches(P, N, 0.5, center=Z3, torque_scale=1.0)
    with pytest.raises(ValueError, match="support-function search"):
        g.minkowski_points(W, max_points=1000)
    r = g.analyze_wrenches(W, "Linf")  # no enumeration needed
    assert r.force_closure and r.epsilon > g.analyze_wrenches(W, "L1").epsilon
    with pytest.raises(RuntimeError, match="max_facets"):
        g.gws_volume(W, "Linf", max_facets=1000)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 7), mu=st.floats(0.0, 1.2))
def test_property_closure_consistency(seed, k, mu):
    rng = np.random.default_rng(seed)
    P, N = rng.normal(size=(k, 3)), rng.normal(size=(k, 3))
    r1 = g.analyze(P, N, mu, center=Z3, torque_scale=1.0, edges=5)
    ri = g.analyze(P, N, mu, center=Z3, torque_scale=1.0, edges=5, gws="Linf")
    assert r1.force_closure == ri.force_closure == g.force_closure_lp(r1.wrenches)
    assert ri.epsilon >= r1.epsilon - 1e-12
    assert (r1.epsilon > 0) == r1.force_closure


# ----------------------------------------------------------------------------- degenerate input


def test_nan_and_bad_values_name_argument_and_row():
    P = np.array([[1.0, 0, 0], [-1.0, 0, 0], [0, 1.0, 0]])
    N = -P
    bad = P.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"points: row 2"):
        g.analyze(bad, N, 0.5, center=Z3, torque_scale=1.0)
    badn = N.copy()
    badn[1, 0] = np.inf
    with pytest.raises(ValueError, match=r"normals: row 1"):
        g.analyze(P, badn, 0.5, center=Z3, torque_scale=1.0)
    with pytest.raises(ValueError, match=r"mu: row 1"):
        g.analyze(P, N, [0.5, np.nan, 0.5], center=Z3, torque_scale=1.0)
    with pytest.raises(ValueError, match=r"mu: row 2 is negative"):
        g.analyze(P, N, [0.5, 0.5, -0.1], center=Z3, torque_scale=1.0)
    with pytest.raises(ValueError, match=r"center"):
        g.analyze(P, N, 0.5, center=[0, np.nan, 0], torque_scale=1.0)
    with pytest.raises(ValueError, match=r"tangents: row 0"):
        g.analyze(P, N, 0.5, center=Z3, torque_scale=1.0, tangents=[[np.nan, 0, 0]] * 3)
    with pytest.raises(ValueError, match=r"tangents: row 0 is zero or parallel"):
        g.analyze(P, N, 0.5, center=Z3, torque_scale=1.0, tangents=N)
    zero = N.copy()
    zero[0] = 0.0
    with pytest.raises(ValueError, match=r"normals: row 0 has zero length"):
        g.analyze(P, zero, 0.5, center=Z3, torque_scale=1.0)
    for ts in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError, match="torque_scale"):
            g.analyze(P, N, 0.5, center=Z3, torque_scale=ts)
    with pytest.raises(ValueError, match="edges"):
        g.analyze(P, N, 0.5, center=Z3, torque_scale=1.0, edges=2)
    with pytest.raises(ValueError, match="gws"):
        g.analyze(P, N, 0.5, center=Z3, torque_scale=1.0, gws="L2")
    with pytest.raises(ValueError, match="shape"):
        g.analyze(P, N[:2], 0.5, center=Z3, torque_scale=1.0)
    with pytest.raises(ValueError, match=r"gamma: row 0 is negative"):
        g.analyze(P, N, 0.5, center=Z3, torque_scale=1.0, soft=True, gamma=-1.0)


def test_non_unit_normals_are_normalised():
    rng = np.random.default_rng(8)
    P, N = sphere_grasp(rng, 5)
    a = g.analyze(P, N, 0.5, center=Z3, torque_scale=1.0)
    b = g.analyze(P, N * rng.uniform(0.1, 10, size=(5, 1)), 0.5, center=Z3, torque_scale=1.0)
    assert a.force_closure == b.force_closure
    assert a.epsilon == pytest.approx(b.epsilon, abs=1e-12)


def test_too_few_lower_dimensional_and_duplicated_contacts():
    # no contacts / one contact: no closure, no volume, no crash
    for k in (0, 1):
        r = g.analyze(np.ones((k, 3)), -np.ones((k, 3)), 0.5, center=Z3, torque_scale=1.0)
        assert not r.force_closure and r.epsilon == 0.0 and r.volume == 0.0
    # frictionless contacts: 6 can never close (6 wrenches span <= 5-dim hull)
    rng = np.random.default_rng(9)
    P, N = sphere_grasp(rng, 6)
    P = P + 0.2 * rng.normal(size=P.shape)
    r = g.analyze(P, N, 0.0, center=Z3, torque_scale=1.0)
    assert not r.force_closure and r.volume == 0.0 and r.rank == 5
    # collinear contacts with normals along the line: wrench set is 1-D
    P = np.array([[x, 0.0, 0.0] for x in (-2.0, -1.0, 1.0, 2.0)])
    N = np.array([[1.0, 0, 0], [1.0, 0, 0], [-1.0, 0, 0], [-1.0, 0, 0]])
    for gws in ("L1", "Linf"):
        r = g.analyze(P, N, 0.0, center=Z3, torque_scale=1.0, gws=gws)
        assert not r.force_closure and r.volume == 0.0 and r.rank <= 1
    # coplanar contacts in the z=0 plane with normals in the plane, frictionless:
    # wrenches (fx, fy, 0, 0, 0, tz) are 3-dimensional
    ang = np.linspace(0, 2 * np.pi, 7)[:-1]
    P = np.stack([np.cos(ang), np.sin(ang), 0 * ang], 1)
    N = -np.stack([np.cos(ang + 0.3), np.sin(ang + 0.3), 0 * ang], 1)
    r = g.analyze(P, N, 0.0, center=Z3, torque_scale=1.0)
    assert not r.force_closure and r.rank <= 3 and r.volume == 0.0
    # duplicated contacts do not change the space
    P, N = sphere_grasp(rng, 4)
    a = g.analyze(P, N, 0.5, center=Z3, torque_scale=1.0, volume=True)
    b = g.analyze(np.vstack([P, P[:2]]), np.vstack([N, N[:2]]), 0.5, center=Z3, torque_scale=1.0)
    assert a.force_closure and a.epsilon == pytest.approx(b.epsilon, abs=1e-12)
    assert b.volume == pytest.approx(a.volume, rel=1e-9)


def test_frictionless_seven_contacts_can_close():
    """Frictionless closure in 3-D needs >= 7 contacts (Mishra et al.)."""
    P, N = cube_frictionless(0.5)
    keep = [0, 3, 4, 7, 8, 11, 1]  # one per face + 1
    r = g.analyze(P[keep], N[keep], 0.0, center=Z3, torque_scale=1.0)
    fc, eps, _ = g.qhull_quality(r.wrenches.reshape(-1, 6))
    assert r.force_closure == fc == g.force_closure_lp(r.wrenches)
    assert r.epsilon == pytest.approx(eps, abs=1e-9)


def test_volume_is_lazy():
    rng = np.random.default_rng(10)
    P, N = sphere_grasp(rng, 5)
    r = g.analyze(P, N, 0.5, center=Z3, torque_scale=1.0)
    assert r._volume is None
    v = r.volume
    assert r._volume == v > 0
    assert g.analyze(P, N, 0.5, center=Z3, torque_scale=1.0, volume=True)._volume == v


# ----------------------------------------------------------------------------- margins and plots


def test_wrench_margin():
    P, N = cube_frictionless(0.5)
    ts = 1 / np.sqrt(3)
    s = 0.5 * ts
    r1 = g.analyze(P, N, 0.0, center=Z3, torque_scale=ts)
    m0 = g.wrench_margin(r1, np.zeros(6))
    assert m0.scale == np.inf and m0.distance == pytest.approx(r1.epsilon, abs=1e-12)
    # along f1 the L1 space reaches 1 (edge of the rectangle (1, +-s))
    w = np.r_[0.25, 0, 0, 0, 0, 0]
    m = r1.margin(w)
    assert m.scale == pytest.approx(4.0, rel=1e-9)
    fc, eps, _ = g.qhull_quality(r1.wrenches.reshape(-1, 6) - w)
    assert m.distance == pytest.approx(eps, abs=1e-9)
    # outside: nearest point of the L1 space to (10, 0, ...) is (1, 0, ...)
    m = g.wrench_margin(r1, np.r_[10.0, 0, 0, 0, 0, 0])
    assert m.scale == pytest.approx(0.1, rel=1e-9) and m.distance == pytest.approx(-9.0, abs=1e-9)
    # Linf: product of diamonds conv{(+-2,0),(0,+-2s)}; (10,0) -> vertex (2,0)
    ri = g.analyze(P, N, 0.0, center=Z3, torque_scale=ts, gws="Linf")
    m = g.wrench_margin(ri, np.r_[10.0, 0, 0, 0, 0, 0])
    assert m.scale == pytest.approx(0.2, rel=1e-9) and m.distance == pytest.approx(-8.0, abs=1e-9)
    m = g.wrench_margin(ri.wrenches, np.r_[0, 0, 0, 0, s, 0], gws="Linf")
    assert m.scale == pytest.approx(2.0, rel=1e-9)
    # distance of an inside point = min over facets of the Linf space (explicit)
    wi = np.r_[0.3, 0.1, 0, 0, 0.05, 0]
    fc, eps, _ = g.qhull_quality(g.minkowski_points(ri.wrenches) - wi)
    assert g.wrench_margin(ri, wi).distance == pytest.approx(eps, abs=1e-9)


@pytest.mark.parametrize("gws", ["L1", "Linf"])
def test_plot_gws_writes_png(tmp_path, gws):
    d4 = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]]) / np.sqrt(3)
    r = g.analyze(d4, -d4, 0.5, center=Z3, torque_scale=1.0, gws=gws)
    path = tmp_path / "sub" / f"gws_{gws}.png"
    fig = g.plot_gws(r, path, n_directions=150)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    assert len(fig.axes) == 2
    g.plot_gws(r.wrenches, None, gws=gws, n_directions=50)  # wrench-array input


def test_closure_threshold_is_relative():
    assert CLOSURE_RTOL < 1e-8


def test_resultant_wrench_of_cone_forces_is_inside():
    """Forces that are a convex combination of cone edges (total normal force
    1) give a resultant inside the L1 space: margin scale >= 1."""
    rng = np.random.default_rng(12)
    P, N = sphere_grasp(rng, 5)
    r = g.analyze(P, N, 0.5, center=Z3, torque_scale=0.8)
    assert r.force_closure
    F = g.friction_cone_edges(N, np.full(5, 0.5), 8)
    lam = rng.dirichlet(np.ones(5))
    j = rng.integers(0, 8, size=5)
    forces = 3.0 * lam[:, None] * F[np.arange(5), j]  # total normal force 3
    w = g.resultant_wrench(P, forces, center=Z3, torque_scale=0.8, normals=N, budget="L1")
    np.testing.assert_allclose(w, (lam[:, None] * r.wrenches[np.arange(5), j]).sum(0), atol=1e-12)
    m = r.margin(w)
    assert m.scale >= 1 - 1e-9 and m.distance >= -1e-9
    with pytest.raises(ValueError, match="budget"):
        g.resultant_wrench(P, forces, center=Z3, torque_scale=0.8, normals=N, budget="L2")
    with pytest.raises(ValueError, match="forces: row 1"):
        g.resultant_wrench(P, np.where(np.arange(5)[:, None] == 1, np.nan, forces),
                           center=Z3, torque_scale=0.8)


def test_volume_of_a_flat_jaw_grasp_that_qhull_merges_too_wide():
    """The 64 primitive wrenches of a parallel jaw's eight pad-corner contacts (captured from
    `grasp worlds/parallel_jaw_box.yaml`, 8 friction edges each): the support search gives up on
    its volume, and qhull's default options stop with a precision error ("wide merge" of nearly
    coplanar facets).  The fallback allows wide merges; its hull must be the joggled hull's (an
    independent construction: QJ perturbs the points by ~1e-11 instead of merging facets)."""
    from pathlib import Path

    from scipy.spatial import ConvexHull

    X = np.load(Path(__file__).parent / "data" / "jaw_wrenches.npy")
    joggled = ConvexHull(X, qhull_options="QJ")
    fc, eps, vol = g.qhull_quality(X)
    assert fc
    assert vol == pytest.approx(joggled.volume, rel=1e-8)
    assert eps == pytest.approx(float((-joggled.equations[:, -1]).min()), rel=1e-8)
    q = g.analyze_wrenches(X.reshape(8, 8, 6), "L1", volume=True)
    assert q.force_closure and q.epsilon == pytest.approx(eps, rel=1e-8)
    assert q.volume == pytest.approx(vol, rel=1e-12)


def test_rank_lp_and_qhull_helpers_name_non_finite_input():
    """affine_rank, linear_rank, force_closure_lp and qhull_quality on a NaN raised numpy's
    LinAlgError ("SVD did not converge"), support_function took a NaN direction: each names the
    argument and the entry now.  Finite input keeps its answers: six +-unit wrenches of R^3
    contain the origin (force closure, epsilon 1/sqrt(3) of the octahedron)."""
    from graspsim.grasp import affine_rank, force_closure_lp, linear_rank, qhull_quality, support_function

    W = np.vstack([np.eye(3), -np.eye(3)])
    bad = W.copy()
    bad[4, 1] = np.nan
    for fn, name in ((affine_rank, "points"), (linear_rank, "points"), (force_closure_lp, "wrenches"),
                     (qhull_quality, "points")):
        with pytest.raises(ValueError, match=rf"{name}: row 4, column 1 is not finite \(nan\)"):
            fn(bad)
    with pytest.raises(ValueError, match="u must be finite"):
        support_function(W, np.array([np.nan, 0.0, 0.0]))
    assert affine_rank(W) == 3 and linear_rank(W[:2]) == 2 and force_closure_lp(W)
    fc, eps, vol = qhull_quality(W)
    assert fc and abs(eps - 1 / np.sqrt(3)) < 1e-12 and abs(vol - 4 / 3) < 1e-12

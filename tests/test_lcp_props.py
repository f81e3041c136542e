"""Property-based tests (hypothesis) on the classes Lemke's method is
guaranteed to process: P-matrices, (rank-deficient) positive semidefinite
matrices, strictly copositive matrices and Anitescu-Potra contact matrices."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graspsim.lcp import lemke
from graspsim.lcp.problems import (Body, Contact, box_on_plane, box_stack, contact_lcp,
                                   three_finger_grasp)
try:
    from test_lcp import (assert_certificate, assert_lcp_solution, enumerate_solutions,
                          exact_lemke, lp_feasible)
except ImportError:  # tests/ collected as a package
    from .test_lcp import (assert_certificate, assert_lcp_solution, enumerate_solutions,
                           exact_lemke, lp_feasible)

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

seeds = st.integers(0, 2 ** 32 - 1)
sizes = st.integers(1, 8)


@SETTINGS
@given(seeds, sizes, st.floats(0.0, 3.0), st.integers(-3, 3))
def test_p_matrix_solution_is_the_unique_one(seed, n, skew, qexp):
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(n, n))
    S = rng.normal(size=(n, n)) * skew
    M = B @ B.T + 0.05 * np.eye(n) + S - S.T          # positive definite => P
    q = rng.normal(size=n) * 10.0 ** qexp
    q[rng.random(n) < 0.2] = 0.0                      # degenerate rows
    r = lemke(M, q)
    assert r.status == "solved"
    sols = enumerate_solutions(M, q)
    assert len(sols) >= 1
    np.testing.assert_allclose(r.z, sols[0], rtol=1e-7,
                               atol=1e-9 * max(1e-300, np.abs(sols[0]).max(), np.abs(r.z).max()))


@SETTINGS
@given(seeds, sizes, st.integers(1, 8), st.booleans())
def test_psd_solved_iff_feasible(seed, n, rank, skew):
    rng = np.random.default_rng(seed)
    rank = min(rank, n)
    B = rng.normal(size=(n, rank))
    M = B @ B.T
    if skew:
        u, v = rng.normal(size=(2, n))
        M = M + np.outer(u, v) - np.outer(v, u)
    q = rng.normal(size=n) * 3.0
    q[rng.random(n) < 0.2] = 0.0
    r = lemke(M, q)
    if lp_feasible(M, q):
        assert r.status == "solved"
        assert_lcp_solution(M, q, r.z)
    else:
        assert r.status == "ray"
        assert_certificate(M, q, r.certificate)


@SETTINGS
@given(seeds, sizes, st.floats(0.0, 1.0))
def test_strictly_copositive_solved(seed, n, density):
    rng = np.random.default_rng(seed)
    M = np.abs(rng.normal(size=(n, n))) * (rng.random((n, n)) < density)
    M[np.diag_indices(n)] = rng.uniform(0.01, 3.0, n)
    q = rng.normal(size=n)
    r = lemke(M, q)
    assert r.status == "solved"
    assert_lcp_solution(M, q, r.z)


@SETTINGS
@given(seeds, st.integers(2, 5))
def test_matches_exact_lexicographic_method(seed, n):
    """Small integer monotone problems with exact ties: same verdict and, if
    solved, the same number of pivots and the same z as exact arithmetic."""
    rng = np.random.default_rng(seed)
    B = rng.integers(-2, 3, (n, int(rng.integers(1, n + 1))))
    S = np.triu(rng.integers(-2, 3, (n, n)), 1)
    M = B @ B.T + S - S.T
    q = rng.integers(-2, 2, n)
    st_, piv, z, _ = exact_lemke(M.tolist(), q.tolist(), max_pivots=1000)
    r = lemke(M.astype(float), q.astype(float), d=np.ones(n))
    assert r.status == st_
    if st_ == "solved":
        assert r.pivots == piv
        np.testing.assert_allclose(r.z, np.array(z, float), rtol=1e-12, atol=1e-12)


@SETTINGS
@given(seeds, st.sampled_from([4, 8]), st.floats(0.05, 1.5),
       st.sampled_from(["box", "dup", "stack", "grasp"]))
def test_contact_lcps_always_solved(seed, u, mu, scene):
    rng = np.random.default_rng(seed)
    if scene in ("box", "dup"):
        vel = np.r_[rng.normal(0, 0.5, 2), rng.uniform(-0.3, 0.1), rng.normal(0, 2.0, 3)]
        M, q, info = box_on_plane(u=u, mu=mu, vel=vel, yaw=rng.uniform(0, np.pi),
                                  duplicate=scene == "dup")
    elif scene == "stack":
        M, q, info = box_stack(int(rng.integers(2, 4)), u=u, mu=mu, rng=rng, jitter=1.0)
    else:
        M, q, info = three_finger_grasp(u=u, mu=mu, rng=rng, jitter=1.0,
                                        link_contacts=bool(rng.random() < 0.5))
    r = lemke(M, q)
    assert r.status == "solved"
    assert_lcp_solution(M, q, r.z)
    # physically: no contact point ends up approaching the other body
    nl, c = info["limits"], info["contacts"]
    assert (r.w[nl:nl + c] >= -1e-9 * max(1.0, np.abs(q).max())).all()


@SETTINGS
@given(seeds, st.sampled_from([4, 8, 16]), st.floats(-4.0, -1.3))
def test_extreme_contact_scenes_solved(seed, u, log_h):
    """Piles of 1-3 boxes with masses 1e-2..1e2, tilted normals, repeated
    contacts, required separation velocities, time steps 1e-4..0.05 s, and
    grasps with limit rows 1e2..1e6 larger than the contact rows."""
    rng = np.random.default_rng(seed)
    h = 10.0 ** log_h
    if rng.random() < 0.6:
        bodies, contacts = [], []
        for k in range(int(rng.integers(1, 4))):
            m = 10.0 ** rng.uniform(-2, 2)
            Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
            inertia = Q @ np.diag(m * rng.uniform(1e-4, 1e-2, 3)) @ Q.T
            com = np.array([0.0, 0.0, 0.1 * (2 * k + 1)]) + rng.normal(0, 0.01, 3)
            bodies.append(Body(m, inertia, com, np.r_[rng.normal(0, 0.5, 3), rng.normal(0, 2, 3)]))
            for _ in range(int(rng.integers(1, 6))):
                p = com + np.r_[rng.uniform(-0.1, 0.1, 2), -0.1]
                nrm = np.array([0.0, 0.0, 1.0]) + rng.normal(0, 0.05, 3) * (rng.random() < 0.5)
                contacts.append(Contact(k - 1, k, p, nrm / np.linalg.norm(nrm),
                                        rng.uniform(0, 1.5), eps=max(0.0, rng.normal(0, 0.01))))
                if rng.random() < 0.2:
                    contacts.append(contacts[-1])
        M, q, info = contact_lcp(bodies, contacts, u=u, h=h)
    else:
        M, q, info = three_finger_grasp(u=u, mu=rng.uniform(0, 1.5), rng=rng, jitter=1.0,
                                        limit_ratio=10.0 ** rng.uniform(2, 6), h=h,
                                        link_contacts=bool(rng.random() < 0.5),
                                        squeeze=rng.uniform(0, 1), table=bool(rng.random() < 0.6))
    r = lemke(M, q)
    assert r.status == "solved"
    assert_lcp_solution(M, q, r.z)

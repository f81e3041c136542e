"""Frictional-contact LCPs built the Anitescu-Potra / Miller-Christensen way
(graspsim.lcp.problems): every verdict is checked independently, and the
solutions are checked against the mechanics they describe."""
from __future__ import annotations

import numpy as np
import pytest

from graspsim.lcp import lemke
from graspsim.lcp.problems import (Body, Contact, box_on_plane, box_stack, contact_corpus,
                                   contact_lcp, three_finger_grasp)
try:
    from test_lcp import assert_lcp_solution, enumerate_solutions, lp_feasible
except ImportError:  # tests/ collected as a package
    from .test_lcp import assert_lcp_solution, enumerate_solutions, lp_feasible

G = 9.81
H = 0.01


def blocks(info, z):
    nl, c, u = info["limits"], info["contacts"], info["u"]
    return dict(limits=z[:nl], normal=z[nl:nl + c],
                beta=z[nl + c:nl + c + c * u].reshape(c, u), lam=z[nl + c + c * u:])


def solve_checked(M, q, **kw):
    r = lemke(M, q, **kw)
    assert r.status == "solved", (r.status, M.shape)
    assert_lcp_solution(M, q, r.z)
    return r


@pytest.mark.parametrize("u", [4, 8])
@pytest.mark.parametrize("duplicate", [False, True])
def test_box_resting_stays_at_rest(u, duplicate):
    # 4 (or 8 duplicated) coplanar corner contacts, tied normal rows and
    # q = 0 in every friction row: the most degenerate case there is
    M, q, info = box_on_plane(u=u, duplicate=duplicate, yaw=0.4)
    assert M.shape[0] == info["contacts"] * (u + 2)
    assert np.all(q[info["contacts"]:] == 0.0)            # friction rows
    assert np.ptp(q[:info["contacts"]]) < 1e-15           # tied normal rows
    r = solve_checked(M, q)
    v = info["velocity"](r.z)
    assert np.abs(v).max() < 1e-12                        # stays at rest
    b = blocks(info, r.z)
    np.testing.assert_allclose(b["normal"].sum(), 1.0 * G * H, rtol=1e-12)
    assert np.abs(b["beta"]).max() < 1e-12                # no friction needed


@pytest.mark.parametrize("u", [4, 8])
@pytest.mark.parametrize("mu", [0.2, 0.5, 1.0])
def test_box_sliding_coulomb(u, mu):
    # sliding along -x... the discretised cone contains the direction -x, so
    # a sliding box decelerates by exactly mu g h per step and stays flat
    v0 = 1.0
    M, q, info = box_on_plane(u=u, mu=mu, vel=[v0, 0, 0, 0, 0, 0])
    r = solve_checked(M, q)
    v = info["velocity"](r.z)
    np.testing.assert_allclose(v[0], v0 - mu * G * H, rtol=1e-12)
    assert np.abs(v[1:]).max() < 1e-12
    b = blocks(info, r.z)
    # maximal dissipation: sliding contacts have sum(beta) = mu c_n
    np.testing.assert_allclose(b["beta"].sum(axis=1), mu * b["normal"], atol=1e-14)
    np.testing.assert_allclose(b["normal"].sum(), G * H, rtol=1e-12)


def test_box_stopping_by_friction():
    # slow enough to stop within the step: static friction, v+ = 0
    M, q, info = box_on_plane(u=8, mu=0.8, vel=[0.02, -0.01, 0, 0, 0, 0])
    r = solve_checked(M, q)
    assert np.abs(info["velocity"](r.z)).max() < 1e-12


@pytest.mark.parametrize("levels", [2, 3])
@pytest.mark.parametrize("u", [4, 8])
def test_stack_at_rest(levels, u):
    M, q, info = box_stack(levels, u=u)
    r = solve_checked(M, q)
    assert np.abs(info["velocity"](r.z)).max() < 1e-12
    cn = blocks(info, r.z)["normal"].reshape(levels, 4).sum(axis=1)
    # each interface carries the weight of the boxes above it
    expected = G * H * np.arange(levels, 0, -1, dtype=float)
    np.testing.assert_allclose(cn, expected, rtol=1e-10)


@pytest.mark.parametrize("u", [4, 8])
def test_three_finger_grasp_with_joint_limits(u):
    M, q, info = three_finger_grasp(u=u)
    nl, c = info["limits"], info["contacts"]
    assert M.shape[0] == nl + c * (u + 2)
    # limit rows are ~1e4 times the contact rows (units of the joint space)
    ratio = np.diag(M)[:nl].mean() / np.diag(M)[nl:nl + c].mean()
    assert 0.5e4 < ratio < 2e4
    r = solve_checked(M, q)
    b = blocks(info, r.z)
    assert (b["limits"] > 0).sum() >= 3        # limits are actually active
    assert (b["normal"][4:] > 0).all()        # the fingertips push the cube
    v = info["velocity"](r.z)
    assert np.abs(info["J"].T @ v).max() < 1e-12      # joints hold (speeds ~0.2 m/s)
    # same verdict and same post-step velocity without the solver's scaling
    r2 = lemke(M, q, scale=False)
    assert r2.status == "solved"
    assert_lcp_solution(M, q, r2.z)


def test_contact_matrix_structure():
    # the LCP matrix is copositive on the non-negative orthant: z^T M z =
    # z^T G z + mu c_n . lambda >= 0; G (top-left) is PSD
    rng = np.random.default_rng(0)
    M, q, info = three_finger_grasp(u=4, rng=rng, jitter=1.0)
    n = M.shape[0]
    nl, c, u = info["limits"], info["contacts"], info["u"]
    Gpart = M.copy()
    Gpart[nl + c:nl + c + c * u, nl + c + c * u:] = 0.0    # remove N
    Gpart[nl + c + c * u:, :] = 0.0
    Gs = 0.5 * (Gpart + Gpart.T)
    assert np.linalg.eigvalsh(Gs).min() > -1e-9 * np.abs(Gs).max()
    for _ in range(200):
        z = np.abs(rng.normal(size=n))
        assert z @ M @ z >= -1e-9 * np.abs(M).max() * (z @ z)


def test_brute_force_agrees_on_small_contact_problems():
    # n = 12 (a box on an edge, u = 4): all 4096 complementary bases
    rng = np.random.default_rng(1)
    for k in range(6):
        vel = np.r_[rng.normal(0, 0.3, 2), -0.1, rng.normal(0, 1.0, 3)]
        M, q, info = box_on_plane(u=4, mu=rng.uniform(0.1, 1.0), edge=True, vel=vel)
        assert M.shape == (12, 12)
        sols = enumerate_solutions(M, q, tol=1e-10)
        assert sols
        r = solve_checked(M, q)
        # all enumerated solutions give one post-step velocity; so must ours
        v_ref = info["velocity"](sols[0])
        for s in sols[1:]:
            np.testing.assert_allclose(info["velocity"](s), v_ref, atol=1e-9)
        np.testing.assert_allclose(info["velocity"](r.z), v_ref, atol=1e-9)


def test_corpus_every_verdict_correct():
    corpus = contact_corpus(160, seed=3)
    sizes = [M.shape[0] for _, M, _ in corpus]
    assert min(sizes) == 12 and max(sizes) >= 120
    for name, M, q in corpus:
        assert lp_feasible(M, q), name      # Anitescu-Potra LCPs are solvable
        r = lemke(M, q)
        assert r.status == "solved", name
        assert_lcp_solution(M, q, r.z)
        assert not r.retried


def test_separating_contacts_trivial():
    # a box moving away from the plane: q >= 0, no pivot, no impulse
    M, q, info = box_on_plane(u=4, vel=[0, 0, 1.0, 0, 0, 0])
    assert q.min() >= 0
    r = lemke(M, q)
    assert r.status == "solved" and r.pivots == 0 and np.all(r.z == 0)


def test_warm_start_over_time_steps():
    # a sliding, spinning box integrated for 25 steps; each step's basis is
    # handed to the next step
    vel = np.array([0.6, 0.2, 0.0, 0.0, 0.0, 2.0])
    prev = None
    accepted = 0
    for step in range(25):
        M, q, info = box_on_plane(u=8, mu=0.3, vel=vel)
        r = lemke(M, q, warm_start=prev)
        assert r.status == "solved"
        assert_lcp_solution(M, q, r.z)
        cold = lemke(M, q)
        np.testing.assert_allclose(info["velocity"](r.z), info["velocity"](cold.z), atol=1e-10)
        accepted += r.warm_started
        vel = info["velocity"](r.z)
        prev = r
    assert accepted >= 12
    assert np.linalg.norm(vel[:2]) < 0.6       # friction slowed it down


def test_infeasible_contact_like_problem_is_a_ray():
    # two bodies pinned by contradictory unilateral constraints: the same
    # normal used twice with opposite orientations plus a required separation
    body = Body(1.0, np.eye(3) * 0.01, np.zeros(3), np.zeros(6))
    up = Contact(-1, 0, np.zeros(3), np.array([0.0, 0.0, 1.0]), mu=0.0, eps=0.1)
    down = Contact(-1, 0, np.zeros(3), np.array([0.0, 0.0, -1.0]), mu=0.0, eps=0.1)
    M, q, info = contact_lcp([body], [up, down], u=4, gravity=np.zeros(3))
    # n.v >= 0.1 and -n.v >= 0.1 cannot both hold
    assert not lp_feasible(M, q)
    r = lemke(M, q)
    assert r.status == "ray"

"""Reduced-coordinate dynamics (graspsim.rigidbody) against independent computations.

Independent yardsticks: spatial-algebra identities; graspsim.kinematics (forward kinematics and
geometric Jacobians, written separately) for poses, the joint-space inertia (sum of J^T M J), gravity
and external forces (J^T F); finite differences of H for the velocity terms (Lagrange's equations);
the closed-form planar two-link equations in 60-digit arithmetic; Euler's equations for a free body;
momentum conservation.  Round trips ABM(RNEA(qdd)) = qdd on random trees, fixed and floating, with
coupled DOFs.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import graspsim
import graspsim.rigidbody as rb
from graspsim import kinematics as K
from graspsim import spatial
from graspsim.rigidbody import spatial_algebra as sa
from graspsim.rigidbody.builders import random_rotation
from graspsim.rigidbody.reference import two_link_accelerations

ROOT = Path(__file__).resolve().parent.parent
FD_METHODS = (rb.forward_dynamics_abm, rb.forward_dynamics_modified_abm, rb.forward_dynamics_crb)


@pytest.fixture(scope="module")
def puma():
    return graspsim.load_robot(ROOT / "robots/puma560.yaml")


@pytest.fixture(scope="module")
def barrett():
    return graspsim.load_robot(ROOT / "robots/barrett.yaml")


def random_pose(rng) -> np.ndarray:
    X = np.eye(4)
    X[:3, :3] = random_rotation(rng)
    X[:3, 3] = rng.normal(size=3)
    return X


def random_state(model, rng, X_WB=None):
    q = rng.uniform(-np.pi, np.pi, model.nq)
    if model.floating:
        X = random_pose(rng) if X_WB is None else X_WB
        q[:3] = X[:3, 3]
        q[3:7] = spatial.matrix_to_quat(X[:3, :3])
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def test_kernels_compile_lazily_not_at_import():
    code = ("import graspsim.rigidbody as rb; from graspsim.rigidbody import _kernels as K; "
            "print(sum(len(f.signatures) for f in (K.rnea, K.crba, K.fd_abm, K.fd_crb)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


# -- spatial algebra ---------------------------------------------------------------------------

def test_spatial_algebra_identities():
    rng = np.random.default_rng(0)
    for _ in range(20):
        T = random_pose(rng)
        X = sa.plucker_from_pose(T)
        m, f = rng.normal(size=6), rng.normal(size=6)
        assert np.allclose(sa.plucker_inverse(X) @ X, np.eye(6), atol=1e-13)
        assert np.allclose(sa.pose_from_plucker(X), T, atol=1e-13)
        # power is frame independent: (X* f) . (X m) = f . m
        assert np.isclose((sa.force_transform(X) @ f) @ (X @ m), f @ m, rtol=1e-12)
        assert np.allclose(sa.crf(m), -sa.crm(m).T)
        # X (m1 x m2) = (X m1) x (X m2)
        m2 = rng.normal(size=6)
        assert np.allclose(X @ (sa.crm(m) @ m2), sa.crm(X @ m) @ (X @ m2), atol=1e-12)
        # inertia transform equals re-expressing mass, com and rotational inertia in the other frame
        mass, c, Ic = 2.3, rng.normal(size=3), np.diag(rng.uniform(0.1, 1, 3))
        I_B = sa.spatial_inertia(mass, c, Ic)
        R, p = T[:3, :3], T[:3, 3]                    # pose of B in A
        I_A = sa.spatial_inertia(mass, R @ c + p, R @ Ic @ R.T)
        assert np.allclose(sa.transform_inertia(X, I_B), I_A, atol=1e-12)
        assert np.allclose(sa.inertia_com(I_A)[1], R @ c + p)


# -- kinematics and the joint-space inertia against graspsim.kinematics ------------------------

def _com_jacobian_terms(robot, model, q_tree, X_WB):
    """(H, G) from graspsim.kinematics Jacobians: H = sum m Jv^T Jv + Jw^T I_W Jw, G = -sum m Jv^T g."""
    qj = model.joints_from_tree_q(q_tree)
    X_links = K.forward_kinematics(robot, qj, X_WB)
    cols = model.joint_column
    n = model.nv
    H, G = np.zeros((n, n)), np.zeros(n)
    for li, link in enumerate(robot.links):
        if li == robot.base_link:
            continue
        R = X_links[li][:3, :3]
        c = X_links[li] @ np.append(link.inertial.com, 1.0)
        J = K.jacobian(robot, qj, X_WB, li, c[:3], wrt="joints", X_links=X_links)[:, cols >= 0]
        Jv, Jw = J[:3], J[3:]
        H += link.inertial.mass * Jv.T @ Jv + Jw.T @ (R @ link.inertial.inertia @ R.T) @ Jw
        G -= link.inertial.mass * Jv.T @ model.gravity
    return H, G


@pytest.mark.parametrize("name", ["puma", "barrett", "tree0", "tree1"])
def test_poses_inertia_and_gravity_match_kinematics(name, request):
    rng = np.random.default_rng(5)
    robot = request.getfixturevalue(name) if name in ("puma", "barrett") else \
        rb.random_tree(10, np.random.default_rng(int(name[-1])))
    X_WB = random_pose(rng)
    model = rb.from_robot(robot, X_WB=X_WB)
    for _ in range(5):
        q, _, _ = random_state(model, rng)
        qj = model.joints_from_tree_q(q)
        assert np.allclose(rb.link_poses(model, q), K.forward_kinematics(robot, qj, X_WB), atol=1e-12)
        H_ref, G_ref = _com_jacobian_terms(robot, model, q, X_WB)
        H = rb.crba(model, q)
        scale = np.abs(H_ref).max()
        assert np.abs(H - H_ref).max() <= 1e-12 * scale
        assert np.allclose(rb.gravity_forces(model, q), G_ref, rtol=1e-10, atol=1e-12 * np.abs(G_ref).max())
        assert np.array_equal(H, H.T)
        assert np.linalg.eigvalsh(H)[0] > 0


def test_external_force_is_jacobian_transpose(puma):
    rng = np.random.default_rng(6)
    model = rb.from_robot(puma)
    for _ in range(5):
        q, qd, qdd = random_state(model, rng)
        link = int(rng.integers(1, len(puma.links)))
        point, force, torque = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
        f_ext = np.zeros((len(puma.links), 6))
        f_ext[link] = rb.wrench_on_link(model, q, link, point, force, torque)
        d = rb.rnea(model, q, qd, qdd, f_ext=f_ext) - rb.rnea(model, q, qd, qdd)
        J = K.jacobian(puma, q, None, link, point, wrt="joints")
        assert np.allclose(d, -(J[:3].T @ force + J[3:].T @ torque), atol=1e-12)
        # the dict form names links
        d2 = rb.rnea(model, q, qd, qdd, f_ext={puma.links[link].name: f_ext[link]}) - rb.rnea(model, q, qd, qdd)
        assert np.allclose(d, d2, atol=1e-14)


@pytest.mark.parametrize("floating", [False, True])
def test_velocity_terms_satisfy_lagrange_equations(floating):
    """c(q, qd) = Hdot qd - 1/2 d/dq (qd^T H qd), both from central differences of H (fixed base).

    For a floating base (quaternion coordinates) the power balance qd . c = 1/2 qd^T Hdot qd is checked.
    """
    rng = np.random.default_rng(7)
    model = rb.from_robot(rb.random_tree(7, np.random.default_rng(3)), floating_base=floating)
    for _ in range(3):
        q, qd, _ = random_state(model, rng)
        z = np.zeros(model.nv)
        c = rb.rnea(model, q, qd, z, gravity=np.zeros(3))
        h = 1e-6
        qdot = rb.configuration_derivative(model, q, qd)
        Hdot = (rb.crba(model, q + h * qdot) - rb.crba(model, q - h * qdot)) / (2 * h)
        assert np.isclose(qd @ c, 0.5 * qd @ Hdot @ qd, rtol=1e-6, atol=1e-7)
        if not floating:
            dKdq = np.array([(qd @ rb.crba(model, q + h * e) @ qd - qd @ rb.crba(model, q - h * e) @ qd) / (2 * h)
                             for e in np.eye(model.nq)])
            assert np.allclose(c, Hdot @ qd - 0.5 * dKdq, rtol=1e-6, atol=1e-6)


def test_planar_two_link_matches_closed_form():
    rng = np.random.default_rng(8)
    lengths, masses, widths = [0.7, 1.3], [2.0, 0.5], [0.1, 0.2]
    model = rb.from_robot(rb.planar_chain(lengths, masses, widths))
    for _ in range(10):
        q, qd, tau = rng.normal(size=2), rng.normal(size=2), rng.normal(size=2) * 5
        ref = np.array([float(a) for a in two_link_accelerations(lengths, masses, widths, q, qd, tau, g=9.81)])
        for f in FD_METHODS:
            assert np.allclose(f(model, q, qd, tau), ref, rtol=1e-13, atol=1e-13)
        assert np.allclose(rb.rnea(model, q, qd, ref), tau, atol=1e-12)


# -- round trips on random trees ---------------------------------------------------------------

@pytest.mark.parametrize("floating", [False, True])
def test_abm_inverts_rnea_on_random_trees(floating):
    """ABM(RNEA(q, qd, qdd)) = qdd to 1e-10 relative; CRBM and modified ABM agree; H is SPD."""
    worst = 0.0
    for seed in range(12):
        rng = np.random.default_rng(100 + seed)
        robot = rb.random_tree(int(rng.integers(2, 16)), rng)
        model = rb.from_robot(robot, floating_base=floating, X_WB=None if floating else random_pose(rng))
        q, qd, qdd = random_state(model, rng)
        f_ext = rng.normal(size=(len(robot.links), 6))
        tau = rb.rnea(model, q, qd, qdd, f_ext=f_ext)
        for f in FD_METHODS:
            err = np.linalg.norm(f(model, q, qd, tau, f_ext=f_ext) - qdd) / np.linalg.norm(qdd)
            worst = max(worst, err)
        H = rb.crba(model, q)
        assert np.array_equal(H, H.T)
        np.linalg.cholesky(H)
        assert np.linalg.eigvalsh(H)[0] > 0
    assert worst < 1e-10


def test_unaligned_axes_give_the_same_dynamics():
    """align_axes only changes internal body frames: results equal those of the unaligned model."""
    rng = np.random.default_rng(9)
    robot = rb.random_tree(9, rng, axis_aligned=0.0)
    a, b = rb.from_robot(robot), rb.from_robot(robot, align_axes=False)
    moving = a.jtype < 2                               # revolute or prismatic bodies
    assert np.all(np.count_nonzero(a.S[moving], axis=1) == 1) and np.all(np.abs(a.S[moving]).max(axis=1) == 1.0)
    assert not np.all(np.count_nonzero(b.S[b.jtype < 2], axis=1) == 1)
    q, qd, tau = random_state(a, rng)
    assert np.allclose(rb.crba(a, q), rb.crba(b, q), atol=1e-12)
    assert np.allclose(rb.forward_dynamics_abm(a, q, qd, tau), rb.forward_dynamics_abm(b, q, qd, tau), atol=1e-10)
    assert np.allclose(rb.link_poses(a, q), rb.link_poses(b, q), atol=1e-13)


# -- DOF space: coupled joints -----------------------------------------------------------------

def test_barrett_dof_space_coupling(barrett):
    rng = np.random.default_rng(10)
    model = rb.from_robot(barrett)
    assert model.nv == 8 and model.nvd == 4
    lim = barrett.dof_limits
    for _ in range(5):
        q = rng.uniform(lim[:, 0], lim[:, 1])
        qd, qdd = rng.normal(size=4), rng.normal(size=4)
        # the DOF-space inertia equals sum J^T M J with graspsim.kinematics' DOF Jacobians
        qj = K.joint_values(barrett, q)
        X_links = K.forward_kinematics(barrett, qj)
        H_ref = np.zeros((4, 4))
        for li, link in enumerate(barrett.links[1:], start=1):
            R = X_links[li][:3, :3]
            c = (X_links[li] @ np.append(link.inertial.com, 1.0))[:3]
            J = K.jacobian(barrett, qj, None, li, c, wrt="dofs", X_links=X_links)
            H_ref += link.inertial.mass * J[:3].T @ J[:3] + J[3:].T @ (R @ link.inertial.inertia @ R.T) @ J[3:]
        assert np.allclose(rb.mass_matrix(model, q), H_ref, rtol=1e-12, atol=1e-14)
        tau = rb.inverse_dynamics(model, q, qd, qdd)
        qt, qdt, qddt = rb.tree_coordinates(model, q, qd, qdd)
        assert np.allclose(qt, qj)
        # power: tau_dof . qd_dof == tau_tree . qd_tree
        assert np.isclose(tau @ qd, rb.rnea(model, qt, qdt, qddt) @ qdt, rtol=1e-12)
        for method in ("abm", "modified_abm", "crb"):
            assert np.allclose(rb.forward_dynamics(model, q, qd, tau, method=method), qdd, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("floating", [False, True])
def test_dof_space_round_trip_random_coupled_trees(floating):
    for seed in range(6):
        rng = np.random.default_rng(200 + seed)
        model = rb.from_robot(rb.random_tree(10, rng, coupled=0.5), floating_base=floating)
        q = rng.normal(size=model.nqd)
        if floating:
            q[3:7] /= np.linalg.norm(q[3:7])
        qd, qdd = rng.normal(size=model.nvd), rng.normal(size=model.nvd)
        tau = rb.inverse_dynamics(model, q, qd, qdd)
        for method in ("abm", "modified_abm", "crb"):
            out = rb.forward_dynamics(model, q, qd, tau, method=method)
            assert np.linalg.norm(out - qdd) <= 1e-10 * np.linalg.norm(qdd)
        Hd = rb.mass_matrix(model, q)
        assert np.allclose(Hd, Hd.T, atol=1e-13 * np.abs(Hd).max()) and np.linalg.eigvalsh(Hd)[0] > 0


# -- floating base -----------------------------------------------------------------------------

def test_single_free_body_follows_euler_equations():
    rng = np.random.default_rng(11)
    robot = rb.make_robot("brick", [("b", 2.5, np.array([0.1, -0.05, 0.2]), np.diag([0.03, 0.05, 0.07]))], [], [])
    model = rb.from_robot(robot, floating_base=True)
    for _ in range(5):
        q, v, _ = random_state(model, rng)
        R = spatial.quat_to_matrix(q[3:7])
        a = rb.forward_dynamics_abm(model, q, v, np.zeros(6))
        # independent: Newton-Euler about the com in body axes
        m, c, Ic = 2.5, np.array([0.1, -0.05, 0.2]), np.diag([0.03, 0.05, 0.07])
        w, vo = v[:3], v[3:]
        wdot = np.linalg.solve(Ic, -np.cross(w, Ic @ w))
        # classical acceleration of the com = g; a_c = a_o + wdot x c + w x (w x c); spatial a_lin = a_o - w x vo
        a_o = R.T @ model.gravity - np.cross(wdot, c) - np.cross(w, np.cross(w, c))
        assert np.allclose(a[:3], wdot, atol=1e-12)
        assert np.allclose(a[3:], a_o - np.cross(w, vo), atol=1e-12)
        assert np.allclose(rb.forward_dynamics_crb(model, q, v, np.zeros(6)), a, atol=1e-12)


def test_floating_tree_conserves_momentum_and_free_floating_rnea():
    rng = np.random.default_rng(12)
    model = rb.from_robot(rb.random_tree(8, rng), floating_base=True, gravity=np.zeros(3))
    q, v, _ = random_state(model, rng)
    tau = np.zeros(model.nv)
    tau[6:] = rng.normal(size=model.nv - 6)           # internal joint torques do not change momentum

    def h_at(t):
        a = rb.forward_dynamics_abm(model, q, v, tau)
        return rb.spatial_momentum(model, q + t * rb.configuration_derivative(model, q, v), v + t * a)

    dt = 1e-6
    dh = (h_at(dt) - h_at(-dt)) / (2 * dt)
    assert np.abs(dh).max() < 1e-6 * max(1.0, np.abs(rb.spatial_momentum(model, q, v)).max())
    # free-floating inverse dynamics gives the base acceleration the ABM finds with no base wrench
    a = rb.forward_dynamics_abm(model, q, v, tau)
    a_b, tau_j = rb.rnea_free_floating(model, q, v, a[6:])
    assert np.allclose(a_b, a[:6], atol=1e-10)
    assert np.allclose(tau_j, tau[6:], atol=1e-10)


# -- control helpers ---------------------------------------------------------------------------

def test_computed_torque_and_feedforward(puma):
    rng = np.random.default_rng(13)
    model = rb.from_robot(puma)
    q, qd = rng.normal(size=6), rng.normal(size=6)
    q_des, qd_des, qdd_des = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6)
    kp, kd = 100.0, 20.0
    tau = rb.computed_torque(model, q, qd, q_des, qd_des, qdd_des, kp, kd)
    acc = rb.forward_dynamics(model, q, qd, tau)
    assert np.allclose(acc, qdd_des + kd * (qd_des - qd) + kp * (q_des - q), rtol=1e-10, atol=1e-10)
    # on the desired trajectory the feed-forward alone produces the desired acceleration
    ff = rb.feedforward_torque(model, q_des, qd_des, qdd_des)
    assert np.allclose(rb.forward_dynamics(model, q_des, qd_des, ff), qdd_des, atol=1e-10)

"""Kinematics against independent computations: DH products, finite differences, IK round trips,
and mesh mass properties against closed-form inertia."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim import kinematics as K

ROOT = Path(__file__).resolve().parent.parent
PUMA_DH = [(0, 0, 90), (0, 0.4318, 0), (0.149, 0.0203, -90), (0.4318, 0, 90), (0, 0, -90), (0, 0, 0)]


def dh_product(q):
    """Puma 560 flange pose as a product of standard DH matrices, written out here independently."""
    T = np.eye(4)
    for qi, (d, a, alpha) in zip(q, PUMA_DH):
        al = np.radians(alpha)
        ct, st, ca, sa = np.cos(qi), np.sin(qi), np.cos(al), np.sin(al)
        Rz = np.array([[ct, -st, 0, 0], [st, ct, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
        Tz = np.eye(4); Tz[2, 3] = d
        Tx = np.eye(4); Tx[0, 3] = a
        Rx = np.array([[1, 0, 0, 0], [0, ca, -sa, 0], [0, sa, ca, 0], [0, 0, 0, 1]])
        T = T @ Rz @ Tz @ Tx @ Rx
    return T


@pytest.fixture(scope="module")
def puma():
    return graspsim.load_robot(ROOT / "robots/puma560.yaml")


@pytest.fixture(scope="module")
def barrett():
    return graspsim.load_robot(ROOT / "robots/barrett.yaml")


def random_dofs(robot, rng):
    lim = robot.dof_limits
    return rng.uniform(lim[:, 0], lim[:, 1])


def test_puma_fk_matches_dh_product(puma):
    rng = np.random.default_rng(1)
    for _ in range(50):
        q = random_dofs(puma, rng)
        X = K.forward_kinematics(puma, K.joint_values(puma, q))
        assert np.allclose(X[puma.link_index["link6"]], dh_product(q), atol=1e-13)
    # the textbook zero pose (Corke's p560 with d3 = 0.149): flange at (0.4521, -0.149, 0.4318)
    X0 = K.forward_kinematics(puma, np.zeros(6))[-1]
    assert np.allclose(X0[:3, 3], [0.4521, -0.149, 0.4318], atol=1e-12)


def test_compiled_link_poses_match_the_dh_product_and_numpy(puma, barrett):
    """The compiled forward kinematics (the static auto-grasp's): the Puma's flange against the DH
    product to 1e-13, every link of the Puma, the Barrett and the parallel jaw (a prismatic DOF)
    against the numpy forward_kinematics to 1e-14 (rounding), at random DOFs and base poses."""
    jaw = graspsim.load_robot(ROOT / "robots/parallel_jaw.yaml")
    rng = np.random.default_rng(5)
    for _ in range(30):
        q = random_dofs(puma, rng)
        assert np.allclose(K.link_poses(puma, K.joint_values(puma, q))[puma.link_index["link6"]], dh_product(q),
                           atol=1e-13)
        for robot in (puma, barrett, jaw):
            X_WB = np.eye(4)
            X_WB[:3, :3] = graspsim.spatial.rot_axis_angle(rng.normal(size=3), rng.uniform(-3, 3))
            X_WB[:3, 3] = rng.normal(size=3)
            jq = K.joint_values(robot, random_dofs(robot, rng))
            assert np.abs(K.link_poses(robot, jq, X_WB) - K.forward_kinematics(robot, jq, X_WB)).max() < 1e-14
    with pytest.raises(ValueError, match="6 joint values expected"):
        K.link_poses(puma, np.zeros(5))


@pytest.mark.parametrize("robot_name", ["puma", "barrett"])
def test_jacobian_matches_finite_differences(robot_name, request):
    robot = request.getfixturevalue(robot_name)
    rng = np.random.default_rng(2)
    X_WB = np.eye(4)
    X_WB[:3, 3] = [0.1, -0.2, 0.3]
    for _ in range(10):
        x = random_dofs(robot, rng)
        link = int(rng.integers(1, len(robot.links)))
        X = K.forward_kinematics(robot, K.joint_values(robot, x), X_WB)
        p_L = rng.normal(size=3) * 0.05          # a point fixed on the link
        p_W = X[link][:3, :3] @ p_L + X[link][:3, 3]
        J = K.jacobian(robot, K.joint_values(robot, x), X_WB, link, p_W)
        eps = 1e-7
        Jfd = np.zeros_like(J)
        for k in range(len(x)):
            xp, xm = x.copy(), x.copy()
            xp[k] += eps
            xm[k] -= eps
            Xp = K.forward_kinematics(robot, K.joint_values(robot, xp), X_WB)[link]
            Xm = K.forward_kinematics(robot, K.joint_values(robot, xm), X_WB)[link]
            Jfd[:3, k] = ((Xp[:3, :3] @ p_L + Xp[:3, 3]) - (Xm[:3, :3] @ p_L + Xm[:3, 3])) / (2 * eps)
            dR = (Xp[:3, :3] - Xm[:3, :3]) / (2 * eps) @ X[link][:3, :3].T   # = skew(omega)
            Jfd[3:, k] = [dR[2, 1], dR[0, 2], dR[1, 0]]
        # central differences with eps = 1e-7 are accurate to ~1e-8 here; require 1e-6
        assert np.max(np.abs(J - Jfd)) < 1e-6


def test_ik_round_trips_on_random_reachable_poses(puma):
    rng = np.random.default_rng(3)
    lim = puma.dof_limits
    n_ok = 0
    for _ in range(20):
        # stay 10 deg inside the limits so the pose is reachable without touching them
        q = rng.uniform(lim[:, 0] + 0.17, lim[:, 1] - 0.17)
        target = K.forward_kinematics(puma, K.joint_values(puma, q))[-1]
        start = np.clip(q + rng.normal(scale=0.3, size=6), lim[:, 0], lim[:, 1])
        res = K.inverse_kinematics(puma, target, dofs0=start)
        assert res.success, (res.position_error, res.rotation_error)
        got = K.forward_kinematics(puma, K.joint_values(puma, res.dofs))[-1]
        assert np.linalg.norm(got[:3, 3] - target[:3, 3]) < 1e-6
        assert np.linalg.norm(got[:3, :3] - target[:3, :3]) < 1e-5
        assert np.all(res.dofs >= lim[:, 0] - 1e-12) and np.all(res.dofs <= lim[:, 1] + 1e-12)
        n_ok += 1
    assert n_ok == 20


def test_ik_respects_limits_for_unreachable_pose(puma):
    target = np.eye(4)
    target[:3, 3] = [3.0, 0, 0]  # 3 m away: beyond the arm's ~0.9 m reach
    res = K.inverse_kinematics(puma, target, restarts=2)
    assert not res.success and res.position_error > 1.5
    lim = puma.dof_limits
    assert np.all(res.dofs >= lim[:, 0]) and np.all(res.dofs <= lim[:, 1])


def test_mesh_inertia_matches_closed_form():
    # cube mesh: exact up to STL's float32 vertices (relative error ~6e-8): I = m a^2 / 6
    cube = graspsim.load_object(ROOT / "objects/cube.yaml")
    m, a = 0.2, 0.06
    assert np.allclose(cube.inertial.inertia, np.eye(3) * m * a * a / 6, rtol=1e-6, atol=1e-15)
    assert np.allclose(cube.inertial.com, 0, atol=1e-15)
    # sphere mesh (icosphere, 1280 faces, radius 40 mm): the polyhedron's mean radius is ~0.3% short,
    # so with the mass fixed its inertia is ~0.5% below 2/5 m r^2; allow 1%
    sph = graspsim.load_object(ROOT / "objects/sphere.yaml")
    I_sph = 0.4 * 0.15 * 0.04 ** 2
    assert np.allclose(np.diag(sph.inertial.inertia), I_sph, rtol=1e-2)
    assert np.diag(sph.inertial.inertia).max() < I_sph  # inscribed polyhedron: always below
    # can mesh (48-gon cylinder r 33 mm, h 122 mm): the 48-gon's second moment is 0.6% below the
    # circle's (factor (sin(2pi/n) (2 + cos(2pi/n)) / 3) / (2pi/n) ~ 0.9943), so allow 1%
    can = graspsim.load_object(ROOT / "objects/can.yaml")
    m, r, h = 0.37, 0.033, 0.122
    Ixx = m * (3 * r * r + h * h) / 12
    Izz = m * r * r / 2
    I = can.inertial.inertia
    assert I[2, 2] == pytest.approx(Izz, rel=1e-2) and I[0, 0] == pytest.approx(Ixx, rel=1e-2)
    assert np.allclose(I, np.diag(np.diag(I)), atol=1e-12)


def test_primitive_inertias_exact():
    from graspsim.geometry import make_primitive
    # cylinder and capsule closed forms, computed independently; density 1000
    r, h, rho = 0.02, 0.1, 1000.0
    m, c, I = make_primitive("cylinder", (r, h)).mass_properties(density=rho)
    mass = rho * np.pi * r * r * h
    assert m == pytest.approx(mass)
    assert np.allclose(np.diag(I), [mass * (3 * r * r + h * h) / 12] * 2 + [mass * r * r / 2])
    m, c, I = make_primitive("capsule", (r, h)).mass_properties(density=rho)
    mc, ms = rho * np.pi * r * r * h, rho * 4 / 3 * np.pi * r ** 3
    assert m == pytest.approx(mc + ms)
    izz = mc * r * r / 2 + ms * 2 * r * r / 5
    # transverse: cylinder + a sphere split at h/2: hemisphere (2/5 m r^2 about its face axis) moved by h/2
    ixx = mc * (3 * r * r + h * h) / 12 + 2 * ((ms / 2) * 2 * r * r / 5 + (ms / 2) * (h / 2) ** 2 + (ms / 2) * h * 3 * r / 8)
    assert I[2, 2] == pytest.approx(izz, rel=1e-12)
    assert I[0, 0] == pytest.approx(ixx, rel=1e-12)

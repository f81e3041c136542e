"""Computed-torque feed-forward in the time-stepping simulator (issue 10, "Use it"), and a short
check of the maximal-coordinate stepper against the articulated-body method.

Worlds are written at run time to a temp dir: the Puma with the Barrett hand mounted as in
``worlds/puma_barrett_handset.yaml`` (no objects), and a Puma-only world from a copy of
``robots/puma560.yaml`` without joint limits.  The full studies are ``benchmarks/feedforward_tracking.py``
and ``benchmarks/validate_stepper.py`` (results in ``docs/stepper_validation.md``).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import graspsim
import graspsim.rigidbody as rb
from graspsim import kinematics as K
from graspsim.control import PDController, quintic
from graspsim.control.feedforward import ComputedTorqueFeedforward, computed_torque_pd, lumped_robot
from graspsim.dynamics import Simulator

ROOT = Path(__file__).resolve().parent.parent
X_LE = np.eye(4)
X_LE[2, 3] = 0.136          # tool point on the flange axis: the palm's back face


@pytest.fixture(scope="module")
def hand_world(tmp_path_factory):
    d = tmp_path_factory.mktemp("ffworld")
    (d / "w.yaml").write_text(f"""world: puma_line
units: {{length: m, angle: deg}}
robots:
  - name: puma
    file: {ROOT / 'robots/puma560.yaml'}
    pose: {{xyz: [0, 0, 0.736]}}
    dofs: {{j1: 0, j2: 48.77, j3: -196.19, j4: 0, j5: -32.58, j6: 0}}
  - name: barrett
    file: {ROOT / 'robots/barrett.yaml'}
    mount: {{robot: puma, link: link6, origin: {{xyz: [0, 0, 0.136]}}}}
    dofs: {{spread: 0, f1: 0, f2: 0, f3: 0}}
""")
    return graspsim.load_world(d / "w.yaml")


def test_lumped_hand_gravity_matches_jacobians(hand_world):
    # the lumped model's gravity torques equal -sum m Jv^T g over the Puma's and the hand's links,
    # with each hand link's Jacobian taken at its com on the flange (the hand is rigid)
    sim = Simulator(hand_world, collisions=False)
    ff = ComputedTorqueFeedforward(sim)
    robot, payload = lumped_robot(sim, 0)
    hand_mass = sum(l.inertial.mass for l in hand_world.description.robots[1].robot.links)
    assert payload[robot.link_index["link6"]] == pytest.approx(hand_mass, rel=1e-12)
    assert payload.sum() == pytest.approx(hand_mass, rel=1e-12)
    puma = hand_world.description.robots[0].robot
    q = sim.dof_values("puma")
    X_links = K.forward_kinematics(puma, K.joint_values(puma, q), hand_world.base_pose(0))
    g = sim.gravity
    tau = np.zeros(6)
    t = sim.table
    X = sim.poses()
    for ri, link_of in ((0, lambda li: li), (1, lambda li: puma.link_index["link6"])):
        for li, b in enumerate(t.robot_links[ri]):
            com = X[b][:3, :3] @ t.com[b] + X[b][:3, 3]
            J = K.jacobian(puma, K.joint_values(puma, q), hand_world.base_pose(0), link_of(li), point_W=com,
                           X_links=X_links)
            tau -= t.mass[b] * J[:3].T @ g
    tau_ff = rb.inverse_dynamics(ff.models[0], q, np.zeros(6), np.zeros(6))
    assert np.allclose(tau_ff, tau, rtol=1e-10, atol=1e-10)
    assert abs(tau[1]) > 50     # the shoulder carries tens of N m: the check is not vacuous


def test_feedforward_holds_the_arm_still(hand_world):
    # exact gravity compensation (hand included): the held arm does not sag at all, PD alone sags ~1.5 mm
    sags = {}
    for name in ("pd", "ff"):
        sim = Simulator(hand_world, dt=0.0025, collisions=False)
        ctl = PDController(sim) if name == "pd" else computed_torque_pd(sim)
        p0 = sim.body_pose("puma/link6")[:3, 3].copy()
        sim.run(0.3, ctl)
        sags[name] = np.linalg.norm(sim.body_pose("puma/link6")[:3, 3] - p0)
    assert sags["pd"] > 5e-4
    assert sags["ff"] < 1e-9


def test_unattached_feedforward_is_inverse_dynamics_of_its_arguments(hand_world):
    sim = Simulator(hand_world, collisions=False)
    ff = ComputedTorqueFeedforward(sim, friction=False)
    rng = np.random.default_rng(3)
    q, qd, qdd = sim.dof_values("puma"), rng.normal(size=6), rng.normal(size=6)
    assert np.array_equal(ff(sim, 0, q, qd, qdd), rb.inverse_dynamics(ff.models[0], q, qd, qdd))
    ff_b = ComputedTorqueFeedforward(sim)
    b = np.array([j.viscous for j in hand_world.description.robots[0].robot.joints])
    assert np.allclose(ff_b(sim, 0, q, qd, qdd) - ff(sim, 0, q, qd, qdd), b * qd, rtol=0, atol=1e-12)


def test_smooth_reference_follows_the_line(hand_world):
    # the spline through the IK samples moves the tool point along the line with the quintic's
    # velocity and acceleration (checked through the Jacobian, Jdot qd by central differences)
    sim = Simulator(hand_world, collisions=False)
    ctl = computed_torque_pd(sim)
    ff = ctl.feedforward
    puma = hand_world.description.robots[0].robot
    X0 = K.forward_kinematics(puma, K.joint_values(puma, sim.dof_values("puma")), hand_world.base_pose(0))[6] @ X_LE
    X1 = X0.copy()
    X1[:3, 3] += [0, 0.2, 0]
    ctl.move_line("puma", X1, duration=1.0, link=6, X_LE=X_LE)
    dp = X1[:3, 3] - X0[:3, 3]

    def tool(q):
        Xl = K.forward_kinematics(puma, K.joint_values(puma, q), hand_world.base_pose(0))
        p = (Xl[6] @ X_LE)[:3, 3]
        return p, K.jacobian(puma, K.joint_values(puma, q), hand_world.base_pose(0), 6, point_W=p, X_links=Xl)

    for t in (0.1234, 0.37, 0.5, 0.81):
        q, qd, qdd = ff.desired(0, t)
        s, ds, dds = quintic(t)
        p, J = tool(q)
        assert np.linalg.norm(p - (X0[:3, 3] + s * dp)) < 1e-6
        assert np.linalg.norm(J[:3] @ qd - ds * dp) < 1e-5 * np.linalg.norm(dp) * 1.875      # measured 2e-7
        e = 1e-5
        Jdot_qd = (tool(q + e * qd)[1][:3] - tool(q - e * qd)[1][:3]) @ qd / (2 * e)
        assert np.linalg.norm(J[:3] @ qdd + Jdot_qd - dds * dp) < 1e-3 * np.linalg.norm(dp) * 5.77   # 1e-4
        assert np.linalg.norm(J[3:] @ qd) < 1e-4     # constant orientation


def _track(world, with_ff, h=0.0025, settle=0.3, duration=1.0):
    sim = Simulator(world, dt=h, collisions=False)
    ctl = computed_torque_pd(sim) if with_ff else PDController(sim)
    puma = world.description.robots[0].robot
    sim.run(settle, ctl)
    q_ref = ctl.trajectories[0](sim.time)[0]
    X0 = K.forward_kinematics(puma, K.joint_values(puma, q_ref), world.base_pose(0))[6] @ X_LE
    X1 = X0.copy()
    X1[:3, 3] += [0, 0.2, 0]
    t0 = sim.time
    ctl.move_line("puma", X1, duration=duration, link=6, X_LE=X_LE)
    err = []
    while sim.time < t0 + duration - 1e-9:
        sim.step(ctl)
        s = quintic((sim.time - t0) / duration)[0]
        p = (sim.body_pose("puma/link6") @ X_LE)[:3, 3]
        err.append(np.linalg.norm(p - (X0[:3, 3] + s * (X1[:3, 3] - X0[:3, 3]))))
    err = np.array(err)
    clipped = ctl.feedforward.clipped_steps if with_ff else {}
    return err.max(), np.sqrt(np.mean(err ** 2)), clipped


def test_puma_line_tracking_ten_times_better_with_feedforward(hand_world):
    # issue 10: Puma (Barrett hand mounted) follows a 0.2 m Cartesian line in 1 s under gravity,
    # h = 2.5 ms; PD + computed-torque feed-forward must beat PD alone by >= 10x (measured ~300x)
    pd_max, pd_rms, _ = _track(hand_world, False)
    ff_max, ff_rms, clipped = _track(hand_world, True)
    assert pd_max > 1e-3                       # PD alone: gravity sag plus the 2h reference lag
    assert pd_max / ff_max >= 10 and pd_rms / ff_rms >= 10
    assert ff_max < 5e-5                       # measured 8 um
    assert not clipped


# --------------------------------------------------------------------------- stepper vs ABM
def _puma_fall_world(tmp: Path, friction=True):
    txt = re.sub(r",\s*limits:\s*\[[^\]]*\]", "", (ROOT / "robots/puma560.yaml").read_text())
    if not friction:
        txt = re.sub(r",\s*friction:\s*\{[^}]*\}", "", txt)
    (tmp / "puma.yaml").write_text(txt)
    (tmp / "w.yaml").write_text("""world: puma_fall
units: {length: m, angle: deg}
robots:
  - {name: puma, file: puma.yaml, pose: {xyz: [0, 0, 0.67]}, dofs: {j1: 10, j2: 30, j3: -120, j4: 20, j5: -40, j6: 10}}
""")
    return graspsim.load_world(tmp / "w.yaml")


def test_stepper_converges_to_abm_at_first_order(tmp_path):
    # the unactuated Puma (joint friction as in the file, no limits) falls 0.4 s; the stepper's
    # joint angles approach the ABM + DOP853 solution with order ~1 (0.77 for 5 -> 2.5 ms over 1 s)
    w = _puma_fall_world(tmp_path)
    inst = w.description.robots[0]
    model = rb.from_robot(inst.robot, X_WB=w.base_pose(0), gravity=w.description.gravity)
    b = np.array([j.viscous for j in inst.robot.joints])
    f = lambda t, y: np.concatenate([y[6:], rb.forward_dynamics(model, y[:6], y[6:], -b * y[6:], method="abm")])
    sol = solve_ivp(f, (0, 0.4), np.concatenate([inst.initial_dofs, np.zeros(6)]), method="DOP853",
                    rtol=1e-11, atol=1e-11, dense_output=True)
    errs = []
    for h in (0.005, 0.0025):
        sim = Simulator(w, dt=h, collisions=False)
        e = 0.0
        for _ in range(int(round(0.4 / h))):
            sim.step(None)
            e = max(e, np.abs(sim.dof_values("puma") - sol.sol(sim.time)[:6]).max())
        errs.append(e)
    order = np.log(errs[0] / errs[1]) / np.log(2)
    assert 0.7 < order < 1.3
    assert errs[1] < 0.05                        # rad, after 0.4 s of a fall through ~50 deg

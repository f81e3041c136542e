"""Control and auto-grasp: trajectories, static and dynamic auto-grasp, breakaway, lift, arm holding."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim import kinematics as K
from graspsim.control import (JointTrajectory, PDController, TrajectoryError, cartesian_line, dynamic_auto_grasp,
                              joint_trajectory, lift_test, quintic, static_auto_grasp)
from graspsim.dynamics import Simulator

ROOT = Path(__file__).resolve().parent.parent


def test_quintic_is_smooth_and_rests_at_both_ends():
    x = np.linspace(0, 1, 2001)
    s, ds, dds = quintic(x)
    assert s[0] == 0 and s[-1] == 1 and ds[0] == ds[-1] == 0 and dds[0] == dds[-1] == 0
    # the derivatives are the derivatives (central differences, O(dx^2) = 2.5e-7)
    assert np.allclose(np.gradient(s, x)[1:-1], ds[1:-1], atol=1e-5)
    assert np.allclose(np.gradient(ds, x)[1:-1], dds[1:-1], atol=1e-4)
    assert ds.max() == pytest.approx(1.875)   # peak speed used to pick durations


def test_joint_trajectory_duration_follows_speed_and_limits_are_reported():
    lim = np.array([[0, 2.0], [-1, 1]])
    tr = joint_trajectory([0, 0], [1.0, 0.5], lim, [0.5, 1.0])
    assert tr.duration == pytest.approx(1.875 * 2.0)      # the slowest DOF (1 rad at 0.5 rad/s) sets T
    q, qd, _ = tr(tr.duration / 2)
    assert qd[0] == pytest.approx(0.5)                     # peak = 1.875 dq / T = speed
    with pytest.raises(TrajectoryError, match="outside the joint limits"):
        joint_trajectory([0, 0], [2.5, 0], lim, [1, 1], names=["a", "b"])


def test_trajectory_position_is_the_first_of_its_references():
    """``position(t)`` (the auto-grasp's settle test asks it every step) is ``tr(t)[0]``, bit for bit,
    before, inside and after a quintic move, along samples, and for a zero-length move."""
    lim = np.array([[-3.0, 3.0]] * 3)
    moves = [joint_trajectory([0.1, -0.2, 0.3], [1.3, 0.4, -0.7], lim, [0.7, 1.1, 0.3], t0=0.25),
             JointTrajectory(0.0, 0.6, np.zeros(3), np.ones(3), np.array([0.0, 0.2, 0.6]),
                             np.array([[0, 0, 0], [0.5, -0.5, 1], [1.0, 1, 1]])),
             JointTrajectory(0.5, 0.0, np.zeros(3), np.array([0.3, 0.2, 0.1]))]
    for tr in moves:
        for t in np.linspace(-0.1, tr.t_end + 0.2, 397).tolist():
            assert np.array_equal(tr.position(t), tr(t)[0])


def test_cartesian_line_is_straight():
    puma = graspsim.load_robot(ROOT / "robots/puma560.yaml")
    q0 = np.radians([0, 48.77, -196.19, 0, -32.58, 0])
    X0 = K.forward_kinematics(puma, K.joint_values(puma, q0))[-1]
    X1 = X0.copy()
    X1[:3, 3] += [0.05, 0.1, 0.08]
    tr = cartesian_line(puma, q0, X1, duration=1.0, dt=0.02)
    dev = []
    for q in tr.samples_q:
        p = K.forward_kinematics(puma, K.joint_values(puma, q))[-1][:3, 3]
        d = p - X0[:3, 3]
        u = (X1[:3, 3] - X0[:3, 3]) / np.linalg.norm(X1[:3, 3] - X0[:3, 3])
        dev.append(np.linalg.norm(d - (d @ u) * u))
    assert max(dev) < 1e-6     # the IK tolerance is 1e-7 m per sample


def test_static_auto_grasp_stops_each_finger_at_contact_within_threshold():
    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    r = static_auto_grasp(w, "barrett")
    assert r.stopped_by == {"spread": "not moving", "f1": "contact", "f2": "contact", "f3": "contact"}
    gc = r.grasp_contacts
    assert len(gc) >= 3
    assert np.all(gc.separation > -1e-6) and np.all(gc.separation <= 1e-4 * (1 + 1e-9))   # (0, threshold]
    touching = {n.split("/")[1][:2] for n in gc.links}
    assert touching == {"f1", "f2", "f3"}
    assert r.quality.force_closure and r.quality.epsilon > 0.05
    # the world holds the final pose: the same analysis from scratch agrees
    q2, _ = graspsim.grasp.evaluate_grasp(w, "barrett", "mug")
    assert q2.epsilon == pytest.approx(r.quality.epsilon, rel=1e-9)


def test_breakaway_proximal_link_blocked_distal_keeps_closing():
    # a small bar stops the thumb's proximal link only; like the Barrett clutch, its distal closes on
    w = graspsim.load_world(ROOT / "tests/models/breakaway.yaml")
    r = static_auto_grasp(w, "barrett")
    assert "f3" in r.broke_away
    hand = w.robots["barrett"].description
    jp, jd = hand.joint_index["f3_prox"], hand.joint_index["f3_dist"]
    coupled_distal = (r.joint_values[jp] - np.radians(5)) / 3 + np.radians(40)
    assert r.joint_values[jd] > coupled_distal + np.radians(5)      # the distal went on past the coupling
    # the proximal link rests on the bar within the contact threshold
    c = r.contacts
    prox = w.table.index["barrett/f3_prox"]
    sep = c.separation[(c.body_a == prox) | (c.body_b == prox)]
    assert len(sep) and np.all(sep > -1e-6) and np.all(sep <= 1e-4 * (1 + 1e-9))
    # the world keeps the decoupled joint values
    assert np.allclose(w.robots["barrett"].joint_values, r.joint_values)


def test_puma_holds_its_pose_under_gravity_with_small_steady_state_error():
    w = graspsim.load_world(ROOT / "worlds/puma_barrett_handset.yaml")
    sim = Simulator(w)
    ctl = PDController(sim)
    q0 = sim.dof_values("puma").copy()
    sim.run(1.0, ctl)
    err = np.degrees(np.abs(sim.dof_values("puma") - q0))
    # the shoulder carries the most gravity torque; Kp = 2e4 N m/rad keeps it to a fraction of a degree
    assert err.max() < 0.5
    assert np.abs(sim.dof_velocities("puma")).max() < 1e-3


def test_dynamic_auto_grasp_and_lift_of_the_mug():
    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    r = dynamic_auto_grasp(w, "barrett", timeout=2.0)
    assert r.settled
    assert r.quality is not None and r.quality.force_closure
    lift = lift_test(r, height=0.1, duration=1.0, hold=0.5)
    assert lift.held and not lift.dropped
    assert lift.hand_rise == pytest.approx(0.1, abs=1e-9)
    assert lift.lifted == pytest.approx(0.1, abs=2e-3)
    assert lift.slip < 2e-3


def test_dynamic_open_hand_drives_the_closing_dofs_to_their_open_limits():
    """After a dynamic grasp of the mug, opening the hand sends each DOF with a closing direction
    (the sign of its default velocity) back to its opening limit and leaves any other DOF where it
    is; the PD drives (kp 100 N m/rad, no load once the fingers leave the mug) settle to within
    0.5 deg in 2 s of simulated time."""
    from graspsim.control import dynamic_open_hand

    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    r = dynamic_auto_grasp(w, "barrett", timeout=2.0)
    sim = r.sim
    robot = w.description.robots[w.description.robot_index["barrett"]].robot
    before = sim.dof_values("barrett").copy()
    ctl = dynamic_open_hand(sim, "barrett")
    sim.run(2.0, ctl)
    q = sim.dof_values("barrett")
    for k, d in enumerate(robot.dofs):
        if d.velocity > 0:
            expect = d.limits[0]
        elif d.velocity < 0:
            expect = d.limits[1]
        else:
            expect = before[k]
        assert q[k] == pytest.approx(expect, abs=np.radians(0.5)), d.name
    assert any(d.velocity != 0 for d in robot.dofs)


def test_static_grasp_leaves_the_closing_command_for_the_drives():
    """After a static auto-grasp the world's drive targets are the closing command (each closing
    DOF at its closing limit, the spread where it is), and a new controller holds them, so
    dynamics started from the grasp keeps squeezing; setting DOFs by hand clears them and the
    drives hold the new values."""
    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    r = static_auto_grasp(w, "barrett")
    hand = w.robots["barrett"]
    lim = hand.dof_limits
    expect = np.array([r.dofs[0], lim[1, 1], lim[2, 1], lim[3, 1]])     # velocity > 0: upper limits
    assert np.array_equal(w.state.drive_targets[hand.index], expect)
    sim = Simulator(w)
    sl = sim.ds.robot_slices[hand.index]
    assert np.array_equal(PDController(sim).command(sim).q_ref[sl], expect)
    # a saved state carries them; set_dofs clears them
    saved = w.save_state()
    hand.set_dofs({"f1": 0.1})
    assert w.state.drive_targets[hand.index] is None
    sim = Simulator(w)
    assert np.allclose(PDController(sim).command(sim).q_ref[sl], hand.dof_values, atol=1e-12)
    w.restore_state(saved)
    assert np.array_equal(w.state.drive_targets[hand.index], expect)


def test_static_grasp_stops_say_which_link_touched_what():
    """The parallel jaw closes on the 50 mm box: a jaw touches it at an opening of half its width
    (within the contact threshold); the stop names the link and the box."""
    w = graspsim.load_world(ROOT / "worlds/parallel_jaw_box.yaml")
    r = static_auto_grasp(w, "gripper")
    s = r.stops["opening"]
    assert s.reason == "contact" and s.link in ("left", "right") and s.touched == ("box",)
    assert 0.025 < s.value <= 0.025 + 1e-4
    assert r.dofs[0] == s.value


def test_sync_world_keeps_a_broken_away_clutch_where_the_simulation_has_it():
    """After a static grasp whose clutches broke away, a simulation presses on and ``sync_world``
    writes it back: the world's hand joints equal the simulator's (the proximal joints as overrides,
    not the coupled angle), so the world draws the fingers where they are (they were 0.67 off)."""
    w = graspsim.load_world(ROOT / "worlds/puma_barrett_handset.yaml")
    r = static_auto_grasp(w, "barrett")
    assert set(r.broke_away) == {"f1", "f2", "f3"}
    sim = Simulator(w, dt=0.0025)
    from graspsim.control import start_dynamic_grasp

    sim.run(0.05, start_dynamic_grasp(sim, "barrett"))
    sl = sim.ds.robot_slices[1]
    assert sim.state.broken[sl].sum() == 3
    sim.sync_world()
    mine = sim.js.robot == 1
    q_sim = np.zeros(len(w.robots["barrett"].description.joints))
    q_sim[sim.js.local[mine]] = sim.state.joint_q[mine]
    np.testing.assert_allclose(w.robots["barrett"].joint_values, q_sim, rtol=0, atol=1e-12)
    # link poses agree up to the simulation's joint-constraint drift (maximal coordinates)
    fingers = [i for i, n in enumerate(w.table.names) if n.startswith("barrett/f")]
    assert np.abs(sim.poses()[fingers] - w.body_poses()[fingers]).max() < 1e-2

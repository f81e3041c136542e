"""The imported Franka hand (robots/panda_hand.yaml, the Panda URDF of pybullet_data) grasps the
shipped 6 cm, 0.2 kg wooden cube under dynamics and lifts it 5 cm (worlds/panda_hand_cube.yaml):
contacts on both fingers, the squeeze and the load share against statics, the rise against the
commanded one, and force closure of the final contacts three ways (the dynamic grasp's verdict,
``graspsim.grasp.analyze`` on the same contacts, and a linear program written here).

Why the cube and not the mug: the mug's body is 80 mm across, exactly the Panda's full opening
(2 x 40 mm), so the fingers cannot pass around it; a pinch on the 12 mm handle leaves gravity's
torque about the pinch axis to torsional friction alone and the mug swings out of it."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pybullet_data  # noqa: F401  (the test extra installs pybullet for its data)

import graspsim
from graspsim import control, grasp
from graspsim.grasp.objects import evaluate_grasp

ROOT = Path(__file__).resolve().parent.parent
LEFT, RIGHT = "panda_hand/panda_leftfinger", "panda_hand/panda_rightfinger"
G = 9.81


@pytest.fixture(scope="module")
def lifted():
    """(world, grasp result, forces by finger (and the table's) after the grasp, lift result, forces
    after the lift)."""
    w = graspsim.load_world(ROOT / "worlds" / "panda_hand_cube.yaml")
    r = control.dynamic_auto_grasp(w, "panda_hand", obj="cube")
    ri, io = w.description.robot_index["panda_hand"], r.sim.table.index["cube"]
    f_grasp = _by_finger(control.dynamic._snapshot(r.sim, ri, io))
    f_grasp["table"] = _table_force(r.sim)
    lift = control.lift_test(r, height=0.05)
    f_lift = _by_finger(control.dynamic._snapshot(r.sim, ri, io))
    return w, r, f_grasp, lift, f_lift


def _table_force(sim) -> np.ndarray:
    """The table's contact force on the cube (N, world frame)."""
    c, F, names = sim.contacts, sim.contact_forces, sim.table.names
    cube = sim.table.index["cube"]
    out = np.zeros(3)
    for a, b, fb in zip(c.body_a, c.body_b, F):      # contact_forces: the force on body b
        if {names[a], names[b]} == {"table", "cube"}:
            out += fb if b == cube else -fb
    return out


def _by_finger(snap) -> dict:
    names = np.array(snap.links)
    return {n: snap.forces[names == n].sum(axis=0) for n in set(snap.links)}


def test_dynamic_grasp_settles_pressing_on_both_sides_of_the_cube(lifted):
    w, r, f, _, _ = lifted
    assert r.settled and r.ends["panda_finger_joint1"].state == "pressing"
    gc = r.grasp_contacts
    assert set(gc.links) == {LEFT, RIGHT}
    # each finger's pad stops on a cube face 30 mm from the centre; the contact gap is kept in
    # (0, 0.1 mm] (the contact threshold) and the pad's mesh faces lie within 0.1 mm of its plane
    assert r.dofs[0] == pytest.approx(0.030, abs=3e-4)
    cube = w.bodies["cube"].com_world
    assert np.allclose(np.abs(gc.points[:, 1] - cube[1]), 0.030, atol=2e-4)
    assert np.allclose(np.abs(gc.normals[:, 1]), 1.0, atol=1e-6)
    # statics of the coupled DOF: its effort (40 N, the side file) drives both fingers (right = left,
    # ratio 1), so by virtual work F_left + F_right = 40 N, and the cube's y balance makes them
    # equal, 20 N each (the URDF's effort per finger joint), up to the table's friction on the
    # resting cube: statically indeterminate for rigid contacts, the contact compliance (1e-6 to
    # 1e-4 of the LCP's diagonal) leaves the table a share of that order of the squeeze
    e = r.ends["panda_finger_joint1"].effort
    assert e == 40.0
    table = f["table"]
    assert f[LEFT][1] + f[RIGHT][1] + table[1] == pytest.approx(0.0, abs=1e-8)
    assert abs(table[1]) < 1e-4 * e / 2
    assert abs(f[LEFT][1]) == pytest.approx(e / 2, rel=1e-3)


def test_lift_of_5_cm_holds_the_cube(lifted):
    w, r, _, lift, f = lifted
    assert lift.held and not lift.dropped and lift.contacts >= 6
    assert lift.hand_rise == pytest.approx(0.05, abs=1e-9)      # a prescribed base path
    # Sticking contacts: the tangential load per finger (m g / 2 ~ 1 N up, plus an internal pair of
    # x frictions, 4.8 N, that the closing locked in: statically indeterminate for rigid contacts) is
    # well inside mu N = 1.0 x 20 N, so the object moves with the palm; what remains is the normal
    # gap, which the contacts keep in (0, threshold] = (0, 0.1 mm].  Measured: slip 9.5e-8 m,
    # rotation 1.4e-5 rad, rise 49.9999 mm.
    threshold = r.sim.threshold
    assert threshold == pytest.approx(1e-4)
    assert lift.slip < threshold and lift.rotation < 1e-3
    assert lift.lifted == pytest.approx(0.05, abs=threshold)
    # holding still after the lift: the fingers' vertical forces carry the cube's weight
    m = w.bodies["cube"].instance.obj.inertial.mass
    assert f[LEFT][2] + f[RIGHT][2] == pytest.approx(m * G, rel=1e-3)
    for n in (LEFT, RIGHT):
        assert np.hypot(f[n][0], f[n][2]) < 0.5 * abs(f[n][1])   # well inside the mu = 1 cone


def _force_closure_lp(points, normals, mu, center, scale, edges=8) -> bool:
    """Force closure by linear programming (independent of graspsim's hull search): the pyramid
    edge wrenches W (6 x k) span R^6 and some combination with every weight >= 1 sums to zero."""
    from scipy.optimize import linprog

    cols = []
    for p, n, m in zip(points, normals, mu):
        n = n / np.linalg.norm(n)
        t1 = np.cross(n, [1.0, 0, 0] if abs(n[0]) < 0.9 else [0, 1.0, 0])
        t1 /= np.linalg.norm(t1)
        t2 = np.cross(n, t1)
        for a in np.arange(edges) * 2 * np.pi / edges:
            f = n + m * (np.cos(a) * t1 + np.sin(a) * t2)
            cols.append(np.r_[f, scale * np.cross(p - center, f)])
    W = np.array(cols).T
    if np.linalg.matrix_rank(W, tol=1e-9) < 6:
        return False
    res = linprog(np.zeros(W.shape[1]), A_eq=W, b_eq=np.zeros(6), bounds=[(1, None)] * W.shape[1], method="highs")
    return res.status == 0


def test_force_closure_of_the_final_contacts_three_ways(lifted):
    w, r, _, lift, _ = lifted
    q_sim, gc = evaluate_grasp(w, "panda_hand", "cube", contacts=r.sim.contacts)
    assert set(gc.links) == {LEFT, RIGHT}
    scale = grasp.torque_scale(w, "cube")
    assert scale == pytest.approx(1 / (0.03 * np.sqrt(3)))      # 1 / the cube's half-diagonal
    center = w.bodies["cube"].com_world
    q = grasp.analyze(gc.points, gc.normals, gc.mu, center=center, torque_scale=scale, gws="L1")
    lp = _force_closure_lp(gc.points, gc.normals, gc.mu, center, scale)
    assert q.force_closure is True and q_sim.force_closure is True and lp is True
    assert q.epsilon == pytest.approx(q_sim.epsilon, rel=0.01) and q.epsilon > 0.01
    # a negative control the LP must decide by itself (the pyramid wrenches of one pad span R^6, but
    # every one of them pushes along that pad's normal, so no positive combination is zero)
    one = np.array([l == LEFT for l in gc.links])
    assert _force_closure_lp(gc.points[one], gc.normals[one], gc.mu[one], center, scale) is False
    assert grasp.analyze(gc.points[one], gc.normals[one], gc.mu[one], center=center,
                         torque_scale=scale).force_closure is False


def test_pinch_on_the_mug_handle_presses_with_the_effort_but_the_mug_turns_out_of_it():
    """worlds/panda_hand_mug.yaml under dynamics: the fingers stop on the 12 mm handle 6.1 mm from
    closed and press with the full effort there (the side file's kp reaches it 5 mm from the
    reference); lifted 5 cm, the mug (0.3 kg, its centre of mass 67 mm from the pinch: 0.2 N m of
    gravity torque about the pinch axis, held by torsional friction alone) turns about that axis
    and slips -- why the cube, not the mug, is the Panda's lift example."""
    from graspsim import spatial

    w = graspsim.load_world(ROOT / "worlds" / "panda_hand_mug.yaml")
    r = control.dynamic_auto_grasp(w, "panda_hand", obj="mug")
    end = r.ends["panda_finger_joint1"]
    assert r.settled and end.state == "pressing" and end.value == pytest.approx(0.006, abs=3e-4)
    ri, io = w.description.robot_index["panda_hand"], r.sim.table.index["mug"]
    f = _by_finger(control.dynamic._snapshot(r.sim, ri, io))
    assert set(f) == {LEFT, RIGHT}
    # virtual work of the coupled DOF: the fingers' reactions along their axes (world -y for the
    # left finger's push on the handle, +y for the right's) add up to the DOF's effort
    assert -f[LEFT][1] + f[RIGHT][1] == pytest.approx(end.effort, rel=1e-3)
    palm = int(r.sim.table.robot_links[ri][w.description.robots[ri].robot.palm_link])
    X0 = r.sim.poses()
    lift = control.lift_test(r, height=0.05)
    X1 = r.sim.poses()
    assert not lift.held and lift.slip > 0.01 and lift.rotation > 0.2       # measured: 32 mm, 0.37 rad
    rel0, rel1 = np.linalg.inv(X0[palm]) @ X0[io], np.linalg.inv(X1[palm]) @ X1[io]
    turn = X0[io][:3, :3] @ spatial.rotation_log(rel0[:3, :3].T @ rel1[:3, :3])   # world axes
    # mostly about the pinch axis (world y; measured: 0.31 of 0.37 rad, the rest about z and x)
    assert np.argmax(np.abs(turn)) == 1 and abs(turn[1]) > 0.7 * np.linalg.norm(turn)

"""Time stepper without contacts: free fall, pendulum period, chain integrity, joint limits,
coupled joints.  Expected values are derived in the tests."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim.dynamics import DriveCommand, Simulator
from graspsim.dynamics.joints import joint_frames
from graspsim.dynamics.simulator import _plain_motion

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "models"


def test_free_fall_matches_discrete_euler():
    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    sim = Simulator(w, collisions=False)
    z0 = sim.body_pose("mug")[2, 3]
    n, h = 200, sim.dt
    for _ in range(n):
        sim.step()
    # positions move with the previous step's velocity: z = z0 - g h^2 n (n - 1) / 2 exactly
    assert sim.body_pose("mug")[2, 3] == pytest.approx(z0 - 9.81 * h * h * n * (n - 1) / 2, abs=1e-12)
    assert sim.body_velocity("mug")[2] == pytest.approx(-9.81 * h * n, rel=1e-12)
    assert sim.time == pytest.approx(n * h)


def test_pendulum_small_angle_period():
    w = graspsim.load_world(MODELS / "pend_world.yaml")
    w.robots["pendulum"].set_dofs([0.05])
    sim = Simulator(w, collisions=False)
    ts, qs = [], []
    for _ in range(3000):  # 7.5 s, about 5 periods
        sim.step()
        ts.append(sim.time)
        qs.append(sim.dof_values()[0])
    ts, qs = np.array(ts), np.array(qs)
    down = [ts[i] - qs[i] * (ts[i + 1] - ts[i]) / (qs[i + 1] - qs[i]) for i in range(len(qs) - 1)
            if qs[i] > 0 >= qs[i + 1]]
    period = np.mean(np.diff(down))
    # physical pendulum: bob (sphere r = 2 cm, 1 kg) 0.5 m below the hinge
    I = 1.0 * 0.5 ** 2 + 0.4 * 1.0 * 0.02 ** 2
    T0 = 2 * np.pi * np.sqrt(I / (1.0 * 9.81 * 0.5))
    # finite amplitude 0.05 rad lengthens T by theta^2/16 = 1.6e-4; Euler's phase error is O((w h)^2) ~ 1e-5
    assert period == pytest.approx(T0 * (1 + 0.05 ** 2 / 16), rel=2e-4)
    # the semi-implicit step neither pumps nor bleeds much energy over 5 periods
    assert np.max(qs[-500:]) == pytest.approx(0.05, rel=0.01)


def test_dof_state_is_values_and_velocities_and_the_velocity_moves_the_value():
    """dof_state() gives what dof_values() and dof_velocities() give, bit for bit (all robots and
    one); and a step moves a hinge by h times the velocity it starts with (the paper's step 1-2: the
    bodies move with their current velocities, as in free fall), so the values' finite difference is
    the rate read before the step."""
    w = graspsim.load_world(MODELS / "pend_world.yaml")
    w.robots["pendulum"].set_dofs([0.5])
    sim = Simulator(w, collisions=False)
    h = sim.dt
    q_prev, qd_prev = sim.dof_values()[0], 0.0
    worst, fastest = 0.0, 0.0
    for _ in range(200):
        sim.step()
        q, qd = sim.dof_state()
        assert np.array_equal(q, sim.dof_values()) and np.array_equal(qd, sim.dof_velocities())
        qr, qdr = sim.dof_state("pendulum")
        assert np.array_equal(qr, sim.dof_values("pendulum")) and np.array_equal(qdr, sim.dof_velocities("pendulum"))
        worst = max(worst, abs((q[0] - q_prev) / h - qd_prev))
        fastest = max(fastest, abs(qd[0]))
        q_prev, qd_prev = q[0], qd[0]
    assert fastest > 0.5                    # it swings (0.5 rad from the bottom)
    # (the joint's drift correction moves the hinge by a few 1e-8 rad a step, ~1e-5 rad/s in the rate;
    # reading the rate after the step instead would be off by h * alpha = 2.5e-3 s * 9.4 rad/s^2)
    assert worst < 1e-5 * fastest
    with pytest.raises(ValueError, match="no robot 'nobody' in world 'pend'"):
        sim.dof_state("nobody")


def test_dof_state_of_a_coupled_hand_is_values_and_velocities_through_closing_and_copies():
    """The Barrett (coupled joints, breakaway clutches) closing on the mug under a Python torque
    controller: every step, dof_state() is dof_values() and dof_velocities() bit for bit (one
    compiled call against three: the same BLAS products), also after the clutches give way, in a
    pickled copy and after restoring an earlier state; in free motion (before the fingers touch
    anything) each DOF's value moves by h times the rate read before the step."""
    import pickle
    from graspsim.dynamics import DriveCommand

    sim = Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"))
    lim = sim.world.description.robots[0].robot.dof_limits
    target = np.array([0.0, lim[1, 1], lim[2, 1], lim[3, 1]])
    q_prev, qd_prev = sim.dof_state()
    free_err, fastest, free_steps, saved = 0.0, 0.0, 0, None
    for k in range(240):
        q, qd = sim.dof_state()
        sim.step(type("T", (), {"command": lambda self, s: DriveCommand.torques(
            np.clip(2.0 * (target - q) - 0.05 * qd, -0.6, 0.6))})())
        q, qd = sim.dof_state()
        assert np.array_equal(q, sim.dof_values()) and np.array_equal(qd, sim.dof_velocities())
        c = sim.contacts
        if not any(sim.table.names[i].startswith("barrett/") for i in np.concatenate([c.body_a, c.body_b])):
            free_err = max(free_err, np.max(np.abs((q - q_prev) / sim.info.h - qd_prev)))
            fastest = max(fastest, np.abs(qd_prev).max())
            free_steps += 1
        q_prev, qd_prev = q, qd
        if k == 60:
            saved, at_save = sim.save_state(), (q.copy(), qd.copy())
    assert sim.state.broken.any()                       # a clutch gave way: another DOF map
    # (measured 7e-6 of the fastest rate: the joints' drift correction, as for the pendulum above)
    assert free_steps > 5 and fastest > 0.1 and free_err < 1e-4 * fastest
    copy = pickle.loads(pickle.dumps(sim))
    for a, b in zip(copy.dof_state(), sim.dof_state()):
        assert np.array_equal(a, b)
    sim.restore_state(saved)
    for a, b in zip(sim.dof_state(), at_save):
        assert np.array_equal(a, b)


def test_three_link_chain_stays_together_for_10_s():
    w = graspsim.load_world(MODELS / "chain_world.yaml")
    sim = Simulator(w, collisions=False)
    worst = 0.0
    for _ in range(4000):  # 10 s of flailing from a bent start
        sim.step()
        F = joint_frames(sim.js, sim.poses())
        worst = max(worst, float(np.abs(F.o_c - F.o).max()))
    assert worst < 1e-6          # the issue asks "well under 0.1 mm"
    assert np.abs(sim.state.v).max() > 0.5   # it really moved


def test_joint_falls_into_its_limit_and_stops_there():
    w = graspsim.load_world(MODELS / "limit_world.yaml")
    sim = Simulator(w, collisions=False)
    lo = np.radians(-30)
    qs = []
    for _ in range(800):
        sim.step()
        qs.append(sim.dof_values()[0])
    qs = np.array(qs)
    assert qs.min() > lo - np.radians(0.2)             # never passes the limit by more than 0.2 deg
    assert abs(qs[-1] - lo) < np.radians(0.2)          # and rests on it
    assert abs(sim.dof_velocities()[0]) < 1e-3


def test_pd_drive_holds_against_gravity_with_expected_steady_state_error():
    w = graspsim.load_world(MODELS / "pend_world.yaml")
    w.robots["pendulum"].set_dofs([0.0])
    sim = Simulator(w, collisions=False)
    kp = 200.0
    target = 0.5

    class Hold:
        def command(self, sim):
            one = np.ones(1)
            return DriveCommand(one * target, 0 * one, kp * one, 5.0 * one, 0 * one, 1e3 * one)

    sim.run(6.0, Hold())
    q = sim.dof_values()[0]
    # static balance: kp (target - q) = m g L sin q  (m = 1 kg, L = 0.5 m)
    from scipy.optimize import brentq
    q_eq = brentq(lambda x: kp * (target - x) - 9.81 * 0.5 * np.sin(x), 0, target)
    assert q == pytest.approx(q_eq, abs=1e-4)


def test_barrett_coupled_joints_keep_their_ratio():
    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    sim = Simulator(w, collisions=False)
    nd = len(sim.dof_names)

    class Close:
        def command(self, sim):
            q_ref = np.minimum(sim.time * 1.0, 1.2) * np.array([0, 1, 1, 1.0])
            return DriveCommand(q_ref, np.zeros(nd), np.full(nd, 100.0), np.full(nd, 0.5), np.zeros(nd),
                                np.full(nd, 2.5))

    sim.run(1.5, Close())
    jq = sim.state.joint_q
    names = sim.js.names
    for f in ("f1", "f2", "f3"):
        prox = jq[names.index(f"barrett/{f}_prox")]
        dist = jq[names.index(f"barrett/{f}_dist")]
        # distal = (prox - 5 deg) / 3 + 40 deg
        assert dist == pytest.approx((prox - np.radians(5)) / 3 + np.radians(40), abs=1e-6)
        assert prox > np.radians(40)  # the fingers did close


def test_projection_is_the_least_displacement_in_the_metric_of_mass_and_drives():
    """Post-stabilisation (island.project_positions, the compiled solver's too: test_compiled_step
    compares them): the hard rows' linearised errors are removed exactly, and among such displacements
    it is the one that minimises dx^T M dx + (J_s^T dx)^T C^-1 (J_s^T dx) (the drives' stiffness
    C^-1 resists it): computed here independently from that minimisation's normal equations."""
    from graspsim.dynamics.island import project_positions

    rng = np.random.default_rng(3)
    nb, nh, ns = 3, 7, 3
    Minv = np.empty((nb, 6, 6))
    M = np.zeros((6 * nb, 6 * nb))
    for b in range(nb):
        R = np.linalg.qr(rng.standard_normal((3, 3)))[0]
        I_W = R @ np.diag(rng.uniform(1e-3, 1e-2, 3)) @ R.T
        Mb = np.zeros((6, 6))
        Mb[:3, :3] = rng.uniform(0.1, 2.0) * np.eye(3)
        Mb[3:, 3:] = I_W
        M[6 * b:6 * b + 6, 6 * b:6 * b + 6] = Mb
        Minv[b] = np.linalg.inv(Mb)
    Je = rng.standard_normal((6 * nb, nh + ns))
    comp = np.r_[np.zeros(nh), rng.uniform(1e-3, 1e-1, ns)]
    err = 1e-6 * rng.standard_normal(nh)
    dx = project_positions(Minv, Je, comp, err)
    Jh, Js = Je[:, :nh], Je[:, nh:]
    assert np.abs(Jh.T @ dx + err).max() <= 1e-9 * np.abs(err).max()
    Q = M + Js @ np.diag(1.0 / comp[nh:]) @ Js.T
    Qi_Jh = np.linalg.solve(Q, Jh)
    want = Qi_Jh @ np.linalg.solve(Jh.T @ Qi_Jh, -err)
    assert np.abs(dx - want).max() <= 1e-8 * np.abs(want).max()
    # without drives it is the least mass-weighted displacement
    dx_m = project_positions(Minv, Jh, np.zeros(nh), err)
    Mi_Jh = np.linalg.solve(M, Jh)
    want_m = Mi_Jh @ np.linalg.solve(Jh.T @ Mi_Jh, -err)
    assert np.abs(dx_m - want_m).max() <= 1e-8 * np.abs(want_m).max()
    # the drives resist: the driven rows move less than under the mass metric alone
    assert np.linalg.norm(Js.T @ dx) < np.linalg.norm(Js.T @ dx_m)


def test_one_step_removes_a_joint_violation_to_second_order():
    """A chain link pulled 1 um off its joints (at rest, no gravity): after one step the joints
    meet to O(1e-6^2) (the projection of the compiled solver; measured 3e-12).  Without it
    (project_joints=False) the error is still 1e-6 after the step: eq. (16)'s correction acts
    through the new velocity, which moves the bodies in the next step."""
    w = graspsim.load_world(MODELS / "chain_world.yaml")
    sim = Simulator(w, collisions=False, gravity=[0.0, 0.0, 0.0])
    st = sim.save_state()
    st.c = st.c.copy()
    st.c[-1] += np.array([1e-6, -0.5e-6, 0.7e-6])
    st.v = np.zeros_like(st.v)
    sim.restore_state(st)
    F = joint_frames(sim.js, sim.poses())
    before = float(np.abs(F.o_c - F.o).max())
    sim.step()
    F = joint_frames(sim.js, sim.poses())
    after = float(np.abs(F.o_c - F.o).max())
    assert before > 9e-7
    assert after < 1e-10


def test_base_motion_arrays_and_lists_move_the_same():
    """A base motion returning plain float arrays takes the compiled pose check, one returning
    nested lists the general conversion: the same motion gives the same poses and velocities, bit
    for bit, step after step (a spinning object, the base moving up and sideways)."""
    sims = [Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), collisions=False) for _ in range(2)]
    Xb = sims[0].body_pose("barrett/palm")

    def motion(t):
        X = Xb.copy()
        X[:3, 3] += [0.01 * t, 0.0, 0.05 * t]
        return X, np.array([0.01, 0.0, 0.05, 0.0, 0.0, 0.0])

    sims[0].set_base_motion("barrett", motion)
    sims[1].set_base_motion("barrett", lambda t: tuple(a.tolist() for a in motion(t)))
    # the two paths are the ones compared: arrays pass the fast check, lists do not
    assert _plain_motion(motion(0.0))[0] is not None
    assert _plain_motion(tuple(a.tolist() for a in motion(0.0)))[0] is None
    for sim in sims:
        sim.state.v[:, 3:] = [0.3, -1.1, 2.0]
    for _ in range(25):
        for sim in sims:
            sim.step()
        assert np.array_equal(sims[0].poses(), sims[1].poses()) and np.array_equal(sims[0].state.v, sims[1].state.v)
    assert sims[0].body_pose("barrett/palm")[2, 3] > Xb[2, 3]        # the base did move

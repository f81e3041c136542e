"""Resting-world deactivation (graspsim.dynamics.sleep): a world at rest to rounding stops computing
its steps, and anything the step reads wakes it.  Each case compares the sleeping simulator with a
twin that computes every step (``sleep=False``): sleep must not change what a researcher measures."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim import spatial
from graspsim.control import PDController
from graspsim.dynamics import DriveCommand, Simulator
from graspsim.dynamics.sleep import Asleep

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_dynamics", ROOT / "benchmarks/bench_dynamics.py")
_BENCH = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_BENCH)
MODELS = Path(__file__).parent / "models"
G = 9.81
M_CUBE = 0.2       # objects/cube.yaml


def _box_world():
    """The 6 cm cube resting on the table (placed at the contact threshold's middle)."""
    w = graspsim.load_world(MODELS / "box_drop.yaml")
    w.bodies["box"].pose = spatial.translation([0.05, -0.02, 0.03 + 0.5e-4])
    return w


def _twins(world_fn, **kw):
    return Simulator(world_fn(), **kw), Simulator(world_fn(), sleep=False, **kw)


def test_resting_box_sleeps_where_the_awake_run_rests_and_reports_its_weight():
    sim, awake = _twins(_box_world)
    sim.run(0.5)
    awake.run(0.5)
    assert sim.asleep and not awake.asleep
    c0 = sim.state.c.copy()
    sim.run(5.0)
    awake.run(5.0)
    assert sim.asleep and sim.time == pytest.approx(awake.time, abs=1e-12)
    assert np.array_equal(sim.state.c, c0) and not sim.state.v.any()       # asleep: nothing moves
    # the awake twin is at the same place to rounding: sleeping changed nothing measurable
    assert np.abs(sim.state.c - awake.state.c).max() < 1e-12
    assert np.abs(sim.state.q - awake.state.q).max() < 1e-12
    assert np.abs(awake.state.v).max() < 1e-12
    # the contacts still carry the weight: sum of normal forces = m g (N), as computed awake
    f, fa = sim.contact_forces.sum(axis=0), awake.contact_forces.sum(axis=0)
    # (body_b is the box or the table: the sign says which; the contact compliance leaves ~1e-9)
    assert abs(f[2]) == pytest.approx(M_CUBE * G, rel=1e-8)
    assert np.abs(f - fa).max() < 1e-8 * M_CUBE * G     # (the awake twin's forces still change at 1e-9 N)
    assert len(sim.contacts) == len(awake.contacts)
    assert sim.info.asleep and sim.info.lcp_sizes == [] and sim.info.pivots == 0


def _floating_box(v_x: float) -> Simulator:
    w = graspsim.load_world(MODELS / "box_drop.yaml")
    w.bodies["box"].pose = spatial.translation([0.0, 0.0, 0.5])
    sim = Simulator(w, gravity=[0.0, 0.0, 0.0])
    sim.state.v[0, 0] = v_x
    return sim


@pytest.mark.parametrize("factor,sleeps", [(10.0, False), (0.1, True)])
def test_only_motion_slower_than_the_sleep_speed_is_stopped(factor, sleeps):
    # a free box drifting at factor x sleep_speed (no gravity, no contacts): x = v t exactly while
    # awake; below the threshold it stops after sleep_after s
    sim = _floating_box(factor * sim_default("sleep_speed"))
    v = sim.state.v[0, 0]
    x0 = sim.state.c[0, 0]
    sim.run(1.0)
    assert sim.asleep == sleeps
    moved = sim.state.c[0, 0] - x0
    if sleeps:
        # it moved for sleep_after s (the object falls asleep on its own), then stopped
        assert moved == pytest.approx(v * sim.sleep_after, rel=1e-6)
    else:
        assert moved == pytest.approx(v * sim.time, rel=1e-6)


def sim_default(name: str) -> float:
    import inspect
    return inspect.signature(Simulator).parameters[name].default


def test_sliding_box_never_sleeps():
    w = graspsim.load_world(MODELS / "incline.yaml")
    R = spatial.rot_x(np.radians(35.0))             # tan 35 > static mu 0.5: it slides
    w.bodies["plane"].pose = spatial.transform(R)
    w.bodies["box"].pose = spatial.transform(R, R @ [0, 0.44, 0.03 + 0.5e-4])
    sim = Simulator(w)
    for _ in range(200):
        assert not sim.step().asleep


def test_push_wakes_the_world_and_gives_the_awake_twins_velocity():
    sim, awake = _twins(_box_world)
    sim.run(0.5)
    awake.run(0.5)
    assert sim.asleep
    # 1 N along x for one step, at the box's com height: well above mu m g (static 0.5 or less)
    for s in (sim, awake):
        p = s.body_pose("box")[:3, 3]
        s.apply_external_force("box", p, [1.0, 0.0, 0.0])
    assert not sim.asleep               # the push wakes it at once
    sim.step()
    awake.step()
    assert not sim.info.asleep and sim.info.lcp_sizes
    v, va = sim.body_velocity("box"), awake.body_velocity("box")
    assert v[0] > 1e-3                  # it moves along the push
    assert np.abs(v - va).max() < 1e-10
    # friction stops it again; then it sleeps again, where the awake twin rests
    sim.run(1.0)
    awake.run(1.0)
    assert sim.asleep
    assert np.abs(sim.state.c - awake.state.c).max() < 1e-10


def _gripper_world():
    return graspsim.load_world(ROOT / "worlds/parallel_jaw_box.yaml")


def test_new_command_wakes_the_hand_and_it_tracks_like_the_awake_twin():
    sim, awake = _twins(_gripper_world)
    ctl, ctl_a = PDController(sim), PDController(awake)
    sim.run(0.5, ctl)
    awake.run(0.5, ctl_a)
    assert sim.asleep
    for s, c in ((sim, ctl), (awake, ctl_a)):
        c.move_to("gripper", [0.055], duration=0.3)       # open wider: from 40 to 55 mm
    assert not sim.step(ctl).asleep
    awake.step(ctl_a)
    sim.run(0.6, ctl)
    awake.run(0.6, ctl_a)
    assert sim.dof_values("gripper")[0] == pytest.approx(0.055, abs=5e-4)     # it opened to the target
    assert abs(sim.dof_values("gripper")[0] - awake.dof_values("gripper")[0]) < 1e-9


def test_state_changed_in_place_wakes_and_the_box_falls():
    sim = Simulator(_box_world())
    sim.run(0.5)
    assert sim.asleep
    sim.state.c[0, 2] += 0.01            # lift the box 1 cm in place
    sim.step()
    assert not sim.info.asleep
    assert sim.body_velocity("box")[2] == pytest.approx(-G * sim.dt, rel=1e-9)   # free fall, one step


def test_dt_or_gravity_change_wakes():
    sim = Simulator(_box_world())
    sim.run(0.5)
    sim.gravity = np.array([0.0, 0.0, -2 * G])
    assert not sim.step().asleep
    sim.run(0.5)
    assert sim.asleep
    assert abs(sim.contact_forces.sum(axis=0)[2]) == pytest.approx(2 * M_CUBE * G, rel=1e-8)
    sim.dt = sim.dt / 2
    assert not sim.step().asleep


def test_save_and_restore_replay_sleeping_and_waking_bit_for_bit():
    sim = Simulator(_gripper_world())
    ctl = PDController(sim)
    sim.run(0.1, ctl)
    saved, holds = sim.save_state(), dict(ctl.trajectories)

    def run():
        out = []
        for i in range(300):
            if i == 200:
                ctl.move_to("gripper", [0.05], duration=0.1)
            info = sim.step(ctl)
            out.append((info.asleep, sim.state.c.copy(), sim.state.v.copy(), sim.state.joint_q.copy()))
        return out

    first = run()
    assert any(a for a, *_ in first[:200]) and not first[201][0]     # it fell asleep, then woke
    sim.restore_state(saved)
    ctl.trajectories.clear()
    ctl.trajectories.update(holds)       # the controller as it was at the save
    second = run()
    for (a1, *x1), (a2, *x2) in zip(first, second):
        assert a1 == a2 and all(np.array_equal(p, q) for p, q in zip(x1, x2))


def test_sleep_off_computes_every_step():
    sim = Simulator(_box_world(), sleep=False)
    sim.run(1.0)
    assert not sim.asleep and sim.info.lcp_sizes


@pytest.mark.parametrize("kw,msg", [
    (dict(sleep=1), "sleep must be True or False"),
    (dict(sleep_speed=0.0), "sleep_speed must be finite, > 0"),
    (dict(sleep_speed=float("nan")), "sleep_speed must be finite"),
    (dict(sleep_speed=1.0), r"sleep_speed must be finite, > 0 and <= 0\.1"),
    (dict(sleep_after=-1.0), "sleep_after must be finite, >= 0"),
])
def test_bad_sleep_parameters_are_refused(kw, msg):
    with pytest.raises(ValueError, match=msg):
        Simulator(_box_world(), **kw)


def test_bad_sleep_fields_of_a_data_block_are_refused():
    sim = Simulator(_box_world())
    sim.run(0.5)
    assert sim.asleep
    good = sim.save_state()
    bad = sim.save_state()
    bad.data.rest = [-1.0, None, None]
    with pytest.raises(ValueError, match=r"data\.rest must be"):
        sim.restore_state(bad)
    bad = sim.save_state()
    bad.data.asleep = "yes"
    with pytest.raises(ValueError, match=r"data\.asleep must be None or"):
        sim.restore_state(bad)
    bad = sim.save_state()
    a = bad.data.asleep
    bad.data.asleep = Asleep(a.c[:0], a.q, a.joint_q, a.broken, a.lock, a.command, a.key, a.contacts, a.impulse)
    with pytest.raises(ValueError, match=r"data\.asleep\.c must be \(1, 3\)"):
        sim.restore_state(bad)
    sim.restore_state(good)              # the refused ones left it as it was; the good one sleeps on
    assert sim.asleep and not sim.step().lcp_sizes


# -- objects that sleep while the hand moves ---------------------------------------------------------

def _clutter(tmp_path, z_hand=0.25, cubes=2):
    """The Barrett above the mug, with ``cubes`` 6 cm cubes resting on the table 25 cm away
    (benchmarks/bench_dynamics.py's clutter scene)."""
    return _BENCH.clutter_world(cubes, tmp_path, z_hand)


def _spreading(path, sleep):
    sim = Simulator(graspsim.load_world(path), sleep=sleep)
    ctl = PDController(sim)
    ctl.move_to("barrett", [0.5, 0.3, 0.3, 0.3], duration=2.0)     # in the air, touching nothing
    return sim, ctl


def test_resting_objects_sleep_while_the_hand_moves_and_change_nothing_else(tmp_path):
    path = _clutter(tmp_path)
    sim, ctl = _spreading(path, True)
    awake, ctl_a = _spreading(path, False)
    m_objects = graspsim.load_world(path).bodies["mug"].mass + 2 * M_CUBE
    for _ in range(240):                     # 0.6 s
        sim.step(ctl)
        awake.step(ctl_a)
    assert set(sim.sleeping_bodies) == {"mug", "cube0", "cube1"} and not sim.asleep
    # the hand's island is solved as without the sleeping ones: the same motion to rounding
    assert np.abs(sim.dof_values() - awake.dof_values()).max() < 1e-12
    assert np.abs(sim.dof_velocities()).max() > 0.05             # (it does move)
    assert np.abs(sim.state.c - awake.state.c).max() < 1e-12
    # the sleeping objects' contacts are still reported, with their weights
    assert len(sim.contacts) == len(awake.contacts)
    f, fa = sim.contact_forces.sum(axis=0), awake.contact_forces.sum(axis=0)
    assert abs(f[2]) == pytest.approx(m_objects * G, rel=1e-8) and np.abs(f - fa).max() < 1e-8 * m_objects * G
    # save, step, restore, step: the same states, sleeping objects included
    saved, trajs = sim.save_state(), dict(ctl.trajectories)
    first = [(sim.step(ctl), sim.state.c.copy(), sim.sleeping_bodies)[1:] for _ in range(40)]
    sim.restore_state(saved)
    ctl.trajectories.clear()
    ctl.trajectories.update(trajs)
    second = [(sim.step(ctl), sim.state.c.copy(), sim.sleeping_bodies)[1:] for _ in range(40)]
    assert all(np.array_equal(a[0], b[0]) and a[1] == b[1] for a, b in zip(first, second))


def _closing(path, sleep, kick=0.0):
    sim = Simulator(graspsim.load_world(path), sleep=sleep)
    from graspsim.control import start_dynamic_grasp
    ctl = start_dynamic_grasp(sim, "barrett")
    for i in range(500):                     # 1.25 s: the mug sleeps, then the fingers reach it
        if i == 100 and kick:
            sim.state.v[sim.bodies.slot[sim.table.index["mug"]], 2] += kick
        sim.step(ctl)
    return sim


def test_a_finger_wakes_the_sleeping_mug_and_the_grasp_is_the_awake_one_within_its_sensitivity(tmp_path):
    """The mug falls asleep before the fingers reach it; their touch wakes it.  The closing is
    sensitive: nudges of the mug by 1e-14 to 1e-13 m/s in the awake run move the final DOFs by
    3e-5 to 2e-3 rad (the closing has branches: which a run takes is decided by rounding).
    Sleeping (which zeroes velocities of that size) must not move them more than such nudges."""
    path = _clutter(tmp_path, z_hand=0.18, cubes=1)
    sim = Simulator(graspsim.load_world(path))
    from graspsim.control import start_dynamic_grasp
    ctl = start_dynamic_grasp(sim, "barrett")
    slept = False
    for _ in range(500):
        sim.step(ctl)
        slept |= "mug" in sim.sleeping_bodies
    assert slept and "mug" not in sim.sleeping_bodies and "cube0" in sim.sleeping_bodies
    c = sim.contacts
    touching = {sim.table.names[a] for a, b in zip(c.body_a, c.body_b) if sim.table.names[b] == "mug"}
    assert {"barrett/f1_dist", "barrett/f2_dist", "barrett/f3_dist"} <= touching
    awake = _closing(path, False)
    sens = max(np.abs(awake.dof_values() - _closing(path, False, kick=k).dof_values()).max()
               for k in (1e-14, -1e-14, 1e-13))
    dev = np.abs(sim.dof_values() - awake.dof_values()).max()
    assert dev <= 3 * sens + 1e-9, (dev, sens)


def test_bad_sleeping_object_fields_are_refused(tmp_path):
    sim, ctl = _spreading(_clutter(tmp_path, cubes=1), True)
    sim.run(0.5, ctl)
    assert sim.sleeping_bodies
    bad = sim.save_state()
    bad.data.bodies_group = bad.data.bodies_group.copy()
    bad.data.bodies_group[0] = 1                # a link of the hand
    with pytest.raises(ValueError, match=r"data\.bodies_group: only objects sleep on their own"):
        sim.restore_state(bad)
    bad = sim.save_state()
    bad.data.bodies_rest = -bad.data.bodies_rest - 1
    with pytest.raises(ValueError, match=r"data\.bodies_rest must be"):
        sim.restore_state(bad)


def test_a_moving_base_wakes_the_object_sleeping_on_it(tmp_path):
    """A cube asleep on a platform (a robot of one link, its base static) while the hand moves
    elsewhere: the platform starts rising at 2 cm/s (set_base_motion) and lifts the cube as in the
    run without sleep (a static body that moves is searched against sleeping objects)."""
    w = (f"world: platform\nunits: {{length: m, angle: deg}}\nrobots:\n"
         f"  - {{name: barrett, file: {ROOT}/robots/barrett.yaml, pose: {{xyz: [0, 0, 0.25], rpy: [180, 0, 0]}}}}\n"
         f"  - {{name: platform, file: {MODELS}/platform.yaml, pose: {{xyz: [0.4, 0, 0.01]}}}}\n"
         f"objects:\n  - {{name: cube, file: {ROOT}/objects/cube.yaml, pose: {{xyz: [0.4, 0, 0.05005]}}}}\n"
         f"obstacles:\n  - {{name: table, file: {ROOT}/objects/table.yaml}}\n")
    path = tmp_path / "platform.yaml"
    path.write_text(w)
    runs = []
    for sleep in (True, False):
        sim, ctl = _spreading(path, sleep)
        sim.run(0.3, ctl)
        assert sim.sleeping_bodies == (("cube",) if sleep else ())
        X0, t0 = sim.body_pose("platform/base").copy(), sim.time

        def rise(t, X0=X0, t0=t0):
            X = X0.copy()
            X[2, 3] += 0.02 * (t - t0)
            return X, np.array([0, 0, 0.02, 0, 0, 0])
        sim.set_base_motion("platform", rise)
        z0 = sim.body_pose("cube")[2, 3]
        sim.run(0.5, ctl)
        runs.append(sim.body_pose("cube")[2, 3] - z0)
        assert not sim.sleeping_bodies
    assert runs[0] == pytest.approx(0.01, abs=1e-4)           # lifted 1 cm with the platform
    assert abs(runs[0] - runs[1]) < 1e-9


def test_contact_count_counts_the_sleeping_objects_contacts_too(tmp_path):
    sim, ctl = _spreading(_clutter(tmp_path), True)
    for _ in range(120):
        sim.step(ctl)
        assert sim.contact_count == (0 if sim.contacts is None else len(sim.contacts))
    assert sim.sleeping_bodies and sim.contact_count == len(sim.contacts) > 0


class _HoldTorque:
    """A pure-torque controller (DriveCommand.torques: no PD, effort limit inf) commanding zero
    torque on every DOF."""

    def command(self, sim):
        return DriveCommand.torques(np.zeros(len(sim.dof_names)))


def test_a_pure_torque_command_is_saved_and_restored_bit_for_bit():
    """The last command in the data block (the rest test's, and a sleeping world's) is a stacked
    command whose effort row is inf for DriveCommand.torques: restore_state takes it back, awake
    and asleep, and the replay is bit for bit; a NaN in it is still refused."""
    sim = Simulator(_gripper_world())
    ctl = _HoldTorque()
    for _ in range(20):
        sim.step(ctl)
    assert np.isinf(sim.save_state().data.rest[1][5]).all()
    saved = sim.save_state()

    def replay():
        out = []
        for _ in range(400):
            info = sim.step(ctl)
            out.append((info.asleep, sim.state.c.copy(), sim.state.v.copy()))
        return out

    first = replay()
    assert first[-1][0] and not first[0][0]           # fell asleep under the torque command
    asleep = sim.save_state()
    assert np.isinf(asleep.data.asleep.command[5]).all()
    sim.restore_state(saved)
    second = replay()
    for (a1, *x1), (a2, *x2) in zip(first, second):
        assert a1 == a2 and all(np.array_equal(p, q) for p, q in zip(x1, x2))
    sim.restore_state(asleep)
    assert sim.asleep and sim.step(ctl).asleep
    bad = sim.save_state()
    bad.data.rest[1] = bad.data.rest[1].copy()
    bad.data.rest[1][0, 0] = np.nan
    with pytest.raises(ValueError, match=r"data\.rest must be"):
        sim.restore_state(bad)

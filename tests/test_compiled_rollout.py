"""The compiled loop of Simulator.rollout (graspsim.dynamics.rollout): its steps are step()'s bit
for bit -- states, warm-start table, sleep counts and the step report -- whether it takes them all
or leaves some (impact cuts, breakaways, objects and worlds falling asleep, errors) to step()."""
from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim.control import PDController, dynamic_auto_grasp, lift_test
from graspsim.control.trajectory import QuinticBaseMotion
from graspsim.dynamics import Simulator
from graspsim.errors import SimulationError
from graspsim.dynamics import _step_kernel as SK
from graspsim.dynamics import rollout as RO

ROOT = Path(__file__).resolve().parent.parent
MODELS = Path(__file__).resolve().parent / "models"


@pytest.fixture
def counted(monkeypatch):
    """[calls of the compiled loop, steps it took, of those while objects slept]."""
    n = [0, 0, 0]
    run = RO.CompiledLoop.run

    def spy(self, *a):
        asleep = self.sim._bodies_asleep
        k = run(self, *a)
        n[0] += 1
        n[1] += k
        n[2] += k if asleep else 0       # steps taken while objects slept
        return k
    monkeypatch.setattr(RO.CompiledLoop, "run", spy)
    return n


def _steps(sim, ctl, n):
    """``n`` steps through step()'s stages (the reference: with the loop allowed, step() takes the
    common path's steps in it too) and their record."""
    rec = []
    flag, sim.compiled_loop = sim.compiled_loop, False
    try:
        for _ in range(n):
            sim.step(ctl)
            s = sim.state
            rec.append((s.time, s.c.copy(), s.q.copy(), s.v.copy(), s.joint_q.copy(), sim.info.h,
                        sim.contact_count, s.broken.copy()))
    finally:
        sim.compiled_loop = flag
    return rec


def _same(sim_a, ro, sim_b, rec):
    """Rollout ``ro`` of ``sim_a`` equals the step() record ``rec`` of ``sim_b`` bit for bit, and so do
    the two simulators' data blocks and last step reports."""
    assert np.array_equal(ro.time, [r[0] for r in rec])
    for i, name in enumerate(("c", "q", "v", "joint_q", "h", "contacts", "broken"), 1):
        assert np.array_equal(getattr(ro, name), np.array([r[i] for r in rec])), name
    a, b = sim_a.state, sim_b.state
    assert a.steps == b.steps and np.array_equal(a.broken, b.broken) and np.array_equal(a.lock, b.lock)
    da, db = sim_a._data, sim_b._data
    for x, y in zip(da.table(), db.table()):
        assert np.array_equal(x, y)
    assert (da.cwarm is None) == (db.cwarm is None)
    if da.cwarm is not None:
        assert all(np.array_equal(x, y) for x, y in zip(da.cwarm, db.cwarm))
    assert da.rest[0] == db.rest[0] and da.cuts == db.cuts
    for x, y in zip(da.rest[1:], db.rest[1:]):
        assert (x is None and y is None) or np.array_equal(x, y)
    assert np.array_equal(da.bodies_rest, db.bodies_rest) and np.array_equal(da.bodies_group, db.bodies_group)
    assert (da.asleep is None) == (db.asleep is None)
    ia, ib = sim_a.info, sim_b.info
    assert (ia.h, ia.fraction, ia.lcp_sizes, ia.pivots, ia.islands, ia.asleep) == \
        (ib.h, ib.fraction, ib.lcp_sizes, ib.pivots, ib.islands, ib.asleep)
    assert np.array_equal(ia.contact_impulse, ib.contact_impulse)
    assert (ia.contacts is None) == (ib.contacts is None)
    if ia.contacts is not None:
        for f in ("body_a", "body_b", "point", "normal", "separation", "tangent1", "tangent2", "shape_a"):
            assert np.array_equal(getattr(ia.contacts, f), getattr(ib.contacts, f)), f


def _held(n_after=0):
    r = dynamic_auto_grasp(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), "barrett", timeout=2.0,
                           compiled_loop=True)
    ctl = r.controller.compiled()
    for _ in range(n_after):
        r.sim.step(ctl)
    return r.sim, ctl


def test_the_held_mug_takes_the_compiled_loop_and_stays_held(counted):
    """The Barrett holding the mug (breakaway clutches, six contacts, warm starts): every step in the
    compiled loop, the states and data those of step() bit for bit, the mug held still."""
    (sa, ca), (sb, cb) = _held(1), _held(1)
    counted[:] = [0, 0, 0]              # (the grasps took rollouts too)
    z0 = sa.body_pose("mug")[2, 3]
    ro = sa.rollout(300, ca)
    _same(sa, ro, sb, _steps(sb, cb, 300))
    assert counted[1] == 300 and counted[0] == 1
    # physics: a firm grasp, the mug in the hand within 0.05 mm, six contacts carrying its weight
    assert abs(sa.body_pose("mug")[2, 3] - z0) < 5e-5
    assert len(sa.contacts) >= 3 and np.linalg.norm(sa.info.contact_impulse.sum(axis=0)) > 0


def test_closing_on_the_mug_leaves_impacts_and_clutches_to_step(counted):
    """The Barrett closing from its start: fingers land on the mug (steps cut at the impact), the
    distal clutches give way, the mug settles: the loop hands those steps to step() and takes the
    rest, and the whole run is step()'s bit for bit."""
    sims = [Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), compiled_loop=True) for _ in range(2)]
    ctls = []
    for s in sims:
        ctl = PDController(s)
        ri = s.world.description.robot_index["barrett"]
        lim = s.world.description.robots[ri].robot.dof_limits
        ctl.move_to("barrett", [0.0, lim[1, 1], lim[2, 1], lim[3, 1]], duration=0.4)
        ctls.append(ctl.compiled())
    left0 = RO.LEFT.copy()
    ro = sims[0].rollout(600, ctls[0])
    rec = _steps(sims[1], ctls[1], 600)
    _same(sims[0], ro, sims[1], rec)
    assert 0 < counted[1] < 600 and counted[0] > 1                  # both paths took steps
    # the fingers' landings cut steps at the impact, most of them in the loop (its bisection)
    cuts, left = int((ro.h < sims[0].dt).sum()), RO.LEFT - left0
    assert cuts >= 3 and left[SK.W_COLLIDE + SK.SCREEN_CUT] + left[SK.W_COLLIDE + SK.SCREEN] < cuts
    # physics: the three fingers' distal clutches gave way on the mug, which they now hold still
    assert sims[0].state.broken[1:].all() and len(sims[0].contacts) >= 3
    assert np.abs(ro.v).max() > 1.0 and np.abs(ro.v[-1]).max() < 1e-3


def test_a_resting_world_falls_asleep_through_step(counted):
    """The mug world with nothing commanded: objects settle and fall asleep, then the world; those
    transitions are step()'s, and the sleeping steps after them too."""
    sims = [Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), compiled_loop=True) for _ in range(2)]
    ctls = [PDController(s).compiled() for s in sims]
    ro = sims[0].rollout(400, ctls[0])
    _same(sims[0], ro, sims[1], _steps(sims[1], ctls[1], 400))
    assert sims[0].asleep and counted[1] > 0


def test_an_error_in_the_loop_is_step_s_error():
    """A NaN put into the state in place: the rollout stops with step()'s SimulationError and the
    state before the step."""
    sim, ctl = _held(1)
    sim.rollout(10, ctl)
    before = sim.state.copy()
    sim.state.v[0, 0] = np.nan
    with pytest.raises(SimulationError, match="cannot step"):
        sim.rollout(10, ctl)
    assert sim.state.steps == before.steps and np.array_equal(sim.state.c, before.c)


def test_dynamic_auto_grasp_through_the_loop_is_step_s():
    """dynamic_auto_grasp runs its steps as rollouts (the mug asleep on the table until a finger
    touches it, impacts and clutches through step()): the same grasp bit for bit as with every
    step through step() -- the steps, the final state, the history, snapshots, DOF ends, quality --
    and a force-closure grasp of the mug."""
    out = []
    for loop in (True, False):
        n = [0, 0, 0]
        run = RO.CompiledLoop.run

        def spy(self, *a):
            asleep = self.sim._bodies_asleep
            k = run(self, *a)
            n[1] += k
            n[2] += k if asleep else 0
            return k
        RO.CompiledLoop.run = spy
        try:
            r = dynamic_auto_grasp(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), "barrett", timeout=2.0,
                                   snapshot_times=(0.3, 0.61), compiled_loop=loop)
        finally:
            RO.CompiledLoop.run = run
        out.append((r, n))
    (a, na), (b, nb) = out
    # all but a few steps in the loop (the first, the clutches giving way; 432 of 435 when written:
    # the settle test and the impact cuts in it), some with the mug asleep
    assert na[1] >= a.steps - 10 and na[2] > 0 and nb[1] == 0
    assert (a.settled, a.steps, a.time) == (b.settled, b.steps, b.time)
    for f in ("c", "q", "v", "joint_q", "broken", "lock"):
        assert np.array_equal(getattr(a.sim.state, f), getattr(b.sim.state, f)), f
    for k in ("time", "contacts", "object_z"):
        assert np.array_equal(a.history[k], b.history[k]), k
    assert [s.time for s in a.snapshots] == [s.time for s in b.snapshots] and len(a.snapshots) == 2
    assert all(np.array_equal(x.forces, y.forces) and x.links == y.links for x, y in zip(a.snapshots, b.snapshots))
    assert a.ends == b.ends and np.array_equal(a.joint_values, b.joint_values)
    assert a.quality.epsilon == b.quality.epsilon
    # physics: settled with the three fingers pressing, a force-closure grasp; the mug's weight is
    # carried by the table (it stands within 2 mm of where it stood: the squeeze tilts it by ~1 mm)
    assert a.settled and [a.ends[f].state for f in ("f1", "f2", "f3")] == ["pressing"] * 3
    assert a.quality.epsilon > 0.05
    assert abs(a.history["object_z"][-1] - a.history["object_z"][0]) < 2e-3


def test_the_lift_moves_the_base_in_the_loop_as_step_does():
    """lift_test raises the Barrett's fixed base along a QuinticBaseMotion, which the compiled loop
    evaluates itself: the grasp and the lift are step()'s bit for bit (states and the base's pose),
    and the mug rises the commanded 10 cm with the palm, slipping less than 0.1 mm."""
    out = []
    for loop in (True, False):
        n = [0]
        run = RO.CompiledLoop.run

        def spy(self, *a):
            k = run(self, *a)
            n[0] += k if self.KIN[0].size else 0     # steps taken with a moving base
            return k
        RO.CompiledLoop.run = spy
        try:
            r = dynamic_auto_grasp(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), "barrett", timeout=2.0,
                                   compiled_loop=loop)
            lift = lift_test(r, 0.1, duration=0.5, hold=0.25)
        finally:
            RO.CompiledLoop.run = run
        out.append((r.sim, lift, n[0]))
    (a, la, na), (b, lb, nb) = out
    assert na >= 295 and nb == 0                                 # the lift's 300 steps, all but a few in the loop
    for f in ("c", "q", "v", "joint_q", "broken", "lock"):
        assert np.array_equal(getattr(a.state, f), getattr(b.state, f)), f
    assert np.array_equal(a._data.X_static, b._data.X_static) and a.state.steps == b.state.steps
    assert (la.lifted, la.slip, la.hand_rise) == (lb.lifted, lb.slip, lb.hand_rise)
    # physics: the palm rose 10 cm (the base's path), the mug with it, held without slipping
    assert la.held and abs(la.hand_rise - 0.1) < 1e-9 and abs(la.lifted - 0.1) < 1e-3 and la.slip < 1e-4


def test_a_quintic_base_motion_is_the_quintic_and_a_turned_base_goes_through_step(counted):
    """QuinticBaseMotion: half way, half the displacement at 1.875 x the mean speed (s(1/2) = 1/2,
    s'(1/2) = 15/8); no twist outside its interval; bad input named.  A base whose pose at the
    start is turned from the motion's: the loop leaves those steps to step() (same states)."""
    X0 = np.eye(4)
    X0[:3, 3] = [0.1, -0.2, 0.3]
    m = QuinticBaseMotion(X0, [0.0, 0.0, 0.1], 1.0, 0.5)
    X, tw = m(1.25)
    assert np.allclose(X[:3, 3], [0.1, -0.2, 0.35], atol=1e-15) and np.allclose(tw, [0, 0, 0.1 * 1.875 / 0.5, 0, 0, 0])
    assert np.array_equal(m(2.0)[1], np.zeros(6)) and m(2.0)[0][2, 3] == 0.3 + 0.1
    with pytest.raises(ValueError, match="duration"):
        QuinticBaseMotion(X0, [0.0, 0.0, 0.1], 0.0, 0.0)
    sims = [Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), compiled_loop=True) for _ in range(2)]
    ctls = []
    a = np.radians(1.0)
    turn = np.array([[np.cos(a), -np.sin(a), 0.0], [np.sin(a), np.cos(a), 0.0], [0.0, 0.0, 1.0]])
    for s in sims:
        ctls.append(PDController(s).compiled())
        s.step(ctls[-1])
        ri = s.world.description.robot_index["barrett"]
        b = int(s.table.robot_links[ri][s.world.description.robots[ri].robot.base_link])
        Xb = s.poses()[b].copy()
        Xb[:3, :3] = Xb[:3, :3] @ turn                 # turned by 1 degree from where the base is
        s.set_base_motion("barrett", QuinticBaseMotion(Xb, [0.0, 0.0, 0.02], s.time, 0.1))
    z0 = [sims[0].body_pose(n)[2, 3] for n in ("barrett/f1_prox", "mug")]
    ro = sims[0].rollout(60, ctls[0])
    _same(sims[0], ro, sims[1], _steps(sims[1], ctls[1], 60))
    assert 50 < counted[1] < 60 and counted[0] >= 2     # the turn by step(); after it, mostly the loop
    # physics: the base at its end pose, 2 cm up and turned; the fingers follow the palm (the
    # hand's links move with the base, the mug stays on the table)
    assert np.array_equal(sims[0].poses()[b][:3, :3], Xb[:3, :3])
    assert np.allclose(sims[0].poses()[b][:3, 3], Xb[:3, 3] + [0, 0, 0.02], atol=1e-12)
    z1 = [sims[0].body_pose(n)[2, 3] for n in ("barrett/f1_prox", "mug")]
    assert abs(z1[0] - z0[0] - 0.02) < 1e-3 and abs(z1[1] - z0[1]) < 1e-4


def test_rollout_records_and_base_motions_refuse_bad_input():
    """Bad input to the new API is named: a Rollout of another world, a flag that is not a bool, a
    base motion with a short displacement or a zero duration, an unknown body."""
    sim = Simulator(graspsim.load_world(MODELS / "stack.yaml"))
    other = Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"))
    ro = other.rollout(2)
    with pytest.raises(ValueError, match="not one of this simulator's"):
        sim.rollout_dofs(ro)
    with pytest.raises(ValueError, match="expected a Rollout"):
        sim.rollout_poses("x", "box")
    with pytest.raises(ValueError, match="stop_after_step must be True or False"):
        sim.rollout(1, stop_after_step="yes")
    with pytest.raises(ValueError, match="until must be None or a graspsim.dynamics.rollout.Settle"):
        sim.rollout(1, until=0.1)
    mine = sim.rollout(3)
    with pytest.raises(ValueError, match="no body 'boxx'"):
        sim.rollout_poses(mine, "boxx")
    for bad in (([0.0, 0.1], 0.0, 1.0), ([0.0, 0.0, 0.1], 0.0, 0.0), ([0.0, np.nan, 0.1], 0.0, 1.0),
                ([0.0, 0.0, 0.1], "t", 1.0)):
        with pytest.raises(ValueError, match="base motion: displacement must be 3 finite numbers"):
            QuinticBaseMotion(np.eye(4), *bad)
    # the records of a rollout are the states after each step: its last row is the state now; the
    # step lengths add up to the time (the boxes landing on each other cut a step at the impact)
    assert len(mine) == 3 and np.array_equal(mine.c[-1], sim.state.c)
    assert np.all((mine.h > 0) & (mine.h <= sim.dt)) and abs(mine.time[-1] - mine.h.sum()) < 1e-15
    assert np.array_equal(sim.rollout_poses(mine, sim.table.names[sim.bodies.table_index[0]])[-1],
                          sim.poses()[sim.bodies.table_index[0]])


def test_a_lift_with_a_python_feedforward_steps_it():
    """A controller with a Python feedforward (computed torques, here none: zero) cannot be
    compiled: lift_test steps it through step() and gives the lift of the compiled path."""
    out = []
    for ff in (None, lambda sim, ri, q, qd, qdd: np.zeros(len(q))):
        r = dynamic_auto_grasp(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), "barrett", timeout=2.0,
                               compiled_loop=True)
        r.controller.feedforward = ff
        out.append((lift_test(r, 0.05, duration=0.3, hold=0.1), r.sim.state))
    (la, sa), (lb, sb) = out
    assert np.array_equal(sa.c, sb.c) and (la.lifted, la.slip) == (lb.lifted, lb.slip)
    assert la.held and abs(la.lifted - 0.05) < 1e-3          # the mug rose the commanded 5 cm


def _dropped_world(folder: Path) -> Path:
    """The mug dropped from 4 mm and a 6 cm cube (0.2 kg) tilted by a few degrees from 5 mm onto the
    table."""
    p = folder / "mug_and_cube.yaml"
    p.write_text(f"world: mug_and_cube\nunits: {{length: m, angle: deg}}\nobjects:\n"
                 f"  - {{name: mug, file: {ROOT}/objects/mug.yaml, pose: {{xyz: [0, 0, 0.004]}}}}\n"
                 f"  - {{name: cube, file: {ROOT}/objects/cube.yaml, pose: {{xyz: [0.15, 0, 0.035], rpy: [5, 3, 20]}}}}\n"
                 f"obstacles:\n  - {{name: table, file: {ROOT}/objects/table.yaml}}\n")
    return p


def test_a_rollout_without_a_controller_takes_the_loop(counted, tmp_path):
    """The mug and a cube dropped on the table, no controller: the loop takes the free fall, the
    landings' impact cuts and the settling (no command: step(None)'s), step() the mug falling asleep
    on its own, the loop again the steps while it sleeps; the whole run is step()'s bit for bit, and
    both end at rest on the table: the mug standing, the cube on a face (com 3 cm up)."""
    w = _dropped_world(tmp_path)
    sims = [Simulator(graspsim.load_world(w), compiled_loop=True) for _ in range(2)]
    sims[0].step()
    sims[1].step()
    ro = sims[0].rollout(300, None)
    _same(sims[0], ro, sims[1], _steps(sims[1], None, 300))
    assert counted[1] >= 250 and counted[2] > 0 and int((ro.h < sims[0].dt).sum()) >= 2
    assert sims[0].sleeping_bodies == ("mug",)
    # physics: the mug stands on the table where it fell (its base on the table: z = 0 within the
    # contact threshold's 0.1 mm, upright), the cube lies on a face, both at rest
    X = sims[0].body_pose("mug")
    assert abs(X[2, 3]) < 1e-4 and X[2, 2] > 1 - 1e-6 and np.hypot(X[0, 3], X[1, 3]) < 1e-3
    X = sims[0].body_pose("cube")
    assert abs(X[2, 3] - 0.03) < 1e-4 and np.abs(X[2, :3]).max() > 1 - 1e-6
    assert np.abs(sims[0].state.v).max() < 1e-5


def test_run_without_a_callback_takes_the_loop_as_step_does(counted):
    """Simulator.run with a PDController and no callback steps through rollouts (the controller
    compiled as it is): the Barrett closing on the mug, its landings and clutches, is run()'s step
    by step bit for bit; with a callback, or a feedforward, every step goes through step()."""
    def closing(loop):
        sim = Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), compiled_loop=loop)
        ctl = PDController(sim)
        lim = sim.world.description.robots[0].robot.dof_limits
        ctl.move_to("barrett", [0.0, lim[1, 1], lim[2, 1], lim[3, 1]], duration=0.4)
        return sim, ctl

    (sa, ca), (sb, cb) = closing(True), closing(False)
    sa.run(0.8, ca)
    assert counted[1] > 250
    seen = []
    sb.run(0.8, cb, callback=lambda s: seen.append(s.state.steps))
    assert counted[1] < 400 and seen == list(range(1, sb.state.steps + 1))
    for f in ("time", "steps", "c", "q", "v", "joint_q", "broken", "lock"):
        assert np.array_equal(getattr(sa.state, f), getattr(sb.state, f)), f
    assert sa.state.time >= 0.8 - 1e-12 and sa.state.time - sa.info.h < 0.8 - 1e-12   # run()'s end: the first step past
    # physics: the distal clutches gave way on the mug, held still by three fingers
    assert sa.state.broken[1:].all() and len(sa.contacts) >= 3 and np.abs(sa.state.v).max() < 1e-2
    n0, c0 = counted[1], counted[0]
    ca.feedforward = lambda sim, ri, q, qd, qdd: np.zeros(len(q))
    sa.run(0.05, ca)
    # (step() by step(), each taking its step in the loop with the Python controller's command)
    assert counted[1] - n0 == counted[0] - c0 == 20


def _closing_pair():
    """Two Barretts above the mug (the compiled loop on, off), each with a PDController closing
    the fingers over 0.4 s."""
    sims, ctls = [], []
    for loop in (True, False):
        sim = Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), compiled_loop=loop)
        ctl = PDController(sim)
        lim = sim.world.description.robots[0].robot.dof_limits
        ctl.move_to("barrett", [0.0, lim[1, 1], lim[2, 1], lim[3, 1]], duration=0.4)
        sims.append(sim)
        ctls.append(ctl)
    return sims, ctls


def test_run_sees_the_controller_changed_between_runs(counted):
    """run() keeps its compiled copy of a PDController between runs only while the controller is as
    it was: gains changed in place and a new move are followed, bit for bit as step() follows
    them; a run shorter than RUN_MIN_STEPS steps goes through step() alone."""
    from graspsim.dynamics.simulator import RUN_MIN_STEPS

    sims, ctls = _closing_pair()
    for sim, ctl in zip(sims, ctls):
        sim.run(0.3, ctl)
        ctl.set_gains("barrett", "f1", effort=1.0)          # in place: the compiled copy is stale
        sim.run(0.3, ctl)
        ctl.move_to("barrett", [0.0, 0.0, 0.0, 0.0], duration=0.3)
        sim.run(0.3, ctl)
    assert counted[1] > 200
    n, c = counted[1], counted[0]
    for sim, ctl in zip(sims, ctls):
        sim.run((RUN_MIN_STEPS - 1) * sim.dt, ctl)
    # (step() by step(): a loop call per step, with the PDController's command given)
    assert counted[1] - n == counted[0] - c >= RUN_MIN_STEPS - 1     # (run() ends with the first step past)
    a, b = sims[0].state, sims[1].state
    for f in ("time", "steps", "c", "q", "v", "joint_q", "broken", "lock"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    # physics: the fingers opened again, away from the mug, which stands where it stood
    assert np.abs(sims[0].dof_values("barrett")[1:]).max() < 0.05
    assert abs(sims[0].body_pose("mug")[2, 3]) < 2e-3


def test_one_step_rollouts_of_a_pd_controller_reuse_one_loop(counted):
    """rollout(1, pd) called step after step compiles the PDController once and keeps one loop
    while the controller is as it was (a new copy each call rebuilt the loop's constants, ~0.3 ms
    a call); gains changed in place are followed; the states are step()'s bit for bit."""
    sims, ctls = _closing_pair()
    loops = {}              # loop ids by what may change a loop: the clutches' state, the gains
    for k in range(240):
        if k == 160:
            for ctl in ctls:
                ctl.set_gains("barrett", "f1", effort=1.0)     # in place: a new compiled copy
        key = (sims[0].state.broken.tobytes(), k >= 160)
        sims[0].rollout(1, ctls[0])
        sims[1].step(ctls[1])
        if sims[0]._loop is not None and sims[0]._loop.ctl is sims[0]._run_ctl[2]:
            loops.setdefault(key, set()).add(id(sims[0]._loop))
    assert counted[1] > 150                   # most steps in the loop (impacts and clutches in step())
    assert len(loops) >= 2 and all(len(ids) == 1 for ids in loops.values()), loops   # one loop for each
    ctls[0].feedforward = lambda sim, ri, q, qd, qdd: np.zeros(len(q))    # not compiled: refused, as before
    with pytest.raises(ValueError, match="feedforward"):
        sims[0].rollout(1, ctls[0])
    ctls[0].feedforward = None
    a, b = sims[0].state, sims[1].state
    for f in ("time", "steps", "c", "q", "v", "joint_q", "broken", "lock"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    # physics: the three fingers closed on the mug and squeeze it (it stays within a few mm of where
    # it stood, not thrown)
    c = sims[0].contacts
    fingers = {sims[0].table.names[i].split("/")[-1][:2] for i in np.concatenate([c.body_a, c.body_b])}
    assert {"f1", "f2", "f3"} <= fingers, fingers
    assert abs(sims[0].body_pose("mug")[2, 3]) < 5e-3


class _TorquePD:
    """A Python controller: a PD law on dof_values()/dof_velocities() applied as pure torques (as
    the peers' benchmark drives its hand), closing the Barrett's fingers."""

    def __init__(self, sim):
        lim = sim.world.description.robots[0].robot.dof_limits
        self.target = np.array([0.0, lim[1, 1], lim[2, 1], lim[3, 1]])
        self.asked = 0

    def command(self, sim):
        from graspsim.dynamics import DriveCommand
        self.asked += 1
        tau = 2.0 * (self.target - sim.dof_values()) - 0.05 * sim.dof_velocities()
        return DriveCommand.torques(np.clip(tau, -0.6, 0.6))


@pytest.mark.parametrize("flat", [True, False])
def test_step_with_a_python_controller_takes_the_loop(counted, monkeypatch, flat):
    """step() with a Python controller takes a common-path step as one call of the compiled loop
    with the controller's command (asked once per step either way): the Barrett closing on the mug
    with a torque PD written in Python is the stages' step by step, bit for bit, impacts and
    clutches included (those steps go back to the stages); with the constants flattened and, as
    for constants that cannot be, passed as tuples."""
    if not flat:
        monkeypatch.setattr(RO.CompiledLoop, "_flatten", lambda self: None)
    sims = [Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), compiled_loop=loop)
            for loop in (True, False)]
    ctls = [_TorquePD(s) for s in sims]
    for _ in range(300):
        for sim, ctl in zip(sims, ctls):
            sim.step(ctl)
        a, b = sims[0].state, sims[1].state
        for f in ("time", "steps", "c", "q", "v", "joint_q", "broken", "lock"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert counted[1] > 150 and counted[0] <= 300      # most steps in the loop, one per call
    assert ctls[0].asked == ctls[1].asked == 300
    ia, ib = sims[0].info, sims[1].info
    assert (ia.h, ia.lcp_sizes, ia.pivots) == (ib.h, ib.lcp_sizes, ib.pivots)
    assert np.array_equal(ia.contact_impulse, ib.contact_impulse)
    # physics: the three fingers closed on the mug and press it, which stays within a few mm
    c = sims[0].contacts
    fingers = {sims[0].table.names[i].split("/")[-1][:2] for i in np.concatenate([c.body_a, c.body_b])}
    assert {"f1", "f2", "f3"} <= fingers, fingers
    assert abs(sims[0].body_pose("mug")[2, 3]) < 5e-3


def test_the_loop_s_step_report_is_the_stages_read_when_asked():
    """A step the loop takes reports what the stages' step reports (its contacts built only when
    read, LoopStepInfo): the Barrett closing on the mug with a Python torque PD, every step's
    length, cut fraction, LCP sizes, pivots, islands, impulses and every contact column equal to
    the stages', bit for bit; the report copies, replaces and pickles as a StepInfo does.  Physics:
    each contact's impulse presses the bodies together (its normal part >= 0) within the friction
    cone of the world's largest mu (widened by the friction pyramid's corners, 1/cos(pi/u))."""
    import dataclasses
    import pickle
    from graspsim.dynamics.simulator import StepInfo

    sims = [Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), compiled_loop=loop)
            for loop in (True, False)]
    ctls = [_TorquePD(s) for s in sims]
    MS, MK = sims[0]._mu_tables()[:2]
    mu = float(np.nanmax([MS, MK]))
    lazy = touching = 0
    for k in range(260):
        for sim, ctl in zip(sims, ctls):
            sim.step(ctl)
        ia, ib = sims[0].info, sims[1].info
        lazy += type(ia) is RO.LoopStepInfo
        assert (ia.h, ia.fraction, ia.lcp_sizes, ia.pivots, ia.islands, ia.asleep) == \
            (ib.h, ib.fraction, ib.lcp_sizes, ib.pivots, ib.islands, ib.asleep)
        assert np.array_equal(ia.contact_impulse, ib.contact_impulse)
        if k % 3:                       # (every third step's report is never read: nothing built)
            continue
        assert (ia.contacts is None) == (ib.contacts is None)
        if ia.contacts is None:
            continue
        assert ia.contacts is ia.contacts                     # built once
        for f in ("body_a", "body_b", "point", "normal", "separation", "tangent1", "tangent2", "shape_a",
                  "shape_b"):
            assert np.array_equal(getattr(ia.contacts, f), getattr(ib.contacts, f)), f
        if type(ia) is RO.LoopStepInfo and len(ia.contacts):
            touching += 1
            imp, n = ia.contact_impulse, ia.contacts.normal
            fn = np.einsum("ki,ki->k", imp, n)
            ft = np.linalg.norm(imp - fn[:, None] * n, axis=1)
            tol = 1e-9 * np.abs(imp).max()         # (rounding of the cone's combinations)
            assert np.all(fn >= -tol) and np.all(ft <= mu / np.cos(np.pi / sims[0].u) * fn + tol)
            # the dataclass functions see its fields
            c = dataclasses.replace(ia, pivots=-1)
            assert c.pivots == -1 and c.contacts is ia.contacts and c.lcp_sizes == ia.lcp_sizes
            assert set(dataclasses.asdict(ia)) == {f.name for f in dataclasses.fields(StepInfo)}
            back = pickle.loads(pickle.dumps(ia))
            assert np.array_equal(back.contacts.point, ia.contacts.point) and back.lcp_sizes == ia.lcp_sizes
    assert lazy > 120 and touching > 10, (lazy, touching)


def test_parameters_set_between_steps_reach_step_s_loop(counted):
    """step()'s loop checks its constants only after a parameter was set (or with moving bases):
    gravity replaced, then changed in place (the loop reads the array itself), gamma and
    project_joints set between steps -- each step is still the stages' bit for bit, and the mug,
    lifted off the table by an upward gravity, gains exactly g h of vertical velocity per free
    step (semi-implicit Euler) for each g in turn."""
    from graspsim.dynamics import DriveCommand

    class Limp:                             # a Python controller: no torque on any DOF
        def command(self, sim):
            return DriveCommand.torques(np.zeros(len(sim.ds)))

    sims = [Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), compiled_loop=loop)
            for loop in (True, False)]
    mug = sims[0].table.index["mug"]
    h = sims[0].dt

    def steps(n, g=None):
        free = 0
        for _ in range(n):
            vz = [s.body_velocity("mug")[2] for s in sims]
            for sim in sims:
                sim.step(Limp())
            a, b = sims[0].state, sims[1].state
            for f in ("time", "c", "q", "v", "joint_q"):
                assert np.array_equal(getattr(a, f), getattr(b, f)), f
            c = sims[0].contacts
            if g is not None and (c is None or not np.any((c.body_a == mug) | (c.body_b == mug))):
                free += 1
                assert sims[0].body_velocity("mug")[2] - vz[0] == pytest.approx(g * h, rel=1e-9)
        return free

    steps(10)
    for sim in sims:
        sim.gravity = [0.0, 0.0, 2.0]             # replaced: a set parameter
    assert steps(30, 2.0) > 20
    for sim in sims:
        sim.gravity[2] = 4.0                      # in place: no parameter set, the loop reads it
    assert steps(20, 4.0) > 15
    for sim in sims:
        sim.gamma = 0.05
        sim.project_joints = False
    steps(20)
    assert counted[1] > 60                        # the loop took most of the 80 steps


def test_step_refuses_a_bad_command_before_the_loop_moves_anything():
    """A Python controller's command with a NaN gain is refused naming the field, by the loop's
    path as by the stages', and the state stays as it was."""
    from graspsim.dynamics import DriveCommand

    class Bad:
        def command(self, sim):
            z = np.zeros(len(sim.ds))
            return DriveCommand(z, z, np.full(len(z), np.nan), z, z, np.full(len(z), np.inf))

    for loop in (True, False):
        sim = Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), compiled_loop=loop)
        sim.step()
        before = sim.save_state()
        with pytest.raises(ValueError, match="kp"):
            sim.step(Bad())
        assert np.array_equal(sim.state.c, before.c) and sim.state.steps == before.steps


def test_step_takes_the_loop_once_it_is_loaded_in_the_process(counted, monkeypatch):
    """With the default compiled_loop=None, step() does not load the loop itself (~0.1 s from numba's
    cache, more than a short script of steps saves) until LOAD_AFTER steps went through the stages;
    once a loop of the world's layout is loaded in the process (here by a simulator with
    compiled_loop=True), step() takes its steps in it.  The states are the stages' throughout."""
    monkeypatch.setattr(RO, "_LOADED", set())
    monkeypatch.setattr(RO, "LOAD_AFTER", 10**9)      # (this process's earlier tests took many steps)
    sims = [Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), compiled_loop=loop)
            for loop in (None, False)]
    ctls = [_TorquePD(s) for s in sims]

    def steps(n):
        for _ in range(n):
            for sim, ctl in zip(sims, ctls):
                sim.step(ctl)
        a, b = sims[0].state, sims[1].state
        for f in ("time", "steps", "c", "q", "v", "joint_q", "broken", "lock"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f

    steps(60)
    assert counted[0] == 0 and not sims[0]._step_loops.get(True, [None])[0]    # not even built
    loader = Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), compiled_loop=True)
    loader.step(_TorquePD(loader))
    loader.step(_TorquePD(loader))      # (the first step goes through the stages: steps > 0 first)
    assert RO._LOADED and counted[1] == 1
    steps(60)
    assert counted[1] > 1 + 40          # the default simulator's steps now in the loop
    # physics: the fingers close on the mug and touch it
    assert len(sims[0].contacts) >= 2 and abs(sims[0].body_pose("mug")[2, 3]) < 5e-3


def _box_drop(folder: Path) -> Path:
    """Three tilted 6 cm boxes (0.2 kg) dropped one above the other onto a table box (mu 0.5)."""
    boxes = "".join(
        f"  - {{name: box{i}, shape: {{box: [0.06, 0.06, 0.06]}}, mass: 0.2, inertia: [1.2e-4, 1.2e-4, 1.2e-4, 0, 0, 0],"
        f" material: box, pose: {{xyz: [{0.01 * i}, {-0.01 * i}, {0.06 + 0.1 * i}], rpy: [{r}, {p}, {y}]}}}}\n"
        for i, (r, p, y) in enumerate(((-0.15, -0.15, 0.0), (0.03, -0.15, 0.25), (0.2, -0.08, 0.5))))
    p = folder / "box_drop.yaml"
    p.write_text("world: box_drop\nunits: {length: m, angle: rad}\n"
                 "materials:\n  friction:\n    - {pair: [box, box], static: 0.5, kinetic: 0.5}\n"
                 "    - {pair: [box, table], static: 0.5, kinetic: 0.5}\n"
                 "objects:\n" + boxes +
                 "obstacles:\n  - {name: table, shape: {box: [1.0, 1.0, 0.05]}, material: table,"
                 " pose: {xyz: [0, 0, -0.025]}}\n")
    return p


def test_box_landings_are_localised_in_the_loop_as_step_does(counted, tmp_path):
    """Boxes landing on the table and on each other: the exact contact kernel sees each new overlap
    within the move's travel, and the loop localises the first contact through its view (as
    impact._localize with a KernelPairView), so no step leaves for the impact search; the whole run
    is step()'s bit for bit, and every landing cuts a step to the instant of contact."""
    w = _box_drop(tmp_path)
    sims = [Simulator(graspsim.load_world(w), compiled_loop=True) for _ in range(2)]
    sims[0].step()
    sims[1].step()
    left0 = RO.LEFT.copy()
    ro = sims[0].rollout(240, None)
    left = RO.LEFT - left0
    _same(sims[0], ro, sims[1], _steps(sims[1], None, 240))
    cuts = int((ro.h < sims[0].dt).sum())
    assert cuts >= 3 and left[SK.W_COLLIDE + SK.SCREEN] == 0 and counted[1] >= 240 - left.total()
    # physics: the boxes fell and landed: energy lost, none gained beyond the integrator's own drift
    # in free fall (semi-implicit Euler: 1/2 m g^2 h t per box); none sinks into the table: every
    # corner above z = -0.1 mm (the contact threshold) at every step
    m, g, h = 0.2, 9.81, sims[0].dt
    energy = [m * g * c[:, 2].sum() + 0.5 * m * (v[:, :3] ** 2).sum() for c, v in zip(ro.c, ro.v)]
    assert energy[-1] < energy[0] - 0.05
    assert max(energy) <= energy[0] + 3 * 0.5 * m * g ** 2 * h * (ro.time[-1] - ro.time[0])
    corners = np.array([[sx, sy, sz] for sx in (-0.03, 0.03) for sy in (-0.03, 0.03) for sz in (-0.03, 0.03)])
    for i in range(3):
        X = sims[0].rollout_poses(ro, f"box{i}")
        assert (X[:, 2, :3] @ corners.T + X[:, 2, 3:]).min() > -1e-4        # (n, 8) corner heights


def test_a_driver_on_a_time_grid_keeps_step_s_two_loops(tmp_path, monkeypatch):
    """A driver that lands on a time grid (as the peers' benchmark: after a step cut at an impact,
    a sub-step of the remainder, then the grid's step again) changes the step length for one step:
    step() takes that step through the stages instead of building a loop for it, so the landings of
    three boxes build one loop, not two per cut; every step is the stages' bit for bit, and the
    driver lands on every grid time."""
    built = [0]
    init = RO.CompiledLoop.__init__

    def counting(self, *a):
        built[0] += 1
        init(self, *a)
    monkeypatch.setattr(RO.CompiledLoop, "__init__", counting)
    w = _box_drop(tmp_path)
    sims = [Simulator(graspsim.load_world(w), compiled_loop=loop) for loop in (True, False)]
    h = sims[0].dt
    subs = 0
    for k in range(240):
        for sim in sims:
            calls = 0
            while (k + 1) * h - sim.time > 1e-12:
                rem = (k + 1) * h - sim.time
                sim.dt = h if rem > h - 1e-12 else rem
                sim.step()
                calls += 1
            assert abs(sim.time - (k + 1) * h) <= 1e-12
        subs += calls - 1
        a, b = sims[0].state, sims[1].state
        for f in ("time", "c", "q", "v"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert subs >= 3 and built[0] == 1, (subs, built[0])


def test_restore_state_keeps_the_loop_and_replays_a_base_motion(counted):
    """A state saved before a kinematic base moved restores (its joints checked against the static
    poses it brings, not the moved base's); restore_state puts those poses into the arrays the
    compiled loop holds, so the loop is kept (not rebuilt) and the base motion replays from where
    the state was saved bit for bit; the saved state is not touched by the steps after it."""
    sim = Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), compiled_loop=True)
    ctl = PDController(sim).compiled()
    sim.step(ctl)
    ri = sim.world.description.robot_index["barrett"]
    b = int(sim.table.robot_links[ri][sim.world.description.robots[ri].robot.base_link])
    Xb = sim.poses()[b].copy()
    saved = sim.save_state()
    sim.set_base_motion("barrett", QuinticBaseMotion(Xb, [0.0, 0.0, 0.02], sim.time, 0.1))
    ro1 = sim.rollout(60, ctl)
    loop, end1 = sim._loop, sim.poses()[b].copy()
    sim.restore_state(saved)
    assert np.array_equal(sim.poses()[b], Xb) and sim._loop is loop
    ro2 = sim.rollout(60, ctl)
    assert sim._loop is loop and counted[:2] == [2, 120]          # every step in the one loop
    for f in ("time", "c", "q", "v", "joint_q", "h", "contacts"):
        assert np.array_equal(getattr(ro1, f), getattr(ro2, f)), f
    assert np.array_equal(sim.poses()[b], end1) and np.array_equal(saved.data.X_static[b], Xb)
    # a data block whose base does not carry the state's hand is refused, naming a joint it pulls
    # apart, and nothing changes
    bad = sim.save_state()
    bad.data.X_static[b, 2, 3] += 0.05
    before = sim.save_state()
    with pytest.raises(ValueError, match="pull joint 'barrett/.*' apart"):
        sim.restore_state(bad)
    assert np.array_equal(sim.state.c, before.c) and np.array_equal(sim._data.X_static, before.data.X_static)
    # physics: the base rose the motion's 2 cm, not turned
    assert np.allclose(end1[:3, 3], Xb[:3, 3] + [0.0, 0.0, 0.02], atol=1e-12)
    assert np.array_equal(end1[:3, :3], Xb[:3, :3])

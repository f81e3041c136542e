"""Faults at the simulator's public boundary (issue #15, "Simulator faults").

Every bad input -- a step, a restored state, a pose, a force, a controller command -- must raise
ValueError (API misuse) or SimulationError (a state the step cannot advance) within 1 s, name what
is wrong, and leave the simulator (and world) state exactly as it was; good input must still give
a finite state.  Real worlds, real FCL, real LCPs throughout.
"""
from __future__ import annotations

import dataclasses
import os
import signal
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import graspsim
from graspsim import _compile, spatial
from graspsim.dynamics import DriveCommand, Simulator
from graspsim.dynamics import simulator as S
from graspsim.errors import SimulationError

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "models"
THR = 1e-4          # contact threshold of the test worlds (m); resting contacts are held at THR / 2
FIELDS = ("c", "q", "v", "joint_q", "broken", "lock")
#: a few seconds in the suite; GRASPSIM_FUZZ_EXAMPLES=5000 for a campaign
FUZZ = settings(max_examples=int(os.environ.get("GRASPSIM_FUZZ_EXAMPLES", 60)), deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


class Hang(Exception):
    pass


@contextmanager
def within_a_second():
    """Fail (not hang) if the block runs 10 s (wall); assert it took less than 1 s of CPU (our calls take ms),
    unless a kernel was compiled or loaded in it: on an empty kernel cache the first call of a path
    compiles its kernels (seconds), which says nothing about the call (this file run on its own)."""
    def _raise(*_):
        raise Hang("call did not return within 10 s")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, 10.0)
    kernels = _compile._progress.n
    t0 = time.process_time()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, old)
    # CPU time: on this shared 2-core host a refusal that takes 0.03 ms was once measured at 1.12 s
    # of wall time (the process not running); a hang still meets the 10 s alarm above
    assert time.process_time() - t0 < 1.0 or _compile._progress.n != kernels


def same_state(a, b) -> bool:
    return a.time == b.time and a.steps == b.steps and all(
        np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True) for f in FIELDS)


def finite_state(s) -> bool:
    return np.isfinite(s.time) and all(np.isfinite(getattr(s, f)).all() for f in ("c", "q", "v", "joint_q", "lock"))


def refused(sim, call, exc=(ValueError, SimulationError), match=None):
    """``call()`` raises ``exc`` (message matching ``match``) within 1 s with the state unchanged."""
    before = sim.save_state()
    with within_a_second(), pytest.raises(exc, match=match) as err:
        call()
    assert same_state(before, sim.save_state())
    return err.value


def outcome(sim, call):
    """Fuzz contract: ``call()`` either returns with a finite state or raises ValueError or
    SimulationError with the state unchanged; within 1 s either way.  Returns True on success."""
    before = sim.save_state()
    with within_a_second():
        try:
            call()
        except (ValueError, SimulationError) as e:
            assert same_state(before, sim.save_state())
            event(f"refused: {type(e).__name__}")      # hypothesis statistics: what the fuzz reached
            return False
    assert finite_state(sim.state)
    event("accepted")
    return True


@pytest.fixture(scope="module")
def descs():
    """World descriptions (immutable), loaded once; each test builds fresh worlds from them."""
    out = {k: graspsim.load_world(p).description for k, p in
           (("mug", ROOT / "worlds/barrett_mug.yaml"), ("box", MODELS / "box_drop.yaml"),
            ("chain", MODELS / "chain_world.yaml"))}
    Simulator(graspsim.World(out["mug"])).step()      # load the compiled kernels outside the timings
    return out


def world(descs, name):
    return graspsim.World(descs[name])


# ---------------------------------------------------------------------------- the cases
@pytest.mark.parametrize("dt", [float("inf"), float("nan"), 0.0, -2.5e-3, 1.5, 1e-13, "2 ms", "0.001", True,
                                np.True_, None])
def test_a_step_outside_1_ps_to_1_s_is_refused_at_construction_and_later(descs, dt):
    if dt is None:
        with pytest.raises(ValueError, match="dt must be a number"):
            Simulator(world(descs, "box"), dt=[1e-3])
        return
    w = world(descs, "box")     # (built outside the timing: the refusal is what must be quick)
    with within_a_second(), pytest.raises(ValueError, match="dt must be"):
        Simulator(w, dt=dt)
    sim = Simulator(world(descs, "box"))
    refused(sim, lambda: setattr(sim, "dt", dt), ValueError, "dt must be")
    assert sim.dt == descs["box"].dt


@pytest.mark.parametrize("field,row,value,match", [
    ("q", -1, np.nan, "q of body 'mug' must be finite"),
    ("v", -1, np.nan, "v of body 'mug' must be finite"),
    ("q", 3, np.inf, "q of body 'barrett/.*' must be finite"),
    ("q", -1, 0.0, "q of body 'mug': zero quaternion"),
    ("q", -1, "half", "q of body 'mug': quaternion .* has norm 0.5, not 1"),
    ("c", -1, -np.inf, "c of body 'mug' must be finite"),
    ("joint_q", 2, np.nan, "joint_q of joint '.*' must be finite"),
])
def test_a_bad_restored_state_is_refused_by_name(descs, field, row, value, match):
    """The issue's NaN quaternion and NaN velocity (they hung the step) and a zero quaternion (a
    ZeroDivisionError): restore_state names the field and body; the state stays as it was."""
    sim = Simulator(world(descs, "mug"))
    st_ = sim.save_state()
    a = getattr(st_, field)
    if value == "half":
        a[row] *= 0.5                 # norm 0.5: far from unit, refused rather than normalised
    else:
        a[row] = value
    refused(sim, lambda: sim.restore_state(st_), ValueError, match)
    refused(sim, lambda: setattr(sim, "state", st_), ValueError, match)


@pytest.mark.parametrize("field,value", [("q", 0.0), ("v", np.nan), ("c", np.inf), ("joint_q", np.nan)])
def test_a_state_broken_in_place_is_refused_by_the_step(descs, field, value):
    """Arrays of the live state can be changed in place; the step must refuse (not hang, not a
    ZeroDivisionError from a compiled kernel) and keep the state."""
    sim = Simulator(world(descs, "mug"))
    getattr(sim.state, field)[-1 if field != "joint_q" else 0] = value
    refused(sim, sim.step, SimulationError, f"cannot step: {field} of ")


def test_non_rigid_base_poses_are_refused_by_the_setter_and_the_simulator(descs):
    """The issue's scaled base pose (1.9e5 m/s after a few steps) and NaN base pose (the build
    hung): the setter refuses them and leaves the world as it was; a state changed behind the
    setter's back is refused by Simulator()."""
    w = world(descs, "mug")
    hand = w.robots["barrett"]
    X0 = hand.base_pose
    for bad, msg in ((np.full((4, 4), np.nan), "non-finite"), (X0 @ np.diag([1.01, 1.01, 1.01, 1.0]), "orthonormal"),
                     (X0 @ np.diag([-1.0, 1.0, 1.0, 1.0]), "determinant -1"), (X0[:3], "4x4"),
                     (X0 + np.outer([0, 0, 0, 1], [1e-3, 0, 0, 0]), "last row")):
        with pytest.raises(ValueError, match=f"robot 'barrett': base pose: .*{msg}"):
            hand.base_pose = bad
        assert np.array_equal(hand.base_pose, X0)
        with pytest.raises(ValueError, match=f"body 'mug': pose: .*{msg}"):
            w.bodies["mug"].pose = bad
    # rigid to RIGID_TOL is accepted (a pose typed with 7 digits)
    hand.base_pose = np.round(X0, 7)
    w.state.base_poses[0] = X0 @ np.diag([1.1, 1.1, 1.1, 1.0])
    with within_a_second(), pytest.raises(ValueError, match="robot 'barrett': base pose: .*orthonormal"):
        Simulator(w)
    w.state.base_poses[0] = X0
    before = w.save_state()
    s = w.save_state()
    s.body_poses[w.bodies["mug"].index] = np.full((4, 4), np.nan)
    with pytest.raises(ValueError, match="body 'mug': pose"):
        w.restore_state(s)
    assert all(np.array_equal(a, b) for a, b in zip(before.body_poses, w.state.body_poses))


def test_zero_mass_or_a_singular_inertia_is_named_when_the_simulator_is_built(descs):
    d = descs["box"]
    for mass, inertia in ((0.0, None), (np.nan, None), (0.2, np.zeros((3, 3))), (0.2, np.diag([1e-4, 1e-4, -1e-4]))):
        b = d.bodies[0]
        inr = dataclasses.replace(b.obj.inertial, mass=mass, **({} if inertia is None else {"inertia": inertia}))
        bad = dataclasses.replace(d, bodies=(dataclasses.replace(b, obj=dataclasses.replace(b.obj, inertial=inr)),
                                             *d.bodies[1:]))
        w = graspsim.World(bad)     # (built outside the timing: the refusal is what must be quick)
        with within_a_second(), pytest.raises(ValueError, match="dynamic body 'box': mass must be finite and > 0"):
            Simulator(w)


def test_a_1_ns_step_does_not_launch_a_resting_box(descs):
    """The issue's dt = 1e-9 s: a box touching the table (separation 0, 50 um below the contact
    target THR / 2) reached 1e4 m/s in 50 ns, because error correction removed gamma of the error
    per step (0.2 * 50 um / 1 ns).  It now acts over at least H_CORRECTION_MIN = 1 ms: the speed is
    at most 0.2 * 50 um / 1 ms = 1 cm/s; time advances by exactly the step."""
    w = world(descs, "box")
    w.bodies["box"].pose = spatial.translation([0.0, 0.0, 0.03])
    sim = Simulator(w, dt=1e-9)
    for _ in range(50):
        sim.step()
    bound = sim.gamma * 0.5 * THR / S.H_CORRECTION_MIN
    assert np.linalg.norm(sim.body_velocity("box")[:3]) <= bound * (1 + 1e-6)
    assert sim.time == pytest.approx(50e-9, rel=1e-12)
    # a step below the 1 ns floor of a cut step advances time by itself, not by 1 ns
    sim = Simulator(world(descs, "box"), dt=S.MIN_DT)
    sim.step()
    assert sim.time == S.MIN_DT


def test_a_step_below_the_clock_resolution_is_refused(descs):
    """At t = 1e12 s a 1 us step does not change the float time (ulp 1.2e-4 s): run() would never
    end.  The step refuses it and keeps the state."""
    sim = Simulator(world(descs, "box"), dt=1e-6)
    st_ = sim.save_state()
    st_.time = 1e12
    sim.restore_state(st_)
    refused(sim, sim.step, SimulationError, "does not advance the clock")
    refused(sim, lambda: sim.run(1.0), SimulationError, "does not advance the clock")
    for d in (float("inf"), float("nan"), -1.0):
        refused(sim, lambda: sim.run(d), ValueError, "duration")


def test_joint_values_and_joints_must_fit_the_poses(descs):
    """A restored state is checked against its own poses: joint values agree modulo 2 pi (so
    dof_values() does not lie) to JOINT_STATE_TOL, within +-JOINT_MAX, and the links hold together."""
    sim = Simulator(world(descs, "mug"))
    s0 = sim.save_state()
    for k, (val, msg) in enumerate(((0.5, "but the poses put it at"), (1e300, "beyond"))):
        st_ = s0.copy()
        st_.joint_q[2] += val
        refused(sim, lambda: sim.restore_state(st_), ValueError, f"joint_q of joint .*{msg}")
    st_ = s0.copy()
    st_.joint_q[2] += 4 * np.pi          # another turn of a revolute joint: the same poses, accepted
    sim.restore_state(st_)
    st_ = s0.copy()
    st_.c[sim.bodies.slot[sim.table.index["barrett/f2_dist"]]] += [0.05, 0.0, 0.0]   # 5 cm off its joint
    refused(sim, lambda: sim.restore_state(st_), ValueError, "pull joint 'barrett/f2_dist' apart by 0.05")


def test_near_unit_quaternions_are_renormalised_and_saved_states_replay_exactly(descs):
    sim = Simulator(world(descs, "mug"))
    for _ in range(3):
        sim.step()
    saved = sim.save_state()
    st_ = saved.copy()
    st_.q[-1] *= 1 + 5e-7                # within UNIT_QUAT_TOL
    sim.restore_state(st_)
    assert np.linalg.norm(sim.state.q[-1]) == pytest.approx(1.0, abs=1e-15)
    assert np.allclose(sim.state.q[-1], saved.q[-1], rtol=0, atol=1e-15)
    # a saved state is unit to rounding: restored bit for bit, and stepping it twice agrees exactly
    runs = []
    for _ in range(2):
        sim.restore_state(saved)
        assert same_state(sim.save_state(), saved)
        sim.step()
        runs.append(sim.save_state())
    assert same_state(*runs)


def test_bad_controller_commands_are_refused_by_dof_name(descs):
    sim = Simulator(world(descs, "mug"))
    nd = len(sim.dof_names)

    class Fixed:
        def __init__(self, **kw):
            a = dict(q_ref=np.zeros(nd), qd_ref=np.zeros(nd), kp=np.full(nd, 10.0), kd=np.full(nd, 0.1),
                     tau_ff=np.zeros(nd), effort=np.full(nd, 2.0))
            for k, (i, v) in kw.items():
                a[k][i] = v
            self.cmd = DriveCommand(**a)

        def command(self, _):
            return self.cmd

    for kw, msg in (({"q_ref": (1, np.nan)}, "q_ref of DOF 'barrett/f1' must be finite"),
                    ({"kp": (0, -1.0)}, "kp of DOF 'barrett/spread' must be finite and >= 0"),
                    ({"kd": (2, np.inf)}, "kd of DOF 'barrett/f2' must be finite"),
                    ({"effort": (3, np.nan)}, "effort of DOF 'barrett/f3' must be >= 0"),
                    ({"tau_ff": (3, -np.inf)}, "tau_ff of DOF 'barrett/f3' must be finite")):
        refused(sim, lambda: sim.step(Fixed(**kw)), ValueError, msg)
    ctl = Fixed()
    ctl.cmd.kp = np.zeros(nd + 1)
    refused(sim, lambda: sim.step(ctl), ValueError, r"kp must have shape \(4,\)")
    ok = Fixed(effort=(0, np.inf))       # no effort limit is allowed
    sim.step(ok)
    assert finite_state(sim.state)


def test_a_controller_or_callback_of_the_wrong_kind_is_named_before_any_step(descs):
    """step() and run() name a controller without a command(sim) method and run() a callback that
    is not callable before the first step (it had been an AttributeError, or a TypeError after one
    step of the run had been taken); a torque command of the wrong length is named by its torques."""
    sim = Simulator(world(descs, "mug"))
    nd = len(sim.dof_names)

    class NoMethod:
        command = 5

    for bad in (5, object(), NoMethod()):
        refused(sim, lambda: sim.step(bad), ValueError, "controller must be None or an object with a command")
        refused(sim, lambda: sim.run(0.1, bad), ValueError, "controller must be None or an object with a command")
    refused(sim, lambda: sim.run(0.1, None, 5), ValueError, "callback must be None or a function")
    refused(sim, lambda: sim.run(-1.0), ValueError, r"duration must be finite, >= 0, got -1")

    class Torques:
        def command(self, _):
            return DriveCommand.torques(np.zeros(nd + 1))

    refused(sim, lambda: sim.step(Torques()), ValueError, r"tau_ff must have shape \(4,\)")


def test_bad_external_forces_and_base_motions_are_refused_and_nothing_is_applied(descs):
    """A refused force is not applied: the next step equals a twin simulator's without it."""
    sims = [Simulator(world(descs, "mug")) for _ in range(2)]
    for bad, msg in (([np.nan, 0, 0], "force on 'mug' must be 3 finite"), ([1.0, 2.0], "3 finite")):
        refused(sims[0], lambda: sims[0].apply_external_force("mug", [0, 0, 0.05], bad), ValueError, msg)
    refused(sims[0], lambda: sims[0].apply_external_force("mug", [np.inf, 0, 0], [1, 0, 0]), ValueError, "point")
    refused(sims[0], lambda: sims[0].apply_external_force("mugg", [0, 0, 0], [1, 0, 0]), ValueError,
            "no body 'mugg'.*did you mean 'mug'")
    refused(sims[0], lambda: sims[0].apply_external_force("table", [0, 0, 0], [1, 0, 0]), ValueError, "static")
    for s in sims:
        s.step()
    assert same_state(sims[0].save_state(), sims[1].save_state())
    sim = sims[0]
    X = sim.body_pose("barrett/palm")
    for motion, msg in ((lambda t: (X @ np.diag([2.0, 2, 2, 1]), np.zeros(6)), "pose: rotation part is not orth"),
                        (lambda t: (X, np.full(6, np.nan)), "twist must be 6 finite"),
                        (lambda t: X, "must return")):
        sim.set_base_motion("barrett", motion)
        X_static = sim._X_static.copy()
        refused(sim, sim.step, ValueError, f"base motion of 'barrett/palm' at t = .*{msg}")
        assert np.array_equal(X_static, sim._X_static)       # the base did not move either
    with pytest.raises(ValueError, match="must be a function"):
        sim.set_base_motion("barrett", X)
    with pytest.raises(ValueError, match="no robot 'baret'.*did you mean 'barrett'"):
        sim.dof_values("baret")


@pytest.mark.parametrize("kw,msg", [
    ({"gamma": np.nan}, "gamma"), ({"gamma": 2.0}, "gamma"), ({"threshold": 0.0}, "threshold"),
    ({"static_speed": -1.0}, "static_speed"), ({"gravity": [0, 0, np.nan]}, "gravity"),
    ({"gravity": [0, -9.81]}, "gravity"), ({"friction_directions": 3}, "friction_directions"),
    ({"friction_directions": 2.5}, "friction_directions"), ({"friction_directions": 1000}, "friction_directions"),
    ({"friction_directions": 1e300}, "friction_directions"), ({"contact_compliance": -1e-6}, "contact_compliance"),
    ({"max_region_points": 2}, "max_region_points"), ({"max_region_points": np.inf}, "max_region_points"),
    ({"restitution_speed": np.nan}, "restitution_speed"), ({"lemke": "lemke"}, "lemke"),
])
def test_bad_simulator_parameters_are_named(descs, kw, msg):
    w = world(descs, "box")
    with within_a_second(), pytest.raises(ValueError, match=msg):
        Simulator(w, **kw)


@pytest.mark.parametrize("name, value, msg", [
    ("gamma", 5.0, "gamma must be finite, >= 0 and <= 1, got 5.0"),
    ("contact_compliance", np.nan, "contact_compliance must be finite, >= 0, got nan"),
    ("gravity", [0.0, np.inf, 0.0], "gravity must be 3 finite numbers"),
    ("u", 3, "friction_directions must be an even number in \\[2, 32\\]"),
    ("threshold", 0.0, "threshold must be finite, > 0"),
    ("static_speed", -1.0, "static_speed must be finite, >= 0"),
    ("max_region_points", 2, "max_region_points must be 0 \\(no limit\\) or a whole number >= 3"),
    ("warm_start_entries", 2.5, "warm_start_entries must be a whole number >= 0"),
    ("sleep", "yes", "sleep must be True or False"),
    ("sleep_speed", 1.0, "sleep_speed must be finite, > 0 and <= 0.1"),
    ("compiled_loop", "x", "compiled_loop must be None, True or False"),
    # (a bool is no number: gamma = True was a gamma of 1; a string is no number in the Python API)
    ("gamma", True, "gamma must be a number, got True"),
    ("static_speed", "0.1", "static_speed must be a number, got '0.1'"),
])
def test_parameters_set_between_steps_are_checked_as_at_construction(descs, name, value, msg):
    """A parameter set after construction goes through the constructor's check (plain attributes
    had taken gamma = 5, a NaN compliance or odd friction directions silently; a gravity list failed
    inside a compiled kernel); the old value stays.  A good value is taken, e.g. the Moon's gravity:
    a free box falls 1.62 m/s^2 x t^2 / 2 (to rounding) in 20 steps."""
    sim = Simulator(world(descs, "box"))
    before = getattr(sim, name)
    with pytest.raises(ValueError, match=msg):
        setattr(sim, name, value)
    after = getattr(sim, name)
    assert (np.array_equal(after, before) if isinstance(before, np.ndarray) else after == before)


def test_gravity_set_between_steps_takes_effect(descs):
    sim = Simulator(world(descs, "box"))
    sim.gravity = [0.0, 0.0, -1.62]       # a list: converted and checked
    assert isinstance(sim.gravity, np.ndarray) and sim.gravity.tolist() == [0.0, 0.0, -1.62]
    slot = sim.bodies.slot[sim.table.index["box"]]
    z0, v0 = sim.state.c[slot, 2], sim.state.v[slot, 2]
    assert abs(v0) < 1e-12 and sim.contact_count == 0
    for _ in range(20):
        sim.step()
    t = 20 * sim.dt
    assert sim.contact_count == 0      # (still falling: the box starts well above the table)
    assert abs(sim.state.v[slot, 2] + 1.62 * t) < 1e-12
    assert abs(sim.state.c[slot, 2] - (z0 - 1.62 * t * t / 2)) < 1.62 * sim.dt * t    # semi-implicit Euler


def test_world_setters_refuse_nonsense_and_keep_the_state(descs):
    w = world(descs, "mug")
    hand = w.robots["barrett"]
    before = w.save_state()
    with pytest.raises(ValueError, match="DOF 'f1' must be a number"):
        hand.set_dofs({"f1": "open"})
    with pytest.raises(ValueError, match="DOF values must be finite"):
        hand.set_dofs([0, np.nan, 0, 0])
    with pytest.raises(ValueError, match="joint values must be 8 finite"):
        hand.set_joint_values(np.full(8, np.nan))
    with pytest.raises(ValueError, match="joint values must be 8 finite"):
        hand.set_joint_values(np.zeros(3))
    assert all(np.array_equal(a, b) for a, b in zip(before.dofs, w.state.dofs))
    assert before.joint_overrides == w.state.joint_overrides
    # joints without limits are still bounded by MAX_JOINT_VALUE (the simulator's unwrapping needs it)
    chain = world(descs, "chain").robots["chain"]
    assert np.isinf(chain.dof_limits).all()
    with pytest.raises(ValueError, match="within"):
        chain.set_joint_values([2e6, 0.0, 0.0])
    with pytest.raises(ValueError, match="within"):
        chain.set_dofs([0.0, -2e6, 0.0])


# ---------------------------------------------------------------------------- fuzz
NASTY = st.sampled_from([np.nan, np.inf, -np.inf, 1e300, -1e300, 1e30, 1e6, -3.0, 0.5, 0.0, 1e-300])
WORLDS = st.sampled_from(["mug", "chain", "box"])


@FUZZ
@given(name=WORLDS, steps=st.integers(0, 2),
       edits=st.lists(st.tuples(st.sampled_from(["c", "q", "v", "joint_q", "lock", "time"]),
                                st.integers(0, 10 ** 6), NASTY), min_size=1, max_size=3))
def test_fuzz_restored_states(descs, name, steps, edits):
    """NaN/inf/huge/zero entries anywhere in a state: restore_state and two steps either succeed
    with a finite state or raise ValueError/SimulationError, within 1 s, state unchanged."""
    sim = Simulator(world(descs, name))
    for _ in range(steps):
        sim.step()
    st_ = sim.save_state()
    for field, idx, value in edits:
        if field == "time":
            st_.time = value
            continue
        a = getattr(st_, field).reshape(-1)
        if a.size:
            a[idx % a.size] = value
    if outcome(sim, lambda: sim.restore_state(st_)):
        outcome(sim, sim.step)
        outcome(sim, sim.step)


@FUZZ
@given(name=WORLDS, dt=st.one_of(NASTY, st.floats(allow_nan=True, allow_infinity=True), st.floats(1e-13, 1.5),
                                  st.sampled_from([1e-12, 1e-9, 1.0])),
       t0=st.sampled_from([0.0, 1.0, 1e6, 1e12]))
def test_fuzz_step_sizes(descs, name, dt, t0):
    sim = Simulator(world(descs, name))
    st_ = sim.save_state()
    st_.time = t0
    sim.restore_state(st_)
    if outcome(sim, lambda: setattr(sim, "dt", dt)):
        assert 0 < sim.dt <= S.MAX_DT
        outcome(sim, sim.step)


@FUZZ
@given(name=WORLDS, which=st.integers(0, 10 ** 6), kind=st.integers(0, 5), value=NASTY,
       rpy=st.tuples(*[st.floats(-3.2, 3.2)] * 3), at=st.tuples(st.integers(0, 3), st.integers(0, 3)))
def test_fuzz_poses(descs, name, which, kind, value, rpy, at):
    """Poses through the world's setters (then a simulator built and stepped on them): rigid ones
    are accepted, anything else refused by name, with the world unchanged."""
    w = world(descs, name)
    handles = [(b.name, b, "pose") for b in w.bodies.values()] + \
              [(r.name, r, "base_pose") for r in w.robots.values() if r.instance.mount is None]
    who, h, attr = handles[which % len(handles)]
    X = getattr(h, attr) @ spatial.transform(spatial.rpy_to_matrix(rpy), [0.0, 0.0, 0.0])
    if kind == 0:
        X[at] = value
    elif kind == 1:
        X[:3, :3] *= value
    elif kind == 2:
        X[at[0] % 3, at[1] % 3] += 1e-3
    elif kind == 3:
        X[:3, 3] += value if np.isfinite(value) and abs(value) < 1e7 else 0.0
    elif kind == 4:
        X[3, at[1]] += 1e-3
    before = w.save_state()
    with within_a_second():
        try:
            setattr(h, attr, X)
        except ValueError as e:
            assert who in str(e)
            event("pose refused")
            after = w.save_state()
            assert all(np.array_equal(a, b) for a, b in zip(before.body_poses + before.base_poses,
                                                            after.body_poses + after.base_poses))
            return
    assert spatial.rigid_problem(getattr(h, attr)) is None
    try:
        sim = Simulator(w)
    except graspsim.errors.CollisionError:     # the pose put bodies inside each other: named, not built
        event("bodies interpenetrate")
        return
    outcome(sim, sim.step)


@pytest.mark.parametrize("call, match", [
    (lambda c: c.move_to("barrett", {"f1": float("nan")}), "f1 is not finite"),
    (lambda c: c.move_to("barrett", {"f9": 0.1}), "no DOF 'f9'"),
    (lambda c: c.move_to("barrett", [0.1, 0.2]), "must have 4 DOF values"),
    (lambda c: c.move_to("barrett", {"f1": 0.5}, duration=0.0), "duration must be finite and > 0"),
    (lambda c: c.set_gains("barrett", "f1", kp=float("nan")), "kp must be finite"),
    (lambda c: c.set_gains("barrett", "f1", kd=-1.0), "kd must be finite and >= 0"),
    (lambda c: c.set_gains("barrett", "f1", effort=0.0), "effort must be finite and > 0"),
    (lambda c: c.set_gains("barrett", "f1", kp=True), "barrett.f1: kp must be a number, got True"),   # (not 1)
])
def test_controller_commands_are_checked_when_given(call, match):
    """A bad command to the PD controller is refused by the call that makes it, naming the DOF, and
    leaves the controller's gains and trajectories as they were."""
    from graspsim.control import PDController

    world = graspsim.load_world(graspsim.data_path("worlds", "barrett_mug.yaml"))
    sim = graspsim.Simulator(world, dt=0.0025)
    ctl = PDController(sim)
    before = (ctl.kp.copy(), ctl.kd.copy(), ctl.effort.copy(), dict(ctl.trajectories))
    with pytest.raises(ValueError, match=match):
        call(ctl)
    np.testing.assert_array_equal(ctl.kp, before[0])
    np.testing.assert_array_equal(ctl.kd, before[1])
    np.testing.assert_array_equal(ctl.effort, before[2])
    assert ctl.trajectories == before[3]

"""Interactive pull and push (issue #9) against the real :class:`graspsim.Simulator`.

The viewer's pull is a spring-damper from a point of a dynamic body to a target point, its push a
probe sphere with a penalty spring on the penetration depth; both hand their force to the simulator
(``Simulator.apply_external_force``) before every step for as long as they are held, while the
dynamics (real contacts, real LCPs) runs.  The tests check physics, with the expected values
derived here from the mass, g, the spring constants and the friction coefficients:

* a box pulled up by a spring of stiffness k leaves the table and hangs with stretch m g / k;
* a box pulled sideways on the table stays put while k x stretch < mu_s m g and slides otherwise,
  stopping where static friction can hold the spring again;
* a probe moving into a box at constant speed pushes it along, with the kinetic friction force
  mu_k m g, and the probe's impulse plus the contact impulses plus gravity's equal the box's
  momentum change;
* the scripted mode (``pull``/``push``/``target``/``release``, ``press``/``dragto``) in a real window
  under Xvfb holds the pull and push across ``run``.

World: tests/models/gui_pull.yaml (a 6 cm, 0.2 kg wooden cube on a wooden table, mu_s 0.5, mu_k 0.4,
dt 2.5 ms) and worlds/barrett_mug.yaml.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim.gui.script import ScriptError, parse_script
from graspsim.gui.session import Session


ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "tests" / "models" / "gui_pull.yaml"
G = 9.81
M_BOX = 0.2            # kg (objects/cube.yaml)
HALF = 0.03            # m, half the cube's edge
MU_S, MU_K = 0.5, 0.4  # wood on wood in gui_pull.yaml


def box_session() -> Session:
    ss = Session(graspsim.load_world(MODEL))
    b = ss.world.bodies["box"]
    assert b.mass == pytest.approx(M_BOX) and ss.world.description.gravity[2] == pytest.approx(-G)
    return ss


def run_for(ss: Session, seconds: float) -> None:
    """Run the dynamics as the window's scripted ``run`` does (fast-forward, frame by frame)."""
    assert ss.start(speed=0.0, duration=seconds)
    while ss.running:
        ss.frame_dynamics(0.0, 40.0)
    assert not ss.message.startswith("dynamics stopped"), ss.message


def body_point(ss: Session, name: str, p_B: np.ndarray) -> np.ndarray:
    X = ss.body_poses()[ss.table.index[name]]
    return X[:3, :3] @ p_B + X[:3, 3]


def box_center(ss: Session) -> np.ndarray:
    return ss.body_poses()[ss.table.index["box"]][:3, 3].copy()


# -- pull ------------------------------------------------------------------------------------------------

def test_pull_lifts_box_until_the_spring_carries_its_weight():
    """Spring k = 20 N/m on the top face's centre, its end held 40 mm higher than where the box would
    hang: the box leaves the table, rises 40 mm and settles with stretch m g / k = 98.1 mm.

    Tolerances: the spring is critically damped (c = 2 sqrt(k m), omega = sqrt(k / m) = 10 rad/s),
    so after 1.5 s the residual of the 0.14 m transient is 0.14 (1 + 15) e^-15 < 1 um: 0.2 % of the
    stretch (0.2 mm) is generous for it and for the contact threshold (0.05 mm).
    """
    ss = box_session()
    k = 20.0
    stretch = M_BOX * G / k                                   # 0.0981 m
    top = np.array([0.0, 0.0, 2 * HALF])
    run_for(ss, 0.05)                                         # resting on the table: real contacts
    assert any("box" in (c.body_a, c.body_b) for c in ss.contacts)
    z0 = box_center(ss)[2]
    assert ss.begin_interaction("pull", "box", top, stiffness=k)
    it = ss.interaction
    assert it.stiffness == k and it.damping == pytest.approx(2 * math.sqrt(k * M_BOX))
    ss.move_interaction(top + [0, 0, stretch + 0.04])
    run_for(ss, 1.5)
    assert ss.interaction is it and it.duration == pytest.approx(1.5, abs=1e-9)   # held all along
    p = body_point(ss, "box", it.point_B)
    np.testing.assert_allclose(it.target - p, [0, 0, stretch], atol=2e-4)
    np.testing.assert_allclose(it.force, [0, 0, M_BOX * G], atol=0.002 * M_BOX * G)
    assert box_center(ss)[2] - z0 == pytest.approx(0.04, abs=2e-4)
    assert not any("box" in (c.body_a, c.body_b) for c in ss.contacts)   # hanging free
    assert np.linalg.norm(ss.sim.body_velocity("box")) < 1e-3
    # the impulse it delivered over 1.5 s: about the weight's (it rose and stopped again), less the
    # table's support during the first instant
    assert it.impulse[2] == pytest.approx(M_BOX * G * 1.5, rel=0.05)
    # let go: the box falls back onto the table and rests there
    ss.end_interaction()
    run_for(ss, 0.6)
    assert box_center(ss)[2] == pytest.approx(z0, abs=2e-4)
    assert any("box" in (c.body_a, c.body_b) for c in ss.contacts)


@pytest.mark.parametrize("ratio", [0.9, 1.1, 1.5])
def test_sideways_pull_slides_the_box_only_beyond_static_friction(ratio):
    """A horizontal spring (k = 20 N/m) on the centre of the box's -x face, its end held so that
    k x stretch = ratio x mu_s m g (mu_s m g = 0.981 N).

    Below 1 static friction holds the box (it may creep by the contact compliance only: < 0.05 mm).
    Above 1 it slides towards the spring's end; the critically damped spring slows it until the
    spring force falls to the kinetic friction mu_k m g = 0.785 N, where it stops and static
    friction holds it: the final spring force lies in [mu_k m g, mu_s m g] (2 % below mu_k for the
    damping force of the last, slow millimetres), and the box slid by the stretch it lost.
    """
    ss = box_session()
    k = 20.0
    side = np.array([-HALF, 0.0, HALF])                       # at the centre of mass's height
    s0 = ratio * MU_S * M_BOX * G / k
    x0 = box_center(ss)
    assert ss.begin_interaction("pull", "box", side, stiffness=k)
    ss.move_interaction(side - [s0, 0, 0])
    run_for(ss, 1.5)
    it = ss.interaction
    d = box_center(ss) - x0
    assert abs(d[1]) < 1e-5 and abs(d[2]) < 1e-4
    if ratio < 1:
        assert abs(d[0]) < 5e-5
        assert np.linalg.norm(it.force) == pytest.approx(ratio * MU_S * M_BOX * G, rel=1e-3)
    else:
        f_end = np.linalg.norm(it.force)
        assert 0.98 * MU_K * M_BOX * G <= f_end <= MU_S * M_BOX * G
        assert -d[0] > 0.005                                  # it slid towards the spring's end
        assert -d[0] == pytest.approx(s0 - f_end / k, abs=2e-4)
        assert np.linalg.norm(ss.sim.body_velocity("box")) < 1e-3   # and stopped


# -- push ------------------------------------------------------------------------------------------------

def test_push_probe_pushes_box_and_its_impulse_matches_the_momentum():
    """A 10 mm probe starting 5 mm in front of the box's -x face moves at 50 mm/s along +x for 1 s.

    The box is pushed along +x and slides at the probe's speed; the probe then carries the kinetic
    friction mu_k m g = 0.785 N, so its penalty spring (k_p = m (2 pi 5 Hz)^2 = 197 N/m) is
    compressed by mu_k m g / k_p = 4.0 mm, and the box moves V T - gap - that = 41.0 mm (1 mm:
    the spring's transient, 5 Hz critically damped, has died out long before).  Momentum: the
    probe's impulse (sum of its force x step length), the contact impulses the simulator reports
    and gravity's add up to m dv, to 1e-6 N s (the LCP's accuracy; dv is 0.01 N s).
    """
    ss = box_session()
    r, gap, V, T = 0.01, 0.005, 0.05, 1.0
    start = np.array([-HALF - r - gap, 0.0, HALF])
    x0 = box_center(ss)
    assert ss.begin_interaction("push", "box", start, radius=r)
    ss.move_interaction(start + [0.2, 0, 0], speed=V)         # goal far away: moves V for all of T
    k_p = ss.interaction.stiffness
    assert k_p == pytest.approx(M_BOX * (2 * math.pi * 5.0) ** 2)
    # instrument the real simulator: the contact impulse on the box and the probe force per step
    sim = ss.sim
    j_contact = np.zeros(3)
    probe_f: list = []
    step = sim.step

    def counted(*a, **kw):
        nonlocal j_contact
        probe_f.append(ss.interaction.force.copy())
        info = step(*a, **kw)
        c, f = sim.contacts, sim.contact_forces
        if c is not None and len(f):
            names_a = [ss.table.names[i] for i in c.body_a]
            names_b = [ss.table.names[i] for i in c.body_b]
            for a, b, fi in zip(names_a, names_b, f):
                j_contact = j_contact + (fi if b == "box" else -fi if a == "box" else 0) * sim.info.h
        return info

    sim.step = counted
    v0 = sim.body_velocity("box")[:3]
    run_for(ss, T)
    it = ss.interaction
    v1 = sim.body_velocity("box")[:3]
    d = box_center(ss) - x0
    assert d[0] == pytest.approx(V * T - gap - MU_K * M_BOX * G / k_p, abs=1e-3)
    assert abs(d[1]) < 1e-5 and abs(d[2]) < 1e-4
    assert v1[0] == pytest.approx(V, rel=0.02)
    steady = np.array(probe_f[len(probe_f) // 2:])            # the second half: sliding steadily
    np.testing.assert_allclose(steady.mean(0), [MU_K * M_BOX * G, 0, 0], atol=0.03 * MU_K * M_BOX * G)
    assert it.impulse[0] > 0.5                                # the probe did the pushing
    np.testing.assert_allclose(M_BOX * (v1 - v0), it.impulse + j_contact + [0, 0, -M_BOX * G * T], atol=1e-6)
    # probe pulled back: no more force, friction stops the box after v^2 / (2 mu_k g) = 0.32 mm
    # (the stepper moves with the velocity at the start of each step: up to h V = 0.125 mm more), and
    # not before v^2 / (2 mu_s g) = 0.25 mm
    ss.move_interaction(start)
    x1 = box_center(ss)
    run_for(ss, 0.2)
    assert np.linalg.norm(it.force) == 0.0
    slid = box_center(ss)[0] - x1[0]
    h = ss.world.description.dt
    assert V * V / (2 * MU_S * G) < slid <= V * V / (2 * MU_K * G) + h * V
    assert abs(sim.body_velocity("box")[0]) < 1e-6


def test_pull_and_push_refuse_static_bodies_and_wait_while_paused():
    ss = box_session()
    assert not ss.begin_interaction("pull", "table", np.zeros(3))
    assert "not a dynamic object" in ss.message
    assert ss.begin_interaction("pull", "box", [0, 0, 0.06], stiffness=1e9)   # too stiff for dt
    assert ss.interaction.stiffness == pytest.approx(M_BOX / (4 * 0.0025 ** 2))
    assert "limited" in ss.message
    ss.move_interaction([0, 0, 0.3], speed=0.1)
    assert not ss.running and ss.sim_time == 0.0
    np.testing.assert_allclose(ss.interaction.target, [0, 0, 0.06])        # moves with simulated time only
    ss.step_once()
    np.testing.assert_allclose(ss.interaction.target, [0, 0, 0.06 + 0.1 * 0.0025], atol=1e-12)
    assert "pull box" in ss.status_lines()[3]


def test_script_commands_for_pull_and_push_parse_and_check():
    cmds = parse_script("pull box 0 0 0.06 20 1.5; target 0 0 0.2 0.05; release; push box -0.05 0 0.03 0.01;"
                        " press 10 20 left; dragto 30 40; release")
    assert [c.name for c in cmds] == ["pull", "target", "release", "push", "press", "dragto", "release"]
    assert cmds[0].args == ("box", 0.0, 0.0, 0.06, 20.0, 1.5)
    for bad, msg in [("pull box 0 0", "takes 4 to 6"), ("pull box 0 0 0 -5", "stiffness"),
                     ("push box 0 0 0 0", "radius"), ("target 0 0 0 -1", "speed"),
                     ("press 1 2 thumb", "button")]:
        with pytest.raises(ScriptError, match=msg):
            parse_script(bad)


# -- the window, scripted --------------------------------------------------------------------------------

def test_scripted_pull_holds_the_mug_up_in_the_window(viewer, capsys):
    """``pull mug ...; target ...; run 1.5`` in a real window: the mug (0.3 kg) hangs from a
    40 N/m spring, stretched m g / k = 73.6 mm, 20 mm above the table (below the hand's palm);
    ``release; run 0.6`` puts it back.  Tolerance 0.3 mm: the transient (critically damped,
    omega = 11.5 rad/s) has decayed to < 1 um after 1.5 s; the rest is for a finger's touch."""
    v = viewer(ROOT / "worlds" / "barrett_mug.yaml")
    ss = v.session
    i = ss.table.index["mug"]
    m, k = ss.world.bodies["mug"].mass, 40.0
    com = ss.world.bodies["mug"].pose[:3, :3] @ ss.table.com[i] + ss.world.bodies["mug"].pose[:3, 3]
    grab = np.array([com[0], com[1], 0.09])                   # above the centre of mass: hangs upright
    lift, stretch = 0.02, m * G / k
    z0 = ss.world.bodies["mug"].pose[2, 3]
    aim = grab + [0, 0, stretch + lift]
    v.run_script(f"pull mug {grab[0]} {grab[1]} {grab[2]} {k}; target {aim[0]} {aim[1]} {aim[2]}; run 1.5;"
                 " print lifted")
    it = ss.interaction
    assert it is not None and it.duration == pytest.approx(1.5, abs=1e-9)
    np.testing.assert_allclose(it.target - body_point(ss, "mug", it.point_B), [0, 0, stretch], atol=3e-4)
    assert ss.sim.body_pose("mug")[2, 3] - z0 == pytest.approx(lift, abs=3e-4)
    assert np.linalg.norm(ss.sim.body_velocity("mug")) < 2e-3
    out = capsys.readouterr().out
    assert f"pull mug: {m * G:.2f}" in out                    # the status line reports the force
    # nothing else carries the mug: a drooping finger of the (unactuated) hand may brush its wall
    # with a few mN, less than the 0.3 mm x k = 12 mN the tolerance allows
    touching = [c.force for c in ss.contacts if "mug" in (c.body_a, c.body_b) and c.force is not None]
    assert sum(np.linalg.norm(f) for f in touching) < 0.3e-3 * k
    v.run_script("release; run 0.6")
    assert ss.interaction is None
    assert ss.sim.body_pose("mug")[2, 3] == pytest.approx(z0, abs=3e-4)


def test_mouse_pull_held_and_scripted_push_in_the_window(viewer):
    """The Pull tool with the mouse button held (``press``/``dragto``) across ``run``: the box hangs
    from the default spring (2 Hz on its mass: stretch g / (4 pi)^2 = 62.1 mm, whatever the mass),
    the spring's end being where the mouse put it; then a scripted push moving at 40 mm/s."""
    v = viewer(MODEL)
    ss = v.session
    v.run_script("camera -90 0 0.6 0 0 0.05; tool pull")      # looking along +y, level with the box
    top = np.array([0.0, -HALF, HALF + 0.015])                # on the box's face towards the camera
    w, h = v.size
    x, y = v.camera.project(top, w, h)[0]
    name, grabbed = ss.pick(*v.camera.ray(x, y, w, h))
    assert name == "box" and np.linalg.norm(grabbed - top) < 1e-3
    v.run_script(f"press {x} {y}; dragto {x} {y + 150}; run 1.5")
    it = ss.interaction
    assert it is not None and it.kind == "pull" and it.duration == pytest.approx(1.5, abs=1e-9)
    np.testing.assert_allclose(it.target, v.camera.drag_point(x, y + 150, w, h, grabbed), atol=1e-9)
    assert it.target[2] - top[2] > 0.12                        # the mouse went up by > 0.12 m
    # vertically the spring carries the weight (0.3 mm as above); the box, grabbed 30 mm beside its
    # centre of mass, still swings a little as a pendulum about that point, a mode the spring's
    # damper reaches only through the point's small motion: 2 mm sideways
    stretch = G / (2 * math.pi * 2.0) ** 2
    d = it.target - body_point(ss, "box", it.point_B)
    assert d[2] == pytest.approx(stretch, abs=3e-4)
    assert np.hypot(d[0], d[1]) < 2e-3
    assert box_center(ss)[2] > HALF + 0.02
    # the spring is drawn (magenta) from the box up to the mouse
    img = v.capture().astype(int)
    magenta = (img[..., 0] > 150) & (img[..., 2] > 150) & (img[..., 1] < 0.6 * img[..., 0])
    rows, cols = np.nonzero(magenta)
    assert len(rows) > 20
    tip = v.camera.project(it.target, w, h)[0]
    assert np.min(np.hypot(cols - tip[0], (h - 1 - rows) - tip[1])) < 4      # reaches the spring's end
    v.run_script("release; run 0.6")
    assert ss.interaction is None and v._held is None
    z_rest = box_center(ss)[2]
    assert z_rest == pytest.approx(HALF, abs=2e-4)
    # scripted push: a 10 mm probe from 5 mm before the -x face, 40 mm/s for 1 s, box moves ~ 31 mm
    x0 = box_center(ss)
    c = x0 + [-HALF - 0.015, 0, 0]
    v.run_script(f"push box {c[0]} {c[1]} {c[2]} 0.01; target {c[0] + 1} {c[1]} {c[2]} 0.04; run 1.0")
    k_p = ss.interaction.stiffness
    moved = box_center(ss) - x0
    assert moved[0] == pytest.approx(0.04 - 0.005 - MU_K * M_BOX * G / k_p, abs=1e-3)
    assert abs(moved[1]) < 1e-5
    with pytest.raises(ScriptError, match="not a dynamic body"):
        v.run_script("release; pull table 0 0 0")
    with pytest.raises(ScriptError, match="no pull or push"):
        v.run_script("target 0 0 0")
    with pytest.raises(ScriptError, match="no mouse button is held"):
        v.run_script("dragto 1 1")

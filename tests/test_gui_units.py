"""GUI parts that need no window: camera math, script parsing and running, the session's logic
(selection, DOFs, moving robots, picking, contacts, grasp quality, the dynamics time budget)."""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pytest

import graspsim
from graspsim.gui import script as S
from graspsim.gui.actions import ContactView, to_views
from graspsim.gui.camera import OrbitCamera, look_at, perspective
from graspsim.gui.session import Session, ray_mesh

ROOT = Path(__file__).resolve().parent.parent
WORLDS = ["barrett_mug", "puma_barrett_handset", "parallel_jaw_box"]


def world(name: str):
    return graspsim.load_world(ROOT / "worlds" / f"{name}.yaml")


# -- camera ---------------------------------------------------------------------------------------

def test_gui_package_does_not_import_pyglet():
    import subprocess

    code = "import sys, graspsim.gui, graspsim.gui.cli, graspsim.gui.session, graspsim.gui.script; " \
           "print('pyglet' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_view_matrix_is_rigid_and_matches_look_at():
    cam = OrbitCamera(target=np.array([0.1, -0.2, 0.3]), distance=0.7)
    cam.set_angles(-35, 20)
    V = cam.view_matrix()
    R = V[:3, :3]
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(R) == pytest.approx(1.0)
    np.testing.assert_allclose(V, look_at(cam.eye, cam.target), atol=1e-12)
    # the target is straight ahead at the given distance
    t_cam = V @ np.r_[cam.target, 1.0]
    np.testing.assert_allclose(t_cam[:3], [0, 0, -0.7], atol=1e-12)
    # z-up: the camera's up vector has a positive world z component
    assert cam.up[2] > 0


def test_projection_centre_and_ray_round_trip():
    cam = OrbitCamera(target=np.array([0.0, 0.0, 0.1]), distance=1.0)
    w, h = 800, 600
    np.testing.assert_allclose(cam.project(cam.target, w, h)[0], [400, 300], atol=1e-9)
    rng = np.random.default_rng(1)
    for _ in range(20):
        x, y = rng.uniform(0, w), rng.uniform(0, h)
        o, d = cam.ray(x, y, w, h)
        assert np.linalg.norm(d) == pytest.approx(1.0)
        p = o + rng.uniform(0.3, 3.0) * d
        np.testing.assert_allclose(cam.project(p, w, h)[0], [x, y], atol=1e-6)
    # points behind the camera have no pixel
    assert np.all(np.isnan(cam.project(cam.eye - cam.forward, w, h)))


def test_perspective_maps_near_and_far_planes():
    P = perspective(math.radians(60), 1.5, 0.1, 10.0)
    for z, ndc in ((-0.1, -1.0), (-10.0, 1.0)):
        h = P @ np.array([0, 0, z, 1.0])
        assert h[2] / h[3] == pytest.approx(ndc)


def test_orbit_pan_zoom():
    cam = OrbitCamera(distance=2.0)
    az = cam.azimuth
    cam.orbit(100, 0)
    assert cam.azimuth == pytest.approx((az - 100 * cam.orbit_speed) % (2 * math.pi))
    cam.orbit(0, -1e6)  # elevation is clamped short of the poles
    assert cam.elevation == pytest.approx(math.radians(89))
    cam.orbit(0, 1e6)
    assert cam.elevation == pytest.approx(-math.radians(89))
    cam.set_angles(-60, 25)
    # pan: the point under the mouse follows it
    w, h = 640, 480
    p0 = cam.target.copy()
    before = cam.project(p0, w, h)[0]
    cam.pan(40, -25, h)
    after = cam.project(p0, w, h)[0]
    np.testing.assert_allclose(after - before, [40, -25], atol=1e-6)
    d = cam.distance
    cam.zoom(2)
    assert cam.distance == pytest.approx(d * 0.85 ** 2)
    cam.zoom(-1000)
    assert cam.distance == cam.max_distance


def test_fit_and_drag_point():
    cam = OrbitCamera()
    cam.fit(np.array([1.0, 2.0, 3.0]), 0.5)
    np.testing.assert_allclose(cam.target, [1, 2, 3])
    # the sphere fits: its silhouette radius is inside the half-height of the view
    assert cam.distance * math.sin(cam.fovy / 2) >= 0.5
    w, h = 400, 300
    anchor = np.array([1.1, 2.0, 3.05])
    px = cam.project(anchor, w, h)[0]
    np.testing.assert_allclose(cam.drag_point(px[0], px[1], w, h, anchor), anchor, atol=1e-9)
    moved = cam.drag_point(px[0] + 30, px[1], w, h, anchor)
    assert abs((moved - anchor) @ cam.forward) < 1e-9       # stays on the plane facing the camera
    assert (moved - anchor) @ cam.right > 0                 # moving the mouse right moves it right


# -- script parsing ---------------------------------------------------------------------------------

def test_parse_script_commands_and_units():
    cmds = S.parse_script("autograsp; run 2.0; screenshot out.png\n# a comment\n"
                          "dof barrett f1 30; dof f2 0.5rad  # trailing comment\ncamera -60 25 0.5 0 0 0.1")
    assert [c.name for c in cmds] == ["autograsp", "run", "screenshot", "dof", "dof", "camera"]
    assert cmds[1].args == (2.0,)
    assert cmds[3].args == ("barrett", "f1", "30") and cmds[3].line == 3
    assert cmds[4].args == ("f2", "0.5rad")
    assert cmds[5].args == (-60.0, 25.0, 0.5, 0.0, 0.0, 0.1)
    assert S.parse_value("-12.5mm") == (-12.5, "mm")
    assert S.parse_value("3") == (3.0, None)
    assert S.parse_script("dynamic_autograsp; exit")[0].name == "dyngrasp"
    assert S.parse_script('print "a b; c # d"; fit')[0].args == ("a b; c # d",)   # quotes protect ; and #
    with pytest.raises(S.ScriptError, match="script:2: No closing quotation"):
        S.parse_script('fit\nprint "open')


@pytest.mark.parametrize("text, message", [
    ("jump 3", "unknown command 'jump'"),
    ("run", "'run' takes 1 argument, got 0"),
    ("run fast", "argument 1 'fast': not a finite number"),
    ("run nan", "argument 1 'nan': not a finite number"),      # (float() takes it: the run never ran)
    ("wait inf", "argument 1 'inf': not a finite number"),
    ("run -1", "must not be negative"),
    ("frames 2.5", "whole number"),
    ("dof f1 ten", "'ten' is not a number"),
    ("screenshot out.jpg", "PNG"),
    ("show cones maybe", "on or off"),
    ("tool hammer", "select, move, pull or push"),
    ("stop\nstep 1 2", "script:2:"),
    ("size 4 4", "at least 16x16"),
    ("drag 1 2 3 4 up", "left, right or middle"),
])
def test_parse_script_errors_name_the_line(text, message):
    with pytest.raises(S.ScriptError, match=message.replace("(", r"\(").replace(")", r"\)")):
        S.parse_script(text)


def test_load_script_reads_files(tmp_path):
    f = tmp_path / "demo.gsv"
    f.write_text("fit\nframes 3\n\nbogus\n")
    with pytest.raises(S.ScriptError, match=r"demo.gsv:4: unknown command 'bogus'"):
        S.load_script(str(f))
    f.write_text("fit\nframes 3\n")
    assert [c.name for c in S.load_script(str(f))] == ["fit", "frames"]
    assert [c.name for c in S.load_script("fit; frames 3")] == ["fit", "frames"]


def test_script_runner_waits_for_frames_and_stops_on_error():
    log = []

    def frames(c):
        def gen():
            for i in range(int(c.args[0])):
                log.append(f"frame{i}")
                yield
        return gen()

    def fail(c):
        raise S.ScriptError("boom")

    handlers = {"fit": lambda c: log.append("fit"), "frames": frames, "quit": fail}
    r = S.ScriptRunner(S.parse_script("fit; frames 2; fit; quit; fit"), handlers)
    ticks = 0
    while not r.done:
        r.tick()
        ticks += 1
    assert log == ["fit", "frame0", "frame1", "fit"]
    assert r.error == "boom" and ticks == 3
    with pytest.raises(S.ScriptError, match="no handler"):
        S.ScriptRunner(S.parse_script("run 1"), handlers)


def test_help_lists_every_command():
    text = S.help_text()
    for name in S.COMMANDS:
        assert f"  {name}" in text


# -- session ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", WORLDS)
def test_session_on_every_world(name):
    ss = Session(world(name))
    assert ss.selected == list(ss.world.robots)[-1]
    lo, hi = ss.scene_bounds()
    c, r = ss.focus_bounds()
    assert np.all(lo <= c) and np.all(c <= hi) and 0 < r < np.linalg.norm(hi - lo)
    cam = OrbitCamera()
    cam.fit(c, r)
    hit = ss.pick(*cam.ray(320, 240, 640, 480))    # the view's centre falls on the hand or an object
    assert hit is not None
    assert len(ss.status_lines()) >= 3


def test_session_selection_and_dofs():
    ss = Session(world("puma_barrett_handset"))
    assert ss.selected == "barrett" and ss.hand == "barrett"   # the last robot: the hand on the arm
    ss.select("puma/link3")                                     # a link selects its robot
    assert ss.selected == "puma" and ss.hand == "puma"
    ss.select_next()
    assert ss.selected == "barrett"
    ss.select_next(-1)
    assert ss.selected == "puma"
    with pytest.raises(KeyError, match="no robot or body 'nope'"):
        ss.select("nope")
    ss.select("barrett")
    r = ss.world.robots["barrett"]
    ss.move_dof_cursor(1)
    assert ss.dof_cursor == 1
    v0 = r.dof_values[1]
    ss.nudge_dof(10.0)                                           # degrees
    assert r.dof_values[1] == pytest.approx(v0 + math.radians(10))
    ss.nudge_dof(1e6)                                            # clamped at the limit
    assert r.dof_values[1] == pytest.approx(r.dof_limits[1, 1])
    assert ss.highlighted() == set(ss.table.robot_links[r.index].tolist())
    ss.deselect()
    assert ss.highlighted() == set()


def test_session_prismatic_dof_in_mm_and_open_hand():
    ss = Session(world("parallel_jaw_box"))
    r = ss.world.robots["gripper"]
    assert ss.dof_unit(r, 0) == ("mm", 1000.0)
    ss.nudge_dof(-5.0)
    assert r.dof_values[0] == pytest.approx(0.035)
    assert ss.open_hand()                                        # closing velocity < 0: opens to the upper limit
    assert r.dof_values[0] == pytest.approx(r.dof_limits[0, 1])
    ss2 = Session(world("barrett_mug"))
    h = ss2.world.robots["barrett"]
    h.set_dofs({"f1": 1.0, "spread": 0.5})
    ss2.open_hand()                                              # fingers close with +velocity: open at 0
    assert h.dof_values[1] == pytest.approx(h.dof_limits[1, 0])
    assert h.dof_values[0] == pytest.approx(0.5)                 # the spread (velocity 0) stays


def test_move_free_robot_body_and_mounted_hand():
    ss = Session(world("barrett_mug"))
    b0 = ss.world.robots["barrett"].base_pose
    assert ss.translate_selected([0.01, 0, -0.02])
    np.testing.assert_allclose(ss.world.robots["barrett"].base_pose[:3, 3], b0[:3, 3] + [0.01, 0, -0.02])
    assert ss.rotate_selected(math.radians(90))
    R = ss.world.robots["barrett"].base_pose[:3, :3]
    np.testing.assert_allclose(R, np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]]) @ b0[:3, :3], atol=1e-12)
    ss.select("mug")
    m0 = ss.world.bodies["mug"].pose
    ss.translate_selected([0, 0.02, 0])
    np.testing.assert_allclose(ss.world.bodies["mug"].pose[:3, 3], m0[:3, 3] + [0, 0.02, 0])
    ss.reset()
    np.testing.assert_allclose(ss.world.bodies["mug"].pose, m0)
    # a hand on an arm moves through the arm's inverse kinematics
    ss = Session(world("puma_barrett_handset"))
    h0 = ss.world.robots["barrett"].base_pose
    q0 = ss.world.robots["puma"].dof_values
    assert ss.translate_selected([0.0, 0.0, 0.03])
    h1 = ss.world.robots["barrett"].base_pose
    np.testing.assert_allclose(h1[:3, 3], h0[:3, 3] + [0, 0, 0.03], atol=1e-4)
    np.testing.assert_allclose(h1[:3, :3], h0[:3, :3], atol=1e-3)
    assert not np.allclose(ss.world.robots["puma"].dof_values, q0)
    assert not ss.translate_selected([5.0, 0, 0])                # out of reach: refused, nothing moves
    assert "cannot reach" in ss.message
    np.testing.assert_allclose(ss.world.robots["barrett"].base_pose, h1, atol=1e-9)


def test_pick_hits_the_nearest_body():
    ss = Session(world("barrett_mug"))
    poses = ss.body_poses()
    mug = ss.world.bodies["mug"].pose[:3, 3]
    # from far away along -x towards the mug's middle height
    o = np.array([1.0, 0.0, mug[2] + 0.05])
    name, p = ss.pick(o, np.array([-1.0, 0, 0]))
    assert name == "mug"
    v = ss.table.shapes[ss.table.index["mug"]].vertices_in(poses[ss.table.index["mug"]])
    assert p[0] == pytest.approx(v[:, 0].max(), abs=2e-3)
    # straight down onto the hand's palm from above
    name, _ = ss.pick(np.array([0, 0, 1.0]), np.array([0, 0, -1.0]))
    assert ss.owner(name) == "barrett"
    assert ss.pick(np.array([0, 0, 1.0]), np.array([0, 0, 1.0])) is None
    # many rays at once agree with one at a time
    rng = np.random.default_rng(3)
    dirs = rng.normal(size=(40, 3)) * [0.2, 0.2, 0.2] + [-1, 0, -0.3]
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    idx, dist = ss.pick_many(o, dirs)
    for i, d, t in zip(idx, dirs, dist):
        one = ss.pick(o, d)
        assert (one is None and i == -1) or (ss.table.names[i] == one[0] and np.allclose(o + t * d, one[1]))
    # the triangle test itself
    t = ray_mesh(np.zeros(3), np.array([0, 0, 1.0]), np.array([[-1, -1, 2.0]]), np.array([[3, 0, 0.0]]),
                 np.array([[0, 3, 0.0]]))
    assert t == pytest.approx(2.0)


def test_contact_conversion_accepts_objects_and_struct_of_arrays():
    w = world("barrett_mug")
    t = w.table
    objs = [NS(body_a="barrett/f1_dist", body_b="mug", point=[0, 0, 0.1], normal=[0, 0, -2.0], separation=0.0)]
    v = to_views(w, objs)[0]
    np.testing.assert_allclose(v.normal, [0, 0, -1])
    rubber_glass = w.description.materials.mu(t.materials[t.index["barrett/f1_dist"]], "glass")[0]
    assert v.mu == pytest.approx(rubber_glass) and v.force is None
    soa = NS(body_a=np.array([t.index["barrett/f2_dist"], t.index["mug"]]),
             body_b=np.array([t.index["mug"], t.index["table"]]),
             point=np.zeros((2, 3)), normal=np.array([[1.0, 0, 0], [0, 0, -1.0]]),
             separation=np.zeros(2), force=np.array([[2.0, 0, 0], [0, 0, -3.0]]))
    vs = to_views(w, soa)
    assert [(c.body_a, c.body_b) for c in vs] == [("barrett/f2_dist", "mug"), ("mug", "table")]
    np.testing.assert_allclose(vs[1].force, [0, 0, -3.0])
    vs = to_views(w, NS(**{k: getattr(soa, k) for k in ("body_a", "body_b", "point", "normal")}),
                  forces=np.ones((2, 3)))
    np.testing.assert_allclose(vs[0].force, [1, 1, 1])


def _three_finger_contacts(w):
    """Contacts where the three fingertips of the Barrett hand would touch the mug (normals into it)."""
    mug = w.bodies["mug"].pose[:3, 3]
    out = []
    for k, f in enumerate(("f1_dist", "f2_dist", "f3_dist")):
        a = 2 * math.pi * k / 3
        d = np.array([math.cos(a), math.sin(a), 0.0])
        p = mug + np.array([0, 0, 0.05]) + 0.04 * d
        out.append(ContactView(f"barrett/{f}", "mug", p, -d, mu=1.0))
    return out


def test_quality_of_injected_contacts():
    ss = Session(world("barrett_mug"))
    ss.set_contacts(_three_finger_contacts(ss.world))
    ss.update_quality()
    q = ss.quality
    assert q is not None and q.object == "mug" and q.n_contacts == 3
    assert q.force_closure and q.epsilon > 0 and q.volume > 0
    assert q.wrenches.shape[0] == 3 and q.wrenches.shape[2] == 6
    lines = ss.status_lines(fps=55.0)
    assert "contacts 3" in lines[1] and "force closure YES" in lines[1] and "epsilon" in lines[1]
    assert "55 frames/s" in lines[0]
    # contacts with the table only: no grasp, no quality
    ss.set_contacts([ContactView("mug", "table", np.zeros(3), np.array([0, 0, -1.0]))])
    ss.update_quality()
    assert ss.quality is None


def test_session_auto_grasp_closes_the_gripper_onto_the_box():
    """The session's auto-grasp (graspsim.control) stops each finger on the 50 mm box's face, and the
    contacts the collision module then reports make a force-closure grasp."""
    ss = Session(world("parallel_jaw_box"))
    assert ss.auto_grasp()
    opening = ss.world.robots["gripper"].dof_values[0]
    threshold = ss.world.description.contact_threshold
    assert 0.025 <= opening <= 0.025 + threshold, opening        # each face 25 mm from the centre
    ss.refresh_contacts()
    pairs = {(c.body_a, c.body_b) for c in ss.contacts}
    assert {("gripper/left", "box"), ("gripper/right", "box")} <= pairs
    assert all(c.separation <= threshold for c in ss.contacts)
    ss.update_quality()
    assert ss.quality.object == "box" and ss.quality.force_closure and ss.quality.epsilon > 0


def test_a_missing_core_module_raises_instead_of_a_status_message(monkeypatch):
    """A broken install surfaces as an ImportError, also from the grasp-quality worker thread."""
    ss = Session(world("barrett_mug"))
    ss.set_contacts(_three_finger_contacts(ss.world))
    monkeypatch.setitem(sys.modules, "graspsim.grasp", None)    # 'import graspsim.grasp' now fails
    with pytest.raises(ImportError, match="graspsim.grasp"):
        ss.update_quality()
    ss.request_quality()
    with pytest.raises(ImportError, match="graspsim.grasp"):
        ss.wait_quality(timeout=10.0)
    ss.close()
    monkeypatch.setitem(sys.modules, "graspsim.collision", None)
    with pytest.raises(ImportError, match="graspsim.collision"):
        ss.refresh_contacts()


# -- the dynamics time budget (timing stand-ins for the simulator: they only take time) -------------

class TimedSim:
    """A stand-in with the simulator's timing interface only: each step costs ``cost`` seconds."""

    def __init__(self, dt: float, cost: float):
        self.time, self.dt, self.cost, self.steps = 0.0, dt, cost, 0
        self.contacts, self.forces = [], []
        self.asleep = False          # a world that keeps moving (graspsim.dynamics.sleep)

    def step(self, controller=None):
        t_end = time.perf_counter() + self.cost
        while time.perf_counter() < t_end:
            pass
        self.time += self.dt
        self.steps += 1

    def apply_external_force(self, body, point_W, force_W):
        self.forces.append((body, np.array(point_W), np.array(force_W)))


def _frames(ss, seconds, draw=0.01, fps=40.0):
    """Drive the session as the window does: a frame draws for ``draw`` s, then the dynamics' share."""
    n, t0 = 0, time.perf_counter()
    longest = 0.0
    while time.perf_counter() - t0 < seconds:
        f0 = time.perf_counter()
        time.sleep(draw)
        ss.frame_dynamics(draw, fps)
        longest = max(longest, time.perf_counter() - f0)
        n += 1
    return n / (time.perf_counter() - t0), longest


def test_slow_steps_do_not_hold_the_frame_rate():
    ss = Session(world("barrett_mug"))
    ss.sim = TimedSim(0.0025, 0.06)          # a step slower than a frame
    ss.start(speed=1.0)
    rate, _ = _frames(ss, 1.5)
    assert rate >= 30, rate
    assert ss.sim.steps >= 3                 # and the dynamics still progresses


def test_fast_steps_are_not_held_to_the_frame_rate():
    ss = Session(world("barrett_mug"))
    ss.sim = TimedSim(0.0025, 0.0001)
    ss.start(speed=0.0)                      # as fast as possible (the scripted 'run')
    rate, _ = _frames(ss, 0.5)
    assert ss.sim.steps > 20 * rate * 0.5    # many steps per frame
    ss.sim = TimedSim(0.0025, 0.0001)
    ss.start(speed=1.0)                      # real time
    _frames(ss, 1.0)
    assert ss.sim.time == pytest.approx(1.0, abs=0.15)
    assert ss.rtf == pytest.approx(1.0, abs=0.15)
    ss.start(speed=0.0, duration=0.05)       # run for a duration, then stop
    t0 = ss.sim.time
    while ss.running:
        ss.frame_dynamics(0.01, 40)
    assert ss.sim.time == pytest.approx(t0 + 0.05, abs=1e-9)


def test_pull_spring_and_push_probe_forces():
    ss = Session(world("barrett_mug"))
    ss.sim = TimedSim(ss.world.description.dt, 0.0)
    ss.running = True
    mug = ss.world.bodies["mug"]
    p = mug.pose[:3, 3] + np.array([0.0, 0.0, 0.05])
    assert ss.begin_interaction("pull", "mug", p)
    ss.move_interaction(p + np.array([0.1, 0, 0]))
    ss._apply_interaction()
    body, point, f = ss.sim.forces[-1]
    assert body == "mug"
    np.testing.assert_allclose(point, p, atol=1e-12)
    w = 2 * math.pi * 2.0
    np.testing.assert_allclose(f, [mug.mass * w * w * 0.1, 0, 0], rtol=1e-9)   # k x stretch, no velocity yet
    ss.end_interaction()
    assert not ss.begin_interaction("pull", "table", p)                         # static: refused
    # push: a probe just inside the mug's outer wall pushes it outward from the probe
    v = ss.table.shapes[ss.table.index["mug"]].vertices_in(mug.pose)
    side = np.array([v[:, 0].min(), mug.pose[1, 3], mug.pose[2, 3] + 0.04])
    assert ss.begin_interaction("push", "mug", side)
    ss.move_interaction(side - np.array([ss.interaction.radius * 0.5, 0, 0]))
    ss._apply_interaction()
    _, point, f = ss.sim.forces[-1]
    assert f[0] > 0 and abs(f[1]) < 0.2 * f[0] and abs(f[2]) < 0.2 * f[0]
    ss.move_interaction(side - np.array([0.1, 0, 0]))                           # probe away: no force
    n = len(ss.sim.forces)
    ss._apply_interaction()
    assert len(ss.sim.forces) == n


def test_status_says_when_the_world_sleeps_and_the_box_stays_put():
    """A world at rest falls asleep (graspsim.dynamics.sleep) and the status line says so; the box
    has not moved (to 1e-9 m) from where the awake steps left it, and a push wakes it."""
    ss = Session(world("parallel_jaw_box"))
    for _ in range(200):                    # 0.5 s: asleep after about 0.2 s
        assert ss.step_once()
    assert "dynamics paused (asleep: at rest)" in ss.status_lines()[0]
    p = ss.sim.body_pose("box")[:3, 3].copy()
    for _ in range(40):
        ss.step_once()
    assert np.abs(ss.sim.body_pose("box")[:3, 3] - p).max() < 1e-9
    ss.sim.apply_external_force("box", p, [0.0, 0.0, 1.0])
    assert "asleep" not in ss.status_lines()[0]

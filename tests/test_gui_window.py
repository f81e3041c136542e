"""The viewer in a real window under Xvfb (Mesa's software OpenGL): it opens on every shipped world
and draws it in the objects' colours, contacts become red friction cones, real X key and mouse
events drive the camera and the DOFs, the scripted mode and screenshots work from the command
line, and the frame rate stays >= 30 frames/s.

The session fixture starts its own Xvfb on a free display (``-displayfd``) and stops it after;
CI installs Xvfb and Mesa (see docs/gui.md).
"""
from __future__ import annotations

import ctypes
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pytest


ROOT = Path(__file__).resolve().parent.parent
WORLDS = ["barrett_mug", "puma_barrett_handset", "parallel_jaw_box"]
W, H = 640, 400


@pytest.fixture
def open_view(viewer):
    """Factory for viewers on shipped worlds (``viewer`` of conftest closes them after the test)."""
    return lambda name, width=W, height=H, **kw: viewer(ROOT / "worlds" / f"{name}.yaml", width, height, **kw)


def chroma(rgb: np.ndarray) -> np.ndarray:
    """Colour without brightness: rgb / (r + g + b)."""
    rgb = np.asarray(rgb, float)
    return rgb / np.maximum(rgb.sum(axis=-1, keepdims=True), 1e-9)


def body_pixels(v, step: int = 8) -> dict:
    """Pixels (row, col) where a camera ray first hits each body, on a grid (our own ray casting)."""
    w, h = v.size
    xs, ys = np.meshgrid(np.arange(step // 2, w, step), np.arange(step // 2, h, step))
    xs, ys = xs.ravel(), ys.ravel()
    dirs = np.array([v.camera.ray(x + 0.5, y + 0.5, w, h)[1] for x, y in zip(xs, ys)])
    idx, _ = v.session.pick_many(v.camera.eye, dirs)
    out: dict = {}
    for i, x, y in zip(idx, xs, ys):
        if i >= 0:
            out.setdefault(v.session.table.names[i], []).append((h - 1 - y, x))
    return out


def red_mask(img: np.ndarray) -> np.ndarray:
    r, g, b = (img[..., i].astype(int) for i in range(3))
    return (r > 110) & (r > 2.2 * g) & (r > 2.2 * b)


# -- rendering --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", WORLDS)
def test_window_renders_world_in_object_colours(open_view, name, tmp_path):
    v = open_view(name)
    v.session.deselect()                      # no selection tint on the colours
    v.show_overlay = False
    v.session.show_cones = False              # (the hand may start out touching the object)
    img = v.capture()
    assert img.shape == (H, W, 3)
    assert img.std() > 15 and len(np.unique(img.reshape(-1, 3), axis=0)) > 100   # not blank
    t = v.session.table
    checked = 0
    for body, pix in body_pixels(v).items():
        rows, cols = np.array(pix).T
        if len(rows) < 8:
            continue
        got = img[rows, cols].astype(float)
        want = np.array(t.colors[t.index[body]])
        assert np.linalg.norm(np.median(chroma(got), axis=0) - chroma(want)) < 0.035, body
        assert np.median(got.sum(axis=1)) > 0.2 * want.sum() * 255, body        # lit, not black
        checked += 1
    assert checked >= 3
    # the PNG holds the same picture (decoded by pyglet's own PNG reader)
    import pyglet

    path = v.screenshot(tmp_path / f"{name}.png")
    png = pyglet.image.load(str(path)).get_image_data()
    data = np.frombuffer(png.get_data("RGB", png.width * 3), np.uint8).reshape(png.height, png.width, 3)[::-1]
    assert data.shape == img.shape
    assert np.mean(np.abs(data.astype(int) - img.astype(int))) < 1.0


def _touching_contacts(world):
    """Contacts where each Barrett fingertip is closest to the mug once the fingers are closed to 45 deg.

    Built here from mesh geometry (trimesh), independent of the collision module, so the cone
    drawing is tested on its own; normals point from the finger (body_a) into the mug (body_b).
    """
    import trimesh

    world.robots["barrett"].set_dofs({"f1": math.radians(45), "f2": math.radians(45), "f3": math.radians(45)})
    t = world.table
    X = world.body_poses()
    i = t.index["mug"]
    mesh = trimesh.Trimesh(t.shapes[i].vertices_in(X[i]), t.shapes[i].faces)
    out = []
    axis = X[i][:3, 3]
    for f in ("f1_dist", "f2_dist", "f3_dist"):
        j = t.index[f"barrett/{f}"]
        tip = t.shapes[j].vertices_in(X[j])
        tip = tip[np.argmin(np.linalg.norm((tip - axis)[:, :2], axis=1))]   # the vertex nearest the mug's axis
        cp, d, _ = trimesh.proximity.closest_point(mesh, tip[None])
        n = (cp[0] - tip) / np.linalg.norm(cp[0] - tip)
        out.append(NS(body_a=f"barrett/{f}", body_b="mug", point=cp[0], normal=n, separation=float(d[0])))
    return out


def _cone_pixels(v, radius: int = 14) -> tuple[int, int]:
    """Red pixels near the projected contact points with cones shown and hidden."""
    w, h = v.size
    centres = v.camera.project(np.array([c.point for c in v.session.cone_contacts()]), w, h)
    yy, xx = np.mgrid[0:h, 0:w]
    near = np.zeros((h, w), bool)
    for cx, cy in centres:
        near |= (xx - cx) ** 2 + ((h - 1 - yy) - cy) ** 2 <= radius ** 2
    v.session.show_cones = True
    on = int((red_mask(v.capture()) & near).sum())
    v.session.show_cones = False
    off = int((red_mask(v.capture()) & near).sum())
    v.session.show_cones = True
    return on, off


def test_contacts_are_drawn_as_red_friction_cones(open_view):
    v = open_view("barrett_mug")
    contacts = _touching_contacts(v.session.world)
    v.session.set_contacts(contacts)              # the same path the collision module's contacts take
    assert len(v.session.contacts) == 3
    on, off = _cone_pixels(v)
    assert off < 5 and on > 150, (on, off)
    assert "contacts 3" in v.session.status_lines()[1]


def test_scripted_grasp_produces_friction_cone_pixels(open_view, tmp_path):
    """The scripted auto-grasp closes the gripper onto the box; the collision module's contacts
    become red cones on the screen and the grasp's quality is shown."""
    v = open_view("parallel_jaw_box")
    shot = tmp_path / "grasp.png"
    v.run_script(f"autograsp; contacts; screenshot {shot}")
    assert shot.stat().st_size > 10000
    assert len(v.session.cone_contacts()) >= 2
    on, off = _cone_pixels(v)
    assert on > 100 and off < on / 5, (on, off)
    assert v.session.quality is not None and v.session.quality.object == "box"
    assert v.session.quality.force_closure


# -- input: real X events through the X server (XTest) -----------------------------------------------

class XTest:
    """Synthetic X input through the XTEST extension (libXtst), as a person's keyboard and mouse."""

    def __init__(self):
        self.x11 = ctypes.cdll.LoadLibrary("libX11.so.6")
        self.xt = ctypes.cdll.LoadLibrary("libXtst.so.6")
        self.x11.XOpenDisplay.restype = ctypes.c_void_p
        self.x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
        self.x11.XStringToKeysym.restype = ctypes.c_ulong
        self.x11.XStringToKeysym.argtypes = [ctypes.c_char_p]
        self.x11.XKeysymToKeycode.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
        self.x11.XKeysymToKeycode.restype = ctypes.c_ubyte
        self.x11.XFlush.argtypes = [ctypes.c_void_p]
        self.x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
        for f in ("XTestFakeKeyEvent", "XTestFakeButtonEvent"):
            getattr(self.xt, f).argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]
        self.xt.XTestFakeMotionEvent.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                                 ctypes.c_ulong]
        self.dpy = self.x11.XOpenDisplay(None)
        assert self.dpy, "cannot open the X display"

    def key(self, name: str) -> None:
        kc = self.x11.XKeysymToKeycode(self.dpy, self.x11.XStringToKeysym(name.encode()))
        self.xt.XTestFakeKeyEvent(self.dpy, kc, 1, 0)
        self.xt.XTestFakeKeyEvent(self.dpy, kc, 0, 0)
        self.x11.XFlush(self.dpy)

    def move(self, x: int, y: int) -> None:
        self.xt.XTestFakeMotionEvent(self.dpy, -1, int(x), int(y), 0)
        self.x11.XFlush(self.dpy)

    def button(self, b: int, down: bool) -> None:
        self.xt.XTestFakeButtonEvent(self.dpy, b, 1 if down else 0, 0)
        self.x11.XFlush(self.dpy)

    def close(self) -> None:
        self.x11.XCloseDisplay(self.dpy)


def pump(v, n: int = 6) -> None:
    for _ in range(n):
        v.frame()
        time.sleep(0.01)


def test_x_key_and_mouse_events_drive_camera_and_dofs(open_view):
    v = open_view("barrett_mug")
    v.window.set_location(0, 0)
    pump(v)
    xt = XTest()
    try:
        cam, hand = v.camera, v.session.world.robots["barrett"]
        xt.move(W // 2, H // 2)                       # the pointer over the window gives it the keyboard
        pump(v)
        q0 = hand.dof_values
        for k in ("bracketright", "equal", "equal", "equal"):
            xt.key(k)                                 # next DOF (f1), then +2 deg three times
        pump(v)
        assert hand.dof_values[1] == pytest.approx(q0[1] + math.radians(6))
        xt.key("minus")
        pump(v)
        assert hand.dof_values[1] == pytest.approx(q0[1] + math.radians(4))
        b0 = hand.base_pose[:3, 3]
        xt.key("Prior")                               # Page Up: the hand goes up 5 mm
        pump(v)
        np.testing.assert_allclose(hand.base_pose[:3, 3], b0 + [0, 0, 0.005], atol=1e-12)
        az, el = cam.azimuth, cam.elevation           # left drag in empty space orbits
        xt.move(60, 120)
        pump(v, 2)
        xt.button(1, True)
        for i in range(1, 9):
            xt.move(60 + 10 * i, 120 + 4 * i)
            pump(v, 1)
        xt.button(1, False)
        pump(v)
        assert cam.azimuth != pytest.approx(az) and cam.elevation != pytest.approx(el)
        d = cam.distance                              # wheel up zooms in
        xt.button(4, True)
        xt.button(4, False)
        pump(v)
        assert cam.distance == pytest.approx(d * 0.85)
        t0 = cam.target.copy()                        # right drag pans
        xt.button(3, True)
        for i in range(1, 6):
            xt.move(60 + 10 * i, 120)
            pump(v, 1)
        xt.button(3, False)
        pump(v)
        assert np.linalg.norm(cam.target - t0) > 1e-4
        # a click on a DOF slider sets that DOF (f2's slider at 75 % of its range)
        x, y = v.overlay.slider_point(2, 0.75)
        xt.move(x, H - y)
        pump(v, 2)
        xt.button(1, True)
        xt.button(1, False)
        pump(v)
        lo, hi = hand.dof_limits[2]
        assert hand.dof_values[2] == pytest.approx(lo + 0.75 * (hi - lo), abs=0.02 * (hi - lo))
        # a click on the mug selects it
        mug = v.session.world.bodies["mug"].pose[:3, 3] + [0, 0, 0.03]
        px, py = v.camera.project(mug, W, H)[0]
        assert v.session.pick(*v.camera.ray(px, py, W, H))[0] == "mug"
        xt.move(px, H - py)
        pump(v, 2)
        xt.button(1, True)
        xt.button(1, False)
        pump(v)
        assert v.session.selected == "mug"
        xt.key("Escape")
        pump(v, 3)
        assert v.closed
    finally:
        xt.close()


def test_script_key_drag_and_buttons(open_view):
    """The scripted mode's key/drag/scroll/click commands go through the window's event handlers."""
    v = open_view("parallel_jaw_box")
    g = v.session.world.robots["gripper"]
    az, d = v.camera.azimuth, v.camera.distance
    v.run_script("key EQUAL shift; drag 100 100 160 100; scroll -2")
    assert g.dof_values[0] == pytest.approx(0.04 + 0.010)             # +2 mm x 5 with shift
    assert v.camera.azimuth == pytest.approx((az - 60 * v.camera.orbit_speed) % (2 * math.pi))
    assert v.camera.distance == pytest.approx(d / 0.85 ** 2)
    x, y = v.overlay.button_center("open")
    v.run_script(f"click {x} {y}")                                     # the toolbar's Open button
    assert g.dof_values[0] == pytest.approx(g.dof_limits[0, 1])
    x, y = v.overlay.button_center("tool:move")
    v.run_script(f"click {x} {y}")
    assert v.tool == "move"
    box = v.session.world.bodies["box"]
    p0 = box.pose[:3, 3].copy()
    px, py = v.camera.project(p0 + [0.05, 0, 0.02], W, H)[0]          # drag the box with the Move tool
    v.run_script(f"drag {px} {py} {px + 40} {py}")
    moved = box.pose[:3, 3] - p0
    assert np.linalg.norm(moved) > 0.005 and moved @ v.camera.right > 0
    from graspsim.gui.script import ScriptError

    with pytest.raises(ScriptError, match="unknown key"):
        v.run_script("key NOSUCHKEY")
    with pytest.raises(ScriptError, match="outside the limits"):
        v.run_script("dof gripper opening 500")


# -- frame rate ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", WORLDS)
def test_frame_rate_at_least_30(open_view, name):
    v = open_view(name, 1280, 720)
    # warm up first: the first frames of a process's first window run slower (llvmpipe compiles the
    # shaders; the 3-D resolution adapts), so alone this test measured less than after other tests
    v.run_script("fps 0.5")
    best = 0.0
    for _ in range(3):                           # best of three: other processes share the CPU
        v.run_script("fps 1.0")
        best = max(best, v.last_fps["fps"])
        if best >= 30:
            break
    assert best >= 30, v.last_fps


def test_slow_dynamics_keeps_the_window_responsive(open_view):
    """A simulator whose step takes longer than a frame does not hold the frames back: they keep
    coming at >= 30/s, or, on a machine too busy for even the idle rate to reach 40/s, at 70 % of
    the idle rate measured just before (the dynamics gets its share, the drawing the rest)."""
    from test_gui_units import TimedSim

    v = open_view("barrett_mug", 1280, 720)
    ok, seen = False, []
    for _ in range(3):
        v.run_script("fps 1.0")
        idle = v.last_fps["fps"]
        v.session.sim = TimedSim(0.0025, 0.05)
        v.session.start(speed=1.0)
        v.run_script("fps 1.5")
        busy = v.last_fps["fps"]
        assert v.session.sim.steps >= 3          # the dynamics progresses meanwhile
        v.session.stop()
        v.session.sim = None
        seen.append((idle, busy))
        if busy >= 30 or (idle < 40 and busy >= 0.7 * idle):
            ok = True
            break
    assert ok, seen


# -- command line ----------------------------------------------------------------------------------------

def _cli(args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "graspsim.cli", "view", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=os.environ if env is None else env)


def _no_display() -> dict:
    return {k: v for k, v in os.environ.items() if k != "DISPLAY"}


def _read_png(path) -> np.ndarray:
    """(H, W, 3) uint8, top row first, decoded by Pillow (independent of pyglet, which would need a
    display in this process, and of our own PNG writer)."""
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def test_cli_script_and_screenshot(xdisplay, tmp_path):
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    r = _cli(["worlds/parallel_jaw_box.yaml", "--size", "480x320",
              "--script", f"dof gripper opening 30; camera -40 30 0.5; screenshot {a}; print done",
              "--screenshot", str(b)])
    assert r.returncode == 0, r.stderr
    assert "done" in r.stdout and "[opening] = 30.0 mm" in r.stdout
    import pyglet

    for p in (a, b):
        img = pyglet.image.load(str(p))
        assert (img.width, img.height) == (480, 320)
    script = tmp_path / "demo.txt"
    script.write_text("fit\nframes 2\nwobble 3\n")
    r = _cli(["worlds/barrett_mug.yaml", "--script", str(script)])
    assert r.returncode == 2 and "demo.txt:3: unknown command 'wobble'" in r.stderr


def test_cli_headless_egl(xdisplay, tmp_path):
    """--headless renders offscreen through EGL with no X display in its environment, and draws the
    same picture as a window on the X server (both Mesa's llvmpipe)."""
    egl, glx = tmp_path / "egl.png", tmp_path / "glx.png"
    args = ["worlds/barrett_mug.yaml", "--size", "320x240", "--script", "show overlay off"]
    r = _cli([*args, "--headless", "--screenshot", str(egl)], env=_no_display())
    assert r.returncode == 0, r.stderr
    r = _cli([*args, "--screenshot", str(glx)])
    assert r.returncode == 0, r.stderr
    a, b = _read_png(egl), _read_png(glx)
    assert a.shape == (240, 320, 3)
    assert a.std() > 15 and len(np.unique(a.reshape(-1, 3), axis=0)) > 100      # not blank
    assert np.mean(np.abs(a.astype(int) - b.astype(int))) < 1.0, np.mean(np.abs(a.astype(int) - b.astype(int)))


@pytest.mark.parametrize("extra, message", [
    ([], "--headless needs --script or --screenshot"),
    (["--script", "# only a comment"], "--headless needs --script or --screenshot"),
    (["--script", "fit", "--interactive"], "cannot be --interactive"),
])
def test_cli_headless_with_nothing_to_do_is_an_error(extra, message):
    """An offscreen viewer takes no input: without a script or a screenshot (or with --interactive)
    it would never close.  One line on stderr and exit 2 (the timeout catches a hang)."""
    r = _cli(["worlds/parallel_jaw_box.yaml", "--headless", *extra], env=_no_display(), timeout=60)
    assert r.returncode == 2
    assert r.stderr.startswith("error: ") and message in r.stderr and r.stderr.count("\n") == 1, r.stderr


# -- the planner ----------------------------------------------------------------------------------------

def test_plan_in_the_background_then_step_through_the_grasps(open_view, tmp_path):
    """`plan 3; next_grasp; screenshot`: the planner runs in its thread while the window keeps drawing,
    then the first planned grasp is applied to the scene (palm pose and DOFs) and listed with its
    epsilon in the overlay."""
    v = open_view("parallel_jaw_box")
    ss, g = v.session, v.session.world.robots["gripper"]
    shot = tmp_path / "x.png"
    v.run_script(f"plan 3; next_grasp; screenshot {shot}")
    assert shot.is_file() and not v.warnings
    grasps = ss.planned
    assert len(grasps) >= 3 and grasps[0].quality.force_closure and ss.grasp_index == 0
    best = grasps[0]
    np.testing.assert_allclose(g.palm_pose, best.palm_pose, atol=1e-12, rtol=0)
    np.testing.assert_allclose(g.dof_values, list(best.dofs.values()), atol=1e-12, rtol=0)
    # the grasp as shown is the grasp as planned: re-evaluated in the viewer's world, same verdict and epsilon
    from graspsim.grasp.objects import evaluate_grasp

    q, _ = evaluate_grasp(ss.world, "gripper", "box")
    assert bool(q.force_closure) and abs(q.epsilon - best.quality.epsilon) <= 1e-9
    texts = [lab.text for lab in v.overlay.status_labels]
    assert any(f"grasp 1/{len(grasps)}" in t and f"epsilon {best.quality.epsilon:.4f}" in t for t in texts), texts
    # responsive while planning: a 3 s search (plus closing the candidates) drew frames all along
    frames, seconds = v.plan_frames
    assert seconds >= 3.0 and frames >= 2 * seconds, v.plan_frames
    # the keys: M next, B back to the first; the buttons likewise
    v.run_script("key M")
    assert ss.grasp_index == 1
    np.testing.assert_allclose(g.palm_pose, grasps[1].palm_pose, atol=1e-12, rtol=0)
    v.run_script("key B; prev_grasp")
    assert ss.grasp_index == len(grasps) - 1
    v.do("next_grasp")
    assert ss.grasp_index == 0


def test_plan_key_shows_progress_and_nothing_to_step_before(open_view):
    v = open_view("parallel_jaw_box")
    ss = v.session
    v.run_script("next_grasp")                          # nothing planned yet: a warning, no change
    assert v.warnings and "plan first" in v.warnings[-1]
    v.plan_seconds = 1.0
    v.run_script("key P; frames 3")
    assert ss.planning or ss.planned
    seen = set()
    while ss.planning:
        v.frame()
        seen.update(lab.text for lab in v.overlay.status_labels)
    v.frame()
    assert any("iterations" in t and "of 1 s search" in t for t in seen), seen
    assert ss.planned and "M next grasp" in ss.message
    x, y = v.overlay.button_center("next_grasp")       # the toolbar's 'Grasp >' button
    v.run_script(f"click {x} {y}")
    assert ss.grasp_index == 0
    x, y = v.overlay.button_center("prev_grasp")
    v.run_script(f"click {x} {y}")
    assert ss.grasp_index == len(ss.planned) - 1
    # ranked by robustness: each force-closure grasp's robustness, the first's on the status line
    v.plan_robust_samples = 3
    v.run_script("plan 1 robust; next_grasp")
    fc = [g for g in ss.planned if g.quality.force_closure]
    assert fc and all(g.robustness is not None and g.robustness.samples == 3 for g in fc)
    r = ss.planned[0].robustness
    assert f"robust: P(force closure) {r.p_force_closure:.2f}" in ss.status_lines()[3]
    from graspsim.gui.script import ScriptError

    with pytest.raises(ScriptError, match="the second argument can only be 'robust'"):
        v.run_script("plan 1 fast")

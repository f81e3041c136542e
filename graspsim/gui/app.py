"""The viewer window: event handling, the frame loop with its dynamics time budget, screenshots,
and the handlers of the scripted mode.

The loop is our own (not ``pyglet.app.run``): each iteration dispatches window events, advances
a running script, steps the dynamics for what is left of the frame's time budget
(``1 / target_fps`` minus the recent drawing time, at least one step), and redraws when
something changed.  Physics and drawing share one thread: python-fcl holds the GIL, so a
physics thread would steal the drawing thread's time anyway, while a budget keeps the frame rate
predictable.  Importing this module needs a display (or ``pyglet.options['headless'] = True``).
"""
from __future__ import annotations

import math
import sys
import time
from collections import deque
from pathlib import Path
from typing import Iterator

import numpy as np
import pyglet
from pyglet.window import key as K
from pyglet.window import mouse

from . import script as S
from .camera import OrbitCamera
from .overlay import Overlay
from .png import write_png
from .render import Renderer, ScaledTarget, read_pixels
from .session import Session

__all__ = ["Viewer", "make_config"]

TOOLS = ("select", "move", "pull", "push")
_BUTTONS = {"left": mouse.LEFT, "right": mouse.RIGHT, "middle": mouse.MIDDLE}
_MODS = {"shift": K.MOD_SHIFT, "ctrl": K.MOD_CTRL, "alt": K.MOD_ALT}


def make_config(samples: int = 0) -> list:
    """OpenGL 3.3 core configs to try, best first (8-bit RGBA, 24-bit depth, optional MSAA)."""
    base = dict(major_version=3, minor_version=3, forward_compatible=True, double_buffer=True, depth_size=24,
                red_size=8, green_size=8, blue_size=8, alpha_size=8)
    out = []
    if samples > 0:
        out.append(pyglet.gl.Config(sample_buffers=1, samples=samples, **base))
    out.append(pyglet.gl.Config(**base))
    return out


class Viewer:
    """A pyglet window showing a :class:`~graspsim.gui.session.Session`."""

    def __init__(self, world, width: int = 1280, height: int = 720, *, visible: bool = True, samples: int = 0,
                 target_fps: float = 40.0, caption: str | None = None, verbose: bool = True):
        self.session = Session(world)
        self.verbose = verbose
        window = None
        last_error: Exception | None = None
        for cfg in make_config(samples):
            try:
                window = pyglet.window.Window(width, height, caption=caption or f"graspsim - {world.name}",
                                              resizable=True, config=cfg, vsync=False, visible=visible)
                break
            except pyglet.window.NoSuchConfigException as e:  # e.g. no multisampling
                last_error = e
        if window is None:
            raise RuntimeError(f"cannot open an OpenGL 3.3 window: {last_error}")
        self.window = window
        window.push_handlers(self)
        self.camera = OrbitCamera()
        self.fit()
        _, radius = self.session.focus_bounds()
        #: friction-cone height (m), from the size of the hand and the objects
        self.cone_height = max(0.012, 0.12 * radius)
        from .visuals import body_visuals

        self.renderer = Renderer(self.session.table, self.session.scene_bounds(), body_visuals(world))
        self._target = ScaledTarget()
        #: fraction of the window's resolution the 3-D scene is drawn at (adapted when ``adaptive``)
        self.render_scale = 1.0
        # (a multisampled window cannot receive the scaled picture: it keeps full resolution)
        self.adaptive = window.config.sample_buffers == 0 if window.config.sample_buffers is not None else True
        self.overlay = Overlay(window)
        self.tool = "select"
        self.show_help = False
        self.show_overlay = True
        #: frames are drawn at most this often
        self.max_fps = 60.0
        self.target_fps = float(target_fps)
        self.closed = False
        self._released = False
        self.runner: S.ScriptRunner | None = None
        self.script_failed: str | None = None
        self.warnings: list[str] = []
        self.last_fps: dict | None = None
        self._drag: str | None = None
        self._press = None
        self._drag_anchor: np.ndarray | None = None
        self._drag_target: str | None = None
        self._slider: int | None = None
        self._held: tuple | None = None          # (x, y, button, modifiers) held by the scripted 'press'
        self._drawn_version = -1
        self._force_draw = True
        self._draw_seconds = deque(maxlen=30)
        self._frame_stamps: deque = deque(maxlen=240)
        self._adapt_count = 0
        self._status: list[str] = []
        self._status_version, self._status_time = -1, 0.0
        self.frames = 0
        #: seconds of search the Plan button and key give the planner
        self.plan_seconds = 5.0
        #: samples per grasp of the scripted ``plan SECONDS robust``
        self.plan_robust_samples = 10
        #: frames drawn while the last scripted ``plan`` ran, and its wall time (s)
        self.plan_frames: tuple[int, float] | None = None

    # -- geometry helpers -----------------------------------------------------------------------
    @property
    def size(self) -> tuple[int, int]:
        return self.window.get_framebuffer_size()

    def fit(self) -> None:
        c, r = self.session.focus_bounds()
        self.camera.fit(c, r)
        self.redraw()

    def redraw(self) -> None:
        self._force_draw = True

    def wrench_rects(self) -> tuple:
        if not self.session.show_wrench:
            return ()
        w, h = self.size
        s = max(min(180, h // 4), 60)
        return ((w - s - 10, 110 + s + 10, s), (w - s - 10, 110, s))

    def fps(self) -> float | None:
        """Frames drawn per second over the last second (None until there are a few)."""
        st = self._frame_stamps
        now = time.perf_counter()
        recent = [t for t in st if now - t <= 1.0]
        if len(recent) < 5 or recent[-1] - recent[0] <= 0:
            return None
        return (len(recent) - 1) / (recent[-1] - recent[0])

    # -- drawing --------------------------------------------------------------------------------
    def draw(self, full_resolution: bool = False) -> None:
        """Draw the scene and the overlay into the back buffer.

        The 3-D scene is drawn at :attr:`render_scale` of the window's resolution (see
        :meth:`_adapt_resolution`) unless ``full_resolution``.
        """
        ss = self.session
        w, h = self.size
        self.window.switch_to()
        cones, arrows = self._contact_glyphs()
        scale = 1.0 if full_resolution else self.render_scale
        sw, sh = max(int(w * scale), 16), max(int(h * scale), 16)
        scaled = (sw, sh) != (w, h)
        if scaled:
            try:
                self._target.bind(sw, sh)
            except RuntimeError as e:  # no offscreen buffers: always full resolution
                self.adaptive = False
                self.render_scale = 1.0
                self._note(str(e))
                scaled, sw, sh = False, w, h
        key = (ss.contacts_version, ss.show_all_cones, ss.force_scale)
        self.renderer.draw(self.camera, sw, sh, ss.body_poses(), highlighted=ss.highlighted(), cones=cones,
                           cones_key=key, arrows=arrows, arrows_key=key, cone_height=self.cone_height,
                           force_scale=ss.force_scale, interaction=ss.interaction)
        if scaled:
            self._target.present(w, h)
        self.renderer.draw_gizmo(self.camera, w - 90, 4, 86)
        rects = self.wrench_rects()
        q = ss.quality
        for (x, y, s), part, rgb in zip(rects, (slice(0, 3), slice(3, 6)), ((0.3, 0.55, 1.0), (0.3, 0.9, 0.4))):
            pts = q.wrenches.reshape(-1, 6)[:, part] if q is not None and q.wrenches is not None else np.zeros((0, 3))
            self.renderer.draw_wrench_space(self.camera, pts, rgb, x, y, s)
        pyglet.gl.glViewport(0, 0, w, h)
        pyglet.gl.glDisable(pyglet.gl.GL_DEPTH_TEST)
        if self.show_overlay:
            self._draw_overlay(w, h, rects)

    def _contact_glyphs(self) -> tuple[list, list]:
        """Friction cones (apex, axis, mu) and force arrows (tail, vector) for the session's contacts.

        A cone's apex sits at the contact point and it opens out of the object's surface, i.e. away
        from the body the contact force pushes (body_b, or body_a when only body_a is a dynamic
        object), with half-angle atan(mu).  A force arrow shows the force on that body and ends at
        the contact point, its length ``force_scale`` metres per newton.
        """
        ss = self.session
        if not (ss.show_cones or ss.show_forces):
            return [], []
        objects = {n for n, b in ss.world.bodies.items() if b.dynamic}
        cones, arrows = [], []
        if ss.show_cones:
            for c in ss.cone_contacts():
                flip = c.body_a in objects and c.body_b not in objects
                cones.append((c.point, c.normal if flip else -c.normal, c.mu))
        if ss.show_forces:
            for c in ss.contacts:
                if c.force is None:
                    continue
                flip = c.body_a in objects and c.body_b not in objects
                f = (-c.force if flip else c.force) * ss.force_scale
                arrows.append((c.point - f, f))
        return cones, arrows

    def _draw_overlay(self, w: int, h: int, rects) -> None:
        ss = self.session
        r = ss.selected_robot
        names = tuple(r.dof_names) if r is not None else ()
        self.overlay.layout(w, h, names, self.show_help, rects)
        fr, texts = [], []
        if r is not None:
            q = r.dof_values
            for k, (lo, hi) in enumerate(r.dof_limits):
                unit, scale = ss.dof_unit(r, k)
                fr.append(0.0 if hi <= lo else float((q[k] - lo) / (hi - lo)))
                texts.append(f"{names[k]}  {q[k] * scale:.1f} {unit}")
        toggled = {f"tool:{self.tool}"}
        if ss.running:
            toggled.add("run")
        if ss.show_cones:
            toggled.add("cones")
        if ss.show_wrench:
            toggled.add("wrench")
        if self.show_help:
            toggled.add("help")
        now = time.perf_counter()
        # the status text is laid out anew when it changes: at most 5 times a second while it ticks
        if (ss.version != self._status_version and not ss.running) or now - self._status_time > 0.2:
            self._status = ss.status_lines(self.fps())
            self._status_version, self._status_time = ss.version, now
        self.overlay.update(self._status, toggled, fr, texts, ss.dof_cursor)
        self.overlay.draw()

    def capture(self) -> np.ndarray:
        """Draw a fresh frame and return its pixels (H, W, 3) uint8, top row first."""
        self.session.update()
        if self.session.wait_quality():
            self.session.update()
        self._status_time = 0.0
        self.draw(full_resolution=True)
        w, h = self.size
        img = read_pixels(w, h)
        self.window.flip()
        self._frame_stamps.append(time.perf_counter())
        return img

    def screenshot(self, path: str | Path) -> Path:
        """Save the window as a PNG file."""
        p = write_png(path, self.capture())
        self._note(f"screenshot {p}")
        return p

    # -- the loop -------------------------------------------------------------------------------
    def frame(self) -> None:
        """One iteration of the loop (events, script, dynamics budget, draw)."""
        start = time.perf_counter()
        self.window.dispatch_events()
        if self.closed:
            return
        if self.runner is not None:
            self.runner.tick()
            if self.runner.error:
                self.script_failed = self.runner.error
                print(f"error: {self.runner.error}", file=sys.stderr)
                self.runner = None
            elif self.runner.done:
                self.runner = None
        if self.closed:
            return
        draw_avg = sum(self._draw_seconds) / len(self._draw_seconds) if self._draw_seconds else 0.01
        self.session.frame_dynamics(draw_avg, self.target_fps)
        self.session.update()
        ss = self.session
        if self._force_draw or ss.version != self._drawn_version or ss.running or self.runner is not None:
            self._force_draw = False
            self._drawn_version = ss.version
            t0 = time.perf_counter()
            self.draw()
            self.window.flip()  # the software renderer does most of its work here
            self._draw_seconds.append(time.perf_counter() - t0)
            self._adapt_resolution()
            self.frames += 1
            self._frame_stamps.append(time.perf_counter())
            rest = 1.0 / self.max_fps - (time.perf_counter() - start)
            if rest > 0:
                time.sleep(rest)  # no more frames than a screen shows: leave the CPU to others
        else:
            time.sleep(0.005)  # idle: nothing changed

    def _adapt_resolution(self) -> None:
        """Lower the 3-D resolution when frames take longer than ``1 / target_fps``; raise it back
        while the raised cost (fill time grows with the pixel count, scale squared) still fits.
        Judged every 8 drawn frames on their median time (draw + flip), so one slow frame (a
        first contact query compiling, a glyph upload) does not count."""
        self._adapt_count += 1
        if not self.adaptive or self._adapt_count < 8 or len(self._draw_seconds) < 8:
            return
        self._adapt_count = 0
        t = float(np.median(list(self._draw_seconds)[-8:]))
        period = 1.0 / self.target_fps
        if t > 0.95 * period and self.render_scale > 0.5:
            self.render_scale = max(0.5, self.render_scale * max(0.75, math.sqrt(0.8 * period / t)))
        elif t * 1.21 < 0.8 * period and self.render_scale < 1.0:
            self.render_scale = min(1.0, self.render_scale * 1.1)
        if self.render_scale > 0.97:
            self.render_scale = 1.0

    def run(self, commands: list[S.Command] | None = None, *, screenshot: str | None = None,
            interactive: bool = True) -> int:
        """Run the window until it is closed; with ``commands``, run the script first.

        Without ``interactive``, the window closes once the script (and the final ``screenshot``)
        is done.  Returns an exit code: 0, or 2 if the script failed.
        """
        if commands:
            self.start_script(commands)
        shot_done = False
        while not self.closed:
            self.frame()
            if self.runner is None and not shot_done and (screenshot or not interactive):
                if self.script_failed is None and screenshot:
                    self.screenshot(screenshot)
                shot_done = True
                if not interactive:
                    break
        self.close()
        return 2 if self.script_failed else 0

    def start_script(self, commands: list[S.Command]) -> None:
        self.runner = S.ScriptRunner(commands, self.script_handlers())

    def run_script(self, text_or_commands, max_frames: int = 100000) -> None:
        """Run a script to its end (for tests and the API); raises :class:`ScriptError` on failure."""
        cmds = S.parse_script(text_or_commands) if isinstance(text_or_commands, str) else text_or_commands
        self.start_script(cmds)
        n = 0
        while self.runner is not None and not self.closed and n < max_frames:
            self.frame()
            n += 1
        if self.script_failed:
            msg, self.script_failed = self.script_failed, None
            raise S.ScriptError(msg)

    def close(self) -> None:
        """Close the window and free its GL resources (safe to call more than once)."""
        self.closed = True
        if self._released:
            return
        self._released = True
        self.session.close()
        try:
            self._target.delete()
            self.renderer.delete()
        except Exception:  # noqa: BLE001 - the context may already be gone
            pass
        try:
            self.window.close()
        except Exception:  # noqa: BLE001
            pass

    def _dispatch(self, event: str, *args) -> None:
        """Deliver an input event to the window's handlers now (the scripted mode's key, drag, click).

        ``Window.dispatch_event`` would queue it until the next frame; this runs the same handler
        stack immediately, as the window does when it empties that queue.
        """
        pyglet.event.EventDispatcher.dispatch_event(self.window, event, *args)

    def _note(self, text: str) -> None:
        if self.verbose:
            print(text, file=sys.stderr)

    # -- actions (buttons, keys, script) ----------------------------------------------------------
    def do(self, action: str) -> None:
        """Perform a toolbar action by name (see :data:`graspsim.gui.overlay.BUTTONS`)."""
        ss = self.session
        if action.startswith("tool:"):
            self.set_tool(action[5:])
        elif action == "autograsp":
            ss.auto_grasp()
        elif action == "dyngrasp":
            ss.dynamic_auto_grasp()
        elif action == "open":
            ss.open_hand()
        elif action == "run":
            ss.toggle_run()
        elif action == "step":
            ss.step_once()
        elif action == "reset":
            ss.reset()
        elif action == "cones":
            ss.show_cones = not ss.show_cones
            ss.touch()
        elif action == "wrench":
            ss.show_wrench = not ss.show_wrench
            ss.touch()
        elif action == "fit":
            self.fit()
        elif action == "help":
            self.show_help = not self.show_help
        elif action == "plan":
            ss.plan(self.plan_seconds)
        elif action == "next_grasp":
            ss.next_grasp(1)
        elif action == "prev_grasp":
            ss.next_grasp(-1)
        else:
            raise KeyError(f"unknown action '{action}'")
        self.redraw()

    def set_tool(self, tool: str) -> None:
        if tool not in TOOLS:
            raise KeyError(f"unknown tool '{tool}'; tools: {', '.join(TOOLS)}")
        self.tool = tool
        hints = {"select": "Select: click selects, drag orbits",
                 "move": "Move: drag a robot or object to move it (dynamics paused)",
                 "pull": "Pull: drag a dynamic object with a spring while the dynamics runs",
                 "push": "Push: drag a probe into a dynamic object while the dynamics runs"}
        self.session.say(hints[tool])

    # -- pyglet event handlers ----------------------------------------------------------------
    def on_close(self):
        self.closed = True
        return pyglet.event.EVENT_HANDLED

    def on_resize(self, width, height):
        self.redraw()  # the window's default handler still sets the 2-D projection

    def on_expose(self):
        self.redraw()

    def on_key_press(self, symbol, modifiers):
        ss = self.session
        big = bool(modifiers & K.MOD_SHIFT)
        keymap = {K.G: "autograsp", K.D: "dyngrasp", K.O: "open", K.SPACE: "run", K.N: "step", K.R: "reset",
                  K.C: "cones", K.W: "wrench", K.F: "fit", K.H: "help", K._1: "tool:select", K._2: "tool:move",
                  K._3: "tool:pull", K._4: "tool:push", K.P: "plan", K.M: "next_grasp", K.B: "prev_grasp"}
        if symbol == K.ESCAPE:
            if self.show_help:
                self.show_help = False
            else:
                self.closed = True
        elif symbol in keymap:
            self.do(keymap[symbol])
        elif symbol == K.TAB:
            ss.select_next(-1 if big else 1)
        elif symbol == K.BRACKETLEFT:
            ss.move_dof_cursor(-1)
        elif symbol == K.BRACKETRIGHT:
            ss.move_dof_cursor(1)
        elif symbol in (K.MINUS, K.NUM_SUBTRACT):
            ss.nudge_dof(-2.0 * (5 if big else 1))
        elif symbol in (K.EQUAL, K.PLUS, K.NUM_ADD):
            ss.nudge_dof(2.0 * (5 if big else 1))
        elif symbol in (K.LEFT, K.RIGHT, K.UP, K.DOWN, K.PAGEUP, K.PAGEDOWN):
            step = 0.02 if big else 0.005
            fwd = self.camera.forward.copy()
            fwd[2] = 0
            fwd = fwd / (np.linalg.norm(fwd) or 1.0)
            d = {K.LEFT: -self.camera.right, K.RIGHT: self.camera.right, K.UP: fwd, K.DOWN: -fwd,
                 K.PAGEUP: np.array([0, 0, 1.0]), K.PAGEDOWN: np.array([0, 0, -1.0])}[symbol]
            ss.translate_selected(d * step)
        elif symbol in (K.Q, K.E):
            ss.rotate_selected(math.radians(5 if symbol == K.Q else -5) * (4 if big else 1))
        elif symbol == K.COMMA:
            ss.force_scale /= 2
            ss.say(f"force arrows: {ss.force_scale * 1000:g} mm per N")
        elif symbol == K.PERIOD:
            ss.force_scale *= 2
            ss.say(f"force arrows: {ss.force_scale * 1000:g} mm per N")
        elif symbol == K.F12:
            name = time.strftime("graspsim-%Y%m%d-%H%M%S.png")
            self.screenshot(name)
            ss.say(f"saved {name}")
        else:
            return None
        self.redraw()
        return pyglet.event.EVENT_HANDLED

    def on_mouse_motion(self, x, y, dx, dy):
        hit = self.overlay.hit(x, y)
        hover = hit.action if hit is not None and hit.kind == "button" else None
        if hover != self.overlay.hover:
            self.overlay.hover = hover
            self.redraw()

    def on_mouse_press(self, x, y, button, modifiers):
        ss = self.session
        self._press = (x, y, button)
        hit = self.overlay.hit(x, y)
        if hit is not None and button == mouse.LEFT:
            if hit.kind == "button":
                self.do(hit.action)
                self._drag = "none"
            else:
                self._slider = hit.dof
                self._drag = "slider"
                self._set_slider(hit.dof, hit.fraction)
            return pyglet.event.EVENT_HANDLED
        if button == mouse.RIGHT or (button == mouse.LEFT and modifiers & K.MOD_SHIFT):
            self._drag = "pan"
        elif button == mouse.MIDDLE:
            self._drag = "orbit"
        elif button == mouse.LEFT:
            self._drag = "orbit"
            if self.tool in ("move", "pull", "push"):
                w, h = self.size
                o, d = self.camera.ray(x, y, w, h)
                picked = ss.pick(o, d)
                if picked is not None:
                    name, point = picked
                    if self.tool == "move":
                        owner = ss.owner(name)
                        ss.select(owner)
                        self._drag, self._drag_anchor, self._drag_target = "move", point, owner
                    else:
                        start = point if self.tool == "pull" else point - d * 0.02 * ss.scene_size
                        if ss.begin_interaction(self.tool, name, point):
                            ss.move_interaction(start)
                            self._drag, self._drag_anchor = "interact", start
        self.redraw()
        return pyglet.event.EVENT_HANDLED

    def _set_slider(self, k: int, fraction: float) -> None:
        r = self.session.selected_robot
        if r is None:
            return
        lo, hi = r.dof_limits[k]
        self.session.set_dof(r.name, k, lo + fraction * (hi - lo))
        self.session.dof_cursor = k

    def on_mouse_drag(self, x, y, dx, dy, buttons, modifiers):
        w, h = self.size
        ss = self.session
        if self._drag == "orbit":
            self.camera.orbit(dx, dy)
        elif self._drag == "pan":
            self.camera.pan(dx, dy, h)
        elif self._drag == "slider" and self._slider is not None:
            self._set_slider(self._slider, self.overlay.slider_fraction(self._slider, x))
        elif self._drag == "move" and self._drag_anchor is not None:
            p = self.camera.drag_point(x, y, w, h, self._drag_anchor)
            if ss.translate_selected(p - self._drag_anchor, self._drag_target):
                self._drag_anchor = p
        elif self._drag == "interact" and self._drag_anchor is not None:
            ss.move_interaction(self.camera.drag_point(x, y, w, h, self._drag_anchor))
        self.redraw()
        return pyglet.event.EVENT_HANDLED

    def on_mouse_release(self, x, y, button, modifiers):
        ss = self.session
        if (self._press is not None and self._drag == "orbit" and button == mouse.LEFT and self.tool == "select"
                and abs(x - self._press[0]) + abs(y - self._press[1]) <= 3):
            w, h = self.size
            picked = ss.pick(*self.camera.ray(x, y, w, h))
            if picked is not None:
                ss.select(picked[0])
                ss.say(f"selected {ss.selected}")
        if self._drag == "interact":
            ss.end_interaction()
        self._drag, self._press, self._slider, self._drag_anchor = None, None, None, None
        self.redraw()
        return pyglet.event.EVENT_HANDLED

    def on_mouse_scroll(self, x, y, scroll_x, scroll_y):
        self.camera.zoom(scroll_y)
        self.redraw()
        return pyglet.event.EVENT_HANDLED

    # -- scripted mode ------------------------------------------------------------------------------
    def _warn(self, ok: bool, cmd: S.Command) -> None:
        if not ok:
            msg = f"warning: '{cmd.text}': {self.session.message}"
            self.warnings.append(msg)
            print(msg, file=sys.stderr)

    def script_handlers(self) -> dict:
        """Handlers of every command in :data:`graspsim.gui.script.COMMANDS`."""
        ss = self.session

        def err(cmd: S.Command, msg: str) -> S.ScriptError:
            return S.ScriptError(f"script:{cmd.line}: '{cmd.text}': {msg}")

        def select(c):
            try:
                ss.select(c.args[0])
            except KeyError as e:
                raise err(c, e.args[0]) from None

        def dof(c):
            robot, name, value = (None, *c.args) if len(c.args) == 2 else c.args
            robot = robot or ss.selected
            if robot not in ss.world.robots:
                raise err(c, f"no robot '{robot}'; robots: {', '.join(ss.world.robots)}")
            r = ss.world.robots[robot]
            if name not in r.description.dof_index:
                raise err(c, f"robot '{robot}' has no DOF '{name}'; DOFs: {', '.join(r.dof_names)}")
            k = r.description.dof_index[name]
            v, unit = S.parse_value(value)
            default_unit, scale = ss.dof_unit(r, k)
            si = {None: v / scale, "deg": math.radians(v), "rad": v, "mm": v / 1000, "m": v}[unit]
            lo, hi = r.dof_limits[k]
            if not lo - 1e-9 <= si <= hi + 1e-9:
                raise err(c, f"{value} is outside the limits of {robot}/{name} "
                             f"[{lo * scale:.4g}, {hi * scale:.4g}] {default_unit}")
            ss.set_dof(robot, k, si)

        def hand_cmd(fn):
            def h(c):
                if c.args:
                    if c.args[0] not in ss.world.robots:
                        raise err(c, f"no robot '{c.args[0]}'; robots: {', '.join(ss.world.robots)}")
                    ss.select(c.args[0])
                self._warn(fn() is not False, c)
            return h

        def start(c):
            self._warn(ss.start(speed=1.0), c)

        def stop(c):
            ss.stop()

        def step(c):
            n = int(c.args[0]) if c.args else 1
            ok = True
            for _ in range(n):
                ok = ss.step_once()
                if not ok:
                    break
            self._warn(ok, c)

        def run(c) -> Iterator[None] | None:
            if not ss.start(speed=0.0, duration=c.args[0]):
                self._warn(False, c)
                return None

            t_end = ss.sim_time + c.args[0]

            def gen():
                while ss.running:
                    yield
                ss.speed = 1.0
                self._warn(ss.sim_time >= t_end - 1e-9, c)
            return gen()

        def contacts(c):
            ok = ss.refresh_contacts()
            ss.update_quality()
            self._warn(ok, c)

        def show(c):
            on = c.args[1] == "on"
            if c.args[0] in ("help", "overlay"):
                setattr(self, f"show_{c.args[0]}", on)
            else:
                setattr(ss, f"show_{c.args[0]}", on)
            ss.touch()

        def camera(c):
            az, el, dist = c.args[:3]
            self.camera.set_angles(az, el)
            self.camera.distance = dist
            if len(c.args) == 6:
                self.camera.target = np.array(c.args[3:6], float)
            elif len(c.args) != 3:
                raise err(c, "give 3 values (AZ EL DIST) or 6 (AZ EL DIST TX TY TZ)")
            self.redraw()

        def size(c):
            self.window.set_size(int(c.args[0]), int(c.args[1]))

            def gen():
                for _ in range(3):
                    self.redraw()
                    yield
            return gen()

        def mods(text: str | None) -> int:
            m = 0
            for part in (text or "").replace("+", " ").split():
                if part.lower() not in _MODS:
                    raise S.ScriptError(f"unknown modifier '{part}'; use shift, ctrl, alt")
                m |= _MODS[part.lower()]
            return m

        def key(c):
            name = c.args[0]
            sym = getattr(K, name.upper(), None)
            if sym is None and len(name) == 1 and name.isdigit():
                sym = getattr(K, f"_{name}")
            if sym is None:
                raise err(c, f"unknown key '{name}' (pyglet key names: G, SPACE, LEFT, BRACKETLEFT, ...)")
            m = mods(c.args[1] if len(c.args) > 1 else None)
            self._dispatch("on_key_press", sym, m)
            self._dispatch("on_key_release", sym, m)

        def drag(c):
            x0, y0, x1, y1 = c.args[:4]
            b = _BUTTONS[c.args[4]] if len(c.args) > 4 else mouse.LEFT
            m = mods(c.args[5] if len(c.args) > 5 else None)
            self._dispatch("on_mouse_press", x0, y0, b, m)
            n = 10
            px, py = x0, y0
            for i in range(1, n + 1):
                x, y = x0 + (x1 - x0) * i / n, y0 + (y1 - y0) * i / n
                self._dispatch("on_mouse_drag", x, y, x - px, y - py, b, m)
                px, py = x, y
            self._dispatch("on_mouse_release", x1, y1, b, m)

        def press(c):
            if self._held is not None:
                raise err(c, "a mouse button is already held (release it first)")
            b = _BUTTONS[c.args[2]] if len(c.args) > 2 else mouse.LEFT
            m = mods(c.args[3] if len(c.args) > 3 else None)
            self._dispatch("on_mouse_press", c.args[0], c.args[1], b, m)
            self._held = (c.args[0], c.args[1], b, m)

        def dragto(c):
            if self._held is None:
                raise err(c, "no mouse button is held (use press first)")
            x0, y0, b, m = self._held
            x1, y1 = c.args
            self._dispatch("on_mouse_drag", x1, y1, x1 - x0, y1 - y0, b, m)
            self._held = (x1, y1, b, m)

        def body_arg(c) -> str:
            name = c.args[0]
            if name not in ss.world.bodies:
                raise err(c, f"no body '{name}'; bodies: {', '.join(ss.world.bodies)}")
            if not ss.is_dynamic_object(name):
                dyn = [n for n in ss.world.bodies if ss.is_dynamic_object(n)]
                raise err(c, f"'{name}' is not a dynamic body; dynamic bodies: {', '.join(dyn) or 'none'}")
            return name

        def pull(c):
            name = body_arg(c)
            k = c.args[4] if len(c.args) > 4 else None
            damping = c.args[5] if len(c.args) > 5 else None
            self._warn(ss.begin_interaction("pull", name, np.array(c.args[1:4], float), stiffness=k,
                                            damping=damping), c)

        def push(c):
            name = body_arg(c)
            r = c.args[4] if len(c.args) > 4 else None
            self._warn(ss.begin_interaction("push", name, np.array(c.args[1:4], float), radius=r), c)

        def target(c):
            if ss.interaction is None:
                raise err(c, "no pull or push in progress (use pull or push first)")
            ss.move_interaction(np.array(c.args[:3], float), c.args[3] if len(c.args) > 3 else None)

        def release(c):
            if self._held is not None:
                x, y, b, m = self._held
                self._held = None
                self._dispatch("on_mouse_release", x, y, b, m)
            ss.end_interaction()

        def click(c):
            b = _BUTTONS[c.args[2]] if len(c.args) > 2 else mouse.LEFT
            self._dispatch("on_mouse_press", c.args[0], c.args[1], b, 0)
            self._dispatch("on_mouse_release", c.args[0], c.args[1], b, 0)

        def scroll(c):
            w, h = self.size
            x, y = (c.args[1], c.args[2]) if len(c.args) == 3 else (w / 2, h / 2)
            self._dispatch("on_mouse_scroll", x, y, 0, c.args[0])

        def tool(c):
            self.set_tool(c.args[0])

        def frames(c):
            def gen():
                for _ in range(int(c.args[0])):
                    self.redraw()
                    yield
            return gen()

        def wait(c):
            def gen():
                t_end = time.perf_counter() + c.args[0]
                while time.perf_counter() < t_end:
                    yield
            return gen()

        def screenshot(c):
            self.screenshot(c.args[0])

        def fps(c):
            def gen():
                cap, self.max_fps = self.max_fps, math.inf      # measure what the window can do
                t0 = time.perf_counter()
                n0 = self.frames
                stamps = []
                while time.perf_counter() - t0 < c.args[0]:
                    self.camera.orbit(3.0, 0.0)
                    self.redraw()
                    stamps.append(time.perf_counter())
                    yield
                self.max_fps = cap
                n = self.frames - n0
                dt = time.perf_counter() - t0
                d = np.diff(stamps) if len(stamps) > 1 else np.array([dt])
                self.last_fps = {"frames": n, "seconds": dt, "fps": n / dt if dt > 0 else 0.0,
                                 "mean_ms": float(d.mean() * 1e3), "p95_ms": float(np.percentile(d, 95) * 1e3)}
                w, h = self.size
                print(f"fps: {ss.world.name} {w}x{h} (3-D at {self.render_scale:.0%}): {n} frames in {dt:.2f} s = {self.last_fps['fps']:.1f} frames/s "
                      f"(frame {self.last_fps['mean_ms']:.1f} ms mean, {self.last_fps['p95_ms']:.1f} ms p95; "
                      f"{self.renderer.triangles} triangles)")
            return gen()

        def plan(c):
            robust = self.plan_robust_samples if len(c.args) > 1 else 0
            if not ss.plan(c.args[0] if c.args else self.plan_seconds, robust_samples=robust):
                self._warn(False, c)
                return None
            n0, t0 = self.frames, time.perf_counter()

            def gen():
                while ss.planning:       # the window keeps drawing (and taking events) meanwhile
                    yield
                self.plan_frames = (self.frames - n0, time.perf_counter() - t0)
                ss.poll_plan()
                if ss.plan_error is not None:
                    raise err(c, f"planning failed: {ss.plan_error}")
            return gen()

        def grasp_step(step):
            def h(c):
                self._warn(ss.next_grasp(step), c)
            return h

        def print_(c):
            print(" ".join(c.args))
            for line in ss.status_lines(self.fps()):
                print("  " + line)

        def quit_(c):
            self.closed = True

        def fit(c):
            self.fit()

        def reset(c):
            ss.reset()

        return {"select": select, "dof": dof, "move": lambda c: self._warn(ss.translate_selected(
                    np.array(c.args) / 1000.0), c),
                "turn": lambda c: self._warn(ss.rotate_selected(math.radians(c.args[0])), c),
                "autograsp": hand_cmd(ss.auto_grasp), "dyngrasp": hand_cmd(ss.dynamic_auto_grasp),
                "open": hand_cmd(ss.open_hand), "start": start, "stop": stop, "step": step, "run": run, "reset": reset,
                "contacts": contacts, "show": show, "camera": camera, "fit": fit, "size": size, "key": key,
                "drag": drag, "press": press, "dragto": dragto, "release": release, "pull": pull,
                "push": push, "target": target, "click": click, "scroll": scroll, "tool": tool, "frames": frames,
                "wait": wait,
                "screenshot": screenshot, "fps": fps, "print": print_, "quit": quit_, "plan": plan,
                "next_grasp": grasp_step(1), "prev_grasp": grasp_step(-1)}

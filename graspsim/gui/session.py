"""What the viewer shows and does, independent of the window (no pyglet, no OpenGL).

A :class:`Session` owns the world, the selection, the contacts and grasp quality on screen, the
simulator (when dynamics is available) with its per-frame time budget, and the user's pull/push
interactions.  The window (:mod:`graspsim.gui.app`) turns events into calls on it and draws it.
Everything that involves physics goes through :mod:`graspsim.gui.actions`.
"""
from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..errors import CollisionError
from . import actions
from .actions import ContactView

__all__ = ["Session", "QualityView", "Interaction", "ray_mesh"]

REVOLUTE = "revolute"


@dataclass
class QualityView:
    """Grasp quality of the selected hand on one object."""

    object: str
    n_contacts: int
    force_closure: bool
    epsilon: float
    volume: float
    wrenches: np.ndarray | None = None   # (k, M, 6) primitive wrenches, for the wrench panel


@dataclass
class Interaction:
    """A user pull (spring-damper from a body point to a target point) or push (probe sphere)
    on a dynamic body; it acts on every dynamics step until it is ended.

    ``target`` is the spring's free end (pull) or the probe's centre (push), in W.  With ``goal``
    set, the target moves towards it at ``speed`` m/s of *simulated* time (scripted pushes and
    pulls); otherwise it stays where the mouse or :meth:`Session.move_interaction` put it.
    """

    kind: str                    # "pull" | "push"
    body: str
    point_B: np.ndarray          # grabbed point in the body frame (pull)
    target: np.ndarray           # spring end / probe centre in W
    radius: float = 0.01         # probe radius (push), m
    stiffness: float = 0.0       # N/m: the spring (pull) or the probe's penalty spring (push)
    damping: float = 0.0         # N s/m
    goal: np.ndarray | None = None
    speed: float = 0.0           # m/s of simulated time, towards ``goal``
    prev_point: np.ndarray | None = None
    force: np.ndarray = field(default_factory=lambda: np.zeros(3))   # on the body in the last step (N, W)
    point_W: np.ndarray = field(default_factory=lambda: np.zeros(3))  # where it acts (W)
    impulse: np.ndarray = field(default_factory=lambda: np.zeros(3))  # sum of force x step length (N s)
    duration: float = 0.0        # simulated time it has acted (s)

    @property
    def target_velocity(self) -> np.ndarray:
        """Velocity of the target (m/s, W) while it moves towards ``goal``, else zero."""
        if self.goal is None or self.speed <= 0:
            return np.zeros(3)
        d = self.goal - self.target
        n = float(np.linalg.norm(d))
        return np.zeros(3) if n < 1e-12 else d * (self.speed / n)

    def advance_target(self, h: float) -> None:
        """Move the target ``h`` seconds along towards ``goal``."""
        if self.goal is None:
            return
        d = self.goal - self.target
        n = float(np.linalg.norm(d))
        if self.speed <= 0 or n <= self.speed * h:
            self.target = self.goal.copy()
            self.goal = None
        else:
            self.target = self.target + d * (self.speed * h / n)


def ray_mesh(origin: np.ndarray, direction: np.ndarray, v0: np.ndarray, e1: np.ndarray,
             e2: np.ndarray) -> float:
    """Distance along the ray to the nearest triangle (Moller-Trumbore, both sides), inf if none."""
    p = np.cross(direction, e2)
    det = np.einsum("ij,ij->i", e1, p)
    ok = np.abs(det) > 1e-14
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = origin - v0
    u = np.einsum("ij,ij->i", s, p) * inv
    q = np.cross(s, e1)
    v = (q @ direction) * inv
    t = np.einsum("ij,ij->i", e2, q) * inv
    hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 1e-9)
    return float(t[hit].min()) if np.any(hit) else math.inf


class Session:
    """The state behind the viewer (see module docstring).

    ``budget`` handling: :meth:`advance` steps the simulator until its time catches up with
    ``speed`` x wall-clock time (``speed = 0``: as fast as possible) or the time budget of this
    frame is spent, whichever comes first, and always takes at least one step so a slow simulator
    still progresses.  A simulator that cannot keep up drops the lag instead of accumulating it,
    so the window never waits on a backlog.
    """

    def __init__(self, world):
        self.world = world
        self.initial_state = world.save_state()
        self.table = world.table
        names = list(world.robots) + list(world.bodies)
        self.selectable = names
        self.hand: str | None = list(world.robots)[-1] if world.robots else None
        self.selected: str | None = self.hand or (names[0] if names else None)
        self.dof_cursor = 0
        self._contacts: list[ContactView] = []
        self.contacts_version = 0        # bumped whenever the contact list is replaced
        self.show_all_cones = False      # cones also between objects and obstacles (not only the robots')
        self.quality: QualityView | None = None
        self.message = ""
        self.messages: deque = deque(maxlen=50)
        self.show_cones = True
        self.show_forces = True
        self.show_wrench = False
        self.force_scale = 0.01          # m of arrow per N
        self.version = 0                 # bumped whenever something on screen changes
        self.sim = None
        self.controller = None           # what dynamic auto-grasp returned: passed to every step
        self.running = False
        self.speed = 1.0                 # x real time; 0: as fast as possible
        self.stop_at: float | None = None
        self.interaction: Interaction | None = None
        self.rtf = 0.0
        self.step_seconds = 0.0          # wall time of the last step
        self.step_estimate = 0.0         # running mean of the step's wall time
        self._credit = 0.0               # wall time the dynamics may still spend (frame_dynamics)
        self._rtf_samples: deque = deque()
        self._anchor = (0.0, 0.0)
        self._kin_dirty = True
        self._quality_dirty = False
        self._quality_wall = 0.0
        self._quality_job = 0            # number of the newest quality request
        self._quality_done = 0           # number of the request the shown quality answers
        self._quality_request = None
        self._quality_result = None
        self._quality_thread: threading.Thread | None = None
        self._quality_cv = threading.Condition()
        self._closed = False
        self._said: set[str] = set()
        self._pick_cache: dict[int, tuple] = {}
        self._radius_cache: dict[int, float] = {}
        self._proximity: dict[int, object] = {}
        lo, hi = self.scene_bounds()
        self.scene_size = float(np.linalg.norm(hi - lo))
        # the planner (graspsim.gui.planning): a background job, then the grasps to step through
        self.plan_job = None
        self.planned: list = []          # PlannedGrasp, best first
        self.plan_hand: str | None = None
        self.plan_object: str | None = None
        self.plan_error: str | None = None
        self.grasp_index = -1            # the planned grasp applied to the scene (-1: none)
        self._plan_touch = 0.0

    @property
    def contacts(self) -> list[ContactView]:
        """The contacts on screen: from the collision module (static) or the simulator (dynamics)."""
        return self._contacts

    @contacts.setter
    def contacts(self, value: list[ContactView]) -> None:
        self._contacts = value
        self.contacts_version += 1

    def is_robot_body(self, name: str) -> bool:
        i = self.table.index.get(name)
        return i is not None and int(self.table.robot[i]) >= 0

    def cone_contacts(self) -> list[ContactView]:
        """Contacts drawn as friction cones: those of a robot (the grasp), or all with ``show_all_cones``."""
        if self.show_all_cones:
            return self._contacts
        return [c for c in self._contacts if self.is_robot_body(c.body_a) or self.is_robot_body(c.body_b)]

    # -- messages ---------------------------------------------------------------------------
    def say(self, text: str) -> None:
        """Show ``text`` in the status overlay (and keep it in the message log)."""
        self.message = text
        self.messages.append(text)
        self.version += 1

    def touch(self) -> None:
        self.version += 1

    # -- geometry ---------------------------------------------------------------------------
    def body_poses(self) -> np.ndarray:
        """(N, 4, 4) poses in table order: the simulator's while there is one, else the world's."""
        if self.sim is not None:
            X = actions.sim_poses(self.sim)
            if X is not None:
                return X
        return self.world.body_poses()

    def scene_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Axis-aligned bounds (lo, hi) of every shape in the current state."""
        poses = self.body_poses()
        lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
        for s, X in zip(self.table.shapes, poses):
            if s is None:
                continue
            v = s.vertices_in(X)
            lo, hi = np.minimum(lo, v.min(0)), np.maximum(hi, v.max(0))
        if not np.all(np.isfinite(lo)):
            lo, hi = -np.ones(3) * 0.1, np.ones(3) * 0.1
        return lo, hi

    def focus_bounds(self) -> tuple[np.ndarray, float]:
        """Centre and radius the camera should frame: the hand and the dynamic objects.

        Large static obstacles (tables, workbenches) would otherwise make the grasp tiny.
        """
        poses = self.body_poses()
        t = self.table
        pts = []
        hand_links = set()
        if self.hand is not None:
            hand_links = set(t.robot_links[self.world.robots[self.hand].index].tolist())
        for i, (s, X) in enumerate(zip(t.shapes, poses)):
            if s is None:
                continue
            if i in hand_links or (t.robot[i] < 0 and t.dynamic[i]):
                pts.append(s.vertices_in(X))
        if not pts:
            lo, hi = self.scene_bounds()
        else:
            p = np.concatenate(pts)
            lo, hi = p.min(0), p.max(0)
        return (lo + hi) / 2, float(np.linalg.norm(hi - lo) / 2)

    def pick(self, origin: np.ndarray, direction: np.ndarray) -> tuple[str, np.ndarray] | None:
        """The table body name and world point hit first by a ray, or None."""
        best, best_t = None, math.inf
        poses = self.body_poses()
        for i, (s, X) in enumerate(zip(self.table.shapes, poses)):
            if s is None:
                continue
            if i not in self._pick_cache:
                v = s.vertices[s.faces]
                self._pick_cache[i] = (v[:, 0], v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])
            X_WS = X @ s.X_LS
            R, p = X_WS[:3, :3], X_WS[:3, 3]
            o_S, d_S = R.T @ (origin - p), R.T @ direction
            t = ray_mesh(o_S, d_S, *self._pick_cache[i])
            if t < best_t:
                best, best_t = i, t
        if best is None:
            return None
        return self.table.names[best], origin + best_t * direction

    def pick_many(self, origin: np.ndarray, directions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First body hit by each of many rays from one origin: (table index or -1, distance) per ray."""
        D = np.asarray(directions, float).reshape(-1, 3)
        best_i = np.full(len(D), -1)
        best_t = np.full(len(D), np.inf)
        poses = self.body_poses()
        for i, (s, X) in enumerate(zip(self.table.shapes, poses)):
            if s is None:
                continue
            X_WS = X @ s.X_LS
            R, p = X_WS[:3, :3], X_WS[:3, 3]
            o = R.T @ (np.asarray(origin, float) - p)
            d = D @ R                                       # R^T d for each ray
            tri = s.vertices[s.faces]
            v0, e1, e2 = tri[:, 0], tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
            for a in range(0, len(D), 256):
                dd = d[a:a + 256]
                pv = np.cross(dd[:, None, :], e2[None])               # (r, f, 3)
                det = np.einsum("fk,rfk->rf", e1, pv)
                ok = np.abs(det) > 1e-14
                inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
                sv = o - v0                                          # (f, 3)
                u = np.einsum("fk,rfk->rf", sv, pv) * inv
                q = np.cross(sv, e1)                                 # (f, 3)
                v = (dd @ q.T) * inv
                t = (e2 * q).sum(1)[None] * inv
                hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 1e-9)
                t = np.where(hit, t, np.inf).min(axis=1)
                better = t < best_t[a:a + 256]
                best_t[a:a + 256][better] = t[better]
                best_i[a:a + 256][better] = i
        return best_i, best_t

    def owner(self, table_name: str) -> str:
        """Robot name for a link ``robot/link``, else the body name."""
        i = self.table.index[table_name]
        ri = int(self.table.robot[i])
        return self.world.description.robots[ri].name if ri >= 0 else table_name

    def is_dynamic_object(self, name: str) -> bool:
        b = self.world.bodies.get(name)
        return b is not None and b.dynamic

    # -- selection --------------------------------------------------------------------------
    def select(self, name: str) -> None:
        """Select a robot or body by name (a ``robot/link`` name selects its robot)."""
        if name in self.table.index and name not in self.world.bodies:
            name = self.owner(name)
        if name not in self.world.robots and name not in self.world.bodies:
            raise KeyError(f"no robot or body '{name}'; choose from {', '.join(self.selectable)}")
        self.selected = name
        if name in self.world.robots:
            self.hand = name
            self._quality_dirty = True
        self.dof_cursor = 0
        self.touch()

    def deselect(self) -> None:
        """Select nothing (the hand used for grasp quality stays)."""
        self.selected = None
        self.touch()

    def select_next(self, step: int = 1) -> None:
        if not self.selectable:
            return
        i = self.selectable.index(self.selected) if self.selected in self.selectable else -1
        self.select(self.selectable[(i + step) % len(self.selectable)])

    @property
    def selected_robot(self):
        return self.world.robots.get(self.selected) if self.selected else None

    def highlighted(self) -> set[int]:
        """Table indices of the selected robot's links or the selected body."""
        if self.selected is None:
            return set()
        if self.selected in self.world.robots:
            return set(self.table.robot_links[self.world.robots[self.selected].index].tolist())
        return {self.table.index[self.selected]}

    # -- editing the kinematic state ----------------------------------------------------------
    def _may_edit(self) -> bool:
        if self.running:
            self.say("stop the dynamics (Space) to edit the scene; use Pull / Push while it runs")
            return False
        if self.sim is not None:
            self.sim = None
            self.controller = None
            self.say("dynamics discarded: it restarts from the edited state")
        return True

    def _changed(self) -> None:
        self._kin_dirty = True
        self.touch()

    @staticmethod
    def dof_unit(robot, k: int) -> tuple[str, float]:
        """Display unit and scale (SI -> unit) of DOF ``k``: degrees or millimetres."""
        desc = robot.description
        joint = desc.joints[desc.dofs[k].joints[0]]
        return ("deg", 180.0 / math.pi) if joint.kind == REVOLUTE else ("mm", 1000.0)

    def set_dof(self, robot_name: str | None, dof: str | int, value_si: float) -> None:
        """Set one DOF (SI units), clamped to its limits."""
        r = self.world.robots[robot_name or self.selected]
        k = r.description.dof_index[dof] if isinstance(dof, str) else int(dof)
        if not self._may_edit():
            return
        lo, hi = r.dof_limits[k]
        q = r.dof_values
        q[k] = float(np.clip(value_si, lo, hi))
        r.set_dofs(q)
        self._changed()

    def nudge_dof(self, delta_units: float, k: int | None = None) -> None:
        """Change DOF ``k`` (default: the cursor) of the selected robot by ``delta_units`` deg or mm."""
        r = self.selected_robot
        if r is None or not r.dof_names:
            self.say("select a robot to change its DOFs (Tab or click it)")
            return
        k = self.dof_cursor if k is None else k
        _, scale = self.dof_unit(r, k)
        self.set_dof(r.name, k, r.dof_values[k] + delta_units / scale)

    def move_dof_cursor(self, step: int) -> None:
        r = self.selected_robot
        if r is not None and r.dof_names:
            self.dof_cursor = (self.dof_cursor + step) % len(r.dof_names)
            self.touch()

    def _transform_selected(self, A: np.ndarray, name: str | None = None) -> bool:
        """Apply the rigid motion ``A`` (about the selected thing's frame origin, W axes)."""
        name = name or self.selected
        if name is None:
            return False
        if not self._may_edit():
            return False

        def about(X: np.ndarray) -> np.ndarray:
            Y = X.copy()
            Y[:3, :3] = A[:3, :3] @ X[:3, :3]
            Y[:3, 3] = X[:3, 3] + A[:3, 3]
            return Y

        if name in self.world.bodies:
            b = self.world.bodies[name]
            b.pose = about(b.pose)
        else:
            r = self.world.robots[name]
            if r.instance.mount is None:
                r.base_pose = about(r.base_pose)
            else:
                return self._move_mounted(r, about(r.base_pose))
        self._changed()
        return True

    def _move_mounted(self, r, X_target_base: np.ndarray) -> bool:
        """Move a hand mounted on an arm by solving the arm's inverse kinematics."""
        from .. import kinematics as K

        pi, pl, X_LB = r.instance.mount
        parent = self.world.robots[self.world.description.robots[pi].name]
        if parent.instance.mount is not None:
            self.say(f"cannot move '{r.name}': its arm '{parent.name}' is itself mounted")
            return False
        X_link = X_target_base @ np.linalg.inv(X_LB)
        res = K.inverse_kinematics(parent.description, X_link, link=pl, X_WB=parent.base_pose,
                                   dofs0=parent.dof_values, restarts=0, max_iterations=60,
                                   tol_position=1e-5, tol_rotation=1e-4)
        if res.position_error > 1e-3 or res.rotation_error > 1e-2:
            self.say(f"'{parent.name}' cannot reach there (IK error {res.position_error * 1e3:.1f} mm)")
            return False
        parent.set_dofs(np.clip(res.dofs, parent.dof_limits[:, 0], parent.dof_limits[:, 1]))
        self._changed()
        return True

    def translate_selected(self, d_W, name: str | None = None) -> bool:
        A = np.eye(4)
        A[:3, 3] = np.asarray(d_W, float)
        return self._transform_selected(A, name)

    def rotate_selected(self, angle: float, name: str | None = None) -> bool:
        """Rotate the selected robot or body about the world z axis through its frame origin."""
        c, s = math.cos(angle), math.sin(angle)
        A = np.eye(4)
        A[:2, :2] = [[c, -s], [s, c]]
        return self._transform_selected(A, name)

    def reset(self) -> None:
        """Back to the world as loaded; the dynamics starts again from there."""
        self.running = False
        self.sim = None
        self.controller = None
        self.stop_at = None
        self.interaction = None
        self.world.restore_state(self.initial_state)
        self.contacts = []
        self.quality = None
        self.grasp_index = -1            # the planned grasps stay: M shows the first again
        self._changed()
        self.say("reset to the initial state")

    # -- grasping ---------------------------------------------------------------------------
    def _hand(self) -> str | None:
        if self.hand is None:
            self.say("this world has no robot")
        return self.hand

    def open_hand(self) -> bool:
        """Open the selected hand: each closing DOF goes to the limit opposite its closing direction.

        While the dynamics runs, the hand's controllers open it instead
        (``graspsim.control.dynamic_open_hand``).
        """
        hand = self._hand()
        if hand is None:
            return False
        if self.running and self.sim is not None:
            self.controller = actions.dynamic_open_hand(self.sim, hand)
            self.say(f"opening '{hand}' (dynamics)")
            return True
        if not self._may_edit():
            return False
        r = self.world.robots[hand]
        q = r.dof_values
        for k, dof in enumerate(r.description.dofs):
            if dof.velocity > 0:
                q[k] = dof.limits[0]
            elif dof.velocity < 0:
                q[k] = dof.limits[1]
        r.set_dofs(q)
        self._changed()
        self.say(f"opened '{hand}'")
        return True

    def auto_grasp(self) -> bool:
        """Static auto-grasp of the selected hand (graspsim.control.auto_grasp)."""
        hand = self._hand()
        if hand is None or not self._may_edit():
            return False
        try:
            actions.auto_grasp(self.world, hand)
        except CollisionError as e:        # the hand starts inside a body: say so, keep the window
            self.say(str(e))
            return False
        self._changed()
        self.say(f"auto-grasp of '{hand}' done")
        return True

    def dynamic_auto_grasp(self) -> bool:
        """Dynamic auto-grasp: start the dynamics with the hand's controllers closing."""
        hand = self._hand()
        if hand is None or not self._ensure_sim():
            return False
        self.controller = actions.dynamic_auto_grasp(self.sim, hand)
        self.start()
        self.say(f"dynamic auto-grasp of '{hand}' running")
        return True

    # -- contacts and quality -----------------------------------------------------------------
    def set_contacts(self, contacts) -> None:
        """Show these contacts (collision-module contacts or :class:`ContactView`)."""
        if isinstance(contacts, list) and all(isinstance(c, ContactView) for c in contacts):
            views = contacts
        else:
            views = actions.to_views(self.world, contacts)
        self.contacts = views
        self._quality_dirty = True
        self.touch()

    def refresh_contacts(self) -> bool:
        """Recompute contacts of the current state with the collision module."""
        self._kin_dirty = False
        self.set_contacts(actions.find_contacts(self.world))
        return True

    def _object_radius(self, i: int) -> float:
        if i not in self._radius_cache:
            s = self.table.shapes[i]
            com = self.table.com[i]
            v = s.vertices @ s.X_LS[:3, :3].T + s.X_LS[:3, 3]
            self._radius_cache[i] = float(np.max(np.linalg.norm(v - com, axis=1))) or 1.0
        return self._radius_cache[i]

    def grasp_contacts(self) -> tuple[str, list[tuple[np.ndarray, np.ndarray, float]]] | None:
        """Contacts between the hand and the object it touches most: (object, [(p, n_into_object, mu)])."""
        if self.hand is None:
            return None
        prefix = self.hand + "/"
        per_obj: dict[str, list] = {}
        for c in self.contacts:
            for link, obj, n in ((c.body_a, c.body_b, c.normal), (c.body_b, c.body_a, -c.normal)):
                if link.startswith(prefix) and self.is_dynamic_object(obj):
                    per_obj.setdefault(obj, []).append((c.point, n, c.mu))
        if not per_obj:
            return None
        obj = max(per_obj, key=lambda k: len(per_obj[k]))
        return obj, per_obj[obj]

    def _quality_input(self):
        """What :func:`actions.analyze` needs for the hand's grasp, or None if there is no grasp."""
        gc = self.grasp_contacts()
        if gc is None:
            return None
        obj, cs = gc
        i = self.table.index[obj]
        X = self.body_poses()[i]
        center = X[:3, :3] @ self.table.com[i] + X[:3, 3]
        return (obj, np.array([c[0] for c in cs]), np.array([c[1] for c in cs]), np.array([c[2] for c in cs]),
                center, 1.0 / self._object_radius(i))

    @staticmethod
    def _compute_quality(inp) -> QualityView | str | None:
        """A :class:`QualityView`, or a message string when it cannot be computed."""
        if inp is None:
            return None
        obj, P, N, mu, center, torque_scale = inp
        try:
            q = actions.analyze(P, N, mu, center=center, torque_scale=torque_scale)
            return QualityView(obj, len(P), bool(q.force_closure), float(q.epsilon), float(q.volume),
                               getattr(q, "wrenches", None))
        except (ValueError, ArithmeticError) as e:  # degenerate contact sets: show, do not crash
            return f"grasp quality: {e}"

    def _adopt_quality(self, result) -> None:
        if isinstance(result, Exception):
            raise result
        if isinstance(result, str):
            self.quality = None
            if result not in self._said:      # a degenerate grasp is reported once, not every frame
                self._said.add(result)
                self.say(result)
        else:
            self.quality = result
        self.touch()

    def update_quality(self) -> None:
        """Grasp quality of the hand's contacts now (graspsim.grasp.analyze), in this thread."""
        self._quality_dirty = False
        self._quality_wall = time.perf_counter()
        self._quality_job += 1                  # any result still being computed is out of date
        self._adopt_quality(self._compute_quality(self._quality_input()))
        self._quality_done = self._quality_job

    def request_quality(self) -> None:
        """Grasp quality in a worker thread (the volume's convex hull in 6-D can take a few tenths of
        a second; qhull releases the GIL, so the window keeps drawing).  The newest request wins;
        :meth:`poll_quality` adopts results."""
        self._quality_dirty = False
        self._quality_wall = time.perf_counter()
        inp = self._quality_input()
        self._quality_job += 1
        if inp is None:
            self._quality_done = self._quality_job
            self._adopt_quality(None)
            return
        with self._quality_cv:
            self._quality_request = (self._quality_job, inp)
            if self._quality_thread is None:
                self._quality_thread = threading.Thread(target=self._quality_worker, name="graspsim-quality",
                                                        daemon=True)
                self._quality_thread.start()
            self._quality_cv.notify()

    def _quality_worker(self) -> None:
        while True:
            with self._quality_cv:
                while self._quality_request is None and not self._closed:
                    self._quality_cv.wait()
                if self._closed:
                    return
                job, inp = self._quality_request
                self._quality_request = None
            try:
                result = self._compute_quality(inp)
            except Exception as e:  # noqa: BLE001 - a bug or a broken install: re-raised in the GUI thread
                result = e
            with self._quality_cv:
                self._quality_result = (job, result)
                self._quality_cv.notify_all()

    def close(self) -> None:
        """Stop the quality worker thread and the planner (if any)."""
        with self._quality_cv:
            self._closed = True
            self._quality_cv.notify_all()
        if self.plan_job is not None and self.plan_job.running:
            self.plan_job.cancel()

    def poll_quality(self) -> None:
        """Adopt the worker's newest result, if it answers the newest request."""
        with self._quality_cv:
            res, self._quality_result = self._quality_result, None
        if res is not None and res[0] == self._quality_job:
            self._quality_done = res[0]
            self._adopt_quality(res[1])

    @property
    def quality_pending(self) -> bool:
        return self._quality_done != self._quality_job

    def wait_quality(self, timeout: float = 10.0) -> bool:
        """Wait until the newest quality request is answered (for screenshots and scripts)."""
        if self._quality_dirty:
            self.request_quality()
        t_end = time.perf_counter() + timeout
        while self.quality_pending and time.perf_counter() < t_end:
            with self._quality_cv:
                if self._quality_result is None:
                    self._quality_cv.wait(0.05)
            self.poll_quality()
        return not self.quality_pending

    # -- dynamics -----------------------------------------------------------------------------
    @property
    def sim_time(self) -> float:
        return actions.sim_time(self.sim) if self.sim is not None else 0.0

    def _ensure_sim(self) -> bool:
        if self.sim is not None:
            return True
        try:
            self.sim = actions.make_simulator(self.world)
        except CollisionError as e:        # bodies inside each other: no dynamics until moved apart
            self.say(f"cannot simulate: {e}")
            return False
        self.controller = actions.drive_controller(self.sim)   # the drives hold their command
        return True

    def start(self, speed: float | None = None, duration: float | None = None) -> bool:
        """Run the dynamics (``speed`` x real time, 0 = as fast as possible) for ``duration`` s or until stopped."""
        if not self._ensure_sim():
            return False
        if speed is not None:
            self.speed = speed
        self.running = True
        self.stop_at = None if duration is None else self.sim_time + duration
        self._anchor = (time.perf_counter(), self.sim_time)
        self._rtf_samples.clear()
        self.touch()
        return True

    def stop(self) -> None:
        self.running = False
        self.stop_at = None
        self.touch()

    def toggle_run(self) -> None:
        if self.running:
            self.stop()
            self.say("dynamics stopped")
        elif self.start():
            self.say("dynamics running")

    def step_once(self) -> bool:
        """One simulator step (dynamics paused)."""
        if not self._ensure_sim():
            return False
        self.running = False
        return self._step(1) == 1

    def _step(self, n_max: int, budget: float = math.inf, target: float = math.inf) -> int:
        """Up to ``n_max`` steps while the simulated time is below ``target`` and the next step is
        expected to end within ``budget`` seconds (the first step is always taken)."""
        t0 = time.perf_counter()
        n = 0
        try:
            while n < n_max:
                if n > 0 and (time.perf_counter() - t0 + self.step_estimate > budget or self.sim_time >= target):
                    break
                self._apply_interaction()
                ts = time.perf_counter()
                t_before = self.sim_time
                actions.sim_step(self.sim, self.controller)
                self.step_seconds = time.perf_counter() - ts
                self._interaction_stepped(self.sim_time - t_before)
                self.step_estimate = 0.8 * self.step_estimate + 0.2 * self.step_seconds if n or \
                    self.step_estimate else self.step_seconds
                n += 1
                if self.stop_at is not None and self.sim_time >= self.stop_at - 1e-12:
                    self.running = False
                    self.stop_at = None
                    break
        except Exception as e:  # a SimulationError or a bug in the simulator: stop, keep the window alive
            self.running = False
            self.say(f"dynamics stopped: {type(e).__name__}: {e}")
        if n:
            try:
                actions.sim_sync(self.sim)
                self.contacts = actions.sim_contacts(self.world, self.sim)
            except Exception as e:  # noqa: BLE001 - show, do not crash the window
                self.say(f"simulator contacts: {type(e).__name__}: {e}")
                self.contacts = []
            self._quality_dirty = True
            self.touch()
        return n

    def advance(self, budget: float) -> int:
        """Step the running dynamics for at most ``budget`` seconds of wall time (at least one step).

        Aims at ``speed`` x real time (``speed`` 0: no limit); a simulator that falls more than
        0.1 s behind drops the lag rather than accumulating it.  Returns the number of steps.
        """
        if not self.running or self.sim is None:
            return 0
        now = time.perf_counter()
        target = math.inf if self.speed <= 0 else self._anchor[1] + (now - self._anchor[0]) * self.speed
        n = 0
        if self.sim_time < target:
            n = self._step(1 << 30, budget, target)
        now = time.perf_counter()
        if self.speed > 0 and target - self.sim_time > 0.1 * self.speed:  # cannot keep up: drop the lag
            self._anchor = (now, self.sim_time)
        self._rtf_samples.append((now, self.sim_time))
        while len(self._rtf_samples) > 2 and now - self._rtf_samples[0][0] > 1.5:
            self._rtf_samples.popleft()
        (w0, s0), (w1, s1) = self._rtf_samples[0], self._rtf_samples[-1]
        if w1 - w0 > 0.2:
            self.rtf = (s1 - s0) / (w1 - w0)
        return n

    def frame_dynamics(self, draw_seconds: float, target_fps: float) -> int:
        """The per-frame share of the dynamics, so drawing keeps ``target_fps``.

        Each frame earns ``1 / target_fps - draw_seconds`` (at least 15 % of the drawing time, so
        the dynamics always progresses) as credit; steps run when the credit covers the
        expected duration of a step.  A step slower than a frame thus runs every few frames
        instead of stretching every frame, and fast steps run many per frame.  In fast-forward
        (``speed`` 0, the scripted ``run``) frames get 0.2 s each.
        """
        if not self.running or self.sim is None:
            self._credit = 0.0
            return 0
        if self.speed <= 0:
            return self.advance(0.2)
        share = max(1.0 / target_fps - draw_seconds - 0.002, 0.15 * draw_seconds, 0.001)
        self._credit += share
        if self._credit < self.step_estimate:
            return 0
        t0 = time.perf_counter()
        n = self.advance(min(self._credit, max(3.0 * share, self.step_estimate)))
        # keep no more than a few frames' worth: a simulator ahead of real time must not hoard
        self._credit = min(max(self._credit - (time.perf_counter() - t0), 0.0), max(3.0 * share, self.step_estimate))
        return n

    def update(self) -> None:
        """Per-frame bookkeeping: contacts after kinematic edits, throttled quality updates."""
        if self._kin_dirty and not self.running:
            self.refresh_contacts()
        self.poll_quality()
        if self._quality_dirty and (not self.running or time.perf_counter() - self._quality_wall > 0.25):
            self.request_quality()
        self.poll_plan()

    # -- the planner ------------------------------------------------------------------------------
    @property
    def planning(self) -> bool:
        """Whether the planner thread is searching."""
        return self.plan_job is not None and self.plan_job.running

    def plan_target(self) -> str | None:
        """The object to plan for: the selected dynamic object, else the one nearest the hand's palm."""
        objs = [n for n, b in self.world.bodies.items() if b.dynamic]
        if self.selected in objs:
            return self.selected
        if not objs or self.hand is None:
            return objs[0] if objs else None
        p = self.world.robots[self.hand].palm_pose[:3, 3]
        return min(objs, key=lambda n: float(np.linalg.norm(self.world.bodies[n].com_world - p)))

    def plan(self, seconds: float = 5.0, *, n: int = 10, seed: int = 0, robust_samples: int = 0) -> bool:
        """Start planning grasps of :meth:`plan_target` by the hand for ``seconds`` of search, in the
        background (:class:`graspsim.gui.planning.PlanJob`); :meth:`poll_plan` adopts the result.
        ``robust_samples`` > 0: the grasps ranked by robustness, with that many samples each."""
        from .planning import PlanJob

        hand = self._hand()
        if hand is None:
            return False
        if self.planning:
            self.say("the planner is already running")
            return False
        if self.world.robots[hand].instance.mount is not None:
            self.say(f"'{hand}' is mounted on an arm: plan it alone with 'graspsim plan' (the viewer moves free "
                     "hands only)")
            return False
        obj = self.plan_target()
        if obj is None:
            self.say("no object to plan a grasp for (no dynamic body)")
            return False
        self.planned, self.grasp_index, self.plan_error = [], -1, None
        self.plan_hand, self.plan_object = hand, obj
        self.plan_job = PlanJob(self.world, hand, obj, seconds, n=n, seed=seed, robust_samples=robust_samples)
        self.say(f"planning grasps of '{obj}' by '{hand}' ({seconds:g} s search)")
        return True

    def poll_plan(self) -> None:
        """While planning: redraw for the progress (5 times a second); once done, take its grasps."""
        job = self.plan_job
        if job is None:
            return
        if job.running:
            now = time.perf_counter()
            if now - self._plan_touch > 0.2:
                self._plan_touch = now
                self.touch()
            return
        self.plan_job = None
        if job.error is not None:
            self.plan_error = f"{type(job.error).__name__}: {job.error}"
            self.say(f"planning failed: {job.error}")
            return
        self.planned = list(job.result or [])
        nfc = sum(1 for g in self.planned if g.quality.force_closure)
        self.say(f"planned {len(self.planned)} grasps of '{job.obj}' ({nfc} force closure, {job.iterations} "
                 f"iterations in {job.elapsed:.1f} s): M next grasp, B previous")

    def show_grasp(self, i: int) -> bool:
        """Put the hand in planned grasp ``i`` (modulo their number): palm pose and DOFs."""
        if not self.planned:
            self.say("no planned grasps: plan first (P)" if not self.planning else "the planner is still running")
            return False
        if self.plan_hand not in self.world.robots or not self._may_edit():
            return False
        i = i % len(self.planned)
        actions.apply_grasp(self.world, self.plan_hand, self.planned[i])
        self.grasp_index = i
        self.selected = self.plan_hand
        self._changed()
        self.say(self.grasp_text())
        return True

    def next_grasp(self, step: int = 1) -> bool:
        """The next (``step`` 1) or previous (-1) planned grasp."""
        if self.grasp_index < 0 and step < 0:
            return self.show_grasp(-1)
        return self.show_grasp(self.grasp_index + step)

    def grasp_text(self) -> str | None:
        """The shown planned grasp and its quality as the planner scored it (None: none shown)."""
        if not (0 <= self.grasp_index < len(self.planned)):
            return None
        g = self.planned[self.grasp_index]
        q = g.quality
        text = (f"grasp {self.grasp_index + 1}/{len(self.planned)} of '{self.plan_object}': force closure "
                f"{'YES' if q.force_closure else 'no'}   epsilon {q.epsilon:.4f}   volume {q.volume:.4g}")
        r = g.robustness
        if r is not None:
            text += f"   robust: P(force closure) {r.p_force_closure:.2f}, eps mean {r.eps_mean:.4f}"
        return text

    def plan_status(self) -> str | None:
        """The planner's status line: its progress, or the grasp shown (None: nothing planned)."""
        if self.plan_job is not None:
            return self.plan_job.progress_text()
        return self.grasp_text()

    # -- pull and push --------------------------------------------------------------------------
    #: default spring of a pull: this frequency (Hz) on the body's mass, critically damped
    PULL_HZ = 2.0
    #: the push probe's penalty spring: this frequency (Hz) on the body's mass, critically damped
    PROBE_HZ = 5.0
    #: the force of a pull or push is limited to this many times the body's weight
    MAX_FORCE_G = 30.0

    def begin_interaction(self, kind: str, name: str, point_W: np.ndarray, *, stiffness: float | None = None,
                          damping: float | None = None, radius: float | None = None) -> bool:
        """Start pulling (spring-damper) or pushing (probe) the dynamic body ``name`` at ``point_W``.

        Pull: the point ``point_W`` (W, m) is attached to the body where the body is now; a spring
        of ``stiffness`` N/m (default: :attr:`PULL_HZ` on the body's mass) and ``damping`` N s/m
        (default: critical, ``2 sqrt(k m)``) joins it to the target, which starts at the point.
        Push: a probe sphere of ``radius`` m (default 2 % of the scene) centred at ``point_W``.
        Either acts on every step of the dynamics (:meth:`move_interaction` moves the target,
        :meth:`end_interaction` lets go); while the dynamics is paused it waits.
        """
        if kind not in ("pull", "push"):
            raise ValueError(f"kind must be 'pull' or 'push', got {kind!r}")
        if not self.is_dynamic_object(name):
            self.say(f"{kind}: '{name}' is not a dynamic object")
            return False
        if not self._ensure_sim():
            return False
        point_W = np.asarray(point_W, float).reshape(3)
        X = self.body_poses()[self.table.index[name]]
        p_B = np.linalg.inv(X) @ np.r_[point_W, 1.0]
        m = max(self.world.bodies[name].mass, 1e-3)
        dt = self.world.description.dt
        hz = self.PULL_HZ if kind == "pull" else self.PROBE_HZ
        k = m * (2 * math.pi * hz) ** 2 if stiffness is None else float(stiffness)
        # the force is explicit (computed before the step): keep sqrt(k/m) dt <= 0.5 so it stays stable
        k_max = m / (4.0 * dt * dt)
        if not k > 0:
            self.say(f"{kind}: the stiffness must be > 0 N/m")
            return False
        note = ""
        if k > k_max:
            note = f" (stiffness limited to {k_max:.4g} N/m for dt = {dt:g} s)"
            k = k_max
        c = 2.0 * math.sqrt(k * m) if damping is None else float(damping)
        c = min(max(c, 0.0), m / dt)
        r = 0.02 * self.scene_size if radius is None else float(radius)
        self.interaction = Interaction(kind, name, p_B[:3], point_W.copy(), radius=r, stiffness=k, damping=c)
        self.interaction.point_W = point_W.copy()
        what = f"spring {k:.4g} N/m" if kind == "pull" else f"probe r = {r * 1000:.1f} mm"
        self.say(f"{kind} '{name}': {what}{note}" + ("" if self.running else "; acts while the dynamics runs"))
        self.touch()
        return True

    def move_interaction(self, target_W: np.ndarray, speed: float | None = None) -> None:
        """Move the spring's end / the probe to ``target_W`` (W, m): at once, or at ``speed`` m/s of
        simulated time while the dynamics runs."""
        it = self.interaction
        if it is None:
            return
        target_W = np.asarray(target_W, float).reshape(3).copy()
        if speed is None:
            it.target, it.goal, it.speed = target_W, None, 0.0
        else:
            it.goal, it.speed = target_W, float(speed)
        self.touch()

    def end_interaction(self) -> None:
        if self.interaction is not None:
            self.interaction = None
            self.touch()

    def _body_motion(self, it: Interaction, X: np.ndarray, point: np.ndarray) -> np.ndarray | None:
        """Velocity (m/s, W) of the body point ``point``, from the simulator (None if it cannot say)."""
        v = actions.sim_body_velocity(self.sim, it.body)
        if v is None:
            return None
        i = self.table.index[it.body]
        com = X[:3, :3] @ self.table.com[i] + X[:3, 3]
        return v[:3] + np.cross(v[3:], point - com)

    def _apply_interaction(self) -> None:
        """Hand the pull's or push's force for the coming step to the simulator."""
        it = self.interaction
        if it is None or self.sim is None:
            return
        b = self.world.bodies[it.body]
        X = self.body_poses()[self.table.index[it.body]]
        m = max(b.mass, 1e-3)
        dt = self.world.description.dt
        if it.kind == "pull":
            p = X[:3, :3] @ it.point_B + X[:3, 3]
            v = self._body_motion(it, X, p)
            if v is None:  # a simulator without body velocities: difference the positions
                v = np.zeros(3) if it.prev_point is None else (p - it.prev_point) / dt
            it.prev_point = p
            # the spring at the end of the step (the body moves with v first): symplectic, not explicit
            f = it.stiffness * ((it.target + dt * it.target_velocity) - (p + dt * v)) \
                - it.damping * (v - it.target_velocity)
            point = p
        else:
            point, f = self._probe_force(it, X)
        fmax = self.MAX_FORCE_G * m * 9.81
        nf = float(np.linalg.norm(f))
        if nf > fmax:
            f = f * (fmax / nf)
        it.force, it.point_W = f, point
        if nf > 0:
            actions.apply_external_force(self.sim, it.body, point, f)

    def _interaction_stepped(self, h: float) -> None:
        """Book-keeping after a step of ``h`` s: the impulse delivered, the target's motion."""
        it = self.interaction
        if it is None or h <= 0:
            return
        it.impulse = it.impulse + it.force * h
        it.duration += h
        it.advance_target(h)

    def _probe_force(self, it: Interaction, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Penalty force of the probe sphere on the body's mesh: a spring-damper on the penetration
        depth along the surface normal, pushing only (the probe cannot pull)."""
        import trimesh

        i = self.table.index[it.body]
        s = self.table.shapes[i]
        if i not in self._proximity:
            self._proximity[i] = trimesh.Trimesh(s.vertices, s.faces, process=False)
        mesh = self._proximity[i]
        X_WS = X @ s.X_LS
        c_S = X_WS[:3, :3].T @ (it.target - X_WS[:3, 3])
        closest, dist, _ = trimesh.proximity.closest_point(mesh, c_S[None])
        q_S = closest[0]
        inside = bool(mesh.is_watertight and mesh.contains(c_S[None])[0])
        depth = it.radius + dist[0] if inside else it.radius - dist[0]
        q_W = X_WS[:3, :3] @ q_S + X_WS[:3, 3]
        if depth <= 0:
            it.prev_point = None
            return q_W, np.zeros(3)
        d = (it.target - q_W) if inside else (q_W - it.target)   # direction the body is pushed
        n = d / (np.linalg.norm(d) or 1.0)
        v = self._body_motion(it, X, q_W)
        if v is None:
            v = np.zeros(3) if it.prev_point is None else (q_W - it.prev_point) / self.world.description.dt
        it.prev_point = q_W
        closing = float((it.target_velocity - v) @ n)              # probe approaching the surface (m/s)
        fn = it.stiffness * depth + it.damping * closing
        return q_W, (fn * n if fn > 0 else np.zeros(3))

    def interaction_status(self) -> str | None:
        """One status line about the pull or push in progress (None without one)."""
        it = self.interaction
        if it is None:
            return None
        f = float(np.linalg.norm(it.force))
        if it.kind == "pull":
            stretch = float(np.linalg.norm(it.target - it.point_W)) * 1000
            return f"pull {it.body}: {f:.3f} N, spring {it.stiffness:.4g} N/m stretched {stretch:.1f} mm"
        return f"push {it.body}: {f:.3f} N, probe r {it.radius * 1000:.1f} mm"

    # -- status ---------------------------------------------------------------------------------
    def status_lines(self, fps: float | None = None) -> list[str]:
        """The status overlay's lines."""
        q = self.quality
        dyn = "running" if self.running else ("paused" if self.sim is not None else "off")
        if self.sim is not None and actions.sim_asleep(self.sim):
            dyn += " (asleep: at rest)"
        l1 = f"t = {self.sim_time:.3f} s   RTF {self.rtf:.2f}   dynamics {dyn}"
        if fps is not None:
            l1 += f"   {fps:.0f} frames/s"
        n_robot = sum(1 for c in self._contacts if self.is_robot_body(c.body_a) or self.is_robot_body(c.body_b))
        l2 = f"contacts {len(self._contacts)} ({n_robot} of robots)"
        if q is None:
            l2 += "   force closure -   epsilon -   volume -"
        else:
            l2 += (f"   force closure {'YES' if q.force_closure else 'no'}   epsilon {q.epsilon:.4f}   "
                   f"volume {q.volume:.4g}   ({q.n_contacts} on {q.object})")
        if self.quality_pending:
            l2 += "   (computing)"
        sel = self.selected or "-"
        l3 = f"selected: {sel}"
        r = self.selected_robot
        if r is not None and r.dof_names:
            k = min(self.dof_cursor, len(r.dof_names) - 1)
            unit, scale = self.dof_unit(r, k)
            l3 += f"   DOF [{r.dof_names[k]}] = {r.dof_values[k] * scale:.1f} {unit}"
        extra = [self.message] if self.message and self.message != self.plan_status() else []
        line = self.interaction_status()
        plan = self.plan_status()
        return [l1, l2, l3] + ([line] if line else []) + ([plan] if plan else []) + extra

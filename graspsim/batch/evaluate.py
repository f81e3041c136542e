"""One candidate -> one result row, on the public API only.

For each candidate (see :mod:`graspsim.batch.candidates`):

1. restore the world's initial state (every candidate starts from the same state, whatever the
   worker evaluated before), set the preshape DOFs;
2. **pre-grasp pose**: the palm's approach axis along the candidate's direction ``a`` (rolled
   about it), the palm on the line through the target point ``p``, far enough back that the
   open hand is ``clearance`` clear of the object's extent along ``a``:
   ``palm = p - D a``, ``D = max_v (v - p).(-a) + reach + clearance`` (``reach``: how far the
   hand sticks out in front of the palm at the preshape).  If the hand interpenetrates anything
   there (the table, another object), the row is ``pregrasp_collision`` with the pairs named;
3. **approach**: move the hand along ``a`` in steps of at most ``approach_step``; at the first
   step that interpenetrates, :func:`graspsim.collision.localize_impact` bisects back to a
   separation within the contact threshold (``approach_stop = 'contact'``, ``touched`` the
   body).  Otherwise the palm stops ``standoff`` before the target point (``'standoff'``);
4. :func:`graspsim.control.static_auto_grasp` with the object named: force closure, epsilon,
   volume, contact count.  With ``closing: centred``, a grasp that is not force closure is
   centred (:func:`graspsim.control.centring.centre`, as the planner's): the hand shifts by half
   the gap of its finger farthest from the object and closes again (twice at most, only where the
   open hand is free, kept if force closure or more contacts); the row's ``shift_x/y/z`` is the
   shift of the grasp kept, its metrics that grasp's;
5. with ``mode: dynamic`` (not with ``closing: centred``), from the approach pose again:
   ``dynamic_auto_grasp`` and ``lift_test`` (held, slip, lifted, dropped);
6. with ``robustness`` set, for a force-closure grasp: :func:`graspsim.grasp.robustness` of the
   grasp at the approach pose (palm pose and preshape DOFs; centred, the palm shifted as the
   grasp's), from the world's initial state, with the same seed for every candidate (all see the
   same noise draws).

A planner candidate (``source = 'planner'``) skips 2-3: the hand is put at the planned base pose
with the planned preshape (``approach_stop = 'planned'``); a collision there is still
``pregrasp_collision``.  Its row keeps the planner's energy and closed DOFs.  A hand mounted on
an arm is planned and evaluated alone (:func:`graspsim.planner.free_hand_world`: the arm left
out, its reach not checked), as ``graspsim plan`` does.

Any exception of a candidate is caught and recorded (``status = 'error'``, ``error_kind`` its
class name, ``error_stage`` where it happened); the run goes on.

Worker processes and Dask tasks call :func:`evaluate_chunk`, which keeps one :class:`Evaluator`
per (thread, configuration): the worlds and their collision models are built once and reused.
"""
from __future__ import annotations

import json
import math
import os
import socket
import threading
import time

import numpy as np

from ..errors import caused_by_interrupt
from .candidates import Candidate, approach_frame

__all__ = ["Evaluator", "evaluate_chunk", "base_row", "dynamic_api", "DynamicUnavailable"]


class DynamicUnavailable(RuntimeError):
    """``mode: dynamic`` / ``--dynamic`` needs graspsim.control.dynamic_auto_grasp and lift_test."""


def dynamic_api():
    """(dynamic_auto_grasp, lift_test), or raise :class:`DynamicUnavailable` with a clear message."""
    try:
        from ..control import dynamic_auto_grasp, lift_test
    except (ImportError, AttributeError) as e:
        raise DynamicUnavailable(
            "dynamic evaluation (--dynamic, evaluation.mode: dynamic) needs graspsim.control.dynamic_auto_grasp "
            f"and graspsim.control.lift_test, which this graspsim installation does not provide ({e}); "
            "run the static evaluation instead") from None
    return dynamic_auto_grasp, lift_test


def _json_floats(x) -> str:
    return json.dumps([float(v) for v in np.asarray(x, dtype=float).reshape(-1)])


def base_row(c: Candidate) -> dict:
    """The candidate's parameters as a row (outcome columns unset)."""
    return {"id": c.id, "object": c.object, "source": c.source,
            "dir_x": c.direction[0], "dir_y": c.direction[1], "dir_z": c.direction[2],
            "target_x": c.target[0], "target_y": c.target[1], "target_z": c.target[2],
            "roll": c.roll, "standoff": c.standoff, "preshape": json.dumps(c.preshape, sort_keys=True),
            "planner_energy": c.energy,
            "planner_dofs": json.dumps(c.planned_dofs, sort_keys=True) if c.planned_dofs is not None else None,
            "planner_pose": json.dumps(list(c.base_pose)) if c.base_pose is not None else None}


_IDENTITY = np.eye(4)
_IDENTITY.setflags(write=False)


class _Scene:
    """One object's world with the hand: loaded once per worker, reset before every candidate."""

    def __init__(self, scene: dict, hand: str, world=None, *, free_hand: bool = False):
        from ..collision import PairView, model_for
        from .config import load_scene_world

        w = world if world is not None else load_scene_world(scene)
        if free_hand and w.robots[hand].instance.mount is not None:
            from ..planner import free_hand_world

            w = free_hand_world(w, hand)     # planner candidates of a hand on an arm: the hand alone
        self.world = w
        self.obj = scene["object"]
        self.hand = w.robots[hand]
        if self.hand.instance.mount is not None:
            raise ValueError(f"robot '{hand}' is mounted on another robot; batch evaluation needs an unmounted hand")
        self.initial = w.save_state()
        self.model = model_for(w)
        t = w.table
        ri = self.hand.index
        self.links = np.asarray(t.robot_links[ri], dtype=np.int64)
        hand_set = set(int(i) for i in self.links)
        # the hand against everything else: the table's pairs, plus the pairs it leaves out because
        # both bodies never move in the dynamics (a fixed-base hand's base link against obstacles)
        have = {(int(a), int(b)) for a, b in self.model.pairs}
        valid = [s is not None for s in t.shapes]
        disabled = w.description.disabled_pairs
        pairs = [p for p in sorted(have) if (p[0] in hand_set) != (p[1] in hand_set)]
        for a in sorted(hand_set):
            for b in range(len(t)):
                if b in hand_set or not (valid[a] and valid[b]):
                    continue
                p = (min(a, b), max(a, b))
                if p in have or frozenset((t.names[a], t.names[b])) in disabled:
                    continue
                pairs.append(p)
        self.pairs = np.array(sorted(set(pairs)), dtype=np.int64).reshape(-1, 2)
        self.restricted = PairView(self.model, self.pairs)
        b = w.bodies[self.obj]
        shape = b.instance.obj.shape
        self.obj_vertices = shape.vertices_in(b.pose)
        self.obj_row = int(t.index[self.obj])
        self._fingers = None
        self._hand_cache: dict = {}
        desc = self.hand.description
        self.u = np.asarray(desc.approach, dtype=float)
        self.F_P = approach_frame(self.u, 0.0)        # the palm's reference frame about its approach axis

    @property
    def finger_rows(self) -> list[int]:
        """Body-table rows of the hand's finger links, whose gaps centring measures (the planner's:
        :func:`graspsim.planner.energy.finger_links`)."""
        if self._fingers is None:
            from ..planner.energy import finger_links

            self._fingers = [int(self.links[li]) for li in finger_links(self.hand.description)]
        return self._fingers

    def hand_geometry(self, key: str):
        """(reach, X_BP) at the current preshape: how far the hand reaches in front of the palm along
        the approach axis (m), and the palm pose in the base frame."""
        hit = self._hand_cache.get(key)
        if hit is not None:
            return hit
        h = self.hand
        X_WB = h.base_pose
        X_WP = h.palm_pose
        X_PW = np.linalg.inv(X_WP)
        reach = 0.0
        for li, X in enumerate(h.link_poses()):
            shape = h.description.links[li].shape
            if shape is None:
                continue
            V = shape.vertices_in(X_PW @ X)
            reach = max(reach, float((V @ self.u).max()))
        desc = h.description
        X_BP = _IDENTITY if desc.palm_link == desc.base_link else np.linalg.inv(X_WB) @ X_WP
        out = (reach, X_BP)
        self._hand_cache[key] = out
        return out

    def names(self, pairs) -> str:
        n = self.world.table.names
        return "; ".join(f"{n[i]}-{n[j]}" for i, j in pairs)


class Evaluator:
    """Evaluates candidates of one configuration (a :class:`BatchConfig` or its dict)."""

    def __init__(self, config, *, faults: dict | None = None, worlds: dict | None = None):
        """``worlds`` {object: World in its initial state} reuses worlds already loaded (the caller
        must not use them any more); others are loaded on first use."""
        d = config.to_dict() if hasattr(config, "to_dict") else config
        self._given = dict(worlds or {})
        self.config = d
        self.hand = d["hand"]
        self.ev = d["evaluation"]
        self.clearance = float(d["candidates"]["clearance"])
        self.scenes: dict[str, _Scene] = {}
        self.faults = dict(faults or {})
        self.worker = f"{socket.gethostname()}:{os.getpid()}"
        self._dyn = dynamic_api() if self.ev["mode"] == "dynamic" else None
        self.robust = self.ev.get("robustness")
        self.centred = self.ev.get("closing", "static") == "centred"      # (older configurations lack it)
        if self.centred and self._dyn is not None:
            raise ValueError("evaluation.closing 'centred' is for mode: static (load_config refuses it with "
                             "mode: dynamic)")

    def scene(self, obj: str) -> _Scene:
        sc = self.scenes.get(obj)
        if sc is None:
            spec = next(s for s in self.config["scenes"] if s["object"] == obj)
            sc = self.scenes[obj] = _Scene(spec, self.hand, self._given.pop(obj, None),
                                           free_hand=bool(self.config["candidates"].get("planner")))
        return sc

    def load_all(self) -> None:
        for s in self.config["scenes"]:
            self.scene(s["object"])

    def warm_up(self) -> None:
        """Load (or compile, the first time on a machine) the numba kernels: one static auto-grasp
        from the first scene's initial state and, in dynamic mode, a few time steps of it, then the
        state is restored; and tessellate the hand's shapes (the candidates' reach needs them; it
        imports trimesh, ~0.6 s).  One-time loading is then part of the start-up, not of the first
        candidate's ``t_cpu``."""
        from ..control import PDController, static_auto_grasp
        from ..dynamics import Simulator

        sc = self.scene(self.config["scenes"][0]["object"])
        for link in sc.hand.description.links:
            if link.shape is not None:
                link.shape.vertices
        try:
            static_auto_grasp(sc.world, self.hand, obj=sc.obj, gws=self.ev["gws"])
            if self._dyn is not None:
                sim = Simulator(sc.world)
                sim.run(5 * sim.dt, PDController(sim))
        except Exception as e:  # noqa: BLE001 -- a scene whose initial state cannot close is still usable
            if caused_by_interrupt(e):
                raise KeyboardInterrupt from e
        sc.world.restore_state(sc.initial)

    # -- one candidate ------------------------------------------------------------------------------

    def evaluate(self, cand) -> dict:
        if isinstance(cand, dict):
            cand = Candidate.from_dict(cand)
        t0, c0 = time.perf_counter(), time.thread_time()
        row = base_row(cand)
        row["worker"] = self.worker
        stage = "setup"
        try:
            sc = self.scene(cand.object)
            self._evaluate(sc, cand, row)
        except Exception as e:  # noqa: BLE001 -- every failure is recorded, the run goes on
            if caused_by_interrupt(e):
                # a Ctrl-C that landed inside a compiled kernel's call back into Python surfaces as
                # the kernel's SystemError ("returned a result with an exception set"), caused by the
                # KeyboardInterrupt: it is the user's stop, not this candidate's failure
                raise KeyboardInterrupt from e
            stage = row.pop("_stage", stage)
            row["status"] = "error"
            row["error_kind"] = type(e).__name__
            row["error_stage"] = stage
            row["error"] = (str(e) or repr(e))[:2000]
        row.pop("_stage", None)
        row["t_total"] = time.perf_counter() - t0
        row["t_cpu"] = time.thread_time() - c0
        return row

    def _fault(self, cand, stage: str) -> None:
        """Test hook: injected failures (``faults={id: 'raise' | 'exit' | 'exit-once:PATH' | 'sleep:SECONDS'}``)."""
        f = self.faults.get(cand.id)
        if f is None:
            return
        if f.startswith("sleep:"):
            time.sleep(float(f[6:]))             # a runner that is busy for a while (lock tests)
            return
        if f == "raise":
            from ..errors import SimulationError

            raise SimulationError(f"injected failure of candidate {cand.id} (test hook)")
        if f == "exit" or (f.startswith("exit-once:") and not os.path.exists(f[10:])):
            if f.startswith("exit-once:"):
                open(f[10:], "w").close()
            os._exit(17)

    def _evaluate(self, sc: _Scene, cand: Candidate, row: dict) -> None:
        from ..collision import localize_impact
        from ..errors import CollisionError

        w, h = sc.world, sc.hand
        row["_stage"] = "preshape"
        w.restore_state(sc.initial)
        if cand.preshape:
            h.set_dofs(cand.preshape)
        if cand.base_pose is not None:
            self._place_planned(sc, cand, row)
            if row.get("status") == "pregrasp_collision":
                return
            self._grasp(sc, cand, row)
            return
        key = json.dumps(cand.preshape, sort_keys=True)
        reach, X_BP = sc.hand_geometry(key)

        row["_stage"] = "pregrasp"
        a = np.asarray(cand.direction, dtype=float)
        p = np.asarray(cand.target, dtype=float)
        R = approach_frame(a, cand.roll) @ sc.F_P.T
        extent = float(((sc.obj_vertices - p) @ (-a)).max())
        D = extent + reach + self.clearance
        X_WP = np.eye(4)
        X_WP[:3, :3] = R
        X_WP[:3, 3] = p - D * a
        X_WB0 = X_WP if X_BP is _IDENTITY else X_WP @ np.linalg.inv(X_BP)
        h.base_pose = X_WB0
        P0 = w.body_poses(compiled=True)      # (as the static auto-grasp poses the hand)
        self._fault(cand, "pregrasp")
        pen = sc.model.penetrating(P0, pairs=sc.pairs)
        if pen:
            row["status"] = "pregrasp_collision"
            row["collision"] = sc.names(pen)
            self._pose_columns(row, h)
            return

        row["_stage"] = "approach"
        t1 = time.perf_counter()
        travel = max(0.0, D - cand.standoff)
        vec = travel * a
        links = sc.links

        def move(s: float) -> np.ndarray:
            P = P0.copy()
            P[links, :3, 3] += s * vec
            return P

        s_stop, stop, touched = 1.0, "standoff", None
        n = max(1, int(math.ceil(travel / self.ev["approach_step"] - 1e-9))) if travel > 0 else 0
        prev = 0.0
        for k in range(1, n + 1):
            s = k / n
            pen = sc.model.penetrating(move(s), pairs=sc.pairs)
            if pen:
                lo = prev
                try:
                    f = localize_impact(lambda x: move(lo + x * (s - lo)), sc.restricted)
                except CollisionError:
                    # the last free sample already touches (separation 0, not deeper than the
                    # model's penetration tolerance): the hand is in contact there
                    f = 0.0
                s_stop, stop = lo + f * (s - lo), "contact"
                names = w.table.names
                hs = set(int(i) for i in links)
                touched = ";".join(sorted({names[j] if i in hs else names[i] for i, j in pen}))
                break
            prev = s
        X_WB = X_WB0.copy()
        X_WB[:3, 3] += s_stop * vec
        h.base_pose = X_WB
        row["approach_stop"] = stop
        row["approach_travel"] = s_stop * travel
        row["touched"] = touched
        self._pose_columns(row, h)
        row["t_approach"] = time.perf_counter() - t1
        self._grasp(sc, cand, row)

    def _place_planned(self, sc: _Scene, cand: Candidate, row: dict) -> None:
        """A planner candidate: the hand at its planned base pose with its preshape (already set)."""
        w, h = sc.world, sc.hand
        row["_stage"] = "pregrasp"
        h.base_pose = np.asarray(cand.base_pose, dtype=float).reshape(4, 4)
        self._fault(cand, "pregrasp")
        pen = sc.model.penetrating(w.body_poses(compiled=True), pairs=sc.pairs)
        self._pose_columns(row, h)
        if pen:
            row["status"] = "pregrasp_collision"
            row["collision"] = sc.names(pen)
            return
        row["approach_stop"] = "planned"
        row["approach_travel"] = 0.0

    def _grasp(self, sc: _Scene, cand: Candidate, row: dict) -> None:
        """Steps 4-6 from the hand's current (approach) pose."""
        from ..control import static_auto_grasp

        w, h = sc.world, sc.hand
        row["_stage"] = "grasp"
        approach_state = w.save_state() if (self._dyn is not None or self.robust) else None
        pregrasp = None
        if self.robust:
            from ..grasp.robust import Grasp

            pregrasp = Grasp(h.palm_pose, dict(zip(h.dof_names, (float(v) for v in h.dof_values))))
        t2 = time.perf_counter()
        self._fault(cand, "grasp")
        if self.centred:
            c = self._close_centred(sc)
            res = c.grasp
            row["shift_x"], row["shift_y"], row["shift_z"] = (float(v) for v in c.shift)
            if pregrasp is not None:
                X = pregrasp.palm_pose.copy()
                X[:3, 3] += c.shift            # a translation of the base moves the palm alike
                pregrasp = type(pregrasp)(X, pregrasp.dofs)
        else:
            res = static_auto_grasp(w, self.hand, obj=cand.object, gws=self.ev["gws"])
        row["t_grasp"] = time.perf_counter() - t2
        q = res.quality
        row["force_closure"] = int(bool(q.force_closure)) if q is not None else 0
        row["epsilon"] = float(q.epsilon) if q is not None else 0.0
        row["_stage"] = "analysis"
        row["volume"] = float(q.volume) if q is not None else 0.0
        gc = res.grasp_contacts
        row["n_contacts"] = len(gc) if gc is not None else 0
        row["contact_links"] = ",".join(sorted(set(gc.links))) if gc is not None and len(gc) else None
        row["dofs"] = _json_floats(res.dofs)
        row["stopped_by"] = json.dumps(res.stopped_by, sort_keys=True)
        row["status"] = "ok"

        if self.robust and row["force_closure"]:
            from ..grasp.robust import robustness

            row["_stage"] = "robustness"
            w.restore_state(sc.initial)
            t5 = time.perf_counter()
            opts = {k: v for k, v in self.robust.items() if k not in ("samples", "seed")}
            rq = robustness(w, self.hand, cand.object, pregrasp, samples=int(self.robust["samples"]),
                            seed=int(self.robust["seed"]), gws=self.ev["gws"], **opts)
            row["t_robust"] = time.perf_counter() - t5
            row["rob_p_force_closure"] = float(rq.probability)
            row["rob_eps_mean"] = float(rq.mean_epsilon)
            row["rob_eps_p05"] = float(rq.p5_epsilon)
            row["rob_samples"] = int(rq.samples)

        if self._dyn is not None:
            dynamic_auto_grasp, lift_test = self._dyn
            row["_stage"] = "dynamic"
            w.restore_state(approach_state)
            t3 = time.perf_counter()
            dr = dynamic_auto_grasp(w, self.hand, obj=cand.object, timeout=float(self.ev["dynamic"]["timeout"]))
            row["t_dynamic"] = time.perf_counter() - t3
            dq = getattr(dr, "quality", None)
            row["dyn_settled"] = int(bool(getattr(dr, "settled", False)))
            row["dyn_force_closure"] = int(bool(dq.force_closure)) if dq is not None else 0
            row["dyn_epsilon"] = float(dq.epsilon) if dq is not None else 0.0
            cs = getattr(dr, "grasp_contacts", None)
            if cs is None:
                cs = getattr(dr, "contacts", None)
            row["dyn_contacts"] = len(cs) if cs is not None and hasattr(cs, "__len__") else 0
            row["_stage"] = "lift"
            t4 = time.perf_counter()
            d = self.ev["dynamic"]
            lr = lift_test(dr, height=float(d["lift_height"]), duration=float(d["lift_duration"]),
                           hold=float(d["lift_hold"]))
            row["t_lift"] = time.perf_counter() - t4
            row["held"] = int(bool(lr.held))
            row["slip"] = float(lr.slip)
            row["lifted"] = float(lr.lifted)
            row["dropped"] = int(bool(lr.dropped))
            rot = getattr(lr, "rotation", None)
            row["lift_rotation"] = float(rot) if rot is not None else None

    def _close_centred(self, sc: _Scene):
        """The static auto-grasp from the hand's current (open) pose, centred
        (:func:`graspsim.control.centring.centre`, kept as the planner keeps it: force closure or
        more contacts): a :class:`~graspsim.control.centring.Centred` of the
        :class:`~graspsim.control.StaticGraspResult` kept."""
        from ..control import static_auto_grasp
        from ..control.centring import centre_in_world

        def fc(r) -> bool:
            return r.quality is not None and bool(r.quality.force_closure)

        def n(r) -> int:
            return len(r.grasp_contacts) if r.grasp_contacts is not None else 0

        w, gws = sc.world, self.ev["gws"]
        return centre_in_world(w, self.hand, lambda: static_auto_grasp(w, self.hand, obj=sc.obj, gws=gws),
                               obj=sc.obj_row, fingers=sc.finger_rows, pairs=sc.pairs, force_closure=fc,
                               better=lambda new, old: fc(new) or n(new) > n(old), compiled=True)

    @staticmethod
    def _pose_columns(row: dict, h) -> None:
        from ..spatial import matrix_to_quat

        X = h.palm_pose
        row["palm_x"], row["palm_y"], row["palm_z"] = (float(v) for v in X[:3, 3])
        q = matrix_to_quat(X[:3, :3])
        row["palm_qw"], row["palm_qx"], row["palm_qy"], row["palm_qz"] = (float(v) for v in q)

    def evaluate_many(self, cands) -> list[dict]:
        return [self.evaluate(c) for c in cands]


# -- worker side ------------------------------------------------------------------------------------

_LOCAL = threading.local()


def _evaluator_for(config: dict, faults=None) -> Evaluator:
    """One Evaluator per (thread, configuration): FCL objects and world states are not shared."""
    cache = getattr(_LOCAL, "cache", None)
    if cache is None:
        cache = _LOCAL.cache = {}
    key = json.dumps([config["scenes"], config["evaluation"], config["hand"], config["candidates"]["clearance"],
                      bool(config["candidates"].get("planner")), sorted((faults or {}).items())], sort_keys=True)
    ev = cache.get(key)
    if ev is None:
        ev = cache[key] = Evaluator(config, faults=faults)
    return ev


def evaluate_chunk(config: dict, candidates: list, faults: dict | None = None) -> list[dict]:
    """Evaluate candidate dicts; the function worker processes and Dask tasks run."""
    ev = _evaluator_for(config, faults)
    return [ev.evaluate(c) for c in candidates]

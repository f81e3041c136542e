"""``plan_grasps``: search the hand's pose and eigengrasp amplitudes, close, score, return the best.

1. the search space (:mod:`.space`) about the object, the virtual contacts and the object's
   surface samples (:mod:`.energy`);
2. simulated annealing (:mod:`.annealing`) on the contact energy (or the quality energy),
   collisions of the hand with the object or obstacles (FCL) rejected;
3. the lowest-energy distinct states (palm poses at least 1 cm or 10 deg apart), each closed
   with :func:`graspsim.control.static_auto_grasp` and scored (force closure, epsilon, volume);
4. the best ``n``: force-closure grasps first, by epsilon, then the rest by energy.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from ..arguments import whole, world_arg
from .annealing import SearchLog, anneal
from .energy import SurfaceSamples, contact_energy, finger_links, surface_samples, virtual_contacts
from .space import GraspSpace

__all__ = ["PlannedGrasp", "GraspQualitySummary", "RobustnessSummary", "Problem", "plan_grasps", "free_hand_world",
           "rank_robust", "DISTINCT_DISTANCE", "DISTINCT_ANGLE", "ROBUST_DEFAULTS"]

#: two grasps are distinct when their palm positions are this far apart (m) ...
DISTINCT_DISTANCE = 0.01
#: ... or their palm orientations differ by this angle (rad)
DISTINCT_ANGLE = math.radians(10.0)
#: quality energy: a state whose virtual contacts are on average this close to the object (m) is closed and scored
QUALITY_SWITCH = 0.03
#: noise for ``rank="robust"`` (see :func:`graspsim.grasp.robustness`): its defaults (5 mm, 5 deg,
#: +-20 % friction), but obstacles out of reach -- an object resting on a table interpenetrates it
#: for almost any tilt, which would fail every sample alike and rank nothing (Dex-Net does the same);
#: and the closing centred as the planner's own (a static parallel jaw otherwise loses nearly every
#: sample shifted along its closing axis by more than the 0.1 mm contact threshold)
ROBUST_DEFAULTS = {"sigma_position": 0.005, "sigma_rotation": 5.0, "friction": 0.2, "obstacles": "ignore",
                   "closing": "centred"}


@dataclass(frozen=True)
class GraspQualitySummary:
    force_closure: bool
    epsilon: float
    volume: float


@dataclass(frozen=True)
class RobustnessSummary:
    """Robustness of a grasp (:func:`graspsim.grasp.robustness`): probability of force closure and
    mean / 5th-percentile epsilon over ``samples`` noisy re-closings (failures count as epsilon 0)."""

    p_force_closure: float
    eps_mean: float
    eps_p05: float
    samples: int

    @classmethod
    def of(cls, r) -> "RobustnessSummary":
        """From a :class:`graspsim.grasp.RobustQuality`."""
        return cls(float(r.probability), float(r.mean_epsilon), float(r.p5_epsilon), int(r.samples))

    def to_dict(self) -> dict:
        return {"p_force_closure": self.p_force_closure, "eps_mean": self.eps_mean, "eps_p05": self.eps_p05,
                "samples": self.samples}


@dataclass(frozen=True, eq=False)
class PlannedGrasp:
    """A planned grasp (SI units, world frame W).

    ``palm_pose`` (4, 4) and ``base_pose`` (4, 4) of the hand; ``dofs`` {name: value} after the
    static auto-grasp (rad or m); ``joint_values`` (nj,) including joints held by a clutch;
    ``preshape`` {name: value} the DOFs the search found before closing; ``energy`` the search
    energy of that pre-grasp state; ``quality`` of the closed grasp.
    """

    palm_pose: np.ndarray
    base_pose: np.ndarray
    dofs: dict
    joint_values: np.ndarray
    preshape: dict
    quality: GraspQualitySummary
    energy: float
    contacts: int = 0
    robustness: RobustnessSummary | None = None   # with rank="robust", for force-closure grasps

    def pregrasp(self):
        """The grasp before closing, as :func:`graspsim.grasp.robustness` takes it: the palm pose and
        the preshape DOFs (the palm link is not moved by the closing)."""
        from ..grasp.robust import Grasp

        return Grasp(self.palm_pose, dict(self.preshape))

    def apply(self, world, hand: str) -> None:
        """Put ``hand`` of ``world`` (unmounted) in this grasp: base pose and joint values."""
        h = world.robots[hand]
        h.base_pose = self.base_pose
        h.set_joint_values(self.joint_values)

    def to_dict(self) -> dict:
        return {"palm_pose": self.palm_pose.tolist(), "base_pose": self.base_pose.tolist(),
                "dofs": {k: float(v) for k, v in self.dofs.items()},
                "joint_values": [float(v) for v in self.joint_values],
                "preshape": {k: float(v) for k, v in self.preshape.items()},
                "quality": {"force_closure": bool(self.quality.force_closure), "epsilon": float(self.quality.epsilon),
                            "volume": float(self.quality.volume)},
                "energy": float(self.energy), "contacts": int(self.contacts),
                "robustness": None if self.robustness is None else self.robustness.to_dict()}


def free_hand_world(world, hand: str):
    """``world`` itself for an unmounted hand; for a hand mounted on an arm, a new World with the
    hand alone, unmounted at its current base pose (same DOFs, objects and obstacles; the arm left
    out).  GraspIt's planner too searches the hand's pose; whether the arm reaches it is not checked."""
    world_arg("free_hand_world", world)
    from ..world import World

    if hand not in world.robots:
        raise ValueError(f"world '{world.name}' has no robot '{hand}'; robots: {', '.join(world.robots) or 'none'}")
    h = world.robots[hand]
    if h.instance.mount is None:
        return world
    inst = dataclasses.replace(h.instance, mount=None, X_WB=h.base_pose)
    desc = dataclasses.replace(world.description, robots=(inst,), robot_index={hand: 0})
    w = World(desc)
    w.robots[hand].set_dofs(h.dof_values)
    for name, b in w.bodies.items():
        b.pose = world.bodies[name].pose
    return w


def _hand_pairs(world, ri: int) -> np.ndarray:
    """(m, 2) body-table pairs of the hand's links against every body that is not a robot link
    (objects and obstacles), minus the world's disabled pairs."""
    t = world.table
    hand = [int(i) for i in t.robot_links[ri]]
    links = {int(i) for r in t.robot_links for i in r}
    valid = [s is not None for s in t.shapes]
    disabled = world.description.disabled_pairs
    out = []
    for a in hand:
        for b in range(len(t)):
            if b in links or not (valid[a] and valid[b]) or frozenset((t.names[a], t.names[b])) in disabled:
                continue
            out.append((min(a, b), max(a, b)))
    return np.array(sorted(set(out)), dtype=np.int64).reshape(-1, 2)


class Problem:
    """One hand, one object, one world: the space, the energies and the collision test, built once."""

    def __init__(self, world, hand: str, obj: str, *, energy: str = "contact"):
        from ..collision import model_for

        if hand not in world.robots:
            raise ValueError(f"world '{world.name}' has no robot '{hand}'; robots: {', '.join(world.robots) or 'none'}")
        if obj not in world.bodies or not world.bodies[obj].dynamic:
            objs = [b.name for b in world.bodies.values() if b.dynamic]
            raise ValueError(f"world '{world.name}' has no object '{obj}'; objects: {', '.join(objs) or 'none'}")
        if energy not in ("contact", "quality"):
            raise ValueError(f"energy must be 'contact' or 'quality', got {energy!r}")
        self.world, self.hand, self.obj, self.kind = world, hand, obj, energy
        self.h = h = world.robots[hand]
        if h.instance.mount is not None:
            raise ValueError(f"robot '{hand}' is mounted on another robot; plan in free_hand_world(world, '{hand}')")
        robot = h.description
        self.initial = world.save_state()
        b = world.bodies[obj]
        shape = b.instance.obj.shape
        V = shape.vertices_in(b.pose)
        center = 0.5 * (V.min(axis=0) + V.max(axis=0))
        radius = float(np.linalg.norm(V - center, axis=1).max())
        # how far the open hand reaches in front of its palm (m), over the eigengrasp origin
        from .space import batch_forward_kinematics

        L = batch_forward_kinematics(robot, robot.eigengrasp_origin[None, :])[0]
        X_PB = np.linalg.inv(L[robot.palm_link])
        u = np.asarray(robot.approach, float)
        reach = max(float((l.shape.vertices_in(X_PB @ L[i]) @ u).max()) for i, l in enumerate(robot.links)
                    if l.shape is not None)
        self.space = GraspSpace(robot, center, (0.0, radius + max(reach, 0.0) + 0.02))
        self.vc = virtual_contacts(robot)
        self.fingers = finger_links(robot, self.vc)     # link indices centring measures (close_centred)
        self.surface: SurfaceSamples = surface_samples(shape, b.pose)
        self.model = model_for(world)
        self.pairs = _hand_pairs(world, h.index)
        self.rows = np.asarray(world.table.robot_links[h.index], dtype=np.int64)
        # the hand's own link pairs (the collision model's: adjacent links and those touching at the
        # default configuration are not pairs), for the states that are closed and returned
        mp = self.model.pairs
        self.own = np.ascontiguousarray(mp[np.isin(mp[:, 0], self.rows) & np.isin(mp[:, 1], self.rows)])
        self.P0 = world.body_poses()
        self.quality_evaluations = 0

    def body_poses(self, link_poses: np.ndarray) -> np.ndarray:
        """The world's body poses (nb, 4, 4) with the hand's links at ``link_poses`` (nl, 4, 4)."""
        P = self.P0.copy()
        P[self.rows] = link_poses
        return P

    def collides(self, link_poses: np.ndarray) -> bool:
        """Whether the hand at these link poses (nl, 4, 4) interpenetrates the object or an obstacle (FCL)."""
        return bool(self.model.penetrating(self.body_poses(link_poses), pairs=self.pairs))

    def self_collides(self, link_poses: np.ndarray) -> bool:
        """Whether links of the hand at these link poses (nl, 4, 4) interpenetrate each other."""
        if not len(self.own):
            return False
        return bool(self.model.penetrating(self.body_poses(link_poses), pairs=self.own))

    def screen(self, x: np.ndarray) -> np.ndarray:
        """Contact energies (B,) of states x (B, n), without the collision test."""
        return contact_energy(self.vc, self.surface, self.space.link_poses(x)[0])

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """Energies (B,) of states x (B, n); +inf where the hand collides."""
        L, X_WB, q = self.space.link_poses(x)
        e, dist = contact_energy(self.vc, self.surface, L, with_distance=True)
        for b in range(len(x)):
            if self.collides(L[b]):
                e[b] = np.inf
        if self.kind == "quality":
            for b in np.flatnonzero(np.isfinite(e) & (dist < QUALITY_SWITCH)):
                g = self.close_centred(X_WB[b], q[b])
                self.quality_evaluations += 1
                e[b] = -g.quality.epsilon if g.quality.force_closure else 0.0
        return e

    def close_centred(self, X_WB: np.ndarray, q: np.ndarray, energy: float = float("nan"),
                      rounds: int = 2) -> PlannedGrasp:
        """:meth:`close`, then, while the grasp is not force closure, centre the hand
        (:func:`graspsim.control.centring.centre`): shift the base by half the gap of the finger
        link farthest from the object (FCL closest points; the links carrying virtual contacts,
        palm excluded) and close again from the same preshape, keeping the shift only if the hand
        is collision-free there and the new closing is force closure or has more contacts.

        A static auto-grasp stops a DOF at the first link it drives that touches: a parallel jaw
        off the object's centre by more than the contact threshold touches with one finger only.
        """
        from ..control.centring import centre

        robot = self.h.description
        return centre(lambda X: self.close(X, q, energy), X_WB, model=self.model,
                      obj=self.world.table.index[self.obj], fingers=[int(self.rows[li]) for li in self.fingers],
                      pairs=self.pairs, closed_poses=lambda g: self.body_poses(_link_poses(robot, g)),
                      open_poses=lambda X: self.body_poses(_link_poses_q(robot, X, q)),
                      force_closure=lambda g: g.quality.force_closure,
                      better=lambda new, old: new.quality.force_closure or new.contacts > old.contacts,
                      rounds=rounds).grasp

    def close(self, X_WB: np.ndarray, q: np.ndarray, energy: float = float("nan")) -> PlannedGrasp:
        """Static auto-grasp from base pose X_WB and DOFs q; the world is restored afterwards."""
        from ..control import static_auto_grasp

        w, h = self.world, self.h
        w.restore_state(self.initial)
        h.base_pose = X_WB
        h.set_dofs(q)
        try:
            r = static_auto_grasp(w, self.hand, obj=self.obj)
            qual = r.quality
            out = PlannedGrasp(palm_pose=h.palm_pose, base_pose=h.base_pose,
                               dofs=dict(zip(h.dof_names, (float(v) for v in h.dof_values))),
                               joint_values=h.joint_values, preshape=dict(zip(h.dof_names, (float(v) for v in q))),
                               quality=GraspQualitySummary(bool(qual.force_closure), float(qual.epsilon),
                                                           float(qual.volume)) if qual is not None
                               else GraspQualitySummary(False, 0.0, 0.0),
                               energy=float(energy),
                               contacts=len(r.grasp_contacts) if r.grasp_contacts is not None else 0)
        finally:
            w.restore_state(self.initial)
        return out


def _link_poses(robot, g: PlannedGrasp) -> np.ndarray:
    from .. import kinematics

    return kinematics.forward_kinematics(robot, g.joint_values, g.base_pose)


def _link_poses_q(robot, X_WB: np.ndarray, q: np.ndarray) -> np.ndarray:
    from .. import kinematics

    return kinematics.forward_kinematics(robot, kinematics.joint_values(robot, q), X_WB)


def _rotation_angle(Ra: np.ndarray, Rb: np.ndarray) -> np.ndarray:
    """Angles (m,) between rotation Ra (3, 3) and each of Rb (m, 3, 3), rad."""
    c = (np.einsum("ij,mij->m", Ra, Rb) - 1.0) / 2.0
    return np.arccos(np.clip(c, -1.0, 1.0))


def distinct_states(problem: Problem, x: np.ndarray, e: np.ndarray, limit: int) -> list[int]:
    """Indices of up to ``limit`` lowest-energy states whose palm poses are pairwise distinct
    (at least DISTINCT_DISTANCE apart or DISTINCT_ANGLE apart) and whose hand is not inside itself.

    The search tests a state against the object and the obstacles only and may pass through
    preshapes whose fingers cross (a Barrett's spread with the fingers closed); such a state is
    not closed and returned: the closing could not move (every step starts interpenetrating) and
    the grasp would be one no hand can take."""
    order = np.argsort(e, kind="stable")
    X = problem.space.palm_poses(x[order]) if len(order) else np.zeros((0, 4, 4))
    picked: list[int] = []
    for i in range(len(order)):
        if picked:
            P = X[picked]
            near = (np.linalg.norm(P[:, :3, 3] - X[i, :3, 3], axis=1) < DISTINCT_DISTANCE) & \
                   (_rotation_angle(X[i, :3, :3], P[:, :3, :3]) < DISTINCT_ANGLE)
            if near.any():
                continue
        if problem.self_collides(problem.space.link_poses(x[order[i:i + 1]])[0][0]):
            continue
        picked.append(i)
        if len(picked) >= limit:
            break
    return [int(order[i]) for i in picked]


def _check_budget(seconds, iterations) -> None:
    for name, v in (("seconds", seconds), ("iterations", iterations)):
        if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    if iterations is not None and int(iterations) != iterations:
        raise ValueError(f"iterations must be a whole number, got {iterations!r}")


def _check_robust_options(options) -> None:
    """ValueError naming an unknown robustness option before any search (it failed after the
    whole planning run, as robustness()'s TypeError)."""
    if options is None:
        return
    if not isinstance(options, dict):
        raise ValueError(f"robust_options must be a dict of robustness options, got {type(options).__name__}")
    import inspect

    from ..grasp.robust import check_options, robustness

    params = {p.name: p.default for p in inspect.signature(robustness).parameters.values() if p.kind == p.KEYWORD_ONLY}
    for k in options:
        if k not in params:
            raise ValueError(f"robust_options: unknown option {k!r}; options: {', '.join(params)}")
    try:
        check_options(**{**params, **ROBUST_DEFAULTS, **options})
    except ValueError as e:
        raise ValueError(f"robust_options: {e}") from None


def plan_grasps(world, hand: str, object: str, *, n: int = 10, seconds: float | None = None,  # noqa: A002
                iterations: int | None = None, energy: str = "contact", seed: int = 0, restarts: int = 4,
                candidates: int | None = None, log: list | None = None, rank: str = "quality",
                robust_samples: int = 20, robust_seed: int | None = None,
                robust_options: dict | None = None, progress=None) -> list[PlannedGrasp]:
    """Plan up to ``n`` distinct grasps of ``object`` by ``hand`` in ``world`` (its state is left as it was).

    The budget: ``iterations`` annealing steps per restart and/or ``seconds`` of wall time (default
    2000 iterations); ``restarts`` independent chains; ``seed`` makes the search deterministic
    (with an ``iterations`` budget).  ``candidates`` (default 3 n) distinct lowest-energy states are
    closed and scored; the best ``n`` are returned, force-closure grasps first by decreasing epsilon.
    ``log``, a list, receives the :class:`~graspsim.planner.annealing.SearchLog`.
    ``progress(stage, done, total)``, if given, is called as the work goes on: ``("search",
    iteration, iterations or None)`` after every annealing iteration, ``("closing", k, m)`` after
    each candidate closed, ``("robustness", k, m)`` after each grasp's robustness; an exception it
    raises stops the planning (the world's state is restored).

    ``rank="robust"`` then re-ranks the returned force-closure grasps by robustness
    (:func:`rank_robust`: ``robust_samples`` noisy re-closings each, noise drawn from
    ``robust_seed``, default ``seed``; ``robust_options`` override :data:`ROBUST_DEFAULTS`):
    by probability of force closure, then mean epsilon, then 5th-percentile epsilon; each gets
    ``robustness``.  Grasps without force closure stay last, in their order.

    A hand mounted on an arm is planned for alone (see :func:`free_hand_world`): apply its grasps to
    ``free_hand_world(world, hand)``.

    Raises ValueError for an unknown hand or object, a bad budget, or when every state tried
    collided (the hand cannot reach the object).
    """
    world_arg("plan_grasps", world)
    _check_budget(seconds, iterations)
    if not (isinstance(n, int) and n > 0):
        raise ValueError(f"n must be a whole number > 0, got {n!r}")
    whole("restarts", restarts, 1)
    whole("seed", seed, 0)
    if candidates is not None:
        whole("candidates", candidates, 1)
    if robust_seed is not None:
        whole("robust_seed", robust_seed, 0)
    _check_robust_options(robust_options)
    if log is not None and not callable(getattr(log, "append", None)):
        raise ValueError(f"log must be a list (it receives the search log), got {type(log).__name__}")
    if progress is not None and not callable(progress):
        raise ValueError(f"progress must be a function progress(stage, done, total), got {type(progress).__name__}")
    if rank not in ("quality", "robust"):
        raise ValueError(f"rank must be 'quality' or 'robust', got {rank!r}")
    if rank == "robust" and (isinstance(robust_samples, bool) or not isinstance(robust_samples, int)
                             or robust_samples < 1):
        raise ValueError(f"robust_samples must be a whole number >= 1, got {robust_samples!r}")
    if seconds is None and iterations is None:
        iterations = 2000
    world = free_hand_world(world, hand)
    prob = Problem(world, hand, object, energy=energy)
    try:
        its = None if iterations is None else int(iterations)
        slog: SearchLog = anneal(prob.space, prob.evaluate, seed=seed, restarts=restarts, iterations=its,
                                 seconds=seconds, screen=prob.screen if energy == "contact" else None,
                                 progress=None if progress is None else (lambda k, ev: progress("search", k, its)))
    finally:
        world.restore_state(prob.initial)
    if log is not None:
        log.append(slog)
    x, e = slog.all()
    if not len(e):
        raise ValueError(f"hand '{hand}' cannot reach object '{object}' without colliding: all "
                         f"{slog.evaluations} states tried interpenetrated the object or an obstacle")
    idx = distinct_states(prob, x, e, candidates or 3 * n)
    L, X_WB, q = prob.space.link_poses(x[idx])
    grasps = []
    try:
        for k, i in enumerate(idx):
            grasps.append(prob.close_centred(X_WB[k], q[k], float(e[i])))
            if progress is not None:
                progress("closing", k + 1, len(idx))
    finally:
        world.restore_state(prob.initial)
    grasps.sort(key=lambda g: (not g.quality.force_closure, -g.quality.epsilon, g.energy))
    # centring moved some palms: keep the grasps still distinct from every better one
    out: list[PlannedGrasp] = []
    for g in grasps:
        if all(not _same_pose(g.palm_pose, o.palm_pose) for o in out):
            out.append(g)
    out = out[:n]
    if rank == "robust":
        out = rank_robust(world, hand, object, out, samples=robust_samples,
                          seed=seed if robust_seed is None else robust_seed, options=robust_options,
                          progress=progress)
    return out


def robust_key(r: RobustnessSummary) -> tuple:
    """Sort key, most robust first: probability of force closure, then mean, then 5th-percentile epsilon."""
    return (-r.p_force_closure, -r.eps_mean, -r.eps_p05)


def rank_robust(world, hand: str, obj: str, grasps: list[PlannedGrasp], *, samples: int = 20, seed: int = 0,
                options: dict | None = None, progress=None) -> list[PlannedGrasp]:
    """``grasps`` with the robustness of each force-closure one
    (:func:`graspsim.grasp.robustness` of :meth:`PlannedGrasp.pregrasp` in ``free_hand_world(world,
    hand)``, the same ``seed`` for every grasp: all see the same noise draws), those first, most
    robust first (:func:`robust_key`; ties keep the planner's order); the others after, in order."""
    world_arg("rank_robust", world)
    from ..grasp.robust import robustness

    _check_robust_options(options)
    opts = dict(ROBUST_DEFAULTS)
    opts.update(options or {})
    w = free_hand_world(world, hand)
    fc = []
    todo = [g for g in grasps if g.quality.force_closure]
    for k, g in enumerate(todo):
        r = robustness(w, hand, obj, g.pregrasp(), samples=samples, seed=seed, **opts)
        fc.append(dataclasses.replace(g, robustness=RobustnessSummary.of(r)))
        if progress is not None:
            progress("robustness", k + 1, len(todo))
    fc.sort(key=lambda g: robust_key(g.robustness))
    return fc + [g for g in grasps if not g.quality.force_closure]


def _same_pose(A: np.ndarray, B: np.ndarray) -> bool:
    """Palm poses closer than DISTINCT_DISTANCE and DISTINCT_ANGLE (not distinct)."""
    return bool(np.linalg.norm(A[:3, 3] - B[:3, 3]) < DISTINCT_DISTANCE
                and _rotation_angle(A[:3, :3], B[None, :3, :3])[0] < DISTINCT_ANGLE)

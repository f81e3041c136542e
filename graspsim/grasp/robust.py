"""Robust grasp quality: force closure and epsilon under object pose and friction noise.

A grasp is the hand's palm pose (4x4, W, m) and its pre-grasp DOF values, from which the static
auto-grasp closes.  :func:`robustness` re-closes the hand ``samples`` times, each time on a
perturbed object with a perturbed friction coefficient, and reports how often the grasp is force
closure and the distribution of its epsilon (Dex-Net's robust epsilon, for any hand).

Noise model (all draws from one ``numpy.random.Generator(seed)``, so a seed fixes the result):

* object pose: the *object* moves, the hand stays (the uncertainty is where the object is).  The
  perturbation acts about the object's centre of mass, in world axes: a translation with each
  component ~ N(0, sigma_position) and a rotation by the rotation vector with each component
  ~ N(0, sigma_rotation) (every axis equally likely; the angle's root mean square is
  sigma * sqrt(3)).  Either sigma may also be given per world axis (x, y, z).
* friction: one factor per sample, uniform in [1 - friction, 1 + friction], scales every
  contact's coefficient (the material pair's coefficient is what is uncertain, and all fingers
  of a grasp share it).

Each sample restores the pre-grasp state, moves the object, and fails without closing when the
object then interpenetrates the open hand (kind ``"hand"``) or another body (``"obstacle"``);
otherwise the hand closes (:func:`graspsim.control.static_auto_grasp`) and the contacts are analysed
(:func:`graspsim.grasp.analyze`, as :func:`graspsim.grasp.evaluate_grasp` does) with the scaled
friction: no contact with the object is kind ``"no contact"``, a grasp without force closure
``"not force closure"``.  Failures count as epsilon 0.

The static closing is kinematic: the object does not move.  A hand whose one DOF drives several
fingers (a parallel jaw) stops when the first of them touches, so an object shifted along the
closing direction (or tilted) is touched from one side only ("not force closure"), where a real
gripper would push it to the middle.  ``closing="dynamic"`` simulates that push (about 0.3-1 s
per sample; it needs the obstacles the object rests on, else the object falls); or give the
closing axis a zero sigma (per-axis sigmas) to measure the rest.

``closing="centred"`` is the static closing followed, when it is not force closure, by the
planner's centring (:meth:`graspsim.planner.api.Problem.close_centred`): the hand shifts by half
the gap of its finger link farthest from the object and closes again from the pre-grasp DOFs
(twice at most, only where the open hand is collision-free) -- what a gripper pushing the object
to its middle ends with, at the cost of a static closing instead of a simulation.

An object resting on a table interpenetrates it for almost any tilt or downward shift, so with
``obstacles="fail"`` (default) such a world fails nearly every sample as ``"obstacle"``;
``obstacles="ignore"`` moves the world's obstacles (static bodies) out of reach for the nominal
grasp and every sample, so that only hand and object meet, as in Dex-Net's robust epsilon.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..arguments import world_arg

__all__ = ["Grasp", "RobustQuality", "robustness", "FAILURE_KINDS"]

#: failure kinds, in the order the counts are reported
FAILURE_KINDS = ("hand", "obstacle", "no contact", "not force closure")
#: how far ``obstacles="ignore"`` moves every obstacle (m, along -z): out of reach of any hand
_AWAY = 1000.0


@dataclass(frozen=True)
class Grasp:
    """A grasp to re-close: the palm link's pose (4x4, W, m) and the pre-grasp DOF values
    ({DOF name: rad or m}) from which the static auto-grasp closes."""

    palm_pose: np.ndarray
    dofs: Mapping[str, float]

    @classmethod
    def from_world(cls, world, hand: str) -> "Grasp":
        """The grasp of ``hand`` in the world's current state (its palm pose and DOF values)."""
        h = _robot(world, hand)
        return cls(h.palm_pose, dict(zip(h.dof_names, map(float, h.dof_values))))


@dataclass
class RobustQuality:
    """Outcome of :func:`robustness` (epsilon in the units of :func:`graspsim.grasp.analyze`)."""

    probability: float          # fraction of samples in force closure
    mean_epsilon: float         # over all samples, failures as 0
    p5_epsilon: float           # 5th percentile over all samples (numpy 'linear'), failures as 0
    samples: int
    nominal_force_closure: bool  # the grasp without noise
    nominal_epsilon: float
    failures: dict = field(default_factory=dict)   # kind (FAILURE_KINDS) -> count
    epsilons: np.ndarray = None  # (samples,) per sample, failures as 0
    kinds: list = None           # (samples,) per sample "force closure" or its failure kind
    offsets: np.ndarray = None   # (samples, 3) object translation drawn per sample, m, W
    rotations: np.ndarray = None  # (samples, 3) rotation vector drawn per sample, rad, W, about the COM
    friction_factors: np.ndarray = None  # (samples,) factor on every contact's mu
    seconds: float = 0.0         # wall time of the whole call


def _robot(world, hand: str):
    if not isinstance(hand, str):
        raise ValueError(f"hand must be the name of a robot of world '{world.name}' (a str), got a "
                         f"{type(hand).__name__}; robots: {', '.join(world.robots)}")
    if hand not in world.robots:
        raise ValueError(f"world '{world.name}' has no hand '{hand}'; robots: {', '.join(world.robots)}")
    return world.robots[hand]


def _sigmas(v, name: str) -> np.ndarray:
    """A standard deviation per world axis (3,) from a number or three numbers, else ValueError."""
    try:
        a = np.broadcast_to(np.asarray(v, dtype=float), (3,)).copy()
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number or three numbers (x, y, z), got {v!r}") from None
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError(f"{name} must be finite and >= 0, got {v!r}")
    return a


def _rotation(rv: np.ndarray) -> np.ndarray:
    """Rotation matrix of a rotation vector (rad); exactly the identity for a zero vector."""
    a = float(np.linalg.norm(rv))
    if a == 0.0:
        return np.eye(3)
    k = rv / a
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(a) * K + (1 - np.cos(a)) * (K @ K)


def _pre_grasp_state(world, hand: str, grasp: Any):
    """The world's state with the hand at the grasp's palm pose and pre-grasp DOFs."""
    from .. import kinematics

    for attr in ("palm_pose", "dofs"):
        if not hasattr(grasp, attr):
            raise ValueError(f"grasp must have 'palm_pose' and 'dofs' (e.g. graspsim.grasp.Grasp: "
                             f"Grasp.from_world(world, hand) of the open hand, before it closes); "
                             f"{type(grasp).__name__} has no '{attr}'")
    h = _robot(world, hand)
    X = np.asarray(grasp.palm_pose, dtype=float)
    if X.shape != (4, 4) or not np.all(np.isfinite(X)):
        raise ValueError(f"grasp palm_pose must be a finite 4x4 transform (W, m), got shape {X.shape}")
    try:
        h.set_dofs(dict(grasp.dofs) if isinstance(grasp.dofs, Mapping) else np.asarray(grasp.dofs, float))
    except KeyError as e:            # an unknown DOF name: a bad grasp, reported as such
        raise ValueError(f"grasp dofs: {e.args[0]}") from None
    robot = h.description
    X_BP = kinematics.forward_kinematics(robot, h.joint_values)[robot.palm_link]
    X_WB = X @ np.linalg.inv(X_BP)
    if h.instance.mount is None:
        h.base_pose = X_WB
    elif not np.allclose(h.palm_pose, X, atol=1e-9):
        raise ValueError(f"hand '{hand}' is mounted on another robot: its palm cannot be moved to the grasp's pose")
    return world.save_state()


def _analyze(world, hand: str, obj: str, contacts, scale: float, gws: str):
    """(force closure, epsilon) of the hand's contacts with ``obj``, friction scaled by ``scale``."""
    from .objects import grasp_contacts, torque_scale
    from .quality import analyze

    gc = grasp_contacts(world, hand, obj, contacts)
    if not len(gc):
        return None
    q = analyze(gc.points, gc.normals, gc.mu * scale, center=world.bodies[obj].com_world,
                torque_scale=torque_scale(world, obj), tangents=gc.tangents, gws=gws)
    return bool(q.force_closure), float(q.epsilon)


def check_options(*, sigma_position, sigma_rotation, friction, obstacles, closing, timeout, gws) -> tuple:
    """ValueError naming the first bad :func:`robustness` option; else the position sigmas (m) and
    rotation sigmas (rad) as (3,) arrays.  (The planner checks its ``robust_options`` with it before
    searching.)"""
    sp = _sigmas(sigma_position, "sigma_position")
    sr = np.radians(_sigmas(sigma_rotation, "sigma_rotation"))
    if not isinstance(friction, (int, float, np.number)) or not 0 <= friction < 1:
        raise ValueError(f"friction must be in [0, 1) (a relative spread), got {friction!r}")
    if obstacles not in ("fail", "ignore"):
        raise ValueError(f"obstacles must be 'fail' or 'ignore', got {obstacles!r}")
    if closing not in ("static", "centred", "dynamic"):
        raise ValueError(f"closing must be 'static', 'centred' or 'dynamic', got {closing!r}")
    if not isinstance(timeout, (int, float, np.number)) or not 0 < timeout < np.inf:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if gws not in ("L1", "Linf"):
        raise ValueError(f"gws must be 'L1' or 'Linf', got {gws!r}")
    return sp, sr


def robustness(world, hand: str, object: str, grasp: Any, samples: int = 100, seed: int = 0, *,
               sigma_position: float | tuple = 0.005, sigma_rotation: float | tuple = 5.0, friction: float = 0.2,
               obstacles: str = "fail", closing: str = "static", timeout: float = 2.0,
               gws: str = "L1") -> RobustQuality:
    """Probability of force closure and mean / 5th-percentile epsilon of ``grasp`` (an object with
    ``palm_pose`` (4x4, W, m) and ``dofs`` ({name: rad or m}), e.g. :class:`Grasp`) on ``object``
    under sampled noise (module docstring): object pose about its centre of mass, world axes,
    ``sigma_position`` m per axis and ``sigma_rotation`` degrees per rotation-vector component
    (each a number, or three numbers for the world x, y, z axes);
    friction scaled by a factor uniform in [1 - ``friction``, 1 + ``friction``].

    ``obstacles``: ``"fail"`` (the object meeting an obstacle fails the sample) or ``"ignore"``
    (obstacles moved out of reach).  ``closing``: ``"static"`` (kinematic, the object stays:
    :func:`graspsim.control.static_auto_grasp`) or ``"dynamic"``
    (:func:`graspsim.control.dynamic_auto_grasp` for at most ``timeout`` s simulated: the fingers
    push the object, under gravity; about 1 s of wall time per sample; the friction noise then
    scales the analysis only, not the simulation).  The world's state is restored on return.  Zero noise gives
    exactly the nominal verdict and epsilon.
    """
    world_arg("robustness", world)
    from ..collision import model_for
    from ..control import dynamic_auto_grasp, static_auto_grasp
    from ..control.centring import centre_in_world

    t0 = time.perf_counter()
    _robot(world, hand)
    if object not in world.bodies:
        raise ValueError(f"world '{world.name}' has no object '{object}'; bodies: {', '.join(world.bodies)}")
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise ValueError(f"samples must be an integer >= 1, got {samples!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a whole number >= 0, got {seed!r}")     # (numpy's message names neither)
    sp, sr = check_options(sigma_position=sigma_position, sigma_rotation=sigma_rotation, friction=friction,
                           obstacles=obstacles, closing=closing, timeout=timeout, gws=gws)

    saved = world.save_state()
    try:
        pre = _pre_grasp_state(world, hand, grasp)
        if obstacles == "ignore":
            for b in world.bodies.values():
                if not b.dynamic and b.name != object:
                    X = b.pose
                    X[2, 3] -= _AWAY
                    b.pose = X
            pre = world.save_state()

        # all noise drawn up front: the seed alone fixes every sample
        rng = np.random.default_rng(seed)
        dp = rng.normal(0.0, 1.0, (samples, 3)) * sp
        rv = rng.normal(0.0, 1.0, (samples, 3)) * sr
        fs = rng.uniform(1.0 - friction, 1.0 + friction, samples) if friction > 0 else np.ones(samples)

        io = world.table.index[object]
        hand_bodies = set(int(i) for i in world.table.robot_links[world.robots[hand].index])
        model = model_for(world)
        obj_pairs = model.pairs[(model.pairs[:, 0] == io) | (model.pairs[:, 1] == io)]
        h = world.robots[hand]
        rows = np.asarray(world.table.robot_links[h.index], dtype=np.int64)
        fingers = [int(rows[i]) for i, l in enumerate(h.description.links)
                   if l.shape is not None and i != h.description.palm_link and i != h.description.base_link]
        hs = set(int(i) for i in rows)
        hand_pairs = np.array([(a, b) for a, b in model.pairs if (int(a) in hs) != (int(b) in hs)],
                              dtype=np.int64).reshape(-1, 2)

        def verdict(scale: float, cs) -> tuple[bool, float] | str:
            r = _analyze(world, hand, object, cs, scale, gws)
            return "no contact" if r is None else (r if r[0] else "not force closure")

        def close(scale: float) -> tuple[bool, float] | str:
            if closing == "dynamic":
                dynamic_auto_grasp(world, hand, obj=object, timeout=timeout, analyze=False)
                return verdict(scale, None)    # the contacts of the settled state, found at the world's threshold
            if closing == "static" or h.instance.mount is not None:
                return verdict(scale, static_auto_grasp(world, hand, obj=object, analyze=False, gws=gws).contacts)
            # centred: from the sample's object, the hand open (the planner's centring)
            return centre_in_world(world, hand, lambda: verdict(
                scale, static_auto_grasp(world, hand, obj=object, analyze=False, gws=gws).contacts),
                obj=io, fingers=fingers, pairs=hand_pairs, force_closure=lambda v: isinstance(v, tuple)).grasp

        world.restore_state(pre)
        nominal = close(1.0)
        nom_fc, nom_eps = (nominal if isinstance(nominal, tuple) else (False, 0.0))

        world.restore_state(pre)
        X0 = world.bodies[object].pose
        c = world.bodies[object].com_world
        eps = np.zeros(samples)
        fails = {k: 0 for k in FAILURE_KINDS}
        kinds = ["force closure"] * samples
        for s in range(samples):
            world.restore_state(pre)
            if dp[s].any() or rv[s].any():
                R = _rotation(rv[s])
                D = np.eye(4)
                D[:3, :3] = R
                D[:3, 3] = c + dp[s] - R @ c
                world.bodies[object].pose = D @ X0
                hits = model.penetrating(world.body_poses(), pairs=obj_pairs)
                others = {j if i == io else i for i, j in hits}
                if others:
                    kinds[s] = "hand" if others & hand_bodies else "obstacle"
                    fails[kinds[s]] += 1
                    continue
            v = close(float(fs[s]))
            if isinstance(v, str):
                kinds[s] = v
                fails[v] += 1
            else:
                eps[s] = v[1]
    finally:
        world.restore_state(saved)
    ok = samples - sum(fails.values())
    return RobustQuality(probability=ok / samples, mean_epsilon=float(eps.mean()),
                         p5_epsilon=float(np.percentile(eps, 5)), samples=int(samples),
                         nominal_force_closure=nom_fc, nominal_epsilon=nom_eps, failures=fails, epsilons=eps,
                         kinds=kinds, offsets=dp, rotations=rv, friction_factors=fs,
                         seconds=time.perf_counter() - t0)

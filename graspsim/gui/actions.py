"""The one place where the GUI calls collision, grasp analysis, dynamics and auto-grasp.

Each function imports its module when first called (so that opening the CLI or the session
does not load FCL, numba kernels or the simulator); an ImportError there is a broken install and
propagates.  The GUI never computes physics itself; it only draws what these calls return and
passes user input (DOF values, poses, external forces) through them.

Calls made (public API the rest of graspsim provides):

* ``graspsim.collision.find_contacts(world, threshold)`` -> contacts with ``body_a``, ``body_b``
  (names as in ``world.table.names``), ``point`` (3,) W, ``normal`` (3,) W pointing from body_a
  to body_b, ``separation`` (m).
* ``graspsim.grasp.analyze(points, normals, mu, center=, torque_scale=, volume=True)``.
  Contacts may also come as a struct of arrays (``ContactSet``: ``body_a``/``body_b`` as indices
  into ``world.table``, ``point``/``normal`` (k, 3)); :func:`to_views` takes both forms.
* ``graspsim.Simulator(world, dt)`` with ``step(controller=None)``, ``time``, ``poses()`` (N, 4, 4),
  ``sync_world()``, ``contacts`` (as above, with ``force`` (k, 3) on body_b in W, N, or
  ``contact_forces`` (k, 3)).
* ``sim.apply_external_force(body_name, point_W, force_W)``: called before each ``step()`` while
  the user pulls or pushes a body; the force acts during that one step only.
  ``sim.body_velocity(body_name)`` -> [v_com; omega] (6,) W: the pull's and the probe's damping.
* ``graspsim.control.PDController(sim)``: the controller every new simulation steps with (the
  drives hold the world's drive targets: the closing command after an auto-grasp),
  ``graspsim.control.auto_grasp(world, hand_name)`` (static, changes ``world.state``),
  ``graspsim.control.start_dynamic_grasp(sim, hand_name)`` -> a controller passed to every
  following ``sim.step(controller)`` (None: the call configured the simulator itself) and
  ``graspsim.control.dynamic_open_hand(sim, hand_name)`` -> a controller likewise.
* ``graspsim.planner.plan_grasps(world, hand, object, seconds=, n=, seed=, progress=)`` (in the
  planner thread, on :func:`world_copy`) and ``PlannedGrasp.apply(world, hand)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ContactView", "find_contacts", "analyze", "make_simulator", "sim_time",
           "sim_step", "sim_asleep", "sim_sync", "sim_poses", "sim_contacts", "sim_body_velocity", "to_views",
           "apply_external_force", "auto_grasp", "dynamic_auto_grasp", "drive_controller",
           "dynamic_open_hand", "world_copy", "plan_grasps", "apply_grasp"]


@dataclass
class ContactView:
    """A contact as the GUI draws it (all in the world frame, SI units)."""

    body_a: str
    body_b: str
    point: np.ndarray
    normal: np.ndarray          # unit, from body_a towards body_b
    mu: float = 0.5             # static friction coefficient of the pair
    separation: float = 0.0
    force: np.ndarray | None = None   # force on body_b (N), from the dynamics


def _mu(world, a: str, b: str) -> float:
    t = world.table
    try:
        return _mu_of(world.description.materials, t.materials[t.index[a]], t.materials[t.index[b]])
    except (KeyError, IndexError):
        return 0.5


def _mu_of(table, a: str, b: str) -> float:
    """Static friction between materials ``a`` and ``b`` (0.5 where the table has no entry: the
    viewer only shows it)."""
    try:
        return float(table.mu(a, b)[0])
    except KeyError:
        return 0.5


def _name(table, b) -> str:
    """A body given by name or by index into the world's body table, as its name."""
    if isinstance(b, (int, np.integer)):
        return table.names[int(b)]
    return str(b)


def _view(world, a, b, point, normal, force, mu, separation) -> ContactView | None:
    t = world.table
    a, b = _name(t, a), _name(t, b)
    n = np.asarray(normal, float).reshape(3)
    nn = float(np.linalg.norm(n))
    if not np.isfinite(nn) or nn <= 0:
        return None
    if force is not None:
        force = np.asarray(force, float).reshape(-1)
        if force.size == 1:  # a scalar normal force
            force = float(force[0]) * n / nn
    return ContactView(a, b, np.asarray(point, float).reshape(3).copy(), n / nn,
                       float(mu) if mu is not None else _mu(world, a, b),
                       float(separation or 0.0), force)


def to_views(world, contacts, forces=None) -> list[ContactView]:
    """Convert contacts into :class:`ContactView` objects.

    Accepts a struct of arrays (``body_a``, ``body_b`` (k,) indices into ``world.table`` or names,
    ``point``, ``normal`` (k, 3), optional ``separation`` (k,), ``force`` (k, 3)) as the collision
    module's ``ContactSet`` is, or any iterable of objects with those attributes per contact.
    ``forces`` (k, 3) supplies the forces if the contacts do not carry them.
    """
    if contacts is None:
        return []
    out = []
    pts = getattr(contacts, "point", None)
    if pts is not None and np.ndim(pts) == 2:  # struct of arrays
        k = len(pts)
        f = getattr(contacts, "force", None)
        f = forces if f is None else f
        if f is not None and len(f) != k:
            f = None
        sep = getattr(contacts, "separation", None)
        mu = getattr(contacts, "mu", None)
        sa, sb = getattr(contacts, "shape_a", None), getattr(contacts, "shape_b", None)
        if mu is None and sa is not None and sb is not None and len(sa) == k:
            # the touching shapes' materials (a link or object may set one per shape)
            sm, table = world.table.shape_materials, world.description.materials
            mu = np.array([_mu_of(table, sm[int(x)], sm[int(y)]) for x, y in zip(sa, sb)])
        for i in range(k):
            v = _view(world, contacts.body_a[i], contacts.body_b[i], pts[i], contacts.normal[i],
                      None if f is None else f[i], None if mu is None else np.broadcast_to(mu, (k,))[i],
                      None if sep is None else sep[i])
            if v is not None:
                out.append(v)
        return out
    for i, c in enumerate(contacts):
        f = getattr(c, "force", None)
        if f is None and forces is not None and i < len(forces):
            f = forces[i]
        v = _view(world, c.body_a, c.body_b, c.point, c.normal, f, getattr(c, "mu", None),
                  getattr(c, "separation", 0.0))
        if v is not None:
            out.append(v)
    return out


def find_contacts(world) -> list[ContactView]:
    """Contacts of the world in its current state (collision module)."""
    from graspsim.collision import find_contacts as contacts_of

    return to_views(world, contacts_of(world, world.description.contact_threshold))


def analyze(points, normals, mu, center, torque_scale):
    """Grasp quality (``force_closure``, ``epsilon``, ``volume``, ``wrenches``) of a contact set."""
    from graspsim.grasp import analyze as grasp_analyze

    return grasp_analyze(points, normals, mu, center=center, torque_scale=torque_scale, volume=True)


def make_simulator(world):
    """A new simulator on ``world`` (starting from its current state)."""
    from graspsim.dynamics import Simulator

    return Simulator(world, world.description.dt)


def drive_controller(sim):
    """The controller a new simulation steps with: every robot's drives hold the world's drive
    targets (the closing command after an auto-grasp) or its DOF values (``PDController(sim)``)."""
    from graspsim.control import PDController

    return PDController(sim)


def sim_asleep(sim) -> bool:
    """Is the simulated world asleep (at rest: its steps only advance the clock)?"""
    return bool(sim.asleep)


def sim_time(sim) -> float:
    return float(sim.time)


def sim_step(sim, controller=None) -> None:
    """One simulator step; ``controller`` (from :func:`dynamic_auto_grasp`) drives the hand."""
    if controller is None:
        sim.step()
    else:
        sim.step(controller)


def sim_sync(sim) -> None:
    """Write the simulated state back into the world (``sim.sync_world()``), if the simulator can."""
    fn = getattr(sim, "sync_world", None)
    if fn is not None:
        fn()


def sim_poses(sim) -> np.ndarray | None:
    """(N, 4, 4) body poses in table order from the simulator (``sim.poses()``), or None."""
    fn = getattr(sim, "poses", None)
    return None if fn is None else np.asarray(fn())


def sim_contacts(world, sim) -> list[ContactView]:
    """Contacts of the last step with their forces (``sim.contacts``, ``sim.contact_forces``)."""
    c = getattr(sim, "contacts", None)
    if callable(c):
        c = c()
    forces = getattr(sim, "contact_forces", None)
    if callable(forces):
        forces = forces()
    return to_views(world, c, forces)


def sim_body_velocity(sim, body: str) -> np.ndarray | None:
    """[v_com; omega] (6,) of a body in W (``sim.body_velocity(name)``), or None if the simulator
    does not report it."""
    fn = getattr(sim, "body_velocity", None)
    return None if fn is None else np.asarray(fn(body), float).reshape(6)


def apply_external_force(sim, body: str, point_W: np.ndarray, force_W: np.ndarray) -> None:
    """Hand a user force (pull/push) to the simulator for the next step."""
    sim.apply_external_force(body, np.asarray(point_W, float), np.asarray(force_W, float))


def auto_grasp(world, hand: str):
    """Static auto-grasp: close the hand's fingers until they touch (changes ``world.state``)."""
    from graspsim.control import auto_grasp as static_grasp

    return static_grasp(world, hand)


def dynamic_auto_grasp(sim, hand: str):
    """Dynamic auto-grasp: returns the controller to pass to every ``sim.step`` (or None if the
    call configured the simulator itself); the simulation closes the hand."""
    from graspsim.control import start_dynamic_grasp

    return start_dynamic_grasp(sim, hand)


def dynamic_open_hand(sim, hand: str):
    """Open the hand under the dynamics: returns the controller for the following steps (or None)."""
    from graspsim.control import dynamic_open_hand as open_hand

    return open_hand(sim, hand)


def world_copy(world):
    """A new World of the same description in the same state (its own collision model: the
    planner thread works on it while the window uses ``world``)."""
    from graspsim.world import World

    w = World(world.description)
    w.restore_state(world.save_state())
    return w


def plan_grasps(world, hand: str, obj: str, *, seconds: float, n: int = 10, seed: int = 0, progress=None,
                robust_samples: int = 0) -> list:
    """Planned grasps of ``obj`` by ``hand`` (:func:`graspsim.planner.plan_grasps`, a seconds budget);
    ``robust_samples`` > 0 ranks them by robustness (``rank="robust"``) with that many samples."""
    from graspsim.planner import plan_grasps as plan

    if robust_samples > 0:
        return plan(world, hand, obj, n=n, seconds=seconds, seed=seed, progress=progress, rank="robust",
                    robust_samples=int(robust_samples))
    return plan(world, hand, obj, n=n, seconds=seconds, seed=seed, progress=progress)


def apply_grasp(world, hand: str, grasp) -> None:
    """Put the (unmounted) hand in a planned grasp: base pose and joint values."""
    grasp.apply(world, hand)

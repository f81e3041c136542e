"""Dynamic auto-grasp and the lift test, in the time-stepping simulator.

``dynamic_auto_grasp`` sets every closing DOF's target to its closing limit, generates smooth
trajectories at the DOFs' default speeds and simulates until the fingers stop (or a timeout); the
PD drives (effort-limited) then press the fingers on the object.  Every other DOF -- an arm
carrying the hand -- holds its pose.  ``lift_test`` then raises the hand (the arm's end effector
along a straight Cartesian line, or a fixed-base hand's base along a prescribed path), holds it,
and reports whether the object came along and how far it slipped relative to the hand.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import spatial
from .pd import PDController
from .trajectory import quintic

__all__ = ["DynamicGraspResult", "LiftResult", "dynamic_auto_grasp", "lift_test", "dynamic_open_hand", "Snapshot",
           "start_dynamic_grasp"]


@dataclass
class Snapshot:
    """Contacts and forces at one instant of a dynamic grasp (forces on the object, N, W)."""

    time: float
    links: list
    points: np.ndarray
    forces: np.ndarray
    dofs: np.ndarray


@dataclass
class DynamicGraspResult:
    sim: object
    controller: PDController
    hand: str
    obj: str | None
    settled: bool                 # the fingers stopped moving before the timeout
    time: float                   # simulated time at the end (s)
    steps: int
    wall_time: float              # s
    dofs: np.ndarray
    quality: object = None        # GraspQuality of the final contacts with the object
    grasp_contacts: object = None
    snapshots: list = field(default_factory=list)
    history: dict = field(default_factory=dict)   # time, contact count, object height per step


@dataclass
class LiftResult:
    held: bool                    # the object rose with the hand and did not slip out
    dropped: bool                 # the object ended below where it started + half the lift
    lifted: float                 # rise of the object's centre of mass (m)
    hand_rise: float              # rise of the palm (m)
    slip: float                   # change of the object's position relative to the palm (m)
    rotation: float               # change of its orientation relative to the palm (rad)
    time: float
    wall_time: float


def _object_name(world, obj):
    if obj is not None:
        return obj
    dyn = [b.name for b in world.bodies.values() if b.dynamic]
    return dyn[0] if len(dyn) == 1 else None


def _snapshot(sim, hand_ri: int, io: int | None) -> Snapshot:
    c = sim.contacts
    t = sim.table
    links = set(int(i) for i in t.robot_links[hand_ri])
    if c is None or io is None:
        return Snapshot(sim.time, [], np.zeros((0, 3)), np.zeros((0, 3)), sim.dof_values().copy())
    f = sim.contact_forces
    sel_b = (c.body_b == io) & np.isin(c.body_a, list(links))   # force on body_b = the object
    sel_a = (c.body_a == io) & np.isin(c.body_b, list(links))
    sel = sel_a | sel_b
    forces = np.where(sel_a[:, None], -f, f)[sel]
    names = [t.names[x] for x in np.where(sel_b, c.body_a, c.body_b)[sel]]
    return Snapshot(sim.time, names, c.point[sel], forces, sim.dof_values().copy())


def start_dynamic_grasp(sim, hand: str, *, effort: dict | None = None,
                        controller: PDController | None = None) -> PDController:
    """Set ``hand``'s closing DOFs moving to their closing limits at their default speeds; every
    other DOF holds.  Returns the controller to pass to ``sim.step`` (the GUI steps it itself)."""
    ctl = controller or PDController(sim)
    for name, e in (effort or {}).items():
        ctl.set_gains(hand, name, effort=e)
    ctl.move_to(hand, _limit_targets(sim, hand, closing=True))
    return ctl


def dynamic_auto_grasp(world, hand: str, *, obj: str | None = None, timeout: float = 3.0, sim=None,
                       dt: float | None = None, effort: dict | None = None, snapshot_times=(),
                       settle_speed: float = 0.02, settle_time: float = 0.1, analyze: bool = True,
                       gws: str = "L1", **sim_options) -> DynamicGraspResult:
    """Close ``hand`` under dynamics until its fingers stop (joint speeds below ``settle_speed``
    rad/s for ``settle_time`` s after the trajectory ends) or ``timeout`` s of simulated time.

    ``effort`` overrides DOF effort limits by name (e.g. ``{"f1": 2.5, "f2": 2.5}``).  Snapshots of
    the contacts and forces are kept at ``snapshot_times`` (s).  The world's state is updated to the
    final pose.
    """
    import time as _t

    from ..dynamics import Simulator

    obj = _object_name(world, obj)
    if sim is None:
        sim = Simulator(world, dt, **sim_options)
    ri = world.description.robot_index[hand]
    sl = sim.ds.robot_slices[ri]
    speeds = sim.ds.velocity[sl]
    ctl = start_dynamic_grasp(sim, hand, effort=effort)
    traj = ctl.trajectories[ri]
    closing = np.flatnonzero(speeds != 0) + sl.start
    io = sim.table.index.get(obj) if obj is not None else None
    pending = sorted(snapshot_times)
    snaps, hist_t, hist_n, hist_z = [], [], [], []
    still = 0.0
    settled = False
    t0 = _t.perf_counter()
    while sim.time < timeout - 1e-12:
        sim.step(ctl)
        while pending and sim.time >= pending[0] - 1e-9:
            snaps.append(_snapshot(sim, ri, io))
            pending.pop(0)
        hist_t.append(sim.time)
        hist_n.append(0 if sim.contacts is None else len(sim.contacts))
        if io is not None:
            hist_z.append(sim.poses()[io][2, 3])
        speed = np.max(np.abs(sim.dof_velocities()[closing])) if len(closing) else 0.0
        moving_ref = sim.time < traj.t_end and np.any(np.abs(traj(sim.time)[1]) > 1e-9)
        still = still + sim.info.h if speed < settle_speed else 0.0
        if still >= settle_time and (not moving_ref or sim.time > 0.25):
            # the fingers are blocked: keep the PD pressing, finish at a step boundary
            if not moving_ref or still >= settle_time:
                settled = True
                break
    wall = _t.perf_counter() - t0
    sim.sync_world()
    res = DynamicGraspResult(sim, ctl, hand, obj, settled, sim.time, sim.state.steps, wall,
                             sim.dof_values()[sl].copy(), snapshots=snaps,
                             history={"time": np.array(hist_t), "contacts": np.array(hist_n),
                                      "object_z": np.array(hist_z)})
    if obj is not None and analyze:
        from ..grasp.objects import evaluate_grasp

        res.quality, res.grasp_contacts = evaluate_grasp(world, hand, obj, contacts=sim.contacts, gws=gws) \
            if sim.contacts is not None else (None, None)
    return res


def lift_test(result: DynamicGraspResult, height: float = 0.1, duration: float = 1.0, hold: float = 0.5,
              *, slip_tolerance: float = 0.01) -> LiftResult:
    """Raise the hand by ``height`` (m, world +z) over ``duration`` s along a smooth path, hold for
    ``hold`` s, and measure the object against the palm.  ``held`` when the object rose by at least
    80 % of the lift and slipped less than ``slip_tolerance`` (m) relative to the palm."""
    import time as _t

    sim, ctl, hand, obj = result.sim, result.controller, result.hand, result.obj
    if obj is None:
        raise ValueError("lift_test needs the grasped object (name it with obj=...)")
    world = sim.world
    ri = world.description.robot_index[hand]
    inst = world.description.robots[ri]
    palm_i = int(sim.table.robot_links[ri][inst.robot.palm_link])
    io = sim.table.index[obj]
    X0 = sim.poses()
    rel0 = np.linalg.inv(X0[palm_i]) @ X0[io]
    t_start = sim.time
    if inst.mount is not None:
        # the arm's end effector moves along a straight vertical line (IK samples)
        arm_i, arm_link, _ = inst.mount
        arm = world.description.robots[arm_i]
        X_ee = X0[int(sim.table.robot_links[arm_i][arm_link])]
        X_target = X_ee.copy()
        X_target[2, 3] += height
        ctl.move_line(arm.name, X_target, duration=duration, link=arm_link)
    elif inst.fixed_base:
        base_i = int(sim.table.robot_links[ri][inst.robot.base_link])
        Xb0 = X0[base_i].copy()

        def motion(t):
            s, ds, _ = quintic((t - t_start) / duration)
            X = Xb0.copy()
            X[2, 3] += height * s
            tw = np.zeros(6)
            tw[2] = height * ds / duration if t_start <= t <= t_start + duration else 0.0
            return X, tw

        sim.set_base_motion(hand, motion)
    else:
        raise ValueError(f"hand '{hand}' has a free base: nothing carries it up")
    t0 = _t.perf_counter()
    sim.run(duration + hold, ctl)
    wall = _t.perf_counter() - t0
    X1 = sim.poses()
    rel1 = np.linalg.inv(X1[palm_i]) @ X1[io]
    slip = float(np.linalg.norm(rel1[:3, 3] - rel0[:3, 3]))
    rot = float(np.linalg.norm(spatial.rotation_log(rel0[:3, :3].T @ rel1[:3, :3])))
    com0 = X0[io][:3, :3] @ sim.table.com[io] + X0[io][:3, 3]
    com1 = X1[io][:3, :3] @ sim.table.com[io] + X1[io][:3, 3]
    lifted = float(com1[2] - com0[2])
    hand_rise = float(X1[palm_i][2, 3] - X0[palm_i][2, 3])
    sim.sync_world()
    return LiftResult(held=bool(lifted >= 0.8 * height and slip < slip_tolerance), dropped=bool(lifted < 0.5 * height),
                      lifted=lifted, hand_rise=hand_rise, slip=slip, rotation=rot, time=sim.time, wall_time=wall)


def dynamic_open_hand(sim, hand: str, controller: PDController | None = None) -> PDController:
    """Command ``hand``'s closing DOFs back to their open limits (returns the controller to step with)."""
    ctl = controller or PDController(sim)
    ctl.move_to(hand, _limit_targets(sim, hand, closing=False))
    return ctl


def _limit_targets(sim, hand: str, *, closing: bool) -> np.ndarray:
    """DOF targets of ``hand``: each DOF with a closing direction (the sign of its default
    velocity) at its closing limit (``closing``) or its opening limit; the others where they are."""
    ri = sim.world.description.robot_index[hand]
    robot = sim.world.description.robots[ri].robot
    target = sim.dof_values()[sim.ds.robot_slices[ri]].copy()
    for k, d in enumerate(robot.dofs):
        if d.velocity != 0:
            target[k] = d.limits[1] if (d.velocity > 0) == closing else d.limits[0]
    return target

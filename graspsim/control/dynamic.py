"""Dynamic auto-grasp and the lift test, in the time-stepping simulator.

``dynamic_auto_grasp`` sets every closing DOF's target to its closing limit, generates smooth
trajectories at the DOFs' default speeds (from where the fingers are) and simulates until every
closing DOF is still and either pressing with its full effort (blocked by a contact) or at the end
of its trajectory -- or until a timeout.  The PD drives (effort-limited) then press the fingers on
the object.  Every other DOF -- an arm carrying the hand -- holds its commanded pose.
``lift_test`` then raises the hand by the commanded height (the arm's commanded end-effector pose
along a straight Cartesian line, or a fixed-base hand's base along a prescribed path), holds it,
and reports whether the object came along and how far it slipped relative to the hand.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import sys

from .. import kinematics, spatial
from ..arguments import object_name, positive, world_arg
from .explain import Breakaway, DofEnd
from .pd import PDController
from .trajectory import JointTrajectory, QuinticBaseMotion

#: a prismatic DOF's speed and error are compared with a revolute one's at this ratio (1 mm ~ 1/20 rad,
#: as in the static auto-grasp's step): 0.02 rad/s "still" is 1 mm/s for a gripper's fingers
PRISMATIC_PER_RAD = 0.05

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
    ends: dict = field(default_factory=dict)      # DOF name -> DofEnd: how each DOF ended the grasp
    joint_values: np.ndarray = None               # (nj,) the hand's joints at the end (rad or m)


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
    commanded: float = float("nan")   # the rise asked of the hand (m)
    contacts: int = 0                 # contacts between the hand and the object at the end


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


#: most steps per rollout of the drivers (its record's memory: ~1 MB for the Barrett and the mug)
CHUNK = 1000

#: wall seconds a dynamic grasp or lift runs before its progress bar appears (on a terminal)
PROGRESS_DELAY = 0.5


def _progress(total: float, desc: str, enabled: bool):
    """A tqdm bar over ``total`` simulated seconds on stderr, shown only on a terminal and only
    once the run has taken ``PROGRESS_DELAY`` s; None when not ``enabled``."""
    if not enabled:
        return None
    from tqdm import tqdm

    isatty = getattr(sys.stderr, "isatty", lambda: False)
    return tqdm(total=round(total, 6), desc=desc, unit="s sim", file=sys.stderr, delay=PROGRESS_DELAY, leave=False,
                disable=not isatty(), bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.2f}/{total:.2f} s simulated "
                                                 "[{elapsed}<{remaining}]")


def _count_contacts(sim, ri: int, io: int | None) -> int:
    """Contacts of the last step between robot ``ri``'s links and body ``io``."""
    c = sim.contacts
    if c is None or io is None:
        return 0
    links = sim.table.robot_links[ri]
    return int(np.sum(((c.body_a == io) & np.isin(c.body_b, links)) | ((c.body_b == io) & np.isin(c.body_a, links))))


def _from_measured(ctl: PDController, hand: str, which: np.ndarray) -> None:
    """Restart ``hand``'s reference at the measured values of the DOFs ``which`` (local indices):
    a move of a DOF held back by a contact (its reference far ahead) then starts where it is."""
    sim = ctl.sim
    ri = ctl._robot(hand)
    q = ctl.trajectories[ri](sim.time)[0]
    q[which] = sim.dof_values(hand)[which]
    ctl.trajectories[ri] = JointTrajectory(sim.time, 0.0, q, q.copy())


def start_dynamic_grasp(sim, hand: str, *, effort: dict | None = None,
                        controller: PDController | None = None) -> PDController:
    """Set ``hand``'s closing DOFs moving from where they are to their closing limits at their
    default speeds; every other DOF holds its command.  ``effort`` overrides effort limits by DOF
    name (N m or N; unknown names raise ``KeyError`` naming the hand's DOFs).  Returns the
    controller to pass to ``sim.step`` (the GUI steps it itself)."""
    ctl = controller or PDController(sim)
    robot = sim.world.description.robots[ctl._robot(hand)].robot
    bad = [n for n in (effort or {}) if n not in robot.dof_index]
    if bad:
        raise KeyError(f"robot '{hand}' has no DOF {', '.join(repr(b) for b in bad)}; DOFs: {', '.join(robot.dof_names)}")
    for name, e in (effort or {}).items():
        ctl.set_gains(hand, name, effort=e)
    _from_measured(ctl, hand, np.array([d.velocity != 0 for d in robot.dofs]))
    ctl.move_to(hand, _limit_targets(sim, hand, closing=True))
    return ctl


def _dof_ends(sim, ctl: PDController, ri: int, still: np.ndarray, clutch: dict) -> dict:
    """How each of robot ``ri``'s DOFs stands now (see :class:`DofEnd`)."""
    robot = sim.world.description.robots[ri].robot
    sl = sim.ds.robot_slices[ri]
    traj = ctl.trajectories[ri]
    q, qd = sim.dof_values()[sl], sim.dof_velocities()[sl]
    ref = traj(sim.time)[0]
    effort = np.minimum(ctl.effort[sl], sim.ds.effort[sl])
    pressing = ctl.kp[sl] * (ref - q) * np.sign([d.velocity for d in robot.dofs]) >= effort * (1 - 1e-9)
    done = sim.time >= traj.t_end
    out = {}
    for k, d in enumerate(robot.dofs):
        if d.velocity == 0:
            state = "holding"
        elif still[k] and pressing[k]:
            state = "pressing"
        elif still[k] and done:
            state = "at target"
        else:
            state = "moving"
        distal = None
        if sim.state.broken[sl.start + k]:
            dj = sim.ds.joints[sl.start + k][-1]
            distal = (robot.joints[d.joints[-1]].name, float(sim.state.joint_q[dj]))
        out[d.name] = DofEnd(state, float(q[k]), float(traj.q1[k]), float(effort[k]), float(abs(qd[k])),
                             clutch.get(k) if sim.state.broken[sl.start + k] else None, distal)
    return out


def dynamic_auto_grasp(world, hand: str, *, obj: str | None = None, timeout: float = 3.0, sim=None,
                       dt: float | None = None, effort: dict | None = None, snapshot_times=(),
                       settle_speed: float = 0.02, settle_time: float = 0.1, analyze: bool = True,
                       gws: str = "L1", progress: bool = False, **sim_options) -> DynamicGraspResult:
    """Close ``hand`` under dynamics until it has settled or ``timeout`` s of simulated time.

    Settled: for ``settle_time`` s every closing DOF moves slower than ``settle_speed`` (rad/s; a
    prismatic DOF ``settle_speed`` x 0.05 m/s, i.e. 1 mm/s) and is either pressing -- its drive at
    its effort limit towards a reference ahead of it (blocked by a contact) -- or at the end of its
    reference.  ``effort`` overrides DOF effort limits by name (e.g. ``{"f1": 2.5, "f2": 2.5}``).
    Snapshots of the contacts and forces are kept at ``snapshot_times`` (s).  ``progress``: a bar on
    stderr when it is a terminal and the run takes more than 0.5 s.  The world's state is updated
    to the final pose and its drive targets to the closing command.  ``result.ends`` says how each
    DOF ended (pressing, at its target, still moving; whether its clutch broke away).
    """
    world_arg("dynamic_auto_grasp", world)
    import time as _t

    from ..dynamics import Simulator
    from ..dynamics.rollout import Settle

    world.robots[hand]
    object_name(world, obj)
    timeout = positive("timeout", timeout)
    settle_speed = positive("settle_speed", settle_speed)
    settle_time = positive("settle_time", settle_time, zero=True)
    obj = _object_name(world, obj)
    if sim is None:
        sim = Simulator(world, dt, **sim_options)
    ri = world.description.robot_index[hand]
    robot = world.description.robots[ri].robot
    sl = sim.ds.robot_slices[ri]
    ctl = start_dynamic_grasp(sim, hand, effort=effort)
    traj = ctl.trajectories[ri]
    closing = np.array([d.velocity != 0 for d in robot.dofs])
    sign = np.sign([d.velocity for d in robot.dofs])
    prismatic = np.array([robot.joints[d.joints[0]].kind == "prismatic" for d in robot.dofs])
    still_speed = np.where(prismatic, settle_speed * PRISMATIC_PER_RAD, settle_speed)   # rad/s or m/s
    effort_now = np.minimum(ctl.effort[sl], sim.ds.effort[sl])
    io = sim.table.index.get(obj) if obj is not None else None
    pending = sorted(snapshot_times)
    snaps, hist_t, hist_n, hist_z = [], [], [], []
    clutch: dict[int, Breakaway] = {}
    broken = sim.state.broken[sl].tolist()
    prev_q = sim.dof_values()[sl]
    bar = _progress(timeout, f"dynamic grasp of '{obj or hand}'", progress)
    cpd = ctl.compiled()          # (the trajectories and gains stay as they are until the end)
    h_max = sim.dt                # no step is longer (an impact cuts one shorter)
    # the settle test after every step (rollout.Settle; in the compiled loop too): the closing DOFs
    # still, and either blocked (the drive pushes with its full effort towards a reference ahead of
    # it) or at the end of the reference
    w = np.flatnonzero(closing)
    test = Settle(sl.start + w, still_speed[w], ctl.kp[sl][w], sign[w], effort_now[w] * (1 - 1e-9), traj.q0[w],
                  traj.q1[w], traj.t0, traj.duration, settle_time)
    last = None                   # the last step's record (1 row): the DOF values before a clutch gave way
    t0 = _t.perf_counter()
    while sim.time < timeout - 1e-12 and not test.settled:
        # a rollout of as many steps as cannot pass the timeout or a snapshot time before its last
        span = min(timeout - 1e-12 - sim.time, pending[0] - 1e-9 - sim.time if pending else np.inf)
        ro = sim.rollout(max(1, min(CHUNK, int(span / h_max))), cpd, stop_after_step=True, until=test)
        m = len(ro)
        hist_t.extend(ro.time.tolist())
        hist_n.extend(ro.contacts.tolist())
        if io is not None:
            hist_z.extend(sim.rollout_poses(ro, obj)[:, 2, 3].tolist())
        if bar is not None:
            bar.update(float(ro.h.sum()))
        now = ro.broken[m - 1, sl].tolist()
        if now != broken:       # a clutch gave way in the last step (one through step(), which ends it)
            before = last if m == 1 else ro.head(m - 1).tail(1)      # (the step before it)
            prev_q = sim.rollout_dofs(before)[0][0, sl] if before is not None else prev_q
            for k in range(len(now)):
                if now[k] and not broken[k]:
                    clutch[k] = _breakaway(sim, ri, k, prev_q[k])
            broken = now
        last = ro.tail(1)
        while pending and sim.time >= pending[0] - 1e-9:
            snaps.append(_snapshot(sim, ri, io))
            pending.pop(0)
    settled = test.settled
    if bar is not None:
        bar.close()
    wall = _t.perf_counter() - t0
    sim.sync_world()
    ends = _dof_ends(sim, ctl, ri, np.abs(sim.dof_velocities()[sl]) < still_speed, clutch)
    # the world keeps the command the drives hold (a simulation started from it keeps squeezing)
    world.state.drive_targets[ri] = traj.q1.copy()
    jsel = np.flatnonzero(sim.js.robot == ri)
    jv = np.zeros(len(robot.joints))
    jv[sim.js.local[jsel]] = sim.state.joint_q[jsel]
    res = DynamicGraspResult(sim, ctl, hand, obj, settled, sim.time, sim.state.steps, wall,
                             sim.dof_values()[sl].copy(), snapshots=snaps,
                             history={"time": np.array(hist_t), "contacts": np.array(hist_n),
                                      "object_z": np.array(hist_z)}, ends=ends, joint_values=jv)
    if obj is not None and analyze:
        from ..grasp.objects import evaluate_grasp

        res.quality, res.grasp_contacts = evaluate_grasp(world, hand, obj, contacts=sim.contacts, gws=gws) \
            if sim.contacts is not None else (None, None)
    return res


def _breakaway(sim, ri: int, k: int, before: float) -> Breakaway:
    """The clutch of robot ``ri``'s DOF ``k`` has just given way (at DOF value ``before``, rad)."""
    robot = sim.world.description.robots[ri].robot
    d = sim.ds.robot_slices[ri].start + k
    prox = robot.dofs[k].joints[0]
    link = robot.joints[prox].child
    b = int(sim.table.robot_links[ri][link])
    c = sim.contacts
    touched = () if c is None else tuple(sorted(
        {sim.table.names[int(y)] for x, y in zip(np.r_[c.body_a, c.body_b], np.r_[c.body_b, c.body_a]) if x == b}))
    return Breakaway(float(before), robot.joints[prox].name, float(sim.state.lock[d]), robot.links[link].name, touched)


def lift_test(result: DynamicGraspResult, height: float = 0.1, duration: float = 1.0, hold: float = 0.5,
              *, slip_tolerance: float = 0.01, progress: bool = False) -> LiftResult:
    """Raise the hand by ``height`` (m, world +z) over ``duration`` s along a smooth path, hold for
    ``hold`` s, and measure the object against the palm.  ``held`` when the object rose by at least
    80 % of the lift and slipped less than ``slip_tolerance`` (m) relative to the palm.

    A hand on an arm: the arm's *commanded* end-effector pose rises by ``height`` (the reference,
    not the measured pose, which sags under gravity by the PD's steady-state error), so the palm
    rises by ``height`` up to the change of that sag.  Raises :class:`TrajectoryError` if the line
    leaves the arm's reach.
    """
    import time as _t

    if not isinstance(result, DynamicGraspResult):
        raise ValueError(f"lift_test needs the result of dynamic_auto_grasp, got {type(result).__name__}")
    sim, ctl, hand, obj = result.sim, result.controller, result.hand, result.obj
    height = positive("height", height)
    duration = positive("duration", duration)
    hold = positive("hold", hold, zero=True)
    slip_tolerance = positive("slip_tolerance", slip_tolerance)
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
        # the commanded pose: the line starts from the reference, which the measured pose trails
        q_ref = ctl.trajectories[arm_i](sim.time)[0]
        X_ee = kinematics.forward_kinematics(arm.robot, kinematics.joint_values(arm.robot, q_ref),
                                             world.base_pose(arm_i))[arm_link]
        X_target = X_ee.copy()
        X_target[2, 3] += height
        ctl.move_line(arm.name, X_target, duration=duration, link=arm_link)
    elif inst.fixed_base:
        base_i = int(sim.table.robot_links[ri][inst.robot.base_link])
        sim.set_base_motion(hand, QuinticBaseMotion(X0[base_i], [0.0, 0.0, height], t_start, duration))
    else:
        raise ValueError(f"hand '{hand}' has a free base: nothing carries it up")
    t0 = _t.perf_counter()
    bar = _progress(duration + hold, f"lift of '{obj}'", progress)
    if ctl.feedforward is not None:       # a Python feedforward (computed torques): step() every step
        sim.run(duration + hold, ctl, None if bar is None else (lambda s: bar.update(s.info.h)))
    else:
        # sim.run(duration + hold, ctl) as rollouts that cannot pass its end before their last step
        cpd = ctl.compiled()
        t_end = sim.time + (duration + hold) - 1e-12
        while sim.time < t_end:
            ro = sim.rollout(max(1, min(CHUNK, int((t_end - sim.time) / sim.dt))), cpd)
            if bar is not None:
                bar.update(float(ro.h.sum()))
    if bar is not None:
        bar.close()
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
                      lifted=lifted, hand_rise=hand_rise, slip=slip, rotation=rot, time=sim.time, wall_time=wall,
                      commanded=float(height), contacts=_count_contacts(sim, ri, io))


def dynamic_open_hand(sim, hand: str, controller: PDController | None = None) -> PDController:
    """Command ``hand``'s closing DOFs from where they are back to their open limits (returns the
    controller to step with)."""
    ctl = controller or PDController(sim)
    robot = sim.world.description.robots[ctl._robot(hand)].robot
    _from_measured(ctl, hand, np.array([d.velocity != 0 for d in robot.dofs]))
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

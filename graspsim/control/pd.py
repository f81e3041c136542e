"""PD joint control: a controller object the simulator calls every step (no globals).

``PDController`` holds, per robot, a trajectory of DOF set points and turns it into a
:class:`~graspsim.dynamics.DriveCommand` with the model's Kp, Kd and effort limits (overridable).
An optional ``feedforward(sim, robot, q, qd, qdd) -> tau`` adds computed torques.
"""
from __future__ import annotations

import math
import numbers
import operator
from typing import Callable

import numpy as np

from ..arguments import real
from ..dynamics.drives import DriveCommand
from .trajectory import JointTrajectory, cartesian_line, joint_trajectory


def _gains(name: str, v, ds) -> np.ndarray:
    """PDController's ``kp``, ``kd`` or ``effort``: a number or one per DOF, >= 0 (effort > 0, inf:
    no limit; the gains finite); ValueError naming the DOF (the next step's command check would
    name it too, but not the call that set it)."""
    nd = len(ds.names)
    try:
        a = np.broadcast_to(np.asarray(v, float), (nd,)).copy()
    except (TypeError, ValueError):
        raise ValueError(f"PDController: {name} must be a number or {nd} numbers (the DOFs {list(ds.names)}), "
                         f"got {v!r}") from None
    ok = (a > 0) if name == "effort" else (np.isfinite(a) & (a >= 0))
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        need = "> 0 (inf: no limit)" if name == "effort" else "finite and >= 0"
        raise ValueError(f"PDController: {name} of DOF '{ds.names[k]}' must be {need}, got {a[k]}")
    return a


class PDController:
    """Tracks per-robot DOF trajectories with effort-limited PD drives.

    ``sim`` is the :class:`~graspsim.Simulator` whose DOFs are controlled.  Initially every robot
    holds its world's drive targets (``world.state.drive_targets``: the closing command a static
    auto-grasp leaves, so the fingers keep squeezing with their effort limits) or, without them,
    the DOF values it starts with.
    """

    def __init__(self, sim, *, kp=None, kd=None, effort=None, feedforward: Callable | None = None):
        from ..dynamics.simulator import Simulator

        if not isinstance(sim, Simulator):
            raise ValueError(f"PDController needs a graspsim Simulator, got {type(sim).__name__}")
        self.sim = sim
        ds = sim.ds
        self.kp = ds.kp.copy() if kp is None else _gains("kp", kp, ds)
        self.kd = ds.kd.copy() if kd is None else _gains("kd", kd, ds)
        self.effort = ds.effort.copy() if effort is None else _gains("effort", effort, ds)
        self.feedforward = feedforward
        q = sim.dof_values()
        targets = sim.world.state.drive_targets
        self.trajectories: dict[int, JointTrajectory] = {}
        for ri, sl in enumerate(ds.robot_slices):
            hold = q[sl].copy() if targets[ri] is None else np.array(targets[ri], float)
            self.trajectories[ri] = JointTrajectory(sim.time, 0.0, hold, hold.copy())

    def _robot(self, robot: str) -> int:
        idx = self.sim.world.description.robot_index
        if robot not in idx:
            raise KeyError(f"no robot '{robot}'; robots: {', '.join(idx)}")
        return idx[robot]

    def _dof(self, ri: int, dof: str) -> int:
        robot = self.sim.world.description.robots[ri].robot
        if dof not in robot.dof_index:
            from ..errors import did_you_mean

            raise ValueError(f"robot '{robot.name}' has no DOF '{dof}'{did_you_mean(dof, robot.dof_index)}; "
                             f"DOFs: {', '.join(robot.dof_names)}")
        return robot.dof_index[dof]

    def set_gains(self, robot: str, dof: str, *, kp=None, kd=None, effort=None) -> None:
        """Set one DOF's proportional gain (N m/rad or N/m), damping (N m s/rad or N s/m) and effort
        limit (N m or N); each must be finite and >= 0 (the effort > 0).  Checked here, not at the
        next step, so the error names the call that made it."""
        ri = self._robot(robot)
        d = self.sim.ds.robot_slices[ri].start + self._dof(ri, dof)
        for name, v, strict in (("kp", kp, False), ("kd", kd, False), ("effort", effort, True)):
            if v is None:
                continue
            v = real(f"{robot}.{dof}: {name}", v)
            if not math.isfinite(v) or v < 0 or (strict and v == 0):
                raise ValueError(f"{robot}.{dof}: {name} must be finite and {'> 0' if strict else '>= 0'}, got {v}")
        if kp is not None:
            self.kp[d] = kp
        if kd is not None:
            self.kd[d] = kd
        if effort is not None:
            self.effort[d] = effort

    def move_to(self, robot: str, target, *, duration: float | None = None) -> JointTrajectory:
        """Start a quintic move of ``robot``'s DOFs to ``target`` (array or {dof: value})."""
        ri = self._robot(robot)
        inst = self.sim.world.description.robots[ri]
        sl = self.sim.ds.robot_slices[ri]
        q_now, _, _ = self.trajectories[ri](self.sim.time)
        q1 = q_now.copy()
        idx = {self._dof(ri, k): v for k, v in target.items()} if isinstance(target, dict) else None
        try:
            if idx is not None:
                for i, v in idx.items():
                    q1[i] = float(v)
            else:
                q1 = np.asarray(target, float)
        except (TypeError, ValueError):
            raise ValueError(f"robot '{robot}': target must be {q_now.size} DOF values or {{dof: value}}, "
                             f"got {target!r}") from None
        if q1.shape != q_now.shape:
            raise ValueError(f"robot '{robot}': target must have {q_now.size} DOF values, got shape {q1.shape}")
        if not np.all(np.isfinite(q1)):
            bad = [inst.robot.dof_names[i] for i in np.flatnonzero(~np.isfinite(q1))]
            raise ValueError(f"robot '{robot}': target of DOF {', '.join(bad)} is not finite")
        if duration is not None and not (isinstance(duration, numbers.Real) and math.isfinite(duration)
                                         and duration > 0):
            raise ValueError(f"robot '{robot}': move duration must be finite and > 0 s, got {duration!r}")
        traj = joint_trajectory(q_now, q1, inst.robot.dof_limits, self.sim.ds.velocity[sl], t0=self.sim.time,
                                duration=duration, names=inst.robot.dof_names)
        self.trajectories[ri] = traj
        return traj

    def move_line(self, robot: str, X_target: np.ndarray, *, duration: float, X_LE: np.ndarray | None = None,
                  link: int | None = None) -> JointTrajectory:
        """Start a straight-line Cartesian move of ``robot``'s end effector (or frame E on ``link``)."""
        ri = self._robot(robot)
        inst = self.sim.world.description.robots[ri]
        q_now, _, _ = self.trajectories[ri](self.sim.time)
        X_WB = self.sim.world.base_pose(ri)
        traj = cartesian_line(inst.robot, q_now, X_target, duration=duration, X_WB=X_WB, link=link, X_LE=X_LE,
                              t0=self.sim.time)
        self.trajectories[ri] = traj
        return traj

    def done(self, robot: str | None = None) -> bool:
        t = self.sim.time
        ris = self.trajectories if robot is None else [self._robot(robot)]
        return all(t >= self.trajectories[ri].t_end for ri in ris)

    def compiled(self) -> "CompiledPD":
        """A :class:`CompiledPD` of this controller as it is now (the controller of
        :meth:`graspsim.Simulator.rollout`); ValueError with a feedforward."""
        return CompiledPD(self)

    def command(self, sim) -> DriveCommand:
        """The drive command for the coming step.

        The step moves positions to t + h with the old velocities, and the implicit PD acts on the
        position reached at t + 2h through the new velocity, which applies over [t + h, t + 2h]:
        so the position reference is sampled at t + 2h and the velocity reference at t + 1.5h
        (sampling both at t would make the arm trail its path by two steps).
        """
        nd = len(sim.ds)
        kp, kd, effort = self.kp, self.kd, self.effort
        if self.feedforward is None and _plain(kp, nd) and _plain(kd, nd) and _plain(effort, nd):
            # the references in one compiled call (the same numbers as the Python loop below),
            # from arrays rebuilt whenever a trajectory object is replaced (they are immutable)
            # the dict's values in robot order are the cached trajectories (the usual case: one
            # identity test each); anything else rebuilds from the trajectories by robot index
            trs = self.trajectories
            got = self.__dict__.get("_refs")
            if got is None or len(trs) != len(got[0]) or not all(map(operator.is_, got[0], trs.values())):
                trajs = tuple(trs[ri] for ri in range(len(sim.ds.robot_slices)))
                got = self.__dict__["_refs"] = (trajs, _reference_arrays(trajs, sim.ds))
            return DriveCommand.from_rows(*_pd_command(sim.time, sim.dt, kp, kd, effort, got[1]))
        # (a feedforward, or gains replaced by something else than (nd,) float arrays, which the
        # simulator's check of the command then names)
        q_ref, qd_ref, tau = np.zeros(nd), np.zeros(nd), np.zeros(nd)
        h = sim.dt
        for ri, sl in enumerate(sim.ds.robot_slices):
            traj = self.trajectories[ri]
            q = traj(sim.time + 2 * h)[0]
            qd, qdd = traj(sim.time + 1.5 * h)[1:]
            q_ref[sl], qd_ref[sl] = q, qd
            if self.feedforward is not None:
                tau[sl] = self.feedforward(sim, ri, q, qd, qdd)
        return DriveCommand(q_ref, qd_ref, self.kp, self.kd, tau, self.effort)


class CompiledPD:
    """A frozen copy of a :class:`PDController` (its trajectories, gains and limits at the time of
    :meth:`PDController.compiled`) whose command is one compiled call (``_rows_kernel.pd_command``):
    the controller of :meth:`graspsim.Simulator.rollout`.  It gives the same commands as the
    PDController it was made from, as long as that one is not changed (no feedforward)."""

    def __init__(self, pd: PDController):
        if pd.feedforward is not None:
            raise ValueError("a PDController with a feedforward (a Python function) cannot be compiled; "
                             "step it with Simulator.step instead")
        ds = pd.sim.ds
        self._refs = _reference_arrays([pd.trajectories[ri] for ri in range(len(ds.robot_slices))], ds)
        self.kp, self.kd, self.effort = pd.kp.copy(), pd.kd.copy(), pd.effort.copy()

    def command(self, sim) -> DriveCommand:
        """The drive command for the coming step (as PDController.command)."""
        return DriveCommand.from_rows(*_pd_command(sim.time, sim.dt, self.kp, self.kd, self.effort, self._refs))


_F64 = np.dtype(np.float64)      # (a singleton: an identity test)


def _plain(a, n: int) -> bool:
    """Is ``a`` a float64 (n,) array (what the compiled command takes as it is)?"""
    return type(a) is np.ndarray and a.dtype is _F64 and a.shape == (n,)


def _reference_arrays(trajs, ds) -> tuple:
    """The arrays ``_rows_kernel.pd_command`` evaluates the trajectories ``trajs`` (one per
    robot, in order) from: (kind, t0, dur, q0, q1, off, s_off, s_t, s_q)."""
    nd = len(ds)
    kind = np.array([0 if t.samples_t is None else 1 for t in trajs], np.int64)
    t0 = np.array([t.t0 for t in trajs], float)
    dur = np.array([t.duration for t in trajs], float)
    q0, q1 = np.zeros(nd), np.zeros(nd)
    off = np.zeros(len(trajs) + 1, np.int64)
    s_t, s_q, s_off = [], [], [0]
    width = max([sl.stop - sl.start for sl in ds.robot_slices] + [1])
    for r, (t, sl) in enumerate(zip(trajs, ds.robot_slices)):
        off[r], off[r + 1] = sl.start, sl.stop
        q0[sl], q1[sl] = t.q0, t.q1
        if t.samples_t is not None:
            s_t.append(np.asarray(t.samples_t, float))
            q = np.zeros((len(t.samples_t), width))
            q[:, :sl.stop - sl.start] = t.samples_q
            s_q.append(q)
        s_off.append(s_off[-1] + (0 if t.samples_t is None else len(t.samples_t)))
    return (kind, t0, dur, q0, q1, off, np.array(s_off, np.int64), np.concatenate(s_t) if s_t else np.zeros(0),
            np.concatenate(s_q) if s_q else np.zeros((0, width)))


_RK = None


def _pd_command(t: float, h: float, kp, kd, effort, arrays: tuple):
    """``_rows_kernel.pd_command``: the (6, nd) command rows for the step from ``t`` and whether they
    pass the simulator's check (``_rows_kernel`` imported on first use: numba is not an import of
    ``graspsim.control``)."""
    global _RK
    if _RK is None:
        from ..dynamics import _rows_kernel
        _RK = _rows_kernel
    return _RK.pd_command(t, h, kp, kd, effort, *arrays)

"""Computed-torque feed-forward for :class:`~graspsim.control.PDController` ("feed-forward plus PD").

    ff = ComputedTorqueFeedforward(sim)             # models built once from the world
    ctl = PDController(sim, feedforward=ff)
    ff.attach(ctl)                                  # lets ff read the controller's trajectories
    ctl.move_line("puma", X_target, duration=1.0)
    sim.run(1.0, ctl)

or, equivalently, ``ctl = computed_torque_pd(sim)``.  Every step the controller calls
``ff(sim, robot_index, q_ref, qd_ref, qdd_ref)`` and adds the returned DOF torques to its PD torques.

What the torque is
------------------
``tau_ff = ID(q_d, qd_d, qdd_d) + b * qd_d (+ the timing term below)``: the inverse dynamics of
:mod:`graspsim.rigidbody` (RNEA in DOF coordinates, gravity from the simulator) on the desired
trajectory, plus the viscous joint friction ``b`` the simulator applies (the rigid-body model has
no friction).

* **Mounted robots are lumped.**  The rigid-body model takes one robot, so every robot mounted
  (directly or through others) on a fixed-base robot -- e.g. the Barrett hand on the Puma's flange
  -- is added to the link it is mounted on as one rigid body: total mass, centre of mass and
  inertia (parallel-axis theorem) of all its links at their configuration in the simulator when
  the feed-forward is built (:meth:`ComputedTorqueFeedforward.refresh` re-lumps at the current
  configuration).  The fingers' own motion relative to the flange is neglected.
* **A mounted robot's own DOFs** (the fingers) get the inverse dynamics of that robot on a base
  held still at its current pose (gravity expressed in the base frame; the base's acceleration is
  neglected).  Floating (free) robots get no feed-forward.
* **Smooth reference.**  ``PDController.move_line`` gives IK samples every 10 ms with linear
  interpolation, so its ``qdd`` is zero inside samples and impulsive at sample boundaries.  When
  attached to the controller, the feed-forward fits, once per trajectory, a quintic interpolating
  spline through the samples with zero velocity and acceleration at both ends (the quintic time
  scaling of ``cartesian_line`` starts and ends at rest) and takes ``q_d, qd_d, qdd_d`` from it.
  Quintic joint moves (``move_to``) are evaluated exactly.  Not attached, it uses the arguments
  it is given.
* **Step timing** (attached only).  In a step from ``t`` (``sim.time``) the simulator first moves
  the bodies to their poses at ``t + h`` and computes the forces there, and the new velocity moves
  them from ``t + h`` to ``t + 2h``; the implicit PD row acts on that next position and velocity:
  ``tau_PD = kp (q_ref(t) - q(t + 2h)) + kd (qd_ref(t) - qd(t + 1.5 h))`` -- a reference 2h late
  (5 ms at h = 2.5 ms: 1.9 mm behind on a line at 0.375 m/s).  So the inverse
  dynamics is evaluated at ``t + h`` and, with ``delay_compensation=True`` (default), the
  feed-forward adds ``kp (q_d(t + 2h) - q_ref) + kd (qd_d(t + 1.5h) - qd_ref)`` with the
  controller's gains, which makes the PD act on the error against the desired trajectory at the
  instant it acts on.  PD alone keeps the lag.  The timing term is about ``kp 2h qd`` and partly
  cancels against the implicit PD torque, but the simulator clips ``tau_ff`` on its own at the
  effort limit: at joint speeds where ``|ID| + kp 2h |qd|`` exceeds the effort (Puma j3 near
  0.9 rad/s at h = 2.5 ms) the compensation is cut and tracking degrades (``clipped_steps`` counts
  such calls).  The clean fix is for the controller to read its reference at those instants; the
  timing term then vanishes by itself.

Units: N m (revolute DOFs) or N (prismatic), rad, s.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import rigidbody as rb
from ..model.description import Inertial

__all__ = ["ComputedTorqueFeedforward", "computed_torque_pd", "lumped_robot"]


def _composite(parts):
    """(mass, com (3,), inertia about com (3, 3)) of rigid parts ``(m, c, I_c)`` in one frame."""
    m = sum(p[0] for p in parts)
    if m <= 0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    c = sum(p[0] * np.asarray(p[1], float) for p in parts) / m
    I = np.zeros((3, 3))
    for mi, ci, Ii in parts:
        d = np.asarray(ci, float) - c
        I += np.asarray(Ii, float) + mi * (d @ d * np.eye(3) - np.outer(d, d))
    return float(m), c, I


def _mount_root(desc, ri):
    """(top robot index, link of the top robot) that robot ``ri`` is (transitively) mounted on."""
    link = None
    k = ri
    while desc.robots[k].mount is not None:
        k, link = desc.robots[k].mount[0], desc.robots[k].mount[1]
    return k, link


def lumped_robot(sim, robot_index: int, X=None):
    """A copy of robot ``robot_index``'s description whose links carry, as rigid payloads, every robot
    mounted on them (directly or through other mounted robots), at the poses ``X`` (N, 4, 4) of the
    simulator's bodies (default: the current ones).  Returns ``(robot, payload_mass per link)``."""
    desc = sim.world.description
    table = sim.table
    X = sim.poses() if X is None else X
    inst = desc.robots[robot_index]
    robot = inst.robot
    extra: dict[int, list] = {}
    for rj in range(len(desc.robots)):
        if rj == robot_index or desc.robots[rj].mount is None:
            continue
        top, link = _mount_root(desc, rj)
        if top != robot_index:
            continue
        X_WL = X[table.robot_links[robot_index][link]]
        R_LW, p_W = X_WL[:3, :3].T, X_WL[:3, 3]
        for b in table.robot_links[rj]:
            Xb = X[b]
            R = R_LW @ Xb[:3, :3]
            c = R_LW @ (Xb[:3, :3] @ table.com[b] + Xb[:3, 3] - p_W)
            extra.setdefault(int(link), []).append((float(table.mass[b]), c, R @ table.inertia[b] @ R.T))
    payload = np.zeros(len(robot.links))
    if not extra:
        return robot, payload
    links = list(robot.links)
    for li, parts in extra.items():
        own = links[li].inertial
        m, c, I = _composite([(own.mass, own.com, own.inertia)] + parts)
        payload[li] = m - own.mass
        links[li] = replace(links[li], inertial=Inertial(m, c, I))
    return replace(robot, links=tuple(links)), payload


class ComputedTorqueFeedforward:
    """``feedforward(sim, robot_index, q_ref, qd_ref, qdd_ref) -> tau`` for :class:`PDController`.

    ``sim``: the :class:`~graspsim.Simulator` the controller drives (models are built from its world,
    its gravity and its current configuration).  ``robots``: names or indices of the robots to feed
    forward (default all fixed-base and mounted robots; others get zeros).  ``friction``: add the
    viscous joint friction the simulator applies.  ``delay_compensation``: see the module docstring.
    ``dynamics=False`` leaves out the inverse dynamics and friction (only the timing term: a
    diagnostic that separates the two effects).  ``smooth_samples``: spline sampled references.
    """

    def __init__(self, sim, robots=None, *, friction: bool = True, delay_compensation: bool = True,
                 smooth_samples: bool = True, dynamics: bool = True):
        self.sim = sim
        self.dynamics = bool(dynamics)
        self.friction = bool(friction)
        self.delay_compensation = bool(delay_compensation)
        self.smooth_samples = bool(smooth_samples)
        self.controller = None
        desc = sim.world.description
        if robots is None:
            self.robots = set(range(len(desc.robots)))
        else:
            self.robots = {desc.robot_index[r] if isinstance(r, str) else int(r) for r in robots}
        self._splines: dict[int, tuple] = {}     # robot -> (trajectory, spline)
        self.clipped_steps: dict[int, int] = {}  # robot -> calls whose torque reached an effort limit
        self.models: dict[int, rb.RigidBodyModel] = {}
        self.payload: dict[int, np.ndarray] = {}
        self._visc: dict[int, np.ndarray] = {}
        self.refresh()

    # ------------------------------------------------------------------ set-up
    def refresh(self) -> None:
        """(Re)build the rigid-body models, lumping mounted robots at the simulator's current configuration."""
        sim = self.sim
        desc = sim.world.description
        X = sim.poses()
        for ri in sorted(self.robots):
            inst = desc.robots[ri]
            if inst.mount is not None:
                # own DOFs only, base held at its current pose (set per call through the gravity direction)
                self.models[ri] = rb.from_robot(inst.robot, gravity=sim.gravity)
                self.payload[ri] = np.zeros(len(inst.robot.links))
            elif inst.fixed_base:
                robot, payload = lumped_robot(sim, ri, X)
                self.models[ri] = rb.from_robot(robot, X_WB=sim.world.base_pose(ri), gravity=sim.gravity)
                self.payload[ri] = payload
            else:
                continue
            model = self.models[ri]
            # viscous friction in DOF space: tau_dof = R^T (b * (R qd_dof)) on the moving joints
            b_tree = np.zeros(model.nv)
            for n, j in enumerate(inst.robot.joints):
                if model.joint_column[n] >= 0:
                    b_tree[model.joint_column[n]] = j.viscous
            self._visc[ri] = model.Rq.T @ (b_tree[:, None] * model.Rq)

    def attach(self, controller) -> "ComputedTorqueFeedforward":
        """Read the desired trajectories (and gains) from ``controller`` (a :class:`PDController`)."""
        self.controller = controller
        return self

    # ------------------------------------------------------------------ the desired trajectory
    def desired(self, robot_index: int, t: float):
        """Desired ``(q, qd, qdd)`` of robot ``robot_index`` at time ``t`` from the attached controller."""
        traj = self.controller.trajectories[robot_index]
        if traj.samples_t is None or not self.smooth_samples:
            return traj(t)
        ts = traj.samples_t
        if t <= ts[0] or t >= ts[-1] or len(ts) < 2:
            return traj(t)
        sp = self._splines.get(robot_index)
        if sp is None or sp[0] is not traj:
            sp = (traj, self._build_spline(traj))
            self._splines[robot_index] = sp
        f = sp[1]
        return f(t), f(t, 1), f(t, 2)

    @staticmethod
    def _build_spline(traj):
        from scipy.interpolate import make_interp_spline

        ts, qs = np.asarray(traj.samples_t, float), np.asarray(traj.samples_q, float)
        zero = np.zeros(qs.shape[1])
        if len(ts) >= 6:
            return make_interp_spline(ts, qs, k=5, bc_type=([(1, zero), (2, zero)], [(1, zero), (2, zero)]))
        return make_interp_spline(ts, qs, k=1)

    # ------------------------------------------------------------------ the call
    def torque(self, robot_index: int, q, qd, qdd) -> np.ndarray:
        """Inverse dynamics plus friction of robot ``robot_index`` at ``(q, qd, qdd)`` (DOF space)."""
        model = self.models[robot_index]
        inst = self.sim.world.description.robots[robot_index]
        if inst.mount is not None:
            # base held at its current pose: gravity in base axes
            X_WB = self.sim.poses()[self.sim.table.robot_links[robot_index][inst.robot.base_link]]
            g = X_WB[:3, :3].T @ self.sim.gravity
            tau = rb.inverse_dynamics(model, q, qd, qdd, gravity=g)
        else:
            tau = rb.inverse_dynamics(model, q, qd, qdd)
        if self.friction:
            tau = tau + self._visc[robot_index] @ qd
        return tau

    def __call__(self, sim, robot_index: int, q_ref, qd_ref, qdd_ref) -> np.ndarray:
        q_ref = np.asarray(q_ref, float)
        if robot_index not in self.models:
            return np.zeros_like(q_ref)
        if self.controller is None:
            return self.torque(robot_index, q_ref, np.asarray(qd_ref, float), np.asarray(qdd_ref, float))
        h, t = sim.dt, sim.time
        if self.dynamics:
            tau = self.torque(robot_index, *self.desired(robot_index, t + h))
        else:
            tau = np.zeros_like(q_ref)
        if self.delay_compensation:
            sl = sim.ds.robot_slices[robot_index]
            q2 = self.desired(robot_index, t + 2 * h)[0]
            qd15 = self.desired(robot_index, t + 1.5 * h)[1]
            tau = tau + self.controller.kp[sl] * (q2 - q_ref) + self.controller.kd[sl] * (qd15 - np.asarray(qd_ref))
        sl = sim.ds.robot_slices[robot_index]
        if np.any(np.abs(tau) >= np.minimum(self.controller.effort[sl], sim.ds.effort[sl])):
            # the simulator clips tau_ff at the effort limit even when the PD sum is not saturated
            self.clipped_steps[robot_index] = self.clipped_steps.get(robot_index, 0) + 1
        return tau


def computed_torque_pd(sim, *, kp=None, kd=None, effort=None, **kwargs):
    """A :class:`PDController` with an attached :class:`ComputedTorqueFeedforward` (``kwargs`` go to it)."""
    from .pd import PDController

    ff = ComputedTorqueFeedforward(sim, **kwargs)
    ctl = PDController(sim, kp=kp, kd=kd, effort=effort, feedforward=ff)
    ff.attach(ctl)
    return ctl

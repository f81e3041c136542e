"""Smooth trajectories: per-DOF quintic profiles and straight Cartesian lines through IK.

Quintic time scaling ``s(t) = 10 x^3 - 15 x^4 + 6 x^5`` (x = t / T) starts and ends with zero
velocity and zero acceleration, so the reference is continuous in position, velocity and
acceleration.  Units: rad or m, seconds.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from .. import kinematics, spatial
from ..model.description import Robot

__all__ = ["quintic", "JointTrajectory", "joint_trajectory", "cartesian_line", "TrajectoryError", "QuinticBaseMotion"]


class TrajectoryError(ValueError):
    """A requested trajectory would leave the joint limits or cannot be followed (IK failure)."""


def quintic(x: np.ndarray | float):
    """Quintic time scaling: (s, ds/dx, d2s/dx2) for x clipped to [0, 1]."""
    if isinstance(x, float) and x == x:
        # a number (a trajectory or a base motion asks every step): plain floats, the same IEEE
        # operations without numpy's scalar overhead (np.clip alone took 3 us)
        x = min(1.0, max(0.0, x))
    else:
        x = np.clip(x, 0.0, 1.0)
    s = x ** 3 * (10 - 15 * x + 6 * x * x)
    ds = 30 * x * x * (1 - x) ** 2
    dds = 60 * x * (1 - x) * (1 - 2 * x)
    return s, ds, dds


class QuinticBaseMotion:
    """A base motion for :meth:`graspsim.Simulator.set_base_motion`: the pose ``X0`` (4, 4) moved by
    ``displacement`` (3,) m, W, along a quintic time scaling over ``[t0, t0 + duration]`` s, its
    rotation kept; the twist is the translation's rate (zero outside that interval).

    The compiled loop of ``Simulator.rollout`` evaluates it itself, from ``quintic_translation``
    (the same floating-point operations: the same steps as :meth:`Simulator.step` bit for bit).
    """

    def __init__(self, X0: np.ndarray, displacement, t0: float, duration: float):
        X0 = spatial.check_rigid(X0, "base motion: X0")
        try:
            d = np.array(displacement, float)
            t0, duration = float(t0), float(duration)
        except (TypeError, ValueError):
            d = None
        if (d is None or d.shape != (3,) or not np.all(np.isfinite(d)) or not math.isfinite(t0)
                or not (math.isfinite(duration) and duration > 0)):
            raise ValueError(f"base motion: displacement must be 3 finite numbers (m), t0 a finite time (s) and "
                             f"duration finite and > 0 (s), got {displacement!r}, {t0!r}, {duration!r}")
        X0.setflags(write=False)
        d.setflags(write=False)
        self.quintic_translation = (X0, d, float(t0), float(duration))
        self._axes = [(i, float(d[i])) for i in range(3) if d[i] != 0.0]

    def __call__(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(X_WB (4, 4), twist (6,) [linear; angular], W) at time ``t`` (s)."""
        X0, _, t0, dur = self.quintic_translation
        s, ds, _ = quintic((t - t0) / dur)
        X = X0.copy()
        tw = np.zeros(6)
        inside = t0 <= t <= t0 + dur
        for i, di in self._axes:        # (an axis it does not move along is left as it is, -0.0 too)
            X[i, 3] += di * s
            tw[i] = di * ds / dur if inside else 0.0
        return X, tw


@dataclass(frozen=True)
class JointTrajectory:
    """Piecewise trajectory over DOFs: samples ``q (n, ndof)`` at times ``t (n,)``, or a quintic
    segment from ``q0`` to ``q1`` over ``[t0, t0 + duration]``.

    Immutable (its arrays are read-only copies): a controller may keep what it derived from a
    trajectory for as long as it holds the same trajectory object."""

    t0: float
    duration: float
    q0: np.ndarray
    q1: np.ndarray
    samples_t: np.ndarray | None = None
    samples_q: np.ndarray | None = None

    def __post_init__(self):
        for name in ("q0", "q1", "samples_t", "samples_q"):
            a = getattr(self, name)
            if a is not None:
                a = np.array(a, dtype=float)
                a.setflags(write=False)
                object.__setattr__(self, name, a)

    @property
    def t_end(self) -> float:
        return self.t0 + self.duration

    def position(self, t: float) -> np.ndarray:
        """The reference q at time ``t`` (s): ``self(t)[0]``, without the rates."""
        if self.samples_t is not None or self.duration <= 0:
            return self(t)[0]
        return self.q0 + quintic((t - self.t0) / self.duration)[0] * (self.q1 - self.q0)

    def __call__(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Reference (q, qd, qdd) at time ``t`` (s)."""
        if self.samples_t is not None:
            ts, qs = self.samples_t, self.samples_q
            if t <= ts[0]:
                return qs[0].copy(), np.zeros(qs.shape[1]), np.zeros(qs.shape[1])
            if t >= ts[-1]:
                return qs[-1].copy(), np.zeros(qs.shape[1]), np.zeros(qs.shape[1])
            i = int(np.searchsorted(ts, t)) - 1
            f = (t - ts[i]) / (ts[i + 1] - ts[i])
            q = qs[i] + f * (qs[i + 1] - qs[i])
            qd = (qs[i + 1] - qs[i]) / (ts[i + 1] - ts[i])
            return q, qd, np.zeros_like(q)
        if self.duration <= 0:
            return self.q1.copy(), np.zeros_like(self.q1), np.zeros_like(self.q1)
        s, ds, dds = quintic((t - self.t0) / self.duration)
        dq = self.q1 - self.q0
        return self.q0 + s * dq, ds / self.duration * dq, dds / self.duration ** 2 * dq


def _move_arguments(q0, q1, limits, speeds, names) -> tuple:
    """``joint_trajectory``'s arrays, checked: q0, q1 (n,) finite; limits (n, 2), no NaN (inf: no
    limit); speeds a number or (n,), no NaN.  ValueError naming the argument and DOF (they went
    through as NaN references, a negative duration or numpy's broadcast error)."""
    nm = (lambda i: f"DOF '{names[i]}'") if names is not None else (lambda i: f"DOF {i}")
    out = []
    for what, a, shape in (("q0", q0, None), ("q1", q1, 1), ("limits", limits, 2), ("speeds", speeds, 3)):
        try:
            x = np.asarray(a, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"joint_trajectory: {what} must be numbers, got {a!r}") from None
        n = out[0].shape[0] if out else None
        if what == "speeds" and x.ndim == 0:
            x = np.full(n, float(x))
        want = (n, 2) if what == "limits" else ((n,) if n is not None else None)
        if (want is None and x.ndim != 1) or (want is not None and x.shape != want):
            raise ValueError(f"joint_trajectory: {what} must have shape {want or '(n,)'}, got {x.shape}")
        bad = np.isnan(x) if what in ("limits", "speeds") else ~np.isfinite(x)
        if bad.any():
            i = int(np.argwhere(bad)[0][0])
            need = "finite" if what in ("q0", "q1") else "a number (inf: none)"
            raise ValueError(f"joint_trajectory: {what} of {nm(i)} must be {need}, got {x[i].tolist()}")
        out.append(x)
    return tuple(out)


def joint_trajectory(q0, q1, limits: np.ndarray, speeds, *, t0: float = 0.0, duration: float | None = None,
                     names=None) -> JointTrajectory:
    """A quintic move from ``q0`` to ``q1`` whose duration follows the DOF speeds.

    The quintic's peak velocity is 1.875 |dq| / T, so T = 1.875 max(|dq_i| / speed_i) keeps every
    DOF at or below its speed.  Targets outside ``limits`` (ndof, 2) raise :class:`TrajectoryError`.
    """
    q0, q1, limits, speeds = _move_arguments(q0, q1, limits, speeds, names)
    if not (isinstance(t0, numbers.Real) and math.isfinite(t0)):
        raise ValueError(f"joint_trajectory: t0 must be a finite time (s), got {t0!r}")
    if duration is not None and not (isinstance(duration, numbers.Real) and math.isfinite(duration)
                                     and duration >= 0.0):
        raise ValueError(f"joint_trajectory: duration must be None or a finite time >= 0 (s), got {duration!r}")
    lo, hi = limits[:, 0], limits[:, 1]
    bad = np.flatnonzero((q1 < lo - 1e-9) | (q1 > hi + 1e-9))
    if len(bad):
        nm = (lambda i: names[i]) if names is not None else (lambda i: f"dof {i}")
        raise TrajectoryError("target outside the joint limits: " + "; ".join(
            f"{nm(i)} = {q1[i]:.4g} not in [{lo[i]:.4g}, {hi[i]:.4g}]" for i in bad))
    if duration is None:
        sp = np.abs(np.asarray(speeds, float))
        sp = np.where(sp > 0, sp, 0.5)
        duration = 1.875 * float(np.max(np.abs(q1 - q0) / sp)) if len(q0) else 0.0
    return JointTrajectory(t0, float(duration), q0, q1)


def cartesian_line(robot: Robot, dofs0: np.ndarray, X_target: np.ndarray, *, duration: float,
                   X_WB: np.ndarray | None = None, link: int | None = None, X_LE: np.ndarray | None = None,
                   t0: float = 0.0, dt: float = 0.01) -> JointTrajectory:
    """A straight line (position lerp, orientation slerp, quintic timing) of the frame E on ``link``
    from its current pose to ``X_target``, sampled every ``dt`` s and turned into DOF set points by
    IK (each sample seeded with the previous one).  Raises :class:`TrajectoryError` if a sample is
    unreachable within the joint limits."""
    robot = kinematics.as_robot(robot, "cartesian_line")
    what = f"Cartesian line of robot '{robot.name}'"
    if link is None:
        link = robot.joints[-1].child
    link = kinematics._link_index(robot, link, "link")
    X_target = spatial.check_rigid(X_target, f"{what}: X_target")
    X_LE = np.eye(4) if X_LE is None else spatial.check_rigid(X_LE, f"{what}: X_LE")
    for name, v in (("duration", duration), ("dt", dt)):
        if not (isinstance(v, numbers.Real) and math.isfinite(v) and v > 0.0):
            raise ValueError(f"{what}: {name} must be a finite time > 0 (s), got {v!r}")
    if not (isinstance(t0, numbers.Real) and math.isfinite(t0)):
        raise ValueError(f"{what}: t0 must be a finite time (s), got {t0!r}")
    q = np.asarray(dofs0, dtype=float).copy()
    X0 = kinematics.forward_kinematics(robot, kinematics.joint_values(robot, q), X_WB)[link] @ X_LE
    p0, p1 = X0[:3, 3], X_target[:3, 3]
    r0, r1 = spatial.matrix_to_quat(X0[:3, :3]), spatial.matrix_to_quat(X_target[:3, :3])
    n = max(2, int(np.ceil(duration / dt)) + 1)
    ts = np.linspace(0.0, duration, n)
    qs = np.empty((n, len(q)))
    for i, t in enumerate(ts):
        s = quintic(t / duration)[0]
        X = spatial.transform(spatial.quat_to_matrix(spatial.slerp(r0, r1, s)), p0 + s * (p1 - p0))
        res = kinematics.inverse_kinematics(robot, X, link=link, X_WB=X_WB, dofs0=q, X_LE=X_LE, restarts=0,
                                            tol_position=1e-7, tol_rotation=1e-6)
        if not res.success:
            raise TrajectoryError(f"Cartesian line of robot '{robot.name}' leaves its reachable workspace at "
                                  f"t = {t:.3f} s (IK residual {res.position_error * 1e3:.3f} mm, "
                                  f"{np.degrees(res.rotation_error):.3f} deg) within the joint limits")
        if i and np.max(np.abs(res.dofs - q)) > 0.5:
            raise TrajectoryError(f"Cartesian line of robot '{robot.name}' needs a joint jump of "
                                  f"{np.max(np.abs(res.dofs - q)):.2f} rad at t = {t:.3f} s (singularity or limit)")
        q = res.dofs
        qs[i] = q
    return JointTrajectory(t0, duration, qs[0], qs[-1], ts + t0, qs)

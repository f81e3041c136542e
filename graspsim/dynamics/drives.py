"""Actuator commands: what a controller asks of each DOF for one step.

A controller returns a :class:`DriveCommand` over the world's DOFs (robot by robot, see
``Simulator.dof_names``).  Each DOF gets a PD law with effort limit and a feed-forward torque:

    tau = clip(tau_ff + kp (q_ref - q) + kd (qd_ref - qd), -effort, effort)      (N m or N)

The simulator applies the PD part *implicitly* (as a compliant constraint row on the DOF's joint
rate, solved with the other constraints) whenever it is not saturated, so stiff gains stay stable at
h = 2.5 ms; a saturated DOF gets the clipped torque explicitly.  ``kp = kd = 0`` gives pure torque
control (step 7 of the paper).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class DriveCommand:
    q_ref: np.ndarray     # (nd,) rad or m
    qd_ref: np.ndarray    # (nd,)
    kp: np.ndarray        # (nd,) N m/rad or N/m
    kd: np.ndarray        # (nd,) N m s/rad or N s/m
    tau_ff: np.ndarray    # (nd,) N m or N
    effort: np.ndarray    # (nd,) |tau| limit

    @classmethod
    def from_rows(cls, A: np.ndarray, ok: bool | None) -> "DriveCommand":
        """The command whose fields are the rows of ``A`` (6, nd) in ``checks.CMD_FIELDS`` order
        (q_ref, qd_ref, tau_ff, kp, kd, effort), already checked (``ok``: whether they pass
        ``checks.command_array``; None: not yet, the simulator checks): the simulator then takes
        ``A`` as it is, unless a field was replaced since."""
        rows = (A[0], A[1], A[2], A[3], A[4], A[5])
        if cls is DriveCommand:     # (the dataclass's __init__ skipped: a Python controller builds one a step)
            cmd = object.__new__(cls)
            cmd.__dict__.update(q_ref=rows[0], qd_ref=rows[1], kp=rows[3], kd=rows[4], tau_ff=rows[2], effort=rows[5],
                                _rows=(rows, A, ok))
            return cmd
        cmd = cls(rows[0], rows[1], rows[3], rows[4], rows[2], rows[5])
        cmd._rows = (rows, A, ok)
        return cmd

    @classmethod
    def torques(cls, tau: np.ndarray, effort: np.ndarray | None = None) -> "DriveCommand":
        """Pure torque control (no PD): ``tau`` (nd,) N m or N, ``effort`` (nd,) limits (default
        none).  Its fields are the rows of one stacked (6, nd) array, which the simulator checks
        and takes as it is (a Python torque controller builds one every step)."""
        tau = np.asarray(tau, dtype=float)
        eff = None if effort is None else np.asarray(effort, float)
        if tau.ndim != 1 or (eff is not None and eff.shape != tau.shape):
            z = np.zeros_like(tau)      # (shapes the simulator's check names)
            return cls(z, z, z, z, tau, np.full_like(tau, np.inf) if eff is None else eff)
        A = np.zeros((6, tau.shape[0]))
        A[2] = tau
        A[5] = np.inf if eff is None else eff
        return cls.from_rows(A, None)

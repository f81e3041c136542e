"""Compiled forward kinematics of a batch of hand postures (numba, cached on disk).

The same joint chain as :func:`graspsim.kinematics.forward_kinematics` (``X_child = X_parent X_PJ
motion(q) X_JC``, joints ordered parents first), for B postures at once: on batches of a few
states the per-joint numpy calls cost more than the arithmetic (profiled: 0.5 ms of a 0.6 ms
energy evaluation of the Barrett).
"""
from __future__ import annotations

import numpy as np
from numba import njit

FIXED, REVOLUTE, PRISMATIC = 0, 1, 2


@njit(cache=True)
def batch_fk(dofs, parent, child, dof, ratio, offset, kind, axis, X_PJ, X_JC, base, nl):
    """Link poses (B, nl, 4, 4) in the base frame for DOF values (B, ndof)."""
    B = dofs.shape[0]
    nj = parent.shape[0]
    out = np.zeros((B, nl, 4, 4))
    M = np.empty((4, 4))
    T = np.empty((4, 4))
    for b in range(B):
        for i in range(4):
            out[b, base, i, i] = 1.0
        for j in range(nj):
            q = ratio[j] * dofs[b, dof[j]] + offset[j] if dof[j] >= 0 else 0.0
            for r in range(4):
                for c in range(4):
                    M[r, c] = 1.0 if r == c else 0.0
            if kind[j] == REVOLUTE:
                kx, ky, kz = axis[j, 0], axis[j, 1], axis[j, 2]
                s, co = np.sin(q), np.cos(q)
                v = 1.0 - co
                M[0, 0] = co + kx * kx * v
                M[0, 1] = kx * ky * v - kz * s
                M[0, 2] = kx * kz * v + ky * s
                M[1, 0] = ky * kx * v + kz * s
                M[1, 1] = co + ky * ky * v
                M[1, 2] = ky * kz * v - kx * s
                M[2, 0] = kz * kx * v - ky * s
                M[2, 1] = kz * ky * v + kx * s
                M[2, 2] = co + kz * kz * v
            elif kind[j] == PRISMATIC:
                M[0, 3] = q * axis[j, 0]
                M[1, 3] = q * axis[j, 1]
                M[2, 3] = q * axis[j, 2]
            # T = X_PJ M X_JC; out[child] = out[parent] T
            T[:, :] = X_PJ[j] @ M @ X_JC[j]
            out[b, child[j]] = out[b, parent[j]] @ T
    return out

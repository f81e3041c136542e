"""Forward kinematics of a robot tree, compiled (:func:`graspsim.kinematics.forward_kinematics`).

A static auto-grasp, the batch's approach and the planner's energy evaluate a hand's link poses
thousands of times per candidate; in Python each revolute joint's Rodrigues rotation and 4x4
products cost ~25 us.  Arrays (``nj`` joints, parents before children): ``kind`` 0 revolute, 1
prismatic, 2 fixed; ``axis`` the unit axis (revolute) or the axis as given (prismatic), in J;
``X_PJ``/``X_JC`` (nj, 4, 4); ``parent``/``child`` link indices.
"""
from __future__ import annotations

import math

import numpy as np

from ._jit import njit


@njit(cache=True)
def _mul4(A, B, out):
    for i in range(4):
        for j in range(4):
            s = 0.0
            for k in range(4):
                s += A[i, k] * B[k, j]
            out[i, j] = s


@njit(cache=True)
def link_poses(kind, axis, X_PJ, X_JC, parent, child, base, nl, q, X_WB):
    """World poses (nl, 4, 4) of every link: X_child = X_parent X_PJ motion(axis, q) X_JC, the
    motion a rotation by Rodrigues' formula R = I + sin(q) K + (1 - cos(q)) K K (K = [axis]x) or a
    translation by axis q.  An empty (0, 4, 4) array when ``q`` or ``X_WB`` holds a NaN or inf
    (the caller names the input)."""
    for n in range(q.shape[0]):
        if not math.isfinite(q[n]):
            return np.empty((0, 4, 4))
    for i in range(4):
        for j in range(4):
            if not math.isfinite(X_WB[i, j]):
                return np.empty((0, 4, 4))
    X = np.empty((nl, 4, 4))
    for i in range(4):
        for j in range(4):
            X[base, i, j] = X_WB[i, j]
    M = np.empty((4, 4))
    T = np.empty((4, 4))
    U = np.empty((4, 4))
    for n in range(kind.shape[0]):
        for i in range(4):
            for j in range(4):
                M[i, j] = 1.0 if i == j else 0.0
        if kind[n] == 0:
            x, y, z = axis[n, 0], axis[n, 1], axis[n, 2]
            s = math.sin(q[n])
            c1 = 1.0 - math.cos(q[n])
            K = ((0.0, -z, y), (z, 0.0, -x), (-y, x, 0.0))
            for i in range(3):
                for j in range(3):
                    kk = K[i][0] * K[0][j] + K[i][1] * K[1][j] + K[i][2] * K[2][j]
                    M[i, j] += s * K[i][j] + c1 * kk
        elif kind[n] == 1:
            for i in range(3):
                M[i, 3] = axis[n, i] * q[n]
        _mul4(X[parent[n]], X_PJ[n], T)
        _mul4(T, M, U)
        _mul4(U, X_JC[n], X[child[n]])
    return X

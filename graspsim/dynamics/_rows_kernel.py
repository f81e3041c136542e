"""Compiled constraint-row builders (numba, compiled lazily, cached on disk).

Loop versions of the vectorised builders in :mod:`graspsim.dynamics.joints` and the contact rows of
the simulator: with tens of rows per step the numpy versions spend their time in per-call overhead,
not arithmetic.  The vectorised versions stay as the readable reference (and the tests compare).
"""
from __future__ import annotations

import math

import numpy as np
from .._borrow import borrow
from .._flat import unflatten
from .._jit import njit


@njit(cache=True)
def joint_frames_values(X, parent, child, X_PJ, X_CJ, axis_J, perp_J, kind, prev, use_prev):
    """Joint frames (parent side J and child side J') in W and joint values (see joints.py).

    Returns o, o_c (nj, 3), R, R_c (nj, 3, 3), axis (nj, 3), perp (nj, 2, 3) in W and q (nj,)
    (revolute angles unwrapped against ``prev`` when ``use_prev``)."""
    nj = parent.shape[0]
    o = np.empty((nj, 3))
    o_c = np.empty((nj, 3))
    R = np.empty((nj, 3, 3))
    R_c = np.empty((nj, 3, 3))
    ax = np.empty((nj, 3))
    pp = np.empty((nj, 2, 3))
    q = np.zeros(nj)
    ru = np.empty(3)        # (one buffer for every joint: no allocation per joint)
    for n in range(nj):
        P = X[parent[n]]
        C = X[child[n]]
        A = X_PJ[n]
        Bm = X_CJ[n]
        for i in range(3):
            for j in range(3):
                s = 0.0
                t = 0.0
                for k in range(3):
                    s += P[i, k] * A[k, j]
                    t += C[i, k] * Bm[k, j]
                R[n, i, j] = s
                R_c[n, i, j] = t
            s = P[i, 3]
            t = C[i, 3]
            for k in range(3):
                s += P[i, k] * A[k, 3]
                t += C[i, k] * Bm[k, 3]
            o[n, i] = s
            o_c[n, i] = t
        for i in range(3):
            s = 0.0
            for k in range(3):
                s += R[n, i, k] * axis_J[n, k]
            ax[n, i] = s
            for m in range(2):
                s = 0.0
                for k in range(3):
                    s += R[n, i, k] * perp_J[n, m, k]
                pp[n, m, i] = s
        if kind[n] == 0:
            # angle about the axis taking J to J': the child's first perpendicular in J's perpendiculars
            for i in range(3):
                ru[i] = 0.0
                for k in range(3):
                    ru[i] += R_c[n, i, k] * perp_J[n, 0, k]
            y = ru[0] * pp[n, 1, 0] + ru[1] * pp[n, 1, 1] + ru[2] * pp[n, 1, 2]
            x = ru[0] * pp[n, 0, 0] + ru[1] * pp[n, 0, 1] + ru[2] * pp[n, 0, 2]
            ang = np.arctan2(y, x)
            if use_prev:
                d = (ang - prev[n] + np.pi) % (2 * np.pi) - np.pi
                ang = prev[n] + d
            q[n] = ang
        elif kind[n] == 1:
            q[n] = ((o_c[n, 0] - o[n, 0]) * ax[n, 0] + (o_c[n, 1] - o[n, 1]) * ax[n, 1]
                    + (o_c[n, 2] - o[n, 2]) * ax[n, 2])
    return o, o_c, R, R_c, ax, pp, q


@njit(cache=True)
def _lin(out, d, p, c):
    """out[:6] = [d, (p - c) x d]: the velocity of body point p along d (body com c)."""
    rx, ry, rz = p[0] - c[0], p[1] - c[1], p[2] - c[2]
    out[0], out[1], out[2] = d[0], d[1], d[2]
    out[3] = ry * d[2] - rz * d[1]
    out[4] = rz * d[0] - rx * d[2]
    out[5] = rx * d[1] - ry * d[0]


@njit(cache=True)
def equality_rows(rj, rt, rk, kind, parent, child, axis_J, slot, com_W, o, o_c, R, R_c, ax, pp):
    """Joint rows J^T v = 0 (eq. 7) over the row template (see joints.equality_rows).

    Returns bodies (r, 2), jac (r, 2, 6) (parent side first), err (r,) position errors, and keep
    (r,) bool: False for rows between two static bodies."""
    r = rj.shape[0]
    bodies = np.empty((r, 2), np.int64)
    jac = np.zeros((r, 2, 6))
    err = np.empty(r)
    keep = np.empty(r, np.bool_)
    d = np.empty(3)
    ac = np.empty(3)
    for i in range(r):
        n, t, k = rj[i], rt[i], rk[i]
        if t == 2 or t == 3:          # perpendicular of the joint axis
            for j in range(3):
                d[j] = pp[n, min(k, 1), j]
        else:
            d[0] = d[1] = d[2] = 0.0
            d[k] = 1.0
        pa, ch = parent[n], child[n]
        bodies[i, 0] = slot[pa]
        bodies[i, 1] = slot[ch]
        keep[i] = slot[pa] >= 0 or slot[ch] >= 0
        if t == 0 or t == 2:          # linear rows at the joint origin
            _lin(jac[i, 1], d, o[n], com_W[ch])
            _lin(jac[i, 0], d, o[n], com_W[pa])
            for j in range(6):
                jac[i, 0, j] = -jac[i, 0, j]
        else:
            for j in range(3):
                jac[i, 1, 3 + j] = d[j]
                jac[i, 0, 3 + j] = -d[j]
        if t == 0:                    # origin offset along a world axis
            err[i] = o_c[n, k] - o[n, k]
        elif t == 2:                  # origin offset along a perpendicular
            err[i] = ((o_c[n, 0] - o[n, 0]) * d[0] + (o_c[n, 1] - o[n, 1]) * d[1]
                      + (o_c[n, 2] - o[n, 2]) * d[2])
        elif t == 1:                  # small rotation J -> J' (vee of the skew part of R_c R^T)
            a, b = (2, 1) if k == 0 else ((0, 2) if k == 1 else (1, 0))
            sab = 0.0
            sba = 0.0
            for j in range(3):
                sab += R_c[n, a, j] * R[n, b, j]
                sba += R_c[n, b, j] * R[n, a, j]
            err[i] = 0.5 * (sab - sba)
        else:                         # axis misalignment (revolute) along a perpendicular
            for a in range(3):
                ac[a] = 0.0
                for j in range(3):
                    ac[a] += R_c[n, a, j] * axis_J[n, j]
            m0 = ax[n, 1] * ac[2] - ax[n, 2] * ac[1]
            m1 = ax[n, 2] * ac[0] - ax[n, 0] * ac[2]
            m2 = ax[n, 0] * ac[1] - ax[n, 1] * ac[0]
            err[i] = m0 * d[0] + m1 * d[1] + m2 * d[2]
    return bodies, jac, err, keep


@njit(cache=True)
def contact_rows(sa, sb, com_a, com_b, point, normal, t1, t2, sep, target, gain, u):
    """Contact normal rows (eq. 3, bias of eq. 19) and ``u`` friction rows per contact (eq. 4),
    contact-major; rows read the velocity of body b relative to body a at the contact point.

    ``target``: the separation the error correction aims for; ``gain`` = gamma / h."""
    k = sa.shape[0]
    nb = np.empty((k, 2), np.int64)
    nj = np.zeros((k, 2, 6))
    nrhs = np.empty(k)
    fb = np.empty((k * u, 2), np.int64)
    fj = np.zeros((k * u, 2, 6))
    d = np.empty(3)
    for c in range(k):
        nb[c, 0], nb[c, 1] = sa[c], sb[c]
        _lin(nj[c, 1], normal[c], point[c], com_b[c])
        _lin(nj[c, 0], normal[c], point[c], com_a[c])
        for j in range(6):
            nj[c, 0, j] = -nj[c, 0, j]
        nrhs[c] = gain * min(sep[c] - target, 0.0)
        for e in range(u):
            ang = 2.0 * np.pi * e / u
            ca, sn = np.cos(ang), np.sin(ang)
            for j in range(3):
                d[j] = ca * t1[c, j] + sn * t2[c, j]
            r = c * u + e
            fb[r, 0], fb[r, 1] = sa[c], sb[c]
            _lin(fj[r, 1], d, point[c], com_b[c])
            _lin(fj[r, 0], d, point[c], com_a[c])
            for j in range(6):
                fj[r, 0, j] = -fj[r, 0, j]
    return nb, nj, nrhs, fb, fj


@njit(cache=True)
def _find(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@njit(cache=True)
def islands(comp, ncomp, sa, sb):
    """Step 9: union-find of the joint components ``comp`` (per dynamic body) merged by contacts
    between two dynamic bodies (slots ``sa``, ``sb``; -1 = static).  Islands are numbered by
    increasing root component.  Returns (labels per body, number of islands)."""
    parent = np.empty(ncomp, np.int64)    # identity (a loop, not np.arange: less first-run compile)
    for i in range(ncomp):
        parent[i] = i
    for i in range(sa.shape[0]):
        x, y = sa[i], sb[i]
        if x >= 0 and y >= 0:
            rx, ry = _find(parent, comp[x]), _find(parent, comp[y])
            if rx != ry:
                parent[rx] = ry
    lab = -np.ones(ncomp, np.int64)
    n = 0
    for c in range(ncomp):
        if _find(parent, c) == c:
            lab[c] = n
            n += 1
    out = np.empty(comp.shape[0], np.int64)
    for b in range(comp.shape[0]):
        out[b] = lab[_find(parent, comp[b])]
    return out, n


# ------------------------------------------------------------------------- body state (bodies.py)

@njit(cache=True)
def rotations(q):
    """(n, 4) unit quaternions (w, x, y, z) -> (n, 3, 3) rotation matrices."""
    n = q.shape[0]
    R = np.empty((n, 3, 3))
    for i in range(n):
        w, x, y, z = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
        R[i, 0, 0] = 1 - 2 * (y * y + z * z); R[i, 0, 1] = 2 * (x * y - w * z); R[i, 0, 2] = 2 * (x * z + w * y)
        R[i, 1, 0] = 2 * (x * y + w * z); R[i, 1, 1] = 1 - 2 * (x * x + z * z); R[i, 1, 2] = 2 * (y * z - w * x)
        R[i, 2, 0] = 2 * (x * z - w * y); R[i, 2, 1] = 2 * (y * z + w * x); R[i, 2, 2] = 1 - 2 * (x * x + y * y)
    return R


@njit(cache=True)
def integrate(c, q, v, h):
    """Steps 1-2 (eq. 11-12): c + h v, q + h B(q) R^T omega, renormalised (see bodies.integrate_poses)."""
    n = q.shape[0]
    c1 = np.empty_like(c)
    q1 = np.empty_like(q)
    R = rotations(q)
    wb = np.empty(3)
    for i in range(n):
        for j in range(3):
            c1[i, j] = c[i, j] + h * v[i, j]
        # body-frame angular velocity R^T omega
        for a in range(3):
            wb[a] = 0.0
            for b in range(3):
                wb[a] += R[i, b, a] * v[i, 3 + b]
        w, x, y, z = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
        dw = 0.5 * (-x * wb[0] - y * wb[1] - z * wb[2])
        dx = 0.5 * (w * wb[0] - z * wb[1] + y * wb[2])
        dy = 0.5 * (z * wb[0] + w * wb[1] - x * wb[2])
        dz = 0.5 * (-y * wb[0] + x * wb[1] + w * wb[2])
        nw, nx, ny, nz = w + h * dw, x + h * dx, y + h * dy, z + h * dz
        s = np.sqrt(nw * nw + nx * nx + ny * ny + nz * nz)
        q1[i, 0], q1[i, 1], q1[i, 2], q1[i, 3] = nw / s, nx / s, ny / s, nz / s
    return c1, q1


@njit(cache=True)
def place(X_static, table_index, c, q, com_L):
    """Body poses (N, 4, 4): the static ones, and X_WL of each dynamic body from its com and orientation."""
    X = X_static.copy()
    R = rotations(q)
    for i in range(c.shape[0]):
        t = table_index[i]
        for a in range(3):
            s = c[i, a]
            for b in range(3):
                X[t, a, b] = R[i, a, b]
                s -= R[i, a, b] * com_L[i, b]
            X[t, a, 3] = s
    return X


@njit(cache=True)
def trial_move(c, q, v, h, X_static, table_index, com_L, parent, child, X_PJ, X_CJ, axis_J, perp_J, kind, prev,
               cand, lo, hi, tol, start):
    """Steps 1-2 and what step 3 asks of the trial pose, in one call: :func:`integrate` over ``h``,
    :func:`place`, :func:`joint_frames_values` (revolute values unwrapped against ``prev``) and
    :func:`limit_crossed`; with ``start``, also the poses before the move (the impact screen's).
    Returns (c1, q1, X, o, o_c, R, R_c, ax, pp, jq, crossed, X0) (X0 (0, 4, 4) without ``start``)."""
    c1, q1 = integrate(c, q, v, h)
    X = place(X_static, table_index, c1, q1, com_L)
    o, o_c, R, R_c, ax, pp, jq = joint_frames_values(X, parent, child, X_PJ, X_CJ, axis_J, perp_J, kind, prev, True)
    crossed = limit_crossed(cand, lo, hi, tol, prev, jq)
    X0 = place(X_static, table_index, c, q, com_L) if start else np.empty((0, 4, 4))
    return c1, q1, X, o, o_c, R, R_c, ax, pp, jq, crossed, X0


@njit(cache=True)
def joint_rates(X_static, table_index, c, q, com_L, com_L_all, parent, child, X_PJ, X_CJ, axis_J, perp_J, kind,
                prev, slot, v):
    """Joint rates (nj,) at the state (coms ``c``, orientations ``q``, velocities ``v``) in one call:
    :func:`place`, :func:`joint_frames_values`, the coms in W and :func:`rate_rows`' rates
    (``Simulator.dof_velocities``, which a Python controller asks for every step)."""
    X = place(X_static, table_index, c, q, com_L)
    o, o_c, R, R_c, ax, pp, jq = joint_frames_values(X, parent, child, X_PJ, X_CJ, axis_J, perp_J, kind, prev, True)
    n = X.shape[0]
    com_W = np.empty((n, 3))
    for i in range(n):
        for a in range(3):
            s = 0.0
            for b in range(3):
                s += X[i, a, b] * com_L_all[i, b]
            com_W[i, a] = X[i, a, 3] + s
    return rate_rows(kind, parent, child, slot, com_W, o, ax, v)[2]


@njit(cache=True)
def _dof_map(P, x):
    """P @ x as numpy computes it (BLAS: dgemv, a one-row P by ddot; the same bits, checked on random
    maps and vectors of every size up to 24 x 39 against numpy's matmul)."""
    if P.shape[0] == 0:
        return np.zeros(0)
    if P.shape[0] == 1:
        out = np.empty(1)
        out[0] = np.dot(P[0], x)
        return out
    return np.dot(P, x)


@njit(cache=True)
def dof_state_flat(spec, ints, shapes, floats, P, c, q, v, jq):
    """(DOF values, DOF rates) at the state (``Simulator.dof_state``): ``P`` the DOF map (nd, nj),
    the joint-rate kernel's constant arrays and the joint offsets flattened (:mod:`graspsim._flat`:
    one call's dispatch unboxes 9 values, not 17), the products as numpy's ``P @ x``."""
    (X_static, table_index, com_L, com_L_all, parent, child, X_PJ, X_CJ, axis_J, perp_J, kind, slot,
     off) = unflatten(spec, ints, shapes, floats)
    rates = joint_rates(X_static, table_index, c, q, com_L, com_L_all, parent, child, X_PJ, X_CJ, axis_J, perp_J,
                        kind, jq, slot, v)
    d = np.empty(jq.shape[0])
    for i in range(jq.shape[0]):
        d[i] = jq[i] - off[i]
    return _dof_map(P, d), _dof_map(P, rates)


@njit(cache=True)
def mass_terms(mass, inertia_L, q, v, k, h):
    """World inertias I_W = R I R^T, block inverse masses M^-1 (nb, 6, 6), the gyroscopic torque
    -omega x I_W omega added to the wrenches ``k`` (in place), and M^-1 (M v + h k) (nb, 6)."""
    n = mass.shape[0]
    R = rotations(q)
    I_W = np.empty((n, 3, 3))
    Minv = np.zeros((n, 6, 6))
    aM = np.empty((n, 6))
    I = np.empty((3, 3))        # (every entry written for each body below)
    Ii = np.empty((3, 3))
    for i in range(n):
        for a in range(3):
            for b in range(3):
                t = 0.0
                for c in range(3):
                    for d in range(3):
                        t += R[i, a, c] * inertia_L[i, c, d] * R[i, b, d]
                I[a, b] = t
                I_W[i, a, b] = t      # (not I_W[i] = I: a block assignment compiles numba's shape-error text)
        w0, w1, w2 = v[i, 3], v[i, 4], v[i, 5]
        L0 = I[0, 0] * w0 + I[0, 1] * w1 + I[0, 2] * w2
        L1 = I[1, 0] * w0 + I[1, 1] * w1 + I[1, 2] * w2
        L2 = I[2, 0] * w0 + I[2, 1] * w1 + I[2, 2] * w2
        k[i, 3] -= w1 * L2 - w2 * L1
        k[i, 4] -= w2 * L0 - w0 * L2
        k[i, 5] -= w0 * L1 - w1 * L0
        # inverse of the symmetric positive definite 3x3 inertia by cofactors
        c00 = I[1, 1] * I[2, 2] - I[1, 2] * I[2, 1]
        c01 = I[1, 2] * I[2, 0] - I[1, 0] * I[2, 2]
        c02 = I[1, 0] * I[2, 1] - I[1, 1] * I[2, 0]
        det = I[0, 0] * c00 + I[0, 1] * c01 + I[0, 2] * c02
        Ii[0, 0] = c00 / det
        Ii[1, 0] = c01 / det
        Ii[2, 0] = c02 / det
        Ii[0, 1] = (I[0, 2] * I[2, 1] - I[0, 1] * I[2, 2]) / det
        Ii[1, 1] = (I[0, 0] * I[2, 2] - I[0, 2] * I[2, 0]) / det
        Ii[2, 1] = (I[0, 1] * I[2, 0] - I[0, 0] * I[2, 1]) / det
        Ii[0, 2] = (I[0, 1] * I[1, 2] - I[0, 2] * I[1, 1]) / det
        Ii[1, 2] = (I[0, 2] * I[1, 0] - I[0, 0] * I[1, 2]) / det
        Ii[2, 2] = (I[0, 0] * I[1, 1] - I[0, 1] * I[1, 0]) / det
        for a in range(3):
            Minv[i, a, a] = 1.0 / mass[i]
            aM[i, a] = v[i, a] + h * k[i, a] / mass[i]
            s = 0.0
            for b in range(3):
                Minv[i, 3 + a, 3 + b] = Ii[a, b]
                s += Ii[a, b] * k[i, 3 + b]
            aM[i, 3 + a] = v[i, 3 + a] + h * s
    return I_W, Minv, aM


@njit(cache=True)
def tangential_speed(sa, sb, v, com_a, com_b, point, normal):
    """|tangential part| of the velocity of body b relative to body a at each contact point (eq. 13)."""
    k = sa.shape[0]
    out = np.empty(k)
    rel = np.empty(3)
    for c in range(k):
        rel[0] = rel[1] = rel[2] = 0.0
        for side in range(2):
            s = sb[c] if side else sa[c]
            if s < 0:
                continue
            com = com_b[c] if side else com_a[c]
            sign = 1.0 if side else -1.0
            r0, r1, r2 = point[c, 0] - com[0], point[c, 1] - com[1], point[c, 2] - com[2]
            w0, w1, w2 = v[s, 3], v[s, 4], v[s, 5]
            rel[0] += sign * (v[s, 0] + w1 * r2 - w2 * r1)
            rel[1] += sign * (v[s, 1] + w2 * r0 - w0 * r2)
            rel[2] += sign * (v[s, 2] + w0 * r1 - w1 * r0)
        vn = rel[0] * normal[c, 0] + rel[1] * normal[c, 1] + rel[2] * normal[c, 2]
        t0, t1, t2 = rel[0] - vn * normal[c, 0], rel[1] - vn * normal[c, 1], rel[2] - vn * normal[c, 2]
        out[c] = np.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    return out


# ------------------------------------------------------------------------- joint-space rows

@njit(cache=True)
def rate_rows(kind, parent, child, slot, com_W, o, ax, v):
    """One row per joint giving its rate (child minus parent along the axis),
    plus a trailing all-static zero row (index nj, the padding target of ``gather``), and the
    joint rates at the body velocities ``v`` (static bodies at rest).

    Returns bodies (nj + 1, 2), jac (nj + 1, 2, 6), rates (nj,)."""
    nj = kind.shape[0]
    bodies = np.full((nj + 1, 2), -1, np.int64)
    jac = np.zeros((nj + 1, 2, 6))
    rates = np.zeros(nj)
    for n in range(nj):
        p, c = parent[n], child[n]
        bodies[n, 0], bodies[n, 1] = slot[p], slot[c]
        if kind[n] == 0:
            for j in range(3):
                jac[n, 1, 3 + j] = ax[n, j]
                jac[n, 0, 3 + j] = -ax[n, j]
        else:
            _lin(jac[n, 1], ax[n], o[n], com_W[c])
            _lin(jac[n, 0], ax[n], o[n], com_W[p])
            for j in range(6):
                jac[n, 0, j] = -jac[n, 0, j]
        s = 0.0
        for side in range(2):
            b = bodies[n, side]
            if b >= 0:
                for j in range(6):
                    s += jac[n, side, j] * v[b, j]
        rates[n] = s
    return bodies, jac, rates


@njit(cache=True)
def gather(rbodies, rjac, idx, coef):
    """Rows that are linear combinations sum_m coef[r, m] * (rate row idx[r, m]): bodies (r, 2 m),
    jac (r, 2 m, 6)."""
    r, m = idx.shape
    bodies = np.empty((r, 2 * m), np.int64)
    jac = np.empty((r, 2 * m, 6))
    for i in range(r):
        for k in range(m):
            src = idx[i, k]
            for side in range(2):
                bodies[i, 2 * k + side] = rbodies[src, side]
                for j in range(6):
                    jac[i, 2 * k + side, j] = coef[i, k] * rjac[src, side, j]
    return bodies, jac


@njit(cache=True)
def joint_wrenches(kind, parent, child, slot, com_W, o, ax, tau, nb):
    """(nb, 6) body wrenches [force; torque about the com] from joint torques/forces ``tau``, equal
    and opposite on child and parent (steps 7-8)."""
    out = np.zeros((nb, 6))
    w = np.empty(6)
    a = np.empty(3)
    for n in range(kind.shape[0]):
        t = tau[n]
        if t == 0.0:
            continue
        for j in range(3):
            a[j] = ax[n, j] * t
        for side in range(2):
            b = slot[child[n]] if side else slot[parent[n]]
            if b < 0:
                continue
            sign = 1.0 if side else -1.0
            if kind[n] == 0:
                w[0] = w[1] = w[2] = 0.0
                w[3], w[4], w[5] = a[0], a[1], a[2]
            else:
                _lin(w, a, o[n], com_W[child[n]] if side else com_W[parent[n]])
            for j in range(6):
                out[b, j] += sign * w[j]
    return out


@njit(cache=True)
def displace(c, q, dx):
    """Small displacements dx (nb, 6) = [translation; rotation vector in W] applied to the coms and
    orientations (post-stabilisation): q <- exp(dx_rot / 2) q, renormalised."""
    n = c.shape[0]
    c1 = c + dx[:, :3]
    q1 = q.copy()
    for i in range(n):
        a0, a1, a2 = dx[i, 3], dx[i, 4], dx[i, 5]
        ang = np.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
        if ang == 0.0:
            continue
        w1 = np.cos(ang / 2)
        s = np.sin(ang / 2) / ang
        v0, v1, v2 = s * a0, s * a1, s * a2
        w2, x2, y2, z2 = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
        nw = w1 * w2 - (v0 * x2 + v1 * y2 + v2 * z2)
        nx = w1 * x2 + w2 * v0 + (v1 * z2 - v2 * y2)
        ny = w1 * y2 + w2 * v1 + (v2 * x2 - v0 * z2)
        nz = w1 * z2 + w2 * v2 + (v0 * y2 - v1 * x2)
        r = np.sqrt(nw * nw + nx * nx + ny * ny + nz * nz)
        q1[i, 0], q1[i, 1], q1[i, 2], q1[i, 3] = nw / r, nx / r, ny / r, nz / r
    return c1, q1


@njit(cache=True)
def pd_drives(P, jq_off, rates, q_ref, qd_ref, kp, kd, tau_ff, effort, drive_idx, drive_w, h, nj):
    """Step 7 for every DOF (see Simulator._control): the PD estimate kp (q_ref - q) + kd (qd_ref - qd)
    + tau_ff; a DOF whose estimate reaches its effort limit applies the clamped torque explicitly,
    the others apply tau_ff explicitly and the PD part implicitly as a soft row on the DOF rate
    (s+ + C lambda = eps, C = 1 / (h c), eps = (kp (q_ref - q) + kd qd_ref) / c, c = h kp + kd).

    Returns explicit joint torques (nj,), and for the implicit DOFs: their indices, eps and C."""
    nd = q_ref.shape[0]
    tau = np.zeros(nj + 1)          # entry nj absorbs the padding of drive_idx
    act = np.empty(nd, np.int64)
    eps = np.empty(nd)
    comp = np.empty(nd)
    na = 0
    for d in range(nd):
        q = 0.0
        qd = 0.0
        for j in range(nj):
            q += P[d, j] * jq_off[j]
            qd += P[d, j] * rates[j]
        est = tau_ff[d] + kp[d] * (q_ref[d] - q) + kd[d] * (qd_ref[d] - qd)
        e = effort[d]
        sat = abs(est) >= e
        t = min(max(est if sat else tau_ff[d], -e), e)
        for m in range(drive_idx.shape[1]):
            tau[drive_idx[d, m]] += drive_w[d, m] * t
        c = h * kp[d] + kd[d]
        if not sat and c > 0:
            act[na] = d
            eps[na] = (kp[d] * (q_ref[d] - q) + kd[d] * qd_ref[d]) / c
            comp[na] = 1.0 / (h * c)
            na += 1
    return tau[:nj], act[:na], eps[:na], comp[:na]


@njit(cache=True)
def limit_rows(cand, lo, hi, tol, jq, rbodies, rjac, gain):
    """Joint-limit rows (eq. 9) for joints within 2 ``tol`` of a limit: w = +-rate + b >= 0 with
    b = gain * min(margin, 0) pushing a joint beyond its limit back; rows without a dynamic body
    are dropped.  Lower limits first, then upper.  Returns bodies, jac, rhs and each row's joint
    and sign (+1 lower, -1 upper)."""
    n = cand.shape[0]
    bodies = np.empty((2 * n, 2), np.int64)
    jac = np.empty((2 * n, 2, 6))
    rhs = np.empty(2 * n)
    joint = np.empty(2 * n, np.int64)
    sgn = np.empty(2 * n)
    r = 0
    for side in range(2):
        for i in range(n):
            j = cand[i]
            q = jq[j]
            if side == 0:
                if not (q <= lo[i] + 2 * tol[i]):
                    continue
                sign, margin = 1.0, q - lo[i]
            else:
                if not (q >= hi[i] - 2 * tol[i]):
                    continue
                sign, margin = -1.0, hi[i] - q
            if rbodies[j, 0] < 0 and rbodies[j, 1] < 0:
                continue
            for s in range(2):
                bodies[r, s] = rbodies[j, s]
                for k in range(6):
                    jac[r, s, k] = sign * rjac[j, s, k]
            rhs[r] = gain * min(margin, 0.0)
            joint[r] = j
            sgn[r] = sign
            r += 1
    return bodies[:r], jac[:r], rhs[:r], joint[:r], sgn[:r]


@njit(cache=True)
def finish(c, q, dx, v_new, rest, group, is_object, h, lin_limit, ang_length, after):
    """The end of step 10: :func:`displace` by the post-stabilisation ``dx``, whether the new
    coms, orientations and velocities ``v_new`` are finite, the largest component of the new
    linear and of the angular velocities (the sleep test's speeds), and the objects' rest counts
    (:mod:`graspsim.dynamics.sleep`): an awake object (``is_object``, ``group`` 0) whose largest
    linear component and angular one times ``ang_length`` are below ``lin_limit`` has rested ``h``
    s more (``h`` = 0: a cut step, or sleep off), any other body 0 s.  Returns (c1, q1, finite,
    largest |v| component (m/s), largest |w| component (rad/s), new rest counts (nb,) s, whether
    one reached ``after`` s)."""
    c1, q1 = displace(c, q, dx)
    nb = v_new.shape[0]
    lin = 0.0
    ang = 0.0
    rest1 = np.zeros(nb)
    rested = False
    for b in range(nb):
        lb = 0.0
        ab = 0.0
        for j in range(3):
            lb = max(lb, abs(v_new[b, j]))
            ab = max(ab, abs(v_new[b, 3 + j]))
        lin = max(lin, lb)
        ang = max(ang, ab)
        if h > 0.0 and is_object[b] and group[b] == 0 and max(lb, ang_length * ab) < lin_limit:
            rest1[b] = rest[b] + h
            rested = rested or rest1[b] >= after
    return c1, q1, all_finite(v_new, c1, q1), lin, ang, rest1, rested


@njit(cache=True)
def all_finite(a, b, c):
    """True when the three arrays hold only finite numbers."""
    for x in (a.ravel(), b.ravel(), c.ravel()):
        for i in range(x.shape[0]):
            if not np.isfinite(x[i]):
                return False
    return True


@njit(cache=True)
def state_finite(c, q, v, jq, lock):
    """True when a state's coms, orientations, velocities (2-D), joint values and locks (1-D)
    hold only finite numbers (``Simulator._check_steppable``: one call every step)."""
    for x in (c.ravel(), q.ravel(), v.ravel(), jq, lock):
        for i in range(x.shape[0]):
            if not np.isfinite(x[i]):
                return False
    return True


@njit(cache=True)
def command_ok(A):
    """Does the stacked command ``A`` (6, nd) (rows in ``checks.CMD_FIELDS`` order) pass
    ``checks.command_array``'s check: q_ref, qd_ref, tau_ff, kp, kd finite and kp, kd, effort >= 0
    (effort may be inf; a NaN fails)?  One pass instead of two numpy reductions."""
    for j in range(A.shape[1]):
        for r in range(5):
            if not np.isfinite(A[r, j]):
                return False
        for r in range(3, 6):
            if not A[r, j] >= 0.0:
                return False
    return True


@njit(cache=True)
def limit_crossed(cand, lo, hi, tol, prev, jq):
    """Did a joint that was inside its limits (up to tol) end beyond one (by more than tol)?"""
    for i in range(cand.shape[0]):
        p, q = prev[cand[i]], jq[cand[i]]
        if p >= lo[i] - tol[i] and p <= hi[i] + tol[i] and (q < lo[i] - tol[i] or q > hi[i] + tol[i]):
            return True
    return False


# ------------------------------------------------------------------------- steps 5-8 in one call

@njit(cache=True)
def _dot6(a, b):
    s = 0.0
    for j in range(6):
        s += a[j] * b[j]
    return s


@njit(cache=True)
def _row_const(bodies, jac, V, tab):
    """Each row's value due to the kinematic bodies' velocities ``V`` (N, 6): rows between table
    bodies ``tab`` (r, K) (-1: padding)."""
    r = jac.shape[0]
    out = np.zeros(r)
    for i in range(r):
        s = 0.0
        for k in range(tab.shape[1]):
            if tab[i, k] >= 0:
                s += _dot6(jac[i, k], V[tab[i, k]])
        out[i] = s
    return out


@njit(cache=True)
def assemble(X, com_L, slot, mass, gravity, ext, v, jq, kind, parent, child, axis_J, o, o_c, R, R_c, ax, pp,
             rj, rt, rk, joint_off, coulomb, P, drive_idx, drive_w, c_idx, c_coef, c_kappa, c_dof, c_lock, c_hard,
             lock, kp_d, kd_d, visc_idx, visc, cand, lo, hi, tol, has_cmd, cmd, effort_max,
             ca, cb, cpoint, cnormal, ct1, ct2, csep, MS, MK, mat, ma, mb, has_V, V,
             h, hc, gamma, threshold, u, static_speed, lock_gain):
    """Steps 5-8 and every constraint row of a step in one call (the compiled equivalent of
    ``Simulator._assemble_reference``, built from the same row kernels).

    Returns the row block (``bodies`` (r, K), ``jac`` (r, K, 6), ``rhs``, ``comp``) in five
    consecutive kinds of sizes ``sizes``: hard equality (joints (eq. 7, 16), coupled DOFs), soft
    equality (PD drives, viscous joint friction (eq. 14), holds of broken-away DOFs), joint limits
    (eq. 9), contact normals (eq. 3, 19), friction directions (eq. 4); the hard rows' position
    errors; friction coefficients per contact (eq. 13: ``MS``/``MK`` (M, M) static/kinetic between
    materials, the contact's materials ``mat[ma[c]]``, ``mat[mb[c]]``: its two shapes' (or bodies');
    NaN: a material pair missing); body wrenches
    ``k`` (nb, 6): gravity, external, control and joint-friction forces; the joint rows' count.
    ``cmd`` (6, nd) the controller's command rows (checks.CMD_FIELDS; ``has_cmd`` False: none);
    ``V`` (N, 6) kinematic bodies' velocities (``has_V`` False: none)."""
    # every array borrowed (graspsim._borrow: the returned ones are all made here), in two tuples
    # (a literal of over ~30 items compiles to a list numba cannot type)
    (X, com_L, slot, mass, gravity, ext, v, jq, kind, parent, child, axis_J, o, o_c, R, R_c, ax, pp, rj, rt, rk,
     joint_off, coulomb, P, drive_idx, drive_w, c_idx, c_coef) = borrow((
        X, com_L, slot, mass, gravity, ext, v, jq, kind, parent, child, axis_J, o, o_c, R, R_c, ax, pp, rj, rt, rk,
        joint_off, coulomb, P, drive_idx, drive_w, c_idx, c_coef))
    (c_kappa, c_dof, c_lock, c_hard, lock, kp_d, kd_d, visc_idx, visc, cand, lo, hi, tol, cmd, effort_max, ca, cb,
     cpoint, cnormal, ct1, ct2, csep, MS, MK, mat, ma, mb, V) = borrow((
        c_kappa, c_dof, c_lock, c_hard, lock, kp_d, kd_d, visc_idx, visc, cand, lo, hi, tol, cmd, effort_max, ca, cb,
        cpoint, cnormal, ct1, ct2, csep, MS, MK, mat, ma, mb, V))
    N = X.shape[0]
    nb = mass.shape[0]
    nj = kind.shape[0]
    nk = ca.shape[0]
    # body coms in W
    com_W = np.empty((N, 3))
    for n in range(N):
        for i in range(3):
            com_W[n, i] = X[n, i, 3] + (X[n, i, 0] * com_L[n, 0] + X[n, i, 1] * com_L[n, 1] + X[n, i, 2] * com_L[n, 2])
    # joint rate rows (one per joint, and the all-static padding row nj) and the joint rates
    rbod, rjac, rates = rate_rows(kind, parent, child, slot, com_W, o, ax, v)
    rconst = np.zeros(nj + 1)
    if has_V:
        for n in range(nj):
            rconst[n] = _dot6(rjac[n, 0], V[parent[n]]) + _dot6(rjac[n, 1], V[child[n]])
            rates[n] = rates[n] + rconst[n]
    # 5: friction coefficient per contact (eq. 13), from the relative speed at the previous velocities
    sa = np.empty(nk, np.int64)
    sb = np.empty(nk, np.int64)
    com_a = np.empty((nk, 3))
    com_b = np.empty((nk, 3))
    for c in range(nk):
        sa[c], sb[c] = slot[ca[c]], slot[cb[c]]
        for i in range(3):
            com_a[c, i] = com_W[ca[c], i]
            com_b[c, i] = com_W[cb[c], i]
    vt = tangential_speed(sa, sb, v, com_a, com_b, cpoint, cnormal)
    mu = np.empty(nk)
    for c in range(nk):
        i, j = mat[ma[c]], mat[mb[c]]
        mu[c] = MS[i, j] if vt[c] < static_speed else MK[i, j]
        if MS[i, j] != MS[i, j]:
            mu[c] = np.nan
    # 6: gravity and applied wrenches (the gyroscopic term comes with the inertias)
    k = ext.copy()
    for b in range(nb):
        for i in range(3):
            k[b, i] += mass[b] * gravity[i]
    # 7: control forces: explicit torques and the implicit PD drive rows
    nd = P.shape[0]
    tau = np.zeros(nj)
    n_drv = 0
    act = np.zeros(0, np.int64)
    eps = np.zeros(0)
    dcomp = np.zeros(0)
    if has_cmd:
        jq_off = jq - joint_off
        eff = np.empty(nd)
        for d in range(nd):
            eff[d] = min(cmd[5, d], effort_max[d])
        tau, act, eps, dcomp = pd_drives(P, jq_off, rates, cmd[0], cmd[1], cmd[3], cmd[4], cmd[2], eff,
                                         drive_idx, drive_w, h, nj)
        n_drv = act.shape[0]
    # 8: joint friction (eq. 14): Coulomb explicit, viscous as implicit damping rows
    for n in range(nj):
        r_ = rates[n]
        sg = 1.0 if r_ > 0 else (-1.0 if r_ < 0 else (0.0 if r_ == 0 else r_))
        tau[n] -= coulomb[n] * sg
    jw = joint_wrenches(kind, parent, child, slot, com_W, o, ax, tau, nb)
    for b in range(nb):
        for j in range(6):
            k[b, j] += jw[b, j]
    # joint rows (eq. 7) and their position errors; rows between two static bodies dropped
    eb, ejac, eerr, keep = equality_rows(rj, rt, rk, kind, parent, child, axis_J, slot, com_W, o, o_c, R, R_c, ax, pp)
    ne = 0
    for i in range(keep.shape[0]):
        if keep[i]:
            ne += 1
    # coupled DOFs: rate_k - rho rate_0 = 0 (hard), or a broken-away DOF's soft hold
    ncp = c_idx.shape[0]
    cerr = np.empty(ncp)
    for r_ in range(ncp):
        t = 0.0
        for m in range(c_idx.shape[1]):
            j = c_idx[r_, m]
            t += c_coef[r_, m] * (jq[j] if j < nj else 0.0)
        cerr[r_] = t - (lock[c_dof[r_]] if c_lock[r_] else c_kappa[r_])
    n_ch = 0
    for r_ in range(ncp):
        if c_hard[r_]:
            n_ch += 1
    n_hold = ncp - n_ch
    # joint limits (eq. 9)
    lb, ljac, lrhs, ljoint, lsign = limit_rows(cand, lo, hi, tol, jq, rbod, rjac, gamma / hc)
    nl = lrhs.shape[0]
    # contacts (eq. 3, 4, 19)
    nbn, njac, nrhs, fb, fj = contact_rows(sa, sb, com_a, com_b, cpoint, cnormal, ct1, ct2, csep, 0.5 * threshold,
                                           gamma / hc, u)
    nv_ = visc_idx.shape[0]
    # the block
    K = 2
    if n_drv:
        K = max(K, 2 * drive_idx.shape[1])
    if ncp:
        K = max(K, 2 * c_idx.shape[1])
    sizes = np.empty(5, np.int64)
    sizes[0] = ne + n_ch
    sizes[1] = n_drv + nv_ + n_hold
    sizes[2] = nl
    sizes[3] = nk
    sizes[4] = nk * u
    r_tot = sizes[0] + sizes[1] + sizes[2] + sizes[3] + sizes[4]
    bodies = -np.ones((r_tot, K), np.int64)
    jac = np.zeros((r_tot, K, 6))
    rhs = np.zeros(r_tot)
    comp = np.zeros(r_tot)
    hard_err = np.empty(sizes[0])
    tab = -np.ones((r_tot, K), np.int64)          # rows' table bodies (for the kinematic constants)
    row = 0
    for i in range(keep.shape[0]):
        if not keep[i]:
            continue
        for s in range(2):
            bodies[row, s] = eb[i, s]
            for j in range(6):
                jac[row, s, j] = ejac[i, s, j]
        tab[row, 0], tab[row, 1] = parent[rj[i]], child[rj[i]]
        hard_err[row] = eerr[i]
        rhs[row] = -gamma * eerr[i] / hc                                # eq. (16)
        row += 1
    for pass_ in range(2):            # coupling rows: the hard ones here, the holds with the soft rows
        if pass_ == 1:
            # PD drive rows: s+ + C lambda = eps
            for a in range(n_drv):
                d = act[a]
                for m in range(drive_idx.shape[1]):
                    src = drive_idx[d, m]
                    for s in range(2):
                        bodies[row, 2 * m + s] = rbod[src, s]
                        if src < nj:
                            tab[row, 2 * m + s] = parent[src] if s == 0 else child[src]
                        for j in range(6):
                            jac[row, 2 * m + s, j] = drive_w[d, m] * rjac[src, s, j]
                rhs[row] = eps[a]
                comp[row] = dcomp[a]
                row += 1
            # viscous joint friction (eq. 14) applied implicitly: rate+ + C lambda = 0, C = 1 / (h c)
            for a in range(nv_):
                src = visc_idx[a]
                for s in range(2):
                    bodies[row, s] = rbod[src, s]
                    tab[row, s] = parent[src] if s == 0 else child[src]
                    for j in range(6):
                        jac[row, s, j] = 1.0 * rjac[src, s, j]
                comp[row] = 1.0 / (h * visc[src])
                row += 1
        for r_ in range(ncp):
            if c_hard[r_] != (pass_ == 0):
                continue
            for m in range(c_idx.shape[1]):
                src = c_idx[r_, m]
                for s in range(2):
                    bodies[row, 2 * m + s] = rbod[src, s]
                    if src < nj:
                        tab[row, 2 * m + s] = parent[src] if s == 0 else child[src]
                    for j in range(6):
                        jac[row, 2 * m + s, j] = c_coef[r_, m] * rjac[src, s, j]
            if pass_ == 0:
                hard_err[row] = cerr[r_]
                rhs[row] = -gamma * cerr[r_] / hc                       # eq. (16)
            else:
                # the gear's stiff spring-damper: s+ + C lambda = eps, C = 1 / (h c), eps = k (q_lock - q) / c
                d = c_dof[r_]
                cs = lock_gain * (h * kp_d[d] + kd_d[d])
                rhs[row] = -lock_gain * kp_d[d] * cerr[r_] / cs
                comp[row] = 1.0 / (h * cs)
            row += 1
    for i in range(nl):
        j_ = ljoint[i]
        for s in range(2):
            bodies[row, s] = lb[i, s]
            tab[row, s] = parent[j_] if s == 0 else child[j_]
            for j in range(6):
                jac[row, s, j] = ljac[i, s, j]
        rhs[row] = lrhs[i]
        row += 1
    for c in range(nk):
        for s in range(2):
            bodies[row, s] = nbn[c, s]
            for j in range(6):
                jac[row, s, j] = njac[c, s, j]
        tab[row, 0], tab[row, 1] = ca[c], cb[c]
        rhs[row] = nrhs[c]
        row += 1
    for r_ in range(nk * u):
        c = r_ // u
        for s in range(2):
            bodies[row, s] = fb[r_, s]
            for j in range(6):
                jac[row, s, j] = fj[r_, s, j]
        tab[row, 0], tab[row, 1] = ca[c], cb[c]
        row += 1
    if has_V:
        # kinematic bodies' motion: equality targets shift, inequality biases grow
        const = _row_const(bodies, jac, V, tab)
        n_eq = sizes[0] + sizes[1]
        for i in range(r_tot):
            if i < n_eq:
                rhs[i] -= const[i]
            else:
                rhs[i] += const[i]
    return bodies, jac, rhs, comp, sizes, hard_err, mu, k, ne


# ------------------------------------------------------------------------- compiled PD references

@njit(cache=True)
def _traj_at(r, t, kind, t0, dur, q0, q1, off, s_off, s_t, s_q, q, qd, want_q):
    """Robot ``r``'s reference at time ``t`` into ``q`` or ``qd`` (its DOFs ``off[r]:off[r + 1]``):
    the JointTrajectory of control/trajectory.py, a quintic segment (kind 0) or linear
    interpolation of samples (kind 1), with the same floating-point operations."""
    a, b = off[r], off[r + 1]
    if kind[r] == 1:
        i0, i1 = s_off[r], s_off[r + 1]
        if t <= s_t[i0] or t >= s_t[i1 - 1]:
            k = i0 if t <= s_t[i0] else i1 - 1
            for d in range(a, b):
                if want_q:
                    q[d] = s_q[k, d - a]
                else:
                    qd[d] = 0.0
            return
        i = i0
        while s_t[i] < t:            # searchsorted(ts, t) (side 'left') - 1
            i += 1
        i -= 1
        f = (t - s_t[i]) / (s_t[i + 1] - s_t[i])
        for d in range(a, b):
            if want_q:
                q[d] = s_q[i, d - a] + f * (s_q[i + 1, d - a] - s_q[i, d - a])
            else:
                qd[d] = (s_q[i + 1, d - a] - s_q[i, d - a]) / (s_t[i + 1] - s_t[i])
        return
    if dur[r] <= 0:
        for d in range(a, b):
            if want_q:
                q[d] = q1[d]
            else:
                qd[d] = 0.0
        return
    x = min(1.0, max(0.0, (t - t0[r]) / dur[r]))
    # (math.pow: the C pow of Python's float ** int, so the reference is the same to the last bit)
    s = math.pow(x, 3.0) * (10 - 15 * x + 6 * x * x)
    ds = 30 * x * x * math.pow(1 - x, 2.0)
    for d in range(a, b):
        dq = q1[d] - q0[d]
        if want_q:
            q[d] = q0[d] + s * dq
        else:
            qd[d] = ds / dur[r] * dq


@njit(cache=True)
def pd_command(t, h, kp, kd, effort, kind, t0, dur, q0, q1, off, s_off, s_t, s_q):
    """The PD controller's command for the step from ``t`` (see PDController.command) as the (6, nd)
    rows of ``checks.command_array`` (q_ref at t + 2h, qd_ref at t + 1.5h, every robot's trajectory;
    no feed-forward; the gains and effort limits given), and whether it passes that function's
    check (rows 0-4 finite, kp, kd, effort >= 0; a NaN fails).  One call: no stacking per step."""
    nd = q0.shape[0]
    A = np.zeros((6, nd))
    q = A[0]
    qd = A[1]
    for r in range(kind.shape[0]):
        _traj_at(r, t + 2 * h, kind, t0, dur, q0, q1, off, s_off, s_t, s_q, q, qd, True)
        _traj_at(r, t + 1.5 * h, kind, t0, dur, q0, q1, off, s_off, s_t, s_q, q, qd, False)
    ok = True
    for d in range(nd):
        A[3, d] = kp[d]
        A[4, d] = kd[d]
        A[5, d] = effort[d]
        for i in range(5):
            ok = ok and np.isfinite(A[i, d])
        for i in range(3, 6):
            ok = ok and A[i, d] >= 0.0
    return A, ok

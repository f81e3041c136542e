"""Numba kernels of the recursive dynamics algorithms: plain arrays in, arrays out.

Compiled lazily on first call (``@njit(cache=True)``, never at import) and cached on disk.  The
public wrappers in :mod:`.rnea`, :mod:`.crbm` and :mod:`.abm` build the arguments from a
:class:`~graspsim.rigidbody.tree.RigidBodyModel`.

Tree arrays (``nb`` bodies, parents before children):

* ``parent[i]``: parent body, -1 if the parent is the root frame (the fixed base link, or the world
  for a floating base).
* ``jtype[i]``: :data:`REVOLUTE`, :data:`PRISMATIC`, :data:`FIXED` or :data:`FREE` (6-DOF floating
  base, body 0 only).  ``qidx[i]``/``vidx[i]``: position/velocity index of the joint's coordinates.
* ``axis[i]``: unit joint axis in the joint frame J (= the body frame); ``S[i]``: the joint's motion
  subspace (6,) in body coordinates (``[axis; 0]`` revolute, ``[0; axis]`` prismatic).
* ``Rt[i], pt[i]``: constant pose of the joint frame J in the parent body frame.  The body frame is
  J after the joint motion, so the pose of body i in its parent is ``(Rt, pt) * motion(axis, q)``.
* ``inertia[i]``: spatial inertia of body i about its origin, body coordinates (kg, kg m, kg m^2).

Per-call transforms are held as ``E[i]`` (3x3, parent -> body coordinates) and ``r[i]`` (origin of
the body in the parent frame, m): ``i_X_parent = [[E, 0], [-E skew(r), E]]``.
"""
from __future__ import annotations

import numpy as np
from .._jit import njit

REVOLUTE, PRISMATIC, FIXED, FREE = 0, 1, 2, 3


# -- small spatial helpers (all write into ``out``; ``out`` must not alias the inputs) ----------

@njit(cache=True)
def _xm(E, r, m, out):
    """out = X m (motion vector from parent to body coordinates)."""
    w0, w1, w2 = m[0], m[1], m[2]
    t0 = m[3] - (r[1] * w2 - r[2] * w1)
    t1 = m[4] - (r[2] * w0 - r[0] * w2)
    t2 = m[5] - (r[0] * w1 - r[1] * w0)
    for k in range(3):
        out[k] = E[k, 0] * w0 + E[k, 1] * w1 + E[k, 2] * w2
        out[3 + k] = E[k, 0] * t0 + E[k, 1] * t1 + E[k, 2] * t2


@njit(cache=True)
def _xtf_add(E, r, f, out):
    """out += X^T f (force vector from body to parent coordinates, accumulated)."""
    n0 = E[0, 0] * f[0] + E[1, 0] * f[1] + E[2, 0] * f[2]
    n1 = E[0, 1] * f[0] + E[1, 1] * f[1] + E[2, 1] * f[2]
    n2 = E[0, 2] * f[0] + E[1, 2] * f[1] + E[2, 2] * f[2]
    g0 = E[0, 0] * f[3] + E[1, 0] * f[4] + E[2, 0] * f[5]
    g1 = E[0, 1] * f[3] + E[1, 1] * f[4] + E[2, 1] * f[5]
    g2 = E[0, 2] * f[3] + E[1, 2] * f[4] + E[2, 2] * f[5]
    out[0] += n0 + (r[1] * g2 - r[2] * g1)
    out[1] += n1 + (r[2] * g0 - r[0] * g2)
    out[2] += n2 + (r[0] * g1 - r[1] * g0)
    out[3] += g0
    out[4] += g1
    out[5] += g2


@njit(cache=True)
def _xtf(E, r, f, out):
    """out = X^T f."""
    for k in range(6):
        out[k] = 0.0
    _xtf_add(E, r, f, out)


@njit(cache=True)
def _plucker(E, r, X):
    """X (6x6) = [[E, 0], [-E skew(r), E]]."""
    for a in range(6):
        for b in range(6):
            X[a, b] = 0.0
    for a in range(3):
        for b in range(3):
            X[a, b] = E[a, b]
            X[3 + a, 3 + b] = E[a, b]
        # row a of -E skew(r):  -(E[a,:] x-matrix) ; skew(r) = [[0,-r2,r1],[r2,0,-r0],[-r1,r0,0]]
        X[3 + a, 0] = -(E[a, 1] * r[2] - E[a, 2] * r[1])
        X[3 + a, 1] = -(-E[a, 0] * r[2] + E[a, 2] * r[0])
        X[3 + a, 2] = -(E[a, 0] * r[1] - E[a, 1] * r[0])


@njit(cache=True)
def _xtix_add(X, Ib, out, tmp):
    """out += X^T Ib X (6x6 congruence, spatial inertia from body to parent coordinates)."""
    for a in range(6):
        for b in range(6):
            s = 0.0
            for k in range(6):
                s += Ib[a, k] * X[k, b]
            tmp[a, b] = s
    for a in range(6):
        for b in range(6):
            s = 0.0
            for k in range(6):
                s += X[k, a] * tmp[k, b]
            out[a, b] += s


@njit(cache=True)
def _matvec6(M, x, out):
    for a in range(6):
        s = 0.0
        for b in range(6):
            s += M[a, b] * x[b]
        out[a] = s


@njit(cache=True)
def _dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@njit(cache=True)
def _crm_add(v, m, out):
    """out += v x m (motion cross product, RBDA eq. 2.31)."""
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    out[0] += w1 * m[2] - w2 * m[1]
    out[1] += w2 * m[0] - w0 * m[2]
    out[2] += w0 * m[1] - w1 * m[0]
    out[3] += w1 * m[5] - w2 * m[4] + u1 * m[2] - u2 * m[1]
    out[4] += w2 * m[3] - w0 * m[5] + u2 * m[0] - u0 * m[2]
    out[5] += w0 * m[4] - w1 * m[3] + u0 * m[1] - u1 * m[0]


@njit(cache=True)
def _crf_add(v, f, out):
    """out += v x* f (force cross product, RBDA eq. 2.32)."""
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    out[0] += w1 * f[2] - w2 * f[1] + u1 * f[5] - u2 * f[4]
    out[1] += w2 * f[0] - w0 * f[2] + u2 * f[3] - u0 * f[5]
    out[2] += w0 * f[1] - w1 * f[0] + u0 * f[4] - u1 * f[3]
    out[3] += w1 * f[5] - w2 * f[4]
    out[4] += w2 * f[3] - w0 * f[5]
    out[5] += w0 * f[4] - w1 * f[3]


# -- joint transforms ---------------------------------------------------------------------------

@njit(cache=True)
def joint_transforms(jtype, qidx, axis, Rt, pt, q, E, r):
    """Fill ``E[i]``, ``r[i]`` (body i relative to its parent) for joint positions ``q``.

    Revolute: ``R = Rt Rot(axis, q)`` (Rodrigues), ``p = pt``; prismatic: ``R = Rt``,
    ``p = pt + Rt axis q``; free: ``p = q[k:k+3]``, ``R`` from the unit quaternion
    ``q[k+3:k+7] = (w, x, y, z)`` (normalised here).  ``E = R^T``, ``r = p``.
    """
    nb = jtype.shape[0]
    Rj = np.empty((3, 3))
    for i in range(nb):
        jt = jtype[i]
        k = qidx[i]
        if jt == REVOLUTE:
            t = q[k]
            c = np.cos(t)
            s = np.sin(t)
            C = 1.0 - c
            x, y, z = axis[i, 0], axis[i, 1], axis[i, 2]
            Rj[0, 0] = c + C * x * x
            Rj[0, 1] = C * x * y - s * z
            Rj[0, 2] = C * x * z + s * y
            Rj[1, 0] = C * y * x + s * z
            Rj[1, 1] = c + C * y * y
            Rj[1, 2] = C * y * z - s * x
            Rj[2, 0] = C * z * x - s * y
            Rj[2, 1] = C * z * y + s * x
            Rj[2, 2] = c + C * z * z
            for a in range(3):
                for b in range(3):
                    E[i, b, a] = Rt[i, a, 0] * Rj[0, b] + Rt[i, a, 1] * Rj[1, b] + Rt[i, a, 2] * Rj[2, b]
                r[i, a] = pt[i, a]
        elif jt == PRISMATIC:
            d = q[k]
            for a in range(3):
                for b in range(3):
                    E[i, b, a] = Rt[i, a, b]
                r[i, a] = pt[i, a] + d * (Rt[i, a, 0] * axis[i, 0] + Rt[i, a, 1] * axis[i, 1]
                                          + Rt[i, a, 2] * axis[i, 2])
        elif jt == FIXED:
            for a in range(3):
                for b in range(3):
                    E[i, b, a] = Rt[i, a, b]
                r[i, a] = pt[i, a]
        else:  # FREE: pose of the base in the world
            w, x, y, z = q[k + 3], q[k + 4], q[k + 5], q[k + 6]
            nrm = np.sqrt(w * w + x * x + y * y + z * z)
            w /= nrm
            x /= nrm
            y /= nrm
            z /= nrm
            R00 = 1 - 2 * (y * y + z * z)
            R01 = 2 * (x * y - w * z)
            R02 = 2 * (x * z + w * y)
            R10 = 2 * (x * y + w * z)
            R11 = 1 - 2 * (x * x + z * z)
            R12 = 2 * (y * z - w * x)
            R20 = 2 * (x * z - w * y)
            R21 = 2 * (y * z + w * x)
            R22 = 1 - 2 * (x * x + y * y)
            E[i, 0, 0], E[i, 0, 1], E[i, 0, 2] = R00, R10, R20
            E[i, 1, 0], E[i, 1, 1], E[i, 1, 2] = R01, R11, R21
            E[i, 2, 0], E[i, 2, 1], E[i, 2, 2] = R02, R12, R22
            r[i, 0], r[i, 1], r[i, 2] = q[k], q[k + 1], q[k + 2]


# -- recursive Newton-Euler (RBDA Table 5.1; Pai-Ascher-Kry eqs. 2-4) -------------------------

@njit(cache=True)
def rnea(parent, jtype, qidx, vidx, axis, S, Rt, pt, inertia, q, qd, qdd, a_root, fext, tau):
    """Inverse dynamics: ``tau = H(q) qdd + C(q, qd) - J^T f_ext`` (generalised forces).

    Outward pass: ``v_i = X_i v_p + S_i qd_i``, ``a_i = X_i a_p + S_i qdd_i + v_i x S_i qd_i``
    with ``a_root = -gravity`` (fictitious base acceleration); ``f_i = I_i a_i + v_i x* I_i v_i
    - fext_i``.  Inward pass: ``tau_i = S_i . f_i``, ``f_p += X_i^T f_i``.  For a free base the
    six generalised forces are the base wrench in base coordinates.
    """
    nb = parent.shape[0]
    E = np.empty((nb, 3, 3))
    r = np.empty((nb, 3))
    joint_transforms(jtype, qidx, axis, Rt, pt, q, E, r)
    v = np.zeros((nb, 6))
    a = np.zeros((nb, 6))
    f = np.zeros((nb, 6))
    sq = np.empty(6)
    tmp = np.empty(6)
    for i in range(nb):
        p = parent[i]
        jt = jtype[i]
        if jt == FREE:
            k = vidx[i]
            _xm(E[i], r[i], a_root, tmp)
            for c in range(6):
                v[i, c] = qd[k + c]
                a[i, c] = qdd[k + c] + tmp[c]
        else:
            if p >= 0:
                _xm(E[i], r[i], v[p], v[i])
                _xm(E[i], r[i], a[p], a[i])
            else:
                _xm(E[i], r[i], a_root, a[i])
            if jt == REVOLUTE or jt == PRISMATIC:
                k = vidx[i]
                for c in range(6):
                    sq[c] = S[i, c] * qd[k]
                    v[i, c] += sq[c]
                    a[i, c] += S[i, c] * qdd[k]
                _crm_add(v[i], sq, a[i])
        _matvec6(inertia[i], a[i], f[i])
        _matvec6(inertia[i], v[i], tmp)
        _crf_add(v[i], tmp, f[i])
        for c in range(6):
            f[i, c] -= fext[i, c]
    for i in range(nb - 1, -1, -1):
        jt = jtype[i]
        if jt == FREE:
            for c in range(6):
                tau[vidx[i] + c] = f[i, c]
        elif jt == REVOLUTE or jt == PRISMATIC:
            tau[vidx[i]] = _dot6(S[i], f[i])
        p = parent[i]
        if p >= 0:
            _xtf_add(E[i], r[i], f[i], f[p])


# -- composite-rigid-body method (RBDA Table 6.2; Pai-Ascher-Kry sec. 4 and footnote 1) -------

@njit(cache=True)
def crba(parent, jtype, qidx, vidx, axis, S, Rt, pt, inertia, q, H):
    """Joint-space inertia ``H`` (nv, nv): composite inertias ``Ic_p += X^T Ic_i X``, then
    ``H_ii = S_i . Ic_i S_i`` and ``H_ij = S_j . (X^T ... X^T Ic_i S_i)`` up the ancestor path."""
    nb = parent.shape[0]
    E = np.empty((nb, 3, 3))
    r = np.empty((nb, 3))
    joint_transforms(jtype, qidx, axis, Rt, pt, q, E, r)
    Ic = inertia.copy()
    X = np.empty((6, 6))
    tmp = np.empty((6, 6))
    for i in range(nb - 1, -1, -1):
        p = parent[i]
        if p >= 0:
            _plucker(E[i], r[i], X)
            _xtix_add(X, Ic[i], Ic[p], tmp)
    for a in range(H.shape[0]):
        for b in range(H.shape[1]):
            H[a, b] = 0.0
    F = np.empty(6)
    G = np.empty(6)
    for i in range(nb):
        jt = jtype[i]
        if jt == FIXED:
            continue
        if jt == FREE:
            k = vidx[i]
            for a in range(6):
                for b in range(6):
                    H[k + a, k + b] = 0.5 * (Ic[i, a, b] + Ic[i, b, a])
            continue
        ki = vidx[i]
        _matvec6(Ic[i], S[i], F)
        H[ki, ki] = _dot6(S[i], F)
        j = i
        while parent[j] >= 0:
            _xtf(E[j], r[j], F, G)
            for c in range(6):
                F[c] = G[c]
            j = parent[j]
            jj = jtype[j]
            if jj == FREE:
                kj = vidx[j]
                for c in range(6):
                    H[ki, kj + c] = F[c]
                    H[kj + c, ki] = F[c]
            elif jj == REVOLUTE or jj == PRISMATIC:
                kj = vidx[j]
                H[ki, kj] = _dot6(S[j], F)
                H[kj, ki] = H[ki, kj]


@njit(cache=True)
def cholesky_solve(H, b, x):
    """Solve ``H x = b`` by ``H = L L^T`` (Cholesky-Banachiewicz, no pivoting).

    Returns False (and leaves ``x`` undefined) if a pivot is not positive, i.e. ``H`` is not
    numerically positive definite.
    """
    n = H.shape[0]
    L = np.zeros((n, n))
    for j in range(n):
        s = H[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return False
        d = np.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, n):
            t = H[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / d
    for i in range(n):
        t = b[i]
        for k in range(i):
            t -= L[i, k] * x[k]
        x[i] = t / L[i, i]
    for i in range(n - 1, -1, -1):
        t = x[i]
        for k in range(i + 1, n):
            t -= L[k, i] * x[k]
        x[i] = t / L[i, i]
    return True


@njit(cache=True)
def fd_crb(parent, jtype, qidx, vidx, axis, S, Rt, pt, inertia, q, qd, tau, a_root, fext, qdd):
    """CRBM forward dynamics: ``C = RNEA(q, qd, 0)``, ``H = CRBA(q)``, ``qdd = H^{-1}(tau - C)``
    by Cholesky.  Returns False if ``H`` is not numerically positive definite."""
    n = qd.shape[0]
    C = np.empty(n)
    zero = np.zeros(n)
    rnea(parent, jtype, qidx, vidx, axis, S, Rt, pt, inertia, q, qd, zero, a_root, fext, C)
    H = np.empty((n, n))
    crba(parent, jtype, qidx, vidx, axis, S, Rt, pt, inertia, q, H)
    rhs = tau - C
    return cholesky_solve(H, rhs, qdd)


# -- articulated-body method (RBDA Table 7.1; Pai-Ascher-Kry sec. 5) and modified ABM (sec. 7) --

@njit(cache=True)
def abm_velocity(parent, jtype, vidx, S, E, r, inertia, qd, fext, v, c, pA):
    """Outward pass: body velocities ``v``, velocity-product accelerations ``c_i = v_i x S_i qd_i``
    and rigid-body bias forces ``pA_i = v_i x* I_i v_i - fext_i``."""
    nb = parent.shape[0]
    sq = np.empty(6)
    tmp = np.empty(6)
    for i in range(nb):
        p = parent[i]
        jt = jtype[i]
        for k in range(6):
            c[i, k] = 0.0
        if jt == FREE:
            for k in range(6):
                v[i, k] = qd[vidx[i] + k]
        else:
            if p >= 0:
                _xm(E[i], r[i], v[p], v[i])
            else:
                for k in range(6):
                    v[i, k] = 0.0
            if jt == REVOLUTE or jt == PRISMATIC:
                kk = vidx[i]
                for k in range(6):
                    sq[k] = S[i, k] * qd[kk]
                    v[i, k] += sq[k]
                _crm_add(v[i], sq, c[i])
        _matvec6(inertia[i], v[i], tmp)
        for k in range(6):
            pA[i, k] = -fext[i, k]
        _crf_add(v[i], tmp, pA[i])


@njit(cache=True)
def abm_factor(parent, jtype, S, E, r, inertia, modified, IA, Ia, U, D):
    """Inward pass over inertias (depends on q only): articulated inertias ``IA_i``, their
    projections ``Ia_i = IA_i - U_i U_i^T / D_i`` passed to the parent, ``U_i = IA_i S_i`` and the
    pivots ``D_i = S_i . U_i`` (Pai-Ascher-Kry's ``D_k = H_k^T M^_k H_k``).

    ``IA_i = I_i + A~_i`` where ``A~_i = sum_children X^T Ia_c X`` (the projected inertia of the
    subtree, rank deficient).  Standard ABM: ``U = (I + A~) S``, ``D = S . U``.  Modified ABM
    (``modified=True``, Pai-Ascher-Kry sec. 7): ``U = I S + A~ S`` and the pivot
    ``D = S.(I S) + S.(A~ S)``, so the body's own (small) inertia is never rounded away inside
    ``I + A~`` before the quadratic form is taken.

    The projection is formed as ``Ia = P^T IA P`` with ``P = 1 - S w^T``, ``w = U / D``
    (``M = IA - U w^T``, ``Ia = M - w (S^T M)``), which makes ``Ia S = 0`` hold exactly when
    ``S`` is a coordinate axis: no cancellation noise is passed up the tree.  ``Ia`` is then
    symmetrised.
    """
    nb = parent.shape[0]
    At = np.zeros((nb, 6, 6))
    X = np.empty((6, 6))
    tmp = np.empty((6, 6))
    Mm = np.empty((6, 6))
    us = np.empty(6)
    ua = np.empty(6)
    w = np.empty(6)
    sm = np.empty(6)
    for i in range(nb - 1, -1, -1):
        jt = jtype[i]
        for a in range(6):
            for b in range(6):
                IA[i, a, b] = inertia[i, a, b] + At[i, a, b]
        if jt == REVOLUTE or jt == PRISMATIC:
            s = S[i]
            if modified:
                _matvec6(inertia[i], s, us)
                _matvec6(At[i], s, ua)
                for a in range(6):
                    U[i, a] = us[a] + ua[a]
                D[i] = _dot6(s, us) + _dot6(s, ua)
            else:
                _matvec6(IA[i], s, us)
                for a in range(6):
                    U[i, a] = us[a]
                D[i] = _dot6(s, us)
            for a in range(6):
                w[a] = U[i, a] / D[i]
            for a in range(6):
                for b in range(6):
                    Mm[a, b] = IA[i, a, b] - U[i, a] * w[b]
            for b in range(6):
                t = 0.0
                for a in range(6):
                    t += s[a] * Mm[a, b]
                sm[b] = t
            for a in range(6):
                for b in range(6):
                    Mm[a, b] = Mm[a, b] - w[a] * sm[b]
            for a in range(6):
                for b in range(6):
                    Ia[i, a, b] = 0.5 * (Mm[a, b] + Mm[b, a])
        else:
            for a in range(6):
                U[i, a] = 0.0
                for b in range(6):
                    Ia[i, a, b] = IA[i, a, b]
            D[i] = 1.0
        p = parent[i]
        if p >= 0:
            _plucker(E[i], r[i], X)
            _xtix_add(X, Ia[i], At[p], tmp)


@njit(cache=True)
def _spd_solve6(A, b, x):
    """Solve the 6x6 SPD system A x = b (Cholesky); False if A is not positive definite."""
    return cholesky_solve(A, b, x)


@njit(cache=True)
def abm_solve(parent, jtype, vidx, S, E, r, IA, Ia, U, D, c, pA_in, tau, a_root, qdd):
    """Bias-force inward pass and acceleration outward pass of the ABM for one right-hand side.

    ``u_i = tau_i - S_i . pA_i``; ``pa_i = pA_i + Ia_i c_i + U_i u_i / D_i``; ``pA_p += X^T pa_i``;
    then ``a'_i = X_i a_p + c_i``, ``qdd_i = (u_i - U_i . a'_i) / D_i``, ``a_i = a'_i + S_i qdd_i``
    (RBDA Table 7.1; the right-hand-side update of Pai-Ascher-Kry sec. 5).  A free root solves
    ``IA_0 a_0 = tau_0 - pA_0`` (RBDA sec. 9.3).  Returns False if that 6x6 solve fails.
    """
    nb = parent.shape[0]
    pA = pA_in.copy()
    u = np.zeros(nb)
    a = np.zeros((nb, 6))
    pa = np.empty(6)
    tmp = np.empty(6)
    for i in range(nb - 1, -1, -1):
        jt = jtype[i]
        _matvec6(Ia[i], c[i], tmp)
        for k in range(6):
            pa[k] = pA[i, k] + tmp[k]
        if jt == REVOLUTE or jt == PRISMATIC:
            u[i] = tau[vidx[i]] - _dot6(S[i], pA[i])
            g = u[i] / D[i]
            for k in range(6):
                pa[k] += U[i, k] * g
        p = parent[i]
        if p >= 0:
            _xtf_add(E[i], r[i], pa, pA[p])
    ok = True
    for i in range(nb):
        p = parent[i]
        jt = jtype[i]
        if p >= 0:
            _xm(E[i], r[i], a[p], a[i])
        else:
            _xm(E[i], r[i], a_root, a[i])
        if jt == FREE:
            k0 = vidx[i]
            rhs = np.empty(6)
            sol = np.empty(6)
            for k in range(6):
                rhs[k] = tau[k0 + k] - pA[i, k]
            ok = _spd_solve6(IA[i], rhs, sol)
            for k in range(6):
                qdd[k0 + k] = sol[k] - a[i, k]
                a[i, k] = sol[k]
            continue
        for k in range(6):
            a[i, k] += c[i, k]
        if jt == REVOLUTE or jt == PRISMATIC:
            x = (u[i] - _dot6(U[i], a[i])) / D[i]
            qdd[vidx[i]] = x
            for k in range(6):
                a[i, k] += S[i, k] * x
    return ok


@njit(cache=True)
def fd_abm(parent, jtype, qidx, vidx, axis, S, Rt, pt, inertia, q, qd, tau, a_root, fext, modified, qdd):
    """ABM (or modified ABM) forward dynamics in O(nb): velocity pass, factor pass, solve pass."""
    nb = parent.shape[0]
    E = np.empty((nb, 3, 3))
    r = np.empty((nb, 3))
    joint_transforms(jtype, qidx, axis, Rt, pt, q, E, r)
    v = np.empty((nb, 6))
    c = np.empty((nb, 6))
    pA = np.empty((nb, 6))
    abm_velocity(parent, jtype, vidx, S, E, r, inertia, qd, fext, v, c, pA)
    IA = np.empty((nb, 6, 6))
    Ia = np.empty((nb, 6, 6))
    U = np.empty((nb, 6))
    D = np.empty(nb)
    abm_factor(parent, jtype, S, E, r, inertia, modified, IA, Ia, U, D)
    return abm_solve(parent, jtype, vidx, S, E, r, IA, Ia, U, D, c, pA, tau, a_root, qdd)


@njit(cache=True)
def body_velocities(parent, jtype, qidx, vidx, axis, S, Rt, pt, q, qd, v):
    """Spatial velocities (nb, 6) of the bodies in body coordinates."""
    nb = parent.shape[0]
    E = np.empty((nb, 3, 3))
    r = np.empty((nb, 3))
    joint_transforms(jtype, qidx, axis, Rt, pt, q, E, r)
    for i in range(nb):
        p = parent[i]
        jt = jtype[i]
        if jt == FREE:
            for k in range(6):
                v[i, k] = qd[vidx[i] + k]
            continue
        if p >= 0:
            _xm(E[i], r[i], v[p], v[i])
        else:
            for k in range(6):
                v[i, k] = 0.0
        if jt == REVOLUTE or jt == PRISMATIC:
            for k in range(6):
                v[i, k] += S[i, k] * qd[vidx[i]]


@njit(cache=True)
def fd_abm_multi(parent, jtype, qidx, vidx, axis, S, Rt, pt, inertia, q, qd, tau, a_root, fext, modified, B,
                 qdd, Y):
    """``qdd = H^{-1}(tau - C)`` and ``Y = H^{-1} B`` (columns of B are pure generalised forces)
    sharing one velocity and one factor pass; each extra column costs one O(nb) solve pass."""
    nb = parent.shape[0]
    E = np.empty((nb, 3, 3))
    r = np.empty((nb, 3))
    joint_transforms(jtype, qidx, axis, Rt, pt, q, E, r)
    v = np.empty((nb, 6))
    c = np.empty((nb, 6))
    pA = np.empty((nb, 6))
    abm_velocity(parent, jtype, vidx, S, E, r, inertia, qd, fext, v, c, pA)
    IA = np.empty((nb, 6, 6))
    Ia = np.empty((nb, 6, 6))
    U = np.empty((nb, 6))
    D = np.empty(nb)
    abm_factor(parent, jtype, S, E, r, inertia, modified, IA, Ia, U, D)
    ok = abm_solve(parent, jtype, vidx, S, E, r, IA, Ia, U, D, c, pA, tau, a_root, qdd)
    zc = np.zeros((nb, 6))
    z6 = np.zeros(6)
    col = np.empty(B.shape[0])
    out = np.empty(B.shape[0])
    for m in range(B.shape[1]):
        for k in range(B.shape[0]):
            col[k] = B[k, m]
        ok = abm_solve(parent, jtype, vidx, S, E, r, IA, Ia, U, D, zc, zc, col, z6, out) and ok
        for k in range(B.shape[0]):
            Y[k, m] = out[k]
    return ok

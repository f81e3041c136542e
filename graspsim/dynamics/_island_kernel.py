"""Compiled step 10 for one island (numba, compiled lazily, cached on disk).

The same algebra as :mod:`graspsim.dynamics.island` (which stays the readable reference and is
used when a caller supplies its own LCP solver), in one compiled call: dense island Jacobians from
the constraint rows, elimination of the equality rows through a Cholesky factor of
``A = J^T M^-1 J + C`` (eq. 17, 20), the pure LCP of eq. (21) with the friction-cone rows of eq. (5-6),
Lemke (the project's compiled kernel, with the same robustness retries as :func:`graspsim.lcp.lemke`),
the contact-compliance retries, back-substitution and the post-stabilisation projection.

Matrices are stored transposed (one row per constraint, ``(rows, 6 nb)``, C order) so every product
is a contiguous BLAS call.  No function here is compiled at import time of :mod:`graspsim`.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..lcp._kernel import solve as _lemke_solve

# status codes returned to the simulator
OK = 0
LCP_FAILED = 1


@njit(cache=True)
def _rows_dense(local, bodies, jac, rows, nv):
    """(len(rows), nv): the island-local Jacobian of each listed row (static bodies drop out)."""
    out = np.zeros((rows.shape[0], nv))
    K = bodies.shape[1]
    for c in range(rows.shape[0]):
        r = rows[c]
        for k in range(K):
            b = bodies[r, k]
            if b >= 0:
                lb = local[b]
                if lb >= 0:
                    for j in range(6):
                        out[c, 6 * lb + j] += jac[r, k, j]
    return out


@njit(cache=True)
def _times_minv(Jt, Minv):
    """(J^T M^-1) for row-stored J^T (m, 6 nb) and block-diagonal symmetric M^-1 (nb, 6, 6)."""
    m = Jt.shape[0]
    out = np.zeros_like(Jt)
    for b in range(Minv.shape[0]):
        for r in range(m):
            for i in range(6):
                s = 0.0
                for j in range(6):
                    s += Jt[r, 6 * b + j] * Minv[b, j, i]
                out[r, 6 * b + i] = s
    return out


@njit(cache=True)
def _chol_inv(A):
    """Inverse of the lower Cholesky factor of SPD ``A`` (small); ok=False if not positive definite."""
    n = A.shape[0]
    L = np.zeros((n, n))
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not (s > 0.0):
            return L, False
        d = np.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, n):
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / d
    Li = np.zeros((n, n))
    for j in range(n):
        Li[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, n):
            t = 0.0
            for k in range(j, i):
                t -= L[i, k] * Li[k, j]
            Li[i, j] = t / L[i, i]
    return Li, True


@njit(cache=True)
def _factor(A):
    """L^-1 of A; a tiny diagonal (1e-12 of the largest entry) when redundant rows make A singular."""
    Li, ok = _chol_inv(A)
    if not ok:
        B = A.copy()
        big = max(1.0, np.abs(A).max())
        for i in range(A.shape[0]):
            B[i, i] += 1e-12 * big
        Li, ok = _chol_inv(B)
    return Li, ok


@njit(cache=True)
def _lemke(M, q, warm, use_warm, z, w, zb, cert):
    """The retries of :func:`graspsim.lcp.lemke`: as asked, then robust, then with the scaling
    switched; a shared pivot budget.  Returns (status code, pivots)."""
    n = q.shape[0]
    budget_total = max(50 * n, 200)
    pivots = 0
    code = 3
    for attempt in range(3):
        budget = budget_total - pivots
        if budget < 1:
            break
        sc = attempt < 2
        code, piv, res, has_cert, nr = _lemke_solve(M, q, np.empty(0), warm, use_warm and attempt == 0,
                                                    budget, 1e-9, sc, attempt > 0, z, w, zb, cert)
        pivots += piv
        if code == 0 or code == 2 or (code == 1 and has_cert):
            break
    return code, pivots


@njit(cache=True)
def solve_island(local, Minv, aM, bodies, jac, rhs, comp, eq_rows, n_hard, lim_rows, nrm_rows, fr_rows,
                 mu, u, compliance, first_level, max_tries, warm, use_warm, hard_err, project,
                 v_out, ce_out, z_out, basis_out, dx_out):
    """Solve one island (see module docstring).  ``local`` maps dynamic slots to island bodies (-1:
    not in the island); ``Minv`` (nb, 6, 6) and ``aM`` (6 nb,) = M^-1 (M v + h k) are the island's.
    Row index arrays select the island's rows of the concatenated row block: equality rows (hard
    first, ``n_hard`` of them, then soft with compliance ``comp``), joint limits, contact normals and
    friction rows (``u`` per contact, contact-major).  Outputs are written into the ``*_out`` arrays
    (``z_out``/``basis_out`` sized to the LCP).  Returns (status, lcp size, pivots, level used)."""
    nv = aM.shape[0]
    ne = eq_rows.shape[0]
    # eliminate the equality rows (eq. 17 and the first two block rows of eq. 20)
    Jt = _rows_dense(local, bodies, jac, eq_rows, nv)
    Wt = _times_minv(Jt, Minv)                       # (M^-1 J)^T
    Li = np.zeros((0, 0))
    c_free = np.zeros(ne)
    v_free = aM.copy()
    if ne:
        A = Jt @ Wt.T
        for i in range(ne):
            A[i, i] += comp[eq_rows[i]]
        Li, ok = _factor(A)
        r = np.empty(ne)
        Ja = Jt @ aM
        for i in range(ne):
            r[i] = rhs[eq_rows[i]] - Ja[i]
        c_free = Li.T @ (Li @ r)
        v_free += Wt.T @ c_free
    nl = lim_rows.shape[0] + nrm_rows.shape[0]
    nfr = fr_rows.shape[0]
    nc = nrm_rows.shape[0]
    m = 0
    pivots = 0
    level = 0
    status = OK
    if nl == 0:
        v_out[:] = v_free
        ce_out[:] = c_free
    else:
        rows = np.concatenate((lim_rows, nrm_rows, fr_rows))
        nh = nl + nfr
        Ht = _rows_dense(local, bodies, jac, rows, nv)
        Yt = _times_minv(Ht, Minv)                   # (M^-1 H)^T
        G = Ht @ Yt.T
        if ne:
            WH = Wt @ Ht.T                           # J^T M^-1 H  (ne, nh)
            X = Li @ WH
            G -= X.T @ X
        m = nh + (nc if nfr else 0)
        Mlcp = np.zeros((m, m))
        Mlcp[:nh, :nh] = G
        qlcp = np.zeros(m)
        Hv = Ht @ v_free
        for i in range(nh):
            qlcp[i] = Hv[i] + (rhs[rows[i]] if i < nl else 0.0)
        nlim = lim_rows.shape[0]
        if nfr:
            # friction cone rows (eq. 5, 6): sigma = D^T v + E lambda, zeta = mu c_n - E^T beta
            for i in range(nc):
                for d in range(u):
                    Mlcp[nl + i * u + d, nh + i] = 1.0
                    Mlcp[nh + i, nl + i * u + d] = -1.0
                Mlcp[nh + i, nlim + i] = mu[i]
        # contact compliance relative to the mean diagonal of G's contact rows (see island.py)
        dg = 0.0
        for i in range(nlim, nh):
            dg += G[i, i]
        dg = dg / (nh - nlim) if nh > nlim else 0.0
        scale = 1.0
        for i in range(nh):
            scale = max(scale, abs(G[i, i]))
        zb = np.zeros(m, dtype=np.bool_)
        w = np.empty(m)
        cert = np.empty(m)
        z = np.zeros(m)
        status = LCP_FAILED
        ntry = max_tries + 1
        for attempt in range(min(first_level, ntry - 1), ntry):
            k = min(attempt, max_tries - 1)
            cfm = compliance * 100.0 ** k
            reg = 1e-8 * scale if attempt == max_tries else 0.0
            Mt = Mlcp.copy()
            if cfm > 0:
                for i in range(nlim, nh):
                    Mt[i, i] += cfm * dg
            if reg > 0:
                for i in range(m):
                    Mt[i, i] += reg
            uw = use_warm and attempt == 0 and warm.shape[0] == m
            code, piv = _lemke(Mt, qlcp, warm if uw else zb, uw, z, w, zb, cert)
            pivots += piv
            level = attempt
            if code == 0:
                status = OK
                break
        if status == OK:
            Hz = Ht.T @ z[:nh]
            dv = Yt.T @ z[:nh]                       # M^-1 H z
            ce = c_free.copy()
            if ne:
                c_extra = -(Li.T @ (Li @ (Wt @ Hz)))
                dv += Wt.T @ c_extra
                ce += c_extra
            v_out[:] = v_free + dv
            ce_out[:] = ce
            z_out[:m] = z
            basis_out[:m] = zb
    # post-stabilisation: the smallest mass-weighted displacement removing the hard joint errors
    dx_out[:] = 0.0
    if status == OK and project and n_hard:
        big = 0.0
        for i in range(n_hard):
            big = max(big, abs(hard_err[i]))
        if big > 1e-13:
            Jh = Jt[:n_hard]
            Wh = Wt[:n_hard]
            A = Jh @ Wh.T
            big = max(1.0, np.abs(A).max())
            for i in range(n_hard):
                A[i, i] += 1e-12 * big
            Lh, ok = _chol_inv(A)
            if ok:
                dx_out[:] = Wh.T @ (Lh.T @ (Lh @ (-hard_err)))
    return status, m, pivots, level

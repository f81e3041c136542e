"""Compiled step 10 for one island (numba, compiled lazily, cached on disk).

The same algebra as :mod:`graspsim.dynamics.island` (which stays the readable reference and is
used when a caller supplies its own LCP solver), in one compiled call: dense island Jacobians from
the constraint rows, elimination of the equality rows through a Cholesky factor of
``A = J^T M^-1 J + C`` (eq. 17, 20), the pure LCP of eq. (21) with the friction-cone rows of eq. (5-6)
(in an island with equality rows the contact rows' block is computed on a contact's normal and two
of its u friction rows, and expanded: the others are combinations of those two),
Lemke (the project's compiled kernel, with the same robustness retries as :func:`graspsim.lcp.lemke`),
the contact-compliance retries, back-substitution and the post-stabilisation projection.

Matrices are stored transposed (one row per constraint, ``(rows, 6 nb)``, C order) so every product
is a contiguous BLAS call.  No function here is compiled at import time of :mod:`graspsim`.
"""
from __future__ import annotations

import numpy as np
from .._borrow import borrow
from .._jit import njit

from ..lcp._kernel import solve_retries as _lemke

# status codes returned to the simulator
OK = 0
LCP_FAILED = 1


@njit(cache=True)
def _entries(local, bodies, jac, rows):
    """The listed rows in compact form: per row up to K entries (island body, 6-vector), entries
    of the same body merged.  Returns (cb, cj, cnt)."""
    n = rows.shape[0]
    K = bodies.shape[1]
    cb = np.empty((n, K), np.int64)  # (a loop, not np.ones/np.full: a library function fewer to compile)
    for i in range(n):
        for j in range(K):
            cb[i, j] = -1
    cj = np.zeros((n, K, 6))
    cnt = np.zeros(n, np.int64)
    for c in range(n):
        r = rows[c]
        for k in range(K):
            b = bodies[r, k]
            if b < 0:
                continue
            lb = local[b]
            if lb < 0:
                continue
            e = -1
            for x in range(cnt[c]):
                if cb[c, x] == lb:
                    e = x
                    break
            if e < 0:
                e = cnt[c]
                cb[c, e] = lb
                cnt[c] += 1
            for j in range(6):
                cj[c, e, j] += jac[r, k, j]
    return cb, cj, cnt


@njit(cache=True)
def _compact(local, bodies, jac, rows, Minv):
    """:func:`_entries`, and M^-1 times each entry.  Returns (cb, cj, cw, cnt)."""
    cb, cj, cnt = _entries(local, bodies, jac, rows)
    cw = np.zeros(cj.shape)
    for c in range(rows.shape[0]):
        for e in range(cnt[c]):
            lb = cb[c, e]
            for i in range(6):
                t = 0.0
                for j in range(6):
                    t += Minv[lb, i, j] * cj[c, e, j]
                cw[c, e, i] = t
    return cb, cj, cw, cnt


@njit(cache=True)
def _row_order(local, bodies, rows):
    """Order of the equality rows by their last island body (then as given): rows of one finger or
    chain end up together, so A = J^T M^-1 J is nearly block diagonal and its envelope small."""
    n = rows.shape[0]
    key = np.empty(n, np.int64)
    top = 0
    for c in range(n):
        mx = 0
        for k in range(bodies.shape[1]):
            b = bodies[rows[c], k]
            if b >= 0 and local[b] >= 0:
                mx = max(mx, local[b])
        key[c] = mx
        top = max(top, mx)
    # stable counting sort by body: the argsort of (body, row); no library sort to compile
    start = np.zeros(top + 2, np.int64)
    for c in range(n):
        start[key[c] + 1] += 1
    for b in range(top + 1):
        start[b + 1] += start[b]
    order = np.empty(n, np.int64)
    for c in range(n):
        order[start[key[c]]] = c
        start[key[c]] += 1
    return order


@njit(cache=True)
def _by_body(cb, cnt, nb):
    """For each island body the (row, entry) pairs that touch it: CSR arrays (start, row, entry)."""
    start = np.zeros(nb + 1, np.int64)
    for c in range(cb.shape[0]):
        for e in range(cnt[c]):
            start[cb[c, e] + 1] += 1
    for b in range(nb):
        start[b + 1] += start[b]
    fill = start[:-1].copy()
    rr = np.empty(start[nb], np.int64)
    ee = np.empty(start[nb], np.int64)
    for c in range(cb.shape[0]):
        for e in range(cnt[c]):
            b = cb[c, e]
            rr[fill[b]] = c
            ee[fill[b]] = e
            fill[b] += 1
    return start, rr, ee


@njit(cache=True)
def _product(nb, sA, rA, eA, cjA, sB, rB, eB, cwB, nA, nB):
    """(nA, nB) matrix A^T M^-1 B from the compact rows, summing over shared bodies only: per body,
    one small dense product (BLAS) of the rows touching it, scattered into the result.  The
    per-body blocks live in three buffers sized for the largest body (one allocation each, not
    three per body)."""
    out = np.zeros((nA, nB))
    ma = 0
    mb = 0
    for b in range(nb):
        ma = max(ma, sA[b + 1] - sA[b])
        mb = max(mb, sB[b + 1] - sB[b])
    JAbuf = np.empty((ma, 6))
    WBbuf = np.empty((mb, 6))
    Pbuf = np.empty(ma * mb)
    for b in range(nb):
        na = sA[b + 1] - sA[b]
        nbb = sB[b + 1] - sB[b]
        if na == 0 or nbb == 0:
            continue
        JA = JAbuf[:na]
        WB = WBbuf[:nbb]
        for x in range(na):
            a, k = rA[sA[b] + x], eA[sA[b] + x]
            for j in range(6):
                JA[x, j] = cjA[a, k, j]
        for y in range(nbb):
            c, l = rB[sB[b] + y], eB[sB[b] + y]
            for j in range(6):
                WB[y, j] = cwB[c, l, j]
        P = Pbuf[:na * nbb].reshape((na, nbb))
        np.dot(JA, WB.T, P)
        for x in range(na):
            a = rA[sA[b] + x]
            for y in range(nbb):
                out[a, rB[sB[b] + y]] += P[x, y]
    return out


@njit(cache=True)
def _env_chol(A):
    """Cholesky factor L of SPD ``A`` within A's envelope (row i's first nonzero f[i]: constraint
    rows of different fingers or bodies do not couple, so most of L is never touched).
    Returns (L, f, ok)."""
    n = A.shape[0]
    f = np.empty(n, np.int64)
    for i in range(n):
        f[i] = i
        for j in range(i):
            if A[i, j] != 0.0:
                f[i] = j
                break
    L = np.zeros((n, n))
    for i in range(n):
        fi = f[i]
        for j in range(fi, i):
            t = A[i, j]
            for k in range(max(fi, f[j]), j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / L[j, j]
        d = A[i, i]
        for k in range(fi, i):
            d -= L[i, k] * L[i, k]
        if not (d > 0.0):
            return L, f, False
        L[i, i] = np.sqrt(d)
    return L, f, True


@njit(cache=True)
def _abs_max(A):
    """``max(1.0, np.abs(A).max())`` (NaN propagating like numpy's max) as a loop: the numpy
    expression compiles two more library kernels on the first run."""
    m = -np.inf
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            a = abs(A[i, j])
            if a != a:
                return max(1.0, a)
            if a > m:
                m = a
    return max(1.0, m)


@njit(cache=True)
def _factor(A):
    """Envelope Cholesky of A; a tiny diagonal (1e-12 of the largest entry) when redundant rows
    make A singular (e.g. a closed loop of fixed joints)."""
    L, f, ok = _env_chol(A)
    if not ok:
        B = A.copy()
        big = _abs_max(A)
        for i in range(A.shape[0]):
            B[i, i] += 1e-12 * big
        L, f, ok = _env_chol(B)
    return L, f, ok


@njit(cache=True)
def _forward(L, f, y):
    """y <- L^-1 y (in place); rows whose envelope lies beyond y's last nonzero stay zero."""
    last = -1
    for i in range(y.shape[0]):
        t = y[i]
        if t == 0.0 and f[i] > last:
            continue
        for k in range(f[i], i):
            t -= L[i, k] * y[k]
        y[i] = t / L[i, i]
        if y[i] != 0.0:
            last = i


@njit(cache=True)
def _backward(L, f, y):
    """y <- L^-T y (in place)."""
    for i in range(y.shape[0] - 1, -1, -1):
        y[i] /= L[i, i]
        xi = y[i]
        for k in range(f[i], i):
            y[k] -= L[i, k] * xi


@njit(cache=True)
def _solve(L, f, b):
    y = b.copy()
    _forward(L, f, y)
    _backward(L, f, y)
    return y


@njit(cache=True)
def _rows_times(cb, cj, cnt, x):
    """J^T x: each compact row's value at the island velocity vector x (6 nb,)."""
    n = cb.shape[0]
    out = np.zeros(n)
    for c in range(n):
        t = 0.0
        for e in range(cnt[c]):
            o = 6 * cb[c, e]
            for j in range(6):
                t += cj[c, e, j] * x[o + j]
        out[c] = t
    return out


@njit(cache=True)
def _add_weighted(cb, cw, cnt, coef, x):
    """x += M^-1 J coef (sum of each row's M^-1 entry times its coefficient)."""
    for c in range(cb.shape[0]):
        a = coef[c]
        if a == 0.0:
            continue
        for e in range(cnt[c]):
            o = 6 * cb[c, e]
            for j in range(6):
                x[o + j] += a * cw[c, e, j]


@njit(cache=True)
def _friction_basis(nl, nc, u):
    """The LCP rows (``nl`` limit and normal rows, then ``u`` friction rows per contact) as
    combinations of base rows.  Friction row e of a contact reads d_e = cos(t_e) t1 + sin(t_e) t2
    with t_e = 2 pi e / u (``_rows_kernel.contact_rows``), so every one is a combination of two of
    them: d_0 = t1 and the d_k farthest from it (t_k = pi/2 when 4 divides u).  Row i is
    ``ca[i] base[pa[i]] + cb[i] base[pb[i]]`` (base rows themselves: 1 and 0).  Returns
    (base: positions of the base rows, ca, cb, pa, pb); with u = 2 one base row per contact."""
    # the coefficients of direction e (the same for every contact)
    cs = np.empty(u)
    sn = np.empty(u)
    k = 0
    best = 0.0
    for e in range(u):
        ang = 2.0 * np.pi * e / u
        cs[e], sn[e] = np.cos(ang), np.sin(ang)
        if abs(sn[e]) > best + 1e-12:
            k, best = e, abs(sn[e])
    two = best > 0.5
    ce_ = np.ones(u)
    cf_ = np.zeros(u)
    for e in range(1, u):
        if not two:
            ce_[e] = cs[e]
        elif e != k:
            ce_[e] = cs[e] - sn[e] * cs[k] / sn[k]
            cf_[e] = sn[e] / sn[k]
    per = 2 if two else 1
    nbse = nl + per * nc
    nh = nl + u * nc
    base = np.empty(nbse, np.int64)
    ca = np.ones(nh)
    cb = np.zeros(nh)
    pa = np.empty(nh, np.int64)
    pb = np.empty(nh, np.int64)
    for i in range(nl):
        base[i] = i
        pa[i] = i
        pb[i] = i
    for c in range(nc):
        b0 = nl + per * c
        base[b0] = nl + c * u
        if two:
            base[b0 + 1] = nl + c * u + k
        for e in range(u):
            i = nl + c * u + e
            ca[i], cb[i] = ce_[e], cf_[e]
            pa[i] = b0 + 1 if two and e == k else b0
            pb[i] = b0 + 1 if two and e != 0 else b0
    return base, ca, cb, pa, pb


@njit(cache=True)
def _expand(Gb, ca, cb, pa, pb):
    """G = B Gb B^T for rows ``ca[i] base[pa[i]] + cb[i] base[pb[i]]`` (:func:`_friction_basis`):
    columns first, then rows; a base row's entries are copied exactly."""
    nb = Gb.shape[0]
    nh = ca.shape[0]
    E = np.empty((nb, nh))
    for x in range(nb):
        for j in range(nh):
            if cb[j] == 0.0:
                E[x, j] = ca[j] * Gb[x, pa[j]]
            else:
                E[x, j] = ca[j] * Gb[x, pa[j]] + cb[j] * Gb[x, pb[j]]
    G = np.empty((nh, nh))
    for i in range(nh):
        ea = pa[i]
        a = ca[i]
        if cb[i] == 0.0:
            for j in range(nh):
                G[i, j] = a * E[ea, j]
        else:
            eb = pb[i]
            b = cb[i]
            for j in range(nh):
                G[i, j] = a * E[ea, j] + b * E[eb, j]
    return G


@njit(cache=True)
def _elimination_term(nbi, hs, hr, he, hw, ne, es, er, ee, ej, L, fL):
    """What the equality rows (eliminated through A = L L^T, eq. 20) take from the LCP block
    H^T M^-1 H of the (compact) rows H (their M^-1 entries ``hw``, by body ``hs, hr, he``):
    Y^T Y with Y = L^-1 J^T M^-1 H, symmetric (nh, nh)."""
    nh = hw.shape[0]
    X0 = _product(nbi, es, er, ee, ej, hs, hr, he, hw, ne, nh)  # J^T M^-1 H
    # Work on X's columns reordered by their first nonzero row (stable): the contact rows of
    # one finger become adjacent, so each row's nonzeros span a short range.  Per entry the
    # arithmetic is the same in any column order.
    first = np.empty(nh, np.int64)
    for c in range(nh):
        first[c] = ne
    for i in range(ne - 1, -1, -1):
        for c in range(nh):
            if X0[i, c] != 0.0:
                first[c] = i
    cstart = np.zeros(ne + 2, np.int64)
    for c in range(nh):
        cstart[first[c] + 1] += 1
    for i in range(ne + 1):
        cstart[i + 1] += cstart[i]
    P = np.empty(nh, np.int64)              # position -> column of X
    for c in range(nh):
        P[cstart[first[c]]] = c
        cstart[first[c]] += 1
    X = np.empty((ne, nh))
    for i in range(ne):
        for p in range(nh):
            X[i, p] = X0[i, P[p]]
    # Y = L^-1 X by rows (row i -= L_ik row k over the envelope: contiguous, vectorised;
    # per entry the operations of a column-wise forward substitution, in the same order).
    # [clo_i, chi_i) bounds row i's nonzeros (X's, and those of the rows of its envelope):
    # outside it the entries stay exactly zero, so it is all the work there is.
    clo = np.empty(ne, np.int64)
    chi = np.empty(ne, np.int64)
    for i in range(ne):
        lo_, hi_ = nh, 0
        for c in range(nh):
            if X[i, c] != 0.0:
                lo_ = min(lo_, c)
                hi_ = c + 1
        for k in range(fL[i], i):
            lo_ = min(lo_, clo[k])
            hi_ = max(hi_, chi[k])
        clo[i], chi[i] = lo_, hi_
        for k in range(fL[i], i):
            lik = L[i, k]
            for c in range(clo[k], chi[k]):
                X[i, c] -= lik * X[k, c]
        d = L[i, i]
        for c in range(lo_, hi_):
            X[i, c] /= d
    # Y^T Y: S_ac = sum_i Y_ia Y_ic summed in i order from zero over row i's range (the zero
    # products a dense sum adds change nothing), then put at the original places
    S = np.zeros((nh, nh))
    for i in range(ne):
        for a in range(clo[i], chi[i]):
            ya = X[i, a]
            if ya == 0.0:
                continue
            for c in range(a, chi[i]):
                S[a, c] += ya * X[i, c]
    out = np.empty((nh, nh))
    for a in range(nh):
        ga = P[a]
        for c in range(a, nh):
            t = S[a, c]
            gc = P[c]
            out[ga, gc] = t
            out[gc, ga] = t
    return out


@njit(cache=True)
def _lcp_solve(G, Hv, rhs, rows, nl, nh, nlim, nc, nfr, mu, u, compliance, first_level, max_tries, warm,
               use_warm):
    """The pure LCP of eq. (21) on the block ``G`` (nh, nh) of an island's limit, normal and
    friction rows (``rows``; ``nlim`` limits, ``nl`` limits and normals), with the friction-cone
    rows of eq. (5-6) and the contact-compliance levels, solved by Lemke from the warm guess:
    ``Hv`` the rows' velocities without their impulses, ``rhs`` the right-hand sides.  Returns
    (status, LCP size m, pivots, level used, z (m,), basis (m,))."""
    status = LCP_FAILED
    pivots = 0
    level = 0
    m = nh + (nc if nfr else 0)
    # (every entry written once: G's, then zeros; not np.zeros and a copy over it)
    Mlcp = np.empty((m, m))
    for i in range(nh):
        for j in range(nh):
            Mlcp[i, j] = G[i, j]
        for j in range(nh, m):
            Mlcp[i, j] = 0.0
    for i in range(nh, m):
        for j in range(m):
            Mlcp[i, j] = 0.0
    qlcp = np.zeros(m)
    for i in range(nh):
        qlcp[i] = Hv[i] + (rhs[rows[i]] if i < nl else 0.0)
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
    # the friction cones' layout for the repair of a warm guess (lcp._kernel._repair_cones)
    cone = np.empty(5 if nfr else 0, np.int64)
    if nfr:
        cone[0], cone[1], cone[2], cone[3], cone[4] = nlim, nl, nh, nc, u
    zb = np.zeros(m, dtype=np.bool_)
    w = np.empty(m)
    cert = np.empty(m)
    z = np.zeros(m)
    ntry = max_tries + 1
    start = min(first_level, ntry - 1)
    # each try's matrix is Mlcp with its own diagonal terms: set in place on the diagonal as it was
    # (the solver only reads the matrix), not on a copy of the whole matrix per try
    diag = np.empty(m)
    for i in range(m):
        diag[i] = Mlcp[i, i]
    for attempt in range(start, ntry):
        k = min(attempt, max_tries - 1)
        cfm = compliance * 100.0 ** k
        reg = 1e-8 * scale if attempt == max_tries else 0.0
        for i in range(m):
            Mlcp[i, i] = diag[i]
        if cfm > 0:
            for i in range(nlim, nh):
                Mlcp[i, i] += cfm * dg
        if reg > 0:
            for i in range(m):
                Mlcp[i, i] += reg
        # the warm guess (last step's basis at this island's level) for the step's first try
        uw = use_warm and attempt == start and warm.shape[0] == m
        code, piv = _lemke(Mlcp, qlcp, warm if uw else zb, uw, z, w, zb, cert, cone)
        pivots += piv
        level = attempt
        if code == 0:
            status = OK
            break
    return status, m, pivots, level, z, zb


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
    # (borrowed: graspsim._borrow; the outputs are written in place, only numbers returned)
    (local, Minv, aM, bodies, jac, rhs, comp, eq_rows, lim_rows, nrm_rows, fr_rows, mu, warm, hard_err, v_out,
     ce_out, z_out, basis_out, dx_out) = borrow((local, Minv, aM, bodies, jac, rhs, comp, eq_rows, lim_rows, nrm_rows,
                                                 fr_rows, mu, warm, hard_err, v_out, ce_out, z_out, basis_out, dx_out))
    nv = aM.shape[0]
    nbi = nv // 6
    ne = eq_rows.shape[0]
    # eliminate the equality rows (eq. 17 and the first two block rows of eq. 20)
    perm = _row_order(local, bodies, eq_rows)
    eq_p = np.empty(ne, np.int64)
    for i in range(ne):
        eq_p[i] = eq_rows[perm[i]]
    eb, ej, ew, ecnt = _compact(local, bodies, jac, eq_p, Minv)
    es, er, ee = _by_body(eb, ecnt, nbi)
    A = _product(nbi, es, er, ee, ej, es, er, ee, ew, ne, ne)          # J^T M^-1 J
    L = np.zeros((0, 0))
    fL = np.zeros(0, np.int64)
    fok = True
    c_free = np.zeros(ne)
    v_free = aM.copy()
    if ne:
        for i in range(ne):
            A[i, i] += comp[eq_p[i]]
        L, fL, fok = _factor(A)
        r = _rows_times(eb, ej, ecnt, aM)
        for i in range(ne):
            r[i] = rhs[eq_p[i]] - r[i]
        c_free = _solve(L, fL, r)
        _add_weighted(eb, ew, ecnt, c_free, v_free)
    nl = lim_rows.shape[0] + nrm_rows.shape[0]
    nfr = fr_rows.shape[0]
    nc = nrm_rows.shape[0]
    m = 0
    pivots = 0
    level = 0
    status = OK
    # (element loops instead of slice assignments: those compile numba's shape-mismatch message
    # formatting, 2 s on the first run)
    if nl == 0:
        for i in range(nv):
            v_out[i] = v_free[i]
        for i in range(ne):
            ce_out[perm[i]] = c_free[i]
    else:
        # (a loop, not np.concatenate: a library function fewer to compile)
        rows = np.empty(nl + nfr, np.int64)
        for i in range(lim_rows.shape[0]):
            rows[i] = lim_rows[i]
        for i in range(nc):
            rows[lim_rows.shape[0] + i] = nrm_rows[i]
        for i in range(nfr):
            rows[nl + i] = fr_rows[i]
        nh = nl + nfr
        hb, hj, hw, hcnt = _compact(local, bodies, jac, rows, Minv)
        if ne:
            # G = H^T M^-1 H - Y^T Y (eq. 20's elimination) computed on base rows only: a
            # contact's friction rows are combinations of two of them (_friction_basis), so G is
            # B Gb B^T
            base, ca_, cb_, pa_, pb_ = _friction_basis(nl, nc if nfr else 0, u)
            nbse = base.shape[0]
            K = hb.shape[1]
            bb = np.empty((nbse, K), np.int64)
            bj = np.empty((nbse, K, 6))
            bw = np.empty((nbse, K, 6))
            bcnt = np.empty(nbse, np.int64)
            for i in range(nbse):
                r = base[i]
                bcnt[i] = hcnt[r]
                for e in range(K):
                    bb[i, e] = hb[r, e]
                    for j in range(6):
                        bj[i, e, j] = hj[r, e, j]
                        bw[i, e, j] = hw[r, e, j]
            bs, br, be = _by_body(bb, bcnt, nbi)
            Gb = _product(nbi, bs, br, be, bj, bs, br, be, bw, nbse, nbse)
            Sb = _elimination_term(nbi, bs, br, be, bw, ne, es, er, ee, ej, L, fL)
            for i in range(nbse):
                for j in range(nbse):
                    Gb[i, j] -= Sb[i, j]
            G = _expand(Gb, ca_, cb_, pa_, pb_)
        else:
            hs, hr, he = _by_body(hb, hcnt, nbi)
            G = _product(nbi, hs, hr, he, hj, hs, hr, he, hw, nh, nh)      # H^T M^-1 H
        Hv = _rows_times(hb, hj, hcnt, v_free)
        nlim = lim_rows.shape[0]
        status, m, pivots, level, z, zb = _lcp_solve(G, Hv, rhs, rows, nl, nh, nlim, nc, nfr, mu, u, compliance,
                                                     first_level, max_tries, warm, use_warm)
        if status == OK:
            dv = np.zeros(nv)
            _add_weighted(hb, hw, hcnt, z, dv)                          # M^-1 H z (z's first nh)
            ce = c_free.copy()
            if ne:
                c_extra = _solve(L, fL, _rows_times(eb, ej, ecnt, dv))
                for i in range(ne):             # (loops, not array negation and +=: less to compile)
                    c_extra[i] = -c_extra[i]
                _add_weighted(eb, ew, ecnt, c_extra, dv)
                for i in range(ne):
                    ce[i] += c_extra[i]
            for i in range(nv):
                v_out[i] = v_free[i] + dv[i]
            for i in range(ne):
                ce_out[perm[i]] = ce[i]
            for i in range(m):
                z_out[i] = z[i]
                basis_out[i] = zb[i]
    # post-stabilisation: the displacement dx = M^-1 J c with (J^T M^-1 J + C) c = [-err; 0] (C the
    # soft rows' compliance): the hard rows' linearised errors are removed exactly, the driven
    # joints resist it through their compliance.  A is the elimination's matrix: its factor L is
    # reused (the whole projection is one solve).
    dx_out[:] = 0.0
    if status == OK and project and n_hard and fok:
        big = 0.0
        for i in range(n_hard):
            big = max(big, abs(hard_err[i]))
        if big > 1e-13:
            err = np.zeros(ne)
            for i in range(ne):
                if perm[i] < n_hard:
                    err[i] = -hard_err[perm[i]]
            ch = _solve(L, fL, err)
            _add_weighted(eb, ew, ecnt, ch, dx_out)
    return status, m, pivots, level


# ------------------------------------------------------------------ every island of a step in one call

@njit(cache=True)
def partition_rows(bodies, labels, sizes, n_isl):
    """Rows grouped by (island, kind): ``order`` lists row indices island by island, and within an
    island kind by kind (the 5 consecutive blocks of sizes ``sizes``) in their original order;
    rows of island i and kind j are ``order[bounds[5 i + j]:bounds[5 i + j + 1]]``.  A row's island
    is that of its first dynamic body; rows without one belong to none."""
    r = bodies.shape[0]
    K = bodies.shape[1]
    key = np.empty(r, np.int64)
    row = 0
    for j in range(5):
        for _ in range(sizes[j]):
            isl = -1
            for k in range(K):
                b = bodies[row, k]
                if b >= 0:
                    isl = labels[b]
                    break
            key[row] = 5 * isl + j if isl >= 0 else -1
            row += 1
    counts = np.zeros(5 * n_isl + 1, np.int64)
    for i in range(r):
        if key[i] >= 0:
            counts[key[i] + 1] += 1
    for i in range(5 * n_isl):
        counts[i + 1] += counts[i]
    bounds = counts.copy()
    fill = counts[:-1].copy()
    order = np.empty(counts[-1], np.int64)
    for i in range(r):
        if key[i] >= 0:
            order[fill[key[i]]] = i
            fill[key[i]] += 1
    return order, bounds


@njit(cache=True)
def island_key(slots, n_limits, n_contacts):
    """64-bit FNV-1a hash of an island's signature (its dynamic bodies, number of limit rows and of
    contacts; ``n_limits = -1`` keys the island's compliance level).  A collision only hands Lemke
    a wrong warm start of the right size, which it verifies like any other (time, not correctness)."""
    h = np.uint64(14695981039346656037)
    p = np.uint64(1099511628211)
    for i in range(slots.shape[0]):
        h = (h ^ np.uint64(slots[i] + 3)) * p
    h = (h ^ np.uint64(n_limits + 1)) * p
    h = (h ^ np.uint64(n_contacts + 2)) * p
    return np.int64(h)


@njit(cache=True)
def _tfind(keys, used, key):
    """Slot of ``key`` in the open-addressing table (capacity a power of 2), or the empty slot
    where it goes."""
    mask = keys.shape[0] - 1
    i = key & mask
    while used[i] and keys[i] != key:
        i = (i + 1) & mask
    return i


@njit(cache=True)
def _tgrow(keys, used, ta, tb):
    """The table rehashed into twice the capacity."""
    cap = 2 * keys.shape[0]
    nk = np.zeros(cap, np.int64)
    nu = np.zeros(cap, np.bool_)
    na = np.zeros(cap, np.int64)
    nbb = np.zeros(cap, np.int64)
    for i in range(keys.shape[0]):
        if used[i]:
            j = _tfind(nk, nu, keys[i])
            nk[j], nu[j], na[j], nbb[j] = keys[i], True, ta[i], tb[i]
    return nk, nu, na, nbb


@njit(cache=True)
def warm_get(keys, used, ta, tb, store, key):
    """The stored LCP basis of island ``key`` (a copy; empty when none)."""
    i = _tfind(keys, used, key)
    if not used[i] or tb[i] < 0:
        return np.zeros(0, np.bool_)
    out = np.empty(tb[i], np.bool_)
    for j in range(tb[i]):
        out[j] = store[ta[i] + j]
    return out


@njit(cache=True)
def level_get(keys, used, ta, key):
    """The stored compliance level of island ``key`` (0 when none)."""
    i = _tfind(keys, used, key)
    return ta[i] if used[i] else 0


@njit(cache=True)
def table_put(keys, used, ta, tb, store, meta, key, basis, level_key, level):
    """Store island ``key``'s basis (its length is fixed by the key) and ``level`` under
    ``level_key``; ``meta`` = [entries, store length used].  Returns the (possibly grown) arrays."""
    for kk in range(2):
        if 2 * (meta[0] + 1) > keys.shape[0]:
            keys, used, ta, tb = _tgrow(keys, used, ta, tb)
        key_ = key if kk == 0 else level_key
        i = _tfind(keys, used, key_)
        if not used[i]:
            keys[i], used[i] = key_, True
            meta[0] += 1
            if kk == 0:
                ta[i], tb[i] = meta[1], basis.shape[0]
                need = meta[1] + basis.shape[0]
                if need > store.shape[0]:
                    s2 = np.zeros(max(need, 2 * store.shape[0]), np.bool_)
                    for j in range(meta[1]):
                        s2[j] = store[j]
                    store = s2
                meta[1] = need
            else:
                tb[i] = -1
        if kk == 0:
            for j in range(min(tb[i], basis.shape[0])):
                store[ta[i] + j] = basis[j]
        else:
            ta[i] = level
    return keys, used, ta, tb, store


@njit(cache=True)
def _matched(pa, pb, pp, pf, ca, cb, cpoint, cidx, nlim, u, radius):
    """A warm-start guess for an island whose contacts differ from last step's: each contact takes
    the LCP flags of last step's nearest contact between the same two bodies within ``radius``
    (m); a new contact none (its w's basic), a joint limit none.  Empty when nothing matches."""
    k = cidx.shape[0]
    out = np.zeros(nlim + k * (u + 2), np.bool_)
    hit_any = False
    r2 = radius * radius
    for i in range(k):
        c = cidx[i]
        best = np.inf
        jb = -1
        for j in range(pa.shape[0]):
            if pa[j] != ca[c] or pb[j] != cb[c]:
                continue
            d = ((cpoint[c, 0] - pp[j, 0]) ** 2 + (cpoint[c, 1] - pp[j, 1]) ** 2 + (cpoint[c, 2] - pp[j, 2]) ** 2)
            if d < best:
                best, jb = d, j
        if jb < 0 or best > r2:
            continue
        hit_any = True
        out[nlim + i] = pf[jb, 0]
        for d_ in range(u):
            out[nlim + k + i * u + d_] = pf[jb, 1 + d_]
        out[nlim + k + k * u + i] = pf[jb, 1 + u]
    if not hit_any:
        return np.zeros(0, np.bool_)
    return out


@njit(cache=True)
def solve_islands(labels, n_isl, Minv, aM, bodies, jac, rhs, comp, sizes, hard_err, mu,
                  ca, cb, cpoint, cnormal, ct1, ct2, u, compliance, project, relax,
                  keys, used, ta, tb, store, meta, pa, pb, pp, pf, use_matched, radius):
    """Step 10 for every island of the step in one call (see :func:`solve_island`).

    Rows: one block (``bodies`` (r, K), ``jac`` (r, K, 6), ``rhs``, ``comp``) of five consecutive
    kinds of sizes ``sizes``: hard equality, soft equality, joint limits, contact normals (one per
    contact, in contact order), friction directions (``u`` per contact, contact-major).
    ``hard_err`` the hard rows' position errors.  Contacts: table bodies ``ca``, ``cb``, points,
    normals and tangents (W), friction coefficients ``mu``.  Warm starts: the open-addressing table
    (``keys``, ``used``, ``ta``, ``tb``, ``store``, ``meta``; see :func:`table_put`) keyed by
    :func:`island_key`, and last step's contacts (``pa``, ``pb``, ``pp``, flags ``pf``) matched
    when an island's key is new.  ``relax``: this step may relax a compliance level by one.

    Returns (status, failing island, its LCP size, its pivots, v_new (nb, 6), contact impulses
    (k, 3) (N s, on body b), hard-row impulses, post-stabilisation dx (nb, 6), contact flags
    (k, u + 2), LCP sizes (per island, 0: none), total pivots, and the table arrays)."""
    # the inputs borrowed (graspsim._borrow), not the warm-start table's arrays: they are returned
    (labels, Minv, aM, bodies, jac, rhs, comp, sizes, hard_err, mu, ca, cb, cpoint, cnormal, ct1, ct2, meta, pa, pb, pp,
     pf) = borrow((labels, Minv, aM, bodies, jac, rhs, comp, sizes, hard_err, mu, ca, cb, cpoint, cnormal, ct1, ct2,
                   meta, pa, pb, pp, pf))
    nb = labels.shape[0]
    nrows = rhs.shape[0]
    k_all = ca.shape[0]
    v_new = np.empty((nb, 6))
    impulses = np.zeros((sizes[3], 3))
    hard_impulse = np.zeros(sizes[0])
    dx = np.zeros((nb, 6))
    cflags = np.zeros((k_all, u + 2), np.bool_)
    lcp_sizes = np.zeros(n_isl, np.int64)
    pivots = 0
    order_r, rb = partition_rows(bodies, labels, sizes, n_isl)
    off_n = sizes[0] + sizes[1] + sizes[2]
    # bodies of each island (counting sort by label, in slot order)
    bstart = np.zeros(n_isl + 1, np.int64)
    for b in range(nb):
        bstart[labels[b] + 1] += 1
    for i in range(n_isl):
        bstart[i + 1] += bstart[i]
    fill = bstart[:-1].copy()
    border = np.empty(nb, np.int64)
    for b in range(nb):
        border[fill[labels[b]]] = b
        fill[labels[b]] += 1
    local = np.empty(nb, np.int64)  # (a loop, not np.ones/np.full: a library function fewer to compile)
    for i in range(nb):
        local[i] = -1
    for isl in range(n_isl):
        s0, s1 = bstart[isl], bstart[isl + 1]
        nbi = s1 - s0
        r0 = rb[5 * isl]
        if rb[5 * isl + 5] == r0:                         # eq. (15): a free body
            for x in range(s0, s1):
                for j in range(6):
                    v_new[border[x], j] = aM[border[x], j]
            continue
        slots = border[s0:s1]
        for x in range(nbi):
            local[slots[x]] = x
        nhard = rb[5 * isl + 1] - rb[5 * isl]
        nsoft = rb[5 * isl + 2] - rb[5 * isl + 1]
        nlim = rb[5 * isl + 3] - rb[5 * isl + 2]
        nc = rb[5 * isl + 4] - rb[5 * isl + 3]
        nfr = rb[5 * isl + 5] - rb[5 * isl + 4]
        e_rows = order_r[rb[5 * isl]:rb[5 * isl + 2]]
        lim_rows = order_r[rb[5 * isl + 2]:rb[5 * isl + 3]]
        nrm_rows = order_r[rb[5 * isl + 3]:rb[5 * isl + 4]]
        fr_rows = order_r[rb[5 * isl + 4]:rb[5 * isl + 5]]
        cidx = np.empty(nc, np.int64)
        mui = np.empty(nc)
        for i in range(nc):
            cidx[i] = nrm_rows[i] - off_n
            mui[i] = mu[cidx[i]]
        herr = np.empty(nhard)
        for i in range(nhard):
            herr[i] = hard_err[e_rows[i]]
        key = island_key(slots, nlim, nc)
        lkey = island_key(slots, -1, -1)
        level = level_get(keys, used, ta, lkey)
        warm = warm_get(keys, used, ta, tb, store, key)
        if warm.shape[0] == 0 and nc and use_matched:
            warm = _matched(pa, pb, pp, pf, ca, cb, cpoint, cidx, nlim, u, radius)
        Mi = np.empty((nbi, 6, 6))
        aMi = np.empty(6 * nbi)
        for x in range(nbi):
            for i in range(6):
                aMi[6 * x + i] = aM[slots[x], i]
                for j in range(6):
                    Mi[x, i, j] = Minv[slots[x], i, j]
        nv = 6 * nbi
        m_max = nlim + nc * (2 + u)
        v_out = np.empty(nv)
        ce = np.empty(nhard + nsoft)
        z = np.zeros(m_max)
        basis = np.zeros(m_max, np.bool_)
        dxi = np.empty(nv)
        status, m, piv, lv = solve_island(local, Mi, aMi, bodies, jac, rhs, comp, e_rows, nhard, lim_rows,
                                          nrm_rows, fr_rows, mui, u, compliance, level, 3, warm,
                                          warm.shape[0] > 0, herr, project, v_out, ce, z, basis, dxi)
        for x in range(nbi):
            local[slots[x]] = -1
        pivots += piv
        if status != OK:
            return (status, isl, m, piv, v_new, impulses, hard_impulse, dx, cflags, lcp_sizes, pivots,
                    keys, used, ta, tb, store)
        if project and nhard:
            for x in range(nbi):
                for j in range(6):
                    dx[slots[x], j] = dxi[6 * x + j]
        if m:
            # remember a softer level that was needed; relax back one level at a time
            newlevel = lv if lv > level else max(0, level - (1 if relax else 0))
            keys, used, ta, tb, store = table_put(keys, used, ta, tb, store, meta, key, basis[:m], lkey, newlevel)
            for i in range(nc):
                c = cidx[i]
                cflags[c, 0] = basis[nlim + i]
                for d in range(u):
                    cflags[c, 1 + d] = basis[nlim + nc + i * u + d]
                cflags[c, 1 + u] = basis[nlim + nc + nc * u + i]
                # impulse c_n n + sum_d beta_d (cos a_d t1 + sin a_d t2), a_d = 2 pi d / u (eq. 4)
                cn = z[nlim + i]
                bc = 0.0
                bs = 0.0
                for d in range(u):
                    bt = z[nlim + nc + i * u + d]
                    a = 2.0 * np.pi * d / u
                    bc += bt * np.cos(a)
                    bs += bt * np.sin(a)
                for j in range(3):
                    impulses[c, j] = cn * cnormal[c, j] + bc * ct1[c, j] + bs * ct2[c, j]
            lcp_sizes[isl] = m
        for x in range(nbi):
            for j in range(6):
                v_new[slots[x], j] = v_out[6 * x + j]
        for i in range(nhard):
            hard_impulse[e_rows[i]] = ce[i]
    return (OK, -1, 0, 0, v_new, impulses, hard_impulse, dx, cflags, lcp_sizes, pivots,
            keys, used, ta, tb, store)


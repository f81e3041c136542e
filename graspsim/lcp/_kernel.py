"""Compiled core of the Lemke solver (numba, compiled lazily, cached on disk).

Everything here works on a *scaled* copy of the problem

    w' = A z' + q' + d z0,   A = D M D,  q' = D q / s,  z = s D z',  w = s D^-1 w'

with D a power-of-two symmetric (Ruiz) equilibration, so scaling and
unscaling are exact in floating point and the LCP class of M is preserved.

Variables are numbered 0..n-1 (w_i), n..2n-1 (z_i) and 2n (the artificial
z0).  The basis inverse (row p belongs to basis position p) and the basic
values x = Binv q' are kept up to date by rank-one (eta) updates; columns of
Binv that are unit vectors (those of basic w's) are not stored, so a pivot
costs O(n k) with k the number of basic z's.  A = D M D is never formed: its
entries are produced on the fly.  The product form is monitored by an O(n k)
residual ||q' - B x|| and refactorised (dense LU with partial pivoting) when
it has drifted.

No function in this module is compiled at import time.
"""
import math

import numpy as np
from .._jit import njit

# status codes shared with the Python wrapper
SOLVED = 0
RAY = 1
MAX_PIVOTS = 2
NUMERICAL = 3
NONFINITE = -1
BAD_COVER = -2


# --------------------------------------------------------------------------
# small dense linear algebra (no LAPACK: keeps the kernel self-contained)
# --------------------------------------------------------------------------
@njit(cache=True)
def _lu_factor(A, piv, amin=0.0):
    """In-place LU with partial pivoting.  Returns False when singular (a pivot
    below 1e-14 of max(largest entry, amin))."""
    m = A.shape[0]
    amax = amin
    for i in range(m):
        for j in range(m):
            v = abs(A[i, j])
            if v > amax:
                amax = v
    if amax == 0.0 and m > 0:
        return False
    tiny = amax * 1e-14
    rowk = np.empty(m)     # pivot row, copied apart (one buffer, not one per step): lets the update vectorise
    for k in range(m):
        p = k
        best = abs(A[k, k])
        for i in range(k + 1, m):
            v = abs(A[i, k])
            if v > best:
                best = v
                p = i
        if best <= tiny:
            return False
        piv[k] = p
        if p != k:
            for j in range(m):
                t = A[k, j]
                A[k, j] = A[p, j]
                A[p, j] = t
        inv = 1.0 / A[k, k]
        for j in range(m - k - 1):
            rowk[j] = A[k, k + 1 + j]
        for i in range(k + 1, m):
            f = A[i, k] * inv
            if f != 0.0:
                A[i, k] = f
                # (indexed, not through a row view: a view takes and drops a reference to A's
                # memory, two atomic operations per row and pivot, m^2 / 2 of them per factor)
                for j in range(m - k - 1):
                    A[i, k + 1 + j] -= f * rowk[j]
            else:
                A[i, k] = 0.0
    return True


@njit(cache=True)
def _lu_inverse(LU, piv):
    """A^-1 from the factors of :func:`_lu_factor`: Y = L^-1 P, then U X = Y, by row operations on
    contiguous rows (vectorised).  Y is kept in the permuted column order (column t of Y is column
    perm[t] of A^-1), where its row i is zero beyond t = i: the forward pass skips those exact zeros,
    a third of the work, with every computed entry's operations unchanged."""
    m = LU.shape[0]
    perm = np.empty(m, np.int64)    # identity (a loop, not np.arange: less first-run compile)
    for i in range(m):
        perm[i] = i
    for k in range(m):
        p = piv[k]
        if p != k:
            t = perm[k]
            perm[k] = perm[p]
            perm[p] = t
    Y = np.zeros((m, m))
    for i in range(m):                    # L Y = I (L unit lower; columns in perm order)
        Y[i, i] = 1.0
        for j in range(i):
            f = LU[i, j]
            if f != 0.0:
                for c in range(j + 1):
                    Y[i, c] -= f * Y[j, c]
    for i in range(m - 1, -1, -1):        # U X = Y
        for j in range(i + 1, m):
            f = LU[i, j]
            if f != 0.0:
                for c in range(m):
                    Y[i, c] -= f * Y[j, c]
        inv = 1.0 / LU[i, i]
        for c in range(m):
            Y[i, c] *= inv
    X = np.empty((m, m))
    for i in range(m):
        for t in range(m):
            X[i, perm[t]] = Y[i, t]
    return X


@njit(cache=True)
def _lu_solve(LU, piv, b):
    m = LU.shape[0]
    for k in range(m):
        p = piv[k]
        if p != k:
            t = b[k]
            b[k] = b[p]
            b[p] = t
    for i in range(m):
        s = b[i]
        for j in range(i):
            s -= LU[i, j] * b[j]
        b[i] = s
    for i in range(m - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, m):
            s -= LU[i, j] * b[j]
        b[i] = s / LU[i, i]


# --------------------------------------------------------------------------
# scaling and input checks
# --------------------------------------------------------------------------
@njit(cache=True, fastmath={"reassoc"})
def _all_finite(M, q):
    acc = 0.0
    n = q.shape[0]
    for i in range(n):
        acc += q[i] - q[i]
        for j in range(n):
            acc += M[i, j] - M[i, j]      # nan for inf and nan entries
    return acc == 0.0


@njit(cache=True, fastmath={"reassoc", "contract"})
def _row_col_sq(M, D, R, C):
    """R_i = sum_j (M_ij D_j)^2, C_j = sum_i (M_ij D_i)^2 (vectorisable)."""
    n = D.shape[0]
    for j in range(n):
        C[j] = 0.0
    for i in range(n):
        r = 0.0
        di2 = D[i] * D[i]
        for j in range(n):
            v = M[i, j] * D[j]
            r += v * v
            C[j] += M[i, j] * M[i, j] * di2
        R[i] = r


@njit(cache=True)
def _pow2_exp(t):
    """An integer k with 2^k close to t > 0 (|k - log2 t| <= 0.6): cheap,
    only used to choose scale factors."""
    m, e = math.frexp(t)              # t = m 2^e, 0.5 <= m < 1
    return e - 1 if m < 0.7071067811865476 else e


@njit(cache=True)
def _equilibrate(M, passes):
    """Symmetric power-of-two scaling D (A = D M D, exact in floating point);
    returns (D, all entries of M finite).

    Start from the Jacobi scaling D_i ~ M_ii^(-1/2) for positive diagonal
    entries (for a PSD block this already bounds |A_ij| by 1), then make
    `passes` symmetric Ruiz passes in the 2-norm: D_i is divided by the
    power of two nearest to sqrt(max(||A_i,:||, ||A_:,i||)).  Rows and
    columns that are entirely zero keep D_i."""
    n = M.shape[0]
    D = np.empty(n)  # (a loop, not np.ones/np.full: a library function fewer to compile)
    for i_ in range(n):
        D[i_] = 1.0
    for i in range(n):
        if M[i, i] > 0.0:
            D[i] = math.ldexp(1.0, -(_pow2_exp(M[i, i]) // 2))
    R = np.empty(n)
    C = np.empty(n)
    for _ in range(passes):
        _row_col_sq(M, D, R, C)
        changed = False
        for i in range(n):
            t2 = max(R[i], C[i])
            if not np.isfinite(t2):
                return D, False        # a NaN or inf entry in M
            if t2 > 0.0:
                # ||A_i|| = D_i sqrt(t2); divide D_i by ~||A_i||^(1/2)
                k = _pow2_exp(D[i] * D[i] * t2) // 4
                if k != 0:
                    D[i] = math.ldexp(D[i], -k)
                    changed = True
        if not changed:
            break
    return D, True


# --------------------------------------------------------------------------
# verification against the ORIGINAL data
# --------------------------------------------------------------------------
@njit(cache=True)
def _verify(M, q, z, w, D, s, tol):
    """w <- M z + q, and return the worst scaled violation of z >= 0, w >= 0
    and z_i w_i = 0 (a verified solution has it <= tol).

    Scales (componentwise, in row i's units):
    * w_i: ws_i = s / D_i + (rnd / tol) (|q_i| + sum_j |M_ij z_j|), so that
      the allowed violation tol ws_i is tol ||q|| (s / D_i: q's size in the
      equilibrated variables) plus rnd = (n + 1) eps times the terms: the
      bound gamma_(n+1) ~ (n + 1) u on the error of forming the sum (Higham,
      Accuracy and Stability of Numerical Algorithms, 2002, sec. 3.1;
      eps = 2u) and as much again for the residual of a backward-stable solve.  Not relative
      to the terms alone: far out along a ray of an infeasible problem they
      grow with z but the violation does not shrink;
    * z_i: zs_i = D_i max_j |z_j| / D_j, the largest z in equilibrated
      variables (floored at 1e-6 of the equilibrated size of q).
    Complementarity: min(|z_i| / zs_i, |w_i| / ws_i) <= tol and
    |z_i w_i| <= tol zs_i ws_i (a z_i counted as zero must not face a w_i
    beyond its scale)."""
    n = q.shape[0]
    nz = np.empty(n, dtype=np.int64)
    m = 0
    zmax = 0.0
    for j in range(n):
        if z[j] != 0.0:
            nz[m] = j
            m += 1
            v = abs(z[j]) / D[j]
            if v > zmax:
                zmax = v
    if zmax < 1e-6 * s:
        zmax = 1e-6 * s
    rnd = (n + 1) * 2.220446049250313e-16 / tol     # rounding allowance, in units of tol
    worst = 0.0
    for i in range(n):
        acc = q[i]
        mag = abs(q[i])
        for t in range(m):
            j = nz[t]
            p = M[i, j] * z[j]
            acc += p
            mag += abs(p)
        w[i] = acc
        ws = s / D[i] + rnd * mag
        zs = zmax * D[i]
        zr = abs(z[i]) / zs
        wr = abs(acc) / ws
        v = max(max(-z[i] / zs, -acc / ws), max(min(zr, wr), zr * wr))
        if v > worst:
            worst = v
    return worst


@njit(cache=True)
def _ray_certificate(M, q, y, tol):
    """Farkas certificate of infeasibility of {z >= 0, M z + q >= 0}:
    y >= 0, M^T y <= 0 and q.y < 0, each relative to the size of its terms
    (so that no z >= 0 can make y.(M z + q) = (M^T y).z + q.y non-negative).
    Returns True when y certifies infeasibility."""
    n = q.shape[0]
    ymax = 0.0
    for i in range(n):
        if abs(y[i]) > ymax:
            ymax = abs(y[i])
    if ymax == 0.0:
        return False
    for i in range(n):
        if y[i] < -tol * ymax:
            return False
    qy = 0.0
    qmag = 0.0
    for i in range(n):
        qy += q[i] * y[i]
        qmag += abs(q[i] * y[i])
    if qmag == 0.0 or not (qy < -1e-6 * qmag):
        return False
    for j in range(n):
        acc = 0.0
        mag = 0.0
        for i in range(n):
            t = M[i, j] * y[i]
            acc += t
            mag += abs(t)
        if acc > tol * mag:
            return False
    return True


# --------------------------------------------------------------------------
# the pivoting core
#
# Basis inverse storage: column c of Binv is the unit vector e_{loc[c]}
# whenever w_c is basic ("trivial" column).  Only the other columns (w_c
# nonbasic; there are as many as basic z's plus z0) are stored, as rows
# BT[c, :] of an n x n array; ntc[:nk] lists them and slot[c] is the index of
# c in ntc (or -1).  A pivot and an entering column cost O(n * nk).
# --------------------------------------------------------------------------
@njit(cache=True)
def _load_col(M, D, AC, have, cmax, j):
    """Row j of AC <- column j of A = D M D (computed once, on first use);
    cmax[j] <- its largest magnitude."""
    if not have[j]:
        n = D.shape[0]
        dj = D[j]
        m = 0.0
        for i in range(n):
            v = D[i] * M[i, j] * dj
            AC[j, i] = v
            m = max(m, abs(v))
        cmax[j] = m
        have[j] = True


@njit(cache=True)
def _binv(BT, slot, loc, i, c):
    """Entry (i, c) of the basis inverse."""
    if slot[c] >= 0:
        return BT[c, i]
    return 1.0 if loc[c] == i else 0.0


@njit(cache=True)
def _lex_refine(BT, slot, loc, ntc, nk, den, ties, nt, mark):
    """Among rows `ties[:nt]` (tied on the first component) return the row
    whose vector Binv_i / den_i is lexicographically smallest.  Rows of a
    nonsingular Binv are distinct, so in exact arithmetic this is unique;
    numerically indistinguishable rows fall back to the largest den_i.

    A trivial column c of Binv (w_c basic at position loc[c]) is the unit
    vector e_loc[c]: it only removes row loc[c] from the ties (its entry is
    positive, the others' are zero).  `mark` is an all-False work array."""
    n = den.shape[0]
    bscale = 1.0
    for t in range(nk):
        c = ntc[t]
        for u in range(nt):
            bscale = max(bscale, abs(BT[c, ties[u]]))
    lex_tol = 1e-11 * bscale
    for t in range(nt):
        mark[ties[t]] = True
    for c in range(n):
        if slot[c] < 0:
            p = loc[c]
            if mark[p]:
                mark[p] = False
                m = 0
                for t in range(nt):
                    if ties[t] != p:
                        ties[m] = ties[t]
                        m += 1
                nt = m
        else:
            vmin = np.inf
            for t in range(nt):
                i = ties[t]
                vmin = min(vmin, BT[c, i] / den[i])
            m = 0
            for t in range(nt):
                i = ties[t]
                if BT[c, i] - den[i] * vmin <= lex_tol:
                    ties[m] = i
                    m += 1
                else:
                    mark[i] = False
            nt = m
        if nt == 1:
            mark[ties[0]] = False
            return ties[0]
    best = ties[0]
    for t in range(nt):
        mark[ties[t]] = False
        if den[ties[t]] > den[best]:
            best = ties[t]
    return best


@njit(cache=True)
def _lex_choose(BT, slot, loc, ntc, nk, x, den, cand, nc, z0pos, feas_tol, ties, mark):
    """Lexicographic minimum ratio test: the row minimising
    [max(x_i, 0), Binv_i] / den_i over the candidate rows (den_i > 0).

    Rows count as tied on the first component when their ratios differ from
    the minimum by at most feas_tol / max(den): pivoting on any of them then
    leaves every other candidate row >= -feas_tol.  If the row of z0 is among
    the ties it is chosen (that pivot ends the algorithm)."""
    tmin = np.inf
    dmax = 0.0
    for t in range(nc):
        i = cand[t]
        tv = max(x[i], 0.0) / den[i]
        if tv < tmin:
            tmin = tv
        dmax = max(dmax, den[i])
    ttol = feas_tol / dmax
    nt = 0
    for t in range(nc):
        i = cand[t]
        if max(x[i], 0.0) / den[i] - tmin <= ttol:
            ties[nt] = i
            nt += 1
    if nt == 1:
        return ties[0]
    for t in range(nt):
        if ties[t] == z0pos:
            return z0pos
    return _lex_refine(BT, slot, loc, ntc, nk, den, ties, nt, mark)


@njit(cache=True)
def _pivot(BT, slot, ntc, nk, loc, basis, x, a, r, entering):
    """Exchange basis[r] for `entering` whose updated column is `a`."""
    n = x.shape[0]
    leaving = basis[r]
    inv = 1.0 / a[r]
    drop = entering if entering < n else -1     # its column becomes e_r
    for t in range(nk):
        c = ntc[t]
        if c == drop:
            continue
        f = BT[c, r] * inv
        if f != 0.0:
            for k in range(n):
                BT[c, k] -= f * a[k]
            BT[c, r] = f
    th = x[r] * inv
    for k in range(n):
        x[k] -= a[k] * th
    x[r] = th
    if leaving < n:                             # column of w_leaving: e_r -> eta
        for k in range(n):
            BT[leaving, k] = -a[k] * inv
        BT[leaving, r] = inv
        slot[leaving] = nk
        ntc[nk] = leaving
        nk += 1
    if drop >= 0:
        t = slot[drop]
        last = ntc[nk - 1]
        ntc[t] = last
        slot[last] = t
        slot[drop] = -1
        nk -= 1
    basis[r] = entering
    loc[leaving] = -1
    loc[entering] = r
    return nk


@njit(cache=True)
def _basis_residual(AC, dcov, qs, basis, x):
    """||q' - B x||_inf / (1 + ||x||_inf)  (O(n k))."""
    n = qs.shape[0]
    r = qs.copy()
    xm = 0.0
    for p in range(n):
        v = basis[p]
        xp = x[p]
        if abs(xp) > xm:
            xm = abs(xp)
        if xp == 0.0:
            continue
        if v < n:
            r[v] -= xp
        elif v < 2 * n:
            j = v - n
            for i in range(n):
                r[i] += AC[j, i] * xp
        else:
            for i in range(n):
                r[i] += dcov[i] * xp
    rm = 0.0
    for i in range(n):
        if abs(r[i]) > rm:
            rm = abs(r[i])
    return rm / (1.0 + xm)


@njit(cache=True)
def _basis_blocks(basis, n):
    """The structure of a basis matrix: positions nu[:k] of its non-unit columns (basic z's and
    z0), positions un[:n-k] of its unit columns (basic w's), and the k rows S no unit column
    covers.  ok is False when S does not have k rows (a malformed basis)."""
    covered = np.zeros(n, dtype=np.bool_)
    nu = np.empty(n, dtype=np.int64)
    un = np.empty(n, dtype=np.int64)
    k = 0
    m = 0
    for p in range(n):
        v = basis[p]
        if v < n:
            covered[v] = True
            un[m] = p
            m += 1
        else:
            nu[k] = p
            k += 1
    S = np.empty(k, dtype=np.int64)
    ks = 0
    for i in range(n):
        if not covered[i]:
            if ks == k:
                return nu, un, S, k, False
            S[ks] = i
            ks += 1
    return nu, un, S, k, ks == k


@njit(cache=True)
def _refactor(AC, dcov, qs, basis, slot, ntc, nk, BT, x, LU0, piv0, amax0):
    """Recompute the stored columns of Binv and x = Binv q' from the basis.
    False if the basis matrix is singular.

    The basis matrix has a unit column e_v for every basic w_v; only the k
    other columns (basic z's and z0) need a factorisation: restricted to the
    k rows S not covered by the unit columns they form C_S (k x k), and

        Binv b:  y_nonunit = C_S^-1 b_S,   y_(unit of w_v) = b_v - C_v y_nonunit,

    so the work is a k x k LU and an (n - k) x k x k product, not an n x n
    LU (k is the number of basic z's, often half of n or less).

    ``LU0``, ``piv0`` (k x k; else empty): the factors of A_FF = -C_S, already computed for a
    complementary start basis by :func:`_principal_factor` (``amax0`` = max |A_FF|).  The LU of
    -A_FF is theirs with U negated, bit for bit (each operation of the elimination is odd in its
    operands), so it is not computed again."""
    n = qs.shape[0]
    nu, un, S, k, ok = _basis_blocks(basis, n)
    m = n - k
    if not ok or k != nk:
        return False
    C = np.empty((n, k))
    for t in range(k):
        v = basis[nu[t]]
        if v < 2 * n:
            j = v - n
            for i in range(n):
                C[i, t] = -AC[j, i]
        else:
            for i in range(n):
                C[i, t] = -dcov[i]
    C2 = np.empty((k, k))
    if k > 0 and LU0.shape[0] == k:
        piv = piv0
        # _lu_factor(C2, piv, 1.0)'s verdict on these factors: its pivots are |U_kk|
        tiny = max(1.0, amax0) * 1e-14
        for s_ in range(k):
            if not abs(LU0[s_, s_]) > tiny:
                return False
            for t in range(k):
                C2[s_, t] = LU0[s_, t] if t < s_ else -LU0[s_, t]
    else:
        for s_ in range(k):
            for t in range(k):
                C2[s_, t] = C[S[s_], t]
        piv = np.empty(k, dtype=np.int64)
        # singularity judged on the scale of the whole basis matrix (its unit entries included)
        if k > 0 and not _lu_factor(C2, piv, 1.0):
            return False
    Z = _lu_inverse(C2, piv) if k > 0 else np.empty((0, 0))   # C_S^-1
    CU = np.empty((m, k))                   # rows of C covered by the unit columns
    for u in range(m):
        v = basis[un[u]]
        for t in range(k):
            CU[u, t] = C[v, t]
    Q = CU @ Z if k > 0 and m > 0 else np.zeros((m, k))
    for s_ in range(k):
        c = S[s_]
        for t in range(k):
            BT[c, nu[t]] = Z[t, s_]
        for u in range(m):
            BT[c, un[u]] = -Q[u, s_]
    yk = np.zeros(k)
    for t in range(k):
        acc = 0.0
        for s_ in range(k):
            acc += Z[t, s_] * qs[S[s_]]
        yk[t] = acc
    for t in range(k):
        x[nu[t]] = yk[t]
    for u in range(m):
        v = basis[un[u]]
        acc = qs[v]
        for t in range(k):
            acc -= CU[u, t] * yk[t]
        x[un[u]] = acc
    return True


@njit(cache=True)
def _lemke_core(M, D, qs, dcov, max_pivots, check_every, piv_rel, piv_abs,
                basis, loc, BT, x, a, counters, warm, start_warm, LU0, piv0, amax0):
    """Complementary pivoting from the standard start (basis = all w), or,
    with `start_warm`, from the complementary basis whose basic z's are
    `warm` (Lemke on its principal pivot transform).  For the warm start the
    caller passes dcov = B0 e (B0 the warm basis matrix), so that z0's
    column in the transformed tableau is -e: the covering vector is e there.

    On return basis/loc/x describe the final basis and `a` holds the last
    entering column (the ray direction when the status is RAY).
    Returns (status, pivots, entering variable).  counters[0] = number of
    refactorisations.  ``LU0``, ``piv0``, ``amax0``: the warm block's factors for the first
    refactorisation (see :func:`_refactor`; empty: none)."""
    n = qs.shape[0]
    nn = 2 * n
    no_lu = np.empty((0, 0))              # the monitor's refactorisations factorise afresh
    no_piv = np.empty(0, np.int64)
    slot = np.empty(n, np.int64)  # (a loop, not np.ones/np.full: a library function fewer to compile)
    for i_ in range(n):
        slot[i_] = -1
    ntc = np.empty(n, dtype=np.int64)
    AC = np.empty((n, n))                 # cached scaled columns of M
    have = np.zeros(n, dtype=np.bool_)
    cmax = np.empty(n)
    nk = 0
    for i in range(nn + 1):
        loc[i] = -1
    for i in range(n):
        basis[i] = i
        loc[i] = i
        x[i] = qs[i]
    cand = np.empty(n, dtype=np.int64)
    ties = np.empty(n, dtype=np.int64)
    mark = np.zeros(n, dtype=np.bool_)

    if start_warm:
        # the warm complementary basis: z_j in position j for j in `warm`
        for j in range(n):
            if warm[j]:
                _load_col(M, D, AC, have, cmax, j)
                basis[j] = n + j
                loc[j] = -1
                loc[n + j] = j
                slot[j] = nk
                ntc[nk] = j
                nk += 1
        if not _refactor(AC, dcov, qs, basis, slot, ntc, nk, BT, x, LU0, piv0, amax0):
            return NUMERICAL, 0, nn
        den = np.empty(n)  # z0's transformed column is -e
        for i_ in range(n):
            den[i_] = 1.0
    else:
        den = dcov
    # initial pivot: z0 enters with column -den.  The leaving row is the
    # lexicographic maximum of -[x_i, Binv_i]/den_i = lexmin of
    # [x_i, Binv_i]/den_i (no clamping here: these are the negative rows).
    tmin = np.inf
    for i in range(n):
        tv = x[i] / den[i]
        if tv < tmin:
            tmin = tv
    if tmin >= 0.0:                       # the warm basis is already feasible
        return SOLVED, 0, nn
    nt = 0
    for i in range(n):
        if x[i] - den[i] * tmin <= 1e-15 * abs(tmin) * den[i]:
            ties[nt] = i
            nt += 1
    if nt == 1:
        r = ties[0]
    else:
        r = _lex_refine(BT, slot, loc, ntc, nk, den, ties, nt, mark)
    for i in range(n):
        a[i] = -den[i]
    entering = nn
    pivots = 0
    since_check = 0
    while True:
        leaving = basis[r]
        nk = _pivot(BT, slot, ntc, nk, loc, basis, x, a, r, entering)
        pivots += 1
        since_check += 1
        if leaving == nn:
            return SOLVED, pivots, entering
        if pivots >= max_pivots:
            return MAX_PIVOTS, pivots, entering
        # accuracy monitor of the product form
        if since_check >= check_every:
            since_check = 0
            if _basis_residual(AC, dcov, qs, basis, x) > 1e-11:
                counters[0] += 1
                if not _refactor(AC, dcov, qs, basis, slot, ntc, nk, BT, x, no_lu, no_piv, 0.0):
                    return NUMERICAL, pivots, entering
                xm = 0.0
                for i in range(n):
                    xm = max(xm, abs(x[i]))
                for i in range(n):
                    if x[i] < -1e-7 * (1.0 + xm):
                        return NUMERICAL, pivots, entering
        # the complement of the leaving variable enters
        if leaving < n:
            entering = leaving + n
            j = leaving
            _load_col(M, D, AC, have, cmax, j)
            cscale = cmax[j]
            for p in range(n):            # trivial columns: gather
                v = basis[p]
                a[p] = -AC[j, v] if v < n else 0.0
            for t in range(nk):
                c = ntc[t]
                f = AC[j, c]
                if f != 0.0:
                    for k in range(n):
                        a[k] -= f * BT[c, k]
        else:
            entering = leaving - n
            j = entering
            for k in range(n):
                a[k] = BT[j, k]
            cscale = 1.0
        # ratio test
        amax = 0.0
        xm = 1.0
        for i in range(n):
            amax = max(amax, abs(a[i]))
            xm = max(xm, x[i])
        ptol = max(piv_rel * amax, piv_abs * cscale)
        nc = 0
        for i in range(n):
            if a[i] > ptol:
                cand[nc] = i
                nc += 1
        if nc == 0:
            return RAY, pivots, entering
        r = _lex_choose(BT, slot, loc, ntc, nk, x, a, cand, nc, loc[nn], 1e-12 * xm,
                        ties, mark)


@njit(cache=True)
def _principal_factor(M, D, mask):
    """The principal block A_aa of A = D M D on the set `mask`, factorised by :func:`_lu_factor`:
    (idx, m, LU, A_aa, piv, amax, ok) with idx[:m] the set, amax = max |A_aa| and ok False when
    A_aa is singular."""
    n = D.shape[0]
    idx = np.empty(n, dtype=np.int64)
    m = 0
    for i in range(n):
        if mask[i]:
            idx[m] = i
            m += 1
    S = np.empty((m, m))
    S0 = np.empty((m, m))
    amax = 0.0
    for r in range(m):
        ir = idx[r]
        for c in range(m):
            ic = idx[c]
            S[r, c] = D[ir] * M[ir, ic] * D[ic]
            S0[r, c] = S[r, c]
            amax = max(amax, abs(S[r, c]))
    piv = np.empty(m, dtype=np.int64)
    ok = m == 0 or _lu_factor(S, piv, 0.0)    # amin given: one compiled signature for every call
    return idx, m, S, S0, piv, amax, ok


@njit(cache=True)
def _principal_from(qs, idx, m, LU, S0, piv, z):
    """z'_a = -A_aa^{-1} q'_a from the factors of :func:`_principal_factor`, with one step of
    iterative refinement (z is zero off the set)."""
    sol = np.empty(m)
    for r in range(m):
        sol[r] = -qs[idx[r]]
    _lu_solve(LU, piv, sol)
    res = np.empty(m)
    for r in range(m):
        acc = -qs[idx[r]]
        for c in range(m):
            acc -= S0[r, c] * sol[c]
        res[r] = acc
    _lu_solve(LU, piv, res)
    for r in range(m):
        z[idx[r]] = sol[r] + res[r]


@njit(cache=True)
def _principal_solve(M, D, qs, mask, z):
    """z'_a = -A_aa^{-1} q'_a on the set `mask` (A = D M D), zero elsewhere,
    with one step of iterative refinement.  False if A_aa is singular."""
    for i in range(qs.shape[0]):
        z[i] = 0.0
    idx, m, LU, S0, piv, _, ok = _principal_factor(M, D, mask)
    if m == 0:
        return True
    if not ok:
        return False
    _principal_from(qs, idx, m, LU, S0, piv, z)
    return True


@njit(cache=True)
def _all_pivots_safe(LU, amax):
    """Would :func:`_nonsingular_subset` keep the whole set whose principal block :func:`_lu_factor`
    gave ``LU``?  Its elimination is the same (row pivoting, the same operations), so its pivot for
    column k is U_kk: it keeps every column iff each |U_kk| > 1e-11 max(1, max |A_aa|)."""
    tiny = 1e-11 * max(1.0, amax)
    for k in range(LU.shape[0]):
        if not abs(LU[k, k]) > tiny:
            return False
    return True


@njit(cache=True)
def _nonsingular_subset(M, D, mask, out):
    """out <- a subset of `mask` whose principal submatrix of A = D M D is
    safely nonsingular: Gaussian elimination with row pivoting that skips a
    column whose best pivot is below 1e-11 of the largest entry (a dependent
    column), then the same on the kept set, until nothing is dropped (at most
    4 rounds; else out is empty).  A contact LCP's last basis is often
    singular on its z's alone (redundant contacts, z0 left at zero).
    Returns the size of the subset."""
    n = mask.shape[0]
    idx = np.empty(n, dtype=np.int64)
    k = 0
    for i in range(n):
        out[i] = False
        if mask[i]:
            idx[k] = i
            k += 1
    for _ in range(4):
        if k == 0:
            return 0
        S = np.empty((k, k))
        amax = 1.0
        for r in range(k):
            for c in range(k):
                v = D[idx[r]] * M[idx[r], idx[c]] * D[idx[c]]
                S[r, c] = v
                amax = max(amax, abs(v))
        tiny = 1e-11 * amax
        keep = np.zeros(k, dtype=np.bool_)
        rowr = np.empty(k)                 # pivot row, copied apart: lets the update vectorise
        r = 0
        for c in range(k):
            p = r
            best = 0.0
            for i in range(r, k):
                v = abs(S[i, c])
                if v > best:
                    best = v
                    p = i
            if best <= tiny:
                continue
            keep[c] = True
            if p != r:
                for j in range(k):
                    t = S[r, j]
                    S[r, j] = S[p, j]
                    S[p, j] = t
            inv = 1.0 / S[r, c]
            for j in range(k - c - 1):
                rowr[j] = S[r, c + 1 + j]
            for i in range(r + 1, k):
                f = S[i, c] * inv
                if f != 0.0:
                    Si = S[i, c + 1:]
                    for j in range(k - c - 1):
                        Si[j] -= f * rowr[j]
            r += 1
            if r == k:
                break
        if r == k:
            for t in range(k):
                out[idx[t]] = True
            return k
        m = 0
        for t in range(k):
            if keep[t]:
                idx[m] = idx[t]
                m += 1
        k = m
    return 0


@njit(cache=True)
def _basis_solve(M, D, dcov, qs, basis, xf):
    """xf <- B^{-1} q' by a fresh factorisation of the basis matrix, plus one
    step of iterative refinement.  False if B is numerically singular.

    As in :func:`_refactor`, only the k non-unit columns (basic z's and z0)
    are factorised, on the k rows S no unit column covers:
    C_S y = q'_S, then x_(unit of w_v) = q'_v - C_v y."""
    n = qs.shape[0]
    nu, _, S, k, ok = _basis_blocks(basis, n)
    if not ok:
        return False
    C = np.empty((n, k))
    for t in range(k):
        v = basis[nu[t]]
        if v < 2 * n:
            j = v - n
            dj = D[j]
            for i in range(n):
                C[i, t] = -D[i] * M[i, j] * dj
        else:
            for i in range(n):
                C[i, t] = -dcov[i]
    C2 = np.empty((k, k))
    for s_ in range(k):
        for t in range(k):
            C2[s_, t] = C[S[s_], t]
    C20 = C2.copy()
    piv = np.empty(k, dtype=np.int64)
    if k > 0 and not _lu_factor(C2, piv, 1.0):
        return False
    y = np.empty(k)
    for s_ in range(k):
        y[s_] = qs[S[s_]]
    if k > 0:
        _lu_solve(C2, piv, y)
        r = np.empty(k)
        for s_ in range(k):
            acc = qs[S[s_]]
            for t in range(k):
                acc -= C20[s_, t] * y[t]
            r[s_] = acc
        _lu_solve(C2, piv, r)
        for t in range(k):
            y[t] += r[t]
    for t in range(k):
        xf[nu[t]] = y[t]
    for p in range(n):
        v = basis[p]
        if v < n:
            acc = qs[v]
            for t in range(k):
                acc -= C[v, t] * y[t]
            xf[p] = acc
    return True


@njit(cache=True)
def _z_from_basis(q, D, s, x, loc, zb, zs, z):
    n = q.shape[0]
    for j in range(n):
        p = loc[n + j]
        zb[j] = p >= 0
        zs[j] = x[p] if p >= 0 else 0.0
        z[j] = s * D[j] * zs[j]


@njit(cache=True)
def _z0_negligible(x, z0p, dcov, tol):
    """May z0 (basic at position z0p; -1: not basic) be set to zero to give a
    candidate solution?  Only if its part d z0 of w' is within tol of the
    scaled ||q'|| <= 1, the scale of the verification.  (Relative to the
    basic values, as before, a run that had gone far out along a ray of an
    infeasible problem gave a candidate whose violation hid in the rounding
    allowance of its huge terms.)"""
    if z0p < 0:
        return False
    dm = 0.0
    for i in range(dcov.shape[0]):
        dm = max(dm, abs(dcov[i]))
    return x[z0p] * dm <= tol


@njit(cache=True)
def _recover(M, q, D, s, Dv, sv, dcov, qs, x, basis, loc, zb, zs, z, w, tol):
    """Candidate solution from the final basis (z0, if still basic, is set to
    zero), unscaled and verified against the original data (on the scales of
    the equilibration Dv, sv).  If it does not verify: re-solve the basis
    system by a fresh LU with refinement, then
    clamp round-off negatives.  Returns (verified, residual)."""
    n = q.shape[0]
    _z_from_basis(q, D, s, x, loc, zb, zs, z)
    res = _verify(M, q, z, w, Dv, sv, tol)
    if res <= tol:
        return True, res
    xf = np.empty(n)
    if _basis_solve(M, D, dcov, qs, basis, xf):
        _z_from_basis(q, D, s, xf, loc, zb, zs, z)
        res = _verify(M, q, z, w, Dv, sv, tol)
        if res <= tol:
            return True, res
        for i in range(n):
            z[i] = max(z[i], 0.0)
        res = _verify(M, q, z, w, Dv, sv, tol)
        if res <= tol:
            return True, res
    return False, res


#: rounds of the friction-cone repair of a warm guess (:func:`_repair_cones`): on a resting pile's
#: LCPs three rounds made every failing guess verify (docs/lcp.md, "Warm starts at rest")
REPAIR_ROUNDS = 3


@njit(cache=True)
def _repair_cones(zs, D, guess, cone, tol):
    """Move the friction flags of sticking contacts whose guessed friction multipliers came out
    negative (beyond ``tol`` in the scaled variables ``zs``) to the directions around this
    solution's friction force.  Returns True if a flag changed.

    ``cone`` = (first normal row, first friction row, first lambda row, contacts, directions u):
    the polyhedral cones of eq. (5-6) of Miller & Christensen 2003, direction e of a contact at the
    angle 2 pi e / u from its first tangent, u rows per contact (contact-major).  A contact sticks
    in the guess when its normal multiplier is basic and its lambda is not; its friction force is
    then sum_e beta_e d_e.  With the contact compliance on the friction rows (the simulator's) the
    solution spreads it over every direction within 90 degrees of it (beta_e ~ cos(angle to the
    force)): a guess with three or more basic betas gets that pattern; without compliance a
    vertex has the one or two directions around the force, and a guess with one or two gets
    those.  In a pile at rest a contact's small friction force turns a little from step to step,
    and the last step's pattern no longer fits it: a few principal solves repair the guess where
    Lemke needed tens of pivots.  The guess is only a guess: whatever it gives is verified."""
    nrm0, fr0, lam0, nc, u = cone[0], cone[1], cone[2], cone[3], cone[4]
    step = 2.0 * np.pi / u
    changed = False
    for i in range(nc):
        if not guess[nrm0 + i] or guess[lam0 + i]:
            continue
        b0 = fr0 + i * u
        nb = 0
        bad = False
        fx = 0.0
        fy = 0.0
        for e in range(u):
            if guess[b0 + e]:
                nb += 1
                if zs[b0 + e] < -tol:
                    bad = True
                beta = D[b0 + e] * zs[b0 + e]
                fx += beta * math.cos(step * e)
                fy += beta * math.sin(step * e)
        if not bad:
            continue
        th = math.atan2(fy, fx)
        if th < 0.0:
            th += 2.0 * np.pi
        d = int(th / step) % u
        for e in range(u):
            if nb >= 3:     # a compliant cone's pattern: every direction within 90 deg of the force
                new = math.cos(step * e - th) > 1e-9
            else:           # a vertex's: the one or two directions around it
                new = e == d or (nb == 2 and e == (d + 1) % u)
            if new != guess[b0 + e]:
                guess[b0 + e] = new
                changed = True
    return changed


@njit(cache=True)
def solve(M, q, dvec, warm, use_warm, max_pivots, tol, do_scale, robust,
          z, w, zb, cert, cone):
    """Full pipeline: checks, scaling, warm start, pivoting, recovery and
    verification.  Fills the output arrays z, w, zb (basic z's) and cert (ray
    certificate) and returns (status, pivots, residual, has_certificate,
    refactorisations).  ``cone`` (5 ints, else empty): the friction cones'
    layout, for up to :data:`REPAIR_ROUNDS` repairs of the warm guess
    (:func:`_repair_cones`) before Lemke starts from it."""
    n = q.shape[0]
    for i in range(n):
        z[i] = 0.0
        zb[i] = False
        cert[i] = 0.0
    counters = np.zeros(2, dtype=np.int64)
    qmin = 0.0
    for i in range(n):
        if not np.isfinite(q[i]):
            return NONFINITE, 0, 0.0, False, 0
        w[i] = q[i]
        qmin = min(qmin, q[i])
    if qmin >= 0.0 or not do_scale:
        if not _all_finite(M, q):
            return NONFINITE, 0, 0.0, False, 0
    if qmin >= 0.0:                       # trivial case: z = 0, no pivot
        return SOLVED, 0, 0.0, False, 0
    if do_scale:
        D, finite = _equilibrate(M, 1)
        if not finite:
            return NONFINITE, 0, 0.0, False, 0
    else:
        D = np.empty(n)  # (a loop, not np.ones/np.full: a library function fewer to compile)
        for i_ in range(n):
            D[i_] = 1.0
    qs = np.empty(n)
    s = 0.0
    for i in range(n):
        qs[i] = D[i] * q[i]
        s = max(s, abs(qs[i]))
    s = 2.0 ** math.ceil(math.log2(s))   # power of two: exact
    for i in range(n):
        qs[i] /= s
    # the verification measures in the equilibrated variables whether or not
    # this run pivots in them (its verdict must not depend on the run)
    Dv = D
    sv = s
    if not do_scale:
        Dv = _equilibrate(M, 1)[0]
        sv = 0.0
        for i in range(n):
            sv = max(sv, abs(Dv[i] * q[i]))
        sv = 2.0 ** math.ceil(math.log2(sv))
    dcov = np.empty(n)
    if dvec.shape[0] == n:
        dm = 0.0
        for i in range(n):
            if not (dvec[i] > 0.0 and np.isfinite(dvec[i])):
                return BAD_COVER, 0, 0.0, False, 0
            dcov[i] = D[i] * dvec[i]
            dm = max(dm, dcov[i])
        for i in range(n):
            dcov[i] /= dm
    else:
        for i in range(n):
            dcov[i] = 1.0
    zs = np.zeros(n)
    res = np.inf
    no_lu = np.empty((0, 0))
    no_piv = np.empty(0, np.int64)
    LUw, pivw, amaxw = no_lu, no_piv, 0.0  # the guess's factors, for Lemke's start from it
    safe = False
    guess = warm                          # (copied before a repair changes it: the caller's stays)
    last = warm                           # the last guess that could be factorised
    if use_warm:                          # try the guessed basis directly
        rounds = REPAIR_ROUNDS if cone.shape[0] == 5 else 0
        for rr in range(rounds + 1):
            idx, mw, LU, S0, piv, amax, fok = _principal_factor(M, D, guess)
            if not fok:
                guess = last              # a repaired guess went singular: back to the last one
                break
            for i in range(n):
                zs[i] = 0.0
            safe = False
            if mw > 0:
                _principal_from(qs, idx, mw, LU, S0, piv, zs)
                # the whole guess is the nonsingular subset below: Lemke starts from these factors
                safe = _all_pivots_safe(LU, amax)
            if safe:
                LUw, pivw, amaxw = LU, piv, amax
            else:
                LUw, pivw, amaxw = no_lu, no_piv, 0.0
            for i in range(n):
                z[i] = s * D[i] * zs[i]
            res = _verify(M, q, z, w, Dv, sv, tol)
            if res <= tol:
                for i in range(n):
                    zb[i] = guess[i]
                return SOLVED, 0, res, False, 0
            for i in range(n):
                z[i] = 0.0
                w[i] = q[i]
            if rr == rounds:
                break
            last = guess
            guess = guess.copy()
            if not _repair_cones(zs, D, guess, cone, tol):
                break
    basis = np.empty(n, dtype=np.int64)
    loc = np.empty(2 * n + 1, dtype=np.int64)
    BT = np.empty((n, n))
    x = np.empty(n)
    a = np.empty(n)
    if robust:
        check_every, piv_rel, piv_abs = 1, 1e-9, 1e-11
    else:
        check_every, piv_rel, piv_abs = 16, 1e-11, 1e-12
    warm_pivots = 0
    nwarm = 0
    wsub = np.zeros(n, dtype=np.bool_)
    if use_warm and dvec.shape[0] != n:
        if safe:
            for i in range(n):
                wsub[i] = guess[i]
            nwarm = LUw.shape[0]
        else:
            nwarm = _nonsingular_subset(M, D, guess, wsub)
    if nwarm > 0:
        # The guess did not verify as it is: run Lemke from it, or from its
        # largest safely nonsingular part (the next time step's LCP is
        # usually a few pivots away from the last one's basis).
        # Covering vector e in the transformed tableau: d = B0 e, i.e.
        # d_i = [w_i basic] - sum over warm j of A_ij.  Lemke's guarantees
        # are for the standard start, so anything but a verified solution
        # falls back to the standard start with the rest of the budget.
        dw = np.empty(n)
        for i in range(n):
            dw[i] = 0.0 if wsub[i] else 1.0
        for j in range(n):
            if wsub[j]:
                dj = D[j]
                for i in range(n):
                    dw[i] -= D[i] * M[i, j] * dj
        status, pivots, entering = _lemke_core(M, D, qs, dw, max_pivots, check_every,
                                               piv_rel, piv_abs, basis, loc, BT, x, a,
                                               counters, wsub, True, LUw, pivw, amaxw)
        z0p = loc[2 * n]
        if status == SOLVED or _z0_negligible(x, z0p, dw, tol):
            ok, res = _recover(M, q, D, s, Dv, sv, dw, qs, x, basis, loc, zb, zs, z, w, tol)
            if ok:
                return SOLVED, pivots, res, False, counters[0]
        for i in range(n):
            z[i] = 0.0
            w[i] = q[i]
            zb[i] = False
        warm_pivots = pivots
        if warm_pivots >= max_pivots:
            return MAX_PIVOTS, warm_pivots, np.inf, False, counters[0]
    status, pivots, entering = _lemke_core(M, D, qs, dcov, max_pivots - warm_pivots,
                                           check_every, piv_rel, piv_abs, basis, loc, BT,
                                           x, a, counters, warm, False, no_lu, no_piv, 0.0)
    pivots += warm_pivots
    nref = counters[0]
    z0p = loc[2 * n]
    if status == SOLVED or _z0_negligible(x, z0p, dcov, tol):
        # a complementary basis (z0 left), or an almost complementary one
        # whose z0 is numerically zero (then z0 := 0 gives a candidate too)
        ok, res = _recover(M, q, D, s, Dv, sv, dcov, qs, x, basis, loc, zb, zs, z, w, tol)
        if ok:
            return SOLVED, pivots, res, False, nref
        if status == SOLVED:
            return NUMERICAL, pivots, res, False, nref
        for i in range(n):
            zb[i] = False
    for i in range(n):
        z[i] = 0.0
        w[i] = q[i]
    if status == RAY:
        # ray: entering variable +1, basic variables -a; its z-part, unscaled
        for j in range(n):
            p = loc[n + j]
            if p >= 0:
                zb[j] = True
                cert[j] = -a[p]
        if entering >= n and entering < 2 * n:
            cert[entering - n] = 1.0
        cm = 0.0
        for i in range(n):
            cert[i] *= D[i]
            cm = max(cm, abs(cert[i]))
        if cm > 0.0:
            for i in range(n):
                cert[i] /= cm
        ok = _ray_certificate(M, q, cert, 1e-9)
        return RAY, pivots, np.inf, ok, nref
    return status, pivots, np.inf, False, nref


@njit(cache=True, inline="always")
def solve_retries(M, q, warm, use_warm, z, w, zb, cert, cone):
    """:func:`solve` with the retries of :func:`graspsim.lcp.lemke`: as asked, then robust, then with
    the scaling switched; one pivot budget of max(50 n, 200).  Returns (status code, pivots).
    Inlined into its callers (the island solver, block pivoting): compiled on its own, it would
    optimise and emit the whole Lemke kernel once more on the first run (2.5 s)."""
    n = q.shape[0]
    budget_total = max(50 * n, 200)
    pivots = 0
    code = 3
    for attempt in range(3):
        budget = budget_total - pivots
        if budget < 1:
            break
        code, piv, res, has_cert, nr = solve(M, q, np.empty(0), warm, use_warm and attempt == 0,
                                             budget, 1e-9, attempt < 2, attempt > 0, z, w, zb, cert, cone)
        pivots += piv
        if code == 0 or code == 2 or (code == 1 and has_cert):
            break
    return code, pivots

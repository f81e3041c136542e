"""Large contact LCPs: warm-started block principal pivoting, finished by Lemke (numba, lazy, cached).

    LCP(M, q):  z >= 0,  w = M z + q >= 0,  z . w = 0.

Block principal pivoting (Judice & Pires 1994, "A block principal pivoting algorithm for
large-scale strictly monotone linear complementarity problems", Comput. Oper. Res. 21) keeps a
guess F of the positive z's, solves the principal system ``M_FF z_F = -q_F`` (z = 0 off F) and
moves every index whose sign is wrong (z_i < 0 in F, w_i < 0 outside F) to the other side; when
the number of wrong signs stops falling it moves one index at a time (Murty's rule).  One
iteration costs one factorisation of M_FF instead of a Lemke pivot per wrong index.  A contact
pile's LCP (eq. 21 of Miller & Christensen 2003, with the friction-cone rows of eq. 5-6) changes
from one time step to the next, and the previous step's basis is the natural guess.

Every answer is checked by the Lemke kernel's own verification (``_kernel._verify``: z >= 0,
w >= 0 and complementarity, violations of w measured against ||q||), and block pivoting's own
answers also by :func:`_terms_small` (no answer that passes on the rounding allowance alone).
Block pivoting has no convergence guarantee on these matrices (the friction-cone rows give them
zero diagonal entries: not P-matrices), so when it has not produced a verified answer within
``max_iter`` factorisations, the project's Lemke runs with the retries of
:func:`graspsim.lcp.lemke`, from the caller's guess or cold (see :func:`solve_stats`).  The
verdict ("solved" or not) is thus always Lemke's or a verified one.

Measured on the peers' 20-box drop this does not beat the warm-started Lemke (docs/lcp.md,
"Large contact LCPs"), so the island solver does not use it; ``graspsim.lcp.solve_large`` does.

The principal systems: the contact block (rows with a positive diagonal: normals, friction
directions, limits) is ``G + compliance`` = symmetric positive definite, factorised by Cholesky;
the friction-cone multipliers lambda (zero diagonal, eq. 6) in F are eliminated through their
small Schur complement (LU).  Anything else (a negative diagonal, a failed Cholesky) takes the
dense LU of the Lemke kernel.  All of it in the kernel's power-of-two equilibrated variables.

No function in this module is compiled at import time.
"""
import numpy as np

from .._jit import njit
from ._kernel import (_all_finite, _equilibrate, _lu_factor, _lu_solve, _nonsingular_subset,
                      _principal_solve, _verify, solve_retries as _lemke_retries)

#: LCPs with at least this many rows go through block pivoting first (below: Lemke only).  The
#: island solver does not call this module: on the 20-box drop it did not beat the warm-started
#: Lemke (docs/lcp.md, "Large contact LCPs"); ``graspsim.lcp.solve_large`` exposes it.
MIN_ROWS = 100
#: factorisations allowed before Lemke takes over (by measurement on the drop: more iterations
#: rarely converge from a guess that is far off, and cost more than they save)
MAX_ITER = 3
#: full exchanges allowed without fewer wrong signs before single (Murty) exchanges
BACKUP = 3
#: Lemke runs cold when the warm guess's principal solution has more wrong signs than this times n.
#: Never by default: on single LCPs a cold run was often cheaper from a far guess, but in the
#: drop's time loop its basis made worse warm starts (1.5x the pivots; docs/lcp.md)
COLD_ABOVE = 2.0


@njit(cache=True, fastmath={"reassoc", "contract"})
def _chol(S, k):
    """In-place Cholesky S = L L^T of the leading k x k block (lower triangle read and written,
    row by row: each entry is a contiguous dot product).  False when a pivot is not above 1e-13 of
    the largest diagonal entry (singular or not positive definite)."""
    amax = 0.0
    for i in range(k):
        amax = max(amax, S[i, i])
    tiny = 1e-13 * amax
    for i in range(k):
        Li = S[i]
        for j in range(i):
            Lj = S[j]
            t = Li[j]
            for c in range(j):
                t -= Li[c] * Lj[c]
            Li[j] = t / Lj[j]
        d = Li[i]
        for c in range(i):
            d -= Li[c] * Li[c]
        if not d > tiny:
            return False
        Li[i] = np.sqrt(d)
    return True


@njit(cache=True, fastmath={"reassoc", "contract"})
def _chol_solve(L, k, b):
    """b <- (L L^T)^-1 b for the factor of :func:`_chol`."""
    for i in range(k):
        Li = L[i]
        t = b[i]
        for c in range(i):
            t -= Li[c] * b[c]
        b[i] = t / Li[i]
    for i in range(k - 1, -1, -1):
        b[i] /= L[i, i]
        xi = b[i]
        Li = L[i]
        for c in range(i):
            b[c] -= Li[c] * xi


@njit(cache=True)
def _block_apply(L, kp, SB, T, tpiv, C, kz, rhs, out):
    """out <- A_FF^-1 rhs with A_FF = [[S, B], [C, E]] (S = L L^T on the positive-diagonal
    indices, first kp entries; the kz others last), SB = S^-1 B, T = E - C S^-1 B (LU factors)."""
    for i in range(kp):
        out[i] = rhs[i]
    _chol_solve(L, kp, out)                          # y_P = S^-1 r_P
    if kz > 0:
        xz = np.empty(kz)
        for a in range(kz):
            t = rhs[kp + a]
            for c in range(kp):
                t -= C[a, c] * out[c]
            xz[a] = t
        _lu_solve(T, tpiv, xz)                        # x_Z = T^-1 (r_Z - C y_P)
        for i in range(kp):
            t = 0.0
            for a in range(kz):
                t += SB[i, a] * xz[a]
            out[i] -= t                               # x_P = y_P - S^-1 B x_Z
        for a in range(kz):
            out[kp + a] = xz[a]


@njit(cache=True)
def _principal(M, D, qs, mask, zs):
    """zs_F <- -A_FF^-1 q'_F (A = D M D), zero off F = `mask`, with one step of iterative
    refinement against the unsymmetrised A_FF.  Cholesky + Schur complement as in the module
    docstring; the Lemke kernel's LU when the positive-diagonal block is not positive definite.
    False when A_FF is singular."""
    n = qs.shape[0]
    idx = np.empty(n, np.int64)
    kp = 0
    kz = 0
    neg = False
    for i in range(n):
        zs[i] = 0.0
        if mask[i]:
            d = M[i, i]
            if d > 0.0:
                kp += 1
            elif d == 0.0:
                kz += 1
            else:
                neg = True
    if kp + kz == 0 and not neg:
        return True
    if neg:
        return _principal_solve(M, D, qs, mask, zs)
    a = 0
    b = kp
    for i in range(n):                                # positive diagonals first, then zeros
        if mask[i]:
            if M[i, i] > 0.0:
                idx[a] = i
                a += 1
            else:
                idx[b] = i
                b += 1
    k = kp + kz
    AF = np.empty((k, k))                             # A_FF in the order idx
    for r in range(k):
        ir = idx[r]
        dr = D[ir]
        Mr = M[ir]
        for c in range(k):
            ic = idx[c]
            AF[r, c] = dr * Mr[ic] * D[ic]
    L = np.empty((kp, kp))
    for r in range(kp):
        for c in range(r + 1):
            L[r, c] = AF[r, c]
    if not _chol(L, kp):
        return _principal_solve(M, D, qs, mask, zs)
    SB = np.empty((kp, kz))
    T = np.empty((kz, kz))
    C = np.empty((kz, kp))
    tpiv = np.empty(kz, np.int64)
    if kz > 0:
        col = np.empty(kp)
        for a in range(kz):
            for r in range(kp):
                col[r] = AF[r, kp + a]
            _chol_solve(L, kp, col)
            for r in range(kp):
                SB[r, a] = col[r]
        for a in range(kz):
            for c in range(kp):
                C[a, c] = AF[kp + a, c]
            for e in range(kz):
                t = AF[kp + a, kp + e]
                for c in range(kp):
                    t -= C[a, c] * SB[c, e]
                T[a, e] = t
        if not _lu_factor(T, tpiv, 1.0):
            return False
    rhs = np.empty(k)
    x = np.empty(k)
    for r in range(k):
        rhs[r] = -qs[idx[r]]
    _block_apply(L, kp, SB, T, tpiv, C, kz, rhs, x)
    for r in range(k):                                # residual with the whole A_FF
        t = -qs[idx[r]]
        AFr = AF[r]
        for c in range(k):
            t -= AFr[c] * x[c]
        rhs[r] = t
    dx = np.empty(k)
    _block_apply(L, kp, SB, T, tpiv, C, kz, rhs, dx)
    for r in range(k):
        zs[idx[r]] = x[r] + dx[r]
    return True


@njit(cache=True)
def _terms_small(M, q, z, D, s, tol):
    """Is the rounding allowance of the verification (``(n + 1) eps / tol`` times the terms
    |q_i| + sum_j |M_ij z_j|) at most its ``||q||`` part, in every row?  A principal solve on a
    nearly singular block can land far out along a ray of an infeasible problem (z ~ 1e9), where
    the allowance alone lets the point pass; such an answer is left to Lemke, whose pivoting
    ends in a ray there.  (Found by test_lcp_large's infeasible families.)"""
    n = q.shape[0]
    lim = tol / ((n + 1) * 2.220446049250313e-16)
    nz = np.empty(n, dtype=np.int64)
    m = 0
    for j in range(n):
        if z[j] != 0.0:
            nz[m] = j
            m += 1
    for i in range(n):
        mag = abs(q[i])
        Mi = M[i]
        for t in range(m):
            j = nz[t]
            mag += abs(Mi[j] * z[j])
        if mag * D[i] > lim * s:
            return False
    return True


@njit(cache=True)
def _bpp(M, q, D, s, qs, guess, max_iter, tol, z, w, zb, best):
    """Block principal pivoting from the set `guess`.  On success z, w (= M z + q) and zb (= F)
    hold a verified solution.  `best` receives the set with the fewest wrong signs seen (the warm
    start handed to Lemke otherwise).  Returns (verified, factorisations)."""
    n = q.shape[0]
    F = guess.copy()
    sub = np.empty(n, dtype=np.bool_)
    zs = np.empty(n)
    flip = np.empty(n, dtype=np.bool_)
    for i in range(n):
        best[i] = F[i]
    nbest = n + 1
    backup = BACKUP
    nf = 0
    ninf0 = n + 1
    for it in range(max_iter):
        nf += 1
        if not _principal(M, D, qs, F, zs):
            # a singular guess (redundant contacts, a lambda without its friction rows): keep a
            # safely nonsingular part of it
            nf += 1
            if _nonsingular_subset(M, D, F, sub) == 0:
                return False, nf, ninf0
            for i in range(n):
                F[i] = sub[i]
            nf += 1
            if not _principal(M, D, qs, F, zs):
                return False, nf, ninf0
        for i in range(n):
            z[i] = s * D[i] * zs[i]
        res = _verify(M, q, z, w, D, s, tol)
        if res <= tol and _terms_small(M, q, z, D, s, tol):
            for i in range(n):
                zb[i] = F[i]
            return True, nf, 0
        # wrong signs, on the verification's scales (scaled variables: ||q'|| <= 1)
        zmax = 1e-6
        for i in range(n):
            zmax = max(zmax, abs(zs[i]))
        ninf = 0
        last = -1
        for i in range(n):
            if F[i]:
                bad = zs[i] < -tol * zmax
            else:
                bad = D[i] * w[i] < -tol * s
            flip[i] = bad
            if bad:
                ninf += 1
                last = i
        if ninf == 0:
            return False, nf, ninf0                   # right signs but not verified: accuracy
        if ninf < nbest:
            nbest = ninf
            backup = BACKUP
            for i in range(n):
                best[i] = F[i]
        elif backup > 0:
            backup -= 1
        else:
            for i in range(n):                        # Murty: only the last wrong index moves
                flip[i] = i == last
        for i in range(n):
            if flip[i]:
                F[i] = not F[i]
    return False, nf, ninf0


@njit(cache=True)
def solve_stats(M, q, warm, use_warm, min_rows, max_iter, cold_above, z, w, zb, cert):
    """LCP(M, q) by block pivoting (n >= min_rows), then Lemke if that did not verify.

    ``warm`` (bool, n) is the guess of the positive z's when ``use_warm`` (block pivoting runs only
    with a guess).  Fills z, w, zb (basic z's: the next warm start) and cert as the Lemke kernel does.
    Returns (status code of the Lemke kernel, Lemke pivots, factorisations of block pivoting,
    whether Lemke ran).  Lemke starts from ``warm``, or from the standard start when the warm guess's
    principal solution had more than ``cold_above * n`` wrong signs (or was singular): the warm
    run's setup (a dense basis of every guessed z) and pivots then cost more than a cold run."""
    n = q.shape[0]
    uw = use_warm and warm.shape[0] == n
    # without a guess, block pivoting from {q_i < 0} took 4-20 factorisations and mostly ended in
    # Lemke anyway (measured on the pile's LCPs): Lemke alone
    if n < min_rows or not uw or not _all_finite(M, q):
        code, piv = _lemke_retries(M, q, warm, use_warm, z, w, zb, cert, np.empty(0, np.int64))
        return code, piv, 0, True
    qmin = 0.0
    for i in range(n):
        qmin = min(qmin, q[i])
        z[i] = 0.0
        w[i] = q[i]
        zb[i] = False
        cert[i] = 0.0
    if qmin >= 0.0:                                   # z = 0
        return 0, 0, 0, False
    D, finite = _equilibrate(M, 1)                    # the Lemke kernel's scaling and check scale
    qs = np.empty(n)
    s = 0.0
    for i in range(n):
        qs[i] = D[i] * q[i]
        s = max(s, abs(qs[i]))
    s = 2.0 ** np.ceil(np.log2(s))
    for i in range(n):
        qs[i] /= s
    guess = warm.copy()
    best = np.empty(n, dtype=np.bool_)
    ok, nf, ninf0 = _bpp(M, q, D, s, qs, guess, max_iter, 1e-9, z, w, zb, best)
    if ok:
        return 0, 0, nf, False
    cold = ninf0 > cold_above * n
    code, piv = _lemke_retries(M, q, warm, not cold, z, w, zb, cert, np.empty(0, np.int64))
    if code != 0 and cold:                            # the cold run failed: the warm one may not
        code, p2 = _lemke_retries(M, q, warm, True, z, w, zb, cert, np.empty(0, np.int64))
        piv += p2
    return code, piv, nf, True


@njit(cache=True)
def solve_contact(M, q, warm, use_warm, z, w, zb, cert):
    """A drop-in for the island solver's LCP call (same arguments and outputs as its Lemke
    retries in ``dynamics/_island_kernel.py``): block pivoting for LCPs of at least MIN_ROWS rows,
    Lemke below and as the fallback.  Returns (status code, work) with work = Lemke pivots +
    block-pivoting factorisations.  Not switched on (docs/lcp.md)."""
    code, piv, nf, fell_back = solve_stats(M, q, warm, use_warm, MIN_ROWS, MAX_ITER, COLD_ABOVE, z, w, zb, cert)
    return code, piv + nf


@njit(cache=True)
def verify(M, q, z, tol):
    """The Lemke kernel's verification of z for LCP(M, q) (its scaling, its tolerance rule):
    returns (worst scaled violation, w = M z + q).  A solution passes with violation <= tol."""
    n = q.shape[0]
    w = np.empty(n)
    D, finite = _equilibrate(M, 1)
    s = 0.0
    for i in range(n):
        s = max(s, abs(D[i] * q[i]))
    if s == 0.0:
        for i in range(n):
            w[i] = q[i]
        return 0.0, w
    s = 2.0 ** np.ceil(np.log2(s))
    return _verify(M, q, z, w, D, s, tol), w

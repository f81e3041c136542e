"""Step 10 for an island whose hard joint rows form a tree: the equality rows eliminated along it.

The same linear system as :func:`graspsim.dynamics._island_kernel.solve_island` (the mixed LCP of
eq. 17-21 of Miller & Christensen 2003, in maximal coordinates), solved by a cheaper exact
elimination (issue 18, sixteenth pass; ``benchmarks/bench_tree_elimination.py``):

* The hard rows of a joint tie its child's twist to its parent's: ``P v_p + C v_c = b`` (m = 5 or
  6 rows, C of full row rank).  In tree order ``v_c = C^+ (b - P v_p) + N q_c`` with N (6 x (6 - m))
  a basis of C's null space (Householder QR of C^T): every twist is ``v = S q + v0``, ``q`` one
  coordinate per joint freedom and six per body without a joint, ``v0`` the part that meets the
  joints' right-hand sides (their error correction).
* With ``Hq = S^T M S`` a soft row of compliance c > 0 adds ``k^T k / c`` (k = the row times S):
  ``(Hq + K^T C^-1 K)^-1`` is the soft rows' Schur complement, inverted (Woodbury).  The other hard
  rows (couplings, a joint closing a loop) and soft rows without compliance are eliminated through
  their small Schur complement.
* The contact rows' LCP block is then ``Y^T Y - Z^T Z`` (``Y = L^-1 (H S)^T`` with L the Cholesky
  factor of the coordinates' matrix, Z the couplings' term), the free velocities and the velocity
  change after the LCP one solve each in the coordinates, and the joints' own impulses follow by
  back-substitution from the leaves (each body's momentum change less every other row's impulse).

No 53 x 53 (the held mug) or 104 x 104 (the Puma) factorisation: O(bodies) small blocks and
O(rows x coordinates) products.  A joint block that is not of full rank goes through the Schur
complement with the couplings.

**Not used by the simulator yet.**  :func:`tree_island` solves the hand's islands 5-27 % faster
than ``solve_island`` (held mug 34.8-52.0 against 42.4-65.9 us, Puma grasp 199-242 against
254-287 us; a two-body island is slower; the same velocities to ~1e-9,
tests/test_tree_elimination.py, ``benchmarks/bench_tree_elimination.py``), but it compiles in
~5.6 s more CPU, and wired into ``solve_islands`` it took the README's first job from 36.1 to
45.2 s of wall time on a cold cache (solve_islands' compile 22.8 -> 35.7 s CPU).  Its rounding
differs from the block elimination's, so a simulator cannot switch to it once it is compiled
without changing its results.  ``_island_kernel.solve_islands`` keeps the block elimination
(docs/dynamics_performance.md, sixteenth pass).
"""
from __future__ import annotations

import numpy as np

from .._jit import njit
from ._island_kernel import OK, _entries, _expand, _friction_basis, _lcp_solve, _rows_times

#: returned instead of a status when the island is not eliminated here (the island kernel's way)
NOT_TREE = -1
#: a joint block's QR pivot below this fraction of its largest entry: not of full rank
RANK_TOL = 1e-10


@njit(cache=True)
def _plan(eb, ecnt, n_hard, soft_comp, nbi, banned):
    """The joints among the hard rows: groups of 5 or 6 hard rows on one body and the world or on
    one pair of bodies (not ``banned``), oriented from the bodies attached to the world (then from
    bodies without a joint) outwards.  Returns (order (nbi,) parents first, parent (nbi,) -1: none, group start and
    rows (CSR by body: its joint's rows, in row order), coupling (ne,) bool: the rows eliminated
    through their Schur complement -- hard rows of no joint and soft rows without compliance)."""
    ne = eb.shape[0]
    # groups of hard rows by their body set (a, b): b = -1 for one body
    ga = np.empty(ne, np.int64)
    gb = np.empty(ne, np.int64)
    gcnt = np.zeros(ne, np.int64)
    grp = np.full(ne, -1, np.int64)
    ng = 0
    for i in range(n_hard):
        if ecnt[i] == 0 or ecnt[i] > 2 or banned[i]:
            continue
        a = eb[i, 0]
        b = eb[i, 1] if ecnt[i] == 2 else -1
        if b >= 0 and b < a:
            a, b = b, a
        g = -1
        for x in range(ng):
            if ga[x] == a and gb[x] == b:
                g = x
                break
        if g < 0:
            g = ng
            ga[g] = a
            gb[g] = b
            ng += 1
        grp[i] = g
        gcnt[g] += 1
    usable = np.zeros(ng, np.bool_)
    for g in range(ng):
        usable[g] = gcnt[g] == 5 or gcnt[g] == 6
    # orientation: a breadth-first pass from the world-attached bodies, then from the others
    parent = np.full(nbi, -1, np.int64)
    joint = np.full(nbi, -1, np.int64)          # the group of each body's joint
    used = np.zeros(ng, np.bool_)
    seen = np.zeros(nbi, np.bool_)
    order = np.empty(nbi, np.int64)
    no = 0
    for g in range(ng):
        if usable[g] and gb[g] < 0 and not seen[ga[g]]:
            seen[ga[g]] = True
            joint[ga[g]] = g
            used[g] = True
            order[no] = ga[g]
            no += 1
    head = 0
    for rootpass in range(2):
        if rootpass == 1:
            head = no
        for r in range(nbi):
            if rootpass == 1:
                if seen[r]:
                    continue
                seen[r] = True
                order[no] = r
                no += 1
            while head < no:
                x = order[head]
                head += 1
                for g in range(ng):
                    if not usable[g] or used[g] or gb[g] < 0 or (ga[g] != x and gb[g] != x):
                        continue
                    y = gb[g] if ga[g] == x else ga[g]
                    if seen[y]:
                        continue
                    used[g] = True
                    seen[y] = True
                    parent[y] = x
                    joint[y] = g
                    order[no] = y
                    no += 1
            if rootpass == 0:
                break
    coupling = np.zeros(ne, np.bool_)
    gstart = np.zeros(nbi + 1, np.int64)
    for b in range(nbi):
        gstart[b + 1] = gstart[b] + (gcnt[joint[b]] if joint[b] >= 0 else 0)
    grows = np.empty(gstart[nbi], np.int64)
    fill = gstart[:-1].copy()
    owner = np.full(ng, -1, np.int64)
    for b in range(nbi):
        if joint[b] >= 0:
            owner[joint[b]] = b
    for i in range(ne):
        if i < n_hard:
            g = grp[i]
            if g >= 0 and owner[g] >= 0:
                b = owner[g]
                grows[fill[b]] = i
                fill[b] += 1
            else:
                coupling[i] = True
        elif not (soft_comp[i - n_hard] > 0.0):
            coupling[i] = True
    return order, parent, gstart, grows, coupling


@njit(cache=True)
def _joint_blocks(b, p, gstart, grows, eb, ej, ecnt, Cb, Pb):
    """The joint rows' blocks on the child b (C) and on its parent p (P; zero for the world)."""
    m = gstart[b + 1] - gstart[b]
    for i in range(m):
        r = grows[gstart[b] + i]
        for j in range(6):
            Cb[i, j] = 0.0
            Pb[i, j] = 0.0
        for e in range(ecnt[r]):
            if eb[r, e] == b:
                for j in range(6):
                    Cb[i, j] += ej[r, e, j]
            elif eb[r, e] == p:
                for j in range(6):
                    Pb[i, j] += ej[r, e, j]
    return m


@njit(cache=True)
def _pinv_null(Cb, m, X, N, A, Q, v):
    """X = C^+ (6 x m) and N (6 x (6 - m)) a basis of C's null space, for C (m x 6) of full row
    rank, from the Householder QR C^T = Q [R; 0] (A, Q, v: 6 x 6, 6 x 6, 6 scratch).  False when a
    pivot of R is below RANK_TOL of C's largest entry."""
    big = 0.0
    for i in range(6):
        for j in range(m):
            A[i, j] = Cb[j, i]
            big = max(big, abs(Cb[j, i]))
        for j in range(6):
            Q[i, j] = 1.0 if i == j else 0.0
    for k in range(m):
        nx = 0.0
        for i in range(k, 6):
            nx += A[i, k] * A[i, k]
        nx = np.sqrt(nx)
        if not (nx > RANK_TOL * big):
            return False
        a = -nx if A[k, k] >= 0.0 else nx
        for i in range(k, 6):
            v[i] = A[i, k]
        v[k] -= a
        vv = 0.0
        for i in range(k, 6):
            vv += v[i] * v[i]
        for j in range(k, m):
            f = 0.0
            for i in range(k, 6):
                f += v[i] * A[i, j]
            f = 2.0 * f / vv
            for i in range(k, 6):
                A[i, j] -= f * v[i]
        for i in range(6):
            f = 0.0
            for j in range(k, 6):
                f += Q[i, j] * v[j]
            f = 2.0 * f / vv
            for j in range(k, 6):
                Q[i, j] -= f * v[j]
    for i in range(6):                      # X R^T = Q1: back substitution on R
        for j in range(m - 1, -1, -1):
            t = Q[i, j]
            for k in range(j + 1, m):
                t -= A[j, k] * X[i, k]
            X[i, j] = t / A[j, j]
        for k in range(6 - m):
            N[i, k] = Q[i, m + k]
    return True


@njit(cache=True)
def _particular(order, parent, gstart, grows, PB, X, rhs_e, v0):
    """v0 (nbi, 6): twists meeting the joints' rows ``P v_p + C v_c = rhs_e`` (their entries of
    ``rhs_e``, by equality-row position; P the joints' blocks on the parents ``PB``, C^+ ``X``),
    zero on bodies without a joint: v0_c = C^+ (b - P v0_p)."""
    t = np.empty(6)
    for b in order:
        for j in range(6):
            v0[b, j] = 0.0
        p = parent[b]
        m = gstart[b + 1] - gstart[b]
        if m == 0:
            continue
        for i in range(m):
            s = rhs_e[grows[gstart[b] + i]]
            if p >= 0:
                for j in range(6):
                    s -= PB[b, i, j] * v0[p, j]
            t[i] = s
        for j in range(6):
            s = 0.0
            for i in range(m):
                s += X[b, j, i] * t[i]
            v0[b, j] = s


@njit(cache=True)
def _row_q(r, eb, ej, ecnt, S, qcnt, qcol, out):
    """out (nq,) <- compact row r times S."""
    for k in range(out.shape[0]):
        out[k] = 0.0
    for e in range(ecnt[r]):
        b = eb[r, e]
        for k in range(qcnt[b]):
            t = 0.0
            for j in range(6):
                t += ej[r, e, j] * S[b, j, k]
            out[qcol[b, k]] += t


@njit(cache=True)
def _row_v(r, eb, ej, ecnt, v):
    """Compact row r times the twists v (nbi, 6)."""
    t = 0.0
    for e in range(ecnt[r]):
        b = eb[r, e]
        for j in range(6):
            t += ej[r, e, j] * v[b, j]
    return t


@njit(cache=True)
def _chol(A):
    """Cholesky factor of SPD A (a tiny diagonal, 1e-12 of the largest entry, when redundant rows
    make it singular, as the island kernel's _factor); (L, ok)."""
    n = A.shape[0]
    L = np.zeros((n, n))
    for attempt in range(2):
        ok = True
        for i in range(n):
            for j in range(i + 1):
                t = A[i, j]
                for k in range(j):
                    t -= L[i, k] * L[j, k]
                if i == j:
                    if not (t > 0.0):
                        ok = False
                        break
                    L[i, i] = np.sqrt(t)
                else:
                    L[i, j] = t / L[j, j]
            if not ok:
                break
        if ok or attempt == 1:
            return L, ok
        big = 1.0
        for i in range(n):
            for j in range(n):
                big = max(big, abs(A[i, j]))
        A = A.copy()
        for i in range(n):
            A[i, i] += 1e-12 * big
    return L, False


@njit(cache=True)
def _fwd(L, y):
    """y <- L^-1 y."""
    for i in range(L.shape[0]):
        t = y[i]
        for k in range(i):
            t -= L[i, k] * y[k]
        y[i] = t / L[i, i]


@njit(cache=True)
def _bwd(L, y):
    """y <- L^-T y."""
    for i in range(L.shape[0] - 1, -1, -1):
        t = y[i]
        for k in range(i + 1, L.shape[0]):
            t -= L[k, i] * y[k]
        y[i] = t / L[i, i]


@njit(cache=True)
def _qsolve(L, W, Lr, f, g):
    """The coordinates q and the couplings' impulses c of ``H' q = f + K^T c``, ``K q + C c = g``
    (H' = L L^T, W = L^-1 K^T, W^T W + C = Lr Lr^T)."""
    nk = W.shape[1]
    y = f.copy()
    _fwd(L, y)
    c = np.empty(nk)
    for a in range(nk):
        t = g[a]
        for i in range(y.shape[0]):
            t -= W[i, a] * y[i]
        c[a] = t
    if nk:
        _fwd(Lr, c)
        _bwd(Lr, c)
    for i in range(y.shape[0]):
        t = y[i]
        for a in range(nk):
            t += W[i, a] * c[a]
        y[i] = t
    _bwd(L, y)
    return y, c


@njit(cache=True)
def _coords_solve(vstar, v0, r, S, qcnt, qcol, M, L, W, Lr, eb, ej, ecnt, coupling, kidx, comp, eq_rows, n_hard):
    """The coordinates q and the couplings' impulses c of the twists ``S q + v0`` (v0 meets the
    joints' rows) nearest ``vstar`` (6 nbi,) in M's norm with the other equality rows' right-hand
    sides ``r`` (by row position): ``H' q = S^T M (v* - v0) + sum_soft k (r - e v0) / c + K^T c``,
    ``K q + C c = r - e v0`` for the couplings."""
    nbi = S.shape[0]
    nq = L.shape[0]
    ne = eq_rows.shape[0]
    f = np.zeros(nq)
    tv = np.empty(6)
    kr = np.empty(nq)
    for b in range(nbi):
        for i in range(6):
            t = 0.0
            for j in range(6):
                t += M[b, i, j] * (vstar[6 * b + j] - v0[b, j])
            tv[i] = t
        for k in range(qcnt[b]):
            t = 0.0
            for i in range(6):
                t += S[b, i, k] * tv[i]
            f[qcol[b, k]] += t
    g = np.empty(W.shape[1])
    for a in range(g.shape[0]):
        g[a] = r[kidx[a]] - _row_v(kidx[a], eb, ej, ecnt, v0)
    for i in range(n_hard, ne):
        if not coupling[i]:
            _row_q(i, eb, ej, ecnt, S, qcnt, qcol, kr)
            s = (r[i] - _row_v(i, eb, ej, ecnt, v0)) / comp[eq_rows[i]]
            for x in range(nq):
                f[x] += kr[x] * s
    return _qsolve(L, W, Lr, f, g)


@njit(cache=True)
def _twists(S, qcnt, qcol, q, v0, out):
    """out (nbi, 6) = S q + v0."""
    for b in range(S.shape[0]):
        for j in range(6):
            t = v0[b, j]
            for k in range(qcnt[b]):
                t += S[b, j, k] * q[qcol[b, k]]
            out[b, j] = t


@njit(cache=True)
def tree_prepare(local, Minv, aM, bodies, jac, rhs, comp, eq_rows, n_hard, rows, nl, nc, u):
    """The island's equality rows (``n_hard`` hard, then soft; at least one) eliminated along the
    joint tree: the contact rows' LCP block G (on ``rows``: ``nl`` limits and normals, then ``u``
    friction rows per contact for ``nc`` contacts), their velocities without contact impulses
    ``Hv``, the free velocities (6 nbi,), the rows in compact form and what :func:`tree_finish`
    takes.  Arguments as ``_island_kernel.solve_island``'s."""
    nv = aM.shape[0]
    nbi = nv // 6
    ne = eq_rows.shape[0]
    eb, ej, ecnt = _entries(local, bodies, jac, eq_rows)
    soft_comp = np.empty(ne - n_hard)
    for i in range(ne - n_hard):
        soft_comp[i] = comp[eq_rows[n_hard + i]]
    banned = np.zeros(ne, np.bool_)
    for attempt in range(ne + 1):
        order, parent, gstart, grows, coupling = _plan(eb, ecnt, n_hard, soft_comp, nbi, banned)
        bad, qcnt, qcol, nq, S, X, PB = _bases(order, parent, gstart, grows, eb, ej, ecnt, nbi)
        if bad < 0:
            break
        for x in range(gstart[bad], gstart[bad + 1]):      # (a joint block not of full rank: its
            banned[grows[x]] = True                        # rows through the Schur complement)
    # the bodies' mass matrices M = (M^-1)^-1: diag(m, m, m) and the world inertia (mass_terms'
    # M^-1 is diag(1/m) and the inertia's inverse; the latter inverted back by cofactors)
    M = np.zeros((nbi, 6, 6))
    for b in range(nbi):
        for i in range(6):
            for j in range(6):
                if (i < 3 or j < 3) and i != j and Minv[b, i, j] != 0.0:
                    raise ValueError("tree_prepare: M^-1 not in mass_terms' layout")
        for i in range(3):
            M[b, i, i] = 1.0 / Minv[b, i, i]
        J = Minv[b, 3:, 3:]
        c00 = J[1, 1] * J[2, 2] - J[1, 2] * J[2, 1]
        c01 = J[1, 2] * J[2, 0] - J[1, 0] * J[2, 2]
        c02 = J[1, 0] * J[2, 1] - J[1, 1] * J[2, 0]
        det = J[0, 0] * c00 + J[0, 1] * c01 + J[0, 2] * c02
        if not (det > 0.0):
            raise ValueError("tree_prepare: an inertia that is not positive definite")
        M[b, 3, 3] = c00 / det
        M[b, 4, 3] = c01 / det
        M[b, 5, 3] = c02 / det
        M[b, 3, 4] = (J[0, 2] * J[2, 1] - J[0, 1] * J[2, 2]) / det
        M[b, 4, 4] = (J[0, 0] * J[2, 2] - J[0, 2] * J[2, 0]) / det
        M[b, 5, 4] = (J[0, 1] * J[2, 0] - J[0, 0] * J[2, 1]) / det
        M[b, 3, 5] = (J[0, 1] * J[1, 2] - J[0, 2] * J[1, 1]) / det
        M[b, 4, 5] = (J[0, 2] * J[1, 0] - J[0, 0] * J[1, 2]) / det
        M[b, 5, 5] = (J[0, 0] * J[1, 1] - J[0, 1] * J[1, 0]) / det
    Hq = np.zeros((nq, nq))
    T = np.empty((6, nq))
    for b in range(nbi):
        kb = qcnt[b]
        for i in range(6):
            for k in range(kb):
                t = 0.0
                for j in range(6):
                    t += M[b, i, j] * S[b, j, k]
                T[i, k] = t
        for k in range(kb):
            for l in range(k, kb):
                t = 0.0
                for i in range(6):
                    t += S[b, i, k] * T[i, l]
                ck = qcol[b, k]
                cl = qcol[b, l]
                Hq[ck, cl] += t
                if cl != ck:
                    Hq[cl, ck] += t
    # soft rows with compliance: Hq += k^T k / c; the couplings' rows K (nk, nq)
    nk = 0
    for i in range(ne):
        if coupling[i]:
            nk += 1
    K = np.empty((nk, nq))
    kidx = np.empty(nk, np.int64)
    kr = np.empty(nq)
    a = 0
    for i in range(ne):
        if coupling[i]:
            _row_q(i, eb, ej, ecnt, S, qcnt, qcol, K[a])
            kidx[a] = i
            a += 1
        elif i >= n_hard:
            _row_q(i, eb, ej, ecnt, S, qcnt, qcol, kr)
            ic = 1.0 / comp[eq_rows[i]]
            for x in range(nq):
                kx = kr[x] * ic
                if kx != 0.0:
                    for y in range(nq):
                        Hq[x, y] += kx * kr[y]
    L, fok = _chol(Hq)
    W = np.empty((nq, nk))
    for a in range(nk):
        col = K[a].copy()
        _fwd(L, col)
        for x in range(nq):
            W[x, a] = col[x]
    Ar = np.empty((nk, nk))
    for a in range(nk):
        for c in range(nk):
            t = 0.0
            for x in range(nq):
                t += W[x, a] * W[x, c]
            Ar[a, c] = t
        Ar[a, a] += comp[eq_rows[kidx[a]]] if kidx[a] >= n_hard else 0.0
    Lr, rok = _chol(Ar)
    fok = fok and rok
    # the free velocities: (H') q = S^T M (v* - v0) + sum_soft k (r - e v0) / c, couplings K q + C c = r - e v0
    rhs_e = np.empty(ne)
    for i in range(ne):
        rhs_e[i] = rhs[eq_rows[i]]
    v0 = np.empty((nbi, 6))
    _particular(order, parent, gstart, grows, PB, X, rhs_e, v0)
    q, c_free = _coords_solve(aM, v0, rhs_e, S, qcnt, qcol, M, L, W, Lr, eb, ej, ecnt, coupling, kidx, comp,
                              eq_rows, n_hard)
    vf = np.empty((nbi, 6))
    _twists(S, qcnt, qcol, q, v0, vf)
    v_free = np.empty(nv)
    for b in range(nbi):
        for j in range(6):
            v_free[6 * b + j] = vf[b, j]
    nh = rows.shape[0]
    hb, hj, hcnt = _entries(local, bodies, jac, rows)
    G = np.empty((0, 0))
    Hv = np.empty(0)
    if nl:
        base, ca_, cb_, pa_, pb_ = _friction_basis(nl, nc if nh > nl else 0, u)
        nbse = base.shape[0]
        Y = np.empty((nq, nbse))
        for x in range(nbse):
            _row_q(base[x], hb, hj, hcnt, S, qcnt, qcol, kr)
            _fwd(L, kr)
            for y in range(nq):
                Y[y, x] = kr[y]
        Z = np.empty((nbse, nk))            # (rows: each L_r^-1 solve on a contiguous vector)
        for x in range(nbse):
            for a in range(nk):
                t = 0.0
                for y in range(nq):
                    t += W[y, a] * Y[y, x]
                Z[x, a] = t
            if nk:
                _fwd(Lr, Z[x])
        Gb = np.empty((nbse, nbse))
        for x in range(nbse):
            for y in range(x, nbse):
                t = 0.0
                for k in range(nq):
                    t += Y[k, x] * Y[k, y]
                for k in range(nk):
                    t -= Z[x, k] * Z[y, k]
                Gb[x, y] = t
                Gb[y, x] = t
        G = _expand(Gb, ca_, cb_, pa_, pb_)
        Hv = _rows_times(hb, hj, hcnt, v_free)
    TS = (order, parent, gstart, grows, coupling, kidx, eb, ej, ecnt, S, qcnt, qcol, X, PB, M, L, W, Lr, vf, c_free,
          rhs_e, fok)
    return G, Hv, v_free, hb, hj, hcnt, TS


@njit(cache=True)
def _bases(order, parent, gstart, grows, eb, ej, ecnt, nbi):
    """The twists per coordinate along the tree of :func:`_plan`: (the first body, in ``order``,
    whose joint block is not of full row rank, else -1; each body's coordinate count and columns,
    the coordinate count, S (nbi, 6, nq): body b's twist per coordinate qcol[b, k]; X: each
    joint's C^+; PB: each joint's block on its parent)."""
    # coordinates: a body's are its parent's, then its own (6 - m)
    qcnt = np.zeros(nbi, np.int64)
    qcol = np.zeros((nbi, 6 * nbi), np.int64)
    nq = 0
    for b in order:
        p = parent[b]
        k = 0
        if p >= 0:
            for x in range(qcnt[p]):
                qcol[b, x] = qcol[p, x]
            k = qcnt[p]
        own = 6 - (gstart[b + 1] - gstart[b])
        for x in range(own):
            qcol[b, k + x] = nq + x
        qcnt[b] = k + own
        nq += own
    # S (nbi, 6, nq): body b's twist per coordinate qcol[b, k]; X: each joint's C^+
    S = np.zeros((nbi, 6, nq))
    X = np.zeros((nbi, 6, 6))
    Cb = np.empty((6, 6))                  # a joint's block on its child; PB: on its parent
    PB = np.zeros((nbi, 6, 6))
    Nb = np.empty((6, 6))
    QA = np.empty((6, 6))
    QQ = np.empty((6, 6))
    Qv = np.empty(6)
    PS = np.empty((6, nq))
    for b in order:
        p = parent[b]
        m = gstart[b + 1] - gstart[b]
        if m == 0:
            for i in range(6):
                S[b, i, i] = 1.0
            continue
        _joint_blocks(b, p, gstart, grows, eb, ej, ecnt, Cb, PB[b])
        if not _pinv_null(Cb, m, X[b], Nb, QA, QQ, Qv):
            return b, qcnt, qcol, nq, S, X, PB
        kp = qcnt[p] if p >= 0 else 0
        if p >= 0:                          # v_b = -C^+ P v_p + N q_b
            for i in range(m):
                for k in range(kp):
                    t = 0.0
                    for j in range(6):
                        t += PB[b, i, j] * S[p, j, k]
                    PS[i, k] = t
            for i in range(6):
                for k in range(kp):
                    t = 0.0
                    for j in range(m):
                        t += X[b, i, j] * PS[j, k]
                    S[b, i, k] = -t
        for k in range(6 - m):
            for i in range(6):
                S[b, i, kp + k] = Nb[i, k]
    return -1, qcnt, qcol, nq, S, X, PB


@njit(cache=True)
def tree_finish(TS, status, z, hb, hj, hcnt, aM, comp, eq_rows, n_hard, hard_err, project, v_out, ce_out,
                dx_out):
    """After the LCP (``status``; ``z`` its solution, the contact rows' impulses first, the rows in
    compact form ``hb, hj, hcnt``; no LCP: z empty): the velocities (6 nbi,), the equality rows'
    impulses (by row position) and the post-stabilisation displacement into the ``*_out`` arrays,
    as ``_island_kernel.solve_island`` writes them."""
    (order, parent, gstart, grows, coupling, kidx, eb, ej, ecnt, S, qcnt, qcol, X, PB, M, L, W, Lr, vf, c_free,
     rhs_e, fok) = TS
    nbi = vf.shape[0]
    nv = 6 * nbi
    ne = eq_rows.shape[0]
    nq = L.shape[0]
    nk = W.shape[1]
    tv = np.empty(6)
    vfin = vf
    ck = c_free
    P = np.zeros((nbi, 6))                 # the contact rows' impulses on each body
    if status == OK and z.shape[0]:
        for r in range(hcnt.shape[0]):
            if z[r] != 0.0:
                for e in range(hcnt[r]):
                    b = hb[r, e]
                    for j in range(6):
                        P[b, j] += z[r] * hj[r, e, j]
        fz = np.zeros(nq)
        for b in range(nbi):
            for k in range(qcnt[b]):
                t = 0.0
                for j in range(6):
                    t += S[b, j, k] * P[b, j]
                fz[qcol[b, k]] += t
        dq, dc = _qsolve(L, W, Lr, fz, np.zeros(nk))
        zero = np.zeros((nbi, 6))
        vfin = np.empty((nbi, 6))
        _twists(S, qcnt, qcol, dq, zero, vfin)
        for b in range(nbi):
            for j in range(6):
                vfin[b, j] += vf[b, j]
        ck = c_free + dc
    if status == OK:
        for b in range(nbi):
            for j in range(6):
                v_out[6 * b + j] = vfin[b, j]
        # impulses: couplings from their Schur complement, soft rows c = (r - e v) / c, the joints'
        # by back-substitution from the leaves: C^T lambda = M (v - v*) - (every other row's impulse)
        R = P.copy()
        a = 0
        for i in range(ne):
            if coupling[i]:
                ce_out[i] = ck[a]
                a += 1
            elif i >= n_hard:
                ce_out[i] = (rhs_e[i] - _row_v(i, eb, ej, ecnt, vfin)) / comp[eq_rows[i]]
            else:
                continue
            for e in range(ecnt[i]):
                b = eb[i, e]
                for j in range(6):
                    R[b, j] += ce_out[i] * ej[i, e, j]
        for x in range(nbi - 1, -1, -1):
            b = order[x]
            mj = gstart[b + 1] - gstart[b]
            if mj == 0:
                continue
            p = parent[b]
            for i in range(6):
                t = -R[b, i]
                for j in range(6):
                    t += M[b, i, j] * (vfin[b, j] - aM[6 * b + j])
                tv[i] = t
            for k in range(mj):              # lambda = (C^T)^+ (.) = X^T (.)
                t = 0.0
                for i in range(6):
                    t += X[b, i, k] * tv[i]
                ce_out[grows[gstart[b] + k]] = t
                if p >= 0:
                    for j in range(6):
                        R[p, j] += t * PB[b, k, j]
    # post-stabilisation (as the island kernel's): the least-M-norm dx with the hard rows' errors
    # removed and the soft rows resisting through their compliance
    for i in range(nv):
        dx_out[i] = 0.0
    if status == OK and project and n_hard and fok:
        big = 0.0
        for i in range(n_hard):
            big = max(big, abs(hard_err[i]))
        if big > 1e-13:
            err = np.zeros(ne)
            for i in range(n_hard):
                err[i] = -hard_err[i]
            d0 = np.empty((nbi, 6))
            _particular(order, parent, gstart, grows, PB, X, err, d0)
            dq, _ = _coords_solve(np.zeros(nv), d0, err, S, qcnt, qcol, M, L, W, Lr, eb, ej, ecnt, coupling, kidx,
                                  comp, eq_rows, n_hard)
            dxb = np.empty((nbi, 6))
            _twists(S, qcnt, qcol, dq, d0, dxb)
            for b in range(nbi):
                for j in range(6):
                    dx_out[6 * b + j] = dxb[b, j]


@njit(cache=True)
def tree_island(local, Minv, aM, bodies, jac, rhs, comp, eq_rows, n_hard, lim_rows, nrm_rows, fr_rows,
                mu, u, compliance, first_level, max_tries, warm, use_warm, hard_err, project,
                v_out, ce_out, z_out, basis_out, dx_out):
    """:func:`graspsim.dynamics._island_kernel.solve_island` (same arguments, outputs and return
    values) through :func:`tree_prepare`, the LCP and :func:`tree_finish`; an island without
    equality rows: (NOT_TREE, 0, 0, 0), nothing written."""
    if eq_rows.shape[0] == 0:
        return NOT_TREE, 0, 0, 0
    nl = lim_rows.shape[0] + nrm_rows.shape[0]
    nfr = fr_rows.shape[0]
    nc = nrm_rows.shape[0]
    rows = np.empty(nl + nfr, np.int64)
    for i in range(lim_rows.shape[0]):
        rows[i] = lim_rows[i]
    for i in range(nc):
        rows[lim_rows.shape[0] + i] = nrm_rows[i]
    for i in range(nfr):
        rows[nl + i] = fr_rows[i]
    G, Hv, v_free, hb, hj, hcnt, TS = tree_prepare(local, Minv, aM, bodies, jac, rhs, comp, eq_rows, n_hard, rows,
                                                   nl, nc, u)
    status, m, pivots, level = OK, 0, 0, 0
    z = np.empty(0)
    if nl:
        status, m, pivots, level, z, zb = _lcp_solve(G, Hv, rhs, rows, nl, nl + nfr, lim_rows.shape[0], nc, nfr, mu,
                                                     u, compliance, first_level, max_tries, warm, use_warm)
        for i in range(m):
            z_out[i] = z[i]
            basis_out[i] = zb[i]
    tree_finish(TS, status, z, hb, hj, hcnt, aM, comp, eq_rows, n_hard, hard_err, project, v_out, ce_out, dx_out)
    return status, m, pivots, level


def island_calls(args: tuple) -> list:
    """The arguments of ``_island_kernel.solve_island`` (and :func:`tree_island`) for each island
    with rows of one ``_island_kernel.solve_islands`` call's arguments ``args`` (the warm start
    from its table, compliance level 0): for tests and benchmarks that compare the two."""
    from ._island_kernel import island_key, partition_rows, warm_get

    (labels, n_isl, Minv, aM, bodies, jac, rhs, comp, sizes, hard_err, mu, _ca, _cb, _cp, _cn, _t1, _t2, u,
     compliance, project, _relax, keys, used, ta, tb, store, *_rest) = args
    order, rb = partition_rows(bodies, labels, sizes, n_isl)
    off_n = sizes[0] + sizes[1] + sizes[2]
    out = []
    for isl in range(n_isl):
        if rb[5 * isl + 5] == rb[5 * isl]:
            continue
        slots = np.flatnonzero(labels == isl)
        local = -np.ones(len(labels), np.int64)
        local[slots] = np.arange(len(slots))
        part = [order[rb[5 * isl + k]:rb[5 * isl + k + 1]] for k in range(5)]
        nhard = len(part[0])
        e_rows = np.concatenate(part[:2])
        warm = warm_get(keys, used, ta, tb, store, island_key(slots, len(part[2]), len(part[3])))
        out.append((local, np.ascontiguousarray(Minv[slots]), np.ascontiguousarray(aM[slots].ravel()), bodies, jac,
                    rhs, comp, e_rows, nhard, part[2], part[3], part[4], mu[part[3] - off_n].copy(), u, compliance,
                    0, 3, warm, len(warm) > 0, hard_err[e_rows[:nhard]].copy(), project))
    return out


def island_outputs(args: tuple) -> tuple:
    """Output arrays for one :func:`island_calls` entry (velocities, equality impulses, LCP solution
    and basis, projection), NaN where the solver must write."""
    nv, ne = len(args[2]), len(args[7])
    m_max = len(args[9]) + len(args[10]) * (2 + args[13])
    return np.full(nv, np.nan), np.full(ne, np.nan), np.zeros(m_max), np.zeros(m_max, bool), np.full(nv, np.nan)

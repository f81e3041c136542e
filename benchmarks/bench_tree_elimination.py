"""A measurement for the next design step of issue 18: the island's LCP matrix with the hard joint
rows eliminated along the kinematic tree, against the island kernel's elimination.

    python benchmarks/bench_island.py capture /tmp/islands.pkl        # real steps' island inputs
    OPENBLAS_NUM_THREADS=1 taskset -c 1 python benchmarks/bench_tree_elimination.py /tmp/islands.pkl

Not the simulator's code: a prototype of one part of it, to decide whether the rewrite pays.

The island solver (``dynamics/_island_kernel.py``) eliminates the equality rows of the mixed LCP
(eq. 17-20 of Miller & Christensen 2003) through ``A = J M^-1 J^T + C``: the contact rows' block
is ``G = H M^-1 H^T - H M^-1 J^T A^-1 J M^-1 H^T``.  On the Barrett holding the mug that is 53
equality rows (44 hard: five per revolute joint and three couplings; 9 soft: the drives and holds)
for 9 bodies.  The same G, exactly (the same linear system, not reduced-coordinate dynamics):

1. The hard rows of each joint tie a child body's twist to its parent's, ``P v_p + C v_c = b``
   (C of full row rank m = 5 or 6), so in tree order ``v_c = C^+ (b - P v_p) + N q_c`` with ``N``
   (6 x (6 - m)) a basis of C's null space: every twist is ``S q`` (+ a particular part for b),
   ``q`` one coordinate per joint freedom and six per free body (13 on the held mug).
2. With ``Hq = S^T M S``, a soft row of compliance c > 0 adds ``K^T K / c`` to Hq (K = the row
   times S; Woodbury: ``(Hq + K^T C^-1 K)^-1`` is the soft rows' Schur complement, inverted), and
   the few hard coupling rows are eliminated through their small Schur complement.
3. ``G = Y^T Y - Z^T Z`` with ``Y = L^-1 (H S)^T`` (L L^T the Cholesky factor of step 2's matrix)
   and Z the couplings' term.

Everything is O(bodies) or O(rows x coordinates): no factorisation of the 53 x 53 ``A``.  This
script builds the joint groups from the captured rows (the simulator would take them from its
joint table), checks that both give the same G (relative difference ~1e-15) and times the two.
The kernel's part is the calls ``solve_island`` makes for G (``_compact``, ``_by_body``,
``_product``, ``_factor`` of A, ``_elimination_term``), called here from Python one by one (~1 us
of dispatch each).  Not measured: the free velocities, the equality impulses and the
post-stabilisation, which the same tree recursion would give (see docs/dynamics_performance.md,
sixteenth pass).
"""
from __future__ import annotations

import pickle
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

from graspsim.dynamics import _island_kernel as IK


def island_parts(args) -> dict:
    """The largest island of a captured solve_islands call: its rows grouped by joint, in the
    prototype's arrays, and what the kernel's elimination takes."""
    (labels, n_isl, Minv, aM, bodies, jac, rhs, comp, sizes, *_rest) = args
    u = args[17]
    order_r, rb = IK.partition_rows(bodies, labels, sizes, n_isl)
    isl = max(range(n_isl), key=lambda i: rb[5 * i + 5] - rb[5 * i])
    slots = np.flatnonzero(labels == isl)
    nbi = len(slots)
    local = -np.ones(len(labels), np.int64)
    local[slots] = np.arange(nbi)
    part = [order_r[rb[5 * isl + k]:rb[5 * isl + k + 1]] for k in range(5)]
    hard, soft, lim, nrm, fr = part
    nl, nc = len(lim) + len(nrm), len(nrm)
    base = IK._friction_basis(nl, nc if len(fr) else 0, u)[0]
    brows = np.concatenate([lim, nrm, fr]).astype(np.int64)[base]
    Mi = np.ascontiguousarray(Minv[slots])

    def entries(r) -> dict:
        out: dict = {}
        for k in range(bodies.shape[1]):
            b = bodies[r, k]
            if b >= 0 and local[b] >= 0:
                out[int(local[b])] = out.get(int(local[b]), np.zeros(6)) + jac[r, k]
        return out

    # joints: five or six hard rows on one body pair (or one body and the static world)
    groups: dict = {}
    couplings = []
    for r in hard:
        e = entries(r)
        (groups.setdefault(tuple(sorted(e)), []) if len(e) <= 2 else couplings).append(r)
    parent = -np.ones(nbi, np.int64)
    rows_of: dict = {}
    for key, rs in groups.items():
        if len(rs) < 5:
            couplings.extend(rs)
            continue
        c, p = (key[0], -1) if len(key) == 1 else (max(key), min(key))
        parent[c], rows_of[c] = p, rs
    order: list = []

    def visit(b):
        if b not in order:
            if parent[b] >= 0:
                visit(parent[b])
            order.append(b)
    for b in range(nbi):
        visit(b)
    nq = 0
    qn = np.zeros(nbi, np.int64)
    qcnt = np.zeros(nbi, np.int64)
    qcol = np.zeros((nbi, 6 * nbi), np.int64)
    for b in order:                      # a body's coordinates: its ancestors', then its own
        qn[b] = 6 - len(rows_of.get(b, ()))
        cols = ([] if parent[b] < 0 else list(qcol[parent[b], :qcnt[parent[b]]])) + list(range(nq, nq + qn[b]))
        nq += qn[b]
        qcnt[b] = len(cols)
        qcol[b, :len(cols)] = cols
    mj = np.zeros(nbi, np.int64)
    Pj = np.zeros((nbi, 6, 6))
    Cj = np.zeros((nbi, 6, 6))
    for b, rs in rows_of.items():
        mj[b] = len(rs)
        for i, r in enumerate(rs):
            e = entries(r)
            Cj[b, i] = e[b]
            if parent[b] >= 0:
                Pj[b, i] = e[parent[b]]

    def sparse(rs):
        cnt = np.zeros(len(rs), np.int64)
        rbod = np.zeros((len(rs), 4), np.int64)
        rj = np.zeros((len(rs), 4, 6))
        for i, r in enumerate(rs):
            for b, v in entries(r).items():
                rbod[i, cnt[i]], rj[i, cnt[i]] = b, v
                cnt[i] += 1
        return cnt, rbod, rj

    k_rows = list(couplings) + list(soft)
    tree = (np.array(order, np.int64), parent, mj, Pj, Cj, nq, qcnt, qcol, np.linalg.inv(Mi), *sparse(k_rows),
            np.concatenate([np.zeros(len(couplings)), comp[soft]]), len(couplings), *sparse(list(brows)))
    eq = np.concatenate([hard, soft]).astype(np.int64)
    eq_p = eq[IK._row_order(local, bodies, eq)]
    return dict(tree=tree, kernel=(local, bodies, jac, eq_p, comp, brows, Mi, nbi),
                sizes=(nbi, len(rows_of), nq, len(couplings), len(soft), len(hard), len(brows)))


def kernel_G(local, bodies, jac, eq_p, comp, brows, Mi, nbi):
    """The base rows' G as ``_island_kernel.solve_island`` computes it (its calls, one by one)."""
    eb, ej, ew, ecnt = IK._compact(local, bodies, jac, eq_p, Mi)
    es, er, ee = IK._by_body(eb, ecnt, nbi)
    ne = len(eq_p)
    A = IK._product(nbi, es, er, ee, ej, es, er, ee, ew, ne, ne)
    for i in range(ne):
        A[i, i] += comp[eq_p[i]]
    L, fL, _ = IK._factor(A)
    hb, hj, hw, hcnt = IK._compact(local, bodies, jac, brows, Mi)
    bs, br, be = IK._by_body(hb, hcnt, nbi)
    Gb = IK._product(nbi, bs, br, be, hj, bs, br, be, hw, len(brows), len(brows))
    return Gb - IK._elimination_term(nbi, bs, br, be, hw, ne, es, er, ee, ej, L, fL)


@njit
def _rows_q(cnt, rbod, rj, S, qcnt, qcol, out, r0, r1):
    """out[:, r - r0] = (row r) S for rows r0..r1 (row r: entries rj[r, e] on bodies rbod[r, e])."""
    for r in range(r0, r1):
        for e in range(cnt[r]):
            b = rbod[r, e]
            for k in range(qcnt[b]):
                t = 0.0
                for j in range(6):
                    t += rj[r, e, j] * S[b, j, k]
                out[qcol[b, k], r - r0] += t


@njit
def _chol(A):
    n = A.shape[0]
    L = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1):
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = np.sqrt(t) if i == j else t / L[j, j]
    return L


@njit
def _forward(L, B):
    """B <- L^-1 B (columns)."""
    for c in range(B.shape[1]):
        for i in range(L.shape[0]):
            t = B[i, c]
            for k in range(i):
                t -= L[i, k] * B[k, c]
            B[i, c] = t / L[i, i]


@njit
def tree_G(order, parent, mj, Pj, Cj, nq, qcnt, qcol, M, kcnt, kbod, kj, kc, nhard, hcnt, hbod, hj):
    """G of the base rows (hcnt, hbod, hj) with the joints' hard rows eliminated along the tree,
    the soft rows folded into the coordinates' mass matrix and the hard couplings (the first
    ``nhard`` of the k-rows) through their Schur complement."""
    nbi = M.shape[0]
    S = np.zeros((nbi, 6, nq))           # body b's twist per coordinate qcol[b, k] (k < qcnt[b])
    A = np.empty((6, 6))
    Q = np.empty((6, 6))
    v = np.empty(6)
    X = np.empty((6, 6))
    PS = np.empty((6, nq))
    for b in order:
        m = mj[b]
        if m == 0:                       # a free body: its own six coordinates
            for i in range(6):
                S[b, i, i] = 1.0
            continue
        # C^T = Q [R; 0] (Householder); C^+ = Q1 R^-T, N = Q2
        for i in range(6):
            for j in range(m):
                A[i, j] = Cj[b, j, i]
            for j in range(6):
                Q[i, j] = 1.0 if i == j else 0.0
        for k in range(m):
            nx = 0.0
            for i in range(k, 6):
                nx += A[i, k] * A[i, k]
            a = -np.sqrt(nx) if A[k, k] >= 0 else np.sqrt(nx)
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
        for i in range(6):
            for j in range(m - 1, -1, -1):
                t = Q[i, j]
                for k in range(j + 1, m):
                    t -= A[j, k] * X[i, k]
                X[i, j] = t / A[j, j]
        p = parent[b]
        kp = qcnt[p] if p >= 0 else 0
        if p >= 0:                       # v_b = -C^+ P v_p + N q_b
            for i in range(m):
                for k in range(kp):
                    t = 0.0
                    for j in range(6):
                        t += Pj[b, i, j] * S[p, j, k]
                    PS[i, k] = t
            for i in range(6):
                for k in range(kp):
                    t = 0.0
                    for j in range(m):
                        t += X[i, j] * PS[j, k]
                    S[b, i, k] = -t
        for k in range(6 - m):
            for i in range(6):
                S[b, i, kp + k] = Q[i, m + k]
    Hq = np.zeros((nq, nq))              # S^T M S
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
                ck, cl = qcol[b, k], qcol[b, l]
                Hq[ck, cl] += t
                if cl != ck:
                    Hq[cl, ck] += t
    nk = kcnt.shape[0]
    Ks = np.zeros((nq, nk - nhard))      # the soft rows: Hq += K^T C^-1 K
    _rows_q(kcnt, kbod, kj, S, qcnt, qcol, Ks, nhard, nk)
    for r in range(nk - nhard):
        ic = 1.0 / kc[nhard + r]
        for a in range(nq):
            ka = Ks[a, r] * ic
            if ka != 0.0:
                for c in range(nq):
                    Hq[a, c] += ka * Ks[c, r]
    L = _chol(Hq)
    nh = hcnt.shape[0]
    W = np.zeros((nq, nhard))
    Y = np.zeros((nq, nh))
    _rows_q(kcnt, kbod, kj, S, qcnt, qcol, W, 0, nhard)
    _rows_q(hcnt, hbod, hj, S, qcnt, qcol, Y, 0, nh)
    _forward(L, W)
    _forward(L, Y)
    Ar = np.empty((nhard, nhard))        # the hard couplings' Schur complement
    for a in range(nhard):
        for c in range(nhard):
            t = 0.0
            for i in range(nq):
                t += W[i, a] * W[i, c]
            Ar[a, c] = t
    Lr = _chol(Ar)
    Z = np.empty((nhard, nh))
    for c in range(nh):
        for i in range(nhard):
            t = 0.0
            for k in range(nq):
                t += W[k, i] * Y[k, c]
            for k in range(i):
                t -= Lr[i, k] * Z[k, c]
            Z[i, c] = t / Lr[i, i]
    G = np.empty((nh, nh))
    for a in range(nh):
        for c in range(a, nh):
            t = 0.0
            for i in range(nq):
                t += Y[i, a] * Y[i, c]
            for i in range(nhard):
                t -= Z[i, a] * Z[i, c]
            G[a, c] = t
            G[c, a] = t
    return G


def _best_us(f, n: int = 1000, rounds: int = 7) -> float:
    f()
    best = np.inf
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(n):
            f()
        best = min(best, (time.perf_counter() - t) / n)
    return best * 1e6


def main() -> None:
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/islands.pkl")
    scenes = pickle.load(open(path, "rb"))
    for name in ("mug_hold", "puma_grasp"):
        if name not in scenes:
            continue
        p = island_parts(scenes[name][len(scenes[name]) // 2][0])
        Gt, Gk = tree_G(*p["tree"]), kernel_G(*p["kernel"])
        nbi, nj, nq, ncp, nsoft, nhard, nh = p["sizes"]
        print(f"{name}: {nbi} bodies, {nj} joints, {nq} coordinates; equality rows {nhard} hard ({ncp} couplings), "
              f"{nsoft} soft; {nh} base contact rows")
        print(f"    max |G_tree - G_kernel| / max |G| = {np.abs(Gt - Gk).max() / np.abs(Gk).max():.1e}")
        tk = [_best_us(lambda: kernel_G(*p["kernel"])) for _ in range(3)]
        tt = [_best_us(lambda: tree_G(*p["tree"])) for _ in range(3)]
        print(f"    kernel's elimination + G: {min(tk):.1f} us (8 calls from Python, ~1 us dispatch each); "
              f"tree elimination + G: {min(tt):.1f} us (one call)")


if __name__ == "__main__":
    main()

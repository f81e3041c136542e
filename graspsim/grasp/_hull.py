"""Numba kernels: support queries and an incremental convex hull driven by them.

The grasp wrench space (GWS) is only ever accessed through its *support
function* ``h(u) = max_{x in GWS} u.x`` and a support point attaining it:

* L1 space  ``conv{w_j}``:                   ``h(u) = max_j w_j.u``
* Linf space ``sum_i conv({0} U {w_ij}_j)``:  ``h(u) = sum_i max(0, max_j w_ij.u)``

(the Minkowski sum's support function is the sum of the summands' support
functions, so the L-infinity space never has to be enumerated).

``hull_search`` grows a simplicial polytope ``S`` inside the GWS ``P``, one
support point at a time (an expanding-polytope / cutting-plane scheme in the
spirit of the EPA of van den Bergen 2001, generalised to d dimensions):

1. pop the unverified facet ``(u, b)`` of ``S`` with the smallest offset ``b``
   (``S = {x : u_f.x <= b_f}``, ``|u_f| = 1``);
2. query ``p = argmax_{x in P} u.x``.  If ``u.p <= b + tol`` the facet is a
   facet of ``P`` too ("verified");
3. otherwise ``p`` lies outside ``S``: remove the facets of ``S`` visible from
   ``p`` and cone the horizon ridges to ``p`` (beneath-beyond step).

Because ``S`` is a subset of ``P``, ``min_f b_f = min_|u|=1 h_S(u) <= min h_P``;
when the minimal facet is verified, equality holds, i.e. the popped offset is
the Ferrari-Canny epsilon ``min_|u|=1 h_P(u)`` (distance from the origin to the
nearest facet of ``P`` when the origin is inside).  A support value
``h_P(u) <= fc_tol`` certifies that the origin is not interior (no force
closure).  With ``full=True`` every facet is verified, giving the whole hull
(used for the volume).

All tolerances are absolute (the caller scales them by the size of the
wrench set).  Status codes: 0 ok, 2 non-closure certificate found (early
exit), -1 degenerate facet, -2 iteration limit, -3 facet limit, -4 topology
error, -5 initial simplex failed.
"""

from __future__ import annotations

from .._jit import njit
import numpy as np

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)
_CONSUMED = np.uint64(0xFFFFFFFFFFFFFFFF)   # ridge-table entry already matched


@njit(cache=True, nogil=True)
def _mix(i):
    """splitmix64 finaliser of a vertex id (order-free ridge hashing)."""
    z = np.uint64(i) + _M1
    z = (z ^ (z >> np.uint64(30))) * _M2
    z = (z ^ (z >> np.uint64(27))) * _M3
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def _vertex_hash(VH, i):
    """Two independent 64-bit hashes of vertex id ``i`` into ``VH[i]``.

    A ridge (d-1 vertices) is keyed by the wrapping sums of its vertices' hashes, which do not
    depend on the vertex order; two ridges are taken as equal when both sums agree (a false
    match has probability about 2**-128 per comparison, instead of comparing the vertex lists).
    """
    VH[i, 0] = _mix(i)
    VH[i, 1] = _mix(np.uint64(i) ^ _M3)


@njit(cache=True, nogil=True)
def support(G, include_origin, offset, u, out):
    """Support point of the space described by ``G`` in direction ``u``.

    ``G`` (k, m, d): generators per contact.  ``include_origin=False``: the set
    is ``conv(all rows)`` (pass k == 1 for L1); ``True``: the set is the
    Minkowski sum over i of ``conv({0} U G[i])`` (Linf).  The returned point is
    shifted by ``-offset`` (to query ``P - w``).  Writes the point to ``out``
    and returns ``u.out`` (eqs. 7-8 of quality.py).
    """
    return _support_row_1d(G, include_origin, offset, u, 1.0, out)


@njit(cache=True, nogil=True)
def _plane(V, FV, f, interior, FU, degen_tol, A, perm, x):
    """Hyperplane through the d points ``V[FV[f]]`` oriented away from ``interior``.

    Null vector of the (d-1, d) difference matrix by Gaussian elimination with
    full pivoting.  Writes the unit normal to ``FU[f]`` and returns
    ``(offset, ok)``; ``ok`` is False when the points are (numerically)
    affinely dependent (smallest pivot <= degen_tol).
    """
    d = V.shape[1]
    for r in range(d - 1):
        for c in range(d):
            A[r, c] = V[FV[f, r + 1], c] - V[FV[f, 0], c]
    for c in range(d):
        perm[c] = c
    minpiv = np.inf
    for r in range(d - 1):
        # full pivot search in A[r:, r:]
        bi = r
        bc = r
        bv = -1.0
        for i in range(r, d - 1):
            for c in range(r, d):
                a = abs(A[i, c])
                if a > bv:
                    bv = a
                    bi = i
                    bc = c
        if bv < minpiv:
            minpiv = bv
        if bi != r:
            for c in range(d):
                t = A[r, c]
                A[r, c] = A[bi, c]
                A[bi, c] = t
        if bc != r:
            for i in range(d - 1):
                t = A[i, r]
                A[i, r] = A[i, bc]
                A[i, bc] = t
            t2 = perm[r]
            perm[r] = perm[bc]
            perm[bc] = t2
        if bv <= degen_tol:
            return 0.0, False
        piv = A[r, r]
        for i in range(r + 1, d - 1):
            fac = A[i, r] / piv
            if fac != 0.0:
                for c in range(r, d):
                    A[i, c] -= fac * A[r, c]
    x[d - 1] = 1.0
    for r in range(d - 2, -1, -1):
        s = A[r, d - 1]
        for c in range(r + 1, d - 1):
            s += A[r, c] * x[c]
        x[r] = -s / A[r, r]
    nn = 0.0
    for c in range(d):
        nn += x[c] * x[c]
    nn = np.sqrt(nn)
    for c in range(d):
        FU[f, perm[c]] = x[c] / nn
    b = 0.0
    for r in range(d):
        s = 0.0
        for c in range(d):
            s += FU[f, c] * V[FV[f, r], c]
        b += s
    b /= d
    si = 0.0
    for c in range(d):
        si += FU[f, c] * interior[c]
    if si > b:
        for c in range(d):
            FU[f, c] = -FU[f, c]
        b = -b
    return b, True


@njit(cache=True, nogil=True)
def _plane_from_neighbours(V, FV, f, s, FU, g, h, interior, res_tol):
    """Cheap plane of a new facet ``f`` = ridge + p (``p = V[FV[f, s]]``).

    The ridge shared by the visible facet ``g`` and the hidden facet ``h`` is
    orthogonal to both normals, so the new normal lies in ``span(u_g, u_h)``:
    ``n = (u_h.e) u_g - (u_g.e) u_h`` with ``e = p - r0`` is orthogonal to the
    ridge and to ``e``.  Accepted only if all d vertices lie within
    ``res_tol`` of the plane (else the caller falls back to elimination).
    Writes ``FU[f]``; returns ``(offset, ok)``.
    """
    d = V.shape[1]
    r0 = FV[f, 0] if s != 0 else FV[f, 1]
    q = FV[f, s]
    a = 0.0
    bb = 0.0
    for c in range(d):
        e = V[q, c] - V[r0, c]
        a += FU[h, c] * e
        bb += FU[g, c] * e
    nn = 0.0
    for c in range(d):
        t = a * FU[g, c] - bb * FU[h, c]
        FU[f, c] = t
        nn += t * t
    nn = np.sqrt(nn)
    if not nn > 1e-6:
        return 0.0, False
    inv = 1.0 / nn
    for c in range(d):
        FU[f, c] *= inv
    b = 0.0
    lo = np.inf
    hi = -np.inf
    for r in range(d):
        t = 0.0
        for c in range(d):
            t += FU[f, c] * V[FV[f, r], c]
        b += t
        lo = min(lo, t)
        hi = max(hi, t)
    if hi - lo > res_tol:
        return 0.0, False
    b /= d
    si = 0.0
    for c in range(d):
        si += FU[f, c] * interior[c]
    if si > b:
        for c in range(d):
            FU[f, c] = -FU[f, c]
        b = -b
    return b, True


@njit(cache=True, nogil=True)
def _support_row(G, include_origin, offset, U, row, out):
    """``support`` with the direction given as row ``row`` of ``U`` (no view)."""
    k, m, d = G.shape
    for c in range(d):
        out[c] = -offset[c]
    for i in range(k):
        best = 0.0
        bj = -1
        if not include_origin:
            best = -np.inf
        for j in range(m):
            s = 0.0
            for c in range(d):
                s += G[i, j, c] * U[row, c]
            if s > best:
                best = s
                bj = j
        if bj >= 0:
            for c in range(d):
                out[c] += G[i, bj, c]
    val = 0.0
    for c in range(d):
        val += out[c] * U[row, c]
    return val


@njit(cache=True, nogil=True)
def _support_rem(G, offset, U, row, rem, nrem, out):
    """Support over the explicit points ``G[0, rem[:nrem]] - offset`` in direction ``U[row]``.

    For the full hull of an explicit point set (L1): a point already inserted is a vertex of
    the polytope and never lies beyond one of its facets, so only the points not yet inserted
    are scanned.  Writes the point to ``out``; returns ``(u.out, position in rem)``, or
    ``(-inf, -1)`` when no point is left.
    """
    d = G.shape[2]
    best = -np.inf
    bp = -1
    for e in range(nrem):
        j = rem[e]
        s = 0.0
        for c in range(d):
            s += G[0, j, c] * U[row, c]
        if s > best:
            best = s
            bp = e
    if bp < 0:
        return best, bp
    j = rem[bp]
    val = 0.0
    for c in range(d):
        out[c] = G[0, j, c] - offset[c]
        val += out[c] * U[row, c]
    return val, bp


@njit(cache=True, nogil=True)
def _heap_push(hb, hf, n, b, f):
    """Push (b, f) on the binary min-heap stored in arrays ``hb``/``hf`` of size n."""
    i = n
    while i > 0:
        par = (i - 1) >> 1
        if hb[par] <= b:
            break
        hb[i] = hb[par]
        hf[i] = hf[par]
        i = par
    hb[i] = b
    hf[i] = f


@njit(cache=True, nogil=True)
def _heap_pop(hb, hf, n):
    """Pop the minimum of the heap of size n (> 0); returns its facet index."""
    top = hf[0]
    n -= 1
    b = hb[n]
    f = hf[n]
    i = 0
    while True:
        ch = 2 * i + 1
        if ch >= n:
            break
        if ch + 1 < n and hb[ch + 1] < hb[ch]:
            ch += 1
        if hb[ch] >= b:
            break
        hb[i] = hb[ch]
        hf[i] = hf[ch]
        i = ch
    if n > 0:
        hb[i] = b
        hf[i] = f
    return top


@njit(cache=True, nogil=True)
def _dot(a, b):
    s = 0.0
    for c in range(a.shape[0]):
        s += a[c] * b[c]
    return s


@njit(cache=True, nogil=True)
def _initial_simplex(G, include_origin, offset, tol):
    """d+1 affinely independent support points of the space (or failure).

    Greedy: the first two vertices are the support points along +-e_c for
    the axis of largest width; each further vertex is the support point, in
    +-v, of the coordinate axis v (projected orthogonally to the current
    affine hull) that gives the largest height above that hull.  Since the
    space is full-dimensional, every direction orthogonal to the hull has
    positive width, so this succeeds unless the width is below ``tol``.
    Returns ``(points (d+1, d), ok)``.
    """
    d = G.shape[2]
    pts = np.zeros((d + 1, d))
    Q = np.zeros((d, d))
    u = np.zeros(d)
    v = np.zeros(d)
    w = np.zeros(d)
    sp = np.empty(d)
    sm = np.empty(d)
    best = np.empty(d)
    best_h = -1.0
    best_ax = 0
    for c in range(d):
        for cc in range(d):
            u[cc] = 0.0
        u[c] = 1.0
        a = _support_row_1d(G, include_origin, offset, u, 1.0, sp)
        bm = _support_row_1d(G, include_origin, offset, u, -1.0, sm)
        if a + bm > best_h:
            best_h = a + bm
            best_ax = c
    if best_h <= tol:
        return pts, False
    for cc in range(d):
        u[cc] = 0.0
    u[best_ax] = 1.0
    _support_row_1d(G, include_origin, offset, u, 1.0, sp)
    _support_row_1d(G, include_origin, offset, u, -1.0, sm)
    nn = 0.0
    for c in range(d):
        pts[0, c] = sm[c]
        pts[1, c] = sp[c]
        nn += (sp[c] - sm[c]) ** 2
    nn = np.sqrt(nn)
    for c in range(d):
        Q[0, c] = (sp[c] - sm[c]) / nn
    for r in range(1, d):
        best_h = -1.0
        for ax in range(d):
            for c in range(d):
                v[c] = 0.0
            v[ax] = 1.0
            for q in range(r):
                t = Q[q, ax]
                for c in range(d):
                    v[c] -= t * Q[q, c]
            nv = np.sqrt(_dot(v, v))
            if nv < 0.2 / np.sqrt(d):
                continue
            for c in range(d):
                v[c] /= nv
            x0 = 0.0
            for c in range(d):
                x0 += v[c] * pts[0, c]
            # heights of the +v and -v support points above the current hull
            a = _support_row_1d(G, include_origin, offset, v, 1.0, sp) - x0
            bm = _support_row_1d(G, include_origin, offset, v, -1.0, sm) + x0
            if a > best_h:
                best_h = a
                for c in range(d):
                    best[c] = sp[c]
            if bm > best_h:
                best_h = bm
                for c in range(d):
                    best[c] = sm[c]
        if best_h <= tol:
            return pts, False
        for c in range(d):
            pts[r + 1, c] = best[c]
            w[c] = best[c] - pts[0, c]
        for _ in range(2):
            for q in range(r):
                t = 0.0
                for c in range(d):
                    t += w[c] * Q[q, c]
                for c in range(d):
                    w[c] -= t * Q[q, c]
        nn = np.sqrt(_dot(w, w))
        for c in range(d):
            Q[r, c] = w[c] / nn
    return pts, True


@njit(cache=True, nogil=True)
def _support_row_1d(G, include_origin, offset, u, sign, out):
    """``support`` in direction ``sign * u`` (no temporary array)."""
    k, m, d = G.shape
    for c in range(d):
        out[c] = -offset[c]
    for i in range(k):
        best = 0.0
        bj = -1
        if not include_origin:
            best = -np.inf
        for j in range(m):
            s = 0.0
            for c in range(d):
                s += G[i, j, c] * u[c]
            s *= sign
            if s > best:
                best = s
                bj = j
        if bj >= 0:
            for c in range(d):
                out[c] += G[i, bj, c]
    val = 0.0
    for c in range(d):
        val += out[c] * u[c]
    return sign * val


@njit(cache=True, nogil=True)
def _abs_det(M):
    """|det M| by Gaussian elimination with partial pivoting (M is overwritten).

    Runs once per hull facet in the volume sum, so it is written without data-dependent
    branches (the pivot row is picked by selects and swapped unconditionally) and with one
    reciprocal per pivot: mispredicted branches, not arithmetic, dominated its time.
    """
    n = M.shape[0]
    det = 1.0
    for r in range(n):
        p = r
        big = abs(M[r, r])
        for i in range(r + 1, n):
            a = abs(M[i, r])
            p = i if a > big else p
            big = a if a > big else big
        if big == 0.0:
            return 0.0
        for c in range(r, n):  # p == r swaps a row with itself
            t = M[r, c]
            M[r, c] = M[p, c]
            M[p, c] = t
        piv = M[r, r]
        det *= piv
        inv = 1.0 / piv
        for i in range(r + 1, n):
            f = M[i, r] * inv
            for c in range(r + 1, n):
                M[i, c] -= f * M[r, c]
    return abs(det)


@njit(cache=True, nogil=True)
def _cone_det6(V, FV, f):
    """|det(v_r - v_0)| of facet f for d = 6, by Laplace expansion in 2x2 minors of rows (0, 1),
    (2, 3) and (4, 5): straight-line products with no branch and no division (the volume sum
    runs it once per facet; partial-pivoting elimination there was latency-bound)."""
    i0 = FV[f, 0]
    i1 = FV[f, 1]
    i2 = FV[f, 2]
    i3 = FV[f, 3]
    i4 = FV[f, 4]
    i5 = FV[f, 5]
    a00, a01, a02, a03, a04, a05 = V[i0, 0] - V[0, 0], V[i0, 1] - V[0, 1], V[i0, 2] - V[0, 2], V[i0, 3] - V[0, 3], V[i0, 4] - V[0, 4], V[i0, 5] - V[0, 5]
    a10, a11, a12, a13, a14, a15 = V[i1, 0] - V[0, 0], V[i1, 1] - V[0, 1], V[i1, 2] - V[0, 2], V[i1, 3] - V[0, 3], V[i1, 4] - V[0, 4], V[i1, 5] - V[0, 5]
    a20, a21, a22, a23, a24, a25 = V[i2, 0] - V[0, 0], V[i2, 1] - V[0, 1], V[i2, 2] - V[0, 2], V[i2, 3] - V[0, 3], V[i2, 4] - V[0, 4], V[i2, 5] - V[0, 5]
    a30, a31, a32, a33, a34, a35 = V[i3, 0] - V[0, 0], V[i3, 1] - V[0, 1], V[i3, 2] - V[0, 2], V[i3, 3] - V[0, 3], V[i3, 4] - V[0, 4], V[i3, 5] - V[0, 5]
    a40, a41, a42, a43, a44, a45 = V[i4, 0] - V[0, 0], V[i4, 1] - V[0, 1], V[i4, 2] - V[0, 2], V[i4, 3] - V[0, 3], V[i4, 4] - V[0, 4], V[i4, 5] - V[0, 5]
    a50, a51, a52, a53, a54, a55 = V[i5, 0] - V[0, 0], V[i5, 1] - V[0, 1], V[i5, 2] - V[0, 2], V[i5, 3] - V[0, 3], V[i5, 4] - V[0, 4], V[i5, 5] - V[0, 5]
    m0_01 = a00 * a11 - a01 * a10
    m0_02 = a00 * a12 - a02 * a10
    m0_03 = a00 * a13 - a03 * a10
    m0_04 = a00 * a14 - a04 * a10
    m0_05 = a00 * a15 - a05 * a10
    m0_12 = a01 * a12 - a02 * a11
    m0_13 = a01 * a13 - a03 * a11
    m0_14 = a01 * a14 - a04 * a11
    m0_15 = a01 * a15 - a05 * a11
    m0_23 = a02 * a13 - a03 * a12
    m0_24 = a02 * a14 - a04 * a12
    m0_25 = a02 * a15 - a05 * a12
    m0_34 = a03 * a14 - a04 * a13
    m0_35 = a03 * a15 - a05 * a13
    m0_45 = a04 * a15 - a05 * a14
    m2_01 = a20 * a31 - a21 * a30
    m2_02 = a20 * a32 - a22 * a30
    m2_03 = a20 * a33 - a23 * a30
    m2_04 = a20 * a34 - a24 * a30
    m2_05 = a20 * a35 - a25 * a30
    m2_12 = a21 * a32 - a22 * a31
    m2_13 = a21 * a33 - a23 * a31
    m2_14 = a21 * a34 - a24 * a31
    m2_15 = a21 * a35 - a25 * a31
    m2_23 = a22 * a33 - a23 * a32
    m2_24 = a22 * a34 - a24 * a32
    m2_25 = a22 * a35 - a25 * a32
    m2_34 = a23 * a34 - a24 * a33
    m2_35 = a23 * a35 - a25 * a33
    m2_45 = a24 * a35 - a25 * a34
    m4_01 = a40 * a51 - a41 * a50
    m4_02 = a40 * a52 - a42 * a50
    m4_03 = a40 * a53 - a43 * a50
    m4_04 = a40 * a54 - a44 * a50
    m4_05 = a40 * a55 - a45 * a50
    m4_12 = a41 * a52 - a42 * a51
    m4_13 = a41 * a53 - a43 * a51
    m4_14 = a41 * a54 - a44 * a51
    m4_15 = a41 * a55 - a45 * a51
    m4_23 = a42 * a53 - a43 * a52
    m4_24 = a42 * a54 - a44 * a52
    m4_25 = a42 * a55 - a45 * a52
    m4_34 = a43 * a54 - a44 * a53
    m4_35 = a43 * a55 - a45 * a53
    m4_45 = a44 * a55 - a45 * a54
    det = 0.0
    det += m0_01 * (m2_23 * m4_45 - m2_24 * m4_35 + m2_25 * m4_34 + m2_34 * m4_25 - m2_35 * m4_24 + m2_45 * m4_23)
    det += m0_02 * (- m2_13 * m4_45 + m2_14 * m4_35 - m2_15 * m4_34 - m2_34 * m4_15 + m2_35 * m4_14 - m2_45 * m4_13)
    det += m0_03 * (m2_12 * m4_45 - m2_14 * m4_25 + m2_15 * m4_24 + m2_24 * m4_15 - m2_25 * m4_14 + m2_45 * m4_12)
    det += m0_04 * (- m2_12 * m4_35 + m2_13 * m4_25 - m2_15 * m4_23 - m2_23 * m4_15 + m2_25 * m4_13 - m2_35 * m4_12)
    det += m0_05 * (m2_12 * m4_34 - m2_13 * m4_24 + m2_14 * m4_23 + m2_23 * m4_14 - m2_24 * m4_13 + m2_34 * m4_12)
    det += m0_12 * (m2_03 * m4_45 - m2_04 * m4_35 + m2_05 * m4_34 + m2_34 * m4_05 - m2_35 * m4_04 + m2_45 * m4_03)
    det += m0_13 * (- m2_02 * m4_45 + m2_04 * m4_25 - m2_05 * m4_24 - m2_24 * m4_05 + m2_25 * m4_04 - m2_45 * m4_02)
    det += m0_14 * (m2_02 * m4_35 - m2_03 * m4_25 + m2_05 * m4_23 + m2_23 * m4_05 - m2_25 * m4_03 + m2_35 * m4_02)
    det += m0_15 * (- m2_02 * m4_34 + m2_03 * m4_24 - m2_04 * m4_23 - m2_23 * m4_04 + m2_24 * m4_03 - m2_34 * m4_02)
    det += m0_23 * (m2_01 * m4_45 - m2_04 * m4_15 + m2_05 * m4_14 + m2_14 * m4_05 - m2_15 * m4_04 + m2_45 * m4_01)
    det += m0_24 * (- m2_01 * m4_35 + m2_03 * m4_15 - m2_05 * m4_13 - m2_13 * m4_05 + m2_15 * m4_03 - m2_35 * m4_01)
    det += m0_25 * (m2_01 * m4_34 - m2_03 * m4_14 + m2_04 * m4_13 + m2_13 * m4_04 - m2_14 * m4_03 + m2_34 * m4_01)
    det += m0_34 * (m2_01 * m4_25 - m2_02 * m4_15 + m2_05 * m4_12 + m2_12 * m4_05 - m2_15 * m4_02 + m2_25 * m4_01)
    det += m0_35 * (- m2_01 * m4_24 + m2_02 * m4_14 - m2_04 * m4_12 - m2_12 * m4_04 + m2_14 * m4_02 - m2_24 * m4_01)
    det += m0_45 * (m2_01 * m4_23 - m2_02 * m4_13 + m2_03 * m4_12 + m2_12 * m4_03 - m2_13 * m4_02 + m2_23 * m4_01)
    return abs(det)


@njit(cache=True, nogil=True)
def _visible_region(FN, FU, FB, p, f0, stamp, tol, seen, vis, visible, stack,
                    hor_g, hor_s, hor_h):
    """Facets visible from ``p`` reachable from the visible facet ``f0``.

    Fills ``visible[:nvis]`` and the horizon ridges ``(hor_g, hor_s, hor_h)
    [:nh]`` (visible facet, slot of the ridge, hidden neighbour); returns
    ``(nvis, nh)``.  ``seen``/``vis`` are per-facet marks keyed by ``stamp``.
    """
    d = FN.shape[1]
    nvis = 0
    nh = 0
    ns = 1
    stack[0] = f0
    seen[f0] = stamp
    vis[f0] = True
    while ns > 0:
        ns -= 1
        g = stack[ns]
        visible[nvis] = g
        nvis += 1
        for s in range(d):
            hh = FN[g, s]
            if seen[hh] != stamp:
                seen[hh] = stamp
                dv = 0.0
                for c in range(d):
                    dv += FU[hh, c] * p[c]
                vis[hh] = dv > FB[hh] + tol
                if vis[hh]:
                    stack[ns] = hh
                    ns += 1
            if not vis[hh]:
                hor_g[nh] = g
                hor_s[nh] = s
                hor_h[nh] = hh
                nh += 1
    return nvis, nh


@njit(cache=True, nogil=True)
def _push_new(hb, hf, nheap, FB, newf, nnew, full, bound):
    """Queue the new facets ``newf[:nnew]``; in EPA mode only those with
    offset <= bound (``eps <= ub``: any support value bounds min h, so a
    facet with a larger offset can never be the answer; it stays in the hull
    but out of the queue)."""
    if full:
        for e in range(nnew):
            hf[nheap] = newf[e]
            nheap += 1
        return nheap
    for e in range(nnew):
        f = newf[e]
        if FB[f] <= bound:
            _heap_push(hb, hf, nheap, FB[f], f)
            nheap += 1
    return nheap


@njit(cache=True, nogil=True)
def _cone_horizon(V, VH, FV, FN, FU, FB, alive, vis, seen, q, nf, nh, hor_g, hor_s, hor_h,
                  interior, res_tol, degen_tol, wA, wperm, wx, T, stamp, free, nfree, newf):
    """Create the facets ``ridge + q`` for the nh horizon ridges.

    Each new facet copies its visible parent with the vertex of the ridge's
    slot replaced by ``q``; its neighbour across the ridge is the hidden
    facet.  New facets sharing a ridge through ``q`` are matched by an
    open-addressing table ``T`` keyed by two order-free hashes of the ridge's
    other vertices (see ``_vertex_hash``); a row of ``T`` is (key, key2, stamp,
    facet << 8 | slot), one cache line per probe.  New facets take the slots
    ``free[:nfree]`` of dead facets first, then slots from ``nf`` on; their
    indices go to ``newf[:nh]``.  Returns ``(nf, nfree, status)``.
    """
    d = V.shape[1]
    st = np.uint64(stamp)
    status = 0
    mask = np.uint64(T.shape[0] - 1)
    n_open = 0
    for e in range(nh):
        g = hor_g[e]
        s = hor_s[e]
        hh = hor_h[e]
        if nfree > 0:
            nfree -= 1
            nfi = np.int64(free[nfree])
        else:
            nfi = nf
            nf += 1
        newf[e] = nfi
        for c in range(d):
            FV[nfi, c] = FV[g, c]
        FV[nfi, s] = q
        FN[nfi, s] = hh
        for t in range(d):
            if FN[hh, t] == g:
                FN[hh, t] = nfi
                break
        b, ok = _plane_from_neighbours(V, FV, nfi, s, FU, g, hh, interior, res_tol)
        if not ok:
            b, ok = _plane(V, FV, nfi, interior, FU, degen_tol, wA, wperm, wx)
        if not ok:
            status = -1
            break
        FB[nfi] = b
        alive[nfi] = True
        vis[nfi] = False
        seen[nfi] = -1
        # ridges through p: facet vertices minus q minus one more
        tot = np.uint64(0)
        tot2 = np.uint64(0)
        for c in range(d):
            if c != s:
                tot += VH[FV[nfi, c], 0]
                tot2 += VH[FV[nfi, c], 1]
        for t in range(d):
            if t == s:
                continue
            key = tot - VH[FV[nfi, t], 0]
            key2 = tot2 - VH[FV[nfi, t], 1]
            slot = key & mask
            matched = False
            while T[slot, 2] == st:
                if T[slot, 0] == key and T[slot, 1] == key2 and T[slot, 3] != _CONSUMED:
                    of = np.int64(T[slot, 3] >> np.uint64(8))
                    ot = np.int64(T[slot, 3] & np.uint64(255))
                    FN[nfi, t] = of
                    FN[of, ot] = nfi
                    T[slot, 3] = _CONSUMED
                    n_open -= 1
                    matched = True
                    break
                slot = (slot + np.uint64(1)) & mask
            if not matched:
                T[slot, 0] = key
                T[slot, 1] = key2
                T[slot, 2] = st
                T[slot, 3] = (np.uint64(nfi) << np.uint64(8)) | np.uint64(t)
                n_open += 1
        if status != 0:
            break
    if status == 0 and n_open != 0:
        status = -4
    return nf, nfree, status


@njit(cache=True, nogil=True)
def _grow2(a, n):
    """Copy of the 2-D array ``a`` with n rows (loops: cheap to compile)."""
    b = np.empty((n, a.shape[1]), a.dtype)
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            b[i, j] = a[i, j]
    return b


@njit(cache=True, nogil=True)
def _grow1(a, n):
    """Copy of the 1-D array ``a`` with length n, zero padded."""
    b = np.zeros(n, a.dtype)
    for i in range(a.shape[0]):
        b[i] = a[i]
    return b


@njit(cache=True, nogil=True)
def hull_search(G, include_origin, offset, simplex_tol, tol, fc_tol, degen_tol, full,
                max_facets, max_iter):
    """Expanding-polytope search (see module docstring), from the simplex of
    ``_initial_simplex(G, include_origin, offset, simplex_tol)`` (status -5 if there is none).

    Returns ``(status, b_min, u_min, n_added, n_facets_alive, volume,
    n_slots)`` where ``b_min`` is the smallest verified facet offset (EPA
    mode: the epsilon candidate), ``u_min`` its unit normal, ``volume`` the
    d-volume of the final polytope (meaningful only when ``full``) and
    ``n_slots`` the facet slots used (in full mode a dead facet's slot is
    reused).  Array work is written as loops: array expressions cost
    seconds of JIT compilation each.
    """
    res_tol = 0.01 * tol
    d = G.shape[2]
    u_min = np.zeros(d)
    init_pts, ok = _initial_simplex(G, include_origin, offset, simplex_tol)
    if not ok:
        return -5, 0.0, u_min, 0, 0, 0.0, 0
    interior = np.zeros(d)
    vcap = 64
    V = np.empty((vcap, d))
    VH = np.empty((vcap, 2), np.uint64)   # two hashes of each vertex id: ridge key terms
    for i in range(d + 1):
        _vertex_hash(VH, i)
        for c in range(d):
            interior[c] += init_pts[i, c] / (d + 1)
            V[i, c] = init_pts[i, c]
    nv = d + 1

    # Facet arrays (int32 vertex and neighbour indices: a smaller working set).  In full mode a
    # dead facet's slot is reused by the next new facet, so the arrays hold about the final hull,
    # not every facet made.
    fcap = 2048 if full else 256
    FV = np.empty((fcap, d), np.int32)
    FN = np.empty((fcap, d), np.int32)
    FU = np.empty((fcap, d))
    FB = np.empty(fcap)
    alive = np.zeros(fcap, np.bool_)
    seen = np.empty(fcap, np.int64)  # (a loop, not np.ones/np.full: a library function fewer to compile)
    for i_ in range(seen.shape[0]):
        seen[i_] = -1
    vis = np.zeros(fcap, np.bool_)
    free = np.empty(fcap if full else 0, np.int64)   # dead facets' slots (full mode)
    nfree = 0
    nf = 0

    wA = np.empty((d - 1, d))
    wperm = np.empty(d, np.int64)
    wx = np.empty(d)
    # open-addressing table matching the new ridges through p (keys: order-free
    # hash of the ridge's other vertices; stamps avoid clearing it)
    # (stamps start at 0, below every insertion's stamp n_added >= 1)
    T = np.zeros((1024, 4), np.uint64)
    hb = np.empty(d + 1 if full else fcap)   # full mode: hf is a stack, keys unused
    hf = np.empty(fcap, np.int64)
    nheap = 0
    for f in range(d + 1):
        s = 0
        for v in range(d + 1):
            if v != f:
                FV[f, s] = v
                FN[f, s] = v  # facet opposite vertex v is facet v
                s += 1
        b, ok = _plane(V, FV, f, interior, FU, degen_tol, wA, wperm, wx)
        if not ok:
            return -5, 0.0, u_min, 0, 0, 0.0, 0
        FB[f] = b
        alive[f] = True
        _heap_push(hb, hf, nheap, b, f)
        nheap += 1
    nf = d + 1

    # full hull of an explicit point set: scan only the points not inserted yet
    explicit = full and (not include_origin) and G.shape[0] == 1
    rem = np.empty(G.shape[1], np.int64)
    nrem = 0
    if explicit:
        for j in range(G.shape[1]):
            rem[j] = j
        nrem = G.shape[1]
        for i in range(d + 1):  # the simplex's vertices are inserted points too
            for e in range(nrem):
                same = True
                for c in range(d):
                    if G[0, rem[e], c] - offset[c] != init_pts[i, c]:
                        same = False
                        break
                if same:
                    nrem -= 1
                    rem[e] = rem[nrem]
                    break

    p = np.empty(d)
    status = 0
    b_min = np.inf
    ub = np.inf
    n_added = 0
    hor_g = np.empty(64, np.int64)
    hor_s = np.empty(64, np.int64)
    hor_h = np.empty(64, np.int64)
    newf = np.empty(64, np.int64)
    stack = np.empty(64, np.int64)
    visible = np.empty(64, np.int64)
    all_in = False      # explicit points all inserted: every facet left is a facet of P
    while nheap > 0:
        if explicit and nrem == 0:
            all_in = True
            break
        if full:
            f = hf[nheap - 1]
        else:
            f = _heap_pop(hb, hf, nheap)
        nheap -= 1
        if not alive[f]:
            continue
        pos = -1
        if explicit:
            hv, pos = _support_rem(G, offset, FU, f, rem, nrem, p)
        else:
            hv = _support_row(G, include_origin, offset, FU, f, p)
        if hv < ub:
            ub = hv
        if hv <= FB[f] + tol:
            if FB[f] < b_min:
                b_min = FB[f]
                for c in range(d):
                    u_min[c] = FU[f, c]
            if not full:
                break
            continue
        if (not full) and hv <= fc_tol:
            # the whole space lies in {u.x <= fc_tol}: origin not interior
            status = 2
            b_min = hv
            for c in range(d):
                u_min[c] = FU[f, c]
            break
        n_added += 1
        if n_added > max_iter:
            status = -2
            break
        # ---- add vertex p
        if nv >= V.shape[0]:
            V = _grow2(V, 2 * V.shape[0])
            VH = _grow2(VH, V.shape[0])
        for c in range(d):
            V[nv, c] = p[c]
        _vertex_hash(VH, nv)
        if pos >= 0:
            nrem -= 1
            rem[pos] = rem[nrem]
        q = nv
        nv += 1
        # ---- visible region (connected, starting from f) and its horizon.
        # Buffers are sized up front (visible, stack <= nf; horizon <= d nf)
        # so that no array is re-bound inside the inner loops (re-binding
        # makes numba refcount the array on every iteration).
        if nf > visible.shape[0]:
            cap = 2 * nf
            visible = np.empty(cap, np.int64)
            stack = np.empty(cap, np.int64)
        if d * nf > hor_g.shape[0]:
            cap = 2 * d * nf
            hor_g = np.empty(cap, np.int64)
            hor_s = np.empty(cap, np.int64)
            hor_h = np.empty(cap, np.int64)
            newf = np.empty(cap, np.int64)
        nvis, nh = _visible_region(FN, FU, FB, p, f, n_added, tol, seen, vis, visible, stack,
                                   hor_g, hor_s, hor_h)
        # ---- capacity (slots: the free ones first)
        top = nf + max(0, nh - nfree)
        if top > FV.shape[0]:
            cap = FV.shape[0]
            while top > cap:
                cap *= 2
            FV = _grow2(FV, cap)
            FN = _grow2(FN, cap)
            FU = _grow2(FU, cap)
            FB = _grow1(FB, cap)
            alive = _grow1(alive, cap)
            vis = _grow1(vis, cap)
            seen2 = np.empty(cap, np.int64)  # (a loop, not np.ones/np.full: a library function fewer to compile)
            for i_ in range(seen2.shape[0]):
                seen2[i_] = -1
            for e in range(seen.shape[0]):
                seen2[e] = seen[e]
            seen = seen2
            if full:
                free = _grow1(free, cap)
        if full and nf - nfree + nh > max_facets:
            status = -3
            break
        # ---- cone the horizon to p
        need = nh * (d - 1) * 2
        if need > T.shape[0]:
            tcap = T.shape[0]
            while tcap < need:
                tcap *= 2
            T = np.zeros((tcap, 4), np.uint64)
        nf, nfree, status = _cone_horizon(V, VH, FV, FN, FU, FB, alive, vis, seen, q, nf, nh,
                                          hor_g, hor_s, hor_h, interior, res_tol, degen_tol, wA,
                                          wperm, wx, T, n_added, free, nfree, newf)
        if status != 0:
            break
        for e in range(nvis):
            alive[visible[e]] = False
        if full:
            # a dead facet is no one's neighbour any more: its slot is free.  (A stale entry of
            # the stack may then name a new facet: it is checked twice, which changes nothing.)
            for e in range(nvis):
                free[nfree] = visible[e]
                nfree += 1
        if nheap + nh > hf.shape[0]:
            cap = 2 * (nheap + nh)
            if not full:
                hb = _grow1(hb, cap)
            hf = _grow1(hf, cap)
        nheap = _push_new(hb, hf, nheap, FB, newf, nh, full, ub + tol)

    nalive = 0
    vol = 0.0
    fact = 1.0
    for i in range(2, d + 1):
        fact *= i
    M = np.empty((d, d))
    for f in range(nf):
        if alive[f]:
            nalive += 1
            if all_in and FB[f] < b_min:
                # verified (no point is left to lie beyond it), as a support query would find
                b_min = FB[f]
                for c in range(d):
                    u_min[c] = FU[f, c]
            if full and status == 0:
                # cone from vertex 0 (a point of the polytope): |det(v_r - v_0)| / d!; the
                # facets through vertex 0 add nothing
                apex = False
                for r in range(d):
                    apex = apex or FV[f, r] == 0
                if apex:
                    continue
                if d == 6:
                    vol += _cone_det6(V, FV, f)
                else:
                    for r in range(d):
                        for c in range(d):
                            M[r, c] = V[FV[f, r], c] - V[0, c]
                    vol += _abs_det(M)
    vol /= fact
    return status, b_min, u_min, n_added, nalive, vol, nf

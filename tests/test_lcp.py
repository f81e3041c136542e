"""Tests of graspsim.lcp.lemke: API, published/classic problems, degeneracy,
brute-force cross-checks, planted solutions and infeasible problems.

Independent references used here (none shares code with the solver):
* ``exact_lemke``: a textbook Lemke on an exact rational (Fraction) tableau
  with a selectable tie-breaking rule;
* ``enumerate_solutions``: brute force over all 2^n complementary bases;
* scipy's HiGHS LP for feasibility of {z >= 0, M z + q >= 0}.
"""
from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import linprog

from graspsim.lcp import LCPResult, lemke
from graspsim.lcp.problems import fathi, murty

# ---------------------------------------------------------------------------
# independent helpers (also imported by the other test_lcp_* files)
# ---------------------------------------------------------------------------


def exact_lemke(M, q, d=None, rule="lex", max_pivots=100_000):
    """Lemke on the exact tableau [I, -M, -d | q] (rational arithmetic).

    rule = "lex": lexicographic minimum ratio test, z0 leaves on a tie;
    rule = "first"/"last": smallest/largest row index among the tied rows
    (what a naive implementation does).  Returns (status, pivots, z, bases)
    where bases is the sequence of sorted basic index sets."""
    n = len(q)
    d = [1] * n if d is None else list(d)
    T = []
    for i in range(n):
        row = [Fraction(0)] * (2 * n + 2)
        row[i] = Fraction(1)
        for j in range(n):
            row[n + j] = -Fraction(M[i][j])
        row[2 * n] = -Fraction(d[i])
        row[2 * n + 1] = Fraction(q[i])
        T.append(row)
    basis = list(range(n))
    if min(q) >= 0:
        return "solved", 0, [Fraction(0)] * n, []

    def pivot(r, c):
        p = T[r][c]
        T[r] = [v / p for v in T[r]]
        for i in range(n):
            if i != r and T[i][c] != 0:
                f = T[i][c]
                T[i] = [a - f * b for a, b in zip(T[i], T[r])]
        basis[r] = c

    keys = [(tuple([Fraction(q[i]) / d[i]]
                   + [Fraction(int(k == i)) / d[i] for k in range(n)]), i) for i in range(n)]
    if rule == "lex":
        r = min(keys)[1]
    else:
        tmin = min(k[0][0] for k in keys)
        ties = [i for k, i in keys if k[0] == tmin]
        r = ties[0] if rule == "first" else ties[-1]
    entering, pivots, bases = 2 * n, 0, []
    while True:
        leaving = basis[r]
        pivot(r, entering)
        pivots += 1
        bases.append(tuple(sorted(basis)))
        if leaving == 2 * n:
            z = [Fraction(0)] * n
            for i, b in enumerate(basis):
                if n <= b < 2 * n:
                    z[b - n] = T[i][2 * n + 1]
            return "solved", pivots, z, bases
        if pivots >= max_pivots:
            return "max_pivots", pivots, None, bases
        entering = leaving + n if leaving < n else leaving - n
        cand = [i for i in range(n) if T[i][entering] > 0]
        if not cand:
            return "ray", pivots, None, bases
        ratio = {i: T[i][2 * n + 1] / T[i][entering] for i in cand}
        tmin = min(ratio.values())
        ties = [i for i in cand if ratio[i] == tmin]
        if rule == "lex":
            z0row = [i for i in ties if basis[i] == 2 * n]
            r = z0row[0] if z0row else min(
                ties, key=lambda i: tuple(T[i][k] / T[i][entering] for k in range(n)))
        else:
            r = ties[0] if rule == "first" else ties[-1]


def enumerate_solutions(M, q, tol=1e-9):
    """All solutions of LCP(M, q) given by nonsingular complementary bases
    (brute force over the 2^n index sets)."""
    M = np.asarray(M, float)
    q = np.asarray(q, float)
    n = len(q)
    sols = []
    scale = max(1.0, np.abs(q).max())
    for k in range(n + 1):
        for alpha in itertools.combinations(range(n), k):
            a = list(alpha)
            z = np.zeros(n)
            if a:
                S = M[np.ix_(a, a)]
                if abs(np.linalg.det(S)) < 1e-12 * max(1.0, np.abs(S).max()) ** len(a):
                    continue
                z[a] = np.linalg.solve(S, -q[a])
            w = M @ z + q
            if z.min() >= -tol * scale and w.min() >= -tol * scale:
                sols.append(z)
    return sols


def lp_feasible(M, q):
    """Is {z >= 0, M z + q >= 0} non-empty?  (HiGHS, on a row/column
    equilibrated copy: scaling changes nothing about feasibility)"""
    M = np.asarray(M, float)
    q = np.asarray(q, float)
    n = len(q)
    c = np.abs(M).max(axis=0)
    c = np.where(c > 0, c, 1.0)
    A = M / c
    r = np.maximum(np.abs(A).max(axis=1), np.abs(q))
    r = np.where(r > 0, r, 1.0)
    A, b = A / r[:, None], q / r
    for method in ("highs-ds", "highs-ipm"):
        res = linprog(np.zeros(n), A_ub=-A, b_ub=b, bounds=[(0, None)] * n, method=method)
        if res.status in (0, 2):
            return res.status == 0
    raise AssertionError(res.message)


def assert_lcp_solution(M, q, z, tol=1e-8):
    """Independent check of a claimed solution, relative to the size of q
    and of the terms of M z."""
    M = np.asarray(M, float)
    q = np.asarray(q, float)
    w = M @ z + q
    scale = max(np.abs(q).max(), (np.abs(M) @ np.abs(z)).max(), 1e-300)
    zs = max(np.abs(z).max(), 1e-300)
    assert z.min() >= -tol * zs, f"z has a negative entry {z.min()}"
    assert w.min() >= -tol * scale, f"w = Mz+q has a negative entry {w.min()} (scale {scale})"
    comp = np.minimum(np.abs(z) / zs, np.abs(w) / scale).max()
    assert comp <= tol, f"complementarity violated: {comp}"
    return w


def assert_certificate(M, q, y, tol=1e-8):
    """y >= 0, M^T y <= 0, q.y < 0 proves {z >= 0, M z + q >= 0} empty."""
    M = np.asarray(M, float)
    q = np.asarray(q, float)
    assert y is not None
    ys = np.abs(y).max()
    assert y.min() >= -tol * ys
    mty = M.T @ y
    assert mty.max() <= tol * max(1.0, (np.abs(M.T) @ np.abs(y)).max())
    assert q @ y < -1e-9 * (np.abs(q) @ np.abs(y))


def rand_pd(rng, n, skew=1.0):
    """Random positive definite (not symmetric) matrix: a P-matrix."""
    B = rng.normal(size=(n, n))
    S = rng.normal(size=(n, n)) * skew
    return B @ B.T + 0.1 * np.eye(n) + (S - S.T)


# ---------------------------------------------------------------------------
# API and input validation
# ---------------------------------------------------------------------------


def test_result_fields_and_textbook_2x2():
    # LCP(M, q) with M = [[2,1],[1,2]], q = (-5,-6): both w = 0, so
    # z solves M z = -q: z = (4/3, 7/3) (and w = 0).  A classical textbook
    # example (answer proven here by the 2x2 solve).
    r = lemke([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    assert isinstance(r, LCPResult)
    assert r.status == "solved" and r.solved
    np.testing.assert_allclose(r.z, [4 / 3, 7 / 3], rtol=1e-14)
    np.testing.assert_allclose(r.w, [0.0, 0.0], atol=1e-14)
    assert r.basis.dtype == bool and r.basis.tolist() == [True, True]
    assert r.pivots == 3          # z0 in, z2 in (w2 out), z1 in (z0 out)
    assert r.residual <= 1e-12
    assert r.certificate is None


def test_trivial_case_no_pivot():
    rng = np.random.default_rng(0)
    M = rng.normal(size=(6, 6))
    q = np.abs(rng.normal(size=6))
    q[2] = 0.0
    r = lemke(M, q)
    assert r.status == "solved" and r.pivots == 0
    assert np.all(r.z == 0.0)
    np.testing.assert_array_equal(r.w, q)


def test_empty_problem():
    r = lemke(np.zeros((0, 0)), np.zeros(0))
    assert r.status == "solved" and r.z.shape == (0,)


@pytest.mark.parametrize("M, q, msg", [
    (np.eye(3)[:2], np.ones(2), "square"),
    (np.ones(3), np.ones(3), "square"),
    (np.eye(3), np.ones(2), "length 3"),
    (np.eye(3), np.ones((3, 1)), "1-D"),
    (np.array([[1.0, np.nan], [0.0, 1.0]]), -np.ones(2), "finite"),
    (np.array([[1.0, np.inf], [0.0, 1.0]]), np.ones(2), "finite"),   # even if q >= 0
    (np.eye(2), np.array([-1.0, np.inf]), "finite"),
    (np.eye(2), np.array([-1.0, np.nan]), "finite"),
    (np.eye(2) * 1j, -np.ones(2), "real"),
    ([["a", "b"], ["c", "d"]], [1, 2], "real"),
])
def test_bad_input_raises(M, q, msg):
    with pytest.raises(ValueError, match=msg):
        lemke(M, q)


@pytest.mark.parametrize("kw, msg", [
    (dict(max_pivots=0), "max_pivots"),
    (dict(max_pivots=2.5), "max_pivots"),
    (dict(tol=0.0), "tol"),
    (dict(tol=2.0), "tol"),
    (dict(d=np.array([1.0, 0.0, 1.0])), "positive"),
    (dict(d=np.array([1.0, np.nan, 1.0])), "positive"),
    (dict(d=np.ones(2)), "shape"),
    (dict(warm_start=np.array([0, 5])), "warm_start"),
    (dict(warm_start=np.array([True, False])), "shape"),
    (dict(warm_start=np.array([0.5])), "warm_start"),
])
def test_bad_options_raise(kw, msg):
    with pytest.raises(ValueError, match=msg):
        lemke(np.eye(3), -np.ones(3), **kw)


def test_inputs_not_modified_and_any_layout():
    rng = np.random.default_rng(1)
    M = rand_pd(rng, 7)
    q = rng.normal(size=7)
    M0, q0 = M.copy(), q.copy()
    r1 = lemke(M, q)
    np.testing.assert_array_equal(M, M0)
    np.testing.assert_array_equal(q, q0)
    r2 = lemke(np.asfortranarray(M), q.tolist())          # F-order, lists
    r3 = lemke(M.astype(np.float32).astype(float), q)
    assert r1.status == r2.status == "solved"
    np.testing.assert_array_equal(r1.z, r2.z)
    assert r3.status == "solved"


def test_deterministic():
    rng = np.random.default_rng(2)
    M = rand_pd(rng, 30)
    q = rng.normal(size=30)
    q[::3] = 0.0
    rs = [lemke(M, q) for _ in range(3)]
    for r in rs[1:]:
        assert r.pivots == rs[0].pivots
        np.testing.assert_array_equal(r.z, rs[0].z)


# ---------------------------------------------------------------------------
# exponential problems (Murty 1978, Fathi 1979)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", list(range(1, 13)) + [16])
def test_murty_exponential(n):
    # Murty's lower-triangular P-matrix (1 on the diagonal, 2 below), q = -e,
    # covering vector d = e: Lemke makes 2^n pivots (counting the first, z0
    # entering) and ends at the unique solution z = e_1.
    M, q = murty(n)
    r = lemke(M, q, d=np.ones(n), max_pivots=2 ** n + 10)
    assert r.status == "solved"
    assert r.pivots == 2 ** n
    np.testing.assert_allclose(r.z, np.eye(n)[0], atol=1e-12)


@pytest.mark.parametrize("n", list(range(1, 11)) + [13])
def test_fathi_exponential(n):
    # Fathi's symmetric positive definite M = L L^T (L as in Murty's), q = -e:
    # 2^n pivots, unique solution z = e_1.
    M, q = fathi(n)
    r = lemke(M, q, d=np.ones(n), max_pivots=2 ** n + 10)
    assert r.status == "solved"
    assert r.pivots == 2 ** n
    np.testing.assert_allclose(r.z, np.eye(n)[0], atol=1e-9)


@pytest.mark.parametrize("gen", [murty, fathi])
def test_exponential_counts_match_exact_rational_lemke(gen):
    for n in range(1, 7):
        M, q = gen(n)
        st, piv, z, _ = exact_lemke(M.astype(int).tolist(), q.astype(int).tolist())
        assert st == "solved" and piv == 2 ** n and z == [1] + [0] * (n - 1)
        assert lemke(M, q, d=np.ones(n), max_pivots=10 ** 4).pivots == piv


def test_max_pivots_status():
    M, q = murty(10)
    r = lemke(M, q, d=np.ones(10), max_pivots=100)
    assert r.status == "max_pivots" and r.pivots == 100
    assert np.all(r.z == 0.0)


def test_default_budget_is_documented_value():
    M, q = murty(12)         # needs 4096 pivots > max(50*12, 200) = 600
    r = lemke(M, q, d=np.ones(12))
    assert r.status == "max_pivots" and r.pivots == 600


# ---------------------------------------------------------------------------
# degeneracy and cycling
# ---------------------------------------------------------------------------

# A cycling instance.  I do not trust my memory of the exact published
# cycling examples (Kostreva 1979; Cottle-Pang-Stone sec. 4.9), so this one
# was found by a search and its behaviour is proven below with exact rational
# arithmetic: M is monotone (M + M^T = diag(0, 2, 0, 0) is PSD), q = -e makes
# every ratio test tie, and Lemke with the "smallest index" or the "largest
# index" tie-break cycles forever, while the lexicographic rule ends after 6
# pivots at z = (0, 5/2, 7/4, 2).
CYCLING_M = [[0, 2, 2, 1], [-2, 1, -2, 1], [-2, 2, 0, -2], [-1, -1, 2, 0]]
CYCLING_Q = [-1, -1, -1, -1]


@pytest.mark.parametrize("rule", ["first", "last"])
def test_cycling_example_cycles_with_index_rules(rule):
    st, piv, _, bases = exact_lemke(CYCLING_M, CYCLING_Q, rule=rule, max_pivots=60)
    assert st == "max_pivots"
    # a basis repeats: the method is in a cycle, not just slow
    first_repeat = next(k for k in range(len(bases)) if bases[k] in bases[:k])
    assert first_repeat < 12
    period = bases[first_repeat:].index(bases[first_repeat], 1)
    assert bases[first_repeat:first_repeat + period] == bases[first_repeat + period:
                                                              first_repeat + 2 * period]


def test_cycling_example_solved_by_lexicographic_rule():
    st, piv, z, _ = exact_lemke(CYCLING_M, CYCLING_Q, rule="lex")
    assert st == "solved" and piv == 6
    assert z == [0, Fraction(5, 2), Fraction(7, 4), 2]
    M = np.array(CYCLING_M, float)
    q = np.array(CYCLING_Q, float)
    r = lemke(M, q, d=np.ones(4))
    assert r.status == "solved" and r.pivots == 6
    np.testing.assert_allclose(r.z, [0, 2.5, 1.75, 2], rtol=1e-14, atol=1e-14)
    r = lemke(M, q)                      # default covering vector
    assert r.status == "solved"
    assert_lcp_solution(M, q, r.z)


def test_pivot_sequence_matches_exact_lexicographic_lemke():
    """On small integer problems with many exact ties, the floating-point
    solver makes exactly the pivots of the exact lexicographic method."""
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(300):
        n = int(rng.integers(2, 6))
        B = rng.integers(-1, 2, (n, int(rng.integers(1, n + 1))))
        S = np.triu(rng.integers(-2, 3, (n, n)), 1)
        M = B @ B.T + S - S.T
        q = rng.integers(-2, 2, n)
        st, piv, z, _ = exact_lemke(M.tolist(), q.tolist(), max_pivots=500)
        r = lemke(M.astype(float), q.astype(float), d=np.ones(n))
        assert r.status == st
        if st == "solved":
            assert r.pivots == piv
            np.testing.assert_allclose(r.z, np.array(z, float), atol=1e-12, rtol=1e-12)
            checked += 1
        else:
            assert st == "ray"
    assert checked > 100


def test_degenerate_zero_q_rows_and_duplicated_rows():
    # rows 0 and 1 identical (duplicated contact), q = 0 in the slack rows
    rng = np.random.default_rng(4)
    B = rng.normal(size=(3, 6))
    B = np.vstack([B[0], B[0], B[1], B[2], B[2]])
    M = B @ B.T
    q = np.array([-1.0, -1.0, 0.0, -0.5, -0.5])
    r = lemke(M, q)
    assert r.status == "solved"
    w = assert_lcp_solution(M, q, r.z)
    # symmetric PSD: w is the same for every solution (monotone LCP);
    # compare with a brute-force solution of the same problem
    sols = enumerate_solutions(M + 1e-13 * np.eye(5), q)
    assert sols
    np.testing.assert_allclose(w, M @ sols[0] + q, atol=1e-6)


# ---------------------------------------------------------------------------
# brute-force enumeration of complementary bases, n <= 8
# ---------------------------------------------------------------------------


def test_p_matrices_unique_solution_matches_enumeration():
    rng = np.random.default_rng(5)
    for trial in range(60):
        n = int(rng.integers(1, 9))
        M = rand_pd(rng, n, skew=rng.uniform(0, 3))
        q = rng.normal(size=n) * 10.0 ** rng.uniform(-3, 3)
        sols = enumerate_solutions(M, q)
        assert len(sols) == 1                     # P-matrix: unique solution
        r = lemke(M, q)
        assert r.status == "solved"
        np.testing.assert_allclose(r.z, sols[0], rtol=1e-8,
                                   atol=1e-10 * max(1.0, np.abs(sols[0]).max()))


def test_general_matrices_never_bogus():
    """Random matrices outside Lemke's classes: whatever the verdict, a
    "solved" z is a real solution (brute force agrees it exists), and when
    enumeration finds no solution the verdict is never "solved"."""
    rng = np.random.default_rng(6)
    seen = {"solved": 0, "other": 0}
    for trial in range(200):
        n = int(rng.integers(1, 7))
        M = rng.normal(size=(n, n))
        q = rng.normal(size=n)
        sols = enumerate_solutions(M, q)
        r = lemke(M, q)
        if r.status == "solved":
            assert sols, "solved but enumeration finds no solution"
            assert_lcp_solution(M, q, r.z)
            assert any(np.allclose(r.z, s, atol=1e-7) for s in sols)
            seen["solved"] += 1
        else:
            assert r.status in ("ray", "numerical")
            seen["other"] += 1
    assert seen["solved"] > 50 and seen["other"] > 10


def test_strictly_copositive_always_solved():
    # nonnegative matrices with a positive diagonal are strictly copositive:
    # every LCP(M, q) has a solution and Lemke must find one
    rng = np.random.default_rng(7)
    for trial in range(80):
        n = int(rng.integers(1, 9))
        M = np.abs(rng.normal(size=(n, n))) * (rng.random((n, n)) < 0.5)
        M[np.diag_indices(n)] = rng.uniform(0.1, 2.0, n)
        q = rng.normal(size=n)
        r = lemke(M, q)
        assert r.status == "solved"
        assert_lcp_solution(M, q, r.z)
        assert enumerate_solutions(M, q)


# ---------------------------------------------------------------------------
# planted solutions
# ---------------------------------------------------------------------------


def planted(rng, M, support_frac=0.5, degenerate_frac=0.2):
    """q such that z* (random support) solves LCP(M, q), with some
    degenerate components (z_i = w_i = 0)."""
    n = M.shape[0]
    z = np.where(rng.random(n) < support_frac, rng.uniform(0.1, 3.0, n), 0.0)
    w = np.where(z > 0, 0.0, rng.uniform(0.1, 3.0, n))
    deg = rng.random(n) < degenerate_frac
    z[deg] = 0.0
    w[deg] = 0.0
    return M @ np.zeros(n) + w - M @ z, z, w


@pytest.mark.parametrize("n", [5, 20, 60, 120])
def test_planted_p_matrix(n):
    rng = np.random.default_rng(100 + n)
    for trial in range(5):
        M = rand_pd(rng, n)
        q, z_star, w_star = planted(rng, M)
        r = lemke(M, q)
        assert r.status == "solved"
        np.testing.assert_allclose(r.z, z_star, atol=1e-8 * np.abs(z_star).max())
        np.testing.assert_allclose(r.w, w_star, atol=1e-8 * np.abs(q).max())


@pytest.mark.parametrize("n, rank", [(8, 3), (30, 10), (80, 20)])
def test_planted_rank_deficient_psd(n, rank):
    # symmetric PSD of low rank: the solution set may be a polytope, but w is
    # the same for every solution (monotone LCP), so w must equal w*
    rng = np.random.default_rng(200 + n)
    for trial in range(5):
        B = rng.normal(size=(n, rank))
        M = B @ B.T
        q, z_star, w_star = planted(rng, M)
        r = lemke(M, q)
        assert r.status == "solved"
        assert_lcp_solution(M, q, r.z)
        np.testing.assert_allclose(r.w, w_star, atol=1e-8 * np.abs(q).max())


def test_ill_conditioned_hilbert_never_bogus():
    # Hilbert matrices (PD, cond up to ~1e19) with planted solutions on most
    # indices: the pivoting loses accuracy, the verification must notice,
    # and the robust retry (accuracy check and refactorisation at every
    # pivot) must still deliver a verified answer
    import scipy.linalg
    retried = 0
    for n in (10, 14, 20, 30):
        Hm = scipy.linalg.hilbert(n)
        rng = np.random.default_rng(n)
        for _ in range(10):
            z = np.where(rng.random(n) < 0.7, rng.uniform(0.1, 1.0, n), 0.0)
            w = np.where(z > 0, 0.0, rng.uniform(0.1, 1.0, n))
            q = w - Hm @ z
            r = lemke(Hm, q)
            assert r.status in ("solved", "numerical")
            if r.status == "solved":
                assert_lcp_solution(Hm, q, r.z)
            retried += r.retried
    assert retried > 0          # the retry path was exercised


def test_badly_scaled_rows():
    # rows/columns 1e4 (and 1e-4) apart: symmetric scaling must cope
    rng = np.random.default_rng(8)
    n = 40
    M0 = rand_pd(rng, n)
    q0, z_star, w_star = planted(rng, M0)
    s = 10.0 ** rng.choice([-4, 0, 4], n)
    M = s[:, None] * M0 * s[None, :]          # D M D with D = diag(s)
    q = s * q0                                # LCP(DMD, Dq) has z = D^-1 z*
    r = lemke(M, q)
    assert r.status == "solved"
    np.testing.assert_allclose(r.z * s, z_star, atol=1e-8 * z_star.max())
    r2 = lemke(M, q, scale=False)             # still right (or honest)
    assert r2.status in ("solved", "numerical")
    if r2.status == "solved":
        assert_lcp_solution(M, q, r2.z)


# ---------------------------------------------------------------------------
# infeasible problems: "ray" (with a Farkas certificate), never "solved"
# ---------------------------------------------------------------------------


def test_zero_matrix_negative_q():
    q = np.array([1.0, -2.0, 0.0])
    r = lemke(np.zeros((3, 3)), q)
    assert r.status == "ray"
    assert_certificate(np.zeros((3, 3)), q, r.certificate)
    assert np.all(r.z == 0)


def test_infeasible_psd():
    M = np.array([[1.0, -1.0], [-1.0, 1.0]])   # w1 + w2 = -2 for all z
    q = np.array([-1.0, -1.0])
    r = lemke(M, q)
    assert r.status == "ray"
    assert_certificate(M, q, r.certificate)
    assert not lp_feasible(M, q)


def lp_kkt_lcp(A, b, c):
    """LCP of the LP  min c.x  s.t.  A x >= b, x >= 0: z = (x, y),
    M = [[0, -A^T], [A, 0]] (skew-symmetric), q = (c, -b)."""
    m, n = A.shape
    M = np.block([[np.zeros((n, n)), -A.T], [A, np.zeros((m, m))]])
    return M, np.concatenate([c, -b])


@pytest.mark.parametrize("case", ["primal_infeasible", "dual_infeasible", "random"])
def test_skew_symmetric_kkt_of_infeasible_lp(case):
    rng = np.random.default_rng(9)
    if case == "primal_infeasible":     # x1 + x2 >= 2 and -x1 - x2 >= -1
        A = np.array([[1.0, 1.0], [-1.0, -1.0]])
        b = np.array([2.0, -1.0])
        c = np.array([1.0, 1.0])
    elif case == "dual_infeasible":     # min -x1, x1 - x2 >= 0: unbounded
        A = np.array([[1.0, -1.0]])
        b = np.array([0.0])
        c = np.array([-1.0, 0.0])
    else:                               # random infeasible system
        A = rng.normal(size=(6, 4))
        A = np.vstack([A, -A[:2].sum(axis=0, keepdims=True)])
        b = np.concatenate([np.abs(rng.normal(size=6)) + 1.0, [0.5]])
        b[:2] = 5.0
        c = rng.normal(size=4)
    M, q = lp_kkt_lcp(A, b, c)
    assert not lp_feasible(M, q) or case == "dual_infeasible"
    r = lemke(M, q)
    assert r.status == "ray"
    assert np.all(r.z == 0)
    if not lp_feasible(M, q):
        assert_certificate(M, q, r.certificate)


def test_feasible_lp_kkt_gives_optimum():
    # min -x1 - 2 x2  s.t.  -x1 - x2 >= -4, -x1 + x2 >= -2 (x >= 0):
    # optimum x = (0, 4), objective -8 (checked with HiGHS too)
    A = np.array([[-1.0, -1.0], [-1.0, 1.0]])
    b = np.array([-4.0, -2.0])
    c = np.array([-1.0, -2.0])
    M, q = lp_kkt_lcp(A, b, c)
    r = lemke(M, q)
    assert r.status == "solved"
    np.testing.assert_allclose(r.z[:2], [0.0, 4.0], atol=1e-12)
    ref = linprog(c, A_ub=-A, b_ub=-b, bounds=[(0, None)] * 2, method="highs")
    assert abs(c @ r.z[:2] - ref.fun) < 1e-10


def test_qp_kkt_known_solution():
    # min (x1-1)^2 + (x2-2)^2  s.t.  x1 + x2 <= 2, x >= 0.
    # KKT: x = (1/2, 3/2), multiplier y = 1.  LCP in z = (x, y):
    # w = [[2,0,1],[0,2,1],[-1,-1,0]] z + (-2, -4, 2).
    M = np.array([[2.0, 0.0, 1.0], [0.0, 2.0, 1.0], [-1.0, -1.0, 0.0]])
    q = np.array([-2.0, -4.0, 2.0])
    r = lemke(M, q)
    assert r.status == "solved"
    np.testing.assert_allclose(r.z, [0.5, 1.5, 1.0], rtol=1e-14)


@pytest.mark.parametrize("n", [3, 6, 10])
def test_negative_identity_infeasible(n):
    # M = -I, q = -e: w = -z - e < 0; M is not copositive but y = e_i is a
    # Farkas certificate
    r = lemke(-np.eye(n), -np.ones(n))
    assert r.status == "ray"
    assert_certificate(-np.eye(n), -np.ones(n), r.certificate)


def test_random_infeasible_psd_never_solved():
    rng = np.random.default_rng(10)
    count = 0
    for trial in range(60):
        n = int(rng.integers(2, 9))
        B = rng.normal(size=(n, int(rng.integers(1, n))))
        u, v = rng.normal(size=(2, n)) * (rng.random() < 0.5)
        M = B @ B.T + np.outer(u, v) - np.outer(v, u)   # PSD, low rank
        q = rng.normal(size=n) * 3
        feasible = lp_feasible(M, q)
        r = lemke(M, q)
        if feasible:     # copositive-plus + feasible => Lemke solves it
            assert r.status == "solved"
            assert_lcp_solution(M, q, r.z)
        else:
            count += 1
            assert r.status == "ray"
            assert_certificate(M, q, r.certificate)
    assert count >= 5


# ---------------------------------------------------------------------------
# warm start
# ---------------------------------------------------------------------------


def test_warm_start_accepts_previous_basis_and_falls_back():
    rng = np.random.default_rng(11)
    n = 50
    M = rand_pd(rng, n)
    q, z_star, _ = planted(rng, M, degenerate_frac=0.0)
    cold = lemke(M, q)
    assert cold.status == "solved" and cold.pivots > 0
    # the next step's problem: a small perturbation of q
    q2 = q + 1e-6 * rng.normal(size=n)
    warm = lemke(M, q2, warm_start=cold.basis)
    assert warm.status == "solved" and warm.warm_started and warm.pivots == 0
    ref = lemke(M, q2)
    np.testing.assert_allclose(warm.z, ref.z, atol=1e-10 * np.abs(ref.z).max())
    # the same with an index set and with the LCPResult itself
    idx = np.flatnonzero(cold.basis)
    assert lemke(M, q2, warm_start=idx).warm_started
    assert lemke(M, q2, warm_start=cold).warm_started
    # a bad guess falls back to Lemke and is still right
    bad = lemke(M, q2, warm_start=~cold.basis)
    assert bad.status == "solved" and not bad.warm_started and bad.pivots > 0
    np.testing.assert_allclose(bad.z, ref.z, atol=1e-10 * np.abs(ref.z).max())
    # an infeasible problem with a warm start still ends in a ray
    r = lemke(np.zeros((2, 2)), np.array([-1.0, 1.0]), warm_start=np.array([True, False]))
    assert r.status == "ray"


def test_warm_start_pivots_from_a_near_basis():
    """When the guessed basis no longer fits (a larger change of q: a few
    complementarity flags flip), Lemke runs from that basis with covering
    vector e in its transformed tableau: a handful of pivots instead of the
    cold run's, and the same unique solution (M is a P-matrix)."""
    rng = np.random.default_rng(5)
    n = 60
    B = rng.normal(size=(n, n))
    M = B @ B.T / n + 0.5 * np.eye(n)
    q1 = rng.normal(size=n)
    r1 = lemke(M, q1)
    assert r1.status == "solved"
    for eps in (0.05, 0.1):
        q2 = q1 + eps * np.random.default_rng(int(eps * 100)).normal(size=n)
        cold = lemke(M, q2)
        warm = lemke(M, q2, warm_start=r1)
        flips = int((cold.basis != r1.basis).sum())
        assert flips >= 1 and warm.status == "solved" and not warm.warm_started
        assert 0 < warm.pivots <= 3 * flips < cold.pivots
        assert_lcp_solution(M, q2, warm.z, tol=1e-10)
        np.testing.assert_allclose(warm.z, cold.z, atol=1e-10 * np.abs(cold.z).max())


@pytest.mark.parametrize("seed", range(5))
def test_warm_start_with_a_singular_guess(seed):
    """A guess whose principal submatrix is singular (here: every variable
    of a rank-n/2 PSD problem, as after redundant contacts) is cut to a
    nonsingular part before Lemke starts from it; the answer is verified
    either way, and equals the planted solution's w (unique for PSD M)."""
    rng = np.random.default_rng(seed)
    n = 40
    A = rng.normal(size=(n, n // 2))
    M = A @ A.T
    q, z_star, w_star = planted(rng, M, degenerate_frac=0.2)
    for guess in (np.ones(n, bool), z_star > 0, rng.random(n) < 0.7):
        r = lemke(M, q, warm_start=guess)
        assert r.status == "solved"
        assert_lcp_solution(M, q, r.z, tol=1e-9)
        np.testing.assert_allclose(M @ r.z + q, w_star, atol=1e-8 * max(1.0, np.abs(q).max()))

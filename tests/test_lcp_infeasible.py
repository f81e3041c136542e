"""LCPs without a solution are never reported "solved" (issue #15).

The families have exact certificates.  v >= 0 is an integer vector and B, U
are integer matrices whose columns are orthogonal to v, so

    M = B B^T + U W U^T      (W skew-symmetric; PSD plus skew-symmetric: monotone)

has M^T v = 0 exactly.  When v.q < 0, v.(M z + q) = v.q < 0 for every z, so no
z >= 0 has M z + q >= 0: v is a Farkas certificate.  Every entry and every
partial sum stays an integer below 2^53 (checked through the bound
|B||B|^T + |U||W||U|^T), so the floating-point values are exact.  A symmetric
power-of-two rescaling a D M D, D q (exact; its certificate is D^-1 v) puts
the problems on a dyadic grid with badly scaled rows.  Large entries of v make
the row that carries the orthogonality large: those problems drove the old
verification, which measured violations against |M||z|, to accept points far
out along a ray (z ~ 1e8..1e13, min w down to -||q||) as solutions.

Feasible counterparts: the same M with q = w* - M z* for complementary
integer z*, w* >= 0.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from graspsim.lcp import lemke

EPS = np.finfo(float).eps
TWO53 = 2.0 ** 53


def _perp(rng, v, p, m, amp):
    """(n, m) integer matrix U with v @ U = 0 exactly (v integer, v[p] = 1)."""
    U = rng.integers(-amp, amp + 1, size=(len(v), m)).astype(float)
    U[p] = 0.0
    U[p] = -(v @ U)
    return U


def certified_family(rng, n, skew, feasible, vexp):
    """(M, q, y): y >= 0 with M^T y = 0 exactly, and y.q < 0 exactly unless
    `feasible` (then q = w* - M z* has the planted solution z*)."""
    v = np.zeros(n)
    supp = rng.choice(n, size=int(rng.integers(2, n + 1)), replace=False)
    v[supp] = 2.0 ** rng.integers(0, vexp + 1, size=len(supp))
    p = supp[0]
    v[p] = 1.0
    B = _perp(rng, v, p, int(rng.integers(1, n)), 3)
    M = B @ B.T
    bound = np.abs(B) @ np.abs(B).T
    if skew:
        m = int(rng.integers(2, 9))
        U = _perp(rng, v, p, m, 3)
        W = np.triu(rng.integers(-2, 3, size=(m, m)).astype(float), 1)
        W = W - W.T
        M = M + U @ W @ U.T
        bound = bound + np.abs(U) @ np.abs(W) @ np.abs(U).T
    if feasible:
        zs = np.where(rng.random(n) < 0.5, rng.integers(1, 9, n), 0).astype(float)
        ws = np.where(zs == 0, rng.integers(0, 9, n), 0).astype(float)
        q = ws - M @ zs
        qbound = ws + bound @ zs
    else:
        q = rng.integers(-16, 17, size=n).astype(float)
        q[p] -= v @ q + rng.integers(1, 9)                 # v.q in [-8, -1]
        qbound = np.abs(q)
    # every partial sum an integer below 2^53: the float arithmetic above was exact
    assert max(bound.max(), (v @ bound).max(), qbound.max(), v @ np.abs(q)) < TWO53
    assert np.all(v @ M == 0.0)
    assert feasible or v @ q < 0
    D = 2.0 ** rng.integers(-3, 4, size=n)
    a = 2.0 ** int(rng.integers(-8, 9))
    return a * (D[:, None] * M * D[None, :]), D * q, v / D


def cases(seed, count, feasible):
    """`count` problems, n = 5..120, every other one with a skew part."""
    rng = np.random.default_rng(seed)
    for k in range(count):
        n = int(rng.integers(5, 121))
        vexp = (0, 4, 8, 10, 12, 13, 14)[k % 7]
        M, q, y = certified_family(rng, n, k % 2 == 1, feasible, vexp)
        yield k, M, q, y


def assert_certificate(M, q, y, tol=1e-9, qtol=1e-6):
    """y >= 0, M^T y <= 0 and q.y < 0, each relative to its own terms (with
    tol = qtol = 0: exactly)."""
    ys = np.abs(y).max()
    assert ys > 0 and y.min() >= -tol * ys
    mty = M.T @ y
    assert np.all(mty <= tol * (np.abs(M.T) @ np.abs(y)))
    assert q @ y < -qtol * (np.abs(q) @ np.abs(y))


@pytest.mark.parametrize("scale", [True, False])
def test_certified_infeasible_problems_are_never_solved(scale):
    """210 problems per scaling option.  Monotone M is copositive-plus, so in
    exact arithmetic Lemke ends in a secondary ray whose z-part is a
    certificate; in floating point at least 95% of them carry one (observed:
    all but 2-3 in 1000 of this construction), and each is checked here."""
    count = certified = 0
    for k, M, q, y in cases(15, 210, feasible=False):
        r = lemke(M, q, scale=scale)
        count += 1
        assert r.status != "solved", (k, len(q), np.abs(r.z).max(), r.w.min(), r.residual)
        assert r.status in ("ray", "numerical"), (k, r.status)
        assert np.all(r.z == 0) and np.all(r.w == q)
        if r.certificate is not None:
            certified += 1
            assert r.status == "ray"
            assert_certificate(M, q, r.certificate)
        assert_certificate(M, q, y, tol=0.0, qtol=0.0)     # the construction's own, exact
    assert count == 210 and certified >= 0.95 * count


def test_feasible_counterparts_are_solved_and_verified():
    """The same construction with a planted solution: always "solved", and the
    solution checked here against ||q|| (in balanced units: the Jacobi scaling
    E = diag(M)^-1/2, E_i = 1 where M_ii = 0) plus the rounding of forming
    M z + q.  10x the solver's default tol, because its equilibration differs
    from E by up to a few powers of two."""
    tol = 1e-8
    for k, M, q, _ in cases(16, 140, feasible=True):
        r = lemke(M, q)
        assert r.status == "solved", (k, r.status)
        z = r.z
        n = len(q)
        dg = np.diag(M)
        E = np.where(dg > 0, 1.0 / np.sqrt(np.where(dg > 0, dg, 1.0)), 1.0)
        qn = np.abs(E * q).max() / E                     # ||Eq||_inf in row i's units
        w = M @ z + q
        allow = tol * qn + (n + 1) * EPS * (np.abs(q) + np.abs(M) @ np.abs(z))
        zs = np.abs(z / E).max() * E
        assert np.all(z >= -tol * zs), k
        assert np.all(w >= -allow), (k, (w / allow).min())
        assert np.all(np.minimum(np.abs(z) / zs, tol * np.abs(w) / allow) <= tol), k
        # the solver's w: the same sum in another order
        assert np.all(np.abs(r.w - w) <= 2 * (n + 1) * EPS * (np.abs(q) + np.abs(M) @ np.abs(z)))


def test_issue_example_size_with_skew_part():
    """The issue's size, n = 40 with a skew part, over the scales that failed
    (v entries up to 2^14): no "solved", and the ray certificate when given."""
    rng = np.random.default_rng(40)
    for vexp in (10, 12, 13, 14) * 10:
        M, q, y = certified_family(rng, 40, True, False, vexp)
        r = lemke(M, q)
        assert r.status != "solved"
        if r.certificate is not None:
            assert_certificate(M, q, r.certificate)


def test_large_solution_of_an_ill_conditioned_problem_stays_solved():
    """Legitimately large z: M = [[1, -1], [-1, 1 + 2^-30]] is positive
    definite with condition ~2^32; q = (-0.3, -1.2) gives the unique solution
    z ~ (1.5 * 2^30 + 0.3, 1.5 * 2^30) (both w = 0).  No pair of doubles in [2^30, 2^31)
    can meet w_1 = z_1 - z_2 - 0.3 to tol ||q||: their difference is a
    multiple of 2^-22, 4.8e-8 away from 0.3.  The rounding allowance
    (n + 1) eps |M||z| ~ 1.4e-6 covers that; a ray point of that size would
    still need a violation that small, ~1e-6 of ||q||."""
    k = 30
    M = np.array([[1.0, -1.0], [-1.0, 1.0 + 2.0 ** -k]])
    q = np.array([-0.3, -1.2])
    Mf = [[Fraction(x) for x in row] for row in M]
    qf = [Fraction(x) for x in q]
    det = Mf[0][0] * Mf[1][1] - Mf[0][1] * Mf[1][0]
    z_exact = [-(Mf[1][1] * qf[0] - Mf[0][1] * qf[1]) / det,
               -(-Mf[1][0] * qf[0] + Mf[0][0] * qf[1]) / det]
    ulp = Fraction(2) ** (k - 52)
    gap = abs(-qf[0] - round(-qf[0] / ulp) * ulp)       # distance of 0.3 from ulp * Z
    assert gap > 40 * Fraction(1, 10 ** 9)
    r = lemke(M, q)
    assert r.status == "solved" and r.residual <= 1e-9
    assert np.all((2.0 ** k <= r.z) & (r.z < 2.0 ** (k + 1)))
    w1 = qf[0] + Mf[0][0] * Fraction(r.z[0]) + Mf[0][1] * Fraction(r.z[1])
    assert abs(w1) >= gap                               # exact: tol ||q|| is out of reach
    cond = 2.0 ** (k + 2)                               # ||M||_inf ||M^-1||_inf < 2^(k+2)
    for zi, ze in zip(r.z, z_exact):
        assert abs(Fraction(zi) - ze) <= cond * EPS * ze
    w = M @ r.z + q
    assert np.all(np.abs(w) <= 1e-9 + 3 * EPS * (np.abs(q) + np.abs(M) @ np.abs(r.z)))


@pytest.mark.parametrize("t", [1e2, 1e5, 1e8, 1e10, 1e12])
def test_verification_rejects_points_far_along_a_ray(t):
    """M = [[1, -1], [-1, 1]], q = (-1, -1): w1 + w2 = -2 for every z, so no
    z is a solution.  At z = (t, t + 1/2) (exact), w = (-3/2, -1/2) for every
    t while the terms grow like 2t.  The verification's worst violation is
    row 1's 3/2 / ws_1, ws_1 = ||q|| + 3 eps / tol (|q_1| + |z_1| + |z_2|):
    above tol up to t ~ 1e15 (where rounding could hide it), whereas relative
    to the terms alone, 3/2 / (2t) < tol already at t = 1e9."""
    from graspsim.lcp import _kernel as K
    tol = 1e-9
    M = np.array([[1.0, -1.0], [-1.0, 1.0]])
    q = np.array([-1.0, -1.0])
    z = np.array([t, t + 0.5])
    w = np.empty(2)
    res = K._verify(M, q, z, w, np.ones(2), 1.0, tol)
    np.testing.assert_array_equal(w, [-1.5, -0.5])
    expected = 1.5 / (1.0 + 3 * EPS / tol * (1.0 + 2 * t + 0.5))
    assert res == pytest.approx(expected, rel=1e-12)
    assert res > tol
    r = lemke(M, q)
    assert r.status == "ray"
    assert_certificate(M, q, r.certificate)

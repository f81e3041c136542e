"""Large contact LCPs: block principal pivoting finished by Lemke (``graspsim.lcp.solve_large``,
the island solver's call for LCPs of ``_bpp.MIN_ROWS`` rows and more).

Every "solved" answer is re-checked here against ||q|| (as in test_lcp_infeasible.py), on the
pile LCPs captured from the peers' 20-box drop (``benchmarks/capture_pile_lcps.py``), on planted
positive definite LCPs (unique solution: it must be the planted one, and Lemke's), and on box
stacks of the contact structure (eq. 21 of Miller & Christensen 2003, u = 8, the simulator's
contact compliance).  The infeasible families of test_lcp_infeasible.py must never come back
"solved", whatever the warm start.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from graspsim.lcp import lemke, solve_large
from graspsim.lcp import problems

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "benchmarks"))
from capture_pile_lcps import unpack                     # noqa: E402
from test_lcp_infeasible import cases                    # noqa: E402

EPS = np.finfo(float).eps


def check_solution(M, q, z, tol=1e-8):
    """z >= 0, w = M z + q >= 0, z.w = 0, measured against ||q|| in balanced units (Jacobi
    scaling, 1 where M_ii = 0) plus the rounding of forming M z + q; 10x the solver's tol
    since its equilibration differs from the Jacobi one by a few powers of two."""
    n = len(q)
    dg = np.diag(M)
    E = np.where(dg > 0, 1.0 / np.sqrt(np.where(dg > 0, dg, 1.0)), 1.0)
    qn = np.abs(E * q).max() / E
    w = M @ z + q
    allow = tol * qn + (n + 1) * EPS * (np.abs(q) + np.abs(M) @ np.abs(z))
    zs = np.abs(z / E).max() * E
    assert np.all(z >= -tol * zs)
    assert np.all(w >= -allow), (w / allow).min()
    assert np.all(np.minimum(np.abs(z) / zs, tol * np.abs(w) / allow) <= tol)


@pytest.fixture(scope="module")
def pile():
    return unpack(os.path.join(HERE, "data", "pile_lcps.npz"))


def test_pile_lcps_solved_verified_and_equal_to_lemke(pile):
    """The drop's islands (220-290 rows, 22-29 contacts, u = 8): solved from the simulator's warm
    start, verified, and the same contact impulses as the captured Lemke answer.  The contact
    block is positive definite through the compliance (1e-6 of its mean diagonal), so the
    impulses are unique; two verified answers differ by at most the verification's tolerance
    (1e-9 of ||q||) amplified by the condition (~1e6): 1e-3 of the largest impulse."""
    assert len(pile) == 10 and min(d["n"] for d in pile) >= 100
    for d in pile:
        M, q = d["M"], d["q"]
        r = solve_large(M, q, warm_start=d["warm"])
        assert r.status == "solved" and r.residual <= 1e-9
        check_solution(M, q, r.z)
        assert np.abs(r.z - d["z"]).max() <= 1e-3 * np.abs(d["z"]).max()
        # the basis returned is a complementary one: its principal solve is the answer
        assert np.all(r.z[~r.basis] == 0.0)


def test_pile_lcps_work_counted(pile):
    """Work in counts, not time.  8 of the 10 captured warm starts verify as they are: one
    factorisation of the guessed block and no pivot, as in Lemke's direct try.  The other two are
    off by 55-70 indices; Lemke from them pivots 138 and 166 times (plus a factorisation for the
    direct try, one to cut the guess to a nonsingular part, one to start its tableau and 3-4
    monitor refactorisations).  Block pivoting allowed 12 factorisations solves them with none
    (the default, 3, hands them to Lemke).  Work model in flops: a factorisation of the k x k
    block k^3 / 3, a Lemke pivot 4 n k (update of the stored inverse columns and the entering
    column, k = basic z's)."""
    alone = 0
    for d in pile:
        M, q, ws = d["M"], d["q"], d["warm"]
        rl = lemke(M, q, warm_start=ws)
        r = solve_large(M, q, warm_start=ws, max_iter=12)
        assert r.status == "solved" and r.pivots == 0
        n, k = d["n"], int(r.basis.sum())
        if rl.warm_started:
            alone += 1
            assert r.factorizations == 1 and rl.pivots == 0
        else:
            work_bpp = r.factorizations * k ** 3 / 3
            work_lemke = (3 + rl.refactorizations) * k ** 3 / 3 + rl.pivots * 4 * n * k
            assert rl.pivots >= 100 and work_bpp < 0.5 * work_lemke, (r.factorizations, rl.pivots)
    assert alone == 8


def planted_pd(rng, n):
    """M = B B^T / n + 1e-2 I (positive definite: one solution) with a planted complementary
    z*, w*; q = w* - M z*."""
    B = rng.normal(size=(n, n // 2))
    M = B @ B.T / n + 1e-2 * np.eye(n)
    on = rng.random(n) < 0.5
    zs = np.where(on, rng.uniform(0.1, 1.0, n), 0.0)
    ws = np.where(on, 0.0, rng.uniform(0.1, 1.0, n))
    return M, ws - M @ zs, zs, on


@pytest.mark.parametrize("frac", [0.02, 0.1, 0.2])
@pytest.mark.parametrize("n", [100, 240, 600])
def test_planted_positive_definite_unique_solution(n, frac):
    """From the planted basis with a fraction of its indices flipped: block pivoting finds the
    planted solution (Lemke's too: M is positive definite) with no pivot in at most 7
    factorisations.  Lemke's warm start pays a factorisation for the direct try, one for the
    nonsingular part and one for its tableau, then at least a pivot per wrong index.  In the work
    model of test_pile_lcps_work_counted block pivoting is cheaper from 10% wrong indices on
    (0.25-0.63 of Lemke's work here); with 2% wrong and n >= 240 Lemke is (1.3-1.4x less)."""
    rng = np.random.default_rng(n)
    M, q, zs, on = planted_pd(rng, n)
    guess = on.copy()
    flip = rng.choice(n, size=max(2, int(frac * n)), replace=False)
    guess[flip] = ~guess[flip]
    r = solve_large(M, q, warm_start=guess, max_iter=12)
    rl = lemke(M, q, warm_start=guess)
    assert r.status == "solved" and rl.status == "solved"
    check_solution(M, q, r.z)
    assert np.allclose(r.z, zs, rtol=0, atol=1e-9)
    assert np.allclose(r.z, rl.z, rtol=0, atol=1e-9)
    assert np.array_equal(r.basis, on)
    assert r.pivots == 0 and r.factorizations <= 7 and rl.pivots >= len(flip)
    k = int(on.sum())
    work_bpp = r.factorizations * k ** 3 / 3
    work_lemke = (3 + rl.refactorizations) * k ** 3 / 3 + rl.pivots * 4 * n * k
    if frac >= 0.1:
        assert work_bpp < 0.7 * work_lemke, (r.factorizations, rl.pivots, rl.refactorizations)


def stack(levels, seed):
    """A jittered stack of `levels` boxes, 4 contacts per interface, u = 8 (the simulator's):
    n = 40 levels rows, with the simulator's contact compliance on the contact rows."""
    M, q, info = problems.box_stack(levels=levels, u=8, rng=seed, jitter=1.0, h=0.0025)
    c, u = info["contacts"], info["u"]
    idx = np.arange(c * (1 + u))
    M = M.copy()
    M[idx, idx] += 1e-6 * np.mean(np.diag(M)[idx])
    return M, q, info


@pytest.mark.parametrize("levels", [3, 7, 15])
def test_contact_stacks_next_step(levels):
    """Box stacks of 120-600 rows: the basis of one step's LCP as the warm start of the next
    (the velocity terms of q changed by 0.1% and by 10%; q of the lambda rows stays 0, so the
    Anitescu-Potra solvability result holds).  Always solved, verified, and the same post-step
    velocities as Lemke's.  (Resting contacts are degenerate, w = 0 on every friction row, so
    even the 0.1% change flips many friction flags: block pivoting then hands over to Lemke.)"""
    M, q, info = stack(levels, levels)
    r0 = lemke(M, q)
    assert r0.status == "solved"
    rng = np.random.default_rng(levels)
    nc = len(q) // 10 * 9                                   # normal and friction rows (q_lambda = 0)
    for rel in (1e-3, 1e-1):
        q1 = q.copy()
        q1[:nc] += rel * np.abs(q).max() * rng.uniform(-1, 1, nc)
        r = solve_large(M, q1, warm_start=r0.basis)
        assert r.status == "solved", (levels, rel)
        check_solution(M, q1, r.z)
        rl = lemke(M, q1, warm_start=r0.basis)
        assert rl.status == "solved"
        # the same post-step velocities (the impulses' effect; unique through the compliance)
        v, vl = info["velocity"](r.z), info["velocity"](rl.z)
        assert np.abs(v - vl).max() <= 1e-6 * max(1.0, np.abs(vl).max())


def test_small_lcps_are_lemke():
    """Below MIN_ROWS (and without a warm start) the answer is exactly Lemke's."""
    M, q, _ = stack(2, 1)                                  # 80 rows
    r0 = lemke(M, q)
    for ws in (None, r0.basis):
        r = solve_large(M, q, warm_start=ws)
        rl = lemke(M, q, warm_start=ws)
        assert r.factorizations == 0
        assert np.array_equal(r.z, rl.z) and r.pivots == rl.pivots


def test_infeasible_families_never_solved():
    """test_lcp_infeasible.py's certified infeasible problems (n = 5-120, PSD + skew), block
    pivoting forced (min_rows = 0) from random guesses: never "solved"; their feasible
    counterparts always are, and verified."""
    rng = np.random.default_rng(7)
    for k, M, q, _ in cases(15, 60, feasible=False):
        guess = rng.random(len(q)) < 0.5
        r = solve_large(M, q, warm_start=guess, min_rows=0, max_iter=12)
        assert r.status != "solved", (k, len(q))
        assert np.all(r.z == 0) and np.all(r.w == q)
    for k, M, q, _ in cases(16, 40, feasible=True):
        guess = rng.random(len(q)) < 0.5
        r = solve_large(M, q, warm_start=guess, min_rows=0, max_iter=12)
        assert r.status == "solved", k
        check_solution(M, q, r.z)


def test_bad_input():
    with pytest.raises(ValueError, match="max_iter"):
        solve_large(np.eye(3), -np.ones(3), warm_start=np.ones(3, bool), max_iter=0)
    with pytest.raises(ValueError, match="finite"):
        solve_large(np.full((120, 120), np.nan), -np.ones(120), warm_start=np.ones(120, bool))

#!/usr/bin/env python3
"""Other starting guesses for the pile's LCPs than last step's basis (issue 18, eighteenth pass).

    python benchmarks/capture_pile_lcps.py --out /tmp/form.npz \\
        --times 0.3,0.35,0.4,0.45,0.5,0.55,0.6,0.65,0.7 --min-rows 150
    taskset -c 0 python benchmarks/bench_pile_guesses.py /tmp/form.npz [--sweeps 20,100,500]

For every captured LCP that had a warm guess (the contacts of a forming pile: u = 8 friction
directions, rows [normals, friction, lambda]), the Lemke pivots of the island solver's own kernel
(``lcp._kernel.solve``) from:

* ``warm``: the simulator's guess (last step's basis, matched contact by contact), as the step does;
* ``cold``: no guess;
* ``pgs N``: the active set of N sweeps of projected Gauss-Seidel on the same LCP (normal rows
  clamped at 0, each friction direction clamped at 0 and the contact's sum scaled back into
  mu c_n, lambda = the largest backwards sliding speed where the cone is full), handed to Lemke
  as the guess (PyBullet's solver is such sweeps, without the exact finish);
* ``ppm``: simple principal pivoting from the warm guess's safely nonsingular part: flip the most
  violated complementarity pair (least index after a repeated set), skipping flips that make the
  principal block singular, at most n/2 flips; Lemke from the warm guess when it does not finish
  (its flips are then counted as wasted pivots).

Pivot counts only: a pivot of each costs about the same (a rank-one update of an n x n factor),
so the totals compare the methods.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_pile_lcps import unpack  # noqa: E402

U = 8          # the simulator's friction directions


def pgs_guess(M: np.ndarray, q: np.ndarray, nc: int, sweeps: int) -> np.ndarray:
    """Basic z's after ``sweeps`` projected Gauss-Seidel sweeps (see the module docstring)."""
    n = len(q)
    nh = nc * (1 + U)
    z = np.zeros(n)
    for _ in range(sweeps):
        for c in range(nc):
            i = c
            z[i] = max(0.0, z[i] - (M[i, :nh] @ z[:nh] + q[i]) / M[i, i])
            rows = nc + c * U + np.arange(U)
            tot = 0.0
            for i in rows:
                z[i] = max(0.0, z[i] - (M[i, :nh] @ z[:nh] + q[i]) / M[i, i])
                tot += z[i]
            mu = M[nh + c, c]
            if tot > mu * z[c] and tot > 0.0:
                z[rows] *= mu * z[c] / tot
    for c in range(nc):
        rows = nc + c * U + np.arange(U)
        sliding = z[c] > 0 and z[rows].sum() >= M[nh + c, c] * z[c] * (1 - 1e-6)
        z[nh + c] = max(0.0, -(M[rows, :nh] @ z[:nh] + q[rows]).min()) if sliding else 0.0
    return z > 1e-12 * max(np.abs(z).max(), 1e-300)


def _principal(A: np.ndarray, q: np.ndarray, S: np.ndarray):
    z = np.zeros(len(q))
    idx = np.flatnonzero(S)
    if len(idx):
        B = A[np.ix_(idx, idx)]
        if np.linalg.cond(B) > 1e12:
            return None
        z[idx] = np.linalg.solve(B, -q[idx])
    return z


def ppm_flips(A: np.ndarray, q: np.ndarray, S: np.ndarray, budget: int) -> tuple[bool, int]:
    """(finished, flips) of simple principal pivoting from the set S on the LCP (A, q)."""
    S = S.copy()
    z = _principal(A, q, S)
    if z is None:
        return False, 0
    flips, murty, seen = 0, False, set()
    while True:
        viol = np.where(S, z, A @ z + q)
        bad = np.flatnonzero(viol < -1e-10)
        if not len(bad):
            return True, flips
        if flips >= budget:
            return False, flips
        for i in (bad if murty else bad[np.argsort(viol[bad])]):
            S[i] = not S[i]
            z2 = _principal(A, q, S)
            key = S.tobytes()
            if z2 is not None and (key not in seen or not murty):
                murty = murty or key in seen
                seen.add(key)
                z, flips = z2, flips + 1
                break
            S[i] = not S[i]
        else:
            return False, flips


def main() -> None:
    from graspsim.lcp import _kernel as K

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lcps", help="a file written by capture_pile_lcps.py")
    ap.add_argument("--sweeps", default="20,100,500")
    a = ap.parse_args()
    sweeps = [int(x) for x in a.sweeps.split(",")]
    totals = {"warm": 0, "cold": 0, "ppm": 0, **{f"pgs {s}": 0 for s in sweeps}}
    finished = 0
    count = 0
    for d in unpack(a.lcps):
        M, q, warm = d["M"], d["q"], d["warm"]
        n = len(q)
        if warm is None or n % (U + 2):
            continue
        count += 1
        nc = n // (U + 2)
        cone = np.array([0, nc, nc * (1 + U), nc, U], np.int64)

        def pivots(guess, use):
            z, w, zb, cert = np.zeros(n), np.zeros(n), np.zeros(n, bool), np.zeros(n)
            return int(K.solve(M, q, np.empty(0), guess, use, 50 * n, 1e-9, True, False, z, w, zb, cert, cone)[1])

        row = {"warm": pivots(warm, True), "cold": pivots(np.zeros(n, bool), False)}
        for s in sweeps:
            row[f"pgs {s}"] = pivots(pgs_guess(M, q, nc, s), True)
        D, _ = K._equilibrate(M, 1)
        A = D[:, None] * M * D[None, :]
        qs = D * q / np.abs(D * q).max()
        sub = np.zeros(n, bool)
        K._nonsingular_subset(M, D, warm, sub)
        ok, flips = ppm_flips(A, qs, sub, n // 2)
        finished += ok
        row["ppm"] = flips if ok else flips + row["warm"]
        for k, v in row.items():
            totals[k] += v
        print(f"t = {d['time']:.3f} s, {n} rows: " + ", ".join(f"{k} {v}" for k, v in row.items()))
    print(f"{count} LCPs; Lemke pivots in all: " + ", ".join(f"{k} {v}" for k, v in totals.items())
          + f"; principal pivoting finished {finished} of {count}")


if __name__ == "__main__":
    main()

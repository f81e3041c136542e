"""graspsim's Lemke against Drake's two LCP solvers, on the same contact LCPs (issue #3).

    python -m venv /tmp/venv-drake && /tmp/venv-drake/bin/pip install drake numpy
    python benchmarks/peers/lcp_vs_drake.py [--count 480] [--drake-python /tmp/venv-drake/bin/python]

The corpus is ``graspsim.lcp.problems.contact_corpus`` (frictional-contact
LCPs of size 12..122, the one ``benchmarks/bench_lcp.py`` uses).  It is
written to a temporary .npz; a second interpreter (Drake's venv, which has
no graspsim) solves every problem with ``UnrevisedLemkeSolver`` and
``MobyLcpSolver`` through pydrake's MathematicalProgram, the way a Python
user reaches them, and writes z and times back.  This script then judges
every answer of all three solvers with the same independent check:

* a claimed solution must satisfy z >= 0, w = M z + q >= 0, min(z, w) = 0,
  to 1e-8 relative to the size of q and of the terms of M z;
* a problem a solver did not solve counts as correct only if it has no
  solution, which an LP (HiGHS) decides.

Both interpreters pin themselves to the same core, one after the other.
Times are the minimum over ``--reps`` calls.  A Drake solver object
remembers the problem it solved last, so a second ``Solve`` of the same
program is a warm start: "cold" times ``Solve(prog)`` on a new program and
solver object (both built outside the timer), "warm" the same call repeated,
"build" adds building the program and the solver, which a simulator pays
every step.  graspsim's "warm" passes the first answer's basis as
``warm_start``.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from graspsim.lcp import lemke  # noqa: E402
from graspsim.lcp.problems import contact_corpus  # noqa: E402

# Runs in Drake's interpreter: no graspsim there.  Reads problems.npz, writes drake.npz.
DRAKE_SIDE = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    from pydrake.solvers import MathematicalProgram, MobyLcpSolver, UnrevisedLemkeSolver
    import pydrake
    try:
        os.sched_setaffinity(0, {int(sys.argv[3])})
    except (AttributeError, OSError):
        pass
    data = np.load(sys.argv[1])
    count, reps = int(data["count"]), int(sys.argv[4])

    def build(M, q):
        prog = MathematicalProgram()
        z = prog.NewContinuousVariables(len(q), "z")
        prog.AddLinearComplementarityConstraint(M, q, z)
        return prog, z

    from importlib.metadata import version
    out = {"version": np.array(version("drake"))}
    # A Drake solver object remembers the last problem it solved: a second
    # Solve of the same problem is a warm start.  "cold" builds a new
    # program and solver for every call (both outside the timer); "warm"
    # repeats Solve on the same ones; "build" times program + solver + Solve.
    for name, cls in (("unrevised", UnrevisedLemkeSolver), ("moby", MobyLcpSolver)):
        zs, ok, t_cold, t_warm, t_all = [], [], [], [], []
        for k in range(count):
            M, q = data[f"M{k}"], data[f"q{k}"]
            cold = warm = build_t = np.inf
            for _ in range(reps):
                prog, z = build(M, q)
                solver = cls()
                t0 = time.perf_counter()
                res = solver.Solve(prog)
                cold = min(cold, time.perf_counter() - t0)
                t0 = time.perf_counter()
                solver.Solve(prog)
                warm = min(warm, time.perf_counter() - t0)
                t0 = time.perf_counter()
                prog2, z2 = build(M, q)
                cls().Solve(prog2)
                build_t = min(build_t, time.perf_counter() - t0)
            t_cold.append(cold)
            t_warm.append(warm)
            t_all.append(build_t)
            ok.append(res.is_success())
            zs.append(np.asarray(res.GetSolution(z), float) if res.is_success()
                      else np.full(len(q), np.nan))
        out[name + "_ok"] = np.array(ok)
        out[name + "_cold"] = np.array(t_cold)
        out[name + "_warm"] = np.array(t_warm)
        out[name + "_all"] = np.array(t_all)
        for k, zk in enumerate(zs):
            out[f"{name}_z{k}"] = zk
    np.savez(sys.argv[2], **out)
""")


def check_solution(M, q, z, tol=1e-8):
    """z >= 0, w >= 0, min(z, w) = 0 relative to |q| and the terms of M z."""
    if not np.all(np.isfinite(z)):
        return False
    w = M @ z + q
    scale = max(np.abs(q).max(), (np.abs(M) @ np.abs(z)).max())
    zs = max(np.abs(z).max(), 1e-300)
    return bool(z.min() >= -tol * zs and w.min() >= -tol * scale
                and np.minimum(np.abs(z) / zs, np.abs(w) / scale).max() <= tol)


def lp_feasible(M, q):
    from scipy.optimize import linprog
    n = len(q)
    res = linprog(np.zeros(n), A_ub=-M, b_ub=q, bounds=[(0, None)] * n, method="highs")
    return res.status == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=480)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--core", type=int, default=0)
    ap.add_argument("--drake-python", default="/tmp/venv-drake/bin/python")
    a = ap.parse_args()
    if subprocess.run([a.drake_python, "-c", "import pydrake.solvers"],
                      capture_output=True).returncode:
        sys.exit(f"{a.drake_python} cannot import pydrake; create the venv first:\n"
                 "  python -m venv /tmp/venv-drake && /tmp/venv-drake/bin/pip install drake numpy")
    corpus = contact_corpus(a.count, seed=2024)
    sizes = np.array([M.shape[0] for _, M, _ in corpus])
    with tempfile.TemporaryDirectory() as d:
        prob, res = Path(d) / "problems.npz", Path(d) / "drake.npz"
        arrays = {"count": np.array(len(corpus))}
        for k, (_, M, q) in enumerate(corpus):
            arrays[f"M{k}"], arrays[f"q{k}"] = M, q
        np.savez(prob, **arrays)
        script = Path(d) / "drake_side.py"
        script.write_text(DRAKE_SIDE)
        subprocess.run([a.drake_python, str(script), str(prob), str(res), str(a.core),
                        str(a.reps)], check=True)
        dr = dict(np.load(res))

    try:
        os.sched_setaffinity(0, {a.core})
    except (AttributeError, OSError):
        pass
    lemke(np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-5.0, -6.0]))   # load the kernel
    feasible = {}

    def judged(k, solved, z):
        M, q = corpus[k][1], corpus[k][2]
        if solved:
            return check_solution(M, q, z)
        if k not in feasible:
            feasible[k] = lp_feasible(M, q)
        return not feasible[k]

    rows = []
    t_ours, t_ours_warm, ok_ours = [], [], []
    for k, (_, M, q) in enumerate(corpus):
        cold = warm = np.inf
        for _ in range(a.reps):
            t0 = time.perf_counter()
            r = lemke(M, q)
            cold = min(cold, time.perf_counter() - t0)
            t0 = time.perf_counter()
            lemke(M, q, warm_start=r)
            warm = min(warm, time.perf_counter() - t0)
        t_ours.append(cold)
        t_ours_warm.append(warm)
        ok_ours.append(judged(k, r.status == "solved", r.z))
    rows.append(("graspsim lemke", np.array(t_ours), np.array(t_ours_warm), None,
                 np.array(ok_ours)))
    for name, label in (("unrevised", "Drake UnrevisedLemkeSolver"),
                        ("moby", "Drake MobyLcpSolver")):
        ok = np.array([judged(k, bool(dr[name + "_ok"][k]), dr[f"{name}_z{k}"])
                       for k in range(len(corpus))])
        rows.append((label, dr[name + "_cold"], dr[name + "_warm"], dr[name + "_all"], ok))

    print(f"{len(corpus)} contact LCPs, n = {sizes.min()}..{sizes.max()} (median "
          f"{int(np.median(sizes))}); {sum(feasible.values())} of the {len(feasible)} problems "
          f"some solver did not solve have a solution (LP); drake {dr['version']}; core {a.core}")
    print("| solver | wrong verdicts | cold median µs | cold p95 µs | cold max µs | "
          "warm (same problem again) median µs | program build + cold solve, median µs |")
    print("|---|---|---|---|---|---|---|")
    for label, t, tw, t_all, ok in rows:
        t = t * 1e6
        extra = f"{np.median(t_all) * 1e6:.1f}" if t_all is not None else "-"
        print(f"| {label} | {int((~ok).sum())} / {len(ok)} | {np.median(t):.1f} | "
              f"{np.percentile(t, 95):.1f} | {t.max():.1f} | {np.median(tw) * 1e6:.1f} | {extra} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

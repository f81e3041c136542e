"""Benchmark of graspsim.lcp.lemke.

    python benchmarks/bench_lcp.py            # full run (~1 minute)
    python benchmarks/bench_lcp.py --quick    # smaller corpus

Pins itself to one core (like ``taskset -c 0``) when the OS allows, then:

1. numba compile time: cold (empty cache directory) and cached (second
   process, cache on disk), each measured in a fresh interpreter as
   import + first call;
2. a corpus of frictional-contact LCPs of sizes 12..122 (box resting,
   on an edge, sliding, duplicated contacts, stacks of 2-3 boxes, a
   three-finger grasp with joint-limit rows 1e4 larger; u = 4 and 8):
   every verdict is checked independently (complementarity recomputed here;
   feasibility by an LP for anything not solved), then median / p95 / max
   solve times, wall clock and process CPU time;
3. time per pivot for dense random problems of n = 20, 60, 120;
4. Murty's exponential problem (n = 16, 65536 pivots) and warm starts;
5. large contact LCPs: the islands captured from the peers' 20-box drop
   (``--pile``, default ``tests/data/pile_lcps.npz``; a bigger set from
   ``benchmarks/capture_pile_lcps.py``), Lemke from the simulator's warm
   start against ``solve_large`` (block principal pivoting, then Lemke): CPU
   time, pivots, factorisations, every answer checked.

The per-problem time is the minimum over a few repetitions (the machine may
be shared); CPU time (time.process_time) is reported alongside wall time.
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graspsim.lcp import lemke, solve_large  # noqa: E402
from graspsim.lcp.problems import box_on_plane, contact_corpus, murty  # noqa: E402


def pin_to_one_core():
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        return f"pinned to core {sorted(os.sched_getaffinity(0))[0]}"
    except (AttributeError, OSError):
        return "not pinned"


def compile_times():
    """(wall, cpu) seconds of import + first call in a fresh interpreter."""
    code = ("import time, numpy as np; t=time.perf_counter(); c=time.process_time();"
            "from graspsim.lcp import lemke;"
            "lemke(np.array([[2.,1.],[1.,2.]]), np.array([-5.,-6.]));"
            "print(time.perf_counter()-t, time.process_time()-c)")
    imp = ("import time; t=time.perf_counter(); c=time.process_time(); import graspsim.lcp;"
           "print(time.perf_counter()-t, time.process_time()-c)")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = {}
    with tempfile.TemporaryDirectory() as d:
        env["NUMBA_CACHE_DIR"] = d
        for label, src in (("cold (compile)", code), ("cached (load)", code),
                           ("import only, no call", imp)):
            r = subprocess.run([sys.executable, "-c", src], env=env, capture_output=True,
                               text=True, check=True)
            out[label] = tuple(float(v) for v in r.stdout.split()[-2:])
    return out


def check_solution(M, q, z, tol=1e-8):
    """Independent check: z >= 0 relative to its largest entry; w >= 0 and
    min(z, w) = 0 relative to ||q|| (in balanced units: the Jacobi scaling
    E = diag(M)^-1/2, 1 where M_ii <= 0) plus the rounding of forming M z + q,
    (n + 1) eps of its terms.  Not relative to the terms alone: that accepts
    points far out along a ray of an infeasible problem."""
    n = len(q)
    w = M @ z + q
    dg = np.diag(M)
    E = np.where(dg > 0, 1.0 / np.sqrt(np.where(dg > 0, dg, 1.0)), 1.0)
    allow = (tol * np.abs(E * q).max() / E
             + (n + 1) * np.finfo(float).eps * (np.abs(q) + np.abs(M) @ np.abs(z)))
    zs = max(np.abs(z / E).max(), 1e-300) * E
    return bool(np.all(z >= -tol * zs) and np.all(w >= -allow)
                and np.all(np.minimum(np.abs(z) / zs, tol * np.abs(w) / allow) <= tol))


def lp_feasible(M, q):
    from scipy.optimize import linprog
    n = len(q)
    res = linprog(np.zeros(n), A_ub=-M, b_ub=q, bounds=[(0, None)] * n, method="highs")
    return res.status == 0


def time_call(f, reps):
    best_w = best_c = np.inf
    for _ in range(reps):
        c0 = time.process_time()
        t0 = time.perf_counter()
        r = f()
        t1 = time.perf_counter()
        c1 = time.process_time()
        best_w = min(best_w, t1 - t0)
        best_c = min(best_c, c1 - c0)
    return r, best_w, best_c


def pct(a, p):
    return float(np.percentile(a, p))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--count", type=int, default=None, help="corpus size (default 480)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--no-compile", action="store_true", help="skip the compile-time runs")
    ap.add_argument("--pile", default=str(ROOT / "tests" / "data" / "pile_lcps.npz"),
                    help="captured pile LCPs (benchmarks/capture_pile_lcps.py)")
    ap.add_argument("--large-only", action="store_true", help="only the large-LCP section")
    args = ap.parse_args()
    count = args.count or (120 if args.quick else 480)

    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"{platform.processor() or platform.machine()}, {pin_to_one_core()}")
    if not args.no_compile:
        for k, (tw, tc) in compile_times().items():
            print(f"import + first call, {k:25s}: wall {tw:7.3f} s, CPU {tc:7.3f} s")
    lemke(np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-5.0, -6.0]))   # load the kernel
    if args.large_only:
        return large_lcps(args.pile, args.reps)

    # ---- contact corpus -------------------------------------------------
    corpus = contact_corpus(count, seed=2024)
    sizes = np.array([M.shape[0] for _, M, _ in corpus])
    wall, cpu, piv, wrong = [], [], [], []
    verdicts = {}
    for name, M, q in corpus:
        r, tw, tc = time_call(lambda: lemke(M, q), args.reps)
        wall.append(tw)
        cpu.append(tc)
        piv.append(r.pivots)
        verdicts[r.status] = verdicts.get(r.status, 0) + 1
        if r.status == "solved":
            ok = check_solution(M, q, r.z)
        else:                          # only correct if really infeasible
            ok = not lp_feasible(M, q)
        if not ok:
            wrong.append((name, M.shape[0], r.status))
    wall = np.array(wall) * 1e6
    cpu = np.array(cpu) * 1e6
    print(f"\ncontact corpus: {len(corpus)} LCPs, n = {sizes.min()}..{sizes.max()} "
          f"(median n {int(np.median(sizes))}), pivots median {int(np.median(piv))} "
          f"max {max(piv)}")
    print(f"verdicts: {verdicts}; wrong verdicts: {len(wrong)} {wrong[:5]}")
    print(f"solve time wall [us]: median {np.median(wall):7.1f}  p95 {pct(wall, 95):7.1f}  "
          f"max {wall.max():7.1f}  mean {wall.mean():7.1f}")
    print(f"solve time CPU  [us]: median {np.median(cpu):7.1f}  p95 {pct(cpu, 95):7.1f}  "
          f"max {cpu.max():7.1f}")
    print("by size (wall us, median):  " + "  ".join(
        f"n={n}:{np.median(wall[sizes == n]):.0f}" for n in np.unique(sizes)))

    # ---- time per pivot ---------------------------------------------------
    print("\ntime per pivot (dense random positive definite M, q ~ N(0,1) - 1):")
    rng = np.random.default_rng(0)
    for n in (20, 60, 120):
        per = []
        for _ in range(5 if args.quick else 20):
            B = rng.normal(size=(n, n))
            S = rng.normal(size=(n, n))
            M = B @ B.T / n + np.eye(n) + (S - S.T) / np.sqrt(n)
            q = rng.normal(size=n) - 1.0
            r, tw, tc = time_call(lambda: lemke(M, q), 3)
            assert r.status == "solved" and check_solution(M, q, r.z)
            per.append((tw * 1e6, r.pivots, tc * 1e6))
        per = np.array(per)
        print(f"  n={n:4d}: {np.median(per[:, 0]):8.1f} us per solve (CPU "
              f"{np.median(per[:, 2]):.1f}), {np.median(per[:, 1]):5.0f} pivots, "
              f"{np.median(per[:, 0] / per[:, 1]):6.2f} us/pivot (whole solve / pivots)")

    # ---- exponential problem ---------------------------------------------
    M, q = murty(16)
    r, tw, tc = time_call(lambda: lemke(M, q, d=np.ones(16), max_pivots=70000), 3)
    print(f"\nMurty n=16: {r.status}, {r.pivots} pivots (2^16 = 65536), wall {tw * 1e3:.1f} ms "
          f"(CPU {tc * 1e3:.1f} ms), {tc / r.pivots * 1e9:.0f} ns/pivot CPU")

    # ---- warm start ---------------------------------------------------------
    vel = np.array([0.6, 0.2, 0.0, 0.0, 0.0, 2.0])
    prev, tc_, tw_, acc = None, [], [], 0
    for step in range(40):
        M, q, info = box_on_plane(u=8, mu=0.3, vel=vel)
        r, tw, _ = time_call(lambda: lemke(M, q, warm_start=prev), 3)
        _, tcold, _ = time_call(lambda: lemke(M, q), 3)
        acc += r.warm_started
        tw_.append(tw * 1e6)
        tc_.append(tcold * 1e6)
        vel = info["velocity"](r.z)
        prev = r
    print(f"warm start (sliding box, n=40, 40 steps): accepted {acc}/40, "
          f"median {np.median(tw_):.1f} us vs cold {np.median(tc_):.1f} us")
    return max(1 if wrong else 0, large_lcps(args.pile, args.reps))


def large_lcps(path, reps):
    """Section 5: the pile's LCPs, Lemke (warm, as the simulator used to call it) vs solve_large."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from capture_pile_lcps import unpack
    lcps = unpack(path)
    solve_large(lcps[0]["M"], lcps[0]["q"], warm_start=lcps[0]["warm"])   # load the kernel
    print(f"\nlarge contact LCPs ({path}): {len(lcps)} LCPs, n = "
          f"{min(d['n'] for d in lcps)}..{max(d['n'] for d in lcps)}, CPU us (min of {reps})")
    print("   t [s]    n | Lemke: pivots refact.     us | solve_large: factor. pivots     us")
    tot = np.zeros(2)
    bad = 0
    for d in lcps:
        M, q, ws = d["M"], d["q"], d["warm"]
        rl, _, tl = time_call(lambda: lemke(M, q, warm_start=ws), reps)
        rb, _, tb = time_call(lambda: solve_large(M, q, warm_start=ws), reps)
        for r in (rl, rb):
            bad += not (r.status == "solved" and check_solution(M, q, r.z))
        tot += (tl, tb)
        print(f"  {d['time']:6.3f} {d['n']:4d} |       {rl.pivots:6d} {rl.refactorizations:7d} "
              f"{tl * 1e6:6.0f} |              {rb.factorizations:6d} {rb.pivots:6d} {tb * 1e6:6.0f}")
    print(f"  total CPU: Lemke {tot[0] * 1e3:.2f} ms, solve_large {tot[1] * 1e3:.2f} ms; "
          f"unverified answers: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

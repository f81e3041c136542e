"""Benchmark of graspsim.grasp.analyze (force closure + epsilon), L1 and L-infinity.

Command (from the repository root):

    python benchmarks/bench_grasp.py            # full table
    python benchmarks/bench_grasp.py --grasps 5 --repeat 3   # quick
    python benchmarks/bench_grasp.py --linf-volume           # + full Linf hulls
    taskset -c 0 python benchmarks/bench_grasp.py --ratio-only --grasps 20 --repeat 20
                                                             # issue 18: analyze / qhull

For k = 3, 5, 10, 20 contacts on a unit sphere (random directions, fixed
seed, mu = 0.5, 8 cone edges, torque_scale = 1, normals to the centre), times
``analyze(...)`` per call: the median over ``grasps`` different grasps x
``repeat`` calls of wall time (perf_counter) and CPU time of this process
(process_time; robust when other processes load the machine).  The numba
kernels are compiled/loaded before timing.  Also times, for reference, a full
qhull (scipy ConvexHull) of the same L1 wrench points and the lazy L1 volume.

The ratio section (issue 18's target "analyze (L1, 5 contacts) <= 0.2x a plain
scipy-qhull hull of the same wrenches"): for each 5-contact grasp, the median
CPU time over ``repeat`` calls of ``ConvexHull(W)`` on its 40 L1 wrench points,
of ``analyze(..., volume=True)`` (closure, epsilon and volume: what the qhull
hull gives) and of ``analyze(...)`` (closure and epsilon, volume lazy), with
the calls repeated (timeit style) and interleaved; the ratios are of the
medians over the grasps.  Pin to one core (``taskset -c 0``) and report the
load (``uptime``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from graspsim.grasp import analyze, primitive_wrenches  # noqa: E402
from graspsim.grasp.quality import gws_volume  # noqa: E402


def grasps(k: int, n: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed + k)
    out = []
    for _ in range(n):
        d = rng.normal(size=(k, 3))
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        out.append((d, -d))
    return out


def timed(fn, repeat: int) -> tuple[list[float], list[float]]:
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu


def ratio_to_qhull(n_grasps: int, repeat: int) -> None:
    """analyze vs scipy ConvexHull on the same 5-contact L1 wrench sets (CPU time, medians).

    Two orders: "repeated" times ``repeat`` calls of one function in a row (as timeit does: warm
    caches for each); "interleaved" alternates the three functions call by call, so each call
    follows the others' work (a changing machine load hits all three alike, and each call starts
    with caches another function has used).
    """
    from scipy.spatial import ConvexHull

    z = np.zeros(3)
    rows = {"repeated": [], "interleaved": []}
    for P, N in grasps(5, n_grasps):
        W = primitive_wrenches(P, N, 0.5, center=z, torque_scale=1.0).reshape(-1, 6)
        calls = (lambda: ConvexHull(W),
                 lambda: analyze(P, N, 0.5, center=z, torque_scale=1.0, volume=True),
                 lambda: analyze(P, N, 0.5, center=z, torque_scale=1.0))
        for fn in calls:
            fn()
        rows["repeated"].append([statistics.median(timed(fn, repeat)[1]) for fn in calls])
        cpu = [[] for _ in calls]
        for _ in range(repeat):
            for i, fn in enumerate(calls):
                cpu[i] += timed(fn, 1)[1]
        rows["interleaved"].append([statistics.median(c) for c in cpu])
    print(f"\nratio to qhull, 5-contact L1 grasps (40 wrench points), median CPU time over "
          f"{n_grasps} grasps x {repeat} calls:")
    print(f"  {'calls':12s} {'ConvexHull(W)':>14s} {'analyze(volume=True)':>21s} {'ratio':>6s} "
          f"{'analyze()':>10s} {'ratio':>6s}")
    for mode, r in rows.items():
        q, av, ae = (statistics.median(col) for col in zip(*r))
        print(f"  {mode:12s} {1e3 * q:11.3f} ms {1e3 * av:18.3f} ms {av / q:6.3f} "
              f"{1e3 * ae:7.3f} ms {ae / q:6.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grasps", type=int, default=20, help="different grasps per size")
    ap.add_argument("--repeat", type=int, default=10, help="calls per grasp")
    ap.add_argument("--sizes", type=int, nargs="+", default=[3, 5, 10, 20])
    ap.add_argument("--linf-volume", action="store_true",
                    help="also time the full-hull L-infinity volume (seconds per call)")
    ap.add_argument("--ratio-only", action="store_true",
                    help="only the analyze / qhull ratio section")
    args = ap.parse_args()

    z = np.zeros(3)
    # warm-up: load / compile the numba kernels
    P, N = grasps(5, 1)[0]
    for gws in ("L1", "Linf"):
        analyze(P, N, 0.5, center=z, torque_scale=1.0, gws=gws, volume=gws == "L1")
        analyze(P, N, 0.5, center=z, torque_scale=1.0, gws=gws)
    if args.ratio_only:
        ratio_to_qhull(args.grasps, args.repeat)
        return

    print(f"analyze(points, normals, mu=0.5, edges=8): median per call over "
          f"{args.grasps} grasps x {args.repeat} calls")
    print(f"{'k':>3} {'gws':>5} {'wall ms':>9} {'cpu ms':>9} {'p90 wall':>9} "
          f"{'closure':>8} {'cpu ms (closure only)':>22} {'support pts':>11}")
    for k in args.sizes:
        gs = grasps(k, args.grasps)
        for gws in ("L1", "Linf"):
            wall, cpu, fc, npts, cpu_fc = [], [], 0, [], []
            for P, N in gs:
                res = analyze(P, N, 0.5, center=z, torque_scale=1.0, gws=gws)
                w, c = timed(lambda: analyze(P, N, 0.5, center=z, torque_scale=1.0, gws=gws),
                             args.repeat)
                wall += w
                cpu += c
                fc += res.force_closure
                if res.force_closure:
                    cpu_fc += c
                npts.append(res.n_support_points)
            print(f"{k:>3} {gws:>5} {1e3 * statistics.median(wall):9.3f} "
                  f"{1e3 * statistics.median(cpu):9.3f} "
                  f"{1e3 * float(np.percentile(wall, 90)):9.3f} "
                  f"{fc:>4}/{len(gs):<3} "
                  f"{1e3 * statistics.median(cpu_fc) if cpu_fc else float('nan'):22.3f} "
                  f"{statistics.mean(npts):11.1f}")

    print("\nreference on the same 5-contact grasps (L1, 40 wrench points):")
    from scipy.spatial import ConvexHull

    gs = grasps(5, args.grasps)
    Ws = [primitive_wrenches(P, N, 0.5, center=z, torque_scale=1.0).reshape(-1, 6)
          for P, N in gs]
    for label, fn in (
            ("full qhull ConvexHull(W)", lambda W: ConvexHull(W)),
            ("full qhull, options 'QJ'", lambda W: ConvexHull(W, qhull_options="QJ")),
            ("gws_volume(W) (lazy .volume)", lambda W: gws_volume(W.reshape(5, 8, 6)))):
        wall, cpu = [], []
        for W in Ws:
            w, c = timed(lambda: fn(W), max(1, args.repeat // 2))
            wall += w
            cpu += c
        print(f"  {label:30s} wall {1e3 * statistics.median(wall):8.3f} ms   "
              f"cpu {1e3 * statistics.median(cpu):8.3f} ms")
    ratio_to_qhull(args.grasps, args.repeat)


    if args.linf_volume:
        print("\nL-infinity volume (full support-driven hull), one grasp each:")
        for k, m in ((3, 8), (4, 4), (4, 8), (5, 4), (5, 8)):
            P, N = grasps(k, 1, seed=100)[0]
            W = primitive_wrenches(P, N, 0.5, center=z, torque_scale=1.0, edges=m)
            c0 = time.process_time()
            try:
                vol = f"{gws_volume(W, 'Linf'):.6g}"
            except RuntimeError:
                vol = "RuntimeError (more than max_facets=2e6 facets)"
            print(f"  k={k} edges={m}: volume {vol}, cpu {time.process_time() - c0:.2f} s")


if __name__ == "__main__":
    main()

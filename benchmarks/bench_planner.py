"""Grasp planner benchmarks (issue 19).

    taskset -c 0 python benchmarks/bench_planner.py [--seconds 30]

For the Barrett on the mug, the parallel jaw on the box and the Barrett (off the Puma) on the handset:

* energy evaluations per second, one core: (a) the full energy (contact energy + FCL collision
  test) of 512 random states in one batch, CPU time; (b) during annealing, energies computed per
  second of annealing (acceptance decided on the contact energy, only would-be-accepted states
  collision-tested), 4 restarts x 1000 iterations;
* seconds to the first force-closure grasp: plan_grasps(n=1) with iterations 25, 50, 100, ...
  until the best grasp is force closure; the wall time of that call (it includes closing and
  scoring 3 candidates);
* force-closure grasps per minute: plan_grasps(n=20, seconds=S) (S = --seconds, default 30); distinct
  force-closure grasps returned divided by the call's wall time.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import graspsim
from graspsim.planner import plan_grasps
from graspsim.planner.annealing import anneal
from graspsim.planner.api import Problem, free_hand_world

ROOT = Path(__file__).resolve().parent.parent
CASES = [("worlds/barrett_mug.yaml", "barrett", "mug"), ("worlds/parallel_jaw_box.yaml", "gripper", "box"),
         ("worlds/puma_barrett_handset.yaml", "barrett", "handset")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args()
    for wf, hand, obj in CASES:
        w = graspsim.load_world(ROOT / wf)
        p = Problem(free_hand_world(w, hand), hand, obj)
        x = p.space.random(np.random.default_rng(0), 512)
        p.evaluate(x[:8])
        c0 = time.process_time()
        e = p.evaluate(x)
        full = len(x) / (time.process_time() - c0)
        c0 = time.process_time()
        log = anneal(p.space, p.evaluate, seed=0, restarts=4, iterations=1000, screen=p.screen)
        sa = log.evaluations / (time.process_time() - c0)
        print(f"{obj} ({hand}): full energy {full:.0f} states/s CPU ({np.isfinite(e).mean() * 100:.0f}% of random "
              f"states collision-free); annealing {sa:.0f} energies/s CPU ({log.evaluations} energies, "
              f"{log.checked} collision-tested, best {log.best_energy:.3f})")
        it = 25
        while True:
            t0 = time.perf_counter()
            g = plan_grasps(w, hand, obj, n=1, iterations=it, seed=0)
            dt = time.perf_counter() - t0
            if g and g[0].quality.force_closure:
                print(f"  first force-closure grasp: {dt:.2f} s wall (iterations {it} x 4 restarts), "
                      f"epsilon {g[0].quality.epsilon:.4f}")
                break
            it *= 2
            if it > 8000:
                print("  no force-closure grasp within 8000 iterations")
                break
        t0 = time.perf_counter()
        gs = plan_grasps(w, hand, obj, n=20, seconds=args.seconds, seed=0)
        dt = time.perf_counter() - t0
        nfc = sum(g.quality.force_closure for g in gs)
        print(f"  {nfc} distinct force-closure grasps of {len(gs)} in {dt:.1f} s wall (search budget "
              f"{args.seconds:g} s): {nfc / dt * 60:.1f} per minute; best epsilon "
              f"{max((g.quality.epsilon for g in gs), default=0):.4f}")


if __name__ == "__main__":
    main()

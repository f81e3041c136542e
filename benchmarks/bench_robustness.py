"""Benchmark of graspsim.grasp.robustness: seconds per grasp with N samples.

Command (from the repository root):

    python benchmarks/bench_robustness.py                       # 100 samples, static closing
    python benchmarks/bench_robustness.py --samples 20 --dynamic 5   # quick, + 5 dynamic samples

Also each grasp with ``closing="centred"`` and obstacles "ignore" (the defaults of the planner's
``--rank robust`` and of a batch's ``robustness``).

Grasps: the parallel jaw centred on the long box (worlds/parallel_jaw_box.yaml) and the Barrett
hand's initial pose over the mug (worlds/barrett_mug.yaml), each with the default noise (5 mm,
5 deg, +-20 % friction), obstacles "fail" and "ignore" (the table out of reach).  Per case: wall
time (perf_counter) and this process's CPU time (process_time; robust when other processes load
the machine) of the whole call, per sample, and the result (probability, mean and 5th-percentile
epsilon, failures by kind).  The numba kernels and the collision models are warmed up first.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import graspsim  # noqa: E402
from graspsim.grasp import Grasp, robustness  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CASES = [("parallel_jaw_box", "gripper", "box"), ("barrett_mug", "barrett", "mug")]


def run(world: str, hand: str, obj: str, samples: int, **kw) -> None:
    w = graspsim.load_world(os.path.join(ROOT, "worlds", f"{world}.yaml"))
    g = Grasp.from_world(w, hand)
    robustness(w, hand, obj, g, samples=1, **{**kw, "sigma_position": 0, "sigma_rotation": 0})   # warm-up
    c0, t0 = time.process_time(), time.perf_counter()
    r = robustness(w, hand, obj, g, samples=samples, **kw)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    opts = " ".join(f"{k}={v}" for k, v in kw.items())
    fails = ", ".join(f"{k} {v}" for k, v in r.failures.items() if v)
    print(f"{world:18s} {opts:36s} n={samples:4d}  wall {wall:7.2f} s  cpu {cpu:7.2f} s  "
          f"{1e3 * wall / samples:7.1f} ms/sample  P(fc) {r.probability:.2f}  eps mean {r.mean_epsilon:.4f} "
          f"p5 {r.p5_epsilon:.4f} (nominal {r.nominal_epsilon:.4f})  failures: {fails or 'none'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=100, help="samples per grasp (static closing)")
    ap.add_argument("--dynamic", type=int, default=0, help="also N samples with dynamic closing (about 1 s each)")
    a = ap.parse_args()
    for world, hand, obj in CASES:
        for obstacles in ("fail", "ignore"):
            run(world, hand, obj, a.samples, obstacles=obstacles)
        # the planner's --rank robust and the batch's robustness defaults
        run(world, hand, obj, a.samples, obstacles="ignore", closing="centred")
    if a.dynamic:
        # a resting box: planar noise (x, y, yaw) so that it does not start inside the table
        run("parallel_jaw_box", "gripper", "box", a.dynamic, closing="dynamic",
            sigma_position=(0.005, 0.005, 0), sigma_rotation=(0, 0, 5))


if __name__ == "__main__":
    main()

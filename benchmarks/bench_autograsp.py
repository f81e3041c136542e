"""Auto-grasp benchmarks (issue 6).

    taskset -c 0 python benchmarks/bench_autograsp.py

Static auto-grasp of the Barrett hand on the mug (ms per grasp, median of 50 after a warm-up,
world state restored between grasps), and a dynamic auto-grasp plus a 10 cm lift of the mug
(wall-clock seconds per simulated second).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

import graspsim
from graspsim.control import dynamic_auto_grasp, lift_test, static_auto_grasp

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    s0 = w.save_state()
    for _ in range(3):
        w.restore_state(s0)
        static_auto_grasp(w, "barrett")
    wall, cpu, eps = [], [], []
    for _ in range(50):
        w.restore_state(s0)
        t0, c0 = time.perf_counter(), time.process_time()
        r = static_auto_grasp(w, "barrett")
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        eps.append(r.quality.epsilon)
    print(f"static auto-grasp, Barrett on mug: median {np.median(wall) * 1e3:.2f} ms wall, "
          f"{np.median(cpu) * 1e3:.2f} ms CPU (p95 {np.percentile(wall, 95) * 1e3:.2f} ms); "
          f"{r.iterations} closing steps, epsilon {eps[-1]:.4f}, force closure {r.quality.force_closure}")
    t = time.perf_counter()
    w.restore_state(s0)
    r = static_auto_grasp(w, "barrett", analyze=False)
    print(f"  without quality analysis: {(time.perf_counter() - t) * 1e3:.2f} ms")
    # dynamic grasp + lift
    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    dynamic_auto_grasp(w, "barrett", timeout=0.2)          # warm-up (numba caches)
    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    c0, t0 = time.process_time(), time.perf_counter()
    r = dynamic_auto_grasp(w, "barrett", timeout=2.0)
    lift = lift_test(r, height=0.1, duration=1.0, hold=0.5)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    sim_t = r.sim.time
    print(f"dynamic auto-grasp + 10 cm lift of the mug: {sim_t:.2f} s simulated in {wall:.2f} s wall "
          f"({cpu:.2f} s CPU): {wall / sim_t:.2f} wall s per simulated s; grasp settled at {r.time:.2f} s, "
          f"force closure {r.quality.force_closure}, lift held {lift.held}, slip {lift.slip * 1e3:.2f} mm")


if __name__ == "__main__":
    main()

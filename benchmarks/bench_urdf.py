"""URDF import benchmarks (issue 17).

    taskset -c 0 python benchmarks/bench_urdf.py

Load time of pybullet_data's Panda URDF (arm + hand, 13 links) in a fresh process: cold (no
on-disk cache: XML checks, yourdfpy, collision meshes, hulls) and cached (the on-disk cache), each
with and without the imports a first load pays; and a second load in the same process.  Then the
static auto-grasp of the imported Panda hand on the mug next to the Barrett hand on the mug (ms per
grasp, median of 50 after a warm-up, world state restored between grasps, as bench_autograsp.py).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

_LOAD = """
import time, warnings
t0 = time.perf_counter()
import graspsim
import graspsim.model.loader, numpy, yaml        # what any model load imports
t1 = time.perf_counter()
warnings.simplefilter('ignore')
import pybullet_data
p = pybullet_data.getDataPath() + '/franka_panda/panda.urdf'
t2 = time.perf_counter()
graspsim.load_robot(p)
t3 = time.perf_counter()
graspsim.load_robot(p)
t4 = time.perf_counter()
print(t3 - t2, t3 - t0, t4 - t3)
"""


def load_times(cache_dir: str, runs: int = 3):
    env = {**os.environ, "XDG_CACHE_HOME": cache_dir}
    out = []
    for _ in range(runs):
        r = subprocess.run([sys.executable, "-c", _LOAD], env=env, capture_output=True, text=True, check=True)
        out.append([float(x) for x in r.stdout.split()])
    return np.array(out)


def static_grasp_ms(world_file: str, hand: str, n: int = 50):
    import graspsim
    from graspsim.control import static_auto_grasp

    w = graspsim.load_world(ROOT / world_file)
    s0 = w.save_state()
    for _ in range(3):
        w.restore_state(s0)
        static_auto_grasp(w, hand)
    wall = []
    for _ in range(n):
        w.restore_state(s0)
        t0 = time.perf_counter()
        r = static_auto_grasp(w, hand)
        wall.append(time.perf_counter() - t0)
    return np.median(wall) * 1e3, r


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        cold = []
        for _ in range(3):   # a fresh cache directory each time: every run is cold
            with tempfile.TemporaryDirectory() as d1:
                cold.append(load_times(d1, 1)[0])
        cold = np.array(cold)
        load_times(d, 1)                          # fill the cache
        warm = load_times(d, 3)
    print(f"Panda URDF load, fresh process, cold: {np.median(cold[:, 0]):.2f} s "
          f"({np.median(cold[:, 1]):.2f} s with the imports)")
    print(f"Panda URDF load, fresh process, on-disk cache: {np.median(warm[:, 0]) * 1e3:.0f} ms "
          f"({np.median(warm[:, 1]):.2f} s with the imports)")
    print(f"Panda URDF load, second load in the same process: {np.median(warm[:, 2]) * 1e3:.2f} ms")
    import warnings

    warnings.simplefilter("ignore")
    for wf, hand in (("worlds/barrett_mug.yaml", "barrett"), ("worlds/panda_hand_mug.yaml", "panda_hand")):
        ms, r = static_grasp_ms(wf, hand)
        print(f"static auto-grasp, {hand} on the mug: median {ms:.2f} ms; {r.iterations} closing steps, "
              f"{r.evaluations} collision evaluations, force closure {r.quality.force_closure}, "
              f"epsilon {r.quality.epsilon:.4f}")


if __name__ == "__main__":
    main()

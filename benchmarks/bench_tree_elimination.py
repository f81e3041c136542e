"""The island solve with the hard joint rows eliminated along the kinematic tree
(``dynamics/_tree_kernel.tree_island``) against the island kernel's elimination through the whole
equality block (``_island_kernel.solve_island``), on islands of real steps.

    python benchmarks/bench_island.py capture /tmp/islands.pkl        # real steps' island inputs
    OPENBLAS_NUM_THREADS=1 taskset -c 1 python benchmarks/bench_tree_elimination.py /tmp/islands.pkl

Per scene: how the islands' equality rows split (joints, couplings, soft rows), the largest
relative difference of the two solvers' velocities, and the CPU per island solve of each (15
alternating rounds over the same islands: minimum and median).  Then the compile CPU of each on an
empty numba cache (separate processes), which is why the simulator does not use the tree yet
(docs/dynamics_performance.md, sixteenth pass).
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _rounds(problems, fn, outs) -> float:
    t = time.perf_counter()
    for a, o in zip(problems, outs):
        fn(*a, *o)
    return (time.perf_counter() - t) / len(problems) * 1e6


def compare(path: Path) -> None:
    from graspsim.dynamics import _island_kernel as IK
    from graspsim.dynamics import _tree_kernel as TK

    scenes = pickle.load(open(path, "rb"))
    for name in ("mug_hold", "puma_grasp", "rest:barrett_mug", "rest:panda_hand_mug"):
        if name not in scenes:
            continue
        problems = [p for args, _ in scenes[name][::2] for p in TK.island_calls(args) if len(p[7])]
        if not problems:
            continue
        outs = [TK.island_outputs(p) for p in problems]
        worst = 0.0
        for p in problems:
            (_, a), (_, b) = ((fn(*p, *o), o) for fn, o in ((IK.solve_island, TK.island_outputs(p)),
                                                                (TK.tree_island, TK.island_outputs(p))))
            worst = max(worst, float(np.abs(a[0] - b[0]).max() / max(np.abs(a[0]).max(), 1e-3)))
        old, new = [], []
        for _ in range(15):
            old.append(_rounds(problems, IK.solve_island, outs))
            new.append(_rounds(problems, TK.tree_island, outs))
        p = problems[0]
        print(f"{name}: {len(problems)} island solves, {len(p[2]) // 6} bodies, {len(p[7])} equality rows "
              f"({p[8]} hard); max relative velocity difference {worst:.1e}")
        print(f"    block elimination {min(old):.1f} us (median {np.median(old):.1f}); "
              f"along the tree {min(new):.1f} us (median {np.median(new):.1f})")


_COMPILE = """
import os, sys, time, tempfile, pickle
os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp()
from graspsim.dynamics import _island_kernel as IK, _tree_kernel as TK
args = pickle.load(open(sys.argv[1], "rb"))["mug_hold"][0][0]
p = [x for x in TK.island_calls(args) if len(x[7])][0]
fn = IK.solve_island if sys.argv[2] == "block" else TK.tree_island
c = time.process_time()
fn(*p, *TK.island_outputs(p))
print(time.process_time() - c)
"""


def compile_cpu(path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    got = {}
    for which in ("block", "tree"):
        out = subprocess.run([sys.executable, "-c", _COMPILE, str(path), which], env=env, capture_output=True,
                             text=True, check=True).stdout.split()
        got[which] = float(out[-1])
    print(f"compile CPU on an empty cache: block elimination {got['block']:.1f} s, along the tree "
          f"{got['tree']:.1f} s (each with the LCP kernel)")


if __name__ == "__main__":
    p = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/islands.pkl")
    compare(p)
    compile_cpu(p)

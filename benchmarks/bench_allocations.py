"""numba array allocations per simulation step, per kernel (issue 18: "no per-step allocation").

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_allocations.py [--steps 100]

Counts come from numba's runtime statistics (``NUMBA_NRT_STATS=1``, set here before numba loads):
every ``np.empty``/``np.zeros``/``copy`` inside a kernel is one allocation (and one free), and so is
every array argument a kernel receives from Python (numba wraps it in a runtime record for the
call: part of the dispatch's cost per argument).  Unlike times, the counts do not depend on the
machine's load, so they track the kernels' allocations on a noisy machine; each costs some 30-60 ns
(more with a large ``np.zeros``' memset).  Scenes as in
``bench_dynamics.py``: the Barrett holding the mug after a dynamic auto-grasp (``mug_hold``), the
Puma's Barrett closing on the handset (``puma_grasp``) and the mug world at rest, awake
(``rest-awake``).  Per kernel: the simulator's calls of the compiled kernels are counted through
stand-ins of the kernel modules (the kernels themselves are unchanged).
"""
from __future__ import annotations

import argparse
import os

os.environ["NUMBA_NRT_STATS"] = "1"          # (read when numba's runtime loads)

from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


class _Counting:
    """A stand-in for a kernel module: each kernel call adds its allocations to ``counts``."""

    def __init__(self, mod, counts: dict, stats):
        self._mod, self._counts, self._stats = mod, counts, stats

    def __getattr__(self, name):
        f = getattr(self._mod, name)
        if not hasattr(f, "py_func"):
            return f
        counts, stats = self._counts, self._stats

        def counted(*a):
            before = stats().alloc
            out = f(*a)
            counts[name] = counts.get(name, 0) + stats().alloc - before
            return out
        return counted


def count(sim, ctl, n: int) -> tuple[float, dict]:
    """(allocations per step, {kernel: allocations per step}) over ``n`` steps of ``sim``."""
    from numba.core.runtime import rtsys

    import graspsim.collision.impact as IMP
    import graspsim.collision.model as CM
    import graspsim.dynamics.simulator as SM

    stats = rtsys.get_allocation_stats
    counts: dict = {}
    saved = (SM.RK, SM.IK, CM.K, IMP.screen_pairs)
    SM.RK, SM.IK, CM.K = (_Counting(m, counts, stats) for m in saved[:3])
    from graspsim.collision import _impact_kernel
    IMP.screen_pairs = _Counting(_impact_kernel, counts, stats).screen_pairs
    try:
        total0 = stats().alloc
        for _ in range(n):
            sim.step(ctl)
        total = stats().alloc - total0
    finally:
        SM.RK, SM.IK, CM.K, IMP.screen_pairs = saved
    return total / n, {k: v / n for k, v in sorted(counts.items(), key=lambda kv: -kv[1])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    a = ap.parse_args()
    import graspsim
    from graspsim.control import PDController, dynamic_auto_grasp
    from graspsim.dynamics import Simulator

    scenes = []
    r = dynamic_auto_grasp(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), "barrett", timeout=2.0)
    scenes.append(("mug_hold", r.sim, r.controller))
    from bench_dynamics import puma_grasp_scene
    scenes.append(("puma_grasp", *puma_grasp_scene()))
    sim = Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), sleep=False)
    ctl = PDController(sim)
    sim.run(0.2, ctl)
    scenes.append(("rest-awake:barrett_mug", sim, ctl))
    for name, sim, ctl in scenes:
        for _ in range(5):                  # (past any first-call compile or cache load)
            sim.step(ctl)
        total, per = count(sim, ctl, a.steps)
        print(f"{name}: {total:.1f} allocations per step")
        for k, v in per.items():
            print(f"    {k:28s} {v:7.1f}")


if __name__ == "__main__":
    main()

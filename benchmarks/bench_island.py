"""The compiled island solver alone (issue 18): time ``_island_kernel.solve_islands`` on inputs
captured from real steps, and check that its results are bit-for-bit those of a reference file.

    taskset -c 0 python benchmarks/bench_island.py capture /tmp/islands.pkl   # record inputs + results
    taskset -c 0 python benchmarks/bench_island.py time /tmp/islands.pkl      # us per call, per scene
    taskset -c 0 python benchmarks/bench_island.py check /tmp/islands.pkl     # same outputs as recorded?

Scenes: ``mug_hold`` (Barrett holding the mug after a dynamic auto-grasp, as in bench_dynamics.py),
``puma_grasp`` (the Puma's Barrett closing on the handset) and ``rest:panda_hand_mug``, ``rest:barrett_mug``, ``drop20_rest`` (bench_dynamics' 20 cubes at t = 1.5 s).  Each
captured call keeps a copy of its arguments (the warm-start table too, which the call updates) and
of its outputs, so ``time`` replays exactly the calls of the steps and ``check`` compares.
"""
from __future__ import annotations

import pickle
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
STEPS = 40


def _copy(x):
    return x.copy() if isinstance(x, np.ndarray) else x


def capture(out: Path) -> None:
    import graspsim
    from graspsim.control import PDController, dynamic_auto_grasp
    from graspsim.dynamics import Simulator
    from graspsim.dynamics import _island_kernel as IK
    from graspsim.dynamics import simulator as SM

    calls: list = []
    real = IK.solve_islands

    class Spy:
        def __getattr__(self, k):
            return getattr(IK, k)

        @staticmethod
        def solve_islands(*args):
            a = tuple(_copy(x) for x in args)
            r = real(*args)
            calls.append((a, tuple(_copy(x) for x in r)))
            return r

    scenes = {}

    def record(name, sim, ctl):
        for _ in range(20):
            sim.step(ctl)
        calls.clear()
        SM.IK = Spy()
        try:
            for _ in range(STEPS):
                sim.step(ctl)
        finally:
            SM.IK = IK
        scenes[name] = list(calls)

    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    r = dynamic_auto_grasp(w, "barrett", timeout=2.0)
    record("mug_hold", r.sim, r.controller)
    from bench_dynamics import puma_grasp_scene
    record("puma_grasp", *puma_grasp_scene())
    sim = Simulator(graspsim.load_world(ROOT / "worlds/panda_hand_mug.yaml"))
    ctl = PDController(sim)
    sim.run(0.2, ctl)
    record("rest:panda_hand_mug", sim, ctl)
    sim = Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"))
    ctl = PDController(sim)
    sim.run(0.2, ctl)
    record("rest:barrett_mug", sim, ctl)
    import tempfile
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_dynamics import drop_world
    with tempfile.TemporaryDirectory() as d:      # bench_dynamics' 20 cubes: the pile at rest
        sim = Simulator(graspsim.load_world(drop_world(20, Path(d))))
        sim.run(1.5)
        record("drop20_rest", sim, None)
    out.write_bytes(pickle.dumps(scenes))
    for k, v in scenes.items():
        print(f"{k}: {len(v)} calls, LCP sizes {sorted(set(int(s) for c in v for s in c[1][9] if s))}, "
              f"pivots/call {np.mean([c[1][10] for c in v]):.1f}")


def _fresh(args):
    return tuple(_copy(x) for x in args)


def timing(path: Path, reps: int = 30) -> None:
    """Per captured call the fastest of ``reps`` runs (fresh argument copies each), averaged over
    the calls: robust to the other processes of a shared machine; and the median of all runs."""
    from graspsim.dynamics import _island_kernel as IK

    scenes = pickle.loads(path.read_bytes())
    for name, calls in scenes.items():
        IK.solve_islands(*_fresh(calls[0][0]))
        t = np.empty((len(calls), reps))
        for r in range(reps):
            fresh = [_fresh(a) for a, _ in calls]
            for i, a in enumerate(fresh):
                t0 = time.perf_counter()
                IK.solve_islands(*a)
                t[i, r] = time.perf_counter() - t0
        print(f"{name:24s} solve_islands: {t.min(axis=1).mean() * 1e6:7.1f} us/call (min of {reps} per call, "
              f"mean over {len(calls)} calls), median {np.median(t) * 1e6:7.1f} us")


def check(path: Path) -> int:
    from graspsim.dynamics import _island_kernel as IK

    scenes = pickle.loads(path.read_bytes())
    bad = 0
    for name, calls in scenes.items():
        for i, (a, want) in enumerate(calls):
            got = IK.solve_islands(*_fresh(a))
            for j, (g, w) in enumerate(zip(got, want)):
                same = np.array_equal(g, w) if isinstance(w, np.ndarray) else g == w
                if not same:
                    bad += 1
                    size = ""
                    if isinstance(w, np.ndarray) and w.dtype.kind == "f" and g.shape == w.shape:
                        size = f" (max |difference| {np.abs(g - w).max():.2e}, max |value| {np.abs(w).max():.2e})"
                    print(f"{name} call {i}: output {j} differs{size}")
    print("identical" if not bad else f"{bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    cmd, p = sys.argv[1], Path(sys.argv[2])
    if cmd == "capture":
        capture(p)
    elif cmd == "time":
        timing(p)
    elif cmd == "check":
        sys.exit(check(p))

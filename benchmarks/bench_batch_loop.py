"""The batch's dynamic trials on Simulator.rollout's compiled loop (issue 18): where the CPU goes,
why steps leave the loop, and whether the rows are those of every step through ``step()``.

    OPENBLAS_NUM_THREADS=1 taskset -c 1 python benchmarks/bench_batch_loop.py [--reps 2] [--check]

The 14 candidates of ``bench_batch.py --dynamic-sphere 24`` (Barrett on the mug, within 60 deg of
straight down, rolls 0/90), once to warm up, then ``--reps`` timed runs: total CPU and trials per
CPU-minute, and its parts -- the compiled loop (``_step_kernel.rollout_steps``), the steps through
``step()`` (impact cuts and the other steps the loop leaves), ``Simulator.rollout_dofs`` and the
rest (drivers, static phases, analysis, SQLite) -- and the loop's stops by reason
(``rollout.reasons()``); ``step()`` includes its own steps' calls of the loop.  ``--check`` runs the batch once more with the loop off
(``rollout.eligible`` answering no) and compares every column of every row but the timings.
Needs the loop compiled (any earlier rollout with ``Simulator(compiled_loop=True)``, e.g. the test
suite, puts it in the cache; else the first 20,000 steps of the warm-up compile it).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def config():
    from graspsim.batch import load_config

    return load_config(ROOT / "examples" / "batch_barrett_mug.yaml", overrides={
        "candidates": {"directions": {"sphere": 24, "within": {"axis": [0, 0, -1], "angle": 60}},
                       "rolls": [0, 90], "standoffs": [140], "preshapes": [{"spread": 0}]},
        "evaluation": {"mode": "dynamic"}})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--check", action="store_true", help="compare the rows with every step through step()")
    a = ap.parse_args()
    from graspsim.batch import read_results, run_batch
    from graspsim.dynamics import _step_kernel as SK
    from graspsim.dynamics import rollout as RO
    from graspsim.dynamics import simulator as S

    acc = {"loop": 0.0, "step": 0.0, "dofs": 0.0}

    def timed_kernel(loop):
        """The loop's kernel, timed (its flattened entry, rollout_flat, or rollout_steps itself)."""
        def timed_loop(*args):
            t = time.process_time()
            try:
                return loop(*args)
            finally:
                acc["loop"] += time.process_time() - t
        for k in ("overloads", "_cache", "targetctx", "compile"):      # (what _native.available reads)
            setattr(timed_loop, k, getattr(loop, k))
        return timed_loop

    def timed(name, key):
        f = getattr(S.Simulator, name)

        def w(*args, **kw):
            t = time.process_time()
            try:
                return f(*args, **kw)
            finally:
                acc[key] += time.process_time() - t
        setattr(S.Simulator, name, w)

    SK.rollout_steps = timed_kernel(SK.rollout_steps)
    SK.rollout_flat = timed_kernel(SK.rollout_flat)
    timed("step", "step")
    timed("rollout_dofs", "dofs")
    cfg = config()
    with tempfile.TemporaryDirectory() as d:
        run_batch(cfg, Path(d) / "warm.sqlite", progress="off")
        for rep in range(a.reps):
            for k in acc:
                acc[k] = 0.0
            RO.LEFT.clear()
            c0 = time.process_time()
            res = run_batch(cfg, Path(d) / f"run{rep}.sqlite", progress="off")
            tot = time.process_time() - c0
            n = res.evaluated
            print(f"{n} trials, {tot:.2f} s CPU ({60 * n / tot:.1f} per CPU-minute): loop {acc['loop']:.2f} s, "
                  f"step() {acc['step']:.2f} s, rollout_dofs {acc['dofs']:.2f} s, rest "
                  f"{tot - sum(acc.values()):.2f} s; the loop stopped for {RO.reasons()}")
        if a.check:
            eligible = RO.eligible
            RO.eligible = lambda *args: False
            try:
                run_batch(cfg, Path(d) / "step.sqlite", progress="off")
            finally:
                RO.eligible = eligible
            x, y = read_results(Path(d) / "run0.sqlite"), read_results(Path(d) / "step.sqlite")
            diff = [(r["id"], k) for r, s in zip(x, y) for k in r
                    if not k.startswith("t_") and k != "worker" and r[k] != s[k]]
            print(f"rows with the loop against every step through step(): {len(x)} and {len(y)} rows, "
                  f"{'the same' if len(x) == len(y) and not diff else f'differ: {diff[:10]}'}")


if __name__ == "__main__":
    main()

"""Benchmark of headless batch grasp evaluation (graspsim.batch): the Barrett hand on the mug.

Command (from the repository root):

    python benchmarks/bench_batch.py                    # static serial, 1 and 2 workers, 3 dynamic
    python benchmarks/bench_batch.py --sphere 24 --dynamic 0    # quick
    python benchmarks/bench_batch.py --sphere 0 --skip-workers --dynamic 5 --dynamic-sphere 24   # dynamic

Uses examples/batch_barrett_mug.yaml with ``--sphere`` directions (x 4 rolls x 3 stand-offs x 2
preshapes), in temporary databases.  Reports, for each run:

* wall time, start-up (until every evaluator has its world loaded and its kernels warm) and the
  steady rate ``evaluated / (wall - start-up)``;
* the CPU time spent evaluating (``t_cpu`` of every row: thread CPU time in the evaluating
  process) and ``candidates per CPU-second`` -- the per-core figure, robust when other processes
  share the machine;
* the speed-up from 1 to 2 worker processes (steady rates) and the machine's load average, since
  on a 2-core machine anything else running eats into the second worker.

Dynamic candidates (dynamic auto-grasp + lift test) are timed serially on ``--dynamic`` straight-down
and near-vertical candidates.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graspsim.batch import load_config, read_results, run_batch  # noqa: E402

EXAMPLE = ROOT / "examples" / "batch_barrett_mug.yaml"


def _run(cfg, db, **kw):
    c0 = time.process_time()
    res = run_batch(cfg, db, progress="off", **kw)
    parent_cpu = time.process_time() - c0
    rows = read_results(db, columns=["status", "t_cpu", "t_total"])
    cpu = sum(r["t_cpu"] for r in rows if r["t_cpu"] is not None)
    return res, rows, cpu, parent_cpu


def _report(label, res, rows, cpu, parent_cpu):
    st = Counter(r["status"] for r in rows)
    n = res.evaluated
    print(f"{label}: {n} candidates ({', '.join(f'{k} {v}' for k, v in sorted(st.items()))})")
    print(f"    wall {res.wall:.2f} s, start-up {res.ready:.2f} s, steady {res.rate:.1f} candidates/s; "
          f"evaluation CPU {cpu:.2f} s -> {n / cpu:.1f} candidates per CPU-second; "
          f"runner process CPU {parent_cpu:.2f} s")
    if res.backend != "serial":
        share = cpu / max(1e-9, (res.wall - res.ready) * res.workers)
        print(f"    the {res.workers} worker(s) got {100 * share:.0f}% of {res.workers} core(s) while evaluating "
              "(less: other processes competed for the cores)")
    ok = [r for r in rows if r["status"] == "ok"]
    if ok:
        c_ok = sum(r["t_cpu"] for r in ok)
        print(f"    'ok' candidates alone (approach + auto-grasp + analysis): {len(ok) / c_ok:.1f} per CPU-second, "
              f"median {1e3 * sorted(r['t_total'] for r in ok)[len(ok) // 2]:.1f} ms wall")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sphere", type=int, default=48, help="sphere directions (before the 'within' filter)")
    ap.add_argument("--dynamic", type=int, default=3, help="dynamic candidates to time (0: skip)")
    ap.add_argument("--dynamic-sphere", type=int, default=0,
                    help="also time dynamic candidates from this many sphere directions within 60 deg of "
                         "straight down, rolls 0 and 90 (24: 14 candidates; 0: skip)")
    ap.add_argument("--skip-workers", action="store_true", help="only the serial static run")
    a = ap.parse_args()
    print(f"graspsim batch benchmark; {os.cpu_count()} cores; load average at start "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    cfg = load_config(EXAMPLE, overrides={"candidates": {"directions": {"sphere": a.sphere}}})
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        res, rows, cpu, pc = _run(cfg, d / "serial.sqlite")
        _report("static, serial (in this process)", res, rows, cpu, pc)
        if not a.skip_workers:
            r1, rows1, cpu1, pc1 = _run(cfg, d / "w1.sqlite", workers=1)
            _report("static, 1 worker process", r1, rows1, cpu1, pc1)
            r2, rows2, cpu2, pc2 = _run(cfg, d / "w2.sqlite", workers=2)
            _report("static, 2 worker processes", r2, rows2, cpu2, pc2)
            print(f"speed-up 1 -> 2 workers: {r2.rate / r1.rate:.2f}x steady-state "
                  f"({r1.rate:.1f} -> {r2.rate:.1f} candidates/s), {r1.wall / r2.wall:.2f}x whole run "
                  f"including start-up ({r1.wall:.1f} s -> {r2.wall:.1f} s); load average now "
                  f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
            c1 = r1.evaluated / cpu1
            c2 = r2.evaluated / cpu2
            print(f"    per-core efficiency with 2 workers: {c2 / c1:.2f} (candidates per CPU-second {c1:.1f} -> "
                  f"{c2:.1f}); with a free core per worker that is a projected {2 * c2 / c1:.2f}x -- a projection, "
                  "not a measurement, when the cores were shared")
        if a.dynamic > 0:
            dyn = load_config(EXAMPLE, overrides={
                "candidates": {"directions": {"sphere": 0, "list": [[0, 0, -1], [0.2, 0, -0.98], [0, 0.2, -0.98],
                                                                     [-0.2, 0, -0.98], [0, -0.2, -0.98]],
                                              "within": {"axis": [0, 0, -1], "angle": 100}},
                               "rolls": [0], "standoffs": [140], "preshapes": [{"spread": 0}]},
                "evaluation": {"mode": "dynamic"}})
            dyn.candidates["list"] = dyn.candidates["list"][:a.dynamic]
            res, rows, cpu, pc = _run(dyn, d / "dyn.sqlite")
            n = res.evaluated
            wall = res.wall - res.ready
            held = sum(1 for r in read_results(d / "dyn.sqlite", columns=["held"]) if r["held"])
            print(f"dynamic (auto-grasp + lift), serial: {n} candidates, {held} held; {60 * n / wall:.1f} per minute "
                  f"wall, {60 * n / cpu:.1f} per CPU-minute ({cpu / n:.2f} s CPU each)")
        if a.dynamic_sphere > 0:
            # a wider set: a trial's cost depends on its trajectory (a grasp that settles late, an
            # impact search cutting steps), which any change of the step's numbers can move
            dyn = load_config(EXAMPLE, overrides={
                "candidates": {"directions": {"sphere": a.dynamic_sphere, "within": {"axis": [0, 0, -1], "angle": 60}},
                               "rolls": [0, 90], "standoffs": [140], "preshapes": [{"spread": 0}]},
                "evaluation": {"mode": "dynamic"}})
            res, rows, cpu, pc = _run(dyn, d / "dyn_sphere.sqlite")
            n = res.evaluated
            st = Counter(r["status"] for r in rows)
            t = sorted(r["t_cpu"] for r in rows)
            held = sum(1 for r in read_results(d / "dyn_sphere.sqlite", columns=["held"]) if r["held"])
            print(f"dynamic, directions within 60 deg of straight down (sphere {a.dynamic_sphere}, rolls 0/90): "
                  f"{n} candidates ({dict(st)}), {held} held; {60 * n / cpu:.1f} per CPU-minute; CPU per trial "
                  f"median {t[len(t) // 2]:.2f} s, max {t[-1]:.2f} s")


if __name__ == "__main__":
    main()

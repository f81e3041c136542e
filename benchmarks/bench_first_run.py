"""The README's first job on a cold kernel cache: wall and CPU time, then warm.

    python benchmarks/bench_first_run.py [--reps 3] [--no-helper]

Each repetition runs ``python -m graspsim.cli grasp worlds/barrett_mug.yaml --lift 0.1`` with an
empty cache directory (``XDG_CACHE_HOME`` in a temporary folder), then once more on the cache it
filled.  CPU is user + system of the job and its children (the warm-up helper).  Wall time depends
on what else the machine runs: the load average is printed with every run.  ``--no-helper`` sets
``GRASPSIM_WARMUP=0`` (everything compiled in the main process).
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
JOB = ["-m", "graspsim.cli", "grasp", "worlds/barrett_mug.yaml", "--lift", "0.1"]


def run(cache: str, helper: bool) -> tuple[float, float, str, str]:
    """One run of the job on ``cache``: (wall s, CPU s, stdout without its timing, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(XDG_CACHE_HOME=cache, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
    if not helper:
        env["GRASPSIM_WARMUP"] = "0"
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, *JOB], cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        sys.exit(p.stderr)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return wall, cpu, re.sub(r"\(\d+ ms\)", "", p.stdout), p.stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-helper", action="store_true", help="no warm-up helper (GRASPSIM_WARMUP=0)")
    a = ap.parse_args()
    outputs = set()
    print(f"cores {os.cpu_count()}, helper {'off' if a.no_helper else 'on'}")
    for i in range(a.reps):
        with tempfile.TemporaryDirectory() as cache:
            load = os.getloadavg()[0]
            wall, cpu, out, err = run(cache, not a.no_helper)
            w2, c2, out2, err2 = run(cache, not a.no_helper)
            outputs |= {out, out2}
            summary = err.strip().splitlines()[-1] if err.strip() else "(nothing on stderr)"
            print(f"cold {wall:6.1f} s wall {cpu:6.1f} s CPU | warm {w2:5.1f} s wall {c2:5.1f} s CPU | "
                  f"load {load:.1f} -> {os.getloadavg()[0]:.1f} | warm stderr {'empty' if not err2 else 'NOT EMPTY'}")
            print(f"    {summary}")
    print("printed results identical in every run" if len(outputs) == 1 else "RESULTS DIFFER between runs")
    print(next(iter(outputs)) if len(outputs) == 1 else "\n".join(outputs))


if __name__ == "__main__":
    main()

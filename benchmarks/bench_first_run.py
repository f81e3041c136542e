"""The README's first job on a fresh clone with a cold kernel cache: wall and CPU time, then warm.

    python benchmarks/bench_first_run.py [--reps 3] [--no-helper] [--no-clone] [--trace]

Each repetition clones the repository's committed HEAD into a temporary folder (``--no-clone``: run
the working tree as it is, uncommitted edits included) and runs ``python -m graspsim.cli grasp
worlds/barrett_mug.yaml --lift 0.1`` there with an empty cache directory (``XDG_CACHE_HOME`` in a
temporary folder), then once more on the cache it filled.  CPU is user + system of the job and its
children (the warm-up helper).  Wall time depends on what else the machine runs: the load average
is printed with every run, and ``--trace`` shows where the cold run's time went (per process: CPU
in compiles and outside them, waits for the other process, each kernel's compile seconds, numba
library code compiled by both processes), from ``GRASPSIM_COMPILE_TRACE`` (:mod:`graspsim._compile`).
On a loaded machine the CPU figures are the ones to compare.  ``--no-helper`` sets
``GRASPSIM_WARMUP=0`` (everything compiled in the main process).  One repetition takes about 40 s
of wall time on an idle 2-core machine.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
JOB = ["-m", "graspsim.cli", "grasp", "worlds/barrett_mug.yaml", "--lift", "0.1"]


def run(repo: Path, cache: str, helper: bool, trace: str | None = None) -> tuple[float, float, str, str, float]:
    """One run of the job on ``cache``: (wall s, CPU s, stdout without its timing, stderr, start time)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "GRASPSIM_"))}
    env.update(XDG_CACHE_HOME=cache, PYTHONPATH=os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")])))
    if not helper:
        env["GRASPSIM_WARMUP"] = "0"
    if trace:
        env["GRASPSIM_COMPILE_TRACE"] = trace
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, *JOB], cwd=repo, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        sys.exit(p.stderr)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return wall, cpu, re.sub(r"\(\d+ ms\)", "", p.stdout), p.stderr, start


def report_trace(path: str, start: float, wall: float) -> None:
    """Where the cold run's seconds went, per process, from the compile trace."""
    recs = [json.loads(line) for line in Path(path).read_text().splitlines()]
    procs = defaultdict(list)
    for r in recs:
        procs[(r["role"], r["pid"])].append(r)
    print(f"    trace ({len(recs)} records), times in s from the job's start (wall {wall:.1f}):")
    libs = defaultdict(dict)
    for (role, pid), rs in sorted(procs.items()):
        comp = [r for r in rs if r["kind"] == "compile"]
        waits = [r for r in rs if r["kind"] == "wait"]
        ex = [r for r in rs if r["kind"] == "exit"]
        ccpu = sum(r["cpu"] for r in comp)
        first = min((r["t0"] for r in comp), default=start) - start
        last = max((r["t1"] for r in comp), default=start) - start
        tot = f"CPU {ex[0]['cpu']:.1f} (outside compiles {ex[0]['cpu'] - ccpu:.1f}), exit {ex[0]['t1'] - start:.1f}" \
            if ex else "no exit record (stopped)"
        print(f"    {role} {pid}: compiles {first:.1f}..{last:.1f}, compile CPU {ccpu:.1f}; {tot}; waited "
              f"{sum(r['t1'] - r['t0'] for r in waits):.1f} s for " + (", ".join(
                  f"{r['group']} at {r['t0'] - start:.1f}" for r in waits) or "nothing"))
        by_group = defaultdict(float)
        for r in comp:
            by_group[r["group"]] += r["cpu"]
        print("      per group CPU: " + ", ".join(f"{g} {c:.1f}" for g, c in sorted(by_group.items(), key=lambda x: -x[1])))
        for r in sorted(comp, key=lambda r: r["t0"]):
            lay = "A" if "'A'" in r["sig"] else "C"
            print(f"      {r['t0'] - start:6.1f} {r['t1'] - start:6.1f}  CPU {r['cpu']:5.2f}  {r['group']:9} "
                  f"{r['kernel'].rsplit('.', 1)[-1]} ({r['units']} kernels, {lay})")
        for r in rs:
            if r["kind"] == "library":
                libs[r["kernel"] + r["sig"]][pid] = libs[r["kernel"] + r["sig"]].get(pid, 0.0) + r["cpu"]
    nested = defaultdict(list)            # graspsim callee -> [(process, signature, CPU with its callees)]
    for r in recs:
        if r["kind"] == "nested":
            nested[r["kernel"]].append((r["pid"], r["sig"], r["cpu"]))
    print("    costliest callees (CPU including their own callees; x N: compiled for N signatures):")
    for k, v in sorted(nested.items(), key=lambda kv: -sum(c for _, _, c in kv[1]))[:15]:
        print(f"      {sum(c for _, _, c in v):5.2f}  {k.replace('graspsim.', '')}" + (f" x {len(v)}" if len(v) > 1 else ""))
    both = {k: v for k, v in libs.items() if len(v) > 1}
    dup = sum(sum(v.values()) - max(v.values()) for v in both.values())
    print(f"    numba library code compiled in both processes: {len(both)} functions, {dup:.1f} s CPU in the "
          "second process")
    for k, v in sorted(both.items(), key=lambda kv: -sum(kv[1].values()))[:8]:
        print(f"      {sum(v.values()):5.2f}  {k[:110]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-helper", action="store_true", help="no warm-up helper (GRASPSIM_WARMUP=0)")
    ap.add_argument("--no-clone", action="store_true", help="run the working tree, not a clone of HEAD")
    ap.add_argument("--trace", action="store_true", help="where the cold run's time went (compile trace)")
    a = ap.parse_args()
    outputs = set()
    print(f"cores {os.cpu_count()}, helper {'off' if a.no_helper else 'on'}, "
          f"{'working tree' if a.no_clone else 'fresh clone of HEAD'}")
    for i in range(a.reps):
        with tempfile.TemporaryDirectory() as tmp:
            repo = REPO
            if not a.no_clone:
                repo = Path(tmp) / "clone"
                subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(repo)], check=True)
            cache, trace = f"{tmp}/cache", (f"{tmp}/trace.jsonl" if a.trace else None)
            load = os.getloadavg()[0]
            wall, cpu, out, err, start = run(repo, cache, not a.no_helper, trace)
            load1 = os.getloadavg()[0]
            w2, c2, out2, err2, _ = run(repo, cache, not a.no_helper)
            outputs |= {out, out2}
            summary = err.strip().splitlines()[-1] if err.strip() else "(nothing on stderr)"
            print(f"cold {wall:6.1f} s wall {cpu:6.1f} s CPU | warm {w2:5.1f} s wall {c2:5.1f} s CPU | "
                  f"load {load:.1f} -> {load1:.1f} | warm stderr {'empty' if not err2 else 'NOT EMPTY'}")
            print(f"    {summary}")
            if trace:
                report_trace(trace, start, wall)
    print("printed results identical in every run" if len(outputs) == 1 else "RESULTS DIFFER between runs")
    print(next(iter(outputs)) if len(outputs) == 1 else "\n".join(outputs))


if __name__ == "__main__":
    main()

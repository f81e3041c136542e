#!/usr/bin/env python3
"""Collision stage (steps 1-4) of the time step: CPU per step, per-stage CPU time and impact sub-steps.

    taskset -c 0 python benchmarks/bench_impact.py grasp      # the peers' grasp-and-lift (1200 steps)
    taskset -c 0 python benchmarks/bench_impact.py drop       # the peers' 20-box drop (800 steps)
    taskset -c 0 python benchmarks/bench_impact.py mug        # worlds/barrett_mug.yaml at rest

The peers' scenes come from ``benchmarks/peers/graspsim_grasp.py`` (needs the peers' ``scene_spec.py``
in ``$GRASPSIM_PEERS_DIR`` or ../shared/peers next to the repository), stepped on the same time grid (an impact cut is
followed by sub-steps to the grid time).  After a warm-up that loads the kernels: one untimed-stage
run for the CPU per grid step, then one with ``profile=True`` whose stage timer reads the process CPU
clock, summed over every sub-step (``stage_us_per_step``: µs of CPU per grid step).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: the peers' benchmark folder: ../shared/peers next to the repository
_DEFAULT_PEERS = os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "peers"))


ROOT = Path(__file__).resolve().parent.parent
STAGES = ("collision", "contacts", "assembly", "solve", "integration")


def stage_cpu(sim, steps) -> dict:
    """Run ``steps(sim)`` with the stage timer on the CPU clock; µs per call summed over sub-steps."""
    acc = dict.fromkeys(STAGES, 0.0)
    orig = sim.step

    def step(ctl=None):
        info = orig(ctl)
        for k in STAGES:
            acc[k] += info.timing.get(k, 0.0)
        return info

    sim.step, sim.profile = step, True
    wall = time.perf_counter
    time.perf_counter = time.process_time          # the stage timer calls time.perf_counter
    try:
        n = steps(sim)
    finally:
        time.perf_counter = wall
    return {k: round(1e6 * v / n, 1) for k, v in acc.items()}


def peers(scene: str) -> dict:
    sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))
    sys.path.insert(0, os.environ.get("GRASPSIM_PEERS_DIR", _DEFAULT_PEERS))
    import graspsim_grasp as G
    import scene_spec

    import graspsim

    G.S = scene_spec
    h = 0.0025
    path = G.write_world(tempfile.mkdtemp(prefix="bench_impact_"), scene, h, 20)
    n = round((scene_spec.T_TOTAL if scene == "grasp" else scene_spec.DROP_T) / h)
    make = lambda: graspsim.Simulator(graspsim.load_world(path), dt=h)
    ctl = lambda: G.TorquePD() if scene == "grasp" else None

    def episode(sim, steps=n):
        c = ctl()
        return sum(G.advance(sim, c, h, k) for k in range(steps))

    episode(make(), 60)                            # load the kernels
    sim = make()
    c0 = time.process_time()
    calls = episode(sim)
    cpu = time.process_time() - c0
    out = dict(scene=scene, n_steps=n, cpu_us_per_step=round(1e6 * cpu / n, 1), impact_substeps=calls - n,
               stage_us_per_step=stage_cpu(make(), lambda s: episode(s) and n))
    if scene == "drop":
        names = [f"box{k}" for k in range(20)]
        out["end_max_speed"] = max(float(np.linalg.norm(sim.body_velocity(b)[:3])) for b in names)
        out["end_max_z"] = max(float(sim.body_pose(b)[2, 3]) for b in names)
    return out


def mug(n: int = 400) -> dict:
    import graspsim

    sim = graspsim.Simulator(graspsim.load_world(ROOT / "worlds" / "barrett_mug.yaml"))
    for _ in range(50):
        sim.step()
    c0 = time.process_time()
    for _ in range(n):
        sim.step()
    cpu = (time.process_time() - c0) / n

    def steps(s):
        for _ in range(n):
            s.step()
        return n

    return dict(scene="barrett_mug at rest", n_steps=n, cpu_us_per_step=round(1e6 * cpu, 1),
                rtf_cpu=round(sim.dt / cpu, 1), stage_us_per_step=stage_cpu(sim, steps),
                contacts=len(sim.contacts))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scene", choices=("grasp", "drop", "mug"))
    a = ap.parse_args()
    res = mug() if a.scene == "mug" else peers(a.scene)
    res["load"] = os.getloadavg()[0]
    print("RESULT_JSON " + json.dumps(res))


if __name__ == "__main__":
    main()

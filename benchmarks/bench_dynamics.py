"""Time-stepper benchmarks (issue 5): wall/CPU time per step, real-time factor and the per-stage
breakdown for three scenes, plus how the LCP size and assembly cost grow with bodies.

    taskset -c 0 python benchmarks/bench_dynamics.py            # everything (~1-2 min)
    taskset -c 0 python benchmarks/bench_dynamics.py --quick

Scenes:
  rest        every shipped world (worlds/*.yaml) with nothing moving: the robots holding their DOFs
              (PDController), objects resting where the world puts them: ``rest:<world>`` after 0.5 s
              (asleep by then: graspsim.dynamics.sleep), ``rest-awake:<world>`` with Simulator(sleep=False)
              after 0.2 s of settling (every step computed: the cost of the step itself)
  mug_hold    Barrett hand (fixed palm) holding the mug after a dynamic auto-grasp, table present
              (``mug_hold-rollout``, ``puma_grasp-rollout``: the same steps through ``Simulator.rollout``'s
              compiled loop; ``mug_hold-run``: ``Simulator.run`` without a callback, which takes its steps
              as rollouts; ``drop20-rollout`` likewise, without a controller)
  puma_grasp  Barrett on the Puma during the dynamic auto-grasp of the handset
  drop20      20 cubes (6 cm, 0.2 kg) dropped on a table (poses as in the peers' drop scene)
  clutterN    the Barrett spreading its fingers in the air above the mug, N cubes resting around it
              (``clutterN``: resting objects asleep on their own, graspsim.dynamics.sleep;
              ``clutterN-awake``: Simulator(sleep=False))
  chainN      an N-link chain whose last link touches a block at two points (LCP size vs bodies)
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

import graspsim
from graspsim.control import PDController, dynamic_auto_grasp
from graspsim.dynamics import Simulator
try:
    from graspsim.dynamics.stages import STAGES
except ImportError:     # a checkout before the stage timer (to measure before/after)
    STAGES = ("collision", "contacts", "assembly", "solve", "integration")

ROOT = Path(__file__).resolve().parent.parent


def measure(sim, ctl, n: int) -> dict:
    for _ in range(20):
        sim.step(ctl)
    sim.profile = False
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        sim.step(ctl)
    wall, cpu = (time.perf_counter() - t0) / n, (time.process_time() - c0) / n
    sim.profile = True
    acc = dict.fromkeys(STAGES, 0.0)
    sizes, per_step = [], []
    asleep = 0
    for _ in range(n):
        asleep += bool(getattr(sim.step(ctl), "asleep", False))
        for k in STAGES:
            acc[k] += sim.info.timing.get(k, 0.0) / n
        per_step.append(sum(sim.info.timing.values()))
        sizes.extend(sim.info.lcp_sizes)
    sim.profile = False
    # the median step (instrumented run): a one-time cost inside the window (a lazy import, a
    # first tessellation) moves the mean, not this
    return {"wall_ms": wall * 1e3, "cpu_ms": cpu * 1e3, "rtf_cpu": sim.dt / cpu,
            "median_ms": float(np.median(per_step)) * 1e3,
            "stages_ms": {k: v * 1e3 for k, v in acc.items()},
            "lcp_size": float(np.median(sizes)) if sizes else 0.0, "asleep": asleep / n,
            "contacts": 0 if sim.contacts is None else len(sim.contacts)}


def measure_rollout(sim, ctl, n: int) -> dict:
    """As :func:`measure`, for ``sim.rollout(n, ctl)`` (its compiled loop, graspsim.dynamics.rollout):
    wall/CPU per step of the rollout; the median is that of 20 rollouts of n / 20 steps (no stage
    times: the loop is one compiled call)."""
    ctl = ctl.compiled() if hasattr(ctl, "compiled") else ctl
    sim.compiled_loop = True              # (compiled now if not in the cache yet)
    sim.rollout(20, ctl)                  # (loads the loop)
    t0, c0 = time.perf_counter(), time.process_time()
    sim.rollout(n, ctl)
    wall, cpu = (time.perf_counter() - t0) / n, (time.process_time() - c0) / n
    chunk = max(1, n // 20)
    per = []
    for _ in range(20):
        c1 = time.process_time()
        sim.rollout(chunk, ctl)
        per.append((time.process_time() - c1) / chunk)
    return {"wall_ms": wall * 1e3, "cpu_ms": cpu * 1e3, "rtf_cpu": sim.dt / cpu,
            "median_ms": float(np.median(per)) * 1e3, "stages_ms": dict.fromkeys(STAGES, float("nan")),
            "lcp_size": float(np.median(sim.info.lcp_sizes)) if sim.info.lcp_sizes else 0.0,
            "asleep": float(sim.asleep), "contacts": 0 if sim.contacts is None else len(sim.contacts)}


def measure_run(sim, ctl, n: int) -> dict:
    """``sim.run(n dt, ctl)`` without a callback (its steps as rollouts, the PDController compiled
    as it is): wall/CPU per step (no stage times, no median)."""
    sim.compiled_loop = True
    sim.run(20 * sim.dt, ctl)
    n0, t0, c0 = sim.state.steps, time.perf_counter(), time.process_time()
    sim.run(n * sim.dt, ctl)
    k = sim.state.steps - n0
    wall, cpu = (time.perf_counter() - t0) / k, (time.process_time() - c0) / k
    return {"wall_ms": wall * 1e3, "cpu_ms": cpu * 1e3, "rtf_cpu": sim.dt / cpu, "median_ms": float("nan"),
            "stages_ms": dict.fromkeys(STAGES, float("nan")),
            "lcp_size": float(np.median(sim.info.lcp_sizes)) if sim.info.lcp_sizes else 0.0,
            "asleep": float(sim.asleep), "contacts": 0 if sim.contacts is None else len(sim.contacts)}


def puma_grasp_scene() -> tuple:
    """(simulator, controller) of the ``puma_grasp`` scene: the Puma's Barrett 1.2 s into closing
    on the handset, its fingers on it and lifting it (``bench_island.py`` and
    ``bench_allocations.py`` use it too)."""
    w = graspsim.load_world(ROOT / "worlds/puma_barrett_handset.yaml")
    sim = Simulator(w)
    ctl = PDController(sim)
    ctl.set_gains("barrett", "f1", effort=2.5)
    ctl.set_gains("barrett", "f2", effort=2.5)
    lim = w.description.robots[w.description.robot_index["barrett"]].robot.dof_limits
    ctl.move_to("barrett", [0.0, lim[1, 1], lim[2, 1], lim[3, 1]])
    sim.run(1.2, ctl)
    return sim, ctl


def drop_world(n: int, folder: Path) -> Path:
    g = int(np.ceil(np.sqrt(n / 5)))
    lines = ["world: drop", "objects:"]
    for k in range(n):
        layer, c = divmod(k, g * g)
        ix, iy = c % g, c // g
        x = (ix - (g - 1) / 2) * 0.1 + 0.01 * (layer % 2)
        y = (iy - (g - 1) / 2) * 0.1 - 0.01 * (layer % 2)
        z = 0.06 + 0.1 * layer
        roll, pitch, yaw = 0.15 * ((k % 3) - 1), 0.15 * (((k // 3) % 3) - 1), 0.25 * k
        lines.append(f"  - {{name: box{k}, file: {ROOT}/objects/cube.yaml, pose: {{xyz: [{x}, {y}, {z}], "
                     f"rpy: [{roll}, {pitch}, {yaw}]}}}}")
    lines += ["obstacles:", f"  - {{name: table, file: {ROOT}/objects/table.yaml}}"]
    p = folder / "drop.yaml"
    p.write_text("\n".join(lines) + "\n")
    return p


def clutter_world(n: int, folder: Path, z_hand: float = 0.25) -> Path:
    """The Barrett ``z_hand`` m above the mug on the table (0.18: its fingers close on the mug), n
    cubes resting on a 25 cm circle around it (tests/test_sleep.py uses it too)."""
    lines = [f"world: clutter{n}", "units: {length: m, angle: deg}", "robots:",
             f"  - {{name: barrett, file: {ROOT}/robots/barrett.yaml, pose: {{xyz: [0, 0, {z_hand}], rpy: [180, 0, 0]}}}}",
             "objects:", f"  - {{name: mug, file: {ROOT}/objects/mug.yaml, pose: {{xyz: [0, 0, 0]}}}}"]
    for k in range(n):
        a = 2 * np.pi * k / n
        lines.append(f"  - {{name: cube{k}, file: {ROOT}/objects/cube.yaml, pose: {{xyz: [{0.25 * np.cos(a):.4f}, "
                     f"{0.25 * np.sin(a):.4f}, 0.03005], rpy: [0, 0, {np.degrees(a):.3f}]}}}}")
    lines += ["obstacles:", f"  - {{name: table, file: {ROOT}/objects/table.yaml}}"]
    p = folder / f"clutter{n}_{z_hand}.yaml"
    p.write_text("\n".join(lines) + "\n")
    return p


def chain_world(n: int, folder: Path) -> Path:
    """A horizontal chain of n links (each 5 cm) on a fixed base, held straight by PD drives; its tip
    rests on a block (the contact region of the tip's underside: a few points, whatever n)."""
    links = ["  - {name: base, shape: {box: [0.02, 0.02, 0.02]}, mass: 1}"]
    joints, dofs = [], []
    for i in range(n):
        links.append(f"  - {{name: l{i}, shape: {{box: [0.05, 0.01, 0.01], origin: {{xyz: [0.025, 0, 0]}}}}, mass: 0.05}}")
        parent = "base" if i == 0 else f"l{i - 1}"
        off = 0.0 if i == 0 else 0.05
        joints.append(f"  - {{name: j{i}, type: revolute, parent: {parent}, child: l{i}, origin: {{xyz: [{off}, 0, 0]}}, axis: [0, 1, 0]}}")
        dofs.append(f"  - {{name: j{i}, joints: [j{i}], kp: 20, kd: 0.2, effort: 100}}")
    (folder / "chain.yaml").write_text("robot: chain\nlinks:\n" + "\n".join(links) + "\njoints:\n" + "\n".join(joints)
                                       + "\ndofs:\n" + "\n".join(dofs) + "\n")
    L = 0.05 * n
    w = folder / f"chain{n}.yaml"
    w.write_text(f"world: chain{n}\nrobots:\n  - {{file: chain.yaml, pose: {{xyz: [0, 0, 0.3]}}}}\n"
                 f"obstacles:\n  - {{name: block, shape: {{box: [0.04, 0.1, 0.1], origin: {{xyz: [0, 0, -0.05]}}}}, "
                 f"material: wood, pose: {{xyz: [{L - 0.01}, 0, {0.3 - 0.005 - 5e-5}]}}}}\n")
    return w


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--scenes", default="rest,mug_hold,puma_grasp,drop20,chain,clutter",
                    help="comma-separated subset of rest, mug_hold, puma_grasp, drop20, chain, clutter")
    a = ap.parse_args()
    scenes = set(a.scenes.split(","))
    n = 100 if a.quick else a.steps
    rows = []
    if "rest" in scenes:        # every shipped world, nothing moving
        for path in sorted((ROOT / "worlds").glob("*.yaml")):
            for sleep in (True, False):
                sim = Simulator(graspsim.load_world(path), sleep=sleep)
                ctl = PDController(sim)
                sim.run(0.5 if sleep else 0.2, ctl)
                rows.append((f"rest{'' if sleep else '-awake'}:{path.stem}", measure(sim, ctl, n)))
    if "mug_hold" in scenes:
        w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
        r = dynamic_auto_grasp(w, "barrett", timeout=2.0)
        rows.append(("mug_hold", measure(r.sim, r.controller, n)))
        rows.append(("mug_hold-rollout", measure_rollout(r.sim, r.controller, n)))
        rows.append(("mug_hold-run", measure_run(r.sim, r.controller, n)))
    if "puma_grasp" in scenes:   # during the closing phase
        rows.append(("puma_grasp", measure(*puma_grasp_scene(), n)))
        rows.append(("puma_grasp-rollout", measure_rollout(*puma_grasp_scene(), n)))
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        if "drop20" in scenes:
            sim = Simulator(graspsim.load_world(drop_world(20, d)))
            sim.run(0.3)
            rows.append(("drop20", measure(sim, None, max(50, n // 4))))
            sim = Simulator(graspsim.load_world(drop_world(20, d)))
            sim.run(0.3)
            rows.append(("drop20-rollout", measure_rollout(sim, None, max(50, n // 4))))
        if "clutter" in scenes:
            for k in (0, 8):
                for sleep in (True, False):
                    sim = Simulator(graspsim.load_world(clutter_world(k, d)), sleep=sleep)
                    ctl = PDController(sim)
                    ctl.move_to("barrett", [0.5, 0.3, 0.3, 0.3], duration=30.0)   # moves, touching nothing
                    sim.run(0.3, ctl)
                    rows.append((f"clutter{k}{'' if sleep else '-awake'}", measure(sim, ctl, n)))
        if "chain" in scenes:
            for k in (5, 10, 20):
                sim = Simulator(graspsim.load_world(chain_world(k, d)))
                ctl = PDController(sim)
                sim.run(0.2, ctl)
                rows.append((f"chain{k}", measure(sim, ctl, max(50, n // 4))))
    print(f"{'scene':33s} {'wall ms':>8s} {'cpu ms':>8s} {'RTF(cpu)':>9s} {'med ms':>7s} {'contacts':>8s} {'LCP n':>6s} "
          f"{'asleep':>6s}  "
          + "  ".join(f"{s:>11s}" for s in STAGES))
    for name, m in rows:
        print(f"{name:33s} {m['wall_ms']:8.3f} {m['cpu_ms']:8.3f} {m['rtf_cpu']:9.2f} {m['median_ms']:7.3f} {m['contacts']:8d} "
              f"{m['lcp_size']:6.0f} {m['asleep']:6.0%}  "
              + "  ".join(f"{m['stages_ms'][s]:11.3f}" for s in STAGES))


if __name__ == "__main__":
    main()

"""Benchmark: per-step contact query for the Barrett hand on the Puma arm above a handset on a workbench.

Scenes (worlds/puma_barrett_handset.yaml, the arm's base raised so that nothing interpenetrates):

* ``free``: the hand 10 mm above the touching pose (nothing touching except the handset resting on
  the workbench);
* ``touch``: the hand lowered (binary search, :func:`localize_impact`) until its three fingertips
  touch the handset's top, every fingertip separated by (0, 0.1 mm];
* the same two queries with 1, 10 and 50 extra obstacles (boxes and mesh objects, 2-5 m away).

Reports wall time (perf_counter) and CPU time (process_time) per call, best of several batches, on
one core (the script pins itself to CPU 0 where the OS allows; ``taskset -c 0`` does the same).

    python benchmarks/bench_collision.py [--reps 2000] [--mug-only]

``--mug-only`` times only ``contacts(poses)`` of worlds/barrett_mug.yaml as shipped (the mug resting on
the table, the hand above it: what every step of the world a user opens first pays) and of a body of
two box shapes resting on the table against the same boxes as two bodies.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import graspsim  # noqa: E402
from graspsim.collision import CollisionModel, check_interpenetration, localize_impact  # noqa: E402

EXTRA_KINDS = ["{{name: x{k}, shape: {{box: [0.2, 0.1, 0.3]}}, pose: {{xyz: [{x}, {y}, 0.15]}}}}",
               "{{name: x{k}, file: {root}/objects/mug.yaml, pose: {{xyz: [{x}, {y}, 0]}}}}",
               "{{name: x{k}, file: {root}/objects/can.yaml, pose: {{xyz: [{x}, {y}, 0.061]}}}}",
               "{{name: x{k}, shape: {{cylinder: {{radius: 0.05, length: 0.3}}}}, pose: {{xyz: [{x}, {y}, 0.15]}}}}"]


def world_with_extras(n: int, tmp: Path):
    src = (ROOT / "worlds/puma_barrett_handset.yaml").read_text().replace("../", f"{ROOT}/")
    lines = [src.rstrip("\n")]
    for k in range(n):
        x, y = 2.0 + 0.5 * (k % 7), -1.5 + 0.5 * (k // 7)
        lines.append("  - " + EXTRA_KINDS[k % len(EXTRA_KINDS)].format(k=k, x=x, y=y, root=ROOT))
    path = tmp / f"bench_{n}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return graspsim.load_world(path)


def touching_pose(world, model):
    """Raise the arm's base until nothing interpenetrates, then lower it onto the handset (fingers
    closed to 0.6 rad so the three fingertips, not the proximal links, meet the grip)."""
    world.robots["barrett"].dof_values = np.array([0.0, 0.6, 0.6, 0.6])
    puma = world.robots["puma"]
    X0 = puma.base_pose.copy()

    def at(dz):
        X = X0.copy()
        X[2, 3] += dz
        puma.base_pose = X
        return world.body_poses()

    hi = 0.2
    assert not model.penetrating(at(hi)), "raise the hand further"
    s = localize_impact(lambda s: at(hi - s * hi), model)
    dz = hi - s * hi
    return at(dz + 0.010), at(dz)


def multi_shape(reps: int) -> None:
    """A body of two 4 cm boxes resting on the table (one body pair, two shape pairs gathered and
    reduced together) against the same boxes as two bodies (two body pairs)."""
    shapes = ("[{box: [0.04, 0.04, 0.04], origin: {xyz: [-0.05, 0, 0]}}, "
              "{box: [0.04, 0.04, 0.04], origin: {xyz: [0.05, 0, 0]}}]")
    inr = "mass: 0.3, com: [0, 0, 0], inertia: [8e-5, 8.3e-4, 8.3e-4, 0, 0, 0], material: wood"
    table = f"obstacles:\n  - {{name: table, file: {ROOT}/objects/table.yaml}}\n"
    with tempfile.TemporaryDirectory() as d:
        one = Path(d) / "one.yaml"
        one.write_text(f"world: one\nobjects:\n  - {{name: db, shapes: {shapes}, {inr}, pose: {{xyz: [0, 0, 0.02]}}}}\n"
                       + table)
        two = Path(d) / "two.yaml"
        two.write_text("world: two\nobjects:\n" + "".join(
            f"  - {{name: b{k}, shape: {{box: [0.04, 0.04, 0.04]}}, mass: 0.15, material: wood, "
            f"pose: {{xyz: [{x}, 0, 0.02]}}}}\n" for k, x in enumerate((-0.05, 0.05))) + table)
        for label, path in (("one body, two box shapes", one), ("two one-box bodies", two)):
            w = graspsim.load_world(path)
            m = CollisionModel(w.table)
            P = w.body_poses()
            wall, cpu, _ = timeit(lambda: m.contacts(P), reps)
            print(f"on the table, {label:25s}: {len(m.contacts(P))} contacts, cpu {cpu * 1e6:.1f} us")


def timeit(f, reps: int, batches: int = 5):
    f()
    wall, cpu = [], []
    for _ in range(batches):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(reps):
            f()
        wall.append((time.perf_counter() - t0) / reps)
        cpu.append((time.process_time() - c0) / reps)
    return min(wall), min(cpu), statistics.median(wall)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--mug-only", action="store_true", help="time only barrett_mug.yaml's contact query")
    args = ap.parse_args(argv)
    try:
        os.sched_setaffinity(0, {0})
        pinned = "pinned to CPU 0"
    except (AttributeError, OSError):  # pragma: no cover
        pinned = "not pinned"
    print(f"bench_collision ({pinned}; numpy {np.__version__}; reps {args.reps}; best of 5 batches)")

    mug = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    mm = CollisionModel(mug.table, mug.description.contact_threshold)
    Pm = mug.body_poses()
    wall, cpu, med = timeit(lambda: mm.contacts(Pm), args.reps)
    print(f"barrett_mug.yaml as shipped: {len(mm.contacts(Pm))} contacts, {len(mm.pairs)} pairs; contacts(): "
          f"wall {wall * 1e6:.1f} us, cpu {cpu * 1e6:.1f} us, median {med * 1e6:.1f} us")
    multi_shape(args.reps)
    if args.mug_only:
        return 0

    t0 = time.perf_counter()
    base = graspsim.load_world(ROOT / "worlds/puma_barrett_handset.yaml")
    model = CollisionModel(base.table, base.description.contact_threshold)
    model.contacts(base.body_poses())
    print(f"model build + first query: {1e3 * (time.perf_counter() - t0):.1f} ms (numba cache warm)")
    free, touch = touching_pose(base, model)
    assert not check_interpenetration(base, raise_error=False)
    cs = model.contacts(touch)
    names = base.table.names
    pairs = sorted({(names[a], names[b]) for a, b in zip(cs.body_a, cs.body_b)})
    fingers = [p for p in pairs if p[0].endswith("_dist")]
    print(f"touch pose: {len(cs)} contacts, pairs {pairs}")
    assert len(fingers) == 3, fingers
    sep = cs.separation[[names[a].endswith('_dist') for a in cs.body_a]]
    print(f"fingertip separations: {np.round(sep * 1e3, 5).tolist()} mm")

    rows = []
    with tempfile.TemporaryDirectory() as d:
        for n in (0, 1, 10, 50):
            w = base if n == 0 else world_with_extras(n, Path(d))
            m = model if n == 0 else CollisionModel(w.table, w.description.contact_threshold)
            N = len(w.table)
            Pf = np.concatenate([free, w.body_poses()[len(free):]]) if n else free
            Pt = np.concatenate([touch, w.body_poses()[len(touch):]]) if n else touch
            for label, P in (("free", Pf), ("touch", Pt)):
                k = len(m.contacts(P))
                wall, cpu, med = timeit(lambda: m.contacts(P), args.reps)
                rows.append((n, N, len(m.pairs), label, k, wall, cpu, med))
            pen_w, pen_c, _ = timeit(lambda: m.penetrating(Pt), max(args.reps // 10, 50))
            sep_w, sep_c, _ = timeit(lambda: m.separations(Pt), max(args.reps // 10, 50))
            rows.append((n, N, len(m.pairs), "penetrating()", -1, pen_w, pen_c, pen_w))
            rows.append((n, N, len(m.pairs), "separations()", -1, sep_w, sep_c, sep_w))
    print(f"{'extra':>5} {'bodies':>6} {'pairs':>5} {'query':>14} {'contacts':>8} {'wall us':>9} {'cpu us':>9} {'median us':>9}")
    for n, N, P, label, k, wall, cpu, med in rows:
        ks = str(k) if k >= 0 else "-"
        print(f"{n:5d} {N:6d} {P:5d} {label:>14} {ks:>8} {wall * 1e6:9.1f} {cpu * 1e6:9.1f} {med * 1e6:9.1f}")

    # single mesh pairs: a fingertip capsule on the mug's wall (1408 triangles), the mug on the table
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "mug.yaml"
        path.write_text("world: mugpair\nunits: {length: m, angle: deg}\nobjects:\n"
                        "  - {name: tip, shape: {capsule: {radius: 0.01, length: 0.045}}, mass: 0.1}\n"
                        f"  - {{name: mug, file: {ROOT}/objects/mug.yaml}}\n"
                        f"obstacles:\n  - {{name: table, file: {ROOT}/objects/table.yaml}}\n")
        w = graspsim.load_world(path)
        m = CollisionModel(w.table)
        tip = w.bodies["tip"]

        def at(s):
            X = np.eye(4)
            X[:3, 3] = [0.0, -0.1 + 0.07 * s, 0.05]
            tip.pose = X
            return w.body_poses()

        s = localize_impact(at, m)
        P = at(s)
        i, j, k = w.table.index["tip"], w.table.index["mug"], w.table.index["table"]
        for label, pr in (("fingertip-mug", [(i, j)]), ("mug-table", [(j, k)])):
            n = len(m.contacts(P, pr))
            wall, cpu, _ = timeit(lambda: m.contacts(P, pr), args.reps)
            print(f"contacts of one pair {label:14s}: {n:2d} contacts, wall {wall * 1e6:.1f} us, cpu {cpu * 1e6:.1f} us")

    # binary search of the impact (fingertips onto the handset), per call
    puma = base.robots["puma"]
    X0 = puma.base_pose.copy()  # the touching pose; start 10 mm above it
    X0[2, 3] += 0.010

    def at(s):
        X = X0.copy()
        X[2, 3] -= 0.02 * s  # a 20 mm trial move that ends in interpenetration
        puma.base_pose = X
        return base.body_poses()

    lw, lc, _ = timeit(lambda: localize_impact(at, model), 20, 3)
    print(f"localize_impact (20 mm move, 30 halvings max): wall {lw * 1e3:.2f} ms, cpu {lc * 1e3:.2f} ms per call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

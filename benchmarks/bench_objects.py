"""Objects from any mesh and object sets (issue #17): what they cost.

    python benchmarks/bench_objects.py [--objects 50] [--workers 2]

1. The mug, exact (non-convex) mesh against its convex hull (what convex pieces would change, at
   the coarsest): Barrett static auto-grasp time (median of 30, state restored between grasps),
   hand-object contacts, force closure, epsilon.
2. Non-watertight ``random_urdfs`` (037, 099, 110, 121, 230): the parallel jaw's static auto-grasp
   from above on the mesh's own triangles (what graspsim does) against its convex hull.
3. Static auto-grasp per candidate (``t_grasp``: auto-grasp + analysis, from the batch rows) on
   five ``random_urdfs`` objects with ``examples/batch_objects.yaml``, serially, against the mug's
   with ``examples/batch_barrett_mug.yaml`` (its first 100 candidates).
4. ``examples/batch_objects.yaml`` over ``--objects`` objects with ``--workers`` processes:
   candidates, wall time, candidates per CPU-second (from the rows' CPU times).
"""
from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import trimesh

import graspsim
from graspsim.batch import load_config, run_batch, summarize
from graspsim.control import static_auto_grasp
from graspsim.model.mesh_object import MeshWarning

ROOT = Path(__file__).resolve().parent.parent
SET = "${pybullet_data}/random_urdfs/*/*.urdf"


def _grasp_stats(world_file: Path) -> tuple:
    w = graspsim.load_world(world_file)
    s0 = w.save_state()
    for _ in range(3):
        w.restore_state(s0)
        static_auto_grasp(w, "barrett")
    t = []
    for _ in range(30):
        w.restore_state(s0)
        t0 = time.perf_counter()
        r = static_auto_grasp(w, "barrett")
        t.append(time.perf_counter() - t0)
    return np.median(t) * 1e3, len(r.grasp_contacts), r.quality.force_closure, r.quality.epsilon


def mug_exact_vs_hull(tmp: Path) -> None:
    hull = trimesh.load(ROOT / "objects/meshes/mug.obj", force="mesh").convex_hull
    hull.export(tmp / "mug_hull.stl")
    text = (ROOT / "worlds/barrett_mug.yaml").read_text()
    text = text.replace("../robots/", f"{ROOT}/robots/").replace("../objects/table.yaml", f"{ROOT}/objects/table.yaml")
    exact = text.replace("../objects/mug.yaml", f"{ROOT}/objects/mug.yaml")
    hulled = text.replace("file: ../objects/mug.yaml", f"file: {tmp}/mug_hull.stl, mass: 0.3, material: glass")
    (tmp / "exact.yaml").write_text(exact)
    (tmp / "hull.yaml").write_text(hulled)
    for name in ("exact", "hull"):
        ms, n, fc, eps = _grasp_stats(tmp / f"{name}.yaml")
        print(f"mug {name:5s}: static auto-grasp {ms:6.2f} ms (median of 30), {n} contacts with the mug, "
              f"force closure {fc}, epsilon {eps:.4f}")


def _jaw_world(tmp: Path, name: str, obj_entry: str, shape) -> Path:
    V = shape.vertices_in(np.eye(4))
    lo, hi = V.min(0), V.max(0)
    c = (lo + hi) / 2
    yaw = np.pi / 2 if hi[1] - lo[1] <= hi[0] - lo[0] else 0.0
    p = tmp / f"jaw_{name}.yaml"
    p.write_text(f"""world: jaw
robots:
  - {{name: gripper, file: {ROOT}/robots/parallel_jaw.yaml, dofs: {{opening: 0.07}},
     pose: {{xyz: [0, 0, {float(max(hi[2] - lo[2] + 0.005, 0.075))!r}], rpy: [{np.pi!r}, 0, {float(yaw)!r}]}}}}
objects:
  - {{name: obj, {obj_entry}, pose: {{xyz: [{-float(c[0])!r}, {-float(c[1])!r}, {-float(lo[2])!r}]}}}}
obstacles:
  - {{name: table, file: {ROOT}/objects/table.yaml}}
""")
    return p


def open_meshes(tmp: Path) -> None:
    import pybullet_data

    from graspsim.collision import check_interpenetration

    base = Path(pybullet_data.getDataPath()) / "random_urdfs"
    for k in ("037", "099", "110", "121", "230"):
        urdf = base / k / f"{k}.urdf"
        m = trimesh.load(base / k / f"{k}.obj", force="mesh")
        m.apply_scale(0.015)
        m.convex_hull.export(tmp / f"hull{k}.stl")
        obj = graspsim.load_object(urdf)
        out = []
        for variant, entry in (("triangles", f"file: {urdf}"), ("hull", f"file: {tmp}/hull{k}.stl, mass: 0.1")):
            w = graspsim.load_world(_jaw_world(tmp, f"{variant}{k}", entry, obj.shape))
            t0 = time.perf_counter()
            r = static_auto_grasp(w, "gripper", obj="obj")
            ms = (time.perf_counter() - t0) * 1e3
            pen = "none" if not check_interpenetration(w, raise_error=False) else "YES"
            out.append(f"{variant}: opening {r.dofs[0] * 1e3:.1f} mm, {len(r.grasp_contacts)} contacts, "
                       f"epsilon {r.quality.epsilon:.3f}, interpenetration {pen}, {ms:.0f} ms")
        print(f"open mesh {k} (hull / |signed volume| {m.convex_hull.volume / abs(m.volume):.1f}): " + "; ".join(out))


def _t_grasp(db: Path) -> dict:
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT object, t_grasp FROM results WHERE status = 'ok'").fetchall()
    out: dict = {}
    for o, t in rows:
        out.setdefault(o, []).append(t)
    return out


def per_candidate(tmp: Path) -> None:
    cfg = load_config(ROOT / "examples/batch_objects.yaml", overrides={"objects": {"glob": SET, "limit": 5}})
    run_batch(cfg, tmp / "five.sqlite", workers=0, progress="off")
    tg = _t_grasp(tmp / "five.sqlite")
    alls = [x for v in tg.values() for x in v]
    for o, v in tg.items():
        print(f"  {o}: {len(v)} grasps, median t_grasp {np.median(v) * 1e3:.1f} ms")
    print(f"five random_urdfs (Barrett, {len(alls)} candidates): median t_grasp {np.median(alls) * 1e3:.1f} ms")
    mug = load_config(ROOT / "examples/batch_barrett_mug.yaml")
    run_batch(mug, tmp / "mug.sqlite", workers=0, limit=100, progress="off")
    v = _t_grasp(tmp / "mug.sqlite")["mug"]
    print(f"mug (Barrett, first 100 candidates of batch_barrett_mug, {len(v)} grasped): "
          f"median t_grasp {np.median(v) * 1e3:.1f} ms")


def object_set(tmp: Path, n: int, workers: int) -> None:
    cfg = load_config(ROOT / "examples/batch_objects.yaml", overrides={"objects": {"glob": SET, "limit": n}})
    t0 = time.perf_counter()
    run_batch(cfg, tmp / "set.sqlite", workers=workers, progress="off")
    wall = time.perf_counter() - t0
    s = summarize(tmp / "set.sqlite")
    print(f"object set: {len(cfg.scenes)} objects, {s.evaluated} candidates, {workers} workers: {wall:.1f} s wall "
          f"(start-up included), {s.evaluated / wall:.1f} candidates/s; {s.timing['per_cpu_s']:.1f} candidates "
          f"per CPU-second; force closure {s.success} ({100 * s.success / s.evaluated:.1f}%), "
          f"{sum(1 for _, k, _ in s.object_rates().values() if k)} of {len(cfg.scenes)} objects with one")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=50)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    warnings.simplefilter("ignore", MeshWarning)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        mug_exact_vs_hull(tmp)
        open_meshes(tmp)
        per_candidate(tmp)
        object_set(tmp, a.objects, a.workers)


if __name__ == "__main__":
    main()

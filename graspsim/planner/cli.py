"""`graspsim plan WORLD`: plan grasps from the command line, print them, write JSON and a world file."""
from __future__ import annotations

import json
import math
import os
import sys

import numpy as np

__all__ = ["register", "run", "write_world"]


def register(sub) -> None:
    p = sub.add_parser("plan", help="plan grasps: simulated annealing over hand pose and eigengrasps, "
                                    "each grasp closed and scored")
    p.add_argument("world", metavar="WORLD")
    p.add_argument("--hand", help="the robot that grasps (default: the world's only robot)")
    p.add_argument("--object", dest="obj", help="the object to grasp (default: the only dynamic object)")
    p.add_argument("--n", type=int, default=10, help="how many distinct grasps to return (default 10)")
    p.add_argument("--seconds", type=float, default=None, help="search time budget, wall-clock s")
    p.add_argument("--iterations", type=int, default=None,
                   help="annealing steps per restart (default 2000 without --seconds); deterministic")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--energy", choices=["contact", "quality"], default="contact", help="search energy (default contact)")
    p.add_argument("--rank", choices=["quality", "robust"], default="quality",
                   help="order of the grasps: by epsilon (default), or the force-closure ones by robustness "
                        "(probability of force closure under object pose and friction noise, then mean epsilon)")
    p.add_argument("--samples", type=int, default=20,
                   help="with --rank robust: noisy re-closings per grasp (default 20; noise from --seed)")
    p.add_argument("--json", metavar="FILE", help="write the grasps as JSON to FILE ('-': stdout)")
    p.add_argument("--write-world", metavar="FILE", help="write WORLD with the best grasp applied to FILE (YAML)")
    p.set_defaults(func=run)


def _pick(world, hand, obj) -> tuple[str, str]:
    if hand is None:
        robots = [r.name for r in world.description.robots]
        mounted = [r.name for r in world.description.robots if r.mount is not None]
        if len(mounted) == 1:
            robots = mounted                     # a hand carried by an arm
        if len(robots) != 1:
            raise ValueError(f"world '{world.name}' has {len(robots)} robots ({', '.join(robots) or 'none'}); "
                             "name the hand with --hand")
        hand = robots[0]
    elif hand not in world.robots:
        raise ValueError(f"world '{world.name}' has no robot '{hand}'; robots: {', '.join(world.robots)}")
    objs = [b.name for b in world.bodies.values() if b.dynamic]
    if obj is None:
        if not objs:
            raise ValueError(f"world '{world.name}' has no object to grasp (no dynamic body)")
        if len(objs) > 1:
            raise ValueError(f"world '{world.name}' has several objects ({', '.join(objs)}); name one with --object")
        obj = objs[0]
    elif obj not in objs:
        raise ValueError(f"world '{world.name}' has no object '{obj}'; objects: {', '.join(objs) or 'none'}")
    return hand, obj


def write_world(src: str, out: str, world, hand: str, grasp) -> None:
    """Copy world file ``src`` to ``out`` with ``hand``'s pose and DOFs set to ``grasp`` (in the
    file's units; relative file and mesh names rebased to ``out``'s folder, absolute ones and
    ``NAME://path`` kept).  A clutch-held joint is not expressible in
    a world file: the DOF values are written.  A hand mounted on an arm is written unmounted and
    alone, as it was planned (:func:`graspsim.planner.free_hand_world`)."""
    import yaml

    from ..model.description import REVOLUTE
    from ..model.fields import ANGLE_UNITS, LENGTH_UNITS
    from ..model.package_path import has_scheme
    from ..spatial import matrix_to_rpy

    with open(src) as f:
        doc = yaml.safe_load(f)
    u = doc.get("units", {})
    if isinstance(u, str):
        u = {("angle" if u in ANGLE_UNITS else "length"): u}
    ls, as_ = LENGTH_UNITS[u.get("length", "m")], ANGLE_UNITS[u.get("angle", "rad")]
    sdir, odir = os.path.dirname(os.path.abspath(src)), os.path.dirname(os.path.abspath(out))

    def moved(name):
        """A file name of ``src`` as ``out`` must write it: relative ones rebased, absolute ones and
        ``NAME://path`` (a file in a data package) as they are."""
        if not isinstance(name, str) or has_scheme(name) or os.path.isabs(name):
            return name
        return os.path.relpath(os.path.join(sdir, name), odir)

    for key in ("robots", "objects", "obstacles"):
        for e in doc.get(key) or []:
            if not isinstance(e, dict):
                continue
            if "file" in e:
                e["file"] = moved(e["file"])
            # inline shapes' meshes are relative to the world file too
            for sh in ([e["shape"]] if isinstance(e.get("shape"), dict) else []) + \
                    [x for x in (e.get("shapes") or []) if isinstance(x, dict)]:
                if "mesh" in sh:
                    sh["mesh"] = moved(sh["mesh"])
    robot = world.robots[hand].description
    entry = next(e for e in doc["robots"] if e.get("name") == hand)
    if "mount" in entry:
        # planned as free_hand_world does: the hand alone, unmounted, the arm left out
        del entry["mount"]
        doc["robots"] = [entry]
    X = grasp.base_pose
    entry["pose"] = {"xyz": [float(v) / ls for v in X[:3, 3]],
                     "rpy": [float(v) / as_ for v in matrix_to_rpy(X[:3, :3])]}
    entry["dofs"] = {n: float(v) / (as_ if robot.joints[robot.dofs[k].joints[0]].kind == REVOLUTE else ls)
                     for k, (n, v) in enumerate(grasp.dofs.items())}
    doc["description"] = (f"{doc.get('description', '')} Best grasp planned by graspsim plan "
                          f"(force closure {grasp.quality.force_closure}, epsilon {grasp.quality.epsilon:.4f}).").strip()
    with open(out, "w") as f:
        yaml.safe_dump(doc, f, sort_keys=False)


def _mount_note(world, hand: str) -> str | None:
    """For a hand mounted on an arm: that the grasps are the free hand's, the arm not checked."""
    m = world.robots[hand].instance.mount
    if m is None:
        return None
    arm = world.description.robots[m[0]].name
    return (f"'{hand}' is mounted on '{arm}': planned for the hand alone (its palm pose free, the arm left out); "
            f"whether '{arm}' can reach these grasps is not checked")


def _robust_text(g) -> str:
    r = g.robustness
    if r is None:
        return ""
    return (f"; robust: P(force closure) {r.p_force_closure:.2f}, epsilon mean {r.eps_mean:.4f}, "
            f"p05 {r.eps_p05:.4f} ({r.samples} samples)")


def run(args) -> int:
    from .. import load_world
    from .api import plan_grasps

    for name, v in (("--seconds", args.seconds), ("--iterations", args.iterations), ("--n", args.n),
                    ("--samples", args.samples)):
        if v is not None and not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name} {v:g}: must be a number > 0")
    from ..arguments import output_file

    for name, path in (("--json", args.json), ("--write-world", args.write_world)):
        if path not in (None, "-"):
            output_file(name, path)         # (before the search: a bad path must not lose its grasps)
    world = load_world(args.world)
    hand, obj = _pick(world, args.hand, args.obj)
    log: list = []
    grasps = plan_grasps(world, hand, obj, n=args.n, seconds=args.seconds, iterations=args.iterations,
                         energy=args.energy, seed=args.seed, log=log, rank=args.rank, robust_samples=args.samples)
    s = log[0]
    robot = world.robots[hand].description
    out = {"world": world.name, "hand": hand, "object": obj, "seed": args.seed, "energy": args.energy, "rank": args.rank,
           "iterations": s.iterations, "evaluations": s.evaluations, "seconds": s.seconds,
           "grasps": [g.to_dict() for g in grasps]}
    note = _mount_note(world, hand)
    if note:
        out["mounted_on"] = world.description.robots[world.robots[hand].instance.mount[0]].name
        out["arm_reachability_checked"] = False
        out["note"] = note
    if args.json is not None:
        text = json.dumps(out, indent=2) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            with open(args.json, "w") as f:
                f.write(text)
    if args.json != "-":
        nfc = sum(g.quality.force_closure for g in grasps)
        print(f"planned {len(grasps)} distinct grasps of '{obj}' by '{hand}' in world '{world.name}': "
              f"{nfc} force closure ({s.evaluations} states in {s.seconds:.2f} s, seed {args.seed})"
              + (", ranked by robustness" if args.rank == "robust" else ""))
        if note:
            print(f"  note: {note}")
        for i, g in enumerate(grasps):
            p = g.palm_pose[:3, 3]
            dofs = ", ".join(f"{n} {math.degrees(v) if robot.joints[robot.dofs[k].joints[0]].kind == 'revolute' else v * 1e3:.1f}"
                             for k, (n, v) in enumerate(g.dofs.items()))
            q = g.quality
            print(f"  {i + 1:2d}. palm at [{p[0]:+.4f} {p[1]:+.4f} {p[2]:+.4f}] m, {dofs}; "
                  f"{'force closure' if q.force_closure else 'no force closure'}, epsilon {q.epsilon:.4f}, "
                  f"volume {q.volume:.4f}, energy {g.energy:.3f}" + _robust_text(g))
    if args.write_world:
        if not grasps:
            raise ValueError("no grasp to write")
        write_world(args.world, args.write_world, world, hand, grasps[0])
    return 0

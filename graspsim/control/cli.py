"""`graspsim grasp WORLD`: static or dynamic auto-grasp, quality and lift test from the command line."""
from __future__ import annotations

import json
import sys

import numpy as np


def register(sub) -> None:
    g = sub.add_parser("grasp", help="auto-grasp an object and print the DOF values, contacts and quality")
    g.add_argument("world", metavar="WORLD")
    g.add_argument("--hand", help="the robot that grasps (default: the world's only hand, or the one carried by an arm)")
    g.add_argument("--object", dest="obj", help="the object to grasp (default: the only dynamic object)")
    g.add_argument("--dynamic", action="store_true", help="close the hand under dynamics (PD drives, contacts, gravity)")
    g.add_argument("--lift", type=float, metavar="METRES", help="after the grasp, raise the hand this far and hold (implies --dynamic)")
    g.add_argument("--timeout", type=float, default=3.0, help="dynamic grasp: simulated seconds at most (default 3)")
    g.add_argument("--gws", choices=["L1", "Linf"], default="L1", help="grasp wrench space (default L1)")
    g.add_argument("--effort", action="append", default=[], metavar="DOF=NM",
                   help="override a DOF's effort limit, e.g. --effort f1=2.5 (repeatable)")
    g.add_argument("--plot", metavar="PNG", help="save the grasp wrench space projections (needs matplotlib)")
    g.add_argument("--json", nargs="?", const="-", metavar="FILE", help="write the result as JSON (to FILE or stdout)")
    g.set_defaults(func=run)


def _default_hand(world) -> str:
    robots = world.description.robots
    mounted = [r.name for r in robots if r.mount is not None]
    if len(mounted) == 1:
        return mounted[0]
    if len(robots) == 1:
        return robots[0].name
    raise ValueError(f"world '{world.name}' has several robots ({', '.join(r.name for r in robots)}); name one with --hand")


def run(args) -> int:
    import time

    import graspsim
    from graspsim import control

    world = graspsim.load_world(args.world)
    hand = args.hand or _default_hand(world)
    if hand not in world.robots:
        raise ValueError(f"no robot '{hand}' in world '{world.name}'; robots: {', '.join(world.robots)}")
    obj = args.obj
    if obj is not None and obj not in world.bodies:
        raise ValueError(f"no object '{obj}' in world '{world.name}'; bodies: {', '.join(world.bodies)}")
    effort = {}
    for e in args.effort:
        name, _, val = e.partition("=")
        effort[name] = float(val)
    out: dict = {"world": world.name, "hand": hand}
    t0 = time.perf_counter()
    if args.dynamic or args.lift is not None:
        res = control.dynamic_auto_grasp(world, hand, obj=obj, timeout=args.timeout, effort=effort, gws=args.gws)
        out.update(mode="dynamic", settled=res.settled, simulated_time=res.time, steps=res.steps)
        quality, gc = res.quality, res.grasp_contacts
        obj = res.obj
        if args.lift is not None:
            lift = control.lift_test(res, height=args.lift)
            out["lift"] = {"held": lift.held, "dropped": lift.dropped, "object_rise_m": lift.lifted,
                           "hand_rise_m": lift.hand_rise, "slip_m": lift.slip, "rotation_rad": lift.rotation}
    else:
        res = control.static_auto_grasp(world, hand, obj=obj, gws=args.gws)
        out.update(mode="static", stopped_by=res.stopped_by, broke_away=res.broke_away)
        quality, gc = res.quality, res.grasp_contacts
        obj = obj or next((b.name for b in world.bodies.values() if b.dynamic), None)
    out["wall_time_s"] = time.perf_counter() - t0
    h = world.robots[hand]
    out["dofs"] = {n: float(v) for n, v in zip(h.dof_names, h.dof_values)}
    out["object"] = obj
    out["contacts"] = [] if gc is None else [
        {"link": gc.links[i], "point": gc.points[i].tolist(), "normal": gc.normals[i].tolist(), "mu": float(gc.mu[i])}
        for i in range(len(gc))]
    vol = None
    if quality is not None:
        try:
            vol = float(quality.volume)
        except RuntimeError as e:   # an L-infinity hull too large to enumerate: say so, keep epsilon
            out["volume_note"] = str(e)
    out["quality"] = None if quality is None else {
        "force_closure": bool(quality.force_closure), "epsilon": float(quality.epsilon), "volume": vol,
        "gws": args.gws}
    if args.plot and quality is not None:
        from graspsim.grasp import plot_gws
        plot_gws(quality, args.plot)
    if args.json is not None:
        text = json.dumps(out, indent=2)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w") as f:
                f.write(text + "\n")
        return 0
    _print(out, h)
    return 0


def _print(out: dict, h) -> None:
    w = sys.stdout.write
    w(f"{out['mode']} auto-grasp of '{out['object']}' by '{out['hand']}' in world '{out['world']}' "
      f"({out['wall_time_s'] * 1e3:.0f} ms)\n")
    rev = [h.description.joints[d.joints[0]].kind == "revolute" for d in h.description.dofs]
    w("  DOFs: " + ", ".join(f"{n} {np.degrees(v) if r else v * 1e3:.1f} {'deg' if r else 'mm'}"
                            for (n, v), r in zip(out["dofs"].items(), rev)) + "\n")
    if out["mode"] == "static":
        w("  stopped by: " + ", ".join(f"{k} {v}" for k, v in out["stopped_by"].items()) + "\n")
    else:
        w(f"  settled: {out['settled']} after {out['simulated_time']:.3f} s simulated ({out['steps']} steps)\n")
    w(f"  contacts with the object: {len(out['contacts'])}\n")
    for c in out["contacts"]:
        p, n = c["point"], c["normal"]
        w(f"    {c['link']:20s} at [{p[0]:+.4f} {p[1]:+.4f} {p[2]:+.4f}] m, normal [{n[0]:+.2f} {n[1]:+.2f} {n[2]:+.2f}], mu {c['mu']:.2f}\n")
    q = out["quality"]
    if q is None:
        w("  quality: no contacts with the object\n")
    else:
        vol = "not computed (hull too large)" if q["volume"] is None else f"{q['volume']:.4g}"
        w(f"  force closure: {'yes' if q['force_closure'] else 'no'}, epsilon {q['epsilon']:.4f}, "
          f"volume {vol} ({q['gws']})\n")
    if "lift" in out:
        L = out["lift"]
        w(f"  lift: {'held' if L['held'] else ('dropped' if L['dropped'] else 'slipped')}, object rose "
          f"{L['object_rise_m'] * 1e3:.1f} mm of {L['hand_rise_m'] * 1e3:.1f} mm, slip {L['slip_m'] * 1e3:.2f} mm\n")

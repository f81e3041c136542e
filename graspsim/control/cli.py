"""`graspsim grasp WORLD`: static or dynamic auto-grasp, quality and lift test from the command line.

Every number printed comes from one instant, said in the output: the DOFs, contacts and quality
are those at the end of the grasp (before any lift); the lift line reports the commanded rise, the
palm's and the object's measured rise and the contacts at the end of the hold.  Each DOF's line
says what stopped it (a contact, a joint limit, the breakaway clutch) or how it ended the dynamic
grasp (pressing with its effort limit, at its target, still moving).
"""
from __future__ import annotations

import json
import math
import sys

import numpy as np

from .explain import describe_end, describe_stop, dof_text


def register(sub) -> None:
    g = sub.add_parser("grasp", help="auto-grasp an object and print the DOF values, contacts and quality")
    g.add_argument("world", metavar="WORLD")
    g.add_argument("--hand", help="the robot that grasps (default: the world's only hand, or the one carried by an arm)")
    g.add_argument("--object", dest="obj", help="the object to grasp (default: the only dynamic object)")
    g.add_argument("--dynamic", action="store_true", help="close the hand under dynamics (PD drives, contacts, gravity)")
    g.add_argument("--lift", type=float, metavar="METRES", help="after the grasp, raise the hand this far and hold (implies --dynamic)")
    g.add_argument("--timeout", type=float, default=3.0, help="dynamic grasp: simulated seconds at most (default 3)")
    g.add_argument("--gws", choices=["L1", "Linf"], default="L1", help="grasp wrench space (default L1)")
    g.add_argument("--volume-facets", type=int, default=None, metavar="N",
                   help="largest hull (facets) computed for the volume, default 2000000 (about 170 bytes and "
                        "2-5 us each; Linf hulls of many contacts are far larger); 0: no volume")
    g.add_argument("--effort", action="append", default=[], metavar="DOF=NM",
                   help="dynamic grasp: override a DOF's effort limit, e.g. --effort f1=2.5 (N m or N; repeatable)")
    g.add_argument("--plot", metavar="PNG", help="save the grasp wrench space projections (needs matplotlib)")
    g.add_argument("--json", nargs="?", const="-", metavar="FILE", help="write the result as JSON: to FILE (the summary is printed too) or, without FILE, to stdout instead of the summary")
    g.set_defaults(func=run)


def _default_hand(world) -> str:
    robots = world.description.robots
    mounted = [r.name for r in robots if r.mount is not None]
    if len(mounted) == 1:
        return mounted[0]
    if len(robots) == 1:
        return robots[0].name
    raise ValueError(f"world '{world.name}' has several robots ({', '.join(r.name for r in robots)}); name one with --hand")


def _efforts(args, robot) -> dict:
    """--effort DOF=NM, checked: a DOF of the hand, a finite positive number, dynamic grasps only."""
    effort = {}
    for e in args.effort:
        name, eq, val = e.partition("=")
        if not eq or not name:
            raise ValueError(f"--effort {e!r}: write DOF=VALUE, e.g. --effort f1=2.5")
        if name not in robot.dof_index:
            raise ValueError(f"--effort {e!r}: robot '{robot.name}' has no DOF '{name}'; DOFs: {', '.join(robot.dof_names)}")
        try:
            v = float(val)
        except ValueError:
            raise ValueError(f"--effort {e!r}: '{val}' is not a number (N m, or N for a prismatic DOF)") from None
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"--effort {e!r}: the effort limit must be a finite number > 0")
        effort[name] = v
    if effort and not (args.dynamic or args.lift is not None):
        raise ValueError("--effort limits the drives of the dynamic grasp; the static grasp is kinematic "
                         "(no forces): add --dynamic or --lift")
    return effort


def _check_numbers(args) -> None:
    if args.lift is not None and not (math.isfinite(args.lift) and args.lift > 0):
        raise ValueError(f"--lift {args.lift:g}: the lift must be a finite height > 0 (m)")
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise ValueError(f"--timeout {args.timeout:g}: the timeout must be a finite time > 0 (s)")
    if args.volume_facets is not None and args.volume_facets < 0:
        raise ValueError(f"--volume-facets {args.volume_facets}: must be >= 0 (0: no volume)")


def _volume(quality, limit: int | None, out: dict):
    """The volume within the facet limit, or None with ``out['volume_note']`` saying why not."""
    from ..grasp.quality import MAX_VOLUME_FACETS

    if limit == 0 and quality._volume is None:
        out["volume_note"] = "not computed (--volume-facets 0)"
        return None
    n = MAX_VOLUME_FACETS if limit is None else limit
    try:
        return float(quality.compute_volume(n))
    except RuntimeError:     # an L-infinity hull too large to enumerate: say so, keep epsilon
        k, m = quality.wrenches.shape[:2]
        out["volume_note"] = (f"not computed: the {quality.gws} hull of {k} contacts x {m} cone edges has more than "
                              f"{n} facets (raise --volume-facets, about 170 bytes each)")
        return None


def run(args) -> int:
    import time

    import graspsim
    from graspsim import control

    _check_numbers(args)
    from graspsim.arguments import output_file

    if args.json not in (None, "-"):
        output_file("--json", args.json)       # (before the work: a bad path must not lose the result)
    if args.plot:
        output_file("--plot", args.plot)
    world = graspsim.load_world(args.world)
    hand = args.hand or _default_hand(world)
    if hand not in world.robots:
        raise ValueError(f"no robot '{hand}' in world '{world.name}'; robots: {', '.join(world.robots)}")
    obj = args.obj
    if obj is not None and obj not in world.bodies:
        raise ValueError(f"no object '{obj}' in world '{world.name}'; bodies: {', '.join(world.bodies)}")
    h = world.robots[hand]
    robot = h.description
    effort = _efforts(args, robot)
    out: dict = {"world": world.name, "hand": hand}
    t0 = time.perf_counter()
    lift = None
    if args.dynamic or args.lift is not None:
        res = control.dynamic_auto_grasp(world, hand, obj=obj, timeout=args.timeout, effort=effort, gws=args.gws,
                                         progress=True)
        out.update(mode="dynamic", settled=res.settled, simulated_time=res.time, steps=res.steps,
                   timeout=args.timeout)
        out["ends"] = {n: {"state": e.state, "value": e.value, "target": e.target, "effort": e.effort,
                           "text": describe_end(robot, k, e)} for k, (n, e) in enumerate(res.ends.items())}
        broken = {n: e.breakaway for n, e in res.ends.items() if e.breakaway is not None}
        out["dofs"] = {n: float(v) for n, v in zip(h.dof_names, res.dofs)}
        joints = res.joint_values
    else:
        res = control.static_auto_grasp(world, hand, obj=obj, gws=args.gws)
        out.update(mode="static", stopped_by=res.stopped_by, broke_away=res.broke_away)
        out["stops"] = {n: {"reason": s.reason, "text": describe_stop(robot, k, s)}
                        for k, (n, s) in enumerate(res.stops.items())}
        broken = {n: s.breakaway for n, s in res.stops.items() if s.breakaway is not None}
        out["dofs"] = {n: float(v) for n, v in zip(h.dof_names, res.dofs)}
        joints = res.joint_values
    obj = res.obj if out["mode"] == "dynamic" else (
        obj or next((b.name for b in world.bodies.values() if b.dynamic), None))
    quality, gc = res.quality, res.grasp_contacts
    # a broken-away DOF's value drives its distal joint; its proximal joint is held where it broke
    out["clutch"] = {n: {"at": b.at, "joint": b.joint, "held": b.held, "link": b.link, "touched": list(b.touched),
                         "distal": robot.joints[robot.dofs[robot.dof_index[n]].joints[-1]].name,
                         "distal_value": float(joints[robot.dofs[robot.dof_index[n]].joints[-1]])}
                     for n, b in broken.items()}
    out["object"] = obj
    out["contacts"] = [] if gc is None else [
        {"link": gc.links[i], "point": gc.points[i].tolist(), "normal": gc.normals[i].tolist(), "mu": float(gc.mu[i])}
        for i in range(len(gc))]
    vol = None if quality is None else _volume(quality, args.volume_facets, out)
    out["quality"] = None if quality is None else {
        "force_closure": bool(quality.force_closure), "epsilon": float(quality.epsilon), "volume": vol,
        "gws": args.gws}
    out["grasp_wall_time_s"] = time.perf_counter() - t0
    if args.lift is not None:
        lift = control.lift_test(res, height=args.lift, progress=True)
        out["lift"] = {"held": lift.held, "dropped": lift.dropped, "commanded_m": lift.commanded,
                       "object_rise_m": lift.lifted, "hand_rise_m": lift.hand_rise, "slip_m": lift.slip,
                       "rotation_rad": lift.rotation, "contacts": lift.contacts}
    out["wall_time_s"] = time.perf_counter() - t0
    if args.plot and quality is not None:
        from graspsim.grasp import plot_gws
        from graspsim.grasp.objects import torque_scale

        plot_gws(quality, args.plot, torque_scale=torque_scale(world, obj))
    if args.json == "-":
        print(json.dumps(out, indent=2))
        return 0
    if args.json is not None:
        with open(args.json, "w") as f:
            f.write(json.dumps(out, indent=2) + "\n")
    _print(out, robot)
    return 0


def _print(out: dict, robot) -> None:
    w = sys.stdout.write
    w(f"{out['mode']} auto-grasp of '{out['object']}' by '{out['hand']}' in world '{out['world']}' "
      f"({out['grasp_wall_time_s'] * 1e3:.0f} ms)\n")
    when = "" if out["mode"] == "static" else " at the end of the grasp"
    w(f"  DOFs{when}: " + ", ".join(f"{n} {dof_text(robot, k, v)}" for k, (n, v) in enumerate(out["dofs"].items()))
      + "\n")
    if out["mode"] == "static":
        w("  stopped by:\n")
        for s in out["stops"].values():
            w(f"    {s['text']}\n")
    else:
        if out["settled"]:
            w(f"  settled after {out['simulated_time']:.3f} s simulated ({out['steps']} steps): every closing DOF "
              "still, pressing with its effort limit or at its target\n")
        else:
            moving = [n for n, e in out["ends"].items() if e["state"] == "moving"]
            w(f"  not settled within the {out['timeout']:g} s timeout ({out['steps']} steps; --timeout): "
              f"{', '.join(moving)} still moving\n")
        for e in out["ends"].values():
            w(f"    {e['text']}\n")
    w(f"  contacts with the object{when}: {len(out['contacts'])}\n")
    for c in out["contacts"]:
        p, n = c["point"], c["normal"]
        w(f"    {c['link']:20s} at [{p[0]:+.4f} {p[1]:+.4f} {p[2]:+.4f}] m, normal [{n[0]:+.2f} {n[1]:+.2f} {n[2]:+.2f}], mu {c['mu']:.2f}\n")
    q = out["quality"]
    if q is None:
        w("  quality: none (no contacts with the object)\n")
    else:
        fc = f"  force closure: {'yes' if q['force_closure'] else 'no'}, epsilon {q['epsilon']:.4f}"
        if q["volume"] is None:
            w(f"{fc} ({q['gws']}); volume {out['volume_note']}\n")
        else:
            w(f"{fc}, volume {q['volume']:.4g} ({q['gws']})\n")
    if "lift" in out:
        L = out["lift"]
        verdict = "held" if L["held"] else ("dropped" if L["dropped"] else "slipped")
        lag = L["commanded_m"] - L["hand_rise_m"]
        why = f" (the arm's drives trail their path by {lag * 1e3:.1f} mm)" if abs(lag) > 1e-3 else ""
        w(f"  lift: {verdict}: commanded {L['commanded_m'] * 1e3:.1f} mm; the palm rose {L['hand_rise_m'] * 1e3:.1f} mm"
          f"{why}, the object {L['object_rise_m'] * 1e3:.1f} mm (slip {L['slip_m'] * 1e3:.2f} mm relative to the "
          f"palm); {L['contacts']} contacts with the object after the hold\n")

"""The paper's grasp-formation experiment (Miller & Christensen 2003, section 6) on
worlds/puma_barrett_handset.yaml: a static auto-grasp, then a dynamic auto-grasp with the Puma
holding its pose and the two finger DOFs limited to half the thumb's effort; contacts, forces,
force closure and epsilon at 1.2, 1.9, 2.2 and 2.7 s of simulated time.  Writes
docs/handset_experiment.md with --write-docs.

    python benchmarks/handset_experiment.py [--write-docs]

``run_experiment()`` is also used by tests/test_handset_experiment.py.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import graspsim
from graspsim.control import static_auto_grasp
from graspsim.control.dynamic import Snapshot, _snapshot, start_dynamic_grasp
from graspsim.dynamics import Simulator
from graspsim.grasp import evaluate_grasp

ROOT = Path(__file__).resolve().parent.parent
WORLD = ROOT / "worlds/puma_barrett_handset.yaml"
TIMES = (1.2, 1.9, 2.2, 2.7)
PALM_SIDE = ("barrett/palm", "barrett/f1_knuckle", "barrett/f2_knuckle")   # what the grip's back can meet


def _zmax(world, name: str, poses=None) -> float:
    t = world.table
    P = world.body_poses() if poses is None else poses
    return float(t.shapes[t.index[name]].vertices_in(P[t.index[name]])[:, 2].max())


def _zmin(world, name: str, poses=None) -> float:
    t = world.table
    P = world.body_poses() if poses is None else poses
    return float(t.shapes[t.index[name]].vertices_in(P[t.index[name]])[:, 2].min())


def initial_gap(world) -> float:
    """Height between the handset's back (its highest point) and the nearest hand surface above
    it (the knuckles' lower faces): how far the fingers can lift it into the hand (m)."""
    above = min(_zmin(world, n) for n in ("barrett/f1_knuckle", "barrett/f2_knuckle"))
    return above - _zmax(world, "handset")


@dataclass
class Stage:
    """One instant of the dynamic grasp: the snapshot plus its grasp analysis and the rise."""

    snap: Snapshot
    force_closure: bool
    epsilon: float
    rise: float                       # of the handset's frame since t = 0 (m)
    tilt: float                       # angle between the handset's z axis and the vertical (deg)
    normals: np.ndarray               # (k, 3) into the handset, in the order of snap.links


@dataclass
class Experiment:
    static: object                    # StaticGraspResult
    thumb_effort: float
    finger_effort: float
    efforts: dict                     # DOF -> effort limit the controller used (N m)
    gap: float                        # initial_gap() (m)
    stages: list = field(default_factory=list)
    final: Stage | None = None
    duration: float = 0.0
    wall: float = 0.0
    max_force: float = 0.0            # largest single contact force during the run (N)


def run_experiment(duration: float = 3.0, times=TIMES) -> Experiment:
    w = graspsim.load_world(WORLD)
    gap = initial_gap(w)
    r = static_auto_grasp(w, "barrett", obj="handset")

    w = graspsim.load_world(WORLD)
    sim = Simulator(w)
    robot = w.description.robots[w.description.robot_index["barrett"]].robot
    thumb = robot.dofs[robot.dof_index["f3"]].effort
    ctl = start_dynamic_grasp(sim, "barrett", effort={"f1": thumb / 2, "f2": thumb / 2})
    ri = w.description.robot_index["barrett"]
    efforts = {d.name: float(ctl.effort[sim.ds.robot_slices[ri]][k]) for k, d in enumerate(robot.dofs)}
    io = sim.table.index["handset"]
    z0 = sim.poses()[io][2, 3]
    ex = Experiment(r, thumb, thumb / 2, efforts, gap, duration=duration)

    def stage() -> Stage:
        sim.sync_world()
        q, gc = evaluate_grasp(w, "barrett", "handset", contacts=sim.contacts)
        X = sim.poses()[io]
        tilt = float(np.degrees(np.arccos(np.clip(X[2, 2], -1.0, 1.0))))
        return Stage(_snapshot(sim, ri, io), bool(q is not None and q.force_closure),
                     0.0 if q is None else float(q.epsilon), float(X[2, 3] - z0), tilt, gc.normals)

    pending = list(times)
    t0 = time.perf_counter()
    while sim.time < duration - 1e-9:
        sim.step(ctl)
        f = sim.contact_forces
        if len(f):
            ex.max_force = max(ex.max_force, float(np.linalg.norm(f, axis=1).max()))
        if pending and sim.time >= pending[0] - 1e-9:
            ex.stages.append(stage())
            pending.pop(0)
    ex.wall = time.perf_counter() - t0
    ex.final = stage()
    return ex


def _links(links) -> str:
    return ", ".join(sorted(set(n.replace("barrett/", "") for n in links))) or "none"


def report(ex: Experiment) -> str:
    lines = []
    out = lines.append
    r = ex.static
    gc = r.grasp_contacts
    out("## Static auto-grasp\n")
    out(f"DOFs (deg): {np.degrees(r.dofs).round(1).tolist()}; stopped by {r.stopped_by}; "
        f"broke away: {r.broke_away}\n")
    out("| link | point (m) | normal into the handset | angle from vertical (deg) | mu |\n|---|---|---|---|---|")
    for i in range(len(gc)):
        ang = np.degrees(np.arccos(np.clip(gc.normals[i][2], -1, 1)))
        out(f"| {gc.links[i]} | {np.round(gc.points[i], 4).tolist()} | {np.round(gc.normals[i], 3).tolist()} "
            f"| {ang:.0f} | {gc.mu[i]:g} |")
    out(f"\nforce closure: {r.quality.force_closure}, epsilon {r.quality.epsilon:.4f}\n")

    out(f"## Dynamic auto-grasp (finger efforts {ex.finger_effort:g} N m, thumb {ex.thumb_effort:g} N m; "
        "Puma holding)\n")
    out(f"{ex.duration:g} s simulated in {ex.wall:.1f} s wall.  Gap between the handset's back and the "
        f"knuckles at the start: {1e3 * ex.gap:.1f} mm.\n")
    out("| t (s) | finger DOFs f1, f2, f3 (deg) | hand links touching | handset rise (mm) | tilt (deg) "
        "| force closure | epsilon |")
    out("|---|---|---|---|---|---|---|")
    for s in ex.stages + [ex.final]:
        label = f"{s.snap.time:.2f}" + (" (end)" if s is ex.final else "")
        out(f"| {label} | {np.degrees(s.snap.dofs[-3:]).round(1).tolist()} | {_links(s.snap.links)} | "
            f"{1e3 * s.rise:.1f} | {s.tilt:.1f} | {s.force_closure} | {s.epsilon:.4f} |")
    out("")
    for s in ex.stages:
        out(f"**t = {s.snap.time:.2f} s**: rise {1e3 * s.rise:.1f} mm, force closure {s.force_closure}, "
            f"epsilon {s.epsilon:.4f}\n")
        if not len(s.snap.links):
            out("no contacts with the hand\n")
            continue
        out("| link | contact points | their centre (m) | summed force on the handset (N) | largest single force (N) |")
        out("|---|---|---|---|---|")
        names = np.array(s.snap.links)
        for n in sorted(set(s.snap.links)):
            k = names == n
            fk = s.snap.forces[k]
            out(f"| {n} | {int(k.sum())} | {np.round(s.snap.points[k].mean(axis=0), 4).tolist()} | "
                f"{np.round(fk.sum(axis=0), 2).tolist()} | {np.linalg.norm(fk, axis=1).max():.1f} |")
        f = np.sum(s.snap.forces, axis=0)
        out(f"\ntotal force of the hand on the handset: {np.round(f, 2).tolist()} N\n")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write-docs", action="store_true")
    ap.add_argument("--duration", type=float, default=3.0)
    a = ap.parse_args()
    ex = run_experiment(a.duration)
    text = report(ex)
    print(text)
    if a.write_docs:
        doc = ROOT / "docs/handset_experiment.md"
        doc.write_text(HEADER + text + FOOTER)
        print(f"wrote {doc}")


HEADER = """# The handset experiment (Miller & Christensen 2003, section 6)

Generated by `python benchmarks/handset_experiment.py --write-docs` (tests:
`tests/test_handset_experiment.py`).

In the paper, a static auto-grasp of the handset touches it only from below (no force closure);
with dynamics the fingers pull the handset up into the hand and the final grasp has force closure.
We reproduce that sequence.

**The set-up** (`worlds/puma_barrett_handset.yaml`, `objects/make_meshes.py` `handset()`).  The
handset is a classic desk-phone handset lying on its ear and mouth pieces: a 150 mm grip, 40 mm wide
and 25 mm thick with a flat back and 10 mm radius lower edges, whose underside is 67 mm above the
bench, on two flared legs ending in round caps (222 mm long, 92 mm high, 0.25 kg, plastic).  The legs
leave the grip's middle open underneath.  The Puma holds the palm face down, 147 mm above the bench,
over the middle of the grip; the fingers are preshaped to 12 deg, so their tips (145 mm below the
palm face) clear the bench and straddle the grip, below its underside.

Two properties of our Barrett model decide the geometry.  (1) A link's contact normal on a convex
grip is perpendicular to the link, so a contact can only push the handset *up* (normal within the
friction cone's reach of vertical) if the link is already well tilted when it touches; fingertips
meeting the grip while still near-vertical (a low handset, like the old 35 mm one) push sideways, and
with rubber tips (mu = 1) that is force closure at once.  (2) The f1/f2 knuckles (spread links) stand
30 mm proud of the palm face, so that is the "palm" a handset lifted into the hand meets.  With the
grip this high, the proximal links meet its rounded lower edges at about 30 deg of closure.

**Static auto-grasp.**  Each proximal link touches a lower edge of the grip (normal 70 deg from
vertical, pointing up and in), the Barrett clutch breaks away and the distal links curl fully under
the grip without touching it.  The handset is touched only from below: metal on plastic has
mu = 0.2 (11 deg), so every friction cone lies above the horizontal and no combination of contact
forces can push the handset down -- not force closure, epsilon 0.

**Dynamic auto-grasp** (the Puma's PD drives hold its pose; f1 and f2 limited to 2.5 N m, half the
thumb's 5 N m).  The fingers close from 12 deg at their default speed; at about 1.04 s the proximal
links touch the grip's lower edges and, still coupled, lift the handset off its caps (t = 1.2 s: 14 mm
up, contacts only from below, not force closure).  At about 1.34 s the grip's back reaches the
knuckles, which stop it; the clutches then break away (the proximal joints hold, the distals keep
closing under the grip without reaching it).  The grip's back stops 23.2 mm up: the 25.0 mm gap of
the nominal palm pose, less the ~1.5 mm the Puma's PD-held arm sags under the hand (the knuckles'
contacts are at z = 0.5155 m, not 0.517 m).  The knuckles only cover the f1/f2 half of the grip, so
the thumb side can roll up about the knuckles' edge.  How far is settled in the impact on the
knuckles and depends on the time step: 2.0 deg in this run (h = 2.5 ms), 4.6 and 0.3 deg with
h = 1.25 and 0.625 ms; the rise is 23.1-23.3 mm in all three.  From then on the handset is held
between the proximal links (from below, on both sides) and the knuckles (from above): force closure,
with the same contacts at 1.9, 2.2 and 2.7 s.

**Forces after the break.**  Once the clutches break away the handset is wedged between the held
proximal joints and the knuckles: a closed loop, so the contact forces are internal forces set by
how stiff the hold is.  The hold is the Barrett's non-backdrivable gear, modelled as a stiff
implicit spring-damper on the proximal joint (100 times the DOF's kp and kd: 1e4 N m/rad, so a
finger's 2.5 N m turns it 0.25 mrad; `LOCK_GAIN` in `graspsim/dynamics/simulator.py`).  An earlier
version held the joint rigidly; then the contacts' error correction (towards half the contact
threshold) could not be met inside the rigid loop and the contact compliance alone set the force:
up to ~28 kN for a 10 um mismatch.  With the gear's stiffness the largest contact force is 43 N, in
the impact on the knuckles at t = 1.35 s (42-70 N with h = 0.625-2.5 ms), and at most 24 N in the
hold after 2 s (2.5-5 N m drives on 20-40 mm levers), while the net force on the handset is its
weight.  (Until the joint projection took the drives' and holds' stiffness into account, it could
turn the held joints without resistance, and with h = 2.5 ms the loop kept 130 N.)  The force-closure verdicts and epsilons
do not depend on these forces.

"""
FOOTER = ""

if __name__ == "__main__":
    main()

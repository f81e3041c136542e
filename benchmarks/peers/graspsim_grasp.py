#!/usr/bin/env python3
"""graspsim binding of the peers' benchmark scenes (PyBullet / MuJoCo, ``scene_spec.py``).

  python benchmarks/peers/graspsim_grasp.py --scene grasp --h 0.0025
  python benchmarks/peers/graspsim_grasp.py --scene drop --n-boxes 20 --cpu-limit 300
  python benchmarks/peers/graspsim_grasp.py --scene grasp --print-yaml    # the generated models
  python benchmarks/peers/graspsim_grasp.py --scene drop --friction-directions 4   # MuJoCo's cone

Every number comes from the peers' ``scene_spec.py`` (not part of this repository), imported from
``--peers-dir`` (default ``$GRASPSIM_PEERS_DIR`` or ``../shared/peers`` next to the repository).  Prints one line
``RESULT_JSON {...}`` with the peers' keys (``scene_spec.grasp_metrics`` / ``scene_spec.speed``)
plus a few graspsim-only ones.  Only graspsim's public API is used: ``load_world``,
``Simulator`` (``step``, ``time``, ``dt``, ``info``, ``contacts``, ``contact_forces``,
``body_pose``, ``body_velocity``, ``dof_values``, ``dof_state``, ``table``) and
``DriveCommand.torques``.

The hand is a robot whose shapeless base link is fixed at the palm's start pose; the palm hangs
from it on the prismatic ``lift`` joint, the fingers on revolute joints, one DOF per joint in
``scene_spec.HAND_JOINTS`` order with kp = kd = 0 (graspsim adds no PD of its own): the shared
``scene_spec.pd_forces`` is evaluated in Python every step and applied as joint torques, as the
peers' ``--control torque`` rows do.

Time grid: graspsim shortens a step when it localises an impact.  ``advance`` then takes
sub-steps to the end of the grid interval, so that snapshots and contact counts happen at
t = k h as in the peers.  ``n_steps`` and steps/s count grid steps (sim time / h, as the peers);
``impact_substeps`` counts the extra ``step()`` calls.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time

import numpy as np
import yaml

#: the peers' benchmark folder: ../shared/peers next to the repository
_DEFAULT_PEERS = os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "peers"))


LOADED_EPS = 1e-6     # N: a contact point "carries load" above this normal force (as the peers)
S = None              # the peers' scene_spec module, imported in main()
#: edges of each contact's friction pyramid (``Simulator(friction_directions=...)``; ``--friction-directions``):
#: graspsim's default 8; MuJoCo's default cone (pyramidal, condim 3) has 4
FRICTION_DIRECTIONS = 8


def simulator(graspsim, path, h, **kw):
    """The scene's Simulator at step ``h`` with this run's friction pyramid."""
    return graspsim.Simulator(graspsim.load_world(path), dt=h, friction_directions=FRICTION_DIRECTIONS, **kw)


# --------------------------------------------------------------------------- models (YAML)
def inertia(diag):
    return [float(x) for x in diag] + [0.0, 0.0, 0.0]


def box(half):
    return {"box": [2.0 * x for x in half]}


def hand_model():
    """base (static, no shape) -lift-> palm -> three fingers of two capsule links each."""
    links = [{"name": "base", "mass": 1.0, "com": [0.0, 0.0, 0.0], "inertia": [1.0, 1.0, 1.0, 0.0, 0.0, 0.0], "material": "hand"},
             {"name": "palm", "shape": box(S.PALM_HALF), "mass": S.PALM_MASS, "com": [0.0, 0.0, 0.0],
              "inertia": inertia(S.PALM_INERTIA), "material": "hand"}]
    joints = [{"name": "lift", "type": "prismatic", "parent": "base", "child": "palm", "axis": [0.0, 0.0, 1.0]}]
    for finger, pos, axis in S.FINGERS:
        for j, (seg, parent, origin) in enumerate((("prox", "palm", pos),
                                                    ("dist", f"{finger}_prox", (0.0, 0.0, -S.LINK_L))), 1):
            links.append({"name": f"{finger}_{seg}", "mass": S.LINK_MASS,
                          # capsule "length" = between the cap centres: the segment from the joint to -L z
                          "shape": {"capsule": {"radius": S.LINK_R, "length": S.LINK_L},
                                    "origin": {"xyz": [0.0, 0.0, -S.LINK_L / 2]}},
                          "com": list(S.LINK_COM), "inertia": inertia(S.LINK_INERTIA), "material": "hand"})
            joints.append({"name": f"{finger}_j{j}", "type": "revolute", "parent": parent,
                           "child": f"{finger}_{seg}", "origin": {"xyz": list(origin)}, "axis": list(axis)})
    names = [ln["name"] for ln in links]
    return {"robot": "peer_hand", "units": {"length": "m", "angle": "rad"}, "base": "base", "palm": "palm",
            "links": links, "joints": joints,
            # pure torque control: kp = kd = 0; effort far above the PD's clip so graspsim never clips
            "dofs": [{"name": j, "joints": [j], "kp": 0.0, "kd": 0.0, "effort": 1000.0} for j in S.HAND_JOINTS],
            # hand links never collide with each other (as in both peers)
            "no_collide": [[a, b] for i, a in enumerate(names) for b in names[i + 1:]]}


def friction(a, b, mu):
    return {"pair": [a, b], "static": mu, "kinetic": mu}     # one coefficient: no static/kinetic split


def world_header(name, h, pairs):
    return {"world": name, "units": {"length": "m", "angle": "rad"}, "gravity": list(S.GRAVITY), "dt": h,
            "materials": {"friction": pairs}}      # restitution: none (graspsim's default is 0)


def grasp_world(h):
    w = world_header("peer_grasp", h, [friction("cube", "table", S.MU_OBJ_TABLE),
                                       friction("hand", "cube", S.MU_HAND_OBJ),
                                       friction("hand", "table", S.MU_HAND_TABLE)])
    q0 = [0.0] + list(S.Q_OPEN) * 3
    w["robots"] = [{"name": "hand", "file": "hand.yaml", "base": "fixed", "pose": {"xyz": list(S.PALM_POS0)},
                    "dofs": dict(zip(S.HAND_JOINTS, q0))}]
    w["objects"] = [{"name": "cube", "shape": box([S.OBJ_HALF] * 3), "mass": S.OBJ_MASS, "com": [0.0, 0.0, 0.0],
                     "inertia": inertia([S.OBJ_INERTIA] * 3), "material": "cube", "pose": {"xyz": list(S.OBJ_POS0)}}]
    w["obstacles"] = [{"name": "table", "shape": box(S.TABLE_HALF), "material": "table",
                       "pose": {"xyz": list(S.TABLE_POS)}}]
    return w


def drop_world(h, n):
    w = world_header(f"peer_drop{n}", h, [friction("box", "box", S.MU_OBJ_TABLE),
                                          friction("box", "table", S.MU_OBJ_TABLE)])
    w["objects"] = [{"name": f"box{k}", "shape": box([S.OBJ_HALF] * 3), "mass": S.OBJ_MASS, "com": [0.0, 0.0, 0.0],
                     "inertia": inertia([S.OBJ_INERTIA] * 3), "material": "box",
                     "pose": {"xyz": list(pos), "quat": list(q)}}          # quat (w, x, y, z), as the spec
                    for k, (pos, q) in enumerate(S.drop_poses(n))]
    w["obstacles"] = [{"name": "table", "shape": box(S.DROP_TABLE_HALF), "material": "table",
                       "pose": {"xyz": list(S.TABLE_POS)}}]
    return w


def dump(doc):
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=110)


def write_world(folder, scene, h, n_boxes):
    files = {"hand.yaml": hand_model(), "world.yaml": grasp_world(h)} if scene == "grasp" else \
        {"world.yaml": drop_world(h, n_boxes)}
    for name, doc in files.items():
        with open(os.path.join(folder, name), "w") as fh:
            fh.write(dump(doc))
    return os.path.join(folder, "world.yaml")


# --------------------------------------------------------------------------- stepping
class TorquePD:
    """scene_spec.pd_forces(t, q, qdot) applied as pure joint torques; ``t`` = the step's start time."""

    def __init__(self):
        from graspsim.dynamics import DriveCommand
        self.torques = DriveCommand.torques
        self.t = 0.0
        self.instrument = False
        self.spent = 0.0        # perf_counter seconds spent here (when instrumented)

    def command(self, sim):
        c0 = time.perf_counter() if self.instrument else 0.0
        q, qd = sim.dof_state()         # (both in one call, as PyBullet's getJointStates)
        cmd = self.torques(S.pd_forces(self.t, q.tolist(), qd.tolist()))
        if self.instrument:
            self.spent += time.perf_counter() - c0
        return cmd


class NoProgress(RuntimeError):
    """graspsim keeps cutting its steps to (almost) nothing: the grid interval is not reached."""


def advance(sim, ctl, h, k, max_calls=200):
    """Step from t = k h to (k + 1) h: one step, plus sub-steps if graspsim cut it at an impact.
    Returns the number of step() calls; raises NoProgress after ``max_calls`` (normally <= ~12)."""
    t_end, calls = (k + 1) * h, 0
    while t_end - sim.time > 1e-12:
        if calls == max_calls:
            raise NoProgress(f"{calls} step() calls did not get from t = {k * h:.4f} s to {t_end:.4f} s: at "
                             f"t = {sim.time:.9f} s every step is cut at the impact fraction "
                             f"{sim.info.fraction:.3g} to h = {sim.info.h:.3g} s")
        rem = t_end - sim.time
        sim.dt = h if rem > h - 1e-12 else rem
        if ctl is not None:
            ctl.t = k * h if calls == 0 else sim.time
        sim.step(ctl)
        calls += 1
    return calls


def count_contacts(sim, group=(), other=-1):
    """(all points, loaded points, points between a body in ``group`` and ``other``, loaded ones)."""
    c = sim.contacts
    if c is None or len(c) == 0:
        return 0, 0, 0, 0
    fn = np.einsum("ki,ki->k", sim.contact_forces, c.normal)    # force on body_b along n (a -> b)
    loaded = fn > LOADED_EPS
    pair = (np.isin(c.body_a, group) & (c.body_b == other)) | (np.isin(c.body_b, group) & (c.body_a == other))
    return len(c), int(loaded.sum()), int(pair.sum()), int((pair & loaded).sum())


# --------------------------------------------------------------------------- grasp scene
STAGES = ("collision", "contacts", "assembly", "solve", "integration")


def run_grasp(graspsim, path, h):
    """The instrumented episode: behaviour metrics (as the peers) and the per-stage time split."""
    from scipy.spatial.transform import Rotation
    sim = simulator(graspsim, path, h, profile=True)
    assert sim.dof_names == [f"hand/{j}" for j in S.HAND_JOINTS], sim.dof_names
    obj = sim.table.index["cube"]
    hand = [i for i, name in enumerate(sim.table.names) if name.startswith("hand/")]
    ctl = TorquePD()
    ctl.instrument = True
    n_close, n_lift, n_total = round(S.T_CLOSE / h), round(S.T_LIFT / h), round(S.T_TOTAL / h)
    free_steps = round(0.4 / h)

    def snapshot():
        X = sim.body_pose("cube")
        x, y, z, w = Rotation.from_matrix(X[:3, :3]).as_quat()
        return X[:3, 3].tolist(), (w, x, y, z), sim.body_pose("hand/palm")[:3, 3].tolist()

    op0 = snapshot()[0]
    snap, hold, hold_n, max_free_err, calls, t_loop = {}, [0, 0, 0, 0], 0, 0.0, 0, 0.0
    stage = dict.fromkeys(STAGES, 0.0)
    for k in range(n_total):
        t0 = time.perf_counter()
        calls += advance(sim, ctl, h, k)
        t_loop += time.perf_counter() - t0
        # ---- instrumentation (not in t_loop)
        for s in STAGES:
            stage[s] += sim.info.timing.get(s, 0.0)       # (the last sub-step's only, after an impact)
        done = k + 1
        if done <= free_steps:                            # fingers still in free motion
            ref, q = S.hand_targets(done * h), sim.dof_values()
            max_free_err = max([max_free_err] + [abs(q[j] - ref[j]) for j in range(1, 7)])
        if done in (n_close, n_close + n_lift, n_total):
            snap[done] = snapshot()
        if done > n_close + n_lift:
            hold = [a + b for a, b in zip(hold, count_contacts(sim, hand, obj))]
            hold_n += 1
    res = S.grasp_metrics(h, n_total, ctl.spent, t_loop - ctl.spent, op0, snap, n_close, n_lift, n_total,
                          *hold, hold_n, count_contacts(sim, hand, obj), max_free_err,
                          sim.dof_values().tolist(), sim.body_pose("cube")[:3, 3].tolist())
    res["impact_substeps"] = calls - n_total
    # (the simulator's stage timer: process CPU time)
    res["stage_us_per_step"] = {s: 1e6 * v / n_total for s, v in stage.items()}
    res["stage_us_per_step"]["controller"] = 1e6 * ctl.spent / n_total     # part of "assembly"
    c = sim.contacts
    res["end_normal_forces"] = {} if c is None else {
        sim.table.names[b if a == obj else a]: round(float(f), 3)
        for a, b, f in zip(c.body_a, c.body_b, np.einsum("ki,ki->k", sim.contact_forces, c.normal))}
    return res


def warm_loop(graspsim, path, h, steps=20):
    """Untimed: a few steps with ``compiled_loop=True``, which loads the compiled loop (numba's cache:
    ~0.1 s; or compiles it on an empty cache) as the kernels are loaded before timing.  step() takes
    the common path's steps in it once it is loaded (the timed run's default Simulator)."""
    sim = simulator(graspsim, path, h, compiled_loop=True)
    ctl = TorquePD()
    for k in range(steps):
        advance(sim, ctl, h, k)


def run_grasp_timed(graspsim, path, h):
    """The same episode without instrumentation: wall and CPU time of the control + step loop."""
    sim = simulator(graspsim, path, h)
    ctl = TorquePD()
    w0, c0 = time.perf_counter(), time.process_time()
    for k in range(round(S.T_TOTAL / h)):
        advance(sim, ctl, h, k)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return wall, cpu, sim.body_pose("cube")[:3, 3].tolist()


# --------------------------------------------------------------------------- drop scene
def run_drop(graspsim, path, h, n, cpu_limit=None, warmup_steps=60):
    """Drop n boxes for DROP_T seconds.  Stops early, and reports the part simulated (``completed``
    false, end columns at the time reached), after ``cpu_limit`` CPU seconds or when graspsim makes
    no progress (``stuck``: the message).  ``n_steps`` and the speed cover the completed grid steps;
    the CPU spent in the interval that was never completed is ``stuck_cpu``."""
    warm = simulator(graspsim, path, h)     # untimed: load the numba kernels
    for k in range(warmup_steps):
        advance(warm, None, h, k)
    sim = simulator(graspsim, path, h)
    n_total, calls, done, trace, stuck = round(S.DROP_T / h), 0, 0, [], None
    w0, c0 = time.perf_counter(), time.process_time()
    wall = cpu = 0.0
    for k in range(n_total):
        try:
            calls += advance(sim, None, h, k)
        except NoProgress as e:
            stuck = str(e)                                # report the part simulated
            break
        done = k + 1
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        if done % round(0.25 / h) == 0:                   # progress: (sim t, CPU s, contact points)
            trace.append([round(done * h, 4), round(cpu, 2), 0 if sim.contacts is None else len(sim.contacts)])
        if cpu_limit is not None and cpu > cpu_limit:
            break
    stuck_cpu = time.process_time() - c0 - cpu           # spent in the interval never completed
    raw, loaded, _, _ = count_contacts(sim)
    names = [f"box{k}" for k in range(n)]
    return dict(n_steps=done, sim_time=done * h, **S.speed(done, h, wall, cpu),
                end_contacts_raw=raw, end_contacts_loaded=loaded,
                end_max_speed=max(float(np.linalg.norm(sim.body_velocity(b)[:3])) for b in names),
                end_max_z=max(float(sim.body_pose(b)[2, 3]) for b in names),
                impact_substeps=calls - done, completed=done == n_total, cpu_limit=cpu_limit, stuck=stuck,
                stuck_cpu=stuck_cpu if stuck else 0.0, trace=trace)


# --------------------------------------------------------------------------- main
def main():
    global S, FRICTION_DIRECTIONS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scene", choices=("grasp", "drop"), default="grasp")
    ap.add_argument("--h", type=float, default=0.0025)
    ap.add_argument("--control", choices=("torque",), default="torque",
                    help="torque: scene_spec.pd_forces in Python every step (the only mode)")
    ap.add_argument("--n-boxes", type=int, default=20)
    ap.add_argument("--cpu-limit", type=float, help="drop: stop after this many CPU seconds")
    ap.add_argument("--peers-dir", default=os.environ.get("GRASPSIM_PEERS_DIR", _DEFAULT_PEERS))
    ap.add_argument("--print-yaml", action="store_true", help="print the generated models and exit")
    ap.add_argument("--friction-directions", type=int, default=FRICTION_DIRECTIONS,
                    help="edges of each contact's friction pyramid (default 8; 4 is MuJoCo's default cone)")
    a = ap.parse_args()
    FRICTION_DIRECTIONS = a.friction_directions
    sys.path.insert(0, os.path.abspath(a.peers_dir))
    import scene_spec
    S = scene_spec
    if a.print_yaml:
        if a.scene == "grasp":
            print("# hand.yaml\n" + dump(hand_model()) + "\n# world.yaml\n" + dump(grasp_world(a.h)))
        else:
            print(dump(drop_world(a.h, a.n_boxes)))
        return

    t0 = time.perf_counter()
    import graspsim
    import graspsim.dynamics  # noqa: F401  (imported lazily otherwise)
    res = dict(sim="graspsim", version=graspsim.__version__, scene=a.scene, h=a.h,
               control=a.control if a.scene == "grasp" else None, t_import=time.perf_counter() - t0,
               variant="default" if FRICTION_DIRECTIONS == 8 else f"friction_directions={FRICTION_DIRECTIONS}")
    with tempfile.TemporaryDirectory(prefix="graspsim_peers_") as tmp:
        path = write_world(tmp, a.scene, a.h, a.n_boxes)
        if a.scene == "grasp":
            run_grasp(graspsim, path, a.h)                    # loads the compiled kernels (untimed)
            warm_loop(graspsim, path, a.h)                    # and the loop step() takes its steps in
            res.update(run_grasp(graspsim, path, a.h))        # behaviour and the per-stage split
            wall, cpu, obj_end = run_grasp_timed(graspsim, path, a.h)
            res.update(S.speed(res["n_steps"], a.h, wall, cpu))
            res["repeat_identical"] = obj_end == res["final_obj_pos"]
        else:
            res["n_boxes"] = a.n_boxes
            res.update(run_drop(graspsim, path, a.h, a.n_boxes, a.cpu_limit))
    print("RESULT_JSON " + json.dumps(res))


if __name__ == "__main__":
    main()

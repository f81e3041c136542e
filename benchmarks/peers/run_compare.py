#!/usr/bin/env python3
"""graspsim, PyBullet and MuJoCo on the peers' grasp and drop scenes, in one go.

  python -m venv /tmp/venv-peers && /tmp/venv-peers/bin/pip install -r ../shared/peers/requirements-peers.txt
  python benchmarks/peers/run_compare.py --reps 3

Every run is a fresh process pinned to one core (``taskset -c CORE``); within a repetition the
rows run one after the other, so background load spreads over all of them; tables give medians.
graspsim rows run ``graspsim_grasp.py`` with this interpreter; the peer rows run the peers' own
``pybullet_grasp.py`` / ``mujoco_grasp.py`` (in ``--peers-dir``) with ``--peers-python``.  The
graspsim drop row stops after ``--cpu-limit`` CPU seconds and then reports the part it simulated.

Writes ``results.json`` (every run, medians, machine, load, graspsim source hash before and after)
and ``results.md`` next to this file.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
_DEFAULT_PEERS = os.path.normpath(os.path.join(ROOT, "..", "shared", "peers"))
H = 0.0025
N_BOXES = 20

# (scene, label, simulator, extra arguments); every grasp row: torque control with scene_spec.pd_forces
ROWS = [
    ("grasp", "graspsim", "graspsim", []),
    ("grasp", "pybullet", "pybullet", []),
    ("grasp", "mujoco", "mujoco", []),
    ("grasp", "mujoco noslip", "mujoco", ["--option", "noslip_iterations=10"]),
    ("drop", "graspsim", "graspsim", []),
    # the friction pyramid of MuJoCo's default cone (pyramidal, condim 3: 4 edges; graspsim's default 8)
    ("drop", "graspsim u=4", "graspsim", ["--friction-directions", "4"]),
    ("drop", "pybullet", "pybullet", []),
    ("drop", "mujoco", "mujoco", []),
]


def command(scene, sim, extra, a):
    if sim == "graspsim":
        cmd = [sys.executable, os.path.join(HERE, "graspsim_grasp.py"), "--peers-dir", a.peers_dir]
        if scene == "drop":
            cmd += ["--cpu-limit", repr(a.cpu_limit)]
    else:
        cmd = [a.peers_python, os.path.join(a.peers_dir, f"{sim}_grasp.py")]
    cmd += ["--scene", scene, "--h", repr(H)]
    cmd += ["--control", "torque"] if scene == "grasp" else ["--n-boxes", str(N_BOXES)]
    return cmd + extra


def run(cmd, core):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               NUMBA_NUM_THREADS="1", PYTHONHASHSEED="0")
    t0 = time.perf_counter()
    out = subprocess.run(["taskset", "-c", str(core)] + cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT_JSON ")]
    if out.returncode != 0 or not lines:
        return dict(error=f"exit {out.returncode}: {out.stderr[-1500:]}", process_wall=wall)
    res = json.loads(lines[-1][len("RESULT_JSON "):])
    res["process_wall"] = wall
    return res


def median(runs):
    """Median of every numeric field over the successful runs; other fields from the first run."""
    runs = [r for r in runs if "error" not in r]
    med = {}
    for k in (runs[0] if runs else {}):
        vals = [r.get(k) for r in runs]
        if all(isinstance(x, bool) for x in vals):
            med[k] = vals[0] if len(set(vals)) == 1 else f"{sum(vals)}/{len(vals)}"
        elif all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vals):
            med[k] = statistics.median(vals)
            med[k + "_range"] = [min(vals), max(vals)]
        elif all(isinstance(x, dict) and all(isinstance(y, (int, float)) for y in x.values()) for x in vals):
            med[k] = {kk: statistics.median(x[kk] for x in vals) for kk in vals[0]}
        else:
            med[k] = vals[0]
    med["n_runs"] = len(runs)
    return med


def graspsim_source():
    """sha256 (12 hex) of graspsim/**/*.py as they are on disk (uncommitted edits included), git HEAD."""
    hsh = hashlib.sha256()
    for dp, dn, fn in sorted(os.walk(os.path.join(ROOT, "graspsim"))):
        dn.sort()
        for f in sorted(x for x in fn if x.endswith(".py")):
            hsh.update(f.encode())
            with open(os.path.join(dp, f), "rb") as fh:
                hsh.update(fh.read())
    git = lambda *c: subprocess.run(["git", "-C", ROOT, *c], capture_output=True, text=True).stdout  # noqa: E731
    dirty = git("status", "--porcelain", "--", "graspsim").splitlines()
    return dict(sha256=hsh.hexdigest()[:12], head=git("rev-parse", "--short", "HEAD").strip(),
                uncommitted=[ln[3:] for ln in dirty])


def loadavg():
    with open("/proc/loadavg") as fh:
        return [float(x) for x in fh.read().split()[:3]]


# --------------------------------------------------------------------------- tables
def us(x):
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def yes_no(x):
    return {True: "yes", False: "no"}.get(x, str(x))


def tables(out):
    m, cfg = out["meta"], out["configs"]
    med = {(c["scene"], c["label"]): c["median"] for c in cfg}
    src = m["graspsim_source_before"]
    shas = {r["graspsim_sha256"] for c in cfg for r in c["runs"] if "graspsim_sha256" in r}
    changed = len(shas | {m["graspsim_source_after"]["sha256"], src["sha256"]}) > 1
    L = [f"Measured {m['started']} .. {m['finished']} on {m['cpu_model']} ({m['nproc']} cores, shared with other "
         f"jobs), Python {m['python']}; every run a fresh process pinned to core {m['core']}; rows interleaved; "
         f"medians of {m['reps']} runs per row.  Load average (1/5/15 min) at the start "
         f"{'/'.join(map(str, m['loadavg_start']))}, after each repetition "
         + ", ".join("/".join(map(str, x)) for x in m["loadavg_per_rep"]) + ".",
         "",
         f"graspsim: HEAD {src['head']}, sha256 of graspsim/**/*.py {src['sha256']} "
         f"({'uncommitted changes in ' + ', '.join(src['uncommitted']) if src['uncommitted'] else 'clean'})"
         + (f"; **the source changed during the run** (graspsim runs started with {', '.join(sorted(shas))}; "
            f"after the run: {m['graspsim_source_after']['sha256']}; per run in results.json)"
            if changed else "; unchanged during the run") + ".  PyBullet "
         f"{med.get(('grasp', 'pybullet'), {}).get('version', '?')}, MuJoCo "
         f"{med.get(('grasp', 'mujoco'), {}).get('version', '?')}.", ""]

    def scene_rows(scene, ncols):
        """(config, median result) of the scene's configurations that ran; a failed one gets a
        row of ``ncols`` cells in L saying why."""
        for c in cfg:
            r = c["median"]
            if c["scene"] != scene:
                continue
            if not r["n_runs"]:
                L.append(f"| {c['label']} | failed: {c['runs'][0]['error'][-120:]!r} |" + " |" * (ncols - 2))
                continue
            yield c, r

    def speed_cells(r, scene):
        pb, mj = med.get((scene, "pybullet"), {}), med.get((scene, "mujoco"), {})
        cpu_us = 1e6 / r["steps_per_s_cpu"]
        lo, hi = (1e6 / x for x in reversed(r["steps_per_s_cpu_range"]))
        x_pb = r["steps_per_s_cpu"] and pb.get("steps_per_s_cpu", 0) / r["steps_per_s_cpu"]
        x_mj = r["steps_per_s_cpu"] and mj.get("steps_per_s_cpu", 0) / r["steps_per_s_cpu"]
        return (f"{us(cpu_us)} [{us(lo)}-{us(hi)}] | {us(1e6 / r['steps_per_s'])} | {r['rtf_cpu']:.3g}x | "
                f"{r['rtf']:.3g}x | {x_pb:.3g} | {x_mj:.3g}")

    L += ["### Grasp scene: close 1 s, lift 10 cm in 1 s, hold 1 s; h = 2.5 ms; shared PD in Python every step",
          "",
          "| simulator | CPU µs/step, median [min-max] | wall µs/step | RTF CPU | RTF wall | CPU time / PyBullet's "
          "| CPU time / MuJoCo's | lifted | obj dz mm | slip t=1..3 s mm (z) | slip hold mm | obj rot deg "
          "| hand-obj contacts in hold (loaded) | all contacts in hold | runs |",
          "|" + "---|" * 15]
    for c, r in scene_rows("grasp", 15):
        L.append(f"| {c['label']} | {speed_cells(r, 'grasp')} | {yes_no(r['lifted'])} | {1e3 * r['obj_dz']:.1f} | "
                 f"{1e3 * r['slip_lift_hold']:.3f} ({1e3 * r['slip_z_lift_hold']:+.3f}) | "
                 f"{1e3 * r['slip_hold']:.3f} | {r['obj_rot_lift_hold_deg']:.2f} | "
                 f"{r['hold_hand_obj_contacts']:.1f} ({r['hold_hand_obj_contacts_loaded']:.1f}) | "
                 f"{r['hold_contacts_raw']:.1f} | {r['n_runs']} |")
    g = med.get(("grasp", "graspsim"), {})
    if g.get("n_runs"):
        st = g["stage_us_per_step"]
        L += ["", "graspsim grasp, where a step's time goes (instrumented run, `Simulator(profile=True)`, µs per "
              "step): " + ", ".join(f"{k} {v:.0f}" for k, v in st.items() if k != "controller")
              + f" (assembly includes the controller: {st['controller']:.0f} µs for `dof_state()`, "
              f"`pd_forces`, `DriveCommand.torques`).  Impact sub-steps per episode: "
              f"{g['impact_substeps']:.0f}; timed run identical to the instrumented one: {g['repeat_identical']}; "
              "normal forces at the end (N): " + ", ".join(f"{k.split('/')[-1]} {v:.2f}"
                                                           for k, v in g["end_normal_forces"].items()) + "."]
    L += ["", f"### Drop scene: {N_BOXES} boxes dropped on the table, 2 s, h = 2.5 ms", "",
          "| simulator | CPU µs/step, median [min-max] | wall µs/step | RTF CPU | RTF wall | CPU time / PyBullet's "
          "| CPU time / MuJoCo's | simulated s | contacts at end (loaded) | max box speed at end m/s | top box z m "
          "| runs |", "|" + "---|" * 12]
    for c, r in scene_rows("drop", 12):
        simulated = f"{r['sim_time']:.3g}"
        if r.get("completed", True) is not True:
            simulated += " (**incomplete**, see below)"
        L.append(f"| {c['label']} | {speed_cells(r, 'drop')} | {simulated} | {r['end_contacts_raw']:.0f} "
                 f"({r['end_contacts_loaded']:.0f}) | {r['end_max_speed']:.1e} | {r['end_max_z']:.3f} | "
                 f"{r['n_runs']} |")
    for c in cfg:
        if c["scene"] == "drop" and c["label"] == "graspsim":
            for i, r in enumerate(c["runs"]):
                if "trace" not in r:
                    continue
                end = (f"**stuck** after {r['sim_time']:.4g} s: {r['stuck']} ({r['stuck_cpu']:.0f} s CPU spent "
                       "in that interval, not in the speed columns)" if r["stuck"] else
                       f"stopped at the {r['cpu_limit']:.0f} s CPU limit after {r['sim_time']:.4g} s"
                       if not r["completed"] else "completed the 2 s")
                L += ["", f"graspsim drop, run {i + 1}: {end}.  CPU seconds when sim time t was reached: "
                      + ", ".join(f"t = {t:g} s: {cpu:.1f} s ({n} contacts)" for t, cpu, n in r["trace"])
                      + f"; {r['impact_substeps']} impact sub-steps."]
    return "\n".join(L) + "\n"


# --------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--core", type=int, default=0)
    ap.add_argument("--only", choices=("grasp", "drop"))
    ap.add_argument("--cpu-limit", type=float, default=300.0,
                    help="CPU seconds after which a graspsim drop run stops (default %(default)s)")
    ap.add_argument("--peers-dir", default=os.environ.get("GRASPSIM_PEERS_DIR", str(_DEFAULT_PEERS)),
                    help="the peers' scenes (default: ../shared/peers next to the repository)")
    ap.add_argument("--peers-python", default="/tmp/venv-peers/bin/python")
    ap.add_argument("--out", default=os.path.join(HERE, "results.json"))
    a = ap.parse_args()
    a.peers_dir = os.path.abspath(a.peers_dir)
    if subprocess.run([a.peers_python, "-c", "import pybullet, mujoco"], capture_output=True).returncode:
        sys.exit(f"{a.peers_python} cannot import pybullet and mujoco; create the venv first:\n  python -m venv "
                 f"/tmp/venv-peers && /tmp/venv-peers/bin/pip install -r {a.peers_dir}/requirements-peers.txt")
    rows = [r for r in ROWS if a.only in (None, r[0])]
    meta = dict(started=time.strftime("%Y-%m-%d %H:%M:%S"), python=platform.python_version(),
                nproc=os.cpu_count(), core=a.core, reps=a.reps, cpu_limit=a.cpu_limit,
                argv=sys.argv[1:], peers_dir=a.peers_dir, peers_python=a.peers_python,
                loadavg_start=loadavg(), graspsim_source_before=graspsim_source())
    with open("/proc/cpuinfo") as fh:
        meta["cpu_model"] = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "")
    runs = {r[:2]: [] for r in rows}
    meta["loadavg_per_rep"] = []
    for rep in range(a.reps):
        for scene, label, sim, extra in rows:
            sha = graspsim_source()["sha256"] if sim == "graspsim" else None
            t0 = time.perf_counter()
            res = run(command(scene, sim, extra, a), a.core)
            if sha:
                res["graspsim_sha256"] = sha            # the graspsim source this run started with
            runs[scene, label].append(res)
            print(f"rep {rep + 1}: {scene:5s} {label:14s} {time.perf_counter() - t0:6.1f} s"
                  + (f"  ERROR {res['error'][-300:]}" if "error" in res else ""), flush=True)
        meta["loadavg_per_rep"].append(loadavg())
        print(f"rep {rep + 1}/{a.reps} done, load average {meta['loadavg_per_rep'][-1]}", flush=True)
    meta["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    meta["graspsim_source_after"] = graspsim_source()
    out = dict(meta=meta, configs=[dict(scene=s, label=lb, median=median(runs[s, lb]), runs=runs[s, lb])
                                   for s, lb, _sim, _x in rows])
    with open(a.out, "w") as fh:
        json.dump(out, fh, indent=1)
    md = tables(out)
    with open(os.path.join(os.path.dirname(os.path.abspath(a.out)), "results.md"), "w") as fh:
        fh.write("# graspsim vs PyBullet vs MuJoCo: measured tables\n\n"
                 f"Command: `python benchmarks/peers/run_compare.py {' '.join(sys.argv[1:])}`.  "
                 "Scenes, deviations and the analysis: README.md.\n\n" + md)
    print(md)


if __name__ == "__main__":
    main()

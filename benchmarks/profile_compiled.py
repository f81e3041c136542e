"""Where a step's CPU goes, down to the compiled kernels' own functions (issue 18): a sampling profile
of a scene's steps with Linux ``perf``, the numba-compiled code named through ``gdb``.

    python benchmarks/profile_compiled.py --scene mug_hold --path rollout --seconds 6
    python benchmarks/profile_compiled.py --scene peers_hold --path step

``perf`` alone sees numba's machine code as anonymous ``[JIT]`` addresses; numba registers every
function it loads with gdb's JIT interface, so each sampled address is named by ``gdb -p PID``
(``info symbol``) in the running process.  Needs ``perf`` (and permission to record another process:
``/proc/sys/kernel/perf_event_paranoid`` <= 2 as root) and ``gdb``; nothing else is timed.

The scene runs in a child process pinned to ``--core`` (``OPENBLAS_NUM_THREADS=1``), stepping until
the parent has recorded ``--seconds`` of samples:

* ``mug_hold``: the Barrett holding the mug after a dynamic auto-grasp (``bench_dynamics.py``'s scene);
* ``puma_grasp``: the Puma's Barrett closing on the handset;
* ``drop20``: 20 boxes dropped on a table, from t = 0.3 s (no controller); ``drop20_settled``: the
  same pile from t = 1.5 s, settled (warm starts that verify, few pivots);
* ``peers_hold``: the peers' three-finger grasp (``peers/graspsim_grasp.py``) holding the cube at
  t = 2-3 s: ``step`` with the peers' Python PD (``scene_spec.pd_forces``, torques), ``rollout``
  with a compiled PD holding the same DOF values (needs the peers' folder, ``--peers-dir``).

``--path step`` times ``Simulator.step`` (the Python stages), ``--path rollout`` the compiled loop,
``--path rollout1`` the compiled loop called for one step at a time (a call's own cost).
Prints the self time of each function (top ``--top``) and a summary by kind: reference counting of
numba's arrays (``NRT_incref``/``NRT_decref``), allocation (numba's and libc's), the Python
interpreter, numpy, numba's dispatch (typing and unboxing arguments), BLAS/libm and the compiled
kernels' own code.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
PEERS = ROOT.parent / "shared" / "peers"

#: (kind, test on (dso, symbol)); the first that holds names a sample's kind
KINDS = (
    ("refcount (NRT_incref/decref)", lambda d, s: s in ("NRT_incref", "NRT_decref")),
    ("allocation (NRT, malloc/free)", lambda d, s: s.startswith(("NRT_MemInfo", "NRT_Allocate", "NRT_Free", "NRT_dealloc",
                                                                 "nrt_allocate", "nrt_internal"))
     or ("libc" in d and re.search(r"malloc|free|_int_|unlink_chunk|memset|consolidate", s) is not None)),
    ("numba dispatch (typing, boxing)", lambda d, s: "_dispatcher" in d or "_nrt_python" in d or "_helperlib" in d
     or "typeof" in s),
    ("Python interpreter", lambda d, s: "libpython" in d),
    ("numpy", lambda d, s: "_multiarray_umath" in d or "_umath" in d),
    ("BLAS, libm", lambda d, s: "blas" in d.lower() or "libm" in d),
    ("compiled kernels", lambda d, s: d.startswith(("[JIT]", "perf-")) or s.startswith("graspsim")),
)


def _demangle(text: str) -> str:
    """``module.function`` from gdb's name of a numba function (Itanium-mangled or ``a::b::f[abi..](..)``)."""
    name = re.split(r"\[abi|\(| \+ ", text, maxsplit=1)[0].strip()
    if name.startswith("_ZN"):
        t, parts = name[3:], []
        while t and t[0].isdigit():
            m = re.match(r"\d+", t)
            n = int(m.group(0))
            t = t[len(m.group(0)):]
            parts.append(t[:n])
            t = t[n:]
        return ".".join(parts[-2:]) if parts else name
    return ".".join(name.split("::")[-2:]) if "::" in name else name


# ------------------------------------------------------------------------------------------- the child
def _scene(name: str, path: str, peers: Path):
    """(simulator, a function taking one block of steps) of the named scene."""
    sys.path.insert(0, str(HERE))
    import numpy as np

    import bench_dynamics as BD
    import graspsim
    from graspsim.control import PDController, dynamic_auto_grasp
    from graspsim.dynamics import Simulator

    if name == "mug_hold":
        r = dynamic_auto_grasp(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), "barrett", timeout=2.0)
        sim, ctl = r.sim, r.controller
    elif name == "puma_grasp":
        sim, ctl = BD.puma_grasp_scene()
    elif name in ("drop20", "drop20_settled"):
        folder = Path(tempfile.mkdtemp())
        sim, ctl = Simulator(graspsim.load_world(BD.drop_world(20, folder))), None
        sim.run(0.3 if name == "drop20" else 1.5)
    elif name == "peers_hold":
        sys.path.insert(0, str(peers))
        sys.path.insert(0, str(HERE / "peers"))
        import graspsim_grasp as G
        import scene_spec as S
        G.S = S
        h = 0.0025
        sim = Simulator(graspsim.load_world(G.write_world(tempfile.mkdtemp(), "grasp", h, 20)), dt=h,
                        compiled_loop=True)
        torque = G.TorquePD()
        for k in range(800):                 # close 1 s, lift 1 s: the hold begins
            G.advance(sim, torque, h, k)
        if path == "step":
            saved = sim.save_state()

            def block():
                sim.restore_state(saved)
                for k in range(800, 1200):
                    G.advance(sim, torque, h, k)
            return sim, block
        ctl = PDController(sim, kp=[20000.0] + list(S.HAND_KP[1:]), kd=[200.0] + [S.KD] * 6,
                           effort=[100.0] + list(S.HAND_TAU_MAX[1:]))
        ctl.move_to("hand", sim.dof_values())
    else:
        raise SystemExit(f"unknown scene {name!r}")
    saved = sim.save_state()
    if path in ("rollout", "rollout1"):
        sim.compiled_loop = True
        sim.rollout(5, ctl)                  # (the loop compiled or loaded before the samples)
        per_call = 200 if path == "rollout" else 1

        def block():
            sim.restore_state(saved)
            for _ in range(200 // per_call):
                sim.rollout(per_call, ctl)
    else:
        def block():
            sim.restore_state(saved)
            for _ in range(200):
                sim.step(ctl)
    np.seterr(all="ignore")
    return sim, block


def child(a) -> None:
    sim, block = _scene(a.scene, a.path, Path(a.peers_dir))
    block()
    print("ready", flush=True)
    c0, n = time.process_time(), 0
    while True:                              # until the parent has its samples and stops us
        block()
        n += 1
        if n % 10 == 0:
            print(f"cpu {time.process_time() - c0:.3f} blocks {n}", flush=True)


# ------------------------------------------------------------------------------------------ the parent
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scene", default="peers_hold", choices=("mug_hold", "puma_grasp", "drop20", "drop20_settled",
                                                                 "peers_hold"))
    ap.add_argument("--path", default="rollout", choices=("rollout", "rollout1", "step"))
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--core", type=int, default=1)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--peers-dir", default=str(PEERS))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a)
    for tool in ("perf", "gdb", "taskset"):
        if shutil.which(tool) is None:
            raise SystemExit(f"error: this profile needs '{tool}' on the PATH")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    cmd = ["taskset", "-c", str(a.core), sys.executable, __file__, "--child", "--scene", a.scene, "--path", a.path,
           "--peers-dir", a.peers_dir]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env, cwd=str(ROOT))
    try:
        line = proc.stdout.readline()
        if line.strip() != "ready":
            raise SystemExit(f"error: the scene did not start ({line.strip()!r})")
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "perf.data"
            subprocess.run(["perf", "record", "-q", "-F", "4000", "-p", str(proc.pid), "-o", str(data), "--",
                            "sleep", str(a.seconds)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            out = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip,sym,dso"], check=True,
                                 capture_output=True, text=True).stdout
            counts: collections.Counter = collections.Counter()
            where: dict = {}
            for row in out.splitlines():
                m = re.match(r"\s*([0-9a-f]+)\s+(.*?)\s*\((.*)\)\s*$", row)
                if not m:
                    continue
                ip, sym, dso = m.groups()
                counts[ip] += 1
                where[ip] = (os.path.basename(dso) or dso, sym or "[unknown]")
            unknown = [ip for ip, (d, s) in where.items() if s in ("[unknown]", "")]
            script = Path(tmp) / "names.gdb"
            script.write_text("".join(f"info symbol 0x{ip}\n" for ip in unknown))
            names = subprocess.run(["gdb", "-p", str(proc.pid), "-batch", "-x", str(script)], capture_output=True,
                                   text=True).stdout.splitlines()
            names = [n for n in names if " in section " in n or n.startswith("No symbol matches")]
            for ip, n in zip(unknown, names):
                d = where[ip][0]
                where[ip] = (d, _demangle(n.split(" in section ")[0]) if " in section " in n else "[unknown JIT]")
    finally:
        proc.kill()
        rest = proc.communicate()[0].strip().splitlines()
    total = sum(counts.values())
    if total == 0:
        raise SystemExit("error: no samples (is perf allowed to record another process here?)")
    by_fn: collections.Counter = collections.Counter()
    by_kind: collections.Counter = collections.Counter()
    for ip, n in counts.items():
        d, s = where[ip]
        by_fn[(s, d)] += n
        by_kind[next((k for k, test in KINDS if test(d, s)), "other")] += n
    last = rest[-1] if rest else ""
    print(f"scene {a.scene}, path {a.path}: {total} samples over {a.seconds:g} s on core {a.core} ({last})")
    print("\nby kind:")
    for k, n in by_kind.most_common():
        print(f"  {100 * n / total:5.1f} %  {k}")
    others = collections.Counter({k: n for k, n in by_fn.items()
                                  if next((x for x, test in KINDS if test(k[1], k[0])), "other") == "other"})
    if others:
        print("  other: " + ", ".join(f"{s} [{d}] {100 * n / total:.1f} %" for (s, d), n in others.most_common(6)))
    print(f"\nself time, top {a.top}:")
    for (s, d), n in by_fn.most_common(a.top):
        print(f"  {100 * n / total:5.1f} %  {s}  [{d}]")
    print("\nRESULT_JSON " + json.dumps({"scene": a.scene, "path": a.path, "samples": total,
                                         "kinds": {k: n / total for k, n in by_kind.items()}}))


if __name__ == "__main__":
    main()

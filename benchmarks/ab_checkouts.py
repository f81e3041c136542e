"""A/B of two checkouts on one scene: blocks of steps alternating between two processes pinned to
one core, so that both see the same phase of a shared machine (issue 18).

    git worktree add /tmp/base HEAD~1          # the checkout to compare with (its kernels compile once)
    python benchmarks/ab_checkouts.py --scene mug_hold --path rollout --base /tmp/base --reps 30

On this machine the CPU time of one build moves by up to 2x between runs minutes apart (other
virtual machines on the host), so two runs one after the other cannot resolve a 5 % change; here
each process runs one block (``profile_compiled.py``'s scenes: 200 steps, or 400 for
``peers_hold --path step``), then the other, ``--reps`` times, and the ratio of each pair's times
is reported: its median and quartiles.  Each process imports graspsim from its own checkout
(``PYTHONPATH``) and uses the kernels cached for its sources.  Prints CPU time per step (min,
quartile, median) of each and the ratio new / base.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import sys, time
from pathlib import Path
sys.path.insert(0, str(Path.cwd() / "benchmarks"))
import profile_compiled as PC
scene, path, peers = sys.argv[1], sys.argv[2], sys.argv[3]
sim, block = PC._scene(scene, path, Path(peers))
block()
block()
n = 400 if (scene == "peers_hold" and path == "step") else 200
print("ready", flush=True)
for line in sys.stdin:
    c0 = time.process_time()
    block()
    print((time.process_time() - c0) / n * 1e6, flush=True)
"""


def _start(tree: Path, a) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1")
    p = subprocess.Popen(["taskset", "-c", str(a.core), sys.executable, "-c", _CHILD, a.scene, a.path, a.peers_dir],
                         cwd=str(tree), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    if line != "ready":
        p.kill()
        raise SystemExit(f"error: the scene did not start in {tree} ({line!r}; its stderr above)")
    return p


def _stats(x) -> str:
    import numpy as np
    x = np.asarray(x)
    return f"min {x.min():.1f}  q25 {np.percentile(x, 25):.1f}  median {np.median(x):.1f} us/step"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scene", default="mug_hold", choices=("mug_hold", "puma_grasp", "drop20", "drop20_settled", "peers_hold"))
    ap.add_argument("--path", default="rollout", choices=("rollout", "rollout1", "step"))
    ap.add_argument("--base", required=True, help="the other checkout (e.g. a git worktree of HEAD~1)")
    ap.add_argument("--new", default=str(ROOT), help="this checkout (default)")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--core", type=int, default=1)
    ap.add_argument("--peers-dir", default=str(ROOT.parent / "shared" / "peers"))
    a = ap.parse_args()
    import numpy as np

    trees = [Path(a.base).resolve(), Path(a.new).resolve()]
    for t in trees:
        if not (t / "graspsim" / "__init__.py").is_file() or not (t / "benchmarks" / "profile_compiled.py").is_file():
            raise SystemExit(f"error: {t} is not a graspsim checkout with benchmarks/profile_compiled.py")
    t0 = time.perf_counter()
    procs = [_start(t, a) for t in trees]
    times: list[list[float]] = [[], []]
    try:
        for _ in range(a.reps):
            for i, p in enumerate(procs):
                p.stdin.write("go\n")
                p.stdin.flush()
                times[i].append(float(p.stdout.readline()))
    finally:
        for p in procs:
            p.kill()
    print(f"{a.scene} --path {a.path}: {a.reps} alternating blocks each on core {a.core} "
          f"({time.perf_counter() - t0:.0f} s)")
    for name, t, x in zip(("base", "new"), trees, times):
        print(f"  {name:4s} {_stats(x)}   ({t})")
    r = np.array(times[1]) / np.array(times[0])
    print(f"  new / base per pair: median {np.median(r):.3f} (quartiles {np.percentile(r, 25):.3f}, "
          f"{np.percentile(r, 75):.3f})")


if __name__ == "__main__":
    main()

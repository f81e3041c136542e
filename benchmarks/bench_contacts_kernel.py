"""Contact kernel per call (issue 18): ``kernels.contacts_kernel`` replayed on the calls of real steps.

    taskset -c 0 python benchmarks/bench_contacts_kernel.py                    # all scenes
    taskset -c 0 python benchmarks/bench_contacts_kernel.py --scenes rest:barrett_mug --pairs
    python benchmarks/bench_contacts_kernel.py --save ref.pkl    # the outputs, to compare versions:
    python benchmarks/bench_contacts_kernel.py --check ref.pkl   # the saved calls replayed: bit for bit?
    (the saved calls carry their geometry pool: compare versions with the same pool layout)

Scenes: ``rest:<world>`` (a shipped world after 0.2 s of holding still, as bench_dynamics' rest),
``mug_hold`` (the Barrett holding the mug after a dynamic auto-grasp) and ``peers_grasp`` (the peers'
grasp scene of benchmarks/peers/graspsim_grasp.py during the close, lift and hold phases; needs the
peers' scene_spec, ``--peers-dir``).  Every ``contacts_kernel`` call of ``--steps`` steps is recorded
(arguments copied), then the recorded calls are replayed ``--repeat`` times: the figure is the best
replay's mean time per call (the kernel alone, without the Python of ``CollisionModel.contacts``).
``--pairs``: the time of each body pair alone at the last recorded call (best of 10 blocks, minus the
time of a call with no pairs: the argument unboxing), with its shapes, triangles and candidate/contact
counts.
"""
from __future__ import annotations

import argparse
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import graspsim
from graspsim.collision import kernels as K
from graspsim.control import PDController, dynamic_auto_grasp
from graspsim.dynamics import Simulator

#: the peers' benchmark folder: ../shared/peers next to the repository
_DEFAULT_PEERS = os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "peers"))


ROOT = Path(__file__).resolve().parent.parent


class Recorder:
    """Stands in for ``kernels.contacts_kernel`` while steps run: copies every call's arguments."""

    def __init__(self):
        self.calls = []
        self.orig = K.contacts_kernel

    def __call__(self, *args):
        # the poses and pairs copied; the geometry and the scratch buffers shared, as in the simulator
        # (a copy of each call's buffers would replay with cold caches)
        self.calls.append((args[0].copy(), args[1].copy()) + args[2:])
        return self.orig(*args)

    def __enter__(self):
        K.contacts_kernel = self
        return self

    def __exit__(self, *exc):
        K.contacts_kernel = self.orig


def rest_scene(world: str, steps: int):
    sim = Simulator(graspsim.load_world(ROOT / "worlds" / f"{world}.yaml"))
    ctl = PDController(sim)
    sim.run(0.2, ctl)
    with Recorder() as rec:
        for _ in range(steps):
            sim.step(ctl)
    return sim, rec.calls


def mug_hold(steps: int):
    r = dynamic_auto_grasp(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), "barrett", timeout=2.0)
    with Recorder() as rec:
        for _ in range(steps):
            r.sim.step(r.controller)
    return r.sim, rec.calls


def peers_grasp(steps: int, peers_dir: str):
    """The peers' grasp scene: ``steps`` grid steps spread over the episode (close, lift, hold)."""
    sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))
    sys.path.insert(0, os.path.abspath(peers_dir))
    import graspsim_grasp as G
    import scene_spec

    G.S = scene_spec
    h = 0.0025
    with tempfile.TemporaryDirectory() as tmp:
        sim = graspsim.Simulator(graspsim.load_world(G.write_world(tmp, "grasp", h, 0)), dt=h)
    ctl = G.TorquePD()
    n_total = round(scene_spec.T_TOTAL / h)
    every = max(1, n_total // steps)
    calls = []
    for k in range(n_total):
        if k % every == 0:
            with Recorder() as rec:
                G.advance(sim, ctl, h, k)
            calls += rec.calls
        else:
            G.advance(sim, ctl, h, k)
    return sim, calls


def replay(calls, repeat: int) -> tuple[float, list]:
    """Best mean time per call (s) over ``repeat`` replays, and the outputs of the last replay."""
    best = np.inf
    outs = []
    for r in range(repeat):
        outs = []
        t0 = time.perf_counter()
        for a in calls:
            k, worst = K.contacts_kernel(*a)
            if r == repeat - 1:
                outs.append((k, worst, a[13][:, :k].copy(), a[14][:, :k].copy(), a[15][:k].copy()))
        best = min(best, (time.perf_counter() - t0) / len(calls))
    return best, outs


def pair_table(sim, call, n: int = 2000) -> None:
    """Time of each body pair alone (µs) at the poses of ``call``."""
    m = sim._collision_model()
    names = m.table.names
    a = list(call)

    def t_of(pr):
        """Best mean time of 10 blocks of n / 10 calls (other processes' load hits some blocks)."""
        a[1] = pr
        res = K.contacts_kernel(*a)
        best = np.inf
        for _ in range(10):
            t0 = time.perf_counter()
            for _ in range(n // 10):
                K.contacts_kernel(*a)
            best = min(best, (time.perf_counter() - t0) / (n // 10))
        return best, res

    base, _ = t_of(np.zeros((0, 2), np.int64))
    print(f"    call with no pairs (argument unboxing): {base * 1e6:.2f} us")
    rows = []
    for ia, ib in call[1]:
        t, (k, worst) = t_of(np.array([[ia, ib]], np.int64))
        sa, sb = m.shapes_of(int(ia)), m.shapes_of(int(ib))
        rows.append((t - base, names[ia], names[ib], m.pool.kind[list(sa)].tolist(), m.pool.kind[list(sb)].tolist(),
                     int(m.pool.t_cnt[list(sa)].sum()), int(m.pool.t_cnt[list(sb)].sum()), worst, k))
    rows.sort(key=lambda r: -r[0])
    tot = sum(r[0] for r in rows)
    print(f"    {'body a':>20s} {'body b':>20s} {'kinds':>12s} {'tris':>11s} {'cand':>5s} {'cont':>5s}  {'us':>7s}")
    for t, na, nb, ka, kb, ta, tb, worst, k in rows:
        if t * 1e6 < 0.3 and k == 0:
            continue
        print(f"    {na:>20s} {nb:>20s} {str(ka + kb):>12s} {ta:5d}/{tb:<5d} {worst:5d} {k:5d}  {t * 1e6:7.2f}")
    print(f"    sum over the {len(rows)} pairs: {tot * 1e6:.1f} us (pairs not shown: < 0.3 us, no contact)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", default="rest:barrett_mug,rest:puma_barrett_handset,rest:panda_hand_mug,mug_hold,"
                                        "peers_grasp")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--pairs", action="store_true", help="time each body pair alone at the last call")
    ap.add_argument("--peers-dir", default=os.environ.get("GRASPSIM_PEERS_DIR", _DEFAULT_PEERS))
    ap.add_argument("--save", help="pickle the replayed outputs to this file")
    ap.add_argument("--check", help="compare the replayed outputs with this file (from --save)")
    a = ap.parse_args()
    ref = pickle.loads(Path(a.check).read_bytes()) if a.check else None
    saved = {}
    print(f"{'scene':28s} {'calls':>6s} {'us/call':>8s} {'contacts/call':>14s}")
    for scene in a.scenes.split(","):
        if scene.startswith("rest:"):
            sim, calls = rest_scene(scene[5:], a.steps)
        elif scene == "mug_hold":
            sim, calls = mug_hold(a.steps)
        elif scene == "peers_grasp":
            sim, calls = peers_grasp(a.steps, a.peers_dir)
        else:
            raise SystemExit(f"unknown scene {scene!r}")
        t, outs = replay(calls, a.repeat)
        saved[scene] = (calls, outs)
        print(f"{scene:28s} {len(calls):6d} {t * 1e6:8.1f} {np.mean([o[0] for o in outs]):14.1f}")
        if ref is not None and scene in ref:
            rcalls, routs = ref[scene]       # the reference's calls, replayed with this kernel
            t_ref, outs = replay(rcalls, a.repeat)
            ident = all(o[:2] == r[:2] and all(np.array_equal(x, y) for x, y in zip(o[2:], r[2:]))
                        for o, r in zip(outs, routs))
            if ident:
                print(f"    on the reference's {len(rcalls)} calls: {t_ref * 1e6:.1f} us/call, outputs bit for bit identical")
            else:
                same_k = all(o[0] == r[0] for o, r in zip(outs, routs))
                dv = max((np.abs(o[3] - r[3]).max(initial=0.0) for o, r in zip(outs, routs) if o[0] == r[0]),
                         default=0.0)
                print(f"    on the reference's calls: outputs DIFFER (same counts: {same_k}, max |dv| {dv:.3g})")
        if a.pairs:
            pair_table(sim, calls[-1])
    if a.save:
        Path(a.save).write_bytes(pickle.dumps(saved))


if __name__ == "__main__":
    main()

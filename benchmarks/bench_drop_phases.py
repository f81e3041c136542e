"""Where the peers' 20-box drop spends its time, per 0.1 s of simulated time (issue 18).

    python benchmarks/bench_drop_phases.py [--n-boxes 20] [--peers-dir ../shared/peers]

Builds the drop with ``benchmarks/peers/graspsim_grasp.py`` (the peers' ``scene_spec.py`` gives
every number) and steps it on the peers' time grid (``advance``: a step cut at an impact is
followed by sub-steps to the grid time).  Per 0.1 s bin: impact sub-steps, grid steps, CPU per
grid step (ms), the largest island LCP (rows), the Lemke pivots of all its steps and the contact
points at the bin's end.  BLAS
runs on one thread (as in ``peers/run_compare.py``), so CPU is one core's.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-boxes", type=int, default=20)
    ap.add_argument("--h", type=float, default=0.0025)
    ap.add_argument("--peers-dir", default=os.environ.get("GRASPSIM_PEERS_DIR",
                                                          str(ROOT.parent / "shared" / "peers")))
    a = ap.parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")     # one core's CPU, as run_compare.py (set before numpy loads)
    sys.path[:0] = [str(ROOT / "benchmarks" / "peers"), os.path.abspath(a.peers_dir), str(ROOT)]
    import graspsim
    import graspsim_grasp as G
    import scene_spec as S

    G.S = S
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "drop.yaml"
        path.write_text(G.dump(G.drop_world(a.h, a.n_boxes)))
        warm = graspsim.Simulator(graspsim.load_world(path), dt=a.h)      # load the kernels, untimed
        for k in range(40):
            G.advance(warm, None, a.h, k)
        sim = graspsim.Simulator(graspsim.load_world(path), dt=a.h)
    bins = collections.defaultdict(lambda: [0, 0, 0.0, 0, 0, 0])   # sub-steps, steps, CPU, LCP max, contacts, pivots
    pivots = [0]
    step = sim.step

    def counted(ctl=None):
        info = step(ctl)
        pivots[0] += info.pivots
        return info

    sim.step = counted              # (every step() call of advance, sub-steps included)
    for k in range(round(S.DROP_T / a.h)):
        c0 = time.process_time()
        calls = G.advance(sim, None, a.h, k)
        b = bins[int(k * a.h / 0.1 + 1e-9)]
        b[0] += calls - 1
        b[1] += 1
        b[2] += time.process_time() - c0
        b[3] = max([b[3], *sim.info.lcp_sizes])
        b[4] = 0 if sim.contacts is None else len(sim.contacts)
        b[5] += pivots[0]
        pivots[0] = 0
    print(f"{'t (s)':>6} {'sub-steps':>9} {'steps':>6} {'ms/step':>8} {'LCP max':>8} {'contacts':>8} {'pivots':>8}")
    for t, (s, n, c, m, nc, pv) in sorted(bins.items()):
        print(f"{t * 0.1:6.1f} {s:9d} {n:6d} {1e3 * c / n:8.2f} {m:8d} {nc:8d} {pv:8d}")
    print(f"total CPU {sum(v[2] for v in bins.values()):.2f} s, impact sub-steps {sum(v[0] for v in bins.values())}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Capture the contact LCPs of the peers' 20-box drop (the islands of a settling pile).

  python benchmarks/capture_pile_lcps.py --out /tmp/pile_lcps.npz
  python benchmarks/capture_pile_lcps.py --out /tmp/pile_lcps.npz --test-set tests/data/pile_lcps.npz
  taskset -c 0 python benchmarks/capture_pile_lcps.py --compare lemke,large,large-cold

Runs the drop scene of ``benchmarks/peers/graspsim_grasp.py`` (same world, same time grid) with the
reference island solver (``Simulator(lemke=hook)``: the LCP is formed by ``dynamics/island.py``, the
same algebra the compiled island solver uses) and records every LCP with at least ``--min-rows``
rows at the listed times: the matrix ``M`` (with the contact compliance the solver added), ``q``, the
warm start the simulator offered, and the project's Lemke answer (z, basis, pivots).

The LCPs are stored sparse (row, column, value) since a pile's ``M`` is mostly zeros (contacts
couple only through shared bodies).  ``--test-set`` also writes a small subset (``--n-test``
LCPs spread over the captured times and sizes) for ``tests/test_lcp_large.py``.

``--compare`` instead runs the whole drop once per solver, through the same reference path, with
the solver's basis as the next step's warm start (the loop the simulator runs): ``lemke``,
``large`` (``graspsim.lcp.solve_large`` with its defaults: Lemke from the warm guess when block
pivoting does not finish) or ``large-cold`` (Lemke cold when over 10% of the guess is wrong).  It
prints the LCP CPU time, Lemke pivots, block-pivoting factorisations and the end state.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np

#: the peers' benchmark folder: ../shared/peers next to the repository
_DEFAULT_PEERS = os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "peers"))


HERE = os.path.dirname(os.path.abspath(__file__))


def pack(lcps: list[dict]) -> dict:
    """Flat arrays for np.savez: per LCP its size, the sparse M (CSR-like offsets), q, warm, z."""
    out = {"n": np.array([d["n"] for d in lcps], np.int64),
           "time": np.array([d["time"] for d in lcps]),
           "pivots": np.array([d["pivots"] for d in lcps], np.int64),
           "has_warm": np.array([d["warm"] is not None for d in lcps])}
    nnz = [np.flatnonzero(d["M"]) for d in lcps]
    out["m_off"] = np.concatenate([[0], np.cumsum([len(x) for x in nnz])]).astype(np.int64)
    out["m_idx"] = np.concatenate(nnz).astype(np.int64)            # flat index i * n + j
    out["m_val"] = np.concatenate([d["M"].ravel()[x] for d, x in zip(lcps, nnz)])
    out["v_off"] = np.concatenate([[0], np.cumsum(out["n"])]).astype(np.int64)
    out["q"] = np.concatenate([d["q"] for d in lcps])
    out["z"] = np.concatenate([d["z"] for d in lcps])
    out["basis"] = np.concatenate([d["basis"] for d in lcps])
    out["warm"] = np.concatenate([d["warm"] if d["warm"] is not None else np.zeros(d["n"], bool)
                                  for d in lcps])
    return out


def unpack(path: str) -> list[dict]:
    """The LCPs of a file written by :func:`pack`: dicts with M (dense), q, warm (or None), z, basis."""
    f = np.load(path)
    res = []
    for k, n in enumerate(f["n"]):
        n = int(n)
        M = np.zeros(n * n)
        a, b = f["m_off"][k], f["m_off"][k + 1]
        M[f["m_idx"][a:b]] = f["m_val"][a:b]
        s, e = f["v_off"][k], f["v_off"][k + 1]
        res.append({"n": n, "time": float(f["time"][k]), "M": M.reshape(n, n), "q": f["q"][s:e].copy(),
                    "warm": f["warm"][s:e].copy() if f["has_warm"][k] else None,
                    "z": f["z"][s:e].copy(), "basis": f["basis"][s:e].copy(),
                    "pivots": int(f["pivots"][k])})
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="/tmp/pile_lcps.npz")
    ap.add_argument("--n-boxes", type=int, default=20)
    ap.add_argument("--h", type=float, default=0.0025)
    ap.add_argument("--times", default="0.3,0.5,0.75,1.0,1.5,2.0",
                    help="capture the LCPs of the grid steps ending at these times (s)")
    ap.add_argument("--min-rows", type=int, default=100)
    ap.add_argument("--test-set", help="also write a small subset here (tests/data/...)")
    ap.add_argument("--n-test", type=int, default=10)
    ap.add_argument("--compare", help="comma-separated solvers: lemke, large, large-cold")
    ap.add_argument("--peers-dir", default=os.environ.get("GRASPSIM_PEERS_DIR", _DEFAULT_PEERS))
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(a.peers_dir))
    sys.path.insert(0, os.path.join(HERE, "peers"))
    import scene_spec
    import graspsim_grasp as GG
    GG.S = scene_spec
    import graspsim
    from graspsim.lcp import lemke

    if a.compare:
        return compare(a, GG, graspsim)
    grid = sorted({round(float(t) / a.h) for t in a.times.split(",")})
    lcps, cur = [], {"k": -1}

    def hook(M, q, warm_start=None):
        r = lemke(M, q, warm_start=warm_start)
        if (cur["k"] + 1) in grid and len(q) >= a.min_rows:
            lcps.append({"n": len(q), "time": (cur["k"] + 1) * a.h, "M": M.copy(), "q": q.copy(),
                         "warm": None if warm_start is None else np.asarray(warm_start, bool).copy(),
                         "z": r.z.copy(), "basis": r.basis.copy(), "pivots": r.pivots})
        return r

    with tempfile.TemporaryDirectory(prefix="graspsim_capture_") as tmp:
        path = GG.write_world(tmp, "drop", a.h, a.n_boxes)
        sim = graspsim.Simulator(graspsim.load_world(path), dt=a.h, lemke=hook)
        for k in range(max(grid)):
            cur["k"] = k
            GG.advance(sim, None, a.h, k)
    print(f"captured {len(lcps)} LCPs: sizes {[d['n'] for d in lcps]}")
    np.savez_compressed(a.out, **pack(lcps))
    print(f"wrote {a.out} ({os.path.getsize(a.out) / 1e6:.2f} MB)")
    if a.test_set:
        # a spread over times and sizes: the largest of each captured time, then the rest by size
        order = sorted(range(len(lcps)), key=lambda i: (-lcps[i]["n"]))
        pick, seen = [], set()
        for i in order:
            if lcps[i]["time"] not in seen:
                pick.append(i)
                seen.add(lcps[i]["time"])
        for i in order:
            if len(pick) >= a.n_test:
                break
            if i not in pick:
                pick.append(i)
        pick = sorted(pick[:a.n_test], key=lambda i: (lcps[i]["time"], -lcps[i]["n"]))
        np.savez_compressed(a.test_set, **pack([lcps[i] for i in pick]))
        print(f"wrote {a.test_set} ({os.path.getsize(a.test_set) / 1e6:.2f} MB): "
              f"{[(lcps[i]['time'], lcps[i]['n']) for i in pick]}")


def compare(a, GG, graspsim):
    """The drop once per solver (see the module docstring)."""
    import time
    from graspsim.lcp import lemke, solve_large
    solvers = {"lemke": lambda M, q, ws: lemke(M, q, warm_start=ws),
               "large": lambda M, q, ws: solve_large(M, q, warm_start=ws),
               "large-cold": lambda M, q, ws: solve_large(M, q, warm_start=ws, cold_above=0.1)}
    n_steps = round(2.0 / a.h)
    with tempfile.TemporaryDirectory(prefix="graspsim_compare_") as tmp:
        path = GG.write_world(tmp, "drop", a.h, a.n_boxes)
        for name in a.compare.split(","):
            f = solvers[name]
            acc = {"cpu": 0.0, "calls": 0, "pivots": 0, "fact": 0}

            def hook(M, q, warm_start=None):
                c0 = time.process_time()
                r = f(M, q, warm_start)
                acc["cpu"] += time.process_time() - c0
                acc["calls"] += 1
                acc["pivots"] += r.pivots
                acc["fact"] += r.factorizations
                return r

            sim = graspsim.Simulator(graspsim.load_world(path), dt=a.h, lemke=hook)
            c0, calls = time.process_time(), 0
            for k in range(n_steps):
                calls += GG.advance(sim, None, a.h, k)
            total = time.process_time() - c0
            boxes = [f"box{k}" for k in range(a.n_boxes)]
            vmax = max(float(np.linalg.norm(sim.body_velocity(b)[:3])) for b in boxes)
            zmax = max(float(sim.body_pose(b)[2, 3]) for b in boxes)
            print(f"{name:10s}: step loop CPU {total:6.2f} s, LCP CPU {acc['cpu']:6.2f} s, "
                  f"{acc['calls']} LCPs, Lemke pivots {acc['pivots']}, factorisations "
                  f"{acc['fact']}, sub-steps {calls - n_steps}; end: max speed {vmax:.1e} m/s, "
                  f"top box z {zmax:.4f} m", flush=True)
            print("   ", os.popen("uptime").read().strip())


if __name__ == "__main__":
    main()

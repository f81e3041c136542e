"""Where the time of one ``solve_islands`` call goes (issue 18): numba has no profiler, so this
times the call cut short after each stage, on inputs captured by ``bench_island.py capture``.

    taskset -c 0 python benchmarks/bench_island_stages.py /tmp/islands.pkl [scene]

It writes a copy of ``graspsim/dynamics/_island_kernel.py`` with an extra ``stop`` argument (plain
``numba.njit``, uncached, in a temporary folder): ``solve_island`` returns right after stage
``stop`` (its LCP left unsolved), so the difference between consecutive stops is that stage's cost.
Stages are found by marker lines of the kernel source; a marker that is gone stops the script (edit
``MARKERS`` with the kernel).  Per stop: the fastest of 200 calls on one captured call's arguments.  The stops inside ``if ne:``
(the base rows' blocks) are not reached by an island without equality rows: there the row after them
carries the rest of the call.
"""
from __future__ import annotations

import importlib.util
import pickle
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

KERNEL = Path(__file__).resolve().parent.parent / "graspsim/dynamics/_island_kernel.py"
# (stop, label, marker line, insert before the marker?, indentation)
MARKERS = [
    (1, "prelude, equality elimination", "    nl = lim_rows.shape[0] + nrm_rows.shape[0]\n", True, 4),
    (11, "compact contact rows", "        hb, hj, hw, hcnt = _compact(local, bodies, jac, rows, Minv)\n", False, 8),
    (12, "base rows' H^T M^-1 H", "            Sb = _elimination_term(", True, 12),
    (13, "base rows' Y^T Y (X, Y = L^-1 X, Y^T Y)", "            G = _expand(Gb, ", True, 12),
    (2, "G = B Gb B^T (or H^T M^-1 H without equality rows)", "        m = nh + (nc if nfr else 0)\n", True, 8),
    (3, "LCP matrix", "        zb = np.zeros(m, dtype=np.bool_)\n", True, 8),
    (4, "Lemke (with retries)", "        if status == OK:\n            dv = np.zeros(nv)", True, 8),
    (5, "back-substitution, outputs", "    # post-stabilisation: the displacement dx = M^-1 J c", True, 4),
    (0, "post-stabilisation projection", None, True, 0),
]


def staged_module():
    s = KERNEL.read_text()
    s = s.replace("from .._jit import njit", "from numba import njit")
    s = s.replace("from ..lcp._kernel import solve_retries as _lemke",
                  "from graspsim.lcp._kernel import solve_retries as _lemke")
    s = s.replace("@njit(cache=True", "@njit(cache=False")
    s = s.replace("v_out, ce_out, z_out, basis_out, dx_out):", "v_out, ce_out, z_out, basis_out, dx_out, stop):")
    s = s.replace("use_matched, radius):", "use_matched, radius, stop):")
    s = s.replace("herr, project, v_out, ce, z, basis, dxi)", "herr, project, v_out, ce, z, basis, dxi, stop)")
    for stop, _, marker, before, ind in MARKERS:
        if marker is None:
            continue
        if marker not in s:
            raise SystemExit(f"{KERNEL}: stage marker {marker!r} not found; update MARKERS")
        cut = f"{' ' * ind}if stop == {stop}:\n{' ' * ind}    return 0, 0, 0, 0\n"
        s = s.replace(marker, cut + marker if before else marker + cut, 1)
    path = Path(tempfile.mkdtemp()) / "island_stages.py"
    path.write_text(s)
    spec = importlib.util.spec_from_file_location("island_stages", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    path = Path(sys.argv[1])
    scenes = pickle.loads(path.read_bytes())
    names = sys.argv[2:] or list(scenes)
    mod = staged_module()

    def fresh(a, stop):
        return tuple(x.copy() if isinstance(x, np.ndarray) else x for x in a) + (stop,)

    for name in names:
        args, _ = scenes[name][len(scenes[name]) // 2]
        prev = 0.0
        print(name)
        for stop, label, _, _, _ in MARKERS:
            mod.solve_islands(*fresh(args, stop))
            best = np.inf
            for _ in range(200):
                a = fresh(args, stop)
                t0 = time.perf_counter()
                mod.solve_islands(*a)
                best = min(best, time.perf_counter() - t0)
            print(f"  {label:40s} {1e6 * (best - prev):7.1f} us   (cumulative {1e6 * best:7.1f})")
            prev = best


if __name__ == "__main__":
    main()

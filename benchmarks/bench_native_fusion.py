"""Fusing the step's kernels without compiling them again (issue 18): linked call vs native call.

    OPENBLAS_NUM_THREADS=1 taskset -c 1 python benchmarks/bench_native_fusion.py [--linked] [--reps 2000]

Captures the arguments of the five kernels of steps 5-10 (``assemble``, ``islands``, ``mass_terms``,
``solve_islands``, ``finish``) in one step of the Barrett holding the mug (``worlds/barrett_mug.yaml``
after a dynamic auto-grasp and 50 steps), then times, on those arguments:

* *staged*: the five kernels called from Python one after the other (as ``Simulator.step`` does);
* *native*: one ``@njit`` wrapper calling the five through :func:`graspsim._native.call_native`
  (their machine code, already compiled and cached, at an address): its compile CPU and its call;
* *linked* (``--linked``, slow): the same wrapper calling the kernels by name, which numba links
  and compiles again into the wrapper (the tenth pass's experiment: 11.7 s of compile CPU).

Checks that the wrapper's outputs equal the staged calls' bit for bit.  The wrapper is not cached
(``cache=False``): each run measures its compile.  Times: median per call (perf_counter), one core.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
from numba import njit

import graspsim
import graspsim.dynamics._island_kernel as IK
import graspsim.dynamics._rows_kernel as RK
import graspsim.dynamics.simulator as S
from graspsim._native import call_native, native_entry
from graspsim.control import dynamic_auto_grasp

ROOT = Path(__file__).resolve().parent.parent
NAMES = ("assemble", "islands", "mass_terms", "solve_islands", "finish")
KERNELS = {"assemble": RK.assemble, "islands": RK.islands, "mass_terms": RK.mass_terms,
           "solve_islands": IK.solve_islands, "finish": RK.finish}


class _Spy:
    """A module stand-in recording the arguments of the five kernels' calls."""

    def __init__(self, mod, cap):
        self._mod, self._cap = mod, cap

    def __getattr__(self, name):
        f = getattr(self._mod, name)
        if name not in NAMES:
            return f

        def record(*a):
            self._cap[name] = tuple(x.copy() if isinstance(x, np.ndarray) else x for x in a)
            return f(*a)
        return record


def capture() -> dict:
    w = graspsim.load_world(str(ROOT / "worlds/barrett_mug.yaml"))
    r = dynamic_auto_grasp(w, "barrett", timeout=2.0)
    sim, ctl = r.sim, r.controller
    for _ in range(50):
        sim.step(ctl)
    cap = {}
    S.RK, S.IK = _Spy(RK, cap), _Spy(IK, cap)
    try:
        sim.step(ctl)
    finally:
        S.RK, S.IK = RK, IK
    return cap


def fresh(a: tuple) -> tuple:
    return tuple(x.copy() if isinstance(x, np.ndarray) else x for x in a)


def native_wrapper(counts: list[int], restypes: list):
    """An ``@njit`` function of flat arguments (each kernel's address, then its arguments, kernel
    after kernel) calling the kernels through ``call_native``.  Flat, and the return types as
    globals (compile-time constants), because numba types a tuple or a type argument in Python
    (microseconds each) but an array or an integer in C."""
    params, calls = [], []
    scope = {"call_native": call_native}
    for k, n in enumerate(counts):
        xs = [f"x{k}_{i}" for i in range(n)]
        params += [f"e{k}"] + xs
        scope[f"R{k}"] = restypes[k]
        calls.append(f"call_native(e{k}, R{k}, {', '.join(xs)})")
    src = f"def fused_native({', '.join(params)}):\n    return ({', '.join(calls)},)\n"
    exec(compile(src, "<fused_native>", "exec"), scope)
    return njit(cache=False)(scope["fused_native"])


def flat(x):
    if isinstance(x, tuple):
        for y in x:
            yield from flat(y)
    else:
        yield x


def same(a, b) -> bool:
    fa, fb = list(flat(a)), list(flat(b))
    return len(fa) == len(fb) and all(
        np.array_equal(x, y) if isinstance(x, np.ndarray) else (x == y or (x != x and y != y)) for x, y in zip(fa, fb))


def median_us(f, reps: int) -> float:
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return 1e6 * statistics.median(t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--linked", action="store_true", help="also compile the linked wrapper (~12 s CPU)")
    a = ap.parse_args()
    cap = capture()
    args = [cap[n] for n in NAMES]
    staged_out = tuple(KERNELS[n](*fresh(x)) for n, x in zip(NAMES, args))
    entries = [native_entry(KERNELS[n], x) for n, x in zip(NAMES, args)]
    fused_native = native_wrapper([len(x) for x in args], [r for _, r in entries])

    def flat_args(copy: bool) -> list:
        return [v for (e, _), x in zip(entries, args) for v in (e, *(fresh(x) if copy else x))]

    c0 = time.process_time()
    fused_native(*flat_args(True))
    compile_native = time.process_time() - c0
    native_out = fused_native(*flat_args(True))
    print(f"native wrapper: compile CPU {compile_native:.2f} s; outputs equal to the staged calls': "
          f"{same(native_out, staged_out)}")

    def staged():
        for n, x in zip(NAMES, args):
            KERNELS[n](*x)

    fa = flat_args(False)

    def native():
        fused_native(*fa)

    # (the table arrays and outputs are rewritten in place each call: the same work every time)
    for _ in range(3):
        ts, tn = median_us(staged, a.reps), median_us(native, a.reps)
        print(f"per step's five kernels: staged {ts:.1f} us, one native-call wrapper {tn:.1f} us")
    if a.linked:
        @njit(cache=False)
        def fused_linked(a1, a2, a3, a4, a5):
            return RK.assemble(*a1), RK.islands(*a2), RK.mass_terms(*a3), IK.solve_islands(*a4), RK.finish(*a5)

        c0 = time.process_time()
        linked_out = fused_linked(*[fresh(x) for x in args])
        print(f"linked wrapper: compile CPU {time.process_time() - c0:.2f} s; outputs equal: "
              f"{same(linked_out, staged_out)}; call {median_us(lambda: fused_linked(*args), a.reps):.1f} us")


if __name__ == "__main__":
    main()

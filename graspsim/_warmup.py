"""Compile kernel groups in a helper process while the main process compiles the others (first run).

numba compiles on one core.  On the first run (empty cache) the main process, at its first kernel
compile, starts ``python -m graspsim._warmup warm simplify island hull``: a helper that compiles
the contact-polygon reduction, the LCP / island-solver kernels and the grasp-quality hull search,
with the argument types of the README's first job (:mod:`graspsim._kernel_manifest`), into numba's
disk cache.  Meanwhile the main process compiles collision and constraint-row kernels; when it reaches the island solver it loads it from the
cache instead of compiling it.  The helper ends when done, or when the main process exits.

Kernels are grouped by file (``GROUPS``); a kernel calls kernels of its own group only (a test checks
the imports).  numba's cache files of one function are not safe against two processes saving
*different* signatures at once, so every top-level compile holds an exclusive lock on its group's
lock file for its duration (``exclusive``), in every process: a process that needs a kernel of a
group that another process is compiling waits for it, then loads from the cache.  No locking (and no
helper) where ``fcntl`` is missing.  ``GRASPSIM_WARMUP=0`` disables the helper
(``GRASPSIM_WARMUP=simplify,island,hull`` is the default list of its groups).

``python -m graspsim._warmup record`` runs the README's first job with an empty cache and rewrites
the manifest.
"""
from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:     # pragma: no cover - not POSIX
    fcntl = None

from . import _compile

PACKAGE = Path(__file__).resolve().parent
#: kernel file (inside the package) -> group
GROUPS = {
    "collision/kernels.py": "collision",
    "collision/primitives.py": "collision",
    "collision/_impact_kernel.py": "collision",
    "collision/_intersect_kernel.py": "intersect",
    "collision/_simplify_kernel.py": "simplify",
    "dynamics/_rows_kernel.py": "rows",
    "dynamics/_island_kernel.py": "island",
    "dynamics/_tree_kernel.py": "island",
    "dynamics/_step_kernel.py": "step",
    "lcp/_kernel.py": "island",
    "lcp/_bpp.py": "island",
    "grasp/_hull.py": "hull",
    "rigidbody/_kernels.py": "rigidbody",
    "_kinematics_kernel.py": "kinematics",
}
# What the helper compiles, in this order.  Balance measured with bench_first_run --trace
# (2026-11-25, load 4.7, helpers linked only): main process 32 s of compile CPU (collision 19.6,
# rows 10.6, polygon reduction 2.1) + 4 s of its own work; helper 33 s (island 23, hull 10) + 1 s,
# starting ~2.5 s later.  With the polygon reduction in the helper, the helper finished 5 s last.
# Again 2026-11-25 (load 1.7, 141 kernels, cylinder routines and library sorts gone): main 26-27 s
# of compile CPU + 2 s, helper 32-34 s (island 24-25, hull 8.5) + 1 s; the main process now waits
# ~7 s for the helper.  Moving the whole hull group to it would make it the longer one (the hull
# group has one top-level kernel, hull_search, since its initial simplex became a helper).
# Again (load 0.6, public kernels linked through helper twins, 159 kernels): main 28.2 s of compile
# CPU (collision 15.2, rows 11.7, polygon reduction 1.3) + 1.9 s, helper 23.2 s (island 15.3, hull
# 7.9) + 1 s: the polygon reduction moves to the helper (first, as the main process needs it at ~16 s).
# 2026-11-26: the compiled overlap test (intersect, ~4 s) to the helper, last: the main process
# first needs it at the first impact search of the simulation (the world checks at load use FCL).
HELPER_GROUPS = ("simplify", "island", "hull", "intersect")
#: groups whose kernels call helpers of other groups: compiling them also holds those groups' locks
#: (taken first, always in this order: no two processes wait on each other), so that no helper of
#: another group is compiled by two processes at once
DEPENDS = {"intersect": ("collision",),
           # the rollout loop reaches these groups' kernels by address: its compile types them (and
           # compiles any of them not in the cache yet)
           "step": ("collision", "simplify", "rows", "island", "intersect")}
ENV = "GRASPSIM_WARMUP"                 # "0": no helper; or the groups it compiles, comma-separated
MANIFEST_ENV = "GRASPSIM_KERNEL_MANIFEST"
LOCK_WAIT = 600.0                       # s, longest wait for another process's compile of a group
JOB = ("grasp", "worlds/barrett_mug.yaml", "--lift", "0.1")     # the README's first job

_local = threading.local()              # compile() nesting in this thread
_active = 0                             # top-level compiles running in this process
_held: dict[str, list] = {}             # group -> [open lock file, count] held by this process
_held_lock = threading.Lock()
_helper: subprocess.Popen | None = None
_spawned = False
_kernels: list | None = None


def group_of(dispatcher) -> str:
    """The group of a kernel (by its file inside the package); 'other' outside the table."""
    return group_of_function(dispatcher.py_func)


def group_of_function(f) -> str:
    """The group of a kernel's Python function; 'other' outside the table."""
    try:
        rel = Path(f.__code__.co_filename).resolve().relative_to(PACKAGE).as_posix()
    except (ValueError, AttributeError):
        return "other"
    return GROUPS.get(rel, "other")


def _cache_dir() -> Path | None:
    from numba.core import config

    return Path(config.CACHE_DIR) if config.CACHE_DIR else None


def _acquire(group: str) -> None:
    with _held_lock:
        h = _held.get(group)
        if h is not None:
            h[1] += 1
            return
    d = _cache_dir()
    f = None
    if fcntl is not None and d is not None:
        try:
            (d / "locks").mkdir(parents=True, exist_ok=True)
            f = open(d / "locks" / f"{group}.lock", "a+b")
        except OSError:
            f = None
    if f is not None:
        t0 = time.time()
        locked = _wait_lock(f)
        if time.time() - t0 > 0.01:
            _compile.trace(kind="wait", group=group, t0=t0, t1=time.time())
        if not locked:
            f.close()
            f = None
    with _held_lock:
        _held[group] = [f, 1]


def _wait_lock(f) -> bool:
    """Lock ``f`` exclusively, waiting while another process compiles the group (at most
    ``LOCK_WAIT`` s: past that, go on unlocked rather than hang).  False if not locked."""
    t_end = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > t_end:
                return False
            time.sleep(0.05)
        except OSError:
            return False


def _release(group: str) -> None:
    with _held_lock:
        h = _held[group]
        h[1] -= 1
        if h[1]:
            return
        del _held[group]
    if h[0] is not None:
        h[0].close()                            # closing drops the lock


@contextmanager
def group_lock(group: str):
    """Hold ``group``'s inter-process compile lock, and first those of the groups it depends on
    (:data:`DEPENDS`; re-entrant within this process)."""
    held = (*DEPENDS.get(group, ()), group)
    for g in held:
        _acquire(g)
    try:
        yield
    finally:
        for g in reversed(held):
            _release(g)


@contextmanager
def exclusive(dispatcher):
    """Around a kernel's ``compile``: top-level compiles hold their group's lock; nested ones (the
    callees, same group) run inside their caller's."""
    global _active
    depth = getattr(_local, "depth", 0)
    _local.depth = depth + 1
    try:
        if depth:
            yield
        else:
            with _held_lock:
                _active += 1
            try:
                with group_lock(group_of(dispatcher)):
                    yield
            finally:
                with _held_lock:
                    _active -= 1
    finally:
        _local.depth = depth
    if not depth and not _active and not helper_running():
        _compile.idle()


# -- the manifest -----------------------------------------------------------------------------------

def _manifest() -> list:
    """The manifest's entries (``GRASPSIM_KERNEL_MANIFEST``: another manifest file, for tests)."""
    global _kernels
    if _kernels is None:
        path = os.environ.get(MANIFEST_ENV)
        if path:
            ns: dict = {}
            exec(Path(path).read_text(), ns)
            _kernels = ns["KERNELS"]
        else:
            from ._kernel_manifest import KERNELS

            _kernels = KERNELS
    return _kernels


_general: dict | None = None


def _layout_free(have, want) -> bool:
    """``want`` is ``have`` or the same array type in any layout ('A'): numba converts safely."""
    from numba.core import types

    return have == want or (isinstance(have, types.Array) and isinstance(want, types.Array)
                            and want.layout == "A" and have.layout != "A" and have.dtype == want.dtype
                            and have.ndim == want.ndim and have.mutable == want.mutable
                            and have.aligned == want.aligned)


def general_signature(dispatcher, sig):
    """The manifest's signature of ``dispatcher`` that takes ``sig``'s arrays in any layout, if the
    first job needs that one anyway; else ``sig`` itself.

    A kernel called once with contiguous arrays and once with strided views (a column of a
    record-like array) is then compiled once, for the strided case, instead of twice.
    """
    global _general
    if not isinstance(sig, tuple) or not sig:
        return sig
    if _general is None:
        _general = {}
        for module, qualname, text, _ in _manifest():
            if "'A'" in text:
                try:
                    _general.setdefault((module, qualname), []).append(parse_signature(text))
                except Exception:       # a stale manifest: nothing to generalise
                    pass
    f = dispatcher.py_func
    for g in _general.get((f.__module__, f.__qualname__), ()):
        if g != sig and len(g) == len(sig) and all(_layout_free(a, b) for a, b in zip(sig, g)):
            return g
    return sig


def manifest_units() -> int:
    """Kernels (function x signature) the README's first job compiles."""
    return sum(k[3] for k in _manifest())


def _manifest_tag() -> str:
    import hashlib

    return hashlib.sha1(repr(_manifest()).encode()).hexdigest()[:12]


def _marker(group: str) -> Path | None:
    d = _cache_dir()
    return None if d is None else d / "warm" / f"{group}-{_manifest_tag()}"


def parse_signature(text: str) -> tuple:
    """A signature as recorded (``str`` of numba's argument-type tuple) back to numba types."""
    from numba.core import types

    ns = dict(vars(types))
    ns["omitted"] = lambda default: types.Omitted(default)
    return eval(text, {"__builtins__": {}}, ns)


def warm(groups) -> None:
    """Compile (or load) the manifest's kernels of ``groups``, holding each group's lock meanwhile."""
    import importlib

    for g in groups:
        with group_lock(g):
            for module, qualname, sig, _ in _manifest():
                disp = getattr(importlib.import_module(module), qualname, None)
                if disp is None or group_of(disp) != g:
                    continue
                try:
                    disp.compile(parse_signature(sig))
                except Exception:       # a stale manifest entry: the main process compiles what it needs
                    pass
            m = _marker(g)
            if m is not None:
                m.parent.mkdir(parents=True, exist_ok=True)
                m.touch()
        print("done", g, flush=True)


# -- the helper, seen from the main process ---------------------------------------------------------

def helper_running() -> bool:
    return _helper is not None and _helper.poll() is None


def spawn() -> None:
    """Start the helper for the groups not yet warmed (once per process; not in the helper)."""
    global _helper, _spawned
    want = os.environ.get(ENV, ",".join(HELPER_GROUPS))
    if _spawned or want == "0" or fcntl is None or not _manifest():
        return
    _spawned = True
    todo = [g for g in want.split(",") if (m := _marker(g)) is not None and not m.exists()]
    if not todo:
        return
    env = dict(os.environ)
    env[ENV] = "0"
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE.parent)] + [p for p in [env.get("PYTHONPATH")] if p])
    try:
        _helper = subprocess.Popen([sys.executable, "-m", "graspsim._warmup", "warm", *todo],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, env=env, text=True)
    except OSError:
        return
    threading.Thread(target=_read, args=(_helper,), daemon=True, name="graspsim-warmup").start()
    atexit.register(_stop)


def _read(proc: subprocess.Popen) -> None:
    """Forward the helper's compile counts to the progress line."""
    for line in proc.stdout:
        if line.startswith("compiled"):
            _compile.compiled(int(line.split()[1]))
    proc.wait()
    if not _active:
        _compile.idle()


def _stop() -> None:
    """At exit: a helper still compiling is stopped (its finished kernels stay cached)."""
    if helper_running():
        _helper.terminate()
        try:
            _helper.wait(5)
        except subprocess.TimeoutExpired:
            _helper.kill()


# -- command line -----------------------------------------------------------------------------------

def _record(out: Path) -> None:
    """Run the first job with an empty cache and no helper; write its top-level compiles to ``out``."""
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, XDG_CACHE_HOME=tmp, **{ENV: "0", _compile.RECORD_ENV: f"{tmp}/kernels.json"})
        env.pop("NUMBA_CACHE_DIR", None)
        env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE.parent)] + [p for p in [env.get("PYTHONPATH")] if p])
        subprocess.run([sys.executable, "-m", "graspsim.cli", *JOB], cwd=PACKAGE.parent, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        rec = json.loads(Path(f"{tmp}/kernels.json").read_text())
    lines = ['"""Top-level kernels of the README\'s first job and their argument types, as compiled.',
             "",
             "Written by ``python -m graspsim._warmup record``; read by the warm-up helper (which compiles",
             "the entries of its groups) and by the compile progress (the total).  Entries: (module,",
             'function, signature, kernels compiled with it including its callees)."""',
             "", "KERNELS = ["]
    lines += [f"    {tuple(r)!r}," for r in rec]
    lines.append("]")
    out.write_text("\n".join(lines) + "\n")
    print(f"{out}: {len(rec)} top-level kernels, {sum(r[3] for r in rec)} in all")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "warm":
        _compile.report_to(lambda k: print("compiled", k, flush=True))
        warm(argv[1:])
        return 0
    if argv and argv[0] == "record":
        _record(Path(argv[1]) if len(argv) > 1 else PACKAGE / "_kernel_manifest.py")
        return 0
    print("usage: python -m graspsim._warmup warm GROUP... | record [FILE]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    # run the package's module, not this __main__ copy: the compile hooks use that one's lock table
    from graspsim._warmup import main as _main

    sys.exit(_main())

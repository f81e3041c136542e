"""The first run on a machine: compile progress, the shared kernel cache, the warm-up helper.

Every test runs small kernels in subprocesses with a cache directory of its own (numba's cache and
these modules' state are per process); compiles are counted with numba's event API, not timed.
"""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import graspsim
from graspsim import _compile, _warmup

REPO = Path(graspsim.__file__).resolve().parent.parent

# Union-find islands of 4 bodies: 0-1 and 2-3 in contact, 0 against a static body (-1).
# Independently: two islands {0, 1}, {2, 3}, numbered by increasing root component (1 < 3).
# records the graspsim kernels a subprocess compiles (numba compile events), into `compiled`
COMPILE_LISTENER = """
import numpy as np
from numba.core import event
compiled = []
class L(event.Listener):
    def on_start(self, e):
        f = e.data["dispatcher"].py_func
        if f.__module__.startswith("graspsim"):
            compiled.append(f.__qualname__)
    def on_end(self, e):
        pass
event.register("numba:compile", L())
"""

ISLANDS = """
import json, sys
""" + COMPILE_LISTENER + """import graspsim.dynamics._rows_kernel as RK
lab, k = RK.islands(np.arange(4), 4, np.array([0, 2, -1]), np.array([1, 3, 0]))
print(json.dumps({"labels": lab.tolist(), "n": int(k), "compiled": sorted(compiled), "file": RK.__file__}))
"""


def _env(cache: Path, pythonpath: Path = REPO, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "GRASPSIM_"))}
    env.update(XDG_CACHE_HOME=str(cache), PYTHONPATH=str(pythonpath), GRASPSIM_WARMUP="0")
    env.update(extra)
    return env


def _run(code: str, env: dict, cwd: Path) -> tuple[dict, str]:
    p = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def _cache_files(cache: Path) -> dict:
    root = cache / "graspsim" / "numba"
    return {p.relative_to(root).as_posix(): p.stat().st_size for p in root.rglob("*.nb[ic]")}


def _progress_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith(_compile.MESSAGE)]


def test_progress_only_when_compiling(tmp_path):
    env = _env(tmp_path / "cache")
    out, err = _run(ISLANDS, env, tmp_path)
    assert out["labels"] == [0, 0, 1, 1] and out["n"] == 2
    assert out["compiled"] == ["_find", "islands"]          # the kernel and its helper
    lines = _progress_lines(err)
    assert lines, err
    # the summary at exit counts what numba compiled, against the first job's total
    total = _warmup.manifest_units()
    assert lines[-1].startswith(f"{_compile.MESSAGE}: 2/{total} done [")
    # warm: loaded from the cache, nothing compiled, nothing said
    out, err = _run(ISLANDS, env, tmp_path)
    assert out["labels"] == [0, 0, 1, 1] and out["compiled"] == []
    assert _progress_lines(err) == [] and err == ""


def test_progress_line_on_a_terminal(monkeypatch):
    """On a terminal: one tqdm line with the count, cleared when compiling pauses."""
    class Tty:
        def __init__(self):
            self.text = ""

        def write(self, s):
            self.text += s

        def flush(self):
            pass

        def isatty(self):
            return True

    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    monkeypatch.setenv(_warmup.ENV, "0")
    monkeypatch.setattr(_compile, "BAR_INTERVAL", 0.0)
    p = _compile._Progress(at_exit=False)
    for _ in range(3):
        p.compiled(1)
    shown = tty.text
    assert shown.endswith(f"\r{_compile.MESSAGE}: 3/{_warmup.manifest_units()} [00:00]")
    assert "\n" not in shown                              # one line, redrawn
    p.idle()
    assert p.bar is None and tty.text[len(shown):].strip(" \r") == ""     # cleared for the job's output


def _copy_package(dst: Path) -> Path:
    shutil.copytree(REPO / "graspsim", dst / "graspsim", ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def test_checkouts_share_the_cache(tmp_path):
    """Two copies of the package (two clones) compile a kernel once between them."""
    cache = tmp_path / "cache"
    a, b = _copy_package(tmp_path / "a"), _copy_package(tmp_path / "b")
    out_a, _ = _run(ISLANDS, _env(cache, a), tmp_path)
    files_a = _cache_files(cache)
    out_b, err_b = _run(ISLANDS, _env(cache, b), tmp_path)
    assert out_a["file"].startswith(str(a)) and out_b["file"].startswith(str(b))
    assert out_a["compiled"] == ["_find", "islands"]
    assert out_b["compiled"] == [] and _progress_lines(err_b) == []
    assert out_b["labels"] == out_a["labels"] == [0, 0, 1, 1]
    assert _cache_files(cache) == files_a                    # nothing added for the second checkout
    # one directory for the kernel sources, entries filed by their place in the package
    dirs = list((cache / "graspsim" / "numba").iterdir())
    assert len(dirs) == 1
    assert all(f.split("/")[1:3] == ["graspsim", "dynamics"] for f in files_a), files_a


def test_cache_directories_stay_bounded(tmp_path):
    """Each edit of a kernel file starts a new cache directory.  The newest few are kept, and any
    used within the last hour (another checkout may be running); older ones are deleted."""
    cache = tmp_path / "cache"
    base = cache / "graspsim" / "numba"
    pkg = _copy_package(tmp_path / "c")
    kernel_file = pkg / "graspsim" / "dynamics" / "_rows_kernel.py"
    code = "import os, graspsim; os.makedirs(os.environ['NUMBA_CACHE_DIR']); print(os.environ['NUMBA_CACHE_DIR'])"

    def new_version(i: int) -> str:
        with open(kernel_file, "a") as f:
            f.write(f"# edit {i}\n")
        p = subprocess.run([sys.executable, "-c", code], env=_env(cache, pkg), cwd=tmp_path, capture_output=True,
                           text=True)
        assert p.returncode == 0, p.stderr
        return Path(p.stdout.strip()).name

    def age_all(seconds: float) -> None:
        for d in base.iterdir():
            t = d.stat().st_mtime - seconds
            os.utime(d, (t, t))

    made = []
    for i in range(7):          # a version an hour and a bit, seven times
        made.append(new_version(i))
        age_all(graspsim._PRUNE_IDLE + 60)
    assert len(set(made)) == 7
    assert sorted(p.name for p in base.iterdir()) == sorted(made[-graspsim._KEEP_CACHES:])
    # five versions within the hour: the old ones go, none of the five (one more than kept)
    made += [new_version(i) for i in range(7, 12)]
    assert sorted(p.name for p in base.iterdir()) == sorted(made[7:])


MAIN_WITH_HELPER = """
import fcntl, json, time
""" + COMPILE_LISTENER + """from graspsim import _warmup
import graspsim.collision.kernels as K
import graspsim.dynamics._rows_kernel as RK
# a collision kernel: the first compile here starts the helper (group 'rows')
X = np.eye(4)[None].copy(); X[0, :3, 3] = [1.0, 2.0, 3.0]
lo, hi = K.world_aabbs(X, np.array([[-1.0, -2.0, -3.0]]), np.array([[1.0, 2.0, 3.0]]), np.array([True]))
spawned = _warmup._helper is not None
if spawned:     # wait until the helper holds the group (or is done with it)
    lock, marker = _warmup._cache_dir() / "locks" / "rows.lock", _warmup._marker("rows")
    while not marker.exists():
        if lock.exists():
            with open(lock, "a+b") as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    fcntl.flock(f, fcntl.LOCK_UN)
                except BlockingIOError:
                    break
        time.sleep(0.01)
lab, k = RK.islands(np.arange(4), 4, np.array([0, 2, -1]), np.array([1, 3, 0]))
print(json.dumps({"aabb": [lo.tolist(), hi.tolist()], "labels": lab.tolist(), "spawned": spawned,
                  "compiled": sorted(compiled)}))
"""


def test_helper_compiles_a_group_in_parallel(tmp_path):
    """The first compile starts the helper on its groups; the main process, needing one of them,
    waits for the helper and loads what it compiled instead of compiling it again."""
    sig = ("(Array(int64, 1, 'C', False, aligned=True), int64, Array(int64, 1, 'C', False, aligned=True), "
           "Array(int64, 1, 'C', False, aligned=True))")
    manifest = tmp_path / "manifest.py"
    manifest.write_text(f"KERNELS = [('graspsim.dynamics._rows_kernel', 'islands', {sig!r}, 2)]\n")
    env = _env(tmp_path / "cache", GRASPSIM_WARMUP="rows", GRASPSIM_KERNEL_MANIFEST=str(manifest))
    out, err = _run(MAIN_WITH_HELPER, env, tmp_path)
    assert out["aabb"] == [[[0.0, 0.0, 0.0]], [[2.0, 4.0, 6.0]]]
    assert out["labels"] == [0, 0, 1, 1]
    assert out["spawned"]
    assert "islands" not in out["compiled"] and "world_aabbs" in out["compiled"]
    # the summary counts the helper's two kernels with this process's one
    assert _progress_lines(err)[-1].startswith(f"{_compile.MESSAGE}: 3/3 done [")
    # warm: nothing compiled, no helper
    out, err = _run(MAIN_WITH_HELPER, env, tmp_path)
    assert out["compiled"] == [] and not out["spawned"] and err == ""


UNLITERAL = """
import json, sys
from numba.core import event
compiled = []
class L(event.Listener):
    def on_start(self, e):
        f = e.data["dispatcher"].py_func
        if f.__module__ == "kmod":
            compiled.append([f.__qualname__, str(e.data["args"])])
    def on_end(self, e):
        pass
event.register("numba:compile", L())
sys.path.insert(0, ".")
import kmod
print(json.dumps({"top": kmod.top(2.0), "h": kmod._h(2.0, False), "compiled": compiled}))
"""
KMOD = """
from graspsim._jit import njit
@njit
def _h(x, flag):
    return x + 1.0 if flag else x - 1.0
@njit
def top(x):
    return 10.0 * _h(x, True) + _h(x, False)
"""


def test_kernels_compile_once_per_argument_types(tmp_path):
    """A helper called with the constants True and False is compiled once (for bool), without a
    Python wrapper; called from Python it still answers (through an uncached twin)."""
    (tmp_path / "kmod.py").write_text(KMOD)
    env = _env(tmp_path / "cache")
    out, _ = _run(UNLITERAL, env, tmp_path)
    assert out["top"] == 31.0 and out["h"] == 1.0
    assert out["compiled"] == [["top", "(float64,)"], ["_h", "(float64, bool)"], ["_h", "(float64, bool)"]]
    out, _ = _run(UNLITERAL, env, tmp_path)
    assert out["top"] == 31.0 and out["h"] == 1.0
    assert out["compiled"] == [["_h", "(float64, bool)"]]       # the twin only: top came from the cache


def _imports(path: Path) -> set[str]:
    """Package-relative files imported by a package module (``from .x import`` forms)."""
    rel = path.relative_to(REPO / "graspsim")
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = rel.parents[node.level - 1]
            mod = (base / node.module.replace(".", "/")) if node.module else base
            out.add(mod.with_suffix(".py").as_posix())
    return out


def test_kernel_groups_are_closed():
    """Kernels call kernels of their own group only, or of a group they declare in
    ``_warmup.DEPENDS`` (whose locks their compiles then hold too: the helper and the locks rely
    on it), and every file with kernels has a group."""
    pkg = REPO / "graspsim"
    users = {p.relative_to(pkg).as_posix() for p in pkg.rglob("*.py")
             if re.search(r"^from \.+_jit import njit", p.read_text(), re.M)}
    assert users == set(_warmup.GROUPS)
    for f, g in _warmup.GROUPS.items():
        for imp in _imports(pkg / f):
            if imp in _warmup.GROUPS:
                assert _warmup.GROUPS[imp] in (g, *_warmup.DEPENDS.get(g, ())), (f, imp)


def test_manifest_names_existing_kernels():
    """Every manifest entry is a kernel of a known group with a signature numba can read back
    (a kernel renamed or moved since ``python -m graspsim._warmup record`` would be skipped)."""
    import importlib

    from graspsim._jit import is_kernel

    entries = _warmup._manifest()
    assert len(entries) > 10 and _warmup.manifest_units() >= len(entries)
    for module, qualname, sig, units in entries:
        disp = getattr(importlib.import_module(module), qualname)
        assert is_kernel(disp) and _warmup.group_of(disp) in _warmup.GROUPS.values()
        assert str(_warmup.parse_signature(sig)) == sig and units >= 1
    groups = {_warmup.group_of(getattr(importlib.import_module(m), q)) for m, q, _, _ in entries}
    assert set(_warmup.HELPER_GROUPS) <= groups


LAYOUT = """
import json, sys
""" + COMPILE_LISTENER.replace('f.__module__.startswith("graspsim")', 'f.__module__ == "kmod2"') + """
sys.path.insert(0, ".")
import kmod2
a = np.arange(12.0).reshape(4, 3)
c, s = kmod2.colsum(a[:, 0].copy()), kmod2.colsum(a[:, 1])    # contiguous, then a strided view
c2 = kmod2.colsum(a[:, 2].copy())
print(json.dumps({"sums": [c, s, c2], "compiled": compiled,
                  "sigs": [str(k) for k in kmod2.colsum.overloads]}))
"""
KMOD2 = """
from graspsim._jit import njit
@njit
def colsum(x):
    t = 0.0
    for v in x:
        t += v
    return t
"""


def test_any_layout_signature_serves_contiguous_calls(tmp_path):
    """The first job calls some kernels with contiguous arrays and with strided views of the same
    dtype: the manifest's any-layout ('A') signature is compiled once and serves both."""
    (tmp_path / "kmod2.py").write_text(KMOD2)
    manifest = tmp_path / "manifest.py"
    manifest.write_text("KERNELS = [('kmod2', 'colsum', \"(Array(float64, 1, 'A', False, aligned=True),)\", 1)]\n")
    out, _ = _run(LAYOUT, _env(tmp_path / "cache", GRASPSIM_KERNEL_MANIFEST=str(manifest)), tmp_path)
    assert out["sums"] == [0.0 + 3 + 6 + 9, 1.0 + 4 + 7 + 10, 2.0 + 5 + 8 + 11]
    assert out["compiled"] == ["colsum"]
    assert out["sigs"] == ["(Array(float64, 1, 'A', False, aligned=True),)"]
    # without the manifest entry: numba's way, one signature per layout
    manifest.write_text("KERNELS = []\n")
    out, _ = _run(LAYOUT, _env(tmp_path / "cache2", GRASPSIM_KERNEL_MANIFEST=str(manifest)), tmp_path)
    assert out["compiled"] == ["colsum", "colsum"] and len(out["sigs"]) == 2


KMOD3 = """
from graspsim._jit import njit
@njit
def _h(x, flag):
    return x + 1.0 if flag else x - 1.0
@njit
def top(x):
    y = float(x)
    return 10.0 * _h(y, True) + _h(y, False)
"""
LINK_ONLY = """
import json, sys
sys.path.insert(0, ".")
""" + COMPILE_LISTENER.replace('f.__module__.startswith("graspsim")', 'f.__module__ == "kmod3"') + """
import kmod3
top = kmod3.top(3) if sys.argv[1:] == ["int"] else kmod3.top(2.0)
h = kmod3._h.overloads[next(iter(kmod3._h.overloads))].library
t = kmod3.top.overloads[next(iter(kmod3.top.overloads))].library
print(json.dumps({"top": top, "compiled": compiled, "h_link_only": getattr(h, "graspsim_link_only", False),
                  "top_link_only": getattr(t, "graspsim_link_only", False)}))
"""


def test_helper_code_is_made_only_in_its_callers(tmp_path):
    """A helper's library is linked into its callers without machine code of its own; its cache
    entry (bitcode) serves a later compile of a caller for new argument types."""
    (tmp_path / "kmod3.py").write_text(KMOD3)
    env = _env(tmp_path / "cache")
    out, _ = _run(LINK_ONLY, env, tmp_path)
    assert out["top"] == 31.0 and out["h_link_only"] and not out["top_link_only"]
    assert out["compiled"] == ["top", "_h"]
    # a new caller signature (int argument): `top` compiles again, `_h` (float64, bool) comes from the
    # cache as bitcode and is linked in: 10 * (3 + 1) + (3 - 1)
    p = subprocess.run([sys.executable, "-c", LINK_ONLY, "int"], env=env, cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["top"] == 42.0 and out["compiled"] == ["top"] and out["h_link_only"]


KMOD4 = """
import numpy as np
from graspsim._jit import njit
@njit
def mid(x):
    a = np.empty(3)
    a[:] = x
    return a.sum()
@njit
def top(x):
    return 2.0 * mid(x) + 1.0
"""
TWIN = """
import json, sys
sys.path.insert(0, ".")
from numba.core import event
compiled, compiling_numba = [], []
class L(event.Listener):
    def on_start(self, e):
        d = e.data["dispatcher"]
        if d.py_func.__module__ == "kmod4":
            compiled.append(d.py_func.__qualname__)
        elif not getattr(d, "graspsim_kernel", False):
            compiling_numba.append(d)
    def on_end(self, e):
        pass
event.register("numba:compile", L())
import kmod4
libs = lambda d: [c.library for c in d.overloads.values()]
out = {"top": kmod4.top(2.0)}
out["mid_full_before"] = len(kmod4.mid.overloads)
twin = kmod4.mid._callee
out["twin_link_only"] = [getattr(l, "graspsim_link_only", False) for l in libs(twin)] if twin else []
out["numba_link_only"] = sorted({getattr(l, "graspsim_link_only", False) for d in compiling_numba for l in libs(d)})
out["mid"] = kmod4.mid(2.0)
out["mid_link_only"] = [getattr(l, "graspsim_link_only", False) for l in libs(kmod4.mid)]
out["compiled"] = compiled
print(json.dumps(out))
"""


def test_public_kernel_called_from_a_kernel_is_linked_not_compiled_in_full(tmp_path):
    """A public kernel called from another kernel is compiled there as its helper twin (code linked
    into the caller, no machine code of its own), and with numba's own @overload code (np.empty)
    link-only too; a Python call still compiles the public kernel in full, also in a process that
    loads the caller from the cache (the twin's bitcode entry is never loaded for a Python call)."""
    (tmp_path / "kmod4.py").write_text(KMOD4)
    env = _env(tmp_path / "cache")
    out, _ = _run(TWIN, env, tmp_path)
    assert out["top"] == 13.0 and out["mid"] == 6.0             # 2 * (3 * 2) + 1, 3 * 2
    assert out["mid_full_before"] == 0 and out["twin_link_only"] == [True]
    assert out["numba_link_only"] == [True]                       # np.empty's and the fill's code
    assert out["mid_link_only"] == [False]                        # called from Python: machine code
    assert out["compiled"] == ["top", "mid", "mid"]               # twin in top, then the public one
    # warm: top loads from the cache; a Python call of mid loads its own (full) entry
    out, _ = _run(TWIN, env, tmp_path)
    assert out["top"] == 13.0 and out["mid"] == 6.0 and out["compiled"] == []
    assert out["mid_link_only"] == [False]


def test_flag_values_match_numbas_own():
    """TargetConfig.values() (graspsim's one merge with a tested numba) gives numba's dict: every
    option, set or default, in the options' order (the overload cache keys on it)."""
    from numba.core import compiler, cpu, targetconfig

    from graspsim import _flag_values, _jit, _link_only  # noqa: F401  (_jit installs the patches)

    # patched exactly with a tested numba; with any other, numba's own method is left in place
    want_fn = _flag_values._values if _link_only.ACTIVE else _flag_values._orig_values
    assert targetconfig.TargetConfig.values is want_fn
    f = compiler.Flags()
    f.nrt = True
    f.fastmath = cpu.FastMathOptions({"reassoc"})
    f.boundscheck = None
    g = compiler.Flags(f)
    g.no_cpython_wrapper = True
    for flags in (compiler.Flags(), f, g):
        want = {k: getattr(flags, k) for k in flags.options}
        got = flags.values()
        assert got == want and list(got) == list(want)
    assert f != g and f == compiler.Flags(f) and hash(f) == hash(compiler.Flags(f))

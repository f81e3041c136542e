"""A bigger fuzz campaign over the shipped models than the suite runs (not collected by pytest).

    python tests/models/hostile/campaign.py --files 3000 --out /tmp/campaign

Writes mutated copies of the shipped robots, objects and worlds (systematic: every leaf of every
file replaced by each hostile value; then random: the suite's tree and text mutations), then runs
``graspsim validate`` over them as subprocesses (50 files per process, 4 GB address-space limit,
a timeout; a failing batch is re-run file by file) and prints: files tried, accepted, clean errors
(exit 2, FILE:LINE: FIELD: PROBLEM lines without control characters), tracebacks, hangs.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests"))
from test_hostile_models import (CONTROL, HOSTILE_VALUES, SHIPPED_DIRS, TARGETS, _mutate, _nodes,  # noqa: E402
                                 _set, _text_mutate)

LEAF_VALUES = [10 ** 400, "9" * 5000, 1e300, -1e300, float("nan"), -1, 0, "1:30", "0x10", "010", "yes", "\x1b[2J",
               "a\u202eb", [], {}, [[[[[[1]]]]]]]
CHILD = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30)); "
         "from graspsim.cli import main; sys.exit(main(sys.argv[1:]))")


def build(out: Path, n_random: int, seed: int) -> list[Path]:
    for d in SHIPPED_DIRS:
        (out / d).mkdir(parents=True, exist_ok=True)
        for f in (ROOT / d).glob("*.yaml"):
            shutil.copy(f, out / d / f.name)
    if not (out / "objects" / "meshes").exists():
        (out / "objects" / "meshes").symlink_to(ROOT / "objects" / "meshes")
    files, k = [], 0
    # systematic: one leaf of one file replaced by one hostile value (a sample of the leaves)
    rnd = random.Random(seed)
    for t in TARGETS:
        tree = yaml.safe_load((ROOT / t).read_text())
        leaves = [p for p, v in _nodes(tree) if p and not isinstance(v, (dict, list))]
        for p in rnd.sample(leaves, min(len(leaves), 12)):
            for v in LEAF_VALUES:
                tr = yaml.safe_load((ROOT / t).read_text())
                files.append(_write(out, t, k, yaml.safe_dump(_set(tr, p, v), allow_unicode=True)))
                k += 1
    # random: tree and text mutations
    for i in range(n_random):
        t = rnd.choice(TARGETS)
        src = (ROOT / t).read_text()
        r = random.Random(rnd.getrandbits(32))
        if r.random() < 0.3:
            text = _text_mutate(src, r)
        else:
            try:
                text = yaml.safe_dump(_mutate(yaml.safe_load(src), r, r.randint(1, 5)), allow_unicode=True)
            except (yaml.YAMLError, ValueError, OverflowError):
                continue
        files.append(_write(out, t, k, text))
        k += 1
    return files


def _write(out: Path, target: str, k: int, text: str) -> Path:
    p = out / Path(target).parent / f"m{k:05d}_{Path(target).name}"
    p.write_text(text, encoding="utf-8")
    return p


LINE = re.compile(r"^error: (.+?)(:\d+)?: ")


def run(files: list[Path], timeout: float) -> tuple[Counter, list]:
    stats, bad = Counter(), []

    def one(batch):
        t0 = time.perf_counter()
        try:
            r = subprocess.run([sys.executable, "-c", CHILD, "validate", *map(str, batch)], capture_output=True,
                               text=True, timeout=timeout * len(batch), env={**os.environ, "PYTHONPATH": str(ROOT)})
        except subprocess.TimeoutExpired:
            return None, time.perf_counter() - t0
        return r, time.perf_counter() - t0

    for i in range(0, len(files), 50):
        batch = files[i:i + 50]
        r, dt = one(batch)
        if r is not None and r.returncode in (0, 2) and "Traceback" not in r.stderr and _clean(r.stderr):
            stats["ok"] += r.stdout.count("ok: ")
            stats["clean error"] += len(batch) - r.stdout.count("ok: ")
            stats["seconds"] += dt
            continue
        for f in batch:                        # find the culprits
            r, dt = one([f])
            stats["seconds"] += dt
            if r is None:
                stats["hang"] += 1
                bad.append(("hang", f, ""))
            elif "Traceback" in r.stderr or r.returncode not in (0, 2):
                stats["traceback"] += 1
                bad.append(("traceback", f, r.stderr[-800:]))
            elif not _clean(r.stderr):
                stats["unclean message"] += 1
                bad.append(("unclean", f, r.stderr[-800:]))
            elif r.returncode == 0:
                stats["ok"] += 1
            else:
                stats["clean error"] += 1
    return stats, bad


def slowest(files: list[Path], n: int = 5) -> list[tuple[float, Path]]:
    """In-process time of what ``validate`` does per file (load, and a world's start check)."""
    from graspsim import ModelError
    from graspsim.model.checks import start_problems
    from graspsim.model.loader import load_any

    times = []
    for f in files:
        t0 = time.perf_counter()
        try:
            m = load_any(f)
            if type(m).__name__ == "World":
                start_problems(m)
        except ModelError:
            pass
        times.append((time.perf_counter() - t0, f))
    return sorted(times, reverse=True)[:n]


def _clean(stderr: str) -> bool:
    return all(LINE.match(ln) and not CONTROL.search(ln) for ln in stderr.splitlines())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000, help="random mutations (plus the systematic ones)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per file")
    ap.add_argument("--out", default="/tmp/graspsim_campaign")
    ap.add_argument("--times", action="store_true", help="also time every file in-process and print the slowest")
    a = ap.parse_args()
    out = Path(a.out)
    shutil.rmtree(out, ignore_errors=True)
    files = build(out, a.files, a.seed)
    stats, bad = run(files, a.timeout)
    print(f"files tried: {len(files)}")
    for k in ("ok", "clean error", "traceback", "hang", "unclean message"):
        print(f"  {k}: {stats[k]}")
    print(f"  total validate time: {stats['seconds']:.0f} s")
    if a.times:
        for dt, f in slowest(files):
            print(f"  slowest in-process: {dt:.2f} s  {f}")
    for kind, f, err in bad[:20]:
        print(f"--- {kind}: {f}\n{err}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""On-disk cache of robots built from URDF, so a new process skips XML, mesh loading and hulls.

An entry is the pickled :class:`~graspsim.model.description.Robot` plus the model warnings its
build raised (replayed on a hit, so ``graspsim validate`` says the same thing every time).  The
key holds the graspsim source of every module that shapes the result, and the paths and
modification times of the URDF and side file; an entry also records the modification time of
every mesh the robot uses and is ignored when one changed.  Entries live in
``$XDG_CACHE_HOME/graspsim/urdf`` (``~/.cache`` by default); ``GRASPSIM_URDF_CACHE=0`` turns the
cache off.  Any unreadable entry is treated as a miss.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path

_SOURCES = ("model/urdf.py", "model/urdf_robot.py", "model/urdf_side.py", "model/urdf_cache.py",
            "model/package_path.py", "model/description.py", "model/readonly.py", "geometry.py")
_code_hash: str | None = None
#: entries kept; the least recently written go first
MAX_ENTRIES = 200


def enabled() -> bool:
    return os.environ.get("GRASPSIM_URDF_CACHE", "1") not in ("0", "", "off", "no")


def _dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "graspsim" / "urdf"


def _code() -> str:
    global _code_hash
    if _code_hash is None:
        root = Path(__file__).resolve().parent.parent
        h = hashlib.sha1()
        for rel in _SOURCES:
            h.update((root / rel).read_bytes())
        _code_hash = h.hexdigest()
    return _code_hash


def _file(key) -> Path:
    return _dir() / (hashlib.sha1(repr((_code(), key)).encode()).hexdigest()[:24] + ".pkl")


def load(key, mtimes) -> tuple | None:
    """``(robot, files, stamps, warnings)`` stored under ``key`` if still valid, else None."""
    if not enabled():
        return None
    try:
        with open(_file(key), "rb") as f:
            robot, files, stamps, warns = pickle.load(f)
    except Exception:  # noqa: BLE001 - missing, partial or foreign entry: rebuild
        return None
    if mtimes(files) != stamps:
        return None
    return robot, files, stamps, warns


def store(key, entry: tuple) -> None:
    """Write an entry atomically (a temporary file renamed into place); failures are ignored."""
    if not enabled():
        return
    try:
        d = _dir()
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
    except Exception:  # noqa: BLE001 - a read-only home must not break loading
        return
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(entry, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, _file(key))
    except Exception:  # noqa: BLE001
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return
    _prune(d)


def _prune(d: Path) -> None:
    try:
        entries = sorted(d.glob("*.pkl"), key=lambda p: p.stat().st_mtime)
        for p in entries[:max(0, len(entries) - MAX_ENTRIES)]:
            p.unlink()
    except OSError:
        pass

"""One runner per results database: an exclusive OS lock on a side file ``DB.lock``.

The lock is an ``flock`` (``msvcrt.locking`` on Windows) on an open file, so it belongs to the
process that took it and goes away with it: a runner killed with SIGKILL, or a machine that
rebooted, leaves at most an unlocked ``DB.lock`` behind, never a lock that blocks.  The holder
writes its pid, host and start time into the file so that a refused runner can say who holds it.
On a clean exit the file is removed (while still locked, so nobody else can hold it then).
"""
from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

from .config import BatchError

__all__ = ["RunLock", "lock_path"]

if sys.platform == "win32":  # pragma: no cover -- no Windows CI
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False


def lock_path(db) -> Path:
    """The lock file of the database ``db``."""
    return Path(str(db) + ".lock")


class RunLock:
    """``with RunLock(db):`` -- hold the database's run lock, or raise :class:`BatchError` saying
    that another run (pid, host, start time) holds it."""

    def __init__(self, db):
        self.db = Path(db)
        self.path = lock_path(db)
        self.fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)   # not inherited by exec'd children
            if not _try_lock(fd):
                holder = _read_holder(fd)
                os.close(fd)
                raise BatchError(f"'{self.db}' is in use: another graspsim batch run holds it ({holder}).  "
                                 "One run per database: wait for that run to finish, or stop it (Ctrl-C) and "
                                 "continue it with --resume; or give this run another --db")
            # the previous holder removes the file on release: if it did so between our open and our
            # lock, we hold a lock on a file nobody else will open -- start over on the new one
            try:
                st, fst = os.stat(self.path), os.fstat(fd)
                same = (st.st_ino, st.st_dev) == (fst.st_ino, fst.st_dev)
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        info = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        os.ftruncate(fd, 0)
        os.write(fd, (json.dumps(info) + "\n").encode())
        self.fd = fd

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        info = json.loads(os.read(fd, 4096).decode() or "{}")
    except (OSError, ValueError):
        info = {}
    if not info.get("pid"):
        return "it is starting"
    return f"pid {info['pid']} on {info.get('host', '?')}, started {info.get('started', '?')}"

"""Keep large freed blocks in the process heap (glibc), so that a step's large temporaries do not
cost page faults every step.

A pile's island LCP (hundreds of rows) allocates dense matrices of a few MB each step (the Lemke
basis, its factors, the Schur complements).  glibc unmaps a freed block over its mmap threshold
(128 KB to start, raised to the largest such block freed), and returns a freed heap top larger than
its trim threshold (twice that) to the kernel; either way the next ``malloc`` gets fresh zeroed
pages, and every page of every such matrix is faulted in again each step.  On the peers' 20-box
drop that was 15-17 % of the compiled loop's samples (kernel page faults, cgroup charges, unmapping;
``benchmarks/profile_compiled.py --scene drop20``).  :func:`keep_large_blocks` raises glibc's mmap
threshold to its maximum (32 MB) and its trim threshold to 256 MB: such blocks then come from the
heap and go back to it, and at most 256 MB of free heap top is kept before glibc returns memory.
It changes no result (the same arithmetic on the same values), only where memory comes from.

It is process-wide, so it runs once, when the first :class:`graspsim.Simulator` is built, only with
glibc, and not at all with ``GRASPSIM_MALLOC=system`` in the environment (the system's defaults
kept, e.g. when graspsim shares a process whose memory should go back to the system at once).
"""
from __future__ import annotations

import ctypes
import os
import sys

#: mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: glibc's largest mmap threshold on 64-bit systems (DEFAULT_MMAP_THRESHOLD_MAX); 256 MB of free heap
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 256 << 20

_STATE: list = []       # [applied: bool] once decided


def glibc() -> bool:
    """Is this process's C library glibc (whose ``mallopt`` these thresholds are for; musl's does
    nothing)?"""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return hasattr(ctypes.CDLL(None), "gnu_get_libc_version")
    except OSError:
        return False


def keep_large_blocks() -> bool:
    """Set glibc's mmap and trim thresholds (once per process); True if they are set.  Nothing on
    other C libraries or with ``GRASPSIM_MALLOC=system``."""
    if _STATE:
        return _STATE[0]
    ok = False
    if glibc() and os.environ.get("GRASPSIM_MALLOC", "").strip().lower() != "system":
        mallopt = ctypes.CDLL(None).mallopt
        mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
        mallopt.restype = ctypes.c_int
        ok = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    _STATE.append(ok)
    return ok

"""graspsim._malloc: a step's large temporaries (a pile's dense LCP matrices, MB each) come back from
the heap instead of being unmapped and faulted in again every step (glibc; measured on the peers'
20-box drop: 15-17 % of the loop's samples were the kernel's page faults before)."""
from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from graspsim._malloc import glibc

ROOT = Path(__file__).resolve().parent.parent

#: six 2 MB blocks filled and freed, 20 times: what one pile step's matrices do to the allocator
_CYCLES = """
import resource, numpy as np
from graspsim._malloc import keep_large_blocks
print(keep_large_blocks())
def cycle():
    blocks = [np.empty((512, 512)) for _ in range(6)]
    for b in blocks:
        b.fill(1.0)
cycle(); cycle()
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    cycle()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
"""


def _faults(env_value: str | None) -> tuple[bool, int]:
    env = dict(os.environ)
    env.pop("GRASPSIM_MALLOC", None)
    if env_value is not None:
        env["GRASPSIM_MALLOC"] = env_value
    out = subprocess.run([sys.executable, "-c", _CYCLES], capture_output=True, text=True, env=env, cwd=str(ROOT),
                         timeout=120, check=True).stdout.split()
    return out[0] == "True", int(out[1])


@pytest.mark.skipif(not glibc(), reason="glibc's malloc only")
def test_large_freed_blocks_are_reused_without_page_faults():
    """With glibc's defaults each cycle faults in every page of its 12 MB again (the freed heap top
    is trimmed and grown back): 6 x 2 MB / page size per cycle.  Kept in the heap: none."""
    pages = 6 * (512 * 512 * 8) // resource.getpagesize()
    applied, tuned = _faults(None)
    kept_default, default = _faults("system")
    assert applied and not kept_default
    assert default >= 0.9 * 20 * pages          # (the mechanism this module exists for)
    assert tuned <= 0.01 * 20 * pages


def test_a_simulator_sets_it_once_per_process():
    import graspsim
    from graspsim import _malloc
    from graspsim.dynamics import Simulator

    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    _malloc._STATE.clear()          # (earlier tests' simulators decided it already; setting it again is harmless)
    Simulator(w)
    assert _malloc._STATE == [glibc() and os.environ.get("GRASPSIM_MALLOC", "") != "system"]
    assert _malloc.keep_large_blocks() is _malloc._STATE[0]      # decided once

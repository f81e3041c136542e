"""Shared fixtures.

``xdisplay``: one private Xvfb for the whole session, shared by every GUI test module (pyglet
connects to the display named by DISPLAY once per process, so two servers in one session would
leave windows on one and synthetic X events on the other).

``viewer``: factory of real viewer windows on a world file (closed after the test).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest


@pytest.fixture(scope="session")
def xdisplay():
    """A private X server for the session; DISPLAY points at it while the tests run."""
    exe = shutil.which("Xvfb")
    assert exe, "Xvfb is not installed (apt-get install xvfb xauth; see docs/gui.md)"
    r, w = os.pipe()
    proc = subprocess.Popen([exe, "-displayfd", str(w), "-screen", "0", "1280x800x24", "-nolisten", "tcp",
                             "-noreset"], pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.close(w)
    num = b""
    deadline = time.time() + 20
    import select

    while time.time() < deadline and not num.endswith(b"\n"):
        ready, _, _ = select.select([r], [], [], 0.5)
        if ready:
            chunk = os.read(r, 16)
            if not chunk:
                break
            num += chunk
        elif proc.poll() is not None:
            break
    os.close(r)
    if not num.strip():
        proc.kill()
        raise RuntimeError(f"Xvfb did not start: {proc.stderr.read().decode(errors='replace')[-2000:]}")
    old = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = f":{num.decode().strip()}"
    yield os.environ["DISPLAY"]
    if old is None:
        os.environ.pop("DISPLAY", None)
    else:
        os.environ["DISPLAY"] = old
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def viewer(xdisplay):
    """``viewer(world_path, width=640, height=400, **kw)``: a viewer window drawn three times."""
    import graspsim
    from graspsim.gui import open_viewer

    made = []

    def make(world, width=640, height=400, **kw):
        v = open_viewer(graspsim.load_world(world), width, height, verbose=False, **kw)
        made.append(v)
        for _ in range(3):
            v.frame()
        return v

    yield make
    for v in made:
        v.close()

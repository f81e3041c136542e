"""Benchmark: the viewer stays responsive while the planner runs in its background thread.

Command (from the repository root; under ``xvfb-run -a`` on a machine without a display):

    xvfb-run -a -s "-screen 0 1280x800x24" python benchmarks/bench_gui_plan.py [--seconds 3] [--world parallel_jaw_box]

Opens the world in a 900x500 window, measures the idle frame rate while the camera turns
(``fps 1``), then runs the scripted ``plan SECONDS`` and reports the frames drawn while the planner
searched and closed its candidates (``Viewer.plan_frames``), the frame rate that makes, the longest
gap between two frames, and what the planner found.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import graspsim  # noqa: E402
from graspsim.gui import open_viewer  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="planner search time (default 3)")
    ap.add_argument("--world", default="parallel_jaw_box", help="a shipped world with a free hand")
    a = ap.parse_args()
    v = open_viewer(graspsim.load_world(os.path.join(ROOT, "worlds", f"{a.world}.yaml")), 900, 500, verbose=False)
    try:
        for _ in range(3):
            v.frame()
        v.run_script("fps 1")
        idle = v.last_fps["fps"]
        # the frame loop's own stamps: gaps between frames while planning
        stamps = []
        frame = v.frame

        def stamped():
            n = v.frames
            frame()
            if v.frames != n:
                stamps.append(time.perf_counter())
        v.frame = stamped
        v.run_script(f"plan {a.seconds:g}")
        v.frame = frame
        n, wall = v.plan_frames
        gaps = np.diff(stamps) if len(stamps) > 1 else np.array([wall])
        ss = v.session
        nfc = sum(g.quality.force_closure for g in ss.planned)
        best = max((g.quality.epsilon for g in ss.planned), default=0.0)
        print(f"{a.world}: idle {idle:.1f} frames/s; plan {a.seconds:g} s: {n} frames in {wall:.2f} s = "
              f"{n / wall:.1f} frames/s while planning, longest gap {gaps.max() * 1e3:.0f} ms, "
              f"median {np.median(gaps) * 1e3:.0f} ms; {len(ss.planned)} grasps, {nfc} force closure, "
              f"best epsilon {best:.4f}")
    finally:
        v.close()


if __name__ == "__main__":
    main()

"""The compiled island solver (dynamics/_island_kernel.py) against the reference implementation of
dynamics/island.py (used when a Simulator is given an LCP solver): the same step from the same
state must give the same velocities, contact impulses and joint projection.

Both solve the same equations with the same Lemke pivoting; they differ only in the order of
floating-point operations (a hand-written Cholesky and sparse-free dense products instead of LAPACK
and einsum), so one step agrees to round-off amplified by the conditioning of the eliminated
system: 1e-9 of the velocity scale is a bound with ample margin (observed ~1e-13).
"""
from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim.control import PDController
from graspsim.dynamics import Simulator
from graspsim.lcp import lemke

ROOT = Path(__file__).resolve().parent.parent
MODELS = Path(__file__).resolve().parent / "models"


def _pair(world_path, setup=None, steps=60):
    sims = [Simulator(graspsim.load_world(world_path)), Simulator(graspsim.load_world(world_path), lemke=lemke)]
    ctls = [setup(s) if setup else None for s in sims]
    for _ in range(steps):
        sims[0].step(ctls[0])
    sims[1].restore_state(sims[0].save_state())
    sims[1]._warm = dict(sims[0]._warm)
    sims[1]._level = dict(sims[0]._level)
    return sims, ctls


def _barrett_closing(sim):
    ctl = PDController(sim)
    ri = sim.world.description.robot_index["barrett"]
    lim = sim.world.description.robots[ri].robot.dof_limits
    ctl.move_to("barrett", [0.0, lim[1, 1], lim[2, 1], lim[3, 1]])
    return ctl


@pytest.mark.parametrize("case", ["stack", "barrett_mug"])
def test_compiled_island_step_matches_reference(case):
    if case == "stack":
        sims, ctls = _pair(MODELS / "stack.yaml", steps=40)
    else:
        sims, ctls = _pair(ROOT / "worlds/barrett_mug.yaml", _barrett_closing, steps=500)
    checked_lcp = 0
    for _ in range(30):
        st = sims[0].save_state()
        infos = [s.step(c) for s, c in zip(sims, ctls)]
        vs = [s.state.v for s in sims]
        scale = max(1e-3, float(np.abs(vs[1]).max()))
        assert np.abs(vs[0] - vs[1]).max() <= 1e-9 * scale
        assert np.abs(sims[0].state.c - sims[1].state.c).max() <= 1e-12
        imp = [i.contact_impulse for i in infos]
        if imp[1] is not None and len(imp[1]):
            assert np.abs(imp[0] - imp[1]).max() <= 1e-9 * max(1e-6, float(np.abs(imp[1]).max()))
        assert infos[0].lcp_sizes == infos[1].lcp_sizes
        checked_lcp += len(infos[0].lcp_sizes)
        # continue both from the same state so round-off does not accumulate
        sims[1].restore_state(sims[0].save_state())
    assert checked_lcp >= 30    # every step solved at least one LCP (contacts present)

"""Simulator.rollout: many steps with a compiled PD / trajectory controller (no Python controller
code per step) give the states of as many step() calls with the equivalent PDController."""
from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim.control import PDController
from graspsim.dynamics import Simulator

ROOT = Path(__file__).resolve().parent.parent
MODELS = Path(__file__).resolve().parent / "models"


def _closing(sim):
    ctl = PDController(sim)
    ri = sim.world.description.robot_index["barrett"]
    lim = sim.world.description.robots[ri].robot.dof_limits
    ctl.move_to("barrett", [0.0, lim[1, 1], lim[2, 1], lim[3, 1]], duration=0.4)
    return ctl


def _compare(ro, ref, tol=1e-12):
    for name in ("time", "c", "q", "v", "joint_q"):
        a, b = getattr(ro, name), np.array([r[name] for r in ref])
        assert a.shape == b.shape, name
        assert np.abs(a - b).max(initial=0) <= tol * max(1.0, np.abs(b).max(initial=0)), name


def _steps(sim, ctl, n):
    out = []
    for _ in range(n):
        sim.step(ctl)
        s = sim.state
        out.append(dict(time=s.time, c=s.c.copy(), q=s.q.copy(), v=s.v.copy(), joint_q=s.joint_q.copy()))
    return out


def test_rollout_of_the_barrett_closing_matches_step_with_the_python_pd():
    """The quintic closing move crosses its end (t = 0.4 s) and the fingers reach the mug: the
    compiled references must equal PDController.command's at every step, including after the end."""
    sims = [Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), compiled_loop=True) for _ in range(2)]
    ctls = [_closing(s) for s in sims]
    ro = sims[0].rollout(300, ctls[0])
    ref = _steps(sims[1], ctls[1], 300)
    _compare(ro, ref)
    assert np.abs(ro.v).max() > 0.1                 # the fingers moved
    assert len(sims[0].contacts) > 0                # and touch the mug


def test_rollout_with_a_sampled_cartesian_line_and_without_controller():
    """A Cartesian line of the Puma's wrist (a sampled trajectory, linear interpolation) while the
    Barrett closes; and the three-box stack with no controller."""
    sims = [Simulator(graspsim.load_world(ROOT / "worlds/puma_barrett_handset.yaml"), compiled_loop=True)
            for _ in range(2)]
    ctls = []
    for s in sims:
        ctl = _closing(s)
        ri = s.world.description.robot_index["puma"]
        X1 = s.world.link_poses(ri)[6].copy()
        X1[:3, 3] += [0.0, 0.0, 0.03]
        ctl.move_line("puma", X1, duration=0.2, link=6)
        ctls.append(ctl)
    _compare(sims[0].rollout(120, ctls[0]), _steps(sims[1], ctls[1], 120))
    sims = [Simulator(graspsim.load_world(MODELS / "stack.yaml")) for _ in range(2)]
    _compare(sims[0].rollout(50), _steps(sims[1], None, 50), tol=0.0)


def test_rollout_refuses_a_python_controller_and_bad_counts():
    sim = Simulator(graspsim.load_world(MODELS / "stack.yaml"))

    class Mine:
        def command(self, sim):
            return None

    with pytest.raises(ValueError, match="Python controller runs through step"):
        sim.rollout(3, Mine())
    with pytest.raises(ValueError, match="n_steps must be a whole number"):
        sim.rollout(2.5)
    ctl = PDController(sim)
    ctl.feedforward = lambda *a: 0.0
    with pytest.raises(ValueError, match="feedforward"):
        sim.rollout(1, ctl)
    assert sim.rollout(0).c.shape == (0, 3, 3)
    with pytest.raises(ValueError, match="compiled_loop must be None, True or False"):
        Simulator(graspsim.load_world(MODELS / "stack.yaml"), compiled_loop="yes")

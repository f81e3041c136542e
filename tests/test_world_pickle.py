"""A World pickles and deep-copies (sent to another process, copied for a what-if), and the copy is
the same world: the same static grasp, the same simulation bit for bit, its own state."""
from __future__ import annotations

import copy
import pickle
from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim.control import static_auto_grasp
from graspsim.dynamics import Simulator
from graspsim.model.readonly import ReadOnlyDict

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def world():
    return graspsim.load_world(str(ROOT / "worlds/barrett_mug.yaml"))


def _final_state(w, steps: int = 40) -> tuple:
    sim = Simulator(w)
    for _ in range(steps):
        sim.step()
    s = sim.state
    return s.c, s.q, s.v, s.joint_q


@pytest.mark.parametrize("clone", [lambda w: pickle.loads(pickle.dumps(w)), copy.deepcopy],
                         ids=["pickle", "deepcopy"])
def test_a_copied_world_is_the_same_world(world, clone):
    w2 = clone(world)
    assert w2 is not world
    assert np.array_equal(w2.body_poses(), world.body_poses())
    assert list(w2.robots) == list(world.robots) and list(w2.bodies) == list(world.bodies)
    assert dict(w2.description.body_index) == dict(world.description.body_index)
    # the same static grasp: DOF values and the grasp's quality, exactly
    a, b = static_auto_grasp(copy.deepcopy(world), "barrett"), static_auto_grasp(w2, "barrett")
    assert np.array_equal(a.dofs, b.dofs)
    assert a.quality.force_closure == b.quality.force_closure and a.quality.epsilon == b.quality.epsilon
    # the same dynamics, bit for bit (the mug settling on the table, the hand held open)
    for x, y in zip(_final_state(copy.deepcopy(world)), _final_state(clone(world))):
        assert np.array_equal(x, y)


def test_a_copy_has_its_own_state(world):
    w2 = copy.deepcopy(world)
    q0 = world.robots["barrett"].dof_values.copy()
    w2.robots["barrett"].set_dofs(q0 + np.radians(5.0), check_limits=False)
    assert np.array_equal(world.robots["barrett"].dof_values, q0)
    assert np.allclose(w2.robots["barrett"].dof_values, q0 + np.radians(5.0), rtol=0, atol=1e-15)


def test_description_tables_stay_read_only(world):
    index = world.description.body_index
    assert isinstance(index, ReadOnlyDict)
    with pytest.raises(TypeError, match="read-only"):
        index["intruder"] = 99
    with pytest.raises(TypeError, match="read-only"):
        index.update({"mug": 0})
    robot = world.description.robots[0].robot
    with pytest.raises(TypeError, match="read-only"):
        robot.link_index.pop(next(iter(robot.link_index)))
    assert pickle.loads(pickle.dumps(index)) == index


@pytest.mark.parametrize("clone", [lambda s: pickle.loads(pickle.dumps(s)), copy.deepcopy],
                         ids=["pickle", "deepcopy"])
def test_a_copied_simulator_goes_on_bit_for_bit(world, clone):
    """A simulator mid-grasp (fingers closing on the mug through run()'s compiled loop or step()),
    pickled (a checkpoint on disk, another process) or deep-copied (a what-if), goes on exactly
    as the original; before, pickling raised on a cached local class."""
    from graspsim.control import PDController

    sim = Simulator(copy.deepcopy(world))
    ctl = PDController(sim)
    ctl.move_to("barrett", [0.0, 2.0, 2.0, 2.0], duration=0.4)
    sim.run(0.15, ctl)
    twin = clone(sim)
    assert twin is not sim and twin.state is not sim.state

    def go(s):
        c = PDController(s)
        c.move_to("barrett", [0.0, 2.0, 2.0, 2.0], duration=0.25)
        s.run(0.1, c)
        for _ in range(10):
            s.step(c)
        return s.state.c, s.state.v, s.state.joint_q, s.contact_forces

    a, b = go(sim), go(twin)
    assert sim.contacts is not None and len(sim.contacts) > 0      # the fingers reached the mug
    for x, y in zip(a, b):
        assert np.array_equal(x, y)

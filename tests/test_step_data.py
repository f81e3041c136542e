"""The step's data block (issue 18): ``save_state`` / ``restore_state`` carry everything the step
reads that changes -- the bodies' state and the data block (LCP warm starts, compliance levels, the
last contacts' LCP flags, kinematic base poses, pending external wrenches) -- so a restored state
replays the following steps bit for bit.  Only the public API is used."""
from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim.control import PDController
from graspsim.dynamics import Simulator

ROOT = Path(__file__).resolve().parent.parent
MODELS = Path(__file__).resolve().parent / "models"


def _record(sim, ctl, n):
    """n steps: every state array and the contact forces of every step."""
    out = []
    for _ in range(n):
        sim.step(ctl)
        s = sim.state
        out.append((s.time, s.c.copy(), s.q.copy(), s.v.copy(), s.joint_q.copy(), s.broken.copy(), s.lock.copy(),
                    sim.contact_forces.copy(), sim.info.pivots))
    return out


def _assert_replay(sim, ctl, n=200):
    saved = sim.save_state()
    first = _record(sim, ctl, n)
    sim.restore_state(saved)
    second = _record(sim, ctl, n)
    contacts = 0
    for a, b in zip(first, second):
        assert a[0] == b[0]
        for x, y in zip(a[1:-1], b[1:-1]):
            assert x.shape == y.shape and np.array_equal(x, y)
        # the same warm starts: the same pivots, not only the same answer
        assert a[-1] == b[-1]
        contacts += len(a[7])
    return contacts


def test_replay_of_the_barrett_closing_on_the_mug_is_exact():
    sim = Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"))
    ctl = PDController(sim)
    ri = sim.world.description.robot_index["barrett"]
    lim = sim.world.description.robots[ri].robot.dof_limits
    ctl.move_to("barrett", [0.0, lim[1, 1], lim[2, 1], lim[3, 1]])
    sim.run(0.6, ctl)              # fingers on their way to the mug (contacts appear in the replay)
    assert _assert_replay(sim, ctl, 200) > 200


def test_replay_of_a_settling_three_box_stack_is_exact():
    sim = Simulator(graspsim.load_world(MODELS / "stack.yaml"))
    for _ in range(20):
        sim.step()
    assert _assert_replay(sim, None, 200) >= 200 * 12     # three face contacts of >= 4 points


def test_a_pending_push_is_part_of_the_saved_state():
    """apply_external_force acts on the next step: a state saved after it replays it."""
    sim = Simulator(graspsim.load_world(MODELS / "stack.yaml"))
    sim.step()
    sim.apply_external_force("b3", sim.body_pose("b3")[:3, 3], [5.0, 0.0, 0.0])
    saved = sim.save_state()
    sim.step()
    v1 = sim.body_velocity("b3")
    assert v1[0] > 0.01            # pushed (5 N on 0.2 kg for 2.5 ms, less friction)
    sim.restore_state(saved)
    sim.step()
    assert np.array_equal(sim.body_velocity("b3"), v1)


def test_a_hand_built_state_keeps_the_data_block_and_bad_data_is_refused():
    sim = Simulator(graspsim.load_world(MODELS / "stack.yaml"))
    for _ in range(5):
        sim.step()
    st = sim.save_state()
    st.data = None                 # a state without a data block: positions and velocities only
    sim.restore_state(st)
    sim.step()
    bad = sim.save_state()
    bad.data.ext = np.zeros((2, 6))
    with pytest.raises(ValueError, match=r"data\.ext must be \(3, 6\)"):
        sim.restore_state(bad)
    bad = sim.save_state()
    bad.data.X_static = bad.data.X_static.copy()
    bad.data.X_static[-1, 0, 0] = 2.0
    with pytest.raises(ValueError, match=r"data\.X_static of body 'table'"):
        sim.restore_state(bad)


@pytest.mark.parametrize("change, refused", [
    (lambda X: X.__setitem__((0, 1), X[0, 1] + 8e-7), False),     # off by less than RIGID_TOL: a pose
    (lambda X: X.__setitem__((0, 1), X[0, 1] + 3e-6), "not orthonormal"),
    (lambda X: X.__setitem__((3, 3), 1.0 + 2e-6), "last row"),
    (lambda X: X.__setitem__((2, 3), np.nan), "non-finite"),
    (lambda X: X.__setitem__(slice(0, 3), -X[0:3]), "determinant -1"),
    (lambda X: X.__setitem__((slice(None), 0), X[:, 0] * np.array([-1.0, -1.0, -1.0, 1.0])), "determinant -1"),
])
def test_restored_static_poses_are_checked_as_rigid_transforms(change, refused):
    """restore_state screens the data block's static poses in one pass and puts those that are not
    clearly rigid through the exact test: one off by less than the tolerance is kept bit for bit,
    the others are refused naming the body and the problem, with the state unchanged."""
    sim = Simulator(graspsim.load_world(MODELS / "stack.yaml"))
    sim.step()
    st = sim.save_state()
    st.data.X_static = st.data.X_static.copy()
    change(st.data.X_static[-1])
    before = sim.save_state()
    if refused:
        with pytest.raises(ValueError, match=rf"data\.X_static of body 'table': .*({refused})"):
            sim.restore_state(st)
        assert np.array_equal(sim._data.X_static, before.data.X_static) and sim.time == before.time
    else:
        sim.restore_state(st)
        assert np.array_equal(sim._data.X_static, st.data.X_static)


def test_the_warm_start_table_stays_within_its_bound_and_the_stack_settles_the_same():
    """With room for 2 islands' warm starts the table is emptied whenever a step leaves more (never
    more than 2 entries after a step), and the three-box stack settles as with the full table: the
    same heights to 1 µm and at rest (the LCPs start cold more often; their solutions are verified
    the same way).  Bad values are refused by name."""
    runs = {}
    for cap in (2, 1 << 14):
        sim = Simulator(graspsim.load_world(MODELS / "stack.yaml"), warm_start_entries=cap)
        most = 0
        for _ in range(400):
            sim.step()
            most = max(most, int(sim.save_state().data.meta[0]))
        runs[cap] = (sim, most)
    assert runs[2][1] <= 2 < runs[1 << 14][1]
    small, full = runs[2][0].state, runs[1 << 14][0].state
    assert np.allclose(small.c, full.c, atol=1e-6)
    assert np.abs(small.v).max() < 1e-3 and np.abs(full.v).max() < 1e-3
    for bad in (-1, 2.5, float("nan")):
        with pytest.raises(ValueError, match="warm_start_entries"):
            Simulator(graspsim.load_world(MODELS / "stack.yaml"), warm_start_entries=bad)

"""graspsim._borrow: kernels borrow the arrays their caller owns (no reference counting), and no
borrowed array ever reaches Python (numba would box it as an array without an owner)."""
from pathlib import Path

import numpy as np
from numba import njit

import graspsim
from graspsim._borrow import borrow
from graspsim.control import PDController
from graspsim.dynamics import Simulator
from graspsim.dynamics import _step_kernel as SK

ROOT = Path(__file__).resolve().parent.parent


@njit
def _scale_in_place(P, k):
    """P = (a 2-d array, (a 1-d int array, a float)): a[i] *= f for the rows i listed, through the
    borrowed arrays; returns a sum over the borrowed 2-d array."""
    a, (rows, f) = borrow(P)
    for i in rows:
        for j in range(a.shape[1]):
            a[i, j] *= f * k
    return a.sum()


@njit
def _strided_sum(a):
    b = borrow(a)
    return b.sum(), b.shape[0], b.strides[0]


def test_a_borrowed_array_is_the_same_memory_with_the_same_shape_and_strides():
    a = np.arange(12.0).reshape(4, 3)
    want = a.copy()
    want[[1, 3]] *= 2.0
    s = _scale_in_place((a, (np.array([1, 3]), 0.5)), 4.0)
    assert np.array_equal(a, want) and s == want.sum()          # written through, read back
    v = np.arange(20.0)[::4]                                     # a strided view
    assert _strided_sum(v) == (v.sum(), 5, 32)


def _owned(x) -> bool:
    """Is ``x`` (an array or a tuple, nested) free of arrays without an owner (numba's box of a
    borrowed array: no base, not owning its data)?"""
    if isinstance(x, tuple):
        return all(_owned(y) for y in x)
    if isinstance(x, np.ndarray):
        return x.base is not None or x.flags.owndata
    return True


@njit
def _leak(a):
    return borrow(a)


def test_the_owner_check_sees_a_borrowed_array():
    """What the test below looks for: a borrowed array returned to Python has no owner."""
    a = np.ones(3)
    assert _owned((a, _leak(a).copy())) and not _owned((a, (1.0, _leak(a))))


def test_no_array_the_compiled_loop_returns_is_borrowed(monkeypatch):
    """The loop borrows the model's arrays and buffers (and gets its constants flattened, as
    ownerless arrays too: graspsim._flat); what it returns (the state, the warm-start table, the
    contacts) is owned: checked on every call of a rollout that closes the Barrett on the mug
    (impacts, clutches, contacts) and holds it."""
    calls = []
    inner = SK.rollout_flat

    class Spy:
        def __getattr__(self, name):           # (the dispatcher's attributes: the loop asks its cache)
            return getattr(inner, name)

        def __call__(self, *args):
            out = inner(*args)
            calls.append(_owned(out))
            return out

    monkeypatch.setattr(SK, "rollout_flat", Spy())
    sim = Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), compiled_loop=True)
    ctl = PDController(sim)
    lim = sim.world.description.robots[0].robot.dof_limits
    ctl.move_to("barrett", [0.0, lim[1, 1], lim[2, 1], lim[3, 1]], duration=0.4)
    sim.rollout(300, ctl)
    assert len(calls) >= 2 and all(calls)
    # and after the loop the state still reads what it held: a rerun gives the same numbers (a
    # dangling array would read freed memory)
    c = sim.state.c.copy()
    sim2 = Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), compiled_loop=False)
    ctl2 = PDController(sim2)
    ctl2.move_to("barrett", [0.0, lim[1, 1], lim[2, 1], lim[3, 1]], duration=0.4)
    for _ in range(300):
        sim2.step(ctl2)
    assert np.array_equal(c, sim2.state.c)
    assert np.array_equal(sim.contacts.point, sim2.contacts.point)

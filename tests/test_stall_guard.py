"""The stall guard: a step cut at an impact advances only a fraction of h, and a contact pair the
impact search keeps finding anew can cut every step to 1e-4 of h or less (measured on a batch
candidate of the Barrett lifting the mug, a fingertip against the palm: a 1.5 s lift would have
taken millions of steps; with the guard it ends as an error row after 1.1 s of CPU).  STALL_STEPS
consecutive cut steps that together advance less than STALL_ADVANCE steps' worth end in a
SimulationError naming the time and the contacts; the state before that step is kept.

The stall is made here by an impact search that cuts every step to a fixed fraction (the real one
needs a rare configuration); everything else -- moves, contacts, LCPs -- runs as always."""
from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim.dynamics import Simulator
from graspsim.dynamics import simulator as SM
from graspsim.errors import SimulationError

MODELS = Path(__file__).resolve().parent / "models"


def _stack(frac):
    # (the stall is injected into the stages' impact search: the compiled loop, which step() would
    # otherwise take, hands such cut steps to the stages itself)
    sim = Simulator(graspsim.load_world(MODELS / "stack.yaml"), compiled_loop=False)
    for _ in range(5):
        sim.step()
    sim._first_impact_fraction = lambda s, c1, q1, h, X1, kin_from=(), X0=None: (frac, False)
    return sim


def test_a_stalled_impact_search_ends_in_a_clear_error():
    sim = _stack(1e-4)
    t0 = sim.state.time
    for _ in range(SM.STALL_STEPS - 1):
        sim.step()
    assert sim.state.time == pytest.approx(t0 + (SM.STALL_STEPS - 1) * 1e-4 * sim.dt, rel=1e-9)
    before = sim.save_state()
    with pytest.raises(SimulationError, match=rf"stalled at t = .* {SM.STALL_STEPS} consecutive steps were "
                                              r"cut at a new contact or joint limit and advanced 5e-05 s .*"
                                              r"contacts at the cut: 'b1'-'b2'.*the state before the step is kept"):
        sim.step()
    assert sim.state.time == before.time and np.array_equal(sim.state.c, before.c)


def test_cut_steps_that_advance_do_not_trip_it():
    """Half steps (an impact cascade that keeps cutting but moves on): 300 in a row are fine."""
    sim = _stack(0.5)
    t0 = sim.state.time
    for _ in range(300):
        sim.step()
    assert sim.state.time == pytest.approx(t0 + 150 * sim.dt, rel=1e-9)


def test_the_count_is_part_of_the_saved_state():
    """A state saved in the middle of a run of cut steps carries its count: restored, the guard
    trips at the same step as in the original run."""
    sim = _stack(1e-4)
    for _ in range(150):
        sim.step()
    saved = sim.save_state()
    other = _stack(1e-4)
    other.restore_state(saved)
    for _ in range(SM.STALL_STEPS - 151):
        other.step()
    with pytest.raises(SimulationError, match="stalled"):
        other.step()
    bad = sim.save_state()
    bad.data.cuts = [-1, 0.0]
    with pytest.raises(ValueError, match=r"data\.cuts must be"):
        sim.restore_state(bad)

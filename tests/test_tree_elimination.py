"""The elimination along the joint tree (dynamics/_tree_kernel.py, not used by the simulator yet)
against the island solver's elimination through the whole equality block
(_island_kernel.solve_island): the same linear system, so the same velocities, impulses and
projection to round-off.

Captured islands of real steps: the Barrett holding the mug (8 revolute joints, 3 hard couplings,
9 soft drive and hold rows, the mug free) and the Puma's Barrett closing on the handset (15
joints, one of them fixed: the hand on the arm).  Tolerances as tests/test_compiled_step.py's,
which compares the compiled solver with the numpy reference: velocities 1e-8 of their scale (both
factorisations are backward stable; the equality block's conditioning amplifies round-off, ~1e-10
observed here), contact impulses 1e-4 of the largest (a face contact's distribution over its
points is fixed only by the contact compliance; ~3e-5 observed on the Puma grasp), the couplings'
and joints' impulses 1e-5 of the largest (~1e-6 observed), the projection 1e-9 of its largest
displacement."""
from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim.control import PDController, dynamic_auto_grasp
from graspsim.dynamics import Simulator
from graspsim.dynamics import _island_kernel as IK
from graspsim.dynamics import _tree_kernel as TK
from graspsim.dynamics import simulator as SM

ROOT = Path(__file__).resolve().parent.parent


def _captured(sim, ctl, steps, monkeypatch):
    """The island problems of ``steps`` steps of ``sim``, as solve_islands splits them."""
    calls = []
    real = IK.solve_islands

    class Spy:
        def __getattr__(self, k):
            return getattr(IK, k)

        @staticmethod
        def solve_islands(*args):
            calls.append(tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args))
            return real(*args)

    monkeypatch.setattr(SM, "IK", Spy())
    flag, sim.compiled_loop = sim.compiled_loop, False     # (the stages: the loop calls it by address)
    for _ in range(steps):
        sim.step(ctl)
    sim.compiled_loop = flag
    monkeypatch.setattr(SM, "IK", IK)
    return [p for c in calls for p in TK.island_calls(c)]


def _solve(fn, a):
    outs = TK.island_outputs(a)
    return fn(*a, *outs), outs


def _held_mug():
    r = dynamic_auto_grasp(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), "barrett", timeout=2.0)
    return r.sim, r.controller


def _puma_closing():
    w = graspsim.load_world(ROOT / "worlds/puma_barrett_handset.yaml")
    sim = Simulator(w)
    ctl = PDController(sim)
    ctl.set_gains("barrett", "f1", effort=2.5)
    ctl.set_gains("barrett", "f2", effort=2.5)
    lim = w.description.robots[w.description.robot_index["barrett"]].robot.dof_limits
    ctl.move_to("barrett", [0.0, lim[1, 1], lim[2, 1], lim[3, 1]])
    sim.run(1.0, ctl)
    return sim, ctl


@pytest.mark.parametrize("scene", ["held_mug", "puma_closing"])
def test_tree_elimination_is_the_block_elimination(scene, monkeypatch):
    sim, ctl = _held_mug() if scene == "held_mug" else _puma_closing()
    problems = _captured(sim, ctl, 12, monkeypatch)
    with_lcp = 0
    for a in problems:
        (st1, m1, piv1, lv1), (v1, ce1, z1, zb1, dx1) = _solve(IK.solve_island, a)
        (st2, m2, piv2, lv2), (v2, ce2, z2, zb2, dx2) = _solve(TK.tree_island, a)
        assert st2 != TK.NOT_TREE and st1 == st2 == IK.OK and (m1, lv1) == (m2, lv2)
        assert np.abs(v1 - v2).max() <= 1e-8 * max(np.abs(v1).max(), 9.81 * sim.dt)
        assert np.abs(ce1 - ce2).max() <= 1e-5 * np.abs(ce1).max()
        assert np.abs(dx1 - dx2).max() <= 1e-9 * max(np.abs(dx1).max(), 1e-12)
        if m1:
            with_lcp += 1
            assert np.abs(z1[:m1] - z2[:m1]).max() <= 1e-4 * np.abs(z1[:m1]).max()
    # the islands of the hand with its contacts: joints, couplings, drives and an LCP in each step
    assert with_lcp >= 12 and len(problems) >= 12


def test_rows_that_are_no_joint_go_through_their_schur_complement():
    """Equality rows that form no joint -- random hard rows between pairs of four bodies, and
    soft rows with and without compliance -- are eliminated as couplings (every body free): the
    velocities, impulses and projection are still the block elimination's."""
    rng = np.random.default_rng(7)
    nb, ne, nhard = 4, 9, 6
    bodies = np.full((ne + 4, 4), -1, np.int64)
    jac = np.zeros((ne + 4, 4, 6))
    for i in range(ne):
        a, b = rng.choice(nb, 2, replace=False)
        bodies[i, :2] = a, b
        jac[i, :2] = rng.normal(size=(2, 6))
    for i in range(4):          # two one-body rows on body 0 and 3 as contacts-free limits
        bodies[ne + i, 0] = i
        jac[ne + i, 0] = rng.normal(size=6)
    A = rng.normal(size=(nb, 6, 6))
    Minv = np.zeros((nb, 6, 6))
    for b in range(nb):          # mass_terms' layout: diag(1/m) and a symmetric positive inverse inertia
        Minv[b, :3, :3] = np.eye(3) / rng.uniform(0.5, 2.0)
        Minv[b, 3:, 3:] = A[b, :3, :3] @ A[b, :3, :3].T + 0.5 * np.eye(3)
    comp = np.concatenate([np.zeros(nhard), [1e-2, 0.0, 3e-3], np.zeros(4)])
    rhs = rng.normal(size=ne + 4)
    a = (np.arange(nb), Minv, rng.normal(size=6 * nb), bodies, jac, rhs, comp, np.arange(ne), nhard,
         np.arange(ne, ne + 4), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), 4, 1e-6, 0, 3,
         np.zeros(0, bool), False, rng.normal(size=nhard) * 1e-4, True)
    (st1, m1, _, _), (v1, ce1, z1, _, dx1) = _solve(IK.solve_island, a)
    (st2, m2, _, _), (v2, ce2, z2, _, dx2) = _solve(TK.tree_island, a)
    assert st1 == st2 == IK.OK and m1 == m2 == 4
    assert np.abs(v1 - v2).max() <= 1e-9 * np.abs(v1).max()
    assert np.abs(ce1 - ce2).max() <= 1e-9 * np.abs(ce1).max()
    assert np.abs(z1[:4] - z2[:4]).max() <= 1e-9 * max(np.abs(z1[:4]).max(), 1e-12)
    assert np.abs(dx1 - dx2).max() <= 1e-9 * np.abs(dx1).max() and np.abs(dx1).max() > 0
    # and an island without equality rows is the block kernel's
    b = a[:7] + (np.zeros(0, np.int64), 0) + a[9:19] + (np.zeros(0), True)
    assert _solve(TK.tree_island, b)[0][0] == TK.NOT_TREE

"""The friction-cone repair of a warm start (``lemke(..., friction_cones=...)``, the island solver's
call): a resting contact's friction force turns a little from one step to the next, and last
step's basis then puts it on the wrong friction directions.  The repair moves those flags to the
directions the force now needs (lcp._kernel._repair_cones) before Lemke starts, so the warm start
verifies without a pivot.  The answers are verified as always; here they are also checked
independently and against the plain warm start's (the same post-step velocities)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from graspsim.lcp import lemke
from graspsim.lcp.problems import Body, Contact, _box_inertia, contact_lcp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_lcp_large import check_solution                # noqa: E402

U = 8


def resting_stack(levels, tilt, compliance=1e-6):
    """`levels` 0.2 x 0.2 x 0.1 m boxes (1 kg) stacked on the ground, at rest, 4 corner contacts per
    interface, mu 0.5, u = 8, h = 2.5 ms, under gravity with a 1 m/s^2 horizontal part at the angle
    `tilt` (rad): every contact sticks, its friction force opposite that part.  The simulator's
    contact compliance (relative to the mean diagonal) on the normal and friction rows."""
    half = np.array([0.1, 0.1, 0.05])
    bodies, contacts = [], []
    for k in range(levels):
        com = np.array([0.0, 0.0, half[2] * (2 * k + 1)])
        bodies.append(Body(1.0, _box_inertia(1.0, half), com, np.zeros(6)))
        for sx in (-1, 1):
            for sy in (-1, 1):
                p = com + np.array([sx * half[0] * 0.9, sy * half[1] * 0.9, -half[2]])
                contacts.append(Contact(k - 1, k, p, np.array([0.0, 0.0, 1.0]), 0.5))
    M, q, info = contact_lcp(bodies, contacts, u=U, h=0.0025, gravity=(np.cos(tilt), np.sin(tilt), -9.81))
    c = info["contacts"]
    idx = np.arange(c * (1 + U))
    M = M.copy()
    M[idx, idx] += compliance * np.mean(np.diag(M)[idx])
    return M, q, info, (0, c, c + c * U, c, U)


@pytest.mark.parametrize("levels", [1, 3, 6])
@pytest.mark.parametrize("turn", [0.6, 1.0])
def test_turned_friction_force_verifies_without_pivots(levels, turn):
    """The horizontal load turns by 0.6 or 1 rad between two steps: last step's basis needs Lemke
    pivots (9-49 measured), the repaired one none; both answers verified (independently too) and
    the same velocities after the step (the compliance makes them unique).  The repaired basis
    is the one Lemke finds from scratch: every direction within 90 degrees of the force."""
    M0, q0, _, _ = resting_stack(levels, 0.2)
    last = lemke(M0, q0)
    assert last.solved
    M, q, info, cones = resting_stack(levels, 0.2 + turn)
    plain = lemke(M, q, warm_start=last.basis)
    rep = lemke(M, q, warm_start=last.basis, friction_cones=cones)
    assert plain.solved and rep.solved
    assert plain.pivots > 0 and rep.pivots == 0 and rep.warm_started
    check_solution(M, q, rep.z)
    v, vp = info["velocity"](rep.z), info["velocity"](plain.z)
    assert np.abs(v - vp).max() <= 1e-9          # m/s and rad/s; the boxes creep at ~1e-6 m/s
    assert np.array_equal(rep.basis, lemke(M, q).basis)


def test_repair_without_compliance_keeps_a_vertex():
    """Without compliance a sticking contact's solution is a vertex: one or two friction directions
    per contact, and a guess of that kind is repaired to the directions around the force.  The
    answer is verified and moves the boxes as the plain warm start's does."""
    M0, q0, _, _ = resting_stack(1, 0.2, compliance=0.0)
    last = lemke(M0, q0)
    c = 4
    assert last.solved and last.basis[c:c + c * U].reshape(c, U).sum(1).max() <= 2
    M, q, info, cones = resting_stack(1, 1.2, compliance=0.0)
    plain = lemke(M, q, warm_start=last.basis)
    rep = lemke(M, q, warm_start=last.basis, friction_cones=cones)
    assert plain.solved and rep.solved and rep.pivots <= plain.pivots
    check_solution(M, q, rep.z)
    assert np.abs(info["velocity"](rep.z) - info["velocity"](plain.z)).max() <= 1e-9


def test_pile_lcps_same_impulses_fewer_pivots():
    """The 10 captured islands of the peers' 20-box drop (tests/data/pile_lcps.npz; no joint
    limits, u = 8): with the repair, never more pivots in all (304 -> 204 measured), every answer
    verified and the same normal impulses as without it (unique through the compliance, to the
    verification's tolerance amplified by the condition: 1e-3 of the largest)."""
    from capture_pile_lcps import unpack
    pile = unpack(os.path.join(HERE, "data", "pile_lcps.npz"))
    plain_pivots = rep_pivots = 0
    for d in pile:
        M, q, n = d["M"], d["q"], d["n"]
        c = n // (U + 2)
        cones = (0, c, c + c * U, c, U)
        plain = lemke(M, q, warm_start=d["warm"])
        rep = lemke(M, q, warm_start=d["warm"], friction_cones=cones)
        assert plain.solved and rep.solved
        check_solution(M, q, rep.z)
        assert np.abs(rep.z[:c] - plain.z[:c]).max() <= 1e-3 * np.abs(plain.z[:c]).max()
        plain_pivots += plain.pivots
        rep_pivots += rep.pivots
    assert rep_pivots < plain_pivots


@pytest.mark.parametrize("cones, what", [
    ((0, 4, 36, 4), "5 integers"),
    ((0, 4, 36, 4, 8.5), "5 integers"),
    ("abcde", "5 integers"),
    ((0, 4, 36, 5, 8), "do not fit 40 rows"),
    ((0, 4, 36, 4, 2), "do not fit 40 rows"),
    ((-1, 4, 36, 4, 8), "do not fit 40 rows"),
])
def test_bad_friction_cones(cones, what):
    M, q, _, _ = resting_stack(1, 0.0)
    with pytest.raises(ValueError, match="friction_cones") as e:
        lemke(M, q, warm_start=np.zeros(len(q), bool), friction_cones=cones)
    assert what in str(e.value)

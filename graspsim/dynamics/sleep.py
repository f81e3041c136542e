"""Resting-world deactivation ("sleep"): a world at rest to rounding skips its steps.

A world left alone converges to a resting state in which the step maps the state onto itself up to
rounding: in the shipped worlds, 0.4 s after the start, every body's speed is 1e-15 to 1e-14 m/s and
its position changes by less than 1e-19 m per step (the pile of the peers' drop, whose boxes keep
creeping at 3e-6 m/s, is not such a state).  Computing such a step again and again (collision, rows,
the LCP's verification) changes nothing a researcher can measure, so the simulator stops computing
it: when, for ``sleep_after`` seconds of uncut steps, every dynamic body's com moved slower than
``sleep_speed`` and it turned slower than ``sleep_speed / ANGULAR_LENGTH``, with the same controller
command, no external wrench, no kinematic base motion, the same contacts (their impulses steady to
``IMPULSE_RTOL``) and no breakaway DOF changing, the world falls asleep: the velocities are set to
zero and the following steps only advance the clock, reporting the last contacts and their impulses.

The world wakes (and that step is computed in full) as soon as anything the step reads differs from
what it was when the world fell asleep: a state changed in place or restored, a new controller
command, an external wrench, a base motion, gravity or the step length.  The defaults (1e-8 m/s for
0.05 s) let only a world sleep whose bodies move less than 10 nm per second; the shipped worlds at
rest move a million times slower still.  ``Simulator(sleep=False)`` computes every step.  Bullet
and DART deactivate resting bodies the same way, with thresholds of mm/s; GraspIt does not.

Objects can also sleep on their own while the rest of the world moves (an island of objects only,
see the second half of this module): a cluttered table no longer costs its contacts and LCPs every
step while the hand works.

What the step keeps about it lives in the data block (:class:`~graspsim.dynamics.simulator.SimData`
``rest``, ``asleep`` and ``bodies_*``), so ``save_state``/``restore_state`` replay sleeping and
waking bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: default ``Simulator(sleep_speed=...)`` (m/s): the com speed below which a body counts as resting
SLEEP_SPEED = 1e-8
#: largest ``sleep_speed`` accepted (m/s): a faster body is not at rest
MAX_SLEEP_SPEED = 0.1
#: default ``Simulator(sleep_after=...)`` (s): how long every body must rest before the world sleeps
SLEEP_AFTER = 0.05
#: (m) a body's angular speed times this length is compared with ``sleep_speed``: the speed of a
#: point 10 cm from its com
ANGULAR_LENGTH = 0.1
#: contact impulses count as steady when no component changed by more than this fraction of the
#: largest one (plus 1e-15 N s) since the previous step
IMPULSE_RTOL = 1e-6
ROOT3 = float(np.sqrt(3.0))


@dataclass(frozen=True)
class Asleep:
    """What a sleeping world was when it fell asleep (arrays are private copies, never changed):
    the bodies' coms ``c`` (nb, 3) m and orientations ``q`` (nb, 4), joint values ``joint_q``,
    breakaway flags ``broken`` and held values ``lock``, the controller command ``command`` ((6, nd),
    rows as :data:`~graspsim.dynamics.checks.CMD_FIELDS`; None without a controller), the
    simulator's parameters ``key`` (``Simulator._sleep_key``: dt, gravity, ...), and the last step's
    ``contacts`` (a ContactSet or None) with their impulses ``impulse`` (k, 3) N s on body_b, W,
    over a step of the simulator's ``dt`` (part of ``key``: uncut steps only)."""

    c: np.ndarray
    q: np.ndarray
    joint_q: np.ndarray
    broken: np.ndarray
    lock: np.ndarray
    command: np.ndarray | None
    key: tuple
    contacts: object
    impulse: np.ndarray


def resting(lin: float, ang: float, speed: float) -> bool:
    """Is every body slower than ``speed`` (m/s), given the largest component of the linear
    velocities ``lin`` (m/s) and of the angular ones ``ang`` (rad/s)?  sqrt(3) bounds a vector's
    norm by its largest component; an angular speed counts at ANGULAR_LENGTH from the com."""
    return ROOT3 * max(lin, ANGULAR_LENGTH * ang) < speed


def steady(command, previous_command, impulse: np.ndarray, previous_impulse) -> bool:
    """The same command as the previous step (both None or equal arrays) and contact impulses that
    changed by at most IMPULSE_RTOL of the largest since the previous step (same contact count)."""
    if (command is None) != (previous_command is None):
        return False
    if command is not None and not np.array_equal(command, previous_command):
        return False
    if previous_impulse is None or impulse.shape != previous_impulse.shape:
        return False
    if not impulse.size:
        return True
    big = float(np.abs(impulse).max())
    return float(np.abs(impulse - previous_impulse).max()) <= IMPULSE_RTOL * big + 1e-15


def unchanged(a: Asleep, state, command, key: tuple) -> bool:
    """Does the step still read what it read when the world fell asleep: the state (bodies at rest
    where they were, the same joint values and breakaway flags), the command and the parameters?"""
    if key != a.key or (command is None) != (a.command is None):
        return False
    if command is not None and not np.array_equal(command, a.command):
        return False
    return (not state.v.any() and np.array_equal(state.c, a.c) and np.array_equal(state.q, a.q)
            and np.array_equal(state.joint_q, a.joint_q) and np.array_equal(state.broken, a.broken)
            and np.array_equal(state.lock, a.lock))


# -- objects that rest while the rest of the world moves -------------------------------------------
#
# A world whose robot moves can still hold objects at rest to rounding (a cluttered table while the
# hand grasps one of them): each costs its contacts and its LCP every step (30-40 us per resting
# cube).  An island of dynamic bodies that are all objects (no robot link) and have all rested for
# sleep_after seconds falls asleep on its own: its velocities are zeroed, its pairs with static or
# sleeping bodies leave the contact search, and it stays where it is until an awake body touches it
# (the whole group wakes, and the step's contacts are searched again with its pairs), a push, a
# state changed in place or a parameter change wakes it.  Its contacts and forces are reported as
# they were when it fell asleep (Simulator.contacts, contact_forces).  Islands never mix robots and
# objects at rest: an object a finger touches is in the robot's island, and stays awake.  A moving
# base (set_base_motion) is searched against sleeping objects like an awake body.

def resting_islands(labels: np.ndarray, rested: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(nb,) bool: the bodies of islands (``labels`` (nb,)) in which every body has ``rested``, and
    (nb,) int64 each body's group id, its island's smallest body slot + 1."""
    n = int(labels.max()) + 1 if len(labels) else 0
    busy = np.bincount(labels, weights=(~rested).astype(float), minlength=n) > 0
    first = np.full(n, len(labels), np.int64)
    np.minimum.at(first, labels, np.arange(len(labels)))
    return ~busy[labels], first[labels] + 1


def touched_groups(slot_a: np.ndarray, slot_b: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Sleeping groups (ids > 0 of ``group`` (nb,)) with a body in a contact between dynamic slots
    ``slot_a``, ``slot_b`` (-1: static)."""
    ga = np.where(slot_a >= 0, group[np.maximum(slot_a, 0)], 0)
    gb = np.where(slot_b >= 0, group[np.maximum(slot_b, 0)], 0)
    g = np.concatenate([ga, gb])
    return np.unique(g[g > 0])

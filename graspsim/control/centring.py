"""Centring a static closing: shift the hand so that a parallel jaw touches with both fingers.

:func:`graspsim.control.static_auto_grasp` stops a DOF at the first link it drives that touches,
and the object does not move.  A parallel jaw (one DOF, mimic-coupled fingers) whose centre is off
the object's by more than the contact threshold therefore touches with one finger only: not force
closure, where a real gripper would push the object to its middle.  :func:`centre` stands in for
that push without a simulation: while the grasp is not force closure, the hand's base is shifted
by half the gap of the finger link farthest from the object (FCL closest points) and the hand
closes again from the same open preshape, the shift kept only where the open hand is free
(twice at most, :data:`ROUNDS`).

One function for the planner (:meth:`graspsim.planner.api.Problem.close_centred`), robustness
(:func:`graspsim.grasp.robustness` with ``closing="centred"``) and the batch
(``evaluation.closing: centred``).  How a closing is done and what it returns stays the caller's
(a callable): the loop, the gap, the shift and the free test are here.  :func:`centre_in_world`
runs it on a world's own state (robustness and the batch); the planner poses its links itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Generic, Sequence, TypeVar

import numpy as np

__all__ = ["Centred", "centre", "centre_in_world", "ROUNDS"]

#: shifted closings tried at most after the first one
ROUNDS = 2

R = TypeVar("R")


@dataclass(frozen=True)
class Centred(Generic[R]):
    """Outcome of :func:`centre`: the closing kept and where the hand closed from."""

    grasp: R                 # what the caller's ``close`` returned for the closing kept
    base_pose: np.ndarray    # (4, 4) hand base pose (W, m) that closing started from
    shift: np.ndarray        # (3,) its translation minus the first base pose's (W, m); zeros if not moved
    shifts: int              # shifted closings kept (0 .. rounds)


def centre(close: Callable[[np.ndarray], R], X_WB: np.ndarray, *, model, obj: int, fingers: Sequence[int],
           pairs: np.ndarray, closed_poses: Callable[[R], np.ndarray], open_poses: Callable[[np.ndarray], np.ndarray],
           force_closure: Callable[[R], bool], better: Callable[[R, R], bool] | None = None,
           rounds: int = ROUNDS) -> Centred[R]:
    """Close the hand from base pose ``X_WB`` (4x4, W, m), then centre it (module docstring).

    ``close(X)`` closes the hand from its open preshape with the base at ``X`` and returns the
    caller's grasp ``R``; ``force_closure(r)`` says whether ``r`` is.  ``closed_poses(r)`` are the
    body-table poses (nb, 4, 4; W, m) with the hand closed as in ``r`` (the most recent ``close``
    returned it); ``open_poses(X)`` those with the open hand at base pose ``X``.  ``model`` is the
    world's :class:`graspsim.collision.CollisionModel`, ``obj`` the object's body-table row,
    ``fingers`` the body-table rows of the finger links whose gap to the object is measured, and
    ``pairs`` (m, 2) the body pairs the open hand must not interpenetrate at a shifted pose.

    Each round, while not force closure: the finger link farthest from the object (its distance
    ``d`` and closest points ``p_link``, ``p_obj`` in W) stops the centring if ``d`` is within the
    model's contact threshold; else the base moves by ``(p_obj - p_link) / 2`` (a pure
    translation; the orientation stays), the centring stops if the open hand interpenetrates
    there, and the hand closes again.  The new closing is kept if ``better(new, old)`` (or always
    when ``better`` is None), else the centring stops with the old one.
    """
    X = np.array(X_WB, dtype=float)
    g = close(X_WB)
    kept = 0
    for _ in range(rounds if len(fingers) else 0):
        if force_closure(g):
            break
        P = closed_poses(g)
        gaps = [model.distance(int(f), obj, P) for f in fingers]
        d, p_link, p_obj = gaps[int(np.argmax([x[0] for x in gaps]))]
        if not d > model.threshold:
            break
        Xn = X.copy()
        Xn[:3, 3] += 0.5 * (np.asarray(p_obj) - np.asarray(p_link))
        if len(pairs) and model.penetrating(open_poses(Xn), pairs=pairs):
            break
        g2 = close(Xn)
        if better is not None and not better(g2, g):
            break
        g, X, kept = g2, Xn, kept + 1
    return Centred(g, X, X[:3, 3] - np.asarray(X_WB, dtype=float)[:3, 3], kept)


def centre_in_world(world, hand: str, close: Callable[[], R], *, obj: int, fingers: Sequence[int],
                    pairs: np.ndarray, force_closure: Callable[[R], bool],
                    better: Callable[[R, R], bool] | None = None, compiled: bool = False,
                    rounds: int = ROUNDS) -> Centred[R]:
    """:func:`centre` in ``world``'s state: the (unmounted) ``hand`` open at its current base pose,
    the other bodies where they are.  ``close()`` closes the hand in place (e.g. a
    :func:`graspsim.control.static_auto_grasp`) and returns the caller's grasp; before each
    closing the world is back in that open state with the hand's base at the pose tried.  The
    poses are the world's (:meth:`graspsim.World.body_poses`, ``compiled`` as given); the model is
    :func:`graspsim.collision.model_for` the world.  The world is left in the last state tried
    (closed, or open where a shifted pose interpenetrated): restore it afterwards.
    """
    from ..collision import model_for

    h = world.robots[hand]
    open_state = world.save_state()

    def open_at(X: np.ndarray) -> np.ndarray:
        world.restore_state(open_state)
        h.base_pose = X
        return world.body_poses(compiled)

    def close_at(X: np.ndarray) -> R:
        open_at(X)
        return close()

    return centre(close_at, h.base_pose, model=model_for(world), obj=obj, fingers=fingers, pairs=pairs,
                  closed_poses=lambda r: world.body_poses(compiled), open_poses=open_at,
                  force_closure=force_closure, better=better, rounds=rounds)

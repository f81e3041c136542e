"""Collision detection and contact determination.

* :class:`CollisionModel` (array API for the dynamics and auto-grasp): ``contacts(poses)`` ->
  :class:`ContactSet`, ``penetrating``, ``separations``, ``pair_separations``, ``distance``.
* :func:`find_contacts` (names, for scripts), :func:`check_interpenetration` (load-time check),
  :func:`closest_points` (distance by name).
* :func:`localize_impact`, :func:`localize_joint_limit` (binary search of the step fraction).

Conventions (normal from body_a towards body_b, signed separation, friction frame) are in
:mod:`graspsim.collision.model` and docs/collision.md.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import CollisionError
from .distance import closest_points
from .localize import PairView, localize_impact, localize_joint_limit
from .model import CollisionData, CollisionModel, ContactSet

__all__ = ["CollisionModel", "CollisionData", "ContactSet", "Contact", "find_contacts", "check_interpenetration",
           "closest_points",
           "localize_impact", "localize_joint_limit", "model_for", "CollisionError", "PairView"]

def model_for(world, threshold: float | None = None) -> CollisionModel:
    """A :class:`CollisionModel` for the world's body table (cached on the table, per threshold).

    ``threshold`` defaults to the world's ``contact_threshold`` (0.1 mm unless the file says otherwise).
    The cache lives on the (immutable) table, so models go when their table does.
    """
    thr = float(world.description.contact_threshold if threshold is None else threshold)
    table = world.table
    models = table.__dict__.get("_collision_models")
    if models is None:
        models = {}
        object.__setattr__(table, "_collision_models", models)
    m = models.get(thr)
    if m is None:
        m = models[thr] = CollisionModel(table, thr)
    return m


@dataclass(frozen=True)
class Contact:
    """One contact, by body name (see :class:`ContactSet` for the conventions)."""

    body_a: str
    body_b: str
    point: np.ndarray       # (3,) world, m
    normal: np.ndarray      # (3,) unit, from body_a towards body_b
    separation: float       # m, > 0 apart
    tangent1: np.ndarray
    tangent2: np.ndarray
    point_a: np.ndarray
    point_b: np.ndarray


def find_contacts(world, threshold: float | None = None) -> list[Contact]:
    """The contacts of the world's current state (bodies within ``threshold``, default the world's 0.1 mm)."""
    cs = model_for(world, threshold).contacts(world.body_poses())
    names = world.table.names
    return [Contact(names[cs.body_a[k]], names[cs.body_b[k]], cs.point[k], cs.normal[k], float(cs.separation[k]),
                    cs.tangent1[k], cs.tangent2[k], cs.point_a[k], cs.point_b[k]) for k in range(len(cs))]


def check_interpenetration(world, *, raise_error: bool = True, threshold: float | None = None) -> list:
    """Interpenetrating bodies of the world's current state: [(name_a, name_b, depth m)].

    Touching bodies (e.g. an object resting exactly on a table) do not count.  With
    ``raise_error`` (default) a non-empty result raises :class:`CollisionError` naming every pair
    with its depth, e.g. "world 'w': bodies interpenetrate: 'cube' and 'table' by 5 mm".
    """
    m = model_for(world, threshold)
    names = world.table.names
    out = [(names[i], names[j], float(d)) for i, j, d in m.interpenetrations(world.body_poses())]
    if out and raise_error:
        desc = "; ".join(f"'{a}' and '{b}' by {d * 1e3:.3g} mm" for a, b, d in out)
        raise CollisionError(f"world '{world.name}': bodies interpenetrate: {desc}")
    return out

"""Distance queries by body name (closest points), for auto-grasp and planning."""
from __future__ import annotations

import numpy as np

from ..arguments import world_arg

__all__ = ["closest_points"]


def closest_points(world, body_a: str, body_b: str, *, threshold: float | None = None):
    """(distance m, point on a, point on b) between two bodies of ``world`` in their current poses.

    Points are in the world frame.  When the bodies interpenetrate the distance is minus a depth
    estimate (see :meth:`CollisionModel.distance`).
    """
    world_arg("closest_points", world)
    from . import model_for

    t = world.table
    for n in (body_a, body_b):
        if n not in t.index:
            from ..errors import did_you_mean

            raise KeyError(f"no body '{n}'{did_you_mean(n, t.index)}")
    if body_a == body_b:
        raise ValueError(f"closest_points needs two different bodies, got '{body_a}' twice")
    m = model_for(world, threshold)
    d, pa, pb = m.distance(t.index[body_a], t.index[body_b], world.body_poses())
    return float(d), np.asarray(pa), np.asarray(pb)

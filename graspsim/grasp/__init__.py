"""Grasp analysis core: contact wrenches, grasp wrench space, force closure,
epsilon (Ferrari-Canny) and volume quality.

Self-contained (imports nothing else from graspsim).  Main entry points:

* :func:`analyze` - contacts -> :class:`GraspQuality` (force_closure, epsilon,
  lazy volume).
* :func:`analyze_wrenches` - the same from primitive wrenches (k, M, 6).
* :func:`wrench_margin` - where a measured wrench sits in the space.
* :func:`robustness` - force closure probability and epsilon under object pose and
  friction noise, re-closing the hand per sample (needs the world layers: lazy).
* :func:`plot_gws` - force/torque 3-D projections as a PNG (needs matplotlib).

See docs/grasp_analysis.md for conventions and algorithms.
"""

from __future__ import annotations

from typing import Any

from .closure import affine_rank, force_closure_lp, linear_rank
from .quality import (
    GraspQuality,
    WrenchMargin,
    analyze,
    analyze_wrenches,
    gws_volume,
    minkowski_points,
    qhull_quality,
    support_function,
    wrench_margin,
)
from .wrenches import (
    friction_cone_edges,
    primitive_wrenches,
    resultant_wrench,
    tangent_basis,
    validate_contacts,
)

__all__ = [
    "GraspQuality",
    "WrenchMargin",
    "affine_rank",
    "analyze",
    "analyze_wrenches",
    "force_closure_lp",
    "friction_cone_edges",
    "gws_volume",
    "linear_rank",
    "minkowski_points",
    "plot_gws",
    "primitive_wrenches",
    "qhull_quality",
    "resultant_wrench",
    "support_function",
    "tangent_basis",
    "validate_contacts",
    "wrench_margin",
]


def plot_gws(result: Any, path: Any = None, **kwargs: Any) -> Any:
    """Force- and torque-space projections of the GWS (see :mod:`.plot`).

    Imports matplotlib lazily (optional extra ``plot``).
    """
    from .plot import plot_gws as _plot_gws

    return _plot_gws(result, path, **kwargs)


def __getattr__(name: str) -> Any:  # object-level helpers need the world/collision layers: load lazily
    if name in ("evaluate_grasp", "grasp_contacts", "torque_scale", "contact_force_margin", "GraspContacts"):
        from . import objects

        return getattr(objects, name)
    if name in ("robustness", "Grasp", "RobustQuality"):
        from . import robust  # not robustness.py: importing it would shadow the function

        return getattr(robust, name)
    raise AttributeError(f"module 'graspsim.grasp' has no attribute {name!r}")

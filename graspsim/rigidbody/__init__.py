"""Reduced-coordinate rigid-body dynamics of robot trees.

* :func:`from_robot` builds a :class:`RigidBodyModel` (arrays) once from a robot description, with a
  fixed or floating base.
* Tree (joint) coordinates: :func:`rnea` (inverse dynamics, recursive Newton-Euler), :func:`crba`
  (joint-space inertia, composite rigid bodies), :func:`forward_dynamics_crb` (CRBM + Cholesky),
  :func:`forward_dynamics_abm` (articulated bodies, O(n)) and :func:`forward_dynamics_modified_abm`
  (Pai-Ascher-Kry sec. 7 pivot).
* DOF coordinates with coupled joints (:mod:`.dofs`): :func:`inverse_dynamics` (computed-torque
  feed-forward), :func:`mass_matrix`, :func:`forward_dynamics`, :func:`computed_torque`.
* :mod:`.builders`: synthetic chains and random trees; :mod:`.quantities`: poses, energy, momentum.

Kernels are numba-compiled on first use (cached on disk), never at import.  Frames, units and
coordinates are described in :mod:`graspsim.rigidbody.tree` and :mod:`graspsim.rigidbody.spatial_algebra`;
the study of how CRBM and ABM behave on ill-conditioned chains is ``docs/reduced_coordinates.md``.
"""
from __future__ import annotations

from .abm import forward_dynamics_abm, forward_dynamics_abm_multi, forward_dynamics_modified_abm
from .builders import make_robot, planar_chain, random_tree, serial_chain
from .crbm import condition_number, crba, forward_dynamics_crb
from .dofs import (bias_forces as dof_bias_forces, computed_torque, dof_coordinates, feedforward_torque,
                   forward_dynamics, inverse_dynamics, mass_matrix, tree_coordinates)
from .quantities import (body_poses, body_velocities, configuration_derivative, kinetic_energy, link_poses,
                         potential_energy, spatial_momentum, total_energy, wrench_on_link)
from .rnea import bias_forces, gravity_forces, rnea, rnea_free_floating
from .tree import DEFAULT_GRAVITY, RigidBodyModel, from_robot

__all__ = [
    "RigidBodyModel", "from_robot", "DEFAULT_GRAVITY",
    "rnea", "bias_forces", "gravity_forces", "rnea_free_floating",
    "crba", "forward_dynamics_crb", "condition_number",
    "forward_dynamics_abm", "forward_dynamics_modified_abm", "forward_dynamics_abm_multi",
    "inverse_dynamics", "mass_matrix", "forward_dynamics", "dof_bias_forces", "feedforward_torque",
    "computed_torque", "tree_coordinates", "dof_coordinates",
    "body_poses", "link_poses", "body_velocities", "kinetic_energy", "potential_energy", "total_energy",
    "spatial_momentum", "wrench_on_link", "configuration_derivative",
    "make_robot", "planar_chain", "serial_chain", "random_tree",
]

"""Sane ranges for model values (SI), and limits on what a model may make graspsim read or build.

A value outside its range is refused when the file is loaded, with the range named: beyond these,
numbers are typos or hostile (``mass: 1e300``, ``dt: 1e300``) and would make the simulator hang,
divide by zero or return nonsense.  The ranges are wide enough for anything from a 1 cm part in a
gripper to an industrial arm.  Each entry is ``(low, high, unit, low_open)``; ``low_open`` means the
low end itself is excluded.  The README's "Model format" section lists the same numbers.
"""
from __future__ import annotations

import math

#: a length in the model: box sides, radii, cylinder/capsule lengths, mesh extents (m)
SIZE = (1e-5, 100.0, "m", False)
#: a position or offset: shape origins, centres of mass, joint origins, DH d/a, poses (|x|, m)
POSITION = (-1000.0, 1000.0, "m", False)
#: an angle: DH theta/alpha, joint and DOF limits and values (|x|, rad)
ANGLE = (-100.0, 100.0, "rad", False)
#: an orientation angle: a pose's rpy, a batch's rolls (|x| <= one turn: every orientation has one;
#: a larger value is almost surely degrees written where the file's unit is radians)
TURN = (-2.0 * math.pi, 2.0 * math.pi, "rad", False)
#: a cone's half-angle or an angular spread: (0, pi] rad
HALF_TURN = (0.0, math.pi, "rad", True)
#: a prismatic joint's travel, limits and values (|x|, m)
TRAVEL = (-100.0, 100.0, "m", False)
MASS = (1e-6, 1e4, "kg", False)
DENSITY = (0.1, 1e5, "kg/m^3", False)
#: explicit inertia entries (|I_ij|); principal moments must also lie between m (1 um)^2 and m (100 m)^2
INERTIA = (-1e6, 1e6, "kg m^2", False)
GYRATION = (1e-6, 100.0, "m", False)
#: time step
DT = (0.0, 1.0, "s", True)
#: magnitude of the gravity vector (m/s^2; Earth's is 9.81)
GRAVITY = (0.0, 100.0, "m/s^2", False)
#: the contact kernels are exact only for thresholds far below feature sizes (collision.model.MAX_THRESHOLD)
CONTACT_THRESHOLD = (0.0, 0.005, "m", True)
#: Coulomb friction coefficients of a material pair
FRICTION = (0.0, 10.0, "", False)
RESTITUTION = (0.0, 1.0, "", False)
#: joint friction: Coulomb (N m or N) and viscous (N m s/rad or N s/m)
JOINT_FRICTION = (0.0, 1e6, "", False)
GAIN_KP = (0.0, 1e9, "", False)
GAIN_KD = (0.0, 1e9, "", False)
EFFORT = (0.0, 1e6, "N m or N", True)
BREAKAWAY = (0.0, 1e6, "N m", False)
#: DOF closing speed (rad/s or m/s; sign = direction)
VELOCITY = (-1000.0, 1000.0, "rad/s or m/s", False)
#: |ratio| of a DOF coupling (joint = ratio * dof + offset)
RATIO = (1e-3, 1e3, "", False)
#: mesh ``scale`` factors
SCALE = (1e-6, 1e6, "", False)
#: components of a direction (joint axis, approach, eigengrasp vector; normalised after reading)
DIRECTION = (-1e6, 1e6, "", False)

#: counts: robots, objects + obstacles, and all bodies (links too) in a world; links/joints/DOFs in a robot
MAX_ROBOTS = 64
MAX_BODIES = 500
MAX_WORLD_BODIES = 1000
MAX_LINKS = 256
#: collision shapes of one link or object (a URDF link's <collision> elements, a `shapes:` list)
MAX_SHAPES = 256
#: most triangles in all the distinct meshes one load reads (a robot, an object, or a world with all
#: it names); one mesh may hold up to graspsim.meshfile.MAX_TRIANGLES
MAX_MODEL_TRIANGLES = 300_000
#: longest name (robot, link, joint, DOF, body, material) and file name, in characters
MAX_NAME = 200
MAX_PATH = 4096
MAX_DESCRIPTION = 10_000


def describe(b: tuple) -> str:
    """'[lo, hi] unit' (or '(lo, hi]') for messages."""
    lo, hi, unit, low_open = b
    return f"{'(' if low_open else '['}{lo:g}, {hi:g}]{' ' + unit if unit else ''}"

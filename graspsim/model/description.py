"""Immutable descriptions of what robots, objects and worlds *are* (loaded once from YAML).

Nothing here changes during a simulation: poses, velocities and DOF values live in state objects
(:mod:`graspsim.world`, :mod:`graspsim.dynamics`).  Arrays are read-only.  All quantities in SI
units; frames are named in the field names (``X_PJ`` = pose of J in P).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from ..geometry import Shape
from .materials import MaterialTable

REVOLUTE, PRISMATIC, FIXED = "revolute", "prismatic", "fixed"


@dataclass(frozen=True, eq=False)
class Inertial:
    """Mass (kg), centre of mass in the owner's frame (m) and inertia about the com (kg m^2, owner axes)."""

    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclass(frozen=True, eq=False)
class Visual:
    """What the viewer draws for a link (a URDF ``<visual>``); contacts use ``Link.shape`` only.

    ``kind`` is box/sphere/cylinder (``size`` as for :class:`~graspsim.geometry.Shape`, metres) or
    mesh (``mesh`` the file, ``scale`` its per-axis scale to metres); ``X_LS`` places it in the link
    frame; ``color`` is (r, g, b) in 0..1.  Mesh files are read only when something draws them.
    """

    kind: str
    size: tuple
    X_LS: np.ndarray
    color: tuple
    mesh: str | None = None
    scale: tuple = (1.0, 1.0, 1.0)


@dataclass(frozen=True, eq=False)
class Link:
    name: str
    shape: Shape | None
    inertial: Inertial
    material: str
    color: tuple
    visuals: tuple = ()         # Visual entries (URDF links); empty: the viewer draws ``shape``


@dataclass(frozen=True, eq=False)
class Joint:
    """A joint between ``parent`` and ``child`` link (indices into ``Robot.links``).

    The child frame is ``X_PC(q) = X_PJ @ motion(axis, q) @ X_JC``: ``X_PJ`` places the joint frame J
    in the parent frame (xyz/rpy placement), the motion is a rotation about (revolute) or translation
    along (prismatic) the unit ``axis`` expressed in J, and ``X_JC`` is the constant rest of a
    Denavit-Hartenberg transform ``Rz(theta) Tz(d) Tx(a) Rx(alpha)`` (identity for xyz/rpy joints).
    """

    name: str
    kind: str
    parent: int
    child: int
    X_PJ: np.ndarray
    X_JC: np.ndarray
    axis: np.ndarray
    limits: np.ndarray          # (2,) rad or m; (-inf, inf) if unlimited
    coulomb: float              # N m (or N)
    viscous: float              # N m s/rad (or N s/m)
    dof: int                    # index of the driving DOF, -1 if none (fixed or passive)
    ratio: float                # joint = ratio * dof + offset
    offset: float


@dataclass(frozen=True, eq=False)
class DOF:
    """A degree of freedom (actuator) driving one or more joints: ``joint = ratio * dof + offset``."""

    name: str
    joints: tuple               # indices into Robot.joints
    ratios: np.ndarray
    offsets: np.ndarray
    limits: np.ndarray          # (2,)
    kind: str                   # 'rigid' | 'breakaway'
    breakaway_torque: float     # N m
    kp: float
    kd: float
    effort: float               # N m (or N), |torque| limit
    velocity: float             # default closing speed, rad/s (or m/s), sign gives the closing direction
    default: float              # initial value


@dataclass(frozen=True, eq=False)
class Robot:
    """A robot tree: links, joints (ordered so every parent comes before its child), DOFs."""

    name: str
    file: str
    links: tuple
    joints: tuple
    dofs: tuple
    base_link: int
    palm_link: int
    approach: np.ndarray        # unit approach direction in the palm frame
    eigengrasps: np.ndarray     # (k, ndof); may be empty (0, ndof)
    eigengrasp_origin: np.ndarray
    no_collide: frozenset       # frozenset of frozenset({i, j}) link index pairs
    link_index: dict = field(repr=False)
    joint_index: dict = field(repr=False)
    dof_index: dict = field(repr=False)
    parent_joint: tuple = field(repr=False)   # per link: index of the joint whose child it is, -1 for the base
    sources: tuple = field(default=(), repr=False)   # other files it was built from (a side file's URDF)

    @property
    def dof_names(self) -> list[str]:
        return [d.name for d in self.dofs]

    @property
    def dof_limits(self) -> np.ndarray:
        """(ndof, 2) lower and upper limits (rad or m)."""
        return np.array([d.limits for d in self.dofs]).reshape(len(self.dofs), 2)

    @property
    def link_names(self) -> list[str]:
        return [l.name for l in self.links]


@dataclass(frozen=True, eq=False)
class Object:
    """A graspable object or an obstacle: one shape, mass properties and a material."""

    name: str
    file: str
    shape: Shape
    inertial: Inertial | None   # None for obstacles that never move
    material: str
    color: tuple
    #: how the mass was found when the file did not say (e.g. the default density); '' otherwise
    mass_note: str = ""


@dataclass(frozen=True, eq=False)
class RobotInstance:
    """A robot placed in a world.  ``mount`` = (parent robot index, link index, X_LB) or None."""

    name: str
    robot: Robot
    X_WB: np.ndarray            # base pose in the world (ignored when mounted)
    mount: tuple | None
    fixed_base: bool
    initial_dofs: np.ndarray


@dataclass(frozen=True, eq=False)
class BodyInstance:
    """An object placed in a world, dynamic (moves under forces) or static (an obstacle)."""

    name: str
    obj: Object
    X_WO: np.ndarray
    dynamic: bool


@dataclass(frozen=True, eq=False)
class World:
    """Everything a world file says: robots, bodies, gravity, time step, materials, thresholds."""

    name: str
    file: str
    robots: tuple
    bodies: tuple
    gravity: np.ndarray
    dt: float
    contact_threshold: float
    materials: MaterialTable
    disabled_pairs: frozenset   # frozenset of frozenset({name_a, name_b}) of collision names
    robot_index: dict = field(repr=False)
    body_index: dict = field(repr=False)
    #: robot or body name -> (field, line) of its entry in the world file (for checks made after loading)
    entry_lines: dict = field(default_factory=lambda: MappingProxyType({}), repr=False)

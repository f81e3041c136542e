"""Immutable descriptions of what robots, objects and worlds *are* (loaded once from YAML).

Nothing here changes during a simulation: poses, velocities and DOF values live in state objects
(:mod:`graspsim.world`, :mod:`graspsim.dynamics`).  Arrays are read-only.  All quantities in SI
units; frames are named in the field names (``X_PJ`` = pose of J in P).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..geometry import Shape
from .materials import MaterialTable
from .readonly import ReadOnlyDict

REVOLUTE, PRISMATIC, FIXED = "revolute", "prismatic", "fixed"


@dataclass(frozen=True, eq=False)
class Inertial:
    """Mass (kg), centre of mass in the owner's frame (m) and inertia about the com (kg m^2, owner axes)."""

    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclass(frozen=True, eq=False)
class Visual:
    """What the viewer draws for a link (a URDF ``<visual>``); contacts use ``Link.shapes`` only.

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


def _shapes_tuple(v) -> tuple:
    """A body's collision shapes as a tuple (accepts one Shape or None, as older callers pass)."""
    if v is None:
        return ()
    if isinstance(v, Shape):
        return (v,)
    return tuple(v)


def merged_shape(shapes: tuple) -> Shape | None:
    """One shape standing for a body's collision shapes where a single one is wanted.

    None for no shape, the shape itself for one; for several, a mesh (``X_LS`` identity) joining
    their tessellations in the body frame: what the viewer, picking and bounding code draw or
    measure.  It has no volume and is not what contacts use (they take every shape by itself).
    """
    if not shapes:
        return None
    if len(shapes) == 1:
        return shapes[0]
    Vs, Fs, n = [], [], 0
    for s in shapes:
        X = s.X_LS
        V = np.asarray(s.vertices, float) @ X[:3, :3].T + X[:3, 3]
        Vs.append(V)
        Fs.append(np.asarray(s.faces, np.int64) + n)
        n += len(V)
    V, F = np.concatenate(Vs), np.concatenate(Fs)
    V.flags.writeable = False
    F.flags.writeable = False
    return Shape("mesh", (), np.eye(4), None, 0.0, np.zeros(3), np.zeros((3, 3)), False, (V, F))


class _Shapes:
    """``shapes`` (a tuple, normalised at construction) and the one-shape view ``shape``."""

    def __post_init__(self):
        object.__setattr__(self, "shapes", _shapes_tuple(self.shapes))
        for s in self.shapes:
            if not isinstance(s, Shape):
                raise TypeError(f"shapes must be Shape objects, got {type(s).__name__}")

    @property
    def shape(self) -> Shape | None:
        """The single collision shape, None without one; with several, :func:`merged_shape`
        (for drawing and bounds; collision code reads ``shapes``)."""
        d = self.__dict__
        if "_merged" not in d:
            object.__setattr__(self, "_merged", merged_shape(self.shapes))
        return d["_merged"]


@dataclass(frozen=True, eq=False)
class Link(_Shapes):
    """A rigid link: ``shapes`` its collision shapes (each placed by its own ``X_LS`` in the link
    frame; a URDF link's several ``<collision>`` elements), ``shape_materials`` a material name
    per shape or None for the link's ``material``."""

    name: str
    shapes: tuple
    inertial: Inertial
    material: str
    color: tuple
    visuals: tuple = ()         # Visual entries (URDF links); empty: the viewer draws ``shapes``
    shape_materials: tuple = ()


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
class Object(_Shapes):
    """A graspable object or an obstacle: its shapes (one or more), mass properties and a material."""

    name: str
    file: str
    shapes: tuple
    inertial: Inertial | None   # None for obstacles that never move
    material: str
    color: tuple
    #: how the mass was found when the file did not say (e.g. the default density); '' otherwise
    mass_note: str = ""
    #: per shape: a material name, or None for the object's ``material``
    shape_materials: tuple = ()


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
    entry_lines: dict = field(default_factory=ReadOnlyDict, repr=False)

"""A loaded world: the immutable description plus the current kinematic state.

``World`` is the convenience object the Python API, the CLI and the GUI hold.  The description
(``world.description``) never changes; the state (``world.state``: DOF values of every robot, base
poses, object poses) is a small value that can be copied, saved and restored.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import kinematics, spatial
from .arguments import real
from .model import description as d
from .model.bodies import BodyTable, body_table

__all__ = ["World", "WorldState", "RobotHandle", "BodyHandle", "MAX_JOINT_VALUE"]

#: largest DOF or joint value (rad or m), also for joints without limits: beyond it revolute joints
#: lose their unwrapping precision (modulo 2 pi) and no prismatic joint is that long
MAX_JOINT_VALUE = 1e6


def _bounded(q: np.ndarray) -> bool:
    """All finite and within +-MAX_JOINT_VALUE (NaN fails the comparison)."""
    return bool(np.all(np.abs(q) <= MAX_JOINT_VALUE))


@dataclass
class WorldState:
    """Kinematic state: per robot DOF values (rad or m) and base pose; per body its pose (4x4, W)."""

    dofs: list            # list of (ndof,) arrays
    base_poses: list      # list of (4, 4) arrays (ignored for mounted robots)
    body_poses: list      # list of (4, 4) arrays, one per World.bodies entry
    #: per robot {joint index: value}: joints decoupled from their DOF (a broken-away Barrett
    #: proximal joint held where its link met the object); cleared by ``set_dofs``
    joint_overrides: list = None
    #: per robot the DOF set points (ndof,) its drives hold when dynamics starts, or None: hold the
    #: DOF values.  An auto-grasp leaves its closing command here, so that a simulation started
    #: after it keeps squeezing; cleared by ``set_dofs``
    drive_targets: list = None

    def __post_init__(self):
        if self.joint_overrides is None:
            self.joint_overrides = [dict() for _ in self.dofs]
        if self.drive_targets is None:
            self.drive_targets = [None] * len(self.dofs)

    def copy(self) -> "WorldState":
        return WorldState([a.copy() for a in self.dofs], [a.copy() for a in self.base_poses],
                          [a.copy() for a in self.body_poses], [dict(o) for o in self.joint_overrides],
                          [None if t is None else t.copy() for t in self.drive_targets])


class _Handle:
    """A named part of a world whose settable attributes are its properties with setters: assigning
    any other name (``robot.dofs = ...``, a typo of ``dof_values``) raises AttributeError naming what
    can be set, instead of adding an attribute that changes nothing."""

    _FIELDS: tuple = ()

    def __setattr__(self, name: str, value) -> None:
        prop = getattr(type(self), name, None)
        if name in self._FIELDS or (isinstance(prop, property) and prop.fset is not None):
            object.__setattr__(self, name, value)
            return
        settable = [n for n in dir(type(self)) if isinstance(getattr(type(self), n), property)
                    and getattr(type(self), n).fset is not None]
        what = "read-only" if isinstance(prop, property) else "not an attribute"
        raise AttributeError(f"{type(self).__name__} '{self.name}': '{name}' is {what}; what can be set: "
                             f"{', '.join(settable) or 'nothing'}{self._set_hint}")

    _set_hint = ""


class RobotHandle(_Handle):
    """A robot of a world: DOF names, limits and values, base pose and link poses."""

    _FIELDS = ("_world", "index", "instance", "description")
    _set_hint = " (or call set_dofs / set_joint_values)"

    def __init__(self, world: "World", index: int):
        self._world = world
        self.index = index
        self.instance: d.RobotInstance = world.description.robots[index]
        self.description: d.Robot = self.instance.robot

    @property
    def name(self) -> str:
        return self.instance.name

    @property
    def dof_names(self) -> list[str]:
        return self.description.dof_names

    @property
    def dof_limits(self) -> np.ndarray:
        """(ndof, 2) lower/upper limits, rad or m."""
        return self.description.dof_limits

    @property
    def dof_values(self) -> np.ndarray:
        return self._world.state.dofs[self.index].copy()

    @dof_values.setter
    def dof_values(self, values) -> None:
        self.set_dofs(values)

    def set_dofs(self, values, *, check_limits: bool = True) -> None:
        """Set DOF values from an array (ndof,) or a mapping {dof name: value} (rad or m)."""
        cur = self._world.state.dofs[self.index]
        if isinstance(values, dict):
            new = cur.copy()
            for k, v in values.items():
                if k not in self.description.dof_index:
                    raise KeyError(f"robot '{self.name}' has no DOF '{k}'; DOFs: {', '.join(self.dof_names)}")
                new[self.description.dof_index[k]] = real(f"robot '{self.name}': DOF '{k}'", v)
        else:
            new = _floats(values, f"robot '{self.name}': DOF values").reshape(-1)
            if new.shape != cur.shape:
                raise ValueError(f"robot '{self.name}' has {cur.size} DOFs, got {new.size} values")
        if not _bounded(new):
            raise ValueError(f"robot '{self.name}': DOF values must be finite and within +-{MAX_JOINT_VALUE:g}, "
                             f"got {new}")
        lim = self.dof_limits
        if check_limits and np.any((new < lim[:, 0] - 1e-9) | (new > lim[:, 1] + 1e-9)):
            bad = [f"{n}={v:.4g} not in [{a:.4g}, {b:.4g}]" for n, v, (a, b) in zip(self.dof_names, new, lim)
                   if v < a - 1e-9 or v > b + 1e-9]
            raise ValueError(f"robot '{self.name}': DOF values outside limits: {'; '.join(bad)}")
        cur[:] = new
        self._world.state.joint_overrides[self.index].clear()
        self._world.state.drive_targets[self.index] = None     # the drives hold the new values

    def set_joint_values(self, q: np.ndarray) -> None:
        """Set every joint value (nj,) directly; DOF values follow from each DOF's first joint, and
        joints that do not match their coupling are kept as overrides (decoupled joints)."""
        from .kinematics import dof_values_from_joints, joint_values as jv

        q = _floats(q, f"robot '{self.name}': joint values").reshape(-1)
        nj = len(self.description.joints)
        if q.shape != (nj,) or not _bounded(q):
            raise ValueError(f"robot '{self.name}': joint values must be {nj} finite numbers within "
                             f"+-{MAX_JOINT_VALUE:g} (rad or m), got {q}")
        dofs = dof_values_from_joints(self.description, q)
        self._world.state.dofs[self.index][:] = dofs
        coupled = jv(self.description, dofs)
        self._world.state.drive_targets[self.index] = None
        ov = self._world.state.joint_overrides[self.index]
        ov.clear()
        for n, j in enumerate(self.description.joints):
            if j.dof >= 0 and abs(coupled[n] - q[n]) > 1e-12:
                ov[n] = float(q[n])

    @property
    def joint_values(self) -> np.ndarray:
        """Joint values (nj,): from the DOFs through their coupling, then any overrides."""
        return self._world.joint_values(self.index)

    @property
    def base_pose(self) -> np.ndarray:
        """Pose of the base link in W (for a mounted robot: from its mount)."""
        return self._world.base_pose(self.index)

    @base_pose.setter
    def base_pose(self, X: np.ndarray) -> None:
        """A finite rigid 4x4 transform in W (m; see :func:`graspsim.spatial.rigid_problem`), else ValueError."""
        if self.instance.mount is not None:
            raise ValueError(f"robot '{self.name}' is mounted on another robot; move that robot instead")
        self._world.state.base_poses[self.index] = spatial.check_rigid(X, f"robot '{self.name}': base pose")

    def link_poses(self) -> np.ndarray:
        """World poses (nlinks, 4, 4) of the link frames."""
        return self._world.link_poses(self.index)

    def link_pose(self, name: str) -> np.ndarray:
        return self.link_poses()[self.description.link_index[name]]

    @property
    def palm_pose(self) -> np.ndarray:
        return self.link_poses()[self.description.palm_link]

    def __repr__(self) -> str:
        return f"<Robot {self.name}: {len(self.dof_names)} DOFs, {len(self.description.links)} links>"


class _ByName(dict):
    """A world's robots or bodies by name: a dict whose KeyError for a missing name says what the
    world has (``world.robots['nope']`` -> "world 'w' has no robot 'nope'; robots: barrett")."""

    def __init__(self, owner: str, kind: str, plural: str, items: dict):
        super().__init__(items)
        self._owner, self._kind, self._plural = owner, kind, plural

    def __missing__(self, key):
        raise KeyError(f"{self._owner} has no {self._kind} {key!r}; {self._plural}: {', '.join(self) or 'none'}")

    def __getitem__(self, key):
        try:
            return super().__getitem__(key)
        except TypeError:       # an unhashable key (an array, a list, a grasp): dict's own message names none
            raise KeyError(f"{self._owner} has no {self._kind} named by a {type(key).__name__}; {self._plural} are "
                           f"named by str: {', '.join(self) or 'none'}") from None

    def __contains__(self, key) -> bool:
        try:
            return super().__contains__(key)
        except TypeError:
            return False


class BodyHandle(_Handle):
    """An object or obstacle of a world: its description and pose."""

    _FIELDS = ("_world", "index", "instance")

    def __init__(self, world: "World", index: int):
        self._world = world
        self.index = index
        self.instance: d.BodyInstance = world.description.bodies[index]

    @property
    def name(self) -> str:
        return self.instance.name

    @property
    def dynamic(self) -> bool:
        return self.instance.dynamic

    @property
    def mass(self) -> float:
        i = self.instance.obj.inertial
        return i.mass if i is not None else float("inf")

    @property
    def material(self) -> str:
        return self.instance.obj.material

    @property
    def pose(self) -> np.ndarray:
        return self._world.state.body_poses[self.index].copy()

    @pose.setter
    def pose(self, X: np.ndarray) -> None:
        """A finite rigid 4x4 transform in W (m; see :func:`graspsim.spatial.rigid_problem`), else ValueError."""
        self._world.state.body_poses[self.index] = spatial.check_rigid(X, f"body '{self.name}': pose")

    @property
    def com_world(self) -> np.ndarray:
        """Centre of mass in W (m)."""
        X = self.pose
        c = self.instance.obj.inertial.com if self.instance.obj.inertial is not None else np.zeros(3)
        return X[:3, :3] @ c + X[:3, 3]

    def __repr__(self) -> str:
        return f"<Body {self.name}: {'dynamic' if self.dynamic else 'static'}, {self.material}>"


class World:
    """A world description with its current kinematic state (see module docstring)."""

    def __init__(self, description: d.World, state: WorldState | None = None):
        self.description = description
        if state is None:
            state = WorldState([r.initial_dofs.copy() for r in description.robots],
                               [r.X_WB.copy() for r in description.robots],
                               [b.X_WO.copy() for b in description.bodies])
        else:
            self.check_state(state)
        self.state = state
        self.robots = _ByName(f"world '{description.name}'", "robot", "robots",
                              {r.name: RobotHandle(self, i) for i, r in enumerate(description.robots)})
        self.bodies = _ByName(f"world '{description.name}'", "object or obstacle", "bodies",
                              {b.name: BodyHandle(self, i) for i, b in enumerate(description.bodies)})

    @property
    def table(self) -> BodyTable:
        """The flat table of all rigid bodies (links, objects, obstacles)."""
        return body_table(self.description)

    @property
    def name(self) -> str:
        return self.description.name

    def base_pose(self, ri: int) -> np.ndarray:
        inst = self.description.robots[ri]
        if inst.mount is None:
            return self.state.base_poses[ri].copy()
        pi, pl, X_LB = inst.mount
        return self.link_poses(pi)[pl] @ X_LB

    def joint_values(self, ri: int) -> np.ndarray:
        inst = self.description.robots[ri]
        q = kinematics.joint_values(inst.robot, self.state.dofs[ri])
        for n, v in self.state.joint_overrides[ri].items():
            q[n] = v
        return q

    def link_poses(self, ri: int, compiled: bool = False) -> np.ndarray:
        """World poses of robot ``ri``'s links (``compiled``: :func:`graspsim.kinematics.link_poses`,
        equal to rounding; it imports numba)."""
        fk = kinematics.link_poses if compiled else kinematics.forward_kinematics
        return fk(self.description.robots[ri].robot, self.joint_values(ri), self.base_pose(ri))

    def body_poses(self, compiled: bool = False) -> np.ndarray:
        """(N, 4, 4) world poses of every body in :attr:`table` order (links first, then bodies).
        ``compiled``: the links by the compiled forward kinematics (loops that pose a world many
        times, e.g. a batch's candidates; equal to rounding, ~1e-16; imports numba)."""
        t = self.table
        out = np.empty((len(t), 4, 4))
        for ri in range(len(self.description.robots)):
            out[t.robot_links[ri]] = self.link_poses(ri, compiled)
        nl = sum(len(x) for x in t.robot_links)
        if self.state.body_poses:
            out[nl:] = np.array(self.state.body_poses)
        return out

    def save_state(self) -> WorldState:
        return self.state.copy()

    def restore_state(self, state: WorldState) -> None:
        """Make a copy of ``state`` current; ValueError (state unchanged) when it does not fit this
        world (see :meth:`check_state`)."""
        self.check_state(state)
        self.state = state.copy()

    def check_state(self, state: WorldState | None = None) -> None:
        """ValueError naming the entry unless ``state`` (default: the current one) fits this world:
        per robot (ndof,) DOF values and joint overrides, finite and within +-MAX_JOINT_VALUE, a finite rigid base pose
        (unmounted robots; :func:`graspsim.spatial.rigid_problem`), per body a finite rigid pose.
        DOF limits are not checked (a simulation may push a DOF a little past one)."""
        st = self.state if state is None else state
        desc = self.description
        if not isinstance(st, WorldState):
            raise ValueError(f"world '{self.name}': a state must be a WorldState, got {type(st).__name__}")
        nr, nbody = len(desc.robots), len(desc.bodies)
        if len(st.dofs) != nr or len(st.base_poses) != nr or len(st.body_poses) != nbody \
                or len(st.joint_overrides) != nr:
            raise ValueError(f"world '{self.name}': state has {len(st.dofs)} DOF arrays, {len(st.base_poses)} base "
                             f"poses, {len(st.joint_overrides)} override sets and {len(st.body_poses)} body poses; the "
                             f"world has {nr} robots and {nbody} bodies")
        for inst, dofs, X, ov in zip(desc.robots, st.dofs, st.base_poses, st.joint_overrides):
            q = _floats(dofs, f"robot '{inst.name}': DOF values")
            nd = len(inst.robot.dofs)
            if q.shape != (nd,) or not _bounded(q):
                raise ValueError(f"robot '{inst.name}': DOF values must be {nd} finite numbers within "
                                 f"+-{MAX_JOINT_VALUE:g}, got {q}")
            if not _bounded(_floats(list(ov.values()), f"robot '{inst.name}': joint overrides")):
                raise ValueError(f"robot '{inst.name}': joint overrides must be finite and within "
                                 f"+-{MAX_JOINT_VALUE:g}, got {ov}")
            if inst.mount is None:
                spatial.check_rigid(X, f"robot '{inst.name}': base pose")
        for inst, X in zip(desc.bodies, st.body_poses):
            spatial.check_rigid(X, f"body '{inst.name}': pose")

    def summary(self) -> str:
        """A human-readable description: robots and DOFs with limits, bodies, masses, materials and
        each body's world bounds (m)."""
        lines = [f"world '{self.name}' ({self.description.file})",
                 f"  gravity [{', '.join(f'{g:g}' for g in self.description.gravity)}] m/s^2, dt {self.description.dt * 1e3:g} ms, "
                 f"contact threshold {self.description.contact_threshold * 1e3:g} mm"]
        for r in self.robots.values():
            desc = r.description
            mount = ""
            if r.instance.mount is not None:
                pi, pl, _ = r.instance.mount
                parent = self.description.robots[pi]
                mount = f", mounted on {parent.name}/{parent.robot.links[pl].name}"
            mass = sum(l.inertial.mass for l in desc.links)
            lines.append(f"  robot '{r.name}' ({desc.name}): {len(desc.links)} links, {len(desc.joints)} joints, "
                         f"{mass:.3g} kg{mount}")
            p = r.base_pose[:3, 3]
            lines.append(f"    base at [{p[0]:.4g}, {p[1]:.4g}, {p[2]:.4g}] m")
            for k, dof in enumerate(desc.dofs):
                rev = desc.joints[dof.joints[0]].kind == d.REVOLUTE
                u, s = ("deg", 180 / np.pi) if rev else ("mm", 1e3)
                lo, hi = dof.limits * s
                lines.append(f"    dof {dof.name:12s} {r.dof_values[k] * s:8.2f} {u}  limits [{lo:.1f}, {hi:.1f}] {u}  "
                             f"{dof.kind}, effort {dof.effort:g}, joints "
                             + ", ".join(desc.joints[j].name for j in dof.joints))
        for b in self.bodies.values():
            p = b.pose[:3, 3]
            m = f"{b.mass:.4g} kg" if b.dynamic else "static"
            note = b.instance.obj.mass_note if b.dynamic else ""
            lines.append(f"  body '{b.name}': {m}, {b.material}, at [{p[0]:.4g}, {p[1]:.4g}, {p[2]:.4g}] m"
                         + (f" ({note})" if note else ""))
            shapes = b.instance.obj.shapes
            if shapes:      # where it reaches (an object standing on a table starts at the table's top)
                bounds = [sh.world_bounds(b.pose) for sh in shapes]
                lo = np.min([x[0] for x in bounds], axis=0) + 0.0
                hi = np.max([x[1] for x in bounds], axis=0) + 0.0
                lines.append("    spans " + ", ".join(f"{ax} [{lo[i]:.4g}, {hi[i]:.4g}]" for i, ax in enumerate("xyz"))
                             + " m")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<World {self.name}: robots {list(self.robots)}, bodies {list(self.bodies)}>"


def _floats(values, what: str) -> np.ndarray:
    """``values`` as a float array, or ValueError naming ``what`` (not numbers, e.g. strings or None)."""
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be numbers, got {values!r}") from None

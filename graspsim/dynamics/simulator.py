"""The time stepper: Miller & Christensen (2003) section 4, after Anitescu & Potra (1997).

``Simulator.step`` runs the paper's ten steps as named stages (``_move``, ``_find_contacts``,
``_assemble``, ``_solve``, ``_commit``; timed by :mod:`graspsim.dynamics.stages` when profiling):

 1-2. velocity-to-pose map and move every dynamic body with its current velocity (eq. 10-12)
 3.   collision and joint-limit check; binary search for the first contact / limit instant
 4.   find all contacts
 5.   friction coefficient per contact: static below ``static_speed``, kinetic above (eq. 13)
 6.   external forces: gravity and the gyroscopic term
 7.   control forces (PD drives, effort-limited; see :mod:`graspsim.dynamics.drives`)
 8.   joint friction, Coulomb plus viscous (eq. 14)
 9.   islands of dynamic bodies connected by joints or contacts
 10.  per island: free step (eq. 15), equality system (eq. 17) or mixed LCP (eq. 18-21) via Lemke

Steps 5-8 and every constraint row are one compiled call (``_rows_kernel.assemble``), steps 9-10
for every island another (``_island_kernel.solve_islands``); the Python/numpy versions
(``_assemble_reference``, :mod:`graspsim.dynamics.island` with ``lemke=``) stay as the reference.
Model and data: the description's arrays are built once; everything the step reads that changes
is the state (:class:`SimState`) and the data block (:class:`SimData`: warm starts, compliance
levels, kinematic base poses, pending wrenches), both saved by ``save_state`` so a restored state
replays bit for bit.  ``rollout`` runs many steps with a compiled PD / trajectory controller.
A world at rest to rounding sleeps (:mod:`graspsim.dynamics.sleep`): its steps only advance the
clock until anything the step reads changes.

Differences from the paper's implementation, on purpose: PD drives and viscous joint friction are
applied implicitly (compliant constraint rows) so stiff gains are stable; coupled DOFs are
equality rows *with* error correction; a failing LCP is retried with a small diagonal
regularisation and otherwise raises :class:`~graspsim.SimulationError` with the state before the
step intact; a non-finite state is never committed.

Inputs are checked where they enter (the constructor, ``dt``, ``state``/``restore_state``,
``apply_external_force``, ``set_base_motion``'s poses, the controller's command, ``run``): bad
input raises ValueError naming it (SimulationError for a state the step cannot advance), leaving
the simulator as it was.  Bounds: a step ``dt`` in [MIN_DT, MAX_DT] = [1 ps, 1 s]; poses rigid to
:data:`graspsim.spatial.RIGID_TOL`; quaternions finite with norm within
:data:`graspsim.spatial.UNIT_QUAT_TOL` of 1 (renormalised; zero or far from unit refused);
positions, velocities, forces finite; joint values bounded and, with the links, fitting the poses
(:mod:`graspsim.dynamics.checks`); masses finite and > 0.  Huge but finite values are not refused:
the step then either ends finite or raises SimulationError.
"""
from __future__ import annotations

import inspect
import math
import operator
from dataclasses import dataclass, field, fields
from typing import Callable

import numpy as np

from .. import spatial
from .._flat import flatten
from .._malloc import keep_large_blocks
from ..collision import kernels as CK
from ..collision.impact import first_impact
from ..collision.model import concat_contacts
from ..errors import SimulationError, did_you_mean
from ..world import World
from . import _island_kernel as IK
from . import _rows_kernel as RK
from . import bodies as B
from .checks import (MAX_DT, MIN_DT, checked_data, checked_state, command_array, controller as check_controller, number,
                     state_problem, vector)
from ..model.bodies import OBJECT
from .drives import DriveCommand
from .island import IslandProblem, project_positions, solve_island
from .joints import JointFrames, build_joint_sets, joint_frames, joint_values, row_template
from .rows import Rows, cross
from .sleep import (ANGULAR_LENGTH, MAX_SLEEP_SPEED, ROOT3, SLEEP_AFTER, SLEEP_SPEED, Asleep, resting,
                    resting_islands, steady, touched_groups, unchanged)
from .stages import StageTimer

REV_LIMIT_TOL = np.radians(0.1)   # joint-limit search tolerance, revolute (rad)
PRI_LIMIT_TOL = 1e-4              # prismatic (m)
#: the gear holding the proximal joint of a broken-away DOF: LOCK_GAIN times the DOF's kp and kd
#: (Barrett: 1e4 N m/rad, so the 2.5 N m of a finger deflects it 0.25 mrad)
LOCK_GAIN = 100.0
#: error correction (eq. 16, 19) removes gamma of a position error per max(h, step at construction,
#: H_CORRECTION_MIN) (s): with gamma per step of a 1 ns step, a resting contact 50 um from its
#: target would be pushed out at 0.2 * 50 um / 1 ns = 1e4 m/s; this way at most 1 cm/s at any step
H_CORRECTION_MIN = 1e-3
#: shortest advance of time after an impact cut the step (s; a step cut to 0 would repeat forever)
H_FLOOR = 1e-9
#: most friction directions per contact: the pyramid of 32 is within 0.5 % of the circular cone
#: (cos(pi / 32)); more only grows the LCP by u + 2 rows per contact
MAX_FRICTION_DIRECTIONS = 32


#: initial capacity of the warm-start table (entries; a power of 2, doubled when half full)
WARM_CAPACITY = 64
#: default most warm-start entries kept (``Simulator(warm_start_entries=...)``): beyond it the table
#: starts afresh, so a long run's memory (and ``save_state``'s copy) stays bounded
WARM_MAX_ENTRIES = 1 << 14
#: radius (m) within which a contact takes the LCP flags of last step's contact between the same bodies
MATCH_RADIUS = 2e-3
#: stall guard: this many consecutive steps cut at an impact (or joint limit) that together advanced
#: less than STALL_ADVANCE steps' worth of time end in a SimulationError instead of a hang.  A
#: contact pair the impact search keeps finding anew (seen with thin-walled meshes) cut each step to
#: 1e-4 of h or less: a 1.5 s lift would take millions of steps.  Normal impact cascades (a pile
#: landing) cut a few steps in a row and advance most of each.
STALL_STEPS = 200
STALL_ADVANCE = 10.0


#: step(): the controller's command is not asked for yet
_LATER = object()
#: steps this process took through step()'s stages (rollout.LOAD_AFTER)
STAGED_STEPS = [0]
#: Simulator._sleep_key's parameters after dt and gravity (one C call reads them: every step asks)
_SLEEP_PARAMS = operator.attrgetter("gamma", "threshold", "static_speed", "u", "contact_compliance",
                                    "max_region_points", "project_joints", "restitution", "restitution_speed",
                                    "_collisions_on", "sleep", "sleep_speed")
_ROLLOUT = []        # graspsim.dynamics.rollout once imported (it imports this module: not at the top)
#: the data block's arrays a compiled loop holds as constants (``rollout.CompiledLoop.still_valid``):
#: restore_state copies a state's values into them
_LOOP_HELD = ("X_static", "bodies_group", "bodies_pose")


def _rollout_module():
    from . import rollout

    _ROLLOUT.append(rollout)
    return rollout


#: steps per rollout in run() (its record's size), and the fewest that run() takes as one
RUN_CHUNK = 1000
RUN_MIN_STEPS = 20
_ZERO3 = np.zeros(3)


def _gain_bytes(controller) -> tuple:
    """A PDController's gains and effort limits as bytes (what its compiled copy was made with)."""
    return (np.asarray(controller.kp).tobytes(), np.asarray(controller.kd).tobytes(),
            np.asarray(controller.effort).tobytes())


def _components(n: int, ei: list, ej: list) -> tuple[int, np.ndarray]:
    """Connected components of the undirected graph on nodes 0..n-1 with edges (ei[k], ej[k]):
    (count, labels (n,) int64), labelled in the order of each component's smallest node (as
    scipy.sparse.csgraph.connected_components labels them; scipy.sparse costs ~0.3 s to import)."""
    root = list(range(n))

    def find(a: int) -> int:
        while root[a] != a:
            root[a] = root[root[a]]
            a = root[a]
        return a

    for a, b in zip(ei, ej):
        ra, rb = find(int(a)), find(int(b))
        if ra != rb:
            root[max(ra, rb)] = min(ra, rb)
    labels = np.empty(n, np.int64)
    first: dict[int, int] = {}
    for v in range(n):
        labels[v] = first.setdefault(find(v), len(first))
    return len(first), labels


def _rotate(R: np.ndarray, x: np.ndarray) -> list:
    """R (3, 3) times x (3,) as three Python floats, each summed left to right (no fused
    multiply-adds: the compiled loop of rollout computes the same bits, numpy's matmul may not)."""
    (a, b, c), (d, e, f), (g, h, i) = R.tolist()
    x0, x1, x2 = x.tolist()
    return [a * x0 + b * x1 + c * x2, d * x0 + e * x1 + f * x2, g * x0 + h * x1 + i * x2]


def _plain_motion(out) -> tuple:
    """A base motion's return value ``(X_WB, twist)`` when it is plain: a C-contiguous float (4, 4)
    rigid transform and a float (6,) array of finite numbers, as (a copy of X, the twist as floats);
    else (None, None), and the caller checks and names what is wrong.  (One compiled pose check
    instead of the general conversions: this runs every step of a moving base.)"""
    if type(out) is not tuple or len(out) != 2:
        return None, None
    X, tw = out
    if (type(X) is not np.ndarray or X.dtype != np.float64 or X.shape != (4, 4) or not X.flags.c_contiguous
            or type(tw) is not np.ndarray or tw.dtype != np.float64 or tw.shape != (6,)):
        return None, None
    tl = tw.tolist()
    if (not all(map(math.isfinite, tl))
            or CK.shape_frames(X.reshape(1, 4, 4), spatial.RIGID_TOL, CK.NO_SHAPES, CK.NO_FRAMES)[0] >= 0):
        return None, None
    return X.copy(), tl


def _takes_keyword(f: Callable, name: str) -> bool:
    """Does ``f`` accept the keyword argument ``name`` (or any keyword)?"""
    try:
        ps = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name and p.kind != p.POSITIONAL_ONLY or p.kind == p.VAR_KEYWORD for p in ps)


@dataclass
class SimData:
    """What the step reads besides the bodies' state: the data block that, with :class:`SimState`,
    makes a step a function of what ``save_state`` returns (bit-for-bit replay, warm starts included).

    ``X_static`` (N, 4, 4) poses X_WL of the static bodies (kinematic bases moved by
    ``set_base_motion``; dynamic bodies' entries unused); ``ext`` (nb, 6) pending external wrenches
    [force (N); torque about the com (N m)] in W for the next step.

    Warm starts, an open-addressing hash table (capacity a power of 2) filled by the compiled
    solver (``_island_kernel.table_put``): ``keys`` (cap,) island signature hashes
    (``_island_kernel.island_key``), ``used`` (cap,) bool, and per entry ``ta``/``tb``: a last LCP
    basis at ``store[ta:ta + tb]``, or (``tb = -1``) the contact-compliance retry level ``ta`` that
    last worked; ``meta`` = [entries, length of ``store`` in use].  ``cwarm``: last step's contacts
    (body_a, body_b, point, LCP flags (k, u + 2)) for the warm start of an island whose contacts
    changed (None: no contacts).  ``cuts`` = [consecutive steps cut at an impact or joint limit,
    the time (s) when that run of cut steps began] (the stall guard, see ``STALL_STEPS``).
    Sleep (:mod:`graspsim.dynamics.sleep`): ``rest`` = [seconds every body has rested, the last
    step's command array (or None), its contact impulses (or None)]; ``asleep``: an
    :class:`~graspsim.dynamics.sleep.Asleep` while the world sleeps, else None.  Objects that sleep
    while the world moves: ``bodies_rest`` (nb,) seconds each has rested, ``bodies_group`` (nb,)
    its sleeping group (0: awake), ``bodies_pose`` (nb, 7) [c, q] where it fell asleep,
    ``bodies_key`` the simulator's parameters then, ``bodies_contacts`` (ContactSet, forces (k, 3)
    N on body_b, W) their contacts when they fell asleep, or None.
    """

    X_static: np.ndarray
    ext: np.ndarray
    keys: np.ndarray = field(default_factory=lambda: np.zeros(WARM_CAPACITY, np.int64))
    used: np.ndarray = field(default_factory=lambda: np.zeros(WARM_CAPACITY, np.bool_))
    ta: np.ndarray = field(default_factory=lambda: np.zeros(WARM_CAPACITY, np.int64))
    tb: np.ndarray = field(default_factory=lambda: np.zeros(WARM_CAPACITY, np.int64))
    store: np.ndarray = field(default_factory=lambda: np.zeros(1024, np.bool_))
    meta: np.ndarray = field(default_factory=lambda: np.zeros(2, np.int64))
    cwarm: tuple | None = None
    cuts: list = field(default_factory=lambda: [0, 0.0])
    rest: list = field(default_factory=lambda: [0.0, None, None])
    asleep: Asleep | None = None
    bodies_rest: np.ndarray | None = None
    bodies_group: np.ndarray | None = None
    bodies_pose: np.ndarray | None = None
    bodies_key: tuple | None = None
    bodies_contacts: tuple | None = None

    def table(self) -> tuple:
        """The warm-start table's arrays, in the kernels' argument order."""
        return self.keys, self.used, self.ta, self.tb, self.store, self.meta

    def set_table(self, keys, used, ta, tb, store) -> None:
        """Keep the (possibly grown) table arrays a kernel returned."""
        self.keys, self.used, self.ta, self.tb, self.store = keys, used, ta, tb, store

    def clear_table(self) -> None:
        """An empty warm-start table of the initial capacity (the next LCPs start cold)."""
        fresh = SimData(self.X_static, self.ext)
        self.set_table(fresh.keys, fresh.used, fresh.ta, fresh.tb, fresh.store)
        self.meta[:] = 0

    def copy(self) -> "SimData":
        """A deep copy."""
        return SimData(self.X_static.copy(), self.ext.copy(), *(a.copy() for a in self.table()),
                       None if self.cwarm is None else tuple(a.copy() for a in self.cwarm), list(self.cuts),
                       [x if x is None or isinstance(x, float) else x.copy() for x in self.rest], self.asleep,
                       *(None if a is None else a.copy() for a in (self.bodies_rest, self.bodies_group,
                                                                    self.bodies_pose)), self.bodies_key,
                       None if self.bodies_contacts is None else (self.bodies_contacts[0],
                                                                  self.bodies_contacts[1].copy()))


@dataclass
class SimState:
    """Everything that changes during a simulation (a value: copy it to save, assign it to restore).

    ``data``: the simulator's data block (:class:`SimData`) when the state comes from
    ``save_state`` (restoring it then replays the following steps bit for bit); None for a state
    built by hand (restoring it keeps the simulator's data block)."""

    time: float
    c: np.ndarray          # (nb, 3) com positions (m), W
    q: np.ndarray          # (nb, 4) orientations (w, x, y, z)
    v: np.ndarray          # (nb, 6) [v_com; omega] (m/s, rad/s), W
    joint_q: np.ndarray    # (nj,) unwrapped joint values
    broken: np.ndarray     # (nd,) breakaway DOFs that have broken away
    lock: np.ndarray       # (nd,) proximal joint value held by a broken-away DOF
    steps: int = 0
    data: SimData | None = None

    def copy(self) -> "SimState":
        return SimState(self.time, self.c.copy(), self.q.copy(), self.v.copy(), self.joint_q.copy(),
                        self.broken.copy(), self.lock.copy(), self.steps,
                        None if self.data is None else self.data.copy())


class _Structure:
    """Index arrays of one pattern of broken-away DOFs (``Simulator._structure``; attributes set there).
    A module-level class, so that a simulator pickles with its cache."""


@dataclass
class StepInfo:
    """Diagnostics of the last step (also the per-stage timing when ``profile=True``)."""

    h: float = 0.0
    fraction: float = 1.0
    contacts: object = None
    contact_impulse: np.ndarray = None     # (k, 3) impulse on body_b at each contact (N s), W
    lcp_sizes: list = field(default_factory=list)
    pivots: int = 0
    islands: int = 0
    timing: dict = field(default_factory=dict)
    asleep: bool = False     # the world sleeps after this step (graspsim.dynamics.sleep)


@dataclass
class Rollout:
    """States after each step of :meth:`Simulator.rollout`: ``time`` (n,) s, coms ``c`` (n, nb, 3)
    m and velocities ``v`` (n, nb, 6) [m/s; rad/s] in W, orientations ``q`` (n, nb, 4) (w, x, y, z),
    joint values ``joint_q`` (n, nj) (rad or m); each step's length ``h`` (n,) s (shorter than
    ``dt`` when cut at an impact), its contact count ``contacts`` (n,) and which DOFs' clutches had
    given way after it, ``broken`` (n, nd).  ``len()`` is the number of steps."""

    time: np.ndarray
    c: np.ndarray
    q: np.ndarray
    v: np.ndarray
    joint_q: np.ndarray
    h: np.ndarray
    contacts: np.ndarray
    broken: np.ndarray

    def __len__(self) -> int:
        return len(self.time)

    @classmethod
    def empty(cls, n: int, nb: int, nj: int, nd: int) -> "Rollout":
        return cls(np.empty(n), np.empty((n, nb, 3)), np.empty((n, nb, 4)), np.empty((n, nb, 6)), np.empty((n, nj)),
                   np.empty(n), np.empty(n, np.int64), np.empty((n, nd), bool))

    def arrays(self) -> tuple:
        """Its arrays in field order (the compiled loop's record arguments)."""
        return _ROLLOUT_ARRAYS(self)

    def head(self, n: int) -> "Rollout":
        """The first ``n`` steps (views)."""
        return Rollout(*(getattr(self, f.name)[:n] for f in fields(self)))

    def tail(self, n: int) -> "Rollout":
        """The last ``n`` steps (views)."""
        return Rollout(*(getattr(self, f.name)[len(self) - n:] for f in fields(self)))


_ROLLOUT_ARRAYS = operator.attrgetter(*(f.name for f in fields(Rollout)))


@dataclass
class _Move:
    """Steps 1-3 of one step: trial coms ``c1`` (nb, 3) and orientations ``q1`` (nb, 4), poses
    ``X`` (N, 4, 4), joint frames ``F`` and values ``jq``, the fraction of the step taken and its
    length ``h`` (s), and the contacts found at the trial pose (False: step 4 must look)."""

    c1: np.ndarray
    q1: np.ndarray
    X: np.ndarray
    F: JointFrames
    jq: np.ndarray
    frac: float
    h: float
    contacts: object
    V: np.ndarray | None = None    # moving bases' velocities at the end of a cut step (None: as at t + h)


@dataclass
class _Assembly:
    """Steps 5-8 of one step: the DOF structure ``st``, the constraint rows, the hard rows' position
    errors, friction coefficients, body wrenches ``k`` (nb, 6) and the joint rows' count."""

    st: object
    rows: Rows             # every row, in five consecutive kinds (see _island_kernel.solve_islands)
    sizes: np.ndarray      # (5,) rows per kind
    hard_err: np.ndarray
    mu: np.ndarray
    k: np.ndarray
    n_joint_rows: int
    carr: tuple            # the contacts as C-contiguous arrays (see Simulator._contact_arrays)
    command: np.ndarray | None = None   # the controller's command array (6, nd) (None: no controller)


def _friction_directions(v) -> int:
    try:
        u = int(v)
    except (TypeError, ValueError, OverflowError):
        u = 0
    # at most MAX_FRICTION_DIRECTIONS: 1000 directions made one step of a resting box run for minutes
    if not 2 <= u <= MAX_FRICTION_DIRECTIONS or u % 2 or u != v:
        raise ValueError(f"friction_directions must be an even number in [2, {MAX_FRICTION_DIRECTIONS}] (each "
                         f"direction with its opposite), got {v!r}")
    return u


def _whole(name: str, v, hi: float) -> int:
    x = number(name, v, 0.0, hi)
    if x != int(x):
        raise ValueError(f"{name} must be a whole number >= 0, got {v!r}")
    return int(x)


def _region_points(v) -> int:
    x = _whole("max_region_points", v, 1e9)
    if 0 < x < 3:
        raise ValueError(f"max_region_points must be 0 (no limit) or a whole number >= 3, got {v!r}")
    return x


def _flag(name: str):
    def check(v):
        if not isinstance(v, (bool, np.bool_)):
            raise ValueError(f"{name} must be True or False, got {v!r}")
        return bool(v)
    return check


def _loop_flag(v):
    if v is not None and not isinstance(v, (bool, np.bool_)):
        raise ValueError(f"compiled_loop must be None, True or False, got {v!r}")
    return None if v is None else bool(v)


def _param(name: str, check) -> property:
    """A Simulator parameter, checked whenever it is set: at construction and between steps (as
    plain attributes, ``sim.gamma = 5`` or ``sim.contact_compliance = nan`` were taken silently, and
    ``sim.gravity = [0, 0, -1.62]`` failed inside a compiled kernel).  Read through a C getter
    (``operator.attrgetter``): the step reads these ~15 times."""
    key = "_p_" + name

    def set_(obj, value):
        d = obj.__dict__
        d[key] = check(value)
        d["_params_set"] = d.get("_params_set", 0) + 1     # (a compiled loop checks its constants again)

    return property(operator.attrgetter(key), set_, doc=f"the '{name}' parameter (checked when set)")


class Simulator:
    """Time-stepping rigid-body simulation of a :class:`~graspsim.world.World`.

    Parameters: ``dt`` step (s, default the world's; in [MIN_DT, MAX_DT] = [1e-12, 1]; may be
    changed between steps), ``friction_directions`` u per contact (even, in [2, 32]; default 8),
    ``gamma`` error-correction factor in [0, 1] (0.2; per step, over at least the step given at
    construction and H_CORRECTION_MIN), ``threshold`` contact distance (m, > 0; default the world's, 0.1 mm),
    ``static_speed`` static/kinetic switch (m/s, >= 0; 1 mm/s), ``gravity`` (3,) m/s^2 in W (default
    the world's), ``contact_compliance`` (>= 0), ``max_region_points`` (0: no limit, else >= 3),
    ``restitution_speed`` (m/s, >= 0), ``warm_start_entries`` (>= 0; the most islands whose last LCP
    basis is kept for a warm start: beyond it the table starts afresh, as a cold start would),
    ``sleep`` (True: a world at rest to rounding skips its steps until something wakes it, see
    :mod:`graspsim.dynamics.sleep`), ``sleep_speed`` (m/s, in (0, 0.1]; 1e-8) and ``sleep_after``
    (s, >= 0; 0.05) its thresholds, ``compiled_loop`` (True: :meth:`rollout` takes the common path's
    steps in one compiled loop, and :meth:`step` its step as one call of it; False: each through the
    stages, the same states slower; None, the default: the loop once it is compiled -- in numba's
    cache, or after a process's rollouts took 20,000 steps through :meth:`step`: its compile takes
    ~11 s, more than a short job saves -- and in :meth:`step` once it is loaded in the process or
    after ``rollout.LOAD_AFTER`` steps through the stages),
    ``lemke``: None (default) solves each island with the compiled
    solver and the project's Lemke; an LCP solver ``lemke(M, q, warm_start=None) -> LCPResult`` runs
    the reference implementation of :mod:`graspsim.dynamics.island` with it instead (slower; for
    experiments with other solvers).  Bad values raise ValueError naming the parameter, at
    construction and when a parameter is set between steps (``sim.gamma = 0.1``); so does a
    world whose state is not valid (:meth:`graspsim.world.World.check_state`) or whose dynamic bodies
    have a mass that is not finite and > 0 or an inertia that is not positive definite.
    """

    u = _param("u", _friction_directions)
    gamma = _param("gamma", lambda v: number("gamma", v, 0.0, 1.0))
    threshold = _param("threshold", lambda v: number("threshold", v, 0.0, np.inf, open_low=True))
    static_speed = _param("static_speed", lambda v: number("static_speed", v, 0.0, np.inf))
    gravity = _param("gravity", lambda v: vector("gravity", v, 3))
    contact_compliance = _param("contact_compliance", lambda v: number("contact_compliance", v, 0.0, np.inf))
    max_region_points = _param("max_region_points", _region_points)
    warm_start_entries = _param("warm_start_entries", lambda v: _whole("warm_start_entries", v, 1e12))
    restitution = _param("restitution", bool)
    project_joints = _param("project_joints", bool)
    restitution_speed = _param("restitution_speed", lambda v: number("restitution_speed", v, 0.0, np.inf))
    sleep = _param("sleep", _flag("sleep"))
    # at most 0.1 m/s: a body faster than that is not at rest (a falling one passes 0.1 m/s in 4 steps)
    sleep_speed = _param("sleep_speed", lambda v: number("sleep_speed", v, 0.0, MAX_SLEEP_SPEED, open_low=True))
    sleep_after = _param("sleep_after", lambda v: number("sleep_after", v, 0.0, np.inf))
    #: rollout's compiled loop: True on, False off (every step of a rollout through step(): the
    #: reference), None once compiled (see graspsim.dynamics.rollout.LOOP_AFTER)
    compiled_loop = _param("compiled_loop", _loop_flag)

    def __init__(self, world: World, dt: float | None = None, *, friction_directions: int = 8, gamma: float = 0.2,
                 threshold: float | None = None, static_speed: float = 1e-3, gravity=None,
                 collisions: bool = True, lemke: Callable | None = None, profile: bool = False,
                 project_joints: bool = True, contact_compliance: float = 1e-6, max_region_points: int = 8,
                 restitution: bool = False, restitution_speed: float = 0.1,
                 warm_start_entries: int = WARM_MAX_ENTRIES, sleep: bool = True,
                 sleep_speed: float = SLEEP_SPEED, sleep_after: float = SLEEP_AFTER, compiled_loop: bool | None = None):
        if not isinstance(world, World):
            raise ValueError(f"Simulator needs a graspsim World (graspsim.load_world), got {type(world).__name__}")
        keep_large_blocks()     # (once per process: a pile's MB-sized LCP temporaries without page faults)
        self.world = world
        desc = world.description
        try:
            self.dt = desc.dt if dt is None else dt
        except ValueError as e:
            raise ValueError(f"{e} (the world's dt; pass dt= to override it)" if dt is None else str(e)) from None
        self.u = friction_directions
        self.gamma = gamma
        # error correction removes gamma of a position error per step of at least this length (the
        # step at construction, and H_CORRECTION_MIN): a caller's tiny step (a few ns to reach a time
        # grid) would otherwise ask for gamma * error / h, e.g. 0.2 * 50 um / 1 ps = 1e7 m/s, and
        # keep that velocity
        self._h_correction = max(self.dt, H_CORRECTION_MIN)
        self.threshold = desc.contact_threshold if threshold is None else threshold
        self.static_speed = static_speed
        self.gravity = desc.gravity if gravity is None else gravity
        if lemke is not None and not callable(lemke):
            raise ValueError(f"lemke must be None or an LCP solver function, got {type(lemke).__name__}")
        world.check_state()
        self.table = world.table
        self.bodies = B.DynamicBodies.from_table(self.table)
        self.js, self.ds = build_joint_sets(desc, self.table)
        self.profile = profile
        self.project_joints = project_joints
        self.contact_compliance = contact_compliance
        self.max_region_points = max_region_points
        self.warm_start_entries = warm_start_entries
        self.restitution = restitution
        self.restitution_speed = restitution_speed
        self.sleep = sleep
        self.sleep_speed = sleep_speed
        self.sleep_after = sleep_after
        self.compiled_loop = compiled_loop
        self._joint_offsets = np.where(self.js.dof >= 0, self.js.offset, 0.0)
        self._viscous_idx = np.flatnonzero(self.js.viscous > 0)
        # per DOF: proximal and distal joint, distal/proximal ratio, their offsets (the clutch test)
        nd_ = len(self.ds)
        self._clutch = (np.array([j[0] for j in self.ds.joints], np.int64).reshape(nd_),
                        np.array([j[-1] for j in self.ds.joints], np.int64).reshape(nd_),
                        np.array([r[-1] / r[0] for r in self.ds.ratios], float).reshape(nd_),
                        np.array([o[0] for o in self.ds.offsets], float).reshape(nd_),
                        np.array([o[-1] for o in self.ds.offsets], float).reshape(nd_))
        self._row_template = tuple(np.ascontiguousarray(a, dtype=np.int64) for a in row_template(self.js))
        # stand-ins of the compiled assembly's optional inputs (one argument type whatever is given)
        self._no_cmd = np.zeros((6, len(self.ds)))
        self._no_V = np.zeros((len(self.table), 6))
        self._no_prev = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 3)),
                         np.zeros((0, self.u + 2), np.bool_))
        self._no_contacts = (np.zeros(0, np.int64), np.zeros(0, np.int64), *(np.zeros((0, 3)) for _ in range(4)),
                             np.zeros(0))
        # None: the compiled island solver (with the project's Lemke); a callable: the reference
        # implementation of island.py with that LCP solver
        self._lemke = lemke
        # a solver that takes the friction cones' layout repairs warm starts as the compiled path does
        self._lemke_cones = lemke is not None and _takes_keyword(lemke, "friction_cones")
        nb = len(self.bodies)
        # the data block (see SimData): everything else the step reads that changes
        self._data = SimData(world.body_poses(), np.zeros((nb, 6)), bodies_rest=np.zeros(nb),
                             bodies_group=np.zeros(nb, np.int64), bodies_pose=np.zeros((nb, 7)))
        # objects may sleep on their own (graspsim.dynamics.sleep); robot links only with the world
        self._is_object = np.asarray(self.table.kind)[self.bodies.table_index] == OBJECT
        self._sync_sleeping()
        self._com_L_all = self.table.com
        self._vel_buf = np.zeros((len(self.table), 6))    # step 3's body velocities (N, 6), reused
        # the dynamic bodies' rows of that buffer: a slice when they are consecutive in the table
        # (the usual case: links, then objects), which numpy copies without a fancy-index pass
        ti = self.bodies.table_index
        self._vel_rows = slice(int(ti[0]), int(ti[-1]) + 1) if len(ti) and ti[-1] - ti[0] + 1 == len(ti) else ti
        # initial state from the world's kinematic state
        X0 = self._data.X_static[self.bodies.table_index]
        R0 = X0[:, :3, :3]
        c0 = X0[:, :3, 3] + np.einsum("nij,nj->ni", R0, self.bodies.com_L)
        q0 = spatial.matrix_to_quat(R0) if nb else np.zeros((0, 4))
        F = joint_frames(self.js, self._data.X_static)
        jq = joint_values(self.js, F)
        # revolute values beyond +-pi come from the world's DOFs (unwrap against them)
        jq_world = self._world_joint_values()
        jq = jq_world + (jq - jq_world + np.pi) % (2 * np.pi) - np.pi
        jq = np.where(self.js.kind == 0, jq, joint_values(self.js, F))
        nd = len(self.ds)
        self._state = SimState(0.0, c0, q0, np.zeros((nb, 6)), jq, np.zeros(nd, bool), np.zeros(nd))
        self.info = StepInfo()
        self._kinematic: dict[int, Callable] = {}
        # joint connectivity of dynamic bodies (islands grow from these components by contacts)
        slot = self.bodies.slot
        pj, cj = slot[self.js.parent], slot[self.js.child]
        both = (pj >= 0) & (cj >= 0)
        # coupled joints of one DOF tie their bodies together too
        ei, ej = list(pj[both]), list(cj[both])
        for jidx in self.ds.joints:
            for a in jidx[1:]:
                for x, y in ((self.js.child[jidx[0]], self.js.child[a]),):
                    if slot[x] >= 0 and slot[y] >= 0:
                        ei.append(slot[x]); ej.append(slot[y])
        self._ncomp, self._comp = _components(nb, ei, ej)
        self._collision = None
        self._collisions_on = collisions
        self._loop = None           # rollout's compiled loop (graspsim.dynamics.rollout.CompiledLoop)
        self._no_ctl = None         # its controller for rollouts without one (rollout.NoController)
        self._run_ctl = None        # run()'s and rollout()'s compiled copy of a PDController (_compiled_pd)
        # step()'s compiled loops: {has a command: [CompiledLoop, its controller, 1-row record, the step
        # length last sent through the stages rather than a new loop]}
        self._step_loops = {}
        if collisions and len(self.table.collision_pairs):
            # a world that starts with bodies inside each other is reported, not simulated
            from ..collision import check_interpenetration
            check_interpenetration(world, threshold=self.threshold)

    # ------------------------------------------------------------------ public API
    @property
    def dt(self) -> float:
        """The step (s), in [MIN_DT, MAX_DT]; setting it checks it (ValueError, step unchanged)."""
        return self._dt

    @dt.setter
    def dt(self, value: float) -> None:
        d = self.__dict__
        if type(value) is float and value == d.get("_dt"):
            return          # (the step it has: a driver that sets it before every step pays nothing)
        self._dt = number("dt", value, MIN_DT, MAX_DT)
        d["_params_set"] = d.get("_params_set", 0) + 1

    @property
    def state(self) -> SimState:
        """The current :class:`SimState` (assigning one restores it, see :meth:`restore_state`)."""
        return self._state

    @state.setter
    def state(self, value: SimState) -> None:
        self.restore_state(value)

    @property
    def _X_static(self) -> np.ndarray:
        """(N, 4, 4) the data block's static poses (kinematic bases where their paths put them)."""
        return self._data.X_static

    @property
    def time(self) -> float:
        return self._state.time

    @property
    def dof_names(self) -> list[str]:
        return list(self.ds.names)

    @property
    def contacts(self):
        """Contacts of the last step (a ContactSet, or None), those of sleeping objects
        (:attr:`sleeping_bodies`) after them as they were when they fell asleep."""
        return self._reported()[0]

    @property
    def contact_forces(self) -> np.ndarray:
        """(k, 3) contact force on body_b at each contact of :attr:`contacts` (N, W)."""
        return self._reported()[1]

    @property
    def contact_count(self) -> int:
        """``len(contacts)`` (0 for None), without joining the sleeping objects' contacts to the step's."""
        c, slept = self.info.contacts, self._data.bodies_contacts
        return (0 if c is None else len(c)) + (0 if slept is None else len(slept[0]))

    def _reported(self) -> tuple:
        """(contacts, forces) of the last step and of the sleeping objects (cached per step)."""
        info, slept = self.info, self._data.bodies_contacts
        got = self.__dict__.get("_report")
        if got is not None and got[0] is info and got[1] is slept:
            return got[2], got[3]
        cs = info.contacts
        f = np.zeros((0, 3)) if info.contact_impulse is None or info.h == 0 else info.contact_impulse / info.h
        if slept is not None:
            cs = slept[0] if cs is None else concat_contacts((cs, slept[0]))
            f = np.concatenate([f, slept[1]])
        self.__dict__["_report"] = (info, slept, cs, f)
        return cs, f

    def save_state(self) -> SimState:
        """A copy of the state with the data block (warm starts, compliance levels, kinematic base
        poses, pending external wrenches): restoring it replays the following steps bit for bit."""
        st = self.state.copy()
        st.data = self._data.copy()
        return st

    def restore_state(self, state: SimState) -> None:
        """Make a copy of ``state`` current.  ValueError naming the field and body (and the state
        unchanged) unless it fits this simulator: a SimState with finite time, com positions c
        (nb, 3) m, velocities v (nb, 6), joint values (nj,) and locks (nd,), broken flags (nd,) and
        quaternions q (nb, 4) of norm within :data:`graspsim.spatial.UNIT_QUAT_TOL` of 1, which are
        renormalised (those unit to 1e-12 are kept bit for bit, so a saved state replays exactly),
        and a data block (``state.data``, see :class:`SimData`) that fits too, or None (the data
        block is then kept).  The joint values and poses must fit together with the static bodies
        where the state's data block puts them (a state saved before a kinematic base moved
        restores), or where they are now without one."""
        # (the state's joints are checked against the static poses it brings: a base may have moved since)
        data = checked_data(self, state.data) if isinstance(state, SimState) and state.data is not None else None
        st = checked_state(self, state, None if data is None else data.X_static)
        if data is not None:
            live = self._data
            # the restored values go into the arrays the compiled loop was built on (its constants
            # hold them: it stays valid, rather than ~0.6 ms to rebuild after every restore)
            for name in _LOOP_HELD:
                a, b = getattr(live, name), getattr(data, name)
                if type(a) is np.ndarray and type(b) is np.ndarray and a.shape == b.shape and a.dtype == b.dtype:
                    a[...] = b
                    setattr(data, name, a)
            self._data = data
            if self._data.ext.any():    # a pending push wakes the world (as apply_external_force)
                self.wake()
            self._sync_sleeping()
        self._state = st

    def poses(self) -> np.ndarray:
        """(N, 4, 4) world poses of every body (table order: links, objects, obstacles)."""
        return self._poses(self.state.c, self.state.q)

    def body_pose(self, name: str) -> np.ndarray:
        return self.poses()[self._body_index(name)]

    def body_velocity(self, name: str) -> np.ndarray:
        """[v_com; omega] (6,) in W; zeros for a static body."""
        s = self.bodies.slot[self._body_index(name)]
        return np.zeros(6) if s < 0 else self.state.v[s].copy()

    def dof_values(self, robot: str | None = None) -> np.ndarray:
        """DOF values measured from the joints (all robots, or one robot's)."""
        vals = self._dof_values(self.state.joint_q)
        return vals if robot is None else vals[self.ds.robot_slices[self._robot_index(robot)]]

    def dof_velocities(self, robot: str | None = None) -> np.ndarray:
        """DOF velocities (rad/s or m/s) from the joint rates at the current body velocities
        (static bodies at rest; a kinematic base's own motion is not included)."""
        vals = self._dof_values(self._joint_rates(self.state), offsets=False)
        return vals if robot is None else vals[self.ds.robot_slices[self._robot_index(robot)]]

    def dof_state(self, robot: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(DOF values, DOF velocities) together, as :meth:`dof_values` and :meth:`dof_velocities`
        give them (bit for bit), for a controller that reads both every step: one structure lookup
        instead of two."""
        s = self._state
        P = self._structure(s.broken).P
        fl = self._dof_flat()
        if fl is not None:          # (one compiled call: the same numbers)
            vals, rts = RK.dof_state_flat(*fl.args, P, s.c, s.q, s.v, s.joint_q)
        else:
            vals, rts = P @ (s.joint_q - self._joint_offsets), P @ self._joint_rates(s)
        if robot is None:
            return vals, rts
        sl = self.ds.robot_slices[self._robot_index(robot)]
        return vals[sl], rts[sl]

    def set_base_motion(self, robot: str, motion: Callable | None) -> None:
        """Move a fixed-base robot's base along a prescribed path: ``motion(t) -> (X_WB (4, 4),
        twist (6,) = [linear velocity of the base frame origin; angular velocity], W)``.

        The base stays a static (infinitely heavy) body, but contacts and joints see its velocity.
        Within a step the impact search moves it from its pose at t to ``motion(t + h)`` at a
        constant twist, and a step cut at a first contact ends with it at ``motion`` of the cut's
        time.  ``None`` stops the motion (the base stays where it is).  Each step checks what ``motion``
        returns: a pose that is not finite and rigid or a twist that is not 6 finite numbers raises
        ValueError naming the robot and the time, before anything moves.
        """
        ri = self._robot_index(robot)
        inst = self.world.description.robots[ri]
        if inst.mount is not None or not inst.fixed_base:
            raise ValueError(f"robot '{robot}' has no fixed base to move (mounted or free)")
        if motion is not None and not callable(motion):
            raise ValueError(f"robot '{robot}': base motion must be a function motion(t) -> (X_WB, twist) or None, "
                             f"got {type(motion).__name__}")
        b = int(self.table.robot_links[ri][inst.robot.base_link])
        if motion is None:
            self._kinematic.pop(b, None)
        else:
            self._kinematic[b] = motion
        self._active = None             # the pairs searched while objects sleep include moving bases

    def _kinematic_velocities(self, t: float):
        """Pose the kinematic bodies at time ``t`` and return the (N, 6) velocities [v_com; w] (or None)."""
        if not self._kinematic:
            return None
        V = np.zeros((len(self.table), 6))
        placed = []
        for b, motion in self._kinematic.items():
            out = motion(t)
            X, tw = _plain_motion(out)
            if X is None:       # not plain float arrays: checked and converted, or refused by name
                what = f"base motion of '{self.table.names[b]}' at t = {t:.9g} s"
                if not isinstance(out, tuple) or len(out) != 2:
                    raise ValueError(f"{what}: must return (X_WB (4, 4), twist (6,)), got {type(out).__name__}")
                X = spatial.check_rigid(out[0], f"{what}: pose")
                tw = vector(f"{what}: twist", out[1], 6).tolist()
            # v_com = v + w x com on Python floats (the same IEEE products and differences as
            # rows.cross, without its array temporaries: this runs every step of a moving base)
            v0, v1, v2, w0, w1, w2 = tw
            c0, c1, c2 = _rotate(X[:3, :3], self._com_L_all[b])
            V[b] = (v0 + (w1 * c2 - w2 * c1), v1 + (w2 * c0 - w0 * c2), v2 + (w0 * c1 - w1 * c0), w0, w1, w2)
            placed.append((b, X))
        for b, X in placed:      # only once every motion checked out
            self._data.X_static[b] = X
        return V

    def apply_external_force(self, body: str, point_W, force_W) -> None:
        """Add a force (N, W) at a world point (m, W) on a dynamic body for the next step only (GUI
        push/pull).  ValueError (nothing applied) for an unknown or static body or a point or force
        that is not 3 finite numbers."""
        i = self._body_index(body)
        s = self.bodies.slot[i]
        if s < 0:
            raise ValueError(f"body '{body}' is static")
        f = vector(f"force on '{body}'", force_W, 3)
        p = vector(f"point of the force on '{body}'", point_W, 3)
        X = self.poses()[i]
        com = X[:3, :3] @ self.table.com[i] + X[:3, 3]
        self._data.ext[s, :3] += f
        self._data.ext[s, 3:] += cross(p - com, f)
        self.wake()     # the push is felt in the next step (and restarts the rest count)

    def sync_world(self) -> None:
        """Write the simulated state back into the world (DOF values and object poses)."""
        X = self.poses()
        d = self._dof_values(self.state.joint_q)
        js = self.js
        for ri, sl in enumerate(self.ds.robot_slices):
            inst = self.world.description.robots[ri]
            lim = inst.robot.dof_limits
            self.world.state.dofs[ri][:] = np.clip(d[sl], lim[:, 0], lim[:, 1])
            # a broken-away DOF reads its distal joint; its other joints are where the simulation has
            # them, not where the coupling would put them: the world keeps them as overrides
            ov = self.world.state.joint_overrides[ri]
            ov.clear()
            broken = np.flatnonzero(self.state.broken[sl])
            if len(broken):
                mine = js.robot == ri
                q = np.zeros(len(inst.robot.joints))
                q[js.local[mine]] = self.state.joint_q[mine]
                for k in broken:
                    for j in inst.robot.dofs[k].joints[:-1]:
                        ov[int(j)] = float(q[j])
            if inst.mount is None:
                self.world.state.base_poses[ri] = X[self.table.robot_links[ri][inst.robot.base_link]].copy()
        nl = sum(len(x) for x in self.table.robot_links)
        for bi in range(len(self.world.description.bodies)):
            self.world.state.body_poses[bi] = X[nl + bi].copy()

    def rollout(self, n_steps: int, controller=None, *, stop_after_step: bool = False, until=None) -> "Rollout":
        """Run ``n_steps`` steps with a compiled controller and return the states after each step.

        ``controller``: None, a :class:`~graspsim.control.PDController` (frozen as it is now: its
        trajectories, gains and effort limits; see ``PDController.compiled``) or a
        :class:`~graspsim.control.pd.CompiledPD`.  Its command is one compiled call per step, no
        Python controller code runs; the states are those of ``n_steps`` calls of :meth:`step` with
        the PDController (or None).  A Python controller (anything else) is refused: use :meth:`step`.
        The steps of the common path (the world awake, no object falling asleep or woken, no clutch
        giving way, no joint-limit crossing; moving bases only along a
        :class:`~graspsim.control.QuinticBaseMotion`) run in one compiled loop
        (:mod:`graspsim.dynamics.rollout`: about half the time of :meth:`step` per step, and the
        same states bit for bit; see ``compiled_loop``); every other step goes through :meth:`step`.
        ``stop_after_step``: return right after such a step (the record then has fewer than
        ``n_steps`` rows), so that the caller can look at it -- its contacts (:attr:`contacts`), a
        clutch that gave way -- before going on.  ``until``: a :class:`graspsim.dynamics.rollout.Settle`
        test after every step; the rollout ends after the step at which it holds (``until.settled``).
        ValueError for a bad ``n_steps`` (a whole number >= 0); SimulationError as :meth:`step`
        (the states up to the failing step are kept, the rollout's record is lost)."""
        from ..control.pd import CompiledPD, PDController

        RO = _ROLLOUT[0] if _ROLLOUT else _rollout_module()
        n = number("n_steps", n_steps, 0, 1e9)
        if n != int(n):
            raise ValueError(f"n_steps must be a whole number >= 0, got {n_steps!r}")
        if not isinstance(stop_after_step, (bool, np.bool_)):
            raise ValueError(f"stop_after_step must be True or False, got {stop_after_step!r}")
        if until is not None and not isinstance(until, RO.Settle):
            raise ValueError(f"until must be None or a graspsim.dynamics.rollout.Settle, got {type(until).__name__}")
        n = int(n)
        if isinstance(controller, PDController):
            controller = self._compiled_pd(controller)
        elif controller is not None and not isinstance(controller, CompiledPD):
            raise ValueError(f"rollout needs a PDController, a CompiledPD or None, got {type(controller).__name__} "
                             "(a Python controller runs through step())")
        if controller is None and self._no_ctl is None:
            self._no_ctl = RO.NoController(len(self.ds))
        lc = self._no_ctl if controller is None else controller      # (the loop's)
        out = Rollout.empty(n, len(self.bodies), len(self.js), len(self.ds))
        rec = out.arrays()
        i = 0
        while i < n:
            # the compiled loop takes the steps it can (the common path); step() the others
            loop = self._loop
            if (self._state.steps and self.compiled_loop is not False
                    and not (loop is not None and loop.ctl is lc and loop.idle()) and RO.eligible(self, lc)):
                if loop is None or loop.ctl is not lc or not loop.still_valid():
                    self._loop = RO.CompiledLoop(self, lc)
                i += self._loop.run(n - i, rec, i, until)
                if i >= n or (until is not None and until.settled):
                    break
            self._stages(controller, _LATER)       # (the loop left this step: not again through it)
            RO.STEPPED[0] += 1
            s = self._state
            out.time[i], out.h[i], out.contacts[i] = s.time, self.info.h, self.contact_count
            out.c[i], out.q[i], out.v[i], out.joint_q[i], out.broken[i] = s.c, s.q, s.v, s.joint_q, s.broken
            i += 1
            if (until is not None and until.after_step(self)) or stop_after_step:
                break
        return out if i == n else out.head(i)

    def _check_rollout(self, out) -> None:
        """ValueError unless ``out`` is a Rollout of this simulator's bodies, joints and DOFs."""
        if not isinstance(out, Rollout):
            raise ValueError(f"expected a Rollout (Simulator.rollout's record), got {type(out).__name__}")
        n, nb, nj, nd = len(out), len(self.bodies), len(self.js), len(self.ds)
        want = {"c": (n, nb, 3), "q": (n, nb, 4), "v": (n, nb, 6), "joint_q": (n, nj), "broken": (n, nd)}
        bad = [k for k, sh in want.items() if getattr(out, k).shape != sh]
        if bad:
            got = ", ".join(f"{k} {getattr(out, k).shape}" for k in bad)
            raise ValueError(f"the Rollout is not one of this simulator's (world '{self.world.name}': {nb} dynamic "
                             f"bodies, {nj} joints, {nd} DOFs): {got}")

    def rollout_poses(self, out: "Rollout", name: str) -> np.ndarray:
        """(len(out), 4, 4) world poses of body ``name`` after each step of the rollout ``out`` (what
        :meth:`body_pose` gave after that step; static bodies where they are now)."""
        self._check_rollout(out)
        b = self._body_index(name)
        X = np.empty((len(out), 4, 4))
        for i in range(len(out)):
            X[i] = self._poses(out.c[i], out.q[i])[b]
        return X

    def rollout_dofs(self, out: "Rollout") -> tuple[np.ndarray, np.ndarray]:
        """DOF values (rad or m) and velocities (rad/s or m/s) after each step of the rollout
        ``out``, each (len(out), nd): what :meth:`dof_values` and :meth:`dof_velocities` gave after
        that step, bit for bit (static bodies where they are now)."""
        self._check_rollout(out)
        n, js, b = len(out), self.js, self.bodies
        vals, rates = np.empty((n, len(self.ds))), np.empty((n, len(self.ds)))
        X_static, off = self._data.X_static, self._joint_offsets
        key, P = None, None
        for i in range(n):
            br = out.broken[i]
            if key is None or not np.array_equal(br, key):       # (the clutches change rarely)
                key, P = br, self._structure(br).P
            jq = out.joint_q[i]
            r = RK.joint_rates(X_static, b.table_index, out.c[i], out.q[i], b.com_L, self._com_L_all, js.parent,
                               js.child, js.X_PJ, js.X_CJ, js.axis, js.perp, js.kind, jq, b.slot, out.v[i])
            vals[i] = P @ (jq - off)
            rates[i] = P @ r
        return vals, rates

    def run(self, duration: float, controller=None, callback: Callable | None = None) -> None:
        """Step until ``time`` has advanced by ``duration`` (s, finite, >= 0); ``callback(sim)`` after each step.

        Without a callback, and with no controller, a :class:`~graspsim.control.PDController`
        without feedforward or a CompiledPD, runs of at least ``RUN_MIN_STEPS`` (20) steps go
        through :meth:`rollout` (its compiled loop, when compiled: the same states as ``step``
        calls, bit for bit); the last steps, fewer than that, through ``step``."""
        duration = number("duration", duration, 0.0, np.inf)
        check_controller(controller)
        if callback is not None and not callable(callback):
            raise ValueError(f"callback must be None or a function of the simulator, got {type(callback).__name__}")
        t_end = self.state.time + duration - 1e-12
        ctl = False         # (not asked for a run too short for a rollout)
        if callback is None and self.compiled_loop is not False and duration >= RUN_MIN_STEPS * self.dt:
            ctl = self._rollout_controller(controller)
        while self.state.time < t_end:
            # as many steps as can start before t_end even at full length: the steps this loop
            # takes, as a rollout (lift_test's way too), when there are enough of them to pay for
            # one (a rollout call costs ~0.1 ms more than a step)
            n = int((t_end - self.state.time) / self.dt)
            loop = self._loop
            if (ctl is not False and n >= RUN_MIN_STEPS
                    and not (loop is not None and loop.ctl is (ctl or self._no_ctl) and loop.idle())):
                self.rollout(min(RUN_CHUNK, n), ctl)
                continue
            self.step(controller)
            if callback is not None:
                callback(self)

    def _rollout_controller(self, controller):
        """What :meth:`rollout` would run for ``controller`` as ``step`` runs it (a PDController
        without feedforward, with plain gains: compiled as it is), or False."""
        from ..control.pd import CompiledPD, PDController, _plain
        from . import rollout as RO

        if not RO.possible(self):
            return False                # (steps the loop never takes: the stages, every one)
        if controller is None or isinstance(controller, CompiledPD):
            return controller
        nd = len(self.ds)
        if (type(controller) is PDController and controller.feedforward is None and _plain(controller.kp, nd)
                and _plain(controller.kd, nd) and _plain(controller.effort, nd)):
            return self._compiled_pd(controller)
        return False

    def _compiled_pd(self, controller):
        """``controller.compiled()``, or the last call's compiled copy while the PDController is as
        it was then (its trajectories are immutable, replaced by move_to; gains are changed in
        place): so its compiled loop is reused (a new copy rebuilds the loop's constants, ~0.3 ms).
        ValueError (``compiled``'s) for a controller with a feedforward, even one set since."""
        trajs = tuple(controller.trajectories.values())
        got = self._run_ctl
        # (gains compared as bytes, ~10x faster than np.array_equal: a change, even -0.0 for 0.0, compiles
        # a new copy, whose own checks refuse what is wrong)
        if (got is None or got[0] is not controller or controller.feedforward is not None or len(got[1]) != len(trajs)
                or not all(map(operator.is_, got[1], trajs)) or got[3] != _gain_bytes(controller)):
            got = self._run_ctl = (controller, trajs, controller.compiled(), _gain_bytes(controller))
        return got[2]

    # ------------------------------------------------------------------ the step
    def step(self, controller=None) -> StepInfo:
        """Advance one time step: the paper's ten steps (section 4) as named stages, each timed by
        the stage timer when ``profile`` is on (:mod:`graspsim.dynamics.stages`).

        ``controller``: None or an object whose ``command(sim)`` returns a
        :class:`~graspsim.dynamics.DriveCommand` (or None) for this step.  A step of the common path
        (see :meth:`rollout`) is one call of the compiled loop, with the controller's command, once
        the loop is loaded for this world's layout (``compiled_loop``, ``rollout.LOAD_AFTER``; not
        with moving bases and a controller, nor while profiling): the same state bit for bit, about
        20 % less CPU per step than the stages (the peers' grasp)."""
        check_controller(controller)
        cmd = _LATER
        if self.compiled_loop is not False and self._state.steps and not self.profile:
            done, cmd = self._loop_step(controller)
            if done:
                return self.info
        return self._stages(controller, cmd)

    def _loop_step(self, controller) -> tuple:
        """The step as one call of the compiled loop (rollout.CompiledLoop with the controller's
        command given, or none): (taken, the command asked for or _LATER).  Not taken: nothing
        changed, the stages take the step with that command."""
        RO = _ROLLOUT[0] if _ROLLOUT else _rollout_module()
        s = self._state
        if self._data.asleep is not None or (controller is not None and self._kinematic):
            return False, _LATER        # (a moving base is placed before the controller is asked)
        self._check_steppable(s, self.dt)
        cmd = controller.command(self) if controller is not None else None
        # (C-contiguous float64: the loop's compiled argument type; a copy only for an odd array)
        A = None if cmd is None else np.ascontiguousarray(command_array(cmd, self.ds.names), dtype=np.float64)
        got = self._step_loops.get(A is not None)
        if got is None:
            nd = len(self.ds)
            lc = RO.GivenCommand(nd) if A is not None else RO.NoController(nd)
            got = self._step_loops[A is not None] = [None, lc, None, None]
        loop, lc, rec, declined = got
        if loop is not None and loop.ready and not self.profile and loop.step_valid():
            return loop.run(1, rec, 0, None, A, False) == 1, cmd
        if (loop is not None and not loop.step_ready()) or not RO.eligible(self, lc):
            return False, cmd
        if loop is None or not loop.still_valid():
            if loop is not None and self._dt != loop.h and self._dt != declined:
                # another step length: a loop's constants built for one step cost about as much as
                # a step through the stages, and a driver landing on its time grid takes one or a few
                # steps of the remainder, then its own step again (the peers' drop built 245 loops in
                # its first second, 3 % of its CPU).  So this step goes through the stages; a new
                # loop once the same length is asked for twice in a row
                got[3] = self._dt
                return False, cmd
            if not RO.load_due(self):
                return False, cmd       # (none loaded, none due: not even its constants built)
            loop = got[0] = RO.CompiledLoop(self, lc)
            if rec is None:
                out = Rollout.empty(1, len(self.bodies), len(self.js), len(self.ds))
                rec = got[2] = out.arrays()
            if not loop.step_ready():
                return False, cmd
        return loop.run(1, rec, 0, None, A) == 1, cmd

    def _stages(self, controller, cmd) -> StepInfo:
        """:meth:`step` through its named stages; ``cmd`` the controller's command, or _LATER: asked
        for at step 7."""
        timer = StageTimer(self.profile)
        s, h = self.state, self.dt
        self._check_steppable(s, h)
        STAGED_STEPS[0] += 1
        if self._data.asleep is not None:                    # a sleeping world: does anything wake it?
            if cmd is _LATER:
                cmd = controller.command(self) if controller is not None else None
            if self._stays_asleep(s, cmd):
                return self._sleeping_step(s, h, timer)
        if self._bodies_asleep:                              # sleeping objects: changed in place?
            self._check_sleeping_bodies(s)
        kin_from = [(b, self._data.X_static[b].copy()) for b in self._kinematic]    # moving bases at t
        V = self._kinematic_velocities(s.time + h)          # prescribed base motion, at t + h
        mv = self._move(s, h, kin_from)                      # 1-3: move; first contact / limit instant
        if mv.V is not None:
            V = mv.V
        timer.mark("collision")
        if mv.contacts is False:                             # 4: all contacts (unless 3 found them)
            mv.contacts = self._find_contacts(mv.X)
        if self._bodies_asleep and mv.contacts is not None:  # sleeping objects an awake body touches wake
            mv.contacts = self._wake_touched(mv.X, mv.contacts)
        timer.mark("contacts")
        if cmd is _LATER:                                    # 7: the controller's command
            cmd = controller.command(self) if controller is not None else None
        asm = self._assemble(s, mv, cmd, V, h)               # 5-8 and every constraint row
        timer.mark("assembly")
        v_new, c1, q1, impulses, sol = self._solve(s, mv, asm)   # 9-10: islands, LCPs, post-stabilisation
        timer.mark("solve")
        self._commit(s, mv, asm, cmd, v_new, c1, q1, impulses, sol, timer)
        if self.sleep:
            self._rest_objects(mv, sol)
            self._rest(s, mv, asm, sol, V is not None)
        timer.mark("integration")
        return self.info

    @property
    def asleep(self) -> bool:
        """Is the world asleep (:mod:`graspsim.dynamics.sleep`: at rest, its steps only advance the clock)?"""
        return self._data.asleep is not None

    @property
    def sleeping_bodies(self) -> tuple:
        """Names of the objects asleep on their own while the world moves (:mod:`graspsim.dynamics.sleep`;
        :attr:`contacts` reports their contacts and forces as they were when they fell asleep)."""
        idx = self.bodies.table_index[np.flatnonzero(self._data.bodies_group)]
        return tuple(self.table.names[i] for i in idx.tolist())

    def wake(self) -> None:
        """Wake a sleeping world and every sleeping object (the next step is computed in full) and
        restart the rest counts."""
        d = self._data
        d.asleep = None
        d.rest[0] = 0.0
        if self._bodies_asleep:
            d.bodies_group[:] = 0
            self._sync_sleeping()
        d.bodies_rest[:] = 0.0

    def _sync_sleeping(self) -> None:
        """Derived from the data block's sleeping objects: are there any, and the pairs to search;
        the kept contacts of objects that woke are dropped."""
        d = self._data
        self._bodies_asleep = bool(d.bodies_group.any())
        self._active = None
        if d.bodies_contacts is not None:
            self._keep_sleeping_contacts(False)

    def _keep_sleeping_contacts(self, new: bool) -> None:
        """The data block's contacts of sleeping objects: those already kept whose objects still
        sleep, then (``new``) the last step's contacts of objects that fell asleep in it."""
        d, slot = self._data, self.bodies.slot
        asleep = d.bodies_group > 0

        def sleeping(cs):
            a, b = slot[cs.body_a], slot[cs.body_b]
            return (a >= 0) & asleep[np.maximum(a, 0)] | (b >= 0) & asleep[np.maximum(b, 0)]

        parts = []
        if d.bodies_contacts is not None:
            cs, f = d.bodies_contacts
            m = sleeping(cs)
            parts.append((cs.select(m), f[m]))
        info = self.info
        if new and info.contacts is not None and not info.asleep and info.h > 0:
            m = sleeping(info.contacts)
            if m.any():     # they move from the step's report to the sleeping objects' (no double count)
                parts.append((info.contacts.select(m), info.contact_impulse[m] / info.h))
                info.contacts = info.contacts.select(~m) if not m.all() else None
                info.contact_impulse = info.contact_impulse[~m]
        parts = [p for p in parts if len(p[0])]
        d.bodies_contacts = None if not parts else (concat_contacts([p[0] for p in parts]),
                                                    np.concatenate([p[1] for p in parts]))

    def _check_sleeping_bodies(self, s: SimState) -> None:
        """Wake every sleeping object when one was moved or set moving in place, or a parameter changed."""
        d = self._data
        m = d.bodies_group > 0
        if (self._sleep_key() != d.bodies_key or s.v[m].any() or not np.array_equal(s.c[m], d.bodies_pose[m, :3])
                or not np.array_equal(s.q[m], d.bodies_pose[m, 3:])):
            self.wake()

    def _active_pairs(self) -> np.ndarray:
        """The collision pairs with an awake dynamic body or a moving base (the others cannot touch anew)."""
        if self._active is None:
            model = self._collision_model()
            frozen = ~np.asarray(self.table.dynamic, bool)
            frozen[self.bodies.table_index[self._data.bodies_group > 0]] = True
            frozen[list(self._kinematic)] = False      # a moving base can touch a sleeping object
            p = model.pairs
            self._active = np.ascontiguousarray(p[~(frozen[p[:, 0]] & frozen[p[:, 1]])])
        return self._active

    def _wake_touched(self, X: np.ndarray, contacts):
        """Wake the sleeping groups an awake body touches, and search the contacts again with their
        pairs (their resting contacts were not searched)."""
        d, slot = self._data, self.bodies.slot
        for _ in range(len(self.bodies) + 1):      # each round wakes at least one group
            g = touched_groups(slot[contacts.body_a], slot[contacts.body_b], d.bodies_group)
            if not len(g):
                return contacts
            woken = np.isin(d.bodies_group, g)
            d.bodies_group[woken] = 0
            d.bodies_rest[woken] = 0.0
            self._sync_sleeping()
            contacts = self._find_contacts(X)
            if contacts is None or not self._bodies_asleep:
                return contacts
        return contacts

    def _rest_objects(self, mv: "_Move", sol: dict) -> None:
        """Count how long each awake object has rested (uncut steps); an island of objects that all
        rested ``sleep_after`` s falls asleep: zero velocities, its pose kept, its pairs with static or
        sleeping bodies left out of the contact search (see :mod:`graspsim.dynamics.sleep`)."""
        d, st = self._data, self._state
        d.bodies_rest = sol["rest"]          # (counted by RK.finish)
        if not sol["rested"]:
            return
        rested = d.bodies_rest >= self.sleep_after
        ok, gid = resting_islands(sol["labels"], rested)
        new = ok & rested
        if not new.any():
            return
        d.bodies_group[new] = gid[new]
        self._keep_sleeping_contacts(True)
        d.bodies_pose[new, :3] = st.c[new]
        d.bodies_pose[new, 3:] = st.q[new]
        d.bodies_rest[new] = 0.0
        d.bodies_key = self._sleep_key()
        st.v[new] = 0.0
        self._bodies_asleep, self._active = True, None    # (the kept contacts are current: no _sync_sleeping)

    def _sleep_key(self) -> tuple:
        """The parameters a sleeping world must keep to stay asleep (dt, gravity, ...)."""
        return (self._dt, *self.gravity.tolist(), *_SLEEP_PARAMS(self))

    def _stays_asleep(self, s: SimState, cmd) -> bool:
        """Does the step still read what it read when the world fell asleep?  Else wake it."""
        A = command_array(cmd, self.ds.names) if cmd is not None else None
        if not self._kinematic and unchanged(self._data.asleep, s, A, self._sleep_key()):
            return True
        self.wake()
        return False

    def _sleeping_step(self, s: SimState, h: float, timer: StageTimer) -> StepInfo:
        """A step of a sleeping world: the clock advances, the bodies stay, the last contacts and
        their impulses are reported again."""
        a = self._data.asleep
        self._state = SimState(s.time + h, s.c.copy(), s.q.copy(), s.v.copy(), s.joint_q.copy(), s.broken.copy(),
                               s.lock.copy(), s.steps + 1)
        timer.mark("integration")
        self.info = StepInfo(h=h, contacts=a.contacts, contact_impulse=a.impulse.copy(), timing=timer.result(),
                             asleep=True)
        return self.info

    def _rest(self, s: SimState, mv: "_Move", asm: "_Assembly", sol: dict, driven: bool) -> None:
        """After a computed step: count how long every body has rested (uncut steps, no base motion,
        the same command and breakaway flags, steady contact impulses; an external wrench restarts
        the count, see apply_external_force); after ``sleep_after`` s the world falls asleep with its
        velocities set to zero."""
        rest, new, imp = self._data.rest, self._state, self.info.contact_impulse
        if imp is None:
            imp = np.zeros((0, 3))
        ok = (mv.frac >= 1.0 and not driven and resting(sol["lin"], sol["ang"], self.sleep_speed)
              and steady(asm.command, rest[1], imp, rest[2])
              and np.array_equal(new.broken, s.broken) and np.array_equal(new.lock, s.lock))
        rest[0] = rest[0] + mv.h if ok else 0.0
        rest[1], rest[2] = asm.command, imp
        if ok and rest[0] >= self.sleep_after:
            new.v[:] = 0.0
            A = asm.command
            self._data.asleep = Asleep(new.c.copy(), new.q.copy(), new.joint_q.copy(), new.broken.copy(),
                                       new.lock.copy(), None if A is None else A.copy(), self._sleep_key(),
                                       self.info.contacts, imp.copy())
            self.info.asleep = True

    def _check_steppable(self, s: SimState, h: float) -> None:
        """The state's arrays can be changed in place: a NaN must not reach the collision search (it
        would not end), nor time stand still (run() would not end)."""
        if not (s.time + h > s.time and RK.state_finite(s.c, s.q, s.v, s.joint_q, s.lock)):
            raise SimulationError(self._step_refusal(s, h))

    def _move(self, s: SimState, h: float, kin_from=()) -> "_Move":
        """Steps 1-3: velocity-to-pose map, move the dynamic bodies with their current velocities
        (eq. 10-12), and cut the move at the first new contact or joint-limit crossing."""
        try:
            c1, q1, X, o, o_c, R, R_c, ax, pp, jq, crossed, X0 = self._trial_move(s, h, True)
        except ZeroDivisionError:     # a zero quaternion put into the state in place
            raise SimulationError(self._step_refusal(s, h)) from None
        F = JointFrames(o, o_c, R, R_c, ax, pp)
        frac, contacts = self._first_impact_fraction(s, c1, q1, h, X, kin_from, X0)
        if crossed:
            frac = min(frac, self._limit_fraction(s, h))
        # a cut step advances at least H_FLOOR; a step the caller asked to be shorter, by itself
        h_step = max(frac * h, min(h, H_FLOOR))
        V = None
        if frac < 1.0:
            if self._kinematic:
                # moving bases were placed at t + h for the search; the step ends at t + h_step, so
                # are they (left ahead, the next step would move them by h_step while the bodies
                # move by h: a finger on a lifted palm then overlaps it anew every step)
                V = self._kinematic_velocities(s.time + h_step)
            c1, q1, X, o, o_c, R, R_c, ax, pp, jq, _, _ = self._trial_move(s, frac * h)
            F = JointFrames(o, o_c, R, R_c, ax, pp)
            contacts = False
        return _Move(c1, q1, X, F, jq, frac, h_step, contacts, V)

    def _trial_move(self, s: SimState, h: float, start: bool = False) -> tuple:
        """Poses, joint frames and values after moving with the current velocities for ``h`` s
        (``_rows_kernel.trial_move``: eq. 10-12, then the joints): (c1, q1, X, o, o_c, R, R_c, ax,
        pp, jq, crossed, X0), X0 the poses at the start with ``start`` (else empty).  The shortened
        moves of the impact and limit searches use it too, so a first run compiles one kernel for
        all of them."""
        st, js = self._structure(s.broken), self.js
        return RK.trial_move(s.c, s.q, s.v, h, self._data.X_static, self.bodies.table_index, self.bodies.com_L,
                             js.parent, js.child, js.X_PJ, js.X_CJ, js.axis, js.perp, js.kind, s.joint_q,
                             st.limit_cand, st.lim_lo, st.lim_hi, st.lim_tol, start)

    def _assemble(self, s: SimState, mv: "_Move", cmd, V, h: float) -> "_Assembly":
        """Steps 5-8 and every constraint row in one compiled call (``_rows_kernel.assemble``):
        friction coefficients (eq. 13), external forces (gravity; the gyroscopic term comes with the
        inertias), control forces and PD drive rows, joint friction (eq. 14), and the rows of joints
        (eq. 7, 16), coupled DOFs, joint limits (eq. 9) and contacts (eq. 3-6, 19).  With restitution
        on, the reference path (:meth:`_assemble_reference`)."""
        if self.restitution:
            return self._assemble_reference(s, mv, cmd, V, h)
        st = self._structure(s.broken)
        js, ds, F = self.js, self.ds, mv.F
        carr = self._contact_arrays(mv.contacts)
        Acmd = command_array(cmd, ds.names) if cmd is not None else None
        A = self._no_cmd if Acmd is None else Acmd
        MS, MK, mat, ma, mb = self._material_lookup(mv.contacts)
        rows_b, jac, rhs, comp, sizes, hard_err, mu, k, ne = RK.assemble(
            mv.X, self._com_L_all, self.bodies.slot, self.bodies.mass, self.gravity, self._data.ext, s.v, mv.jq,
            js.kind, js.parent, js.child, js.axis, F.o, F.o_c, F.R, F.R_c, F.axis, F.perp, *self._row_template,
            self._joint_offsets, js.coulomb, st.P, st.drive_idx, st.drive_w, st.c_idx, st.c_coef, st.c_kappa,
            st.c_dof, st.c_lock, st.c_hard, s.lock, ds.kp, ds.kd, self._viscous_idx, js.viscous, st.limit_cand,
            st.lim_lo, st.lim_hi, st.lim_tol, cmd is not None, A, ds.effort, *carr, MS, MK, mat, ma, mb, V is not None,
            self._no_V if V is None else V, h, max(h, self._h_correction), self.gamma, self.threshold, self.u,
            self.static_speed, LOCK_GAIN)
        # a material pair missing from the table (a NaN coefficient; the others are >= 0, so the sum
        # is NaN exactly then; a Python sum of the few floats, not a numpy reduction): its lookup names it
        if len(mu) and math.isnan(sum(mu.tolist())):
            self._missing_friction(mv.contacts, mu)
        return _Assembly(st, Rows(rows_b, jac, rhs, comp), sizes, hard_err, mu, k, int(ne), carr, Acmd)

    def _contact_arrays(self, contacts) -> tuple:
        """(body_a, body_b, point, normal, tangent1, tangent2, separation) of the contacts as
        C-contiguous arrays (the kernels' layout; empty without contacts)."""
        if contacts is None:
            return self._no_contacts
        c = np.ascontiguousarray    # the same arrays when already in layout
        return (c(contacts.body_a, dtype=np.int64), c(contacts.body_b, dtype=np.int64), c(contacts.point, dtype=float),
                c(contacts.normal, dtype=float), c(contacts.tangent1, dtype=float), c(contacts.tangent2, dtype=float),
                c(contacts.separation, dtype=float))

    def _assemble_reference(self, s: SimState, mv: "_Move", cmd, V, h: float) -> "_Assembly":
        """The numpy/Python reference of :meth:`_assemble` (and its path with restitution): friction coefficients (eq. 13), external forces
        (gravity; the gyroscopic term comes with the inertias), control forces and PD drive rows,
        joint friction (eq. 14), and the rows of joints (eq. 7, 16), coupled DOFs, joint limits
        (eq. 9) and contacts (eq. 3-6, 19)."""
        contacts, F, jq = mv.contacts, mv.F, mv.jq
        com_W = self._com_world(mv.X)
        st = self._structure(s.broken)
        # one rate row per joint and a zero row (index nj) that pads DOFs with fewer joints
        js = self.js
        rb, rj, rates = RK.rate_rows(js.kind, js.parent, js.child, self.bodies.slot, com_W, F.o, F.axis, s.v)
        rate_ext = Rows(rb, rj, np.zeros(len(rb)))
        if V is not None:
            rate_ext.const = np.concatenate([np.einsum("rc,rc->r", rj[:-1, 0], V[js.parent]) +
                                             np.einsum("rc,rc->r", rj[:-1, 1], V[js.child]), [0.0]])
            rates = rates + rate_ext.const[:-1]
        mu = self._friction_coefficients(contacts, s.v, com_W)                 # 5
        k = self._external_forces()                                            # 6
        tau_joint, drive_rows = self._control(cmd, st, jq, rates, rate_ext, h)  # 7
        tau_joint -= self.js.coulomb * np.sign(rates)                          # 8: Coulomb explicit,
        damp_rows = self._viscous_rows(rate_ext, h)                            # viscous implicit
        k += RK.joint_wrenches(js.kind, js.parent, js.child, self.bodies.slot, com_W, F.o, F.axis, tau_joint,
                               len(self.bodies))
        eq = self._equality_rows(F, com_W, V)
        coup, hold = self._coupling_rows(st, rate_ext, jq, s, h)
        hard_err = np.concatenate([eq.rhs, coup.rhs])     # position errors (m, rad)
        hc = max(h, self._h_correction)                   # see __init__
        for r in (eq, coup):
            r.rhs = -self.gamma * r.rhs / hc                # eq. (16)
        limits = self._limit_rows(st, rate_ext, jq, hc)
        normals, frictions = self._contact_rows(contacts, com_W, hc, V)
        if self.restitution and contacts is not None:
            normals.rhs = np.minimum(normals.rhs, self._restitution_bias(contacts, s.v, com_W))
        if V is not None:   # kinematic bodies' motion: equality targets shift, inequality biases grow
            for r in (eq, coup, drive_rows, damp_rows, hold):
                r.rhs = r.rhs - r.constant()
            for r in (limits, normals, frictions):
                r.rhs = r.rhs + r.constant()
        # rows by kind: hard equality, soft equality (drives, viscous friction), limits, normals, friction
        kinds = ((eq, coup), (drive_rows, damp_rows, hold), (limits,), (normals,), (frictions,))
        sizes = np.array([sum(len(b.rhs) for b in grp) for grp in kinds], np.int64)
        return _Assembly(st, Rows.concat([b for grp in kinds for b in grp]), sizes, hard_err, mu, k, len(eq),
                         self._contact_arrays(contacts), None if cmd is None else command_array(cmd, self.ds.names))

    def _solve(self, s: SimState, mv: "_Move", asm: "_Assembly"):
        """Steps 9-10: islands; per island the free step (eq. 15), the equality system (eq. 17) or
        the mixed LCP (eq. 18-21); then the post-stabilisation of the joints."""
        labels, n_isl = self._islands(mv.contacts)
        # block inverse masses (m I, I_W at the new orientation), the gyroscopic term, M^-1 (M v + h k)
        try:    # the compiled kernels divide: overflowing numbers (a blow-up) end in a ZeroDivisionError
            _, Minv, a_over_M = RK.mass_terms(self.bodies.mass, self.bodies.inertia_L, mv.q1, s.v, asm.k, mv.h)
            v_new, impulses, sol = self._solve_islands(labels, n_isl, Minv, a_over_M, asm, mv.contacts)
            if self._bodies_asleep:         # sleeping objects: free bodies without contacts; they stay
                v_new[self._data.bodies_group > 0] = 0.0
            sol["labels"] = labels
            if self._data.meta[0] > self.warm_start_entries:
                self._data.clear_table()        # warm starts are only guesses: memory stays bounded
            # post-stabilisation of the joints: project the new positions back onto the constraints
            # (jq is finite: it comes from finite poses unwrapped against the checked joint_q)
            d = self._data
            c1, q1, finite, sol["lin"], sol["ang"], sol["rest"], sol["rested"] = RK.finish(
                mv.c1, mv.q1, sol.pop("dx"), v_new, d.bodies_rest, d.bodies_group, self._is_object,
                mv.h if self.sleep and mv.frac >= 1.0 else 0.0, self.sleep_speed / ROOT3, ANGULAR_LENGTH,
                self.sleep_after)
        except ZeroDivisionError:
            finite = False
        if not finite:
            raise SimulationError(f"non-finite numbers in the step at t = {s.time:.6f} s (h = {mv.h:.3g} s; "
                                  f"{self._fastest(s)}); the state before the step is kept")
        sol["islands"] = n_isl
        return v_new, c1, q1, impulses, sol

    def _commit(self, s: SimState, mv: "_Move", asm: "_Assembly", cmd, v_new, c1, q1, impulses, sol, timer):
        """The new state: breakaway DOFs updated, pending wrenches cleared, step info."""
        if not s.time + mv.h > s.time:
            raise SimulationError(f"a step of {mv.h:.3g} s does not advance the clock at t = {s.time!r} s "
                                  "(below its resolution); the state before the step is kept")
        self._stall_guard(s, mv)
        # breakaway DOFs: the coupling gives way when it transmits more than the breakaway torque
        st = asm.st
        broken, lock = s.broken.copy(), s.lock.copy()
        if st.brk_held or st.brk_free:
            # the hard coupling rows' impulses follow the joint rows (the holds are soft: none)
            self._update_breakaway(st, sol["hard_impulse"][asm.n_joint_rows:], mv.h, mv.jq, cmd, broken, lock)
        self._state = SimState(s.time + mv.h, c1, q1, v_new, mv.jq, broken, lock, s.steps + 1)
        self._data.ext[:] = 0.0
        self.info = StepInfo(h=mv.h, fraction=mv.frac, contacts=mv.contacts, contact_impulse=impulses,
                             lcp_sizes=sol["lcp_sizes"], pivots=sol["pivots"], islands=sol["islands"],
                             timing=timer.result())

    def _stall_guard(self, s: SimState, mv: "_Move") -> None:
        """Count consecutive cut steps (SimData.cuts); raise SimulationError (the state before the
        step kept) when STALL_STEPS of them advanced less than STALL_ADVANCE steps' worth."""
        cuts = self._data.cuts
        if mv.frac >= 1.0:
            cuts[0] = 0
            return
        if cuts[0] == 0:
            cuts[1] = s.time
        cuts[0] += 1
        if cuts[0] >= STALL_STEPS and s.time + mv.h - cuts[1] < STALL_ADVANCE * self.dt:
            n, t0 = cuts[0], cuts[1]
            cuts[0] = 0
            c = mv.contacts
            near = "" if c is None or c is False or not len(c) else "; contacts at the cut: " + ", ".join(
                sorted({f"'{self.table.names[a]}'-'{self.table.names[b]}'" for a, b in
                        zip(c.body_a.tolist(), c.body_b.tolist())})[:6])
            raise SimulationError(
                f"the simulation stalled at t = {s.time:.9f} s: {n} consecutive steps were cut at a new "
                f"contact or joint limit and advanced {s.time + mv.h - t0:.3g} s in all (h = {self.dt:g} s)"
                f"{near}; the state before the step is kept")

    # ------------------------------------------------------------------ input checks
    def _body_index(self, name: str) -> int:
        i = self.table.index.get(name) if isinstance(name, str) else None
        if i is None:
            hint = did_you_mean(str(name), self.table.names)
            raise ValueError(f"no body '{name}' in world '{self.world.name}'{hint}")
        return i

    def _robot_index(self, name: str) -> int:
        idx = self.world.description.robot_index
        if not isinstance(name, str) or name not in idx:
            raise ValueError(f"no robot '{name}' in world '{self.world.name}'{did_you_mean(str(name), idx)}")
        return idx[name]

    def _fastest(self, s) -> str:
        """The fastest body of state ``s`` (a blow-up's first suspect), in words."""
        if not len(s.v):
            return "no dynamic bodies"
        sp = np.abs(s.v).max(axis=1)
        k = int(np.argmax(sp))
        return (f"fastest body before the step: '{self.table.names[self.bodies.table_index[k]]}' at "
                f"{sp[k]:.3g} m/s or rad/s")

    def _step_refusal(self, s, h: float) -> str:
        problem = state_problem(self, s) or \
            f"a step of {h:.3g} s does not advance the clock at t = {s.time!r} s (below its resolution)"
        return f"cannot step: {problem}; the state is unchanged"

    # ------------------------------------------------------------------ pieces of the step
    def _joint_state(self, X: np.ndarray, previous: np.ndarray) -> tuple[JointFrames, np.ndarray]:
        """Joint frames and joint values (revolute unwrapped against ``previous``) at poses ``X``
        (compiled equivalent of joints.joint_frames + joints.joint_values)."""
        js = self.js
        o, o_c, R, R_c, ax, pp, q = RK.joint_frames_values(X, js.parent, js.child, js.X_PJ, js.X_CJ, js.axis,
                                                           js.perp, js.kind, previous, True)
        return JointFrames(o, o_c, R, R_c, ax, pp), q

    def _equality_rows(self, F: JointFrames, com_W: np.ndarray, V: np.ndarray | None) -> Rows:
        """The joint rows of eq. (7) with their position errors (compiled joints.equality_rows)."""
        js = self.js
        rj, rt, rk = row_template(js)
        if not len(rj):
            return Rows.empty()
        bodies, jac, err, keep = RK.equality_rows(rj, rt, rk, js.kind, js.parent, js.child, js.axis,
                                                  self.bodies.slot, com_W, F.o, F.o_c, F.R, F.R_c, F.axis, F.perp)
        const = None
        if V is not None:   # velocities of kinematic (moving static) bodies
            const = np.einsum("rc,rc->r", jac[:, 1], V[js.child[rj]]) + np.einsum("rc,rc->r", jac[:, 0], V[js.parent[rj]])
        rows = Rows(bodies, jac, err, None, const)
        return rows if keep.all() else rows.select(keep)

    def _poses(self, c: np.ndarray, q: np.ndarray, X_static: np.ndarray | None = None) -> np.ndarray:
        """(N, 4, 4) poses of every body: the dynamic ones at coms ``c`` and orientations ``q``, the
        static ones at ``X_static`` (default: where they are now)."""
        Xs = self._data.X_static if X_static is None else X_static
        if not len(c):
            return Xs.copy()
        return RK.place(Xs, self.bodies.table_index, c, q, self.bodies.com_L)

    def _com_world(self, X: np.ndarray) -> np.ndarray:
        return X[:, :3, 3] + np.einsum("nij,nj->ni", X[:, :3, :3], self._com_L_all)

    def _world_joint_values(self) -> np.ndarray:
        out = np.zeros(len(self.js))
        per_robot = [self.world.joint_values(ri) for ri in range(len(self.world.description.robots))]
        for n in range(len(self.js)):
            ri, loc = self.js.robot[n], self.js.local[n]
            if ri >= 0:
                out[n] = per_robot[ri][loc]
        return out

    def _dof_flat(self):
        """The constant arrays of ``dof_state``'s compiled call, flattened (``graspsim._flat``; built
        again when the data block's static poses are other arrays), or None when they cannot be."""
        got = self.__dict__.get("_dof_flat_cache")
        X = self._data.X_static
        if got is None or got[1] is not X:
            js, b = self.js, self.bodies
            fl = flatten((X, b.table_index, b.com_L, self._com_L_all, js.parent, js.child, js.X_PJ, js.X_CJ, js.axis,
                          js.perp, js.kind, b.slot, self._joint_offsets))
            got = self.__dict__["_dof_flat_cache"] = (fl, X)
        return got[0]

    def __getstate__(self) -> dict:
        st = self.__dict__.copy()
        st.pop("_dof_flat_cache", None)     # (its tables hold this process's addresses)
        return st

    def _joint_rates(self, s: SimState) -> np.ndarray:
        """Joint rates (nj,) (rad/s or m/s) at state ``s``'s body velocities (one compiled call)."""
        js, b = self.js, self.bodies
        return RK.joint_rates(self._data.X_static, b.table_index, s.c, s.q, b.com_L, self._com_L_all, js.parent,
                              js.child, js.X_PJ, js.X_CJ, js.axis, js.perp, js.kind, s.joint_q, b.slot, s.v)

    def _dof_values(self, jq: np.ndarray, offsets: bool = True) -> np.ndarray:
        """DOF values (or rates, ``offsets=False``) from joint values: least squares over the coupled
        joints (exact when the coupling holds); a broken-away DOF reads its distal joint."""
        st = self._structure(self.state.broken)
        return st.P @ (jq - self._joint_offsets if offsets else jq)

    def _structure(self, broken: np.ndarray):
        """Index arrays that depend only on which DOFs have broken away (cached per pattern)."""
        key = (broken if type(broken) is np.ndarray and broken.dtype == bool else np.asarray(broken, bool)).tobytes()
        cache = self.__dict__.setdefault("_structure_cache", {})
        got = cache.get(key)
        if got is not None:
            return got
        ds, js = self.ds, self.js
        nd, nj = len(ds), len(js)
        maxj = max([len(j) for j in ds.joints] + [1])
        P = np.zeros((nd, nj))
        drive_idx = np.full((nd, maxj), nj)
        drive_w = np.zeros((nd, maxj))
        c_idx, c_coef, c_kappa, c_dof, c_lock = [], [], [], [], []
        limit_cand = (js.kind != 2) & np.isfinite(js.limits).any(axis=1)
        for d in range(nd):
            jidx, rat, off = ds.joints[d], ds.ratios[d], ds.offsets[d]
            brk = bool(broken[d]) and len(jidx) > 1
            use, r_use = (jidx[-1:], rat[-1:]) if brk else (jidx, rat)
            w = r_use / float(r_use @ r_use)    # virtual work: tau_j = r_j tau / sum r^2
            P[d, use] = w
            drive_idx[d, :len(use)] = use
            drive_w[d, :len(use)] = w
            if len(jidx) > 1:
                governing = jidx[-1] if brk else jidx[0]
                for j in jidx:
                    if j != governing:
                        limit_cand[j] = False
                if brk:    # hold the proximal joint where it broke away
                    c_idx.append([jidx[0], nj]); c_coef.append([1.0, 0.0]); c_kappa.append(np.nan)
                    c_dof.append(d); c_lock.append(True)
                else:      # rate_k - rho rate_0 = 0 (with error correction)
                    for k in range(1, len(jidx)):
                        rho = rat[k] / rat[0]
                        c_idx.append([jidx[k], jidx[0]]); c_coef.append([1.0, -rho])
                        c_kappa.append(off[k] - rho * off[0]); c_dof.append(d); c_lock.append(False)

        S = _Structure()
        S.P, S.drive_idx, S.drive_w = P, drive_idx, drive_w
        S.c_idx = np.array(c_idx, dtype=np.int64).reshape(-1, 2)
        S.c_coef = np.array(c_coef).reshape(-1, 2)
        S.c_kappa, S.c_dof, S.c_lock = np.array(c_kappa), np.array(c_dof, dtype=np.int64), np.array(c_lock, bool)
        S.limit_cand = np.flatnonzero(limit_cand)
        # coupling rows that stay hard (see _coupling_rows: holds of DOFs with gains are soft)
        S.c_hard = ~(S.c_lock & ((LOCK_GAIN * (self.ds.kp + self.ds.kd))[S.c_dof] > 0)) if len(S.c_dof) else \
            np.zeros(0, bool)
        # coupling rows of breakaway DOFs (the clutch test of _update_breakaway)
        brk_rows = np.flatnonzero(self.ds.breakaway[S.c_dof]) if len(S.c_dof) else np.zeros(0, np.int64)
        # what _update_breakaway reads, per breakaway row: held DOFs (broken away: may re-couple) with
        # their clutch arrays; coupled DOFs (may give way) with the row's place among the hard
        # coupling rows (a row not held is hard: c_hard is False only for holds) and the torque
        brk_d, brk_held = S.c_dof[brk_rows], S.c_lock[brk_rows]
        # held: (dof, proximal joint, distal joint, distal/proximal ratio, proximal and distal offsets)
        S.brk_held = list(zip(*(a.tolist() for a in (brk_d[brk_held], *(c[brk_d[brk_held]] for c in self._clutch)))))
        # free: (dof, proximal joint, breakaway torque (N m)) and the row's index among the hard ones
        d_free = brk_d[~brk_held]
        S.brk_free = list(zip(d_free.tolist(), self._clutch[0][d_free].tolist(),
                              self.ds.breakaway_torque[d_free].astype(float).tolist()))
        S.brk_free_hard = (np.cumsum(S.c_hard, dtype=np.int64) - 1)[brk_rows[~brk_held]]
        S.lim_lo, S.lim_hi = js.limits[S.limit_cand, 0], js.limits[S.limit_cand, 1]
        S.lim_tol = np.where(js.kind[S.limit_cand] == 0, REV_LIMIT_TOL, PRI_LIMIT_TOL)
        cache[key] = S
        return S

    @staticmethod
    def _gather(rate_ext: Rows, idx: np.ndarray, coef: np.ndarray, rhs: np.ndarray, comp=None) -> Rows:
        """Rows that are linear combinations sum_m coef[r, m] * (rate row idx[r, m])."""
        bodies, jac = RK.gather(rate_ext.bodies, rate_ext.jac, np.ascontiguousarray(idx, dtype=np.int64),
                                np.ascontiguousarray(coef, dtype=float))
        const = None if rate_ext.const is None else np.einsum("rm,rm->r", coef, rate_ext.const[idx])
        return Rows(bodies, jac, rhs, comp, const)

    def _collision_model(self):
        if self._collision is None:
            from ..collision import CollisionModel
            self._collision = CollisionModel(self.table, threshold=self.threshold)
        return self._collision

    def _find_contacts(self, X: np.ndarray):
        if not self._collisions_on:
            return None
        pairs = self._active_pairs() if self._bodies_asleep else None
        cs = self._collision_model().contacts(X, pairs, max_region_points=self.max_region_points)
        return cs if len(cs) else None

    def _first_impact_fraction(self, s: SimState, c1, q1, h, X1, kin_from=(), X0=None):
        """Step 3 (contacts): the largest fraction of the move with no new interpenetration, the
        first contact localised by bisection (:func:`graspsim.collision.impact.first_impact`).

        Returns ``(fraction, contacts at the trial pose or False)``: when the whole move is taken,
        the contacts at the trial pose are step 4's result too.  ``kin_from``: [(body, its pose at t)]
        of the moving bases (already placed at t + h); ``X0`` the poses at t when known (else computed;
        a moving base's is then replaced in a copy).
        """
        if not (self._collisions_on and len(self.table.collision_pairs)):
            return 1.0, None
        vel = self._vel_buf
        vel[self._vel_rows] = s.v
        if X0 is None or len(X0) == 0:
            X0 = self._poses(s.c, s.q)
        if not kin_from:
            return first_impact(self._collision_model(), X0, X1, vel, self._body_radius, h,
                                lambda f: self._trial_move(s, f * h)[2], self._find_contacts)
        # moving bases: placed at t + h already (_kinematic_velocities); within the move they go
        # there from their pose at t at a constant twist, so the search sees them move (a base that
        # jumps further than the contact band in one step would else pass through what rests on it)
        paths = []
        for b, Xa in kin_from:
            Xb = self._data.X_static[b]
            cL = self._com_L_all[b]
            Ra = Xa[:3, :3]
            # (a base lifted straight up keeps its rotation: no logarithm to take, and one product)
            same = bool((Ra == Xb[:3, :3]).all())
            Rc = np.array(_rotate(Ra, cL))
            ca, cb = Rc + Xa[:3, 3], (Rc if same else np.array(_rotate(Xb[:3, :3], cL))) + Xb[:3, 3]
            w = _ZERO3 if same else spatial.rotation_log(Xb[:3, :3] @ Ra.T)
            vel[b, :3], vel[b, 3:] = (cb - ca) / h, w / h
            X0[b] = Xa
            paths.append((b, Ra, ca, cb - ca, w, cL))

        def move(f):
            X = self._trial_move(s, f * h)[2]
            for b, Ra, ca, dc, w, cL in paths:
                n = float(np.linalg.norm(w))
                R = spatial.rot_axis_angle(w / n, f * n) @ Ra if n > 0 else Ra
                # (the com offset summed left to right: the compiled loop's bisection moves it so too)
                X[b, :3, :3], X[b, :3, 3] = R, ca + f * dc - np.array(_rotate(R, cL))
            return X
        try:
            return first_impact(self._collision_model(), X0, X1, vel, self._body_radius, h, move,
                                self._find_contacts)
        finally:
            for b, *_ in paths:
                vel[b] = 0.0            # (the buffer's other rows: dynamic bodies, rewritten each step)

    @property
    def _body_radius(self) -> tuple[np.ndarray, np.ndarray]:
        """(N,) largest distance (m) of a point of each body's shape from its com, and (N,) the
        bodies' thickness (:func:`graspsim.collision.impact.body_extents`; cached)."""
        r = self.__dict__.get("_radius_cache")
        if r is None:
            from ..collision.impact import body_extents
            r = self.__dict__["_radius_cache"] = body_extents(self.table, self._collision_model().pool)
        return r

    def _limit_fraction(self, s: SimState, h: float) -> float:
        js = self.js
        cand = self._structure(s.broken).limit_cand
        if not len(cand):
            return 1.0

        def excess(f):
            jq = self._trial_move(s, f * h)[9][cand]
            tol = np.where(js.kind[cand] == 0, REV_LIMIT_TOL, PRI_LIMIT_TOL)
            lo, hi = js.limits[cand, 0], js.limits[cand, 1]
            prev = s.joint_q[cand]
            # only joints that were inside the limits and crossed them count (one already beyond is
            # handled by the limit row's error correction)
            over = np.maximum(lo - jq, jq - hi)
            was_in = (prev >= lo - tol) & (prev <= hi + tol)
            return np.max(np.where(was_in, over / tol, -np.inf))

        if excess(1.0) <= 1.0:
            return 1.0
        lo_f, hi_f = 0.0, 1.0
        for _ in range(30):
            mid = 0.5 * (lo_f + hi_f)
            e = excess(mid)
            if e <= 1.0:
                lo_f = mid
                if e >= 0.0:
                    break
            else:
                hi_f = mid
        return lo_f

    def _friction_coefficients(self, contacts, v, com_W) -> np.ndarray:
        if contacts is None:
            return np.zeros(0)
        MS, MK, mat, ma, mb = self._material_lookup(contacts)
        i, j = mat[ma], mat[mb]
        ms, mk = MS[i, j], MK[i, j]
        if np.isnan(ms).any():
            self._missing_friction(contacts, ms)
        # relative speed at the contact point (eq. 13), from the velocities of the previous step
        a, b = contacts.body_a, contacts.body_b
        vt = RK.tangential_speed(self.bodies.slot[a], self.bodies.slot[b], v, com_W[a], com_W[b], contacts.point,
                                 contacts.normal)
        return np.where(vt < self.static_speed, ms, mk)

    def _mu_tables(self) -> tuple:
        """Friction between materials: ``(MS, MK, names, shape_mat, body_mat)``: (M, M) static and
        kinetic coefficients between the M distinct material names (NaN: the pair is missing from
        the world's table), each shape's and each body's material index into ``names``."""
        t = self.__dict__.get("_mu_cache")
        if t is None:
            table = self.world.description.materials
            shape_mats, body_mats = self.table.shape_materials, self.table.materials
            names = sorted(set(shape_mats) | set(body_mats))
            idx = {m: i for i, m in enumerate(names)}
            pair = np.full((len(names), len(names), 2), np.nan)
            for i, x in enumerate(names):
                for j, y in enumerate(names):
                    try:
                        pair[i, j] = table.mu(x, y)
                    except KeyError:
                        pass
            t = (np.ascontiguousarray(pair[..., 0]), np.ascontiguousarray(pair[..., 1]), tuple(names),
                 np.array([idx[m] for m in shape_mats], np.int64), np.array([idx[m] for m in body_mats], np.int64))
            self.__dict__["_mu_cache"] = t
        return t

    def _material_lookup(self, contacts) -> tuple:
        """``(MS, MK, mat, ma, mb)``: the material of contact c's side a is ``mat[ma[c]]`` (an index
        into :meth:`_mu_tables`' names): its shape's material, which a link or object may set per
        shape (``shapes: [{..., material: rubber}]``); its body's where the contacts carry no shapes."""
        MS, MK, _, shape_mat, body_mat = self._mu_tables()
        if contacts is None:
            return MS, MK, body_mat, self._no_contacts[0], self._no_contacts[0]
        if contacts.shape_a is not None:
            c = np.ascontiguousarray
            return MS, MK, shape_mat, c(contacts.shape_a, dtype=np.int64), c(contacts.shape_b, dtype=np.int64)
        ca, cb = self._contact_arrays(contacts)[:2]
        return MS, MK, body_mat, ca, cb

    def _missing_friction(self, contacts, mu: np.ndarray) -> None:
        """Raise the world's error naming the first contact's material pair missing from its
        friction table (``mu`` NaN there)."""
        _, _, names, _, _ = self._mu_tables()
        _, _, mat, ma, mb = self._material_lookup(contacts)
        c = int(np.flatnonzero(np.isnan(mu))[0])
        self.world.description.materials.mu(names[mat[ma[c]]], names[mat[mb[c]]])
        raise SimulationError(f"no friction between {names[mat[ma[c]]]!r} and {names[mat[mb[c]]]!r}")

    def _point_velocity(self, tab_idx, points, v, com_W) -> np.ndarray:
        sl = self.bodies.slot[tab_idx]
        vv = np.concatenate([v, np.zeros((1, 6))])[np.where(sl < 0, len(v), sl)]
        return vv[:, :3] + cross(vv[:, 3:], points - com_W[tab_idx])

    def _external_forces(self) -> np.ndarray:
        """Gravity and applied wrenches (nb, 6); the gyroscopic term is added with the inertias
        (``mass_terms``)."""
        k = self._data.ext.copy()
        k[:, :3] += self.bodies.mass[:, None] * self.gravity
        return k

    def _control(self, cmd: DriveCommand | None, st, jq, rates, rate_ext: Rows, h):
        """Step 7: explicit joint torques (nj,) and the implicit PD drive rows."""
        if cmd is None:
            return np.zeros(len(self.js)), Rows.empty()
        q_ref, qd_ref, tau_ff, kp, kd, effort = command_array(cmd, self.ds.names)
        effort = np.minimum(effort, self.ds.effort)
        tau, act, eps, comp = RK.pd_drives(st.P, jq - self._joint_offsets, rates, q_ref, qd_ref, kp,
                                           kd, tau_ff, effort, st.drive_idx, st.drive_w, h, len(self.js))
        if not len(act):
            return tau, Rows.empty()
        return tau, self._gather(rate_ext, st.drive_idx[act], st.drive_w[act], eps, comp)

    def _viscous_rows(self, rate_ext: Rows, h) -> Rows:
        idx = self._viscous_idx
        if not len(idx):
            return Rows.empty()
        # eq. (14), viscous part, applied implicitly: rate+ + C lambda = 0 with C = 1 / (h c)
        return self._gather(rate_ext, idx[:, None], np.ones((len(idx), 1)), np.zeros(len(idx)),
                            1.0 / (h * self.js.viscous[idx]))

    def _coupling_rows(self, st, rate_ext: Rows, jq, s: SimState, h: float) -> tuple[Rows, Rows]:
        """Coupled joints of one DOF: rate_k - rho rate_0 = 0 (hard rows, rhs = position error); a
        broken-away DOF instead holds its proximal joint where it broke.

        The hold is the non-backdrivable gear, modelled as a stiff implicit spring-damper
        (LOCK_GAIN times the DOF's kp and kd; a soft row like the PD drive's), not a rigid row: with
        a rigid hold, an object wedged between locked links and the palm closes a rigid loop in
        which the contacts' error correction (towards half the contact threshold) cannot be met,
        and the contact compliance alone would set the force (tens of kN for 10 um).  A DOF
        without gains keeps a rigid hold.  Returns (hard rows, soft hold rows)."""
        if not len(st.c_idx):
            return Rows.empty(), Rows.empty()
        jq_ext = np.concatenate([jq, [0.0]])
        err = np.einsum("rm,rm->r", st.c_coef, jq_ext[st.c_idx]) - np.where(st.c_lock, s.lock[st.c_dof], st.c_kappa)
        rows = self._gather(rate_ext, st.c_idx, st.c_coef, err)
        if not st.c_lock.any():
            return rows, Rows.empty()
        soft = ~st.c_hard
        d = st.c_dof[soft]
        cs = LOCK_GAIN * (h * self.ds.kp[d] + self.ds.kd[d])
        hold = rows.select(soft)
        # s+ + C lambda = eps with C = 1 / (h c), eps = k (q_lock - q) / c  (as the PD drive rows)
        hold.rhs = -LOCK_GAIN * self.ds.kp[d] * err[soft] / cs
        hold.comp = 1.0 / (h * cs)
        return rows.select(~soft), hold

    def _limit_rows(self, st, rate_ext: Rows, jq, h) -> Rows:
        cand = st.limit_cand
        if not len(cand):
            return Rows.empty()
        bodies, jac, rhs, joint, sign = RK.limit_rows(cand, st.lim_lo, st.lim_hi, st.lim_tol, jq, rate_ext.bodies,
                                                      rate_ext.jac, self.gamma / h)
        if not len(rhs):
            return Rows.empty()
        # kinematic bodies: the rows' value due to their motion
        const = None if rate_ext.const is None else sign * rate_ext.const[joint]
        return Rows(bodies, jac, rhs, None, const)

    def _contact_rows(self, contacts, com_W, h, V=None) -> tuple[Rows, Rows]:
        """Normal rows (eq. 3; error correction of eq. 19 towards half the threshold) and ``u``
        friction-direction rows per contact (eq. 4), contact-major."""
        if contacts is None:
            return Rows.empty(), Rows.empty()
        slot = self.bodies.slot
        a, b = contacts.body_a, contacts.body_b
        nb_, nj, nrhs, fb, fj = RK.contact_rows(slot[a], slot[b], com_W[a], com_W[b], contacts.point, contacts.normal,
                                               contacts.tangent1, contacts.tangent2, contacts.separation,
                                               0.5 * self.threshold, self.gamma / h, self.u)
        normals, frictions = Rows(nb_, nj, nrhs), Rows(fb, fj, np.zeros(len(fb)))
        if V is not None:
            rep = np.repeat(np.arange(len(a)), self.u)
            normals.const = np.einsum("kc,kc->k", nj[:, 0], V[a]) + np.einsum("kc,kc->k", nj[:, 1], V[b])
            frictions.const = np.einsum("kc,kc->k", fj[:, 0], V[a[rep]]) + np.einsum("kc,kc->k", fj[:, 1], V[b[rep]])
        return normals, frictions

    def _restitution_bias(self, contacts, v, com_W) -> np.ndarray:
        """Newton restitution: an impact faster than ``restitution_speed`` must separate at e times its
        approach speed (w = n.v+ + b >= 0 with b = e v_n-, v_n- < 0); e from the material table."""
        vn = np.einsum("ki,ki->k", self._point_velocity(contacts.body_b, contacts.point, v, com_W) -
                       self._point_velocity(contacts.body_a, contacts.point, v, com_W), contacts.normal)
        table = self.world.description.materials
        _, _, names, _, _ = self._mu_tables()
        _, _, mat, ma, mb = self._material_lookup(contacts)
        e = np.array([table.restitution_of(names[mat[a]], names[mat[b]]) for a, b in zip(ma, mb)])
        return np.where(vn < -self.restitution_speed, e * vn, 0.0)

    def _matched_warm(self, contacts, cidx=None, nlim: int = 0, radius: float = MATCH_RADIUS):
        """A warm-start guess for an island whose contacts differ from last step's: each contact takes
        the LCP flags of last step's nearest contact between the same two bodies within ``radius`` (m),
        a new contact none (its w's basic), a joint limit none.  None when nothing matches.  Lemke
        verifies whatever it is given, so a poor guess costs time, never correctness.

        With ``cidx`` None: what to match against (last step's contacts and flags, see
        ``SimData.cwarm``), or None; the compiled solver matches them itself."""
        if self._data.cwarm is None or cidx is None:
            return self._data.cwarm
        pa, pb, pp, pf = self._data.cwarm
        g = IK._matched(pa, pb, pp, pf, contacts.body_a, contacts.body_b, np.ascontiguousarray(contacts.point),
                        np.asarray(cidx, np.int64), nlim, self.u, radius)
        return g if len(g) else None

    def _islands(self, contacts):
        """Step 9: islands = joint components merged by contacts between two dynamic bodies."""
        if contacts is None:
            sa = sb = np.zeros(0, np.int64)
        else:
            sa, sb = self.bodies.slot[contacts.body_a], self.bodies.slot[contacts.body_b]
        return RK.islands(self._comp, int(self._ncomp), sa, sb)

    def _describe_island(self, labels, isl: int) -> str:
        slots = np.flatnonzero(labels == isl)
        return f"island {isl} with bodies {', '.join(self.table.names[self.bodies.table_index[x]] for x in slots)}"

    def _solve_islands(self, labels, n_isl, Minv, a_over_M, asm: "_Assembly", contacts):
        """Step 10 for every island, in one compiled call (``_island_kernel.solve_islands``); rows
        grouped by (island, kind) keeping their order, so friction rows stay contact-major and
        equality rows hard-before-soft."""
        if self._lemke is not None:
            return self._solve_islands_reference(labels, n_isl, Minv, a_over_M, asm, contacts)
        allr, sizes, hard_err, mu = asm.rows, asm.sizes, asm.hard_err, asm.mu
        d = self._data
        ca, cb, cp, cn, t1, t2, _ = asm.carr
        prev = self._matched_warm(contacts)
        if prev is None:
            prev = self._no_prev
        (status, bad, m, piv, v_new, impulses, hard_impulse, dx, cflags, sizes_isl, pivots,
         *table) = IK.solve_islands(labels, n_isl, Minv, a_over_M, np.ascontiguousarray(allr.bodies),
                                    np.ascontiguousarray(allr.jac), np.ascontiguousarray(allr.rhs, dtype=float),
                                    allr.compliance(), sizes, np.ascontiguousarray(hard_err, dtype=float), mu,
                                    ca, cb, cp, cn, t1, t2, self.u, self.contact_compliance, self.project_joints,
                                    self.state.steps % 50 == 0, *d.table(), *prev, True, MATCH_RADIUS)
        d.set_table(*table)
        if status != IK.OK:
            raise SimulationError(
                f"the contact LCP could not be solved ({self._describe_island(labels, bad)}; LCP size {m}, no "
                f"verified solution after {piv} pivots, also with contact compliance up to "
                f"{self.contact_compliance * 1e4:.1e} and a diagonal regularisation)")
        d.cwarm = None if contacts is None or not len(contacts) else (ca, cb, cp, cflags)
        info = {"lcp_sizes": [m_ for m_ in sizes_isl.tolist() if m_ > 0], "pivots": int(pivots),
                "hard_impulse": hard_impulse, "dx": dx}
        return v_new, impulses, info

    def _solve_islands_reference(self, labels, n_isl, Minv, a_over_M, asm: "_Assembly", contacts):
        """Step 10 island by island with the numpy reference of :mod:`graspsim.dynamics.island` and
        the LCP solver given as ``lemke`` (same warm-start table as the compiled path)."""
        nb = len(self.bodies)
        v_new = np.empty_like(a_over_M)
        allr, sizes, hard_err, mu = asm.rows, asm.sizes, asm.hard_err, asm.mu
        row_order, rb = IK.partition_rows(np.ascontiguousarray(allr.bodies), labels, sizes, n_isl)
        off_n = sizes[0] + sizes[1] + sizes[2]
        impulses = np.zeros((sizes[3], 3))
        hard_impulse = np.zeros(sizes[0])
        dx = np.zeros((nb, 6))
        lcp_sizes, pivots = [], 0
        cflags = np.zeros((0 if contacts is None else len(contacts), self.u + 2), np.bool_)
        order = np.argsort(labels, kind="stable")
        bounds = np.searchsorted(labels[order], np.arange(n_isl + 1))
        d = self._data
        for isl in range(n_isl):
            slots = order[bounds[isl]:bounds[isl + 1]]
            r0 = rb[5 * isl]
            if rb[5 * isl + 5] == r0:
                v_new[slots] = a_over_M[slots]            # eq. (15): a free body
                continue
            rows = [row_order[rb[5 * isl + j]:rb[5 * isl + j + 1]] for j in range(5)]
            e_rows, n_h = np.concatenate([rows[0], rows[1]]), len(rows[0])
            cidx = rows[3] - off_n
            key = IK.island_key(slots, len(rows[2]), len(cidx))
            lkey = IK.island_key(slots, -1, -1)
            level = int(IK.level_get(d.keys, d.used, d.ta, lkey))
            warm = IK.warm_get(d.keys, d.used, d.ta, d.tb, d.store, key)
            warm = warm if len(warm) else (self._matched_warm(contacts, cidx, len(rows[2])) if len(cidx) else None)
            describe = lambda: self._describe_island(labels, isl)
            Je = allr.select(e_rows).dense(slots, nb)
            lim_r, nrm_r = allr.select(rows[2]), allr.select(rows[3])
            Hl = np.concatenate([lim_r.dense(slots, nb), nrm_r.dense(slots, nb)], 1)
            D = allr.select(rows[4]).dense(slots, nb) if len(rows[4]) else np.zeros((6 * len(slots), 0))
            prob = IslandProblem(slots, Minv[slots], a_over_M[slots].reshape(-1), Je, allr.rhs[e_rows],
                                 allr.compliance()[e_rows], Hl, np.concatenate([lim_r.rhs, nrm_r.rhs]),
                                 len(lim_r), D, mu[cidx], self.u, self.contact_compliance)
            sol = solve_island(prob, lemke=self._lemke, warm_start=warm, first_level=level, describe=describe,
                               friction_cones=self._lemke_cones)
            v_out, ce, z, m, piv, lv = sol.v, sol.c_e, sol.z, sol.lcp_size, sol.pivots, getattr(sol, "level", 0)
            basis = getattr(sol, "basis", None)
            err = hard_err[rows[0]]
            if self.project_joints and n_h and np.max(np.abs(err)) > 1e-13:
                dx[slots] = project_positions(Minv[slots], Je, allr.compliance()[e_rows], err).reshape(-1, 6)
            if m:
                lv = lv if lv > level else max(0, level - (self.state.steps % 50 == 0))
                b = np.zeros(m, np.bool_) if basis is None else np.asarray(basis, np.bool_)
                d.set_table(*IK.table_put(d.keys, d.used, d.ta, d.tb, d.store, d.meta, key, b, lkey, lv))
                if len(cidx) and basis is not None:
                    k, nl = len(cidx), len(rows[2])
                    cflags[cidx, 0] = basis[nl:nl + k]
                    cflags[cidx, 1:1 + self.u] = basis[nl + k:nl + k + k * self.u].reshape(k, self.u)
                    cflags[cidx, 1 + self.u] = basis[nl + k + k * self.u:nl + 2 * k + k * self.u]
                lcp_sizes.append(m)
                pivots += piv
            v_new[slots] = v_out.reshape(-1, 6)
            if m and len(cidx):
                k, nl, u = len(cidx), len(rows[2]), self.u
                ang = 2.0 * np.pi * np.arange(u) / u
                beta = z[nl + k:nl + k + k * u].reshape(k, u)
                impulses[cidx] = (z[nl:nl + k, None] * contacts.normal[cidx] + (beta @ np.cos(ang))[:, None]
                                  * contacts.tangent1[cidx] + (beta @ np.sin(ang))[:, None] * contacts.tangent2[cidx])
            hard_impulse[rows[0]] = ce[:n_h]
        d.cwarm = None if contacts is None or not len(contacts) else (
            contacts.body_a, contacts.body_b, np.ascontiguousarray(contacts.point), cflags)
        info = {"lcp_sizes": lcp_sizes, "pivots": pivots, "hard_impulse": hard_impulse, "dx": dx}
        return v_new, impulses, info

    def _update_breakaway(self, st, hard_coupling_impulse: np.ndarray, h, jq, cmd, broken, lock) -> None:
        """A breakaway DOF's coupling gives way when it transmits more than the breakaway torque; it
        re-couples when the DOF is commanded open and the distal is back at its coupled angle.
        ``hard_coupling_impulse``: impulses (N m s) of the hard coupling rows, in ``st.c_idx`` order.
        Updates ``broken`` and ``lock`` (the new state's copies) in place; the index arrays are
        ``_structure``'s (built once per broken pattern)."""
        # a few DOFs at most: Python floats, the same IEEE operations in the same order as numpy's
        if cmd is not None and st.brk_held:
            qd_ref = np.asarray(cmd.qd_ref, dtype=float)
            for d, prox, dist, rho, off0, off1 in st.brk_held:
                if qd_ref[d] < 0 and jq[dist] <= rho * jq[prox] + off1 - rho * off0:
                    broken[d] = False
        if st.brk_free:    # coupled DOFs: a free coupling row is hard (see _structure)
            imp = hard_coupling_impulse[st.brk_free_hard].tolist()
            for (d, prox, torque), x in zip(st.brk_free, imp):
                if abs(x) / h > torque:
                    broken[d] = True
                    lock[d] = jq[prox]

"""Checks of what enters the simulator: numbers, vectors, controller commands and restored states.

Each check raises ValueError naming what is wrong (or returns the problem in words), so that the
simulator refuses bad input before anything changes.  Bounds (SI units):

* ``MIN_DT``, ``MAX_DT``: a step in [1 ps, 1 s];
* a restored state: finite entries, quaternions within :data:`graspsim.spatial.UNIT_QUAT_TOL` of
  unit, joint values within ``JOINT_MAX`` that fit the poses to ``JOINT_STATE_TOL`` (a revolute
  joint modulo 2 pi), links that hold together to ``JOINT_STATE_TOL``;
* a controller command: finite targets, rates, feed-forward and gains; gains and efforts >= 0.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import spatial
from ..arguments import real
from ..world import MAX_JOINT_VALUE
from . import _rows_kernel as RK
from .joints import row_template

if TYPE_CHECKING:
    from .simulator import SimState, Simulator

#: the longest step (s): a rigid-body step of more than a second is a unit mistake (ms?), not a step
MAX_DT = 1.0
#: the shortest step (s): 1 ps, the smallest remainder callers use to land on a time grid; below it
#: the implicit rows' compliance 1 / (h c) heads for overflow (1e-300 s: 1e302) and no contact
#: dynamics is resolved anyway
MIN_DT = 1e-12
#: a restored state's joint values must agree with its poses to this (rad or m; a revolute joint
#: modulo 2 pi), and its joints hold together to this; steps keep both below 1e-5 (measured: a
#: Puma + Barrett grasp and lift of the handset, 4e-6 and 1e-12)
JOINT_STATE_TOL = 1e-2
#: largest joint value (rad or m), as the world's setters: beyond it the unwrapping of revolute
#: joints (modulo 2 pi) loses its precision and no prismatic joint is that long
JOINT_MAX = MAX_JOINT_VALUE


def number(name: str, value, lo: float, hi: float, *, open_low: bool = False) -> float:
    """``value`` as a finite float in [lo, hi] ((lo, hi] with ``open_low``); ValueError naming ``name``."""
    x = real(name, value)
    if not (math.isfinite(x) and (lo < x <= hi if open_low else lo <= x <= hi)):
        rng = f"{'>' if open_low else '>='} {lo:g}" + ("" if hi == np.inf else f" and <= {hi:g}")
        raise ValueError(f"{name} must be finite, {rng}, got {value!r}")
    return x


vector = spatial.finite_vector      # (name, value, n): a new float (n,) array of finite numbers


#: DriveCommand fields in the order of the rows command_array returns
CMD_FIELDS = ("q_ref", "qd_ref", "tau_ff", "kp", "kd", "effort")


def controller(ctl) -> None:
    """ValueError unless ``ctl`` is None or has a ``command(sim)`` method (checked before a step
    calls it: a controller of the wrong kind is named, not met as an AttributeError mid-run)."""
    if ctl is not None and not callable(getattr(ctl, "command", None)):
        raise ValueError("controller must be None or an object with a command(sim) method returning a "
                         f"DriveCommand (a PDController, for one), got {type(ctl).__name__}")


def command_array(cmd, dof_names: tuple) -> np.ndarray:
    """The controller's command as one (6, nd) float array, rows in CMD_FIELDS order; ValueError
    naming the field and DOF unless q_ref, qd_ref, tau_ff, kp, kd are finite and kp, kd, effort
    >= 0 (effort may be inf).  One stacked array: a few numpy calls per step, not one per field."""
    nd = len(dof_names)
    pre = getattr(cmd, "_rows", None)       # DriveCommand.from_rows/torques: stacked (and checked)
    if pre is not None:
        (a, b, c, d, e, f), A, ok = pre
        if (cmd.q_ref is a and cmd.qd_ref is b and cmd.tau_ff is c and cmd.kp is d and cmd.kd is e
                and cmd.effort is f and A.shape == (6, nd)):
            if not (RK.command_ok(A) if ok is None else ok):
                _command_problem(cmd, dof_names)
            return A
    try:
        A = np.array((cmd.q_ref, cmd.qd_ref, cmd.tau_ff, cmd.kp, cmd.kd, cmd.effort), dtype=np.float64)
    except (AttributeError, TypeError, ValueError):
        A = None
    if A is None or A.shape != (6, nd):
        _command_problem(cmd, dof_names)
    if not RK.command_ok(A):                # one compiled pass
        _command_problem(cmd, dof_names)
    return A


def _command_problem(cmd, dof_names: tuple) -> None:
    """Raise the ValueError that names what is wrong with a command (the slow path of command_array)."""
    nd = len(dof_names)
    # tau_ff first: a torque command of the wrong length (DriveCommand.torques) is named by its torques
    for n in ("tau_ff",) + tuple(f for f in CMD_FIELDS if f != "tau_ff"):
        try:
            a = np.asarray(getattr(cmd, n), dtype=np.float64)
        except AttributeError:
            raise ValueError(f"a controller's command must be a DriveCommand, got {type(cmd).__name__}") from None
        except (TypeError, ValueError):
            raise ValueError(f"controller command: {n} must be {nd} numbers, got {getattr(cmd, n)!r}") from None
        if a.shape != (nd,):
            raise ValueError(f"controller command: {n} must have shape ({nd},) (the DOFs {list(dof_names)}), "
                             f"got {a.shape}")
        ok = (a >= 0) if n == "effort" else np.isfinite(a) & ((a >= 0) | (n not in ("kp", "kd")))
        if not ok.all():
            k = int(np.flatnonzero(~ok)[0])
            need = {"kp": "finite and >= 0", "kd": "finite and >= 0", "effort": ">= 0"}.get(n, "finite")
            raise ValueError(f"controller command: {n} of DOF '{dof_names[k]}' must be {need}, got {a[k]}")
    # not reached: every way command_array's fast check fails is one of the problems above
    raise AssertionError(f"command refused without a named problem: {cmd!r}")


def state_problem(sim: Simulator, st, X_static: np.ndarray | None = None) -> str | None:
    """What makes ``st`` unfit for simulator ``sim`` (see Simulator.restore_state), or None; its
    joints checked against the static poses ``X_static`` (N, 4, 4) (default: the simulator's now)."""
    from .simulator import SimState

    if not isinstance(st, SimState):
        return f"a state must be a SimState (from save_state), got {type(st).__name__}"
    nb, nj, nd = len(sim.bodies), len(sim.js), len(sim.ds)
    try:
        t = float(st.time)
    except (TypeError, ValueError):
        return f"time must be a number, got {st.time!r}"
    if not np.isfinite(t):
        return f"time must be finite, got {t}"
    if not isinstance(st.steps, (int, np.integer)) or st.steps < 0:
        return f"steps must be a whole number >= 0, got {st.steps!r}"
    names = [sim.table.names[i] for i in sim.bodies.table_index]
    for fld, shape, unit in (("c", (nb, 3), "m"), ("q", (nb, 4), ""), ("v", (nb, 6), "m/s, rad/s"),
                             ("joint_q", (nj,), "rad or m"), ("lock", (nd,), "rad or m"), ("broken", (nd,), "")):
        try:
            a = np.asarray(getattr(st, fld), dtype=bool if fld == "broken" else float)
        except (TypeError, ValueError):
            return f"{fld} must be an array of numbers, got {getattr(st, fld)!r}"
        if a.shape != shape:
            return f"{fld} must have shape {shape} for this simulator, got {a.shape}"
        if fld == "broken":
            continue
        fin = np.isfinite(a)
        bad = np.flatnonzero(~(fin.all(axis=1) if a.ndim == 2 else fin))
        if len(bad):
            k = int(bad[0])
            who = (f"joint '{sim.js.names[k]}'" if fld == "joint_q" else f"DOF '{sim.ds.names[k]}'"
                   if fld == "lock" else f"body '{names[k]}'")
            return f"{fld} of {who} must be finite" + (f" ({unit})" if unit else "") + f", got {a[k].tolist()}"
    bad = spatial.unit_quat_problems(st.q)
    if bad:
        return f"q of body '{names[bad[0][0]]}': {bad[0][1]}"
    return _joint_problem(sim, st, X_static)


def _joint_problem(sim: Simulator, st: SimState, X_static: np.ndarray | None) -> str | None:
    """Joint values and joints of a (finite, unit-quaternion) state that do not fit its poses (the
    static bodies at ``X_static``; None: where they are now)."""
    js, ds = sim.js, sim.ds
    jq0 = np.array(st.joint_q, dtype=float, order="C")
    lock, broken = np.asarray(st.lock, dtype=float), np.asarray(st.broken, dtype=bool)
    for fld, a in (("joint_q", jq0), ("lock", lock)):
        if len(a) and np.abs(a).max() > JOINT_MAX:
            k = int(np.argmax(np.abs(a)))
            who = f"joint '{js.names[k]}'" if fld == "joint_q" else f"DOF '{ds.names[k]}'"
            return f"{fld} of {who} is {a[k]:.6g}, beyond +-{JOINT_MAX:g} (rad or m)"
    if not len(jq0):
        return None
    q = np.asarray(st.q, dtype=float)
    X = sim._poses(np.array(st.c, dtype=float, order="C"),
                   np.ascontiguousarray(q / np.linalg.norm(q, axis=1, keepdims=True)), X_static)
    F, jq = sim._joint_state(X, jq0)     # unwrapped against jq0: a revolute joint compares modulo 2 pi
    d = np.abs(jq - jq0)
    k = int(np.argmax(d))
    if d[k] > JOINT_STATE_TOL:
        return (f"joint_q of joint '{js.names[k]}' is {jq0[k]:.9g} but the poses put it at {jq[k]:.9g} "
                f"(rad or m; to {JOINT_STATE_TOL:g}, a revolute joint modulo 2 pi)")
    rj, rt, rk = row_template(js)
    _, _, err, keep = RK.equality_rows(rj, rt, rk, js.kind, js.parent, js.child, js.axis, sim.bodies.slot,
                                       sim._com_world(X), F.o, F.o_c, F.R, F.R_c, F.axis, F.perp)
    e = np.where(keep, np.abs(err), 0.0)
    if len(e) and e.max() > JOINT_STATE_TOL:
        r = int(np.argmax(e))
        return (f"the poses pull joint '{js.names[rj[r]]}' apart by {e[r]:.3g} (m or rad; more than "
                f"{JOINT_STATE_TOL:g}): c and q of its links do not fit together")
    # a broken-away DOF holds its proximal joint where it broke: inside the joint's range
    for d_ in np.flatnonzero(broken):
        lo, hi = js.limits[ds.joints[d_][0]]
        if not lo - JOINT_STATE_TOL <= lock[d_] <= hi + JOINT_STATE_TOL:
            return (f"lock of broken-away DOF '{ds.names[d_]}' is {lock[d_]:.6g}, outside its proximal "
                    f"joint's range [{lo:.6g}, {hi:.6g}]")
    return None


def checked_state(sim: Simulator, st, X_static: np.ndarray | None = None) -> SimState:
    """A new SimState from ``st`` for ``sim``: checked (ValueError naming the problem; its joints
    against the static poses ``X_static``, default the simulator's now), quaternions renormalised,
    arrays C-contiguous floats."""
    from .simulator import SimState

    problem = state_problem(sim, st, X_static)
    if problem is not None:
        raise ValueError(f"restore_state: {problem}; the state is unchanged")
    q = np.array(st.q, dtype=float, order="C")
    n = np.sqrt(np.einsum("ij,ij->i", q, q))
    off = np.abs(n - 1.0) > 1e-12          # unit to rounding: kept bit for bit (exact replay)
    q[off] /= n[off, None]
    f = lambda a: np.array(a, dtype=float, order="C")     # new arrays, laid out as the kernels take
    return SimState(float(st.time), f(st.c), q, f(st.v), f(st.joint_q), np.array(st.broken, dtype=bool),
                    f(st.lock), int(st.steps))


def checked_data(sim: Simulator, data) -> "SimData":
    """A deep copy of the data block ``data`` (a state's ``data``, see SimData) for ``sim``;
    ValueError naming the field unless its static poses are (N, 4, 4) finite rigid transforms, its
    pending wrenches (nb, 6) finite, its warm-start table consistent (see SimData), and its
    matched-contact cache None or four arrays of one length."""
    from .simulator import SimData

    def bad(what: str):
        return ValueError(f"restore_state: data.{what}; the state is unchanged")

    if not isinstance(data, SimData):
        raise bad(f"must be a SimData (from save_state), got {type(data).__name__}")
    N, nb = len(sim.table), len(sim.bodies)
    X = np.asarray(data.X_static, dtype=float)
    if X.shape != (N, 4, 4):
        raise bad(f"X_static must have shape {(N, 4, 4)}, got {X.shape}")
    for i in range(N):
        try:
            spatial.check_rigid(X[i], f"X_static of body '{sim.table.names[i]}'")
        except ValueError as e:
            raise bad(str(e)) from None
    ext = np.asarray(data.ext, dtype=float)
    if ext.shape != (nb, 6) or not np.isfinite(ext).all():
        raise bad(f"ext must be {(nb, 6)} finite numbers (N, N m), got shape {ext.shape}")
    cap = np.asarray(data.keys).shape[0] if isinstance(data.keys, np.ndarray) else 0
    arrays = {"keys": (np.int64, (cap,)), "used": (np.bool_, (cap,)), "ta": (np.int64, (cap,)),
              "tb": (np.int64, (cap,)), "store": (np.bool_, None), "meta": (np.int64, (2,))}
    for name, (dt, shape) in arrays.items():
        a = getattr(data, name)
        if not (isinstance(a, np.ndarray) and a.dtype == dt and a.ndim == 1 and (shape is None or a.shape == shape)):
            raise bad(f"{name} must be a {np.dtype(dt).name} array" + (f" of shape {shape}" if shape else ""))
    if cap < 2 or cap & (cap - 1) or 2 * data.used.sum() > cap or data.meta[0] != data.used.sum() \
            or not 0 <= data.meta[1] <= len(data.store) \
            or np.any(data.used & (data.tb >= 0) & ((data.ta < 0) | (data.ta + data.tb > data.meta[1]))):
        raise bad("the warm-start table (keys, used, ta, tb, store, meta) is inconsistent")
    cw = data.cwarm
    if cw is not None and not (isinstance(cw, tuple) and len(cw) == 4 and all(isinstance(a, np.ndarray) for a in cw)
                               and len({len(a) for a in cw}) == 1):
        raise bad("cwarm must be None or four arrays of one length (body_a, body_b, point, flags)")
    cuts = getattr(data, "cuts", None)
    if not (isinstance(cuts, list) and len(cuts) == 2 and isinstance(cuts[0], int) and cuts[0] >= 0
            and isinstance(cuts[1], float) and math.isfinite(cuts[1])):
        raise bad("cuts must be [consecutive cut steps (int >= 0), their start time (finite s)]")
    _check_sleep(sim, data, bad)
    out = data.copy()
    out.X_static = np.array(X, dtype=float, order="C")
    out.ext = np.array(ext, dtype=float, order="C")
    return out


def _check_sleep(sim: Simulator, data, bad) -> None:
    """The data block's sleep fields (SimData ``rest`` and ``asleep``): ValueError via ``bad``."""
    from .sleep import Asleep

    nb, nj, nd = len(sim.bodies), len(sim.js), len(sim.ds)

    def array(a, shape, dtype=np.float64) -> bool:
        return (isinstance(a, np.ndarray) and a.dtype == dtype and a.shape == shape
                and (dtype != np.float64 or bool(np.isfinite(a).all())))

    def impulses(a) -> bool:
        return isinstance(a, np.ndarray) and a.ndim == 2 and array(a, (len(a), 3))

    def command(a) -> bool:          # a stacked command: its effort row may be inf (command_array's rule)
        return (isinstance(a, np.ndarray) and a.dtype == np.float64 and a.shape == (6, nd)
                and bool(RK.command_ok(a)))

    rest = getattr(data, "rest", None)
    if not (isinstance(rest, list) and len(rest) == 3 and isinstance(rest[0], float) and math.isfinite(rest[0])
            and rest[0] >= 0 and (rest[1] is None or command(rest[1]))
            and (rest[2] is None or impulses(rest[2]))):
        raise bad(f"rest must be [seconds at rest (finite float >= 0), the last command ((6, {nd}) floats: "
                  f"q_ref, qd_ref, tau_ff, kp, kd finite, kp, kd, effort >= 0) or None, the last contact "
                  f"impulses ((k, 3) finite floats) or None]")
    _check_sleeping_objects(sim, data, bad, array)
    a = getattr(data, "asleep", None)
    if a is None:
        return
    if not isinstance(a, Asleep):
        raise bad(f"asleep must be None or a graspsim.dynamics.sleep.Asleep, got {type(a).__name__}")
    shapes = {"c": (nb, 3), "q": (nb, 4), "joint_q": (nj,), "lock": (nd,)}
    for name, shape in shapes.items():
        if not array(getattr(a, name), shape):
            raise bad(f"asleep.{name} must be {shape} finite floats")
    if not array(a.broken, (nd,), np.bool_):
        raise bad(f"asleep.broken must be ({nd},) bools")
    if not (a.command is None or command(a.command)):
        raise bad(f"asleep.command must be None or a (6, {nd}) stacked command (effort may be inf)")
    k = 0 if a.contacts is None else len(a.contacts)
    if not (impulses(a.impulse) and len(a.impulse) == k):
        raise bad(f"asleep.impulse must be ({k}, 3) finite floats (one row per contact)")
    if not isinstance(a.key, tuple):
        raise bad("asleep.key must be the simulator parameters' tuple")


def _check_sleeping_objects(sim: Simulator, data, bad, array) -> None:
    """The data block's fields of objects asleep on their own (SimData ``bodies_*``)."""
    from ..collision.model import ContactSet

    nb = len(sim.bodies)
    if not (array(data.bodies_rest, (nb,)) and bool((data.bodies_rest >= 0).all())):
        raise bad(f"bodies_rest must be ({nb},) finite floats >= 0 (s)")
    g = data.bodies_group
    if not (array(g, (nb,), np.int64) and bool((g >= 0).all()) and bool((g <= nb).all())):
        raise bad(f"bodies_group must be ({nb},) int64 group ids in [0, {nb}]")
    if bool((g[~sim._is_object] > 0).any()):
        raise bad("bodies_group: only objects sleep on their own (a robot link sleeps with the world)")
    if not array(data.bodies_pose, (nb, 7)):
        raise bad(f"bodies_pose must be ({nb}, 7) finite floats [c, q]")
    if g.any() and not isinstance(data.bodies_key, tuple):
        raise bad("bodies_key must be the parameters' tuple while objects sleep")
    bc = data.bodies_contacts
    if bc is not None and not (isinstance(bc, tuple) and len(bc) == 2 and isinstance(bc[0], ContactSet)
                               and isinstance(bc[1], np.ndarray) and bc[1].shape == (len(bc[0]), 3)
                               and bool(np.isfinite(bc[1]).all())):
        raise bad("bodies_contacts must be None or (ContactSet, (k, 3) finite forces)")

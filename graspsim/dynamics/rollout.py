"""Many steps in one compiled call: the loop of :meth:`graspsim.Simulator.rollout` (issue 18).

``_step_kernel.rollout_steps`` runs the common path of ``Simulator.step`` -- with a compiled PD
controller or none (:class:`NoController`), the world awake, moving bases only along a
``QuinticBaseMotion`` (which it evaluates itself) -- for as many steps as it can, each computed by
the same kernels in the same order as the Python path (reached through their machine-code
addresses, :mod:`graspsim._native`) and committed the same way, with no Python, no argument
passing and no boxing between the steps.  Before any other step it stops, with the state and the
warm-start table as they were, and this module runs that step through ``Simulator.step`` (which
decides, cuts, raises or puts things to sleep as always), then goes on.  Sleeping objects stay
asleep in the loop (their pairs with static and sleeping bodies left out of the contact search, as
in ``step``); one touched or moved in place is ``step``'s.  The pairs the impact screen cannot
clear get the impact search's compiled checks (``_step_kernel.fast_pairs_clear``), and a first
contact they find is localised in the loop as ``impact._localize`` does (through the model's
compiled queries, or the exact kernel's view of pairs it saw overlap: a cut step); only a step
that needs FCL leaves.  So a rollout's states are those of the same number
of ``step`` calls, bit for bit (``tests/test_rollout.py``, ``tests/test_compiled_rollout.py``).
"""
from __future__ import annotations

from collections import Counter

import numpy as np
from numba import typeof

from .._flat import flatten
from .._native import available, native_entry_types, register, return_type
from ..collision import _impact_kernel as IMP
from ..collision import _simplify_kernel as SIMP
from ..collision import _intersect_kernel as IX
from ..collision import kernels as CK
from ..collision.impact import body_boxes
from ..collision.model import MAX_THRESHOLD, _contact_set
from ..control.pd import CompiledPD
from ..spatial import RIGID_TOL
from . import _island_kernel as IK
from . import _rows_kernel as RK
from . import _step_kernel as SK
from .simulator import (H_FLOOR, LOCK_GAIN, MATCH_RADIUS, STAGED_STEPS, STALL_ADVANCE, STALL_STEPS, SimState,
                        StepInfo)
from .sleep import ANGULAR_LENGTH, IMPULSE_RTOL, ROOT3

_KERNELS = {"trial_move": RK.trial_move, "screen_pairs": IMP.screen_pairs, "shape_frames": CK.shape_frames,
            "contacts_kernel": CK.contacts_kernel, "limit_regions_in_place": SIMP.limit_regions_in_place,
            "pd_command": RK.pd_command, "assemble": RK.assemble, "islands": RK.islands,
            "mass_terms": RK.mass_terms, "solve_islands": IK.solve_islands, "finish": RK.finish,
            "all_finite": RK.all_finite, "meeting_pairs": IX.meeting_pairs, "overlap_status": IMP.overlap_status,
            "joint_rates": RK.joint_rates}
for _n, _k in _KERNELS.items():
    register(_n, _k)

_NAMES = ("trial_move", "screen_pairs", "shape_frames", "contacts_kernel", "limit_regions_in_place", "pd_command",
          "assemble", "islands", "mass_terms", "solve_islands", "finish", "all_finite", "meeting_pairs",
          "overlap_status", "joint_rates")
#: the kernels' addresses in this process by their argument types (the loop's, per simulator layout)
_ADDRESSES: dict = {}
#: the same by the arguments' _type_key; whether rollout_steps is compiled for them
_RESOLVED: dict = {}
_AVAILABLE: dict = {}


def _type_key(x):
    """What numba's type of ``x`` depends on (nested tuples; arrays by dtype, dimensions, layout,
    writeability and alignment; other values by Python type), at a fraction of typeof's cost."""
    if type(x) is tuple:
        return tuple(_type_key(y) for y in x)
    if type(x) is np.ndarray:
        f = x.flags
        return (x.dtype.str, x.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
    return type(x)


#: steps this process's rollouts took through step(); with ``Simulator(compiled_loop=None)`` (the
#: default) the loop is compiled once they reach LOOP_AFTER (about 11 s of compile on a cold cache
#: against ~0.1-0.25 ms saved per step), and used at once when compiled or in numba's cache already
STEPPED = [0]
LOOP_AFTER = 20_000
#: step() uses a loop that is not loaded in this process yet (numba's cache: ~0.1 s to load) once
#: the process took LOAD_AFTER steps through the stages (~35 us a step less then: a short script of
#: step() calls would not get the load back); rollout() and run() load it at once
LOAD_AFTER = 2_000
#: the loops' constant layouts (FlatSpec texts) loaded or compiled in this process
_LOADED: set = set()
#: why this process's loops stopped before their last step (``_step_kernel.W_*`` codes; 0: not
#: stopped) -- for benchmarks: ``reasons()``
LEFT: Counter = Counter()


def reasons() -> dict:
    """This process's loop stops by reason name (see ``_step_kernel``'s ``W_*`` codes)."""
    names = {getattr(SK, n): n[2:].lower() for n in dir(SK) if n.startswith("W_") and n != "W_COLLIDE"}
    for n in ("CROSSED", "SCREEN", "BAD_POSE", "OVERFLOW", "DEEP", "SCREEN_CUT"):
        names[SK.W_COLLIDE + getattr(SK, n)] = n.lower()
    return {names.get(k, str(k)): v for k, v in LEFT.items() if k}

_F = typeof(0.0)
_I = typeof(0)
_B = typeof(True)


class NoController:
    """The loop's controller for a rollout without one (``SK.CMD_NONE``: no command, as
    ``step(None)``): placeholder PD arrays of the compiled PD's types (one compiled loop for both)."""

    mode = SK.CMD_NONE

    def __init__(self, nd: int):
        self.kp = self.kd = self.effort = np.zeros(nd)
        self._refs = (np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(nd), np.zeros(nd),
                      np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(0), np.zeros((0, 1)))


class GivenCommand(NoController):
    """The loop's controller for :meth:`Simulator.step` with a Python controller (``SK.CMD_GIVEN``):
    the command array the controller gave is passed with the call; the PD arrays are placeholders
    of the compiled PD's types (one compiled loop for all)."""

    mode = SK.CMD_GIVEN


def load_due(sim, layout: str | None = None) -> bool:
    """Is it time for ``step()`` to load (or, with compiled_loop=True, compile) a loop of ``sim``:
    compiled_loop=True, LOAD_AFTER steps through the stages in this process, or a loop of the layout
    ``layout`` (a FlatSpec text; None: of any layout) loaded already?"""
    return (sim.compiled_loop is True or STAGED_STEPS[0] >= LOAD_AFTER
            or (layout in _LOADED if layout is not None else bool(_LOADED)))


def possible(sim) -> bool:
    """Can the compiled loop take any step of ``sim`` at all (its settings: no profiling, no
    restitution, the compiled island solver, collisions with pairs to search)?"""
    return (not sim.profile and not sim.restitution and sim._lemke is None
            and sim._collisions_on and len(sim.table.collision_pairs) > 0)


def eligible(sim, controller) -> bool:
    """Can the compiled loop take the next steps of ``sim`` (else ``step()`` runs them)?
    ``controller``: a CompiledPD or a :class:`NoController`."""
    d = sim._data
    # (sleeping objects: the loop wakes none; their parameters changed, step() does)
    return (isinstance(controller, (CompiledPD, NoController)) and possible(sim) and d.asleep is None
            and (not sim._bodies_asleep or d.bodies_key == sim._sleep_key())
            and (not sim._kinematic
                 or all(getattr(m, "quintic_translation", None) is not None for m in sim._kinematic.values())))


class CompiledLoop:
    """The compiled loop's constant arguments and kernel addresses for one simulator and controller."""

    def __init__(self, sim, controller):
        self.sim, self.ctl = sim, controller
        model = sim._collision_model()
        self.model = model
        s, js, ds = sim.state, sim.js, sim.ds
        st = sim._structure(s.broken)
        self.broken = s.broken.tobytes()       # (bytes: compared every call, 10x faster than array_equal)
        bX, blo, bhi = body_boxes(model)
        plain = model._one_to_one and not model._offset
        body, X_LS = (CK.NO_SHAPES, CK.NO_FRAMES) if plain else (model._shape_body, model._X_LS)
        h = float(sim.dt)
        self.h = h
        self.nd = len(sim.ds)
        self.stall = (int(STALL_STEPS), float(STALL_ADVANCE * h), float(H_FLOOR))     # (CUTS's constants)
        self.TM = (sim._data.X_static, sim.bodies.table_index, sim.bodies.com_L, js.parent, js.child, js.X_PJ,
                   js.X_CJ, js.axis, js.perp, js.kind, st.limit_cand, st.lim_lo, st.lim_hi, st.lim_tol)
        # the contact search's pairs: while objects sleep, those that can touch anew (as step())
        cpairs = sim._active_pairs() if sim._bodies_asleep else model.pairs
        # (then what the impact search's compiled checks of the pairs the screen leaves take)
        self.SC = (sim._vel_buf, bX, model.pairs, blo, bhi, sim._body_radius[0], float(model.threshold), cpairs,
                   sim._body_radius[1], model.data.MP, float(MAX_THRESHOLD))
        self.group = sim._data.bodies_group.tobytes()
        self.FR = (float(RIGID_TOL), body, X_LS, plain)
        d = model.data
        self.CKA = (model._bstart, model._bcount, model._P, model._svalid, float(model.cos_tol),
                    float(model.region_tol), d.C, d.C2, d.C3, d.RS, d.O_ab, d.O_v, d.O_s, model._cyl,
                    int(sim.max_region_points), float(SIMP.REGION_COS_TOL), float(model.pen_tol))
        self.PDA = (controller.kp, controller.kd, controller.effort, *controller._refs)
        self.mode = getattr(controller, "mode", SK.CMD_PD)
        self.CMD = (self.mode, np.zeros((6, len(sim.ds))))     # (CMD_NONE: the command rows of none)
        MS, MK, _, shape_mat, body_mat = sim._mu_tables()
        self.ASM = (sim._com_L_all, sim.bodies.slot, sim.bodies.mass, sim.gravity, *sim._row_template,
                    sim._joint_offsets, js.coulomb, st.P, st.drive_idx, st.drive_w, st.c_idx, st.c_coef,
                    st.c_kappa, st.c_dof, st.c_lock, st.c_hard, ds.kp, ds.kd, sim._viscous_idx, js.viscous, ds.effort,
                    MS, MK, shape_mat, body_mat, sim._no_V, float(max(h, sim._h_correction)), float(sim.gamma),
                    float(sim.threshold), int(sim.u), float(sim.static_speed), float(LOCK_GAIN),
                    sim.bodies.inertia_L)
        self.ISL = (sim._comp, int(sim._ncomp))
        self.SOLV = (float(sim.contact_compliance), bool(sim.project_joints), float(MATCH_RADIUS),
                     int(sim.warm_start_entries))
        self.FIN = (sim._data.bodies_group, sim._is_object, h if sim.sleep else 0.0, float(sim.sleep_speed / ROOT3),
                    float(ANGULAR_LENGTH), float(sim.sleep_after), sim._data.bodies_pose)
        self.RST = (bool(sim.sleep), float(sim.sleep_speed), float(ROOT3), float(IMPULSE_RTOL))
        held = st.brk_held
        free = st.brk_free
        ints = lambda xs: np.array(xs, np.int64)        # noqa: E731
        flts = lambda xs: np.array(xs, float)           # noqa: E731
        # moving bases the loop evaluates itself (control.trajectory.QuinticBaseMotion)
        kin = list(sim._kinematic.items())
        paths = [m.quintic_translation for _, m in kin]
        kb = ints([b for b, _ in kin])
        self.KIN = (kb, np.array([p[0] for p in paths], float).reshape(len(kin), 4, 4),
                    np.array([p[1] for p in paths], float).reshape(len(kin), 3), flts([p[2] for p in paths]),
                    flts([p[3] for p in paths]), np.ascontiguousarray(sim._com_L_all[kb]).reshape(len(kin), 3),
                    np.zeros((len(sim.table), 6)), np.zeros((len(kin), 4, 4)), np.zeros((len(kin), 6)))
        self.BRK = (ints([x[0] for x in held]), ints([x[1] for x in held]), ints([x[2] for x in held]),
                    flts([x[3] for x in held]), flts([x[4] for x in held]), flts([x[5] for x in held]),
                    ints([x[0] for x in free]), ints([x[1] for x in free]), flts([x[2] for x in free]),
                    np.ascontiguousarray(st.brk_free_hard, np.int64))
        self.key = self._key()
        # the simulator's count of parameter changes when the key was last found unchanged
        self.params_seen = sim.__dict__.get("_params_set", 0)
        self.E = self._resolve()
        self.flat = self._flatten()
        self.ready = False          # rollout_steps to be called (compiled, cached or worth compiling)
        self.cached = None          # rollout_steps compiled or in numba's cache for these arguments

    def _key(self) -> tuple:
        """What the constants were built from and ``step()`` reads each time (its parameters, the
        controller's arrays)."""
        sim, ctl = self.sim, self.ctl
        return (sim._sleep_key(), sim.sleep_after, sim.warm_start_entries, id(ctl.kp), id(ctl.kd), id(ctl.effort),
                id(ctl._refs), id(sim.gravity),
                tuple((b, id(m)) for b, m in sim._kinematic.items()) if sim._kinematic else ())

    def __getstate__(self) -> dict:
        st = self.__dict__.copy()
        st["E"] = None              # machine-code addresses are this process's: built again after a copy
        st["flat"] = None           # (and the tables hold addresses)
        return st

    def _flatten(self):
        """The constant arguments as :mod:`graspsim._flat`'s tables (one call's dispatch then costs
        ~50 values, not ~220), or None when one cannot be flattened (the tuples are passed)."""
        return flatten((self.E, self.h, self.TM, self.SC, self.FR, self.CKA, self.PDA, self.ASM, self.ISL, self.SOLV,
                        self.FIN, self.RST, self.BRK, self.KIN))

    def still_valid(self) -> bool:
        """Are the constants still the simulator's (the same broken pattern, step length, buffers)?"""
        sim = self.sim
        d = self.model.data
        return (self.E is not None and self._key() == self.key and sim.state.broken.tobytes() == self.broken
                and self.CKA[6] is d.C and self.CKA[10] is d.O_ab and self.SC[9] is d.MP
                and self.TM[0] is sim._data.X_static
                and self.FIN[0] is sim._data.bodies_group and self.FIN[6] is sim._data.bodies_pose
                and sim._data.bodies_group.tobytes() == self.group)

    def step_valid(self) -> bool:
        """For ``step()``'s loop once ready: :func:`eligible` and :meth:`still_valid` in one test,
        without what cannot change for it (its controller's kind, the world's pairs)."""
        sim = self.sim
        d = sim._data
        md = self.model.data
        # (the key is built again only after a parameter was set, Simulator._param, or with moving
        # bases: its other parts are the step loop's own controller's arrays)
        n_set = sim.__dict__.get("_params_set", 0)
        if n_set != self.params_seen or sim._kinematic or self.key[-1]:
            if self._key() != self.key:
                return False
            self.params_seen = n_set
        return (not sim.restitution and sim._lemke is None and sim._collisions_on and d.asleep is None
                and (not sim._bodies_asleep or d.bodies_key == sim._sleep_key())
                and (not sim._kinematic
                     or all(getattr(m, "quintic_translation", None) is not None for m in sim._kinematic.values()))
                and self.E is not None and sim._state.broken.tobytes() == self.broken
                and self.CKA[6] is md.C and self.CKA[10] is md.O_ab and self.SC[9] is md.MP
                and self.TM[0] is d.X_static and self.FIN[0] is d.bodies_group and self.FIN[6] is d.bodies_pose
                and d.bodies_group.tobytes() == self.group)

    def _resolve(self) -> tuple:
        """The kernels' addresses for the argument types the loop passes (compiled or loaded first),
        by the arguments' layout (``_type_key``: numba's typeof of every array is ~50x slower)."""
        sim, s, d = self.sim, self.sim.state, self.sim._data
        key = _type_key((self.TM, self.SC, self.FR, self.CKA, self.PDA, self.CMD, self.ASM, self.FIN, s.c, s.q, s.v, s.joint_q,
                         s.lock, sim._comp, d.ext, d.table(), sim._no_prev))
        got = _RESOLVED.get(key)
        if got is None:
            got = _RESOLVED[key] = self._resolve_types()
        return got

    def _resolve_types(self) -> tuple:
        sim = self.sim
        s = sim.state
        ty = lambda xs: tuple(typeof(x) for x in xs)      # noqa: E731
        TM, SC, FR, CKA, ASM = ty(self.TM), ty(self.SC), ty(self.FR), ty(self.CKA), ty(self.ASM)
        c, q, v, jq, lock = ty((s.c, s.q, s.v, s.joint_q, s.lock))
        sig = {}
        sig["trial_move"] = (c, q, v, _F, *TM[:9], TM[9], jq, *TM[10:14], _B)
        rt = return_type("trial_move", sig["trial_move"]).types
        c1, q1, X, o, o_c, R, R_c, ax, pp, jq1, _, X0 = rt
        T = typeof(np.empty(0))
        sig["screen_pairs"] = (X0, SC[1], SC[2], SC[3], SC[4], SC[0], SC[5], _F, SC[6], T, T)
        sig["shape_frames"] = (X, FR[0], FR[1], FR[2])
        sig["contacts_kernel"] = (X, SC[7], CKA[0], CKA[1], CKA[2], CKA[3], SC[6], CKA[4], CKA[5], *CKA[6:14])
        sig["limit_regions_in_place"] = (CKA[10], CKA[11], CKA[12], _I, _I, _F)
        sig["pd_command"] = (_F, _F, *ty(self.PDA))
        A = return_type("pd_command", sig["pd_command"]).types[0]
        i1, f2, f1 = typeof(np.zeros(0, np.int64)), typeof(np.zeros((0, 3))), typeof(np.zeros(0))
        (com_L_all, slot, mass, gravity, rj, rt_, rk, joint_off, coulomb, Pm, drive_idx, drive_w, c_idx, c_coef,
         c_kappa, c_dof, c_lock, c_hard, kp_d, kd_d, visc_idx, visc, effort_max, MS, MK, shape_mat, body_mat, no_V,
         hc, gamma, threshold, u, static_speed, lock_gain, inertia_L) = ASM
        ext = typeof(sim._data.ext)
        sig["assemble"] = (X, com_L_all, slot, mass, gravity, ext, v, jq1, TM[9], TM[3], TM[4], TM[7], o, o_c, R,
                           R_c, ax, pp, rj, rt_, rk, joint_off, coulomb, Pm, drive_idx, drive_w, c_idx, c_coef,
                           c_kappa, c_dof, c_lock, c_hard, lock, kp_d, kd_d, visc_idx, visc, TM[10], TM[11],
                           TM[12], TM[13], _B, A, effort_max, i1, i1, f2, f2, f2, f2, f1, MS, MK, shape_mat, i1,
                           i1, _B, no_V, _F, hc, gamma, threshold, u, static_speed, lock_gain)
        ra = return_type("assemble", sig["assemble"]).types
        sig["islands"] = (typeof(sim._comp), _I, i1, i1)
        labels = return_type("islands", sig["islands"]).types[0]
        sig["mass_terms"] = (mass, inertia_L, q1, v, ra[7], _F)
        rm = return_type("mass_terms", sig["mass_terms"]).types
        d = sim._data
        table = ty(d.table())
        prev = ty(sim._no_prev)
        sig["solve_islands"] = (labels, _I, rm[1], rm[2], ra[0], ra[1], ra[2], ra[3], ra[4], ra[5], ra[6], i1, i1,
                                f2, f2, f2, f2, _I, _F, _B, _B, *table, *prev, _B, _F)
        rs = return_type("solve_islands", sig["solve_islands"]).types
        FIN = ty(self.FIN)
        sig["finish"] = (c1, q1, rs[7], rs[4], typeof(np.zeros(0)), FIN[0], FIN[1], _F, _F, _F, _F)   # (not FIN[6])
        sig["all_finite"] = (c, q, v)
        Xs = return_type("shape_frames", sig["shape_frames"]).types[1]
        sig["meeting_pairs"] = (Xs, SC[2], CKA[0], CKA[1], CKA[2], CKA[3], SC[9])
        sig["overlap_status"] = (Xs, Xs, SC[2], T, CKA[2], _F, _F, CKA[6], CKA[7], CKA[13])
        # (the state as the loop commits it: finish's coms and orientations, the solver's velocities)
        sig["joint_rates"] = (TM[0], TM[1], c1, q1, TM[2], com_L_all, TM[3], TM[4], TM[5], TM[6], TM[7], TM[8], TM[9],
                              jq1, slot, rs[4])
        key = tuple(sig[n] for n in _NAMES)
        got = _ADDRESSES.get(key)
        if got is None:
            got = _ADDRESSES[key] = tuple(native_entry_types(_KERNELS[n], sig[n])[0] for n in _NAMES)
        return got

    def idle(self) -> bool:
        """Known not to be compiled (nor in numba's cache), and not worth compiling yet: step() takes
        the steps (checked without building the call)."""
        return (self.cached is False and not self.ready and self.sim.compiled_loop is not True
                and STEPPED[0] < LOOP_AFTER)

    def step_ready(self) -> bool:
        """May ``step()`` take its step in this loop now?  Yes once it is ready, when it is loaded in
        this process for another simulator of this layout, with ``compiled_loop=True``, or once the
        process took LOAD_AFTER steps through the stages; never while it is idle."""
        if self.ready:
            return True
        if self.cached is False:
            return not self.idle()
        return load_due(self.sim, self.flat.args[0].text if self.flat is not None else None)

    def _cuts(self) -> tuple:
        """The loop's CUTS argument: the data block's run of cut steps, the stall guard's limits."""
        cuts = self.sim._data.cuts
        return (int(cuts[0]), float(cuts[1]), *self.stall)

    def run(self, n: int, rec: tuple, at: int, until: "Settle | None" = None, A: np.ndarray | None = None,
            record_broken: bool = True) -> int:
        """Up to ``n`` steps into the record arrays ``rec`` (the fields of a
        :class:`~graspsim.dynamics.simulator.Rollout` in order) from row ``at``; the steps taken (the
        simulator's state, data block and step info updated as ``step`` would); ``until``: a
        :class:`Settle` test after each step, which ends the loop when it holds (updated); ``A``:
        the command (6, nd) of a :class:`GivenCommand` loop (checked: ``checks.command_array``);
        ``record_broken``: False leaves the record's clutch flags (step()'s record: never read)."""
        sim = self.sim
        if self.idle():
            return 0
        s, d = sim.state, sim._data
        rest = d.rest
        # the last step's command for sleep.steady (without one, the loop's test is that it had none)
        none = self.mode == SK.CMD_NONE
        has_rest = (rest[1] is None) == none and rest[2] is not None
        rest_A = rest[1] if has_rest and not none else np.zeros((6, self.nd))
        rest_imp = rest[2] if has_rest else np.zeros((0, 3))
        pa, pb, pp, pf = d.cwarm if d.cwarm is not None else sim._no_prev
        bodies_rest = d.bodies_rest
        rt, rc, rq, rv, rj, rh, rk, rb = rec if at == 0 else (r[at:] for r in rec)
        # (the arguments that change between calls; the constants flattened, or as tuples)
        var = (n, float(s.time), s.c, s.q, s.v, s.joint_q, s.lock, int(s.steps),
               self.CMD if A is None else (self.mode, A),
               _NO_SETTLE if until is None else until.arrays(sim), self._cuts(), d.ext, *d.table(), pa, pb, pp, pf,
               float(rest[0]), rest_A, rest_imp, has_rest, bodies_rest, rt, rc, rq, rv, rj, rh, rk)
        if self.flat is not None:
            kernel, args = SK.rollout_flat, (*self.flat.args, *var)
        else:
            kernel, args = SK.rollout_steps, (self.E, n, var[1], self.h, *var[2:8], self.TM, self.SC, self.FR, self.CKA,
                                              self.PDA, var[8], self.ASM, self.ISL, self.SOLV, self.FIN, self.RST,
                                              self.BRK, self.KIN, *var[9:])
        if not self.ready:
            # (compiling the loop costs ~11 s once: not for a short job on a cold cache)
            if self.cached is None:
                key = (self.flat and self.flat.args[0].text, _type_key(args[1:]))
                self.cached = _AVAILABLE.get(key)
                if not self.cached:
                    self.cached = _AVAILABLE[key] = available(kernel, tuple(typeof(a) for a in args))
            self.ready = sim.compiled_loop is True or self.cached or STEPPED[0] >= LOOP_AFTER
            if not self.ready:
                return 0
            if self.flat is not None:
                _LOADED.add(self.flat.args[0].text)
        # (what the kernel changes in place before its last step: the pending wrenches, cleared by each
        # step it takes, and the moving bases; the warm-start table it writes on copies, back into
        # these arrays only after its last step)
        ext0 = d.ext.copy()
        kb = self.KIN[0]
        bases0 = d.X_static[kb] if len(kb) else None
        try:
            out = kernel(*args)
        except ZeroDivisionError:      # a blow-up inside: the steps again through step(), which names it
            if bases0 is not None:
                d.X_static[kb] = bases0
            d.ext[:] = ext0
            return 0
        (code, done, t, c, q, v, jq, steps, keys, used, ta, tb, store, meta, pa, pb, pp, pf, rest_t, rest_A,
         rest_imp, has_rest, bodies_rest, k, ab, vv, sep, imp, sizes, piv, nisl, why, still_for, settled, cuts0,
         cuts1, frac) = out
        if why:
            LEFT[why] += 1
        d.set_table(keys, used, ta, tb, store)
        d.meta = meta
        if not done:
            return 0
        if record_broken:
            rb[:done] = s.broken            # (no clutch changes in the loop)
        if until is not None:
            until.still_for, until.settled = still_for, bool(settled)
        if d.bodies_contacts is not None:         # the sleeping objects' kept contacts count too
            rk[:done] += len(d.bodies_contacts[0])
        sim._state = SimState(t, c, q, v, jq, s.broken.copy(), s.lock.copy(), steps)
        d.cwarm = (pa, pb, pp, pf) if len(pa) else None
        d.cuts[0], d.cuts[1] = int(cuts0), float(cuts1)
        if sim.sleep:
            d.bodies_rest = bodies_rest
            d.rest[0], d.rest[1], d.rest[2] = rest_t, None if none else rest_A, rest_imp
        sim.info = _loop_info(float(rh[done - 1]), frac, ab if k else None, vv, sep, sim.table.names, imp, sizes,
                              piv, nisl)
        return done


class Settle:
    """A rollout's stop test: ``dofs`` (global DOF indices) have been still for ``hold`` s -- each
    slower than ``still`` (rad/s or m/s) and either at the end of its quintic reference (``q0`` ->
    ``q1`` over [t0, t0 + duration] s) or pressing with its full effort towards it: kp (ref - q)
    sign >= ``full`` (N m or N).  :func:`graspsim.control.dynamic_auto_grasp`'s settle test, for
    ``Simulator.rollout(..., until=...)``: the compiled loop evaluates it after each step
    (``_step_kernel.settle_ok``), :meth:`after_step` the same on Python floats after a step through
    ``step()`` -- a copy, not a call of the kernel, so that a job that never uses the loop (the
    README's first, on a cold cache) compiles nothing for it.  ``still_for`` (s) and ``settled``
    carry over from one rollout to the next."""

    def __init__(self, dofs, still, kp, sign, full, q0, q1, t0: float, duration: float, hold: float):
        self.dofs = np.asarray(dofs, np.int64).reshape(-1)
        k = len(self.dofs)
        f = lambda a: np.ascontiguousarray(np.asarray(a, float).reshape(k))      # noqa: E731
        self.still, self.kp, self.sign, self.full, self.q0, self.q1 = map(f, (still, kp, sign, full, q0, q1))
        self.t0, self.duration, self.hold = float(t0), float(duration), float(hold)
        self.still_for = 0.0
        self.settled = False

    def _rows(self, sim) -> np.ndarray:
        """The watched DOFs' rows of the DOF map for the simulator's clutches now."""
        return np.ascontiguousarray(sim._structure(sim.state.broken).P[self.dofs])

    def arrays(self, sim) -> tuple:
        """The loop's MON argument."""
        return (True, self._rows(sim), sim._joint_offsets, self.kp, self.sign, self.still, self.full, self.q0,
                self.q1, self.t0, self.duration, self.hold, float(self.still_for))

    def after_step(self, sim) -> bool:
        """The test after a step through ``step()`` (the loop's, on Python floats); True: settled."""
        s = sim.state
        rates = sim._joint_rates(s).tolist()
        jq, off, P = s.joint_q.tolist(), sim._joint_offsets.tolist(), self._rows(sim).tolist()
        t, t0, dur = s.time, self.t0, self.duration
        at_end = t >= t0 + dur
        sq = 0.0
        if dur > 0:
            x = min(1.0, max(0.0, (t - t0) / dur))
            sq = x ** 3 * (10 - 15 * x + 6 * x * x)          # (the C pow, as math.pow in the loop)
        ok = True
        kp, sign, still, full, q0, q1 = (a.tolist() for a in (self.kp, self.sign, self.still, self.full, self.q0,
                                                              self.q1))
        for d in range(len(P)):
            qv = 0.0
            qr = 0.0
            for j in range(len(jq)):
                qv += P[d][j] * (jq[j] - off[j])
                qr += P[d][j] * rates[j]
            ref = q0[d] + sq * (q1[d] - q0[d]) if dur > 0 else q1[d]
            if not (abs(qr) < still[d] and (at_end or kp[d] * (ref - qv) * sign[d] >= full[d])):
                ok = False
                break
        self.still_for = self.still_for + sim.info.h if ok else 0.0
        self.settled = self.still_for >= self.hold - 1e-12
        return self.settled


class LoopStepInfo(StepInfo):
    """The :class:`StepInfo` of a step the compiled loop took, its contacts (a ContactSet of the
    kernel's arrays) built when first read: most callers of ``step()`` never read them (~1-3 us a
    step).  Otherwise the same fields, which ``dataclasses`` functions see as they see StepInfo's."""

    @property
    def contacts(self):
        d = self.__dict__
        raw = d.pop("_raw", None)
        if raw is not None:
            d["_contacts"] = None if raw[0] is None else _contact_set(
                (raw[0][0], raw[0][1], raw[1][0], raw[1][1], raw[2], raw[1][4], raw[1][5], raw[1][2], raw[1][3],
                 raw[0][2], raw[0][3]), raw[3])
        return d.get("_contacts")

    @contacts.setter
    def contacts(self, value) -> None:
        self.__dict__.pop("_raw", None)
        self.__dict__["_contacts"] = value

    @property
    def lcp_sizes(self) -> list:
        d = self.__dict__
        got = d.get("_lcp_sizes")
        if got is None:
            got = d["_lcp_sizes"] = [m for m in d.pop("_sizes").tolist() if m > 0]
        return got

    @lcp_sizes.setter
    def lcp_sizes(self, value) -> None:
        self.__dict__.pop("_sizes", None)
        self.__dict__["_lcp_sizes"] = value


def _loop_info(h: float, frac: float, ab, vv, sep, names, imp, sizes, piv: int, nisl: int) -> LoopStepInfo:
    """A LoopStepInfo without the dataclass's __init__ (this runs every step): ``ab``, ``vv``,
    ``sep`` the kernel's contact arrays (``ab`` None: no contacts), ``sizes`` its LCP sizes."""
    info = object.__new__(LoopStepInfo)
    info.__dict__.update(h=h, fraction=frac, _raw=(ab, vv, sep, names), contact_impulse=imp, _sizes=sizes,
                         pivots=piv, islands=nisl, timing={}, asleep=False)
    return info


#: the loop's MON argument without a settle test (the same types)
_NO_SETTLE = (False, np.zeros((0, 0)), np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0),
              np.zeros(0), 0.0, 0.0, 0.0, 0.0)

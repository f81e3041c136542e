"""The time stepper: Miller & Christensen (2003) section 4, after Anitescu & Potra (1997).

``Simulator.step`` runs the paper's ten steps, one call each:

 1-2. velocity-to-pose map and move every dynamic body with its current velocity (eq. 10-12)
 3.   collision and joint-limit check; binary search for the first contact / limit instant
 4.   find all contacts
 5.   friction coefficient per contact: static below ``static_speed``, kinetic above (eq. 13)
 6.   external forces: gravity and the gyroscopic term
 7.   control forces (PD drives, effort-limited; see :mod:`graspsim.dynamics.drives`)
 8.   joint friction, Coulomb plus viscous (eq. 14)
 9.   islands of dynamic bodies connected by joints or contacts
 10.  per island: free step (eq. 15), equality system (eq. 17) or mixed LCP (eq. 18-21) via Lemke

Differences from the paper's implementation, on purpose: PD drives and viscous joint friction are
applied implicitly (compliant constraint rows) so stiff gains are stable; coupled DOFs are
equality rows *with* error correction; a failing LCP is retried with a small diagonal
regularisation and otherwise raises :class:`~graspsim.SimulationError` with the state before the
step intact; a non-finite state is never committed.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..errors import SimulationError
from ..world import World
from . import bodies as B
from .drives import DriveCommand
from .island import IslandProblem, project_positions, solve_island
from .joints import (build_joint_sets, equality_rows, joint_frames, joint_values, joint_wrenches, rate_rows,
                     rows_apply)
from .rows import Rows, linear_row

REV_LIMIT_TOL = np.radians(0.1)   # joint-limit search tolerance, revolute (rad)
PRI_LIMIT_TOL = 1e-4              # prismatic (m)


@dataclass
class SimState:
    """Everything that changes during a simulation (a value: copy it to save, assign it to restore)."""

    time: float
    c: np.ndarray          # (nb, 3) com positions (m), W
    q: np.ndarray          # (nb, 4) orientations (w, x, y, z)
    v: np.ndarray          # (nb, 6) [v_com; omega] (m/s, rad/s), W
    joint_q: np.ndarray    # (nj,) unwrapped joint values
    broken: np.ndarray     # (nd,) breakaway DOFs that have broken away
    lock: np.ndarray       # (nd,) proximal joint value held by a broken-away DOF
    steps: int = 0

    def copy(self) -> "SimState":
        return SimState(self.time, self.c.copy(), self.q.copy(), self.v.copy(), self.joint_q.copy(),
                        self.broken.copy(), self.lock.copy(), self.steps)


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


class Simulator:
    """Time-stepping rigid-body simulation of a :class:`~graspsim.world.World`.

    Parameters: ``dt`` step (s, default the world's), ``friction_directions`` u per contact (default
    8), ``gamma`` error-correction factor (0.2), ``threshold`` contact distance (default the world's,
    0.1 mm), ``static_speed`` static/kinetic switch (1 mm/s), ``gravity`` (default the world's).
    """

    def __init__(self, world: World, dt: float | None = None, *, friction_directions: int = 8, gamma: float = 0.2,
                 threshold: float | None = None, static_speed: float = 1e-3, gravity=None,
                 collisions: bool = True, lemke: Callable | None = None, profile: bool = False,
                 project_joints: bool = True):
        self.world = world
        desc = world.description
        self.dt = float(dt if dt is not None else desc.dt)
        if not self.dt > 0:
            raise ValueError(f"dt must be > 0, got {dt}")
        self.u = int(friction_directions)
        if self.u < 2 or self.u % 2:
            raise ValueError("friction_directions must be an even number >= 2 (each direction with its opposite)")
        self.gamma = float(gamma)
        self.threshold = float(threshold if threshold is not None else desc.contact_threshold)
        self.static_speed = float(static_speed)
        self.gravity = np.asarray(desc.gravity if gravity is None else gravity, dtype=float)
        self.table = world.table
        self.bodies = B.DynamicBodies.from_table(self.table)
        self.js, self.ds = build_joint_sets(desc, self.table)
        self.profile = profile
        self.project_joints = project_joints
        if lemke is None:
            from ..lcp import lemke as _lemke
            lemke = _lemke
        self._lemke = lemke
        nb = len(self.bodies)
        self._X_static = world.body_poses()
        self._com_L_all = self.table.com
        # initial state from the world's kinematic state
        X0 = self._X_static[self.bodies.table_index]
        R0 = X0[:, :3, :3]
        c0 = X0[:, :3, 3] + np.einsum("nij,nj->ni", R0, self.bodies.com_L)
        q0 = B.matrices_to_quat(R0) if nb else np.zeros((0, 4))
        F = joint_frames(self.js, self._X_static)
        jq = joint_values(self.js, F)
        # revolute values beyond +-pi come from the world's DOFs (unwrap against them)
        jq_world = self._world_joint_values()
        jq = jq_world + (jq - jq_world + np.pi) % (2 * np.pi) - np.pi
        jq = np.where(self.js.kind == 0, jq, joint_values(self.js, F))
        nd = len(self.ds)
        self.state = SimState(0.0, c0, q0, np.zeros((nb, 6)), jq, np.zeros(nd, bool), np.zeros(nd))
        self.info = StepInfo()
        self._ext = np.zeros((nb, 6))
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
        g = coo_matrix((np.ones(len(ei)), (ei, ej)), shape=(nb, nb))
        self._ncomp, self._comp = connected_components(g, directed=False) if nb else (0, np.zeros(0, int))
        self._collision = None
        self._collisions_on = collisions
        self._minv_cache = None

    # ------------------------------------------------------------------ public API
    @property
    def time(self) -> float:
        return self.state.time

    @property
    def dof_names(self) -> list[str]:
        return list(self.ds.names)

    @property
    def contacts(self):
        """Contacts found in the last step (a ContactSet) with ``force`` (k, 3) on body_b in N, W."""
        return self.info.contacts

    @property
    def contact_forces(self) -> np.ndarray:
        """(k, 3) contact force on body_b at each contact of the last step (N, W)."""
        if self.info.contact_impulse is None or self.info.h == 0:
            return np.zeros((0, 3))
        return self.info.contact_impulse / self.info.h

    def save_state(self) -> SimState:
        return self.state.copy()

    def restore_state(self, state: SimState) -> None:
        self.state = state.copy()

    def poses(self) -> np.ndarray:
        """(N, 4, 4) world poses of every body (table order: links, objects, obstacles)."""
        return self._poses(self.state.c, self.state.q)

    def body_pose(self, name: str) -> np.ndarray:
        return self.poses()[self.table.index[name]]

    def body_velocity(self, name: str) -> np.ndarray:
        """[v_com; omega] (6,) in W; zeros for a static body."""
        s = self.bodies.slot[self.table.index[name]]
        return np.zeros(6) if s < 0 else self.state.v[s].copy()

    def dof_values(self, robot: str | None = None) -> np.ndarray:
        """DOF values measured from the joints (all robots, or one robot's)."""
        vals = self._dof_values(self.state.joint_q)
        return vals if robot is None else vals[self.ds.robot_slices[self.world.description.robot_index[robot]]]

    def dof_velocities(self, robot: str | None = None) -> np.ndarray:
        X = self.poses()
        F = joint_frames(self.js, X)
        rates = rows_apply(rate_rows(self.js, F, np.arange(len(self.js)), self.bodies.slot, self._com_world(X)),
                           self.state.v)
        vals = self._dof_values(rates, offsets=False)
        return vals if robot is None else vals[self.ds.robot_slices[self.world.description.robot_index[robot]]]

    def apply_external_force(self, body: str, point_W, force_W) -> None:
        """Add a force (N, W) at a world point on a dynamic body for the next step only (GUI push/pull)."""
        i = self.table.index[body]
        s = self.bodies.slot[i]
        if s < 0:
            raise ValueError(f"body '{body}' is static")
        X = self.poses()[i]
        com = X[:3, :3] @ self.table.com[i] + X[:3, 3]
        f = np.asarray(force_W, dtype=float)
        self._ext[s, :3] += f
        self._ext[s, 3:] += np.cross(np.asarray(point_W, float) - com, f)

    def sync_world(self) -> None:
        """Write the simulated state back into the world (DOF values and object poses)."""
        X = self.poses()
        d = self._dof_values(self.state.joint_q)
        for ri, sl in enumerate(self.ds.robot_slices):
            lim = self.world.description.robots[ri].robot.dof_limits
            self.world.state.dofs[ri][:] = np.clip(d[sl], lim[:, 0], lim[:, 1])
            inst = self.world.description.robots[ri]
            if inst.mount is None:
                self.world.state.base_poses[ri] = X[self.table.robot_links[ri][inst.robot.base_link]].copy()
        nl = sum(len(x) for x in self.table.robot_links)
        for bi in range(len(self.world.description.bodies)):
            self.world.state.body_poses[bi] = X[nl + bi].copy()

    def run(self, duration: float, controller=None, callback: Callable | None = None) -> None:
        """Step until ``time`` has advanced by ``duration`` (s); ``callback(sim)`` after each step."""
        t_end = self.state.time + duration - 1e-12
        while self.state.time < t_end:
            self.step(controller)
            if callback is not None:
                callback(self)

    # ------------------------------------------------------------------ the step
    def step(self, controller=None) -> StepInfo:
        """Advance one time step (the ten steps of the paper's section 4)."""
        import time as _t

        tm = {} if self.profile else None
        t0 = _t.perf_counter() if tm is not None else 0.0
        s = self.state
        h = self.dt
        # 1-2: velocity-to-pose map and move all dynamic bodies with their current velocities
        c1, q1 = B.integrate_poses(s.c, s.q, s.v, h)
        # 3: collision and joint-limit check; binary search for the first contact/limit instant
        frac = self._first_impact_fraction(s, c1, q1, h)
        if frac < 1.0:
            c1, q1 = B.integrate_poses(s.c, s.q, s.v, frac * h)
        h_eff = max(frac * h, 1e-9)
        X = self._poses(c1, q1)
        if tm is not None:
            tm["collision"] = _t.perf_counter() - t0; t0 = _t.perf_counter()
        # 4: find all contacts
        contacts = self._find_contacts(X)
        if tm is not None:
            tm["contacts"] = _t.perf_counter() - t0; t0 = _t.perf_counter()
        com_W = self._com_world(X)
        F = joint_frames(self.js, X)
        jq = joint_values(self.js, F, previous=s.joint_q)
        # 5: friction coefficient per contact (eq. 13)
        mu = self._friction_coefficients(contacts, s.v, com_W)
        # 6: external forces: gravity and gyroscopic
        R = B.quat_to_matrices(q1)
        I_W = B.world_inertia(R, self.bodies.inertia_L)
        k = self._external_forces(s.v, I_W)
        # 7: control forces (explicit part) and drive rows (implicit PD part)
        cmd = controller.command(self) if controller is not None else None
        tau_joint, drive_rows = self._control(cmd, jq, F, com_W, h, s)
        # 8: joint friction (Coulomb explicit, viscous as implicit damping rows)
        tau_joint += self._joint_coulomb(F, com_W, s.v)
        damp_rows = self._viscous_rows(F, com_W, h)
        k += joint_wrenches(self.js, F, tau_joint, com_W, len(self.bodies), self.bodies.slot)
        # constraint rows: joints (eq. 7, 16), coupled DOFs, joint limits (eq. 9), contacts (eq. 3-6)
        eq = equality_rows(self.js, F, self.bodies.slot, com_W)
        eq.rhs = -self.gamma * eq.rhs / h
        coup = self._coupling_rows(F, com_W, jq, h, s)
        hard = Rows.concat([eq, coup])
        soft = Rows.concat([drive_rows, damp_rows])
        limits = self._limit_rows(F, com_W, jq, h, s)
        normals, frictions = self._contact_rows(contacts, com_W, h)
        if tm is not None:
            tm["assembly"] = _t.perf_counter() - t0; t0 = _t.perf_counter()
        # 9: islands
        labels, n_isl = self._islands(contacts)
        # 10: per island: free step, equality system or mixed LCP
        v_new, impulses, info = self._solve_islands(labels, n_isl, s.v, k, I_W, R, h_eff, hard, soft, limits,
                                                    normals, frictions, mu, contacts)
        if tm is not None:
            tm["solve"] = _t.perf_counter() - t0; t0 = _t.perf_counter()
        if not (np.all(np.isfinite(v_new)) and np.all(np.isfinite(c1)) and np.all(np.isfinite(q1))):
            raise SimulationError(f"non-finite state after the step at t = {s.time:.6f} s "
                                  f"(h = {h_eff:.3g} s); the state before the step is kept")
        # post-stabilisation of the joints: project the new positions back onto the constraints
        c1, q1 = self._project(c1, q1, labels, n_isl)
        # breakaway DOFs: the coupling gives way when it transmits more than the breakaway torque
        broken, lock = self._update_breakaway(info.pop("coupling_impulse"), h_eff, jq, cmd, s)
        self.state = SimState(s.time + h_eff, c1, q1, v_new, jq, broken, lock, s.steps + 1)
        self._ext[:] = 0.0
        self.info = StepInfo(h=h_eff, fraction=frac, contacts=contacts, contact_impulse=impulses,
                             lcp_sizes=info["lcp_sizes"], pivots=info["pivots"], islands=n_isl, timing=tm or {})
        if tm is not None:
            tm["integration"] = _t.perf_counter() - t0
        return self.info

    # ------------------------------------------------------------------ pieces of the step
    def _poses(self, c: np.ndarray, q: np.ndarray) -> np.ndarray:
        X = self._X_static.copy()
        if len(c):
            X[self.bodies.table_index] = B.link_poses(c, B.quat_to_matrices(q), self.bodies.com_L)
        return X

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

    def _dof_values(self, jq: np.ndarray, offsets: bool = True) -> np.ndarray:
        out = np.zeros(len(self.ds))
        for d in range(len(self.ds)):
            jidx, rat, off = self.ds.joints[d], self.ds.ratios[d], self.ds.offsets[d]
            if self.state.broken[d] and len(jidx) > 1:
                j, r, o = jidx[-1], rat[-1], off[-1]
                out[d] = (jq[j] - (o if offsets else 0.0)) / r
            else:
                vals = jq[jidx] - (off if offsets else 0.0)
                out[d] = float(rat @ vals) / float(rat @ rat)
        return out

    def _collision_model(self):
        if self._collision is None:
            from ..collision import CollisionModel
            self._collision = CollisionModel(self.table, threshold=self.threshold)
        return self._collision

    def _find_contacts(self, X: np.ndarray):
        if not self._collisions_on:
            return None
        cs = self._collision_model().contacts(X)
        return cs if len(cs) else None

    def _first_impact_fraction(self, s: SimState, c1, q1, h) -> float:
        frac = 1.0
        if self._collisions_on and len(self.table.collision_pairs):
            from ..collision import localize_impact
            model = self._collision_model()
            move = lambda f: self._poses(*B.integrate_poses(s.c, s.q, s.v, f * h))
            frac = localize_impact(move, model, threshold=self.threshold, X_end=self._poses(c1, q1))
        # joint limits crossed by the full move: bisect to within the tolerance of the limit
        frac = min(frac, self._limit_fraction(s, c1, q1, h))
        return frac

    def _limit_fraction(self, s, c1, q1, h) -> float:
        js = self.js
        cand = self._limit_candidates(s)
        if not len(cand):
            return 1.0

        def excess(f):
            c, q = (c1, q1) if f == 1.0 else B.integrate_poses(s.c, s.q, s.v, f * h)
            F = joint_frames(js, self._poses(c, q))
            jq = joint_values(js, F, previous=s.joint_q)[cand]
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

    def _limit_candidates(self, s: SimState) -> np.ndarray:
        """Joints whose limits are enforced: free joints and the governing joint of each DOF."""
        js = self.js
        cand = (js.kind != 2) & np.isfinite(js.limits).any(axis=1)
        for d in range(len(self.ds)):
            jidx = self.ds.joints[d]
            if len(jidx) > 1:
                governing = jidx[-1] if s.broken[d] else jidx[0]
                for j in jidx:
                    if j != governing:
                        cand[j] = False
        return np.flatnonzero(cand)

    def _friction_coefficients(self, contacts, v, com_W) -> np.ndarray:
        if contacts is None:
            return np.zeros(0)
        mats = self.table.materials
        table = self.world.description.materials
        k = len(contacts)
        ms = np.empty(k)
        mk = np.empty(k)
        for i in range(k):
            ms[i], mk[i] = table.mu(mats[contacts.body_a[i]], mats[contacts.body_b[i]])
        # relative speed at the contact point (eq. 13), from the velocities of the previous step
        vrel = self._point_velocity(contacts.body_b, contacts.point, v, com_W) - \
            self._point_velocity(contacts.body_a, contacts.point, v, com_W)
        vt = vrel - np.einsum("ki,ki->k", vrel, contacts.normal)[:, None] * contacts.normal
        return np.where(np.linalg.norm(vt, axis=1) < self.static_speed, ms, mk)

    def _point_velocity(self, tab_idx, points, v, com_W) -> np.ndarray:
        sl = self.bodies.slot[tab_idx]
        vv = np.concatenate([v, np.zeros((1, 6))])[np.where(sl < 0, len(v), sl)]
        return vv[:, :3] + np.cross(vv[:, 3:], points - com_W[tab_idx])

    def _external_forces(self, v: np.ndarray, I_W: np.ndarray) -> np.ndarray:
        k = np.zeros((len(self.bodies), 6))
        k[:, :3] = self.bodies.mass[:, None] * self.gravity
        w = v[:, 3:]
        k[:, 3:] = -np.cross(w, np.einsum("nij,nj->ni", I_W, w))   # gyroscopic
        return k + self._ext

    def _control(self, cmd: DriveCommand | None, jq, F, com_W, h, s: SimState):
        """Explicit joint torques (nj,) and implicit PD drive rows (step 7)."""
        nj = len(self.js)
        tau = np.zeros(nj)
        if cmd is None:
            return tau, Rows.empty()
        ds = self.ds
        q = self._dof_values(jq)
        rates_all = rows_apply(rate_rows(self.js, F, np.arange(nj), self.bodies.slot, com_W), s.v)
        qd = self._dof_values(rates_all, offsets=False)
        est = cmd.tau_ff + cmd.kp * (cmd.q_ref - q) + cmd.kd * (cmd.qd_ref - qd)
        effort = np.minimum(cmd.effort, ds.effort) if cmd.effort is not None else ds.effort
        saturated = np.abs(est) >= effort
        tau_dof = np.where(saturated, np.clip(est, -effort, effort), np.clip(cmd.tau_ff, -effort, effort))
        # explicit part: DOF torque shared by its joints in proportion to their ratios (virtual work:
        # tau_j = r_j tau / sum r^2); a broken-away DOF drives its distal joint alone
        blocks = []
        for d in range(len(ds)):
            jidx, rat = ds.joints[d], ds.ratios[d]
            if s.broken[d] and len(jidx) > 1:
                jidx, rat = jidx[-1:], rat[-1:]
            wts = rat / float(rat @ rat)
            tau[jidx] += wts * tau_dof[d]
            c = h * cmd.kp[d] + cmd.kd[d]
            if saturated[d] or c <= 0:
                continue
            # implicit PD as a soft row on the DOF rate s = sum wts_j rate_j:
            #   s+ + C lambda = eps,  C = 1/(h c),  eps = (kp (q_ref - q) + kd qd_ref) / c,  c = h kp + kd
            r = rate_rows(self.js, F, jidx, self.bodies.slot, com_W, scale=wts)
            blocks.append(Rows(r.bodies.reshape(1, -1), r.jac.reshape(1, -1, 6),
                               np.array([(cmd.kp[d] * (cmd.q_ref[d] - q[d]) + cmd.kd[d] * cmd.qd_ref[d]) / c]),
                               np.array([1.0 / (h * c)])))
        return tau, Rows.concat(blocks)

    def _joint_coulomb(self, F, com_W, v) -> np.ndarray:
        js = self.js
        tau = np.zeros(len(js))
        idx = np.flatnonzero(js.coulomb > 0)
        if len(idx):
            rates = rows_apply(rate_rows(js, F, idx, self.bodies.slot, com_W), v)
            tau[idx] = -js.coulomb[idx] * np.sign(rates)     # eq. (14), Coulomb part
        return tau

    def _viscous_rows(self, F, com_W, h) -> Rows:
        idx = np.flatnonzero(self.js.viscous > 0)
        if not len(idx):
            return Rows.empty()
        r = rate_rows(self.js, F, idx, self.bodies.slot, com_W)
        keep = np.any(r.bodies >= 0, axis=1)
        r.comp = 1.0 / (h * self.js.viscous[idx])       # eq. (14), viscous part, implicit
        return r.select(keep)

    def _coupling_rows(self, F, com_W, jq, h, s: SimState) -> Rows:
        """Coupled joints of one DOF: rate_j - rho rate_1 = -gamma (error) / h; a broken-away DOF
        instead holds its proximal joint where it broke."""
        blocks = []
        for d in range(len(self.ds)):
            jidx, rat, off = self.ds.joints[d], self.ds.ratios[d], self.ds.offsets[d]
            if len(jidx) < 2:
                continue
            if s.broken[d]:
                r = rate_rows(self.js, F, jidx[:1], self.bodies.slot, com_W)
                r.rhs = np.array([-self.gamma * (jq[jidx[0]] - s.lock[d]) / h])
                blocks.append(r)
                continue
            for k in range(1, len(jidx)):
                rho = rat[k] / rat[0]
                kappa = off[k] - rho * off[0]
                r1 = rate_rows(self.js, F, jidx[k:k + 1], self.bodies.slot, com_W)
                r0 = rate_rows(self.js, F, jidx[:1], self.bodies.slot, com_W, scale=np.array([-rho]))
                err = jq[jidx[k]] - rho * jq[jidx[0]] - kappa
                blocks.append(Rows(np.concatenate([r1.bodies, r0.bodies], 1), np.concatenate([r1.jac, r0.jac], 1),
                                   np.array([-self.gamma * err / h])))
        return Rows.concat(blocks)

    def _limit_rows(self, F, com_W, jq, h, s: SimState) -> Rows:
        js = self.js
        cand = self._limit_candidates(s)
        if not len(cand):
            return Rows.empty()
        tol = np.where(js.kind[cand] == 0, 2 * REV_LIMIT_TOL, 2 * PRI_LIMIT_TOL)
        lo, hi = js.limits[cand, 0], js.limits[cand, 1]
        q = jq[cand]
        at_lo, at_hi = q <= lo + tol, q >= hi - tol
        idx = np.concatenate([cand[at_lo], cand[at_hi]])
        if not len(idx):
            return Rows.empty()
        sign = np.concatenate([np.ones(at_lo.sum()), -np.ones(at_hi.sum())])
        margin = np.concatenate([q[at_lo] - lo[at_lo], hi[at_hi] - q[at_hi]])
        r = rate_rows(js, F, idx, self.bodies.slot, com_W, scale=sign)
        r.rhs = self.gamma * np.minimum(margin, 0.0) / h      # w = +-rate + b >= 0; pushes back when beyond
        keep = np.any(r.bodies >= 0, axis=1)
        return r.select(keep)

    def _contact_rows(self, contacts, com_W, h) -> tuple[Rows, Rows]:
        if contacts is None:
            return Rows.empty(), Rows.empty()
        slot = self.bodies.slot
        a, b, p, n = contacts.body_a, contacts.body_b, contacts.point, contacts.normal
        bodies = np.stack([slot[a], slot[b]], 1)
        # normal rows (eq. 3): relative velocity of b w.r.t. a along n >= error correction (eq. 19)
        jac = np.stack([-linear_row(n, p, com_W[a]), linear_row(n, p, com_W[b])], 1)
        dp = contacts.separation - 0.5 * self.threshold
        normals = Rows(bodies, jac, self.gamma * np.minimum(dp, 0.0) / h)
        # friction directions (eq. 4): u unit tangents around the normal
        ang = 2 * np.pi * np.arange(self.u) / self.u
        d = (np.cos(ang)[None, :, None] * contacts.tangent1[:, None, :] +
             np.sin(ang)[None, :, None] * contacts.tangent2[:, None, :]).reshape(-1, 3)
        rep = np.repeat(np.arange(len(a)), self.u)
        fj = np.stack([-linear_row(d, p[rep], com_W[a[rep]]), linear_row(d, p[rep], com_W[b[rep]])], 1)
        frictions = Rows(bodies[rep], fj, np.zeros(len(rep)))
        return normals, frictions

    def _islands(self, contacts):
        """Step 9: islands = joint components merged by contacts between two dynamic bodies."""
        nb = len(self.bodies)
        parent = np.arange(self._ncomp)

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        if contacts is not None:
            sa, sb = self.bodies.slot[contacts.body_a], self.bodies.slot[contacts.body_b]
            for x, y in zip(sa, sb):
                if x >= 0 and y >= 0:
                    rx, ry = find(self._comp[x]), find(self._comp[y])
                    if rx != ry:
                        parent[rx] = ry
        roots = np.array([find(c) for c in range(self._ncomp)], dtype=np.int64)
        uniq, lab = np.unique(roots, return_inverse=True)
        return lab[self._comp] if nb else np.zeros(0, int), len(uniq)

    def _solve_islands(self, labels, n_isl, v, k, I_W, R, h, hard: Rows, soft: Rows, limits: Rows,
                       normals: Rows, frictions: Rows, mu, contacts):
        nb = len(self.bodies)
        v_new = np.empty_like(v)
        # block mass matrices: m I and I_W; their inverses per body
        Minv = np.zeros((nb, 6, 6))
        Minv[:, 0, 0] = Minv[:, 1, 1] = Minv[:, 2, 2] = 1.0 / self.bodies.mass
        Minv[:, 3:, 3:] = np.linalg.inv(I_W)
        Mv = np.concatenate([self.bodies.mass[:, None] * v[:, :3], np.einsum("nij,nj->ni", I_W, v[:, 3:])], 1)
        a_over_M = v + h * np.einsum("nij,nj->ni", Minv, k)        # M^-1 (M v + h k)

        def island_of(rows: Rows) -> np.ndarray:
            first = np.where(rows.bodies >= 0, rows.bodies, nb).min(axis=1)
            return np.concatenate([labels, [-1]])[first] if len(rows) else np.zeros(0, int)

        li_hard, li_soft, li_lim, li_n = island_of(hard), island_of(soft), island_of(limits), island_of(normals)
        li_f = np.repeat(li_n, self.u) if len(normals) else np.zeros(0, int)
        comp_soft = soft.compliance()
        k_contacts = len(normals)
        impulses = np.zeros((k_contacts, 3))
        coupling_impulse = {}
        lcp_sizes, pivots = [], 0
        order = np.argsort(labels, kind="stable")
        bounds = np.searchsorted(labels[order], np.arange(n_isl + 1))
        n_hard_rows = len(hard)
        for isl in range(n_isl):
            slots = order[bounds[isl]:bounds[isl + 1]]
            e_mask = li_hard == isl
            s_mask = li_soft == isl
            l_mask = li_lim == isl
            n_mask = li_n == isl
            if not (e_mask.any() or s_mask.any() or l_mask.any() or n_mask.any()):
                v_new[slots] = a_over_M[slots]            # eq. (15): a free body
                continue
            eqr = Rows.concat([hard.select(e_mask), soft.select(s_mask)])
            Je = eqr.dense(slots, nb)
            eps = eqr.rhs
            comp = np.concatenate([np.zeros(int(e_mask.sum())), comp_soft[s_mask]])
            lim_r, nrm_r = limits.select(l_mask), normals.select(n_mask)
            Hl = np.concatenate([lim_r.dense(slots, nb), nrm_r.dense(slots, nb)], 1)
            bl = np.concatenate([lim_r.rhs, nrm_r.rhs])
            cidx = np.flatnonzero(n_mask)
            f_mask = li_f == isl
            D = frictions.select(f_mask).dense(slots, nb) if f_mask.any() else np.zeros((6 * len(slots), 0))
            prob = IslandProblem(slots, Minv[slots], a_over_M[slots].reshape(-1), Je, eps, comp, Hl, bl,
                                 len(lim_r), D, mu[cidx] if len(cidx) else np.zeros(0), self.u)
            names = [self.table.names[self.bodies.table_index[x]] for x in slots]
            sol = solve_island(prob, lemke=self._lemke,
                               describe=lambda: f"island {isl} with bodies {', '.join(names)}")
            v_new[slots] = sol.v.reshape(-1, 6)
            if sol.lcp_size:
                lcp_sizes.append(sol.lcp_size)
                pivots += sol.pivots
            if sol.lcp_size and len(cidx):
                nl = len(lim_r)
                cn = sol.z[nl:nl + len(cidx)]
                beta = sol.z[nl + len(cidx):nl + len(cidx) + len(cidx) * self.u].reshape(len(cidx), self.u)
                ang = 2 * np.pi * np.arange(self.u) / self.u
                t1, t2 = contacts.tangent1[cidx], contacts.tangent2[cidx]
                ft = (beta @ np.cos(ang))[:, None] * t1 + (beta @ np.sin(ang))[:, None] * t2
                impulses[cidx] = cn[:, None] * contacts.normal[cidx] + ft
            # impulses of coupling rows (for breakaway): hard rows after the joint rows
            hard_idx = np.flatnonzero(e_mask)
            coupling_impulse.update({int(i): float(c) for i, c in zip(hard_idx, sol.c_e[:len(hard_idx)])})
        info = {"lcp_sizes": lcp_sizes, "pivots": pivots, "coupling_impulse": coupling_impulse,
                "n_joint_rows": n_hard_rows}
        return v_new, impulses, info

    def _project(self, c, q, labels, n_isl):
        """Remove the joint errors of the new positions (one Gauss-Newton step per island)."""
        if not self.project_joints:
            return c, q
        s = self.state
        X = self._poses(c, q)
        com_W = self._com_world(X)
        F = joint_frames(self.js, X)
        eq = equality_rows(self.js, F, self.bodies.slot, com_W)
        jq = joint_values(self.js, F, previous=s.joint_q)
        coup = self._coupling_rows(F, com_W, jq, -self.gamma, s)   # rhs = error (h = -gamma undoes the scaling)
        rows = Rows.concat([eq, coup])
        if not len(rows):
            return c, q
        nb = len(self.bodies)
        first = np.where(rows.bodies >= 0, rows.bodies, nb).min(axis=1)
        li = np.concatenate([labels, [-1]])[first]
        R = B.quat_to_matrices(q)
        Minv = np.zeros((nb, 6, 6))
        Minv[:, 0, 0] = Minv[:, 1, 1] = Minv[:, 2, 2] = 1.0 / self.bodies.mass
        Minv[:, 3:, 3:] = np.linalg.inv(B.world_inertia(R, self.bodies.inertia_L))
        dx = np.zeros((nb, 6))
        order = np.argsort(labels, kind="stable")
        bounds = np.searchsorted(labels[order], np.arange(n_isl + 1))
        for isl in range(n_isl):
            m = li == isl
            if not m.any():
                continue
            slots = order[bounds[isl]:bounds[isl + 1]]
            r = rows.select(m)
            if np.max(np.abs(r.rhs)) < 1e-12:
                continue
            dx[slots] = project_positions(Minv[slots], r.dense(slots, nb), r.rhs).reshape(-1, 6)
        c_new = c + dx[:, :3]
        ang = np.linalg.norm(dx[:, 3:], axis=1)
        axis = dx[:, 3:] / np.where(ang > 0, ang, 1.0)[:, None]
        dq = np.concatenate([np.cos(ang / 2)[:, None], np.sin(ang / 2)[:, None] * axis], 1)
        w1, v1 = dq[:, :1], dq[:, 1:]
        w2, v2 = q[:, :1], q[:, 1:]
        q_new = np.concatenate([w1 * w2 - np.sum(v1 * v2, 1, keepdims=True),
                                w1 * v2 + w2 * v1 + np.cross(v1, v2)], 1)
        q_new /= np.linalg.norm(q_new, axis=1, keepdims=True)
        return c_new, q_new

    def _update_breakaway(self, coupling_impulse: dict, h, jq, cmd, s: SimState):
        broken, lock = s.broken.copy(), s.lock.copy()
        if not np.any(self.ds.breakaway):
            return broken, lock
        # coupling rows follow the joint equality rows in 'hard'; find each DOF's row index
        n_eq = self._n_equality_rows()
        r = n_eq
        for d in range(len(self.ds)):
            jidx = self.ds.joints[d]
            if len(jidx) < 2:
                continue
            if s.broken[d]:
                # re-couple when the DOF is commanded open and the distal is back at its coupled angle
                rho = self.ds.ratios[d][-1] / self.ds.ratios[d][0]
                kappa = self.ds.offsets[d][-1] - rho * self.ds.offsets[d][0]
                if cmd is not None and cmd.qd_ref[d] < 0 and jq[jidx[-1]] <= rho * jq[jidx[0]] + kappa:
                    broken[d] = False
                r += 1
                continue
            if self.ds.breakaway[d]:
                imp = max(abs(coupling_impulse.get(r + k, 0.0)) for k in range(len(jidx) - 1))
                if imp / h > self.ds.breakaway_torque[d]:
                    broken[d] = True
                    lock[d] = jq[jidx[0]]
            r += len(jidx) - 1
        return broken, lock

    def _n_equality_rows(self) -> int:
        if not hasattr(self, "_n_eq_cache"):
            X = self.poses()
            F = joint_frames(self.js, X)
            self._n_eq_cache = len(equality_rows(self.js, F, self.bodies.slot, self._com_world(X)))
        return self._n_eq_cache

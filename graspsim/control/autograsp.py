"""Static (kinematic) auto-grasp: close every DOF at its default velocity until contact or limit.

Each DOF with a non-zero ``velocity`` advances in small steps; when a step makes a hand link
interpenetrate anything, a binary search on the step fraction brings the touching pair within the
contact threshold (separation in (0, threshold]).  A link in contact stops the DOFs that move it --
except a breakaway DOF whose *proximal* link touched: like the Barrett clutch, its proximal joint is
then held and the distal joint keeps closing.  No dynamics: the object does not move.

The result says for every DOF what stopped it (:class:`~graspsim.control.explain.DofStop`: the
link and the body it touched, the joint whose limit it reached, the clutch), and the world keeps
the closing command as its drive targets: a simulation started afterwards keeps squeezing.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .. import kinematics
from ..arguments import object_name, positive, whole, world_arg
from .explain import Breakaway, DofStop

__all__ = ["StaticGraspResult", "static_auto_grasp"]


@dataclass
class StaticGraspResult:
    """Outcome of :func:`static_auto_grasp` (DOF values in rad or m)."""

    dofs: np.ndarray
    joint_values: np.ndarray
    stopped_by: dict                 # DOF name -> 'contact' | 'limit' | 'not moving' | 'iterations'
    broke_away: list                 # breakaway DOFs whose proximal link was stopped
    contacts: object = None          # ContactSet of the final pose (hand pairs only)
    iterations: int = 0
    evaluations: int = 0
    quality: object = None           # GraspQuality when an object was named
    grasp_contacts: object = None    # GraspContacts when an object was named
    notes: list = field(default_factory=list)
    stops: dict = field(default_factory=dict)   # DOF name -> DofStop: what stopped it, in detail


def _dof_moves_link(robot, link: int) -> dict[int, set]:
    """For a link: {dof: set of joint indices of that DOF on the chain from the base to the link}."""
    out: dict[int, set] = {}
    k = robot.parent_joint[link]
    while k >= 0:
        j = robot.joints[k]
        if j.dof >= 0:
            out.setdefault(j.dof, set()).add(k)
        k = robot.parent_joint[j.parent]
    return out


def closing_command(robot, dofs: np.ndarray) -> np.ndarray:
    """DOF set points that keep ``robot`` closing: each DOF with a closing direction (the sign of
    its auto-grasp velocity) at its closing limit, the others at ``dofs`` (rad or m)."""
    out = np.array(dofs, float)
    for k, d in enumerate(robot.dofs):
        if d.velocity != 0:
            out[k] = d.limits[1] if d.velocity > 0 else d.limits[0]
    return out


def _limit_joint(robot, d: int, value: float, locked: dict) -> tuple[str | None, float]:
    """The joint of DOF ``d`` (not held by a clutch) at its closing limit when the DOF is at
    ``value``, and that limit; (None, the DOF's limit) if the DOF's own limit is what binds."""
    dof = robot.dofs[d]
    for j, r, o in zip(dof.joints, dof.ratios, dof.offsets):
        if j in locked:
            continue
        jl = robot.joints[j].limits
        lim = jl[1] if r * dof.velocity > 0 else jl[0]
        if np.isfinite(lim) and abs(r * value + o - lim) <= 1e-7:
            return robot.joints[j].name, float(lim)
    return None, float(dof.limits[1] if dof.velocity > 0 else dof.limits[0])


def static_auto_grasp(world, hand: str, *, obj: str | None = None, max_step: float = np.radians(2.0),
                      max_iterations: int = 400, threshold: float | None = None, analyze: bool = True,
                      gws: str = "L1") -> StaticGraspResult:
    """Close ``hand`` kinematically in ``world`` (whose state is updated to the final pose).

    ``max_step`` bounds how far any joint moves between collision checks (rad, or m for prismatic
    joints at the same numeric value / 20).  With ``obj`` named (default: the only dynamic object,
    if there is exactly one), the grasp's contacts with it are analysed (force closure, epsilon,
    volume).
    """
    world_arg("static_auto_grasp", world)
    from ..collision import PairView, localize_impact, model_for
    from ..errors import CollisionError

    h = world.robots[hand]
    object_name(world, obj)
    max_step = positive("max_step", max_step)
    max_iterations = whole("max_iterations", max_iterations, 1)
    robot = h.description
    ri = h.index
    thr = world.description.contact_threshold if threshold is None else positive("threshold", threshold)
    model = model_for(world, thr)
    t = world.table
    hand_bodies = set(int(i) for i in t.robot_links[ri])
    pairs = model.pairs[np.isin(model.pairs[:, 0], list(hand_bodies)) | np.isin(model.pairs[:, 1], list(hand_bodies))]
    link_of_body = {int(b): li for li, b in enumerate(t.robot_links[ri])}
    # A hand that starts inside another body cannot close: every step would be cut at its start and
    # no DOF would move (400 iterations, then "still closing").  The dynamics refuses such a world
    # too.  (Links of the hand overlapping each other are left as they were: a planner's preshape
    # may cross the fingers, and the closing stops the links that touch.)
    P_start = world.body_poses(compiled=True)
    other = np.isin(pairs[:, 0], list(hand_bodies)) != np.isin(pairs[:, 1], list(hand_bodies))
    inside = model.penetrating(P_start, pairs=np.ascontiguousarray(pairs[other]))
    if inside:
        desc = "; ".join(f"'{t.names[i]}' and '{t.names[j]}' by {model.penetration_depth(i, j, P_start) * 1e3:.3g} mm"
                         for i, j in inside)
        raise CollisionError(f"static auto-grasp of '{hand}' in world '{world.name}': the hand starts inside "
                             f"another body ({desc}); move the hand or open it first")

    nd = len(robot.dofs)
    lim = robot.dof_limits
    vel = np.array([d.velocity for d in robot.dofs])
    dofs = h.dof_values.copy()
    q = h.joint_values.copy()
    active = (vel != 0)
    stopped = {d.name: "not moving" for d, a in zip(robot.dofs, active) if not a}
    broke: list[str] = []
    locked: dict[int, float] = {}             # joint index -> held value (broken-away proximal joints)
    clutch: dict[int, Breakaway] = {}         # DOF -> where and why its clutch broke away
    stops: dict[str, DofStop] = {d.name: DofStop("not moving", float(dofs[k]))
                                 for k, d in enumerate(robot.dofs) if not active[k]}
    moves = {li: _dof_moves_link(robot, li) for li in range(len(robot.links))}
    poses = world.body_poses(compiled=True)
    X_WB = h.base_pose
    rev = np.array([j.kind == "revolute" for j in robot.joints])

    def joints_for(x: np.ndarray) -> np.ndarray:
        qq = kinematics.joint_values(robot, x)
        for jn, v in locked.items():
            qq[jn] = v
        return qq

    def poses_for(x: np.ndarray) -> np.ndarray:
        P = poses.copy()
        P[t.robot_links[ri]] = kinematics.link_poses(robot, joints_for(x), X_WB)
        return P

    def stop_at_limit(d: int) -> None:
        active[d] = False
        stopped[robot.dofs[d].name] = "limit"
        joint, limit = _limit_joint(robot, d, dofs[d], locked)
        stops[robot.dofs[d].name] = DofStop("limit", float(dofs[d]), joint=joint, limit=limit,
                                            breakaway=clutch.get(d))

    # DOFs already at their closing limit do not move
    for d in np.flatnonzero(active):
        if (vel[d] > 0 and dofs[d] >= lim[d, 1]) or (vel[d] < 0 and dofs[d] <= lim[d, 0]):
            stop_at_limit(d)
    evals = 0
    it = 0
    for it in range(1, max_iterations + 1):
        if not active.any():
            break
        # the step: every active DOF at its speed, the fastest joint moving at most max_step
        rates = np.zeros(nd)
        rates[active] = vel[active]
        jrate = np.abs(np.array([j.ratio * rates[j.dof] if j.dof >= 0 else 0.0 for j in robot.joints]))
        jrate = np.where(rev, jrate, jrate * 20.0)      # 1 mm of a prismatic joint ~ 1/20 rad
        dt = max_step / max(float(jrate.max()), 1e-12)
        target = np.clip(dofs + rates * dt, lim[:, 0], lim[:, 1])
        P1 = poses_for(target)
        evals += 1
        frac = 1.0
        if model.penetrating(P1, pairs=pairs):
            start = dofs.copy()
            move = lambda f: poses_for(start + f * (target - start))
            try:
                frac = localize_impact(move, PairView(model, pairs), threshold=thr)
            except CollisionError:
                frac = 0.0     # already touching (separation 0) at the start of the step: no advance
            evals += 8
        dofs = dofs + frac * (target - dofs)
        # DOFs at their limits stop
        for d in np.flatnonzero(active):
            if (vel[d] > 0 and dofs[d] >= lim[d, 1] - 1e-12) or (vel[d] < 0 and dofs[d] <= lim[d, 0] + 1e-12):
                stop_at_limit(d)
        if frac >= 1.0:
            continue
        # links now in contact stop the DOFs that move them (breakaway: the proximal joint is held)
        P = poses_for(dofs)
        cs = model.contacts(P, pairs=pairs)
        touching: dict[int, set] = {}         # hand link -> names of the bodies it touches
        for a, b in zip(cs.body_a, cs.body_b):
            for x, y in ((int(a), int(b)), (int(b), int(a))):
                if x in link_of_body:
                    touching.setdefault(link_of_body[x], set()).add(t.names[y])
        for li in sorted(touching):
            link, bodies = robot.links[li].name, tuple(sorted(touching[li]))
            for d, js in moves[li].items():
                if not active[d]:
                    continue
                dof = robot.dofs[d]
                distal = dof.joints[-1]
                if dof.kind == "breakaway" and len(dof.joints) > 1 and distal not in js and dof.joints[0] not in locked:
                    held = joints_for(dofs)[dof.joints[0]]
                    locked[dof.joints[0]] = held
                    broke.append(dof.name)
                    clutch[d] = Breakaway(float(dofs[d]), robot.joints[dof.joints[0]].name, float(held), link, bodies)
                else:
                    active[d] = False
                    stopped[dof.name] = "contact"
                    stops[dof.name] = DofStop("contact", float(dofs[d]), link=link, touched=bodies,
                                              breakaway=clutch.get(d))
        if not touching:
            # the bisection stopped short of contact without a touching pair (e.g. thin features)
            pass
    for d in np.flatnonzero(active):
        stopped[robot.dofs[d].name] = "iterations"
        stops[robot.dofs[d].name] = DofStop("iterations", float(dofs[d]), breakaway=clutch.get(d))
    qf = joints_for(dofs)
    for d, b in clutch.items():       # a broken-away DOF: where its distal joint ended
        dj = robot.dofs[d].joints[-1]
        stops[robot.dofs[d].name] = replace(stops[robot.dofs[d].name], distal=(robot.joints[dj].name, float(qf[dj])))
    h.set_joint_values(qf) if locked else h.set_dofs(np.clip(dofs, lim[:, 0], lim[:, 1]))
    # the drives keep the closing command: dynamics started from here keeps squeezing
    world.state.drive_targets[ri] = closing_command(robot, np.clip(dofs, lim[:, 0], lim[:, 1]))
    P = world.body_poses(compiled=True)
    cs = model.contacts(P, pairs=pairs)
    res = StaticGraspResult(dofs=dofs, joint_values=qf, stopped_by=stopped, broke_away=broke, contacts=cs,
                            iterations=it, evaluations=evals,
                            stops={d.name: stops[d.name] for d in robot.dofs})
    if obj is None:
        dyn = [b.name for b in world.bodies.values() if b.dynamic]
        obj = dyn[0] if len(dyn) == 1 else None
    if obj is not None and analyze:
        from ..grasp.objects import evaluate_grasp

        res.quality, res.grasp_contacts = evaluate_grasp(world, hand, obj, contacts=cs, gws=gws)
    return res



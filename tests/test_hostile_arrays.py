"""Hostile arrays into the array APIs (forward kinematics, CollisionModel): a clear ValueError that
names the argument (and the body, joint or pair), never NaN results, a pair taken from the wrong
end of the table or an IndexError from deep inside.

Before these checks: ``link_poses`` with a 3x3 base pose read past the array and returned finite,
wrong link poses; ``CollisionModel.contacts`` with a NaN pose returned thousands of NaN contacts and
``penetrating`` called NaN-posed pairs interpenetrating; a pair index of -1 meant the last body.
The good inputs still give what they gave (checked against FCL-free closed forms below).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim import kinematics as K
from graspsim.collision import model_for

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def world():
    return graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")


@pytest.fixture(scope="module")
def barrett(world):
    return world.description.robots[world.description.robot_index["barrett"]].robot


@pytest.mark.parametrize("fk", [K.forward_kinematics, K.link_poses], ids=["numpy", "compiled"])
@pytest.mark.parametrize("X_WB, words", [
    (np.eye(3), ["barrett", "X_WB", "4x4", "(3, 3)"]),
    (np.eye(4)[None], ["barrett", "X_WB", "(1, 4, 4)"]),
    ("abc", ["barrett", "X_WB", "4x4"]),
    (np.full((4, 4), np.nan), ["barrett", "X_WB", "not finite"]),
    (np.diag([1.0, 1.0, 1.0, np.inf]), ["barrett", "X_WB", "not finite"]),
])
def test_bad_base_pose_is_named(fk, barrett, X_WB, words):
    with pytest.raises(ValueError) as e:
        fk(barrett, np.zeros(len(barrett.joints)), X_WB)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


@pytest.mark.parametrize("fk", [K.forward_kinematics, K.link_poses], ids=["numpy", "compiled"])
def test_bad_joint_values_are_named(fk, barrett):
    nj = len(barrett.joints)
    with pytest.raises(ValueError, match=rf"barrett.*{nj} joint values expected.*\(2,\)"):
        fk(barrett, [0.1, 0.2])
    q = np.zeros(nj)
    q[3] = np.nan
    with pytest.raises(ValueError) as e:
        fk(barrett, q)
    msg = str(e.value)
    assert "q[3]" in msg and barrett.joints[3].name in msg and "nan" in msg, msg
    with pytest.raises(ValueError, match="joint values q must be"):
        fk(barrett, ["a"] * nj)


def test_good_inputs_still_agree(barrett):
    """The checks change nothing for valid input: the compiled and numpy poses agree to rounding,
    and a base translation moves every link by exactly that translation."""
    rng = np.random.default_rng(3)
    lo, hi = barrett.dof_limits[:, 0], barrett.dof_limits[:, 1]
    q = K.joint_values(barrett, rng.uniform(lo, hi))
    X_WB = np.eye(4)
    X_WB[:3, 3] = [0.3, -0.2, 0.5]
    A, B = K.forward_kinematics(barrett, q, X_WB), K.link_poses(barrett, q, X_WB)
    assert np.abs(A - B).max() < 1e-14
    A0 = K.forward_kinematics(barrett, q)
    assert np.abs(A[:, :3, 3] - A0[:, :3, 3] - X_WB[:3, 3]).max() < 1e-15
    assert np.array_equal(A[:, :3, :3], A0[:, :3, :3])


def test_collision_model_refuses_non_finite_poses(world):
    m = model_for(world)
    P = world.body_poses()
    io = world.table.index["mug"]
    P[io, 0, 3] = np.nan
    for call in (lambda: m.contacts(P), lambda: m.penetrating(P), lambda: m.candidate_pairs(P, 0.0),
                 lambda: m.contact_separations(P, [(0, io)]), lambda: m.distance(0, io, P),
                 lambda: m.penetration_depth(0, io, P)):
        with pytest.raises(ValueError) as e:
            call()
        assert "'mug'" in str(e.value) and "non-finite" in str(e.value), str(e.value)
    P = world.body_poses()
    P[io, :3, :3] *= 1.01             # a scaled rotation: the kernels assume rigid poses
    with pytest.raises(ValueError, match=r"body 'mug' \(index 9\) rotation part is not orthonormal"):
        m.contacts(P)
    P = world.body_poses()
    P[io, :3, 0] *= -1.0              # a reflection: orthonormal, but it mirrors the contact normals
    with pytest.raises(ValueError, match=r"body 'mug' \(index 9\) rotation part has determinant -1"):
        m.contacts(P)
    P = world.body_poses()
    P[io, 2, 3] = 1e200               # finite, but the kernels' squares overflow
    with pytest.raises(ValueError, match=r"body 'mug' \(index 9\) has an entry beyond 1e150"):
        m.penetrating(P)


@pytest.mark.parametrize("pairs, words", [
    ([(0, 99)], ["pairs[0]", "(0, 99)", "[0, 11)"]),
    ([(1, 2), (-1, 3)], ["pairs[1]", "(-1, 3)", "negative"]),
    ([(0.5, 3)], ["whole body indices"]),
    ([[0, 1, 2]], ["(k, 2)", "(1, 3)"]),
    (["a", "b"], ["(k, 2)"]),
])
def test_collision_model_names_bad_pairs(world, pairs, words):
    m = model_for(world)
    P = world.body_poses()
    for call in (lambda: m.contacts(P, pairs=pairs), lambda: m.penetrating(P, pairs=pairs),
                 lambda: m.pair_separations(P, pairs), lambda: m.contact_separations(P, pairs)):
        with pytest.raises(ValueError) as e:
            call()
        for w in words:
            assert w in str(e.value), (w, str(e.value))


def test_collision_model_bad_scalars(world):
    m = model_for(world)
    P = world.body_poses()
    io = world.table.index["mug"]
    with pytest.raises(ValueError, match=r"j must be a body index in \[0, 11\), got 11"):
        m.distance(0, 11, P)
    with pytest.raises(ValueError, match=r"i must be a body index in \[0, 11\), got -1"):
        m.penetration_depth(-1, io, P)
    with pytest.raises(ValueError, match="threshold must be a distance > 0"):
        m.contact_separations(P, [(0, io)], -1e-4)
    with pytest.raises(ValueError, match="threshold must be a distance > 0"):
        m.contact_separations(P, [(0, io)], float("nan"))
    with pytest.raises(ValueError, match="margin must be a finite distance"):
        m.candidate_pairs(P, float("nan"))


def test_valid_pairs_as_floats_and_arrays_give_the_same_answers(world):
    """Whole numbers typed as floats, numpy int32 and lists give the same contacts as the table's
    own pairs; the mug resting on the table touches it (separation 0 within pen_tol)."""
    m = model_for(world)
    P = world.body_poses()
    io, it = world.table.index["mug"], world.table.index["table"]
    ref = m.contacts(P, pairs=[(io, it)])
    for pairs in (np.array([[io, it]], np.int32), np.array([[io, it]], float), [[io, it]]):
        cs = m.contacts(P, pairs=pairs)
        assert len(cs) == len(ref) > 0
        assert np.array_equal(cs.point, ref.point)
    assert np.abs(ref.separation).max() <= m.pen_tol
    assert m.contact_separations(P, np.array([[io, it]], float))[0] == 0.0


@pytest.fixture(scope="module")
def puma():
    return graspsim.load_robot(ROOT / "robots/puma560.yaml")


@pytest.mark.parametrize("call, words", [
    (lambda K, r: K.jacobian(r, np.zeros(6), None, link=99), ["puma560", "link", "[0, 7)", "99"]),
    (lambda K, r: K.jacobian(r, np.zeros(6), None, link=6, point_W=[np.nan, 0, 0]), ["point_W", "finite"]),
    (lambda K, r: K.inverse_kinematics(r, np.full((4, 4), np.nan)), ["puma560", "X_target", "non-finite"]),
    (lambda K, r: K.inverse_kinematics(r, np.eye(3)), ["X_target", "4x4", "(3, 3)"]),
    (lambda K, r: K.inverse_kinematics(r, np.diag([2.0, 1, 1, 1])), ["X_target", "orthonormal"]),
    (lambda K, r: K.inverse_kinematics(r, np.eye(4), X_LE=np.eye(3)), ["X_LE", "4x4"]),
    (lambda K, r: K.inverse_kinematics(r, np.eye(4), link=-1), ["link", "[0, 7)"]),
    (lambda K, r: K.inverse_kinematics(r, np.eye(4), tol_position=-1), ["tol_position", "> 0"]),
    (lambda K, r: K.inverse_kinematics(r, np.eye(4), dofs0=[1, 2]), ["dofs0", "6 finite numbers"]),
    (lambda K, r: K.inverse_kinematics(r, np.eye(4), restarts=1.5), ["restarts", "whole number"]),
    (lambda K, r: K.joint_values(r, np.zeros(2)), ["puma560", "6 DOF values", "(2,)"]),
])
def test_kinematics_arguments_are_named(puma, call, words):
    with pytest.raises(ValueError) as e:
        call(K, puma)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_ik_still_solves(puma):
    """With the checks in place IK still reaches a reachable pose to its tolerances (1 um, 1 urad)."""
    q = K.joint_values(puma, np.array([0.3, -0.4, 0.5, 0.2, -0.3, 0.4]))
    X = K.forward_kinematics(puma, q)[6]
    ik = K.inverse_kinematics(puma, X)
    assert ik.success and ik.position_error < 1e-6 and ik.rotation_error < 1e-6
    X_ik = K.forward_kinematics(puma, K.joint_values(puma, ik.dofs))[6]
    assert np.abs(X_ik[:3, 3] - X[:3, 3]).max() < 1e-6


@pytest.mark.parametrize("kw, words", [
    ({"restarts": 0}, ["restarts", ">= 1", "0"]),
    ({"restarts": 2.5}, ["restarts", "whole number"]),
    ({"seed": "x"}, ["seed", "whole number", "'x'"]),
    ({"seed": -1}, ["seed", ">= 0"]),
    ({"candidates": 0}, ["candidates", ">= 1"]),
    ({"rank": "robust", "robust_seed": 1.5}, ["robust_seed", "whole number"]),
    # these failed only after the whole search (a TypeError / AttributeError then)
    ({"rank": "robust", "robust_options": {"nope": 1}}, ["robust_options", "unknown option 'nope'", "friction"]),
    ({"rank": "robust", "robust_options": {"friction": 5}}, ["robust_options", "friction must be in [0, 1)"]),
    ({"log": "x"}, ["log must be a list"]),
    ({"progress": 5}, ["progress must be a function"]),
])
def test_planner_arguments_are_named(kw, words):
    """Before: restarts=0 said the hand could not reach the object (0 states tried), 2.5 raised a
    TypeError, a text seed int()'s message, an unknown robustness option or a log that is not a
    list failed after the whole search; now each names its argument before any search."""
    from graspsim.planner import plan_grasps

    w = graspsim.load_world(ROOT / "worlds/parallel_jaw_box.yaml")
    with pytest.raises(ValueError) as e:
        plan_grasps(w, "gripper", "box", iterations=10, **kw)
    for word in words:
        assert word in str(e.value), (word, str(e.value))


def test_rigidbody_algorithms_refuse_non_finite_inputs(puma):
    """RNEA, CRBA and the forward dynamics returned NaN torques / accelerations for a NaN input;
    now the argument and entry are named.  Valid input: RNEA inverts the ABM forward dynamics
    (tau -> qdd -> tau to 1e-9 N m)."""
    from graspsim import rigidbody as R

    m = R.from_robot(puma)
    n = m.nv
    z = np.zeros(n)
    bad = z.copy()
    bad[2] = np.nan
    for call, words in ((lambda: R.rnea(m, bad, z, z), "q[2]"), (lambda: R.rnea(m, z, z, bad), "qdd[2]"),
                        (lambda: R.mass_matrix(m, bad), "q[2]"),
                        (lambda: R.forward_dynamics(m, z, z, bad), "tau[2]"),
                        (lambda: R.forward_dynamics_abm(m, z, bad, z), "qd[2]"),
                        (lambda: R.tree_coordinates(m, bad), "q[2]")):
        with pytest.raises(ValueError, match=rf"{re.escape(words)} must be a finite number below 1e150 in magnitude, got .*nan"):
            call()
    rng = np.random.default_rng(5)
    q, qd, tau = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), rng.uniform(-5, 5, n)
    qdd = R.forward_dynamics_abm(m, q, qd, tau)
    assert np.abs(R.rnea(m, q, qd, qdd) - tau).max() < 1e-9


def test_rigidbody_model_and_gains_are_checked(puma):
    """from_robot of something that is not a robot named it (an AttributeError 'joints' before); a
    world's robot is taken for its description.  computed_torque refuses negative or NaN gains
    (e'' + kd e' + kp e = 0 is then unstable or meaningless); with gains kp = w^2, kd = 2 w on an
    exact model from rest at the target it returns the gravity torques, RNEA's at qdd = 0."""
    from graspsim import rigidbody as R

    with pytest.raises(ValueError, match="from_robot needs a robot description .* got int"):
        R.from_robot(5)
    w = graspsim.load_world(ROOT / "worlds/puma_barrett_handset.yaml")
    m, m2 = R.from_robot(puma), R.from_robot(w.robots["puma"])
    q = np.linspace(-0.5, 0.5, m.nv)
    assert np.array_equal(R.mass_matrix(m, q), R.mass_matrix(m2, q))
    z = np.zeros(m.nv)
    for kp, kd, bad in ((-1.0, 1.0, "kp"), (1.0, np.nan, "kd"), (np.full(m.nv, 4.0), -np.ones(m.nv), "kd")):
        with pytest.raises(ValueError, match=f"computed_torque: {bad} must be finite and >= 0"):
            R.computed_torque(m, q, z, q, z, z, kp, kd)
    tau = R.computed_torque(m, q, z, q, z, z, 100.0, 20.0)
    assert np.abs(tau - R.rnea(m, q, z, z)).max() < 1e-12


def test_auto_grasp_and_lift_arguments_are_named(world):
    """Before: a NaN or negative timeout returned a result of a run that never ran, a zero lift
    duration raised ZeroDivisionError, a negative hold or slip tolerance was taken, an unknown hand
    or object was a bare KeyError('nope')."""
    from graspsim.control import dynamic_auto_grasp, lift_test, static_auto_grasp

    w = world
    with pytest.raises(KeyError, match="world 'barrett_mug' has no robot 'nope'; robots: barrett"):
        static_auto_grasp(w, "nope")
    with pytest.raises(KeyError, match="has no object or obstacle 'cup'; bodies: mug, table"):
        static_auto_grasp(w, "barrett", obj="cup")
    with pytest.raises(KeyError, match="no robot 'nope'"):
        dynamic_auto_grasp(w, "nope")
    for kw, words in (({"max_step": 0}, "max_step must be a finite number > 0"),
                      ({"max_iterations": 1.5}, "max_iterations must be a whole number >= 1")):
        with pytest.raises(ValueError, match=words):
            static_auto_grasp(w, "barrett", **kw)
    for kw, words in (({"timeout": float("nan")}, "timeout must be a finite number > 0"),
                      ({"timeout": -1.0}, "timeout must be a finite number > 0"),
                      ({"timeout": True}, "timeout must be a number, got True"),     # (not 1 s)
                      ({"settle_speed": -1.0}, "settle_speed must be"),
                      ({"settle_time": float("inf")}, "settle_time must be a finite number >= 0")):
        with pytest.raises(ValueError, match=words):
            dynamic_auto_grasp(w, "barrett", **kw)
    r = dynamic_auto_grasp(w, "barrett", obj="mug", timeout=0.05)
    t_end = r.sim.time
    for kw, words in (({"height": float("nan")}, "height must be"), ({"duration": 0}, "duration must be"),
                      ({"hold": -1}, "hold must be a finite number >= 0"), ({"height": "0.1"}, "height must be a number"),
                      ({"slip_tolerance": -1}, "slip_tolerance must be")):
        with pytest.raises(ValueError, match=words):
            lift_test(r, **kw)
    assert r.sim.time == t_end          # refused before anything moved


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fuzz_array_apis(world, barrett, puma, seed):
    """Random hostile arguments (NaN, inf, 1e300 entries, sheared or wrong-shaped poses, bad pair
    and body indices, strings, None, ragged lists, int32) into the array APIs: every outcome is a
    ValueError or KeyError, or a finite result -- never another exception from deep inside (before:
    IndexError, TypeError, a ZeroDivisionError inside the contact kernel, NaN torques)."""
    import random

    from graspsim import rigidbody as R
    from graspsim.grasp import analyze

    rng = random.Random(seed)
    m = model_for(world)
    P = world.body_poses()
    n = len(P)
    rb = R.from_robot(puma)

    def arr(*shapes):
        if rng.random() < 0.1:
            return rng.choice(["abc", None, [], [[1, 2], [3]], 5, object()])
        a = np.random.default_rng(rng.randrange(10**6)).normal(size=rng.choice(shapes))
        if rng.random() < 0.3:
            a = np.zeros_like(a)
        if a.size and rng.random() < 0.5:
            a.flat[rng.randrange(a.size)] = rng.choice([np.nan, np.inf, 1e300, -np.inf])
        pick = rng.random()
        return a.tolist() if pick < 0.2 else a.astype(np.int32) if pick < 0.3 and np.isfinite(a).all() else a

    def poses():
        return P.copy() if rng.random() < 0.3 else arr((n, 4, 4), (n - 1, 4, 4))

    def pairs():
        return rng.choice([None, [(0, 9)], [(0, n)], [(-1, 2)], [(0.5, 1)], np.array([[0, 9]], float), "ab",
                           [[0, 9, 1]], 5, np.array([[0, 9]], np.int32)])

    calls = [
        lambda: K.forward_kinematics(barrett, arr((8,), (7,), (8, 1)), rng.choice([None, arr((4, 4), (3, 3))])),
        lambda: K.link_poses(barrett, arr((8,), (7,), (8, 1)), rng.choice([None, arr((4, 4), (3, 3))])),
        lambda: K.jacobian(puma, arr((6,), (5,)), None, rng.choice([0, 6, 7, -1, 2.5, "a"]),
                           rng.choice([None, arr((3,), (2,))])),
        lambda: K.inverse_kinematics(puma, arr((4, 4), (3, 3)), max_iterations=3, restarts=0),
        lambda: m.contacts(poses(), pairs=pairs()),
        lambda: m.penetrating(poses(), pairs=pairs()),
        lambda: m.pair_separations(P, pairs() or [(0, 9)]),
        lambda: m.distance(rng.choice([0, 9, n, -1, 1.5, "a"]), rng.choice([9, 0, n]), poses()),
        lambda: R.rnea(rb, arr((6,), (5,)), arr((6,)), arr((6,))),
        lambda: R.forward_dynamics(rb, arr((6,)), arr((6,)), arr((6,), (7,))),
        lambda: analyze(arr((3, 3), (2, 3)), arr((3, 3)), rng.choice([0.5, -1, np.nan, [0.5] * 3, "x"]),
                        center=arr((3,), (2,)), torque_scale=rng.choice([0.05, 0, np.nan, -1])),
    ]
    outcomes = {"error": 0, "result": 0}
    with np.errstate(all="ignore"):
        for _ in range(120):
            for call in calls:
                try:
                    out = call()
                except (ValueError, KeyError) as e:
                    assert str(e), "an error without a message"
                    outcomes["error"] += 1
                    continue
                outcomes["result"] += 1
                for a in (out if isinstance(out, tuple) else (out,)):
                    if isinstance(a, np.ndarray) and a.dtype.kind == "f":
                        assert np.isfinite(a).all(), "a non-finite result"
                if hasattr(out, "point"):
                    assert np.isfinite(out.point).all() and np.isfinite(out.separation).all()
    assert outcomes["error"] > 100 and outcomes["result"] > 50, outcomes


def test_cartesian_line_arguments_are_named(puma):
    """PDController.move_line / cartesian_line: a 3x3 target or a bad link raised IndexError, a NaN
    duration int()'s message; now each names the robot and argument.  A valid line still ends at
    its target (1 um, by forward kinematics of its last set point)."""
    from graspsim.control import cartesian_line

    q0 = np.array([0.1, -0.5, 0.4, 0.1, 0.3, 0.2])
    X0 = K.forward_kinematics(puma, K.joint_values(puma, q0))[6]
    X1 = X0.copy()
    X1[:3, 3] += [0.02, -0.01, 0.03]
    for kw, words in (({"X_target": np.eye(3)}, ["puma560", "X_target", "4x4"]),
                      ({"X_target": np.full((4, 4), np.nan)}, ["X_target", "non-finite"]),
                      ({"link": 99}, ["link", "[0, 7)", "99"]),
                      ({"duration": float("nan")}, ["duration", "finite time > 0"]),
                      ({"duration": 0.0}, ["duration"]),
                      ({"dt": -0.01}, ["dt"]),
                      ({"X_LE": np.eye(3)}, ["X_LE", "4x4"])):
        args = {"X_target": X1, "duration": 0.5, **kw}
        with pytest.raises(ValueError) as e:
            cartesian_line(puma, q0, args.pop("X_target"), **args)
        for w in words:
            assert w in str(e.value), (w, str(e.value))
    tr = cartesian_line(puma, q0, X1, duration=0.5, dt=0.05)
    X_end = K.forward_kinematics(puma, K.joint_values(puma, tr.q1))[6]
    assert np.abs(X_end[:3, 3] - X1[:3, 3]).max() < 1e-6


def test_distance_of_a_body_to_itself_is_refused():
    """It returned a distance of a body to itself; the two-body queries now say so."""
    from graspsim.collision import closest_points

    world = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")     # (as loaded: the mug on the table)

    with pytest.raises(ValueError, match="two different bodies, got 'mug' twice"):
        closest_points(world, "mug", "mug")
    io = world.table.index["mug"]
    with pytest.raises(ValueError, match=r"two different bodies, got body 9 \('mug'\) twice"):
        model_for(world).distance(io, io, world.body_poses())
    d, pa, pb = closest_points(world, "mug", "table")     # the mug stands on the table
    assert abs(d) <= 1e-6 and abs(pa[2] - pb[2]) <= 1e-6


def test_grasp_evaluation_names_and_plot_path(tmp_path):
    """evaluate_grasp raised a bare KeyError('nope') for an unknown hand or object and returned
    (None, ...) for an unknown space when the hand touched nothing; plot_gws given a directory
    wrote '<dir>.png' beside it.  The valid call still gives force closure for three fingers on
    the mug after a static auto-grasp (epsilon > 0)."""
    from graspsim.control import static_auto_grasp
    from graspsim.grasp import evaluate_grasp, plot_gws

    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    with pytest.raises(KeyError, match="has no robot 'nope'; robots: barrett"):
        evaluate_grasp(w, "nope", "mug")
    with pytest.raises(KeyError, match="has no object or obstacle 'cup'; bodies: mug, table"):
        evaluate_grasp(w, "barrett", "cup")
    with pytest.raises(ValueError, match="gws must be one of"):
        evaluate_grasp(w, "barrett", "mug", gws="L3")
    static_auto_grasp(w, "barrett", obj="mug")
    q, gc = evaluate_grasp(w, "barrett", "mug")
    assert len(gc) >= 3 and q.force_closure and q.epsilon > 0
    d = tmp_path / "plots"
    d.mkdir()
    with pytest.raises(ValueError, match="is a folder; give the file to write"):
        plot_gws(q, d)
    assert not (tmp_path / "plots.png").exists()


def test_pd_move_to_names_non_numeric_targets():
    """PDController.move_to with a text or object target raised float()'s TypeError, a text
    duration a comparison TypeError (found by fuzzing); an unknown DOF keeps its own message.  A
    valid move still ends at its target (the trajectory's end value)."""
    from graspsim.control import PDController
    from graspsim.dynamics import Simulator

    sim = Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"))
    ctl = PDController(sim)
    for target in ({"f1": "x"}, object(), [0, 0.1, 0.1, "a"]):
        with pytest.raises(ValueError, match="barrett': target must be 4 DOF values or"):
            ctl.move_to("barrett", target)
    with pytest.raises(ValueError, match="has no DOF 'nope'; DOFs: spread, f1, f2, f3"):
        ctl.move_to("barrett", {"nope": 1.0})
    with pytest.raises(ValueError, match="move duration must be finite and > 0 s, got 'x'"):
        ctl.move_to("barrett", {"f1": 0.5}, duration="x")
    tr = ctl.move_to("barrett", {"f1": 0.5}, duration=0.4)
    assert tr.q1[1] == 0.5 and tr(sim.time + 0.4)[0][1] == pytest.approx(0.5, abs=1e-12)


def test_functions_of_a_world_or_robot_name_what_they_got():
    """Every public function that takes a world, or a robot description, given something else (a
    number, None, a string) raises a ValueError naming the function -- not an AttributeError from
    inside ('int' object has no attribute 'robots').  A world's robot is taken for its description."""
    from graspsim import kinematics as K
    from graspsim.collision.distance import closest_points
    from graspsim.control import dynamic_auto_grasp, static_auto_grasp
    from graspsim.grasp.objects import evaluate_grasp, grasp_contacts, torque_scale
    from graspsim.grasp.robust import robustness
    from graspsim.planner import free_hand_world, plan_grasps, rank_robust

    for call, fn in ((lambda: plan_grasps(5, "barrett", "mug", iterations=3), "plan_grasps"),
                     (lambda: free_hand_world(None, "barrett"), "free_hand_world"),
                     (lambda: rank_robust("w", "barrett", "mug", []), "rank_robust"),
                     (lambda: static_auto_grasp(5, "barrett"), "static_auto_grasp"),
                     (lambda: dynamic_auto_grasp(5, "barrett"), "dynamic_auto_grasp"),
                     (lambda: evaluate_grasp(5, "barrett", "mug"), "evaluate_grasp"),
                     (lambda: grasp_contacts(5, "barrett", "mug"), "grasp_contacts"),
                     (lambda: torque_scale(5, "mug"), "torque_scale"),
                     (lambda: robustness(5, "barrett", "mug", None), "robustness"),
                     (lambda: closest_points(5, "a", "b"), "closest_points")):
        with pytest.raises(ValueError, match=f"{fn} needs a graspsim World .* got "):
            call()
    puma = graspsim.load_robot(ROOT / "robots/puma560.yaml")
    for call, fn in ((lambda: K.forward_kinematics(5, np.zeros(6)), "forward_kinematics"),
                     (lambda: K.link_poses(None, np.zeros(6)), "link_poses"),
                     (lambda: K.jacobian("puma", np.zeros(6), None, 3), "jacobian"),
                     (lambda: K.inverse_kinematics([], np.eye(4)), "inverse_kinematics"),
                     (lambda: K.joint_values(5, np.zeros(6)), "joint_values")):
        with pytest.raises(ValueError, match=f"{fn} needs a robot description .* got "):
            call()
    with pytest.raises(ValueError, match="robot 'puma560': DOF 'j1' value must be finite, got nan"):
        K.joint_values(puma, np.array([np.nan, 0, 0, 0, 0, 0]))
    w = graspsim.load_world(ROOT / "worlds/puma_barrett_handset.yaml")
    q = np.linspace(-0.3, 0.3, 6)
    assert np.array_equal(K.forward_kinematics(w.robots["puma"], q), K.forward_kinematics(puma, q))


def test_world_handles_refuse_attributes_that_set_nothing():
    """``robot.dofs = [...]`` (for ``dof_values``) added an attribute and changed nothing, silently;
    it is an AttributeError naming what can be set.  The setters still set, and a world still
    pickles and copies with its handles."""
    import copy
    import pickle

    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    h = w.robots["barrett"]
    with pytest.raises(AttributeError, match=r"RobotHandle 'barrett': 'dofs' is not an attribute; what can be set: "
                                             r"base_pose, dof_values \(or call set_dofs / set_joint_values\)"):
        h.dofs = [0.0, 0.1, 0.1, 0.1]
    with pytest.raises(AttributeError, match="BodyHandle 'mug': 'mass' is read-only; what can be set: pose"):
        w.bodies["mug"].mass = 3.0
    h.dof_values = [0.0, 0.1, 0.1, 0.1]
    assert np.array_equal(h.dof_values, [0.0, 0.1, 0.1, 0.1])
    for v in (True, "0.5"):           # (a bool is no angle of 1 rad, a string no number)
        with pytest.raises(ValueError, match=f"robot 'barrett': DOF 'f1' must be a number, got {v!r}"):
            h.set_dofs({"f1": v})
    assert np.array_equal(h.dof_values, [0.0, 0.1, 0.1, 0.1])
    for w2 in (pickle.loads(pickle.dumps(w)), copy.deepcopy(w)):
        assert np.array_equal(w2.robots["barrett"].dof_values, [0.0, 0.1, 0.1, 0.1])


def test_joint_trajectory_names_bad_arguments():
    """joint_trajectory took NaN targets (a NaN duration), NaN limits and speeds, a negative duration
    and a NaN start time silently, and mismatched lengths met numpy's broadcast error; each is named.
    A good move keeps its quintic timing: T = 1.875 max |dq| / speed, the middle reached at T / 2."""
    from graspsim.control import cartesian_line, joint_trajectory

    lim = np.array([[-1.0, 1.0]] * 3)
    ok = dict(q0=np.zeros(3), q1=np.full(3, 0.5), limits=lim, speeds=np.ones(3))
    for change, msg in (({"q1": np.array([np.nan, 0.0, 0.0])}, "q1 of DOF 0 must be finite, got nan"),
                        ({"q1": np.ones(2)}, r"q1 must have shape \(3,\), got \(2,\)"),
                        ({"limits": np.full((3, 2), np.nan)}, r"limits of DOF 0 must be a number \(inf: none\)"),
                        ({"speeds": np.array([1.0, np.nan, 1.0])}, "speeds of DOF 1 must be a number"),
                        ({"duration": -1.0}, "duration must be None or a finite time >= 0"),
                        ({"t0": np.nan}, "t0 must be a finite time")):
        with pytest.raises(ValueError, match=f"joint_trajectory: {msg}"):
            joint_trajectory(**{**ok, **change})
    tr = joint_trajectory(**ok, t0=1.0)
    assert abs(tr.duration - 1.875 * 0.5) < 1e-15
    assert np.allclose(tr(1.0 + tr.duration / 2)[0], 0.25, atol=1e-15)
    with pytest.raises(ValueError, match="cartesian_line needs a robot description"):
        cartesian_line(5, np.zeros(6), np.eye(4), duration=1.0)


def test_pd_controller_and_lift_test_name_what_they_got():
    """PDController(5) and lift_test(5) met AttributeErrors inside; gains given to the constructor
    of the wrong length met numpy's broadcast error, negative ones passed until the next step.  A
    good controller holds the open hand: its command's references are the DOFs' values."""
    from graspsim.control import PDController, lift_test
    from graspsim.dynamics import Simulator

    with pytest.raises(ValueError, match="PDController needs a graspsim Simulator, got int"):
        PDController(5)
    with pytest.raises(ValueError, match="lift_test needs the result of dynamic_auto_grasp, got int"):
        lift_test(5)
    sim = Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"))    # (a fresh one: no drive targets)
    for kw, msg in (({"kp": -1.0}, "kp of DOF 'barrett/spread' must be finite and >= 0, got -1.0"),
                    ({"kd": [1.0, 2.0]}, r"kd must be a number or 4 numbers"),
                    ({"effort": [1.0, 0.0, 1.0, 1.0]}, r"effort of DOF 'barrett/f1' must be > 0 \(inf: no limit\)")):
        with pytest.raises(ValueError, match=f"PDController: {msg}"):
            PDController(sim, **kw)
    ctl = PDController(sim, kp=[1.0, 2.0, 3.0, 4.0], effort=np.inf)
    cmd = ctl.command(sim)
    assert np.array_equal(cmd.kp, [1.0, 2.0, 3.0, 4.0]) and np.all(np.isinf(ctl.effort))
    assert np.allclose(cmd.q_ref, sim.dof_values(), atol=1e-12)


def test_a_robot_or_body_named_by_something_else_than_a_str_is_named():
    """``world.robots[array]`` (or a grasp passed where the hand's name goes, as in
    ``robustness(world, grasp, "barrett", "mug")``) raised dict's "unhashable type: 'numpy.ndarray'"
    from inside.  Now the lookup names what it got and what the world has; ``in`` is False."""
    from graspsim.control import static_auto_grasp
    from graspsim.grasp.robust import Grasp, robustness

    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    with pytest.raises(KeyError, match="world 'barrett_mug' has no robot named by a ndarray; robots are named by str: barrett"):
        w.robots[np.zeros(3)]
    with pytest.raises(KeyError, match="has no object or obstacle named by a list; bodies are named by str: mug, table"):
        w.bodies[["mug"]]
    assert np.zeros(3) not in w.robots and "barrett" in w.robots
    with pytest.raises(KeyError, match="has no robot named by a ndarray"):
        static_auto_grasp(w, np.zeros(3))
    g = Grasp.from_world(w, "barrett")
    with pytest.raises(ValueError, match="hand must be the name of a robot of world 'barrett_mug' .a str., got a Grasp"):
        robustness(w, g, "barrett", "mug")

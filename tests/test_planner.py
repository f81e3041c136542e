"""The grasp planner (graspsim.planner): eigengrasps, search space, annealing, planned grasps."""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

import graspsim
from graspsim import kinematics
from graspsim.grasp.objects import evaluate_grasp
from graspsim.planner import eigengrasps, free_hand_world, plan_grasps
from graspsim.planner.annealing import anneal, random_search
from graspsim.planner.api import DISTINCT_ANGLE, DISTINCT_DISTANCE, Problem
from graspsim.planner.space import batch_forward_kinematics, closing_vector

ROOT = Path(__file__).resolve().parents[1]
BARRETT = (ROOT / "worlds/barrett_mug.yaml", "barrett", "mug")
JAW = (ROOT / "worlds/parallel_jaw_box.yaml", "gripper", "box")
HANDSET = (ROOT / "worlds/puma_barrett_handset.yaml", "barrett", "handset")


def _load(spec):
    return graspsim.load_world(str(spec[0]))


def test_eigengrasps_from_files_and_bounds():
    b = _load(BARRETT).robots["barrett"].description
    e = eigengrasps(b)
    # barrett.yaml: close [0 1 1 1]/sqrt(3) and spread [1 0 0 0] from the origin 0
    assert np.allclose(e.vectors, [[0, 1 / math.sqrt(3)] + [1 / math.sqrt(3)] * 2, [1, 0, 0, 0]])
    assert not e.fallback
    # close: the fingers reach their 144 deg limit at alpha = 144 deg * sqrt(3); spread: 180 deg
    assert np.allclose(e.bounds, [[0, math.radians(144) * math.sqrt(3)], [0, math.pi]], atol=1e-12)
    j = eigengrasps(_load(JAW).robots["gripper"].description)
    # parallel_jaw.yaml: [-1] (close) from the 60 mm default opening, limits [0, 70] mm
    assert np.allclose(j.vectors, [[-1.0]]) and np.allclose(j.bounds, [[-0.01, 0.06]], atol=1e-12)


def test_close_all_fallback_and_mismatch():
    b = _load(BARRETT).robots["barrett"].description
    bare = dataclasses.replace(b, eigengrasps=np.zeros((0, 4)))
    e = eigengrasps(bare)
    # auto-grasp velocities: spread 0, f1..f3 +60 deg/s -> [0 1 1 1]/sqrt(3)
    assert e.fallback and np.allclose(e.vectors, [[0] + [1 / math.sqrt(3)] * 3])
    assert np.allclose(closing_vector(_load(JAW).robots["gripper"].description), [-1.0])
    with pytest.raises(ValueError, match="eigengrasp vectors have 3 entries but the hand has 4 DOFs"):
        eigengrasps(dataclasses.replace(b, eigengrasps=np.ones((1, 3))))


def test_batch_forward_kinematics_matches_kinematics():
    r = _load(BARRETT).robots["barrett"].description
    q = np.random.default_rng(3).uniform(r.dof_limits[:, 0], r.dof_limits[:, 1], (5, 4))
    L = batch_forward_kinematics(r, q)
    for b in range(5):
        assert np.allclose(L[b], kinematics.forward_kinematics(r, kinematics.joint_values(r, q[b])), atol=1e-12)


def test_palm_pose_follows_the_parametrisation():
    w = _load(BARRETT)
    p = Problem(w, "barrett", "mug")
    x = p.space.random(np.random.default_rng(1), 8)
    L, X_WB, q = p.space.link_poses(x)
    palm = L[:, w.robots["barrett"].description.palm_link]
    # the palm sits at c + r s and its approach axis (+z of the Barrett palm) points along -s
    assert np.allclose(palm[:, :3, 3], p.space.center + x[:, 4:5] * x[:, 0:3], atol=1e-12)
    assert np.allclose(palm[:, :3, 2], -x[:, 0:3], atol=1e-12)
    assert np.allclose(q, np.clip(p.space.eig.origin + x[:, 5:] @ p.space.eig.vectors,
                                  *w.robots["barrett"].dof_limits.T))


def test_approach_frames_match_the_batch_candidates():
    from graspsim.batch.candidates import approach_frame
    from graspsim.planner.space import approach_frames

    rng = np.random.default_rng(7)
    a = rng.standard_normal((20, 3))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    roll = rng.uniform(-math.pi, math.pi, 20)
    F = approach_frames(a, roll)
    for k in range(20):
        assert np.allclose(F[k], approach_frame(a[k], roll[k]), atol=1e-12)


def _check_grasps(spec, grasps, min_fc=5):
    fc = [g for g in grasps if g.quality.force_closure]
    assert len(fc) >= min_fc
    for i, a in enumerate(grasps):          # pairwise distinct palm poses
        for b in grasps[:i]:
            d = np.linalg.norm(a.palm_pose[:3, 3] - b.palm_pose[:3, 3])
            c = (np.trace(a.palm_pose[:3, :3].T @ b.palm_pose[:3, :3]) - 1) / 2
            assert d >= DISTINCT_DISTANCE or math.acos(min(1.0, max(-1.0, c))) >= DISTINCT_ANGLE
    for g in grasps:                        # re-applied to a fresh world: same verdict and epsilon
        w = free_hand_world(_load(spec), spec[1])
        g.apply(w, spec[1])
        assert np.allclose(w.robots[spec[1]].palm_pose, g.palm_pose, atol=1e-12)
        assert graspsim.collision.check_interpenetration(w, raise_error=False) == []
        q, _ = evaluate_grasp(w, spec[1], spec[2])
        assert bool(q.force_closure) == g.quality.force_closure
        assert abs(q.epsilon - g.quality.epsilon) <= 1e-9


def test_barrett_mug_finds_distinct_force_closure_grasps():
    w = _load(BARRETT)
    before = w.save_state()
    grasps = plan_grasps(w, "barrett", "mug", n=8, iterations=300, seed=0)
    assert np.allclose(w.robots["barrett"].base_pose, before.base_poses[0])   # world left as it was
    _check_grasps(BARRETT, grasps)
    assert grasps[0].quality.epsilon > 0.05


def test_parallel_jaw_box_finds_distinct_force_closure_grasps():
    grasps = plan_grasps(_load(JAW), "gripper", "box", n=8, iterations=500, restarts=8, seed=0)
    _check_grasps(JAW, grasps)


def test_handset_barrett_on_the_puma_finds_distinct_force_closure_grasps():
    w = _load(HANDSET)
    free = free_hand_world(w, "barrett")
    # the free hand starts where the arm holds it, with the same DOFs; the arm is left out
    assert list(free.robots) == ["barrett"]
    assert np.allclose(free.robots["barrett"].palm_pose, w.robots["barrett"].palm_pose, atol=1e-12)
    assert np.allclose(free.robots["barrett"].dof_values, w.robots["barrett"].dof_values)
    grasps = plan_grasps(w, "barrett", "handset", n=8, iterations=500, restarts=8, seed=0)
    _check_grasps(HANDSET, grasps)
    _no_self_overlap(free, "barrett", grasps)


def test_a_short_search_returns_no_hand_through_itself():
    """The search that returned the crossed Barrett (3 grasps, 100 iterations, 4 restarts): its third
    grasp's preshape had spread 106 deg and the fingers closed 84 deg, f1 9.7 mm inside f2."""
    w = _load(HANDSET)
    grasps = plan_grasps(w, "barrett", "handset", n=3, iterations=100, restarts=4)
    assert len(grasps) == 3
    _no_self_overlap(free_hand_world(w, "barrett"), "barrett", grasps)


def _no_self_overlap(w, hand, grasps):
    """Neither the preshape a grasp was closed from nor the grasp has links of the hand inside each
    other (the planner returned a Barrett preshape with the fingers 9.7 mm through each other)."""
    from graspsim.collision import model_for

    m = model_for(w)
    rows = np.asarray(w.table.robot_links[w.robots[hand].index])
    own = np.ascontiguousarray(m.pairs[np.isin(m.pairs[:, 0], rows) & np.isin(m.pairs[:, 1], rows)])
    assert len(own)
    h = w.robots[hand]
    st = w.save_state()
    for g in grasps:
        for dofs in (g.preshape, g.dofs):
            h.base_pose = g.base_pose
            h.dof_values = [dofs[n] for n in h.dof_names]
            assert m.penetrating(w.body_poses(compiled=True), pairs=own) == []
    w.restore_state(st)


def test_same_seed_same_grasps_other_seed_other_grasps():
    def run(seed):
        return plan_grasps(_load(JAW), "gripper", "box", n=3, iterations=150, seed=seed)
    a, b, c = run(4), run(4), run(5)
    assert len(a) == len(b) == 3
    for g, h in zip(a, b):
        assert np.array_equal(g.palm_pose, h.palm_pose) and g.dofs == h.dofs and g.energy == h.energy
    assert not np.allclose(a[0].palm_pose, c[0].palm_pose, atol=1e-3)


def test_annealing_beats_random_sampling():
    p = Problem(_load(JAW), "gripper", "box")
    sa, rs = [], []
    for seed in range(10):
        log = anneal(p.space, p.evaluate, seed=seed, restarts=2, iterations=150, screen=p.screen)
        sa.append(float(np.min(log.final_energy)))
        # the same number of energy evaluations, uniform in the same space, the best kept
        r = random_search(p.space, p.evaluate, seed=seed, evaluations=log.evaluations, screen=p.screen)
        assert r.evaluations == log.evaluations
        rs.append(r.best_energy)
    assert np.all(np.isfinite(sa))
    # measured: median 3.03 (annealing) against 3.66 (random sampling)
    assert np.median(sa) < np.median(rs)


@pytest.mark.parametrize("kw, msg", [
    (dict(hand="nope"), "no robot 'nope'"),
    (dict(object="table"), "no object 'table'; objects: box"),
    (dict(iterations=0), "iterations must be a finite number > 0"),
    (dict(seconds=-1.0), "seconds must be a finite number > 0"),
    (dict(energy="fast"), "energy must be 'contact' or 'quality'"),
])
def test_bad_input_is_one_clear_error(kw, msg):
    args = dict(hand="gripper", object="box", iterations=10)
    args.update(kw)
    with pytest.raises(ValueError, match=msg):
        plan_grasps(_load(JAW), args.pop("hand"), args.pop("object"), **args)


def test_cli_plan_json_and_world_file(tmp_path, capsys):
    import json

    from graspsim.cli import main

    out, wf = tmp_path / "g.json", tmp_path / "best.yaml"
    assert main(["plan", str(JAW[0]), "--n", "3", "--iterations", "150", "--seed", "2",
                 "--json", str(out), "--write-world", str(wf)]) == 0
    d = json.loads(out.read_text())
    api = plan_grasps(_load(JAW), "gripper", "box", n=3, iterations=150, seed=2)
    assert len(d["grasps"]) == len(api) == 3
    for g, a in zip(d["grasps"], api):          # the JSON is the API's result
        assert np.allclose(g["palm_pose"], a.palm_pose, atol=0)
        assert g["quality"] == {"force_closure": a.quality.force_closure, "epsilon": a.quality.epsilon,
                                "volume": a.quality.volume}
        assert set(g["dofs"]) == {"opening"}
    # the written world holds the best grasp: its base pose (rpy round trip) and DOFs
    w = graspsim.load_world(str(wf))
    h = w.robots["gripper"]
    assert np.allclose(h.base_pose, api[0].base_pose, atol=1e-9)
    assert abs(h.dof_values[0] - api[0].dofs["opening"]) < 1e-12


def test_written_world_keeps_data_package_names_and_rebases_inline_meshes(tmp_path, capsys):
    """``--write-world`` into another folder: a ``NAME://path`` file stays as it is (it was turned
    into 'pybullet_data:/x.urdf', not found), an absolute path stays absolute, and an inline shape's
    relative ``mesh:`` is rebased like a ``file:`` (it was left relative to the old folder); the
    written world holds the best grasp."""
    from graspsim.cli import main

    src = tmp_path / "src"
    (src / "m").mkdir(parents=True)
    (src / "m" / "cube.stl").write_bytes((ROOT / "objects/meshes/cube.stl").read_bytes())
    world = src / "w.yaml"
    world.write_text(
        "world: jaw_cubes\n"
        f"robots:\n  - {{name: gripper, file: {ROOT}/robots/parallel_jaw.yaml, pose: {{xyz: [0, 0, 0.3]}}}}\n"
        "objects:\n  - {name: box, file: pybullet_data://cube_small.urdf, pose: {xyz: [0, 0, 0.15]}}\n"
        "obstacles:\n  - {name: block, mass: 1, shape: {mesh: m/cube.stl}, pose: {xyz: [0.5, 0, 0]}}\n")
    out = tmp_path / "elsewhere" / "best.yaml"
    assert main(["plan", str(world), "--n", "2", "--iterations", "100", "--write-world", str(out)]) == 0
    capsys.readouterr()
    doc = yaml.safe_load(out.read_text())
    assert doc["robots"][0]["file"] == f"{ROOT}/robots/parallel_jaw.yaml"
    assert doc["objects"][0]["file"] == "pybullet_data://cube_small.urdf"
    assert doc["obstacles"][0]["shape"]["mesh"] == "../src/m/cube.stl"
    w = graspsim.load_world(out)
    best = plan_grasps(graspsim.load_world(world), "gripper", "box", n=2, iterations=100)[0]
    assert np.allclose(w.robots["gripper"].base_pose, best.base_pose, atol=1e-9)
    np.testing.assert_array_equal(w.bodies["block"].pose, graspsim.load_world(world).bodies["block"].pose)


@pytest.mark.parametrize("args, msg", [
    (["--hand", "arm"], "error: world 'parallel_jaw_box' has no robot 'arm'; robots: gripper"),
    (["--object", "table"], "error: world 'parallel_jaw_box' has no object 'table'; objects: box"),
    (["--seconds", "0"], "error: --seconds 0: must be a number > 0"),
    (["--iterations", "-2"], "error: --iterations -2: must be a number > 0"),
])
def test_cli_bad_input_one_line_exit_2(args, msg, capsys):
    from graspsim.cli import main

    assert main(["plan", str(JAW[0])] + args) == 2
    err = capsys.readouterr().err
    assert err.strip() == msg


def test_unreachable_object_is_reported_after_the_search(tmp_path):
    # the cube sits inside a 1 m obstacle block: every hand pose within reach interpenetrates it
    (tmp_path / "block.yaml").write_text("object: block\nshape: {box: [1.0, 1.0, 1.0]}\nmaterial: wood\n")
    (tmp_path / "w.yaml").write_text(
        "world: buried\nrobots:\n  - {name: gripper, file: %s, pose: {xyz: [0, 0, 2]}}\n"
        "objects:\n  - {name: cube, file: %s}\nobstacles:\n  - {name: block, file: block.yaml}\n"
        % (ROOT / "robots/parallel_jaw.yaml", ROOT / "objects/cube.yaml"))
    w = graspsim.load_world(str(tmp_path / "w.yaml"))
    # 224 states: 51 batches of 4 looking for a collision-free start, then 5 iterations of 4 chains
    with pytest.raises(ValueError, match=r"hand 'gripper' cannot reach object 'cube' without colliding: "
                                         r"all 224 states tried interpenetrated the object or an obstacle"):
        plan_grasps(w, "gripper", "cube", iterations=5, seed=0)


def _state_of(problem, world, hand):
    """The search state (s, roll, r, alpha) of the hand's current palm pose and DOFs."""
    from graspsim.planner.space import approach_frames

    h = world.robots[hand]
    X = h.palm_pose
    v = X[:3, 3] - problem.space.center
    r = np.linalg.norm(v)
    s = v / r
    r1 = (X[:3, :3] @ problem.space._F_P)[:, 0]
    b = approach_frames(-s[None], np.zeros(1))[0]
    roll = math.atan2(r1 @ b[:, 1], r1 @ b[:, 0])
    eig = problem.space.eig
    alpha = np.linalg.lstsq(eig.vectors.T, h.dof_values - eig.origin, rcond=None)[0]
    return np.concatenate([s, [roll, r], alpha])[None]


def test_quality_energy_is_minus_epsilon_of_the_closed_grasp():
    from graspsim.control import static_auto_grasp

    w = _load(JAW)
    p = Problem(w, "gripper", "box", energy="quality")
    x = _state_of(p, w, "gripper")
    L = p.space.link_poses(x)[0][0]
    assert np.allclose(L, w.robots["gripper"].link_poses(), atol=1e-12)   # the state is the world's pose
    e = p.evaluate(x)
    # independently: the static auto-grasp of the shipped world closes in force closure, epsilon 0.1995
    ref = static_auto_grasp(_load(JAW), "gripper").quality
    assert ref.force_closure and ref.epsilon == pytest.approx(0.1995, abs=1e-4)
    assert e[0] == pytest.approx(-ref.epsilon, abs=1e-9)
    # far from the box the quality energy is the contact energy (no closing)
    far = x.copy()
    far[0, 4] = p.space.r_range[1]
    assert p.evaluate(far)[0] == pytest.approx(p.screen(far)[0], abs=0) and p.screen(far)[0] > 0


def test_virtual_contacts_on_the_inner_faces():
    from graspsim.planner.energy import virtual_contacts

    r = _load(JAW).robots["gripper"].description
    vc = virtual_contacts(r)
    names = [r.links[i].name for i in vc.link]
    assert names == ["palm"] * 3 + ["left"] * 3 + ["right"] * 3
    # parallel_jaw.yaml: fingers 10 x 25 x 70 mm; the left one's inner face is its +x face at x = 0 of
    # its link frame, the right one's -x face at x = 0; the palm's is its face at z = 0 (approach +z)
    L, R, P = (vc.link == r.link_index["left"]), (vc.link == r.link_index["right"]), (vc.link == r.palm_link)
    assert np.allclose(vc.normals[L], [1, 0, 0]) and np.allclose(vc.points[L][:, 0], 0, atol=1e-12)
    assert np.allclose(vc.normals[R], [-1, 0, 0]) and np.allclose(vc.points[R][:, 0], 0, atol=1e-12)
    assert np.allclose(vc.normals[P], [0, 0, 1]) and np.allclose(vc.points[P][:, 2], 0, atol=1e-12)
    for m in (L, R):       # on the face: |y| <= 12.5 mm, 0 <= z <= 70 mm
        assert np.all(np.abs(vc.points[m][:, 1]) <= 0.0125) and np.all((vc.points[m][:, 2] >= 0) & (vc.points[m][:, 2] <= 0.07))


def test_surface_distance_against_the_exact_box_distance():
    # the box of parallel_jaw_box.yaml: 200 x 50 x 50 mm, centred at (0, 0, 25 mm), axis-aligned
    p = Problem(_load(JAW), "gripper", "box")
    rng = np.random.default_rng(0)
    half, c = np.array([0.1, 0.025, 0.025]), np.array([0, 0, 0.025])
    d_dir = rng.standard_normal((300, 3))
    d_dir /= np.linalg.norm(d_dir, axis=1, keepdims=True)
    q = c + d_dir * rng.uniform(0.12, 0.2, (300, 1))       # outside the box
    exact = np.linalg.norm(np.maximum(np.abs(q - c) - half, 0), axis=1)
    d, n = p.surface.nearest(q)
    # samples about 2 mm apart, searched to within 5 % (NEAREST_EPS): the sample found is farther
    # than the surface by under 2.5 mm + 5 % (never nearer, but for the STL's float32 vertices, 1e-9 m off)
    assert np.all(d >= exact - 1e-8) and np.all(d - exact < 2.5e-3 + 0.05 * (exact + 2.5e-3))
    # above the top face's middle the normal is +z
    d, n = p.surface.nearest(np.array([[0.0, 0.0, 0.1], [0.05, 0.0, 0.12]]))
    assert np.allclose(n, [0, 0, 1]) and np.allclose(d, [0.05, 0.07], atol=2.5e-3)


def test_cli_world_without_object(tmp_path, capsys):
    from graspsim.cli import main

    (tmp_path / "w.yaml").write_text("world: empty\nrobots:\n  - {name: gripper, file: %s, pose: {xyz: [0, 0, 0.2]}}\n"
                                     % (ROOT / "robots/parallel_jaw.yaml"))
    assert main(["plan", str(tmp_path / "w.yaml")]) == 2
    assert capsys.readouterr().err.strip() == "error: world 'empty' has no object to grasp (no dynamic body)"


def test_urdf_hand_gets_virtual_contacts_and_plans():
    from graspsim.planner.energy import virtual_contacts

    spec = (ROOT / "worlds/panda_hand_mug.yaml", "panda_hand", "mug")
    w = _load(spec)
    r = w.robots["panda_hand"].description
    vc = virtual_contacts(r)
    # its default opening is 0 (closed): the inner faces are found at mid-range, 3 per finger
    assert [r.links[i].name for i in vc.link] == ["panda_hand"] * 3 + ["panda_leftfinger"] * 3 + ["panda_rightfinger"] * 3
    grasps = plan_grasps(w, "panda_hand", "mug", n=3, iterations=100, seed=0)
    assert len(grasps) == 3
    _check_grasps(spec, grasps, min_fc=0)


def test_cli_write_world_of_a_mounted_hand(tmp_path, capsys):
    from graspsim.cli import main

    out, wf = tmp_path / "g.json", tmp_path / "best.yaml"
    # the default hand of the handset world is the Barrett, the robot carried by the Puma
    assert main(["plan", str(HANDSET[0]), "--n", "2", "--iterations", "30", "--json", str(out),
                 "--write-world", str(wf)]) == 0
    import json

    d = json.loads(out.read_text())
    best = d["grasps"][0]
    assert d["hand"] == "barrett"
    # the result says that the arm was left out and its reach not checked
    assert d["mounted_on"] == "puma" and d["arm_reachability_checked"] is False
    assert "whether 'puma' can reach these grasps is not checked" in d["note"]
    w = graspsim.load_world(str(wf))
    assert list(w.robots) == ["barrett"] and w.robots["barrett"].instance.mount is None
    assert np.allclose(w.robots["barrett"].base_pose, best["base_pose"], atol=1e-9)
    assert "note: 'barrett' is mounted on 'puma'" in capsys.readouterr().out


def test_rank_robust_orders_by_probability_and_matches_a_direct_robustness_call():
    from graspsim.grasp import robustness
    from graspsim.planner.api import ROBUST_DEFAULTS

    kw = dict(n=6, iterations=500, restarts=8, seed=0)
    by_eps = plan_grasps(_load(JAW), "gripper", "box", **kw)
    grasps = plan_grasps(_load(JAW), "gripper", "box", rank="robust", robust_samples=12, robust_seed=3, **kw)
    fc = [g for g in grasps if g.quality.force_closure]
    assert len(fc) >= 3 and all(g.robustness is not None for g in fc)
    assert all(g.robustness is None for g in grasps[len(fc):]) and not any(g.quality.force_closure for g in grasps[len(fc):])
    # the same grasps as the epsilon ranking, re-ordered
    assert {g.palm_pose.tobytes() for g in grasps} == {g.palm_pose.tobytes() for g in by_eps}
    p = [g.robustness.p_force_closure for g in fc]
    assert all(a >= b for a, b in zip(p, p[1:]))
    assert len(set(p)) >= 2               # the noise tells these grasps apart
    for g in fc:                          # exactly a direct call, same grasp, same seed, same noise
        r = robustness(_load(JAW), "gripper", "box", g.pregrasp(), samples=12, seed=3, **ROBUST_DEFAULTS)
        assert (g.robustness.p_force_closure, g.robustness.eps_mean, g.robustness.eps_p05, g.robustness.samples) == \
               (r.probability, r.mean_epsilon, r.p5_epsilon, 12)
        assert r.nominal_force_closure and abs(r.nominal_epsilon - g.quality.epsilon) <= 1e-9


def test_cli_rank_robust_json(tmp_path, capsys):
    import json

    from graspsim.cli import main

    out = tmp_path / "g.json"
    assert main(["plan", str(JAW[0]), "--n", "3", "--iterations", "150", "--seed", "2", "--rank", "robust",
                 "--samples", "4", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    d = json.loads(out.read_text())
    api = plan_grasps(_load(JAW), "gripper", "box", n=3, iterations=150, seed=2, rank="robust", robust_samples=4)
    assert d["rank"] == "robust" and len(d["grasps"]) == len(api)
    for g, a in zip(d["grasps"], api):
        assert g["robustness"] == (None if a.robustness is None else a.robustness.to_dict())
        if a.robustness is not None:
            assert set(g["robustness"]) == {"p_force_closure", "eps_mean", "eps_p05", "samples"}
    assert ("robust: P(force closure)" in text) == any(a.robustness is not None for a in api)
    assert main(["plan", str(JAW[0]), "--samples", "0"]) == 2
    assert capsys.readouterr().err.strip() == "error: --samples 0: must be a number > 0"

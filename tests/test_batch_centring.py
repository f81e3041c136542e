"""``evaluation.closing: centred`` in batch runs: the Franka hand (robots/panda_hand.yaml, the Panda
URDF of pybullet_data) approaching a 6 cm cube from above, aimed at its centre of mass, which sits
4 mm off the cube's centre along the jaws (a weighted cube).  Real SQLite files, real FCL, real
static auto-grasps, compared with the planner's and robustness's centring of the same pose."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import pybullet_data  # noqa: F401  (the test extra installs pybullet for its data)

from graspsim import ModelError
from graspsim.batch import load_config, read_results, run_batch
from graspsim.batch.config import load_scene_world
from graspsim.grasp import Grasp, robustness
from graspsim.planner.api import Problem

ROOT = Path(__file__).resolve().parent.parent
HAND = str(ROOT / "robots" / "panda_hand.yaml")
LEFT, RIGHT = "panda_hand/panda_leftfinger", "panda_hand/panda_rightfinger"
OFFSET = 0.004          # the centre of mass off the cube's centre along world y (m)
HALF = 0.030            # the cube's half side (m)
THRESHOLD = 1e-4        # the contact threshold: a touching finger stops within it of the face (m)


def _weighted_cube(d: Path) -> str:
    p = d / "weighted_cube.yaml"
    p.write_text(f"object: weighted_cube\nshape: {{mesh: {ROOT / 'objects' / 'meshes' / 'cube.stl'}}}\n"
                 f"mass: 0.2\ncom: [0, {OFFSET}, 0]\nmaterial: wood\n")
    return str(p)


def _config(obj: str, closing: str | None) -> dict:
    """Straight down at the centre of mass; roll 0 puts the jaws along world y (across the
    offset), roll 90 deg along x (the offset then only moves the contacts along the faces)."""
    cfg = {"batch": "centring", "hand": HAND, "objects": [obj],
           "candidates": {"directions": {"list": [[0, 0, -1]]}, "rolls": [0.0, math.pi / 2]}}
    if closing is not None:
        cfg["evaluation"] = {"closing": closing}
    return cfg


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("centring")
    obj = _weighted_cube(d)
    out = {"obj": obj}
    for closing in ("static", "centred"):
        db = d / f"{closing}.sqlite"
        res = run_batch(_config(obj, closing), db, progress="off")
        assert res.evaluated == res.total == 2
        out[closing] = read_results(db, timings=False)
    return out


def test_static_closing_touches_with_one_finger_centred_with_both(runs):
    static, centred = runs["static"][0], runs["centred"][0]          # roll 0: jaws across the offset
    for r in (static, centred):
        assert r["status"] == "ok" and r["approach_stop"] == "contact" and r["touched"] == "weighted_cube"
        # the approach aims at the centre of mass: the palm is 4 mm off the cube's centre
        assert r["palm_x"] == pytest.approx(0.0, abs=1e-12) and r["palm_y"] == pytest.approx(OFFSET, abs=1e-12)
    # static (GraspIt's): the finger nearer its face stops there, the coupled other one with it, 8 mm short
    assert static["force_closure"] == 0 and static["epsilon"] == 0.0
    assert RIGHT not in static["contact_links"].split(",") and LEFT in static["contact_links"].split(",")
    assert static["shift_x"] is None and static["shift_y"] is None and static["shift_z"] is None
    assert json.loads(static["dofs"])[0] == pytest.approx(HALF + OFFSET, abs=3e-4)
    # centred: the far finger's gap (2 x offset, plus the near finger's stop within the threshold)
    # halved: the hand moves 4 mm back over the cube's centre, and both fingers close on their faces
    assert centred["force_closure"] == 1 and centred["epsilon"] > 0.05
    assert {LEFT, RIGHT} <= set(centred["contact_links"].split(","))
    assert centred["shift_y"] == pytest.approx(-OFFSET, abs=THRESHOLD)
    assert abs(centred["shift_x"]) < 1e-6 and abs(centred["shift_z"]) < 1e-6
    assert json.loads(centred["dofs"])[0] == pytest.approx(HALF, abs=3e-4)
    # roll 90 deg: both fingers touch without centring, which then does nothing
    s90, c90 = runs["static"][1], runs["centred"][1]
    assert s90["force_closure"] == c90["force_closure"] == 1 and s90["epsilon"] == c90["epsilon"]
    assert (c90["shift_x"], c90["shift_y"], c90["shift_z"]) == (0.0, 0.0, 0.0)


def test_centred_row_equals_the_planners_and_robustness_centring_of_the_same_pose(runs):
    r = runs["centred"][0]
    cfg = load_config(_config(runs["obj"], "centred"))
    w = load_scene_world(cfg.scenes[0])
    h = w.robots["panda_hand"]
    assert h.description.palm_link == h.description.base_link           # palm pose = base pose
    X = np.eye(4)
    X[:3, :3] = _quat_matrix([r["palm_qw"], r["palm_qx"], r["palm_qy"], r["palm_qz"]])
    X[:3, 3] = [r["palm_x"], r["palm_y"], r["palm_z"]]
    g = Problem(w, "panda_hand", "weighted_cube").close_centred(X, h.dof_values)
    assert g.quality.force_closure and g.quality.epsilon == pytest.approx(r["epsilon"], abs=1e-9)
    assert np.allclose(g.base_pose[:3, 3] - X[:3, 3], [r["shift_x"], r["shift_y"], r["shift_z"]], atol=1e-9)
    assert np.allclose(list(g.dofs.values()), json.loads(r["dofs"]), atol=1e-9)
    assert g.contacts == r["n_contacts"]
    # robustness's centred closing without noise: the same verdict and epsilon
    q = robustness(load_scene_world(cfg.scenes[0]), "panda_hand", "weighted_cube", Grasp(X, {}), samples=1,
                   sigma_position=0, sigma_rotation=0, friction=0, closing="centred")
    assert q.nominal_force_closure and q.nominal_epsilon == pytest.approx(r["epsilon"], abs=1e-9)


def test_stored_robustness_is_that_of_the_centred_grasp(runs, tmp_path):
    # without noise and with robustness's own closing static, the verdict tells the two palm poses apart
    rb = {"samples": 2, "seed": 1, "sigma_position": 0, "sigma_rotation": 0, "friction": 0, "closing": "static"}
    cfg = dict(_config(runs["obj"], "centred"), robustness=rb)
    db = tmp_path / "r.sqlite"
    run_batch(cfg, db, progress="off", limit=1)
    r = read_results(db)[0]
    assert r["roll"] == 0.0 and r["force_closure"] == 1 and r["rob_samples"] == 2
    # the grasp robustness re-closes is the one the row reports: the palm moved by the shift,
    # over the cube's centre, where the static closing touches with both fingers
    X = np.eye(4)
    X[:3, :3] = _quat_matrix([r["palm_qw"], r["palm_qx"], r["palm_qy"], r["palm_qz"]])
    X[:3, 3] = [r["palm_x"], r["palm_y"], r["palm_z"]]
    shifted = X.copy()
    shifted[:3, 3] += [r["shift_x"], r["shift_y"], r["shift_z"]]
    assert shifted[1, 3] == pytest.approx(0.0, abs=THRESHOLD)
    w = load_scene_world(load_config(cfg).scenes[0])
    opts = {k: v for k, v in rb.items() if k not in ("samples", "seed")}
    q = robustness(w, "panda_hand", "weighted_cube", Grasp(shifted, {}), samples=2, seed=1, **opts)
    assert r["rob_p_force_closure"] == q.probability == 1.0
    assert np.allclose([r["rob_eps_mean"], r["rob_eps_p05"]], [q.mean_epsilon, q.p5_epsilon], rtol=0, atol=1e-9)
    assert robustness(w, "panda_hand", "weighted_cube", Grasp(X, {}), samples=2, seed=1, **opts).probability == 0.0


def _quat_matrix(q) -> np.ndarray:
    from graspsim.spatial import quat_to_matrix

    return quat_to_matrix(np.asarray(q, dtype=float))


def test_closing_key_errors_name_file_line_field(tmp_path):
    p = tmp_path / "bad.yaml"
    world = ROOT / "worlds" / "panda_hand_cube.yaml"
    p.write_text(f"world: {world}\nevaluation:\n  mode: static\n  closing: wobbly\n")
    with pytest.raises(ModelError) as ei:
        load_config(p)
    assert str(ei.value) == f"{p}:4: evaluation.closing: 'wobbly' is not one of static, centred"
    # centring stands in for the dynamic closing's push: with mode: dynamic it is refused
    p.write_text(f"world: {world}\nevaluation:\n  mode: dynamic\n  closing: centred\n")
    with pytest.raises(ModelError) as ei:
        load_config(p)
    assert str(ei.value).startswith(f"{p}:4: evaluation.closing: 'centred' is for mode: static")
    load_config(str(p), overrides={"evaluation": {"closing": "static"}})      # static goes with dynamic


def test_default_closing_keeps_the_identity_of_existing_result_stores():
    world = str(ROOT / "worlds" / "panda_hand_cube.yaml")
    base = {"batch": "id", "seed": 3, "world": world}
    default = load_config(base)
    assert default.evaluation["closing"] == "static"
    # the evaluation part of the identity exactly as before the key existed (graspsim 686c937)
    assert default.hash_view()["evaluation"] == {"mode": "static", "gws": "L1", "approach_step": 0.01}
    explicit = load_config(dict(base, evaluation={"closing": "static"}))
    centred = load_config(dict(base, evaluation={"closing": "centred"}))
    assert explicit.config_hash() == default.config_hash() != centred.config_hash()
    assert centred.hash_view()["evaluation"]["closing"] == "centred"


def test_command_line_closing_flag_is_the_files_key(runs, tmp_path, capsys):
    from graspsim.batch import read_config
    from graspsim.cli import main

    db = tmp_path / "c.sqlite"
    assert main(["batch", "--hand", HAND, "--object", runs["obj"], "--direction", "0,0,-1", "--rolls", "1",
                 "--closing", "centred", "--name", "centring", "--db", str(db), "--progress", "off"]) == 0
    cfg = load_config(dict(_config(runs["obj"], "centred"), candidates={"directions": {"list": [[0, 0, -1]]},
                                                                        "rolls": 1}))
    assert read_config(db)["config_hash"] == cfg.config_hash()
    assert read_results(db, timings=False) == runs["centred"][:1]
    capsys.readouterr()
    assert main(["batch", "--hand", HAND, "--object", runs["obj"], "--dynamic", "--closing", "centred",
                 "--db", str(tmp_path / "x.sqlite")]) == 2
    assert "<command line>: evaluation.closing: 'centred' is for mode: static" in capsys.readouterr().err

"""A hand that starts inside another body, and model files named inside installed data packages.

* ``static_auto_grasp`` refused nothing: with a fingertip inside the table every closing step was
  cut at its start, no DOF moved, and after 400 iterations (1-2 s) it reported "still closing" and
  analysed the contacts of a pose that cannot exist.  It now raises CollisionError naming the pairs
  and depths, as the simulator does for such a world, and leaves the world as it was.
* ``graspsim grasp`` printed a traceback for the simulator's CollisionError (``--dynamic`` /
  ``--lift``); it now prints one ``error:`` line and exits with status 2, as for a bad file.
* The viewer's auto-grasp and run keys on such a state say why in the status line (they raised out
  of the window's event handler).
* A world's ``file:`` entries, a shape's ``mesh:`` and the loaders' paths take ``NAME://path`` (a
  file in an installed Python data package, as a side file's ``urdf:`` already did); pathlib folded
  the ``//`` and the file was "not found".
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pybullet_data  # the test extra installs pybullet for its data folder
import pytest

import graspsim
from graspsim.cli import main
from graspsim.collision import check_interpenetration
from graspsim.control import static_auto_grasp
from graspsim.errors import CollisionError, ModelError

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(pybullet_data.getDataPath())
LOWERED = 0.14     # m: the Barrett's base height with its fingertips inside the table (0.18 in the world file)


def _lowered_world(tmp_path: Path) -> Path:
    text = (ROOT / "worlds/barrett_mug.yaml").read_text()
    text = text.replace("../robots/", f"{ROOT}/robots/").replace("../objects/", f"{ROOT}/objects/")
    text = text.replace("xyz: [0, 0, 0.18]", f"xyz: [0, 0, {LOWERED}]")
    p = tmp_path / "lowered.yaml"
    p.write_text(text)
    return p


def test_static_auto_grasp_refuses_a_hand_inside_a_body_and_leaves_the_world_as_it_was(tmp_path):
    w = graspsim.load_world(_lowered_world(tmp_path))
    inside = check_interpenetration(w, raise_error=False)
    assert {(a, b) for a, b, _ in inside} == {(f"barrett/f{k}_dist", "table") for k in (1, 2, 3)}
    # the same hand 2 cm lower is 2 cm deeper: the depths are those of a rigid translation
    w2 = graspsim.load_world(_lowered_world(tmp_path))
    X = w2.robots["barrett"].base_pose.copy()
    X[2, 3] -= 0.02
    w2.robots["barrett"].base_pose = X
    deeper = {(a, b): d for a, b, d in check_interpenetration(w2, raise_error=False)}
    for a, b, d in inside:
        assert deeper[(a, b)] == pytest.approx(d + 0.02, abs=1e-9)
    before = w.save_state()
    q0, X0 = w.robots["barrett"].dof_values.copy(), w.robots["barrett"].base_pose.copy()
    with pytest.raises(CollisionError) as e:
        static_auto_grasp(w, "barrett")
    msg = str(e.value)
    assert "starts inside another body" in msg and "'barrett/f1_dist' and 'table' by" in msg
    depth_mm = 1e3 * dict(((a, b), d) for a, b, d in inside)[("barrett/f1_dist", "table")]
    assert f"by {depth_mm:.3g} mm" in msg
    np.testing.assert_array_equal(w.robots["barrett"].dof_values, q0)
    np.testing.assert_array_equal(w.robots["barrett"].base_pose, X0)
    w.restore_state(before)


def test_the_shipped_world_still_closes(tmp_path):
    """The check refuses only a start inside a body: the shipped world closes as before (three
    fingers on the mug, force closure)."""
    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    r = static_auto_grasp(w, "barrett", obj="mug")
    assert r.quality.force_closure and r.iterations < 400


@pytest.mark.parametrize("extra", [[], ["--dynamic"], ["--lift", "0.05"]])
def test_grasp_command_names_the_overlap_in_one_line(tmp_path, capsys, extra):
    rc = main(["grasp", str(_lowered_world(tmp_path)), *extra])
    err = capsys.readouterr().err
    assert rc == 2
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err
    assert "'barrett/f1_dist' and 'table' by" in lines[0]


def test_viewer_keys_say_why_instead_of_raising(tmp_path):
    from graspsim.gui.session import Session

    w = graspsim.load_world(_lowered_world(tmp_path))
    ss = Session(w)
    assert ss.auto_grasp() is False and "starts inside another body" in ss.message
    assert ss.start() is False and ss.message.startswith("cannot simulate: ") and ss.sim is None


# ------------------------------------------------------------------ NAME://path in model files

def test_world_files_meshes_and_loaders_take_data_package_names(tmp_path):
    world = tmp_path / "w.yaml"
    world.write_text(
        "world: pr2_cube\n"
        "robots:\n"
        "  - file: pybullet_data://pr2_gripper.urdf\n"
        "    pose: {xyz: [0, 0, 0.5]}\n"
        "objects:\n"
        "  - {name: box, file: pybullet_data://cube_small.urdf, pose: {xyz: [0.3, 0, 0.025]}}\n"
        "  - name: mesh_cube\n"
        "    pose: {xyz: [-0.3, 0, 0.5]}\n"
        "    mass: 0.1\n"
        "    shape: {mesh: pybullet_data://cube.obj, scale: 0.05}\n")
    w = graspsim.load_world(world)
    by_path = graspsim.load_robot(DATA / "pr2_gripper.urdf")
    by_name = graspsim.load_robot("pybullet_data://pr2_gripper.urdf")
    r = w.robots["physics"].description
    for robot in (by_name, r):
        assert robot.dof_names == by_path.dof_names
        np.testing.assert_array_equal(robot.dof_limits, by_path.dof_limits)
        assert [lk.inertial.mass for lk in robot.links] == [lk.inertial.mass for lk in by_path.links]
    box = graspsim.load_object("pybullet_data://cube_small.urdf")
    ref = graspsim.load_object(DATA / "cube_small.urdf")
    assert box.inertial.mass == ref.inertial.mass == w.bodies["box"].mass
    # cube.obj is a unit cube (vertices at +-0.5): at scale 0.05 a 5 cm cube, I = m a^2 / 6 about its centre
    b = w.bodies["mesh_cube"]
    np.testing.assert_allclose(b.instance.obj.inertial.inertia, np.eye(3) * 0.1 * 0.05 ** 2 / 6, atol=1e-12)


def test_a_missing_data_package_file_is_named_at_its_field(tmp_path):
    world = tmp_path / "w.yaml"
    world.write_text("world: w\nobjects:\n"
                     "  - {name: a, file: pybullet_data://no_such_file.urdf}\n"
                     "  - {name: b, file: graspsim_no_such_package://x.urdf}\n")
    with pytest.raises(ModelError) as e:
        graspsim.load_world(world)
    errs = {x.field: x for x in getattr(e.value, "errors", [e.value])}
    assert errs["objects[0].file"].line == 3 and "no file" in errs["objects[0].file"].problem
    assert errs["objects[1].file"].line == 4 and "is not installed" in errs["objects[1].file"].problem
    with pytest.raises(ModelError, match="no_such_file.urdf"):
        graspsim.load_robot("pybullet_data://no_such_file.urdf")


def test_a_batch_names_objects_in_a_data_package_and_the_panda_starts_open(tmp_path):
    """A batch's ``objects:``/``hand:`` take ``NAME://path`` too.  The shipped Panda side file opens
    the fingers by default (it started closed, at the URDF's 0: every batch candidate approached
    with closed fingers and none could grasp).  Straight down onto pybullet_data's 5 cm cube
    (cube_small.urdf: a 0.05 m box, 0.1 kg), both fingers close onto its sides, 25 mm from the centre
    (the DOF reads 0.17 mm more: the finger pads' offset at 0 in the Panda's meshes), and the pinch
    is force closure."""
    from graspsim.batch import read_results, run_batch

    panda = graspsim.load_robot(ROOT / "robots/panda_hand.yaml")
    assert panda.dofs[0].default == pytest.approx(panda.dof_limits[0, 1]) == pytest.approx(0.04)
    cfg = {"hand": str(ROOT / "robots/panda_hand.yaml"),
           "objects": ["pybullet_data://cube_small.urdf", {"file": "pybullet_data://cube_small.urdf", "name": "c2"}],
           "candidates": {"directions": {"list": [[0, 0, -1]]}, "rolls": [0], "standoffs": [0]}}
    db = tmp_path / "b.sqlite"
    run_batch(cfg, db, progress="off")
    rows = read_results(db)
    assert [r["object"] for r in rows] == ["cube_small", "c2"]     # (its <robot name> is "cube.urdf")
    for r in rows:
        assert r["status"] == "ok" and r["force_closure"] == 1
        (q,) = json_dofs(r["dofs"])
        assert 0.025 <= q <= 0.0255
        assert set(r["contact_links"].split(",")) >= {"panda_hand/panda_leftfinger", "panda_hand/panda_rightfinger"}
    with pytest.raises(ModelError, match=r"objects\[0\]: object file 'pybullet_data://nope.urdf': no file \S*pybullet_data/nope\.urdf$"):
        run_batch({**cfg, "objects": ["pybullet_data://nope.urdf"]}, tmp_path / "c.sqlite", progress="off")


def json_dofs(v):
    import json

    return json.loads(v) if isinstance(v, str) else v

"""Model files: every shipped file validates; every broken file gives the promised error."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim import ModelError
from graspsim.model.loader import load_any

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "robots").glob("*.yaml")) + sorted((ROOT / "objects").glob("*.yaml")) + \
    sorted((ROOT / "worlds").glob("*.yaml"))
BROKEN = ROOT / "tests" / "models" / "broken"

# file -> (line, field, words the message must contain)
EXPECTED = {
    "malformed_yaml.yaml": (5, None, ["malformed YAML", "','"]),
    "unknown_key.yaml": (5, "links[0].mas", ["unknown key 'mas'", "did you mean 'mass'"]),
    "missing_mass.yaml": (3, "links[0].mass", ["missing mass"]),
    "unknown_parent.yaml": (6, "joints[0].parent", ["no link named 'aa'", "did you mean 'a'"]),
    "kinematic_loop.yaml": (9, "joints[2].child", ["kinematic loop"]),
    "limits_reversed.yaml": (7, "joints[0].limits", ["min > max", "90 > -90"]),
    "unknown_joint_in_dof.yaml": (8, "dofs[0].joints[0]", ["unknown joint 'elbw'", "did you mean 'elbow'"]),
    "bad_joint_type.yaml": (6, "joints[0].type", ["'revolut'", "did you mean 'revolute'"]),
    "zero_axis.yaml": (6, "joints[0].axis", ["zero vector"]),
    "negative_mass.yaml": (3, "mass", ["must be > 0", "-2"]),
    "missing_mesh.yaml": (2, "shape.mesh", ["mesh file not found", "no_such_mesh.stl"]),
    "open_mesh.yaml": (1, "shape", ["not watertight", "open_box.stl"]),
    "bad_unit.yaml": (2, "units.length", ["unknown length unit 'furlong'"]),
    "bad_inertia.yaml": (5, "inertia", ["positive definite", "triangle inequality"]),
    "two_shapes.yaml": (2, "shape", ["exactly one of", "box, sphere"]),
    "duplicate_link.yaml": (4, "links[1].name", ["duplicate link name 'a'"]),
    "world_unknown_robot_file.yaml": (3, "robots[0].file", ["is invalid"]),
    "world_unknown_dof.yaml": (5, "robots[0].dofs.sprad", ["no DOF 'sprad'", "did you mean 'spread'"]),
    "world_unknown_material.yaml": (3, "obstacles[0].material", ["'unobtanium'", "no friction entries"]),
    "world_mount_unknown.yaml": (5, "robots[0].mount.robot", ["no robot named 'arm'"]),
    "not_a_model.yaml": (1, None, ["'robot', 'object' or 'world'"]),
    "duplicate_key.yaml": (4, None, ["duplicate key 'mass'"]),
    "dof_default_outside.yaml": (9, "dofs[0].default", ["120", "outside the DOF limits [0, 90]"]),
}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shipped_files_validate(path):
    model = load_any(path)
    assert model.name


def test_corpus_is_complete():
    files = {p.name for p in BROKEN.glob("*.yaml")}
    assert files == set(EXPECTED), "every broken file needs an expectation (and vice versa)"
    assert len(files) >= 15


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_broken_file_gives_promised_error(name):
    line, field, words = EXPECTED[name]
    with pytest.raises(ModelError) as info:
        load_any(BROKEN / name)
    errs = getattr(info.value, "errors", [info.value])
    # the first error is the one we promise; it names file, line, field and problem
    hits = [e for e in errs if e.line == line and e.field == field and all(w in e.problem for w in words)]
    assert hits, f"no error with line {line}, field {field}, words {words}: got {[str(e) for e in errs]}"
    e = hits[0]
    assert name in str(e) and e.file is not None
    assert isinstance(e, ValueError)  # ModelError is a ValueError


def test_cli_validate_exit_status_and_one_line_per_problem():
    bad = subprocess.run([sys.executable, "-m", "graspsim.cli", "validate", str(BROKEN / "unknown_key.yaml")],
                         capture_output=True, text=True)
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr
    first = bad.stderr.splitlines()[0]
    assert first.startswith("error: ") and "unknown_key.yaml:5: links[0].mas: unknown key 'mas'" in first
    good = subprocess.run([sys.executable, "-m", "graspsim.cli", "validate", *map(str, SHIPPED)],
                          capture_output=True, text=True)
    assert good.returncode == 0, good.stderr
    assert good.stdout.count("ok: ") == len(SHIPPED)


def test_cli_info_lists_dofs_and_bodies():
    out = subprocess.run([sys.executable, "-m", "graspsim.cli", "info", str(ROOT / "worlds/puma_barrett_handset.yaml")],
                         capture_output=True, text=True, check=True).stdout
    assert "mounted on puma/link6" in out
    assert "limits [-40.0, 215.0] deg" in out    # Puma j2
    assert "limits [0.0, 144.0] deg" in out      # Barrett finger DOF
    assert "body 'handset': 0.25 kg, plastic" in out


def test_units_and_values_with_units(tmp_path):
    f = tmp_path / "o.yaml"
    f.write_text("object: o\nunits: mm\nshape: {box: [100, '20 cm', 0.05 m]}\nmass: 2\n")
    o = graspsim.load_object(f)
    assert o.shape.size == pytest.approx((0.1, 0.2, 0.05))
    # box inertia 1/12 m (b^2 + c^2) about x, computed from the given mass
    assert o.inertial.inertia[0, 0] == pytest.approx(2 / 12 * (0.2 ** 2 + 0.05 ** 2), rel=1e-12)


def test_world_api_names_and_dofs():
    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    hand = w.robots["barrett"]
    assert hand.dof_names == ["spread", "f1", "f2", "f3"]
    assert np.allclose(np.degrees(hand.dof_limits), [[0, 180], [0, 144], [0, 144], [0, 144]])
    hand.set_dofs({"f1": np.radians(30)})
    q = hand.joint_values
    j = hand.description.joint_index
    # coupling: proximal = dof + 5 deg, distal = dof / 3 + 40 deg
    assert np.degrees(q[j["f1_prox"]]) == pytest.approx(35.0)
    assert np.degrees(q[j["f1_dist"]]) == pytest.approx(50.0)
    with pytest.raises(ValueError, match="outside limits"):
        hand.set_dofs({"f2": np.radians(150)})
    assert w.bodies["mug"].mass == pytest.approx(0.3)
    assert w.description.materials.mu("rubber", "glass") == (1.0, 0.9)
    assert w.description.materials.mu("frictionless", "rubber") == (0.0, 0.0)


def test_mounted_hand_follows_arm():
    w = graspsim.load_world(ROOT / "worlds/puma_barrett_handset.yaml")
    arm, hand = w.robots["puma"], w.robots["barrett"]
    X_flange = arm.link_pose("link6")
    X_palm = hand.palm_pose
    # palm sits 0.136 m along the flange z axis, same orientation
    assert np.allclose(X_palm[:3, 3], X_flange[:3, 3] + 0.136 * X_flange[:3, 2], atol=1e-12)
    arm.set_dofs({"j1": 0.3})
    X_flange2 = arm.link_pose("link6")
    assert np.allclose(hand.palm_pose[:3, 3], X_flange2[:3, 3] + 0.136 * X_flange2[:3, 2], atol=1e-12)
    assert not np.allclose(hand.palm_pose, X_palm)

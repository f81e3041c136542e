"""Robots from URDF: kinematics, mimic coupling and inertials against the URDF itself (yourdfpy's
forward kinematics, the <inertial> values read independently with lxml), package:// search,
side files, auto-grasp with the imported Franka hand, and the broken-URDF corpus."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim import ModelError
from graspsim.errors import ModelWarning
from graspsim.model.loader import load_any, load_robot

import pybullet_data  # the test extra installs pybullet for its data folder
import yourdfpy

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "models"
BROKEN = MODELS / "urdf_broken"
DATA = Path(pybullet_data.getDataPath())
PANDA = DATA / "franka_panda" / "panda.urdf"
XARM = DATA / "xarm" / "xarm6_with_gripper.urdf"
TWO_FINGER = MODELS / "two_finger.urdf"


def _load(path):
    with _quiet():
        return graspsim.load_robot(path)


class _quiet:
    """Model warnings (open meshes, rounded inertias of real URDFs) are expected here."""

    def __enter__(self):
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", ModelWarning)

    def __exit__(self, *exc):
        return self._w.__exit__(*exc)


def _rot_angle(R: np.ndarray) -> float:
    """Rotation angle (rad) of a 3x3 rotation matrix, accurate for small angles."""
    from scipy.spatial.transform import Rotation

    return float(np.linalg.norm(Rotation.from_matrix(R).as_rotvec()))


def fk_error_against_yourdfpy(robot, ref, *, seed: int, n: int = 20) -> tuple[float, float]:
    """Largest position (m) and rotation (rad) difference between graspsim's forward kinematics of
    every link and yourdfpy's (``ref``, a loaded yourdfpy.URDF) at ``n`` random configurations."""
    from graspsim import kinematics as K

    rng = np.random.default_rng(seed)
    worst_p = worst_r = 0.0
    for _ in range(n):
        d = _random_dofs(robot, rng)
        ref.update_cfg({name: float(v) for name, v in zip(robot.dof_names, d)})
        X = K.forward_kinematics(robot, K.joint_values(robot, d))
        for i, name in enumerate(robot.link_names):
            Xr = ref.get_transform(frame_to=name, frame_from=ref.base_link)
            worst_p = max(worst_p, float(np.linalg.norm(X[i, :3, 3] - Xr[:3, 3])))
            worst_r = max(worst_r, _rot_angle(X[i, :3, :3].T @ Xr[:3, :3]))
    return worst_p, worst_r


def _random_dofs(robot, rng) -> np.ndarray:
    lim = robot.dof_limits.copy()
    lim[~np.isfinite(lim[:, 0]), 0] = -np.pi
    lim[~np.isfinite(lim[:, 1]), 1] = np.pi
    return rng.uniform(lim[:, 0], lim[:, 1])


# -- forward kinematics against yourdfpy ------------------------------------------------------

@pytest.mark.parametrize("urdf", [PANDA, XARM, TWO_FINGER], ids=lambda p: p.stem)
def test_forward_kinematics_matches_yourdfpy(urdf):
    robot = _load(urdf)
    ref = yourdfpy.URDF.load(str(urdf), build_scene_graph=True, load_meshes=False)
    assert set(robot.link_names) == {l.name for l in ref.robot.links}
    assert robot.dof_names == [j.name for j in ref.robot.joints if j.type != "fixed" and j.mimic is None]
    worst_p, worst_r = fk_error_against_yourdfpy(robot, ref, seed=17)
    assert worst_p < 1e-9 and worst_r < 1e-9, (worst_p, worst_r)


def test_split_arm_and_mounted_hand_match_the_whole_urdf():
    """An arm+hand URDF split into arm (side file: exclude) and hand (side file: root) and mounted
    again puts every link where yourdfpy puts it in the one-file robot."""
    with _quiet():
        w = graspsim.load_world(MODELS / "panda_arm_hand_world.yaml")
    arm, hand = w.robots["arm"], w.robots["hand"]
    assert hand.description.link_names[0] == "panda_hand" and "panda_hand" not in arm.description.link_names
    ref = yourdfpy.URDF.load(str(PANDA), build_scene_graph=True, load_meshes=False)
    rng = np.random.default_rng(3)
    for _ in range(5):
        da, dh = _random_dofs(arm.description, rng), _random_dofs(hand.description, rng)
        arm.set_dofs(da)
        hand.set_dofs(dh)
        ref.update_cfg({**dict(zip(arm.dof_names, map(float, da))), "panda_finger_joint1": float(dh[0])})
        for r in (arm, hand):
            for name in r.description.link_names:
                X, Xr = r.link_pose(name), ref.get_transform(name, ref.base_link)
                assert np.linalg.norm(X[:3, 3] - Xr[:3, 3]) < 1e-9
                assert _rot_angle(X[:3, :3].T @ Xr[:3, :3]) < 1e-9


# -- mimic coupling ---------------------------------------------------------------------------

def test_panda_finger_dof_moves_both_fingers_by_the_multiplier():
    from graspsim import kinematics as K

    robot = _load(PANDA)
    ref = yourdfpy.URDF.load(str(PANDA), build_scene_graph=False, load_meshes=False)
    mimic = {j.name: j.mimic for j in ref.robot.joints}["panda_finger_joint2"]
    assert robot.dof_names[-1] == "panda_finger_joint1" and "panda_finger_joint2" not in robot.dof_names
    d = np.zeros(len(robot.dofs))
    X0 = K.forward_kinematics(robot, K.joint_values(robot, d))
    d[-1] = 0.03
    X1 = K.forward_kinematics(robot, K.joint_values(robot, d))
    hand = robot.link_index["panda_hand"]
    R = X0[hand, :3, :3]
    left = R.T @ (X1[robot.link_index["panda_leftfinger"], :3, 3] - X0[robot.link_index["panda_leftfinger"], :3, 3])
    right = R.T @ (X1[robot.link_index["panda_rightfinger"], :3, 3] - X0[robot.link_index["panda_rightfinger"], :3, 3])
    # joint1 slides along +y of the hand, joint2 (= multiplier * joint1 + offset) along -y
    assert np.allclose(left, [0, 0.03, 0], atol=1e-15)
    assert np.allclose(right, [0, -0.03 * mimic.multiplier, 0], atol=1e-15)
    assert mimic.multiplier == 1.0 and mimic.offset == 0.0


def test_mimic_multiplier_and_offset_become_ratio_and_offset():
    from graspsim import kinematics as K

    robot = _load(TWO_FINGER)
    j = robot.joints[robot.joint_index["right_slide"]]
    assert robot.dofs[j.dof].name == "left_slide" and (j.ratio, j.offset) == (-0.5, 0.01)
    # the DOF's range is where both joints stay in their limits: left [-0.01, 0.04],
    # right = -0.5 d + 0.01 in [-0.01, 0.03]  ->  d in [-0.04, 0.04]
    assert np.allclose(robot.dof_limits[robot.dof_index["left_slide"]], [-0.01, 0.04])
    d = np.zeros(3)
    for v in (-0.01, 0.0, 0.025):
        d[robot.dof_index["left_slide"]] = v
        q = K.joint_values(robot, d)
        assert q[robot.joint_index["left_slide"]] == v
        assert q[robot.joint_index["right_slide"]] == pytest.approx(-0.5 * v + 0.01, abs=1e-16)


# -- inertials --------------------------------------------------------------------------------

def _urdf_inertials(path: Path) -> dict:
    """{link: (mass, xyz, rpy, I (3x3 in the inertial frame))} read straight from the XML."""
    from lxml import etree

    out = {}
    for link in etree.parse(str(path)).getroot().findall("link"):
        el = link.find("inertial")
        if el is None:
            continue
        o = el.find("origin")
        xyz = np.array([float(x) for x in (o.get("xyz", "0 0 0") if o is not None else "0 0 0").split()])
        rpy = np.array([float(x) for x in (o.get("rpy", "0 0 0") if o is not None else "0 0 0").split()])
        i = el.find("inertia")
        g = lambda k: float(i.get(k, 0.0))
        I = np.array([[g("ixx"), g("ixy"), g("ixz")], [g("ixy"), g("iyy"), g("iyz")], [g("ixz"), g("iyz"), g("izz")]])
        out[link.get("name")] = (float(el.find("mass").get("value")), xyz, rpy, I)
    return out


@pytest.mark.parametrize("urdf", [PANDA, XARM, TWO_FINGER], ids=lambda p: p.stem)
def test_link_mass_com_and_inertia_equal_the_urdf_inertials(urdf):
    from scipy.spatial.transform import Rotation

    robot = _load(urdf)
    checked = 0
    for name, (m, xyz, rpy, I_u) in _urdf_inertials(urdf).items():
        if m == 0:
            continue
        ine = robot.links[robot.link_index[name]].inertial
        R = Rotation.from_euler("xyz", rpy).as_matrix()      # URDF rpy: fixed-axis x, then y, then z
        assert ine.mass == m
        assert np.allclose(ine.com, xyz, atol=1e-15)
        assert np.allclose(ine.inertia, R @ I_u @ R.T, rtol=1e-12, atol=1e-15)
        checked += 1
    assert checked >= 5


def test_rotated_inertial_frame_analytic():
    """two_finger's base: diag(1, 2, 3) g m^2 about axes turned 90 deg about z -> diag(2, 1, 3) in the link."""
    base = _load(TWO_FINGER).links[0].inertial
    assert np.allclose(base.inertia, np.diag([0.002, 0.001, 0.003]), atol=1e-18)
    assert np.allclose(base.com, [0, 0, 0.02])


def test_massless_frames_get_a_light_placeholder_body():
    robot = _load(PANDA)
    for name in ("panda_link8", "panda_grasptarget"):          # <mass value="0.0"/>, no geometry
        ine = robot.links[robot.link_index[name]].inertial
        assert ine.mass == 1e-3 and np.allclose(ine.inertia, 1e-3 * 0.01 ** 2 * np.eye(3))


# -- open meshes: convex hull for contacts, and for the inertia with a warning ------------------

def _open_box_robot(tmp_path: Path) -> Path:
    shutil.copy(MODELS / "open_box.stl", tmp_path / "open_box.stl")
    u = tmp_path / "box_bot.urdf"
    u.write_text('<robot name="box_bot">\n  <link name="body">\n    <collision>\n      <geometry>\n'
                 '        <mesh filename="open_box.stl"/>\n      </geometry>\n    </collision>\n  </link>\n</robot>\n')
    return u


def test_open_mesh_without_inertial_uses_its_convex_hull_with_a_warning(tmp_path):
    u = _open_box_robot(tmp_path)
    with pytest.warns(ModelWarning) as rec:
        robot = graspsim.load_robot(u)
    msgs = [str(w.message) for w in rec]
    assert any("open_box.stl" in m and "convex hull" in m and "\n" not in m for m in msgs), msgs
    ine = robot.links[0].inertial
    a = 0.05                                   # the open box's hull is the closed 5 cm cube
    m = 1000.0 * a ** 3
    assert ine.mass == pytest.approx(m, rel=1e-6)
    assert np.allclose(ine.inertia, m * a * a / 6 * np.eye(3), rtol=1e-6, atol=1e-12)


def test_open_mesh_collides_as_its_hull(tmp_path):
    """A sphere 5 mm outside the box's open side is 5 mm away, one inside it overlaps."""
    import trimesh

    from graspsim.collision import closest_points

    u = _open_box_robot(tmp_path)
    mesh = trimesh.load(tmp_path / "open_box.stl")
    # the open side: the axis direction with no face normal pointing that way
    dirs = [s * e for e in np.eye(3) for s in (1, -1)]
    open_dir = next(d for d in dirs if not np.any(mesh.face_normals @ d > 0.99))
    c_out = (0.025 + 0.005 + 0.01) * open_dir
    w_file = tmp_path / "w.yaml"
    w_file.write_text(f"world: w\nrobots:\n  - {{name: bot, file: {u.name}}}\nobstacles:\n"
                      f"  - {{name: ball, shape: {{sphere: 0.01}}, pose: {{xyz: {list(map(float, c_out))}}}}}\n")
    with _quiet():
        w = graspsim.load_world(w_file)
    d, _, _ = closest_points(w, "bot/body", "ball")
    assert d == pytest.approx(0.005, abs=1e-6)
    w.bodies["ball"].pose = np.eye(4)               # at the centre, inside the (open) box
    d_in, _, _ = closest_points(w, "bot/body", "ball")
    assert d_in < -0.01                             # overlapping (an open surface has no inside)


# -- package:// and the search path -----------------------------------------------------------

def test_package_urls_resolve_through_the_search_path(tmp_path, monkeypatch):
    pkg = tmp_path / "share" / "my_hand"
    (pkg / "meshes").mkdir(parents=True)
    shutil.copy(ROOT / "objects" / "meshes" / "cube.stl", pkg / "meshes" / "palm.stl")
    udir = tmp_path / "elsewhere"
    udir.mkdir()
    u = udir / "hand.urdf"
    u.write_text('<robot name="h">\n  <link name="palm">\n    <collision>\n      <geometry>\n'
                 '        <mesh filename="package://my_hand/meshes/palm.stl" scale="2 2 2"/>\n'
                 '      </geometry>\n    </collision>\n  </link>\n</robot>\n')
    for var in ("GRASPSIM_PACKAGE_PATH", "ROS_PACKAGE_PATH"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ModelError) as info:
        graspsim.load_robot(u)
    e = info.value
    assert (e.file, e.line, e.field) == (str(u), 5, "link 'palm'/collision/geometry/mesh")
    assert "package://my_hand/meshes/palm.stl" in e.problem and str(udir / "my_hand/meshes/palm.stl") in e.problem
    for var in ("GRASPSIM_PACKAGE_PATH", "ROS_PACKAGE_PATH"):
        monkeypatch.setenv(var, os.pathsep.join(["/nonexistent", str(pkg.parent)]))
        robot = graspsim.load_robot(u)
        assert robot.links[0].shape.source == str(pkg / "meshes" / "palm.stl")
        assert np.ptp(robot.links[0].shape.vertices, axis=0) == pytest.approx([0.12] * 3)   # 6 cm cube x 2
        monkeypatch.delenv(var)


def test_pybullet_data_prefix_and_side_file_overrides():
    robot = graspsim.load_robot(ROOT / "robots" / "panda_hand.yaml")
    assert robot.name == "panda_hand" and robot.link_names == ["panda_hand", "panda_leftfinger",
                                                               "panda_rightfinger", "panda_grasptarget"]
    assert robot.links[robot.palm_link].name == "panda_hand" and np.allclose(robot.approach, [0, 0, 1])
    d = robot.dofs[0]
    assert (d.velocity, d.kp, d.kd, d.effort) == (-0.1, 8000.0, 80.0, 40.0)
    assert robot.links[1].material == "rubber" and robot.links[0].material == "plastic"
    assert robot.links[1].shape.source == str(DATA / "franka_panda/meshes/collision/finger.obj")
    assert robot.links[1].visuals[0].mesh == str(DATA / "franka_panda/meshes/visual/finger.obj")
    # batch runs fingerprint the URDF behind a side file too
    from graspsim.batch.config import scene_model_files

    files = scene_model_files(graspsim.load_world(ROOT / "worlds" / "panda_hand_mug.yaml"))
    assert str(PANDA) in files and str(ROOT / "robots" / "panda_hand.yaml") in files


def test_bare_urdf_defaults():
    """No side file: palm = root, DOFs close towards the upper limit at the URDF's velocity limit,
    push with its effort; <dynamics> gives the joint friction."""
    robot = _load(TWO_FINGER)
    assert robot.links[robot.palm_link].name == "base" and np.allclose(robot.approach, [0, 0, 1])
    slide = robot.dofs[robot.dof_index["left_slide"]]
    assert (slide.velocity, slide.effort, slide.kp) == (0.1, 30.0, pytest.approx(30 / 0.005))
    roll = robot.joints[robot.joint_index["wrist_roll"]]
    assert np.all(np.isinf(roll.limits)) and (roll.viscous, roll.coulomb) == (0.05, 0.01)
    assert robot.dofs[roll.dof].velocity == 0.0          # continuous: nothing to close towards
    tip = robot.dofs[robot.dof_index["tip_bend"]]
    assert (tip.velocity, tip.effort, tip.kp, tip.kd) == (1.5, 2.0, pytest.approx(2 / 0.05), pytest.approx(0.4))
    assert robot.links[0].color == (0.6, 0.6, 0.65)                  # the named top-level material


def test_warm_load_is_cached_and_file_changes_invalidate(tmp_path):
    u = tmp_path / "two_finger.urdf"
    u.write_text(TWO_FINGER.read_text().replace("../../objects/meshes/cube.stl",
                                                str(ROOT / "objects/meshes/cube.stl")))
    a = graspsim.load_robot(u)
    t0 = time.perf_counter()
    b = graspsim.load_robot(u)
    warm = time.perf_counter() - t0
    assert b is a and warm < 0.5
    os.utime(u, ns=(u.stat().st_atime_ns, u.stat().st_mtime_ns + 10 ** 9))
    assert graspsim.load_robot(u) is not a


# -- auto-grasp with the imported Franka hand -------------------------------------------------

def test_static_autograsp_panda_hand_on_the_mug():
    from graspsim import control, grasp

    w = graspsim.load_world(ROOT / "worlds" / "panda_hand_mug.yaml")
    r = control.static_auto_grasp(w, "panda_hand")
    gc = r.grasp_contacts
    assert r.stopped_by == {"panda_finger_joint1": "contact"}
    assert {"panda_hand/panda_leftfinger", "panda_hand/panda_rightfinger"} <= set(gc.links)
    # the handle is 12 mm thick: each finger stops 6 mm from the centre (within the mesh's facets)
    assert r.dofs[0] == pytest.approx(0.006, abs=3e-4)
    mug = w.bodies["mug"]
    q = grasp.analyze(gc.points, gc.normals, gc.mu, center=mug.com_world,
                      torque_scale=grasp.torque_scale(w, "mug"), gws="L1")
    assert q.force_closure is True and r.quality.force_closure is True
    # the friction pyramids' orientation (default tangents here) moves epsilon by a fraction only
    assert q.epsilon == pytest.approx(r.quality.epsilon, rel=0.01) and q.epsilon > 0.01


# -- broken files -----------------------------------------------------------------------------

# file -> (line, element, words the one-line message must contain)
EXPECTED = {
    "malformed_xml.urdf": (6, None, ["malformed XML"]),
    "empty.urdf": (1, None, ["malformed XML", "empty"]),
    "not_a_robot.urdf": (2, "sdf", ["<robot"]),
    "unknown_parent.urdf": (6, "joint 'j'/parent", ["no link named 'bse'", "did you mean 'base'"]),
    "kinematic_loop.urdf": (10, "joint 'ac'/child", ["kinematic loop", "'bc'"]),
    "two_roots.urdf": (5, "link 'stray'", ["'a', 'stray'", "one root"]),
    "missing_mesh.urdf": (6, "link 'palm'/collision/geometry/mesh", ["not found", "no_such_package/meshes/palm.stl",
                                                                    "urdf_broken/no_such_package"]),
    "limits_reversed.urdf": (8, "joint 'elbow'/limit", ["lower 1.5 > upper -1.5"]),
    "zero_axis.urdf": (7, "joint 'slide'/axis", ["zero vector"]),
    "bad_number.urdf": (7, "joint 'j'/origin", ["xyz=\"0 0.1 zero\"", "3 finite numbers"]),
    "bad_joint_type.urdf": (5, "joint 'j'", ["'revolut'", "did you mean 'revolute'"]),
    "floating_joint.urdf": (5, "joint 'free'", ["'floating' is not supported"]),
    "missing_limit.urdf": (5, "joint 'knee'", ["needs <limit"]),
    "mimic_unknown_joint.urdf": (13, "joint 'right'/mimic", ["no joint named 'lefft'", "did you mean 'left'"]),
    "mimic_loop.urdf": (9, "joint 'p'/mimic", ["loop", "p -> q -> p"]),
    "duplicate_link.urdf": (4, "link 'a'", ["duplicate link name 'a'", "line 3"]),
    "bad_inertia.urdf": (4, "link 'a'/inertial/inertia", ["positive definite", "-1"]),
    "missing_geometry.urdf": (4, "link 'a'/visual", ["missing <geometry>"]),
    "negative_radius.urdf": (5, "link 'a'/collision/geometry/cylinder", ["radius=\"-0.01\"", "> 0"]),
    # a link's second <collision> element (several are its several shapes) is read like the first
    "second_collision_missing_mesh.urdf": (7, "link 'palm'/collision/geometry/mesh", ["not found", "no_such_tip.stl"]),
    # side files
    "side_unknown_dof.yaml": (5, "dofs[0]", ["no DOF 'left_slid'", "did you mean 'left_slide'"]),
    "side_missing_urdf.yaml": (2, "urdf", ["file not found", "no_such_robot.urdf"]),
    "side_unknown_package.yaml": (2, "urdf", ["'no_such_data_package' is not installed"]),
    "side_palm_outside.yaml": (4, "palm", ["no link 'base' among the imported links"]),
}


def test_broken_corpus_is_complete():
    files = {p.name for p in BROKEN.iterdir()}
    assert files == set(EXPECTED)
    assert len([f for f in files if f.endswith(".urdf")]) >= 10


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_broken_urdf_gives_the_promised_error(name):
    line, element, words = EXPECTED[name]
    with pytest.raises(ModelError) as info:     # as a robot: load_any reads a one-link URDF as an object
        (load_robot if name.endswith(".urdf") else load_any)(BROKEN / name)
    errs = getattr(info.value, "errors", [info.value])
    assert len(errs) == 1, [str(e) for e in errs]
    e = errs[0]
    assert (e.line, e.field) == (line, element), str(e)
    assert all(wd in e.problem for wd in words), str(e)
    assert str(e).startswith(f"{BROKEN / name}:{line}: ") and "\n" not in str(e)


def test_cli_validate_urdf_files():
    broken = sorted(str(p) for p in BROKEN.glob("*.urdf"))
    bad = subprocess.run([sys.executable, "-m", "graspsim.cli", "validate", *broken], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    lines = bad.stderr.splitlines()
    assert len(lines) == len(broken) and all(l.startswith("error: ") for l in lines)
    good = subprocess.run([sys.executable, "-m", "graspsim.cli", "validate", str(PANDA), str(TWO_FINGER),
                           str(ROOT / "robots/panda_hand.yaml")], capture_output=True, text=True)
    assert good.returncode == 0, good.stderr
    assert good.stdout.count("ok: ") == 3
    # link6's collision mesh (34 convex pieces in one file) is not closed: one warning line; the bare
    # Panda's placeholder inertias (0.1 kg m^2 everywhere) and two_finger's made-up ones exceed what
    # mass inside their collision shapes can give (m R^2): one line per robot (panda_hand.yaml takes
    # the shapes' inertias and says nothing).  two_finger's tip: 1e-6 kg m^2 for 0.01 kg is a radius
    # of gyration of 10 mm, its sphere's radius 8 mm.
    warn = [l for l in good.stderr.splitlines() if l]
    assert len(warn) == 3, warn
    assert warn[0].startswith(f"warning: {PANDA}:") and "link6.obj" in warn[0]
    assert warn[1].startswith(f"warning: {PANDA}: inertias that no mass inside the links' collision shapes can give")
    assert "'panda_leftfinger' 0.1 kg m^2 for 0.1 kg, which would lie 1 m from its com" in warn[1]
    assert warn[2].startswith(f"warning: {TWO_FINGER}: inertias")
    assert "'tip' 1e-06 kg m^2 for 0.01 kg, which would lie 0.01 m from its com (its shapes reach 0.008 m)" in warn[2]


def test_a_side_file_takes_the_links_inertias_from_their_shapes(tmp_path):
    """``inertia: shapes`` (robots/panda_hand.yaml): each link's centre of mass and inertia are those of
    its collision mesh at uniform density and the URDF's mass, computed here by trimesh from the
    link's mesh; the URDF's own placeholders (0.1 kg m^2) are gone.  Any other value is named."""
    import trimesh

    hand = graspsim.load_robot(ROOT / "robots/panda_hand.yaml")
    for name in ("panda_hand", "panda_leftfinger"):
        lk = hand.links[hand.link_index[name]]
        (shape,) = lk.shapes
        tm = trimesh.Trimesh(shape.vertices_in(np.eye(4)), shape.faces, process=False)
        assert tm.is_volume
        assert lk.inertial.mass == pytest.approx(0.81 if name == "panda_hand" else 0.1, rel=1e-12)
        np.testing.assert_allclose(lk.inertial.com, tm.center_mass, atol=1e-9)
        np.testing.assert_allclose(lk.inertial.inertia, tm.moment_inertia * (lk.inertial.mass / tm.volume),
                                   rtol=1e-7, atol=1e-12)
        assert np.linalg.eigvalsh(lk.inertial.inertia).max() < 0.01
    side = tmp_path / "h.yaml"
    side.write_text(f"robot: h\nurdf: {PANDA}\nroot: panda_hand\ninertia: cad\n")
    with pytest.raises(ModelError, match=r"h.yaml:4: inertia: expected 'urdf'.*got 'cad'"):
        graspsim.load_robot(side)


def test_disk_cache_serves_a_new_process_without_parsing(tmp_path):
    """The second process finds the Panda in the on-disk cache: yourdfpy is never imported, and the
    robot is the same (link poses at a random configuration, masses, collision vertices)."""
    code = ("import sys, warnings, numpy as np, graspsim\n"
            "from graspsim import kinematics as K\n"
            "warnings.simplefilter('ignore')\n"
            f"r = graspsim.load_robot({str(PANDA)!r})\n"
            "d = np.linspace(-0.5, 0.02, len(r.dofs))\n"
            "X = K.forward_kinematics(r, K.joint_values(r, d))\n"
            "print('yourdfpy' in sys.modules, repr(float(np.abs(X).sum())), repr(sum(l.inertial.mass for l in r.links)),"
            " repr(float(sum(np.abs(l.shape.vertices).sum() for l in r.links if l.shape is not None))),"
            " r.links[0].shape.vertices.flags.writeable)\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "GRASPSIM_URDF_CACHE": "1"}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split()
            for _ in range(2)]
    assert runs[0][0] == "True" and runs[1][0] == "False"      # parsed, then served from the cache
    assert runs[0][1:] == runs[1][1:] and runs[1][-1] == "False"
    assert len(list((tmp_path / "graspsim" / "urdf").glob("*.pkl"))) == 1


def test_viewer_draws_the_visual_geometry():
    """Links from a URDF carry their <visual> elements; the viewer's triangles for them are the
    visual mesh files (scaled), primitives are tessellated at their size."""
    import trimesh

    from graspsim.gui.visuals import body_visuals, visual_triangles

    w = graspsim.load_world(ROOT / "worlds" / "panda_hand_mug.yaml")
    vis = body_visuals(w)
    t = w.table
    finger = vis[t.index["panda_hand/panda_rightfinger"]]
    assert len(finger) == 1 and finger[0].mesh == str(DATA / "franka_panda/meshes/visual/finger.obj")
    assert np.allclose(finger[0].X_LS[:3, :3], np.diag([-1, -1, 1]), atol=1e-11)   # rpy (0, 0, pi)
    V, F = visual_triangles(finger[0])
    ref = trimesh.load(finger[0].mesh, force="mesh", process=False)
    assert len(F) == len(ref.faces) > len(t.shapes[t.index["panda_hand/panda_rightfinger"]].faces)
    assert np.allclose(V.min(0), ref.bounds[0]) and np.allclose(V.max(0), ref.bounds[1])
    assert vis[t.index["mug"]] == () and vis[t.index["panda_hand/panda_grasptarget"]] == ()
    box = _load(TWO_FINGER).links[0].visuals[0]
    assert (box.kind, box.size, box.color) == ("box", (0.12, 0.04, 0.04), (0.6, 0.6, 0.65))
    Vb, _ = visual_triangles(box)
    assert np.allclose(Vb.max(0), [0.06, 0.02, 0.02]) and np.allclose(Vb.min(0), [-0.06, -0.02, -0.02])


def test_tolerated_quirks_of_shipped_urdfs(tmp_path):
    """What pybullet_data's URDFs do and a URDF reader should take: blank lines before the XML
    declaration and version="0.0" in it (line numbers still those of the file), a singular inertia
    (the collision shape's inertia at the given mass is used, with a warning), a zero-size visual
    (not drawn, with a warning)."""
    u = tmp_path / "quirks.urdf"
    u.write_text('\n\n<?xml version="0.0" ?>\n<robot name="q">\n  <link name="a">\n'
                 '    <inertial><mass value="2"/><inertia ixx="1" iyy="1" izz="0"/></inertial>\n'
                 '    <visual><geometry><sphere radius="0.0"/></geometry></visual>\n'
                 '    <collision><geometry><box size="0.1 0.2 0.3"/></geometry></collision>\n'
                 '  </link>\n  <link name="b"/>\n'
                 '  <joint name="j" type="revolute"><parent link="a"/><child link="b"/>\n'
                 '    <limit lower="1" upper="0" effort="1" velocity="1"/></joint>\n</robot>\n')
    with pytest.raises(ModelError) as info:
        graspsim.load_robot(u)
    assert info.value.line == 12 and "lower 1 > upper 0" in info.value.problem
    u.write_text(u.read_text().replace('lower="1" upper="0"', 'lower="0" upper="1"'))
    with pytest.warns(ModelWarning) as rec:
        robot = graspsim.load_robot(u)
    msgs = [str(w.message) for w in rec]
    assert any(m.startswith(f"{u}:7: link 'a'/visual/geometry/sphere: radius=") for m in msgs), msgs
    assert any(m.startswith(f"{u}:6: link 'a'/inertial/inertia: singular") for m in msgs), msgs
    a = robot.links[0]
    assert a.visuals == () and a.inertial.mass == 2.0
    assert np.allclose(a.inertial.inertia, 2.0 / 12 * np.diag([0.2 ** 2 + 0.3 ** 2, 0.1 ** 2 + 0.3 ** 2,
                                                               0.1 ** 2 + 0.2 ** 2]), rtol=1e-12)


def test_urdf_hand_mounted_on_a_yaml_arm(tmp_path):
    """The Panda hand (side file) on the Puma 560 (YAML): its palm follows the flange through the
    mount origin, whatever the arm's configuration."""
    from graspsim import spatial

    w_file = tmp_path / "puma_panda.yaml"
    w_file.write_text(f"world: puma_panda\nunits: {{length: m, angle: deg}}\nrobots:\n"
                      f"  - {{name: puma, file: {ROOT / 'robots/puma560.yaml'}}}\n"
                      f"  - name: hand\n    file: {ROOT / 'robots/panda_hand.yaml'}\n"
                      "    mount: {robot: puma, link: link6, origin: {xyz: [0, 0, 0.02], rpy: [0, 0, 30]}}\n")
    w = graspsim.load_world(w_file)
    arm, hand = w.robots["puma"], w.robots["hand"]
    X_mount = spatial.transform(spatial.rpy_to_matrix(np.radians([0, 0, 30])), [0, 0, 0.02])
    rng = np.random.default_rng(5)
    for _ in range(5):
        arm.set_dofs(_random_dofs(arm.description, rng))
        assert np.allclose(hand.palm_pose, arm.link_pose("link6") @ X_mount, atol=1e-12)


def test_validate_tells_a_robot_urdf_from_a_one_link_object_urdf():
    """`graspsim validate x.urdf`: a URDF with joints is a robot, a one-link URDF an object (the
    random_urdfs objects); each loads with the numbers its file states."""
    from graspsim.model.description import Object, Robot

    robot = load_any(PANDA)
    assert isinstance(robot, Robot) and len(robot.links) == 13
    obj = load_any(DATA / "random_urdfs" / "000" / "000.urdf")
    assert isinstance(obj, Object) and obj.inertial.mass == pytest.approx(0.1)

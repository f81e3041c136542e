"""Bodies with several collision shapes (YAML ``shapes:``, URDF links with several <collision>).

Every expected value is independent of the multi-shape code: the same boxes as separate one-shape
bodies, closed-form sphere/box distances, the URDF read with ElementTree and yourdfpy.
"""
from __future__ import annotations

import math
import pickle
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pybullet_data
import pytest

import graspsim
from graspsim.collision import CollisionModel, closest_points, find_contacts
from graspsim.errors import ModelError

from test_urdf import fk_error_against_yourdfpy

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(pybullet_data.getDataPath())
TABLE = f"{{name: table, file: {ROOT / 'objects/table.yaml'}}}"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _yaw(deg: float, p=(0.0, 0.0, 0.0)) -> np.ndarray:
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    X = np.eye(4)
    X[:2, :2] = [[c, -s], [s, c]]
    X[:3, 3] = p
    return X


# -- contacts -----------------------------------------------------------------------------------

#: the link's two 4 cm boxes in its frame: one resting on the table, one 0.05 mm above it
BOXES = [(-0.05, 0.02), (0.05, 0.02005)]


def test_two_box_link_touches_a_plane_at_both_boxes(tmp_path):
    """A link with two box shapes on a table: contacts at both boxes, each equal (point, normal,
    separation) to a contact of the same box as a body of its own; one region per body pair."""
    shapes = "\n".join(f"      - {{box: [0.04, 0.04, 0.04], origin: {{xyz: [{x}, 0, {z}]}}}}" for x, z in BOXES)
    _write(tmp_path / "feet.yaml", "robot: feet\nlinks:\n  - name: base\n    shapes:\n" + shapes
           + "\n    mass: 1\n    com: [0, 0, 0.02]\n    inertia: [0.001, 0.002, 0.002, 0, 0, 0]\n")
    base = _yaw(30, (0.1, -0.05, 0.0))
    xyz, rpy = base[:3, 3].tolist(), [0, 0, 30]
    w = graspsim.load_world(_write(tmp_path / "w.yaml", "world: w\nunits: {length: m, angle: deg}\nrobots:\n"
                                   f"  - {{name: r, file: feet.yaml, base: free, pose: {{xyz: {xyz}, rpy: {rpy}}}}}\n"
                                   f"obstacles:\n  - {TABLE}\n"))
    t = w.table
    link = t.index["r/base"]
    assert t.body_shape_count[link] == 2 and list(t.shape_body[:2]) == [link, link]
    cs = CollisionModel(t).contacts(w.body_poses())
    # the single-shape reference: each box as an object of its own at the same world pose
    objs = []
    for k, (x, z) in enumerate(BOXES):
        p = base @ np.array([x, 0, z, 1.0])
        objs.append(f"{{name: b{k}, shape: {{box: [0.04, 0.04, 0.04]}}, mass: 1, "
                    f"pose: {{xyz: {p[:3].tolist()}, rpy: {rpy}}}}}")
    ref_w = graspsim.load_world(_write(tmp_path / "ref.yaml", "world: ref\nunits: {length: m, angle: deg}\n"
                                       "objects:\n" + "".join(f"  - {o}\n" for o in objs)
                                       + f"obstacles:\n  - {TABLE}\n"))
    ref = CollisionModel(ref_w.table).contacts(ref_w.body_poses())
    assert len(ref) == 8          # each box: its bottom face's four corners
    assert set(cs.body_a) == {link} and set(cs.body_b) == {t.index["table"]}
    assert set(cs.shape_a.tolist()) == {0, 1}           # contacts at both boxes
    assert set(cs.shape_b.tolist()) == {int(t.body_shape_start[t.index["table"]])}
    for k in range(len(cs)):
        mine = ref.body_a == ref_w.table.index[f"b{cs.shape_a[k]}"]
        d = np.linalg.norm(ref.point[mine] - cs.point[k], axis=1)
        r = int(np.flatnonzero(mine)[np.argmin(d)])
        assert d.min() < 1e-12
        np.testing.assert_allclose(cs.normal[k], ref.normal[r], atol=1e-12)
        assert cs.separation[k] == pytest.approx(ref.separation[r], abs=1e-12)
        assert cs.separation[k] == pytest.approx(BOXES[cs.shape_a[k]][1] - 0.02, abs=1e-9)
        np.testing.assert_allclose(cs.normal[k], [0, 0, -1], atol=1e-12)   # link -> table
    # one region for the body pair: the hull of both bottom faces (the four outer corners)
    assert len(cs) == 4 and sorted(np.bincount(cs.shape_a, minlength=2).tolist()) == [2, 2]


def _sphere_box(c, r, X_box, half):
    """Distance of a sphere (centre c, radius r) to a box (pose X_box, half extents): closed form."""
    q = X_box[:3, :3].T @ (np.asarray(c) - X_box[:3, 3])
    return float(np.linalg.norm(q - np.clip(q, -half, half))) - r


def test_distance_of_two_shape_bodies_is_the_minimum_over_shape_pairs(tmp_path):
    w = graspsim.load_world(_write(tmp_path / "d.yaml", """world: d
units: {length: m, angle: deg}
objects:
  - name: p
    shapes: [{sphere: 0.02, origin: {xyz: [-0.05, 0, 0]}}, {sphere: 0.02, origin: {xyz: [0.05, 0, 0]}}]
    mass: 0.2
    com: [0, 0, 0]
    inertia: [1e-4, 2e-4, 2e-4, 0, 0, 0]
  - name: q
    shapes: [{sphere: 0.01}, {box: [0.02, 0.02, 0.02], origin: {xyz: [0.1, 0, 0], rpy: [0, 0, 10]}}]
    mass: 0.2
    com: [0, 0, 0]
    inertia: [1e-4, 2e-4, 2e-4, 0, 0, 0]
"""))
    P, Q = w.bodies["p"], w.bodies["q"]
    P.pose = _yaw(0, (0, 0, 0.3))
    for yaw, xyz in ((20, (-0.02, 0.07, 0.3)), (-35, (0.01, -0.09, 0.31)), (90, (0.0, 0.06, 0.3))):
        Q.pose = _yaw(yaw, xyz)
        XP, XQ = P.pose, Q.pose
        sph = [XP @ np.array([x, 0, 0, 1.0]) for x in (-0.05, 0.05)]
        qs = XQ @ np.array([0, 0, 0, 1.0])
        Xb = XQ @ _yaw(10, (0.1, 0, 0))
        d_all = [np.linalg.norm(c[:3] - qs[:3]) - 0.03 for c in sph] + \
                [_sphere_box(c[:3], 0.02, Xb, np.full(3, 0.01)) for c in sph]
        d, pa, pb = closest_points(w, "p", "q")
        assert d == pytest.approx(min(d_all), abs=1e-6)
        assert np.linalg.norm(pb - pa) == pytest.approx(d, abs=1e-6)
        # the point on p lies on the surface of the sphere of the closest pair
        k = int(np.argmin(d_all)) % 2
        assert np.linalg.norm(pa - sph[k][:3]) == pytest.approx(0.02, abs=1e-6)


# -- YAML ---------------------------------------------------------------------------------------

def test_multi_shape_object_mass_and_inertia_as_given(tmp_path):
    o = graspsim.load_object(_write(tmp_path / "o.yaml", """object: dumbbell
shapes:
  - {box: [0.04, 0.04, 0.04], origin: {xyz: [-0.05, 0, 0]}}
  - {sphere: 0.02, origin: {xyz: [0.05, 0, 0]}, material: rubber}
mass: 0.3
com: [0.001, 0, 0]
inertia: [1e-4, 2e-4, 3e-4, 0, 0, 0]
material: wood
"""))
    assert [s.kind for s in o.shapes] == ["box", "sphere"]
    np.testing.assert_allclose([s.X_LS[0, 3] for s in o.shapes], [-0.05, 0.05])
    assert o.inertial.mass == 0.3
    np.testing.assert_allclose(o.inertial.com, [0.001, 0, 0])
    np.testing.assert_allclose(o.inertial.inertia, np.diag([1e-4, 2e-4, 3e-4]))
    assert o.shape_materials == (None, "rubber")
    w = graspsim.load_world(_write(tmp_path / "w.yaml", f"world: w\nobjects:\n  - {{name: o, file: o.yaml}}\n"))
    assert w.table.shape_materials == ("wood", "rubber")
    # the one-shape view for drawing: both shapes' vertices in the body frame
    assert len(o.shape.vertices) == len(o.shapes[0].vertices) + len(o.shapes[1].vertices)


@pytest.mark.parametrize("body, field, words", [
    ("shapes: [{box: [0.04, 0.04, 0.04]}, {sphere: 0.02}]\ndensity: 500\n", "shapes",
     ["several shapes", "'mass'", "'com'", "'inertia'"]),
    ("shapes: [{box: [0.04, 0.04, 0.04]}, {sphere: 0.02}]\nmass: 0.3\ncom: [0, 0, 0]\n", "shapes",
     ["several shapes", "missing 'inertia'"]),
    ("shapes: []\nmass: 0.3\n", "shapes", ["at least one shape"]),
    ("shape: {sphere: 0.02}\nshapes: [{sphere: 0.02}]\nmass: 0.3\n", "shapes", ["either 'shape' or 'shapes'"]),
    ("shapes: [{sphere: 0.02}, {box: [0.04, 0.04]}]\nmass: 0.3\n", "shapes[1].box", ["list of 3 numbers"]),
    ("shapes: {sphere: 0.02}\nmass: 0.3\n", "shapes", ["expected a list"]),
])
def test_bad_shapes_give_one_clear_error(tmp_path, body, field, words):
    p = _write(tmp_path / "bad.yaml", "object: bad\n" + body)
    with pytest.raises(ModelError) as info:
        graspsim.load_object(p)
    errs = getattr(info.value, "errors", [info.value])
    assert len(errs) == 1, [str(e) for e in errs]
    assert errs[0].field == field and all(wd in errs[0].problem for wd in words), str(errs[0])
    assert str(errs[0]).startswith(f"{p}:")


# -- URDF ---------------------------------------------------------------------------------------

#: every pybullet_data URDF (random_urdfs aside) with a link of several <collision> elements that
#: loads (each was a load error before); bicycle/bike.urdf, quadruped/minitaur.urdf and
#: quadruped/microtaur/microtaur.urdf are refused for other reasons (a comma-separated xyz, a
#: 4-number rpy, a revolute joint without limits), as before
MULTI = ["pr2_gripper.urdf", "sphere8cube.urdf", "tray/traybox.urdf"] + [
    f"quadruped/minitaur_{v}.urdf" for v in ("v1", "derpy", "fixed_all", "fixed_knees", "rainbow_dash",
                                              "rainbow_dash_v1", "single_motor")]


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return graspsim.load_robot(path)


@pytest.mark.parametrize("rel", MULTI)
def test_urdf_links_with_several_collisions_load_with_every_shape(rel):
    """Each <collision> is one shape, at its <origin> (read independently with ElementTree), and
    forward kinematics matches yourdfpy's at 20 random configurations."""
    import yourdfpy

    from graspsim.spatial import rpy_to_matrix

    path = DATA / rel
    robot = _load(path)
    xml = {l.get("name"): l.findall("collision") for l in ET.parse(path).getroot().iter("link")}
    assert any(len(c) > 1 for c in xml.values())
    for link in robot.links:
        cols = xml[link.name]
        assert len(link.shapes) == len(cols)
        for s, c in zip(link.shapes, cols):
            o = c.find("origin")
            xyz = [float(v) for v in (o.get("xyz", "0 0 0") if o is not None else "0 0 0").replace(",", " ").split()]
            rpy = [float(v) for v in (o.get("rpy", "0 0 0") if o is not None else "0 0 0").replace(",", " ").split()]
            np.testing.assert_allclose(s.X_LS[:3, 3], xyz, atol=1e-12)
            np.testing.assert_allclose(s.X_LS[:3, :3], rpy_to_matrix(rpy), atol=1e-12)
    ref = yourdfpy.URDF.load(str(path), build_scene_graph=True, load_meshes=False)
    worst_p, worst_r = fk_error_against_yourdfpy(robot, ref, seed=5)
    assert worst_p < 1e-9 and worst_r < 1e-9, (worst_p, worst_r)


def test_static_autograsp_pr2_gripper_on_the_cube():
    """The PR2 gripper (its right tip two boxes) closes on the 6 cm cube: contacts on both tips,
    force closure that graspsim.grasp.analyze confirms from the contacts."""
    from graspsim import control, grasp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = graspsim.load_world(ROOT / "tests/models/pr2_gripper_cube.yaml")
    t = w.table
    tip = t.index["pr2/right_tip"]
    assert t.body_shape_count[tip] == 2
    r = control.static_auto_grasp(w, "pr2")
    assert set(r.stopped_by.values()) == {"contact"}
    gc = r.grasp_contacts
    assert {"pr2/left_tip", "pr2/right_tip"} <= set(gc.links)
    cs = find_contacts(w)
    right = [c for c in cs if c.body_b == "cube" and c.body_a == "pr2/right_tip"]
    assert right and all(abs(c.separation) <= 1e-4 for c in right)
    # the cube's faces are at +-30 mm: the tips' contact points lie on them
    on_face = [abs(abs((np.linalg.inv(w.bodies["cube"].pose) @ np.append(c.point, 1))[1]) - 0.03) < 2e-4
               for c in cs if "cube" in (c.body_a, c.body_b) and c.body_b != "table"]
    assert all(on_face)
    q = grasp.analyze(gc.points, gc.normals, gc.mu, center=w.bodies["cube"].com_world,
                      torque_scale=grasp.torque_scale(w, "cube"), gws="L1")
    assert q.force_closure is True and r.quality.force_closure is True


# -- model / data -------------------------------------------------------------------------------

def test_collision_model_pickles_and_two_datas_agree():
    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    m = CollisionModel(w.table)
    P = w.body_poses()
    a = m.contacts(P)
    m.penetrating(P)                      # builds FCL objects in the model's own data
    m2 = pickle.loads(pickle.dumps(m))
    b = m2.contacts(P)
    c = m.contacts(P, data=m.new_data())
    assert len(a) == 48
    for x in (b, c):
        for f in ("body_a", "body_b", "shape_a", "shape_b", "point", "normal", "separation", "tangent1"):
            np.testing.assert_array_equal(getattr(a, f), getattr(x, f))
    assert m2.separations(P)[1] == m.separations(P)[1]
    for f in ("body_a", "shape_a", "point", "normal", "separation"):
        assert getattr(a, f).flags.c_contiguous


# -- hostile `shapes:` (the model-file fuzz of tests/test_hostile_models.py, on multi-shape files) --

MULTI_OBJ = f"""object: o
shapes:
  - {{box: [0.04, 0.04, 0.04], origin: {{xyz: [-0.05, 0, 0]}}}}
  - {{sphere: 0.02, origin: {{xyz: [0.05, 0, 0], rpy: [0, 0, 10]}}, material: rubber}}
  - {{mesh: {ROOT}/objects/meshes/cube.stl, scale: 0.5}}
mass: 0.3
com: [0, 0, 0]
inertia: [1e-4, 2e-4, 3e-4, 0, 0, 0]
"""


def test_too_many_shapes_is_one_bounded_error(tmp_path):
    from graspsim.model import bounds as B

    n = B.MAX_SHAPES + 1
    p = _write(tmp_path / "o.yaml", "object: o\nshapes:\n" + "  - {sphere: 0.01}\n" * n
               + "mass: 1\ncom: [0, 0, 0]\ninertia: [1e-4, 1e-4, 1e-4, 0, 0, 0]\n")
    with pytest.raises(ModelError) as info:
        graspsim.load_object(p)
    errs = getattr(info.value, "errors", [info.value])
    assert [(e.line, e.field) for e in errs] == [(2, "shapes")]
    assert f"more than {B.MAX_SHAPES} shapes ({n})" in errs[0].problem


def test_fuzz_mutated_multi_shape_models(tmp_path):
    """Mutated `shapes:` files either load or raise a ModelError of clean one-line messages naming
    the file, within a few seconds each (as tests/test_hostile_models.py asks of `shape:`)."""
    import time

    import yaml
    from test_hostile_models import _mutate, _text_mutate, check_clean

    from graspsim.model.loader import load_any

    robot = "robot: r\nlinks:\n  - name: a\n    shapes: [{sphere: 0.05}, {capsule: {radius: 0.01, length: 0.1}}]\n" \
            "    mass: 1\n    com: [0, 0, 0]\n    inertia: [1e-3, 1e-3, 1e-3, 0, 0, 0]\n"
    rnd = __import__("random").Random(17)
    for k in range(150):
        src = MULTI_OBJ if k % 2 else robot
        if k % 3 == 0:
            text = _text_mutate(src, rnd)
        else:
            try:
                text = yaml.safe_dump(_mutate(yaml.safe_load(src), rnd, rnd.randint(1, 4)), sort_keys=False)
            except (yaml.YAMLError, ValueError, OverflowError):
                continue
        out = _write(tmp_path / f"f{k}.yaml", text)
        t0 = time.perf_counter()
        try:
            load_any(out)
        except ModelError as e:
            check_clean(e, out)
        assert time.perf_counter() - t0 < 5.0


def test_dropped_two_box_object_rests_on_both_boxes(tmp_path):
    """A dumbbell of two 4 cm boxes 10 cm apart (one body, two shapes), dropped 5 mm onto the table:
    it rests level on both boxes (4 corners each within (0, threshold]), at rest, the contact
    forces carrying its weight m g, split equally between the boxes (com midway, by symmetry)."""
    from graspsim.dynamics import Simulator

    w = graspsim.load_world(_write(tmp_path / "w.yaml", f"""world: w
objects:
  - name: db
    shapes:
      - {{box: [0.04, 0.04, 0.04], origin: {{xyz: [-0.05, 0, 0]}}}}
      - {{box: [0.04, 0.04, 0.04], origin: {{xyz: [0.05, 0, 0]}}}}
    mass: 0.3
    com: [0, 0, 0]
    inertia: [8e-5, 8.3e-4, 8.3e-4, 0, 0, 0]
    material: wood
    pose: {{xyz: [0, 0, 0.025]}}
obstacles:
  - {TABLE}
"""))
    sim = Simulator(w)
    sim.run(1.0)
    X = sim.body_pose("db")
    corners = np.array([[x + sx * 0.02, sy * 0.02, -0.02] for x in (-0.05, 0.05) for sx in (-1, 1) for sy in (-1, 1)])
    z = (corners @ X[:3, :3].T + X[:3, 3])[:, 2]
    assert np.all(z > -1e-6) and np.all(z <= 1e-4) and np.ptp(z) < 1e-6
    assert np.abs(sim.body_velocity("db")).max() < 1e-6
    c, f = sim.contacts, sim.contact_forces
    i = sim.table.index["db"]
    assert set(c.shape_a[c.body_a == i].tolist()) == {0, 1}
    assert f[c.body_a == i].sum(0)[2] == pytest.approx(-0.3 * 9.81, rel=1e-6)   # reported on body_b
    per_box = [f[(c.body_a == i) & (c.shape_a == s)].sum(0)[2] for s in (0, 1)]
    assert per_box[0] == pytest.approx(per_box[1], rel=1e-3)


def test_validate_finds_a_multi_shape_body_sunk_into_the_table(tmp_path):
    """The load-time check works shape by shape: the dumbbell 5 mm into the table is reported with
    its depth; 0.05 mm above it, nothing is."""
    from graspsim.model.checks import start_problems

    def world(z):
        return graspsim.load_world(_write(tmp_path / "w.yaml", f"""world: w
objects:
  - name: db
    shapes:
      - {{box: [0.04, 0.04, 0.04], origin: {{xyz: [-0.05, 0, 0]}}}}
      - {{box: [0.04, 0.04, 0.04], origin: {{xyz: [0.05, 0, 0]}}, material: rubber}}
    mass: 0.3
    com: [0, 0, 0]
    inertia: [8e-5, 8.3e-4, 8.3e-4, 0, 0, 0]
    material: wood
    pose: {{xyz: [0, 0, {z}]}}
obstacles:
  - {TABLE}
""")).description

    errs = start_problems(world(0.015))
    assert len(errs) == 1 and "'db' and 'table' interpenetrate by 5 mm" in errs[0].problem
    assert start_problems(world(0.02005)) == []

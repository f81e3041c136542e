"""Objects from any mesh or a one-link URDF (issue #17): mass properties against trimesh computed
independently from the files, exact-mesh auto-grasps with a shipped hand, clear errors."""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import trimesh

import graspsim
from graspsim import control
from graspsim.collision import check_interpenetration
from graspsim.model.mesh_object import DEFAULT_DENSITY, MeshWarning

import pybullet_data  # the test extra installs pybullet for its data folder
RANDOM = Path(pybullet_data.getDataPath()) / "random_urdfs"
TEN = [f"{k:03d}" for k in range(10)]
URDF_SCALE = 0.015        # every random_urdfs collision mesh has scale="0.015 0.015 0.015"
URDF_MASS = 0.1           # and <mass value="0.1"/>
OPEN_MESH = "037"         # non-manifold: trimesh says not watertight (23 of the 1000 are)
ONE_LINE = re.compile(r"^[^\n:]+:\d+: [^\n:]+: [^\n]+$")


def _urdf(k: str) -> Path:
    return RANDOM / k / f"{k}.urdf"


def _trimesh(k: str, scale: float = URDF_SCALE) -> trimesh.Trimesh:
    m = trimesh.load(RANDOM / k / f"{k}.obj", force="mesh")
    m.apply_scale(scale)
    return m


@pytest.mark.parametrize("k", TEN)
def test_random_urdf_mass_properties_match_trimesh(k):
    """URDF mass (0.1 kg); the URDF's inertia (diag 1, 1, 0: singular) is replaced by the
    uniform-density inertia of the scaled collision mesh at that mass, centre of mass the mesh's."""
    obj = graspsim.load_object(_urdf(k))
    m = _trimesh(k)
    assert m.is_watertight and m.is_volume
    assert obj.inertial.mass == pytest.approx(URDF_MASS, rel=1e-12)
    np.testing.assert_allclose(obj.inertial.com, m.center_mass, atol=1e-9)       # m; objects are ~0.1 m
    I_ref = m.moment_inertia * (URDF_MASS / m.volume)          # trimesh's is at unit density
    np.testing.assert_allclose(obj.inertial.inertia, I_ref, rtol=1e-9, atol=1e-15)
    assert np.linalg.eigvalsh(obj.inertial.inertia)[0] > 0
    assert "not physical" in obj.mass_note
    assert obj.name == f"blob{k}"


@pytest.mark.parametrize("name, side, mass", [("cube_small.urdf", 0.05, 0.1), ("cube.urdf", 1.0, 1.0)])
def test_an_inertia_no_mass_inside_the_shape_can_give_is_replaced(name, side, mass):
    """pybullet_data's cubes say ixx = iyy = izz = 1 kg m^2 (positive definite, triangle inequality
    kept): for 0.1 kg in a 5 cm box the mass would lie 3.2 m from its centre.  No body has a
    principal moment above m R^2 (R: the farthest point of the shape from the com), so the box's own
    uniform inertia m a^2 / 6 is used, and the note says why."""
    obj = graspsim.load_object(Path(pybullet_data.getDataPath()) / name)
    assert obj.inertial.mass == mass
    assert obj.name == name[:-len(".urdf")]       # its <robot name> is the file name "cube.urdf"
    np.testing.assert_allclose(obj.inertial.inertia, np.eye(3) * mass * side ** 2 / 6, rtol=1e-12, atol=1e-18)
    assert f"would have to lie {np.sqrt(1.0 / mass):.3g} m" in obj.mass_note
    assert f"the shape reaches {side * np.sqrt(3) / 2:.3g} m" in obj.mass_note


@pytest.mark.parametrize("factor, kept", [(0.999, True), (1.001, False)])
def test_the_bound_is_m_r_squared(tmp_path, factor, kept):
    """A 4 x 2 x 2 cm box of 0.2 kg: R = sqrt(2^2 + 1^2 + 1^2) cm from its centre; an inertia just
    under m R^2 is the URDF's (a mass at the corners comes close), just over it is replaced."""
    R2 = 0.02 ** 2 + 0.01 ** 2 + 0.01 ** 2
    top = factor * 0.2 * R2
    p = tmp_path / "box.urdf"
    p.write_text(f'''<?xml version="1.0"?>
<robot name="box"><link name="b">
  <inertial><mass value="0.2"/><inertia ixx="{top}" iyy="{0.6 * top}" izz="{0.6 * top}" ixy="0" ixz="0" iyz="0"/></inertial>
  <collision><geometry><box size="0.04 0.02 0.02"/></geometry></collision>
</link></robot>''')
    obj = graspsim.load_object(p)
    if kept:
        np.testing.assert_array_equal(obj.inertial.inertia, np.diag([top, 0.6 * top, 0.6 * top]))
        assert obj.mass_note == ""
    else:
        np.testing.assert_allclose(obj.inertial.inertia, np.diag([0.2 * (0.02 ** 2 + 0.02 ** 2) / 12,
                                                                 0.2 * (0.04 ** 2 + 0.02 ** 2) / 12,
                                                                 0.2 * (0.04 ** 2 + 0.02 ** 2) / 12]), rtol=1e-12)
        assert "would have to lie" in obj.mass_note


@pytest.mark.parametrize("fmt", ["obj", "stl", "ply", "off", "glb"])
def test_bare_mesh_every_format_default_density(tmp_path, fmt):
    """The same closed mesh written in five formats: mass = 500 kg/m^3 x its trimesh volume.
    STL and GLB store float32 vertices (relative rounding 6e-8): hence rel 1e-6, not 1e-9."""
    m = _trimesh("005", scale=0.01)
    p = tmp_path / f"part.{fmt}"
    m.export(p)
    obj = graspsim.load_object(p)
    assert obj.inertial.mass == pytest.approx(DEFAULT_DENSITY * m.volume, rel=1e-6)
    np.testing.assert_allclose(obj.inertial.com, m.center_mass, atol=1e-8)     # m; 1e-6 of its size
    assert "default density 500 kg/m^3" in obj.mass_note


def test_world_entry_mesh_with_density_material_and_info(tmp_path):
    m = _trimesh("003")
    mesh = tmp_path / "blob.stl"
    m.export(mesh)
    (tmp_path / "w.yaml").write_text(
        "world: w\nobjects:\n"
        f"  - {{name: a, file: {_urdf('003')}, density: 800}}\n"
        "  - {name: b, file: blob.stl, mass: 0.25, material: wood, pose: {xyz: [0.3, 0, 0]}}\n"
        "  - {name: c, file: blob.stl, pose: {xyz: [-0.3, 0, 0]}}\n")
    w = graspsim.load_world(tmp_path / "w.yaml")
    assert w.bodies["a"].mass == pytest.approx(800 * m.volume, rel=1e-9)     # density beats the URDF mass
    assert w.bodies["b"].mass == pytest.approx(0.25) and w.bodies["b"].material == "wood"
    assert w.bodies["c"].mass == pytest.approx(DEFAULT_DENSITY * m.volume, rel=1e-6)   # STL: float32
    lines = {l.split("'")[1]: l for l in w.summary().splitlines() if l.startswith("  body")}
    assert "default density 500 kg/m^3" in lines["c"] and "default density" not in lines["b"]


def test_open_mesh_uses_convex_hull_with_one_warning():
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        obj = graspsim.load_object(_urdf(OPEN_MESH))
    msgs = [str(w.message) for w in got if issubclass(w.category, MeshWarning)]
    assert len(msgs) == 1 and "\n" not in msgs[0] and f"{OPEN_MESH}.obj" in msgs[0] and "convex hull" in msgs[0]
    m = _trimesh(OPEN_MESH)
    hull = m.convex_hull
    assert not m.is_watertight
    np.testing.assert_allclose(obj.inertial.com, hull.center_mass, atol=1e-9)
    np.testing.assert_allclose(obj.inertial.inertia, hull.moment_inertia * URDF_MASS / hull.volume, rtol=1e-9)
    # contact keeps the mesh's own triangles (docs/objects.md: the hull would change epsilon 5x here)
    assert not obj.shape.watertight and len(obj.shape.faces) == len(m.faces)


def _write(p: Path, text: str) -> Path:
    p.write_text(text)
    return p


@pytest.mark.parametrize("text, line, field, problem", [
    ('<robot name="r">\n<link name="a"/>\n<link name="b"/>\n</robot>\n', 1, "robot.link", "exactly one <link>, found 2"),
    ('<robot name="r">\n<link name="a">\n<inertial><mass value="0.1"/></inertial>\n</link>\n</robot>\n', 2,
     "link[a].collision", "missing <collision>"),
    ('<robot name="r">\n<link name="a">\n<collision><geometry>\n<mesh filename="nope.obj"/>\n</geometry></collision>'
     '\n</link>\n</robot>\n', 4, "link[a].collision.geometry.mesh@filename", "mesh 'nope.obj' not found (tried "),
    ('<robot name="r">\n<link name="a">\n<collision><geometry>\n<box size="0.1 0.1"/>\n</geometry></collision>'
     '\n</link>\n</robot>\n', 4, "link[a].collision.geometry.box@size", "expected 3 numbers"),
    ('<robot name="r">\n<link name="a">\n<inertial>\n<mass value="-1"/></inertial>\n'
     '<collision><geometry><sphere radius="0.05"/></geometry></collision>\n</link>\n</robot>\n', 4,
     "link[a].inertial.mass@value", "mass must be > 0"),
    ('<robot name="r">\n<link name="a">\n</robot>\n', 3, None, "not valid XML"),
])
def test_bad_urdf_is_one_line_error(tmp_path, text, line, field, problem):
    p = _write(tmp_path / "bad.urdf", text)
    with pytest.raises(graspsim.ModelError) as e:
        graspsim.load_object(p)
    s = str(e.value)
    assert s.startswith(f"{p}:{line}: ") and problem in s and "\n" not in s
    if field:
        assert f": {field}: " in s


def test_world_entry_errors_name_the_world_line(tmp_path):
    _trimesh("003").export(tmp_path / "blob.stl")
    w = _write(tmp_path / "w.yaml", "world: w\nobjects:\n  - {name: b, file: blob.stl, mass: 1, density: 2}\n"
               "  - {name: c, file: blob.stl, mass: -1}\n")
    with pytest.raises(graspsim.ModelError) as e:
        graspsim.load_world(w)
    lines = str(e.value).splitlines()
    assert any(l.startswith(f"{w}:3: objects[0]") and "not both" in l for l in lines), lines
    assert any(l.startswith(f"{w}:4: objects[1]") for l in lines), lines
    assert all(ONE_LINE.match(l) for l in lines), lines


def test_mesh_without_triangles_is_a_clear_error():
    # 168.obj's vertices are all "nan": the mesh reader names that (its triangles are all degenerate)
    with pytest.raises(graspsim.ModelError, match=r"168\.urdf:\d+: .*vertex coordinate is not a finite number"):
        graspsim.load_object(_urdf("168"))


# -- auto-grasp with a shipped hand ----------------------------------------------------------------

def jaw_world(urdf: Path, tmp: Path) -> Path:
    """The parallel jaw, fingers down, closing along the object's narrower horizontal extent (world
    x or y; the jaw opens 140 mm) over the object standing on the table (its lowest point on the
    table top, its bounding box centred under the palm)."""
    obj = graspsim.load_object(urdf)
    V = obj.shape.vertices_in(np.eye(4))
    lo, hi = V.min(0), V.max(0)
    c = (lo + hi) / 2
    palm_z = float(max(hi[2] - lo[2] + 0.005, 0.075))      # fingers are 70 mm long: keep them off the table
    yaw = 1.5707963267948966 if hi[1] - lo[1] <= hi[0] - lo[0] else 0.0   # palm yaw 90 deg: fingers along y
    p = tmp / f"jaw_{obj.name}.yaml"
    p.write_text(f"""world: jaw_{obj.name}
robots:
  - name: gripper
    file: {graspsim.data_path('robots', 'parallel_jaw.yaml')}
    pose: {{xyz: [0, 0, {palm_z!r}], rpy: [3.141592653589793, 0, {yaw!r}]}}
    dofs: {{opening: 0.07}}
objects:
  - {{name: obj, file: {urdf}, pose: {{xyz: [{-float(c[0])!r}, {-float(c[1])!r}, {-float(lo[2])!r}]}}}}
obstacles:
  - {{name: table, file: {graspsim.data_path('objects', 'table.yaml')}}}
""")
    return p


@pytest.mark.filterwarnings("ignore::graspsim.model.mesh_object.MeshWarning")    # OPEN_MESH's hull
@pytest.mark.parametrize("k", TEN + [OPEN_MESH])
def test_parallel_jaw_grasps_random_urdf(tmp_path, k):
    """Static auto-grasp ends by contact, the stopping finger touching the object, nothing
    interpenetrating; every contact point lies on the
    object's true (non-convex) surface, checked with trimesh's exact closest points."""
    w = graspsim.load_world(jaw_world(_urdf(k), tmp_path))
    assert check_interpenetration(w) == []                      # the open jaw starts clear
    r = control.static_auto_grasp(w, "gripper", obj="obj")
    assert r.stopped_by == {"opening": "contact"}
    gc = r.grasp_contacts
    assert len(gc.points) >= 2
    cs, names = r.contacts, r.contacts.names
    pairs = [(names[a], names[b]) for a, b in zip(cs.body_a, cs.body_b)]
    links = {a if b == "obj" else b for a, b in pairs if "obj" in (a, b)}
    # the fingers are coupled: the first to touch stops both (9 of these 10 end touching with both)
    assert f"gripper/{r.stops['opening'].link}" in links and links <= {"gripper/left", "gripper/right"}
    assert check_interpenetration(w) == []
    X = w.bodies["obj"].pose
    pts_O = (gc.points - X[:3, 3]) @ X[:3, :3]                 # world -> object frame
    _, dist, _ = trimesh.proximity.closest_point(_trimesh(k), pts_O)
    assert dist.max() < 2 * w.description.contact_threshold    # midpoints of pairs within the threshold



# -- batch object sets --------------------------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "batch_objects.yaml"


def test_example_batch_names_fifty_random_urdfs():
    from graspsim.batch import load_config

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MeshWarning)
        cfg = load_config(EXAMPLE)
    expect = sorted(RANDOM.glob("*/*.urdf"))[:50]
    assert cfg.objects == [f"blob{p.stem}" for p in expect]
    assert [sc["compose"]["object_file"] for sc in cfg.scenes] == [str(p) for p in expect]


def test_folder_set_skips_a_urdfs_own_meshes_and_numbers_repeated_names(tmp_path):
    from graspsim.batch import load_config

    for k in ("000", "001"):                                  # a URDF with its OBJ: one object each
        d = tmp_path / "set" / k
        d.mkdir(parents=True)
        for f in (RANDOM / k).iterdir():
            (d / f.name).write_bytes(f.read_bytes())
    for sub in ("a", "b"):                                    # two bare meshes with the same stem
        (tmp_path / "set" / sub).mkdir()
        _trimesh("002", 0.015).export(tmp_path / "set" / sub / "part.stl")
    cfg = load_config({"hand": str(graspsim.data_path("robots", "barrett.yaml")), "table": False,
                       "objects": {"folder": str(tmp_path / "set")}})
    assert cfg.objects == ["blob000", "blob001", "part", "part_2"]


def test_object_set_glob_inside_a_data_package():
    """``glob: pybullet_data://...`` names the files ``${pybullet_data}/...`` does."""
    from graspsim.batch import load_config

    hand = str(graspsim.data_path("robots", "barrett.yaml"))
    a = load_config({"hand": hand, "table": False, "objects": {"glob": "pybullet_data://random_urdfs/00*/*.urdf", "limit": 3}})
    b = load_config({"hand": hand, "table": False, "objects": {"glob": "${pybullet_data}/random_urdfs/00*/*.urdf", "limit": 3}})
    assert a.objects == b.objects == ["blob000", "blob001", "blob002"]


@pytest.mark.parametrize("objects, problem", [
    ({"glob": "${nope}/*.urdf"}, "unknown variable ${nope}"),
    ({"glob": "nothing_here/*.obj"}, "no object files"),
    ({"folder": "missing_dir"}, "folder 'missing_dir' not found"),
    ({"glob": "*.urdf", "limit": 0}, "expected a whole number >= 1"),
    ({"glob": "*.urdf", "folder": "."}, "either 'glob' or 'folder'"),
    ({"glob": "graspsim_no_such_pkg://*.urdf"}, "the Python package 'graspsim_no_such_pkg' is not installed"),
])
def test_bad_object_set_is_one_line_error(tmp_path, objects, problem):
    from graspsim.batch import load_config

    p = tmp_path / "b.yaml"
    import yaml

    p.write_text(yaml.safe_dump({"hand": str(graspsim.data_path("robots", "barrett.yaml")), "objects": objects}))
    with pytest.raises(graspsim.ModelError) as e:
        load_config(p)
    s = str(e.value)
    assert problem in s and ONE_LINE.match(s) and s.startswith(f"{p}:"), s


def test_object_set_run_summary_per_object_against_sql(tmp_path):
    """Three objects x 8 candidates in a real SQLite run: the per-object success counts, rates and
    best grasps of the summary equal those computed with SQL from the stored rows, and the
    per-object plot's bars are those rates."""
    import sqlite3

    from graspsim.batch import load_config, run_batch, summarize
    from graspsim.batch.summary import summary_figures

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MeshWarning)
        cfg = load_config(EXAMPLE, overrides={
            "objects": {"glob": "${pybullet_data}/random_urdfs/*/*.urdf", "limit": 3},
            "candidates": {"directions": {"sphere": 0, "list": [[0, 0, -1], [0.5, 0, -1]]}, "rolls": [0, 90],
                           "preshapes": [{"spread": 0}, {"spread": 60}]}})
        db = tmp_path / "o.sqlite"
        run_batch(cfg, db, workers=0, progress="off")
    s = summarize(db)
    with sqlite3.connect(db) as con:
        per = {o: (n, fc) for o, n, fc in con.execute(
            "SELECT object, COUNT(*), SUM(force_closure) FROM results GROUP BY object")}
        best = {o: i for o, i in con.execute(
            "SELECT object, id FROM results r WHERE force_closure = 1 AND id = (SELECT id FROM results q WHERE "
            "q.object = r.object AND q.force_closure = 1 ORDER BY epsilon DESC, id LIMIT 1)")}
    assert set(per) == {"blob000", "blob001", "blob002"} and all(n == 8 for n, _ in per.values())
    rates = s.object_rates()
    assert {o: (n, k) for o, (n, k, _) in rates.items()} == per
    assert {o: r["id"] for o, r in s.best_by_object.items()} == best
    assert sum(k for _, k in per.values()) >= 1                # at least one grasp to rank
    text = s.text()
    for o, (n, k, rate) in rates.items():
        line = next(l for l in text.splitlines() if l.strip().startswith(o + " "))
        assert f"{100 * rate:.1f}%" in line and (f"#{best[o]} " in line if o in best else "best -" in line)
    figs = dict(summary_figures(s))
    bars = figs["success_by_object.png"].axes[0].patches
    assert sorted(b.get_height() for b in bars) == pytest.approx(sorted(r for _, _, r in rates.values()))
    import matplotlib.pyplot as plt

    for f in figs.values():
        plt.close(f)


def test_a_millimetre_mesh_read_in_metres_is_named_with_the_fix(tmp_path):
    """CAD meshes are often in millimetres and a bare mesh is read in metres: a 50 x 30 x 20 mm part
    became a 50 m, 15,000 t object that `validate` called ok.  Its default-density mass is now an
    error and, with a mass given, its size a warning, both with the fix; the fix (a shape with
    scale 0.001) gives the 5 cm box: I = m (b^2 + c^2) / 12 about its centre."""
    trimesh.creation.box(extents=[50, 30, 20]).export(tmp_path / "part.stl")
    w = tmp_path / "w.yaml"
    entry = "  - {name: part, ENTRY, pose: {xyz: [0, 0, 0.5]}}\n"
    w.write_text("world: w\nobjects:\n" + entry.replace("ENTRY", "file: part.stl"))
    with pytest.raises(graspsim.ModelError) as e:
        graspsim.load_world(w)
    msgs = str(e.value).splitlines()
    assert msgs[0] == (f"{tmp_path / 'part.stl'}: 50 m across, the default density gives 1.5e+07 kg, outside [1e-06, "
                       "10000] kg; a bare mesh is read in metres: if the file is in millimetres, give it as a shape "
                       "with a scale (shape: {mesh: part.stl, scale: 0.001}) and a mass")
    assert msgs[1].startswith(f"{w}:3: objects[0].file: object file 'part.stl' is invalid")
    # a batch's objects (load_object) get the same check
    with pytest.raises(graspsim.ModelError, match="50 m across, the default density gives 1.5e"):
        graspsim.load_object(tmp_path / "part.stl")
    w.write_text("world: w\nobjects:\n" + entry.replace("ENTRY", "file: part.stl, mass: 0.2"))
    with pytest.warns(graspsim.errors.ModelWarning, match="a graspable object 50 m across"):
        graspsim.load_world(w)
    w.write_text("world: w\nobjects:\n" + entry.replace("ENTRY", "mass: 0.2, shape: {mesh: part.stl, scale: 0.001}"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = graspsim.load_world(w).bodies["part"]
    a, bb, c = 0.05, 0.03, 0.02
    np.testing.assert_allclose(b.instance.obj.inertial.inertia,
                               np.diag([bb ** 2 + c ** 2, a ** 2 + c ** 2, a ** 2 + bb ** 2]) * 0.2 / 12, rtol=1e-9, atol=1e-15)

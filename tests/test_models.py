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


# -- mesh files read without trimesh (issue #16) ---------------------------------------------------

MESHES = sorted((ROOT / "objects" / "meshes").iterdir()) + [ROOT / "tests" / "models" / "open_box.stl"]


@pytest.mark.parametrize("path", MESHES, ids=lambda p: p.name)
def test_mesh_reader_matches_trimesh(path):
    """Our STL/OBJ/PLY/OFF readers + vertex merge give trimesh's vertices and faces bit for bit, and
    the same watertightness and mass properties (trimesh is the independent reference here)."""
    import trimesh

    from graspsim.geometry import _load_mesh_file

    for scale in ((1.0, 1.0, 1.0), (1e-3, 1e-3, 1e-3), (2.0, 1.0, 0.5)):
        m = trimesh.load(str(path), force="mesh", process=True)
        ref = trimesh.Trimesh(np.asarray(m.vertices) * scale, np.asarray(m.faces), process=True)
        V, F, vol, c, I, wt = _load_mesh_file(str(path), (0,), scale)
        assert np.array_equal(V, ref.vertices) and np.array_equal(F, ref.faces)
        assert wt == bool(ref.is_watertight and ref.is_volume)
        if wt:
            assert vol == pytest.approx(ref.volume, rel=1e-13)
            assert np.allclose(c, ref.center_mass, rtol=0, atol=1e-15 * np.abs(ref.vertices).max())
            assert np.allclose(I, ref.moment_inertia, rtol=0, atol=1e-12 * np.abs(ref.moment_inertia).max())


def _cube_files(d: Path) -> dict:
    """The unit cube [0, 1]^3 in every format we read, with quads where the format allows them."""
    V = [(x, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1)]           # index = 4x + 2y + z
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]   # outward
    tris = [t for q in quads for t in ((q[0], q[1], q[2]), (q[0], q[2], q[3]))]
    out = {}
    out["ascii.stl"] = "solid cube\n" + "".join(
        "facet normal 0 0 0\n outer loop\n" + "".join(f"  vertex {V[i][0]} {V[i][1]} {V[i][2]}\n" for i in t)
        + " endloop\nendfacet\n" for t in tris) + "endsolid cube\n"
    rec = np.zeros(len(tris), dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")])
    rec["v"] = np.array([[V[i] for i in t] for t in tris])
    out["binary.stl"] = b"solid but binary".ljust(80, b" ") + len(tris).to_bytes(4, "little") + rec.tobytes()
    out["negative.obj"] = "# negative indices, v/vt/vn forms\n" + "".join(f"v {x} {y} {z}\n" for x, y, z in V) + \
        "vt 0 0\nvn 0 0 1\n" + "".join("f " + " ".join(f"{i - 8}/1/1" for i in q) + "\n" for q in quads)
    out["quads.off"] = "OFF # a comment\n8 6 12\n" + "".join(f"{x} {y} {z}\n" for x, y, z in V) + \
        "".join("4 " + " ".join(map(str, q)) + "  0.5 0.5 0.5\n" for q in quads)
    hdr = "ply\nformat {}\ncomment cube\nelement vertex 8\nproperty double x\nproperty double y\nproperty double z\n" \
          "property uchar red\nelement face 6\nproperty list uchar int vertex_indices\nend_header\n"
    out["ascii.ply"] = hdr.format("ascii 1.0") + "".join(f"{x} {y} {z} 255\n" for x, y, z in V) + \
        "".join("4 " + " ".join(map(str, q)) + "\n" for q in quads)
    body = b"".join(np.array([x, y, z], ">f8").tobytes() + b"\xff" for x, y, z in V) + \
        b"".join(b"\x04" + np.array(q, ">i4").tobytes() for q in quads)
    out["big_endian.ply"] = hdr.format("binary_big_endian 1.0").encode() + body
    paths = {}
    for name, data in out.items():
        p = d / name
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
        paths[name] = p
    return paths


def test_every_mesh_format_reads_the_unit_cube(tmp_path):
    """Each format (ASCII and binary STL, OBJ with negative v/vt/vn indices and quads, OFF and PLY with
    quads, ASCII and big-endian binary PLY) gives the closed unit cube: volume 1, centre (0.5, 0.5,
    0.5), inertia 1/6 about each axis (a^5 (1 + 1) / 12) and no products of inertia."""
    from graspsim.geometry import load_mesh_shape

    for name, p in _cube_files(tmp_path).items():
        s = load_mesh_shape(p)
        assert s.watertight, name
        assert len(s.vertices) == 8 and len(s.faces) == 12, name
        assert s.volume == pytest.approx(1.0, rel=1e-12), name
        assert np.allclose(s.center_S, 0.5, atol=1e-12), name
        assert np.allclose(s.unit_inertia_S, np.eye(3) / 6, atol=1e-12), name


def test_inverted_mesh_is_not_a_volume(tmp_path):
    """Every face wound inwards: closed, consistent, but a negative volume, so no mass properties."""
    from graspsim.geometry import load_mesh_shape

    p = _cube_files(tmp_path)["quads.off"]
    lines = p.read_text().splitlines()
    flipped = lines[:10] + [" ".join([ln.split()[0]] + ln.split()[1:5][::-1]) for ln in lines[10:]]
    p.write_text("\n".join(flipped) + "\n")
    s = load_mesh_shape(p)
    assert not s.watertight and s.volume == 0.0


def test_box_tessellation_is_the_one_collision_always_used():
    """A box's 12 triangles (used by the contact kernels) are trimesh's box, made without trimesh."""
    import trimesh

    from graspsim.geometry import make_primitive

    s = make_primitive("box", (0.1, 0.2, 0.3))
    ref = trimesh.creation.box(extents=(0.1, 0.2, 0.3))
    assert np.array_equal(s.vertices, ref.vertices) and np.array_equal(s.faces, ref.faces)


# -- YAML 1.2 reading and bounds -------------------------------------------------------------------

def test_yaml_12_scalars(tmp_path):
    """Plain scalars follow YAML 1.2: 1e-1 is a number, yes/on and 1:30 are strings; quoted numbers are
    strings; names may be words YAML 1.1 would turn into booleans."""
    from graspsim.model.yamlio import load_yaml

    f = tmp_path / "x.yaml"
    f.write_text("a: 1e-1\nb: yes\nc: on\nd: 1:30\ne: '5'\nf: ~\ng: true\nh: -.inf\ni: 2001-12-14\nj: 12\n")
    d = load_yaml(f)
    assert d == {"a": 0.1, "b": "yes", "c": "on", "d": "1:30", "e": "5", "f": None, "g": True,
                 "h": -np.inf, "i": "2001-12-14", "j": 12}
    assert type(d["j"]) is int
    o = tmp_path / "o.yaml"
    o.write_text("object: no\nshape: {box: [1e-1, 2E-1, 0.3]}\nmass: 2.5e+0\n")
    obj = load_any(o)
    assert obj.name == "no" and obj.shape.size == pytest.approx((0.1, 0.2, 0.3)) and obj.inertial.mass == 2.5


def test_bounds_are_documented_in_the_readme():
    """Every range in graspsim.model.bounds appears, as the messages print it, in the README."""
    from graspsim.model import bounds as B

    readme = (ROOT / "README.md").read_text()
    for name in ("SIZE", "POSITION", "ANGLE", "TRAVEL", "MASS", "DENSITY", "INERTIA", "GYRATION", "DT", "GRAVITY",
                 "CONTACT_THRESHOLD", "FRICTION", "RESTITUTION", "JOINT_FRICTION", "GAIN_KP", "EFFORT", "VELOCITY",
                 "RATIO", "SCALE"):
        assert B.describe(getattr(B, name)) in readme, name
    from graspsim.meshfile import MAX_MESH_BYTES, MAX_TRIANGLES
    from graspsim.model.bounds import MAX_MODEL_TRIANGLES
    from graspsim.model.yamlio import MAX_DEPTH, MAX_MODEL_BYTES, MAX_NODES

    for v in (f"{MAX_MODEL_BYTES >> 20} MiB", f"{MAX_MESH_BYTES >> 20} MiB", f"{MAX_TRIANGLES:,}", f"{MAX_NODES:,}",
              f"{MAX_DEPTH} levels", f"{MAX_MODEL_TRIANGLES:,}"):
        assert v in readme, v


def test_value_at_a_bound_is_accepted(tmp_path):
    """The ranges are inclusive where they say so: mass 1e4 kg and dt 1 s load, just past them do not."""
    o = tmp_path / "o.yaml"
    o.write_text("object: o\nshape: {box: [1, 1, 1]}\nmass: 10000\n")
    assert load_any(o).inertial.mass == 10000
    o.write_text("object: o\nshape: {box: [1, 1, 1]}\nmass: 10000.001\n")
    with pytest.raises(ModelError, match=r"mass: must be within \[1e-06, 10000\] kg, got 10000"):
        load_any(o)
    w = tmp_path / "w.yaml"
    w.write_text("world: w\ndt: 1\n")
    assert load_any(w).dt == 1.0
    w.write_text("world: w\ndt: 1.5\n")
    with pytest.raises(ModelError, match=r"dt: must be within \(0, 1\] s, got 1.5 s"):
        load_any(w)


# -- the command line imports only what it uses (issue #16) -----------------------------------------

def test_validate_and_info_import_only_the_loader():
    """validate of a robot/object and info of a world never import trimesh, scipy, numba, FCL or the
    simulator; validate of a shipped world settles its pairs with numpy (no FCL, no numba)."""
    code = ("import sys, contextlib, io\nfrom graspsim.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert main(['validate', 'robots/barrett.yaml', 'objects/mug.yaml', 'objects/can.yaml',"
            " 'objects/flask.yaml', 'worlds/barrett_mug.yaml']) == 0\n"
            "    assert main(['info', 'worlds/puma_barrett_handset.yaml']) == 0\n"
            "heavy = [m for m in ('trimesh', 'scipy', 'numba', 'fcl', 'graspsim.collision', 'graspsim.dynamics',"
            " 'graspsim.control', 'graspsim.batch', 'graspsim.gui') if m in sys.modules]\n"
            "print(heavy)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_cli_help_lists_every_command():
    r = subprocess.run([sys.executable, "-m", "graspsim.cli", "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0
    for c in ("validate", "info", "grasp", "batch", "results", "view"):
        assert f"    {c}" in r.stdout, c


def test_validate_notes_a_material_outside_the_default_table(tmp_path, capsys):
    """An object alone cannot be wrong about a custom material, but validate says what a world needs."""
    from graspsim.cli import main

    o = tmp_path / "o.yaml"
    o.write_text("object: o\nshape: {box: [0.1, 0.1, 0.1]}\nmass: 1\nmaterial: foam\n")
    assert main(["validate", str(o)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"ok: {o} (object 'o')"
    assert out[1].startswith("  note: material 'foam' is not in the default friction table")


def test_info_shows_where_each_body_reaches(tmp_path):
    """`info` lists each body's world bounds, so a user can place an object on a table (pybullet_data's
    duck at z = 0 reaches 27.2 mm into the table; the interpenetration depth said 24.5).  The table
    box (1000 x 1000 x 50 mm, top at z = 0) exactly; the mug's mesh against trimesh's bounds; a
    tilted cylinder and a capsule against points sampled on their surfaces (closed form in the code)."""
    import trimesh

    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    text = w.summary()
    assert "  body 'table': static, wood, at [0, 0, 0] m\n    spans x [-0.5, 0.5], y [-0.5, 0.5], z [-0.05, 0] m" in text
    mug = w.bodies["mug"].instance.obj.shapes[0]
    lo, hi = mug.world_bounds(w.bodies["mug"].pose)
    tm = trimesh.Trimesh(mug.vertices, mug.faces, process=False)
    np.testing.assert_allclose(lo, tm.bounds[0], atol=1e-15)
    np.testing.assert_allclose(hi, tm.bounds[1], atol=1e-15)
    assert lo[2] == 0.0                       # it stands on the table's top
    from graspsim.geometry import make_primitive
    from graspsim.spatial import rpy_to_matrix, transform

    X = transform(rpy_to_matrix([0.7, -0.4, 0.2]), [0.1, -0.2, 0.3])
    t = np.linspace(0, 2 * np.pi, 20001)
    for kind, r, L in (("cylinder", 0.02, 0.1), ("capsule", 0.01, 0.08)):
        sh = make_primitive(kind, (r, L))
        lo, hi = sh.world_bounds(X)
        if kind == "cylinder":      # its two rims
            ring = np.stack([r * np.cos(t), r * np.sin(t), np.zeros_like(t)], 1)
            pts = np.concatenate([ring + [0, 0, -L / 2], ring + [0, 0, L / 2]])
        else:                       # its two end balls (dense directions, a Fibonacci lattice)
            k = np.arange(20000) + 0.5
            ph, z = np.pi * (1 + 5 ** 0.5) * k, 1 - 2 * k / 20000
            u = np.stack([np.sqrt(1 - z * z) * np.cos(ph), np.sqrt(1 - z * z) * np.sin(ph), z], 1)
            pts = np.concatenate([r * u + [0, 0, -L / 2], r * u + [0, 0, L / 2]])
        P = pts @ X[:3, :3].T + X[:3, 3]
        # the bounds hold every sample and exceed them by no more than the sampling's gap: a rim
        # sampled every 3e-4 rad misses r (1 - cos) < 1e-9 m; 20,000 directions on a ball ~0.025 rad
        gap = 1e-9 if kind == "cylinder" else r * (1 - np.cos(0.03))
        assert np.all(lo <= P.min(0) + 1e-15) and np.all(hi >= P.max(0) - 1e-15)
        np.testing.assert_allclose(lo, P.min(0), atol=gap)
        np.testing.assert_allclose(hi, P.max(0), atol=gap)

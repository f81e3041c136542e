"""Object URDFs naming their mesh by ``package://`` (issue #17): found through the same search as a
robot URDF's meshes (the URDF's folder and its parents, GRASPSIM_PACKAGE_PATH, ROS_PACKAGE_PATH),
a missing mesh is one line naming the URDF, the link and the places tried; the collision
``<origin>`` and ``scale`` are applied as trimesh + a hand-made transform say."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pybullet_data  # the test extra installs pybullet for its data folder
import pytest
import trimesh
from trimesh.transformations import euler_matrix

import graspsim
from graspsim.model.mesh_object import DEFAULT_DENSITY

BLOB = Path(pybullet_data.getDataPath()) / "random_urdfs" / "003" / "003.obj"
PKG = "my_objects"
ONE_LINE = re.compile(r"^[^\n:]+:\d+: [^\n:]+: [^\n]+$")


def _object_urdf(path: Path, filename: str, *, scale: str = "1 1 1", origin: str = "") -> Path:
    """A one-link URDF without <inertial>: mass from the default density, as for a bare mesh."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'<?xml version="1.0"?>\n<robot name="blob">\n  <link name="blob_link">\n'
                    f'    <collision>\n      {origin}\n      <geometry>\n'
                    f'        <mesh filename="{filename}" scale="{scale}"/>\n'
                    f'      </geometry>\n    </collision>\n  </link>\n</robot>\n')
    return path


@pytest.fixture
def package(tmp_path, monkeypatch) -> Path:
    """``tmp_path/ws/src/my_objects``: package.xml, meshes/blob.obj (a random_urdfs mesh scaled to
    ~0.1 m, written as OBJ), urdf/blob.urdf naming it by package://; no package path set."""
    for var in ("GRASPSIM_PACKAGE_PATH", "ROS_PACKAGE_PATH"):
        monkeypatch.delenv(var, raising=False)
    root = tmp_path / "ws" / "src" / PKG
    (root / "meshes").mkdir(parents=True)
    (root / "package.xml").write_text(f"<package format=\"2\"><name>{PKG}</name><version>0.0.1</version>"
                                      "<description>test objects</description></package>\n")
    m = trimesh.load(BLOB, force="mesh")
    m.apply_scale(0.015)
    m.export(root / "meshes" / "blob.obj")
    _object_urdf(root / "urdf" / "blob.urdf", f"package://{PKG}/meshes/blob.obj")
    return root


def _same_mass_properties(a, b) -> None:
    assert a.inertial.mass == pytest.approx(b.inertial.mass, rel=1e-12)
    assert a.shape.volume == pytest.approx(b.shape.volume, rel=1e-12)
    np.testing.assert_allclose(a.inertial.com, b.inertial.com, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.inertial.inertia, b.inertial.inertia, rtol=1e-12, atol=1e-18)


def test_package_url_found_through_the_urdfs_parent_folders(package):
    """ws/src/my_objects/urdf/blob.urdf: its parent ws/src holds my_objects."""
    obj = graspsim.load_object(package / "urdf" / "blob.urdf")
    direct = graspsim.load_object(package / "meshes" / "blob.obj")
    assert Path(obj.shape.source) == package / "meshes" / "blob.obj"
    _same_mass_properties(obj, direct)
    ref = trimesh.load(package / "meshes" / "blob.obj", force="mesh")       # independent volume
    assert ref.is_watertight
    assert obj.inertial.mass == pytest.approx(DEFAULT_DENSITY * ref.volume, rel=1e-9)


@pytest.mark.parametrize("var", ["GRASPSIM_PACKAGE_PATH", "ROS_PACKAGE_PATH"])
def test_package_url_found_through_the_package_path(package, tmp_path, monkeypatch, var):
    """A URDF outside the package tree: found only once the env path names ws/src (second entry)."""
    urdf = _object_urdf(tmp_path / "elsewhere" / "blob.urdf", f"package://{PKG}/meshes/blob.obj")
    with pytest.raises(graspsim.ModelError):
        graspsim.load_object(urdf)
    monkeypatch.setenv(var, f"{tmp_path / 'nothing_here'}:{package.parent}")
    obj = graspsim.load_object(urdf)
    assert Path(obj.shape.source) == package / "meshes" / "blob.obj"
    _same_mass_properties(obj, graspsim.load_object(package / "meshes" / "blob.obj"))


def test_relative_and_file_urls(package, tmp_path):
    rel = _object_urdf(package / "urdf" / "rel.urdf", "../meshes/blob.obj")
    url = _object_urdf(tmp_path / "elsewhere" / "url.urdf", f"file://{package / 'meshes' / 'blob.obj'}")
    direct = graspsim.load_object(package / "meshes" / "blob.obj")
    for u in (rel, url):
        _same_mass_properties(graspsim.load_object(u), direct)


def test_missing_package_mesh_is_one_line_naming_urdf_link_and_places(package, tmp_path, monkeypatch):
    monkeypatch.setenv("GRASPSIM_PACKAGE_PATH", str(tmp_path / "extra"))
    urdf = _object_urdf(package / "urdf" / "gone.urdf", f"package://{PKG}/meshes/gone.obj")
    with pytest.raises(graspsim.ModelError) as e:
        graspsim.load_object(urdf)
    s = str(e.value)
    assert ONE_LINE.match(s), s
    assert s.startswith(f"{urdf}:7: link[blob_link].collision.geometry.mesh@filename: ")    # <mesh> line
    assert f"mesh 'package://{PKG}/meshes/gone.obj' not found" in s
    # first places tried: the URDF's folder, then its parent (which is the package folder itself)
    assert f"tried {package / 'urdf' / PKG / 'meshes' / 'gone.obj'}, {package / PKG / 'meshes' / 'gone.obj'}, " \
           f"{package / 'meshes' / 'gone.obj'}, " in s
    n_roots = len(package.parents) + 2 + 1      # urdf/, the package and its parents, the env entry
    assert s.endswith(f" and {n_roots + 1 - 4} more; set GRASPSIM_PACKAGE_PATH for package:// names)")


def test_world_with_a_missing_package_mesh_names_the_urdf(package, tmp_path):
    urdf = _object_urdf(tmp_path / "gone" / "gone.urdf", f"package://{PKG}/meshes/gone.obj")
    w = tmp_path / "w.yaml"
    w.write_text(f"world: w\nobjects:\n  - {{name: o, file: {urdf}}}\n")
    with pytest.raises(graspsim.ModelError) as e:
        graspsim.load_world(w)
    assert str(urdf) in str(e.value) and "not found" in str(e.value) and "blob_link" in str(e.value)


def test_collision_origin_and_scale_are_applied(package):
    """Vertices in the body (link) frame = R(rpy) (scale * v) + xyz with v trimesh's vertices;
    rpy is URDF's fixed-axis roll-pitch-yaw, R = Rz(yaw) Ry(pitch) Rx(roll) (trimesh 'sxyz')."""
    xyz, rpy, scale = [0.01, -0.02, 0.03], [0.3, -0.2, 0.5], [1.0, 2.0, 1.5]
    urdf = _object_urdf(package / "urdf" / "placed.urdf", f"package://{PKG}/meshes/blob.obj",
                        scale=" ".join(map(str, scale)),
                        origin=f'<origin xyz="{" ".join(map(str, xyz))}" rpy="{" ".join(map(str, rpy))}"/>')
    obj = graspsim.load_object(urdf)
    ref = trimesh.load(package / "meshes" / "blob.obj", force="mesh")
    T = euler_matrix(*rpy, axes="sxyz")
    T[:3, 3] = xyz
    expect = (np.asarray(ref.vertices) * scale) @ T[:3, :3].T + T[:3, 3]
    got = obj.shape.vertices_in(np.eye(4))
    assert got.shape == expect.shape
    key = lambda v: v[np.lexsort(np.round(v, 9).T[::-1])]        # same points, maybe another order
    np.testing.assert_allclose(key(got), key(expect), rtol=0, atol=1e-12)
    # mass properties follow: volume x 3 (the scale's determinant), centre of mass moved with the mesh
    direct = graspsim.load_object(package / "meshes" / "blob.obj")
    assert obj.inertial.mass == pytest.approx(direct.inertial.mass * np.prod(scale), rel=1e-12)
    ref.apply_transform(np.diag([*scale, 1.0]))
    ref.apply_transform(T)
    np.testing.assert_allclose(obj.inertial.com, ref.center_mass, rtol=0, atol=1e-12)
    np.testing.assert_allclose(obj.inertial.inertia, ref.moment_inertia * DEFAULT_DENSITY, rtol=1e-9, atol=1e-15)



def test_object_urdf_with_several_collision_elements(tmp_path):
    """Each <collision> is one shape at its origin; mass properties are the two boxes' (analytic)."""
    from graspsim.model.urdf_object import urdf_object

    (tmp_path / "dumbbell.urdf").write_text("""<robot name="dumbbell"><link name="bar">
  <collision><origin xyz="0.1 0 0"/><geometry><box size="0.04 0.04 0.04"/></geometry></collision>
  <collision><origin xyz="-0.05 0 0"/><geometry><box size="0.02 0.02 0.02"/></geometry></collision>
</link></robot>""")
    o = urdf_object(tmp_path / "dumbbell.urdf", density=1000.0)
    assert len(o.shapes) == 2
    np.testing.assert_allclose([s.X_LS[0, 3] for s in o.shapes], [0.1, -0.05], atol=1e-15)
    m1, m2 = 1000.0 * 0.04 ** 3, 1000.0 * 0.02 ** 3
    assert o.inertial.mass == pytest.approx(m1 + m2, rel=1e-12)
    cx = (m1 * 0.1 - m2 * 0.05) / (m1 + m2)
    np.testing.assert_allclose(o.inertial.com, [cx, 0, 0], atol=1e-15)
    # about the com: each cube's own (m a^2 / 6) plus the parallel-axis term along x
    Iyy = m1 * 0.04 ** 2 / 6 + m2 * 0.02 ** 2 / 6 + m1 * (0.1 - cx) ** 2 + m2 * (0.05 + cx) ** 2
    Ixx = m1 * 0.04 ** 2 / 6 + m2 * 0.02 ** 2 / 6
    np.testing.assert_allclose(np.diag(o.inertial.inertia), [Ixx, Iyy, Iyy], rtol=1e-12)

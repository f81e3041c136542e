"""Contact determination: contact counts and positions, normals, separations, mesh-vs-mesh checks.

Every expected value is analytic (or, for mesh-mesh, an independent brute-force/trimesh computation).
Conventions under test: normal from body_a (lower table index) towards body_b, signed separation,
tangent frame (t1, t2, n) right-handed and orthonormal.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim.spatial import quat_to_matrix
from graspsim.collision import CollisionModel, check_interpenetration, closest_points, find_contacts, model_for
from graspsim.errors import CollisionError

ROOT = Path(__file__).resolve().parent.parent
THR = 1e-4
TOL = 1e-7  # m: positions and separations are closed-form, so far below the 0.1 mm threshold


def rot(axis: str, deg: float) -> np.ndarray:
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    R = {"x": [[1, 0, 0], [0, c, -s], [0, s, c]], "y": [[c, 0, s], [0, 1, 0], [-s, 0, c]],
         "z": [[c, -s, 0], [s, c, 0], [0, 0, 1]]}[axis]
    return np.array(R, float)


def pose(R=None, p=(0, 0, 0)) -> np.ndarray:
    X = np.eye(4)
    if R is not None:
        X[:3, :3] = R
    X[:3, 3] = p
    return X


def make_world(tmp_path: Path, objects: list[str], obstacles: list[str] | None = None, name="w"):
    """A world file with inline objects (YAML flow mappings, metres) on the shipped table."""
    obst = obstacles if obstacles is not None else [f"{{name: table, file: {ROOT / 'objects/table.yaml'}}}"]
    text = "\n".join([f"world: {name}", "units: {length: m, angle: deg}", "objects:"]
                     + [f"  - {o}" for o in objects] + ["obstacles:"] + [f"  - {o}" for o in obst]) + "\n"
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return graspsim.load_world(path)


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    """Bodies used by most tests; each test places the one it needs (others far away)."""
    tmp = tmp_path_factory.mktemp("scene")
    objs = [
        "{name: cube, shape: {box: [0.1, 0.1, 0.1]}, mass: 1}",
        "{name: ball, shape: {sphere: 0.04}, mass: 1}",
        "{name: cyl, shape: {cylinder: {radius: 0.03, length: 0.2}}, mass: 1}",
        "{name: cap, shape: {capsule: {radius: 0.01, length: 0.045}}, mass: 1}",
        f"{{name: mcube, file: {ROOT / 'objects/cube.yaml'}}}",
        f"{{name: mug, file: {ROOT / 'objects/mug.yaml'}}}",
        f"{{name: box, file: {ROOT / 'objects/long_box.yaml'}}}",
        f"{{name: handset, file: {ROOT / 'objects/handset.yaml'}}}",
    ]
    w = make_world(tmp, objs, name="scene")
    return w


def place(world, **poses):
    """Put the named bodies at the given poses and every other object far apart (10 m grid)."""
    for k, (n, b) in enumerate(world.bodies.items()):
        if b.dynamic:
            b.pose = poses.get(n, pose(p=(10.0 + 2.0 * k, 10.0, 5.0)))
    return world


def contacts_of(world, a: str, b: str, thr=THR):
    cs = model_for(world, thr).contacts(world.body_poses())
    t = world.table
    m = (cs.body_a == t.index[a]) & (cs.body_b == t.index[b])
    return cs.select(m)


def assert_points(found: np.ndarray, expected: np.ndarray, tol=TOL):
    """Same set of points (any order), each within tol."""
    found = np.asarray(found).reshape(-1, 3)
    expected = np.asarray(expected, float).reshape(-1, 3)
    assert len(found) == len(expected), f"{len(found)} contacts, expected {len(expected)}:\n{found}"
    D = np.linalg.norm(found[:, None] - expected[None], axis=2)
    assert np.all(D.min(axis=0) <= tol), f"points\n{found}\nexpected\n{expected}"
    assert np.all(D.min(axis=1) <= tol)


def assert_frames(cs):
    n, t1, t2 = cs.normal, cs.tangent1, cs.tangent2
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1, atol=1e-12)
    np.testing.assert_allclose(np.einsum("ij,ij->i", n, t1), 0, atol=1e-12)
    np.testing.assert_allclose(np.einsum("ij,ij->i", t1, t2), 0, atol=1e-12)
    np.testing.assert_allclose(np.cross(t1, t2), n, atol=1e-12)
    # the two surface points differ by separation * normal
    np.testing.assert_allclose(cs.point_b - cs.point_a, cs.separation[:, None] * n, atol=1e-9)


# -- boxes ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("yaw", [0.0, 17.0, 45.0, 133.0])
@pytest.mark.parametrize("gap", [0.0, 5e-5, -5e-5])
def test_cube_on_table_gives_its_four_bottom_corners(scene, yaw, gap):
    R = rot("z", yaw)
    c = np.array([0.12, -0.07, 0.05 + gap])
    place(scene, cube=pose(R, c))
    cs = contacts_of(scene, "cube", "table")
    corners = np.array([c + R @ [sx * 0.05, sy * 0.05, -0.05] for sx in (-1, 1) for sy in (-1, 1)])
    expected = corners.copy()
    expected[:, 2] = gap / 2  # midpoint of the corner (height gap) and the table top
    assert_points(cs.point, expected)
    np.testing.assert_allclose(cs.normal, np.tile([0, 0, -1.0], (4, 1)), atol=1e-12)  # cube -> table
    np.testing.assert_allclose(cs.separation, gap, atol=TOL)
    assert_frames(cs)


def test_mesh_cube_on_table_gives_four_corners(scene):
    R = rot("z", 20)
    c = np.array([0.0, 0.2, 0.03])
    place(scene, mcube=pose(R, c))
    cs = contacts_of(scene, "mcube", "table")
    expected = np.array([c + R @ [sx * 0.03, sy * 0.03, -0.03] for sx in (-1, 1) for sy in (-1, 1)])
    assert_points(cs.point, expected)
    np.testing.assert_allclose(cs.normal[:, 2], -1, atol=1e-12)


@pytest.mark.parametrize("gap", [0.0, 3e-5])
def test_cube_on_an_edge_gives_the_two_ends_of_the_edge(scene, gap):
    R = rot("z", 30) @ rot("x", 45)
    h = 0.05 * math.sqrt(2)
    c = np.array([-0.1, 0.1, h + gap])
    place(scene, cube=pose(R, c))
    cs = contacts_of(scene, "cube", "table")
    ex = R @ [1.0, 0, 0]
    expected = np.array([c + s * 0.05 * ex - [0, 0, h + gap / 2] for s in (-1, 1)])
    assert_points(cs.point, expected, tol=1e-6)
    np.testing.assert_allclose(cs.separation, gap, atol=1e-9)
    np.testing.assert_allclose(cs.normal, [[0, 0, -1.0]] * 2, atol=1e-9)


def test_cube_on_a_corner_gives_one_point(scene):
    # body diagonal vertical: rotate (1,1,1)/sqrt3 onto -z
    v = np.array([1.0, 1, 1]) / math.sqrt(3)
    k = np.cross(v, [0, 0, -1.0]); s = np.linalg.norm(k); k /= s
    ang = math.acos(np.dot(v, [0, 0, -1.0]))
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    R = np.eye(3) + math.sin(ang) * K + (1 - math.cos(ang)) * K @ K
    h = 0.05 * math.sqrt(3)
    place(scene, cube=pose(R, (0.2, 0.2, h)))
    cs = contacts_of(scene, "cube", "table")
    assert_points(cs.point, [[0.2, 0.2, 0.0]], tol=1e-6)


def test_cube_overhanging_the_table_edge_gives_corners_and_edge_points(scene):
    # table top spans x in [-0.5, 0.5]: a cube centred at x = 0.48 overhangs by 3 cm
    place(scene, cube=pose(None, (0.48, 0.0, 0.05)))
    cs = contacts_of(scene, "cube", "table")
    expected = [[0.43, -0.05, 0], [0.43, 0.05, 0], [0.5, -0.05, 0], [0.5, 0.05, 0]]
    assert_points(cs.point, expected)
    np.testing.assert_allclose(cs.normal[:, 2], -1, atol=1e-12)


def test_cube_above_threshold_has_no_contact_and_below_has(scene):
    place(scene, cube=pose(None, (0, 0, 0.05 + 1.01 * THR)))
    assert len(contacts_of(scene, "cube", "table")) == 0
    place(scene, cube=pose(None, (0, 0, 0.05 + 0.99 * THR)))
    assert len(contacts_of(scene, "cube", "table")) == 4


def test_box_on_box_stack_mesh_on_mesh(scene):
    """Mesh cube (6 cm) centred on the mesh long box (20x5x5 cm): region = cube bottom clipped to
    the box top (5 cm wide): 4 points, checked against the clipped rectangle."""
    place(scene, box=pose(None, (0, -0.3, 0.025)), mcube=pose(None, (0.05, -0.3, 0.05 + 0.03)))
    cs = contacts_of(scene, "mcube", "box")
    expected = [[0.02, -0.325, 0.05], [0.08, -0.325, 0.05], [0.02, -0.275, 0.05], [0.08, -0.275, 0.05]]
    assert_points(cs.point, expected)
    np.testing.assert_allclose(cs.normal, [[0, 0, -1.0]] * 4, atol=1e-12)


# -- round shapes -------------------------------------------------------------------------------------

def test_sphere_on_plane_gives_one_point(scene):
    place(scene, ball=pose(rot("x", 33), (0.3, -0.2, 0.04 + 2e-5)))
    cs = contacts_of(scene, "ball", "table")
    assert_points(cs.point, [[0.3, -0.2, 1e-5]])
    np.testing.assert_allclose(cs.normal, [[0, 0, -1.0]], atol=1e-12)
    np.testing.assert_allclose(cs.separation, [2e-5], atol=1e-12)


def test_sphere_normal_against_box_corner_is_analytic(scene):
    """Ball touching the cube's top corner from above-outside: normal along centre -> corner."""
    place(scene, cube=pose(None, (0, 0, 0.05)))
    corner = np.array([0.05, 0.05, 0.1])
    u = np.array([1.0, 2.0, 3.0]) / math.sqrt(14)
    place(scene, cube=pose(None, (0, 0, 0.05)), ball=pose(None, corner + (0.04 + 3e-5) * u))
    cs = contacts_of(scene, "cube", "ball")  # cube index < ball index
    assert len(cs) == 1
    np.testing.assert_allclose(cs.normal[0], u, atol=1e-9)  # from cube towards ball
    np.testing.assert_allclose(cs.separation[0], 3e-5, atol=1e-12)
    np.testing.assert_allclose(cs.point_a[0], corner, atol=1e-12)


@pytest.mark.parametrize("yaw", [0.0, 25.0, 90.0])
def test_cylinder_lying_on_its_side_gives_the_two_ends_of_the_line(scene, yaw):
    R = rot("z", yaw) @ rot("x", 90)  # axis horizontal
    c = np.array([0.1, 0.3, 0.03])
    place(scene, cyl=pose(R, c))
    cs = contacts_of(scene, "cyl", "table")
    ax = R[:, 2]
    assert_points(cs.point, [c + s * 0.1 * ax - [0, 0, 0.03] for s in (-1, 1)])
    np.testing.assert_allclose(cs.normal, [[0, 0, -1.0]] * 2, atol=1e-12)


def test_cylinder_standing_gives_its_rim_and_tilted_gives_one_point(scene):
    place(scene, cyl=pose(None, (0.0, 0.0, 0.1)))
    cs = contacts_of(scene, "cyl", "table")
    assert len(cs) == 16
    np.testing.assert_allclose(np.linalg.norm(cs.point[:, :2], axis=1), 0.03, atol=1e-12)
    np.testing.assert_allclose(cs.point[:, 2], 0, atol=1e-12)
    # tilted 10 deg about x: lowest rim point only
    R = rot("x", 10)
    low = R @ [0, -0.03, -0.1]  # rim point of the lower cap on the low side... pick the lowest
    rim = [R @ [0.03 * math.cos(a), 0.03 * math.sin(a), -0.1] for a in np.linspace(0, 2 * np.pi, 3601)]
    low = min(rim, key=lambda p: p[2])
    c = np.array([0.0, 0.0, -low[2]])
    place(scene, cyl=pose(R, c))
    cs = contacts_of(scene, "cyl", "table")
    assert_points(cs.point, [c + low], tol=1e-6)


def test_capsule_lying_gives_a_line_and_standing_a_point(scene):
    R = rot("z", 40) @ rot("y", 90)
    c = np.array([-0.2, -0.2, 0.01])
    place(scene, cap=pose(R, c))
    cs = contacts_of(scene, "cap", "table")
    ax = R[:, 2]
    assert_points(cs.point, [c + s * 0.0225 * ax - [0, 0, 0.01] for s in (-1, 1)])
    place(scene, cap=pose(None, (-0.2, -0.2, 0.0325)))
    cs = contacts_of(scene, "cap", "table")
    assert_points(cs.point, [[-0.2, -0.2, 0]])


def test_capsule_crossing_a_box_edge_gives_one_point_with_analytic_normal(scene):
    """Capsule resting across the cube's top edge (perpendicular): one point, normal from the
    capsule axis towards the edge."""
    u = np.array([1.0, 0, 1.0]) / math.sqrt(2)  # from the edge (along y at x=0.05, z=0.1) to the axis
    edge_pt = np.array([0.05, 0.01, 0.1])
    axis = np.cross(u, [0, 1.0, 0])  # perpendicular to the edge and to u
    R = np.column_stack([u, np.cross(axis, u), axis])
    centre = edge_pt + (0.01 + 2e-5) * u
    place(scene, cube=pose(None, (0, 0, 0.05)), cap=pose(R, centre))
    cs = contacts_of(scene, "cube", "cap")
    assert len(cs) == 1
    np.testing.assert_allclose(cs.normal[0], u, atol=1e-9)
    np.testing.assert_allclose(cs.separation[0], 2e-5, atol=1e-12)
    np.testing.assert_allclose(cs.point_a[0], edge_pt, atol=1e-9)


# -- meshes -------------------------------------------------------------------------------------------

def _mesh_world(world, name):
    s = world.table.shapes[world.table.index[name]]
    import trimesh

    return trimesh.Trimesh(s.vertices, s.faces, process=False), s


def test_fingertip_pressed_on_mug_wall_contacts_lie_on_the_true_surfaces(scene):
    """A Barrett fingertip (capsule r 10 mm, 45 mm) approaches the mug's wall horizontally; the
    impact is localized, and every contact point lies on the mug's true surface (trimesh) and
    on the capsule's surface, with the normal pointing into the mug."""
    import trimesh

    from graspsim.collision import localize_impact

    m = model_for(scene)
    mug, _ = _mesh_world(scene, "mug")
    X_mug = pose(rot("z", 10), (0.0, 0.0, 0.0))
    R = np.eye(3)  # capsule axis vertical, parallel to the mug's side
    start, end = np.array([0.0, -0.1, 0.05]), np.array([0.0, -0.03, 0.05])

    def move(s):
        place(scene, mug=X_mug, cap=pose(R, start + s * (end - start)))
        return scene.body_poses()

    s = localize_impact(move, m)
    assert 0 < s < 1
    P = move(s)
    cs = contacts_of(scene, "cap", "mug")  # the capsule has the lower index: body_a
    assert 1 <= len(cs) <= 4
    assert np.all((cs.separation > 0) & (cs.separation <= THR))
    # mug point on the mug's true surface (mug frame), capsule point on the capsule's surface
    inv = np.linalg.inv(X_mug)
    pm = cs.point_b @ inv[:3, :3].T + inv[:3, 3]
    _, dist, _ = trimesh.proximity.closest_point(mug, pm)
    assert np.all(dist < 1e-9)
    cap_c = P[scene.table.index["cap"]][:3, 3]
    for q in cs.point_a:
        z = np.clip(q[2] - cap_c[2], -0.0225, 0.0225)
        assert abs(np.linalg.norm(q - (cap_c + [0, 0, z])) - 0.01) < 1e-9
    # normal from the capsule (a) into the mug (b): +y, into the wall
    assert np.all(cs.normal[:, 1] > 0.9)
    assert_frames(cs)


def _brute_mesh_distance(A: np.ndarray, FA, B: np.ndarray, FB) -> float:
    """Exact mesh-mesh distance (separated meshes) from trimesh point-mesh queries both ways plus
    vectorised edge-edge segment distances: an independent check of FCL's distance."""
    import trimesh

    ma, mb = trimesh.Trimesh(A, FA, process=False), trimesh.Trimesh(B, FB, process=False)
    d = min(trimesh.proximity.closest_point(mb, A)[1].min(), trimesh.proximity.closest_point(ma, B)[1].min())
    ea = np.unique(np.sort(np.concatenate([FA[:, [0, 1]], FA[:, [1, 2]], FA[:, [2, 0]]]), axis=1), axis=0)
    eb = np.unique(np.sort(np.concatenate([FB[:, [0, 1]], FB[:, [1, 2]], FB[:, [2, 0]]]), axis=1), axis=0)
    p1, q1 = A[ea[:, 0]][:, None], A[ea[:, 1]][:, None]
    p2, q2 = B[eb[:, 0]][None], B[eb[:, 1]][None]
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a = (d1 * d1).sum(-1); e = (d2 * d2).sum(-1); f = (d2 * r).sum(-1)
    c = (d1 * r).sum(-1); b = (d1 * d2).sum(-1)
    den = a * e - b * b
    s = np.clip(np.where(den > 1e-18, (b * f - c * e) / np.where(den > 1e-18, den, 1), 0), 0, 1)
    t = (b * s + f) / e
    s = np.where(t < 0, np.clip(-c / a, 0, 1), np.where(t > 1, np.clip((b - c) / a, 0, 1), s))
    t = np.clip(t, 0, 1)
    dd = np.linalg.norm(p1 + d1 * s[..., None] - (p2 + d2 * t[..., None]), axis=-1)
    return float(min(d, dd.min()))


@pytest.mark.parametrize("seed", range(4))
def test_mesh_mesh_distance_matches_an_independent_computation(scene, seed):
    rng = np.random.default_rng(seed)
    from scipy.spatial.transform import Rotation

    R1, R2 = Rotation.random(2, random_state=seed).as_matrix()
    X1 = pose(R1, (0.5, 0.5, 0.5))
    # 0.20 m apart: the handset reaches 0.146 m from its frame (222 x 52 x 92 mm since issue 6), the
    # cube 0.052 m, so the two stay separated whatever the rotations (the distance is the quantity checked)
    X2 = pose(R2, (0.5, 0.5, 0.5) + rng.normal(size=3) * 0.02 + [0.0, 0.0, 0.20])
    place(scene, handset=X1, mcube=X2)
    t = scene.table
    i, j = t.index["handset"], t.index["mcube"]
    m = model_for(scene)
    P = scene.body_poses()
    d, pi, pj = m.distance(i, j, P)
    sa, sb = t.shapes[i], t.shapes[j]
    ref = _brute_mesh_distance(sa.vertices_in(X1), sa.faces, sb.vertices_in(X2), sb.faces)
    assert ref > 0
    assert abs(d - ref) < 1e-9
    assert abs(np.linalg.norm(pi - pj) - d) < 1e-9
    d2, a, b = closest_points(scene, "handset", "mcube")
    assert abs(d2 - d) < 1e-12


def test_mesh_on_mesh_contact_points_lie_on_both_surfaces(scene):
    """The long box (mesh) lying across the handset's flat top (mesh): every contact point is on both
    true surfaces (trimesh), separations and normals analytic."""
    import trimesh

    top = scene.table.shapes[scene.table.index["handset"]].vertices[:, 2].max()
    place(scene, handset=pose(None, (0.3, 0.3, 0.0)), box=pose(rot("z", 30), (0.3, 0.3, top + 0.025 + 4e-5)))
    cs = contacts_of(scene, "box", "handset")
    assert len(cs) >= 3
    np.testing.assert_allclose(cs.separation, 4e-5, atol=1e-9)
    for name, pts in (("box", cs.point_a), ("handset", cs.point_b)):
        mesh, s = _mesh_world(scene, name)
        X = scene.bodies[name].pose
        inv = np.linalg.inv(X)
        _, dist, _ = trimesh.proximity.closest_point(mesh, pts @ inv[:3, :3].T + inv[:3, 3])
        assert np.all(dist < 1e-9)
    np.testing.assert_allclose(cs.normal, np.tile([0, 0, -1.0], (len(cs), 1)), atol=1e-9)


def test_mug_standing_on_table_gives_its_base_rim(scene):
    place(scene, mug=pose(None, (0.2, -0.2, 0.0)))
    cs = contacts_of(scene, "mug", "table")
    assert len(cs) >= 8
    np.testing.assert_allclose(cs.point[:, 2], 0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(cs.point[:, :2] - [0.2, -0.2], axis=1), 0.04, atol=1e-6)
    np.testing.assert_allclose(cs.normal[:, 2], -1, atol=1e-12)


# -- API, interpenetration, broad phase ---------------------------------------------------------------

def test_find_contacts_returns_names_and_fields(scene):
    place(scene, cube=pose(None, (0, 0, 0.05)))
    cs = find_contacts(scene)
    assert {(c.body_a, c.body_b) for c in cs} == {("cube", "table")}
    c = cs[0]
    assert c.point.shape == (3,) and c.normal.shape == (3,) and isinstance(c.separation, float)


def test_contacts_are_deterministic_and_frames_stable(scene):
    place(scene, cube=pose(rot("z", 12), (0.1, 0.1, 0.05)), cyl=pose(rot("x", 90), (-0.2, 0.3, 0.03)))
    m = model_for(scene)
    P = scene.body_poses()
    a, b = m.contacts(P), m.contacts(P.copy())
    for f in a.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    # a small motion does not flip the friction frame
    P2 = P.copy()
    P2[scene.table.index["cube"], :3, 3] += [1e-6, 0, 1e-6]
    c = m.contacts(P2)
    assert len(c) == len(a)
    assert np.all(np.einsum("ij,ij->i", c.tangent1, a.tangent1) > 0.999)


def test_interpenetration_at_load_names_bodies_and_depth(tmp_path):
    w = make_world(tmp_path, ["{name: cube, shape: {box: [0.1, 0.1, 0.1]}, mass: 1, pose: {xyz: [0, 0, 0.045]}}"])
    with pytest.raises(CollisionError, match=r"'cube' and 'table' by 5 mm"):
        check_interpenetration(w)
    (a, b, depth), = check_interpenetration(w, raise_error=False)
    assert (a, b) == ("cube", "table") and abs(depth - 0.005) < 1e-12


def test_touching_at_load_is_not_interpenetration(tmp_path):
    w = make_world(tmp_path, [f"{{name: mug, file: {ROOT / 'objects/mug.yaml'}}}",
                              "{name: cube, shape: {box: [0.1, 0.1, 0.1]}, mass: 1, pose: {xyz: [0.3, 0, 0.05]}}"])
    assert check_interpenetration(w) == []


def test_body_entirely_inside_another_is_detected(tmp_path):
    """FCL reports no collision for a shape wholly inside a mesh or box: the containment guard does."""
    w = make_world(tmp_path, [f"{{name: mcube, file: {ROOT / 'objects/cube.yaml'}, pose: {{xyz: [0, 0, 0.1]}}}}",
                              "{name: ball, shape: {sphere: 0.01}, mass: 1, pose: {xyz: [0.0, 0.0, 0.1]}}",
                              "{name: pebble, shape: {sphere: 0.01}, mass: 1, pose: {xyz: [0.2, 0.0, -0.02]}}"])
    found = {(a, b) for a, b, _ in check_interpenetration(w, raise_error=False)}
    assert found == {("mcube", "ball"), ("pebble", "table")}


def test_far_obstacles_do_not_change_contacts(tmp_path):
    objs = ["{name: cube, shape: {box: [0.1, 0.1, 0.1]}, mass: 1, pose: {xyz: [0, 0, 0.05]}}"]
    base = make_world(tmp_path, objs, name="a")
    extra = [f"{{name: table, file: {ROOT / 'objects/table.yaml'}}}"] + [
        f"{{name: o{k}, shape: {{box: [0.1, 0.1, 0.1]}}, pose: {{xyz: [{3 + k}, 3, 0.05]}}}}" for k in range(20)]
    more = make_world(tmp_path, objs, extra, name="b")
    a, b = find_contacts(base), find_contacts(more)
    assert len(a) == len(b) == 4
    for x, y in zip(a, b):
        assert (x.body_a, x.body_b) == (y.body_a, y.body_b)
        np.testing.assert_allclose(x.point, y.point, atol=0)


def test_penetrating_and_separations(scene):
    m = model_for(scene)
    t = scene.table
    place(scene, cube=pose(None, (0, 0, 0.05 + 2e-3)))
    P = scene.body_poses()
    assert m.penetrating(P) == []
    d, pair = m.separations(P)
    assert pair == (t.index["cube"], t.index["table"]) and abs(d - 2e-3) < 1e-9
    place(scene, cube=pose(None, (0, 0, 0.05 - 2e-3)))
    P = scene.body_poses()
    assert m.penetrating(P) == [(t.index["cube"], t.index["table"])]
    d, pair = m.separations(P)
    assert abs(d + 2e-3) < 1e-9  # depth estimate (deepest vertex)


def test_threshold_is_configurable(scene):
    place(scene, ball=pose(None, (0, 0, 0.04 + 5e-4)))
    assert len(contacts_of(scene, "ball", "table", thr=1e-4)) == 0
    assert len(contacts_of(scene, "ball", "table", thr=1e-3)) == 1


def test_model_rejects_bad_parameters(scene):
    with pytest.raises(ValueError):
        CollisionModel(scene.table, threshold=0)
    with pytest.raises(ValueError):
        model_for(scene).contacts(np.zeros((2, 4, 4)))


# -- edge contacts and cylinders ----------------------------------------------------------------------

def test_crossed_edges_give_one_point_along_the_common_normal(scene):
    """Cube (primitive) with an edge up along y, mesh cube with an edge down along x, crossing."""
    h1 = 0.05 * math.sqrt(2)
    h2 = 0.03 * math.sqrt(2)
    place(scene, cube=pose(rot("y", 45), (0.0, 0.0, 0.3)),
          mcube=pose(rot("x", 45), (0.0, 0.0, 0.3 + h1 + h2 + 3e-5)))
    cs = contacts_of(scene, "cube", "mcube")
    assert_points(cs.point, [[0.0, 0.0, 0.3 + h1 + 1.5e-5]], tol=1e-9)
    np.testing.assert_allclose(cs.normal, [[0, 0, 1.0]], atol=1e-9)
    np.testing.assert_allclose(cs.separation, [3e-5], atol=2e-9)  # STL vertices are float32


def test_cylinder_lying_on_a_mesh_box_gives_the_overlap_ends(scene):
    """Cylinder (20 cm) across the mesh long box (20 x 5 cm top) at right angles: a line clipped to
    the box's 5 cm width."""
    R = rot("x", 90)  # cylinder axis along world -y: across the box (box long along x)
    place(scene, box=pose(None, (0, 0.5, 0.025)), cyl=pose(R, (0.03, 0.5, 0.05 + 0.03)))
    cs = contacts_of(scene, "cyl", "box")
    assert_points(cs.point, [[0.03, 0.475, 0.05], [0.03, 0.525, 0.05]])
    np.testing.assert_allclose(cs.normal, [[0, 0, -1.0]] * 2, atol=1e-12)


def test_box_edge_on_cylinder_side_and_sphere_on_cylinder(scene):
    R = rot("x", 90)  # cylinder lying along y on the table, axis at z = 0.03
    place(scene, cyl=pose(R, (0.0, -0.4, 0.03)),
          cube=pose(rot("y", 45), (0.0, -0.4, 0.06 + 0.05 * math.sqrt(2) + 2e-5)))
    cs = contacts_of(scene, "cube", "cyl")  # cube edge (along y) resting on the top generator
    assert len(cs) == 2
    np.testing.assert_allclose(cs.point[:, [0, 2]], [[0.0, 0.06 + 1e-5]] * 2, atol=1e-9)
    np.testing.assert_allclose(sorted(cs.point[:, 1]), [-0.45, -0.35], atol=1e-9)
    np.testing.assert_allclose(cs.normal, [[0, 0, -1.0]] * 2, atol=1e-9)
    u = np.array([0.3, -0.2, 0.9]); u /= np.linalg.norm(u)
    place(scene, cyl=pose(R, (0.0, -0.4, 0.03)), ball=pose(None, (0.0, -0.4, 0.03) + (0.03 + 0.04 + 5e-5) * u))
    # the sphere's centre direction must hit the side: check the analytic side normal
    cs = contacts_of(scene, "ball", "cyl")
    n_side = np.array([u[0], 0.0, u[2]]) / np.hypot(u[0], u[2])
    assert len(cs) == 1
    c = np.array([0.0, -0.4, 0.03]) + (0.03 + 0.04 + 5e-5) * u
    expected_sep = np.hypot(c[0], c[2] - 0.03) - 0.03 - 0.04
    np.testing.assert_allclose(cs.normal[0], -n_side, atol=1e-9)  # from ball into the cylinder
    np.testing.assert_allclose(cs.separation[0], expected_sep, atol=1e-12)


def _surface_distance(shape, X_WS, p) -> float:
    """|signed distance| (m) of world point p to the shape's surface, computed independently of FCL."""
    x = X_WS[:3, :3].T @ (p - X_WS[:3, 3])
    k, s = shape.kind, shape.size
    if k == "sphere":
        return abs(np.linalg.norm(x) - s[0])
    if k == "box":
        h = np.array(s) / 2
        q = np.abs(x) - h
        return abs(np.linalg.norm(np.maximum(q, 0)) + min(q.max(), 0.0))
    if k == "cylinder":
        q = np.array([np.hypot(x[0], x[1]) - s[0], abs(x[2]) - s[1] / 2])
        return abs(np.linalg.norm(np.maximum(q, 0)) + min(q.max(), 0.0))
    if k == "capsule":
        z = np.clip(x[2], -s[1] / 2, s[1] / 2)
        return abs(np.linalg.norm(x - [0, 0, z]) - s[0])
    import trimesh

    m = trimesh.Trimesh(shape.vertices, shape.faces, process=False)
    return abs(float(trimesh.proximity.signed_distance(m, x[None])[0]))


@pytest.mark.parametrize("kind_a", ["box", "sphere", "cylinder", "capsule", "mesh"])
@pytest.mark.parametrize("kind_b", ["box", "sphere", "cylinder", "capsule", "mesh"])
def test_fcl_distance_points_lie_on_their_own_bodies(kind_a, kind_b):
    """FCL's nearest points come back in argument order and in the world frame for every pair of shape
    kinds (python-fcl 0.7 swaps them for primitive-mesh pairs and gives a sphere's in its own frame)."""
    from graspsim.collision.fcl_geometry import FCLObjects
    from graspsim.geometry import load_mesh_shape, make_primitive

    sizes = {"box": (0.1, 0.2, 0.05), "sphere": (0.05,), "cylinder": (0.04, 0.1), "capsule": (0.03, 0.1)}
    mk = {k: (lambda k=k: make_primitive(k, sizes[k])) for k in sizes}
    mk["mesh"] = lambda: load_mesh_shape(graspsim.data_path("objects", "meshes", "cube.stl"))
    shapes = [mk[kind_a](), mk[kind_b]()]
    objs = FCLObjects(shapes)
    rng = np.random.default_rng(7)
    for _ in range(5):
        X = []
        for c in ([0.0, 0, 0], [0.35, 0.1, -0.05]):
            q = rng.normal(size=4)
            q /= np.linalg.norm(q)
            R = quat_to_matrix(q)      # [w, x, y, z]
            X.append(pose(R, c))
        for i in range(2):
            objs.set_pose(i, X[i])
        d, pa, pb = objs.distance(0, 1)
        assert d > 0.05
        assert np.linalg.norm(pb - pa) == pytest.approx(d, abs=1e-6)
        assert _surface_distance(shapes[0], X[0], pa) < 1e-6
        assert _surface_distance(shapes[1], X[1], pb) < 1e-6


def test_closest_points_of_a_touching_pair_lie_where_they_touch(scene):
    """A cube resting exactly on the table (FCL: colliding, distance 0 with no usable points): the
    closest points are on the cube's bottom face and on the table top, inside the contact square."""
    c = np.array([0.12, -0.07, 0.05])
    place(scene, cube=pose(rot("z", 30.0), c))
    d, a, b = closest_points(scene, "cube", "table")
    assert d == pytest.approx(0.0, abs=1e-12)
    for p in (a, b):
        assert p[2] == pytest.approx(0.0, abs=1e-9)            # the table top is z = 0
        assert np.linalg.norm(p[:2] - c[:2]) <= 0.05 * math.sqrt(2) + 1e-9   # under the cube


@pytest.mark.parametrize("thr", [0.0, -1e-4, 0.02, float("nan"), float("inf")])
def test_a_contact_threshold_outside_the_kernels_range_is_refused(scene, thr):
    with pytest.raises(ValueError, match="contact threshold must be in"):
        find_contacts(scene, thr)


@pytest.mark.parametrize("world", ["barrett_mug", "puma_barrett_handset", "panda_hand_mug", "parallel_jaw_box"])
def test_shape_frames_are_body_poses_times_shape_offsets(world):
    """The collision model's shape frames X_WS = X_WL X_LS (one compiled pass with the pose check):
    each equals the product computed independently on Python floats (to rounding) and numpy's
    matmul, which the kernel's fused multiply-adds reproduce bit for bit where numpy's BLAS uses
    them (checked on the shipped worlds at random rigid body poses)."""
    w = graspsim.load_world(ROOT / "worlds" / f"{world}.yaml")
    m = model_for(w)
    rng = np.random.default_rng(7)
    openblas = np.__config__.show(mode="dicts")["Build Dependencies"]["blas"]["name"].startswith("scipy-openblas")
    for _ in range(5):
        P = w.body_poses().copy()
        for i in range(len(P)):
            q = rng.standard_normal(4)
            P[i, :3, :3] = quat_to_matrix(q / np.linalg.norm(q))
            P[i, :3, 3] = rng.uniform(-0.5, 0.5, 3)
        X = m.shape_poses(P)
        body = np.asarray(w.table.shape_body)
        X_LS = np.asarray(w.table.shape_X_LS, float).reshape(-1, 4, 4)
        assert X.shape == (len(body), 4, 4)
        for s in range(len(body)):
            A, B = P[body[s]].tolist(), X_LS[s].tolist()
            ref = [[sum(A[r][k] * B[k][c] for k in range(4)) for c in range(4)] for r in range(4)]
            np.testing.assert_allclose(X[s], ref, rtol=0, atol=1e-15)
        if openblas:
            np.testing.assert_array_equal(X, np.matmul(P[body], X_LS))
    P[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="finite rigid"):
        m.shape_poses(P)

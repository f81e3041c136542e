"""Step 3 of the time step (collision/impact.py): the compiled screen's bound, the impact instant,
tunnelling, sub-steps of a small pile, and the compiled region-point limiting."""
from __future__ import annotations

import math

import numpy as np
import pytest

import graspsim
from graspsim.collision import ContactSet, model_for
from graspsim.collision._impact_kernel import obb_gap, screen_pairs
from graspsim.collision.impact import body_extents, convex_thickness
from graspsim.collision.simplify import limit_region_points
from graspsim.dynamics import Simulator

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "models"
THR = 1e-4
G = 9.81


def world_of(tmp_path, objects: list[str], obstacles: list[str], name="w"):
    text = f"world: {name}\nobjects:\n" + "".join(f"  - {o}\n" for o in objects)
    text += "obstacles:\n" + "".join(f"  - {o}\n" for o in obstacles)
    (tmp_path / f"{name}.yaml").write_text(text)
    return graspsim.load_world(tmp_path / f"{name}.yaml")


def first_cut(sim, max_steps=2000):
    for _ in range(max_steps):
        t0 = sim.time
        info = sim.step()
        if info.fraction < 1.0:
            return t0, info
    raise AssertionError("no impact")


def test_fast_box_drop_contact_instant_is_the_analytic_one(tmp_path):
    """A 4 cm box released 0.5 m above the table hits it at 3.1 m/s (7.8 mm per 2.5 ms step, 78
    thresholds): the step that reaches the table is cut where the gap is in (0, 0.1 mm], and that
    instant is the one of the discrete trajectory (positions move with the velocity of the step
    before: z_n = z_0 - g h^2 n (n - 1) / 2, linear within a step) to within the time the box needs
    to cross the threshold, and the continuous one sqrt(2 h0 / g) to within a step."""
    h0 = 0.5
    box = f"{{name: box, shape: {{box: [0.04, 0.04, 0.04]}}, mass: 0.1, pose: {{xyz: [0, 0, {0.02 + h0}]}}}}"
    w = world_of(tmp_path, [box],
                 [f"{{name: table, file: {ROOT / 'objects/table.yaml'}}}"])
    sim = Simulator(w)
    h = sim.dt
    t0, info = first_cut(sim)
    gap = sim.body_pose("box")[2, 3] - 0.02
    assert 0.0 < gap <= THR + 1e-12
    t_cut = sim.time
    # discrete instant of the gap reaching `gap`: fall h0 - gap
    n = int(round(t0 / h))
    v = G * h * n                                            # speed during step n
    f = (h0 - gap - G * h * h * n * (n - 1) / 2) / (v * h)
    assert 0.0 < f < 1.0
    assert t_cut == pytest.approx((n + f) * h, abs=THR / v + 1e-12)
    assert abs(t_cut - math.sqrt(2 * h0 / G)) < h
    # and it stays on the table, at rest within the threshold
    sim.run(0.5)
    assert 0.0 < sim.body_pose("box")[2, 3] - 0.02 <= THR
    assert np.abs(sim.body_velocity("box")).max() < 1e-3


def test_fast_sphere_does_not_tunnel_through_a_thin_plate(tmp_path):
    """A 1 cm sphere moving at 20 m/s towards a 2 mm plate: one step (2.5 ms) would take it 50 mm,
    from 10 mm above the plate to 16 mm below it, ending apart (an end-point check misses it).  The
    step is cut at the first contact (gap in (0, 0.1 mm]) and the sphere stays above the plate."""
    w = world_of(tmp_path, ["{name: ball, shape: {sphere: 0.01}, mass: 0.05, pose: {xyz: [0, 0, 0.02]}}"],
                 ["{name: plate, shape: {box: [0.2, 0.2, 0.002]}, pose: {xyz: [0, 0, -0.001]}}"])
    sim = Simulator(w)
    st = sim.save_state()
    st.v[0, 2] = -20.0
    sim.restore_state(st)
    info = sim.step()
    assert info.fraction == pytest.approx(0.01 / 0.05, abs=THR / 0.05)
    gap = sim.body_pose("ball")[2, 3] - 0.01
    assert 0.0 < gap <= THR + 1e-12
    sim.run(0.2)
    assert sim.body_pose("ball")[2, 3] > 0.01 - THR


def test_fast_sphere_tunnelling_check_needs_no_cut_for_a_thick_block(tmp_path):
    """The same sphere at 2 m/s next to a 2 cm block it passes beside (1 mm apart, moving
    parallel to the face): no contact during the move, so no cut."""
    w = world_of(tmp_path, ["{name: ball, shape: {sphere: 0.01}, mass: 0.05, pose: {xyz: [0.011, 0, 0.05]}}"],
                 ["{name: block, shape: {box: [0.02, 0.2, 0.02]}, pose: {xyz: [0, 0, 0]}}"])
    sim = Simulator(w, gravity=[0, 0, 0])
    st = sim.save_state()
    st.v[0, 2] = -2.0
    sim.restore_state(st)
    for _ in range(10):
        assert sim.step().fraction == 1.0


def test_screen_clears_only_pairs_that_cannot_end_deeper_than_the_threshold(tmp_path):
    """Random moves of a rotating, translating 6 cm box near the table (start gap 0-3 mm, travel up
    to 8 mm): every pair the compiled screen clears ends at most thr deep (deepest box corner below
    the table top, computed independently), and the travel it reports is h (|v| + |w| r) with r
    the box's half diagonal."""
    w = world_of(tmp_path, ["{name: box, shape: {box: [0.06, 0.06, 0.06]}, mass: 0.2}"],
                 [f"{{name: table, file: {ROOT / 'objects/table.yaml'}}}"])
    m = model_for(w)
    radius, _ = body_extents(w.table, m.pool)
    ib, it = w.table.index["box"], w.table.index["table"]
    assert radius[ib] == pytest.approx(0.03 * math.sqrt(3))
    corners = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T * 0.03
    rng = np.random.default_rng(7)
    h = 2.5e-3
    cleared = 0
    for _ in range(400):
        R = _random_rotation(rng)
        lowest = (corners @ R.T)[:, 2].min()
        c = np.array([0.0, 0.0, -lowest + rng.uniform(0, 3e-3)])
        v = np.concatenate([rng.normal(size=3) * rng.uniform(0, 1.0), rng.normal(size=3) * rng.uniform(0, 30)])
        X0 = w.body_poses()
        X0[ib] = np.eye(4)
        X0[ib][:3, :3], X0[ib][:3, 3] = R, c
        vel = np.zeros((len(w.table), 6))
        vel[ib] = v
        T, lb = np.empty(len(m.pairs)), np.empty(len(m.pairs))
        fail = screen_pairs(X0, m.pool.X_LS, m.pairs, m.pool.lo, m.pool.hi, vel, radius,
                            h, THR, T, lb)
        k = int(np.flatnonzero((m.pairs[:, 0] == ib) & (m.pairs[:, 1] == it))[0])
        assert T[k] == pytest.approx(h * (np.linalg.norm(v[:3]) + np.linalg.norm(v[3:]) * radius[ib]), rel=1e-12)
        if k in fail:
            continue
        cleared += 1
        # end of the move with the stepper's integration (c + h v; rotation by h |w| at most)
        wq = v[3:] * h
        ang = np.linalg.norm(wq)
        Rw = np.eye(3) if ang == 0 else _rodrigues(wq / ang, 2 * math.atan(ang / 2))
        R1, c1 = Rw @ R, c + h * v[:3]
        depth = -((corners @ R1.T)[:, 2] + c1[2]).min()
        assert depth < THR
    assert cleared > 20


def _random_rotation(rng):
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return Q if np.linalg.det(Q) > 0 else -Q


def _rodrigues(k, a):
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(a) * K + (1 - math.cos(a)) * K @ K


def test_obb_gap_is_a_lower_bound_of_the_distance_and_exact_face_to_face(tmp_path):
    """Two boxes 5 mm apart face to face: the gap is 5 mm; rotated at random about their centres
    (kept apart): never above FCL's distance."""
    w = world_of(tmp_path, ["{name: a, shape: {box: [0.04, 0.02, 0.03]}, mass: 1}",
                            "{name: b, shape: {box: [0.01, 0.05, 0.02]}, mass: 1}"],
                 ["{name: floor, shape: {box: [0.1, 0.1, 0.1]}, pose: {xyz: [0, 0, -1]}}"])
    m = model_for(w)
    ia, ib = w.table.index["a"], w.table.index["b"]
    lo, hi = m.pool.lo, m.pool.hi
    X = w.body_poses()
    X[ia] = np.eye(4)
    X[ib] = np.eye(4)
    X[ib][0, 3] = 0.02 + 0.005 + 0.005
    assert obb_gap(X[ia], lo[ia], hi[ia], X[ib], lo[ib], hi[ib]) == pytest.approx(0.005, abs=1e-12)
    rng = np.random.default_rng(3)
    n = 0
    for _ in range(200):
        for i in (ia, ib):
            X[i][:3, :3] = _random_rotation(rng)
        X[ib][:3, 3] = rng.normal(size=3) * 0.05
        d = m.distance(ia, ib, X)[0]
        if d <= 0:
            continue
        n += 1
        assert obb_gap(X[ia], lo[ia], hi[ia], X[ib], lo[ib], hi[ib]) <= d + 1e-12
    assert n > 50


def test_convex_thickness_of_a_cube_mesh_and_of_an_open_box():
    """The 6 cm cube mesh: 6 cm (the inscribed ball's diameter); an open box (a cup: thin walls): 0."""
    import trimesh

    cube = trimesh.load(ROOT / "objects/meshes/cube.stl")
    t = convex_thickness(cube.vertices * (0.06 / cube.extents.max()), cube.faces)
    assert t == pytest.approx(0.06, rel=1e-9)
    cup = trimesh.load(MODELS / "open_box.stl")
    assert convex_thickness(cup.vertices, cup.faces) == 0.0


def test_a_settling_stack_takes_few_sub_steps():
    """The three-box stack (tests/models/stack.yaml) settling for 1 s: at most one step in 100 is
    cut by an impact, and it ends at rest."""
    sim = Simulator(graspsim.load_world(MODELS / "stack.yaml"))
    cuts = 0
    for _ in range(400):
        cuts += sim.step().fraction < 1.0
    assert cuts <= 4
    for n in ("b1", "b2", "b3"):
        assert np.abs(sim.body_velocity(n)).max() < 1e-3


# --------------------------------------------------------------------------- region-point limiting
def _polygon_set(n_pts, radius, pairs=((0, 1),), normals=((0.0, 0.0, -1.0),)):
    rows = []
    for (a, b) in pairs:
        for nz in normals:
            ang = np.linspace(0, 2 * np.pi, n_pts, endpoint=False)
            P = np.stack([radius * np.cos(ang), radius * np.sin(ang), np.zeros(n_pts)], 1)
            n = np.tile(np.asarray(nz), (n_pts, 1))
            t1 = np.tile([1.0, 0.0, 0.0], (n_pts, 1))
            t2 = np.cross(n, t1)
            rows.append((np.full(n_pts, a), np.full(n_pts, b), P, n, t1, t2))
    cat = [np.concatenate(x) for x in zip(*rows)]
    a, b, P, n, t1, t2 = cat
    return ContactSet(a, b, P, n, np.zeros(len(a)), t1, t2, P, P)


def _area(uv):
    c = uv.mean(0)
    order = np.argsort(np.arctan2(uv[:, 1] - c[1], uv[:, 0] - c[0]))
    x, y = uv[order, 0], uv[order, 1]
    return 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))


def test_region_limit_keeps_max_points_per_region_and_most_of_the_area():
    """A 48-gon rim (the mug's base) reduced to 8 points keeps 8 of its vertices and at least 85 %
    of the circle's area (a regular inscribed octagon: 90 %); two regions of one pair (opposite
    normals) and a second pair are reduced separately; a set within the limit comes back as is."""
    r = 0.04
    cs = _polygon_set(48, r)
    out = limit_region_points(cs, 8)
    assert len(out) == 8
    assert all(any(np.allclose(p, q) for q in cs.point) for p in out.point)
    assert _area(out.point[:, :2]) >= 0.85 * math.pi * r * r
    two = _polygon_set(48, r, pairs=((0, 1), (0, 2)), normals=((0, 0, -1.0), (0, 0, 1.0)))
    out2 = limit_region_points(two, 8)
    assert len(out2) == 32
    for (a, b) in ((0, 1), (0, 2)):
        for s in (-1.0, 1.0):
            sel = (out2.body_a == a) & (out2.body_b == b) & (out2.normal[:, 2] == s)
            assert sel.sum() == 8
    small = _polygon_set(8, r)
    assert limit_region_points(small, 8) is small


def test_contacts_with_region_limit_equal_the_limited_contact_set():
    """The dynamics' contacts (``contacts(X, max_region_points=8)``: the reduction applied to the
    kernel's output in place) are exactly ``limit_region_points`` of the full set, column by column:
    the mug resting on the table (its 48-gon base: 48 contacts -> 8) and the Barrett closed on it."""
    import graspsim
    from graspsim.control import dynamic_auto_grasp

    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    m = model_for(w)
    r = dynamic_auto_grasp(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"), "barrett", timeout=0.6)
    for X in (w.body_poses(), r.sim.poses()):
        full = m.contacts(X)
        assert len(full) > 8
        ref = limit_region_points(full, 8)
        got = m.contacts(X, max_region_points=8)
        assert len(ref) < len(full) and len(got) == len(ref)
        for f in ("body_a", "body_b", "point", "normal", "separation", "tangent1", "tangent2", "point_a",
                  "point_b", "shape_a", "shape_b"):
            assert np.array_equal(getattr(got, f), getattr(ref, f)), f
        assert m.contacts(X, max_region_points=len(full)).point.shape == full.point.shape


@pytest.mark.parametrize("speed", [0.05, 0.3, 1.0, 1.9])
@pytest.mark.parametrize("yaw_tilt", [(0.0, 0.0), (20.0, 3.0)])
def test_kernel_view_localises_like_fcl(tmp_path, speed, yaw_tilt):
    """The bisection answered by the contact kernel (KernelPairView, threshold = the travel) ends
    where FCL's distance says the cube is within (0, 0.1 mm] of the table, like FCL's PairView."""
    from graspsim.collision import PairView, localize_impact
    from graspsim.collision.localize import KernelPairView

    w = world_of(tmp_path, ["{name: box, shape: {box: [0.06, 0.06, 0.06]}, mass: 0.2}"],
                 [f"{{name: table, file: {ROOT / 'objects/table.yaml'}}}"])
    m = model_for(w)
    ib, it = w.table.index["box"], w.table.index["table"]
    yaw, tilt = np.radians(yaw_tilt)
    R = _rodrigues(np.array([0.0, 0.0, 1.0]), yaw) @ _rodrigues(np.array([1.0, 0.0, 0.0]), tilt)
    corners = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T * 0.03
    travel = speed * 2.5e-3
    z0 = -(corners @ R.T)[:, 2].min() + 0.5 * (travel + THR)     # ends 0.5 (travel - thr) deep

    def move(s):
        X = w.body_poses()
        X[ib][:3, :3], X[ib][:3, 3] = R, (0.1, 0.05, z0 - s * travel)
        return X

    pair = (min(ib, it), max(ib, it))
    fracs = []
    for view in (KernelPairView(m, [pair], [travel]), PairView(m, [pair])):
        f = localize_impact(move, view)
        assert 0.0 < f < 1.0
        assert 0.0 < m.pair_separations(move(f), [pair])[0] <= THR
        fracs.append(f)
    # both land where the gap is in (0, thr]: within thr / travel of each other
    assert abs(fracs[0] - fracs[1]) <= THR / travel


def _cube_obj(path, half: float):
    """A closed cube mesh (OBJ, 12 outward triangles) of half-width ``half`` (m)."""
    V = [((k >> 2) & 1, (k >> 1) & 1, k & 1) for k in range(8)]
    F = [(1, 3, 0), (4, 1, 0), (0, 3, 2), (2, 4, 0), (1, 7, 3), (5, 1, 4), (5, 7, 1), (3, 7, 2),
         (6, 4, 2), (2, 7, 6), (6, 5, 4), (7, 5, 6)]
    lines = [f"v {(2 * x - 1) * half} {(2 * y - 1) * half} {(2 * z - 1) * half}" for x, y, z in V]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in F]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("inner", ["{sphere: {radius: 0.01}}", "{cylinder: {radius: 0.01, length: 0.03}}",
                                   "{capsule: {radius: 0.01, length: 0.03}}"])
def test_round_shape_entirely_inside_a_mesh_is_interpenetrating(tmp_path, inner):
    """A round primitive wholly inside a closed mesh block: no triangle crosses it, so FCL's
    mesh collide says no and the containment guard decides, through the primitive's surface point
    (its radius along x; no tessellation).  Moved clear of the block, or its centre on the block's
    side face, the verdict follows the geometry."""
    mesh = _cube_obj(tmp_path / "block.obj", 0.1)
    w = world_of(tmp_path, [f"{{name: ball, shape: {inner}, mass: 0.1, pose: {{xyz: [0, 0, 0.5]}}}}"],
                 [f"{{name: block, shape: {{mesh: {mesh}}}, pose: {{xyz: [0, 0, 0.5]}}}}"])
    m = model_for(w)
    ia, ib = w.table.index["ball"], w.table.index["block"]
    pair = (min(ia, ib), max(ia, ib))
    assert np.allclose(w.table.shape_list[ia].surface_point, [0.01, 0.0, 0.0])
    X = w.body_poses()
    m._place(m.shape_poses(X), [ia, ib], m.data)
    assert not m.data.fcl.collide(ia, ib)                   # FCL alone misses the containment
    assert m.penetrating(X) == [pair]
    X[ia][:3, 3] = (0.0, 0.0, 0.5 + 0.1 + 0.03)              # above the block's top face (z = 0.6)
    assert m.penetrating(X) == []
    X[ia][:3, 3] = (0.1, 0.0, 0.5)                           # centre on the block's side face
    assert m.penetrating(X) == [pair]


# a Barrett fingertip (capsule r = 10 mm, core 45 mm) against the mug, relative pose (in the mug's
# frame) at the start and the end of a step of a dynamic batch trial (h = 2.5 ms) that stalled:
# on the mug's outer wall (separation 0.04 mm), its end in the handle's edges
_TIP_START = np.array([[0.8828477828801912, 0.4614408683829249, -0.08747638109537181, 0.05141921221436441],
                       [0.4656790155044033, -0.835851216009833, 0.2906816114131298, -0.01399253187954277],
                       [0.0610151356827164, -0.2973635311885036, -0.9528127221740504, 0.10983039371213067],
                       [0.0, 0.0, 0.0, 1.0]])
_TIP_END = np.array([[0.8493844711770198, 0.516507255525652, -0.10847246246256764, 0.05427076729146088],
                     [0.5245097318426681, -0.803283409542538, 0.28217956190349336, -0.01126920884167941],
                     [0.05861366159579785, -0.29657380016291696, -0.953209536110114, 0.10963711429800076],
                     [0.0, 0.0, 0.0, 1.0]])


def _tip_on_mug(tmp_path):
    tip = "{name: tip, shape: {capsule: {radius: 0.01, length: 0.045}}, mass: 0.1, pose: {xyz: [0.3, 0, 0.3]}}"
    w = world_of(tmp_path, [tip], [f"{{name: mug, file: {ROOT / 'objects/mug.yaml'}}}"])
    sim = Simulator(w, gravity=[0, 0, 0])
    h = sim.dt
    st = sim.save_state()
    st.c = _TIP_START[None, :3, 3].copy()
    st.q = graspsim.spatial.matrix_to_quat(_TIP_START[:3, :3])[None]
    dR = _TIP_END[:3, :3] @ _TIP_START[:3, :3].T
    st.v = np.r_[(_TIP_END[:3, 3] - _TIP_START[:3, 3]) / h, graspsim.spatial.rotation_log(dR) / h][None]
    sim.restore_state(st)
    return sim


def test_an_edge_overlap_next_to_a_face_contact_is_seen(tmp_path):
    """The fingertip touches the mug's outer wall (a face contact, 0.04 mm apart) while its end sinks
    2.7 mm into the handle's edges (the core 7.3 mm from them, radius 10 mm: measured independently
    below from the mesh's vertices and the core).  The contact kernel counted edge contacts only
    for pairs without a face contact, so that overlap appeared only when the core entered a handle
    face's prism, 2.8 mm at once a few nanoseconds into the move (and the impact search cut the step
    to 1 ns until the stall guard stopped the trial).  The edge contacts deeper than the face
    contacts by more than the threshold count: the overlap is there at the start, and the same one
    step later."""
    sim = _tip_on_mug(tmp_path)
    h = sim.dt
    model = sim._collision_model()
    tip_i, mug_i = sim.table.index["tip"], sim.table.index["mug"]

    def contacts_at(f):
        X = sim._trial_move(sim.state, f * h)[2]
        return model.contacts(X, [[tip_i, mug_i]]), X

    cs, X = contacts_at(0.0)
    # independently: the capsule's depth into the mug's vertices near the handle's root (x > 40 mm):
    # r minus the distance of the nearest such vertex to the core (a vertex lies on the surface)
    import trimesh
    V = trimesh.load(ROOT / "objects/meshes/mug.obj").vertices
    V = V[V[:, 0] > 0.045]
    R, c = X[tip_i][:3, :3], X[tip_i][:3, 3]
    a, b = c - 0.0225 * R[:, 2], c + 0.0225 * R[:, 2]
    s = np.clip((V - a) @ (b - a) / ((b - a) @ (b - a)), 0, 1)
    vertex_depth = 0.01 - np.linalg.norm(V - (a + s[:, None] * (b - a)), axis=1).min()
    deep = cs.separation < -1e-3
    assert deep.any() and (cs.separation > 0).any()            # the handle's overlap and the wall
    # the edges' closest points lie between vertices: at least as deep as the nearest vertex
    assert vertex_depth > 2e-3
    assert -cs.separation.min() >= vertex_depth - 1e-9
    assert -cs.separation.min() < vertex_depth + 1e-3
    # continuous: a millionth of the move later (a travel of nanometres) the depth is the same
    cs1, _ = contacts_at(1e-6)
    assert abs(cs1.separation.min() - cs.separation.min()) < 1e-6
    # the step is not cut: the overlap is a contact that the step's rows push out of
    info = sim.step()
    assert info.fraction == 1.0


def test_an_overlap_that_appears_within_a_millionth_of_the_move_is_not_cut_to_nanoseconds(tmp_path):
    """The impact search's last resort (collision/impact.py ``_localize``): a pair touching at the
    start (0.05 mm apart) whose overlap is 2 mm deep from 1e-7 of the move on.  No motion does that
    (at 400 m/s a millionth of a 2.5 ms step is 1 um); a depth that jumps does (a non-convex mesh's
    face whose prism a core enters, before the contact kernel counted edge contacts next to face
    contacts).  The search localises a first contact at 2**-24 of the move, and cutting there
    repeats the step forever; the move is taken whole instead (the overlap is a contact: its rows
    push it out).  A smooth approach is still cut: the same pair reaching 2 mm at the end of the
    move is cut where it touches."""
    from graspsim.collision.impact import _localize

    w = world_of(tmp_path, ["{name: cube, shape: {box: [0.04, 0.04, 0.04]}, mass: 0.1, pose: {xyz: [0, 0, 0.5]}}"],
                 ["{name: block, shape: {box: [0.2, 0.2, 0.2]}, pose: {xyz: [0, 0, -0.1]}}"])
    model = model_for(w, THR)
    ci, bi = w.table.index["cube"], w.table.index["block"]
    X = w.body_poses().copy()

    def at(z):
        Y = X.copy()
        Y[ci, 2, 3] = 0.02 + z
        return Y

    jump = lambda f: at(5e-5 if f < 1e-7 else -2e-3)
    smooth = lambda f: at(5e-5 + f * (-2e-3 - 5e-5))
    assert model.penetrating(jump(1e-6)) and not model.penetrating(jump(0.0))
    assert _localize(model, [(ci, bi)], jump, THR) == 1.0
    f = _localize(model, [(ci, bi)], smooth, THR)
    assert 0.0 < f < 1.0
    assert 0.0 < float(model.pair_separations(smooth(f), [(ci, bi)])[0]) <= THR


def _ride(tmp_path, motion, faller: bool):
    """A 6 cm cube (``rider``) on a platform (a one-link robot's base) that rises by ``motion(t)``
    (m) from t = 0, optionally a second cube (``faller``) dropped beside it onto the table.
    Returns (simulator, the platform's pose at t = 0, the rider's height above it)."""
    extra = f"  - {{name: faller, file: {ROOT}/objects/cube.yaml, pose: {{xyz: [0, 0, 0.08]}}}}\n" if faller else ""
    w = (f"world: ride\nunits: {{length: m, angle: deg}}\nrobots:\n"
         f"  - {{name: platform, file: {MODELS}/platform.yaml, pose: {{xyz: [0.4, 0, 0.01]}}}}\n"
         f"objects:\n  - {{name: rider, file: {ROOT}/objects/cube.yaml, pose: {{xyz: [0.4, 0, 0.05005]}}}}\n"
         + extra + f"obstacles:\n  - {{name: table, file: {ROOT}/objects/table.yaml}}\n")
    (tmp_path / "ride.yaml").write_text(w)
    sim = Simulator(graspsim.load_world(tmp_path / "ride.yaml"))
    X0 = sim.body_pose("platform/base").copy()

    def rise(t):
        X = X0.copy()
        z, vz = motion(t)
        X[2, 3] += z
        return X, np.array([0, 0, vz, 0, 0, 0])
    sim.set_base_motion("platform", rise)
    return sim, X0, sim.body_pose("rider")[2, 3] - X0[2, 3]


def test_a_cut_step_leaves_moving_bases_where_the_clock_is(tmp_path):
    """A platform (a one-link robot's base) rises from rest at 0.5 m/s^2 with a cube on it while a
    second cube lands on the table, and its impact cuts a step.  The moving base is placed at t + h
    for the impact search; a step cut at t + f h used to leave it there, (1 - f) h ahead of the
    clock, so the next step moved it by f h only while the bodies moved by h.  A fingertip held
    against the palm of a lifted hand (below it, moving with it) then overlapped the palm anew at
    the end of every step and every step was cut (1,056 cut steps in one batch trial; 48 now).
    Now after every step, cut or not, the base is where its motion puts it at the simulation's
    time, and the cube rides on it."""
    acc = 0.5
    sim, X0, z0 = _ride(tmp_path, lambda t: (0.5 * acc * t * t, acc * t), faller=True)
    cuts = 0
    while sim.time < 0.3:
        info = sim.step()
        cuts += info.fraction < 1.0
        X = X0.copy()
        X[2, 3] += 0.5 * acc * sim.time ** 2
        assert np.array_equal(sim.body_pose("platform/base"), X)
    assert cuts >= 1                                        # the landing (at 0.10 s)
    gap = sim.body_pose("rider")[2, 3] - sim.body_pose("platform/base")[2, 3] - z0
    assert abs(gap) <= THR                                  # riding on it, 2.2 cm up


def test_the_overlap_test_sees_the_edge_overlaps_the_contact_list_leaves_out(tmp_path):
    """The same fingertip moved off the handle until its edges overlap it by about 24 um: the
    contact list keeps edge contacts next to face contacts only when deeper than them by more
    than the threshold (the wall contact is at +40 um), so it leaves this one out.  Whether the pair
    interpenetrates must not depend on that rule (a line an overlap crosses while the fingertip
    moves by nanometres, and the impact search cut the step there: 149 cut steps in a batch
    trial): the overlap test takes every candidate.  Its depth checked independently: the
    capsule's radius minus the distance of the mug's edges (sampled every 0.01 mm) to its core."""
    import trimesh

    sim = _tip_on_mug(tmp_path)
    model = sim._collision_model()
    ti, mi = sim.table.index["tip"], sim.table.index["mug"]
    X = sim.poses().copy()
    cs = model.contacts(X, [[ti, mi]])
    n_edge, n_wall = cs.normal[np.argmin(cs.separation)], cs.normal[np.argmax(cs.separation)]
    away = n_edge - (n_edge @ n_wall) * n_wall                  # off the handle, along the wall
    X[ti, :3, 3] -= 2.825e-3 * away / np.linalg.norm(away)
    cs = model.contacts(X, [[ti, mi]])
    assert cs.separation.min() > 0.0                            # the contacts: the wall alone
    assert model.penetrating(X, pairs=[(ti, mi)]) == [(ti, mi)]
    # independently: the mug's edges near the handle, sampled, against the capsule's core
    mesh = trimesh.load(ROOT / "objects/meshes/mug.obj")
    E = mesh.vertices[mesh.edges_unique]
    E = E[(E[:, :, 0] > 0.04).all(axis=1)]
    R, c = X[ti][:3, :3], X[ti][:3, 3]
    a, b = c - 0.0225 * R[:, 2], c + 0.0225 * R[:, 2]
    worst = -np.inf
    for e0, e1 in E:
        n = max(2, int(np.linalg.norm(e1 - e0) / 1e-5))
        P = e0 + np.linspace(0, 1, n)[:, None] * (e1 - e0)
        s = np.clip((P - a) @ (b - a) / ((b - a) @ (b - a)), 0, 1)
        worst = max(worst, 0.01 - float(np.linalg.norm(P - (a + s[:, None] * (b - a)), axis=1).min()))
    XS = model.shape_poses(X)
    sep, _ = graspsim.collision.kernels.closest_candidate(int(model._bstart[ti]), int(model._bstart[mi]), XS, model._P,
                                                          model.threshold, model.data.C, model.data.C2, model._cyl)
    assert 1e-5 < worst < 5e-5
    assert -sep == pytest.approx(worst, abs=1e-6)


def test_a_base_started_at_speed_lifts_what_rests_on_it(tmp_path):
    """The platform under the cube starts rising at 10 cm/s at once: 0.25 mm per step, beyond the
    contact band (0.1 mm).  A moving base is placed at t + h before the move; searched as if it
    stood there, its first step put the platform 0.2 mm into the cube, where no contact is, and the
    cube fell through it (2 cm below its place on the platform after 50 ms, free fall).  The
    search moves the base within the step (from its pose at t, at a constant twist): the first step
    is cut where they meet, and the cube rides up with the platform, 1 cm in 0.1 s."""
    v = 0.1
    sim, X0, z0 = _ride(tmp_path, lambda t: (v * t, v), faller=False)
    first = sim.step()
    # cut where the platform meets the cube: their separation (0.05 mm at the start) in (0, thr]
    sep = 0.5e-4 - (sim.body_pose("platform/base")[2, 3] - X0[2, 3])
    assert first.fraction < 1.0 and 0.0 < sep <= THR
    while sim.time < 0.1:
        sim.step()
    assert sim.body_pose("platform/base")[2, 3] - X0[2, 3] == pytest.approx(v * sim.time, abs=1e-12)
    gap = sim.body_pose("rider")[2, 3] - sim.body_pose("platform/base")[2, 3] - z0
    assert abs(gap) <= THR

"""The compiled "do two shapes meet" (collision/_intersect_kernel.py) against FCL's collide, whose
semantics it reproduces (primitives solid, meshes surfaces, touching counts), and
CollisionModel.penetrating built on it against the FCL-based answer it replaced."""
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import graspsim
from graspsim.collision import _intersect_kernel as IX
from graspsim.collision import kernels as K
from graspsim.dynamics import Simulator

ROOT = Path(__file__).resolve().parent.parent


def _model(world):
    sim = Simulator(graspsim.load_world(ROOT / "worlds" / f"{world}.yaml"))
    m = sim._collision_model()
    return sim, m, m.shape_poses(sim.poses())


def _place_near(m, X0, sa, sb, rng):
    """sb at the origin, sa at a random orientation with its box centre at a random point of sb's
    box (spread by 0.3 of sa's size): about half the placements meet."""
    P = m._P
    X = X0.copy()
    X[sb] = np.eye(4)
    R = Rotation.random(random_state=rng).as_matrix()
    lo, hi, la, ha = P[K.P_LO][sb], P[K.P_HI][sb], P[K.P_LO][sa], P[K.P_HI][sa]
    target = lo + rng.random(3) * (hi - lo) + rng.normal(size=3) * 0.3 * np.linalg.norm(ha - la)
    X[sa] = np.eye(4)
    X[sa][:3, :3] = R
    X[sa][:3, 3] = target - R @ (0.5 * (la + ha))
    return X


@pytest.mark.parametrize("world", ["barrett_mug", "panda_hand_mug"])
def test_shapes_meet_as_fcl_collide(world):
    """Random placements of every kind of pair (sphere-free worlds: capsule, box, mesh; the Panda's
    meshes against the mug's): the answer is FCL's wherever the pair is not within 1e-6 m of
    touching (FCL's own collide and distance disagree at ~5e-7 m near a capsule's edge contact;
    the kernel's closest candidate measures how near)."""
    sim, m, X0 = _model(world)
    P, d = m._P, m.data
    rng = np.random.default_rng(7)
    shapes = [s for s in range(len(m._svalid)) if m._svalid[s]]
    seen, disagree = {}, []
    for _ in range(1500):
        sa, sb = (int(x) for x in rng.choice(shapes, 2, replace=False))
        X = _place_near(m, X0, sa, sb, rng)
        d.fcl.set_pose(sa, X[sa])
        d.fcl.set_pose(sb, X[sb])
        ref = d.fcl.collide(sa, sb)
        got = IX.shapes_meet(sa, sb, X, P)
        kinds = (int(P[K.P_KIND][sa]), int(P[K.P_KIND][sb]))
        seen.setdefault(kinds, set()).add(got)
        if (got == IX.MEET) != ref:
            sep, _ = K.closest_candidate(sa, sb, X, P, 1e-4, d.C, d.C2)
            if not abs(sep) < 1e-6:
                disagree.append((kinds, ref, got, sep))
    assert disagree == []
    # both answers came up for every kind pair drawn often enough to be meaningful
    assert all(ans == {IX.MEET, IX.APART} for kinds, ans in seen.items()), seen


def test_capsule_above_a_box_face_and_tilted():
    """Analytic gaps: the Barrett fingertip (capsule r = 10 mm) above the table's top face, level
    and tilted, its lowest point 1e-7 m below / above the face: meets / apart."""
    sim, m, X0 = _model("barrett_mug")
    P = m._P
    cap = int(m._bstart[sim.table.index["barrett/f1_dist"]])
    box = int(m._bstart[sim.table.index["table"]])
    r, hl, hb = P[K.P_RAD][cap], P[K.P_HALF][cap][2], P[K.P_HALF][box]
    X = X0.copy()
    X[box] = np.eye(4)
    for ang in (0.0, 0.3, 1.2, math.pi / 2):
        R = Rotation.from_rotvec([ang, 0.0, 0.0]).as_matrix()
        low = abs(R[2, 2]) * hl + r                   # lowest point below the capsule's centre
        for gap, want in ((-1e-7, IX.MEET), (1e-7, IX.APART), (-1e-4, IX.MEET), (1e-4, IX.APART)):
            X[cap] = np.eye(4)
            X[cap][:3, :3] = R
            X[cap][:3, 3] = [0.01, 0.02, hb[2] + low + gap]
            assert IX.shapes_meet(cap, box, X, P) == want, (ang, gap)
            assert IX.shapes_meet(box, cap, X, P) == want, (ang, gap)


def test_boxes_corner_to_face_and_nested():
    """Two Barrett links' boxes: a corner of one pushed 1e-7 m into / held 1e-7 m off a face of the
    other; a small box inside the (large) table box meets it (solids, as in FCL)."""
    sim, m, X0 = _model("barrett_mug")
    P = m._P
    a = int(m._bstart[sim.table.index["barrett/f1_prox"]])
    b = int(m._bstart[sim.table.index["barrett/f2_prox"]])
    ha, hb = P[K.P_HALF][a], P[K.P_HALF][b]
    X = X0.copy()
    X[b] = np.eye(4)
    R = Rotation.from_rotvec(np.array([1.0, 1.0, 0.3]) / np.linalg.norm([1.0, 1.0, 0.3]) * 0.9).as_matrix()
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * ha
    c = corners @ R.T
    low = c[np.argmin(c[:, 2])]                  # the lowest corner, relative to a's centre
    for gap, want in ((-1e-7, IX.MEET), (1e-7, IX.APART)):
        X[a] = np.eye(4)
        X[a][:3, :3] = R
        # that corner over a point of b's top face (x 0.2, y -0.1 of its half sizes)
        X[a][:3, 3] = np.array([0.2 * hb[0], -0.1 * hb[1], hb[2] + gap]) - low
        assert IX.shapes_meet(a, b, X, P) == want
        assert IX.shapes_meet(b, a, X, P) == want
    # a small box deep inside the (much larger) table box: solids meet (a corner inside)
    t = int(m._bstart[sim.table.index["table"]])
    X[t] = np.eye(4)
    X[a] = np.eye(4)
    assert IX.shapes_meet(a, t, X, P) == IX.MEET


@pytest.mark.parametrize("world", ["barrett_mug", "panda_hand_mug"])
def test_penetrating_as_before(world):
    """The hand's links and the mug jiggled around a grasp-like pose by up to 1 cm / 0.2 rad: the
    body pairs reported interpenetrating are the FCL-based answer's (``_penetrating_fcl``, the
    world checks' path), pair for pair and in order."""
    sim, m, _ = _model(world)
    base = sim.poses()
    rng = np.random.default_rng(3)
    mug = sim.table.index["mug"]
    hand = [i for i, n in enumerate(sim.table.names) if "/" in n]
    found = 0
    for _ in range(120):
        poses = base.copy()
        # the mug moved into the hand's reach: its centre near a random link's
        k = int(rng.choice(hand))
        poses[mug][:3, 3] = base[k][:3, 3] + rng.normal(size=3) * 0.03
        for i in hand + [mug]:
            R = Rotation.from_rotvec(rng.normal(size=3) * 0.2).as_matrix()
            poses[i][:3, :3] = R @ poses[i][:3, :3]
            poses[i][:3, 3] += rng.normal(size=3) * 0.01
        got = m.penetrating(poses)
        assert got == m._penetrating_fcl(poses)
        found += len(got) > 0
    assert found > 20        # the comparison saw interpenetrations, not only separated bodies


def test_inside_a_mesh_cavity_is_nested_not_penetrating():
    """A fingertip (capsule r = 10 mm) upright in the mug's cavity (inner radius 35 mm): its bounds
    lie inside the mug's, no surface meets (NESTED), and a surface point is outside the mug's
    material: not interpenetrating.  Moved 30 mm off the axis it cuts 5 mm into the wall."""
    sim, m, X0 = _model("barrett_mug")
    tip, mug = sim.table.index["barrett/f1_dist"], sim.table.index["mug"]
    poses = sim.poses().copy()
    out = np.empty((8, 4), np.int64)
    for x, want, pen in ((0.0, IX.NESTED, False), (0.03, IX.MEET, True)):
        # the fingertip's shape frame (its core along z) upright at (x, 0, 50 mm) in the mug's
        S = m.shape_poses(poses)[mug].copy()
        S[:3, 3] = S[:3, :3] @ [x, 0.0, 0.05] + S[:3, 3]
        poses[tip] = S @ np.linalg.inv(m._X_LS[tip])
        pair = np.array([[min(tip, mug), max(tip, mug)]], np.int64)
        k = IX.meeting_pairs(m.shape_poses(poses), pair, m._bstart, m._bcount, m._P, m._svalid, out)
        assert k == 1 and out[0, 3] == want
        assert (len(m.penetrating(poses, pairs=pair)) == 1) is pen

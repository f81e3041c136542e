"""Checks of a loaded world that need its geometry placed: what the simulator would refuse at start.

Loading (:mod:`graspsim.model.loader`) checks everything a file says on its own; here the world's
initial state is built and the simulator's own load-time check is run
(the collision model's ``interpenetrations``, behind :func:`graspsim.collision.check_interpenetration`,
which :class:`graspsim.Simulator` runs), so
``graspsim validate`` reports a world whose bodies start inside each other before anyone simulates
it.  That check needs FCL and the compiled contact kernels (1.5-2.5 s to load them in a fresh
process), so pairs that a separating axis proves apart are settled first with numpy alone
(:func:`apart`); the shipped worlds, whose objects rest on tables, need nothing more.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from .description import World

#: overlap (m) along a separating axis that still counts as apart: a thousandth of the 1 um a pair
#: must interpenetrate by before the simulator's check reports it (CollisionModel's pen_tol)
APART_TOL = 1e-9


#: most interpenetrating pairs reported (each costs the collision code 0.05-0.15 s to confirm; a
#: hostile world can have hundreds of thousands)
MAX_REPORTED = 10
#: most pairs whose bounding boxes overlap (each costs :func:`apart` up to ~1 ms), and most pairs
#: :func:`apart` cannot settle that go to the exact check (up to ~0.15 s each): more is refused, so
#: validating any world ends within seconds
MAX_CLOSE_PAIRS = 1000
MAX_EXACT_PAIRS = 32


def start_problems(world: World) -> list[ModelError]:
    """Problems the simulator would refuse ``world`` for at its start (currently: bodies that
    interpenetrate in the initial state), each naming the world file and the entry's line.

    Pairs are screened by their bounding boxes and :func:`apart`; the rest go to the collision
    model's ``interpenetrations`` (what :func:`graspsim.collision.check_interpenetration` and the
    simulator run) a few at a time, until :data:`MAX_REPORTED` are found.
    """
    from ..world import World as LiveWorld

    live = LiveWorld(world)
    t = live.table
    pairs = np.asarray(t.collision_pairs, dtype=np.int64).reshape(-1, 2)
    if not len(pairs):
        return []
    X = live.body_poses()
    cache: dict = {}
    S, XS = t.shape_list, X[t.shape_body]          # every shape, at its body's pose
    slo, shi = _boxes(S, XS, cache)
    lo, hi = np.full((len(t), 3), np.inf), np.full((len(t), 3), -np.inf)     # a body's: its shapes' union
    np.minimum.at(lo, t.shape_body, slo)
    np.maximum.at(hi, t.shape_body, shi)
    own = lambda b: range(int(t.body_shape_start[b]), int(t.body_shape_start[b] + t.body_shape_count[b]))
    i, j = pairs[:, 0], pairs[:, 1]
    near = np.all((lo[i] <= hi[j] + APART_TOL) & (lo[j] <= hi[i] + APART_TOL), axis=1)
    if near.sum() > MAX_CLOSE_PAIRS:
        return [ModelError(f"{int(near.sum())} pairs of bodies overlap in their bounding boxes at the start; validate "
                           f"checks at most {MAX_CLOSE_PAIRS} for interpenetration (spread the bodies out, or "
                           "validate with --no-collisions)", file=world.file)]
    found, todo, model, exact = [], [], None, 0
    for pair in [tuple(p) for p in pairs[near]] + [None]:
        if pair is not None:
            a, b = pair
            if all(apart(S[p], XS[p], S[q], XS[q], cache=(cache, p, q)) for p in own(a) for q in own(b)):
                continue
            exact += 1
            if exact > MAX_EXACT_PAIRS:
                return [ModelError(f"more than {MAX_EXACT_PAIRS} pairs of bodies start too close to settle without the "
                                   f"exact interpenetration check, which validate runs on at most {MAX_EXACT_PAIRS} "
                                   "(spread the bodies out, or validate with --no-collisions)", file=world.file)]
            todo.append(pair)
        if todo and (len(todo) == 8 or pair is None):      # a few pairs at a time, stopping early
            todo = _fcl_screen(S, XS, slo, shi, own, todo)
        if todo and (len(todo) == 8 or pair is None):
            if model is None:
                from ..collision import model_for

                model = model_for(live)
            found += model.interpenetrations(X, np.array(todo, dtype=np.int64))
            todo = []
            if len(found) >= MAX_REPORTED:
                break
    out = []
    found.sort(key=lambda f: (f[0], f[1]))
    for a, b, depth in found[:MAX_REPORTED]:
        na, nb = t.names[a], t.names[b]
        field, line = world.entry_lines.get(world.robots[t.robot[a]].name if t.robot[a] >= 0 else na, (None, None))
        out.append(ModelError(f"'{na}' and '{nb}' interpenetrate by {depth * 1e3:.3g} mm in the initial state; "
                              "the simulator refuses such a world (move them apart)",
                              file=world.file, line=line, field=field))
    if len(found) >= MAX_REPORTED:
        out.append(ModelError(f"(stopped after {MAX_REPORTED} interpenetrating pairs; there may be more)",
                              file=world.file))
    return out


def _fcl_screen(shapes, X: np.ndarray, lo: np.ndarray, hi: np.ndarray, own, pairs: list) -> list:
    """The pairs FCL cannot clear: FCL's boolean collide is reliable (NOTES-platform), so a pair it
    reports apart is apart unless one body could lie wholly inside the other (FCL tests surfaces), which
    needs one's bounding box inside the other's.  Saves loading the compiled contact kernels (~0.6 s)
    for a world whose close pairs (fingertips beside a non-convex handset) do not touch."""
    from ..collision.fcl_geometry import FCLObjects

    keep = []
    for a, b in pairs:           # body pairs; shapes/X/lo/hi per shape, own(body) its shapes
        for p in own(a):
            for q in own(b):
                objs = FCLObjects([shapes[p], shapes[q]])
                for k, i in enumerate((p, q)):
                    objs.set_pose(k, X[i] @ shapes[i].X_LS)
                inside = (np.all(lo[p] >= lo[q]) and np.all(hi[p] <= hi[q])) or (
                    np.all(lo[q] >= lo[p]) and np.all(hi[q] <= hi[p]))
                if inside or objs.collide(0, 1):
                    break
            else:
                continue
            keep.append((a, b))
            break
    return keep


def _boxes(shapes, X, cache) -> tuple[np.ndarray, np.ndarray]:
    """World-axis bounds (n, 3) of every shape (shape k's body at X[k]; empty bounds for None)."""
    n = len(shapes)
    lo, hi = np.full((n, 3), np.inf), np.full((n, 3), -np.inf)
    for k, s in enumerate(shapes):
        if s is None:
            continue
        A = X[k] @ s.X_LS
        vw = _mesh_world(s, A, (cache, k, k), 1)
        for ax in range(3):
            e = np.zeros(3)
            e[ax] = 1.0
            lo[k, ax], hi[k, ax] = -_support(s, A, vw, -e), _support(s, A, vw, e)
    return lo, hi


def apart(sa, X_WA: np.ndarray, sb, X_WB: np.ndarray, *, tol: float = APART_TOL, iterations: int = 48,
          cache=None) -> bool:
    """True if some axis separates shapes ``sa`` and ``sb`` (placed at body poses ``X_WA``, ``X_WB``):
    their projections overlap by at most ``tol`` (m).  False means "not proven apart", not "touching".

    Exact for the convex primitives; a mesh is taken as its vertices' convex hull (which contains
    it), so the answer is never "apart" for shapes that interpenetrate.  Axes tried: the world's,
    each shape's frame axes, the line between the shape centres, then up to ``iterations`` steps of
    Frank-Wolfe towards the point of the Minkowski difference B - A nearest the origin (whose
    direction separates two convex sets that are apart).
    """
    A, B = X_WA @ sa.X_LS, X_WB @ sb.X_LS
    va, vb = _mesh_world(sa, A, cache, 1), _mesh_world(sb, B, cache, 2)
    axes = [np.eye(3), A[:3, :3].T, B[:3, :3].T]
    c = B[:3, 3] - A[:3, 3]
    n = np.linalg.norm(c)
    if n > 0:
        axes.append((c / n)[None])
    for d in np.concatenate(axes):
        if _support(sb, B, vb, -d) + _support(sa, A, va, d) <= tol:       # a below b along d
            return True
        if _support(sa, A, va, -d) + _support(sb, B, vb, d) <= tol:       # b below a along d
            return True
    # Frank-Wolfe on min |z| over z in B - A: z moves towards the support point of B - A along -z
    d0 = c / n if n > 0 else np.array([0.0, 0.0, 1.0])
    z = _point(sb, B, vb, -d0) - _point(sa, A, va, d0)
    for _ in range(iterations):
        nz = np.linalg.norm(z)
        if nz < tol:
            return False
        d = z / nz
        if _support(sb, B, vb, -d) + _support(sa, A, va, d) <= tol:
            return True
        w = _point(sb, B, vb, -d) - _point(sa, A, va, d)     # argmin over B - A of d . x
        step = w - z
        ss = float(step @ step)
        if ss == 0.0:
            return False
        z = z + min(1.0, max(0.0, -float(z @ step) / ss)) * step
    return False


def _mesh_world(s, X: np.ndarray, cache, k: int):
    if s.kind != "mesh":
        return None
    if cache is not None:
        store, key = cache[0], cache[k]
        if key not in store:
            store[key] = s.vertices @ X[:3, :3].T + X[:3, 3]
        return store[key]
    return s.vertices @ X[:3, :3].T + X[:3, 3]


def _support(s, X: np.ndarray, vw, d: np.ndarray) -> float:
    """max over shape ``s`` (its frame at ``X`` in the world) of d . x."""
    R, t = X[:3, :3], X[:3, 3]
    base = float(d @ t)
    if s.kind == "mesh":
        return float((vw @ d).max())
    dl = R.T @ d                                   # d in the shape frame
    if s.kind == "box":
        return base + 0.5 * float(np.abs(dl) @ np.asarray(s.size))
    if s.kind == "sphere":
        return base + s.size[0] * float(np.linalg.norm(d))
    r, half = s.size[0], 0.5 * s.size[1]
    if s.kind == "capsule":
        return base + half * abs(float(dl[2])) + r * float(np.linalg.norm(d))
    # cylinder along z
    return base + half * abs(float(dl[2])) + r * float(np.hypot(dl[0], dl[1]))


def _point(s, X: np.ndarray, vw, d: np.ndarray) -> np.ndarray:
    """A point of shape ``s`` (world) where d . x is largest."""
    R, t = X[:3, :3], X[:3, 3]
    if s.kind == "mesh":
        return vw[int(np.argmax(vw @ d))]
    dl = R.T @ d
    if s.kind == "box":
        return t + R @ (0.5 * np.sign(dl) * np.asarray(s.size))
    nd = float(np.linalg.norm(d))
    if s.kind == "sphere":
        return t + s.size[0] * d / nd
    r, half = s.size[0], 0.5 * s.size[1]
    end = t + R[:, 2] * (half if dl[2] >= 0 else -half)
    if s.kind == "capsule":
        return end + r * d / nd
    radial = np.array([dl[0], dl[1], 0.0])
    nr = float(np.linalg.norm(radial))
    return end + (R @ (r * radial / nr) if nr > 0 else 0.0)

"""Deterministic grasp candidates: approach directions x rolls x stand-offs x preshapes, per object.

Directions (unit vectors in the world frame W, the way the hand moves):

* ``sphere: N`` -- N directions evenly on the whole sphere: a Fibonacci lattice turned by a random
  rotation drawn from the seed (so different seeds give different, equally even, sets).  Each
  aims at the object's target point (its centre of mass, or its bounding-box centre).
* ``normals: N`` -- N points drawn on the object's surface (area-weighted, from the seed); each
  approaches against the outward surface normal there and aims at that surface point.
* ``list`` -- explicit directions, aiming at the target point.
* ``within: {axis, angle}`` keeps only directions within ``angle`` of ``axis`` (e.g. axis
  [0, 0, -1] with 90 deg: from above and the side, not from under the table).  ``normals``
  draws until N points pass (at most 100 N draws); ``sphere`` counts the lattice before the filter.

Candidate ids are consecutive integers in the order object, direction (sphere, normals, list),
roll, stand-off, preshape -- the same for a given configuration and seed on every machine.

With ``candidates: {planner: {...}}`` the candidates are instead the grasps that
:func:`graspsim.planner.plan_grasps` returns for each object (:func:`plan_candidates`), in its
order: the hand's base pose and preshape as the planner found them (``source = 'planner'``).
An ``iterations`` budget makes them deterministic; whatever the budget, the runner stores them in
the database, and a resumed run uses the stored ones.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from .. import spatial

__all__ = ["Candidate", "ObjectGeometry", "object_geometry", "generate_candidates", "plan_candidates",
           "fibonacci_sphere", "approach_frame"]


@dataclass(frozen=True)
class Candidate:
    """One grasp to try (SI units, world frame)."""

    id: int
    object: str
    source: str             # 'sphere' | 'normal' | 'list'
    direction: tuple        # unit approach direction (3,)
    target: tuple           # the point aimed at (3,), m
    roll: float             # rad about the approach axis (see approach_frame)
    standoff: float         # m: the palm stops this far before the target if nothing is touched first
    preshape: dict          # {dof name: value} set before the approach (rad or m)
    # planner candidates (source 'planner'): no approach, the hand is put at this grasp
    base_pose: tuple | None = None   # hand base pose, 16 floats (4x4 row-major, W, m)
    energy: float | None = None      # the planner's search energy of the pre-grasp state
    planned_dofs: dict | None = None  # {dof name: value} of the planner's closed grasp

    def to_dict(self) -> dict:
        d = asdict(self)
        d["direction"] = list(self.direction)
        d["target"] = list(self.target)
        d["preshape"] = dict(self.preshape)
        if self.base_pose is None:           # grid candidates: the keys they always had
            for k in ("base_pose", "energy", "planned_dofs"):
                d.pop(k)
        else:
            d["base_pose"] = list(self.base_pose)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Candidate":
        bp = d.get("base_pose")
        return cls(int(d["id"]), d["object"], d["source"], tuple(d["direction"]), tuple(d["target"]),
                   float(d["roll"]), float(d["standoff"]), dict(d["preshape"]),
                   tuple(float(x) for x in bp) if bp is not None else None,
                   float(d["energy"]) if d.get("energy") is not None else None,
                   dict(d["planned_dofs"]) if d.get("planned_dofs") is not None else None)


@dataclass
class ObjectGeometry:
    """What candidate generation needs of an object, in W at its initial pose."""

    com: np.ndarray
    center: np.ndarray       # bounding-box centre
    vertices: np.ndarray     # (n, 3)
    faces: np.ndarray        # (m, 3) int


def object_geometry(world, name: str) -> ObjectGeometry:
    b = world.bodies[name]
    shape = b.instance.obj.shape
    V = shape.vertices_in(b.pose)
    return ObjectGeometry(com=b.com_world, center=0.5 * (V.min(axis=0) + V.max(axis=0)), vertices=V,
                          faces=np.asarray(shape.faces, dtype=np.int64))


def fibonacci_sphere(n: int) -> np.ndarray:
    """(n, 3) unit vectors evenly spread on the sphere (Fibonacci lattice)."""
    if n <= 0:
        return np.zeros((0, 3))
    i = np.arange(n, dtype=float)
    z = 1.0 - (2.0 * i + 1.0) / n
    r = np.sqrt(np.maximum(0.0, 1.0 - z * z))
    phi = i * math.pi * (3.0 - math.sqrt(5.0))
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


def _random_rotation(rng: np.random.Generator) -> np.ndarray:
    q = rng.standard_normal(4)
    q /= np.linalg.norm(q)
    return spatial.quat_to_matrix(q)


def _perpendicular(a: np.ndarray) -> np.ndarray:
    """A unit vector perpendicular to unit ``a``, chosen deterministically: unit(e_k x a) with e_k
    the world axis of a's smallest component (the first one on ties)."""
    k = int(np.argmin(np.abs(a)))
    e = np.zeros(3)
    e[k] = 1.0
    b = np.cross(e, a)
    return b / np.linalg.norm(b)


def approach_frame(a, roll: float) -> np.ndarray:
    """Orthonormal frame [b1, b2, a] (columns, right-handed) about the unit approach direction ``a``:
    ``b1`` is :func:`_perpendicular` turned by ``roll`` about ``a``.

    The hand's palm frame is aligned so that its approach axis goes to ``a`` and its own reference
    perpendicular (the same rule applied in the palm frame) to ``b1``: for the Barrett (approach +z
    of the palm), a = [0, 0, -1] and roll 0 give the palm-down pose of worlds/barrett_mug.yaml.
    """
    a = np.asarray(a, dtype=float)
    a = a / np.linalg.norm(a)
    b1 = _perpendicular(a)
    b2 = np.cross(a, b1)
    c, s = math.cos(roll), math.sin(roll)
    r1 = c * b1 + s * b2
    r2 = np.cross(a, r1)
    return np.stack([r1, r2, a], axis=1)


def _within(dirs: np.ndarray, within) -> np.ndarray:
    if within is None or not len(dirs):
        return np.ones(len(dirs), dtype=bool)
    ax = np.asarray(within["axis"], dtype=float)
    return dirs @ ax >= math.cos(within["angle"]) - 1e-12


def _surface_samples(geom: ObjectGeometry, rng: np.random.Generator, n: int):
    V, F = geom.vertices, geom.faces
    A, B, C = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    cr = np.cross(B - A, C - A)
    area = 0.5 * np.linalg.norm(cr, axis=1)
    ok = area > 1e-14
    if not ok.any():
        return np.zeros((0, 3)), np.zeros((0, 3))
    p = np.where(ok, area, 0.0)
    p = p / p.sum()
    f = rng.choice(len(F), size=n, p=p)
    u = rng.random((n, 2))
    flip = u.sum(axis=1) > 1.0
    u[flip] = 1.0 - u[flip]
    pts = A[f] + u[:, :1] * (B[f] - A[f]) + u[:, 1:] * (C[f] - A[f])
    nrm = cr[f] / np.linalg.norm(cr[f], axis=1, keepdims=True)
    return pts, nrm


def generate_candidates(config, geometries: dict) -> list[Candidate]:
    """Every candidate of a :class:`~graspsim.batch.config.BatchConfig` (or its dict), given
    ``geometries`` {object name: :class:`ObjectGeometry`}."""
    c = config.candidates if hasattr(config, "candidates") else config["candidates"]
    if c.get("planner"):
        raise ValueError("the candidates of this configuration come from the planner: use plan_candidates(config, worlds)")
    seed = config.seed if hasattr(config, "seed") else config["seed"]
    scenes = config.scenes if hasattr(config, "scenes") else config["scenes"]
    seqs = np.random.SeedSequence(int(seed)).spawn(len(scenes))
    out: list[Candidate] = []
    for si, sc in enumerate(scenes):
        name = sc["object"]
        g = geometries[name]
        rng = np.random.default_rng(seqs[si])
        aim = np.asarray(g.com if c["target"] == "com" else g.center, dtype=float)
        rot = _random_rotation(rng)
        dirs = []   # (source, direction, target)
        sph = fibonacci_sphere(c["sphere"]) @ rot.T
        for d in sph[_within(sph, c["within"])]:
            dirs.append(("sphere", d, aim))
        if c["normals"]:
            need, tries, got = c["normals"], 0, []
            while len(got) < need and tries < 100 * need:
                pts, nrm = _surface_samples(g, rng, need)
                tries += need
                if not len(pts):
                    break
                keep = _within(-nrm, c["within"])
                for p, nv in zip(pts[keep], nrm[keep]):
                    if len(got) < need:
                        got.append(("normal", -nv, p))
            dirs.extend(got)
        for d in c["list"]:
            v = np.asarray(d, dtype=float)
            dirs.append(("list", v / np.linalg.norm(v), aim))
        for src, d, tgt in dirs:
            dt = tuple(float(x) for x in d)
            tt = tuple(float(x) for x in tgt)
            for roll in c["rolls"]:
                for so in c["standoffs"]:
                    for pre in c["preshapes"]:
                        out.append(Candidate(len(out), name, src, dt, tt, float(roll), float(so), dict(pre)))
    return out


def plan_candidates(config, worlds: dict) -> list[Candidate]:
    """The candidates of a ``candidates: {planner: ...}`` configuration: for each scene in order, the
    grasps :func:`graspsim.planner.plan_grasps` returns in its world (``worlds`` {object: World in
    its initial state}, left so), as planned.  ``direction`` is the palm's approach axis and
    ``target`` the palm position (W); roll and stand-off are 0.  Raises ValueError naming the
    object when the planner cannot plan for it."""
    from ..planner import plan_grasps

    p = config.candidates["planner"] if hasattr(config, "candidates") else config["candidates"]["planner"]
    hand = config.hand if hasattr(config, "hand") else config["hand"]
    scenes = config.scenes if hasattr(config, "scenes") else config["scenes"]
    out: list[Candidate] = []
    for sc in scenes:
        name = sc["object"]
        w = worlds[name]
        try:
            grasps = plan_grasps(w, hand, name, n=int(p["n"]), seconds=p["seconds"], iterations=p["iterations"],
                                 energy=p["energy"], seed=int(p["seed"]), restarts=int(p["restarts"]))
        except ValueError as e:
            raise ValueError(f"candidates.planner: object '{name}': {e}") from None
        u = np.asarray(w.robots[hand].description.approach, dtype=float)
        for g in grasps:
            a = g.palm_pose[:3, :3] @ u
            out.append(Candidate(len(out), name, "planner", tuple(float(x) for x in a),
                                 tuple(float(x) for x in g.palm_pose[:3, 3]), 0.0, 0.0,
                                 {k: float(v) for k, v in g.preshape.items()},
                                 tuple(float(x) for x in np.asarray(g.base_pose).reshape(-1)), float(g.energy),
                                 {k: float(v) for k, v in g.dofs.items()}))
    return out

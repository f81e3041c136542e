"""The flat table of every rigid body in a world: robot links, dynamic objects and obstacles.

Collision and dynamics index bodies by one integer; this table (derived once from the immutable
world description) says what each index is.  Link bodies are named ``"robot/link"``.

A body owns 0..k collision shapes.  Shapes have their own flat index (body order, then the body's
own order), CSR style: body i's shapes are ``shape_list[body_shape_start[i] : body_shape_start[i] +
body_shape_count[i]]`` and ``shape_body`` maps a shape back to its body (docs/collision_model_data.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .description import World

LINK, OBJECT, OBSTACLE = 0, 1, 2


@dataclass(frozen=True, eq=False)
class BodyTable:
    """Per-body arrays (length N) describing every rigid body of a world."""

    names: tuple            # str
    kind: np.ndarray        # LINK / OBJECT / OBSTACLE
    robot: np.ndarray       # robot index for links, -1 otherwise
    link: np.ndarray        # link index within its robot, -1 otherwise
    body: np.ndarray        # index into World.bodies for objects/obstacles, -1 otherwise
    shapes: tuple           # per body: its one Shape, None, or with several their merged mesh (drawing)
    materials: tuple        # str
    colors: tuple
    dynamic: np.ndarray     # bool: moves (objects, links of robots); obstacles never move
    mass: np.ndarray        # kg (0 for obstacles)
    com: np.ndarray         # (N, 3) centre of mass in the body frame
    inertia: np.ndarray     # (N, 3, 3) about the com, body axes
    index: dict             # name -> index
    robot_links: tuple      # per robot: array of body indices of its links (link order)
    collision_pairs: np.ndarray  # (P, 2) int: every pair that may collide, i < j
    # -- shapes (S of them), CSR by body
    body_shapes: tuple = ()      # per body: tuple of its collision Shapes
    shape_list: tuple = ()       # (S,) Shape, flat
    shape_body: np.ndarray = None        # (S,) int: owning body
    body_shape_start: np.ndarray = None  # (N,) int
    body_shape_count: np.ndarray = None  # (N,) int
    shape_X_LS: np.ndarray = None        # (S, 4, 4) shape frame in its body frame
    shape_materials: tuple = ()          # (S,) str: the shape's material (its body's unless given)

    def __len__(self) -> int:
        return len(self.names)

    def __getstate__(self):
        # the collision models cached on the table (collision.model_for) stay in their process
        return {k: v for k, v in self.__dict__.items() if k != "_collision_models"}


@lru_cache(maxsize=32)
def body_table(world: World) -> BodyTable:
    """Build (once per world description) the flat body table with its collision filter."""
    names, kind, robot, link, body, shapes, mats, cols, dyn, mass, com, inertia = ([] for _ in range(12))
    bshapes, smats = [], []
    robot_links = []
    for ri, inst in enumerate(world.robots):
        idx = []
        for li, l in enumerate(inst.robot.links):
            idx.append(len(names))
            names.append(f"{inst.name}/{l.name}")
            kind.append(LINK); robot.append(ri); link.append(li); body.append(-1)
            shapes.append(l.shape); mats.append(l.material); cols.append(l.color)
            bshapes.append(l.shapes); smats.append(_shape_mats(l))
            dyn.append(True); mass.append(l.inertial.mass); com.append(l.inertial.com); inertia.append(l.inertial.inertia)
        robot_links.append(np.array(idx, dtype=np.int64))
    for bi, b in enumerate(world.bodies):
        names.append(b.name)
        kind.append(OBJECT if b.dynamic else OBSTACLE); robot.append(-1); link.append(-1); body.append(bi)
        shapes.append(b.obj.shape); mats.append(b.obj.material); cols.append(b.obj.color)
        bshapes.append(b.obj.shapes); smats.append(_shape_mats(b.obj))
        dyn.append(b.dynamic)
        if b.obj.inertial is not None and b.dynamic:
            mass.append(b.obj.inertial.mass); com.append(b.obj.inertial.com); inertia.append(b.obj.inertial.inertia)
        else:
            mass.append(0.0); com.append(np.zeros(3)); inertia.append(np.zeros((3, 3)))
    index = {n: i for i, n in enumerate(names)}

    # static = never moves: obstacles, and the base link of a fixed-base, unmounted robot
    static = [not d for d in dyn]
    for ri, inst in enumerate(world.robots):
        if inst.fixed_base and inst.mount is None:
            static[robot_links[ri][inst.robot.base_link]] = True

    # pairs that never collide: links of one robot that are adjacent or listed, a mounted hand's
    # base with the link it is mounted on, static-static pairs, pairs the world disables
    skip = set()
    for ri, inst in enumerate(world.robots):
        for pair in inst.robot.no_collide:
            a, b = tuple(pair)
            skip.add(frozenset((robot_links[ri][a], robot_links[ri][b])))
        if inst.mount is not None:
            pi, pl, _ = inst.mount
            skip.add(frozenset((robot_links[ri][inst.robot.base_link], robot_links[pi][pl])))
    for pair in world.disabled_pairs:
        ids = []
        for n in pair:
            if n in index:
                ids.append([index[n]])
            elif n in world.robot_index:  # a whole robot
                ids.append(list(robot_links[world.robot_index[n]]))
        if len(ids) == 2:
            for a in ids[0]:
                for b in ids[1]:
                    skip.add(frozenset((a, b)))
    pairs = []
    n = len(names)
    for i in range(n):
        if not bshapes[i]:
            continue
        for j in range(i + 1, n):
            if not bshapes[j] or (static[i] and static[j]) or frozenset((i, j)) in skip:
                continue
            pairs.append((i, j))
    return BodyTable(names=tuple(names), kind=np.array(kind, dtype=np.int64), robot=np.array(robot, dtype=np.int64),
                     link=np.array(link, dtype=np.int64), body=np.array(body, dtype=np.int64), shapes=tuple(shapes),
                     materials=tuple(mats), colors=tuple(cols),
                     dynamic=np.array(dyn, dtype=bool) & ~np.array(static, dtype=bool),   # dtypes: a world may be empty
                     mass=np.array(mass, dtype=float), com=np.array(com, dtype=float).reshape(-1, 3),
                     inertia=np.array(inertia, dtype=float).reshape(-1, 3, 3), index=index, robot_links=tuple(robot_links),
                     collision_pairs=np.array(pairs, dtype=np.int64).reshape(-1, 2), **_csr(bshapes, smats))


def _shape_mats(owner) -> tuple:
    """Material name of each of a link's/object's shapes (the owner's where the shape names none)."""
    given = tuple(owner.shape_materials) + (None,) * (len(owner.shapes) - len(owner.shape_materials))
    return tuple(m if m is not None else owner.material for m in given[:len(owner.shapes)])


def _csr(bshapes: list, smats: list) -> dict:
    """The shape arrays of the table (flat shape order = body order, then each body's own)."""
    count = np.array([len(s) for s in bshapes], dtype=np.int64)
    start = np.zeros(len(count), dtype=np.int64)
    if len(count):
        start[1:] = np.cumsum(count)[:-1]
    flat = tuple(s for ss in bshapes for s in ss)
    X = np.array([s.X_LS for s in flat], dtype=float).reshape(-1, 4, 4)
    for a in (count, start, X):
        a.flags.writeable = False
    sb = np.repeat(np.arange(len(count), dtype=np.int64), count)
    sb.flags.writeable = False
    return dict(body_shapes=tuple(bshapes), shape_list=flat, shape_body=sb, body_shape_start=start,
                body_shape_count=count, shape_X_LS=X, shape_materials=tuple(m for ms in smats for m in ms))

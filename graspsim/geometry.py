"""Shapes of links and bodies: primitives and triangle meshes, with their mass properties.

A :class:`Shape` is immutable.  Its triangle mesh (``vertices``, ``faces``) is expressed in the
shape frame S, which sits at ``X_LS`` in the frame L of the link or body that owns it.  Primitives
keep their exact parameters (collision uses FCL primitives for them) and a tessellation for
drawing:

* ``box``: ``size = (sx, sy, sz)`` full side lengths, centred on S.
* ``sphere``: ``size = (r,)``, centred on S.
* ``cylinder``: ``size = (r, length)``, axis along S's z, centred on S.
* ``capsule``: ``size = (r, length)``, axis along z, ``length`` between the two cap centres, centred on S.
* ``mesh``: ``size = ()``; ``source`` names the file it came from.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from .errors import ModelError

PRIMITIVES = ("box", "sphere", "cylinder", "capsule")
MESH_SUFFIXES = (".stl", ".obj", ".ply", ".off", ".glb", ".gltf")


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Shape:
    """An immutable collision/visual shape (see module docstring for the parameter conventions)."""

    kind: str
    size: tuple
    X_LS: np.ndarray
    source: str | None = None
    #: volume (m^3), centre of volume in S (m), and inertia about that centre at unit density (S axes)
    volume: float = field(default=0.0)
    center_S: np.ndarray = field(default=None)
    unit_inertia_S: np.ndarray = field(default=None)
    watertight: bool = True
    #: (vertices, faces) of a mesh; None for a primitive, whose tessellation is made when first asked for
    mesh: tuple | None = field(default=None, repr=False)

    @property
    def vertices(self) -> np.ndarray:
        """(n, 3) vertices in S (m): the mesh, or a primitive's tessellation (for drawing)."""
        return (self.mesh or _tessellate(self.kind, self.size))[0]

    @property
    def faces(self) -> np.ndarray:
        """(m, 3) int64 triangles (counter-clockwise seen from outside)."""
        return (self.mesh or _tessellate(self.kind, self.size))[1]

    @property
    def surface_point(self) -> np.ndarray:
        """A point (3,) on the surface, in S (m): the first vertex of a mesh or box; for a round
        primitive a point of its side, without tessellating it (that imports trimesh, ~0.5 s)."""
        if self.mesh is not None or self.kind == "box":
            return self.vertices[0]
        if self.kind in ("sphere", "cylinder", "capsule"):
            return np.array([self.size[0], 0.0, 0.0])     # radius along x: on the side (z = 0)
        return self.vertices[0]

    def vertices_in(self, X_WL: np.ndarray) -> np.ndarray:
        """Mesh vertices (n, 3) in the world frame, given the owner's pose ``X_WL``."""
        X = X_WL @ self.X_LS
        return self.vertices @ X[:3, :3].T + X[:3, 3]

    def _corners(self) -> np.ndarray | None:
        """The points (n, 3) in S whose hull is the shape: a mesh's vertices, a box's 8 corners;
        None for a round primitive."""
        if self.mesh is not None:
            return self.vertices
        if self.kind == "box":
            return np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * (0.5 * np.asarray(self.size))
        return None

    def reach(self, point) -> float:
        """The largest distance (m) from ``point`` (owner frame L) to a point of the shape: exact for
        a mesh and a box, an upper bound for the round primitives (their centre's distance plus
        their own reach); no tessellation."""
        point = np.asarray(point, dtype=float)
        V = self._corners()
        if V is not None:
            V = V @ self.X_LS[:3, :3].T + self.X_LS[:3, 3]
            return float(np.sqrt(((V - point) ** 2).sum(1).max()))
        r, length = (self.size[0], 0.0) if self.kind == "sphere" else self.size
        own = r + 0.5 * length if self.kind == "capsule" else float(np.hypot(r, 0.5 * length))
        return float(np.linalg.norm(self.X_LS[:3, 3] - point)) + own

    def world_bounds(self, X_WL: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The shape's axis-aligned bounds (lo (3,), hi (3,)) in W (m), its owner at ``X_WL``: exact
        (a mesh's vertices, a box's corners, a round primitive's closed form); no tessellation."""
        X = np.asarray(X_WL, dtype=float) @ self.X_LS
        R, c = X[:3, :3], X[:3, 3]
        V = self._corners()
        if V is not None:
            P = V @ R.T + c
            return P.min(axis=0), P.max(axis=0)
        r = self.size[0]
        if self.kind == "sphere":
            return c - r, c + r
        a = R[:, 2] * (0.5 * self.size[1])            # half the axis (cylinder, capsule: along S's z)
        lo, hi = np.minimum(c - a, c + a), np.maximum(c - a, c + a)
        # a capsule's caps reach r every way; a cylinder's rim r sqrt(1 - axis_i^2) along axis i
        e = np.full(3, r) if self.kind == "capsule" else r * np.sqrt(np.clip(1.0 - R[:, 2] ** 2, 0.0, 1.0))
        return lo - e, hi + e

    @property
    def bounding_radius(self) -> float:
        """Largest distance (m) from the shape frame origin to the surface."""
        return float(np.max(np.linalg.norm(self.vertices, axis=1))) if len(self.vertices) else 0.0

    def mass_properties(self, *, mass: float | None = None, density: float | None = None):
        """Return ``(mass, com_L (3,), inertia_L (3, 3) about the com in L axes)`` for uniform density.

        Give either ``mass`` (density follows from the volume) or ``density`` (kg/m^3).
        """
        if self.volume <= 0:
            raise ValueError("shape has no volume")
        rho = density if density is not None else mass / self.volume
        m = mass if mass is not None else rho * self.volume
        R = self.X_LS[:3, :3]
        com_L = self.X_LS[:3, :3] @ self.center_S + self.X_LS[:3, 3]
        I_L = rho * (R @ self.unit_inertia_S @ R.T)
        return m, com_L, I_L


# -- primitives ---------------------------------------------------------------------------------

def _primitive_mass_properties(kind: str, size: tuple):
    """Exact volume and unit-density inertia about the centre for the primitives."""
    if kind == "box":
        a, b, c = size
        V = a * b * c
        I = V / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    elif kind == "sphere":
        (r,) = size
        V = 4.0 / 3.0 * math.pi * r ** 3
        I = 0.4 * V * r * r * np.eye(3)
    elif kind == "cylinder":
        r, h = size
        V = math.pi * r * r * h
        ixx = V * (3 * r * r + h * h) / 12.0
        I = np.diag([ixx, ixx, 0.5 * V * r * r])
    elif kind == "capsule":
        r, h = size
        vc = math.pi * r * r * h
        vs = 4.0 / 3.0 * math.pi * r ** 3
        V = vc + vs
        # cylinder part plus two hemispheres; hemisphere centroid 3r/8 from its flat face
        icyl_xx = vc * (3 * r * r + h * h) / 12.0
        ihemi_own = (83.0 / 320.0) * (vs / 2) * r * r  # about the hemisphere's own centroid (transverse)
        dist = h / 2 + 3 * r / 8
        ixx = icyl_xx + 2 * (ihemi_own + (vs / 2) * dist * dist)
        izz = 0.5 * vc * r * r + 0.4 * vs * r * r
        I = np.diag([ixx, ixx, izz])
    else:  # pragma: no cover - guarded by the caller
        raise ValueError(kind)
    return V, I


# The unit box's corners and triangles, the same as the tessellation used before (trimesh's box),
# so collision results do not change: corner k has x = bit 2, y = bit 1, z = bit 0 of k.
_BOX_V = np.array([[(k >> 2) & 1, (k >> 1) & 1, k & 1] for k in range(8)], dtype=np.float64) - 0.5
_BOX_F = np.array([[1, 3, 0], [4, 1, 0], [0, 3, 2], [2, 4, 0], [1, 7, 3], [5, 1, 4], [5, 7, 1], [3, 7, 2],
                   [6, 4, 2], [2, 7, 6], [6, 5, 4], [7, 5, 6]], dtype=np.int64)


@lru_cache(maxsize=64)
def _tessellate(kind: str, size: tuple):
    if kind == "box":
        return _ro(_BOX_V * np.asarray(size, dtype=np.float64)), _ro(_BOX_F.copy())
    import trimesh  # ~0.5 s to import: only when a round primitive is drawn or measured vertex by vertex

    if kind == "sphere":
        m = trimesh.creation.icosphere(subdivisions=3, radius=size[0])
    elif kind == "cylinder":
        m = trimesh.creation.cylinder(radius=size[0], height=size[1], sections=32)
    elif kind == "capsule":
        # count=[16, 8]: trimesh's default capsule has sliver triangles that upset FCL distances
        m = trimesh.creation.capsule(height=size[1], radius=size[0], count=[16, 8])
    else:  # pragma: no cover
        raise ValueError(kind)
    return _ro(np.asarray(m.vertices, dtype=float)), _ro(np.asarray(m.faces, dtype=np.int64))


def inertia_fits(shapes, mass: float, com, inertia) -> tuple[bool, float, float]:
    """(fits, largest principal moment kg m^2, reach m): can mass inside ``shapes`` (owner frame)
    have this inertia about ``com``?  Every mass element lies within the shapes' reach R of the com,
    so within R of each axis through it: no principal moment exceeds m R^2."""
    R = max(sh.reach(com) for sh in shapes)
    top = float(np.linalg.eigvalsh(np.asarray(inertia, dtype=float)).max())
    return top <= mass * R * R * (1 + 1e-9), top, R


def make_primitive(kind: str, size, X_LS: np.ndarray | None = None) -> Shape:
    """Build a primitive :class:`Shape` (sizes in metres)."""
    size = tuple(float(s) for s in size)
    V, I = _primitive_mass_properties(kind, size)
    return Shape(kind=kind, size=size, X_LS=_ro(np.eye(4) if X_LS is None else np.asarray(X_LS, float)),
                 volume=V, center_S=_ro(np.zeros(3)), unit_inertia_S=_ro(I))


# -- meshes -------------------------------------------------------------------------------------

#: vertices closer than this (m, per coordinate after rounding) are one vertex, as in trimesh's merge
MERGE_DIGITS = 8
#: largest coordinate (file units) a mesh file may hold before scaling
MAX_RAW_COORDINATE = 1e10


def merge_vertices(V: np.ndarray, F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge vertices equal after rounding to ``MERGE_DIGITS`` decimals and drop unreferenced ones.

    The first occurrence of each vertex is kept, in the order of first occurrence, so the result is
    the one trimesh's processing gives (the meshes and contacts stay what they were).
    """
    ref = np.zeros(len(V), dtype=bool)
    ref[F] = True
    idx = np.flatnonzero(ref)
    rows = np.ascontiguousarray(np.round(V[idx] * (10 ** MERGE_DIGITS)).astype(np.int64))
    _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    order = first.argsort()
    new_of_unique = order.argsort()
    remap = np.zeros(len(V), dtype=np.int64)
    remap[idx] = new_of_unique[inverse.reshape(-1)]
    return V[idx[first[order]]], remap[F]


def closed_and_consistent(F: np.ndarray) -> tuple[bool, bool]:
    """(every edge shared by exactly two triangles, every shared edge used in opposite directions)."""
    E = F[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2)
    Es = np.sort(E, axis=1)
    _, inverse, counts = np.unique(Es, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    closed = bool((counts == 2).all())
    if not closed:
        return False, False
    # the two uses of each edge: opposite directions means E[a] == E[b][::-1], i.e. a's start is b's end
    order = np.argsort(inverse, kind="stable")
    a, b = E[order[0::2]], E[order[1::2]]
    return True, bool((a[:, 1] == b[:, 0]).all())


def mass_properties(triangles: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Volume, centre of volume and inertia about it at unit density of a closed, outward-wound mesh.

    ``triangles`` (n, 3, 3).  The divergence theorem over each triangle (Eberly, "Polyhedral Mass
    Properties (Revisited)", 2002): integrals of 1, x, y, z, x^2, y^2, z^2, xy, yz, zx.
    """
    p0, p1, p2 = triangles[:, 0, :], triangles[:, 1, :], triangles[:, 2, :]
    d = np.cross(p1 - p0, p2 - p1)                 # twice the area times the outward normal
    f1 = p0 + p1 + p2
    f2 = p0 ** 2 + p1 ** 2 + p0 * p1 + p2 * f1
    f3 = p0 ** 3 + p0 ** 2 * p1 + p0 * p1 ** 2 + p1 ** 3 + p2 * f2
    g0 = f2 + (p0 + f1) * p0
    g1 = f2 + (p1 + f1) * p1
    g2 = f2 + (p2 + f1) * p2
    # one row per integral, summed along the triangles (numpy's pairwise sum over a contiguous row)
    rows = np.empty((10, len(d)))
    rows[0] = d[:, 0] * f1[:, 0]
    rows[1:4] = (d * f2).T
    rows[4:7] = (d * f3).T
    for i in range(3):                              # products xy, yz, zx
        j = (i + 1) % 3
        rows[7 + i] = d[:, i] * (p0[:, j] * g0[:, i] + p1[:, j] * g1[:, i] + p2[:, j] * g2[:, i])
    ints = rows.sum(axis=1) / np.array([6.0, 24, 24, 24, 60, 60, 60, 120, 120, 120])
    V = ints[0]
    c = ints[1:4] / V if V != 0 else np.full(3, np.nan)
    xx, yy, zz = ints[4:7]
    I = np.empty((3, 3))
    I[0, 0] = yy + zz - V * (c[[1, 2]] ** 2).sum()
    I[1, 1] = xx + zz - V * (c[[0, 2]] ** 2).sum()
    I[2, 2] = xx + yy - V * (c[[0, 1]] ** 2).sum()
    I[0, 1] = I[1, 0] = -(ints[7] - V * (c[0] * c[1]))
    I[1, 2] = I[2, 1] = -(ints[8] - V * (c[1] * c[2]))
    I[0, 2] = I[2, 0] = -(ints[9] - V * (c[0] * c[2]))
    return float(V), c, I


def _read_raw(path: str) -> tuple[np.ndarray, np.ndarray]:
    from .meshfile import READERS, read_mesh

    if Path(path).suffix.lower() in READERS:
        return read_mesh(path)
    return _read_with_trimesh(path)


def _read_with_trimesh(path: str) -> tuple[np.ndarray, np.ndarray]:
    """glTF binary/text: trimesh reads them (from bytes we read, so no other file is opened)."""
    import io

    import trimesh

    from .meshfile import MAX_MESH_BYTES
    from .model.yamlio import read_regular_file

    data = read_regular_file(path, MAX_MESH_BYTES, "mesh file")
    try:
        m = trimesh.load(io.BytesIO(data), file_type=Path(path).suffix.lower()[1:], force="mesh", process=False)
    except Exception as e:  # noqa: BLE001 - trimesh raises many kinds; report them as one model error
        raise ModelError(f"cannot read mesh: {type(e).__name__}", file=path) from None
    if not isinstance(m, trimesh.Trimesh) or len(m.faces) == 0:
        raise ModelError("mesh has no triangles", file=path)
    return np.asarray(m.vertices, dtype=float), np.asarray(m.faces, dtype=np.int64)


@lru_cache(maxsize=128)
def _load_mesh_file(path: str, stamp: tuple, scale: tuple):
    from .model.bounds import POSITION

    V, F = _read_raw(path)
    if np.abs(V).max() > MAX_RAW_COORDINATE:
        raise ModelError(f"mesh coordinates beyond +-{MAX_RAW_COORDINATE:g} (file units)", file=path)
    V, F = merge_vertices(V, F)             # as the file is read ...
    V = V * np.asarray(scale, dtype=float)
    lim = POSITION[1]
    if np.abs(V).max() > lim:
        raise ModelError(f"scaled mesh coordinates reach {np.abs(V).max():g} m, beyond the +-{lim:g} m "
                         "allowed for positions", file=path)
    V, F = merge_vertices(V, F)             # ... and again after scaling
    closed, consistent = closed_and_consistent(F)
    watertight = False
    vol, c, I = 0.0, np.zeros(3), np.zeros((3, 3))
    if closed and consistent:
        v, cc, II = mass_properties(V[F])
        if v > 0 and np.isfinite(cc).all():
            watertight, vol, c, I = True, v, cc, II
    return _ro(V), _ro(F), vol, _ro(c), _ro(I), watertight


def load_mesh_shape(path: str | Path, *, scale=1.0, X_LS: np.ndarray | None = None) -> Shape:
    """Load a triangle mesh file (STL, OBJ, PLY, OFF; glTF through trimesh) into a :class:`Shape`.

    ``scale`` (scalar or (3,)) converts file units to metres.  Mass properties are available only
    when the mesh is watertight and consistently oriented (``watertight``); a mesh that is open or
    inverted would silently give a wrong volume, so callers that need its inertia must check.
    Raises :class:`ModelError` for a missing, unreadable, oversized or malformed file (see
    :mod:`graspsim.meshfile`).
    """
    path = Path(path)
    p = str(path)
    if path.suffix.lower() not in MESH_SUFFIXES:
        raise ModelError(f"unsupported mesh format '{path.suffix[:16]}'; use one of {', '.join(MESH_SUFFIXES)}",
                         file=p)
    try:
        st = os.stat(p)
        resolved = str(path.resolve())
    except FileNotFoundError:
        raise ModelError("mesh file not found", file=p) from None
    except (OSError, ValueError, RuntimeError) as e:
        reason = e.strerror.lower() if isinstance(e, OSError) and e.strerror else type(e).__name__
        raise ModelError(f"cannot read mesh file: {reason}", file=p) from None
    s = np.broadcast_to(np.asarray(scale, dtype=float), (3,))
    verts, faces, V, c, I, wt = _load_mesh_file(resolved, (st.st_mtime_ns, st.st_size, st.st_ino), tuple(s))
    return Shape(kind="mesh", size=(), X_LS=_ro(np.eye(4) if X_LS is None else np.asarray(X_LS, float)),
                 source=p, volume=V, center_S=c, unit_inertia_S=I, watertight=wt, mesh=(verts, faces))

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
    vertices: np.ndarray
    faces: np.ndarray
    source: str | None = None
    #: volume (m^3), centre of volume in S (m), and inertia about that centre at unit density (S axes)
    volume: float = field(default=0.0)
    center_S: np.ndarray = field(default=None)
    unit_inertia_S: np.ndarray = field(default=None)
    watertight: bool = True

    def vertices_in(self, X_WL: np.ndarray) -> np.ndarray:
        """Mesh vertices (n, 3) in the world frame, given the owner's pose ``X_WL``."""
        X = X_WL @ self.X_LS
        return self.vertices @ X[:3, :3].T + X[:3, 3]

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


@lru_cache(maxsize=64)
def _tessellate(kind: str, size: tuple):
    import trimesh

    if kind == "box":
        m = trimesh.creation.box(extents=size)
    elif kind == "sphere":
        m = trimesh.creation.icosphere(subdivisions=3, radius=size[0])
    elif kind == "cylinder":
        m = trimesh.creation.cylinder(radius=size[0], height=size[1], sections=32)
    elif kind == "capsule":
        # count=[16, 8]: trimesh's default capsule has sliver triangles that upset FCL distances
        m = trimesh.creation.capsule(height=size[1], radius=size[0], count=[16, 8])
    else:  # pragma: no cover
        raise ValueError(kind)
    return _ro(np.asarray(m.vertices, dtype=float)), _ro(np.asarray(m.faces, dtype=np.int64))


def make_primitive(kind: str, size, X_LS: np.ndarray | None = None) -> Shape:
    """Build a primitive :class:`Shape` (sizes in metres)."""
    size = tuple(float(s) for s in size)
    V, I = _primitive_mass_properties(kind, size)
    verts, faces = _tessellate(kind, size)
    return Shape(kind=kind, size=size, X_LS=_ro(np.eye(4) if X_LS is None else np.asarray(X_LS, float)),
                 vertices=verts, faces=faces, volume=V, center_S=_ro(np.zeros(3)), unit_inertia_S=_ro(I))


# -- meshes -------------------------------------------------------------------------------------

@lru_cache(maxsize=128)
def _load_mesh_file(path: str, mtime: float, scale: tuple):
    import trimesh

    try:
        m = trimesh.load(path, force="mesh", process=True)
    except Exception as e:  # trimesh raises many kinds; report them as one model error
        raise ModelError(f"cannot read mesh: {type(e).__name__}: {e}", file=path) from None
    if not isinstance(m, trimesh.Trimesh) or len(m.faces) == 0:
        raise ModelError("mesh has no triangles", file=path)
    verts = np.asarray(m.vertices, dtype=float) * np.asarray(scale, dtype=float)
    faces = np.asarray(m.faces, dtype=np.int64)
    m = trimesh.Trimesh(verts, faces, process=True)
    watertight = bool(m.is_watertight and m.is_volume)
    if watertight:
        V = float(m.volume)
        c = np.asarray(m.center_mass, dtype=float)
        I = np.asarray(m.moment_inertia, dtype=float)  # unit density, about the centre of mass
    else:
        V, c, I = 0.0, np.zeros(3), np.zeros((3, 3))
    return _ro(np.asarray(m.vertices, float)), _ro(np.asarray(m.faces, np.int64)), V, _ro(c), _ro(I), watertight


def load_mesh_shape(path: str | Path, *, scale=1.0, X_LS: np.ndarray | None = None) -> Shape:
    """Load a triangle mesh file (STL, OBJ, PLY, OFF, glTF) into a :class:`Shape`.

    ``scale`` (scalar or (3,)) converts file units to metres.  Mass properties are available only
    when the mesh is watertight and consistently oriented (``watertight``); a mesh that is open or
    inverted would silently give a wrong volume, so callers that need its inertia must check.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelError("mesh file not found", file=str(path))
    if path.suffix.lower() not in MESH_SUFFIXES:
        raise ModelError(f"unsupported mesh format '{path.suffix}'; use one of {', '.join(MESH_SUFFIXES)}",
                         file=str(path))
    s = np.broadcast_to(np.asarray(scale, dtype=float), (3,))
    verts, faces, V, c, I, wt = _load_mesh_file(str(path.resolve()), path.stat().st_mtime, tuple(s))
    return Shape(kind="mesh", size=(), X_LS=_ro(np.eye(4) if X_LS is None else np.asarray(X_LS, float)),
                 vertices=verts, faces=faces, source=str(path), volume=V, center_S=c, unit_inertia_S=I,
                 watertight=wt)

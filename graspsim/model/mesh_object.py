"""Objects straight from a mesh file (STL, OBJ, PLY, OFF, glTF) or a one-link URDF.

A bare mesh becomes an :class:`~graspsim.model.description.Object` whose body frame is the mesh
file's frame (metres after ``scale``).  Mass: ``mass`` (kg) or ``density`` (kg/m^3); with neither,
:data:`DEFAULT_DENSITY` (500 kg/m^3, about wood or a hollow plastic part), and the object's
``mass_note`` says so (``graspsim info`` prints it).

Closed meshes keep their exact, possibly non-convex, triangles for contact: the contact kernel
works on any closed polyhedron (the shipped mug is non-convex), so no convex decomposition is made.
A mesh that is not watertight (open, non-manifold or inconsistently oriented) has no volume to
integrate: its **convex hull** gives the mass properties, with one :class:`MeshWarning` naming the
file, while contact keeps the mesh's own triangles.  Measured on five such ``random_urdfs``
objects (non-manifold shells, hull 1.7-16 times their signed volume), the parallel jaw closes to
the same opening on the triangles as on the hull, without interpenetration, but the hull's flat
faces change the contacts and epsilon (up to 5 times: 0.061 on the triangles, 0.313 on the hull
for ``037``), so the hull is not used for contact.  See docs/objects.md.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from ..errors import ModelError, ModelWarning
from ..geometry import MESH_SUFFIXES, Shape, load_mesh_shape
from .description import Inertial, Object

__all__ = ["DEFAULT_DENSITY", "DEFAULT_MATERIAL", "MeshWarning", "is_object_file", "mesh_object",
           "load_object_file", "inertial_for", "mass_shape"]

DEFAULT_DENSITY = 500.0        # kg/m^3, when neither mass nor density is given
DEFAULT_MATERIAL = "plastic"
DEFAULT_COLOR = (0.7, 0.7, 0.72)


class MeshWarning(UserWarning):
    """A mesh was usable only after a documented substitution (e.g. its convex hull)."""


def is_object_file(path: str | Path) -> bool:
    """True if ``path`` names a mesh or a URDF (loaded by this module, not as YAML)."""
    s = Path(path).suffix.lower()
    return s in MESH_SUFFIXES or s == ".urdf"


def _ro(a) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


def hull_shape(shape: Shape) -> Shape:
    """The convex hull of a mesh shape, same frame and source, watertight by construction."""
    import trimesh

    from scipy.spatial import QhullError

    flat = ModelError("mesh is flat (fewer than 4 points off one plane): its convex hull has no volume",
                      file=shape.source)
    with np.errstate(divide="ignore", invalid="ignore"):    # (trimesh divides by a flat mesh's zero volume)
        try:
            h = trimesh.Trimesh(np.asarray(shape.vertices), np.asarray(shape.faces), process=True).convex_hull
        except QhullError:        # qhull refuses fewer than 4 points or points in one plane
            raise flat from None
        if not h.volume > 0:
            raise flat
    faces = np.asarray(h.faces, dtype=np.int64)
    faces.setflags(write=False)
    return Shape(kind="mesh", size=(), X_LS=shape.X_LS, mesh=(_ro(h.vertices), faces),
                 source=shape.source, volume=float(h.volume), center_S=_ro(h.center_mass),
                 unit_inertia_S=_ro(h.moment_inertia), watertight=True)


def mass_shape(shape: Shape, *, stacklevel: int = 3) -> Shape:
    """The shape whose volume gives the mass properties: ``shape`` itself if it is closed, else its
    convex hull, with a one-line :class:`MeshWarning` naming the file."""
    if shape.kind != "mesh" or shape.watertight:
        return shape
    hull = hull_shape(shape)      # (first: a flat mesh is refused without a warning about its hull)
    warnings.warn(f"{shape.source}: mesh is not watertight; its convex hull gives the mass, centre of mass "
                  "and inertia (contact uses its triangles)", MeshWarning, stacklevel=stacklevel)
    return hull


def inertial_for(shape: Shape, *, mass: float | None, density: float | None) -> tuple[Inertial, str]:
    """Uniform-density mass properties of a closed shape in its owner's frame (kg, m, kg m^2).

    Returns ``(inertial, note)``; ``note`` is non-empty when the default density was used.
    """
    note = ""
    if mass is None and density is None:
        density = DEFAULT_DENSITY
        note = f"mass from the default density {DEFAULT_DENSITY:g} kg/m^3 (give 'mass' or 'density')"
    m, c, I = shape.mass_properties(mass=mass, density=density)
    return Inertial(float(m), _ro(c), _ro(I)), note


#: a graspable object from a bare mesh wider than this (m) is named in a warning: CAD meshes are often
#: in millimetres, and a bare mesh is read in metres (a 50 mm part becomes a 50 m one)
WARN_EXTENT = 2.0


def _plausible_size(path: Path, shape: Shape, inertial, note: str, graspable: bool) -> None:
    """A bare mesh read in metres whose default-density mass is outside the model range is a
    ModelError, a graspable one over :data:`WARN_EXTENT` wide a warning; both say how to give a
    millimetre mesh (a shape with ``scale: 0.001``)."""
    from . import bounds as B

    ext = float(np.ptp(shape.vertices, axis=0).max()) if len(shape.vertices) else 0.0
    hint = (f"a bare mesh is read in metres: if the file is in millimetres, give it as a shape with a scale "
            f"(shape: {{mesh: {path.name}, scale: 0.001}}) and a mass")
    if inertial is not None and note and not B.MASS[0] <= inertial.mass <= B.MASS[1]:
        raise ModelError(f"{ext:.3g} m across, the default density gives {inertial.mass:.3g} kg, outside "
                         f"{B.describe(B.MASS)}; {hint}", file=str(path))
    if graspable and ext > WARN_EXTENT:
        warnings.warn(ModelWarning(f"{path}: a graspable object {ext:.3g} m across; {hint}"), stacklevel=4)


def _check_mass(mass, density, file: str) -> None:
    if mass is not None and density is not None:
        raise ModelError("give either 'mass' or 'density', not both", file=file, field="density")
    for k, v in (("mass", mass), ("density", density)):
        if v is not None and not (np.isfinite(v) and v > 0):
            raise ModelError(f"must be a positive number, got {v!r}", file=file, field=k)


def mesh_object(path: str | Path, *, name: str | None = None, mass: float | None = None,
                density: float | None = None, material: str | None = None, color: tuple | None = None,
                scale=1.0, need_mass: bool = True) -> Object:
    """An object from a bare mesh file: body frame = mesh frame, lengths in metres after ``scale``."""
    path = Path(path)
    _check_mass(mass, density, str(path))
    shape = load_mesh_shape(path, scale=scale)
    inertial, note = inertial_for(mass_shape(shape), mass=mass, density=density) \
        if need_mass or mass or density else (None, "")
    _plausible_size(path, shape, inertial, note, need_mass)
    return Object(name or path.stem, str(path), shape, inertial, material or DEFAULT_MATERIAL,
                  color or DEFAULT_COLOR, mass_note=note)


def load_object_file(path: str | Path, *, name: str | None = None, mass: float | None = None,
                     density: float | None = None, material: str | None = None,
                     need_mass: bool = True) -> Object:
    """A mesh file or a one-link URDF as an object; ``mass``/``density`` override the file's."""
    path = Path(path)
    if not path.is_file():
        raise ModelError("file not found", file=str(path))
    if path.suffix.lower() == ".urdf":
        from .urdf_object import urdf_object

        return urdf_object(path, name=name, mass=mass, density=density, material=material, need_mass=need_mass)
    return mesh_object(path, name=name, mass=mass, density=density, material=material, need_mass=need_mass)

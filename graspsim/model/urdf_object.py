"""A graspable object from a URDF with one link (e.g. pybullet_data's ``random_urdfs``).

Read from the link: its ``<collision>`` geometry (``mesh`` with ``scale``, ``box``, ``sphere`` or
``cylinder``; mesh names ``package://PKG/...``, ``file://...``, absolute or relative, found as for a
robot URDF by :mod:`.package_path`: the URDF's folder and its parents, ``GRASPSIM_PACKAGE_PATH``,
``ROS_PACKAGE_PATH``) placed by the collision ``<origin>`` in the link frame (= the object's body frame),
its ``<inertial>`` (mass; centre of mass and inertia from ``<origin>`` and ``<inertia>``), and the
visual material's colour.  Mass: ``mass``/``density`` given by the caller win; else the URDF's
``<mass>``; else the default density (see :mod:`.mesh_object`).  A URDF inertia that is not a
physical one (not positive definite, or breaking the triangle inequality: ``random_urdfs`` give
``ixx = iyy = 1, izz = 0`` for a 0.1 kg, 9 cm object; or larger than any mass inside the shape can
give: a principal moment above m R^2, R the shape's reach from the com, as cube_small.urdf's 1 kg
m^2 for 0.1 kg and 5 cm) is replaced by the uniform-density inertia of the shape at the URDF's mass; the object's ``mass_note`` says so (``graspsim info`` prints it: a
warning per object would flood an object set).
Problems are :class:`graspsim.ModelError` ``FILE:LINE: FIELD: PROBLEM``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

import numpy as np

from .. import spatial
from ..errors import ModelError
from ..geometry import inertia_fits, load_mesh_shape, make_primitive
from .description import Inertial, Object
from .mesh_object import DEFAULT_COLOR, DEFAULT_DENSITY, DEFAULT_MATERIAL, _check_mass, _ro, inertial_for, mass_shape
from .package_path import not_found, resolve

__all__ = ["urdf_object"]


@dataclass
class _El:
    tag: str
    attrs: dict
    line: int
    children: list = field(default_factory=list)

    def all(self, tag: str) -> list:
        return [c for c in self.children if c.tag == tag]

    def one(self, tag: str):
        c = self.all(tag)
        return c[0] if c else None


def _parse(path: Path) -> _El:
    """XML to a small element tree that remembers line numbers (ElementTree does not)."""
    p = expat.ParserCreate()
    stack: list[_El] = []
    root: list[_El] = []

    def start(tag, attrs):
        e = _El(tag, dict(attrs), p.CurrentLineNumber)
        (stack[-1].children if stack else root).append(e)
        stack.append(e)

    p.StartElementHandler = start
    p.EndElementHandler = lambda tag: stack.pop()
    try:
        p.Parse(path.read_bytes(), True)
    except expat.ExpatError as e:
        raise ModelError(f"not valid XML: {expat.ErrorString(e.code)}", file=str(path), line=e.lineno) from None
    return root[0]


class _Ctx:
    def __init__(self, path: Path):
        self.file = str(path)

    def err(self, e: _El, fld: str, problem: str) -> ModelError:
        return ModelError(problem, file=self.file, line=e.line, field=fld)

    def floats(self, e: _El, attr: str, fld: str, n: int, default=None) -> np.ndarray:
        if attr not in e.attrs:
            if default is None:
                raise self.err(e, f"{fld}@{attr}", "missing attribute")
            return np.asarray(default, dtype=float)
        try:
            v = np.array([float(x) for x in e.attrs[attr].split()], dtype=float)
        except ValueError:
            v = np.zeros(0)
        if len(v) != n or not np.all(np.isfinite(v)):
            raise self.err(e, f"{fld}@{attr}", f"expected {n} number{'s' if n > 1 else ''}, got '{e.attrs[attr]}'")
        return v

    def origin(self, parent: _El, fld: str) -> np.ndarray:
        o = parent.one("origin")
        if o is None:
            return np.eye(4)
        xyz = self.floats(o, "xyz", f"{fld}.origin", 3, (0, 0, 0))
        rpy = self.floats(o, "rpy", f"{fld}.origin", 3, (0, 0, 0))
        X = np.eye(4)
        X[:3, :3] = spatial.rpy_to_matrix(rpy)
        X[:3, 3] = xyz
        return X


def _shapes_inertial(shapes: tuple, *, mass: float | None, density: float | None) -> tuple[Inertial, str]:
    """Uniform-density mass properties (kg, m, kg m^2; object frame) of the object's shapes taken as
    disjoint (an open mesh counts with its convex hull, with a warning naming the file)."""
    solids = tuple(mass_shape(s, stacklevel=4) for s in shapes)
    if len(solids) == 1:
        return inertial_for(solids[0], mass=mass, density=density)
    from .urdf_robot import _shapes_mass_properties

    m1, com, I1 = _shapes_mass_properties(solids, 1.0)     # at unit density
    note = ""
    if mass is None and density is None:
        density = DEFAULT_DENSITY
        note = f"mass from the default density {DEFAULT_DENSITY:g} kg/m^3 (give 'mass' or 'density')"
    k = mass / m1 if mass is not None else density
    return Inertial(float(m1 * k), _ro(com), _ro(I1 * k)), note


def _shape(c: _Ctx, col: _El, fld: str):
    X = c.origin(col, fld)
    g = col.one("geometry")
    if g is None or not g.children:
        raise c.err(col, f"{fld}.geometry", "missing <geometry> with a mesh, box, sphere or cylinder")
    k = g.children[0]
    gf = f"{fld}.geometry.{k.tag}"
    if k.tag == "mesh":
        fn = k.attrs.get("filename")
        if not fn:
            raise c.err(k, f"{gf}@filename", "missing attribute")
        mesh, tried = resolve(fn, c.file)      # package://, file://, relative: as for robot URDFs
        if mesh is None:
            raise c.err(k, f"{gf}@filename", not_found(fn, tried))
        scale = c.floats(k, "scale", gf, 3, (1, 1, 1))
        if np.any(scale <= 0):
            raise c.err(k, f"{gf}@scale", f"scale must be > 0, got '{k.attrs['scale']}'")
        try:
            return load_mesh_shape(mesh, scale=scale, X_LS=X)
        except ModelError as e:
            raise c.err(k, f"{gf}@filename", e.problem + (f" ({e.file})" if e.file else "")) from None
    if k.tag == "box":
        size = c.floats(k, "size", gf, 3)
        if np.any(size <= 0):
            raise c.err(k, f"{gf}@size", "box sizes must be > 0")
        return make_primitive("box", size, X)
    if k.tag in ("sphere", "cylinder"):
        rad = c.floats(k, "radius", gf, 1)[0]
        if k.tag == "sphere":
            size = (rad,)
        else:
            size = (rad, c.floats(k, "length", gf, 1)[0])
        if min(size) <= 0:
            raise c.err(k, gf, "radius and length must be > 0")
        return make_primitive(k.tag, size, X)
    raise c.err(k, gf, "unsupported geometry; use mesh, box, sphere or cylinder")


def _urdf_inertial(c: _Ctx, link: _El, fld: str):
    """(mass, com, inertia about com in link axes or None if not physical, the <inertial> element)."""
    ie = link.one("inertial")
    if ie is None:
        return None, None, None, None
    f = f"{fld}.inertial"
    me = ie.one("mass")
    if me is None:
        raise c.err(ie, f"{f}.mass", "missing <mass>")
    mass = c.floats(me, "value", f"{f}.mass", 1)[0]
    if mass <= 0:
        raise c.err(me, f"{f}.mass@value", f"mass must be > 0, got {mass:g}")
    X = c.origin(ie, f)
    I = None
    ine = ie.one("inertia")
    if ine is not None:
        v = {k: c.floats(ine, k, f"{f}.inertia", 1, (0,))[0] for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")}
        Ii = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]], [v["ixz"], v["iyz"], v["izz"]]])
        ev = np.linalg.eigvalsh(Ii)
        if ev[0] > 0 and ev[0] + ev[1] >= ev[2] * (1 - 1e-9):
            R = X[:3, :3]
            I = R @ Ii @ R.T
    return float(mass), X[:3, 3].copy(), I, ie


def urdf_object(path: str | Path, *, name: str | None = None, mass: float | None = None,
                density: float | None = None, material: str | None = None, need_mass: bool = True) -> Object:
    """An object from a URDF with exactly one link (body frame = the link frame; SI units)."""
    path = Path(path)
    c = _Ctx(path)
    _check_mass(mass, density, str(path))
    root = _parse(path)
    if root.tag != "robot":
        raise c.err(root, root.tag, "a URDF's top element must be <robot>")
    links = root.all("link")
    if len(links) != 1:
        raise c.err(root, "robot.link", f"an object URDF needs exactly one <link>, found {len(links)} "
                    "(a URDF with joints is a robot)")
    link = links[0]
    fld = f"link[{link.attrs.get('name', '')}]"
    cols = link.all("collision")
    if not cols:
        raise c.err(link, f"{fld}.collision", "missing <collision>: the object needs a collision shape")
    # every <collision> element is one of the object's shapes (mass properties: disjoint union)
    shapes = tuple(_shape(c, col, f"{fld}.collision" if len(cols) == 1 else f"{fld}.collision[{i}]")
                   for i, col in enumerate(cols))
    u_mass, u_com, u_I, _ = _urdf_inertial(c, link, fld)
    note = ""
    inertial = None
    if mass is not None or density is not None or u_mass is None:
        if need_mass or mass is not None or density is not None:
            inertial, note = _shapes_inertial(shapes, mass=mass, density=density)
    elif u_I is not None and (fit := inertia_fits(shapes, u_mass, u_com, u_I))[0]:
        inertial = Inertial(u_mass, _ro(u_com), _ro(u_I))
    else:  # URDF mass, shape's distribution (its com: a com without an inertia is not worth keeping)
        inertial, _ = _shapes_inertial(shapes, mass=u_mass, density=None)
        why = "is not physical"
        if u_I is not None:
            why = (f"has a principal moment of {fit[1]:.3g} kg m^2: {u_mass:.3g} kg would have to lie "
                   f"{np.sqrt(fit[1] / u_mass):.3g} m from its centre of mass, and the shape reaches {fit[2]:.3g} m")
        note = f"inertia from the shape at the URDF's mass (the URDF's inertia {why})"
    rgba = None
    vis = link.one("visual")
    if vis is not None and vis.one("material") is not None and vis.one("material").one("color") is not None:
        ce = vis.one("material").one("color")
        try:
            rgba = tuple(float(x) for x in ce.attrs.get("rgba", "").split())[:3]
        except ValueError:
            rgba = None
    nm = name or root.attrs.get("name") or link.attrs.get("name") or path.stem
    if not name and nm.lower().endswith((".urdf", ".xml")):
        # a file name left in <robot name=...> (pybullet_data's cube_small, duck_vhacd and mug all say
        # "cube.urdf"): the file's own stem names the object, so two of them differ in a batch
        nm = path.stem
    return Object(nm, str(path), shapes, inertial, material or DEFAULT_MATERIAL,
                  rgba if rgba and len(rgba) == 3 else DEFAULT_COLOR, mass_note=note)

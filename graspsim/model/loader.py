"""Parse and validate robot, object and world YAML files into immutable descriptions.

Every problem is reported with the file, the line, the dotted field path and what is wrong; all
problems of one file are collected and raised together as :class:`graspsim.ModelError`.
Paths inside a model (meshes, robot and object files) resolve relative to the file naming them.
"""
from __future__ import annotations

import contextvars
import functools
import math
import os
import warnings
from pathlib import Path

import numpy as np

from .. import spatial
from ..errors import ModelError, ModelWarning, quote
from ..geometry import MESH_SUFFIXES, PRIMITIVES, Shape, load_mesh_shape, make_primitive
from . import bounds as B
from .description import (DOF, FIXED, PRISMATIC, REVOLUTE, BodyInstance, Inertial, Joint, Link, Object,
                          Robot, RobotInstance, World)
from .fields import Reader, degrees_hint, text_problem
from .materials import MaterialTable
from .readonly import ReadOnlyDict
from .urdf_side import is_urdf, load_side_file, load_urdf_robot
from .mesh_object import is_object_file, load_object_file
from .package_path import has_scheme, resolve_model_file
from .yamlio import YList, YMap, load_yaml

DEFAULT_COLOR = (0.7, 0.7, 0.72)


def _ro(a) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


#: distinct meshes read by the current top-level load and their triangles (see bounds.MAX_MODEL_TRIANGLES)
_MESHES: contextvars.ContextVar = contextvars.ContextVar("graspsim_mesh_budget", default=None)


def _one_load(fn):
    """Run ``fn`` as (part of) one top-level load: nested loads share its mesh budget."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _MESHES.get() is not None:
            return fn(*args, **kwargs)
        token = _MESHES.set({"seen": set(), "triangles": 0})
        try:
            return fn(*args, **kwargs)
        finally:
            _MESHES.reset(token)
    return wrapper


def _given(path) -> Path:
    """The file a loader is given: a path, or a name ``NAME://REST`` of a file inside an installed
    Python data package (``pybullet_data://duck_vhacd.urdf``), as in model files; a missing one is
    a ModelError saying where it was looked for."""
    if has_scheme(path):
        p, problem = resolve_model_file(path, Path.cwd() / "-")
        if p is None:
            raise ModelError(problem)
        return p
    return Path(path)


def _named_file(r: Reader, name: str, base: Path, line, field: str) -> Path | None:
    """A file named in a model file (a ``file:`` entry, a shape's ``mesh:``): relative to ``base``
    (the naming file's folder), or ``NAME://REST`` in an installed data package; None (the problem
    reported at ``field``) when such a package or file is missing."""
    if not has_scheme(name):
        return base / name
    p, problem = resolve_model_file(name, Path(r.file))
    if p is None:
        r.error(line, field, problem)
    return p


def _kind_of(path: Path, data) -> str:
    if isinstance(data, YMap):
        for k in ("robot", "object", "world"):
            if k in data:
                return k
    return ""


def _urdf_has_joints(path: Path) -> bool:
    """Whether a URDF describes a robot (any <joint>) rather than a one-link object; an unreadable
    file counts as a robot, whose loader gives the detailed error."""
    import re

    if not path.is_file():     # never open a FIFO or a device here
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(8 << 20)
    except OSError:
        return True
    return re.search(rb"<joint[\s>]", re.sub(rb"<!--.*?-->", b"", head, flags=re.S)) is not None


@_one_load
def load_any(path: str | Path):
    """Load a robot, object or world file, whichever it is (by its top-level key)."""
    path = _given(path)
    if is_object_file(path) and not (is_urdf(path) and _urdf_has_joints(path)):
        return load_object_file(path)    # a mesh or a one-link URDF (graspsim/model/mesh_object.py)
    if is_urdf(path):
        return load_urdf_robot(path)
    data = load_yaml(path)
    kind = _kind_of(path, data)
    if kind == "robot":
        return load_robot(path, _data=data)
    if kind == "object":
        return load_object(path, _data=data)
    if kind == "world":
        return load_world(path, _data=data)
    line = data.line if isinstance(data, (YMap, YList)) else 1
    raise ModelError("not a graspsim model: the top level needs a 'robot', 'object' or 'world' key "
                     "giving its name", file=str(path), line=line)


def _top(path: Path, data, kind: str) -> YMap:
    """The top-level mapping of a ``kind`` file; a file that is not one gets one error that quotes
    nothing of it (it may be any file, e.g. one a world's ``file:`` names by mistake)."""
    if isinstance(data, YMap) and kind in data:
        return data
    other = _kind_of(path, data)
    raise ModelError(f"not {'an' if kind == 'object' else 'a'} {kind} file: the top level needs a '{kind}' key "
                     f"giving its name" + (f" (this is {'an' if other == 'object' else 'a'} {other} file)"
                                           if other else ""),
                     file=str(path), line=data.line if isinstance(data, (YMap, YList)) else 1)


def _description(r: Reader, top: YMap) -> None:
    r.string(top, "description", "description", max_len=B.MAX_DESCRIPTION, allow="\n\t")


def _count(r: Reader, seq, field: str, line, limit: int, what: str) -> list:
    """``seq`` or, when it is longer than ``limit``, nothing (with an error naming the limit)."""
    if seq is not None and len(seq) > limit:
        r.error(line, field, f"more than {limit} {what} ({len(seq)})")
        return []
    return seq or []


# -- shapes and mass ------------------------------------------------------------------------

SHAPE_KEYS = list(PRIMITIVES) + ["mesh", "scale", "origin"]


def _read_shape(r: Reader, m: YMap, key: str, field: str, base: Path) -> Shape | None:
    if key not in m:
        return None
    f = f"{field}.{key}" if field else key
    return _shape_value(r, m[key], f, m.line_of(key), base, SHAPE_KEYS)


def _read_shapes(r: Reader, m: YMap, field: str, base: Path):
    """A link's/object's collision shapes: ``shape:`` (one) or ``shapes:`` (a list, each entry a
    shape with its own ``origin`` and optional ``material``).

    Returns (shapes, per-shape material or None, ok); ok is False when an entry was bad (its
    error is reported).
    """
    if "shape" in m and "shapes" in m:
        r.error(m.line_of("shapes"), f"{field}.shapes" if field else "shapes",
                "give either 'shape' or 'shapes', not both")
        return (), (), False
    if "shape" in m:
        s = _read_shape(r, m, "shape", field, base)
        return ((s,), (None,), True) if s is not None else ((), (), False)
    if "shapes" not in m:
        return (), (), True
    f = f"{field}.shapes" if field else "shapes"
    seq = r.sequence(m["shapes"], f, m.line_of("shapes"))
    if seq is None:
        return (), (), False
    if not len(seq):
        r.error(m.line_of("shapes"), f, "a list of at least one shape")
        return (), (), False
    shapes, mats, ok = [], [], True
    for i, v in enumerate(_count(r, seq, f, m.line_of("shapes"), B.MAX_SHAPES, "shapes")):
        fi = f"{f}[{i}]"
        sm = r.mapping(v, fi, seq.line_of(i))
        s = None if sm is None else _shape_value(r, sm, fi, seq.line_of(i), base, SHAPE_KEYS + ["material"])
        if s is None:
            ok = False
            continue
        shapes.append(s)
        mats.append(r.string(sm, "material", fi) if "material" in sm else None)
    return tuple(shapes), tuple(mats), ok and len(shapes) == len(seq)


def _shape_value(r: Reader, v, f: str, line, base: Path, keys: list) -> Shape | None:
    s = r.mapping(v, f, line)
    if s is None:
        return None
    r.check_keys(s, f, keys)
    kinds = [k for k in list(PRIMITIVES) + ["mesh"] if k in s]
    if len(kinds) != 1:
        r.error(s.line, f, "give exactly one of box, sphere, cylinder, capsule or mesh"
                + (f" (found {', '.join(kinds)})" if kinds else ""))
        return None
    kind = kinds[0]
    X = r.pose(s, "origin", f)
    line = s.line_of(kind)
    if kind == "mesh":
        if "scale" in s:
            sc = s["scale"]
            if isinstance(sc, YList):
                scale = r.vector(s, "scale", f, 3, bounds=B.SCALE)
            else:
                scale = r.number(s, "scale", f, positive=True, bounds=B.SCALE)
            if scale is None:
                return None
        else:
            scale = 1.0
        # the file's length unit applies to mesh coordinates too
        scale = np.asarray(scale, dtype=float) * r.length_scale
        name = r.string(s, "mesh", f, max_len=B.MAX_PATH)
        if name is None:
            return None
        p = _named_file(r, name, base, line, f"{f}.mesh")
        if p is None:
            return None
        budget = _MESHES.get() or {"seen": set(), "triangles": 0}
        if budget["triangles"] > B.MAX_MODEL_TRIANGLES:
            r.error(line, f"{f}.mesh", f"not read: the meshes of this model already hold more than "
                    f"{B.MAX_MODEL_TRIANGLES:,} triangles")
            return None
        try:
            shape = load_mesh_shape(p, scale=scale, X_LS=X)
        except ModelError as e:
            r.error(line, f"{f}.mesh", e.problem + (f" ({e.file})" if e.file else ""))
            return None
        if id(shape.faces) not in budget["seen"]:       # the same file and scale share arrays (cached)
            budget["seen"].add(id(shape.faces))
            budget["triangles"] += len(shape.faces)
            if budget["triangles"] > B.MAX_MODEL_TRIANGLES:
                r.error(line, f"{f}.mesh", f"the meshes of this model hold more than {B.MAX_MODEL_TRIANGLES:,} "
                        "triangles in all")
                return None
        ext = float(np.ptp(shape.vertices, axis=0).max())
        lo, hi = B.SIZE[0], B.SIZE[1]
        if not lo <= ext <= hi:
            r.error(line, f"{f}.mesh", f"the mesh's largest extent is {ext:g} m, outside {B.describe(B.SIZE)} "
                    "(check 'scale' and the file's units)")
            return None
        return shape
    if "scale" in s:
        r.error(s.line_of("scale"), f"{f}.scale", "'scale' applies to meshes only")
    v = s[kind]
    vf = f"{f}.{kind}"
    if kind == "box":
        size = r.vector_value(v, vf, line, 3, unit="length", bounds=B.SIZE)
        if size is None:
            return None
        return make_primitive("box", size, X)
    if kind == "sphere":
        if isinstance(v, YMap):
            r.check_keys(v, vf, ["radius"], ["radius"])
            rad = r.number(v, "radius", vf, unit="length", positive=True, bounds=B.SIZE)
        else:
            rad = r.scalar(v, vf, line, "length")
            if rad is not None and rad <= 0:
                r.error(line, vf, f"radius must be > 0, got {rad:g}")
                rad = None
            elif rad is not None and not r.in_bounds(rad, B.SIZE, vf, line):
                rad = None
        return None if rad is None else make_primitive("sphere", (rad,), X)
    # cylinder, capsule
    c = r.mapping(v, vf, line)
    if c is None:
        return None
    r.check_keys(c, vf, ["radius", "length"], ["radius", "length"])
    rad = r.number(c, "radius", vf, unit="length", positive=True, bounds=B.SIZE)
    ln = r.number(c, "length", vf, unit="length", positive=True, bounds=B.SIZE)
    if rad is None or ln is None:
        return None
    return make_primitive(kind, (rad, ln), X)


def _read_inertial(r: Reader, m: YMap, field: str, shape, *, required: bool) -> Inertial | None:
    """mass or density (one required), optional com and inertia [ixx, iyy, izz, ixy, ixz, iyz].

    ``shape``: the one shape missing values are derived from, None, or a tuple of several shapes
    (then mass, com and inertia must all be given: overlapping shapes have no one volume).
    """
    several = isinstance(shape, tuple)
    has_mass, has_density = "mass" in m, "density" in m
    if has_mass and has_density:
        r.error(m.line_of("density"), f"{field}.density" if field else "density",
                "give either 'mass' or 'density', not both")
        return None
    if not has_mass and not has_density:
        if required:
            r.error(m.line, f"{field}.mass" if field else "mass", "missing mass: give 'mass' (kg) or 'density' (kg/m^3)")
        return None
    fld = field
    mass = r.number(m, "mass", fld, positive=True, bounds=B.MASS) if has_mass else None
    density = r.number(m, "density", fld, positive=True, bounds=B.DENSITY) if has_density else None
    if mass is None and density is None:
        return None
    com = r.vector(m, "com", fld, 3, unit="length", bounds=B.POSITION)
    inertia = None
    if "inertia" in m:
        vals = r.vector(m, "inertia", fld, 6, bounds=B.INERTIA)
        if vals is not None:
            ixx, iyy, izz, ixy, ixz, iyz = vals
            inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
            ev = np.linalg.eigvalsh(inertia)
            if ev[0] <= 0 or ev[0] + ev[1] < ev[2] * (1 - 1e-9):
                r.error(m.line_of("inertia"), f"{fld}.inertia" if fld else "inertia",
                        "inertia must be positive definite and satisfy the triangle inequality "
                        f"(principal moments {', '.join(f'{e:.3g}' for e in ev)})")
                return None
    if com is not None and inertia is not None and mass is not None:
        return _checked_inertial(r, m, fld, mass, com, inertia)
    # derive what is missing from the shape with uniform density
    if several:
        miss = [k for k, x in (("mass", mass), ("com", com), ("inertia", inertia)) if x is None]
        r.error(m.line_of("shapes"), f"{fld}.shapes" if fld else "shapes",
                f"with several shapes give 'mass', 'com' and 'inertia' (missing {', '.join(repr(k) for k in miss)}): "
                "overlapping shapes have no single volume to derive them from")
        return None
    where = f"{fld}.shape" if fld else "shape"
    if shape is None and ("shape" in m or "shapes" in m):
        return None  # the shape's own error is already reported
    if shape is None:
        r.error(m.line, where, "no shape to compute the centre of mass and inertia from; give 'com' and 'inertia'")
        return None
    if shape.kind == "mesh" and not shape.watertight:
        r.error(m.line, where, f"mesh {shape.source} is not watertight (or not a consistently oriented volume), "
                "so its centre of mass and inertia cannot be computed; repair the mesh or give 'com' and 'inertia'")
        return None
    if shape.volume <= 0:
        r.error(m.line, where, "shape has no volume")
        return None
    mm, c, I = shape.mass_properties(mass=mass, density=density)
    if mass is None and not r.in_bounds(mm, B.MASS, f"{fld}.density" if fld else "density", m.line_of("density")):
        return None      # density x volume gives a mass outside the range
    if com is not None:  # shift the computed inertia to the given com (parallel axis)
        d = com - c
        I = I + mm * (np.dot(d, d) * np.eye(3) - np.outer(d, d))  # parallel-axis theorem
        c = com
    if inertia is not None:
        I = inertia
    return _checked_inertial(r, m, fld, mm, c, I)


def _checked_inertial(r: Reader, m: YMap, fld: str, mass: float, com, I) -> Inertial | None:
    """The inertial, if its principal moments give a radius of gyration sqrt(I_k / m) within
    :data:`bounds.GYRATION` (a body can be neither infinitely thin nor kilometres wide)."""
    ev = np.linalg.eigvalsh(np.asarray(I, dtype=float))
    rg = np.sqrt(np.maximum(ev, 0.0) / mass)
    lo, hi = B.GYRATION[0], B.GYRATION[1]
    if not (np.all(np.isfinite(rg)) and rg.min() >= lo and rg.max() <= hi):
        key = "inertia" if "inertia" in m else "mass" if "mass" in m else "density"
        r.error(m.line_of(key), f"{fld}.{key}" if fld else key,
                f"principal moments {', '.join(f'{e:.3g}' for e in ev)} kg m^2 for {mass:.3g} kg give radii "
                f"of gyration outside {B.describe(B.GYRATION)} (sqrt(I / m); check the inertia, mass and units)")
        return None
    return Inertial(float(mass), _ro(com), _ro(I))


def _read_color(r: Reader, m: YMap, field: str) -> tuple:
    if "color" not in m:
        return DEFAULT_COLOR
    v = m["color"]
    f = f"{field}.color" if field else "color"
    if isinstance(v, str) and v.startswith("#") and len(v) == 7:
        try:
            return tuple(int(v[i:i + 2], 16) / 255.0 for i in (1, 3, 5))
        except ValueError:
            pass
    elif isinstance(v, YList) and len(v) in (3, 4):
        c = r.vector_value(v, f, m.line_of("color"), len(v))
        if c is not None and np.all((c >= 0) & (c <= 1)):
            return tuple(float(x) for x in c[:3])
    r.error(m.line_of("color"), f, "expected [r, g, b] with values in 0..1 or '#rrggbb'")
    return DEFAULT_COLOR


def _read_material(r: Reader, m: YMap, field: str, default: str = "plastic") -> str:
    v = r.string(m, "material", field, default=default)
    return v if v is not None else default


def _angle_or_travel(kind: str | None) -> tuple:
    return B.ANGLE if kind == REVOLUTE else B.TRAVEL


# -- robots ---------------------------------------------------------------------------------

ROBOT_KEYS = ["robot", "units", "links", "joints", "dofs", "base", "palm", "approach", "eigengrasps",
              "no_collide", "description"]
LINK_KEYS = ["name", "shape", "shapes", "mass", "density", "com", "inertia", "material", "color"]
JOINT_KEYS = ["name", "type", "parent", "child", "origin", "dh", "axis", "limits", "friction"]
DOF_KEYS = ["name", "joints", "kind", "breakaway_torque", "kp", "kd", "effort", "velocity", "limits", "default"]


@_one_load
def load_robot(path: str | Path, *, _data=None) -> Robot:
    """Load and validate a robot file into a :class:`~graspsim.model.description.Robot`.

    A robot YAML file, a ``.urdf`` file, or a YAML side file naming a URDF (``urdf:`` key;
    :mod:`graspsim.model.urdf_side`).
    """
    path = _given(path)
    if is_urdf(path):
        return load_urdf_robot(path)
    data = load_yaml(path) if _data is None else _data
    if isinstance(data, YMap) and "urdf" in data:
        return load_side_file(path, data)
    r = Reader(str(path), max_text=B.MAX_NAME)
    base = path.parent
    top = _top(path, data, "robot")
    r.check_keys(top, "", ROBOT_KEYS, ["robot", "links"])
    r.read_units(top)
    name = r.string(top, "robot", "robot", required=True) or path.stem
    _description(r, top)

    # links
    links: list[Link] = []
    link_lines: dict[str, int] = {}
    big_links: list = []            # (name, line, extent m): over LINK_WARN_EXTENT in a metre file
    seq = r.sequence(top.get("links"), "links", top.line_of("links")) if "links" in top else None
    for i, lm in enumerate(_count(r, seq, "links", top.line_of("links"), B.MAX_LINKS, "links")):
        f = f"links[{i}]"
        lm = r.mapping(lm, f, seq.line_of(i))
        if lm is None:
            continue
        r.check_keys(lm, f, LINK_KEYS, ["name"])
        lname = r.string(lm, "name", f, required=True) or f"link{i}"
        if lname in link_lines:
            r.error(lm.line_of("name"), f"{f}.name", f"duplicate link name '{lname}' (first at line {link_lines[lname]})")
        link_lines[lname] = lm.line_of("name")
        shapes, smats, ok = _read_shapes(r, lm, f, base)
        if ok and shapes and r.length_scale == 1.0 and (ext := max(_extent(sh) for sh in shapes)) > LINK_WARN_EXTENT:
            big_links.append((lname, lm.line, ext))
        inertial = _read_inertial(r, lm, f, _mass_shape(shapes, ok), required=True)
        links.append(Link(lname, shapes, inertial or Inertial(1.0, _ro(np.zeros(3)), _ro(np.eye(3))),
                          _read_material(r, lm, f), _read_color(r, lm, f), shape_materials=smats))
    if big_links:       # one line for the robot (a file in millimetres makes every link huge)
        each = ", ".join(f"'{n}' {e:.3g} m (line {ln})" for n, ln, e in big_links)
        warnings.warn(ModelWarning(f"{r.file}: links over {LINK_WARN_EXTENT:g} m across: {each}; lengths are in "
                                   f"metres unless the file says units: {{length: mm}}"), stacklevel=3)
    if seq is not None and not links:
        r.error(top.line_of("links"), "links", "a robot needs at least one link")
    link_index = {l.name: i for i, l in enumerate(links)}

    # joints
    n_errors_before_joints = len(r.errors)
    raw_joints = []
    jseq = r.sequence(top["joints"], "joints", top.line_of("joints")) if "joints" in top else YList()
    jnames: dict[str, int] = {}
    for i, jm in enumerate(_count(r, jseq, "joints", top.line_of("joints"), B.MAX_LINKS, "joints")):
        f = f"joints[{i}]"
        jm = r.mapping(jm, f, jseq.line_of(i))
        if jm is None:
            continue
        r.check_keys(jm, f, JOINT_KEYS, ["name", "type", "parent", "child"])
        jname = r.string(jm, "name", f, required=True) or f"joint{i}"
        if jname in jnames:
            r.error(jm.line_of("name"), f"{f}.name", f"duplicate joint name '{jname}'")
        jnames[jname] = i
        kind = r.string(jm, "type", f, required=True, choices=[REVOLUTE, PRISMATIC, FIXED])
        ends = []
        for key in ("parent", "child"):
            ln = r.string(jm, key, f, required=True)
            if ln is not None and ln not in link_index:
                r.error(jm.line_of(key), f"{f}.{key}",
                        f"no link named '{ln}'{r.suggest(ln, link_index)}")
                ln = None
            ends.append(ln)
        if "origin" in jm and "dh" in jm:
            pass  # allowed: origin places the DH frame
        X_PJ = r.pose(jm, "origin", f)
        X_JC = np.eye(4)
        axis = r.vector(jm, "axis", f, 3, nonzero=True, default=(0.0, 0.0, 1.0), bounds=B.DIRECTION)
        if "dh" in jm:
            dm = r.mapping(jm["dh"], f"{f}.dh", jm.line_of("dh"))
            if dm is not None:
                r.check_keys(dm, f"{f}.dh", ["theta", "d", "a", "alpha"])
                th = r.number(dm, "theta", f"{f}.dh", unit="angle", default=0.0, bounds=B.ANGLE)
                d = r.number(dm, "d", f"{f}.dh", unit="length", default=0.0, bounds=B.POSITION)
                a = r.number(dm, "a", f"{f}.dh", unit="length", default=0.0, bounds=B.POSITION)
                al = r.number(dm, "alpha", f"{f}.dh", unit="angle", default=0.0, bounds=B.ANGLE)
                X_JC = spatial.dh_transform(th, d, a, al)
                if "axis" in jm:
                    r.error(jm.line_of("axis"), f"{f}.axis", "a DH joint moves along/about z; do not give 'axis'")
                axis = np.array([0.0, 0.0, 1.0])
        if axis is None:
            axis = np.array([0.0, 0.0, 1.0])
        axis = axis / np.linalg.norm(axis)
        unit = "angle" if kind == REVOLUTE else "length"
        limits = np.array([-np.inf, np.inf])
        if "limits" in jm:
            if kind == FIXED:
                r.error(jm.line_of("limits"), f"{f}.limits", "a fixed joint has no limits")
            else:
                lv = r.vector(jm, "limits", f, 2, unit=unit, bounds=_angle_or_travel(kind))
                if lv is not None:
                    if lv[0] > lv[1]:
                        sc = r.angle_scale if unit == "angle" else r.length_scale
                        r.error(jm.line_of("limits"), f"{f}.limits",
                                f"min > max ({lv[0] / sc:g} > {lv[1] / sc:g}): write [min, max]")
                    else:
                        limits = lv
                        if unit == "angle" and r.angle_scale == 1.0 and float(np.abs(lv).max()) > 2.0 * math.pi:
                            _turn_warning(r, jm.line_of("limits"), f"{f}.limits", lv)
        coul, visc = 0.0, 0.0
        if "friction" in jm:
            fm = r.mapping(jm["friction"], f"{f}.friction", jm.line_of("friction"))
            if fm is not None:
                r.check_keys(fm, f"{f}.friction", ["coulomb", "viscous"])
                coul = r.number(fm, "coulomb", f"{f}.friction", default=0.0, nonnegative=True,
                                bounds=B.JOINT_FRICTION)
                visc = r.number(fm, "viscous", f"{f}.friction", default=0.0, nonnegative=True,
                                bounds=B.JOINT_FRICTION)
        raw_joints.append(dict(name=jname, kind=kind or FIXED, parent=ends[0], child=ends[1], X_PJ=X_PJ,
                               X_JC=X_JC, axis=axis, limits=limits, coulomb=coul, viscous=visc,
                               line=jm.line, field=f))

    # tree structure: each link child of at most one joint, one root, no loops
    child_of: dict[str, int] = {}
    for k, j in enumerate(raw_joints):
        if j["child"] is None or j["parent"] is None:
            continue
        if j["child"] == j["parent"]:
            r.error(j["line"], j["field"], f"joint connects link '{j['child']}' to itself")
            continue
        if j["child"] in child_of:
            other = raw_joints[child_of[j["child"]]]["name"]
            r.error(j["line"], f"{j['field']}.child",
                    f"link '{j['child']}' is already the child of joint '{other}': a kinematic loop "
                    "(graspsim robots are trees)")
            continue
        child_of[j["child"]] = k
    order: list[int] = []
    base_name = None
    if links and len(r.errors) == n_errors_before_joints:  # a tree check on broken joints only adds noise
        roots = [l.name for l in links if l.name not in child_of]
        if "base" in top:
            base_name = r.string(top, "base", "base")
            if base_name is not None and base_name not in link_index:
                r.error(top.line_of("base"), "base", f"no link named '{base_name}'{r.suggest(base_name, link_index)}")
                base_name = None
        if not roots:
            r.error(top.line_of("joints") if "joints" in top else top.line, "joints",
                    "every link is the child of a joint: a kinematic loop (no base link)")
        elif len(roots) > 1:
            r.error(top.line_of("joints") if "joints" in top else top.line, "joints",
                    f"links {', '.join(repr(x) for x in roots)} are not connected: a robot must be one tree "
                    "(add joints, or make separate robots)")
        else:
            if base_name is not None and base_name != roots[0]:
                r.error(top.line_of("base"), "base", f"'{base_name}' is not the root of the tree ('{roots[0]}' is)")
            base_name = roots[0]
            # breadth-first order from the root; links unreachable from it are in a loop
            children: dict[str, list[int]] = {}
            for k, j in enumerate(raw_joints):
                if j["parent"] is not None and j["child"] is not None and child_of.get(j["child"]) == k:
                    children.setdefault(j["parent"], []).append(k)
            frontier, seen = [base_name], {base_name}
            while frontier:
                nxt = []
                for ln in frontier:
                    for k in children.get(ln, []):
                        c = raw_joints[k]["child"]
                        if c in seen:
                            continue
                        seen.add(c)
                        order.append(k)
                        nxt.append(c)
                frontier = nxt
            missing = [l.name for l in links if l.name not in seen]
            if missing:
                r.error(top.line_of("joints"), "joints",
                        f"links {', '.join(repr(x) for x in missing)} form a kinematic loop not reachable from the base")

    # DOFs
    dof_raw = []
    dseq = r.sequence(top["dofs"], "dofs", top.line_of("dofs")) if "dofs" in top else YList()
    driven: dict[str, str] = {}
    for i, dm in enumerate(_count(r, dseq, "dofs", top.line_of("dofs"), B.MAX_LINKS, "DOFs")):
        f = f"dofs[{i}]"
        dm = r.mapping(dm, f, dseq.line_of(i))
        if dm is None:
            continue
        r.check_keys(dm, f, DOF_KEYS, ["name", "joints"])
        dname = r.string(dm, "name", f, required=True) or f"dof{i}"
        kind = r.string(dm, "kind", f, default="rigid", choices=["rigid", "breakaway"])
        entries = []
        js = r.sequence(dm["joints"], f"{f}.joints", dm.line_of("joints")) if "joints" in dm else YList()
        for k, e in enumerate(_count(r, js, f"{f}.joints", dm.line_of("joints"), B.MAX_LINKS, "joints")):
            ef = f"{f}.joints[{k}]"
            if isinstance(e, str):
                jn, ratio, off = e, 1.0, 0.0
                eline = js.line_of(k)
            else:
                em = r.mapping(e, ef, js.line_of(k))
                if em is None:
                    continue
                r.check_keys(em, ef, ["joint", "ratio", "offset"], ["joint"])
                jn = r.string(em, "joint", ef)
                ratio = r.number(em, "ratio", ef, default=1.0)
                if ratio is not None and ratio != 0 and not B.RATIO[0] <= abs(ratio) <= B.RATIO[1]:
                    r.error(em.line_of("ratio"), f"{ef}.ratio", f"|ratio| must be within {B.describe(B.RATIO)}, "
                            f"got {ratio:g}")
                    continue
                eline = em.line
                off = None
            if jn is None:
                continue
            if jn not in jnames:
                r.error(eline, ef, f"unknown joint {quote(jn)}{r.suggest(jn, jnames)}")
                continue
            jk = raw_joints[jnames[jn]] if jnames[jn] < len(raw_joints) else None
            if jk is None:
                continue
            if jk["kind"] == FIXED:
                r.error(eline, ef, f"joint '{jn}' is fixed and cannot be driven by a DOF")
                continue
            if off is None:
                off = r.number(em, "offset", ef, default=0.0, unit="angle" if jk["kind"] == REVOLUTE else "length",
                               bounds=_angle_or_travel(jk["kind"]))
                if off is None:
                    continue
            if ratio == 0:
                r.error(eline, f"{ef}.ratio", "ratio must not be 0")
                continue
            if jn in driven:
                r.error(eline, ef, f"joint '{jn}' is already driven by DOF '{driven[jn]}'")
                continue
            driven[jn] = dname
            entries.append((jnames[jn], ratio, off))
        if not entries:
            if "joints" in dm:
                r.error(dm.line_of("joints"), f"{f}.joints", "a DOF must drive at least one joint")
            continue
        unit = "angle" if raw_joints[entries[0][0]]["kind"] == REVOLUTE else "length"
        effort_unit = None
        rng = B.ANGLE if unit == "angle" else B.TRAVEL
        dof_raw.append(dict(
            name=dname, entries=entries, kind=kind or "rigid", line=dm.line, field=f, unit=unit,
            breakaway=r.number(dm, "breakaway_torque", f, default=0.0, nonnegative=True, bounds=B.BREAKAWAY),
            kp=r.number(dm, "kp", f, default=100.0, nonnegative=True, bounds=B.GAIN_KP),
            kd=r.number(dm, "kd", f, default=0.1, nonnegative=True, bounds=B.GAIN_KD),
            effort=r.number(dm, "effort", f, default=10.0, positive=True, unit=effort_unit, bounds=B.EFFORT),
            velocity=r.number(dm, "velocity", f, default=1.0, unit=unit, bounds=B.VELOCITY),
            limits=r.vector(dm, "limits", f, 2, unit=unit, bounds=rng) if "limits" in dm else None,
            default=r.number(dm, "default", f, unit=unit, bounds=rng) if "default" in dm else None,
            lines={k: dm.line_of(k) for k in dm},
        ))
        if kind == "breakaway" and "breakaway_torque" not in dm:
            r.error(dm.line, f"{f}.breakaway_torque", "a breakaway DOF needs 'breakaway_torque'")
    r.raise_if_errors()

    # assemble joints (tree order) with DOF coupling
    joint_map = {k: n for n, k in enumerate(order)}  # raw index -> ordered index
    dof_of_joint = {}
    for di, d in enumerate(dof_raw):
        for (jk, ratio, off) in d["entries"]:
            dof_of_joint[jk] = (di, ratio, off)
    joints = []
    for k in order:
        j = raw_joints[k]
        di, ratio, off = dof_of_joint.get(k, (-1, 0.0, 0.0))
        joints.append(Joint(j["name"], j["kind"], link_index[j["parent"]], link_index[j["child"]],
                            _ro(j["X_PJ"]), _ro(j["X_JC"]), _ro(j["axis"]), _ro(j["limits"]),
                            float(j["coulomb"]), float(j["viscous"]), di, float(ratio), float(off)))
    dofs = []
    for di, d in enumerate(dof_raw):
        lo, hi = -np.inf, np.inf
        for (jk, ratio, off) in d["entries"]:
            jl = raw_joints[jk]["limits"]
            a, b = (jl - off) / ratio
            lo, hi = max(lo, min(a, b)), min(hi, max(a, b))
        if d["limits"] is not None:
            gl = d["limits"]
            if gl[0] > gl[1]:
                r.error(d["lines"]["limits"], f"{d['field']}.limits", "min > max: write [min, max]")
            lo, hi = (gl[0], gl[1]) if not np.isfinite(lo) and not np.isfinite(hi) else (max(lo, gl[0]), min(hi, gl[1]))
        if lo > hi:
            r.error(d["line"], f"{d['field']}", "the limits of the joints this DOF drives leave no common range")
            lo = hi = 0.0
        default = d["default"]
        if default is None:
            default = 0.0 if lo <= 0.0 <= hi else (lo if np.isfinite(lo) else hi)
        elif not (lo - 1e-12 <= default <= hi + 1e-12):
            sc = r.angle_scale if d["unit"] == "angle" else r.length_scale
            r.error(d["lines"]["default"], f"{d['field']}.default",
                    f"default {default / sc:g} outside the DOF limits [{lo / sc:g}, {hi / sc:g}] (file units)")
        jidx = tuple(joint_map[jk] for (jk, _, _) in d["entries"])
        dofs.append(DOF(d["name"], jidx, _ro([e[1] for e in d["entries"]]), _ro([e[2] for e in d["entries"]]),
                        _ro([lo, hi]), d["kind"], float(d["breakaway"]), float(d["kp"]), float(d["kd"]),
                        float(d["effort"]), float(d["velocity"]), float(default)))
    # palm, approach, collisions, eigengrasps
    palm = r.string(top, "palm", "palm", default=base_name)
    if palm not in link_index:
        r.error(top.line_of("palm"), "palm", f"no link named '{palm}'{r.suggest(str(palm), link_index)}")
        palm = base_name
    approach = r.vector(top, "approach", "approach", 3, nonzero=True, default=(0.0, 0.0, 1.0), bounds=B.DIRECTION)
    approach = approach / np.linalg.norm(approach)
    pairs = set()
    for j in joints:  # adjacent links never collide
        pairs.add(frozenset((j.parent, j.child)))
    if "no_collide" in top:
        ps = r.sequence(top["no_collide"], "no_collide", top.line_of("no_collide"))
        for i, p in enumerate(_count(r, ps, "no_collide", top.line_of("no_collide"), B.MAX_LINKS ** 2,
                                     "pairs")):
            f = f"no_collide[{i}]"
            if not (isinstance(p, YList) and len(p) == 2 and all(isinstance(x, str) for x in p)):
                r.error(ps.line_of(i), f, "expected a pair of link names [a, b]")
                continue
            bad = [x for x in p if x not in link_index]
            for x in bad:
                r.error(ps.line_of(i), f, f"no link named '{x}'{r.suggest(x, link_index)}")
            if not bad:
                pairs.add(frozenset((link_index[p[0]], link_index[p[1]])))
    nd = len(dofs)
    eig = np.zeros((0, nd))
    eig_origin = np.array([d.default for d in dofs])
    if "eigengrasps" in top:
        em = r.mapping(top["eigengrasps"], "eigengrasps", top.line_of("eigengrasps"))
        if em is not None:
            r.check_keys(em, "eigengrasps", ["origin", "vectors"], ["vectors"])
            if "origin" in em:
                o = r.vector(em, "origin", "eigengrasps", nd, bounds=B.ANGLE)
                if o is not None:
                    eig_origin = o
            vs = r.sequence(em.get("vectors"), "eigengrasps.vectors", em.line_of("vectors")) if "vectors" in em else None
            rows = []
            for i, v in enumerate(_count(r, vs, "eigengrasps.vectors", em.line_of("vectors"), B.MAX_LINKS,
                                         "eigengrasps")):
                vv = r.vector_value(v, f"eigengrasps.vectors[{i}]", vs.line_of(i), nd, nonzero=True,
                                    bounds=B.DIRECTION)
                if vv is not None:
                    rows.append(vv / np.linalg.norm(vv))
            if rows:
                eig = np.array(rows)
    r.raise_if_errors()
    parent_joint = [-1] * len(links)
    for n, j in enumerate(joints):
        parent_joint[j.child] = n
    return Robot(name=name, file=str(path), links=tuple(links), joints=tuple(joints), dofs=tuple(dofs),
                 base_link=link_index[base_name], palm_link=link_index[palm], approach=_ro(approach),
                 eigengrasps=_ro(eig), eigengrasp_origin=_ro(eig_origin), no_collide=frozenset(pairs),
                 link_index=ReadOnlyDict(link_index), joint_index=ReadOnlyDict({j.name: i for i, j in enumerate(joints)}),
                 dof_index=ReadOnlyDict({d.name: i for i, d in enumerate(dofs)}), parent_joint=tuple(parent_joint))


# -- objects --------------------------------------------------------------------------------

OBJECT_KEYS = ["object", "units", "shape", "shapes", "mass", "density", "com", "inertia", "material", "color",
               "description"]


def _object_from_map(r: Reader, m: YMap, field: str, base: Path, name: str, file: str, *,
                     need_mass: bool) -> Object | None:
    shapes, smats, ok = _read_shapes(r, m, field, base)
    if "shape" not in m and "shapes" not in m:
        r.error(m.line, f"{field}.shape" if field else "shape", "missing required key 'shape'")
    if need_mass and ok and shapes:      # (a graspable object: obstacles may be rooms)
        _size_warning(r, m, field, shapes, OBJECT_WARN_EXTENT, f"object '{name}'")
    shape = _mass_shape(shapes, ok)
    inertial = _read_inertial(r, m, field, shape, required=need_mass) if shape is not None or need_mass else None
    return Object(name, file, shapes, inertial, _read_material(r, m, field), _read_color(r, m, field),
                  shape_materials=smats) if shapes and ok else None


def _mass_shape(shapes: tuple, ok: bool):
    """What :func:`_read_inertial` derives mass properties from: the one shape, None, or the tuple."""
    if not ok or not shapes:
        return None
    return shapes[0] if len(shapes) == 1 else shapes


@_one_load
def load_object(path: str | Path, *, _data=None, need_mass: bool = True) -> Object:
    """Load and validate an object YAML file (a shape with mass and material), a mesh or a one-link URDF."""
    path = _given(path)
    if _data is None and is_object_file(path):
        return load_object_file(path, need_mass=need_mass)
    data = load_yaml(path) if _data is None else _data
    r = Reader(str(path), max_text=B.MAX_NAME)
    top = _top(path, data, "object")
    r.check_keys(top, "", OBJECT_KEYS, ["object"])
    r.read_units(top)
    name = r.string(top, "object", "object", required=True) or path.stem
    _description(r, top)
    obj = _object_from_map(r, top, "", path.parent, name, str(path), need_mass=need_mass)
    r.raise_if_errors()
    return obj


# -- worlds ---------------------------------------------------------------------------------

WORLD_KEYS = ["world", "units", "gravity", "dt", "contact_threshold", "materials", "robots", "objects",
              "obstacles", "disable_collisions", "description"]
ROBOT_INST_KEYS = ["name", "file", "pose", "mount", "base", "dofs"]
BODY_INST_KEYS = ["name", "file", "pose", "material", "mass", "shape", "shapes", "density", "com", "inertia", "color"]


MODEL_SUFFIXES = (".yaml", ".yml")
#: what a world's ``file:`` entries may name: robots (YAML, a side file, a URDF), objects (YAML, a
#: mesh, a one-link URDF); anything else (``/etc/passwd``, a device) is refused before it is opened
FILE_SUFFIXES = {"robot": MODEL_SUFFIXES + (".urdf",),
                 "object": MODEL_SUFFIXES + (".urdf",) + tuple(MESH_SUFFIXES)}


def _model_file(r: Reader, m: YMap, f: str, base: Path, what: str) -> Path | None:
    """The path a ``file:`` entry names: a model file name of sane length (None if not)."""
    fname = r.string(m, "file", f, required=True, max_len=B.MAX_PATH)
    if fname is None:
        return None
    ok = FILE_SUFFIXES[what]
    if Path(fname).suffix.lower() not in ok:
        r.error(m.line_of("file"), f"{f}.file", f"{what} files must end in {', '.join(ok)}")
        return None
    return _named_file(r, fname, base, m.line_of("file"), f"{f}.file")


#: (m) a robot link or a graspable object wider than this in a file whose lengths are metres is named in
#: a warning: a file written in millimetres without ``units: {length: mm}`` makes a 90 mm palm 90 m
LINK_WARN_EXTENT = 3.0
OBJECT_WARN_EXTENT = 2.0


def _extent(shape: Shape) -> float:
    """A shape's largest extent (m) in its owner's frame."""
    lo, hi = shape.world_bounds(np.eye(4))
    return float((hi - lo).max())


def _size_warning(r: Reader, m: YMap, field: str, shapes: tuple, limit: float, what: str) -> None:
    """A warning when a shape of ``what`` is wider than ``limit`` in a file whose lengths are metres."""
    if r.length_scale != 1.0:
        return
    ext = max(_extent(sh) for sh in shapes)
    if ext > limit:
        key = "shapes" if "shapes" in m else "shape"
        warnings.warn(ModelWarning(f"{r.file}:{m.line_of(key)}: {field + '.' if field else ''}{key}: {what} is {ext:.3g} m "
                                   f"across; lengths are in metres unless the file says units: {{length: mm}}"),
                      stacklevel=3)


def _turn_warning(r: Reader, line, field: str, values) -> None:
    """A revolute joint's limits beyond one turn in a file whose angles are radians: legal (a
    multi-turn joint), but ``limits: [0, 90]`` meant in degrees is the usual reason."""
    shown = ", ".join(f"{v:g}" for v in values)
    warnings.warn(ModelWarning(f"{r.file}:{line}: {field}: [{shown}] rad reach beyond one turn"
                               + degrees_hint(max(values, key=abs))), stacklevel=2)


def _load_cached(cache: dict, loader, p: Path, **kw):
    """``loader(p)`` once per file and options in one world (a world may name one file many times);
    a ModelError is remembered and raised again."""
    try:
        key = (os.path.realpath(p), loader, tuple(sorted(kw.items())))
    except (OSError, ValueError):
        key = (str(p), loader, tuple(sorted(kw.items())))
    if key not in cache:
        try:
            cache[key] = loader(p, **kw)
        except ModelError as e:
            cache[key] = e
    v = cache[key]
    if isinstance(v, ModelError):
        raise v
    return v


@_one_load
def load_world(path: str | Path, *, _data=None) -> World:
    """Load and validate a world YAML file with the robots and objects it names."""
    path = _given(path)
    data = load_yaml(path) if _data is None else _data
    r = Reader(str(path), max_text=B.MAX_NAME)
    base = path.parent
    top = _top(path, data, "world")
    r.check_keys(top, "", WORLD_KEYS, ["world"])
    r.read_units(top)
    name = r.string(top, "world", "world", required=True) or path.stem
    _description(r, top)
    g_max = B.GRAVITY[1]
    gravity = r.vector(top, "gravity", "gravity", 3, default=(0.0, 0.0, -9.81),
                       bounds=(-g_max, g_max, B.GRAVITY[2], False))
    if "gravity" in top and gravity is not None and not np.linalg.norm(gravity) <= B.GRAVITY[1]:
        r.error(top.line_of("gravity"), "gravity", f"magnitude must be within {B.describe(B.GRAVITY)}, got "
                f"{float(np.linalg.norm(gravity)):g} m/s^2")
        gravity = np.array([0.0, 0.0, -9.81])
    dt = r.number(top, "dt", "dt", default=0.0025, positive=True, bounds=B.DT)
    thr = r.number(top, "contact_threshold", "contact_threshold", default=1e-4, positive=True, unit="length",
                   bounds=B.CONTACT_THRESHOLD)
    sub_errors: list[ModelError] = []
    cache: dict = {}
    lines: dict = {}     # robot or body name -> (field, line) of its entry, for later checks

    # materials
    extra_fr, rest = {}, {}
    if "materials" in top:
        mm = r.mapping(top["materials"], "materials", top.line_of("materials"))
        if mm is not None:
            r.check_keys(mm, "materials", ["friction", "restitution"])
            for key, store in (("friction", extra_fr), ("restitution", rest)):
                if key not in mm:
                    continue
                seq = r.sequence(mm[key], f"materials.{key}", mm.line_of(key))
                for i, e in enumerate(seq or []):
                    f = f"materials.{key}[{i}]"
                    em = r.mapping(e, f, seq.line_of(i))
                    if em is None:
                        continue
                    allowed = ["pair", "static", "kinetic"] if key == "friction" else ["pair", "coefficient"]
                    r.check_keys(em, f, allowed, allowed)
                    pair = em.get("pair")
                    if not (isinstance(pair, YList) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
                        r.error(em.line_of("pair"), f"{f}.pair", "expected a pair of material names [a, b]")
                        continue
                    bad = next((text_problem(x) for x in pair if text_problem(x) or not x.strip()), None)
                    if bad is not None or not all(x.strip() for x in pair):
                        r.error(em.line_of("pair"), f"{f}.pair", f"material names: {bad or 'must not be empty'}")
                        continue
                    if key == "friction":
                        s = r.number(em, "static", f, nonnegative=True, bounds=B.FRICTION)
                        k = r.number(em, "kinetic", f, nonnegative=True, bounds=B.FRICTION)
                        if s is not None and k is not None:
                            if k > s:
                                r.error(em.line_of("kinetic"), f"{f}.kinetic",
                                        f"kinetic friction {k:g} exceeds static friction {s:g}")
                            store[tuple(pair)] = (s, k)
                    else:
                        c = r.number(em, "coefficient", f, nonnegative=True, bounds=B.RESTITUTION)
                        if c is not None:
                            if c > 1:
                                r.error(em.line_of("coefficient"), f"{f}.coefficient", f"restitution {c:g} > 1")
                            store[tuple(pair)] = c
    materials = MaterialTable.build(extra_fr, rest)

    material_uses = []  # (field, line, material) checked against the table at the end

    # robots
    robots: list[RobotInstance] = []
    mounts = []
    rseq = r.sequence(top["robots"], "robots", top.line_of("robots")) if "robots" in top else YList()
    rnames: dict[str, int] = {}
    for i, rm in enumerate(_count(r, rseq, "robots", top.line_of("robots"), B.MAX_ROBOTS, "robots")):
        f = f"robots[{i}]"
        rm = r.mapping(rm, f, rseq.line_of(i))
        if rm is None:
            continue
        r.check_keys(rm, f, ROBOT_INST_KEYS, ["file"])
        rpath = _model_file(r, rm, f, base, "robot")
        if rpath is None:
            continue
        fname = rm["file"]
        try:
            robot = _load_cached(cache, load_robot, rpath)
        except ModelError as e:
            if not any(x in sub_errors for x in getattr(e, "errors", [e])):
                sub_errors.extend(getattr(e, "errors", [e]))
            r.error(rm.line_of("file"), f"{f}.file", f"robot file {quote(fname)} is invalid (see the errors above)")
            continue
        rname = r.string(rm, "name", f, default=robot.name)
        material_uses.extend((f"{f}.file", rm.line_of("file"), m) for l in robot.links
                             for m in (l.material, *(x for x in l.shape_materials if x is not None)))
        if rname in rnames or rname in [b for b in ()]:
            r.error(rm.line_of("name") if "name" in rm else rm.line, f"{f}.name", f"duplicate robot name '{rname}'")
        X = r.pose(rm, "pose", f)
        fixed = r.string(rm, "base", f, default="fixed", choices=["fixed", "free"]) == "fixed"
        init = np.array([d.default for d in robot.dofs])
        if "dofs" in rm:
            dm = r.mapping(rm["dofs"], f"{f}.dofs", rm.line_of("dofs"))
            for dn in (dm or {}):
                if dn not in robot.dof_index:
                    r.error(dm.line_of(dn), f"{f}.dofs.{dn}", f"robot '{rname}' has no DOF '{dn}'"
                            f"{r.suggest(str(dn), robot.dof_index)}")
                    continue
                k = robot.dof_index[dn]
                unit = "angle" if robot.joints[robot.dofs[k].joints[0]].kind == REVOLUTE else "length"
                v = r.number(dm, dn, f"{f}.dofs", unit=unit, bounds=B.ANGLE if unit == "angle" else B.TRAVEL)
                if v is None:
                    continue
                lo, hi = robot.dofs[k].limits
                if not (lo - 1e-9 <= v <= hi + 1e-9):
                    # in the world file's units, as the value was written (+ 0.0: no "-0")
                    sc = r.angle_scale if unit == "angle" else r.length_scale
                    fits = unit == "angle" and sc == 1.0 and lo - 1e-9 <= math.radians(v) <= hi + 1e-9
                    r.error(dm.line_of(dn), f"{f}.dofs.{dn}", f"value {v / sc + 0.0:g} outside the DOF limits "
                            f"[{lo / sc + 0.0:g}, {hi / sc + 0.0:g}] {r.unit_name(unit)}{degrees_hint(v) if fits else ''}")
                    continue
                init[k] = v
        rnames[rname] = len(robots)
        lines[rname] = (f, rm.line)
        robots.append(RobotInstance(rname, robot, _ro(X), None, fixed, _ro(init)))
        if "mount" in rm:
            mounts.append((len(robots) - 1, rm, f))
    # mounts: a hand on an arm's link through a fixed joint
    for ri, rm, f in mounts:
        mm = r.mapping(rm["mount"], f"{f}.mount", rm.line_of("mount"))
        if mm is None:
            continue
        r.check_keys(mm, f"{f}.mount", ["robot", "link", "origin"], ["robot"])
        pn = r.string(mm, "robot", f"{f}.mount", required=True)
        if pn is None:
            continue
        if pn not in rnames:
            r.error(mm.line_of("robot"), f"{f}.mount.robot", f"no robot named '{pn}' in this world{r.suggest(pn, rnames)}")
            continue
        pi = rnames[pn]
        if pi == ri:
            r.error(mm.line_of("robot"), f"{f}.mount.robot", "a robot cannot be mounted on itself")
            continue
        parent = robots[pi].robot
        ln = r.string(mm, "link", f"{f}.mount", default=parent.links[_last_link(parent)].name)
        if ln not in parent.link_index:
            r.error(mm.line_of("link"), f"{f}.mount.link", f"robot '{pn}' has no link '{ln}'{r.suggest(str(ln), parent.link_index)}")
            continue
        X = r.pose(mm, "origin", f"{f}.mount")
        old = robots[ri]
        if "pose" in rm:
            r.error(rm.line_of("pose"), f"{f}.pose", "a mounted robot takes its pose from its mount; remove 'pose'")
        robots[ri] = RobotInstance(old.name, old.robot, old.X_WB, (pi, parent.link_index[ln], _ro(X)), True, old.initial_dofs)
    # mount chains must not loop
    for ri in range(len(robots)):
        seen, k = set(), ri
        while robots[k].mount is not None:
            if k in seen:
                r.error(top.line_of("robots"), "robots", f"robots mounted on each other in a loop ({robots[ri].name})")
                break
            seen.add(k)
            k = robots[k].mount[0]

    # objects (dynamic) and obstacles (static)
    bodies: list[BodyInstance] = []
    names = set(rnames)
    for key, dynamic in (("objects", True), ("obstacles", False)):
        if key not in top:
            continue
        seq = r.sequence(top[key], key, top.line_of(key))
        for i, om in enumerate(_count(r, seq, key, top.line_of(key), B.MAX_BODIES, key)):
            f = f"{key}[{i}]"
            om = r.mapping(om, f, seq.line_of(i))
            if om is None:
                continue
            r.check_keys(om, f, BODY_INST_KEYS)
            if ("file" in om) == ("shape" in om or "shapes" in om):
                r.error(om.line, f, "give either 'file' (an object file) or an inline 'shape' (or 'shapes')")
                continue
            if "file" in om:
                opath = _model_file(r, om, f, base, "object")
                if opath is None:
                    continue
                fname = om["file"]
                mesh_file = is_object_file(opath)
                if mesh_file and "mass" in om and "density" in om:
                    r.error(om.line_of("density"), f"{f}.density", "give either 'mass' or 'density', not both")
                    continue
                try:
                    if mesh_file:    # a mesh or one-link URDF: mass/density may come with it
                        obj = _load_cached(cache, load_object_file, opath, need_mass=dynamic,
                                           mass=r.number(om, "mass", f, positive=True, bounds=B.MASS),
                                           density=r.number(om, "density", f, positive=True, bounds=B.DENSITY))
                    else:
                        obj = _load_cached(cache, load_object, opath, need_mass=dynamic)
                except ModelError as e:
                    if not any(x in sub_errors for x in getattr(e, "errors", [e])):
                        sub_errors.extend(getattr(e, "errors", [e]))
                    r.error(om.line_of("file"), f"{f}.file", f"object file {quote(fname)} is invalid (see the errors above)")
                    continue
                for k in (("com", "inertia", "color") if mesh_file else ("mass", "density", "com", "inertia", "color")):
                    if k in om:
                        r.error(om.line_of(k), f"{f}.{k}", f"'{k}' belongs in the object file '{fname}'")
                oname = r.string(om, "name", f, default=obj.name)
                if "material" in om:
                    obj = Object(obj.name, obj.file, obj.shapes, obj.inertial, _read_material(r, om, f), obj.color,
                                 obj.mass_note, obj.shape_materials)
            else:
                oname = r.string(om, "name", f, required=True)
                obj = _object_from_map(r, om, f, base, oname or f"{key}{i}", str(path), need_mass=dynamic)
                if obj is None:
                    continue
            if dynamic and obj.inertial is None:
                r.error(om.line, f, "a dynamic object needs a mass")
                continue
            if oname in names:
                r.error(om.line_of("name") if "name" in om else om.line, f"{f}.name", f"duplicate name '{oname}'")
                continue
            names.add(oname)
            lines[oname] = (f, om.line)
            material_uses.append((f"{f}.material", om.line_of("material") if "material" in om else om.line, obj.material))
            inline = om.get("shapes") if isinstance(om.get("shapes"), YList) else None
            for si, m in enumerate(obj.shape_materials):
                if m is not None:        # a shape's own material: its entry, where it is in this file
                    material_uses.append((f"{f}.shapes[{si}].material", inline.line_of(si), m) if inline is not None
                                         else (f"{f}.file", om.line_of("file") if "file" in om else om.line, m))
            bodies.append(BodyInstance(oname, obj, _ro(r.pose(om, "pose", f)), dynamic))
    nbodies = len(bodies) + sum(len(ri.robot.links) for ri in robots)
    if nbodies > B.MAX_WORLD_BODIES:
        r.error(top.line, "", f"more than {B.MAX_WORLD_BODIES} bodies (robot links, objects and obstacles: {nbodies})")
        r.raise_if_errors()
    unknown = set()
    for where, line, m in material_uses:
        if m not in materials.materials:
            unknown.add(m)
            r.error(line, where, f"material {quote(m)} has no friction entries{r.suggest(m, materials.materials)}; "
                    f"known: {', '.join(materials.materials)} (add pairs under 'materials.friction')")
    disabled = set()
    if "disable_collisions" in top:
        seq = r.sequence(top["disable_collisions"], "disable_collisions", top.line_of("disable_collisions"))
        known = set(rnames) | names | {f"{rn}/{l.name}" for rn, ri in rnames.items() for l in robots[ri].robot.links}
        for i, p in enumerate(_count(r, seq, "disable_collisions", top.line_of("disable_collisions"),
                                     B.MAX_BODIES * 4, "pairs")):
            if not (isinstance(p, YList) and len(p) == 2 and all(isinstance(x, str) for x in p)):
                r.error(seq.line_of(i), f"disable_collisions[{i}]", "expected a pair of names [a, b] (robot/link or body)")
                continue
            missing = [x for x in p if x not in known]
            for x in missing:
                r.error(seq.line_of(i), f"disable_collisions[{i}]", f"no robot, link ('robot/link') or body named "
                        f"{quote(x)}{r.suggest(x, known)}")
            if not missing:
                disabled.add(frozenset(p))
    if sub_errors:
        r.errors = sub_errors + r.errors
    r.raise_if_errors()
    world = World(name=name, file=str(path), robots=tuple(robots), bodies=tuple(bodies), gravity=_ro(gravity),
                  dt=float(dt), contact_threshold=float(thr), materials=materials, disabled_pairs=frozenset(disabled),
                  robot_index=ReadOnlyDict(dict(rnames)),
                  body_index=ReadOnlyDict({b.name: i for i, b in enumerate(bodies)}),
                  entry_lines=ReadOnlyDict(lines))
    _check_friction_pairs(r, world, unknown)
    r.raise_if_errors()
    return world


def _check_friction_pairs(r: Reader, world: World, skip: set) -> None:
    """Every two materials that may touch need a friction entry (the simulator refuses a contact
    without one).  Materials in ``skip`` are already reported as unknown."""
    from .bodies import body_table

    t = body_table(world)
    done = set()
    start, count = t.body_shape_start, t.body_shape_count

    def mats(i):        # a body's shapes' materials (each shape may name its own)
        return dict.fromkeys(t.shape_materials[start[i]:start[i] + count[i]] or (t.materials[i],))

    for i, j in t.collision_pairs:
        for a in mats(i):
            for b in mats(j):
                _check_pair(r, world, t, i, j, a, b, done, skip)


def _check_pair(r: Reader, world: World, t, i: int, j: int, a: str, b: str, done: set, skip: set) -> None:
    """One material pair of bodies i and j (see :func:`_check_friction_pairs`)."""
    key = (min(a, b), max(a, b))
    if key not in done and a not in skip and b not in skip:
        done.add(key)
        try:
            world.materials.mu(a, b)
        except KeyError:
            ni, nj = t.names[i], t.names[j]
            owner = ni.split("/", 1)[0] if t.robot[i] >= 0 else ni
            field, line = world.entry_lines.get(owner, ("materials", None))
            r.error(line, field, f"materials {quote(a)} ({quote(ni)}) and {quote(b)} ({quote(nj)}) may touch but have "
                    "no friction entry; add {pair: [" + f"{a}, {b}" + "], static, kinetic} under 'materials.friction'")


def _last_link(robot: Robot) -> int:
    """The link farthest down the tree (last in tree order): a serial arm's end effector."""
    return robot.joints[-1].child if robot.joints else robot.base_link

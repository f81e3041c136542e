"""Read and check a URDF file: strict XML, every problem as ``FILE:LINE: element: problem``.

yourdfpy parses the values (origins, axes, limits, geometry, inertials, mimic); it is lenient by
design (it recovers from broken XML, fills missing attributes with defaults, raises ``KeyError``
from deep inside on a missing name).  So before it sees the file, this module parses it strictly
with lxml (which keeps line numbers) and checks everything yourdfpy would guess or trip over:
names, references, numbers, limits, axes, geometry, the tree (one root, no loops) and mimic chains.
The result, :class:`UrdfDoc`, pairs yourdfpy's objects with the line of each element, so later
stages (:mod:`graspsim.model.urdf_robot`) can report their own problems at the right line.
"""
from __future__ import annotations

import io
import math
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ModelError, ModelErrors, ModelWarning, did_you_mean

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed")
UNSUPPORTED_JOINT_TYPES = ("floating", "planar")
GEOMETRY_TAGS = ("box", "cylinder", "sphere", "mesh")


@dataclass(frozen=True, eq=False)
class UrdfDoc:
    """A checked URDF: yourdfpy's ``Robot`` plus the source line of each link and joint element."""

    file: str
    robot: object                 # yourdfpy.Robot
    link_lines: dict              # link name -> line of <link>
    joint_lines: dict             # joint name -> line of <joint>
    elements: dict                # (link name, 'visual'|'collision'|'inertial', index) -> line
    root: str                     # the root link
    children: dict                # link name -> [joint names whose parent it is], document order
    parent_joint: dict            # link name -> joint name whose child it is
    skip_visuals: frozenset = frozenset()   # (link name, visual index) not to draw (zero size)

    @property
    def links(self) -> dict:
        return {l.name: l for l in self.robot.links}

    @property
    def joints(self) -> dict:
        return {j.name: j for j in self.robot.joints}

    def error(self, line: int | None, element: str, problem: str) -> ModelError:
        return ModelError(problem, file=self.file, line=line, field=element)


class _Checker:
    """Collects problems of one URDF file (file, line, element path, what is wrong)."""

    def __init__(self, file: str):
        self.file = file
        self.errors: list[ModelError] = []
        self.skip_visuals: set = set()     # (link, index) of zero-size visuals

    def error(self, el, problem: str, element: str | None = None) -> None:
        self.errors.append(ModelError(problem, file=self.file, line=getattr(el, "sourceline", None),
                                      field=element if element is not None else where(el)))

    def floats(self, el, attr: str, n: int, *, required: bool = False, positive: bool = False,
               nonnegative: bool = False) -> np.ndarray | None:
        """``n`` whitespace-separated finite numbers in attribute ``attr`` of ``el`` (None if absent)."""
        raw = el.get(attr)
        if raw is None:
            if required:
                self.error(el, f"missing attribute '{attr}'")
            return None
        parts = raw.split()
        try:
            vals = np.array([float(p) for p in parts])
        except ValueError:
            vals = None
        if vals is None or len(parts) != n or not np.all(np.isfinite(vals)):
            hint = " (an unexpanded xacro substitution: run xacro first)" if "$(" in raw or "${" in raw else ""
            self.error(el, f"{attr}=\"{raw}\": expected {n} finite number{'s' if n > 1 else ''}{hint}")
            return None
        if positive and not np.all(vals > 0):
            self.error(el, f"{attr}=\"{raw}\": must be > 0")
            return None
        if nonnegative and not np.all(vals >= 0):
            self.error(el, f"{attr}=\"{raw}\": must be >= 0")
            return None
        return vals

    def origin(self, parent) -> None:
        for o in parent.findall("origin"):
            self.floats(o, "xyz", 3)
            self.floats(o, "rpy", 3)


def where(el) -> str:
    """A readable path of ``el``: ``joint 'j1'/limit``, ``link 'palm'/collision/geometry/mesh``."""
    parts = []
    while el is not None:
        tag = el.tag if isinstance(el.tag, str) else "?"
        if tag in ("link", "joint") and el.get("name") is not None and el.getparent() is not None \
                and el.getparent().tag == "robot":
            parts.append(f"{tag} '{el.get('name')}'")
            break
        if tag == "robot" and el.getparent() is None:
            parts.append("robot")
            break
        parts.append(tag)
        el = el.getparent()
    return "/".join(reversed(parts))


def read_urdf(path: str | Path) -> UrdfDoc:
    """Parse and check a URDF file; raise :class:`ModelError` (one line per problem) if it is broken."""
    from lxml import etree

    path = Path(path)
    file = str(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ModelError("file not found", file=file) from None
    except OSError as e:
        raise ModelError(f"cannot read file: {e.strerror or e}", file=file) from None
    data = _tolerated_prolog(data)
    try:
        root = etree.fromstring(data, etree.XMLParser(remove_blank_text=True, resolve_entities=False,
                                                      no_network=True))
    except etree.XMLSyntaxError as e:
        raise ModelError(f"malformed XML: {e.msg}", file=file, line=e.lineno or None) from None
    c = _Checker(file)
    if root.tag != "robot":
        c.error(root, f"the root element is <{root.tag}>, a URDF needs <robot name=\"...\">", element=str(root.tag))
        _raise(c)
    if not root.get("name"):
        c.error(root, "missing attribute 'name'")
    links, joints = _check_links(c, root), _check_joints(c, root)
    link_names = {n: el for n, el in links}
    joint_els = {n: el for n, el in joints}
    # references from joints to links, and the tree
    child_of: dict[str, str] = {}
    children: dict[str, list[str]] = {n: [] for n in link_names}
    for name, el in joints:
        ends = {}
        for key in ("parent", "child"):
            sub = el.find(key)
            ln = sub.get("link") if sub is not None else None
            if sub is None or not ln:
                c.error(sub if sub is not None else el, f"missing <{key} link=\"...\"/>",
                        element=f"{where(el)}/{key}")
                continue
            if ln not in link_names:
                c.error(sub, f"no link named '{ln}'{did_you_mean(ln, link_names)}")
                continue
            ends[key] = ln
        if len(ends) < 2:
            continue
        if ends["parent"] == ends["child"]:
            c.error(el, f"joint connects link '{ends['child']}' to itself")
            continue
        if ends["child"] in child_of:
            c.error(el.find("child"), f"link '{ends['child']}' is already the child of joint "
                    f"'{child_of[ends['child']]}': a kinematic loop (URDF robots are trees)")
            continue
        child_of[ends["child"]] = name
        children[ends["parent"]].append(name)
    _check_mimic(c, joints, joint_els)
    if c.errors:
        _raise(c)
    roots = [n for n in link_names if n not in child_of]
    if not roots:
        c.error(root, "every link is the child of a joint: a kinematic loop (no root link)")
    elif len(roots) > 1:
        c.error(link_names[roots[1]], f"links {', '.join(repr(x) for x in roots)} have no parent joint: a URDF "
                "robot must be one tree with one root link")
    else:
        seen, frontier = {roots[0]}, [roots[0]]
        jchild = {n: el.find("child").get("link") for n, el in joints}
        while frontier:
            frontier = [jchild[j] for ln in frontier for j in children[ln] if jchild[j] not in seen]
            seen.update(frontier)
        loop = [n for n in link_names if n not in seen]
        if loop:
            c.error(link_names[loop[0]], f"links {', '.join(repr(x) for x in loop)} form a kinematic loop "
                    f"not reachable from the root link '{roots[0]}'")
    _raise(c)
    robot = _yourdfpy_parse(data, file)
    elements = {}
    for name, el in links:
        for kind in ("visual", "collision", "inertial"):
            for i, sub in enumerate(el.findall(kind)):
                elements[(name, kind, i)] = sub.sourceline
                g = sub.find("geometry")
                if g is not None and len(g):
                    elements[(name, kind, i, "geometry")] = g[0].sourceline
    return UrdfDoc(file=file, robot=robot, link_lines={n: el.sourceline for n, el in links},
                   joint_lines={n: el.sourceline for n, el in joints}, elements=elements, root=roots[0],
                   children=children, parent_joint=child_of, skip_visuals=frozenset(c.skip_visuals))


_DECL = re.compile(rb"^\s*<\?xml([^>]*?)\?>")


def _tolerated_prolog(data: bytes) -> bytes:
    """Blank lines before the XML declaration and ``version="0.0"`` in it (both common in shipped
    URDFs, e.g. pybullet_data's) are harmless: drop the blanks, read the declaration as 1.0.
    Line numbers stay those of the file (the removed blank lines come back as a comment-free
    prefix of newlines after the declaration)."""
    m = _DECL.match(data)
    if m is None:
        return data
    lead = data[:m.start(1)].count(b"\n")
    decl = re.sub(rb"version\s*=\s*([\"'])[^\"']*\1", b'version="1.0"', m.group(1))
    return b"<?xml" + decl + b"?>" + b"\n" * lead + data[m.end():]


def _raise(c: _Checker) -> None:
    if len(c.errors) == 1:
        raise c.errors[0]
    if c.errors:
        raise ModelErrors(c.errors)


def _yourdfpy_parse(data: bytes, file: str):
    """yourdfpy's objects for a file that passed the checks (its exceptions become a ModelError)."""
    import yourdfpy

    try:
        urdf = yourdfpy.URDF.load(io.BytesIO(data), build_scene_graph=False, build_collision_scene_graph=False,
                                  load_meshes=False, load_collision_meshes=False)
    except Exception as e:  # noqa: BLE001 - any failure left after our checks is one model error
        raise ModelError(f"yourdfpy cannot parse it: {type(e).__name__}: {e}", file=file) from None
    return urdf.robot


def _named(c: _Checker, root, tag: str) -> list[tuple[str, object]]:
    out, first = [], {}
    for el in root.findall(tag):
        name = el.get("name")
        if not name:
            c.error(el, "missing attribute 'name'", element=tag)
            continue
        if name in first:
            c.error(el, f"duplicate {tag} name '{name}' (first at line {first[name]})")
            continue
        first[name] = el.sourceline
        out.append((name, el))
    return out


def _check_links(c: _Checker, root) -> list[tuple[str, object]]:
    links = _named(c, root, "link")
    for _, el in links:
        for inertial in el.findall("inertial"):
            c.origin(inertial)
            m = inertial.find("mass")
            if m is not None:
                c.floats(m, "value", 1, required=True, nonnegative=True)
            I = inertial.find("inertia")
            if I is not None:
                for a in ("ixx", "iyy", "izz"):     # yourdfpy would silently take 1.0
                    c.floats(I, a, 1, required=True)
                for a in ("ixy", "ixz", "iyz"):     # 0 when absent, as in yourdfpy
                    c.floats(I, a, 1)
        for kind in ("visual", "collision"):
            for i, v in enumerate(el.findall(kind)):
                c.origin(v)
                if not _check_geometry(c, v, visual=kind == "visual"):
                    c.skip_visuals.add((el.get("name"), i))
    return links


def _check_geometry(c: _Checker, v, *, visual: bool = False) -> bool:
    """Check a visual/collision geometry; False: a visual of zero size, to be skipped (warned)."""
    g = v.find("geometry")
    if g is None:
        c.error(v, "missing <geometry>")
        return
    kids = [k for k in g if isinstance(k.tag, str)]
    shapes = [k for k in kids if k.tag in GEOMETRY_TAGS]
    # yourdfpy reads the first child: it must be the one shape (stray extra elements are ignored)
    if len(shapes) != 1 or kids[0] is not shapes[0]:
        found = ", ".join(f"<{k.tag}>" for k in kids) or "nothing"
        c.error(g, f"needs exactly one of <box>, <cylinder>, <sphere>, <mesh>, first (found {found})")
        return
    k = kids[0]
    sizes = {"box": ("size", 3), "cylinder": ("radius", "length"), "sphere": ("radius",)}.get(k.tag)
    if sizes is not None:
        attrs = [(sizes[0], 3)] if k.tag == "box" else [(a, 1) for a in sizes]
        vals = [(a, c.floats(k, a, n, required=True, positive=not visual)) for a, n in attrs]
        bad = [a for a, x in vals if x is not None and not np.all(x > 0)]
        if visual and bad:
            # a zero-size visual (seen in shipped URDFs) draws nothing: skip it rather than refuse the robot
            warnings.warn(ModelWarning(f"{c.file}:{k.sourceline}: {where(k)}: {bad[0]}=\"{k.get(bad[0])}\" "
                                       "is not > 0; this visual is not drawn"), stacklevel=5)
            return False
    else:
        if not (k.get("filename") or "").strip():
            c.error(k, "missing attribute 'filename'")
        raw = k.get("scale")
        if raw is not None:  # yourdfpy also accepts commas as separators
            try:
                vals = [float(x) for x in raw.replace(",", " ").split()]
            except ValueError:
                vals = []
            if len(vals) not in (1, 3) or not all(math.isfinite(x) and x > 0 for x in vals):
                c.error(k, f"scale=\"{raw}\": expected 1 or 3 numbers > 0")
    return True


def _check_joints(c: _Checker, root) -> list[tuple[str, object]]:
    joints = _named(c, root, "joint")
    for name, el in joints:
        t = el.get("type")
        if t in UNSUPPORTED_JOINT_TYPES:
            c.error(el, f"joint type '{t}' is not supported (graspsim joints: {', '.join(JOINT_TYPES)})")
            continue
        if t not in JOINT_TYPES:
            c.error(el, f"type '{t}' is not one of {', '.join(JOINT_TYPES)}{did_you_mean(str(t), JOINT_TYPES)}"
                    if t else "missing attribute 'type'")
            continue
        c.origin(el)
        moving = t != "fixed"
        axis_el = el.find("axis")
        if axis_el is not None and moving:
            ax = c.floats(axis_el, "xyz", 3)
            if ax is not None and not np.linalg.norm(ax) > 1e-12:
                c.error(axis_el, "the axis of a moving joint must not be the zero vector")
        lim = el.find("limit")
        if lim is None and t in ("revolute", "prismatic"):
            c.error(el, f"a {t} joint needs <limit lower=... upper=... effort=... velocity=.../>")
        if lim is not None and moving:
            lo = c.floats(lim, "lower", 1)
            hi = c.floats(lim, "upper", 1)
            c.floats(lim, "effort", 1, nonnegative=True)
            c.floats(lim, "velocity", 1, nonnegative=True)
            if t != "continuous":
                if lo is None and hi is None and lim.get("lower") is None and lim.get("upper") is None:
                    c.error(lim, "no 'lower' and 'upper': the joint could not move (URDF's default range is [0, 0])")
                elif lo is not None and hi is not None and lo[0] > hi[0]:
                    c.error(lim, f"lower {lo[0]:g} > upper {hi[0]:g}")
        dyn = el.find("dynamics")
        if dyn is not None:
            c.floats(dyn, "damping", 1, nonnegative=True)
            c.floats(dyn, "friction", 1, nonnegative=True)
    return joints


def _check_mimic(c: _Checker, joints, joint_els: dict) -> None:
    target = {}
    for name, el in joints:
        m = el.find("mimic")
        if m is None:
            continue
        j = m.get("joint")
        if not j:
            c.error(m, "missing attribute 'joint'")
            continue
        if j not in joint_els:
            c.error(m, f"no joint named '{j}'{did_you_mean(j, joint_els)}")
            continue
        if j == name:
            c.error(m, "a joint cannot mimic itself")
            continue
        if joint_els[j].get("type") == "fixed" or el.get("type") == "fixed":
            c.error(m, f"mimic between '{name}' and the fixed joint '{j if joint_els[j].get('type') == 'fixed' else name}'")
            continue
        mult = c.floats(m, "multiplier", 1)
        c.floats(m, "offset", 1)
        if mult is not None and mult[0] == 0:
            c.error(m, "multiplier 0 would hold the joint still: make it a fixed joint instead")
            continue
        target[name] = (j, m)
    reported: set = set()
    for name in target:  # mimic chains must end at a driven joint
        seen, k = [name], name
        while k in target:
            k = target[k][0]
            if k in seen:
                if not reported & set(seen):
                    c.error(target[name][1], f"mimic joints form a loop ({' -> '.join(seen + [k])})")
                reported.update(seen)
                break
            seen.append(k)

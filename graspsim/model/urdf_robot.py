"""Turn a checked URDF (:class:`~graspsim.model.urdf.UrdfDoc`) into a graspsim :class:`Robot`.

What a URDF says maps one to one onto the description:

* ``<link>``: its ``<collision>`` geometry is the contact shape (0 or 1 element per link for now), its
  ``<visual>`` elements are :class:`~graspsim.model.description.Visual` entries for the viewer, its
  ``<inertial>`` the mass properties.  URDF gives the inertia tensor in the inertial frame (the
  ``<origin>`` of ``<inertial>``); graspsim's :class:`Inertial` is about the com in *link* axes, so
  ``I_link = R I_urdf R^T`` with R the inertial origin's rotation.
* ``<joint>``: revolute and continuous (unlimited) become revolute joints, prismatic and fixed as
  they are; ``X_PJ`` is the joint origin, the axis is normalised, ``<dynamics damping friction>``
  become viscous and Coulomb friction.
* Every moving joint without ``<mimic>`` is a DOF of the same name; a ``<mimic joint=J
  multiplier=k offset=c>`` joint is driven by J's DOF with ``ratio = k`` and ``offset = c``
  (chains of mimics compose).

What a URDF does not say comes from a :class:`HandSpec` (a side file, :mod:`urdf_side`), with
defaults that make a bare URDF usable at once (see :class:`HandSpec`).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError, ModelErrors, ModelWarning, did_you_mean
from ..geometry import Shape, inertia_fits, load_mesh_shape, make_primitive
from . import bounds as B
from .description import DOF, FIXED, PRISMATIC, REVOLUTE, Inertial, Joint, Link, Robot, Visual
from .package_path import resolve
from .readonly import ReadOnlyDict
from .urdf import UrdfDoc

DEFAULT_COLOR = (0.7, 0.7, 0.72)
#: mass (kg) and radius of gyration (m) given to links a URDF leaves massless (frames such as a grasp
#: target): every graspsim link is a rigid body of the dynamics and needs a positive mass
MASSLESS_MASS, MASSLESS_GYRATION = 1e-3, 0.01
#: density (kg/m^3) for links with collision geometry but no <inertial>
DEFAULT_DENSITY = 1000.0
#: default PD gains: full effort at this position error (rad for revolute, m for prismatic DOFs)
KP_ERROR = {REVOLUTE: 0.05, PRISMATIC: 0.005}
KD_OVER_KP = 0.01      # s


@dataclass(frozen=True, eq=False)
class HandSpec:
    """What a side file adds to a URDF (all optional; the defaults suit a bare URDF).

    ``root``: import only the subtree of this link (a hand out of an arm+hand file; default the
    URDF's root); ``exclude``: drop the subtrees of these links (the arm without its hand);
    ``palm`` (default the imported root), ``approach`` (unit vector in the palm frame, default +z);
    ``material`` for every link and ``link_materials`` per link (default plastic); ``density`` for
    links without ``<inertial>``; ``inertia``: ``"urdf"`` (the URDF's inertials) or ``"shapes"``
    (each link's centre of mass and inertia from its collision shapes at the URDF's mass, for URDFs
    whose inertias are placeholders); ``dofs``: per DOF name a dict of overrides (``kind``,
    ``breakaway_torque``, ``kp``, ``kd``, ``effort``, ``velocity``, ``default``; SI units).
    Without an override a DOF closes towards its upper limit at the URDF's velocity limit, pushes
    with the URDF's effort, and ``kp`` reaches that effort at 0.05 rad / 5 mm (``kd = 0.01 s * kp``).
    ``where`` maps a key (``'palm'``, ``'dofs.NAME'``, ...) to ``(file, line, field)`` for errors.
    """

    name: str | None = None
    file: str | None = None
    root: str | None = None
    exclude: tuple = ()
    palm: str | None = None
    approach: tuple = (0.0, 0.0, 1.0)
    material: str = "plastic"
    link_materials: dict = field(default_factory=dict)
    density: float = DEFAULT_DENSITY
    dofs: dict = field(default_factory=dict)
    inertia: str = "urdf"               # "shapes": every link's com and inertia from its collision shapes
    eigengrasps: object = None          # (k, ndof) array, or list of {dof: value} dicts
    eigengrasp_origin: object = None
    no_collide: tuple = ()
    where: dict = field(default_factory=dict)


def _ro(a) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


class _Errors:
    """Problems found while building (reported together), and what the stages share."""

    def __init__(self, doc: UrdfDoc, spec: HandSpec):
        self.doc, self.spec, self.errors = doc, spec, []
        self.hulls: set = set()          # id() of shapes that stand in for an open mesh
        self.unreachable: list = []      # (link, mass, largest moment, reach): see _inertial
        self.colors = _material_colors(doc)

    def urdf(self, line, element: str, problem: str) -> None:
        self.errors.append(ModelError(problem, file=self.doc.file, line=line, field=element))

    def side(self, key: str, problem: str) -> None:
        file, line, fld = self.spec.where.get(key, (self.spec.file or self.doc.file, None, key))
        self.errors.append(ModelError(problem, file=file, line=line, field=fld))

    def raise_if_any(self) -> None:
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise ModelErrors(self.errors)


def build_robot(doc: UrdfDoc, spec: HandSpec | None = None) -> Robot:
    """The graspsim robot for (a subtree of) ``doc`` completed by ``spec``."""
    spec = spec or HandSpec()
    err = _Errors(doc, spec)
    links_u, joints_u = doc.links, doc.joints
    root = spec.root or doc.root
    if root not in links_u:
        err.side("root", f"the URDF {doc.file} has no link '{root}'{did_you_mean(root, links_u)}")
    for x in spec.exclude:
        if x not in links_u:
            err.side("exclude", f"the URDF {doc.file} has no link '{x}'{did_you_mean(x, links_u)}")
    err.raise_if_any()
    # the imported links, breadth first from the root (parents before children), and their joints
    order, joint_order, frontier = [root], [], [root]
    cut = set(spec.exclude)
    if root in cut:
        err.side("exclude", f"'{root}' is the imported root itself")
    while frontier:
        nxt = []
        for ln in frontier:
            for jn in doc.children[ln]:
                ch = joints_u[jn].child
                if ch in cut:
                    continue
                joint_order.append(jn)
                order.append(ch)
                nxt.append(ch)
        frontier = nxt
    link_index = {n: i for i, n in enumerate(order)}
    links = [_link(doc, links_u[n], spec, err) for n in order]
    if err.unreachable:         # one line for the robot (a placeholder inertia is rarely on one link)
        each = "; ".join(f"'{n}' {top:.3g} kg m^2 for {m:.3g} kg, which would lie {np.sqrt(top / m):.3g} m from its "
                         f"com (its shapes reach {R:.3g} m)" for n, m, top, R in err.unreachable)
        warnings.warn(ModelWarning(f"{doc.file}: inertias that no mass inside the links' collision shapes can give "
                                   f"(used as given; if they are placeholders, 'inertia: shapes' in a side file "
                                   f"takes the shapes' at the URDF's masses): {each}"), stacklevel=3)
    joints, dofs = _joints_and_dofs(doc, joint_order, link_index, spec, err)
    err.raise_if_any()

    palm = spec.palm or root
    if palm not in link_index:
        err.side("palm", f"no link '{palm}' among the imported links{did_you_mean(palm, link_index)}")
        palm = root
    approach = np.asarray(spec.approach, float)
    approach = approach / np.linalg.norm(approach)
    for ln in list(spec.link_materials):
        if ln not in link_index:
            err.side(f"links.{ln}", f"no link '{ln}' among the imported links{did_you_mean(ln, link_index)}")
    pairs = _no_collide(doc, order, joint_order, link_index, spec, err)
    eig, eig_origin = _eigengrasps(dofs, spec, err)
    err.raise_if_any()
    parent_joint = [-1] * len(links)
    for n, j in enumerate(joints):
        parent_joint[j.child] = n
    pairs |= _touching_at_default(links, joints, dofs, pairs)
    name = spec.name or (doc.robot.name if root == doc.root else root)
    return Robot(name=name, file=spec.file or doc.file, links=tuple(links), joints=tuple(joints), dofs=tuple(dofs),
                 base_link=0, palm_link=link_index[palm], approach=_ro(approach), eigengrasps=_ro(eig),
                 eigengrasp_origin=_ro(eig_origin), no_collide=frozenset(pairs),
                 link_index=ReadOnlyDict(link_index),
                 joint_index=ReadOnlyDict({j.name: i for i, j in enumerate(joints)}),
                 dof_index=ReadOnlyDict({d.name: i for i, d in enumerate(dofs)}),
                 parent_joint=tuple(parent_joint), sources=(doc.file,) if spec.file else ())


# -- links ------------------------------------------------------------------------------------

def _link(doc: UrdfDoc, lu, spec: HandSpec, err: _Errors) -> Link:
    name = lu.name
    if len(lu.collisions) > B.MAX_SHAPES:
        err.urdf(doc.elements.get((name, "collision", B.MAX_SHAPES)), f"link '{name}'/collision",
                 f"{len(lu.collisions)} <collision> elements; at most {B.MAX_SHAPES} per link")
        shapes = ()
    else:   # every <collision> element is one of the link's shapes
        shapes = tuple(_shape(doc, name, "collision", i, c.geometry, c.origin, err, closed=True)
                       for i, c in enumerate(lu.collisions))
        shapes = tuple(x for x in shapes if x is not None)
    visuals = []
    for i, v in enumerate(lu.visuals):
        if (name, i) in doc.skip_visuals:
            continue
        vis = _visual(doc, name, i, v, err)
        if vis is not None:
            visuals.append(vis)
    color = visuals[0].color if visuals else DEFAULT_COLOR
    inertial = _inertial(doc, lu, shapes, spec, err)
    material = spec.link_materials.get(name, spec.material)
    return Link(name, shapes, inertial, material, color, visuals=tuple(visuals))


def _shapes_mass_properties(shapes: tuple, density: float):
    """(mass, com, inertia about the com) of uniform-density shapes taken as disjoint (overlaps
    count twice: URDF collision elements of one link rarely overlap much)."""
    parts = [s.mass_properties(density=density) for s in shapes]
    m = sum(p[0] for p in parts)
    c = sum(p[0] * p[1] for p in parts) / m
    I = np.zeros((3, 3))
    for mk, ck, Ik in parts:
        d = ck - c
        I += Ik + mk * (np.dot(d, d) * np.eye(3) - np.outer(d, d))   # parallel-axis theorem
    return m, c, I


def _geometry_line(doc: UrdfDoc, link: str, kind: str, i: int) -> int | None:
    return doc.elements.get((link, kind, i, "geometry"), doc.elements.get((link, kind, i)))


def _shape(doc: UrdfDoc, link: str, kind: str, i: int, g, origin, err: _Errors, *, closed: bool) -> Shape | None:
    """A collision shape (``closed``: open meshes are replaced by their convex hull) in the link frame."""
    X = np.eye(4) if origin is None else np.asarray(origin, float)
    if g.box is not None:
        return make_primitive("box", g.box.size, X)
    if g.sphere is not None:
        return make_primitive("sphere", (g.sphere.radius,), X)
    if g.cylinder is not None:
        return make_primitive("cylinder", (g.cylinder.radius, g.cylinder.length), X)
    path = _mesh_path(doc, link, kind, i, g.mesh.filename, err)
    if path is None:
        return None
    scale = 1.0 if g.mesh.scale is None else g.mesh.scale
    line = _geometry_line(doc, link, kind, i)
    try:
        s = load_mesh_shape(path, scale=scale, X_LS=X)
    except ModelError as e:
        err.urdf(line, f"link '{link}'/{kind}/geometry/mesh", f"{e.problem} ({e.file})")
        return None
    if closed and not s.watertight:
        # the contact kernel decides inside/outside with pseudo-normals, which needs a closed,
        # consistently oriented surface; an open mesh would give wrong signs, its hull never does
        s = hull_shape(s)
        err.hulls.add(id(s))
        warnings.warn(ModelWarning(f"{doc.file}:{line}: link '{link}': mesh {path} is not a closed volume; "
                                   "its convex hull is used for contacts"), stacklevel=4)
    return s


def _mesh_path(doc: UrdfDoc, link: str, kind: str, i: int, filename: str, err: _Errors):
    path, tried = resolve(filename, doc.file)
    if path is None:
        shown = ", ".join(str(p) for p in tried[:4]) + (f" and {len(tried) - 4} more" if len(tried) > 4 else "")
        err.urdf(_geometry_line(doc, link, kind, i), f"link '{link}'/{kind}/geometry/mesh",
                 f"mesh '{filename}' not found (tried {shown or 'nothing'}; "
                 "set GRASPSIM_PACKAGE_PATH for package:// names)")
    return path


def hull_shape(s: Shape) -> Shape:
    """The convex hull of a mesh shape (closed and outward oriented), same frame and source."""
    import trimesh

    h = trimesh.convex.convex_hull(np.asarray(s.vertices))
    V, F = np.asarray(h.vertices, float), np.asarray(h.faces, np.int64)
    for a in (V, F):
        a.setflags(write=False)
    return Shape(kind="mesh", size=(), X_LS=s.X_LS, mesh=(V, F), source=s.source, volume=float(h.volume),
                 center_S=_ro(h.center_mass), unit_inertia_S=_ro(h.moment_inertia), watertight=True)


def _visual(doc: UrdfDoc, link: str, i: int, v, err: _Errors) -> Visual | None:
    g = v.geometry
    X = _ro(np.eye(4) if v.origin is None else v.origin)
    color = DEFAULT_COLOR
    mat = v.material
    if mat is not None:
        if mat.color is not None and mat.color.rgba is not None:
            color = tuple(float(x) for x in np.asarray(mat.color.rgba, float)[:3])
        elif mat.name in err.colors:   # a material named here, defined elsewhere in the file
            color = err.colors[mat.name]
    if g.mesh is not None:
        path = _mesh_path(doc, link, "visual", i, g.mesh.filename, err)
        if path is None:
            return None
        sc = 1.0 if g.mesh.scale is None else g.mesh.scale
        scale = tuple(float(x) for x in np.broadcast_to(np.asarray(sc, float), (3,)))
        return Visual("mesh", (), X, color, str(path), scale)
    if g.box is not None:
        return Visual("box", tuple(float(x) for x in g.box.size), X, color)
    if g.sphere is not None:
        return Visual("sphere", (float(g.sphere.radius),), X, color)
    return Visual("cylinder", (float(g.cylinder.radius), float(g.cylinder.length)), X, color)


def _material_colors(doc: UrdfDoc) -> dict:
    """Colours of named materials, defined at the top level or inside any visual."""
    mats = list(doc.robot.materials) + [v.material for l in doc.robot.links for v in l.visuals if v.material]
    return {m.name: tuple(float(x) for x in np.asarray(m.color.rgba, float)[:3])
            for m in mats if m.name and m.color is not None and m.color.rgba is not None}


def _inertial(doc: UrdfDoc, lu, shapes: tuple, spec: HandSpec, err: _Errors) -> Inertial:
    name = lu.name
    solid = bool(shapes) and all(s.volume > 0 for s in shapes)
    iu = lu.inertial
    line = doc.elements.get((name, "inertial", 0), doc.link_lines[name])
    mass = float(iu.mass) if iu is not None and iu.mass is not None else 0.0
    if mass > 0:
        X = np.eye(4) if iu.origin is None else np.asarray(iu.origin, float)
        R = X[:3, :3]
        I_u = np.zeros((3, 3)) if iu.inertia is None else np.asarray(iu.inertia, float)
        I = R @ I_u @ R.T          # inertial-frame axes -> link axes
        ev = np.linalg.eigvalsh(I_u)
        moments = ", ".join(f"{e:.3g}" for e in ev)
        if ev[0] <= 0 and ev[0] >= -1e-12 * max(ev[2], 1e-300) or not np.any(I_u):
            # zero or singular (a point mass, a rod): the dynamics needs a positive definite
            # inertia; take the collision shape's at this mass (about its own centroid)
            use_shape = solid
            I = (_shapes_mass_properties(shapes, 1.0)[2] * mass / _shapes_mass_properties(shapes, 1.0)[0]
                 if use_shape else mass * MASSLESS_GYRATION ** 2 * np.eye(3))
            warnings.warn(ModelWarning(f"{doc.file}:{line}: link '{name}'/inertial/inertia: singular (principal "
                                       f"moments {moments}); using "
                                       f"{'its collision shape' if use_shape else 'a 1 cm radius of gyration'}"
                                       f" at {mass:g} kg"), stacklevel=4)
        elif ev[0] <= 0:
            err.urdf(line, f"link '{name}'/inertial/inertia",
                     f"inertia must be positive definite (principal moments {moments})")
            return Inertial(mass, _ro(X[:3, 3]), _ro(np.eye(3)))
        elif spec.inertia == "shapes" and solid:
            # the side file says the URDF's inertias are placeholders: uniform density over the
            # collision shapes at the URDF's mass (centre of mass and inertia)
            m1, c1, I1 = _shapes_mass_properties(shapes, 1.0)
            return Inertial(mass, _ro(c1), _ro(I1 * (mass / m1)))
        elif solid and not (fit := inertia_fits(shapes, mass, X[:3, 3], I))[0]:
            # beyond what mass inside the collision shapes can give: a placeholder (pybullet_data's
            # Panda says 0.1 kg m^2 for a 0.1 kg finger, whose shapes allow 1.3e-4), or a link whose
            # mass lies partly outside its collision shapes.  Used as given; named in one warning.
            err.unreachable.append((name, mass, fit[1], fit[2]))
        elif ev[0] + ev[1] < ev[2] * (1 - 1e-9):
            # common in real URDFs (rounded CAD values); harmless for the dynamics, so kept as given
            warnings.warn(ModelWarning(f"{doc.file}:{line}: link '{name}'/inertial/inertia: principal moments "
                                       f"{moments} violate the triangle inequality (no real body has them); "
                                       "used as given"), stacklevel=4)
        return Inertial(mass, _ro(X[:3, 3]), _ro(0.5 * (I + I.T)))
    if iu is None and solid:
        # no <inertial>: uniform density over the collision shapes (a hull if a mesh is open)
        m, c, I = _shapes_mass_properties(shapes, spec.density)
        for shape in shapes:
            if id(shape) in err.hulls:
                warnings.warn(ModelWarning(f"{doc.file}:{doc.link_lines[name]}: link '{name}': no <inertial>; mass "
                                           f"properties from the convex hull of the open mesh {shape.source} "
                                           f"at {spec.density:g} kg/m^3"), stacklevel=4)
        return Inertial(m, _ro(c), _ro(I))
    # a massless frame (mass 0 or no <inertial> and no geometry): a light placeholder body
    com = np.zeros(3) if iu is None or iu.origin is None else np.asarray(iu.origin, float)[:3, 3]
    return Inertial(MASSLESS_MASS, _ro(com), _ro(MASSLESS_MASS * MASSLESS_GYRATION ** 2 * np.eye(3)))


# -- joints and DOFs --------------------------------------------------------------------------

def _joints_and_dofs(doc: UrdfDoc, joint_order: list, link_index: dict, spec: HandSpec, err: _Errors):
    ju = doc.joints
    imported = set(joint_order)
    # the driving joint of each mimic joint (chains compose: q = k1 (k2 q0 + c2) + c1)
    drive = {}
    for jn in joint_order:
        j = ju[jn]
        if j.type == "fixed":
            continue
        ratio, off, k = 1.0, 0.0, jn
        while ju[k].mimic is not None:
            m = ju[k].mimic
            mult = 1.0 if m.multiplier is None else float(m.multiplier)
            c = 0.0 if m.offset is None else float(m.offset)
            ratio, off = ratio * mult, off * mult + c
            k = m.joint
        if k not in imported:
            err.urdf(doc.joint_lines[jn], f"joint '{jn}'/mimic",
                     f"mimics joint '{k}', which is not among the imported joints")
            continue
        drive[jn] = (k, ratio, off)
    masters = [jn for jn in joint_order if jn in drive and drive[jn][0] == jn]
    dof_of = {jn: d for d, jn in enumerate(masters)}
    for dn in spec.dofs:
        if dn not in dof_of:
            err.side(f"dofs.{dn}", f"no DOF '{dn}' (the URDF's moving, non-mimic joints are the DOFs: "
                     f"{', '.join(masters) or 'none'}){did_you_mean(dn, dof_of)}")
    joints, entries = [], {d: [] for d in range(len(masters))}
    for n, jn in enumerate(joint_order):
        j = ju[jn]
        kind = {"revolute": REVOLUTE, "continuous": REVOLUTE, "prismatic": PRISMATIC}.get(j.type, FIXED)
        lim = np.array([-np.inf, np.inf])
        if j.type in ("revolute", "prismatic") and j.limit is not None:
            lim = np.array([0.0 if j.limit.lower is None else j.limit.lower,
                            0.0 if j.limit.upper is None else j.limit.upper], float)
        axis = np.array([1.0, 0.0, 0.0]) if j.axis is None else np.asarray(j.axis, float)
        if kind == FIXED:
            axis = np.array([0.0, 0.0, 1.0]) if not np.linalg.norm(axis) > 0 else axis
        axis = axis / np.linalg.norm(axis)
        visc = coul = 0.0
        if j.dynamics is not None:
            visc = float(j.dynamics.damping or 0.0)
            coul = float(j.dynamics.friction or 0.0)
        di, ratio, off = -1, 0.0, 0.0
        if jn in drive:
            k, ratio, off = drive[jn]
            di = dof_of[k]
            entries[di].append((n, ratio, off))
        joints.append(Joint(jn, kind, link_index[j.parent], link_index[j.child],
                            _ro(np.eye(4) if j.origin is None else j.origin), _ro(np.eye(4)), _ro(axis), _ro(lim),
                            coul, visc, di, float(ratio), float(off)))
    dofs = [_dof(doc, ju[jn], joints, entries[d], spec.dofs.get(jn, {}), err, spec) for d, jn in enumerate(masters)]
    return joints, dofs


def _dof(doc: UrdfDoc, ju, joints: list, entries: list, over: dict, err: _Errors, spec: HandSpec) -> DOF:
    name = ju.name
    kind = joints[entries[0][0]].kind
    lo, hi = -np.inf, np.inf
    for (n, ratio, off) in entries:
        a, b = (joints[n].limits - off) / ratio
        lo, hi = max(lo, min(a, b)), min(hi, max(a, b))
    if lo > hi:
        err.urdf(doc.joint_lines[name], f"joint '{name}'",
                 "the limits of this joint and the joints that mimic it leave no common range")
        lo = hi = 0.0
    lim = ju.limit
    effort = float(lim.effort) if lim is not None and lim.effort else 10.0
    speed = float(lim.velocity) if lim is not None and lim.velocity else (1.0 if kind == REVOLUTE else 0.1)
    if not np.isfinite(hi):
        speed = 0.0        # an unlimited (continuous) DOF has nothing to close towards: it stays
    effort = float(over.get("effort", effort))
    kp = float(over.get("kp", effort / KP_ERROR[kind]))
    kd = float(over.get("kd", KD_OVER_KP * kp))
    velocity = float(over.get("velocity", speed))
    default = over.get("default")
    if default is None:
        default = 0.0 if lo <= 0.0 <= hi else (lo if np.isfinite(lo) else hi)
    elif not (lo - 1e-12 <= default <= hi + 1e-12):
        err.side(f"dofs.{name}.default", f"default {default:g} outside the DOF limits [{lo:g}, {hi:g}]")
    dkind = over.get("kind", "rigid")
    brk = float(over.get("breakaway_torque", 0.0))
    if dkind == "breakaway" and "breakaway_torque" not in over:
        err.side(f"dofs.{name}", "a breakaway DOF needs 'breakaway_torque'")
    return DOF(name, tuple(e[0] for e in entries), _ro([e[1] for e in entries]), _ro([e[2] for e in entries]),
               _ro([lo, hi]), dkind, brk, kp, kd, effort, velocity, float(default))


# -- collision filter and eigengrasps -----------------------------------------------------------

def _no_collide(doc: UrdfDoc, order: list, joint_order: list, link_index: dict, spec: HandSpec, err: _Errors) -> set:
    """Adjacent links, links welded together by fixed joints, and the side file's pairs."""
    ju = doc.joints
    pairs = set()
    weld = {n: n for n in order}       # union-find over fixed joints

    def find(x):
        while weld[x] != x:
            weld[x] = weld[weld[x]]
            x = weld[x]
        return x

    for jn in joint_order:
        j = ju[jn]
        pairs.add(frozenset((link_index[j.parent], link_index[j.child])))
        if j.type == "fixed":
            weld[find(j.child)] = find(j.parent)
    groups: dict = {}
    for n in order:
        groups.setdefault(find(n), []).append(link_index[n])
    for g in groups.values():
        pairs.update(frozenset((a, b)) for a in g for b in g if a < b)
    for i, (a, b) in enumerate(spec.no_collide):
        bad = [x for x in (a, b) if x not in link_index]
        for x in bad:
            err.side(f"no_collide[{i}]", f"no link '{x}' among the imported links{did_you_mean(x, link_index)}")
        if not bad:
            pairs.add(frozenset((link_index[a], link_index[b])))
    return pairs


def _touching_at_default(links: list, joints: list, dofs: list, skip: set) -> set:
    """Link pairs that touch or overlap at the default DOF values (FCL, boolean).

    Real URDF meshes overlap at the joints by design (the Panda's link5 and link7 hulls do at
    q = 0) and URDF cannot say which pairs to ignore (SRDF does); like MoveIt's setup assistant,
    pairs already in collision in the default pose are taken as never colliding.
    """
    from .. import kinematics
    from ..collision.fcl_geometry import FCLObjects

    idx = [i for i, l in enumerate(links) if l.shapes]
    if len(idx) < 2:
        return set()
    parent_joint = [-1] * len(links)
    for n, j in enumerate(joints):
        parent_joint[j.child] = n
    tmp = Robot(name="", file="", links=tuple(links), joints=tuple(joints), dofs=tuple(dofs), base_link=0,
                palm_link=0, approach=np.zeros(3), eigengrasps=np.zeros((0, len(dofs))),
                eigengrasp_origin=np.zeros(len(dofs)), no_collide=frozenset(), link_index={}, joint_index={},
                dof_index={}, parent_joint=tuple(parent_joint))
    q = kinematics.joint_values(tmp, np.array([d.default for d in dofs]))
    X = kinematics.forward_kinematics(tmp, q)
    flat = [(i, s) for i in idx for s in links[i].shapes]
    objs = FCLObjects([s for _, s in flat])
    owned = {}
    for k, (i, s) in enumerate(flat):
        objs.set_pose(k, X[i] @ s.X_LS)
        owned.setdefault(i, []).append(k)
    out = set()
    for a in idx:
        for b in idx:
            if a < b and frozenset((a, b)) not in skip and any(
                    objs.collide(p, q) for p in owned[a] for q in owned[b]):
                out.add(frozenset((a, b)))
    return out


def _eigengrasps(dofs: list, spec: HandSpec, err: _Errors):
    nd = len(dofs)
    names = [d.name for d in dofs]
    origin = np.array([d.default for d in dofs])
    if spec.eigengrasp_origin is not None:
        o = _dof_vector(spec.eigengrasp_origin, names, "eigengrasps.origin", err)
        if o is not None:
            origin = o
    rows = []
    for i, v in enumerate(spec.eigengrasps or ()):
        vv = _dof_vector(v, names, f"eigengrasps.vectors[{i}]", err)
        if vv is not None:
            if not np.linalg.norm(vv) > 1e-12:
                err.side(f"eigengrasps.vectors[{i}]", "must not be the zero vector")
                continue
            rows.append(vv / np.linalg.norm(vv))
    return (np.array(rows) if rows else np.zeros((0, nd))), origin


def _dof_vector(v, names: list, key: str, err: _Errors):
    """A DOF-space vector given as a list (DOF order) or a mapping {dof name: value} (others 0)."""
    if isinstance(v, dict):
        out = np.zeros(len(names))
        for k, x in v.items():
            if k not in names:
                err.side(key, f"no DOF '{k}'{did_you_mean(str(k), names)}")
                return None
            out[names.index(k)] = float(x)
        return out
    a = np.asarray(v, float)
    if a.shape != (len(names),):
        err.side(key, f"expected {len(names)} values (DOFs {', '.join(names)}), got {len(a)}")
        return None
    return a

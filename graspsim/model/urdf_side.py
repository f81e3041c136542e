"""Robots from URDF: a bare ``.urdf`` file, or a YAML *side file* naming one and adding what it lacks.

A side file (``robots/panda_hand.yaml``)::

    robot: panda_hand                       # the robot's name in graspsim
    urdf: pybullet_data://franka_panda/panda.urdf   # relative to this file, or NAME://path inside
                                            # the installed Python data package NAME
    root: panda_hand                        # import the subtree of this link (split arm + hand)
    exclude: [panda_hand]                   # or: drop these links' subtrees (the arm alone)
    palm: panda_hand                        # grasps are measured from this link (default: root)
    approach: [0, 0, 1]                     # in the palm frame (default +z)
    material: plastic                       # every link (default plastic) ...
    links: {panda_leftfinger: {material: rubber}}   # ... or per link
    density: 1000                           # kg/m^3 for links without <inertial>
    inertia: shapes                         # links' com and inertia from their collision shapes at
                                            # the URDF's masses (default 'urdf': as the URDF says)
    units: {length: m, angle: rad}          # for DOF velocity/default below (default SI)
    dofs:                                   # per DOF (= a moving, non-mimic URDF joint): overrides
      - {name: panda_finger_joint1, velocity: -0.05, kp: 2000, kd: 20, effort: 20}
    eigengrasps: {vectors: [[1]]}           # rows in DOF order, or {dof: value} mappings
    no_collide: [[a, b]]

Loaded descriptions are cached in memory, keyed by the files' paths and modification times (the
URDF, the side file and every mesh they use), so a second load of the same robot costs a few stat
calls.
"""
from __future__ import annotations

import threading
import warnings
from pathlib import Path

import numpy as np

from ..errors import ModelError, ModelWarning
from .description import Robot
from .fields import Reader
from .package_path import resolve_model_file
from .urdf import read_urdf
from .urdf_robot import HandSpec, build_robot
from .yamlio import YList, YMap, load_yaml

SIDE_KEYS = ["robot", "urdf", "root", "exclude", "palm", "approach", "material", "links", "density", "inertia", "units",
             "dofs", "eigengrasps", "no_collide", "description"]
SIDE_DOF_KEYS = ["name", "kind", "breakaway_torque", "kp", "kd", "effort", "velocity", "default"]

_CACHE: dict = {}
_LOCK = threading.Lock()


def is_urdf(path: str | Path) -> bool:
    return Path(path).suffix.lower() == ".urdf"


def load_urdf_robot(path: str | Path) -> Robot:
    """A bare URDF file as a robot: palm = root link, every DOF closing towards its upper limit."""
    path = Path(path)
    return _as_given(_cached(("urdf", _key(path)), lambda: build_robot(read_urdf(path), HandSpec())), path)


def load_side_file(path: str | Path, data=None) -> Robot:
    """A side file (YAML with ``robot`` and ``urdf`` keys) and the URDF it names."""
    path = Path(path)
    data = load_yaml(path) if data is None else data
    r = Reader(str(path))
    top = r.mapping(data, "", getattr(data, "line", 1))
    if top is None:
        r.raise_if_errors()
    r.check_keys(top, "", SIDE_KEYS, ["robot", "urdf"])
    r.read_units(top)
    uname = r.string(top, "urdf", "urdf", required=True)
    upath = None
    if uname is not None:
        upath, problem = resolve_model_file(uname, path)
        if upath is None:
            r.error(top.line_of("urdf"), "urdf", problem)
    r.raise_if_errors()
    key = ("side", _key(path), _key(upath))
    return _as_given(_cached(key, lambda: _build_from_side(r, top, path, upath)), path)


def _as_given(robot: Robot, path: Path) -> Robot:
    """The cached robot (keyed by the resolved path) named by the path this caller gave, so messages
    and batch fingerprints quote the caller's file, not that of whoever filled the cache."""
    if robot.file == str(path):
        return robot
    import dataclasses

    return dataclasses.replace(robot, file=str(path))


def _build_from_side(r: Reader, top: YMap, path: Path, upath: Path) -> Robot:
    doc = read_urdf(upath)
    where = {}

    def at(key: str, m: YMap, k: str, fld: str | None = None):
        where[key] = (str(path), m.line_of(k), fld or key)

    for k in top:
        at(str(k), top, k)
    name = r.string(top, "robot", "robot", required=True)
    root = r.string(top, "root", "root")
    exclude = ()
    if "exclude" in top:
        ex = top["exclude"]
        ex = YList([ex]) if isinstance(ex, str) else ex
        seq = r.sequence(ex, "exclude", top.line_of("exclude"))
        exclude = tuple(x for x in (seq or []) if isinstance(x, str))
        if seq is not None and len(exclude) != len(seq):
            r.error(top.line_of("exclude"), "exclude", "expected link names")
    palm = r.string(top, "palm", "palm")
    approach = r.vector(top, "approach", "approach", 3, nonzero=True, default=(0.0, 0.0, 1.0))
    material = r.string(top, "material", "material", default="plastic")
    density = r.number(top, "density", "density", positive=True, default=1000.0)
    inertia = r.string(top, "inertia", "inertia", default="urdf")
    if inertia not in ("urdf", "shapes"):
        r.error(top.line_of("inertia"), "inertia", f"expected 'urdf' (the URDF's inertials) or 'shapes' (from the "
                f"collision shapes at the URDF's masses), got {inertia!r}")
        inertia = "urdf"
    link_mats = {}
    if "links" in top:
        lm = r.mapping(top["links"], "links", top.line_of("links"))
        for ln in (lm or {}):
            f = f"links.{ln}"
            e = r.mapping(lm[ln], f, lm.line_of(ln))
            if e is None:
                continue
            r.check_keys(e, f, ["material"], ["material"])
            mat = r.string(e, "material", f)
            if mat is not None:
                link_mats[str(ln)] = mat
                at(f"links.{ln}", lm, ln)
    dofs = {}
    jtypes = {j.name: j.type for j in doc.robot.joints}
    if "dofs" in top:
        seq = r.sequence(top["dofs"], "dofs", top.line_of("dofs"))
        for i, dm in enumerate(seq or []):
            f = f"dofs[{i}]"
            dm = r.mapping(dm, f, seq.line_of(i))
            if dm is None:
                continue
            r.check_keys(dm, f, SIDE_DOF_KEYS, ["name"])
            dn = r.string(dm, "name", f, required=True)
            if dn is None:
                continue
            unit = "length" if jtypes.get(dn) == "prismatic" else "angle"
            over = {}
            kind = r.string(dm, "kind", f, choices=["rigid", "breakaway"])
            if kind is not None:
                over["kind"] = kind
            for k, kw in (("breakaway_torque", dict(nonnegative=True)), ("kp", dict(nonnegative=True)),
                          ("kd", dict(nonnegative=True)), ("effort", dict(positive=True)),
                          ("velocity", dict(unit=unit)), ("default", dict(unit=unit))):
                if k in dm:
                    v = r.number(dm, k, f, **kw)
                    if v is not None:
                        over[k] = v
                    where[f"dofs.{dn}.{k}"] = (str(path), dm.line_of(k), f"{f}.{k}")
            where[f"dofs.{dn}"] = (str(path), dm.line, f)
            if dn in dofs:
                r.error(dm.line_of("name"), f"{f}.name", f"DOF '{dn}' is listed twice")
            dofs[dn] = over
    eig = eig_origin = None
    if "eigengrasps" in top:
        em = r.mapping(top["eigengrasps"], "eigengrasps", top.line_of("eigengrasps"))
        if em is not None:
            r.check_keys(em, "eigengrasps", ["origin", "vectors"], ["vectors"])
            if "origin" in em:
                eig_origin = _plain(em["origin"])
                at("eigengrasps.origin", em, "origin")
            vs = r.sequence(em.get("vectors"), "eigengrasps.vectors", em.line_of("vectors")) if "vectors" in em else None
            eig = [_plain(v) for v in (vs or [])]
            for i in range(len(eig)):
                where[f"eigengrasps.vectors[{i}]"] = (str(path), vs.line_of(i), f"eigengrasps.vectors[{i}]")
    pairs = []
    if "no_collide" in top:
        ps = r.sequence(top["no_collide"], "no_collide", top.line_of("no_collide"))
        for i, p in enumerate(ps or []):
            if not (isinstance(p, YList) and len(p) == 2 and all(isinstance(x, str) for x in p)):
                r.error(ps.line_of(i), f"no_collide[{i}]", "expected a pair of link names [a, b]")
                continue
            pairs.append((p[0], p[1]))
            where[f"no_collide[{i}]"] = (str(path), ps.line_of(i), f"no_collide[{i}]")
    if eig is not None:
        for i, v in enumerate(eig):
            if not _is_vector(v):
                r.error(where[f"eigengrasps.vectors[{i}]"][1], f"eigengrasps.vectors[{i}]",
                        "expected a list of numbers (DOF order) or a mapping {dof: number}")
    if eig_origin is not None and not _is_vector(eig_origin):
        r.error(where["eigengrasps.origin"][1], "eigengrasps.origin",
                "expected a list of numbers (DOF order) or a mapping {dof: number}")
    r.raise_if_errors()
    spec = HandSpec(name=name, file=str(path), root=root, exclude=exclude, palm=palm, approach=tuple(approach),
                    material=material, link_materials=link_mats, density=float(density), inertia=inertia, dofs=dofs,
                    eigengrasps=eig, eigengrasp_origin=eig_origin, no_collide=tuple(pairs), where=where)
    return build_robot(doc, spec)


def _plain(v):
    if isinstance(v, dict):
        return {str(k): x for k, x in v.items()}
    return list(v) if isinstance(v, list) else v


def _is_vector(v) -> bool:
    num = lambda x: isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x)
    if isinstance(v, dict):
        return all(num(x) for x in v.values())
    return isinstance(v, list) and all(num(x) for x in v)


# -- cache ------------------------------------------------------------------------------------

def _key(path: Path | None):
    if path is None:
        return None
    p = Path(path).resolve()
    try:
        return (str(p), p.stat().st_mtime_ns)
    except OSError:
        raise ModelError("file not found", file=str(path)) from None


def _files_of(robot: Robot) -> list[str]:
    out = []
    for l in robot.links:
        out.extend(s.source for s in l.shapes if s.source)
        out.extend(v.mesh for v in l.visuals if v.mesh)
    return out


def _mtimes(files: list[str]):
    out = []
    for f in files:
        try:
            out.append(Path(f).stat().st_mtime_ns)
        except OSError:
            out.append(None)
    return tuple(out)


def _cached(key, build) -> Robot:
    """The robot for ``key`` from memory or disk if none of its files changed, else ``build()``."""
    from . import urdf_cache

    with _LOCK:
        hit = _CACHE.get(key)
    if hit is not None and _mtimes(hit[1]) == hit[2]:
        return hit[0]
    entry = urdf_cache.load(key, _mtimes)
    if entry is not None:
        _read_only(entry[0])
        for msg in entry[3]:
            warnings.warn(ModelWarning(msg), stacklevel=3)
    else:
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always", ModelWarning)
            robot = build()
        for w in rec:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        files = _files_of(robot)
        entry = (robot, files, _mtimes(files), [str(w.message) for w in rec if issubclass(w.category, ModelWarning)])
        urdf_cache.store(key, entry)
    with _LOCK:
        if len(_CACHE) > 64:
            _CACHE.clear()
        _CACHE[key] = entry[:3]
    return entry[0]


def _read_only(obj, _seen=None) -> None:
    """Make every array of an unpickled description read-only again (pickle drops the flag)."""
    import dataclasses

    _seen = set() if _seen is None else _seen
    if id(obj) in _seen:
        return
    _seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        obj.setflags(write=False)
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            _read_only(x, _seen)
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            _read_only(getattr(obj, f.name), _seen)

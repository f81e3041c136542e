"""The batch file: what to grasp with what, how to generate candidates, how to evaluate them.

A batch file is YAML, validated like the model files: every problem is reported as
``FILE:LINE: FIELD: PROBLEM`` (a :class:`graspsim.ModelError`, all problems of the file at once).
Paths resolve relative to the batch file.  Plain numbers are SI (m, rad) unless the file says
``units: {length: mm, angle: deg}``; a value may carry its unit (``'40 mm'``, ``'60 deg'``).

Two ways to name the hand and the objects::

    world: ../worlds/barrett_mug.yaml   # a world with an unmounted hand and the objects
    hand: barrett                       # the robot's name in it (default: its only robot)
    objects: [mug]                      # bodies of the world (default: every dynamic object)

    hand: ../robots/barrett.yaml        # a robot file ...
    objects: [../objects/mug.yaml, {file: ../objects/can.yaml, name: can}]
    table: true                         # ... each object alone with the hand, on a table
                                        #     (true: the shipped table, false: none, or an object file)

See docs/batch.md for the whole schema.  :func:`load_config` returns a :class:`BatchConfig`; its
:meth:`BatchConfig.to_dict` (plain JSON: SI units, absolute paths) is what worker processes and
Dask tasks receive, and :meth:`BatchConfig.config_hash` identifies the run for ``--resume``.
"""
from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ModelError, did_you_mean
from ..model import bounds as B
from ..model.fields import Reader
from ..model.package_path import data_package_path, has_scheme, resolve_model_file
from ..model.yamlio import YList, YMap, load_yaml
from .object_sets import expand_object_set, is_object_set

__all__ = ["BatchConfig", "BatchError", "load_config", "load_scene_world", "scene_model_files",
           "TOP_KEYS", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1
TOP_KEYS = ["batch", "description", "units", "seed", "world", "hand", "objects", "table", "candidates",
            "evaluation", "robustness", "output"]
CANDIDATE_KEYS = ["directions", "rolls", "standoffs", "preshapes", "target", "clearance", "planner"]
#: the approach grid's keys: not with ``planner``
GRID_KEYS = ["directions", "rolls", "standoffs", "preshapes", "target"]
PLANNER_KEYS = ["n", "seconds", "iterations", "seed", "energy", "restarts"]
ROBUSTNESS_KEYS = ["samples", "seed", "sigma_position", "sigma_rotation", "friction", "obstacles", "closing"]
DIRECTION_KEYS = ["sphere", "normals", "list", "within"]
EVALUATION_KEYS = ["mode", "closing", "gws", "approach_step", "max_attempts", "dynamic"]
#: ``evaluation.closing``: the static auto-grasp as is (GraspIt's), or centred (graspsim.control.centring)
CLOSINGS = ["static", "centred"]
DYNAMIC_KEYS = ["timeout", "lift_height", "lift_duration", "lift_hold"]
CLI_FILE = "<command line>"


class BatchError(ValueError):
    """A batch run cannot start or continue (e.g. ``--resume`` with a different configuration)."""


@dataclass
class BatchConfig:
    """A validated batch run (SI units, absolute paths).  Build it with :func:`load_config`."""

    name: str
    seed: int
    hand: str                       # robot name in every scene's world
    scenes: list                    # [{object, world_file | compose}] one per target object
    candidates: dict                # sphere, normals, list, within, rolls, standoffs, preshapes, target, clearance
    evaluation: dict                # mode, closing, gws, approach_step, max_attempts, dynamic{...}
    output: str | None = None       # default results database
    source: str | None = None       # the batch file, if any
    description: str = ""
    fingerprints: list = field(default_factory=list)   # per scene: sha256 of every model file it loads

    @property
    def objects(self) -> list[str]:
        return [s["object"] for s in self.scenes]

    @property
    def planner(self) -> dict | None:
        """The planner settings when the candidates come from :func:`graspsim.planner.plan_grasps`."""
        return self.candidates.get("planner")

    @property
    def robustness(self) -> dict | None:
        """The robustness settings (:func:`graspsim.grasp.robustness` keywords) when the batch stores it."""
        return self.evaluation.get("robustness")

    @property
    def dynamic(self) -> bool:
        return self.evaluation["mode"] == "dynamic"

    def to_dict(self) -> dict:
        """Plain, JSON-able form (what workers receive and the database stores)."""
        return {"schema": SCHEMA_VERSION, "name": self.name, "seed": self.seed, "hand": self.hand,
                "scenes": copy.deepcopy(self.scenes), "candidates": copy.deepcopy(self.candidates),
                "evaluation": copy.deepcopy(self.evaluation), "output": self.output, "source": self.source,
                "description": self.description, "fingerprints": list(self.fingerprints)}

    @classmethod
    def from_dict(cls, d: dict) -> "BatchConfig":
        return cls(name=d["name"], seed=int(d["seed"]), hand=d["hand"], scenes=copy.deepcopy(d["scenes"]),
                   candidates=copy.deepcopy(d["candidates"]), evaluation=copy.deepcopy(d["evaluation"]),
                   output=d.get("output"), source=d.get("source"), description=d.get("description", ""),
                   fingerprints=list(d.get("fingerprints", [])))

    def hash_view(self) -> dict:
        """What identifies the results: everything but paths, output, and retry policy; model files
        enter by their content (so a moved checkout still resumes, an edited mesh does not)."""
        ev = {k: v for k, v in self.evaluation.items() if k != "max_attempts"}
        if ev["mode"] != "dynamic":
            ev.pop("dynamic", None)
        if ev.get("closing") == "static":
            ev.pop("closing")            # the default: runs stored before the key existed still resume
        scenes = []
        for s in self.scenes:
            v = {"object": s["object"]}
            if "compose" in s:
                c = s["compose"]
                v["compose"] = {"object_name": c["object_name"], "object_z": c["object_z"],
                                "table": c["table_file"] is not None, "table_z": c["table_z"]}
            scenes.append(v)
        return {"schema": SCHEMA_VERSION, "seed": self.seed, "hand": self.hand, "scenes": scenes,
                "models": self.fingerprints, "candidates": self.candidates, "evaluation": ev}

    def config_hash(self) -> str:
        text = json.dumps(self.hash_view(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def with_mode(self, mode: str) -> "BatchConfig":
        c = BatchConfig.from_dict(self.to_dict())
        c.evaluation["mode"] = mode
        return c


# -- reading ----------------------------------------------------------------------------------------

def _ymap(obj, line=None):
    """Plain dicts/lists (Python API, command line) -> YMap/YList without line numbers."""
    if isinstance(obj, (YMap, YList)):
        return obj
    if isinstance(obj, dict):
        m = YMap()
        m.line = line
        m.key_lines = {}
        for k, v in obj.items():
            m[k] = _ymap(v, line)
            m.key_lines[k] = line
        return m
    if isinstance(obj, (list, tuple)):
        s = YList(_ymap(v, line) for v in obj)
        s.line = line
        s.item_lines = [line] * len(s)
        return s
    if isinstance(obj, np.ndarray):
        return _ymap(obj.tolist(), line)
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _integer(r: Reader, m: YMap, key: str, field: str, *, default: int, minimum: int = 0) -> int:
    if key not in m:
        return default
    v = m[key]
    f = f"{field}.{key}" if field else key
    if isinstance(v, bool) or not isinstance(v, int):
        r.error(m.line_of(key), f, f"expected a whole number, got {v!r}")
        return default
    if v < minimum:
        r.error(m.line_of(key), f, f"must be >= {minimum}, got {v}")
        return default
    return int(v)


def _lengths_or_angles(r: Reader, m: YMap, key: str, field: str, unit: str, *, default: list,
                       nonnegative: bool = False, bounds: tuple | None = None) -> list:
    """A number or a list of numbers (with units), each within ``bounds`` if given."""
    if key not in m:
        return list(default)
    v = m[key]
    f = f"{field}.{key}"
    items = v if isinstance(v, YList) else YList([v])
    if isinstance(v, YList):
        lines = [v.line_of(i) for i in range(len(v))]
    else:
        lines = [m.line_of(key)] * 1
    if not len(items):
        r.error(m.line_of(key), f, "expected at least one value")
        return list(default)
    out = []
    for i, x in enumerate(items):
        s = r.scalar(x, f"{f}[{i}]" if isinstance(v, YList) else f, lines[i], unit)
        if s is None:
            continue
        if nonnegative and s < 0:
            r.error(lines[i], f"{f}[{i}]" if isinstance(v, YList) else f, f"must be >= 0, got {x}")
            continue
        if bounds is not None and not r.in_bounds(s, bounds, f"{f}[{i}]" if isinstance(v, YList) else f, lines[i]):
            continue
        out.append(float(s))
    return out


def _resolve(base: Path, name: str) -> Path:
    """A file named in a batch file: relative to it, or ``NAME://path`` inside an installed Python
    data package (``pybullet_data://duck_vhacd.urdf``, as in model files)."""
    if has_scheme(name):
        p, _ = resolve_model_file(name, base / "-")
        if p is not None:
            return p.resolve()
        q = data_package_path(name)
        return q if q is not None else base / name.replace("://", "/", 1)
    return (base / name).resolve()


def _not_found(what: str, name: str, p: Path) -> str:
    """The problem text for a file a batch file names that is not there."""
    if has_scheme(name):        # (resolve_model_file's own words: the package is missing, or the file)
        return f"{what} {resolve_model_file(name, p)[1]}"
    return f"{what} '{name}' not found ({p})"


def load_config(source, *, overrides: dict | None = None, base_dir=None) -> BatchConfig:
    """Read and validate a batch file (a path) or a batch mapping (a dict, as in the file).

    ``overrides`` (a dict with the file's keys; nested mappings merge) replaces parts of the file:
    the command line's flags go through it.  Relative paths in a dict resolve against
    ``base_dir`` (default: the current directory).  Raises :class:`graspsim.ModelError` listing every
    problem as FILE:LINE: FIELD: PROBLEM (worlds and models named by the batch file are loaded and
    checked too: hand and object names, mounted hands, preshape DOFs and their limits).
    """
    if source is None:
        data, file, base = _ymap({}), CLI_FILE, Path(base_dir or ".").resolve()
    elif isinstance(source, dict) and not isinstance(source, YMap):
        data, file, base = _ymap(source), "<batch dict>", Path(base_dir or ".").resolve()
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        data, file, base = load_yaml(path), str(path), path.resolve().parent
    else:
        raise BatchError(f"a batch configuration is a file path, a dict or a BatchConfig, got {type(source).__name__}")
    if overrides:
        if not isinstance(data, YMap):
            data = _ymap({})
        _merge(data, _ymap(overrides))
    r = Reader(file)
    top = r.mapping(data, "", getattr(data, "line", 1))
    if top is None:
        r.raise_if_errors()
    r.check_keys(top, "", TOP_KEYS)
    r.read_units(top)
    name = r.string(top, "batch", "batch", default=None)
    if name is None:
        if file not in (CLI_FILE, "<batch dict>"):
            name = Path(file).stem
        elif isinstance(top.get("world"), str):
            name = Path(top["world"]).stem
        elif isinstance(top.get("hand"), str):
            name = Path(top["hand"]).stem
        else:
            name = "batch"
    description = r.string(top, "description", "description", default="") or ""
    seed = _integer(r, top, "seed", "", default=0)

    # -- hand and objects ----------------------------------------------------------------------
    scenes: list[dict] = []
    hand = None
    world_file = None
    if "world" in top:
        wf = r.string(top, "world", "world")
        if wf is not None:
            world_file = _resolve(base, wf)
            if not world_file.is_file():
                r.error(top.line_of("world"), "world", _not_found("world file", wf, world_file))
                world_file = None
        if "table" in top:
            r.error(top.line_of("table"), "table", "'table' is for a hand file with object files; with 'world' "
                    "the world file places its obstacles")
    elif "hand" not in top:
        r.error(top.line or None, "hand", "missing required key 'hand' (a robot file, or with 'world' "
                "the robot's name)")
    cand = _read_candidates(r, top, seed)
    evaluation = _read_evaluation(r, top)
    rob = _read_robustness(r, top, seed)
    if rob is not None:
        evaluation["robustness"] = rob       # only when given: other runs keep their hash
    output = None
    if "output" in top:
        o = r.string(top, "output", "output")
        if o is not None:
            output = str(_resolve(base, o))
    r.raise_if_errors()          # structure first: the worlds are loaded only for a sound file

    if world_file is not None:
        scenes, hand = _world_scenes(r, top, world_file)
    else:
        scenes, hand = _compose_scenes(r, top, base)
    r.raise_if_errors()

    cfg = BatchConfig(name=name, seed=seed, hand=hand, scenes=scenes, candidates=cand, evaluation=evaluation,
                      output=output, source=str(Path(file).resolve()) if file not in (CLI_FILE, "<batch dict>") else None,
                      description=description)
    # load every scene once: checks the hand (unmounted), the objects, the preshapes; fingerprints
    for i, sc in enumerate(cfg.scenes):
        try:
            world = load_scene_world(sc)
        except ModelError as e:
            where = top.line_of("world") if "world" in top else top.line_of("objects")
            errs = list(getattr(e, "errors", [e]))
            r.errors.extend(errs)
            r.error(where, "world" if "world" in top else f"objects[{i}]",
                    "the world of this batch is invalid (see the errors above)")
            r.raise_if_errors()
        _check_scene(r, top, cfg, sc, world)
        cfg.fingerprints.append(_fingerprint(world))
    r.raise_if_errors()
    return cfg


def _merge(dst: YMap, src: YMap) -> None:
    for k, v in src.items():
        if isinstance(v, YMap) and isinstance(dst.get(k), YMap):
            _merge(dst[k], v)
        else:
            dst[k] = v
            dst.key_lines[k] = None


def _read_planner(r: Reader, c: YMap, seed: int) -> dict | None:
    """``candidates.planner``: the settings of :func:`graspsim.planner.plan_grasps` per object."""
    f = "candidates.planner"
    m = r.mapping(c["planner"], f, c.line_of("planner"))
    if m is None:
        return None
    r.check_keys(m, f, PLANNER_KEYS)
    for k in GRID_KEYS:
        if k in c:
            r.error(c.line_of(k), f"candidates.{k}", "the approach grid's keys do not go with 'candidates.planner' "
                    "(the planner chooses the hand's pose and preshape); remove one of them")
    out = {"n": _integer(r, m, "n", f, default=10, minimum=1),
           "seconds": r.number(m, "seconds", f, default=None, positive=True) if "seconds" in m else None,
           "iterations": _integer(r, m, "iterations", f, default=0, minimum=1) if "iterations" in m else None,
           "seed": _integer(r, m, "seed", f, default=seed),
           "energy": r.string(m, "energy", f, default="contact", choices=["contact", "quality"]),
           "restarts": _integer(r, m, "restarts", f, default=4, minimum=1)}
    if out["seconds"] is None and out["iterations"] is None:
        out["iterations"] = 2000           # plan_grasps' default budget: deterministic
    return out


def _read_robustness(r: Reader, top: YMap, seed: int) -> dict | None:
    """``robustness``: :func:`graspsim.grasp.robustness` of every force-closure candidate (SI, degrees for
    ``sigma_rotation`` as robustness() takes it)."""
    if "robustness" not in top:
        return None
    f = "robustness"
    m = r.mapping(top["robustness"], f, top.line_of("robustness"))
    if m is None:
        return None
    r.check_keys(m, f, ROBUSTNESS_KEYS)
    rot = r.number(m, "sigma_rotation", f, default=math.radians(5.0), unit="angle", nonnegative=True,
                   bounds=(0.0, math.pi, "rad", False))
    fr = r.number(m, "friction", f, default=0.2, nonnegative=True)
    if fr is not None and fr >= 1:
        r.error(m.line_of("friction"), f"{f}.friction", f"must be in [0, 1) (a relative spread), got {fr}")
    return {"samples": _integer(r, m, "samples", f, default=20, minimum=1),
            "seed": _integer(r, m, "seed", f, default=seed),
            "sigma_position": r.number(m, "sigma_position", f, default=0.005, unit="length", nonnegative=True),
            "sigma_rotation": math.degrees(rot) if rot is not None else 5.0,
            "friction": fr,
            "obstacles": r.string(m, "obstacles", f, default="ignore", choices=["fail", "ignore"]),
            "closing": r.string(m, "closing", f, default="centred", choices=["static", "centred", "dynamic"])}


def _read_candidates(r: Reader, top: YMap, seed: int = 0) -> dict:
    out = {"sphere": 0, "normals": 0, "list": [], "within": None, "rolls": [0.0], "standoffs": [0.0],
           "preshapes_raw": [], "preshapes": [{}], "target": "com", "clearance": 0.01}
    if "candidates" not in top:
        out["sphere"] = 32
        return out
    c = r.mapping(top["candidates"], "candidates", top.line_of("candidates"))
    if c is None:
        return out
    r.check_keys(c, "candidates", CANDIDATE_KEYS)
    f = "candidates"
    if "planner" in c:
        out["planner"] = _read_planner(r, c, seed)
        out["clearance"] = r.number(c, "clearance", f, default=0.01, unit="length", nonnegative=True)
        return out
    if "directions" in c:
        d = r.mapping(c["directions"], f"{f}.directions", c.line_of("directions"))
        if d is not None:
            r.check_keys(d, f"{f}.directions", DIRECTION_KEYS)
            out["sphere"] = _integer(r, d, "sphere", f"{f}.directions", default=0)
            out["normals"] = _integer(r, d, "normals", f"{f}.directions", default=0)
            if "list" in d:
                seq = r.sequence(d["list"], f"{f}.directions.list", d.line_of("list"))
                for i, v in enumerate(seq or []):
                    vec = r.vector_value(v, f"{f}.directions.list[{i}]", seq.line_of(i), 3, nonzero=True)
                    if vec is not None:
                        out["list"].append([float(x) for x in vec / np.linalg.norm(vec)])
            if "within" in d:
                w = r.mapping(d["within"], f"{f}.directions.within", d.line_of("within"))
                if w is not None:
                    r.check_keys(w, f"{f}.directions.within", ["axis", "angle"], ["axis", "angle"])
                    ax = r.vector(w, "axis", f"{f}.directions.within", 3, nonzero=True)
                    ang = r.number(w, "angle", f"{f}.directions.within", unit="angle", positive=True,
                                   bounds=B.HALF_TURN)
                    if ax is not None and ang is not None:
                        out["within"] = {"axis": [float(x) for x in ax / np.linalg.norm(ax)], "angle": float(ang)}
            if out["sphere"] + out["normals"] + len(out["list"]) == 0:
                r.error(c.line_of("directions"), f"{f}.directions",
                        "no directions: give 'sphere: N', 'normals: N' and/or a 'list' of directions")
    else:
        out["sphere"] = 32
    if "rolls" in c:
        v = c["rolls"]
        if isinstance(v, int) and not isinstance(v, bool):
            if v < 1:
                r.error(c.line_of("rolls"), f"{f}.rolls", f"must be >= 1 (a count) or a list of angles, got {v}")
            else:
                out["rolls"] = [2.0 * math.pi * k / v for k in range(v)]
        else:
            out["rolls"] = _lengths_or_angles(r, c, "rolls", f, "angle", default=[0.0], bounds=B.TURN)
    out["standoffs"] = _lengths_or_angles(r, c, "standoffs", f, "length", default=[0.0], nonnegative=True)
    if "preshapes" in c:
        seq = r.sequence(c["preshapes"], f"{f}.preshapes", c.line_of("preshapes"))
        if seq is not None and not len(seq):
            r.error(c.line_of("preshapes"), f"{f}.preshapes", "expected at least one preshape (use {} for the "
                    "world's DOF values)")
        for i, p in enumerate(seq or []):
            pm = r.mapping(p, f"{f}.preshapes[{i}]", seq.line_of(i))
            if pm is not None:
                out["preshapes_raw"].append((pm, f"{f}.preshapes[{i}]"))
    out["target"] = r.string(c, "target", f, default="com", choices=["com", "center"])
    out["clearance"] = r.number(c, "clearance", f, default=0.01, unit="length", nonnegative=True)
    return out


def _read_evaluation(r: Reader, top: YMap) -> dict:
    out = {"mode": "static", "closing": "static", "gws": "L1", "approach_step": 0.01, "max_attempts": 3,
           "dynamic": {"timeout": 3.0, "lift_height": 0.1, "lift_duration": 1.0, "lift_hold": 0.5}}
    if "evaluation" not in top:
        return out
    e = r.mapping(top["evaluation"], "evaluation", top.line_of("evaluation"))
    if e is None:
        return out
    f = "evaluation"
    r.check_keys(e, f, EVALUATION_KEYS)
    out["mode"] = r.string(e, "mode", f, default="static", choices=["static", "dynamic"])
    out["closing"] = r.string(e, "closing", f, default="static", choices=CLOSINGS)
    if out["closing"] == "centred" and out["mode"] == "dynamic":
        # the dynamic grasp pushes the object to the fingers' middle itself; centring the static
        # closing instead would report a static grasp from another pose than the dynamic one's
        r.error(e.line_of("closing"), f"{f}.closing", "'centred' is for mode: static (it stands in for the push "
                "of a dynamic closing, which mode: dynamic simulates from the approach pose); remove it or set "
                "it to static")
    out["gws"] = r.string(e, "gws", f, default="L1", choices=["L1", "Linf"])
    out["approach_step"] = r.number(e, "approach_step", f, default=0.01, unit="length", positive=True)
    out["max_attempts"] = _integer(r, e, "max_attempts", f, default=3, minimum=1)
    if "dynamic" in e:
        dm = r.mapping(e["dynamic"], f"{f}.dynamic", e.line_of("dynamic"))
        if dm is not None:
            r.check_keys(dm, f"{f}.dynamic", DYNAMIC_KEYS)
            d = out["dynamic"]
            d["timeout"] = r.number(dm, "timeout", f"{f}.dynamic", default=3.0, positive=True)
            d["lift_height"] = r.number(dm, "lift_height", f"{f}.dynamic", default=0.1, unit="length", positive=True)
            d["lift_duration"] = r.number(dm, "lift_duration", f"{f}.dynamic", default=1.0, positive=True)
            d["lift_hold"] = r.number(dm, "lift_hold", f"{f}.dynamic", default=0.5, nonnegative=True)
    return out


def _world_scenes(r: Reader, top: YMap, world_file: Path):
    from ..model.loader import load_world as load_world_description

    try:
        desc = load_world_description(world_file)
    except ModelError as e:
        r.errors.extend(getattr(e, "errors", [e]))
        r.error(top.line_of("world"), "world", f"world file '{top['world']}' is invalid (see the errors above)")
        return [], None
    robots = [x.name for x in desc.robots]
    hand = r.string(top, "hand", "hand", default=None)
    if hand is None:
        if len(robots) != 1:
            r.error(top.line, "hand", f"the world has {len(robots)} robots ({', '.join(robots) or 'none'}); "
                    "name the hand with 'hand: NAME'")
            return [], None
        hand = robots[0]
    elif hand not in robots:
        r.error(top.line_of("hand"), "hand", f"world '{desc.name}' has no robot '{hand}'{did_you_mean(hand, robots)}; "
                f"robots: {', '.join(robots) or 'none'}")
        return [], None
    dynamic = [b.name for b in desc.bodies if b.dynamic]
    names = []
    if "objects" in top:
        seq = top["objects"]
        if isinstance(seq, str):
            seq = YList([seq]); seq.line = top.line_of("objects"); seq.item_lines = [seq.line]
        seq = r.sequence(seq, "objects", top.line_of("objects"))
        for i, o in enumerate(seq or []):
            if not isinstance(o, str):
                r.error(seq.line_of(i), f"objects[{i}]", f"with 'world', objects are body names of the world, got {o!r}")
                continue
            bodies = [b.name for b in desc.bodies]
            if o not in bodies:
                r.error(seq.line_of(i), f"objects[{i}]", f"world '{desc.name}' has no body '{o}'"
                        f"{did_you_mean(o, bodies)}; objects: {', '.join(dynamic) or 'none'}")
            elif o not in dynamic:
                r.error(seq.line_of(i), f"objects[{i}]", f"'{o}' is a static obstacle; grasp targets must be objects "
                        f"(dynamic bodies): {', '.join(dynamic) or 'none'}")
            elif o in names:
                r.error(seq.line_of(i), f"objects[{i}]", f"'{o}' is listed twice")
            else:
                names.append(o)
    else:
        names = dynamic
        if not names:
            r.error(top.line_of("world"), "world", f"world '{desc.name}' has no objects (dynamic bodies) to grasp")
    return [{"object": n, "world_file": str(world_file)} for n in names], hand


def _compose_scenes(r: Reader, top: YMap, base: Path):
    from .. import data_path, load_robot
    from ..model.loader import load_object

    hf = r.string(top, "hand", "hand")
    hand = None
    hand_file = None
    if hf is not None:
        hand_file = _resolve(base, hf)
        if not hand_file.is_file():
            r.error(top.line_of("hand"), "hand", _not_found("robot file", hf, hand_file) + "; without 'world', "
                    "'hand' names a robot file")
            hand_file = None
        else:
            try:
                hand = load_robot(hand_file).name
            except ModelError as e:
                r.errors.extend(getattr(e, "errors", [e]))
                r.error(top.line_of("hand"), "hand", f"robot file '{hf}' is invalid (see the errors above)")
                hand_file = None
    table_file = str(data_path("objects", "table.yaml"))
    if "table" in top:
        t = top["table"]
        if t is False:
            table_file = None
        elif t is True:
            pass
        elif isinstance(t, str):
            p = _resolve(base, t)
            if not p.is_file():
                r.error(top.line_of("table"), "table", _not_found("object file", t, p))
            table_file = str(p)
        else:
            r.error(top.line_of("table"), "table", f"expected true, false or an object file, got {t!r}")
    table_z = 0.0
    if table_file is not None:
        try:
            tab = load_object(table_file, need_mass=False)
            table_z = -float(tab.shape.vertices_in(np.eye(4))[:, 2].max())
        except ModelError as e:
            r.errors.extend(getattr(e, "errors", [e]))
            r.error(top.line_of("table"), "table", "the table's object file is invalid (see the errors above)")
    scenes = []
    if "objects" not in top:
        r.error(top.line, "objects", "missing required key 'objects' (object files to grasp)")
        return [], hand
    seq = top["objects"]
    if isinstance(seq, (str, YMap)):     # one file, or one object set
        seq = YList([seq]); seq.line = top.line_of("objects"); seq.item_lines = [seq.line]
    seq = r.sequence(seq, "objects", top.line_of("objects"))
    if seq is not None and not len(seq):
        r.error(top.line_of("objects"), "objects", "expected at least one object file")
    used = set()
    entries = []            # (field, item, line, from a set): object sets expand to their files
    for i, o in enumerate(seq or []):
        if is_object_set(o):
            entries.extend((f"objects[{i}]", str(p), o.line, True)
                           for p in expand_object_set(r, o, f"objects[{i}]", base))
        else:
            entries.append((f"objects[{i}]", o, seq.line_of(i), False))
    for f, o, line, from_set in entries:
        if isinstance(o, str):
            fname, oname = o, None
        else:
            om = r.mapping(o, f, line)
            if om is None:
                continue
            r.check_keys(om, f, ["file", "name"], ["file"])
            fname = r.string(om, "file", f)
            oname = r.string(om, "name", f, default=None)
            line = om.line_of("file")
            if fname is None:
                continue
        p = _resolve(base, fname)
        if not p.is_file():
            r.error(line, f, _not_found("object file", fname, p))
            continue
        try:
            obj = load_object(p)
        except ModelError as e:
            r.errors.extend(getattr(e, "errors", [e]))
            r.error(line, f, f"object file '{fname}' is invalid (see the errors above)")
            continue
        oname = oname or obj.name
        if from_set:        # a set may repeat a name (scan.ply in two folders): number the repeats
            stem, k = oname, 2
            while oname in used or oname in ("table", hand):
                oname, k = f"{stem}_{k}", k + 1
        if oname in used or oname == "table" or oname == hand:
            r.error(line, f, f"duplicate name '{oname}'; give the object another 'name'")
            continue
        used.add(oname)
        z = -float(obj.shape.vertices_in(np.eye(4))[:, 2].min()) if table_file is not None else 0.0
        scenes.append({"object": oname, "compose": {"hand_file": str(hand_file) if hand_file else None,
                                                    "object_file": str(p), "object_name": oname, "object_z": z,
                                                    "table_file": table_file, "table_z": table_z}})
    return scenes, hand


def _check_scene(r: Reader, top: YMap, cfg: BatchConfig, sc: dict, world) -> None:
    h = world.robots[cfg.hand]
    where = top.line_of("hand")
    if h.instance.mount is not None and not cfg.planner:
        pi, _, _ = h.instance.mount
        r.error(where, "hand", f"robot '{cfg.hand}' is mounted on '{world.description.robots[pi].name}'; batch "
                "evaluation moves the hand freely and needs an unmounted hand (a hand-alone world, or a robot file "
                "with object files; or planner candidates, which plan and evaluate the hand alone, the arm left out) "
                "with object files)")
        return
    # preshapes: DOF names, units from the DOF kind, limits
    raw = cfg.candidates.pop("preshapes_raw", None)
    if raw is None:
        return       # already read for an earlier scene (same hand)
    pres = []
    desc = h.description
    for pm, f in raw:
        vals = {}
        for dn in pm:
            if dn not in desc.dof_index:
                r.error(pm.line_of(dn), f"{f}.{dn}", f"robot '{cfg.hand}' has no DOF '{dn}'"
                        f"{did_you_mean(str(dn), desc.dof_index)}; DOFs: {', '.join(desc.dof_names)}")
                continue
            k = desc.dof_index[dn]
            unit = "angle" if desc.joints[desc.dofs[k].joints[0]].kind == "revolute" else "length"
            v = r.number(pm, dn, f, unit=unit)
            if v is None:
                continue
            lo, hi = desc.dofs[k].limits
            if not (lo - 1e-9 <= v <= hi + 1e-9):
                u, s = ("deg", 180 / math.pi) if unit == "angle" else ("mm", 1e3)
                r.error(pm.line_of(dn), f"{f}.{dn}", f"{v * s:.4g} {u} is outside the DOF limits "
                        f"[{lo * s + 0.0:.4g}, {hi * s + 0.0:.4g}] {u}")
                continue
            vals[str(dn)] = float(v)
        pres.append(vals)
    if raw:
        cfg.candidates["preshapes"] = pres


# -- scene worlds -------------------------------------------------------------------------------------

def compose_world_yaml(c: dict, hand_name: str | None = None) -> str:
    """The world file of a hand-file + object-file scene (absolute paths).  The hand's base is
    fixed (carried by an invisible arm: the dynamic grasp and the lift test need that); batch
    evaluation adds the base-against-obstacle pairs the dynamics leaves out."""
    import yaml

    robots = [{"file": c["hand_file"], "pose": {"xyz": [0.0, 0.0, 10.0]}}]
    if hand_name:
        robots[0]["name"] = hand_name
    w = {"world": f"batch_{c['object_name']}", "robots": robots,
         "objects": [{"name": c["object_name"], "file": c["object_file"], "pose": {"xyz": [0.0, 0.0, c["object_z"]]}}]}
    if c["table_file"] is not None:
        w["obstacles"] = [{"name": "table", "file": c["table_file"], "pose": {"xyz": [0.0, 0.0, c["table_z"]]}}]
    return yaml.safe_dump(w, sort_keys=False)


def load_scene_world(scene: dict):
    """The :class:`graspsim.World` of one scene (a world file, or a composed world written to a
    temporary file and loaded through the public :func:`graspsim.load_world`)."""
    from .. import load_world

    if "world_file" in scene:
        return load_world(scene["world_file"])
    text = compose_world_yaml(scene["compose"])
    with tempfile.TemporaryDirectory(prefix="graspsim-batch-") as d:
        p = Path(d) / f"batch_{scene['compose']['object_name']}.yaml"
        p.write_text(text, encoding="utf-8")
        return load_world(p)


def scene_model_files(world) -> list[str]:
    """Every model file a loaded world was built from (world file, robot and object files, meshes)."""
    files = set()
    d = world.description
    if d.file and Path(d.file).is_file() and "graspsim-batch-" not in d.file:
        files.add(d.file)
    for ri in d.robots:
        files.add(ri.robot.file)
        files.update(ri.robot.sources)          # the URDF a side file names
        for l in ri.robot.links:
            files.update(s.source for s in l.shapes if s.source)
    for b in d.bodies:
        files.add(b.obj.file)
        files.update(s.source for s in b.obj.shapes if s.source)
    return sorted({str(Path(f).resolve()) for f in files if f and Path(f).is_file()})   # one name per file


def _fingerprint(world) -> list:
    out = []
    for f in scene_model_files(world):
        out.append([Path(f).name, hashlib.sha256(Path(f).read_bytes()).hexdigest()])
    return sorted(out)

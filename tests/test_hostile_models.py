"""Hostile model files (issue #15): every one ends quickly in a clean, one-line-per-problem ModelError.

Each case builds a file (big ones here in tmp_path, never committed) and names words the error must
contain.  ``test_hostile_case`` loads it in-process; ``test_cli_on_every_hostile_file`` runs
``graspsim validate`` on all of them at once (exit 2, no traceback, every file named, bounded time
and memory).  ``test_fuzz_mutated_models`` mutates the shipped robots, objects and worlds (values,
keys, types, nesting, raw text) and asserts that every outcome is a model or a clean ModelError.
"""
from __future__ import annotations

import copy
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import graspsim
from graspsim import ModelError
from graspsim.model.loader import load_any

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "models" / "hostile"
CONTROL = re.compile(r"[\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")

OBJ = "object: o\nshape: {box: [0.1, 0.1, 0.1]}\nmass: 1\n"
ROBOT = "robot: r\nlinks:\n  - {name: a, shape: {sphere: 0.05}, mass: 1}\n"
WORLD = "world: w\n"


def _w(tmp: Path, name: str, text: str | bytes) -> Path:
    p = tmp / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return p


def _world_with_robot_file(tmp: Path, target: str) -> Path:
    return _w(tmp, "w.yaml", f"world: w\nrobots:\n  - file: {target}\n")


def _fifo(tmp: Path, name: str) -> Path:
    p = tmp / name
    os.mkfifo(p)
    return p


def _link(tmp: Path, name: str, target: str) -> Path:
    p = tmp / name
    p.symlink_to(target)
    return p


def _bomb(levels: int) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for k in range(1, levels + 1):
        lines.append(f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 9) + "]")
    return "object: o\n" + "\n".join(lines) + "\n"


# name -> (builder(tmp) -> path to validate, words every message of the error must... the first must contain)
CASES = {
    # -- hangs, crashes and memory blow-ups of the issue ---------------------------------------
    "int_400_digits": (lambda t: _w(t, "o.yaml", OBJ.replace("mass: 1", "mass: " + "9" * 400)),
                       ["mass", "beyond the floating-point range"]),
    "int_5000_digits": (lambda t: _w(t, "o.yaml", OBJ.replace("mass: 1", "mass: " + "7" * 5000)),
                        ["mass", "beyond the floating-point range"]),
    "int_400_digits_in_vector": (lambda t: _w(t, "o.yaml", OBJ.replace("0.1, 0.1, 0.1", "0.1, 1" + "0" * 399 + ", 0.1")),
                                 ["shape.box[1]", "beyond the floating-point range"]),
    "nesting_900": (lambda t: _w(t, "o.yaml", OBJ + "color: " + "[" * 900 + "]" * 900 + "\n"),
                    ["nested more than 32 levels"]),
    "nesting_block_900": (lambda t: _w(t, "o.yaml", OBJ + "".join(" " * k + f"k{k}:\n" for k in range(900))
                                       + " " * 900 + "v: 1\n"), ["nested more than 32 levels"]),
    "self_alias": (lambda t: _w(t, "o.yaml", OBJ + "color: &a [*a]\n"), ["alias", "inside the node it names"]),
    "self_alias_map": (lambda t: _w(t, "o.yaml", OBJ + "x: &a {y: *a}\n"), ["inside the node it names"]),
    "billion_laughs_9": (lambda t: _w(t, "o.yaml", _bomb(9)), ["more than 200000 nodes", "alias bomb"]),
    "billion_laughs_6": (lambda t: _w(t, "o.yaml", _bomb(6)), ["more than 200000 nodes"]),
    "mesh_path_6000": (lambda t: _w(t, "o.yaml", OBJ.replace("{box: [0.1, 0.1, 0.1]}", "{mesh: " + "m" * 6000 + ".stl}")),
                       ["shape.mesh", "longer than 4096 characters"]),
    "mesh_name_component_300": (lambda t: _w(t, "o.yaml", OBJ.replace("{box: [0.1, 0.1, 0.1]}", "{mesh: " + "m" * 300 + ".stl}")),
                                ["shape.mesh", "file name too long"]),
    "comments_50MB": (lambda t: _w(t, "o.yaml", ("# " + "c" * 98 + "\n") * (1 << 19)),
                      ["larger than the 1 MiB limit"]),
    "list_50MB": (lambda t: _w(t, "o.yaml", "- [1.0, 2.0, 3.0]\n" * (50 << 20 >> 4)), ["larger than the 1 MiB limit"]),
    "robot_file_fifo": (lambda t: (_fifo(t, "r.yaml"), _world_with_robot_file(t, "r.yaml"))[1], ["found a FIFO"]),
    "validate_fifo": (lambda t: _fifo(t, "x.yaml"), ["found a FIFO"]),
    "robot_file_dev_zero": (lambda t: _world_with_robot_file(t, "/dev/zero"), ["robots[0].file", "end in .yaml"]),
    "robot_file_dev_zero_link": (lambda t: (_link(t, "z.yaml", "/dev/zero"), _world_with_robot_file(t, "z.yaml"))[1],
                                 ["found a device"]),
    "robot_file_urandom_link": (lambda t: (_link(t, "u.yaml", "/dev/urandom"), _world_with_robot_file(t, "u.yaml"))[1],
                                ["found a device"]),
    "validate_dev_zero": (lambda t: Path("/dev/zero"), ["found a device"]),
    "robot_file_directory": (lambda t: ((t / "d.yaml").mkdir(), _world_with_robot_file(t, "d.yaml"))[1],
                             ["found a directory"]),
    "mesh_fifo": (lambda t: (_fifo(t, "m.stl"), _w(t, "o.yaml", OBJ.replace("{box: [0.1, 0.1, 0.1]}", "{mesh: m.stl}")))[1],
                  ["shape.mesh", "found a FIFO"]),
    "mesh_dev_zero": (lambda t: (_link(t, "z.stl", "/dev/zero"),
                                 _w(t, "o.yaml", OBJ.replace("{box: [0.1, 0.1, 0.1]}", "{mesh: z.stl}")))[1],
                      ["shape.mesh", "found a device"]),
    # a bare mesh file (no YAML: its convex hull stands in for an open mesh's mass properties)
    "mesh_one_triangle": (lambda t: _w(t, "m.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"),
                          ["m.obj", "mesh is flat", "no volume"]),       # (a bare QhullError before)
    "mesh_flat_square": (lambda t: _w(t, "m.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 1 2 3\nf 2 4 3\n"),
                         ["m.obj", "mesh is flat"]),
    # -- physically meaningless values: refused with the range named ---------------------------
    "mass_1e300": (lambda t: _w(t, "o.yaml", OBJ.replace("mass: 1", "mass: 1e300")), ["mass", "[1e-06, 10000] kg"]),
    "density_tiny": (lambda t: _w(t, "o.yaml", OBJ.replace("mass: 1", "density: 1e-30")), ["density", "kg/m^3"]),
    "dt_1e300": (lambda t: _w(t, "w.yaml", WORLD + "dt: 1e300\n"), ["dt", "(0, 1] s"]),
    "dt_zero": (lambda t: _w(t, "w.yaml", WORLD + "dt: 0\n"), ["dt", "> 0"]),
    "gravity_1e300": (lambda t: _w(t, "w.yaml", WORLD + "gravity: [0, 0, 1e300]\n"), ["gravity[2]", "[-100, 100] m/s^2"]),
    "gravity_magnitude": (lambda t: _w(t, "w.yaml", WORLD + "gravity: [90, 90, 0]\n"), ["gravity", "magnitude", "[0, 100] m/s^2"]),
    "gravity_nan": (lambda t: _w(t, "w.yaml", WORLD + "gravity: [0, 0, .nan]\n"), ["gravity[2]", "finite", "NaN"]),
    "gravity_inf": (lambda t: _w(t, "w.yaml", WORLD + "gravity: [0, 0, -.inf]\n"), ["gravity[2]", "infinity"]),
    "origin_1e300": (lambda t: _w(t, "o.yaml", OBJ.replace("{box: [0.1, 0.1, 0.1]}",
                                                           "{box: [0.1, 0.1, 0.1], origin: {xyz: [1e300, 0, 0]}}")),
                     ["shape.origin.xyz[0]", "[-1000, 1000] m"]),
    "size_1e300": (lambda t: _w(t, "o.yaml", OBJ.replace("0.1, 0.1, 0.1", "0.1, 1e300, 0.1")), ["[1e-05, 100] m"]),
    "rpy_1e300": (lambda t: _w(t, "o.yaml", OBJ.replace("{box: [0.1, 0.1, 0.1]}",
                                                        "{box: [0.1, 0.1, 0.1], origin: {rpy: [0, 1e300, 0]}}")),
                  ["origin.rpy[1]", "rad"]),
    "inertia_absurd": (lambda t: _w(t, "o.yaml", OBJ + "com: [0, 0, 0]\ninertia: [1e-30, 1e-30, 1e-30, 0, 0, 0]\n"),
                       ["inertia", "radii of gyration"]),
    "kp_1e300": (lambda t: _w(t, "r.yaml", ROBOT + "  - {name: b, shape: {sphere: 0.05}, mass: 1}\njoints:\n"
                              "  - {name: j, type: revolute, parent: a, child: b}\ndofs:\n  - {name: d, joints: [j], kp: 1e300}\n"),
                 ["dofs[0].kp", "[0, 1e+09]"]),
    "threshold_1m": (lambda t: _w(t, "w.yaml", WORLD + "contact_threshold: 1.0\n"), ["contact_threshold", "(0, 0.005] m"]),
    "friction_huge": (lambda t: _w(t, "w.yaml", WORLD + "materials:\n  friction:\n    - {pair: [a, b], static: 1e9, kinetic: 1}\n"),
                      ["materials.friction[0].static", "[0, 10]"]),
    # -- what the simulator would refuse ---------------------------------------------------------
    "unknown_material": (lambda t: (_w(t, "o.yaml", OBJ + "material: unobtanium\n"),
                                    _w(t, "w.yaml", WORLD + "objects:\n  - {name: o, file: o.yaml}\n"))[1],
                         ["'unobtanium'", "no friction entries"]),
    "friction_pair_missing": (lambda t: (_w(t, "o.yaml", OBJ + "material: foam\n"),
                                         _w(t, "w.yaml", WORLD + "materials:\n  friction:\n    - {pair: [foam, rubber], "
                                            "static: 1, kinetic: 0.9}\nobjects:\n  - {name: o, file: o.yaml}\n"
                                            "obstacles:\n  - {name: floor, shape: {box: [1, 1, 0.1]}, material: wood, "
                                            "pose: {xyz: [0, 0, -0.1]}}\n"))[1],
                              ["objects[0]", "'foam'", "'wood'", "no friction entry"]),
    "description_list": (lambda t: _w(t, "o.yaml", OBJ + "description: [a list]\n"), ["description", "non-empty string"]),
    "disable_unknown": (lambda t: _w(t, "w.yaml", WORLD + "disable_collisions: [[a, b]]\n"),
                        ["disable_collisions[0]", "no robot, link"]),
    # -- YAML 1.1 surprises ------------------------------------------------------------------------
    "sexagesimal": (lambda t: _w(t, "o.yaml", OBJ.replace("mass: 1", "mass: 1:30")), ["mass", "base-60"]),
    "hexadecimal": (lambda t: _w(t, "o.yaml", OBJ.replace("mass: 1", "mass: 0x10")), ["mass", "hexadecimal"]),
    "octal": (lambda t: _w(t, "o.yaml", OBJ.replace("mass: 1", "mass: 010")), ["mass", "leading zero"]),
    "octal_0o": (lambda t: _w(t, "o.yaml", OBJ.replace("mass: 1", "mass: 0o17")), ["mass", "leading zero"]),
    "yes_as_number": (lambda t: _w(t, "o.yaml", OBJ.replace("mass: 1", "mass: yes")), ["mass", "the string 'yes'"]),
    "on_as_number": (lambda t: _w(t, "w.yaml", WORLD + "dt: on\n"), ["dt", "the string 'on'"]),
    "underscore": (lambda t: _w(t, "o.yaml", OBJ.replace("mass: 1", "mass: 1_000")), ["mass", "separators"]),
    "merge_key": (lambda t: _w(t, "o.yaml", OBJ + "base: &b {x: 1}\nmore:\n  <<: *b\n"), ["'<<' merge keys"]),
    "python_tag": (lambda t: _w(t, "o.yaml", OBJ + "x: !!python/object:os.system [ls]\n"), ["tag", "not allowed"]),
    "two_documents": (lambda t: _w(t, "o.yaml", OBJ + "---\n" + OBJ), ["one YAML document"]),
    "timestamp_name": (lambda t: _w(t, "o.yaml", OBJ.replace("object: o", "object: 2001-12-14") + "mass2: 1\n"),
                       ["unknown key 'mass2'"]),
    # -- control characters and other invisible text ---------------------------------------------
    "name_esc": (lambda t: _w(t, "o.yaml", OBJ.replace("object: o", 'object: "evil\\e[2J"')), ["object", "U+001B"]),
    "name_nul": (lambda t: _w(t, "o.yaml", OBJ.replace("object: o", 'object: "a\\0b"')), ["object", "U+0000"]),
    "name_rlo": (lambda t: _w(t, "o.yaml", OBJ.replace("object: o", "object: abc\u202etxt")), ["object", "U+202E"]),
    "key_esc": (lambda t: _w(t, "o.yaml", OBJ + '"ma\\x1bss": 2\n'), ["unknown key", "\\x1b"]),
    "raw_nul_byte": (lambda t: _w(t, "o.yaml", OBJ.encode() + b"x: a\x00b\n"), ["malformed YAML", "U+0000"]),
    "link_name_bidi": (lambda t: _w(t, "r.yaml", ROBOT.replace("name: a", "name: \"a\\u2066b\"")), ["links[0].name", "U+2066"]),
    "file_name_control": (lambda t: _w(t, "w.yaml", WORLD + 'robots:\n  - file: "r\\x1b.yaml"\n'),
                          ["robots[0].file", "U+001B"]),
    "long_name": (lambda t: _w(t, "o.yaml", OBJ.replace("object: o", "object: " + "n" * 5000)),
                  ["object", "longer than 200 characters"]),
    # -- files that are not models: the error quotes nothing of them -----------------------------
    "passwd_as_robot": (lambda t: (_w(t, "passwd.yaml", "root:x:0:0:root:/root:/bin/bash\n"
                                      "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"),
                                   _world_with_robot_file(t, "passwd.yaml"))[1], ["not a robot file"]),
    "etc_passwd_as_robot": (lambda t: _world_with_robot_file(t, "/etc/passwd"), ["robots[0].file", "end in .yaml"]),
    "compose_as_robot": (lambda t: (_w(t, "c.yaml", "services:\n  db:\n    image: secret-image\n    password: hunter2\n"),
                                    _world_with_robot_file(t, "c.yaml"))[1], ["not a robot file"]),
    "object_as_robot": (lambda t: (_w(t, "o.yaml", OBJ), _world_with_robot_file(t, "o.yaml"))[1],
                        ["not a robot file", "this is an object file"]),
    "binary_file": (lambda t: _w(t, "b.yaml", bytes(range(256)) * 4), ["not UTF-8 text"]),
    "empty_file": (lambda t: _w(t, "e.yaml", ""), ["empty"]),
    "dotdot_path": (lambda t: _world_with_robot_file(t, "../../../../../../no/such/robot.yaml"), ["file not found"]),
    # -- hostile meshes ----------------------------------------------------------------------------
    "stl_claims_billion": (lambda t: (_w(t, "m.stl", b"\0" * 80 + (10 ** 9).to_bytes(4, "little") + b"\0" * 50),
                                      _w(t, "o.yaml", OBJ.replace("{box: [0.1, 0.1, 0.1]}", "{mesh: m.stl}")))[1],
                           ["shape.mesh", "neither a binary STL"]),
    "stl_200001_triangles": (lambda t: (_w(t, "m.stl", b"\0" * 80 + (200_001).to_bytes(4, "little") + b"\0" * 50 * 200_001),
                                        _w(t, "o.yaml", OBJ.replace("{box: [0.1, 0.1, 0.1]}", "{mesh: m.stl}")))[1],
                             ["shape.mesh", "more than 200000 triangles"]),
    "obj_bad_index": (lambda t: (_w(t, "m.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 99\n"),
                                 _w(t, "o.yaml", OBJ.replace("{box: [0.1, 0.1, 0.1]}", "{mesh: m.obj}")))[1],
                      ["shape.mesh", "vertex that does not exist"]),
    "obj_nan_vertex": (lambda t: (_w(t, "m.obj", "v 0 0 nan\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"),
                                  _w(t, "o.yaml", OBJ.replace("{box: [0.1, 0.1, 0.1]}", "{mesh: m.obj}")))[1],
                       ["shape.mesh", "not a finite number"]),
    "ply_huge_count": (lambda t: (_w(t, "m.ply", b"ply\nformat binary_little_endian 1.0\nelement vertex 2000000000\n"
                                                b"property float x\nend_header\n"),
                                  _w(t, "o.yaml", OBJ.replace("{box: [0.1, 0.1, 0.1]}", "{mesh: m.ply}")))[1],
                       ["shape.mesh", "count out of range"]),
    "off_truncated": (lambda t: (_w(t, "m.off", "OFF\n1000 1000 0\n0 0 0\n"),
                                 _w(t, "o.yaml", OBJ.replace("{box: [0.1, 0.1, 0.1]}", "{mesh: m.off}")))[1],
                      ["shape.mesh", "ends early"]),
    "mesh_scale_huge": (lambda t: _w(t, "o.yaml", f"object: o\nshape: {{mesh: {ROOT}/objects/meshes/cube.stl, scale: 1e6}}\n"
                                                  "mass: 1\n"), ["shape.mesh", "beyond the +-1000 m"]),
    "mesh_scale_tiny": (lambda t: _w(t, "o.yaml", f"object: o\nshape: {{mesh: {ROOT}/objects/meshes/cube.stl, scale: 1e-6}}\n"
                                                  "mass: 1\n"), ["shape.mesh", "largest extent"]),
}

# the files a "file is not a model" case must not leak into messages
SECRETS = ["root:x:0:0", "daemon:x", "secret-image", "hunter2", "/bin/bash"]


def check_clean(err: ModelError, path: Path) -> list[str]:
    """The error's lines: each names a file, is one line, and holds no control characters."""
    text = str(err)
    lines = text.split("\n")
    errs = getattr(err, "errors", [err])
    assert len(lines) == len(errs)
    for line, e in zip(lines, errs):
        assert e.file, line
        assert line.startswith(e.file[:20]), line
        assert not CONTROL.search(line), repr(line)
        assert len(line) < 2000
    return lines


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_case(name, tmp_path):
    build, words = CASES[name]
    path = build(tmp_path)
    t0 = time.perf_counter()
    with pytest.raises(ModelError) as info:
        load_any(path)
    assert time.perf_counter() - t0 < 5.0
    lines = check_clean(info.value, path)
    hits = [ln for ln in lines if all(w in ln for w in words)]
    assert hits, f"no message with {words}: {lines}"
    for s in SECRETS:
        assert s not in str(info.value)


def test_hostile_fixtures_in_repo():
    """The committed hostile files (small ones) give their promised errors too."""
    expected = {
        "billion_laughs.yaml": "more than 200000 nodes",
        "recursive_alias.yaml": "inside the node it names",
        "deep_nesting.yaml": "nested more than 32 levels",
        "bounds.yaml": "must be within",
        "yaml11.yaml": "base-60",
        "control_names.yaml": "U+001B",
    }
    assert {p.name for p in HOSTILE.glob("*.yaml")} == set(expected)
    for name, word in expected.items():
        with pytest.raises(ModelError) as info:
            load_any(HOSTILE / name)
        lines = check_clean(info.value, HOSTILE / name)
        assert any(word in ln for ln in lines), (name, lines)


def test_cli_on_every_hostile_file(tmp_path):
    """One ``graspsim validate`` over every hostile file: exit 2, every file reported with FILE:LINE:
    FIELD: PROBLEM lines, no traceback, no control characters, in bounded time and memory."""
    paths = []
    for name in sorted(CASES):
        d = tmp_path / name
        d.mkdir()
        paths.append(CASES[name][0](d))
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); "
            "from graspsim.cli import main; sys.exit(main(sys.argv[1:]))")
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code, "validate", *map(str, paths)], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    elapsed = time.perf_counter() - t0
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert all(ln.startswith("error: ") for ln in lines)
    assert not any(CONTROL.search(ln) for ln in lines)
    for p in paths:
        assert any(ln.startswith(f"error: {str(p)[:40]}") for ln in lines), p
    for s in SECRETS:
        assert s not in r.stderr
    assert elapsed < 5.0 * len(paths) and elapsed < 30.0


def test_cli_interpenetrating_world(tmp_path):
    """``validate`` reports what the Simulator refuses: bodies inside each other at the start."""
    f = _w(tmp_path, "w.yaml", WORLD + "objects:\n  - {name: cube, shape: {box: [0.1, 0.1, 0.1]}, mass: 1, "
           "material: wood, pose: {xyz: [0, 0, 0.045]}}\nobstacles:\n  - {name: table, shape: {box: [1, 1, 0.1]}, "
           "material: wood, pose: {xyz: [0, 0, -0.05]}}\n")
    r = subprocess.run([sys.executable, "-m", "graspsim.cli", "validate", str(f)], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2
    assert r.stderr.splitlines() == [f"error: {f}:3: objects[0]: 'cube' and 'table' interpenetrate by 5 mm in the "
                                     "initial state; the simulator refuses such a world (move them apart)"]
    ok = subprocess.run([sys.executable, "-m", "graspsim.cli", "validate", "--no-collisions", str(f)],
                        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert ok.returncode == 0 and "ok:" in ok.stdout


def test_mesh_triangles_of_one_model_are_bounded(tmp_path, monkeypatch):
    """Distinct meshes of one load count towards bounds.MAX_MODEL_TRIANGLES (lowered here so the
    shipped meshes exceed it); a mesh used twice counts once; a later load starts afresh."""
    from graspsim.model import bounds

    monkeypatch.setattr(bounds, "MAX_MODEL_TRIANGLES", 600)
    m = ROOT / "objects" / "meshes"
    links = "".join(f"  - {{name: l{i}, shape: {{mesh: {m / f}}}, mass: 1}}\n"
                    for i, f in enumerate(["cube.stl", "cube.stl", "can.ply", "cube.stl", "sphere.obj", "mug.obj"]))
    joints = "".join(f"  - {{name: j{i}, type: fixed, parent: l0, child: l{i}}}\n" for i in range(1, 6))
    f = _w(tmp_path, "r.yaml", "robot: r\nlinks:\n" + links + "joints:\n" + joints)
    with pytest.raises(ModelError) as info:
        load_any(f)
    errs = [str(e) for e in getattr(info.value, "errors", [info.value])]
    # cube 12 + can 192 triangles fit; the sphere (1280) crosses 600; the mug is then not read
    assert errs == [f"{f}:7: links[4].shape.mesh: the meshes of this model hold more than 600 triangles in all",
                    f"{f}:8: links[5].shape.mesh: not read: the meshes of this model already hold more than 600 "
                    "triangles"]
    g = _w(tmp_path, "o.yaml", f"object: o\nshape: {{mesh: {m / 'can.ply'}}}\nmass: 1\n")
    assert load_any(g).name == "o"


def test_crowded_world_is_refused_quickly(tmp_path):
    """1225 pairs of coincident boxes: validate's start check refuses the world by its pair limit
    instead of running the exact check on every pair (minutes)."""
    from graspsim.model.checks import MAX_CLOSE_PAIRS, start_problems

    f = _w(tmp_path, "w.yaml", WORLD + "objects:\n" + "".join(
        f"  - {{name: b{i}, shape: {{box: [0.1, 0.1, 0.1]}}, mass: 1, material: wood}}\n" for i in range(50)))
    t0 = time.perf_counter()
    problems = start_problems(load_any(f))
    assert time.perf_counter() - t0 < 5.0
    assert [str(p) for p in problems] == [f"{f}: 1225 pairs of bodies overlap in their bounding boxes at the start; "
                                          f"validate checks at most {MAX_CLOSE_PAIRS} for interpenetration (spread "
                                          "the bodies out, or validate with --no-collisions)"]


def test_apart_settles_what_the_simulator_check_settles():
    """The numpy pre-check never calls interpenetrating shapes apart: on random placements of every
    primitive and a mesh, whenever it says "apart" FCL finds the two shapes more than 0 apart or
    touching (distance >= -1e-9 m)."""
    import numpy as np

    import graspsim
    from graspsim.spatial import quat_to_matrix
    from graspsim.collision.fcl_geometry import fcl_geometry
    from graspsim.geometry import make_primitive
    from graspsim.model.checks import apart
    import fcl

    rng = np.random.default_rng(7)
    mug = graspsim.load_object(ROOT / "objects" / "mug.yaml").shape
    shapes = [make_primitive("box", (0.1, 0.05, 0.02)), make_primitive("sphere", (0.03,)),
              make_primitive("cylinder", (0.02, 0.1)), make_primitive("capsule", (0.015, 0.08)), mug]
    said_apart = 0
    for _ in range(400):
        a, b = rng.choice(len(shapes), 2)
        X = []
        for _ in range(2):
            q = rng.normal(size=4)
            q /= np.linalg.norm(q)
            R = quat_to_matrix(q)      # [w, x, y, z]
            T = np.eye(4)
            T[:3, :3], T[:3, 3] = R, rng.uniform(-0.08, 0.08, 3)
            X.append(T)
        if apart(shapes[a], X[0], shapes[b], X[1]):
            said_apart += 1
            objs = [fcl.CollisionObject(fcl_geometry(s), fcl.Transform((T @ s.X_LS)[:3, :3], (T @ s.X_LS)[:3, 3]))
                    for s, T in ((shapes[a], X[0]), (shapes[b], X[1]))]
            req, res = fcl.CollisionRequest(), fcl.CollisionResult()
            assert fcl.collide(objs[0], objs[1], req, res) == 0 or \
                fcl.distance(objs[0], objs[1], fcl.DistanceRequest(), fcl.DistanceResult()) >= -1e-9
    assert said_apart > 100          # the placements are mixed: many pairs apart, many not


# -- property-based fuzzing of the shipped models ---------------------------------------------------

SHIPPED_DIRS = ("robots", "objects", "worlds")
TARGETS = ["robots/barrett.yaml", "robots/puma560.yaml", "robots/parallel_jaw.yaml", "objects/mug.yaml",
           "objects/table.yaml", "objects/can.yaml", "worlds/barrett_mug.yaml", "worlds/puma_barrett_handset.yaml",
           "worlds/parallel_jaw_box.yaml"]
HOSTILE_VALUES = [None, True, "yes", "1:30", "0x10", "010", ".nan", float("nan"), float("inf"), -1, 0, 1e300, -1e300,
                  1e-300, 10 ** 400, "9" * 500, "", " ", "\x1b[2J", "a\u202eb", "x" * 3000, [], {}, [[[[1]]]],
                  {"a": {"b": {"c": 1}}}, [1, 2], [1, 2, 3], [1, 2, 3, 4, 5, 6], "25 mm", "1e3 furlong", "../x.yaml",
                  "/dev/zero", "/etc/passwd", "meshes/none.stl", "box", "revolute", "breakaway", "mm", "deg",
                  {"xyz": [0, 0, 1e9]}, {"box": [1, 1, 1]}, {"mesh": "/dev/zero"}, 3.5, -7]


def _nodes(tree, path=()):
    """Every (path, value) of a YAML tree."""
    yield path, tree
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _nodes(v, path + (k,))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from _nodes(v, path + (i,))


def _set(tree, path, value):
    if not path:
        return value
    parent = tree
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = value
    return tree


def _mutate(tree, rnd: random.Random, n: int):
    """``n`` random edits: replace a value, delete or rename a key, duplicate or drop an item,
    wrap a value in more nesting, swap in a value from elsewhere."""
    for _ in range(n):
        nodes = list(_nodes(tree))
        path, value = rnd.choice(nodes)
        op = rnd.randrange(7)
        if op == 0 or not path:
            tree = _set(tree, path, copy.deepcopy(rnd.choice(HOSTILE_VALUES)))   # copies: no shared lists
        elif op == 1:
            parent = tree
            for k in path[:-1]:
                parent = parent[k]
            if isinstance(parent, dict):
                del parent[path[-1]]
            elif isinstance(parent, list):
                parent.pop(path[-1])
        elif op == 2:
            parent = tree
            for k in path[:-1]:
                parent = parent[k]
            if isinstance(parent, dict):
                parent[rnd.choice(["nmae", "mass", "shape", "file", "x\x1b", "links", "dofs", "robots"])] = \
                    parent.pop(path[-1])
        elif op == 3:
            tree = _set(tree, path, [copy.deepcopy(value) for _ in range(rnd.randint(2, 4))])
        elif op == 4:
            tree = _set(tree, path, {"nested": copy.deepcopy(value)} if rnd.random() < 0.5 else [copy.deepcopy(value)])
        elif op == 5 and isinstance(value, (int, float)) and not isinstance(value, bool):
            tree = _set(tree, path, rnd.choice([value * 1e6, -value, value + 1e-9, value * 1e-9, str(value) + " mm"]))
        else:
            _, other = rnd.choice(nodes)
            tree = _set(tree, path, copy.deepcopy(other))
    return tree


def _text_mutate(text: str, rnd: random.Random) -> str:
    """Edits of the raw text: cut it, drop or duplicate a line, insert odd characters or YAML syntax."""
    lines = text.splitlines(keepends=True)
    op = rnd.randrange(5)
    if op == 0:
        return text[:rnd.randrange(len(text) + 1)]
    i = rnd.randrange(len(lines))
    if op == 1:
        del lines[i]
    elif op == 2:
        lines.insert(i, lines[i])
    elif op == 3:
        pos = rnd.randrange(len(lines[i]) + 1)
        lines[i] = lines[i][:pos] + rnd.choice(["&a ", "*a", "!!binary ", "{", "[", "]", ": ", "\t", "\x1b", "\u202e",
                                                "'", '"', "- ", "%", "<<: ", "---\n", "? "]) + lines[i][pos:]
    else:
        lines[i] = "  " * rnd.randint(1, 40) + lines[i]
    return "".join(lines)


@pytest.fixture(scope="module")
def fuzz_tree(tmp_path_factory):
    """A copy of the shipped models (meshes linked) where mutated files can sit next to the originals."""
    base = tmp_path_factory.mktemp("fuzz")
    for d in SHIPPED_DIRS:
        (base / d).mkdir()
        for f in (ROOT / d).glob("*.yaml"):
            shutil.copy(f, base / d / f.name)
    (base / "objects" / "meshes").symlink_to(ROOT / "objects" / "meshes")
    return base


@settings(max_examples=300, deadline=10_000, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(target=st.sampled_from(TARGETS), seed=st.integers(0, 2 ** 32 - 1), edits=st.integers(1, 4),
       raw=st.booleans())
def test_fuzz_mutated_models(fuzz_tree, target, seed, edits, raw):
    """Every mutated model either loads or raises a ModelError whose lines each name a file, hold
    no control characters and stay one line; each load ends within a few seconds."""
    rnd = random.Random(seed)
    src = fuzz_tree / target
    if raw:
        text = _text_mutate(src.read_text(), rnd)
    else:
        tree = _mutate(yaml.safe_load(src.read_text()), rnd, edits)
        try:
            text = yaml.safe_dump(tree, allow_unicode=True, sort_keys=False)
        except (yaml.YAMLError, ValueError, OverflowError):
            return
    out = src.with_name("fuzz_" + src.name)
    out.write_text(text, encoding="utf-8")
    t0 = time.perf_counter()
    try:
        model = load_any(out)
    except ModelError as e:
        check_clean(e, out)
    else:
        assert model.name and not CONTROL.search(model.name)
    assert time.perf_counter() - t0 < 5.0


def test_validate_reports_a_body_wholly_inside_another(tmp_path):
    """A small ball inside the thick table: no surfaces meet (FCL's collide says apart), yet the
    simulator refuses the world; validate's FCL screen must not clear it (bounding-box containment)."""
    from graspsim.model.checks import start_problems
    from graspsim.model.loader import load_world

    f = _w(tmp_path, "w.yaml", WORLD + "objects:\n  - {name: ball, shape: {sphere: 0.01}, mass: 0.1, "
           "material: wood, pose: {xyz: [0, 0, -0.05]}}\nobstacles:\n  - {name: table, shape: {box: [1, 1, 0.1]}, "
           "material: wood, pose: {xyz: [0, 0, -0.05]}}\n")
    probs = start_problems(load_world(f))
    assert len(probs) == 1 and "'ball' and 'table' interpenetrate" in str(probs[0])
    depth = float(str(probs[0]).split("interpenetrate by ")[1].split(" mm")[0])
    # the depth estimate is the deepest vertex of either body inside the other: the ball's equator,
    # 50 mm from both faces of the 100 mm table
    assert depth == pytest.approx(50.0, abs=1.0)


@pytest.mark.parametrize("bad", [None, 5, 3.5, ["worlds/barrett_mug.yaml"]])
def test_loaders_name_a_path_that_is_not_one(bad):
    """load_world/load_robot/load_object given something that is not a file path (None, a number,
    a list) raise a ModelError naming the function and what it got, not os.fspath's TypeError."""
    import graspsim

    for fn in (graspsim.load_world, graspsim.load_robot, graspsim.load_object):
        with pytest.raises(ModelError, match=rf"{fn.__name__} needs the path of a file .* got {type(bad).__name__}"):
            fn(bad)


# ------------------------------------------------------------------ degrees where radians are read

def test_an_orientation_in_degrees_in_a_radian_file_is_named_with_the_fix(tmp_path):
    """``rpy: [0, 90, 0]`` in a file without ``units`` was 90 rad (a turn of 90 - 14 x 2 pi = 2.04 rad,
    117 deg) and loaded silently.  An orientation angle beyond one turn is refused, with the hint;
    with ``units: {angle: deg}`` or ``'90 deg'`` the same pose turns the body 90 deg about y."""
    ROOT = Path(__file__).resolve().parent.parent
    body = f"objects:\n  - {{name: cube, file: {ROOT}/objects/cube.yaml, pose: {{xyz: [0, 0, 0.5], rpy: RPY}}}}\n"
    w = tmp_path / "w.yaml"
    w.write_text("world: w\n" + body.replace("RPY", "[0, 90, 0]"))
    with pytest.raises(ModelError) as e:
        graspsim.load_world(w)
    err = getattr(e.value, "errors", [e.value])[0]
    assert (err.line, err.field) == (3, "objects[0].pose.rpy[1]")
    assert "got 90 rad; angles are in radians unless the file says units: {angle: deg} (or write '90 deg')" in err.problem
    for text in ("world: w\nunits: {angle: deg}\n" + body.replace("RPY", "[0, 90, 0]"),
                 "world: w\n" + body.replace("RPY", "[0, '90 deg', 0]")):
        w.write_text(text)
        R = graspsim.load_world(w).bodies["cube"].pose[:3, :3]
        np.testing.assert_allclose(R, [[0, 0, 1], [0, 1, 0], [-1, 0, 0]], atol=1e-15)


def test_batch_rolls_and_cone_angles_in_degrees_in_a_radian_file_are_named(tmp_path):
    from graspsim.batch import load_config

    ROOT = Path(__file__).resolve().parent.parent
    base = {"world": str(ROOT / "worlds/barrett_mug.yaml")}
    with pytest.raises(ModelError, match=r"candidates\.rolls\[1\]: must be within \[-6.28319, 6.28319\] rad, got 90 rad; "
                                         r"angles are in radians"):
        load_config({**base, "candidates": {"rolls": [0, 90]}})
    with pytest.raises(ModelError, match=r"directions\.within\.angle: must be within \(0, 3.14159\] rad, got 100 rad"):
        load_config({**base, "candidates": {"directions": {"sphere": 8, "within": {"axis": [0, 0, -1], "angle": 100}}}})
    cfg = load_config({**base, "candidates": {"rolls": [0, "90 deg"]}})
    assert cfg.candidates["rolls"] == [0.0, pytest.approx(np.pi / 2, abs=1e-15)]


def test_a_revolute_limit_beyond_a_turn_in_a_radian_file_is_named(tmp_path):
    """``limits: [0, 90]`` without units is 90 rad (14 turns): legal for a multi-turn joint, so a
    warning (not an error) with the fix; with ``units: {angle: deg}`` the limit is pi/2 and nothing is said."""
    import warnings

    from graspsim.errors import ModelWarning

    text = ("robot: r\nUNITS"
            "links:\n  - {name: base, shape: {box: [0.05, 0.05, 0.05]}, mass: 0.5}\n"
            "  - {name: f, shape: {box: [0.01, 0.01, 0.05], origin: {xyz: [0, 0, 0.025]}}, mass: 0.05}\n"
            "joints:\n  - {name: j, type: revolute, parent: base, child: f, origin: {xyz: [0, 0, 0.03]}, "
            "axis: [1, 0, 0], limits: [0, 90]}\n"
            "dofs:\n  - {name: d, joints: [j]}\n")
    p = tmp_path / "r.yaml"
    p.write_text(text.replace("UNITS", ""))
    with pytest.warns(ModelWarning, match=r"r.yaml:6: joints\[0\].limits: \[0, 90\] rad reach beyond one turn; angles "
                                          r"are in radians unless the file says units: \{angle: deg\}"):
        r = graspsim.load_robot(p)
    assert r.dof_limits[0].tolist() == [0.0, 90.0]
    p.write_text(text.replace("UNITS", "units: {angle: deg}\n"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = graspsim.load_robot(p)
    assert r.dof_limits[0][1] == pytest.approx(np.pi / 2, abs=1e-15)


def test_a_world_dof_value_outside_its_limits_is_quoted_in_the_file_units(tmp_path):
    """``dofs: {spread: 60}`` in a radian world was "value 60 outside the DOF limits [-0, 3.14159] (SI
    units)"; in a degree world a value was quoted in radians.  Now in the file's units, with the
    degrees hint where it would fit."""
    ROOT = Path(__file__).resolve().parent.parent
    src = (ROOT / "worlds/barrett_mug.yaml").read_text()
    src = src.replace("../robots/", f"{ROOT}/robots/").replace("../objects/", f"{ROOT}/objects/")
    w = tmp_path / "w.yaml"
    for units, spread, msg in (
            ("units: {length: m}", "60", "value 60 outside the DOF limits [0, 3.14159] rad; angles are in radians "
                                         "unless the file says units: {angle: deg} (or write '60 deg')"),
            ("units: {length: m, angle: deg}", "200", "value 200 outside the DOF limits [0, 180] deg")):
        text = src.replace("units: {length: m, angle: deg}", units).replace("spread: 0,", f"spread: {spread},")
        text = text.replace("rpy: [180, 0, 0]", "rpy: [3.141592653589793, 0, 0]" if "deg" not in units else "rpy: [180, 0, 0]")
        w.write_text(text)
        with pytest.raises(ModelError) as e:
            graspsim.load_world(w)
        errs = [x for x in getattr(e.value, "errors", [e.value]) if x.field == "robots[0].dofs.spread"]
        assert len(errs) == 1 and errs[0].problem == msg


def test_a_millimetre_file_without_units_is_named_by_its_size(tmp_path):
    """An object file written in millimetres without ``units`` made a 50 mm box a 50 m one (its 0.2 kg
    mass within range, so nothing was said); a robot's 50 mm link likewise.  A graspable object over
    2 m and a link over 3 m are named in a warning (obstacles, e.g. a room, are not); with
    ``units: {length: mm}`` the same file is the 5 cm box, I = m a^2 / 6."""
    import warnings

    from graspsim.errors import ModelWarning

    o = tmp_path / "o.yaml"
    o.write_text("object: part\nshape: {box: [50, 50, 50]}\nmass: 0.2\n")
    with pytest.warns(ModelWarning, match=r"o.yaml:2: shape: object 'part' is 50 m across; lengths are in metres "
                                          r"unless the file says units: \{length: mm\}"):
        graspsim.load_object(o)
    w = tmp_path / "w.yaml"
    w.write_text("world: w\nobstacles:\n  - {name: floor, shape: {box: [10, 10, 0.1]}, pose: {xyz: [0, 0, -1]}}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graspsim.load_world(w)
    r = tmp_path / "r.yaml"
    r.write_text("robot: r\nlinks:\n  - {name: base, shape: {box: [50, 50, 50]}, mass: 0.5}\n")
    with pytest.warns(ModelWarning, match=r"r.yaml: links over 3 m across: 'base' 50 m \(line 3\); lengths are in metres"):
        graspsim.load_robot(r)
    o.write_text("object: part\nunits: {length: mm}\nshape: {box: [50, 50, 50]}\nmass: 0.2\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        obj = graspsim.load_object(o)
    np.testing.assert_allclose(obj.inertial.inertia, np.eye(3) * 0.2 * 0.05 ** 2 / 6, rtol=1e-12)

"""Content-keyed geometry caches (docs/collision_model_data.md): equal shapes share one entry, an
object set streamed through one process keeps the caches within their byte budget."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import trimesh

import graspsim
from graspsim.collision import fcl_geometry as FG
from graspsim.collision import model_for
from graspsim.collision import pool as PL

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def small_caches(monkeypatch):
    """Fresh caches with a 1 MiB budget each (the default is 256 MiB)."""
    monkeypatch.setattr(PL, "CACHE", PL.ContentCache(2 ** 20))
    monkeypatch.setattr(FG, "CACHE", PL.ContentCache(2 ** 20))
    return PL.CACHE, FG.CACHE


def _sphere_file(tmp: Path, k: int) -> Path:
    m = trimesh.creation.icosphere(subdivisions=2, radius=0.02 + 0.0001 * k)     # 320 triangles
    p = tmp / f"s{k}.stl"
    m.export(p)
    return p


def test_200_distinct_meshes_keep_the_caches_bounded(tmp_path, small_caches):
    geo, fcl = small_caches
    one = None
    for k in range(200):        # one object after the other, each in its own world (an object set)
        _sphere_file(tmp_path, k)
        p = tmp_path / f"w{k}.yaml"
        p.write_text(f"world: w{k}\nobjects:\n  - {{name: o, file: s{k}.stl, mass: 0.1, pose: {{xyz: [0, 0, 0.5]}}}}\n"
                     "obstacles:\n  - {name: t, shape: {box: [1, 1, 0.1]}, material: wood}\n")
        w = graspsim.load_world(p)
        m = model_for(w)
        assert len(m.contacts(w.body_poses())) == 0 and m.separations(w.body_poses(), margin=1.0)[0] > 0.3
        if one is None:
            one = PL._nbytes(PL.shape_geometry(w.description.bodies[0].obj.shapes[0]))
        assert geo.nbytes <= geo.budget and fcl.nbytes <= fcl.budget
    # ~100 kB per sphere's contact geometry: the 1 MiB budget holds about ten, not 200
    assert 50_000 < one < 2 ** 20 / 4
    assert 2 <= len(geo) <= 2 ** 20 // one + 1
    assert len(fcl) <= 2 ** 20 // (3 * (162 * 24 + 320 * 24)) + 2   # the FCL cache's own estimate per mesh


def test_equal_meshes_share_one_entry(tmp_path, monkeypatch):
    geo, fcl = PL.ContentCache(2 ** 24), PL.ContentCache(2 ** 24)
    monkeypatch.setattr(PL, "CACHE", geo)
    monkeypatch.setattr(FG, "CACHE", fcl)
    src = ROOT / "objects" / "meshes" / "mug.obj"
    a, b = tmp_path / "a.obj", tmp_path / "b.obj"
    shutil.copy(src, a)
    shutil.copy(src, b)
    from graspsim.geometry import load_mesh_shape, make_primitive

    sa, sb = load_mesh_shape(a), load_mesh_shape(b)
    assert sa is not sb
    ga, gb = PL.shape_geometry(sa), PL.shape_geometry(sb)
    assert ga is gb and len(geo) == 1
    assert FG.fcl_geometry(sa) is FG.fcl_geometry(sb) and len(fcl) == 1
    # another scale is another mesh; equal primitives share one entry whatever their pose
    sc = load_mesh_shape(a, scale=0.5)
    assert PL.shape_geometry(sc) is not ga and len(geo) == 2
    X = np.eye(4)
    X[:3, 3] = [0.1, 0, 0]
    assert PL.shape_geometry(make_primitive("box", (0.1, 0.2, 0.3))) is \
        PL.shape_geometry(make_primitive("box", (0.1, 0.2, 0.3), X))
    assert len(geo) == 3

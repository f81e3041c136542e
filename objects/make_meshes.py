"""Generate the shipped object meshes in objects/meshes/ (run from anywhere).

    python objects/make_meshes.py

Needs trimesh and, for the boolean unions of the mug handle and the handset, manifold3d
(`pip install manifold3d`).  The meshes are committed, so users never need to run this.
Every mesh is checked to be watertight and a consistently oriented volume before it is written.
Sizes are in metres.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import trimesh

OUT = Path(__file__).resolve().parent / "meshes"


def revolve_profile(rz: list[tuple[float, float]], sections: int = 48) -> trimesh.Trimesh:
    """Solid of revolution about z of a closed (r, z) profile given counter-clockwise from the axis."""
    return trimesh.creation.revolve(np.asarray(rz, dtype=float), sections=sections)


def mug() -> trimesh.Trimesh:
    # body: outer radius 40 mm, height 100 mm, wall 5 mm, bottom 8 mm; bottom at z = 0
    ro, ri, h, tb = 0.040, 0.035, 0.100, 0.008
    body = revolve_profile([(0.0, 0.0), (ro, 0.0), (ro, h), (ri, h), (ri, tb), (0.0, tb)])
    # handle: half a torus in the x-z plane on the +x side, swept 200 degrees
    handle = trimesh.creation.torus(major_radius=0.028, minor_radius=0.006, major_sections=48, minor_sections=16)
    handle.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [1, 0, 0]))
    handle.apply_translation([ro + 0.004, 0.0, h / 2])
    # keep only the part outside the body: subtract the body's solid cylinder
    solid = trimesh.creation.cylinder(radius=ro - 0.001, height=h, sections=48)
    solid.apply_translation([0, 0, h / 2])
    handle = trimesh.boolean.difference([handle, solid], engine="manifold")
    return trimesh.boolean.union([body, handle], engine="manifold")


def handset() -> trimesh.Trimesh:
    """A classic desk-phone handset lying on its ear and mouth pieces (frame: middle of the resting plane).

    The grip is a 150 mm bar, 40 mm wide and 25 mm thick, with a flat back on top and its lower
    edges rounded to a 10 mm radius; its underside is 67 mm above the resting plane.  It stands on
    two flared legs (the convex hull of the bar's end and a 52 mm ear or mouth cap, 12 mm high,
    centred 85 mm either side).  The legs start 55 mm from the middle, clear of the Barrett hand's
    fingers, so the grip's middle is open underneath: the fingers can reach under it.
    """
    w, t, rb, hb = 0.040, 0.025, 0.010, 0.067         # grip width, thickness, edge radius, underside height
    length, x_leg, x_cap, r_cap, h_cap = 0.150, 0.055, 0.085, 0.026, 0.012
    n = 8
    arc = lambda yc, a0: [(yc + rb * np.cos(a), rb + rb * np.sin(a)) for a in a0 + np.linspace(0, -np.pi / 2, n + 1)]
    section = [(-w / 2, t), (w / 2, t)] + arc(w / 2 - rb, 0.0) + arc(-w / 2 + rb, -np.pi / 2)
    bar = trimesh.convex.convex_hull(np.array([(x, y, z + hb) for x in (-length / 2, length / 2) for y, z in section]))
    parts = [bar]
    ang = np.linspace(0, 2 * np.pi, 48, endpoint=False)
    for sx in (-1, 1):
        pts = [(sx * x, y, z + hb) for x in (x_leg, length / 2) for y, z in section]
        pts += [(sx * x_cap + r_cap * np.cos(a), r_cap * np.sin(a), z) for a in ang for z in (0.0, h_cap)]
        parts.append(trimesh.convex.convex_hull(np.array(pts)))
    return trimesh.boolean.union(parts, engine="manifold")


def flask() -> trimesh.Trimesh:
    """A bottle: 35 mm radius body, shoulder, 12 mm radius neck; 220 mm tall, solid."""
    prof = [(0.0, 0.0), (0.035, 0.0), (0.035, 0.140), (0.028, 0.165), (0.014, 0.185), (0.012, 0.190),
            (0.012, 0.220), (0.0, 0.220)]
    return revolve_profile(prof)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    meshes = {
        "cube.stl": trimesh.creation.box(extents=(0.06, 0.06, 0.06)),
        "sphere.obj": trimesh.creation.icosphere(subdivisions=3, radius=0.04),
        "can.ply": trimesh.creation.cylinder(radius=0.033, height=0.122, sections=48),
        "mug.obj": mug(),
        "handset.stl": handset(),
        "flask.off": flask(),
        "long_box.stl": trimesh.creation.box(extents=(0.20, 0.05, 0.05)),
    }
    for name, m in meshes.items():
        m = trimesh.Trimesh(m.vertices, m.faces, process=True)
        m.fix_normals()
        assert m.is_watertight and m.is_volume, name
        m.export(OUT / name)
        back = trimesh.load(OUT / name, force="mesh")
        assert back.is_watertight and back.is_volume, f"{name} did not survive its file format"
        print(f"{name:14s} {len(m.faces):6d} faces, volume {m.volume * 1e6:8.2f} cm^3, "
              f"extents {np.round(m.extents * 1000, 1)} mm")
    # a deliberately open mesh for the error tests
    broken = trimesh.creation.box(extents=(0.05, 0.05, 0.05))
    broken = trimesh.Trimesh(broken.vertices, broken.faces[:-2], process=False)
    broken.export(Path(__file__).resolve().parent.parent / "tests" / "models" / "open_box.stl")


if __name__ == "__main__":
    main()

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
    """A phone handset: a 150 mm x 40 mm grip bar standing 35 mm high on an ear piece and a mouth piece."""
    bar = trimesh.creation.box(extents=(0.150, 0.040, 0.018))
    bar.apply_translation([0, 0, 0.044])
    parts = [bar]
    for sx in (-1, 1):
        cup = trimesh.creation.box(extents=(0.050, 0.055, 0.048))
        cup.apply_translation([sx * 0.085, 0, 0.024 + 0.005])
        parts.append(cup)
    m = trimesh.boolean.union(parts, engine="manifold")
    m.apply_translation([0, 0, -m.bounds[0, 2]])  # resting face at z = 0
    return m


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

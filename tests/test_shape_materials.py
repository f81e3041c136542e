"""Per-shape materials (YAML ``shapes: [{..., material: m}]``): a contact's friction is that of the
two *shapes* that touch, in the dynamics (eq. 13), the grasp analysis and the loader's check of the
friction table.  The body's own material only serves shapes that name none."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim.dynamics import DriveCommand, Simulator
from graspsim.errors import ModelError
from graspsim.grasp.objects import grasp_contacts

ROOT = Path(__file__).resolve().parent.parent
G = 9.81

# The pinch world (tests/models/pinch.yaml) with a 200 x 50 x 50 mm box of two halves along the
# jaws' closing axis (world y): the -y half wood, the +y half another material.  Each rubber jaw
# touches one half.
WORLD = """\
world: two_material_pinch
units: {{length: m, angle: deg}}
robots:
  - name: gripper
    file: {robot}
    pose: {{xyz: [0, 0, 0.5], rpy: [180, 0, 90]}}
    dofs: {{opening: 0.0253}}
objects:
  - name: box
    pose: {{xyz: [0, 0, 0.44]}}
    mass: 0.3
    com: [0, 0, 0]
    inertia: [1.25e-4, 1.0625e-3, 1.0625e-3, 0, 0, 0]     # a solid 0.2 x 0.05 x 0.05 m box
    material: wood
    shapes:
      - {{box: [0.2, 0.025, 0.05], origin: {{xyz: [0, -0.0125, 0]}}}}
      - {{box: [0.2, 0.025, 0.05], origin: {{xyz: [0, 0.0125, 0]}}, material: {other}}}
{materials}"""


def _world(tmp_path, other: str = "frictionless", materials: str = ""):
    p = tmp_path / "w.yaml"
    p.write_text(WORLD.format(robot=ROOT / "robots/parallel_jaw.yaml", other=other, materials=materials))
    return graspsim.load_world(p)


def _squeeze(grip: float):
    class Squeeze:   # opening driven towards 0 with the effort capped: each finger presses with `grip`
        def command(self, sim):
            one = np.ones(1)
            return DriveCommand(0 * one, 0 * one, 2000 * one, 20 * one, 0 * one, 2 * grip * one)
    return Squeeze()


@pytest.mark.parametrize("grip,holds", [(2.0, False), (3.5, True)])
def test_pinch_holds_iff_the_sum_of_the_touching_shapes_mu_times_F_exceeds_m_g(tmp_path, grip, holds):
    # rubber on the wood half: static mu 1.0; rubber on the frictionless half: 0.  The box (0.3 kg,
    # m g = 2.94 N) is held iff (1.0 + 0) F > m g: F = 3.5 N holds, F = 2.0 N slips.  With the
    # body's material (wood) on both sides, 2 mu F = 4.0 N would hold it at F = 2.0 N.
    sim = Simulator(_world(tmp_path))
    z0 = sim.body_pose("box")[2, 3]
    sim.run(1.0, _squeeze(grip))
    dz = sim.body_pose("box")[2, 3] - z0
    if holds:
        assert abs(dz) < 1e-4
        i = sim.table.index["box"]
        c, f = sim.contacts, sim.contact_forces
        on_box = f[c.body_b == i].sum(0) - f[c.body_a == i].sum(0)
        assert on_box[2] == pytest.approx(0.3 * G, rel=1e-3)     # friction carries the weight
        # the frictionless half's contacts push along their normals only (no friction force; the
        # LCP's complementarity holds to round-off)
        other = (np.where(c.body_a == i, c.shape_a, c.shape_b) != sim.table.body_shape_start[i]) & \
            ((c.body_a == i) | (c.body_b == i))
        assert other.any()
        fo, no = f[other], c.normal[other]
        tangential = fo - np.einsum("ki,ki->k", fo, no)[:, None] * no
        assert np.abs(tangential).max() <= 1e-9 * np.abs(fo).max()
    else:
        assert dz < -0.1


def test_grasp_analysis_takes_each_contacts_shape_material(tmp_path):
    # rubber on wood 1.0, rubber on stone 1.5 (the default table): the analysis must give each
    # contact its own half's coefficient, not the box's (wood) everywhere
    w = _world(tmp_path, other="stone")
    sim = Simulator(w)
    sim.run(0.3, _squeeze(3.5))
    gc = grasp_contacts(w, "gripper", "box", contacts=sim.contacts)
    i = sim.table.index["box"]
    c = sim.contacts
    sel = (c.body_a == i) | (c.body_b == i)
    wood = np.where(c.body_a == i, c.shape_a, c.shape_b)[sel] == sim.table.body_shape_start[i]
    assert wood.any() and (~wood).any()
    assert np.array_equal(np.sort(gc.mu), np.sort(np.where(wood, 1.0, 1.5)))


def test_loader_names_a_shape_material_pair_missing_from_the_friction_table(tmp_path):
    # 'ice' is known (it has an entry) but has none with the jaws' rubber, which touches the ice half
    materials = "materials:\n  friction:\n    - {pair: [ice, ice], static: 0.05, kinetic: 0.03}\n"
    with pytest.raises(ModelError) as e:
        _world(tmp_path, other="ice", materials=materials)
    msg = str(e.value)
    assert "'ice'" in msg and "'rubber'" in msg and "no friction entry" in msg


def test_loader_names_an_unknown_shape_material(tmp_path):
    with pytest.raises(ModelError) as e:
        _world(tmp_path, other="unobtanium")
    msg = str(e.value)
    assert "w.yaml:17: objects[0].shapes[1].material" in msg      # the shape's own entry and line
    assert "material 'unobtanium' has no friction entries" in msg

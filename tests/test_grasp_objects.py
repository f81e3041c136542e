"""Object-level grasp analysis: world contacts -> analyze(), with the material table's mu, the
object's centre of mass and GraspIt's torque scale; measured contact forces against the GWS."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim.control import static_auto_grasp
from graspsim.grasp import analyze, contact_force_margin, evaluate_grasp, grasp_contacts, torque_scale

ROOT = Path(__file__).resolve().parent.parent


def test_parallel_jaw_grasp_matches_analyze_on_independently_assembled_inputs():
    w = graspsim.load_world(ROOT / "worlds/parallel_jaw_box.yaml")
    r = static_auto_grasp(w, "gripper")
    gc = grasp_contacts(w, "gripper", "box")
    assert len(gc) == 8                            # two 4-corner face contacts
    box = w.bodies["box"]
    y_box = box.pose[:3, 3][1]
    # normals point into the object: from the left finger (-y side) towards +y and vice versa
    assert np.allclose(np.abs(gc.normals[:, 1]), 1.0)
    assert np.all(np.sign(gc.normals[:, 1]) == -np.sign(gc.points[:, 1] - y_box))
    assert np.allclose(gc.mu, 1.0)                 # rubber on wood, static
    # torque scale: 1 / half-diagonal of the 200 x 50 x 50 mm box
    assert torque_scale(w, "box") == pytest.approx(1 / np.sqrt(0.1 ** 2 + 0.025 ** 2 + 0.025 ** 2), rel=1e-6)
    q = analyze(gc.points, gc.normals, 1.0, center=box.com_world, torque_scale=torque_scale(w, "box"),
                tangents=gc.tangents)
    assert r.quality.force_closure and q.force_closure
    assert r.quality.epsilon == pytest.approx(q.epsilon, rel=1e-12)


def test_static_grasp_quality_equals_evaluate_grasp_and_linf_dominates_l1():
    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    static_auto_grasp(w, "barrett")
    q1, _ = evaluate_grasp(w, "barrett", "mug", gws="L1")
    qi, _ = evaluate_grasp(w, "barrett", "mug", gws="Linf")
    assert q1.force_closure and qi.force_closure
    assert qi.epsilon >= q1.epsilon - 1e-12


def test_holding_forces_sit_inside_the_grasp_wrench_space():
    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    r = graspsim.control.dynamic_auto_grasp(w, "barrett", timeout=2.0)
    sim = r.sim
    c = sim.contacts
    io = sim.table.index["mug"]
    f = sim.contact_forces
    on_mug = np.where((c.body_a == io)[:, None], -f, f)
    sel = ((c.body_b == io) | (c.body_a == io)) & ~np.isin(c.body_a, [sim.table.index["table"]]) & \
        ~np.isin(c.body_b, [sim.table.index["table"]])
    m = contact_force_margin(w, "barrett", "mug", c.point[sel], on_mug[sel], quality=r.quality)
    # the fingers' net force on the mug squeezes it (the table carries the weight): a finite wrench
    # that a force-closure grasp can always resist -> it lies inside the GWS scaled by some t > 0
    assert m.scale > 0

"""Every ```python block of README.md and docs/*.md runs as written, and what the documents state holds.

A document's blocks run in order in one namespace, as a script run from the repository root
(``__name__ == "__main__"``), in a temporary folder holding links to the model folders (robots/,
objects/, worlds/) and a copy of examples/: the files the blocks write (mug.sqlite, plots/, ...)
land there.  The one difference from the repository is in that copy: the batch example keeps its
world, hand, evaluation and seed but few candidates (see ``_small_batch``), so that the documents'
batch runs take seconds, not minutes; the code that runs is the documents', verbatim.

After a document ran, its test asserts what the document's comments say of the results, against
analytic values or quantities computed independently here.  Blocks that are not meant to run
(shell, output, pseudo-code) must be fenced as ```text / ```bash, not ```python.
"""
from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import sqlite3
import textwrap
from pathlib import Path

import numpy as np
import pytest
import trimesh
import yaml

import graspsim
import graspsim.batch

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# a fenced block, possibly indented (inside a list): indent, language, code
_FENCE = re.compile(r"^([ \t]*)```[ \t]*([^\s`]*)[^\n]*\n(.*?)^\1```[ \t]*$", re.M | re.S)
_PYTHON = {"python", "py", "python3"}
_MODEL_DIRS = ("robots", "objects", "worlds")


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """(first line of the code, 1-based; code) of every ```python block of a Markdown file."""
    text = path.read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        if m.group(2).lower() in _PYTHON:
            out.append((text.count("\n", 0, m.start(3)) + 1, textwrap.dedent(m.group(3))))
    return out


def _small_batch(src: Path, dst: Path) -> None:
    """The batch example with few candidates: 12 sphere directions (of them those within the
    file's cone) plus straight down, one roll, stand-off 0, both preshapes: 16-18 candidates,
    some in force closure with seeds 1 and 2."""
    cfg = yaml.safe_load(src.read_text(encoding="utf-8"))
    cand = cfg["candidates"]
    cand["directions"]["sphere"] = 12
    cand["rolls"] = 1
    cand["standoffs"] = [0]
    dst.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")


def _make_docroot(root: Path) -> Path:
    """Fill ``root`` so that it looks like the repository root to the documents' code."""
    for d in _MODEL_DIRS:
        (root / d).symlink_to(ROOT / d, target_is_directory=True)
    (root / "examples").mkdir()
    for f in (ROOT / "examples").iterdir():
        if f.name == "batch_barrett_mug.yaml":
            _small_batch(f, root / "examples" / f.name)
        elif f.is_file():
            (root / "examples" / f.name).write_bytes(f.read_bytes())
    return root


@pytest.fixture
def docroot(tmp_path, monkeypatch) -> Path:
    """A fresh working folder that looks like the repository root (the current folder in the test)."""
    monkeypatch.chdir(_make_docroot(tmp_path))
    return tmp_path


def run_doc(name: str) -> tuple[dict, str]:
    """Run every python block of ``name`` (relative to the repository root) in one namespace in
    the current folder; returns the namespace and what the blocks printed.  Tracebacks point at
    the document's lines."""
    path = ROOT / name
    blocks = python_blocks(path)
    assert blocks, f"{name} has no python blocks"
    ns: dict = {"__name__": "__main__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for line, code in blocks:
            exec(compile("\n" * (line - 1) + code, str(path), "exec"), ns)
    return ns, out.getvalue()


# the test of each document that has python blocks
COVERED = {"README.md", "docs/batch.md", "docs/collision.md", "docs/grasp_analysis.md", "docs/lcp.md",
           "docs/reduced_coordinates.md", "docs/stepper_validation.md"}


def test_every_document_with_python_blocks_has_a_test():
    with_blocks = {p.relative_to(ROOT).as_posix() for p in DOCS if python_blocks(p)}
    assert with_blocks == COVERED, "add a test (and the name to COVERED) for new documents with python blocks"
    for p in DOCS:          # a quick syntax check of every block, naming the file and line
        for line, code in python_blocks(p):
            compile("\n" * (line - 1) + code, str(p), "exec")


def test_fence_parser_finds_python_blocks_only(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("text\n```python\na = 1\n```\n```bash\nls\n```\n```\nout\n```\n\n```py\nb = 2\n```\n"
                  "* item\n\n  ```python\n  if b:\n      c = 3\n  ```\n```yaml\nd: 4\n```\n")
    assert python_blocks(md) == [(3, "a = 1\n"), (13, "b = 2\n"), (18, "if b:\n    c = 3\n")]


# ---------------------------------------------------------------------------------------- README


@pytest.fixture(scope="module")
def readme(tmp_path_factory):
    """README.md's blocks, run once for the README tests: (namespace, printed text, folder)."""
    root = _make_docroot(tmp_path_factory.mktemp("readme"))
    cwd = os.getcwd()
    os.chdir(root)
    try:
        ns, out = run_doc("README.md")
    finally:
        os.chdir(cwd)
    return ns, out, root


def test_readme_inspect_and_kinematics(readme):
    ns, out, _ = readme
    from graspsim import kinematics as K

    assert ns["hand"].dof_names == ["spread", "f1", "f2", "f3"]
    np.testing.assert_allclose(np.degrees(ns["hand"].dof_limits), [[0, 180], [0, 144], [0, 144], [0, 144]],
                               atol=1e-9)                                # robots/barrett.yaml
    assert ns["mug"].mass == pytest.approx(0.3)                          # objects/mug.yaml
    arm = ns["arm"]
    assert ns["X"].shape == (len(arm.links), 4, 4) and ns["J"].shape == (6, 6)
    ik = ns["ik"]
    assert ik.success and ik.position_error < 1e-6
    X_ik = K.forward_kinematics(arm, K.joint_values(arm, ik.dofs))[6]
    assert np.linalg.norm(X_ik[:3, 3] - ns["X"][6][:3, 3]) < 1e-6       # the IK answer reaches the pose


def test_readme_pregrasp_clear_of_the_mug(readme):
    ns, out, _ = readme
    # check_interpenetration raised during the run had the pre-grasp intersected the mug; finger
    # 1's tip is 22 mm from it, and the mug stands on the table
    assert ns["d"] == pytest.approx(0.022, abs=5e-4)
    assert ns["d"] == pytest.approx(np.linalg.norm(ns["p_finger"] - ns["p_mug"]), abs=1e-9)
    assert re.search(r"^mug table ", out, re.M)


def test_readme_closest_points_in_argument_order(readme):
    ns, _, _ = readme
    mesh = trimesh.load(ROOT / "objects/meshes/mug.obj", force="mesh")   # the mug stands at the origin
    on_mug = np.abs(trimesh.proximity.signed_distance(mesh, np.array([ns["p_mug"], ns["p_finger"]])))
    assert on_mug[0] < 1e-6 and on_mug[1] == pytest.approx(ns["d"], abs=1e-6)


def test_readme_static_grasp_and_analysis(readme):
    ns, _, _ = readme
    from graspsim import grasp

    r = ns["r"]
    assert r.stopped_by == {"spread": "not moving", "f1": "contact", "f2": "contact", "f3": "contact"}
    assert r.quality.force_closure
    assert r.quality.epsilon == pytest.approx(0.303, abs=0.001)
    assert r.quality.volume == pytest.approx(0.337, abs=0.001)
    gc = ns["gc"]
    assert len(gc) >= 3 and np.all(gc.mu == 1.0)                         # rubber on glass
    assert np.all(gc.separation > 0) and np.all(gc.separation <= 1e-4)  # touching, not inside
    mug = graspsim.load_object("objects/mug.yaml")     # radius: centre of mass to the farthest mesh vertex
    v = mug.shape.vertices @ mug.shape.X_LS[:3, :3].T + mug.shape.X_LS[:3, 3]
    assert ns["radius"] == pytest.approx(np.max(np.linalg.norm(v - mug.inertial.com, axis=1)), rel=1e-12)
    assert ns["quality"].force_closure
    assert ns["quality"].epsilon == pytest.approx(r.quality.epsilon, rel=1e-9)
    q05 = grasp.analyze(ns["points"], ns["normals"], mu=0.5, center=ns["com"], torque_scale=1 / ns["radius"])
    assert q05.force_closure and q05.epsilon == pytest.approx(0.139, abs=0.001)


def test_readme_dynamic_grasp_lifts_the_mug(readme):
    lift = readme[0]["lift"]
    assert lift.held and not lift.dropped
    assert lift.hand_rise == pytest.approx(0.1, abs=1e-9)
    assert lift.lifted == pytest.approx(0.1, abs=1e-3)
    assert lift.slip < 1e-4


def test_readme_drive_it_yourself_lifts_the_mug(readme):
    ns, out, _ = readme
    sim = ns["sim"]
    # the palm rose 5 cm along the prescribed path, and the pressing fingers carried the mug with
    # it (a mug left near z0 means the fingers' closing command was lost: they did not press)
    palm_rise = sim.body_pose("barrett/palm")[2, 3] - ns["X_base"][2, 3]
    assert palm_rise == pytest.approx(0.05, abs=1e-12)
    assert sim.body_pose("mug")[2, 3] - ns["z0"] == pytest.approx(0.05, abs=2e-3)
    assert np.all(np.abs(sim.body_velocity("mug")) < 0.05)               # at rest in the hand


def test_readme_contact_table_and_replay(readme):
    ns, out, _ = readme
    sim, ctl = ns["sim"], ns["ctl"]
    table = out[out.index("ContactSet:"):].splitlines()
    assert re.match(r"ContactSet: \d+ contacts", table[0])
    assert re.match(r"\s+#\s+body_a\s+body_b\s+point \(m\)\s+normal\s+sep \(mm\)$", table[1])
    assert re.match(r"\s+0\s+barrett/f\d_(prox|dist)\s+mug\s+\[", table[2])
    assert ns["sim"].contact_forces.shape == (len(sim.contacts), 3)
    s0 = sim.save_state()
    try:
        sim.step(ctl)
        P1 = sim.poses()
        sim.restore_state(s0)
        sim.step(ctl)
        np.testing.assert_array_equal(sim.poses(), P1)                   # exact replay
    finally:
        sim.restore_state(s0)


def test_readme_batch(readme):
    ns, out, root = readme
    from graspsim.batch import prepare, read_results, run_batch

    n = len(prepare(ns["cfg"])[1])                      # the reduced copy of the example (see _small_batch)
    assert ns["run"].total == n and ns["run"].evaluated == n
    full = graspsim.batch.load_config(ROOT / "examples/batch_barrett_mug.yaml")
    assert len(prepare(full)[1]) == 1392                  # the shipped example, as the README says
    with sqlite3.connect(root / "mug.sqlite") as con:
        assert con.execute("SELECT COUNT(*) FROM results").fetchone()[0] == n
        n_fc = con.execute("SELECT COUNT(*) FROM results WHERE force_closure = 1").fetchone()[0]
    assert n_fc >= 1                                    # the summary had grasps to report
    assert f"success (force closure): {n_fc} of {n} evaluated" in out
    with open(root / "mug.csv", newline="") as f:
        assert len(list(csv.reader(f))) == n + 1
    again = run_batch(ns["cfg"], root / "mug.sqlite", resume=True, progress="off")   # a rerun skips
    assert again.skipped == n and again.evaluated == 0 and len(read_results(root / "mug.sqlite")) == n


def test_readme_reduced_coordinates(readme):
    """Gravity torques at q = 0 equal -sum_i m_i J_i^T g over the links' centres of mass."""
    ns, _, _ = readme
    from graspsim import kinematics as K

    arm = ns["arm"]
    q = K.joint_values(arm, np.zeros(6))
    Xl = K.forward_kinematics(arm, q)
    g = np.array([0.0, 0.0, -9.81])
    tau = np.zeros(6)
    for li, link in enumerate(arm.links):
        c = Xl[li][:3, :3] @ link.inertial.com + Xl[li][:3, 3]
        tau -= link.inertial.mass * K.jacobian(arm, q, None, link=li, point_W=c)[:3].T @ g
    assert np.abs(tau).max() > 1.0                      # a real load, not a zero vector
    np.testing.assert_allclose(ns["tau"], tau, atol=1e-9 * np.abs(tau).max())


def test_readme_urdf_hand(readme):
    """'Bring your own hand': the Panda hand from its URDF, one DOF coupling both fingers, and the
    static grasp of the 12 mm mug handle (each finger 6 mm from the centre) in force closure."""
    ns, _, _ = readme
    panda, r = ns["panda"], ns["panda_grasp"]
    assert panda.dof_names == ["panda_finger_joint1"]
    np.testing.assert_allclose(panda.dof_limits, [[0.0, 0.04]])
    fingers = [j for j in panda.joints if j.dof == 0]
    assert [(j.name, j.ratio, j.offset) for j in fingers] == [("panda_finger_joint1", 1.0, 0.0),
                                                              ("panda_finger_joint2", 1.0, 0.0)]
    assert r.dofs[0] == pytest.approx(0.006, abs=3e-4) and r.quality.force_closure


# ------------------------------------------------------------------------------------- docs/*.md


def test_lcp_doc(docroot):
    ns, _ = run_doc("docs/lcp.md")
    r, M, q = ns["r"], ns["M"], ns["q"]
    assert r.status == "solved" and r.residual <= 1e-9 and r.certificate is None
    np.testing.assert_allclose(r.z, np.linalg.solve(M, -q), atol=1e-12)      # both basic: M z + q = 0
    np.testing.assert_allclose(r.z, [4 / 3, 7 / 3], atol=1e-12)
    np.testing.assert_allclose(r.w, 0.0, atol=1e-12)
    assert r.basis.tolist() == [True, True]
    r2 = ns["r2"]
    assert r2.status == "solved" and r2.warm_started and r2.pivots == 0
    np.testing.assert_allclose(r2.z, np.linalg.solve(M, -(q - 0.1)), atol=1e-12)
    bad = ns["bad"]
    y = bad.certificate
    assert bad.status == "ray" and y is not None
    Mb = np.array([[1.0, -1.0], [-1.0, 1.0]])
    assert np.all(y >= 0) and np.all(Mb.T @ y <= 1e-12) and np.array([-1.0, -1.0]) @ y < 0    # Farkas


def test_reduced_coordinates_doc(docroot):
    """Forward dynamics of the inverse dynamics' torques gives back the acceleration (three
    algorithms, tree and DOF coordinates); the joint-space inertia is symmetric positive definite."""
    ns, _ = run_doc("docs/reduced_coordinates.md")
    H = ns["H"]
    np.testing.assert_allclose(H, H.T, atol=1e-12)
    assert np.linalg.eigvalsh(H).min() > 0
    for a in ("a1", "a2", "a3"):
        np.testing.assert_allclose(ns[a], ns["qdd"], atol=1e-9)
    np.testing.assert_allclose(ns["acc"], np.ones(4), atol=1e-9)


def test_grasp_analysis_doc(docroot):
    ns, _ = run_doc("docs/grasp_analysis.md")
    from graspsim.grasp import analyze, qhull_quality, wrench_margin

    res = ns["res"]
    fc, eps, vol = qhull_quality(res.wrenches.reshape(-1, 6))            # full-hull reference
    assert res.force_closure and fc
    assert res.epsilon == pytest.approx(eps, rel=1e-9) and res.epsilon == pytest.approx(0.141, abs=5e-4)
    assert res.volume == pytest.approx(vol, rel=1e-9) and res.volume == pytest.approx(0.0264, abs=5e-5)
    u = res.weakest_direction
    assert abs(u[3]) == pytest.approx(np.linalg.norm(u), rel=0.05)      # mostly torque about x
    # the L1 budget: total normal force 1; friction can carry at most mu of it along z (a cone edge
    # lies along z), so -0.05 z fits 0.5 / 0.05 = 10 times
    m = wrench_margin(res, ns["w"])
    assert m.scale == pytest.approx(ns["mu"] / 0.05, rel=1e-6) and m.distance > 0
    assert not analyze(ns["points"], ns["normals"], 0.0, center=ns["com"], torque_scale=1 / ns["r_max"]).force_closure
    png = docroot / "out" / "gws.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_collision_doc(docroot):
    """The box (20 x 5 x 5 cm, centred at z = 2.5 cm) rests on the table (z = 0); the gripper's
    inner finger faces are 40 mm from its centre line, the box's sides 25 mm."""
    ns, out = run_doc("docs/collision.md")
    assert len(re.findall(r"^box table ", out, re.M)) == 4
    cs, m, P, i, j = ns["cs"], ns["m"], ns["P"], ns["i"], ns["j"]
    assert len(cs) == 4 and set(cs.body_a) == {i} and set(cs.body_b) == {j}
    corners = {(x, y) for x in (-0.1, 0.1) for y in (-0.025, 0.025)}
    assert {(round(float(p[0]), 6), round(float(p[1]), 6)) for p in cs.point} == corners
    np.testing.assert_allclose(cs.point[:, 2], 0.0, atol=1e-8)
    np.testing.assert_allclose(cs.normal, [[0, 0, -1]] * 4, atol=1e-12)
    np.testing.assert_allclose(cs.separation, 0.0, atol=1e-8)
    table = out[out.index("ContactSet: 4 contacts"):].splitlines()
    assert all(re.match(r"\s+\d\s+box\s+table\s+\[", row) for row in table[2:6])
    assert ns["d"] == pytest.approx(0.04 - 0.025, abs=1e-6)
    assert m.penetrating(P) == [] and m.interpenetrations(P) == []
    sep, pair = m.separations(P)
    assert sep == pytest.approx(0.0, abs=1e-8) and pair == (i, j)
    # the impact: the fingers meet the box's sides at opening 25 mm, s = 0.75; the search stops
    # within the threshold (0.1 mm of opening = 0.005 of s) before it
    gap = (0.04 - 0.02 * ns["s_touch"]) - 0.025
    assert 0 < gap <= 1e-4 + 1e-12
    # the joint limit: 70 mm is crossed at s = 0.5, found to 0.1 mm (1/600 of s)
    assert ns["k"] == 0 and 0.5 - 1e-4 / 0.06 - 1e-12 <= ns["s_limit"] <= 0.5


def test_contact_set_prints_a_short_table_by_name():
    """What ``print(sim.contacts)`` shows: a row per contact (the first MAX_ROWS), bodies by name,
    the numbers those of the arrays at the printed precision."""
    from dataclasses import replace

    from graspsim.collision import model_for

    world = graspsim.load_world(ROOT / "worlds/parallel_jaw_box.yaml")
    cs = model_for(world).contacts(world.body_poses())
    assert cs.names == world.table.names
    lines = repr(cs).splitlines()
    assert lines[0] == "ContactSet: 4 contacts (world frame; normal from body_a towards body_b)"
    assert len(lines) == 2 + len(cs) and str(cs) == repr(cs)
    for k, row in enumerate(lines[2:]):
        f = row.replace("[", " ").replace("]", " ").split()
        assert (int(f[0]), f[1], f[2]) == (k, "box", "table")
        np.testing.assert_allclose([float(x) for x in f[3:6]], cs.point[k], atol=5e-5)
        np.testing.assert_allclose([float(x) for x in f[6:9]], cs.normal[k], atol=5e-4)
        assert float(f[9]) == pytest.approx(1e3 * cs.separation[k], abs=5e-5)
        assert "-0.000" not in row                      # values that round to zero print unsigned
    many = cs.select(np.repeat(np.arange(4), 6))          # 24 contacts: the first 20 and a count
    assert many.names == cs.names
    lines = repr(many).splitlines()
    assert len(lines) == 2 + cs.MAX_ROWS + 1 and lines[-1] == f"... and {24 - cs.MAX_ROWS} more"
    unnamed = repr(replace(cs, names=None)).splitlines()  # a set built without names: bodies by index
    assert unnamed[2].split()[1:4] == ["body", str(world.table.index["box"]), "body"]
    assert repr(cs.select(np.zeros(4, bool))).splitlines() == [lines[0].replace("24 contacts", "0 contacts")]


def test_batch_doc(docroot):
    ns, out = run_doc("docs/batch.md")
    import pyarrow.parquet as pq

    from graspsim.batch import prepare

    cfg, run, s, rows = ns["cfg"], ns["run"], ns["s"], ns["rows"]
    assert cfg.seed == 2
    n = len(prepare(cfg)[1])
    assert run.total == run.evaluated == n and run.workers == 2 and run.crashes == 0
    assert run.text() in out and s.text() in out
    with sqlite3.connect(docroot / "seed2.sqlite") as con:
        assert con.execute("SELECT COUNT(*) FROM results").fetchone()[0] == n
        fc_ids = [r[0] for r in con.execute("SELECT id FROM results WHERE force_closure = 1 ORDER BY id")]
        best = [r[0] for r in con.execute("SELECT id FROM results WHERE force_closure = 1 "
                                          "ORDER BY epsilon DESC, id LIMIT 5")]
    assert fc_ids and [r["id"] for r in rows] == fc_ids
    assert s.force_closure == len(fc_ids) and [r["id"] for r in s.best] == best
    assert sorted(p.name for p in (docroot / "plots").glob("*.png")) == ["epsilon_hist.png",
                                                                         "success_vs_direction.png"]
    assert pq.read_table(docroot / "seed2.parquet").num_rows == n


def test_stepper_validation_doc(docroot):
    ns, _ = run_doc("docs/stepper_validation.md")
    sim, X_target = ns["sim"], ns["X_target"]
    assert sim.time == pytest.approx(1.0, abs=1e-9)
    X_E = sim.body_pose("puma/link6") @ ns["X_LE"]
    assert np.linalg.norm(X_E[:3, 3] - X_target[:3, 3]) < 1e-5
    R = X_E[:3, :3].T @ X_target[:3, :3]                                 # orientation kept
    assert np.arccos(np.clip((np.trace(R) - 1) / 2, -1, 1)) < 1e-4

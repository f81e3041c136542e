"""Batch runs whose candidates come from the planner, and batch runs that store robustness
(issue #19): real SQLite files, real planner, real FCL / auto-grasps, compared with direct calls."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim import ModelError
from graspsim.batch import load_config, prepare, read_config, read_results, run_batch, summarize
from graspsim.batch.store import ResultStore
from graspsim.grasp import robustness
from graspsim.planner import plan_grasps
from graspsim.planner.api import ROBUST_DEFAULTS

ROOT = Path(__file__).resolve().parent.parent
JAW = str(ROOT / "worlds" / "parallel_jaw_box.yaml")
PLAN = {"n": 6, "iterations": 300, "restarts": 8, "seed": 0}
ROBUST = {"samples": 5, "seed": 2}
CFG = {"batch": "planned", "world": JAW, "candidates": {"planner": PLAN}, "robustness": ROBUST}


def _jaw():
    return graspsim.load_world(JAW)


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """The configuration run serially into a fresh database, and plan_grasps' own grasps."""
    db = tmp_path_factory.mktemp("planned") / "p.sqlite"
    res = run_batch(CFG, db, progress="off")
    assert res.evaluated == res.total == 6
    grasps = plan_grasps(_jaw(), "gripper", "box", n=6, iterations=300, restarts=8, seed=0)
    return db, read_results(db), grasps


def test_planner_candidates_give_the_planners_verdicts_and_epsilons(planned):
    db, rows, grasps = planned
    assert len(rows) == len(grasps) == 6
    for r, g in zip(rows, grasps):              # the planner's order, one row per planned grasp
        assert r["source"] == "planner" and r["status"] == "ok" and r["approach_stop"] == "planned"
        assert r["force_closure"] == int(g.quality.force_closure)
        assert abs(r["epsilon"] - g.quality.epsilon) <= 1e-9
        assert abs(r["volume"] - g.quality.volume) <= 1e-9
        # the planner's energy and DOFs (planned preshape, closed DOFs) and its base pose, stored
        assert r["planner_energy"] == g.energy
        assert json.loads(r["preshape"]) == g.preshape and json.loads(r["planner_dofs"]) == g.dofs
        assert np.array_equal(np.reshape(json.loads(r["planner_pose"]), (4, 4)), g.base_pose)
        assert np.allclose([r["palm_x"], r["palm_y"], r["palm_z"]], g.palm_pose[:3, 3], atol=1e-12)
        assert np.allclose(json.loads(r["dofs"]), list(g.dofs.values()), atol=1e-12)
    assert sum(r["force_closure"] for r in rows) >= 3


def test_stored_robustness_equals_a_direct_call(planned):
    db, rows, grasps = planned
    fc = [(r, g) for r, g in zip(rows, grasps) if g.quality.force_closure]
    assert fc
    for r, g in fc:
        d = robustness(_jaw(), "gripper", "box", g.pregrasp(), samples=5, seed=2, **ROBUST_DEFAULTS)
        assert (r["rob_p_force_closure"], r["rob_eps_mean"], r["rob_eps_p05"], r["rob_samples"]) == \
               (d.probability, d.mean_epsilon, d.p5_epsilon, 5)
    for r in rows:
        if not r["force_closure"]:
            assert r["rob_samples"] is None
    # the summary lists them best by robustness, most probable first
    s = summarize(db)
    p = [r["rob_p_force_closure"] for r in s.best_robust]
    assert len(s.best_robust) == len(fc) and p == sorted(p, reverse=True)
    assert "grasps by robustness" in s.text()
    # the best grasps' preshapes in the DOF's unit (the jaw's opening is prismatic: mm)
    best = next(g for g in grasps if g.quality.epsilon == max(x.quality.epsilon for x in grasps))
    assert f"opening={best.preshape['opening'] * 1e3:.0f}mm" in s.text()


def test_resume_skips_done_candidates_and_plans_the_same_list(planned, tmp_path):
    _, ref, _ = planned
    db = tmp_path / "r.sqlite"
    first = run_batch(CFG, db, progress="off", limit=2)
    assert first.evaluated == 2 and first.remaining == 4
    # an iterations budget: planning again gives the identical candidate list, the stored one
    cfg = load_config(CFG)
    with ResultStore(db, create=False) as st:
        stored = [c.to_dict() for c in st.stored_candidates(cfg)]
    assert [c.to_dict() for c in prepare(cfg)[1]] == stored
    second = run_batch(CFG, db, progress="off", resume=True)
    assert second.skipped == 2 and second.evaluated == 4
    got = read_results(db, timings=False)
    want = read_results(planned[0], timings=False)
    assert got == want


def test_a_seconds_budget_resumes_with_the_stored_candidates(tmp_path):
    cfg = {"world": JAW, "candidates": {"planner": {"n": 4, "seconds": 0.5, "restarts": 8}}}
    db = tmp_path / "s.sqlite"
    run_batch(cfg, db, progress="off", limit=1)
    with ResultStore(db, create=False) as st:
        stored = st.stored_candidates(load_config(cfg))
    assert stored and all(c.source == "planner" for c in stored)
    run_batch(cfg, db, progress="off", resume=True)
    rows = read_results(db)
    # every row is the stored candidate with its id (a new search would plan other poses)
    assert [r["id"] for r in rows] == [c.id for c in stored]
    for r, c in zip(rows, stored):
        assert json.loads(r["planner_pose"]) == list(c.base_pose) and r["planner_energy"] == c.energy


def test_bad_planner_and_robustness_settings_name_file_line_field(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text(f"""world: {JAW}
candidates:
  directions: {{sphere: 4}}
  planner: {{n: 0, energy: fast, seconds: -1, budget: 3}}
robustness: {{samples: 0, friction: 1.5, closing: wobbly}}
""")
    with pytest.raises(ModelError) as ei:
        load_config(p)
    text = "\n".join(str(e) for e in getattr(ei.value, "errors", [ei.value]))
    assert f"{p}:3: candidates.directions: the approach grid's keys do not go with 'candidates.planner'" in text
    assert f"{p}:4: candidates.planner.n: must be >= 1, got 0" in text
    assert f"{p}:4: candidates.planner.energy: 'fast' is not one of contact, quality" in text
    assert f"{p}:4: candidates.planner.seconds: must be > 0" in text
    assert f"{p}:4: candidates.planner.budget: unknown key 'budget'" in text
    assert f"{p}:5: robustness.samples: must be >= 1, got 0" in text
    assert f"{p}:5: robustness.friction: must be in [0, 1)" in text
    assert f"{p}:5: robustness.closing: 'wobbly' is not one of static, centred, dynamic" in text


def test_an_old_database_gets_the_new_columns(tmp_path):
    from graspsim.batch.store import COLUMNS

    cfg = {"world": JAW, "candidates": {"directions": {"list": [[0, 0, -1], [0, 1, -1]]}}}
    db = tmp_path / "old.sqlite"
    run_batch(cfg, db, progress="off", limit=1)
    new = ["planner_energy", "planner_dofs", "planner_pose", "rob_p_force_closure", "rob_eps_mean", "rob_eps_p05",
           "rob_samples", "t_robust"]
    con = sqlite3.connect(db)                 # the table as the first release wrote it
    for c in new:
        con.execute(f"ALTER TABLE results DROP COLUMN {c}")
    con.commit()
    con.close()
    rows = read_results(db)                   # read-only: the missing columns read as NULL
    assert len(rows) == 1 and all(rows[0][c] is None for c in new)
    assert "grasps by robustness" not in summarize(db).text()
    # the grid configuration's hash did not change: it resumes, and the table is migrated
    res = run_batch(cfg, db, progress="off", resume=True)
    assert res.skipped == 1 and res.evaluated == 1
    con = sqlite3.connect(db)
    have = [r[1] for r in con.execute("PRAGMA table_info(results)")]
    con.close()
    assert sorted(have) == sorted(c[0] for c in COLUMNS)


def test_a_hand_on_an_arm_is_planned_and_evaluated_alone(tmp_path):
    from graspsim.planner import free_hand_world

    handset = str(ROOT / "worlds" / "puma_barrett_handset.yaml")
    cfg = {"world": handset, "hand": "barrett", "objects": ["handset"],
           "candidates": {"planner": {"n": 3, "iterations": 100, "restarts": 4}}}
    db = tmp_path / "h.sqlite"
    run_batch(cfg, db, progress="off")
    rows = read_results(db)
    grasps = plan_grasps(graspsim.load_world(handset), "barrett", "handset", n=3, iterations=100, restarts=4)
    assert len(rows) == len(grasps) == 3
    for r, g in zip(rows, grasps):
        assert r["status"] == "ok" and r["force_closure"] == int(g.quality.force_closure)
        assert abs(r["epsilon"] - g.quality.epsilon) <= 1e-9
    # the grid still needs an unmounted hand
    with pytest.raises(ModelError, match="is mounted on 'puma'"):
        load_config({"world": handset, "hand": "barrett"})
    assert free_hand_world(graspsim.load_world(handset), "barrett").robots["barrett"].instance.mount is None


def test_two_worker_processes_store_the_serial_rows(planned, tmp_path):
    db = tmp_path / "w.sqlite"
    res = run_batch(CFG, db, workers=2, progress="off")
    assert res.backend == "processes" and res.evaluated == 6
    assert read_results(db, timings=False) == read_results(planned[0], timings=False)


def test_command_line_planner_and_robustness_flags(tmp_path, capsys):
    from graspsim.cli import main

    db = tmp_path / "c.sqlite"
    assert main(["batch", "--world", JAW, "--planner", "3", "--plan-iterations", "150", "--robustness", "2",
                 "--db", str(db), "--progress", "off"]) == 0
    rows = read_results(db)
    cfg = load_config({"world": JAW, "candidates": {"planner": {"n": 3, "iterations": 150}},
                       "robustness": {"samples": 2}})
    assert read_config(db)["config_hash"] == cfg.config_hash()       # the flags are the file's keys
    assert len(rows) == 3 and all(r["source"] == "planner" for r in rows)
    assert all((r["rob_samples"] == 2) == bool(r["force_closure"]) for r in rows)
    capsys.readouterr()
    assert main(["batch", "--world", JAW, "--planner", "3", "--sphere", "4", "--db", str(tmp_path / "x.sqlite")]) == 2
    assert capsys.readouterr().err.strip() == ("error: <command line>: candidates.directions: the approach grid's "
                                               "keys do not go with 'candidates.planner' (the planner chooses the "
                                               "hand's pose and preshape); remove one of them")

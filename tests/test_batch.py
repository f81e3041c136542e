"""Batch grasp evaluation (graspsim.batch): determinism, parallel and Dask runs identical to the
serial run, interrupt + resume, failures recorded, export round trips, summaries.

Real SQLite files, real worker processes, a real Dask LocalCluster, a real runner subprocess
killed with SIGINT and SIGKILL.  Candidate counts are small to keep the module fast.
"""
from __future__ import annotations

import io
import json
import math
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml

import graspsim
from graspsim import ModelError
from graspsim.batch import (BatchError, RESULT_COLUMNS, export_results, generate_candidates, load_config,
                            read_config, read_results, run_batch, summarize)
from graspsim.batch.candidates import approach_frame, object_geometry
from graspsim.batch.config import load_scene_world
from graspsim.batch.progress import Progress
from graspsim.batch.store import read_csv

ROOT = Path(__file__).resolve().parent.parent
WORLD = str(ROOT / "worlds" / "barrett_mug.yaml")

# ~28 candidates: sphere directions from above/the side, straight down, and one horizontal
# direction whose pre-grasp pose sits in the table
SMALL = {"batch": "small", "seed": 7, "world": WORLD, "hand": "barrett", "objects": ["mug"],
         "candidates": {"directions": {"sphere": 10, "list": [[0, 0, -1], [1, 0, 0]],
                                       "within": {"axis": [0, 0, -1], "angle": math.radians(95)}},
                        "rolls": 2, "standoffs": [0.0, 0.14]}}


def _db(tmp_path, name):
    return tmp_path / f"{name}.sqlite"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The small configuration evaluated serially: (db path, rows without timings)."""
    db = tmp_path_factory.mktemp("batch_ref") / "ref.sqlite"
    res = run_batch(SMALL, db, progress="off")
    assert res.evaluated == res.total and not res.interrupted
    return db, read_results(db, timings=False)


def _same(rows_a, rows_b):
    assert [r["id"] for r in rows_a] == [r["id"] for r in rows_b]
    for a, b in zip(rows_a, rows_b):
        diff = {k: (a[k], b[k]) for k in a if a[k] != b[k]}
        assert not diff, f"candidate {a['id']} differs: {diff}"


# -- configuration ---------------------------------------------------------------------------------

def test_batch_file_errors_name_file_line_field(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text(f"""batch: bad
world: {WORLD}
hand: barret
candidates:
  directions: {{sphere: -3}}
  rollz: 4
  standoffs: [0, -5]
evaluation: {{mode: fast}}
""")
    with pytest.raises(ModelError) as ei:
        load_config(p)
    errs = [str(e) for e in getattr(ei.value, "errors", [ei.value])]
    text = "\n".join(errs)
    assert f"{p}:5: candidates.directions.sphere: must be >= 0" in text
    assert f"{p}:6: candidates.rollz: unknown key 'rollz' (did you mean 'rolls'?)" in text
    assert f"{p}:7: candidates.standoffs[1]: must be >= 0" in text
    assert f"{p}:8: evaluation.mode: 'fast' is not one of static, dynamic" in text
    # a value out of range is quoted as the file wrote it, in its units (not -0.005 m for -5 mm)
    p.write_text(f"batch: bad\nunits: {{length: mm}}\nworld: {WORLD}\nhand: barrett\ncandidates: {{clearance: -5}}\n"
                 "evaluation: {dynamic: {lift_height: '-2 cm'}}\n")
    with pytest.raises(ModelError) as ei:
        load_config(p)
    text = "\n".join(str(e) for e in getattr(ei.value, "errors", [ei.value]))
    assert "candidates.clearance: must be >= 0, got -5" in text and "-0.005" not in text
    assert "evaluation.dynamic.lift_height: must be > 0, got -2 cm" in text
    # names are checked against the world once the structure is sound
    p.write_text(f"batch: bad\nworld: {WORLD}\nhand: barret\ncandidates: {{preshapes: [{{spred: 0}}]}}\n")
    with pytest.raises(ModelError) as ei:
        load_config(p)
    assert str(ei.value) == f"{p}:3: hand: world 'barrett_mug' has no robot 'barret' (did you mean 'barrett'?); " \
                            "robots: barrett"
    p.write_text(f"batch: bad\nunits: {{angle: deg}}\nworld: {WORLD}\nhand: barrett\n"
                 "candidates:\n  preshapes:\n    - {spred: 0}\n    - {spread: 200}\n")
    with pytest.raises(ModelError) as ei:
        load_config(p)
    text = "\n".join(str(e) for e in getattr(ei.value, "errors", [ei.value]))
    assert f"{p}:7: candidates.preshapes[0].spred: robot 'barrett' has no DOF 'spred' (did you mean 'spread'?)" in text
    assert f"{p}:8: candidates.preshapes[1].spread: 200 deg is outside the DOF limits [0, 180] deg" in text


def test_mounted_hand_is_refused_with_a_clear_message():
    with pytest.raises(ModelError, match="mounted on 'puma'.*needs an unmounted hand"):
        load_config({"batch": "m", "world": str(ROOT / "worlds" / "puma_barrett_handset.yaml"), "hand": "barrett"})


def test_config_hash_ignores_paths_and_output_but_not_candidates():
    a = load_config(SMALL)
    b = load_config(dict(SMALL, output="elsewhere.sqlite"))
    c = load_config(dict(SMALL, seed=8))
    assert a.config_hash() == b.config_hash() != c.config_hash()
    assert json.loads(json.dumps(a.to_dict())) == a.to_dict()


# -- candidates ------------------------------------------------------------------------------------

def _geometries(cfg):
    return {s["object"]: object_geometry(load_scene_world(s), s["object"]) for s in cfg.scenes}


def test_candidates_are_deterministic_and_complete():
    cfg = load_config(dict(SMALL, candidates=dict(SMALL["candidates"], directions={
        "sphere": 40, "normals": 6, "list": [[0, 0, -1]], "within": {"axis": [0, 0, -1], "angle": math.radians(90)}})))
    geo = _geometries(cfg)
    c1, c2 = generate_candidates(cfg, geo), generate_candidates(cfg, geo)
    assert [c.to_dict() for c in c1] == [c.to_dict() for c in c2]
    assert [c.id for c in c1] == list(range(len(c1)))
    other = generate_candidates(load_config(dict(SMALL, seed=99, candidates=dict(SMALL["candidates"],
                                                                                  directions={"sphere": 40}))), geo)
    assert {c.direction for c in other} != {c.direction for c in c1}
    per_dir = len(cfg.candidates["rolls"]) * len(cfg.candidates["standoffs"]) * len(cfg.candidates["preshapes"])
    src = Counter(c.source for c in c1)
    assert src["normal"] == 6 * per_dir and src["list"] == per_dir
    assert 0.4 * 40 * per_dir <= src["sphere"] <= 0.6 * 40 * per_dir      # a hemisphere of 40 even directions
    import trimesh

    g = geo["mug"]
    mesh = trimesh.Trimesh(g.vertices, g.faces, process=False)
    for c in c1:
        d = np.array(c.direction)
        assert abs(np.linalg.norm(d) - 1) < 1e-12 and d[2] <= 1e-9       # within 90 deg of straight down
        if c.source == "normal":                                         # on the mug's surface
            _, dist, _ = mesh.nearest.on_surface([c.target])
            assert dist[0] < 1e-9
        else:
            assert np.allclose(c.target, g.com)


def test_approach_frame_reproduces_the_shipped_palm_down_pose():
    w = graspsim.load_world(WORLD)
    h = w.robots["barrett"]
    R_world = h.palm_pose[:3, :3]                      # rpy [180, 0, 0] in worlds/barrett_mug.yaml
    R = approach_frame([0, 0, -1], 0.0) @ approach_frame(h.description.approach, 0.0).T
    assert np.allclose(R, R_world, atol=1e-12)
    F = approach_frame([0.3, -0.4, 0.5], 1.1)
    assert np.allclose(F.T @ F, np.eye(3), atol=1e-12) and np.isclose(np.linalg.det(F), 1.0)
    assert np.allclose(F[:, 2], np.array([0.3, -0.4, 0.5]) / np.linalg.norm([0.3, -0.4, 0.5]))


# -- evaluation ------------------------------------------------------------------------------------

def test_serial_runs_are_identical(reference, tmp_path):
    db, ref = reference
    res = run_batch(SMALL, _db(tmp_path, "again"), progress="off")
    assert res.evaluated == len(ref)
    _same(ref, read_results(_db(tmp_path, "again"), timings=False))
    assert set(RESULT_COLUMNS) <= set(ref[0])


def test_top_down_candidate_equals_direct_static_auto_grasp(reference):
    """The straight-down candidate with a 140 mm stand-off stops above the mug without touching
    it (palm at the target + 140 mm, palm down); its row must equal static_auto_grasp there."""
    _, rows = reference
    r = next(x for x in rows if x["source"] == "list" and x["dir_z"] == -1.0 and x["roll"] == 0.0
             and x["standoff"] == 0.14)
    assert r["status"] == "ok" and r["approach_stop"] == "standoff"
    target = np.array([r["target_x"], r["target_y"], r["target_z"]])
    assert np.allclose([r["palm_x"], r["palm_y"], r["palm_z"]], target + [0, 0, 0.14], atol=1e-12)
    assert np.allclose([r["palm_qw"], r["palm_qx"], r["palm_qy"], r["palm_qz"]], [0, 1, 0, 0], atol=1e-12)
    w = graspsim.load_world(WORLD)
    assert np.allclose(target, w.bodies["mug"].com_world)
    h = w.robots["barrett"]
    start = w.save_state()
    # the pose by the documented rule (palm = base link for the Barrett): the same numbers exactly
    X = np.eye(4)
    X[:3, :3] = approach_frame([0, 0, -1], 0.0) @ approach_frame(h.description.approach, 0.0).T
    X[:3, 3] = target + [0, 0, 0.14]
    h.base_pose = X
    res = graspsim.control.static_auto_grasp(w, "barrett", obj="mug", gws="L1")
    assert res.quality.force_closure and r["force_closure"] == 1
    assert r["epsilon"] == res.quality.epsilon > 0.05
    assert r["volume"] == res.quality.volume
    assert r["n_contacts"] == len(res.grasp_contacts) >= 3
    assert json.loads(r["dofs"]) == [float(x) for x in res.dofs]
    # and the world file's own palm-down orientation (rpy 180 deg, rounded differently) agrees
    w.restore_state(start)
    X = h.base_pose
    X[:3, 3] = target + [0, 0, 0.14]
    h.base_pose = X
    res2 = graspsim.control.static_auto_grasp(w, "barrett", obj="mug", gws="L1")
    assert math.isclose(res2.quality.epsilon, r["epsilon"], rel_tol=1e-9)


def test_outcomes_force_closure_and_pregrasp_collisions_recorded(reference):
    _, rows = reference
    st = Counter(r["status"] for r in rows)
    assert st["ok"] > 0 and st["pregrasp_collision"] > 0 and st.get("error", 0) == 0
    ok = [r for r in rows if r["status"] == "ok"]
    assert sum(r["force_closure"] for r in ok) / len(ok) > 0.2
    for r in ok:
        assert r["approach_stop"] in ("contact", "standoff")
        assert (r["epsilon"] > 0) == bool(r["force_closure"])
        if r["approach_stop"] == "contact":
            assert r["touched"] in ("mug", "table", "mug;table")
    # horizontal approach at the mug's centre of mass height: the open hand sits in the table
    horiz = [r for r in rows if r["source"] == "list" and r["dir_x"] == 1.0]
    assert len(horiz) == 4
    for r in horiz:
        assert r["status"] == "pregrasp_collision" and "table" in r["collision"]
        assert r["epsilon"] is None and r["approach_stop"] is None


def test_two_workers_from_an_unguarded_script_identical_to_serial(reference, tmp_path):
    """The README's API block as a script without an `if __name__ == "__main__":` guard: the worker
    processes must not run the script again (it would call run_batch in each of them)."""
    _, ref = reference
    cfg_file = tmp_path / "small.yaml"
    cfg_file.write_text(yaml.safe_dump(SMALL))
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import sys\n"
        "from graspsim.batch import run_batch\n"
        "with open(sys.argv[3], 'a') as f:\n"
        "    f.write('top level ran\\n')\n"
        "res = run_batch(sys.argv[1], sys.argv[2], workers=2, chunk_size=3, progress='off')\n"
        "print(res.backend, res.workers, res.evaluated)\n")
    db, marks = _db(tmp_path, "w2"), tmp_path / "marks.txt"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    p = subprocess.run([sys.executable, str(script), str(cfg_file), str(db), str(marks)], capture_output=True,
                       text=True, cwd=str(tmp_path), env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["processes", "2", str(len(ref))]
    assert marks.read_text() == "top level ran\n"          # once: in the parent only
    rows = read_results(db)
    assert len({r["worker"] for r in rows}) == 2          # both processes evaluated candidates
    _same(ref, read_results(db, timings=False))


def test_run_batch_in_a_starting_process_refuses_and_leaves_the_database_alone(tmp_path):
    """What a Dask worker restart does with an unguarded script: a process started with 'spawn'
    runs the script again while it starts; run_batch there must refuse, saying what to do."""
    script = tmp_path / "restarted.py"
    script.write_text(
        "import multiprocessing as mp, sys\n"
        "from graspsim.batch import BatchError, run_batch\n"
        "if __name__ != '__main__':          # the child, importing this script while it starts\n"
        "    try:\n"
        "        run_batch(sys.argv[1], sys.argv[2], progress='off')\n"
        "    except BatchError as e:\n"
        "        print('child:', e, flush=True)\n"
        "if __name__ == '__main__':\n"
        "    p = mp.get_context('spawn').Process(target=print, args=('target ran',))\n"
        "    p.start(); p.join(); sys.exit(p.exitcode)\n")
    cfg_file = tmp_path / "small.yaml"
    cfg_file.write_text(yaml.safe_dump(SMALL))
    db = _db(tmp_path, "untouched")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    p = subprocess.run([sys.executable, str(script), str(cfg_file), str(db)], capture_output=True, text=True,
                       cwd=str(tmp_path), env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["child: run_batch was called while a new process was starting up and running "
                                     "the main script again (e.g. a Dask worker process); put the script's main "
                                     "code under 'if __name__ == \"__main__\":'", "target ran"]
    assert not db.exists() and not Path(f"{db}.lock").exists()


def test_dask_local_cluster_identical_to_serial(reference, tmp_path, capsys):
    from distributed import Client, LocalCluster

    _, ref = reference
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None, protocol="tcp://",
                      host="127.0.0.1") as cl:
        # by scheduler address, as `graspsim batch --scheduler ADDRESS` does
        assert cl.scheduler_address.startswith("tcp://127.0.0.1:")
        res = run_batch(SMALL, _db(tmp_path, "dask"), scheduler=cl.scheduler_address, chunk_size=4, progress="off")
        assert res.backend == "dask" and res.workers == 2 and res.evaluated == len(ref)
        assert "warning" not in capsys.readouterr().err       # plain tcp on the loopback interface: no warning
        _same(ref, read_results(_db(tmp_path, "dask"), timings=False))
        # with a Client of the caller's; resuming a partly filled database on Dask
        with Client(cl) as client:
            db = _db(tmp_path, "dask2")
            run_batch(dict(SMALL, candidates=dict(SMALL["candidates"], standoffs=[0.0, 0.14])), db,
                      client=client, chunk_size=5, progress="off")
            with sqlite3.connect(db) as con:
                con.execute("DELETE FROM results WHERE id % 3 = 1")
            res = run_batch(SMALL, db, client=client, resume=True, chunk_size=5, progress="off")
            assert res.skipped == len(ref) - res.evaluated and res.evaluated >= len(ref) // 3
    _same(ref, read_results(db, timings=False))


def test_candidate_that_raises_is_recorded_and_the_run_goes_on(reference, tmp_path):
    _, ref = reference
    bad = [r["id"] for r in ref if r["status"] == "ok"][:2]
    db = _db(tmp_path, "raise")
    res = run_batch(SMALL, db, progress="off", _faults={bad[0]: "raise", bad[1]: "raise"})
    assert res.evaluated == len(ref) and res.counts["error"] == 2
    rows = read_results(db, timings=False)
    for r in rows:
        if r["id"] in bad:
            assert r["status"] == "error" and r["error_kind"] == "SimulationError"
            assert r["error_stage"] == "pregrasp" and "injected failure" in r["error"]
    _same([r for r in ref if r["id"] not in bad], [r for r in rows if r["id"] not in bad])
    s = summarize(db)
    assert s.errors == [("SimulationError", "pregrasp", 2, s.errors[0][3])] and s.outcomes["error"] == 2
    assert "SimulationError (pregrasp): 2" in s.text() and re.search(r"^  error +2 ", s.text(), re.M)


def test_crashed_worker_candidates_are_requeued_or_recorded(reference, tmp_path):
    """A worker that dies once: its candidates run again (alone) and the table is unchanged.
    A candidate that kills every worker: recorded as WorkerCrash after max_attempts."""
    _, ref = reference
    ok = [r["id"] for r in ref if r["status"] == "ok"]
    once, always = ok[1], ok[-1]
    cfg = dict(SMALL, evaluation={"max_attempts": 2})
    db = _db(tmp_path, "crash")
    res = run_batch(cfg, db, workers=2, chunk_size=4, progress="off",
                    _faults={once: f"exit-once:{tmp_path / 'crashed'}", always: "exit"})
    assert res.crashes == 3 and res.evaluated == len(ref)
    rows = read_results(db, timings=False)
    r = next(x for x in rows if x["id"] == always)
    assert r["status"] == "error" and r["error_kind"] == "WorkerCrash" and "died 2 time(s)" in r["error"]
    _same([x for x in ref if x["id"] != always], [x for x in rows if x["id"] != always])
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == 0


# -- interruption and resume -----------------------------------------------------------------------

# (enough candidates that a run lasts about a second: the interrupt and the kill below must come
# while it still has work, at ~200 static candidates per second)
KILL = dict(SMALL, batch="kill", candidates=dict(SMALL["candidates"], standoffs=[0.0, 0.06, 0.14],
                                                 directions={"sphere": 64, "list": [[0, 0, -1]],
                                                             "within": {"axis": [0, 0, -1], "angle": math.radians(95)}}))


def _count(db):
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
            return con.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.Error:
        return 0


def _start(cfg_file, db, *extra):
    return subprocess.Popen([sys.executable, "-m", "graspsim.cli", "batch", str(cfg_file), "--db", str(db),
                             "--chunk", "2", "--progress", "lines", "--progress-interval", "0.2", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))


def _wait_rows(proc, db, n, timeout=60.0):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if _count(db) >= n:
            return
        if proc.poll() is not None:
            raise AssertionError(f"runner ended early: {proc.returncode}\n{proc.stderr.read()}")
        time.sleep(0.01)
    raise AssertionError("no results appeared")


def test_interrupt_and_kill_then_resume_gives_the_uninterrupted_table(tmp_path):
    cfg_file = tmp_path / "kill.yaml"
    cfg_file.write_text(yaml.safe_dump(KILL))
    db = _db(tmp_path, "killed")
    total = len(generate_candidates(load_config(KILL), _geometries(load_config(KILL))))
    # the uninterrupted run first: it also compiles every kernel these candidates need (a Ctrl-C
    # that reached the runner while numba compiled, with a fresh cache in CI, was not seen until
    # the run had finished: exit 0)
    ref_db = _db(tmp_path, "uninterrupted")
    run_batch(KILL, ref_db, progress="off")
    # 1. Ctrl-C (SIGINT): a clean stop, exit code 130, a hint to resume
    p = _start(cfg_file, db)
    _wait_rows(p, db, 4)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "interrupted" in err and "--resume" in err
    n1 = _count(db)
    assert 4 <= n1 < total, (n1, total, err)       # (the SIGINT must arrive before the run's end)
    # without --resume the database is not touched
    p = _start(cfg_file, db)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 2 and "already holds a run" in err and "--resume" in err
    # 2. resumed, then SIGKILL mid-run
    p = _start(cfg_file, db, "--resume")
    _wait_rows(p, db, n1 + 4)
    p.kill()
    p.wait(timeout=30)
    n2 = _count(db)
    assert n1 + 4 <= n2 < total, (n1, n2, total)
    # 3. resumed in this process: completes; identical to an uninterrupted run
    res = run_batch(str(cfg_file), db, resume=True, progress="off")
    assert res.skipped == n2 and res.evaluated == total - n2
    rows = read_results(db, timings=False)
    assert [r["id"] for r in rows] == list(range(total))      # none lost, none twice
    _same(read_results(ref_db, timings=False), rows)
    with sqlite3.connect(db) as con:
        sessions = [r[0] for r in con.execute("SELECT status FROM sessions ORDER BY session")]
    assert sessions == ["interrupted", "killed", "completed"]
    # a finished run resumed again: nothing to do
    again = run_batch(str(cfg_file), db, resume=True, progress="off")
    assert again.evaluated == 0 and again.skipped == total


def test_resume_refuses_a_different_configuration(reference, tmp_path):
    db = _db(tmp_path, "cfg")
    run_batch(dict(SMALL, candidates=dict(SMALL["candidates"], rolls=1, standoffs=[0.14])), db, progress="off")
    with pytest.raises(BatchError, match="cannot resume.*different configuration"):
        run_batch(dict(SMALL, seed=8), db, resume=True, progress="off")
    with pytest.raises(BatchError, match="already holds a run"):
        run_batch(SMALL, db, progress="off")
    res = run_batch(SMALL, db, overwrite=True, progress="off")
    _same(reference[1], read_results(db, timings=False))
    assert res.skipped == 0


def test_a_finished_database_is_one_file_and_reading_it_leaves_none_behind(reference, tmp_path):
    """After a run the results database is a single file (no -wal/-shm beside it); reading it
    (rows, summary, export) creates none, and a resumed run still finds every row."""
    db = _db(tmp_path, "one")
    cfg = dict(SMALL, candidates=dict(SMALL["candidates"], rolls=1, standoffs=[0.14]))
    run_batch(cfg, db, progress="off")
    side = lambda: sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(db.name + "-"))
    assert side() == []
    n = len(read_results(db))
    summarize(db)
    export_results(db, tmp_path / "r.csv")
    assert side() == []
    res = run_batch(cfg, db, resume=True, progress="off")
    assert res.skipped == n and len(read_results(db)) == n and side() == []
    # one column may be named by a string (it was read as its letters: "unknown result columns: s, t, a, ...")
    assert read_results(db, columns="status") == [{"status": r["status"]} for r in read_results(db)]
    for bad in (5, None):
        with pytest.raises(ValueError, match="a results database is a file path, got "):
            summarize(bad)


# -- output --------------------------------------------------------------------------------------------

def test_export_csv_and_parquet_round_trip(reference, tmp_path):
    import pyarrow.parquet as pq

    db, _ = reference
    rows = read_results(db)
    csv_path = export_results(db, tmp_path / "r.csv")
    assert read_csv(csv_path) == rows                      # floats at full precision, NULLs kept
    pq_path = export_results(db, tmp_path / "r.parquet")
    t = pq.read_table(pq_path)
    assert t.to_pylist() == rows
    meta = {k.decode(): v.decode() for k, v in t.schema.metadata.items()}
    assert meta["graspsim.config_hash"] == read_config(db)["config_hash"]
    assert json.loads(meta["graspsim.config"])["name"] == "small"
    with pytest.raises(ValueError, match="export format"):
        export_results(db, tmp_path / "r.txt")


def test_run_config_table_holds_configuration_and_version(reference):
    db, rows = reference
    meta = read_config(db)
    assert meta["graspsim_version"] == graspsim.__version__
    assert meta["config"]["name"] == "small" and int(meta["n_candidates"]) == len(rows)
    assert meta["config_hash"] == load_config(SMALL).config_hash()


def _expected_outcomes(rows):
    """Outcome counts of a static run, computed from the rows independently of graspsim.batch."""
    ok = [r for r in rows if r["status"] == "ok"]
    return {"force_closure": sum(1 for r in ok if r["force_closure"]),
            "no_force_closure": sum(1 for r in ok if not r["force_closure"] and r["n_contacts"] > 0),
            "no_contact": sum(1 for r in ok if r["n_contacts"] == 0),
            "pregrasp_collision": sum(1 for r in rows if r["status"] == "pregrasp_collision"),
            "error": sum(1 for r in rows if r["status"] == "error")}


def test_summary_counts_add_up_and_name_the_failures(reference, capsys):
    """#16: 'failures: none' was printed next to 29 % pre-grasp collisions.  Every candidate has one
    outcome; the outcome counts, the success and the failures add up to the candidates, and the
    text says what each failure is."""
    from graspsim.cli import main

    db, rows = reference
    s = summarize(db, top=3)
    exp = _expected_outcomes(rows)
    n = len(rows)
    assert exp["pregrasp_collision"] > 0 and exp["force_closure"] > 0 and exp["no_force_closure"] > 0
    assert s.outcomes == exp and sum(s.outcomes.values()) == s.evaluated == s.total == n
    assert s.success == exp["force_closure"] and s.success + sum(s.failures.values()) == n
    assert s.by_status == dict(Counter(r["status"] for r in rows))
    fc = [r for r in rows if r["force_closure"]]
    assert s.force_closure == len(fc) and sorted(s.epsilon) == sorted(r["epsilon"] for r in fc)
    assert [r["id"] for r in s.best] == [r["id"] for r in sorted(fc, key=lambda r: (-r["epsilon"], r["id"]))[:3]]
    # the bodies the open hand overlapped, from the collision pairs ('barrett/link-body; ...')
    hit = Counter(b for r in rows if r["status"] == "pregrasp_collision"
                  for b in {x for pair in r["collision"].split("; ") for x in pair.split("-")
                            if not x.startswith("barrett/")})
    assert s.collisions == dict(hit) and hit["table"] == exp["pregrasp_collision"]
    from graspsim.batch.summary import _overlapped
    assert _overlapped({"collision": "barrett/palm-coffee-mug; shelf-2-barrett/f1_dist; barrett/f2_dist-table"},
                       "barrett") == {"coffee-mug", "shelf-2", "table"}      # body names with '-'

    assert main(["results", "summary", str(db), "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "failures: none" not in out
    assert f"candidates: {n}; evaluated: {n}" in out and "not evaluated yet" not in out
    labels = {"force_closure": "force closure", "no_force_closure": "no force closure", "no_contact": "no contact",
              "pregrasp_collision": "pre-grasp collision", "error": "error"}
    for k, label in labels.items():
        m = re.search(rf"^  {label} +(\d+) +([\d.]+)%  (.+)$", out, re.M)
        assert m, f"no outcome line for {label}:\n{out}"
        assert int(m[1]) == exp[k] and m[2] == f"{100 * exp[k] / n:.1f}"
    assert re.search(rf"^  total +{n} +100.0%$", out, re.M)
    assert re.search(r"pre-grasp collision +\d+ +[\d.]+%  the open hand already overlapped another body at its "
                     r"start pose", out)
    nf = n - exp["force_closure"]
    assert (f"success (force closure): {exp['force_closure']} of {n} evaluated candidates "
            f"({100 * exp['force_closure'] / n:.1f}%); {exp['force_closure']} of the "
            f"{n - exp['pregrasp_collision'] - exp['error']} that reached the grasp") in out
    assert (f"failures: {nf} of {n} evaluated candidates ({100 * nf / n:.1f}%) did not reach force closure: "
            f"no force closure {exp['no_force_closure']}") in out
    assert f"pre-grasp collision {exp['pregrasp_collision']}" in out.split("failures:")[1]
    assert f"overlapped: table {exp['pregrasp_collision']}" in out
    assert "best 3 grasps" in out and f"n={exp['force_closure']})" in out


def test_summary_plots_keep_text_and_points_inside(reference, tmp_path, capsys):
    """#16: the epsilon histogram's title was cut and the straight-down approach half clipped.
    Measured on the drawn figures: every text inside the figure (and every text of an axes inside
    it), every direction marker whole inside its axes."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import PathCollection

    from graspsim.batch.summary import summary_figures
    from graspsim.cli import main

    db, rows = reference
    s = summarize(db)
    s.name = "a rather long batch name that used to run off the figure"
    figs = summary_figures(s)
    assert [f for f, _ in figs] == ["epsilon_hist.png", "success_vs_direction.png"]
    tol = 0.5                                               # pixels
    for name, fig in figs:
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        W, H = fig.bbox.width, fig.bbox.height
        # everything drawn (titles, labels, tick labels, colour bar) within the figure
        tight = fig.get_tightbbox(r).transformed(fig.dpi_scale_trans)
        assert tight.x0 >= -tol and tight.y0 >= -tol and tight.x1 <= W + tol and tight.y1 <= H + tol, \
            f"{name}: drawn extent {tight} outside the figure ({W} x {H})"
        texts = [t for ax in fig.axes for t in (ax.title, ax.xaxis.label, ax.yaxis.label) if t.get_text()]
        assert len(texts) >= 3
        for t in texts:
            bb = t.get_window_extent(r)
            assert bb.x0 >= -tol and bb.y0 >= -tol and bb.x1 <= W + tol and bb.y1 <= H + tol, \
                f"{name}: text {t.get_text()!r} at {bb} outside the figure ({W} x {H})"
        for ax in fig.axes:
            for t in ax.texts:                              # the bar counts: inside their axes
                bb = t.get_window_extent(r)
                assert ax.bbox.x0 - tol <= bb.x0 and bb.x1 <= ax.bbox.x1 + tol
                assert ax.bbox.y0 - tol <= bb.y0 and bb.y1 <= ax.bbox.y1 + tol, f"{t.get_text()!r} above its axes"
    title = figs[0][1].axes[0].get_title()
    assert s.name in title.replace("\n", " ") and f"{len(s.epsilon)} force-closure grasps of {len(rows)}" in title
    fig = figs[1][1]
    ax = fig.axes[1]
    pts = [c for c in ax.collections if isinstance(c, PathCollection)][0]
    xy = ax.transData.transform(pts.get_offsets())
    radius = np.sqrt(pts.get_sizes()[0]) / 2 * fig.dpi / 72.0  # marker size is an area in points^2
    n_dirs = len({(r["dir_x"], r["dir_y"], r["dir_z"]) for r in rows})
    assert len(xy) == n_dirs
    down = np.argmin(pts.get_offsets()[:, 1])
    assert pts.get_offsets()[down, 1] == -90.0                # straight down is one of the directions
    assert np.all(xy[:, 0] - radius >= ax.bbox.x0) and np.all(xy[:, 0] + radius <= ax.bbox.x1)
    assert np.all(xy[:, 1] - radius >= ax.bbox.y0) and np.all(xy[:, 1] + radius <= ax.bbox.y1)
    for _, f in figs:
        plt.close(f)
    # and as files, through the command line
    assert main(["results", "summary", str(db), "--plots", str(tmp_path / "plots")]) == 0
    for f in ("epsilon_hist.png", "success_vs_direction.png"):
        data = (tmp_path / "plots" / f).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert main(["results", "export", str(db), str(tmp_path / "x.csv"), "--no-timings"]) == 0
    assert f"exported {len(rows)} rows" in capsys.readouterr().out
    assert read_csv(tmp_path / "x.csv") == rows


def test_limit_evaluates_an_even_spread_and_resume_completes(reference, tmp_path, capsys):
    from graspsim.cli import main

    _, ref = reference
    n = len(ref)
    cfg_file = tmp_path / "small.yaml"
    cfg_file.write_text(yaml.safe_dump(SMALL))
    db = _db(tmp_path, "limit")
    assert main(["batch", str(cfg_file), "--db", str(db), "--limit", "7", "--progress", "off"]) == 0
    out = capsys.readouterr().out
    rows = read_results(db, timings=False)
    ids = [(i * n) // 7 for i in range(7)]
    assert [r["id"] for r in rows] == ids                   # spread over all candidates, not the first 7
    _same([r for r in ref if r["id"] in ids], rows)
    exp = {k: v for k, v in _expected_outcomes(rows).items() if v}
    labels = {"force_closure": "force closure", "no_force_closure": "no force closure", "no_contact": "no contact",
              "pregrasp_collision": "pre-grasp collision", "error": "error"}
    counted = ", ".join(f"{labels[k]} {v}" for k, v in exp.items())
    assert f"{n} candidates; 0 already done, 7 evaluated now (in this process): {counted}; " \
           f"{n - 7} not evaluated yet (--limit 7): continue with --resume" in out
    s = summarize(db)
    assert s.evaluated == 7 and sum(s.outcomes.values()) == 7
    assert f"candidates: {n}; evaluated: 7; not evaluated yet: {n - 7}" in s.text()
    # the rest
    assert main(["batch", str(cfg_file), "--db", str(db), "--resume", "--progress", "off"]) == 0
    assert f"7 already done, {n - 7} evaluated now" in capsys.readouterr().out
    _same(ref, read_results(db, timings=False))
    with pytest.raises(SystemExit):
        main(["batch", str(cfg_file), "--db", str(db), "--limit", "0"])
    assert "'0' is not a whole number >= 1" in capsys.readouterr().err
    with pytest.raises(BatchError, match="limit must be a whole number >= 1"):
        run_batch(SMALL, _db(tmp_path, "nolimit"), limit=0)
    assert not _db(tmp_path, "nolimit").exists()
    # other arguments of the wrong kind: named, nothing created (a zero chunk size had been
    # range()'s "arg 3 must not be zero", a number for the configuration os.fspath's TypeError)
    for kw, msg in (({"chunk_size": 0}, "chunk_size must be None or a whole number >= 1, got 0"),
                    ({"workers": "2"}, "workers must be a whole number >= 0, got '2'")):
        with pytest.raises(BatchError, match=msg):
            run_batch(SMALL, _db(tmp_path, "badarg"), limit=1, **kw)
    with pytest.raises(BatchError, match="a batch configuration is a file path, a dict or a BatchConfig, got int"):
        run_batch(5, _db(tmp_path, "badarg"))
    assert not _db(tmp_path, "badarg").exists()


def _holder(cfg_file, db, *, resume: bool, sleep_id: int):
    """A runner process that holds the database: it sleeps in candidate ``sleep_id``."""
    code = ("import sys; from graspsim.batch import run_batch; "
            f"run_batch(sys.argv[1], sys.argv[2], resume={resume}, progress='off', "
            f"_faults={{{sleep_id}: 'sleep:120'}})")
    return subprocess.Popen([sys.executable, "-c", code, str(cfg_file), str(db)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=str(ROOT))


def test_one_runner_per_database(reference, tmp_path):
    """#15: a fresh run and a --resume run on one database both evaluated the remaining candidates.
    Real processes: while a runner process holds the database, a resume (command line, another
    process) and a fresh run (this process) are refused naming its pid; a killed runner leaves no
    lock that blocks; a resumed runner excludes another resume; the table ends up complete, each
    candidate once."""
    _, ref = reference
    cfg_file = tmp_path / "small.yaml"
    cfg_file.write_text(yaml.safe_dump(SMALL))
    db = _db(tmp_path, "locked")
    lock = Path(f"{db}.lock")
    a = _holder(cfg_file, db, resume=False, sleep_id=10)      # serial chunks of 7: ids 0-6 commit, then it sleeps
    try:
        _wait_rows(a, db, 7)
        b = _start(cfg_file, db, "--resume")
        with pytest.raises(BatchError) as ei:                  # fresh + fresh
            run_batch(str(cfg_file), db, progress="off")
        assert str(ei.value).startswith(f"'{db}' is in use: another graspsim batch run holds it (pid {a.pid} on ")
        out, err = b.communicate(timeout=120)                  # fresh + resume, from the command line
        assert b.returncode == 2, err
        assert f"'{db}' is in use: another graspsim batch run holds it (pid {a.pid} on " in err
        assert "continue it with --resume" in err and "Traceback" not in err
        assert _count(db) == 7
    finally:
        a.kill()
        a.wait(timeout=30)
    assert lock.exists()                                        # left by the killed runner, but not locked
    e = _holder(cfg_file, db, resume=True, sleep_id=20)
    try:
        _wait_rows(e, db, 14)
        with pytest.raises(BatchError, match=rf"in use: .* \(pid {e.pid} on "):   # resume + resume
            run_batch(str(cfg_file), db, resume=True, progress="off")
    finally:
        e.kill()
        e.wait(timeout=30)
    res = run_batch(str(cfg_file), db, resume=True, progress="off")
    assert res.skipped + res.evaluated == len(ref) and res.remaining == 0
    _same(ref, read_results(db, timings=False))                 # every candidate once, as the serial run
    assert not lock.exists()                                    # released cleanly


def test_progress_bar_on_a_terminal():
    """A real pseudo-terminal: tqdm draws a bar with the count, the rate and the outcome counts, both
    on a terminal of a known width and on one that reports no size."""
    import fcntl
    import pty
    import struct
    import termios

    for cols in (120, 0):
        master, slave = pty.openpty()
        try:
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
            with os.fdopen(slave, "w", closefd=True) as tty:
                p = Progress(10, 2, name="batch t", stream=tty, mode="auto")
                assert p.mode == "bar"
                p.start()
                p.update(3, {"force closure": 2, "error": 1})
                p.close()
            chunks = []                 # the terminal is closed: read everything it got, up to EOF
            while True:
                try:
                    data = os.read(master, 65536)
                except OSError:         # EIO: no more data from a closed terminal
                    break
                if not data:
                    break
                chunks.append(data)
            text = b"".join(chunks).decode()
        finally:
            os.close(master)
        final = text.replace("\r", "\n").strip().splitlines()[-1]
        assert final.startswith("batch t:  50%|") and "5/10" in final and "grasp/s" in final
        assert "error=1, force closure=2" in final and len(final) <= (cols or 100)


def test_progress_lines_when_not_a_terminal():
    buf = io.StringIO()
    p = Progress(10, 2, name="batch t", stream=buf, interval=0.0)
    assert p.mode == "lines"
    p.start()
    p.update(3, {"ok": 2, "error": 1})
    p.close()
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("batch t: 5/10 (50.0%) ") and "/s ETA " in lines[0]
    assert lines[0].endswith("| error 1, ok 2") and "elapsed" in lines[-1]


# -- other inputs ----------------------------------------------------------------------------------

def test_hand_and_object_files_on_a_table(tmp_path):
    cfg = {"batch": "files", "seed": 1, "hand": str(ROOT / "robots" / "barrett.yaml"),
           "objects": [str(ROOT / "objects" / "can.yaml"), {"file": str(ROOT / "objects" / "cube.yaml"), "name": "block"}],
           "candidates": {"directions": {"list": [[0, 0, -1], [0, 1, 0]]}, "standoffs": [0.13]}}
    c = load_config(cfg)
    assert c.objects == ["can", "block"]
    db = _db(tmp_path, "files")
    res = run_batch(c, db, progress="off")
    rows = read_results(db)
    assert res.evaluated == 4 and [r["object"] for r in rows] == ["can", "can", "block", "block"]
    for o in ("can", "block"):
        w = load_scene_world(next(s for s in c.scenes if s["object"] == o))
        assert not graspsim.collision.check_interpenetration(w, raise_error=False)
        V = w.bodies[o].instance.obj.shape.vertices_in(w.bodies[o].pose)
        assert abs(V[:, 2].min()) < 1e-12                       # standing on the table top (z = 0)
    down = [r for r in rows if r["dir_z"] == -1.0]
    assert all(r["status"] == "ok" for r in down) and any(r["force_closure"] for r in down)
    side = [r for r in rows if r["dir_y"] == 1.0]
    assert all(r["status"] == "pregrasp_collision" and "table" in r["collision"] for r in side)


def test_command_line_flags_without_a_batch_file(tmp_path, capsys):
    from graspsim.cli import main

    db = _db(tmp_path, "flags")
    rc = main(["batch", "--world", WORLD, "--direction", "0,0,-1", "--rolls", "2", "--standoff", "140mm",
               "--preshape", "spread=30deg", "--db", str(db), "--progress", "off"])
    assert rc == 0
    assert "2 evaluated now" in capsys.readouterr().out
    rows = read_results(db)
    assert [r["standoff"] for r in rows] == [0.14, 0.14]
    assert [json.loads(r["preshape"]) for r in rows] == [{"spread": math.radians(30)}] * 2
    assert [r["roll"] for r in rows] == [0.0, math.pi]
    with pytest.raises(SystemExit) as ei:
        main(["batch", "--world", WORLD, "--direction", "0,0", "--db", str(db)])
    assert ei.value.code == 2 and "is not a direction like 0,0,-1" in capsys.readouterr().err
    assert main(["batch", "--db", str(db)]) == 2


def test_dynamic_mode_runs_the_lift_test_or_says_what_is_missing(tmp_path):
    cfg = dict(SMALL, batch="dyn", evaluation={"mode": "dynamic", "dynamic": {"timeout": 1.5, "lift_duration": 0.5,
                                                                            "lift_hold": 0.2}},
               candidates={"directions": {"list": [[0, 0, -1]]}, "standoffs": [0.14]})
    try:
        from graspsim.control import dynamic_auto_grasp, lift_test
        assert callable(dynamic_auto_grasp) and callable(lift_test)
    except (ImportError, AttributeError):
        with pytest.raises(BatchError, match="dynamic evaluation .* needs graspsim.control.dynamic_auto_grasp"):
            run_batch(cfg, _db(tmp_path, "dyn"), progress="off")
        return
    res = run_batch(cfg, _db(tmp_path, "dyn"), progress="off")
    rows = read_results(_db(tmp_path, "dyn"))
    assert res.evaluated == 1
    r = rows[0]
    assert r["status"] == "ok", r["error"]
    assert r["held"] in (0, 1) and r["dropped"] in (0, 1) and r["slip"] is not None and r["lifted"] is not None
    assert r["epsilon"] > 0 and r["t_dynamic"] > 0


def test_a_ctrl_c_inside_a_kernel_stops_the_run_instead_of_failing_a_candidate(monkeypatch):
    """A SIGINT that lands while a compiled kernel calls back into Python (numba's boxing) surfaces
    as the kernel's SystemError caused by the KeyboardInterrupt.  The evaluator recorded it as the
    candidate's error and the run went on to exit 0 (seen: candidate 6 'error: SystemError:
    _Kernel(hull_search) returned a result with an exception set', the kill test's Ctrl-C lost).
    Now it is the user's stop: KeyboardInterrupt, no row.  Any other exception is still recorded."""
    from graspsim.batch.evaluate import Evaluator

    cfg = load_config(SMALL)
    ev = Evaluator(cfg)
    cand = generate_candidates(cfg, {"mug": object_geometry(ev.scene("mug").world, "mug")})[0]

    def interrupted_kernel(*a, **k):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as ki:
            raise SystemError("_Kernel(<function hull_search>) returned a result with an exception set") from ki

    monkeypatch.setattr(Evaluator, "_evaluate", lambda self, sc, c, row: interrupted_kernel())
    with pytest.raises(KeyboardInterrupt):
        ev.evaluate(cand)

    def failing(*a, **k):
        raise SystemError("a kernel's own failure")

    monkeypatch.setattr(Evaluator, "_evaluate", lambda self, sc, c, row: failing())
    row = ev.evaluate(cand)
    assert row["status"] == "error" and row["error_kind"] == "SystemError"


def test_cli_reports_a_ctrl_c_inside_a_kernel_as_interrupted(monkeypatch, capsys):
    """The CLI's top level: the same SystemError-from-KeyboardInterrupt is 'interrupted', exit 130
    (a traceback before); another SystemError still propagates."""
    import argparse

    from graspsim import cli

    def interrupted(args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as ki:
            raise SystemError("_Kernel(...) returned a result with an exception set") from ki

    def broken(args):
        raise SystemError("not an interrupt")

    def parser_running(func):
        p = argparse.ArgumentParser()
        p.set_defaults(func=func)
        return p

    monkeypatch.setattr(cli, "build_parser", lambda command: parser_running(interrupted))
    assert cli.main([]) == 130
    assert capsys.readouterr().err.strip() == "interrupted"
    monkeypatch.setattr(cli, "build_parser", lambda command: parser_running(broken))
    with pytest.raises(SystemError, match="not an interrupt"):
        cli.main([])

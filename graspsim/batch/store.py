"""The results database: one SQLite file per run, written as results come in.

Tables:

* ``results`` -- one row per evaluated candidate, keyed by the candidate ``id``: its parameters,
  outcome (``status`` ok | pregrasp_collision | error, ``error_kind``, ``error_stage``, ``error``),
  metrics and timings (see :data:`COLUMNS`).  Rows are inserted in transactions (WAL journal): a
  crash loses at most the candidates being evaluated, never a committed row, and never leaves a
  half-written one.
* ``run_config`` -- key/value: the configuration (JSON), its hash, the number of candidates,
  graspsim and schema versions, creation time.
* ``attempts`` -- per candidate without a result: how many times it was handed to an evaluator
  (a process that died while evaluating it leaves a count; see ``max_attempts``).
* ``sessions`` -- one row per start or resume: workers, scheduler, candidates evaluated, status.

The result table of a finished run depends only on the configuration: the timing columns
(:data:`TIMING_COLUMNS`: wall and CPU time per phase, the worker) are the only ones that differ
between runs, machines, worker counts and interruptions.
"""
from __future__ import annotations

import csv
import json
import os
import socket
import sqlite3
import time
from pathlib import Path

from .config import BatchError, SCHEMA_VERSION

__all__ = ["ResultStore", "COLUMNS", "RESULT_COLUMNS", "TIMING_COLUMNS", "read_results", "export_results",
           "read_config"]

#: (name, SQL type, description)
COLUMNS = [
    ("id", "INTEGER", "candidate id (generation order)"),
    ("object", "TEXT", "target object"),
    ("source", "TEXT", "direction source: sphere | normal | list | planner"),
    ("dir_x", "REAL", "approach direction (unit, world frame)"),
    ("dir_y", "REAL", ""),
    ("dir_z", "REAL", ""),
    ("target_x", "REAL", "point aimed at (m, world)"),
    ("target_y", "REAL", ""),
    ("target_z", "REAL", ""),
    ("roll", "REAL", "roll about the approach axis (rad)"),
    ("standoff", "REAL", "palm stop distance before the target (m)"),
    ("preshape", "TEXT", "JSON {dof: value} set before the approach"),
    ("status", "TEXT", "ok | pregrasp_collision | error"),
    ("error_kind", "TEXT", "exception class (error rows)"),
    ("error_stage", "TEXT", "setup | preshape | pregrasp | approach | grasp | analysis | robustness | dynamic | lift | "
                            "worker"),
    ("error", "TEXT", "error message"),
    ("collision", "TEXT", "pairs interpenetrating at the pre-grasp pose"),
    ("approach_stop", "TEXT", "contact | standoff | planned"),
    ("approach_travel", "REAL", "distance moved from the pre-grasp pose (m)"),
    ("touched", "TEXT", "bodies the approach touched"),
    ("palm_x", "REAL", "palm position before closing (m, world)"),
    ("palm_y", "REAL", ""),
    ("palm_z", "REAL", ""),
    ("palm_qw", "REAL", "palm orientation quaternion (w, x, y, z)"),
    ("palm_qx", "REAL", ""),
    ("palm_qy", "REAL", ""),
    ("palm_qz", "REAL", ""),
    ("force_closure", "INTEGER", "static grasp: 1 if force closure"),
    ("epsilon", "REAL", "static grasp: epsilon quality (0 without force closure)"),
    ("volume", "REAL", "static grasp: GWS volume"),
    ("n_contacts", "INTEGER", "static grasp: hand-object contacts"),
    ("contact_links", "TEXT", "hand links touching the object"),
    ("dofs", "TEXT", "JSON final DOF values (rad or m)"),
    ("stopped_by", "TEXT", "JSON per DOF: contact | limit | not moving | iterations"),
    ("dyn_settled", "INTEGER", "dynamic auto-grasp settled"),
    ("dyn_force_closure", "INTEGER", "dynamic grasp force closure"),
    ("dyn_epsilon", "REAL", "dynamic grasp epsilon"),
    ("dyn_contacts", "INTEGER", "dynamic grasp contacts"),
    ("held", "INTEGER", "lift test: object held"),
    ("slip", "REAL", "lift test: object displacement relative to the palm (m)"),
    ("lifted", "REAL", "lift test: object rise (m)"),
    ("dropped", "INTEGER", "lift test: object dropped"),
    ("lift_rotation", "REAL", "lift test: object rotation relative to the palm (rad)"),
    ("t_approach", "REAL", "wall time (s) of the approach"),
    ("t_grasp", "REAL", "static auto-grasp + analysis (s)"),
    ("t_dynamic", "REAL", "dynamic auto-grasp (s)"),
    ("t_lift", "REAL", "lift test (s)"),
    ("t_total", "REAL", "whole candidate, wall (s)"),
    ("t_cpu", "REAL", "whole candidate, CPU time of the evaluating thread (s)"),
    ("worker", "TEXT", "host:pid that evaluated it"),
    # added after the first release: an older database gets them on opening (ALTER TABLE), NULL in old rows
    ("planner_energy", "REAL", "planner candidates: the planner's search energy of the pre-grasp state"),
    ("planner_dofs", "TEXT", "planner candidates: JSON {dof: value} of the planner's closed grasp (rad or m)"),
    ("planner_pose", "TEXT", "planner candidates: JSON hand base pose, 16 floats (4x4 row-major, m, world)"),
    ("rob_p_force_closure", "REAL", "robustness: probability of force closure under pose and friction noise"),
    ("rob_eps_mean", "REAL", "robustness: mean epsilon over the samples (failures as 0)"),
    ("rob_eps_p05", "REAL", "robustness: 5th-percentile epsilon over the samples"),
    ("rob_samples", "INTEGER", "robustness: samples"),
    ("t_robust", "REAL", "robustness (s)"),
    ("shift_x", "REAL", "closing: centred: the hand's shift from the palm pose above to where its grasp closed "
                        "(m, world; the orientation kept); NULL with closing: static"),
    ("shift_y", "REAL", ""),
    ("shift_z", "REAL", ""),
]
NAMES = [c[0] for c in COLUMNS]
TYPES = {c[0]: c[1] for c in COLUMNS}
TIMING_COLUMNS = ("t_approach", "t_grasp", "t_dynamic", "t_lift", "t_total", "t_cpu", "worker", "t_robust")
RESULT_COLUMNS = tuple(n for n in NAMES if n not in TIMING_COLUMNS)


def _connect(path) -> sqlite3.Connection:
    con = sqlite3.connect(str(path), timeout=60.0, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    return con


class ResultStore:
    """The results database of one run (see the module docstring).  Writes happen only in the
    process that runs the batch (workers return rows; this process commits them)."""

    def __init__(self, path, *, create: bool = True):
        self.path = _db_path(path)
        if not create and not self.path.is_file():
            raise FileNotFoundError(f"results database '{self.path}' not found")
        if create:
            from ..arguments import output_file

            output_file("results database", self.path)
        self.con = _connect(self.path)
        if create:
            self._create()
        self.session = None

    def _create(self) -> None:
        cols = ", ".join(f"{n} {t}{' PRIMARY KEY' if n == 'id' else ''}" for n, t, _ in COLUMNS)
        with self.transaction():
            self.con.execute("CREATE TABLE IF NOT EXISTS run_config (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self.con.execute(f"CREATE TABLE IF NOT EXISTS results ({cols})")
            self.con.execute("CREATE TABLE IF NOT EXISTS attempts (id INTEGER PRIMARY KEY, n INTEGER NOT NULL, "
                             "last_error TEXT)")
            self.con.execute("CREATE TABLE IF NOT EXISTS sessions (session INTEGER PRIMARY KEY AUTOINCREMENT, "
                             "started TEXT, finished TEXT, status TEXT, workers INTEGER, scheduler TEXT, "
                             "evaluated INTEGER, host TEXT, pid INTEGER, graspsim_version TEXT)")
            # migration: a database written before a column existed gets it (NULL in its rows)
            have = {r[1] for r in self.con.execute("PRAGMA table_info(results)")}
            for n, t, _ in COLUMNS:
                if n not in have:
                    self.con.execute(f"ALTER TABLE results ADD COLUMN {n} {t}")

    def close(self) -> None:
        # back to a rollback journal when this is the database's last connection (a reader's
        # open connection keeps WAL): the finished file is one file, and read-only readers
        # (summary, export) need not create -wal/-shm files they cannot remove
        try:
            self.con.execute("PRAGMA journal_mode=DELETE")
        except sqlite3.OperationalError:
            pass
        self.con.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- transactions ----------------------------------------------------------------------------

    class _Tx:
        def __init__(self, con):
            self.con = con

        def __enter__(self):
            self.con.execute("BEGIN IMMEDIATE")
            return self.con

        def __exit__(self, et, ev, tb):
            self.con.execute("COMMIT" if et is None else "ROLLBACK")
            return False

    def transaction(self):
        return ResultStore._Tx(self.con)

    # -- configuration -----------------------------------------------------------------------------

    def meta(self) -> dict:
        return dict(self.con.execute("SELECT key, value FROM run_config").fetchall())

    def result_count(self) -> int:
        return int(self.con.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def stored_candidates(self, config) -> list | None:
        """The candidates stored by a run of ``config`` (planner candidates), or None."""
        from .candidates import Candidate

        meta = self.meta()
        if meta.get("config_hash") != config.config_hash() or "candidates" not in meta:
            return None
        return [Candidate.from_dict(d) for d in json.loads(meta["candidates"])]

    def init_run(self, config, n_candidates: int, *, resume: bool, overwrite: bool = False,
                 candidates: list | None = None) -> str | None:
        """Record the run's configuration (and ``candidates``, when they are not generated from it
        alone: the planner's), or check it against the one stored (``resume``).
        Returns a warning (a resumed run started by another graspsim version) or None."""
        from .. import __version__

        h = config.config_hash()
        meta = self.meta()
        if meta:
            done = self.result_count()
            if overwrite:
                with self.transaction():
                    for t in ("results", "attempts", "run_config", "sessions"):
                        self.con.execute(f"DELETE FROM {t}")
                meta = {}
            elif not resume:
                raise BatchError(f"'{self.path}' already holds a run ('{meta.get('name')}', {done} of "
                                 f"{meta.get('n_candidates')} candidates evaluated); continue it with --resume, "
                                 "or start again with --overwrite or another --db")
            elif meta.get("config_hash") != h:
                old = json.loads(meta.get("config", "{}"))
                raise BatchError(f"cannot resume: '{self.path}' holds a run of a different configuration "
                                 f"('{old.get('name')}' from {old.get('source') or 'the Python API'}, hash "
                                 f"{meta.get('config_hash', '?')[:12]}; this configuration's hash is {h[:12]}). "
                                 "The candidates, their evaluation and the model files must be the same; "
                                 "use another --db or --overwrite")
        if not meta:
            cfg = config.to_dict()
            values = {"name": config.name, "config": json.dumps(cfg, sort_keys=True), "config_hash": h,
                      "n_candidates": str(n_candidates), "graspsim_version": __version__,
                      "schema_version": str(SCHEMA_VERSION), "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                      "sqlite_version": sqlite3.sqlite_version}
            if candidates is not None:
                values["candidates"] = json.dumps([c.to_dict() for c in candidates])
            with self.transaction():
                self.con.executemany("INSERT OR REPLACE INTO run_config (key, value) VALUES (?, ?)", values.items())
            return None
        if meta.get("graspsim_version") != __version__:
            return (f"warning: '{self.path}' was started by graspsim {meta.get('graspsim_version')}, this is "
                    f"graspsim {__version__}; rows evaluated now may differ from the earlier ones")
        return None

    def start_session(self, workers: int, scheduler: str | None) -> None:
        from .. import __version__

        with self.transaction():
            # a session still 'running' was killed (SIGKILL, power loss): say so
            self.con.execute("UPDATE sessions SET status = 'killed' WHERE status = 'running'")
            cur = self.con.execute("INSERT INTO sessions (started, status, workers, scheduler, evaluated, host, pid, "
                                   "graspsim_version) VALUES (?, 'running', ?, ?, 0, ?, ?, ?)",
                                   (time.strftime("%Y-%m-%dT%H:%M:%S%z"), workers, scheduler, socket.gethostname(),
                                    os.getpid(), __version__))
            self.session = cur.lastrowid

    def end_session(self, status: str, evaluated: int) -> None:
        if self.session is None:
            return
        with self.transaction():
            self.con.execute("UPDATE sessions SET finished = ?, status = ?, evaluated = ? WHERE session = ?",
                             (time.strftime("%Y-%m-%dT%H:%M:%S%z"), status, evaluated, self.session))

    # -- results ----------------------------------------------------------------------------------

    def done_ids(self) -> set:
        return {int(r[0]) for r in self.con.execute("SELECT id FROM results")}

    def attempts(self) -> dict:
        return {int(i): int(n) for i, n in self.con.execute("SELECT id, n FROM attempts")}

    def commit(self, rows=(), dispatched=(), undispatched=()) -> int:
        """One transaction: insert result ``rows`` (a candidate id already present is kept, never
        duplicated), count one more attempt for the ``dispatched`` ids and one fewer for the
        ``undispatched`` ones (handed out, then taken back unevaluated).  Returns rows inserted."""
        rows = list(rows)
        n = 0
        with self.transaction() as con:
            if rows:
                names = [c for c in NAMES]
                q = f"INSERT OR IGNORE INTO results ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
                before = con.total_changes
                con.executemany(q, [tuple(r.get(c) for c in names) for r in rows])
                n = con.total_changes - before
                con.executemany("DELETE FROM attempts WHERE id = ?", [(r["id"],) for r in rows])
            if dispatched:
                con.executemany("INSERT INTO attempts (id, n) VALUES (?, 1) ON CONFLICT(id) DO UPDATE SET n = n + 1",
                                [(int(i),) for i in dispatched])
            if undispatched:
                con.executemany("UPDATE attempts SET n = n - 1 WHERE id = ?", [(int(i),) for i in undispatched])
                con.execute("DELETE FROM attempts WHERE n <= 0")
        return n


# -- reading and export -------------------------------------------------------------------------------

def _db_path(db) -> Path:
    """``db`` as a Path; ValueError unless it is a file path (os.fspath's TypeError before)."""
    if not isinstance(db, (str, os.PathLike)):
        raise ValueError(f"a results database is a file path, got {type(db).__name__}")
    return Path(db)


def _open_ro(db) -> sqlite3.Connection:
    p = _db_path(db)
    if not p.is_file():
        raise FileNotFoundError(f"results database '{p}' not found")
    con = sqlite3.connect(f"file:{p}?mode=ro", uri=True, timeout=60.0)
    try:
        con.execute("SELECT 1 FROM results LIMIT 1")
    except sqlite3.DatabaseError as e:
        con.close()
        raise ValueError(f"'{p}' is not a graspsim batch results database ({e})") from None
    return con


def read_config(db) -> dict:
    """The run_config table of a results database (the configuration JSON decoded under 'config')."""
    con = _open_ro(db)
    try:
        meta = dict(con.execute("SELECT key, value FROM run_config").fetchall())
    finally:
        con.close()
    if "config" in meta:
        meta["config"] = json.loads(meta["config"])
    return meta


def read_results(db, *, columns=None, timings: bool = True, where: str | None = None, params=()) -> list[dict]:
    """Result rows as dicts, ordered by candidate id.  ``timings=False`` leaves out the timing
    columns (what must be identical between two runs of one configuration)."""
    if isinstance(columns, str):
        columns = [columns]                 # one column by name (not its letters)
    cols = list(columns) if columns is not None else (NAMES if timings else list(RESULT_COLUMNS))
    bad = [c for c in cols if c not in TYPES]
    if bad:
        raise ValueError(f"unknown result columns: {', '.join(bad)}")
    con = _open_ro(db)
    try:
        have = {r[1] for r in con.execute("PRAGMA table_info(results)")}
        # a database from before a column existed (opened read-only, not migrated): NULL
        sel = ", ".join(c if c in have else f"NULL AS {c}" for c in cols)
        q = f"SELECT {sel} FROM results" + (f" WHERE {where}" if where else "") + " ORDER BY id"
        return [dict(zip(cols, r)) for r in con.execute(q, params)]
    finally:
        con.close()


def export_results(db, out, *, fmt: str | None = None, timings: bool = True) -> Path:
    """Write the results table to CSV or Parquet (by ``fmt`` or the file suffix).

    CSV: a header line, one row per candidate, empty fields for NULL, floats at full precision
    (``repr``: they read back exactly).  Parquet: typed columns (int64, float64, string), the
    run configuration in the file's key/value metadata (``graspsim.config``, ``graspsim.version``).
    """
    out = Path(out)
    fmt = (fmt or out.suffix.lstrip(".")).lower()
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"cannot tell the export format of '{out}': use a .csv or .parquet file, or --format")
    cols = NAMES if timings else list(RESULT_COLUMNS)
    rows = read_results(db, columns=cols)
    meta = read_config(db)
    from ..arguments import output_file

    output_file("export file", out)
    if fmt == "csv":
        with open(out, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(cols)
            for r in rows:
                w.writerow(["" if r[c] is None else (repr(r[c]) if isinstance(r[c], float) else r[c]) for c in cols])
        return out
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a declared extra
        raise ValueError("Parquet export needs pyarrow (pip install 'graspsim[export]')") from None
    types = {"INTEGER": pa.int64(), "REAL": pa.float64(), "TEXT": pa.string()}
    schema = pa.schema([pa.field(c, types[TYPES[c]]) for c in cols],
                       metadata={"graspsim.config": json.dumps(meta.get("config", {}), sort_keys=True),
                                 "graspsim.config_hash": meta.get("config_hash", ""),
                                 "graspsim.version": meta.get("graspsim_version", "")})
    table = pa.table({c: [r[c] for r in rows] for c in cols}, schema=schema)
    pq.write_table(table, out)
    return out


def read_csv(path) -> list[dict]:
    """Read a CSV written by :func:`export_results` back into typed rows (for checks and scripts)."""
    out = []
    with open(path, newline="", encoding="utf-8") as f:
        for rec in csv.DictReader(f):
            row = {}
            for k, v in rec.items():
                t = TYPES.get(k, "TEXT")
                if v == "":
                    row[k] = None
                elif t == "INTEGER":
                    row[k] = int(v)
                elif t == "REAL":
                    row[k] = float(v)
                else:
                    row[k] = v
            out.append(row)
    return out

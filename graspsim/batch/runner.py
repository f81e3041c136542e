"""Running a batch: serial (in this process), local worker processes, or a Dask cluster.

Whatever the backend, this process generates the candidates (deterministically from the
configuration), skips the ones the database already holds, hands the rest out in chunks and
commits every returned chunk in one transaction.  Workers only evaluate: each builds its worlds
and collision models once (:class:`~graspsim.batch.evaluate.Evaluator`) and reuses them.

Crashes: every hand-out is counted in the database (``attempts``) in the transaction that
precedes the evaluation.  A candidate whose process died (a worker killed, a native crash, the
runner itself killed or the machine rebooted) is handed out again *alone*, so a candidate that
kills its evaluator is found and, after ``max_attempts`` deaths, recorded as an error of kind
``WorkerCrash`` instead of stopping the run.
"""
from __future__ import annotations

import multiprocessing as mp
import numbers
import os
import signal
import sys
import time
import traceback
import types
from collections import Counter, deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import wait as mp_wait
from pathlib import Path

from ..arguments import output_file

from .candidates import Candidate, generate_candidates, object_geometry, plan_candidates
from .config import BatchConfig, BatchError, load_config, load_scene_world
from .evaluate import DynamicUnavailable, Evaluator, base_row, dynamic_api, evaluate_chunk
from .lock import RunLock
from .outcomes import OUTCOMES, count_outcomes, outcome_keys
from .progress import Progress
from .security import insecure_address_warning, scheduler_security
from .store import ResultStore

__all__ = ["run_batch", "RunResult", "prepare"]


@dataclass
class RunResult:
    """What :func:`run_batch` did (this session)."""

    db: Path
    name: str
    total: int                 # candidates of the configuration
    skipped: int               # already in the database when the run started
    evaluated: int             # rows committed by this session
    counts: dict = field(default_factory=dict)     # status -> rows committed by this session
    outcomes: dict = field(default_factory=dict)   # outcome (graspsim.batch.outcomes) -> rows of this session
    wall: float = 0.0          # s, whole session
    ready: float = 0.0         # s until every evaluator was ready (worlds loaded, kernels warm)
    cpu: float = 0.0           # s, sum of the candidates' evaluation CPU time (t_cpu)
    workers: int = 0
    backend: str = "serial"
    interrupted: bool = False
    crashes: int = 0           # evaluator processes that died
    limit: int | None = None   # --limit of this session
    dynamic: bool = False

    @property
    def remaining(self) -> int:
        """Candidates still without a result."""
        return self.total - self.skipped - self.evaluated

    @property
    def rate(self) -> float:
        """Candidates per second of wall time after start-up."""
        dt = self.wall - self.ready
        return self.evaluated / dt if dt > 0 else 0.0

    def text(self) -> str:
        keys = [k for k in outcome_keys(self.dynamic) if self.outcomes.get(k)]
        counts = ", ".join(f"{OUTCOMES[k][0]} {self.outcomes[k]}" for k in keys) or "nothing new"
        how = {"serial": "in this process", "processes": f"{self.workers} worker processes",
               "dask": f"Dask, {self.workers} worker thread{'s' if self.workers != 1 else ''}"}[self.backend]
        left = ""
        if self.remaining:
            why = f"--limit {self.limit}" if self.limit is not None and not self.interrupted else "stopped early"
            left = f"; {self.remaining} not evaluated yet ({why}): continue with --resume"
        return (f"batch '{self.name}': {self.total} candidates; {self.skipped} already done, {self.evaluated} "
                f"evaluated now ({how}): {counts}{left}; {self.wall:.1f} s ({self.ready:.1f} s start-up, "
                f"{self.rate:.1f} candidates/s)" + (f"; {self.crashes} worker crashes" if self.crashes else "")
                + f"\nresults: {self.db}")


def prepare(config, *, stored: list | None = None):
    """(BatchConfig, candidates, {object: World}) -- the worlds loaded for candidate generation.
    Planner candidates are planned here (:func:`~graspsim.batch.candidates.plan_candidates`)
    unless ``stored`` (the ones a resumed run stored) are given."""
    cfg = config if isinstance(config, BatchConfig) else load_config(config)
    worlds = {s["object"]: load_scene_world(s) for s in cfg.scenes}
    if cfg.planner:
        if stored is not None:
            return cfg, list(stored), worlds
        try:
            return cfg, plan_candidates(cfg, worlds), worlds
        except ValueError as e:
            raise BatchError(f"{cfg.source or 'batch'}: {e}") from None
    geo = {o: object_geometry(w, o) for o, w in worlds.items()}
    return cfg, generate_candidates(cfg, geo), worlds


def _crash_row(c: Candidate, n: int, limit: int, last: str | None) -> dict:
    row = base_row(c)
    row.update(status="error", error_kind="WorkerCrash", error_stage="worker",
               error=f"the process evaluating this candidate died {n} time(s) (a crash in native code, the "
                     f"machine running out of memory, or the run killed while evaluating it); not retried after "
                     f"max_attempts={limit}" + (f"; last: {last}" if last else ""))
    return row


# -- backends ---------------------------------------------------------------------------------------

class _Serial:
    name = "serial"

    def __init__(self, cfg, worlds, faults, t_start):
        self.ev = Evaluator(cfg, faults=faults, worlds=worlds)
        self.ev.load_all()
        self.ev.warm_up()
        self.ready = time.perf_counter() - t_start
        self.capacity = 1
        self.nworkers = 1
        self.pending = deque()

    def submit(self, key, cands):
        self.pending.append((key, cands))

    def wait(self, timeout):
        key, cands = self.pending.popleft()
        return [(key, [self.ev.evaluate(c) for c in cands], None)]

    def close(self, abort=False):
        pass


def _worker_main(conn, config: dict, faults):
    """A worker process: build the evaluator once, then evaluate chunks until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)       # Ctrl-C is the parent's to handle
    t0 = time.perf_counter()
    try:
        ev = Evaluator(config, faults=faults)
        ev.load_all()
        ev.warm_up()
    except BaseException:  # noqa: BLE001
        conn.send(("init_error", os.getpid(), traceback.format_exc()))
        return
    conn.send(("ready", os.getpid(), time.perf_counter() - t0))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return                                   # the parent is gone
        if msg is None:
            return
        key, cands = msg
        rows = [ev.evaluate(c) for c in cands]
        try:
            conn.send(("done", key, rows))
        except (BrokenPipeError, OSError):
            return


class _Worker:
    def __init__(self, proc, conn):
        self.proc, self.conn, self.busy, self.ready = proc, conn, None, False


@contextmanager
def _main_module_hidden():
    """Start processes without the caller's main module.

    multiprocessing's spawn and forkserver methods run the parent's main script again in every new
    process (so that functions defined there can be unpickled).  The workers need nothing from it,
    and a script without an ``if __name__ == "__main__":`` guard would call ``run_batch`` again in
    each of them.  The child's preparation data is read from ``sys.modules['__main__']`` when the
    process starts, so an empty stand-in for that moment keeps the script out of the workers.
    """
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main
        else:
            del sys.modules["__main__"]


def _check_not_bootstrapping() -> None:
    """Refuse to run inside a process that is still importing its parent's main script (a script
    without a ``__main__`` guard, re-run by a process that some other code started): it would
    open the parent's database."""
    if getattr(mp.current_process(), "_inheriting", False):
        raise BatchError("run_batch was called while a new process was starting up and running the main script "
                         "again (e.g. a Dask worker process); put the script's main code under "
                         "'if __name__ == \"__main__\":'")


def _context():
    methods = mp.get_all_start_methods()
    if "forkserver" in methods:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["numpy", "graspsim.batch.evaluate", "graspsim.control", "graspsim.collision",
                                    "graspsim.grasp.objects"])
        return ctx
    return mp.get_context("spawn")


class _Processes:
    """N worker processes (forkserver or spawn), one chunk in flight each."""

    name = "processes"

    def __init__(self, cfg, n, faults, t_start):
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, "1")          # one core per worker: no BLAS threads on top
        self.ctx = _context()
        self.config = cfg.to_dict()
        self.faults = faults
        self.capacity = self.nworkers = n
        self.t0 = t_start
        self.ready = 0.0
        self.crashes = 0
        self.workers = [self._spawn() for _ in range(n)]
        self.queue = deque()

    def _spawn(self):
        parent, child = self.ctx.Pipe()
        p = self.ctx.Process(target=_worker_main, args=(child, self.config, self.faults), daemon=True,
                             name="graspsim-batch-worker")
        with _main_module_hidden():
            p.start()
        child.close()
        return _Worker(p, parent)

    def submit(self, key, cands):
        self.queue.append((key, cands))
        self._feed()

    def _feed(self):
        for w in self.workers:
            if not self.queue:
                return
            if w.busy is None:
                key, cands = self.queue.popleft()
                w.busy = (key, cands)
                try:
                    w.conn.send((key, [c.to_dict() for c in cands]))
                except (BrokenPipeError, OSError):
                    pass                              # noticed as a dead worker by wait()

    def wait(self, timeout):
        out = []
        objs = {}
        for w in self.workers:
            objs[w.conn] = w
            objs[w.proc.sentinel] = w
        for o in mp_wait(list(objs), timeout):
            w = objs[o]
            if w not in self.workers:
                continue
            out.extend(self._drain(w))
            if not w.proc.is_alive() and w in self.workers:
                out.extend(self._drain(w))
                self._replace(w, out)
        self._feed()
        return out

    def _drain(self, w):
        out = []
        try:
            while w.conn.poll():
                msg = w.conn.recv()
                kind = msg[0]
                if kind == "ready":
                    w.ready = True
                    if all(x.ready for x in self.workers):
                        self.ready = self.ready or (time.perf_counter() - self.t0)
                elif kind == "init_error":
                    raise BatchError(f"a worker process could not start (pid {msg[1]}):\n{msg[2]}")
                elif kind == "done":
                    if w.busy is not None and w.busy[0] == msg[1]:
                        w.busy = None
                    out.append((msg[1], msg[2], None))
        except (EOFError, OSError):
            pass
        return out

    def _replace(self, w, out):
        code = w.proc.exitcode
        if not w.ready:
            raise BatchError(f"a worker process died while starting (exit code {code}); see its messages above")
        self.crashes += 1
        if w.busy is not None:
            key, _ = w.busy
            out.append((key, None, f"worker process {w.proc.pid} died (exit code {code})"))
        try:
            w.conn.close()
        except OSError:
            pass
        self.workers[self.workers.index(w)] = self._spawn()

    def close(self, abort=False):
        for w in self.workers:
            try:
                if abort:
                    w.proc.terminate()
                else:
                    w.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        deadline = time.perf_counter() + (1.0 if abort else 5.0)
        for w in self.workers:
            w.proc.join(max(0.0, deadline - time.perf_counter()))
            if w.proc.is_alive():
                w.proc.kill()
                w.proc.join(1.0)
            try:
                w.conn.close()
            except OSError:
                pass


class _Dask:
    """Chunks as Dask tasks (:func:`graspsim.batch.evaluate.evaluate_chunk`)."""

    name = "dask"

    def __init__(self, cfg, client, faults, t_start):
        self.client = client
        self.t0 = t_start
        nthreads = sum(client.nthreads().values()) or 1
        self.nworkers = nthreads
        self.capacity = 2 * nthreads
        self.config = client.scatter(cfg.to_dict(), broadcast=True)
        self.prefix = f"graspsim-batch-{cfg.config_hash()[:10]}-{os.getpid()}-{int(time.time() * 1e3)}"
        self.faults = faults
        self.futs = {}
        self.ready = 0.0
        self.crashes = 0

    def submit(self, key, cands):
        f = self.client.submit(evaluate_chunk, self.config, [c.to_dict() for c in cands], self.faults,
                               key=f"{self.prefix}-{key}", pure=False, retries=0)
        self.futs[f] = key

    def wait(self, timeout):
        from distributed import wait as dwait

        try:
            done = dwait(list(self.futs), timeout=timeout, return_when="FIRST_COMPLETED").done
        except TimeoutError:
            return []
        except Exception:  # noqa: BLE001 -- distributed's own timeout class in some versions
            done = [f for f in self.futs if f.done()]
        out = []
        for f in done:
            key = self.futs.pop(f)
            if f.status == "finished":
                if not self.ready:
                    self.ready = time.perf_counter() - self.t0
                out.append((key, f.result(), None))
                continue
            exc = f.exception()
            from distributed.scheduler import KilledWorker

            if isinstance(exc, KilledWorker):
                self.crashes += 1
                out.append((key, None, f"Dask worker died evaluating it ({exc})"))
            else:
                raise BatchError(f"a Dask task failed outside candidate evaluation (is graspsim installed, with "
                                 f"the same model files at the same paths, on every worker?): "
                                 f"{type(exc).__name__}: {exc}")
        return out

    def close(self, abort=False):
        if self.futs:
            self.client.cancel(list(self.futs))
        self.futs.clear()


# -- the run ------------------------------------------------------------------------------------------

def run_batch(config, db=None, *, workers: int = 0, scheduler: str | None = None, cluster: str | None = None,
              client=None, security=None, resume: bool = False, overwrite: bool = False, limit: int | None = None,
              chunk_size: int | None = None, progress: str = "auto", progress_interval: float = 10.0, stream=None,
              _faults: dict | None = None) -> RunResult:
    """Evaluate every candidate of ``config`` (a batch file path, a dict or a :class:`BatchConfig`)
    and store the rows in the SQLite file ``db`` (default: the file's ``output``, else
    ``NAME.sqlite`` in the current directory).

    ``workers``: 0 evaluates in this process; N > 0 starts N worker processes.  ``scheduler``
    (a Dask scheduler address), ``cluster='local'`` (a Dask LocalCluster of ``workers`` processes,
    default one per core) or ``client`` (a ``distributed.Client``) runs the chunks on Dask.
    ``security``: the client's TLS certificates for a ``tls://`` scheduler (a YAML file, a dict
    ``{ca_file, cert, key}`` or a ``distributed.security.Security``; see
    :mod:`graspsim.batch.security`).  ``resume`` continues a run stored in ``db`` (refused if the
    configuration differs); ``overwrite`` discards it.  ``limit``: evaluate at most this many of the
    candidates not yet in the database, spread evenly over them (a quick try; ``resume=True``
    continues with the rest).  ``progress``: 'auto' | 'bar' | 'lines' | 'off'.

    One run per database: a second run on the same file (fresh or resumed, from any process) is
    refused while the first is alive.  A run that fails before committing a row removes the
    database it created (or emptied with ``overwrite``).  Ctrl-C stops the run cleanly (committed
    rows stay; continue with ``resume=True``) and re-raises ``KeyboardInterrupt``.
    """
    _check_not_bootstrapping()
    cfg = config if isinstance(config, BatchConfig) else load_config(config)
    if cfg.dynamic:
        try:
            dynamic_api()
        except DynamicUnavailable as e:
            raise BatchError(str(e)) from None
    if isinstance(workers, bool) or not isinstance(workers, numbers.Integral) or workers < 0:
        raise BatchError(f"workers must be a whole number >= 0, got {workers!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise BatchError(f"limit must be a whole number >= 1, got {limit!r}")
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, numbers.Integral)
                                   or chunk_size < 1):
        raise BatchError(f"chunk_size must be None or a whole number >= 1, got {chunk_size!r}")
    if sum(x is not None for x in (scheduler, cluster, client)) > 1:
        raise BatchError("give at most one of scheduler, cluster and client")
    if cluster is not None and cluster != "local":
        raise BatchError(f"cluster must be 'local' (or give a scheduler address), got {cluster!r}")
    if security is not None and scheduler is None:
        raise BatchError("security (--security) is for a tls:// scheduler address (--scheduler tls://HOST:PORT); "
                         "--cluster local listens on this machine's loopback interface only")
    out = stream if stream is not None else sys.stderr
    if scheduler is not None:
        security = scheduler_security(scheduler, security)
        insecure_address_warning(scheduler, out)
    elif client is not None:
        insecure_address_warning(str(client.scheduler.address), out)
    t_start = time.perf_counter()
    db = Path(db if db is not None else (cfg.output or f"{cfg.name}.sqlite"))
    try:
        output_file("results database", db)     # (its lock file sits beside it)
    except ValueError as e:
        raise BatchError(str(e)) from None
    with RunLock(db):
        created = not db.exists()
        store = None
        finished = emptied = False
        try:
            stored = None
            if cfg.planner:
                # planner candidates: a resumed run takes the stored ones (a seconds budget plans
                # differently every time; the ids must keep naming the same grasps)
                store = ResultStore(db)
                emptied = created
                if resume and not overwrite:
                    stored = store.stored_candidates(cfg)
            cfg, cands, worlds = prepare(cfg, stored=stored)
            if store is None:
                store = ResultStore(db)
            warning = store.init_run(cfg, len(cands), resume=resume, overwrite=overwrite,
                                     candidates=cands if cfg.planner else None)
            emptied = created or overwrite           # a new database, or the old run discarded
            if warning and progress != "off":
                print(warning, file=out)
            res = _run(cfg, cands, worlds, store, workers=workers, scheduler=scheduler, security=security,
                       cluster=cluster, client=client, limit=limit, chunk_size=chunk_size, progress=progress,
                       progress_interval=progress_interval, stream=stream, faults=_faults, t_start=t_start)
            finished = True
            return res
        finally:
            empty = False
            if store is not None:
                try:
                    empty = store.result_count() == 0
                except Exception:  # noqa: BLE001 -- on the way out of a failure
                    empty = False
                store.close()
            if not finished and ((created and store is None) or (emptied and empty)):
                _remove_database(db)


def _remove_database(db: Path) -> None:
    """Remove a database this run created and that holds no result (a failed start)."""
    for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm"), Path(f"{db}-journal")):
        try:
            p.unlink()
        except FileNotFoundError:
            pass


def _spread(items: list, n: int | None) -> list:
    """At most ``n`` of ``items``, evenly spread over them (in their order)."""
    if n is None or n >= len(items):
        return items
    return [items[(i * len(items)) // n] for i in range(n)]


def _connect(scheduler: str, security):
    from distributed import Client

    try:
        return Client(scheduler, security=security)
    except Exception as e:  # noqa: BLE001 -- whatever answers there (or nothing), the run cannot start
        hint = ("; with TLS, check that the scheduler runs with certificates signed by the same CA as yours, and "
                "that your certificate and key belong together" if security is not None else
                "; is a Dask scheduler listening at that address and port?")
        raise BatchError(f"cannot connect to the Dask scheduler at '{scheduler}': {type(e).__name__}: "
                         f"{str(e)[:300]}{hint}") from None


def _run(cfg, cands, worlds, store, *, workers, scheduler, security, cluster, client, limit, chunk_size, progress,
         progress_interval, stream, faults, t_start) -> RunResult:
    max_attempts = int(cfg.evaluation["max_attempts"])
    done = store.done_ids()
    attempts = store.attempts()
    missing = [c for c in cands if c.id not in done]
    todo = _spread(missing, limit)
    result = RunResult(db=store.path, name=cfg.name, total=len(cands), skipped=len(cands) - len(missing), evaluated=0,
                       limit=limit, dynamic=cfg.dynamic)
    prog = Progress(result.skipped + len(todo), result.skipped, stream=stream, mode=progress,
                    name=f"batch {cfg.name}" + (f" (--limit {limit})" if limit is not None and todo is not missing else ""),
                    interval=progress_interval)
    counts: Counter = Counter()
    outcomes: Counter = Counter()

    def label_counts(rows) -> Counter:
        return Counter({OUTCOMES[k][0]: n for k, n in count_outcomes(rows, cfg.dynamic).items()})

    # candidates handed out before without a result: recorded as crashed after max_attempts,
    # else handed out again -- alone when this process evaluates (it may be what killed the last
    # run), in ordinary chunks otherwise (the runner was killed: a worker's death would have been
    # seen and handled in that session)
    first_rows = [_crash_row(c, attempts[c.id], max_attempts, None) for c in todo
                  if attempts.get(c.id, 0) >= max_attempts]
    retry = [c for c in todo if 0 < attempts.get(c.id, 0) < max_attempts]
    fresh = [c for c in todo if attempts.get(c.id, 0) == 0]
    suspects: deque = deque()       # this session's: a worker died with them in flight

    own_client = own_cluster = None
    backend = None
    inflight: dict = {}
    status = "interrupted"
    try:
        if first_rows:
            n = store.commit(first_rows)
            result.evaluated += n
            counts.update(r["status"] for r in first_rows)
            outcomes.update(count_outcomes(first_rows, cfg.dynamic))
            prog.update(n, label_counts(first_rows))
        if not todo:
            status = "completed"
            return result
        if scheduler is not None or cluster is not None or client is not None:
            if client is None:
                if scheduler is not None:
                    own_client = client = _connect(scheduler, security)
                else:
                    from distributed import Client, LocalCluster

                    with _main_module_hidden():     # its worker processes start now, without the caller's script
                        own_cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                                   processes=True, dashboard_address=None, host="127.0.0.1")
                    own_client = client = Client(own_cluster)
            backend = _Dask(cfg, client, faults, t_start)
        elif workers > 0:
            backend = _Processes(cfg, workers, faults, t_start)
        else:
            backend = _Serial(cfg, worlds, faults, t_start)
        worlds = None
        prog.start()
        result.backend, result.workers = backend.name, backend.nworkers
        store.start_session(backend.nworkers if backend.name != "serial" else 0, scheduler or cluster or
                            (getattr(client, "scheduler", None) and str(client.scheduler.address)))
        if chunk_size is None:
            per = {"serial": 8, "processes": 16, "dask": 32}[backend.name]
            chunk_size = max(1, min(per, (len(fresh) + len(retry)) // max(1, 4 * backend.nworkers)))
        if backend.name == "serial":
            queue = deque([[c] for c in retry] + [fresh[i:i + chunk_size] for i in range(0, len(fresh), chunk_size)])
        else:
            rest = sorted(retry + fresh, key=lambda c: c.id)
            queue = deque(rest[i:i + chunk_size] for i in range(0, len(rest), chunk_size))
        next_key = [0]

        def fill() -> list:
            ids = []
            while len(inflight) < backend.capacity:
                if suspects:
                    if inflight:
                        break                      # a suspect runs alone: a death then names it
                    chunk = [suspects.popleft()]
                elif queue:
                    chunk = queue.popleft()
                else:
                    break
                key = next_key[0]
                next_key[0] += 1
                inflight[key] = chunk
                for c in chunk:
                    attempts[c.id] = attempts.get(c.id, 0) + 1
                    ids.append(c.id)
                backend.submit(key, chunk)
            return ids

        store.commit(dispatched=fill())
        while inflight:
            rows = []
            for key, res, err in backend.wait(0.5):
                chunk = inflight.pop(key, None)
                if chunk is None:
                    continue
                if err is None:
                    rows.extend(res)
                    continue
                prog.message(f"warning: {err}; its {len(chunk)} candidate(s) go again, one at a time")
                for c in chunk:
                    if attempts.get(c.id, 0) >= max_attempts:
                        rows.append(_crash_row(c, attempts[c.id], max_attempts, err))
                    else:
                        suspects.append(c)
            new_ids = fill()
            if rows or new_ids:
                n = store.commit(rows, dispatched=new_ids)
                counts.update(r["status"] for r in rows)
                outcomes.update(count_outcomes(rows, cfg.dynamic))
                result.evaluated += n
                result.cpu += sum(r.get("t_cpu") or 0.0 for r in rows)
                if rows:
                    prog.update(len(rows), label_counts(rows))
        status = "completed"
        return result
    except KeyboardInterrupt:
        result.interrupted = True
        raise
    except BaseException:
        status = "failed"
        raise
    finally:
        if backend is not None:
            result.ready = backend.ready
            result.crashes = getattr(backend, "crashes", 0)
            backend.close(abort=status != "completed")
        if inflight:
            try:
                store.commit(undispatched=[c.id for ch in inflight.values() for c in ch])
            except Exception:  # noqa: BLE001 -- best effort on the way out
                pass
        if own_client is not None:
            own_client.close()
        if own_cluster is not None:
            own_cluster.close()
        result.counts = dict(counts)
        result.outcomes = dict(outcomes)
        result.wall = time.perf_counter() - t_start
        store.end_session(status, result.evaluated)
        prog.close()

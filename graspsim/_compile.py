"""Say on stderr when numba compiles graspsim's kernels (the first run on a machine), with progress.

A ``numba:compile`` listener counts the graspsim kernels compiled in this process (each function and
argument-type signature once); the warm-up helper (:mod:`graspsim._warmup`) adds the ones it compiles.
Kernels loaded from numba's disk cache fire no event, so a warm run prints nothing.

On a terminal a tqdm line shows while kernels compile and is cleared when compiling pauses (the job's
own output is not appended to it); otherwise (a log, CI) a line when compiling starts and one every
``INTERVAL`` seconds while it lasts.  At exit one line sums up::

    compiling graspsim kernels (first run on this machine; cached afterwards): 133/133 done [0:31]

The total is the number of kernels the README's first job compiles (:mod:`graspsim._kernel_manifest`);
other jobs compile fewer or more (the total grows if they pass it).
"""
from __future__ import annotations

import os
import sys
import threading
import time

from numba.core import event

MESSAGE = "compiling graspsim kernels (first run on this machine; cached afterwards)"
INTERVAL = 10.0         # s between plain progress lines
BAR_INTERVAL = 0.5      # s between redraws of the terminal line
RECORD_ENV = "GRASPSIM_RECORD_KERNELS"     # file to write this process's top-level compiles to (manifest)
TRACE_ENV = "GRASPSIM_COMPILE_TRACE"       # file to append every top-level compile to (benchmarks)

_lock = threading.RLock()


class _Progress:
    """This process's compile count and its display; the helper's counts come in through ``compiled``."""

    def __init__(self, at_exit: bool = True):
        self.at_exit = at_exit            # sum up at exit (the process-wide instance)
        self.n, self.total = 0, None
        self.t0 = self.t1 = self.last = None
        self.bar = None
        self.sink = None                  # the warm-up helper reports to its parent instead

    @property
    def stream(self):
        return sys.stderr                 # looked up each time: test runners swap it

    def _tty(self) -> bool:
        """A terminal with a width (on a pty of width 0 tqdm's line would show nothing)."""
        st = self.stream
        try:
            if not st.isatty():
                return False
        except (AttributeError, ValueError):
            return False
        try:
            return os.get_terminal_size(st.fileno()).columns > 0
        except (AttributeError, ValueError, OSError):
            return True             # terminal-like, size unknown: tqdm's own default width

    def _line(self, tail: str) -> None:
        s = int(self.t1 - self.t0)
        of = f"/{self.total}" if self.total else ""
        try:
            self.stream.write(f"{MESSAGE}: {self.n}{of} {tail}[{s // 60}:{s % 60:02d}]\n")
            self.stream.flush()
        except (AttributeError, ValueError, OSError):    # stderr closed (at exit under a test runner)
            pass

    def compiled(self, k: int) -> None:
        with _lock:
            if self.sink is not None:
                self.sink(k)
                return
            now = time.monotonic()
            first = self.t0 is None
            if first:
                import atexit

                from . import _warmup

                self.t0 = self.last = now
                self.total = _warmup.manifest_units() or None
                if self.at_exit:
                    atexit.register(self.finish)
                _warmup.spawn()            # first compile in this process: start the helper
            self.n += k
            self.t1 = now
            if self.total is not None and self.n > self.total:
                self.total = self.n
            if self._tty():
                self._bar_update(k, now)
            elif first or now - self.last >= INTERVAL:
                self.last = now
                self._line("")

    def _bar_update(self, k: int, now: float) -> None:
        if self.bar is None:
            from tqdm import tqdm

            fmt = "{desc}: {n}/{total} [{elapsed}]" if self.total else "{desc}: {n} [{elapsed}]"
            self.bar = tqdm(total=self.total, initial=self.n, desc=MESSAGE, file=self.stream,
                            leave=False, dynamic_ncols=True, bar_format=fmt, mininterval=BAR_INTERVAL)
            self.bar.start_t -= now - self.t0       # elapsed counts from the first compile
            return
        self.bar.total = self.total
        self.bar.update(k)

    def idle(self) -> None:
        """Compiling paused: clear the terminal line (it comes back if compiling resumes)."""
        with _lock:
            if self.bar is not None:
                try:
                    self.bar.close()
                except (ValueError, OSError):
                    pass
                self.bar = None

    def finish(self) -> None:
        """At exit, if anything was compiled here: how many kernels, in how long."""
        self.idle()
        with _lock:
            if self.n and self.sink is None:
                self._line("done ")


class _Listener(event.Listener):
    """Counts graspsim kernel compiles; records the top-level ones when asked (the manifest)."""

    def __init__(self):
        self.stack: list[list] = []       # per open compile: [dispatcher, args, graspsim kernels in it]
        self.recorded: list[tuple] = []

    def on_start(self, ev) -> None:
        from ._jit import is_kernel

        d = ev.data["dispatcher"]
        mine = is_kernel(d)
        self.stack.append([d, ev.data["args"], int(mine), time.time(), time.thread_time()])
        if mine:
            _progress.compiled(1)

    def on_end(self, ev) -> None:
        d, args, units, t0, c0 = self.stack.pop()
        f = d.py_func
        if self.stack:
            self.stack[-1][2] += units
            if os.environ.get(TRACE_ENV):   # a callee: graspsim's ("nested") or numba's own code (an @overload)
                trace(kind="nested" if units else "library", kernel=f"{f.__module__}.{f.__qualname__}",
                      sig=str(tuple(args)), units=units, t0=t0, t1=time.time(), cpu=time.thread_time() - c0)
            return
        if units and os.environ.get(RECORD_ENV):
            self.recorded.append((f.__module__, f.__qualname__, str(tuple(args)), units))
        if os.environ.get(TRACE_ENV):
            _trace(f, args, units, t0, time.time(), time.thread_time() - c0)


def _trace(f, args, units: int, t0: float, t1: float, cpu: float) -> None:
    """A top-level compile (graspsim's or numba's own, e.g. a ufunc loop): wall start and end (s
    since the epoch), this thread's CPU seconds, kernels compiled with it."""
    from . import _warmup

    trace(kind="compile", kernel=f"{f.__module__}.{f.__qualname__}", sig=str(tuple(args)), units=units,
          group=_warmup.group_of_function(f), t0=t0, t1=t1, cpu=cpu)


def trace(**rec) -> None:
    """Append ``rec`` with this process's id and role as a JSON line to ``GRASPSIM_COMPILE_TRACE``
    (if set): how ``benchmarks/bench_first_run.py --trace`` sees where the first run's time goes."""
    path = os.environ.get(TRACE_ENV)
    if not path:
        return
    import json

    rec = {"pid": os.getpid(), "role": "helper" if _progress.sink is not None else "main", **rec}
    with open(path, "a") as fh:      # one short write per line: appends of two processes do not interleave
        fh.write(json.dumps(rec) + "\n")


_progress = _Progress()
_listener = _Listener()


def install() -> None:
    """Register the listener (once; :mod:`graspsim._jit` does it before any kernel exists)."""
    if not getattr(install, "done", False):
        install.done = True
        event.register("numba:compile", _listener)
        if os.environ.get(TRACE_ENV):
            import atexit

            atexit.register(lambda: trace(kind="exit", t1=time.time(), cpu=time.process_time()))
        if os.environ.get(RECORD_ENV):
            import atexit

            atexit.register(_write_record)


def compiled(k: int) -> None:
    """Count ``k`` kernels compiled elsewhere (by the warm-up helper)."""
    _progress.compiled(k)


def idle() -> None:
    """No compile running or expected: clear the progress line."""
    _progress.idle()


def report_to(sink) -> None:
    """Send this process's counts to ``sink(k)`` instead of displaying them (the helper does)."""
    _progress.sink = sink


def _write_record() -> None:
    import json

    with open(os.environ[RECORD_ENV], "w") as f:
        json.dump(_listener.recorded, f)

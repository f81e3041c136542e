"""Progress of a batch run: a tqdm bar (rate, ETA) on a terminal, plain periodic lines otherwise
(a log file, a pipe, a CI job).  tqdm is a declared dependency of graspsim."""
from __future__ import annotations

import os
import sys
import time

from tqdm import tqdm

__all__ = ["Progress"]


def _hms(s: float) -> str:
    if s != s or s == float("inf"):
        return "?"
    s = int(round(s))
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _columns(stream) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


class Progress:
    """``update(n, counts)`` after each committed chunk; ``close()`` at the end.

    ``mode``: 'auto' (a bar if ``stream`` is a terminal, else lines), 'bar', 'lines' or 'off'.
    Lines come every ``interval`` seconds and once at the end, e.g.
    ``batch barrett_mug: 240/576 (41.7%) 52.3/s ETA 0:00:06 | ok 200, pregrasp_collision 38, error 2``.
    """

    def __init__(self, total: int, initial: int = 0, *, name: str = "batch", stream=None, mode: str = "auto",
                 interval: float = 10.0):
        self.stream = stream if stream is not None else sys.stderr
        self.total, self.done, self.start_done = total, initial, initial
        self.name = name
        self.interval = float(interval)
        if mode not in ("auto", "bar", "lines", "off"):
            raise ValueError(f"progress must be auto, bar, lines or off, got {mode!r}")
        if mode == "auto":
            isatty = getattr(self.stream, "isatty", lambda: False)
            try:
                mode = "bar" if isatty() else "lines"
            except ValueError:
                mode = "lines"
        self.mode = mode
        self.t0 = time.perf_counter()
        self.last = self.t0
        self.counts: dict = {}
        self.bar = None
        self.started = False

    def start(self) -> None:
        """Start the clock (and show the bar): call once the evaluators are set up, so that the
        rate and the ETA measure evaluation, not start-up."""
        if self.started:
            return
        self.started = True
        self.t0 = self.last = time.perf_counter()
        self.start_done = self.done
        if self.mode == "bar":
            # a terminal that reports no size (some containers' pseudo-terminals) would get an empty bar
            sized = _columns(self.stream) > 0
            self.bar = tqdm(total=self.total, initial=self.done, desc=self.name, unit="grasp", file=self.stream,
                            dynamic_ncols=sized, ncols=None if sized else 100, smoothing=0.1)
            if self.counts:
                self.bar.set_postfix({k: v for k, v in sorted(self.counts.items())}, refresh=False)

    def rate(self) -> float:
        dt = time.perf_counter() - self.t0
        return (self.done - self.start_done) / dt if dt > 0 else 0.0

    def line(self) -> str:
        r = self.rate()
        eta = (self.total - self.done) / r if r > 0 else float("inf")
        pct = 100.0 * self.done / self.total if self.total else 100.0
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        return (f"{self.name}: {self.done}/{self.total} ({pct:.1f}%) {r:.1f}/s ETA {_hms(eta)}"
                + (f" | {counts}" if counts else ""))

    def update(self, n: int, counts: dict | None = None) -> None:
        if not self.started:
            self.done += n
            self.start_done += n
            for k, v in (counts or {}).items():
                self.counts[k] = self.counts.get(k, 0) + v
            return
        self.done += n
        for k, v in (counts or {}).items():
            self.counts[k] = self.counts.get(k, 0) + v
        if self.bar is not None:
            self.bar.update(n)
            if counts:
                self.bar.set_postfix({k: v for k, v in sorted(self.counts.items())}, refresh=False)
        elif self.mode == "lines":
            now = time.perf_counter()
            if now - self.last >= self.interval:
                self.last = now
                print(self.line(), file=self.stream, flush=True)

    def message(self, text: str) -> None:
        if self.bar is not None:
            self.bar.write(text, file=self.stream)
        elif self.mode != "off":
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        if not self.started:
            self.start()
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        elif self.mode == "lines":
            print(self.line() + f" [{_hms(time.perf_counter() - self.t0)} elapsed]", file=self.stream, flush=True)
            self.mode = "off"

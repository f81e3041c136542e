"""The viewer's grasp planner: :func:`graspsim.planner.plan_grasps` in a background thread.

The planner runs on its own copy of the world (its own state and collision model), so the
window keeps drawing the scene, and taking events, while it searches; what the window shows of
it is :attr:`PlanJob.progress_text`.  No pyglet here (the session owns a job; the window draws).
"""
from __future__ import annotations

import threading
import time

from . import actions

__all__ = ["PlanJob", "PlanCancelled"]


class PlanCancelled(Exception):
    """Raised inside the planner thread (through its progress callback) to stop it."""


class PlanJob:
    """One planning run of ``hand`` on ``obj`` for ``seconds`` of search (wall time)."""

    def __init__(self, world, hand: str, obj: str, seconds: float, *, n: int = 10, seed: int = 0,
                 robust_samples: int = 0):
        self.hand, self.obj, self.seconds, self.n, self.seed = hand, obj, float(seconds), int(n), int(seed)
        self.robust_samples = int(robust_samples)     # > 0: rank by robustness with this many samples
        self.world = actions.world_copy(world)
        self.stage = "starting"
        self.done_count = 0
        self.total: int | None = None
        self.iterations = 0
        self.result: list | None = None
        self.error: Exception | None = None
        self.started = time.perf_counter()
        self.finished_at: float | None = None
        self._cancel = False
        self._thread = threading.Thread(target=self._run, name="graspsim-plan", daemon=True)
        self._thread.start()

    def _progress(self, stage: str, done: int, total) -> None:
        if self._cancel:
            raise PlanCancelled()
        self.stage, self.done_count, self.total = stage, int(done), total
        if stage == "search":
            self.iterations = int(done)

    def _run(self) -> None:
        try:
            self.result = actions.plan_grasps(self.world, self.hand, self.obj, seconds=self.seconds, n=self.n,
                                              seed=self.seed, progress=self._progress,
                                              robust_samples=self.robust_samples)
        except PlanCancelled:
            self.result = []
        except Exception as e:  # noqa: BLE001 - reported in the window (status line), not lost in a thread
            self.error = e
        self.finished_at = time.perf_counter()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    @property
    def elapsed(self) -> float:
        """Wall time since the start (s), until it finished."""
        return (self.finished_at or time.perf_counter()) - self.started

    def cancel(self, wait: float = 5.0) -> None:
        """Stop the planner at its next progress report and wait up to ``wait`` s for it."""
        self._cancel = True
        self._thread.join(wait)

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def progress_text(self) -> str:
        """What the planner is doing: iterations and time of the search, then closing the candidates."""
        t = self.elapsed
        if self.stage in ("starting", "search"):
            return (f"planning '{self.obj}' with '{self.hand}': {self.iterations} iterations, "
                    f"{t:.1f} s of {self.seconds:g} s search")
        what = {"closing": "closing and scoring candidates", "robustness": "robustness"}.get(self.stage, self.stage)
        return (f"planning '{self.obj}' with '{self.hand}': {self.iterations} iterations; {what} "
                f"{self.done_count}/{self.total} ({t:.1f} s)")

"""The step's stage timer: ``Simulator(profile=True)`` fills ``StepInfo.timing`` with the seconds of
each named stage of a step: CPU time of the process (:func:`time.process_time`), so that a
profile taken on a busy machine is not inflated by other processes' turns on the CPU.

Stages (keys of ``timing``) and the paper's ten steps (Miller & Christensen 2003, section 4):

* ``collision``   -- steps 1-3: move the bodies, first contact / joint-limit instant;
* ``contacts``    -- step 4 when it needs its own query (else found in step 3);
* ``assembly``    -- steps 5-8 and the constraint rows (friction coefficients, external, control and
  joint-friction forces; joint, coupling, limit, drive and contact rows), the controller included;
* ``solve``       -- steps 9-10: islands, inverse masses, equality elimination, the LCPs, impulses,
  post-stabilisation;
* ``integration`` -- committing the new state (checks, breakaway DOFs, step info).

Off (``profile=False``), a stage mark is one attribute test.
"""
from __future__ import annotations

from time import process_time

#: the stages of a step, in order (benchmarks/bench_dynamics.py and the peers' binding read them)
STAGES = ("collision", "contacts", "assembly", "solve", "integration")


class StageTimer:
    """Accumulates the time since the previous mark into the named stage."""

    __slots__ = ("times", "_t")

    def __init__(self, on: bool):
        self.times: dict | None = {} if on else None
        self._t = process_time() if on else 0.0

    def mark(self, stage: str) -> None:
        """The time since the last mark (or the start) belongs to ``stage`` (s)."""
        if self.times is not None:
            t = process_time()
            self.times[stage] = self.times.get(stage, 0.0) + (t - self._t)
            self._t = t

    def result(self) -> dict:
        return {} if self.times is None else self.times

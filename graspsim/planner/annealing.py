"""Simulated annealing over a :class:`~graspsim.planner.space.GraspSpace`, GraspIt's way.

GraspIt's planner (Ciocarlie & Allen, IJRR 2009, after Ingber's adaptive simulated annealing)
cools both the acceptance temperature and the neighbourhood with the iteration k:

* energy temperature ``T(k) = T0 exp(-HC k^(1/D))`` -- a worse state is accepted with
  probability ``exp(-(E_new - E) / T(k))``;
* neighbourhood temperature ``t(k) = exp(-YC k^(1/D))`` -- each variable moves by
  ``y * jump`` with ``y = sign(u - 1/2) t ((1 + 1/t)^|2u - 1| - 1)``, u uniform in [0, 1]: mostly
  small steps, occasionally one across the whole range, the range shrinking as t falls;

with D the space's dimension.  Several independent chains (restarts) run in lockstep so that each
iteration evaluates one batch of states.  Everything random comes from ``numpy.random`` seeded by
the caller: the same seed gives the same chains.  Rejected states (collisions) have energy +inf and
are never accepted.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Schedule", "SearchLog", "anneal", "random_search"]


@dataclass(frozen=True)
class Schedule:
    """Annealing constants (energies are dimensionless, see :mod:`graspsim.planner.energy`)."""

    t0: float = 1.0          # initial energy temperature
    hc: float = 2.0          # energy temperature constant
    yc: float = 1.2          # neighbourhood constant

    def temperature(self, k: int, dims: int) -> float:
        return self.t0 * float(np.exp(-self.hc * k ** (1.0 / dims)))

    def neighbourhood(self, k: int, dims: int) -> float:
        return float(np.exp(-self.yc * k ** (1.0 / dims)))


@dataclass
class SearchLog:
    """Every valid (collision-free) state evaluated, with its energy; the final state of each chain."""

    states: list = field(default_factory=list)       # arrays (m, n)
    energies: list = field(default_factory=list)     # arrays (m,)
    evaluations: int = 0         # states whose energy was computed
    checked: int = 0             # states also tested for collisions (FCL)
    iterations: int = 0
    final_energy: np.ndarray | None = None            # (restarts,) energy each chain ended at
    best_energy: float = np.inf
    seconds: float = 0.0

    def add(self, x: np.ndarray, e: np.ndarray) -> None:
        ok = np.isfinite(e)
        self.evaluations += len(e)
        self.checked += len(e)
        if ok.any():
            self.states.append(x[ok])
            self.energies.append(e[ok])
            self.best_energy = min(self.best_energy, float(e[ok].min()))

    def all(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.states:
            return np.zeros((0, 0)), np.zeros(0)
        return np.concatenate(self.states), np.concatenate(self.energies)


def _ingber(rng: np.random.Generator, t: float, shape) -> np.ndarray:
    u = rng.random(shape)
    return np.sign(u - 0.5) * t * ((1.0 + 1.0 / t) ** np.abs(2.0 * u - 1.0) - 1.0)


def _start(space, evaluate, rng, restarts: int, log: SearchLog, max_tries: int = 50):
    """A valid random state per chain (up to max_tries batches); chains left invalid stay at +inf."""
    x = space.random(rng, restarts)
    e = evaluate(x)
    log.add(x, e)
    for _ in range(max_tries):
        bad = ~np.isfinite(e)
        if not bad.any():
            break
        xb = space.random(rng, int(bad.sum()))
        eb = evaluate(xb)
        log.add(xb, eb)
        x[bad], e[bad] = xb, eb
    return x, e


def anneal(space, evaluate, *, seed: int = 0, restarts: int = 4, iterations: int | None = None,
           seconds: float | None = None, schedule: Schedule = Schedule(), screen=None,
           cycle: int = 1000, progress=None) -> SearchLog:
    """Run ``restarts`` annealing chains for ``iterations`` steps each and/or ``seconds`` of wall time.

    ``evaluate(x (B, n)) -> energies (B,)`` (+inf: rejected).  ``screen(x) -> energies``, if given,
    is the energy without the rejection test, equal to ``evaluate`` wherever that is finite: the
    acceptance is decided on it and only the states it would accept are passed to ``evaluate``
    (a state that would not be accepted needs no collision test).  After ``cycle`` iterations the
    schedule has cooled (the neighbourhood is a few per cent of each range) and the chains barely
    move: every ``cycle`` iterations they restart from new random states with the schedule reset,
    so long budgets keep finding new grasps.  ``progress(iteration, evaluations)``, if given, is
    called after every iteration (it may raise to stop the search).  Returns the :class:`SearchLog`.
    """
    if iterations is None and seconds is None:
        raise ValueError("give iterations or seconds (the search budget)")
    t_start = time.perf_counter()
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    log = SearchLog()
    x, e = _start(space, evaluate, rng, restarts, log)
    D = space.n
    k = 0
    while True:
        if iterations is not None and k >= iterations:
            break
        if seconds is not None and time.perf_counter() - t_start >= seconds:
            break
        k += 1
        kc = (k - 1) % cycle + 1               # the iteration within the current cycle
        if kc == 1 and k > 1:
            x, e = _start(space, evaluate, rng, len(x), log)
        T = schedule.temperature(kc, D)
        t = schedule.neighbourhood(kc, D)
        xn = space.project(x + _ingber(rng, t, x.shape) * space.jump)
        u = rng.random(len(x))
        if screen is None:
            en = evaluate(xn)
            log.add(xn, en)
        else:
            es = screen(xn)
            with np.errstate(over="ignore", invalid="ignore"):
                cand = (es <= e) | (u < np.exp(-(es - e) / T))
            en = np.full(len(xn), np.inf)
            if cand.any():
                en[cand] = evaluate(xn[cand])
                log.add(xn[cand], en[cand])
            log.evaluations += int((~cand).sum())
        with np.errstate(over="ignore", invalid="ignore"):
            accept = np.isfinite(en) & ((en <= e) | (u < np.exp(-(en - e) / T)))
        x[accept], e[accept] = xn[accept], en[accept]
        if progress is not None:
            progress(k, log.evaluations)
    log.iterations = k
    log.final_energy = e.copy()
    log.seconds = time.perf_counter() - t_start
    return log


def random_search(space, evaluate, *, seed: int = 0, evaluations: int, batch: int = 64, screen=None) -> SearchLog:
    """Uniform random states, ``evaluations`` of them (the baseline annealing must beat).  With
    ``screen`` (see :func:`anneal`) only states below the best so far are tested for rejection."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    log = SearchLog()
    left = int(evaluations)
    while left > 0:
        m = min(batch, left)
        x = space.random(rng, m)
        if screen is None:
            log.add(x, evaluate(x))
        else:
            es = screen(x)
            cand = es < log.best_energy
            if cand.any():
                log.add(x[cand], evaluate(x[cand]))
            log.evaluations += int((~cand).sum())
        left -= m
    log.final_energy = np.array([log.best_energy])
    return log

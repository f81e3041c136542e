"""Lemke's complementary pivoting method for the linear complementarity problem.

    LCP(M, q):  find z >= 0 with w = M z + q >= 0 and z . w = 0.

>>> import numpy as np
>>> from graspsim.lcp import lemke
>>> r = lemke(np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-5.0, -6.0]))
>>> r.status, np.round(r.z, 12).tolist()
('solved', [1.333333333333, 2.333333333333])

Guarantees (see docs/lcp.md): a "solved" verdict is only returned after the
solution was verified against the original data (z >= 0, w >= 0 and
complementarity, violations of w to ``tol`` relative to ||q|| plus the
rounding error of forming M z + q, so no point far out along a ray of an
infeasible problem passes); the
pivoting uses a deterministic lexicographic minimum-ratio rule; matrices that
Lemke's method processes (copositive-plus, P, PSD, Anitescu-Potra contact
matrices) end in "solved" whenever a solution exists (a theorem in exact
arithmetic; in floating point what the tests and benchmark check).

This module imports nothing from the rest of graspsim.  The numba kernel is
compiled (or loaded from numba's on-disk cache) on the first call, never at
import time.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

__all__ = ["lemke", "solve_large", "LCPResult", "STATUSES"]

STATUSES = ("solved", "ray", "max_pivots", "numerical")
_STATUS_NAMES = {0: "solved", 1: "ray", 2: "max_pivots", 3: "numerical"}
_EMPTY = np.zeros(0)
_NO_WARM = np.zeros(0, dtype=np.bool_)
_NO_CONE = np.zeros(0, dtype=np.int64)

_K = None


def _get_kernel():
    global _K
    if _K is None:
        import importlib
        # imports numba; functions compile (or load from cache) on first call
        _K = importlib.import_module(__name__ + "._kernel")
    return _K


@dataclass(eq=False, slots=True)
class LCPResult:
    """Outcome of :func:`lemke`.

    z, w        : solution and slack w = M z + q (meaningful only if solved;
                  otherwise z = 0 and w = q).
    status      : "solved" | "ray" | "max_pivots" | "numerical".
    pivots      : number of complementary pivots (including the first one
                  that brings in the artificial variable z0; 0 for q >= 0 and
                  for an accepted warm start; summed over all runs when the
                  robust retries ran).
    basis       : boolean mask of the basic z variables at the end (pass it
                  as ``warm_start`` next time).
    residual    : worst scaled violation found by the verification (<= tol
                  when solved, see ``tol`` in :func:`lemke`; inf when no
                  candidate solution was produced).
    certificate : for "ray", a vector y >= 0 with M^T y <= 0 and q.y < 0
                  (a Farkas proof that no z >= 0 has M z + q >= 0) when the
                  secondary ray provides one (always, in exact arithmetic,
                  for copositive-plus M); otherwise None.
    warm_started: True when the warm-start basis was accepted as is.
    retried     : True when the first run ended in "numerical" or in a ray
                  without certificate and robust re-runs were made.
    refactorizations: dense refactorisations of the basis made by the
                  accuracy monitor.
    factorizations: principal-block factorisations of block principal
                  pivoting (:func:`solve_large`; 0 for :func:`lemke`).
    """

    z: np.ndarray
    w: np.ndarray
    status: str
    pivots: int
    basis: np.ndarray
    residual: float
    certificate: np.ndarray | None = None
    warm_started: bool = False
    retried: bool = False
    refactorizations: int = 0
    factorizations: int = 0

    @property
    def solved(self) -> bool:
        return self.status == "solved"


def _as_real(a, name):
    if isinstance(a, np.ndarray) and a.dtype == np.float64:
        return a
    a = np.asarray(a)
    if a.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be an array of real numbers, got dtype {a.dtype}")
    return a.astype(np.float64)


def _as_matrix(M, q):
    M = _as_real(M, "M")
    q = _as_real(q, "q")
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"M must be a square 2-D array, got shape {M.shape}")
    if q.ndim != 1 or q.shape[0] != M.shape[0]:
        raise ValueError(
            f"q must be a 1-D array of length {M.shape[0]} to match M, got shape {q.shape}")
    if not M.flags.c_contiguous:
        M = np.ascontiguousarray(M)
    if not q.flags.c_contiguous:
        q = np.ascontiguousarray(q)
    return M, q


def _cone_layout(cones, n: int) -> np.ndarray:
    """``friction_cones`` checked: (normal row, friction row, lambda row, contacts, directions), each
    block inside the n rows."""
    try:
        c = [operator.index(x) for x in cones]
    except TypeError:
        raise ValueError(f"friction_cones must be 5 integers, got {cones!r}") from None
    if len(c) != 5:
        raise ValueError(f"friction_cones must be 5 integers, got {len(c)}")
    nrm, fr, lam, nc, u = c
    if min(c) < 0 or u < 3 or max(nrm + nc, fr + nc * u, lam + nc) > n:
        raise ValueError(f"friction_cones {tuple(c)} (normal row, friction row, lambda row, contacts, "
                         f"directions >= 3) do not fit {n} rows")
    return np.array(c, dtype=np.int64)


def _warm_mask(warm_start, n):
    if isinstance(warm_start, LCPResult):
        warm_start = warm_start.basis
    ws = np.asarray(warm_start)
    if ws.dtype == np.bool_:
        if ws.shape != (n,):
            raise ValueError(f"warm_start mask must have shape ({n},), got {ws.shape}")
        return np.ascontiguousarray(ws)
    if ws.size == 0:
        return np.zeros(n, dtype=np.bool_)
    if ws.ndim != 1 or not np.issubdtype(ws.dtype, np.integer):
        raise ValueError("warm_start must be a boolean mask of length n, an index array, "
                         "or an LCPResult")
    if ws.min() < 0 or ws.max() >= n:
        raise ValueError(f"warm_start indices must lie in [0, {n})")
    mask = np.zeros(n, dtype=np.bool_)
    mask[ws] = True
    return mask


def lemke(M, q, *, max_pivots=None, warm_start=None, d=None, tol=1e-9,
          scale=True, friction_cones=None) -> LCPResult:
    """Solve LCP(M, q) by Lemke's method.

    Parameters
    ----------
    M : (n, n) array_like of real numbers.
    q : (n,) array_like.
    max_pivots : int, optional
        Pivot budget; default ``max(50 * n, 200)``.  Lemke needs 2^n pivots
        on Murty's and Fathi's problems, so raise it for such cases.
    warm_start : bool mask, index array or LCPResult, optional
        Guess of the set of basic z variables (e.g. ``previous.basis``).  The
        complementary basis is solved directly and accepted if the result
        verifies; otherwise Lemke runs from the standard start.
    d : (n,) array_like of positive numbers, optional
        Covering vector (default: ones in the equilibrated variables).
    tol : float
        Verification tolerance (default 1e-9).  With D the power-of-two
        equilibration (computed for the check even when ``scale`` is off) and
        ||q|| = max_j |D_j q_j| (rounded up to a power of two), row i is
        measured on the scales
          ws_i = ||q|| / D_i + (n + 1) eps / tol * (|q_i| + sum_j |M_ij z_j|)
                 (q's size in row i's units, plus the rounding error of
                 forming w_i = q_i + sum_j M_ij z_j),
          zs_i = D_i max_j |z_j| / D_j  (at least 1e-6 ||q|| D_i),
        and a solution must have z_i >= -tol zs_i, w_i >= -tol ws_i,
        min(|z_i| / zs_i, |w_i| / ws_i) <= tol and |z_i w_i| <= tol zs_i ws_i.
        The violation of w is measured against ||q||, not against the terms
        |M||z|: far out along a ray of an infeasible problem the terms grow
        with z but the violation does not shrink.
    scale : bool
        Symmetric power-of-two equilibration D M D (exact, class preserving).
    friction_cones : (5,) ints, optional
        For a contact LCP with polyhedral friction cones (Miller & Christensen
        2003, eq. 5-6): (first normal row, first friction row, first lambda
        row, contacts, directions per contact), friction rows contact-major,
        direction e at the angle 2 pi e / u.  A warm start whose sticking
        contacts' friction multipliers come out negative is repaired first
        (their flags moved to the directions around the friction force, up to
        three times) before Lemke starts from it; the answer is verified as
        always.  Only used with ``warm_start``.

    Returns
    -------
    LCPResult

    Raises
    ------
    ValueError for wrong shapes, non-finite entries, a non-positive covering
    vector, a bad warm start or a non-positive budget/tolerance.
    """
    M, q = _as_matrix(M, q)
    n = q.shape[0]
    if max_pivots is None:
        max_pivots = max(50 * n, 200)
    else:
        try:
            max_pivots = operator.index(max_pivots)
        except TypeError:
            raise ValueError(f"max_pivots must be an integer, got {max_pivots!r}") from None
        if max_pivots < 1:
            raise ValueError(f"max_pivots must be >= 1, got {max_pivots}")
    tol = float(tol)
    if not (0.0 < tol < 1.0):
        raise ValueError(f"tol must lie in (0, 1), got {tol}")
    if d is None:
        dvec = _EMPTY
    else:
        dvec = np.asarray(d, dtype=np.float64)
        if dvec.shape != (n,):
            raise ValueError(f"covering vector d must have shape ({n},), got {dvec.shape}")
        if not np.all(np.isfinite(dvec)) or not np.all(dvec > 0):
            raise ValueError("covering vector d must be finite and strictly positive")
        dvec = np.ascontiguousarray(dvec)
    cone = _NO_CONE if friction_cones is None else _cone_layout(friction_cones, n)
    if warm_start is None:
        wmask = _NO_WARM
        use_warm = False
    else:
        wmask = _warm_mask(warm_start, n)
        use_warm = True
    if n == 0:
        return LCPResult(np.zeros(0), np.zeros(0), "solved", 0,
                         np.zeros(0, dtype=np.bool_), 0.0)

    k = _get_kernel()
    z = np.empty(n)
    w = np.empty(n)
    zb = np.empty(n, dtype=np.bool_)
    cert = np.empty(n)
    sc = bool(scale)
    # First run as asked.  If it ends in "numerical" or in a ray without a
    # certificate, retry with an accuracy check (and refactorisation when
    # needed) at every pivot and stricter pivot tolerances, then once more
    # with the scaling switched.  The budget is shared; the last verdict
    # stands unless a run produced a verified answer.
    pivots = nref = 0
    retried = False
    for attempt, (s_, robust) in enumerate(((sc, False), (sc, True), (not sc, True))):
        budget = max_pivots - pivots
        if budget < 1:
            break
        retried = attempt > 0
        code, piv, res, has_cert, nr = k.solve(M, q, dvec, wmask, use_warm and attempt == 0,
                                               budget, tol, s_, robust, z, w, zb, cert, cone)
        if code < 0:
            if code == k.NONFINITE:
                raise ValueError("M and q must contain only finite numbers (found NaN or inf)")
            raise ValueError("covering vector d must be finite and strictly positive")
        pivots += piv
        nref += nr
        if code in (0, 2) or (code == 1 and has_cert):
            break
    warm_used = bool(use_warm and code == 0 and pivots == 0 and zb.any())
    return LCPResult(z, w, _STATUS_NAMES[code], pivots, zb, res,
                     cert if (code == 1 and has_cert) else None,
                     warm_used, retried, nref)


def solve_large(M, q, *, warm_start=None, min_rows=None, max_iter=None,
                cold_above=None) -> LCPResult:
    """Solve LCP(M, q) as the simulator does for large contact LCPs: block
    principal pivoting from ``warm_start`` (at most ``max_iter``
    factorisations of the guessed principal block), then, if that gave no
    verified solution, :func:`lemke` with its retries (from the warm start,
    or cold when the guess's first solution had more than ``cold_above * n``
    wrong signs).  Without a warm start, or below ``min_rows`` rows, it is
    :func:`lemke`.  Defaults: ``graspsim.lcp._bpp`` ``MIN_ROWS``,
    ``MAX_ITER``, ``COLD_ABOVE``.

    A "solved" verdict passed the same verification as :func:`lemke`'s
    (default ``tol`` 1e-9).  ``pivots`` counts Lemke's pivots only,
    ``factorizations`` the block-pivoting solves.  ``refactorizations``,
    ``retried`` and ``certificate`` are not reported (0 / False / None).
    """
    M, q = _as_matrix(M, q)
    n = q.shape[0]
    if warm_start is None:
        wmask, use_warm = np.zeros(n, dtype=np.bool_), False
    else:
        wmask, use_warm = _warm_mask(warm_start, n), True
    if n == 0:
        return LCPResult(np.zeros(0), np.zeros(0), "solved", 0,
                         np.zeros(0, dtype=np.bool_), 0.0)
    import importlib
    B = importlib.import_module(__name__ + "._bpp")
    min_rows = B.MIN_ROWS if min_rows is None else int(min_rows)
    max_iter = B.MAX_ITER if max_iter is None else int(max_iter)
    cold_above = B.COLD_ABOVE if cold_above is None else float(cold_above)
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    z, w = np.empty(n), np.empty(n)
    zb = np.empty(n, dtype=np.bool_)
    cert = np.empty(n)
    code, piv, nf, _ = B.solve_stats(M, q, wmask, use_warm, min_rows, max_iter, cold_above,
                                     z, w, zb, cert)
    if code < 0:
        raise ValueError("M and q must contain only finite numbers (found NaN or inf)")
    if code != 0:
        z[:] = 0.0
        w[:] = q
    res = B.verify(M, q, z, 1e-9)[0] if code == 0 else np.inf
    return LCPResult(z, w, _STATUS_NAMES[code], int(piv), zb, float(res),
                     factorizations=int(nf))

"""Step 10 for one island: free step (eq. 15), equality system (eq. 17) or mixed LCP (eq. 18-21).

The mixed LCP is reduced to a pure LCP without ever forming a dense inverse of the whole mass
matrix: the body inertias are block diagonal (6x6 per body, inverted per body), and the equality
rows are eliminated through a Cholesky factorisation of ``A = J^T M^-1 J + C`` (``C`` the
compliance of soft drive rows, zero for hard joints).  With ``P = M^-1 - M^-1 J A^-1 J^T M^-1``:

    G = H^T P H                                   (eq. 21)
    g = b + H^T v_free,   v_free = M^-1 a + M^-1 J A^-1 (eps_j - J^T M^-1 a)

and after Lemke returns ``z``: ``v = v_free + P H z``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SimulationError


@dataclass
class IslandProblem:
    """One island's data.  ``nv = 6 nb``; matrices are dense over the island's bodies."""

    slots: np.ndarray          # (nb,) dynamic body slots in this island
    Minv: np.ndarray           # (nb, 6, 6) inverse body mass matrices
    a_over_M: np.ndarray       # (nv,) M^-1 a = v^l + h M^-1 k
    Je: np.ndarray             # (nv, ne) equality rows
    eps_e: np.ndarray          # (ne,) equality targets (error-correction velocities)
    comp_e: np.ndarray         # (ne,) compliance (0 = hard)
    Hl: np.ndarray             # (nv, nl) unilateral rows without friction: joint limits then contact normals
    bl: np.ndarray             # (nl,) biases of those rows (w = Hl^T v + bl >= 0)
    n_limits: int              # how many of the Hl rows are joint limits (the rest are contact normals)
    D: np.ndarray              # (nv, nc * u) friction direction rows
    mu: np.ndarray             # (nc,) friction coefficients
    u: int                     # friction directions per contact
    compliance: float = 0.0    # contact compliance, relative to the mean diagonal of G (see Simulator)


def project_positions(Minv: np.ndarray, Je: np.ndarray, comp: np.ndarray, err: np.ndarray) -> np.ndarray:
    """Post-stabilisation: the displacement (6 nb,) dx = M^-1 J c with (J^T M^-1 J + C) c = [-err; 0]
    over the island's equality rows ``Je`` (nv, ne), hard rows first (``len(err)`` of them, with
    their linearised errors ``err``), then the soft ones (compliance ``comp`` (ne,), 0 on hard rows).
    The hard rows' errors are removed exactly (J_h^T dx = -err); the smallest such displacement in
    the metric of the mass and the drives' stiffness (``C^-1``), so driven joints resist it.

    Velocity-level joint rows (eq. 7) drift by O(h^2) per step; eq. (16)'s correction velocity only
    removes a fraction ``gamma`` of it per step, so fast chains open up.  One projection per step
    keeps the error at the drift of a single step's linearisation.  ``A`` is the matrix of the
    equality elimination (eq. 17), so the compiled solver reuses that factor.
    """
    W = _blockmul(Minv, Je)
    A = Je.T @ W
    A[np.diag_indices(len(A))] += comp
    A[np.diag_indices(len(A))] += 1e-12 * max(1.0, float(np.abs(A).max()))
    rhs = np.zeros(len(A))
    rhs[:len(err)] = -err
    return W @ _cho_solve(_chol(A), rhs)


@dataclass
class IslandSolution:
    v: np.ndarray              # (nv,) new velocities
    c_e: np.ndarray            # (ne,) equality impulses
    z: np.ndarray              # LCP solution [c_l, c_n, beta, lambda] (empty without an LCP)
    lcp_size: int
    pivots: int
    regularized: float         # diagonal added to solve (0 if none)


def _chol(A: np.ndarray) -> np.ndarray:
    """Inverse of the lower Cholesky factor of the (small, SPD) constraint Schur complement A.

    Solving with ``Li = L^-1`` as two matrix products is 5-40x faster here than LAPACK's
    triangular solves on C-ordered right-hand sides, and as accurate for these matrices (their
    condition numbers stay far below 1/eps).  A is J^T M^-1 J + C of the island's equality rows --
    tens of rows -- never the mass matrix.
    """
    from scipy.linalg.lapack import dpotrf, dtrtri      # (the reference path only: scipy loads in ~0.3 s)

    L, info = dpotrf(A, lower=1, clean=1, overwrite_a=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"matrix not positive definite (dpotrf info {info})")
    Li, info = dtrtri(L, lower=1)
    return Li


def _cho_solve(Li: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A^-1 B = L^-T L^-1 B."""
    return Li.T @ (Li @ B)


def _blockmul(Minv: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Block-diagonal M^-1 (nb, 6, 6) times X (6 nb, m)."""
    nb = len(Minv)
    if X.ndim == 1:
        return np.einsum("bij,bj->bi", Minv, X.reshape(nb, 6)).reshape(-1)
    return np.einsum("bij,bjm->bim", Minv, X.reshape(nb, 6, -1)).reshape(6 * nb, -1)


def solve_island(p: IslandProblem, *, lemke, max_regularization_tries: int = 3,
                 describe=lambda: "", warm_start=None, first_level: int = 0,
                 friction_cones: bool = False) -> IslandSolution:
    """Solve one island; raise :class:`SimulationError` if the LCP cannot be solved.

    ``warm_start``: the basis (mask of basic z) of this island's previous LCP of the same size;
    Lemke first tries it directly (resting contacts keep their basis from step to step).
    ``friction_cones``: ``lemke`` takes the cones' layout (``friction_cones=``, as
    :func:`graspsim.lcp.lemke`) to repair the warm start's friction flags, as the compiled path does.
    """
    ne = p.Je.shape[1]
    # eliminate the equality rows (eq. 17 and the first two block rows of eq. 20)
    if ne:
        W = _blockmul(p.Minv, p.Je)                          # M^-1 J
        A = p.Je.T @ W
        A[np.diag_indices(ne)] += p.comp_e
        try:
            cf = _chol(A)
        except np.linalg.LinAlgError:
            # redundant joint rows (e.g. a closed loop of fixed joints): tiny regularisation
            A[np.diag_indices(ne)] += 1e-12 * max(1.0, np.abs(A).max())
            cf = _chol(A)
        c_free = _cho_solve(cf, p.eps_e - p.Je.T @ p.a_over_M)
        v_free = p.a_over_M + W @ c_free
    else:
        W = None
        cf = None
        c_free = np.zeros(0)
        v_free = p.a_over_M.copy()
    nl, nfr = p.Hl.shape[1], p.D.shape[1]
    if nl == 0:
        return IslandSolution(v_free, c_free, np.zeros(0), 0, 0, 0.0)

    nc = len(p.mu)
    H = np.concatenate([p.Hl, p.D], axis=1) if nfr else p.Hl
    Y = _blockmul(p.Minv, H)                                  # M^-1 H
    G = H.T @ Y
    if ne:
        WH = W.T @ H                                          # J^T M^-1 H
        G -= WH.T @ _cho_solve(cf, WH)
    m = nl + nfr + (nc if nfr else 0)
    Mlcp = np.zeros((m, m))
    Mlcp[:nl + nfr, :nl + nfr] = G
    qlcp = np.zeros(m)
    qlcp[:nl] = p.bl
    qlcp[:nl + nfr] = qlcp[:nl + nfr] + H.T @ v_free
    if nfr:
        # friction cone rows (eq. 5, 6): sigma = D^T v + E lambda, zeta = mu c_n - E^T beta
        u = p.u
        beta0, lam0 = nl, nl + nfr
        for i in range(nc):
            rows = slice(beta0 + i * u, beta0 + (i + 1) * u)
            Mlcp[rows, lam0 + i] = 1.0
            Mlcp[lam0 + i, rows] = -1.0
            Mlcp[lam0 + i, p.n_limits + i] = p.mu[i]
    # contact compliance (a modelling choice, solved exactly): makes the contact impulse
    # distribution unique -- the least-norm one as compliance -> 0 -- instead of an arbitrary vertex
    # that loads a single corner of a face contact
    cidx = np.arange(p.n_limits, nl + nfr)
    dg = float(np.diag(G)[cidx].mean()) if len(cidx) else 0.0
    reg = 0.0
    scale = max(1.0, float(np.abs(np.diag(G)).max()))
    # retries: first a stiffer-to-softer contact compliance (x100 each), then a diagonal on all rows
    tries = [(p.compliance * 100.0 ** k, 0.0) for k in range(max_regularization_tries)] + \
        [(p.compliance * 100.0 ** (max_regularization_tries - 1), 1e-8 * scale)]
    for attempt, (cfm, reg) in enumerate(tries):
        if attempt < min(first_level, len(tries) - 1):
            continue     # this island needed a softer contact model last time: start there
        Mtry = Mlcp.copy()
        if cfm > 0 and len(cidx):
            Mtry[cidx, cidx] += cfm * dg
        if reg > 0:
            Mtry[np.diag_indices(m)] += reg
        ws = warm_start if (attempt == 0 and warm_start is not None and len(warm_start) == m) else None
        if ws is None:
            res = lemke(Mtry, qlcp)
        elif friction_cones and nfr:
            res = lemke(Mtry, qlcp, warm_start=ws, friction_cones=(p.n_limits, nl, nl + nfr, nc, p.u))
        else:
            res = lemke(Mtry, qlcp, warm_start=ws)
        if res.status == "solved":
            break
    else:
        raise SimulationError(f"the contact LCP could not be solved ({describe()}; LCP size {m}, "
                              f"solver status '{res.status}' after {res.pivots} pivots, also with contact "
                              f"compliance up to {cfm:.1e} and a diagonal regularisation of {reg:.1e})")
    z = res.z
    Hz = H @ z[:nl + nfr]
    dv = _blockmul(p.Minv, Hz)
    if ne:
        c_extra = -_cho_solve(cf, W.T @ Hz)
        dv = dv + W @ c_extra
        c_e = c_free + c_extra
    else:
        c_e = c_free
    sol = IslandSolution(v_free + dv, c_e, z, m, int(res.pivots), cfm if attempt else 0.0)
    sol.basis = res.basis
    sol.level = attempt
    return sol

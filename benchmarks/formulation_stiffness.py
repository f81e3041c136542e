"""Formulation stiffness of forward dynamics: Cloutier (1995), chapter 5, rerun on graspsim.rigidbody.

    python benchmarks/formulation_stiffness.py                 # everything (~5-10 min on one core)
    python benchmarks/formulation_stiffness.py --quick         # smaller sweeps, a minute
    python benchmarks/formulation_stiffness.py --write-docs    # also refresh docs/reduced_coordinates.md + docs/img/*.png

Studies (thesis figure numbers in brackets):

1. Forward dynamics of a two-link planar chain (Cloutier's PRRRobot: uniform plates of unit width),
   first link 1 m / 1 kg, distal link length = mass = L from 1 to 1e6, at rest, g = 9.8, no torques:
   condition number of H against the relative CRBM-ABM difference in joint-1 acceleration [5.4],
   plus each method's error against a 60-digit closed-form reference; the configuration sweep at
   L = 100 [5.3]; the acceleration profile at L = 1e5 [5.5]; ABM variants (naive projection,
   Pai-Ascher-Kry's modified pivot, the thesis's "bad" ABM [5.7]) in aligned and unaligned frames.
2. Right-hand-side evaluations of an adaptive integrator for 10 s of motion of two-link chains of
   fixed total length (20 m) and mass (40 kg) as the proximal share r = l1/(l1+l2) = m1/(m1+m2) drops
   from 1e-1 to 1e-10, step accuracy 1e-6, CRBM vs ABM vs modified ABM [5.6].
3. Regular chains of 2-14 links (10 m, 20 kg, 1 m wide each; E_init = 3920 J for two links as in the
   thesis) swinging from horizontal for 60 s at accuracy 1e-4: execution time, evaluations and
   energy deviation ``100 (E_avg - E_init) / E_init`` with potential energy zero when hanging [5.9].

Integrators: scipy's ``solve_ivp(method="RK45")`` (Dormand-Prince 5(4), RMS error norm,
``rtol = atol = accuracy``) and, to match the thesis, a Cash-Karp RK5(4) with Numerical Recipes'
step control (``rkqs``/``odeint``: max-norm error relative to ``|y| + |h y'|``, first step 0.01 s).
"""
from __future__ import annotations

import argparse
import math
import re
import sys
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

import graspsim.rigidbody as rb
from graspsim.rigidbody import spatial_algebra as sa
from graspsim.rigidbody.builders import random_rotation
from graspsim.rigidbody.quantities import body_transforms
from graspsim.rigidbody.reference import two_link_accelerations, two_link_condition

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "reduced_coordinates.md"
IMG = ROOT / "docs" / "img"
G = 9.8
GRAV = np.array([0.0, 0.0, -G])
EPS = np.finfo(float).eps
METHODS = {"CRBM": rb.forward_dynamics_crb, "ABM": rb.forward_dynamics_abm,
           "modified ABM": rb.forward_dynamics_modified_abm}


def chain_model(lengths, masses, frame_rotation=None, align_axes=True):
    return rb.from_robot(rb.planar_chain(lengths, masses, 1.0, frame_rotation), gravity=GRAV, align_axes=align_axes)


def ref_acc(lengths, masses, q, qd=(0.0, 0.0), tau=(0.0, 0.0)) -> np.ndarray:
    return np.array([float(a) for a in two_link_accelerations(lengths, masses, [1.0, 1.0], q, qd, tau, g=G)])


def safe_fd(f, model, q, qd, tau) -> np.ndarray:
    try:
        return f(model, q, qd, tau)
    except np.linalg.LinAlgError:
        return np.full(len(qd), np.nan)


# -- ABM variants (plain numpy, fixed base, one-DOF joints) for study 1 ----------------------------

def abm_variant(model, q, qd, tau, projection="exact", pivot="standard", order="good") -> np.ndarray:
    """Articulated-body forward dynamics with selectable numerics (the kernel is projection='exact').

    projection: 'exact' forms Ia = P^T IA P (P = 1 - S w^T, w = U/D), 'naive' Ia = IA - U U^T / D.
    pivot: 'standard' D = S.(I + A~)S, 'modified' D = S.I S + S.A~ S (Pai-Ascher-Kry sec. 7).
    order: 'good' passes X^T Ia X to the parent; 'bad' adds X^T IA X to the parent first and
    subtracts X^T U U^T X / D afterwards (Cloutier sec. 5.3.1).
    """
    E, r = body_transforms(model, q)
    nb = model.nb
    X = [sa.plucker(E[i], r[i]) for i in range(nb)]
    S, I, par = model.S, model.inertia, model.parent
    v, c, pA = np.zeros((nb, 6)), np.zeros((nb, 6)), np.zeros((nb, 6))
    for i in range(nb):
        vp = v[par[i]] if par[i] >= 0 else np.zeros(6)
        sq = S[i] * qd[i]
        v[i] = X[i] @ vp + sq
        c[i] = sa.crm(v[i]) @ sq
        pA[i] = sa.crf(v[i]) @ I[i] @ v[i]
    At = np.zeros((nb, 6, 6))
    sub = np.zeros((nb, 6, 6))
    IA, Ia, U, D = np.zeros((nb, 6, 6)), np.zeros((nb, 6, 6)), np.zeros((nb, 6)), np.zeros(nb)
    for i in range(nb - 1, -1, -1):
        IA[i] = (I[i] + At[i]) - sub[i]
        s = S[i]
        if pivot == "modified":
            us, ua = I[i] @ s, (At[i] - sub[i]) @ s
            U[i], D[i] = us + ua, s @ us + s @ ua
        else:
            U[i] = IA[i] @ s
            D[i] = s @ U[i]
        if projection == "exact":
            w = U[i] / D[i]
            M = IA[i] - np.outer(U[i], w)
            Ia[i] = M - np.outer(w, s @ M)
            Ia[i] = 0.5 * (Ia[i] + Ia[i].T)
        else:
            Ia[i] = IA[i] - np.outer(U[i], U[i]) / D[i]
        p = par[i]
        if p >= 0:
            if order == "bad":
                At[p] += X[i].T @ IA[i] @ X[i]
                xu = X[i].T @ U[i]
                sub[p] += np.outer(xu, xu) / D[i]
            else:
                At[p] += X[i].T @ Ia[i] @ X[i]
    u = np.zeros(nb)
    pa_acc = pA.copy()
    for i in range(nb - 1, -1, -1):
        u[i] = tau[i] - S[i] @ pa_acc[i]
        pa = pa_acc[i] + Ia[i] @ c[i] + U[i] * u[i] / D[i]
        if par[i] >= 0:
            pa_acc[par[i]] += X[i].T @ pa
    a = np.zeros((nb, 6))
    qdd = np.zeros(nb)
    a_root = model.root_acceleration()
    for i in range(nb):
        ap = X[i] @ (a[par[i]] if par[i] >= 0 else a_root) + c[i]
        qdd[i] = (u[i] - U[i] @ ap) / D[i]
        a[i] = ap + S[i] * qdd[i]
    return qdd


# -- integrators ------------------------------------------------------------------------------

class TooManyEvaluations(RuntimeError):
    pass


def make_rhs(model, fd, max_nfev):
    n = model.nv
    tau = np.zeros(n)
    count = [0]

    def rhs(t, y):
        count[0] += 1
        if count[0] > max_nfev:
            raise TooManyEvaluations(t)
        out = np.empty(2 * n)
        out[:n] = y[n:]
        out[n:] = fd(model, y[:n], y[n:], tau)
        return out
    return rhs, count


_CK_A = np.array([0.0, 0.2, 0.3, 0.6, 1.0, 0.875])
_CK_B = [np.array([]), np.array([0.2]), np.array([3 / 40, 9 / 40]), np.array([0.3, -0.9, 1.2]),
         np.array([-11 / 54, 2.5, -70 / 27, 35 / 27]),
         np.array([1631 / 55296, 175 / 512, 575 / 13824, 44275 / 110592, 253 / 4096])]
_CK_C = np.array([37 / 378, 0.0, 250 / 621, 125 / 594, 0.0, 512 / 1771])
_CK_DC = _CK_C - np.array([2825 / 27648, 0.0, 18575 / 48384, 13525 / 55296, 277 / 14336, 0.25])


def cash_karp(rhs, y0, t0, t1, eps, h1=0.01, dxsav=0.01):
    """Numerical Recipes' odeint + rkqs + rkck (2nd ed., sec. 16.2): returns (ts, ys, good, bad).

    Step error ``max_i |err_i| / (|y_i| + |h y'_i| + 1e-30) <= eps``; saves a point after each step
    that is more than ``dxsav`` after the previous save (plus both ends).
    """
    SAFETY, PGROW, PSHRNK, ERRCON = 0.9, -0.2, -0.25, 1.89e-4
    t, y, h = t0, np.array(y0, dtype=float), h1
    ts, ys = [t], [y.copy()]
    tsav, good, bad = t, 0, 0
    k = np.empty((6, y.size))
    while True:
        dydt = rhs(t, y)
        yscal = np.abs(y) + np.abs(dydt * h) + 1e-30
        if t + h > t1:
            h = t1 - t
        htry = h
        while True:
            k[0] = dydt
            for s in range(1, 6):
                k[s] = rhs(t + _CK_A[s] * h, y + h * (_CK_B[s] @ k[:s]))
            ytemp = y + h * (_CK_C @ k)
            errmax = np.max(np.abs(h * (_CK_DC @ k)) / yscal) / eps
            if errmax <= 1.0:
                break
            h = max(SAFETY * h * errmax ** PSHRNK, 0.1 * h)
            if t + h == t:
                raise FloatingPointError("stepsize underflow")
        hnext = SAFETY * h * errmax ** PGROW if errmax > ERRCON else 5.0 * h
        good += h == htry
        bad += h != htry
        t += h
        y = ytemp
        if t >= t1 or t - tsav > dxsav:
            ts.append(t)
            ys.append(y.copy())
            tsav = t
        if t >= t1:
            return np.array(ts), np.array(ys), good, bad
        h = hnext


def integrate(model, fd, t1, accuracy, integrator, max_nfev, sample_dt=0.01):
    """Integrate the unactuated chain from rest at q = 0.  Returns a dict (nfev, times, samples) or a failure."""
    n = model.nv
    rhs, count = make_rhs(model, fd, max_nfev)
    y0 = np.zeros(2 * n)
    t_wall, t_cpu = time.perf_counter(), time.process_time()
    try:
        if integrator == "RK45":
            sol = solve_ivp(rhs, (0.0, t1), y0, method="RK45", rtol=accuracy, atol=accuracy,
                            t_eval=np.arange(0.0, t1 + 1e-9, sample_dt))
            ts, ys, ok = sol.t, sol.y.T, sol.success
        else:
            ts, ys, _, _ = cash_karp(rhs, y0, 0.0, t1, accuracy, h1=0.01, dxsav=sample_dt)
            ok = True
    except (TooManyEvaluations, np.linalg.LinAlgError, FloatingPointError) as e:
        return {"ok": False, "nfev": count[0], "why": type(e).__name__,
                "t_fail": float(e.args[0]) if isinstance(e, TooManyEvaluations) else float("nan"),
                "wall": time.perf_counter() - t_wall, "cpu": time.process_time() - t_cpu}
    return {"ok": bool(ok), "nfev": count[0], "t": ts, "y": ys,
            "wall": time.perf_counter() - t_wall, "cpu": time.process_time() - t_cpu}


def energy_hanging_zero(model, ys, lengths, masses) -> np.ndarray:
    """Total energy (J) with the potential zero in the hanging configuration (thesis convention)."""
    n = model.nv
    heights = np.cumsum(np.concatenate([[0.0], lengths[:-1]])) + np.asarray(lengths) / 2
    e_hang = -G * float(np.sum(np.asarray(masses) * heights))
    return np.array([rb.total_energy(model, y[:n], y[n:]) for y in ys]) - e_hang


# -- study 1 ----------------------------------------------------------------------------------

def study1(quick: bool) -> dict:
    out = {}
    # (a) link-size sweep at rest, q = 0
    Ls = np.logspace(0, 6, 13 if quick else 25)
    rows = []
    for L in Ls:
        lengths, masses = [1.0, L], [1.0, L]
        model = chain_model(lengths, masses)
        q = qd = tau = np.zeros(2)
        ref = ref_acc(lengths, masses, q)
        acc = {k: safe_fd(f, model, q, qd, tau) for k, f in METHODS.items()}
        row = {"L": L, "cond": float(two_link_condition(lengths, masses, [1, 1], 0.0)), "ref": ref,
               "diff": abs((acc["ABM"][0] - acc["CRBM"][0]) / acc["ABM"][0])}
        for k, a in acc.items():
            row[k] = float(np.max(np.abs(a - ref) / np.abs(ref)))
        rows.append(row)
    out["sweep"] = rows
    # (b) configuration sweep at L = 100 (thesis fig. 5.3)
    q2s = np.linspace(0, 2 * np.pi, 181 if quick else 721)
    lengths = masses = [1.0, 100.0]
    model = chain_model(lengths, masses)
    conf = {"q2": q2s, "cond": [], "diff": [], "err_crbm": [], "err_abm": []}
    for q2 in q2s:
        q = np.array([0.0, q2])
        ref = ref_acc(lengths, masses, q)
        a_c, a_a = rb.forward_dynamics_crb(model, q, np.zeros(2), np.zeros(2)), \
            rb.forward_dynamics_abm(model, q, np.zeros(2), np.zeros(2))
        conf["cond"].append(float(two_link_condition(lengths, masses, [1, 1], q2)))
        conf["diff"].append(abs((a_a[0] - a_c[0]) / a_a[0]))
        conf["err_crbm"].append(abs(a_c[0] - ref[0]) / abs(ref[0]))
        conf["err_abm"].append(abs(a_a[0] - ref[0]) / abs(ref[0]))
    out["config"] = {k: np.asarray(v) for k, v in conf.items()}
    # (c) acceleration profile at L = 1e5 (thesis fig. 5.5)
    lengths = masses = [1.0, 1e5]
    model = chain_model(lengths, masses)
    q2s = np.linspace(0, 2 * np.pi, 361 if quick else 1441)
    prof = {"q2": q2s, "ref": [], "CRBM": [], "ABM": [], "modified ABM": []}
    for q2 in q2s:
        q = np.array([0.0, q2])
        prof["ref"].append(ref_acc(lengths, masses, q)[0])
        for k, f in METHODS.items():
            prof[k].append(f(model, q, np.zeros(2), np.zeros(2))[0])
    out["profile"] = {k: np.asarray(v) for k, v in prof.items()}
    # (d) ABM variants, aligned and unaligned frames
    rng = np.random.default_rng(3)
    Qs = [random_rotation(rng) for _ in range(5 if quick else 20)]
    variants = {
        "CRBM": lambda m, q: rb.forward_dynamics_crb(m, q, np.zeros(2), np.zeros(2)),
        "ABM (graspsim kernel)": lambda m, q: rb.forward_dynamics_abm(m, q, np.zeros(2), np.zeros(2)),
        "modified ABM (graspsim kernel)": lambda m, q: rb.forward_dynamics_modified_abm(m, q, np.zeros(2), np.zeros(2)),
        "ABM, naive projection": lambda m, q: abm_variant(m, q, np.zeros(2), np.zeros(2), "naive", "standard"),
        "modified ABM, naive projection": lambda m, q: abm_variant(m, q, np.zeros(2), np.zeros(2), "naive", "modified"),
        "'bad' ABM (thesis 5.3.1)": lambda m, q: abm_variant(m, q, np.zeros(2), np.zeros(2), "naive", "standard", "bad"),
    }
    q = np.array([0.3, 0.7])
    var_rows = []
    for L in ([1e2, 1e4, 1e6] if quick else [1e2, 1e3, 1e4, 1e5, 1e6]):
        lengths = masses = [1.0, L]
        ref = ref_acc(lengths, masses, q)
        cond = float(two_link_condition(lengths, masses, [1, 1], q[1]))
        for frames in ("natural", "rotated, aligned", "rotated, unaligned"):
            models = [chain_model(lengths, masses)] if frames == "natural" else \
                [chain_model(lengths, masses, Q, align_axes=(frames == "rotated, aligned")) for Q in Qs]
            row = {"L": L, "cond": cond, "frames": frames}
            for name, f in variants.items():
                errs = []
                for m in models:
                    try:
                        a = f(m, q)
                    except np.linalg.LinAlgError:
                        a = np.full(2, np.nan)
                    errs.append(np.max(np.abs(a - ref) / np.abs(ref)))
                row[name] = float(np.median(errs))
            var_rows.append(row)
    out["variants"] = var_rows
    return out


# -- study 2 ----------------------------------------------------------------------------------

THESIS_56 = {1e-1: (1e2, 1e-14, 6526, 6553), 1e-3: (1e6, 1e-10, 31424, 31469), 1e-5: (1e8, 1e-8, 23787, 23756),
             1e-6: (1e9, 1e-7, 23825, 23888), 1e-7: (1e10, 1e-6, 23797, 23779), 1e-8: (1e11, 1e-5, 23812, 24395),
             4e-9: (1e11, 1e-5, 23828, 25392), 2e-9: (1e11, 1e-5, 23792, 31015), 1e-9: (1e12, 1e-4, 23792, 64065),
             1e-10: (1e13, 1e-3, 23822, None)}


def study2(quick: bool) -> dict:
    ratios = [1e-1, 1e-5, 1e-8, 2e-9, 1e-10] if quick else list(THESIS_56) + [1e-11, 1e-12]  # last two: beyond the thesis
    Ltot, Mtot, T, acc = 20.0, 40.0, 10.0, 1e-6
    max_nfev = 200_000 if quick else 1_000_000
    rows = []
    for r in ratios:
        lengths = [r * Ltot, (1 - r) * Ltot]
        masses = [r * Mtot, (1 - r) * Mtot]
        model = chain_model(lengths, masses)
        row = {"r": r}
        for integ in ("RK45", "Cash-Karp"):
            for name, f in METHODS.items():
                res = integrate(model, f, T, acc, integ, max_nfev, sample_dt=0.05)
                row[(integ, name)] = res
                print(f"  study 2: r={r:.0e} {integ:9s} {name:13s} nfev={res['nfev']:8d} ok={res['ok']} "
                      f"wall={res['wall']:.1f}s", file=sys.stderr)
        # condition number and CRBM-ABM difference along the ABM (RK45) trajectory
        base = row[("RK45", "ABM")]
        kmax, dmax = 0.0, 0.0
        for y in base["y"][::2]:
            kmax = max(kmax, float(two_link_condition(lengths, masses, [1, 1], y[1])))
            a_a = rb.forward_dynamics_abm(model, y[:2], y[2:], np.zeros(2))
            a_c = safe_fd(rb.forward_dynamics_crb, model, y[:2], y[2:], np.zeros(2))
            dmax = max(dmax, abs((a_a[0] - a_c[0]) / a_a[0]))
        row["kmax"], row["dmax"] = kmax, dmax
        for v in row.values():
            if isinstance(v, dict):
                v.pop("y", None)
        rows.append(row)
    return {"rows": rows, "accuracy": acc, "T": T}


# -- study 3 ----------------------------------------------------------------------------------

THESIS_59 = {2: (3920, 0.68, 2377, 0.011, 0.67, 2324, 0.003), 4: (15680, 2.18, 3897, 0.017, 2.67, 4362, 0.036),
             6: (35280, 4.85, 5818, 0.015, 5.92, 5912, 0.021), 8: (62720, 8.75, 7668, 0.028, 10.62, 6916, 0.018),
             10: (98000, 11.95, 8576, 0.019, 19.47, 8892, 0.030), 12: (141120, 15.18, 9234, 0.025, 28.85, 9746, 0.019),
             14: (192080, 20.78, 10497, 0.016, 39.25, 10039, 0.015)}


def study3(quick: bool) -> dict:
    ns = [2, 6, 10, 14] if quick else [2, 4, 6, 8, 10, 12, 14]
    l, m, T, acc = 10.0, 20.0, 60.0, 1e-4
    rows = []
    for n in ns:
        lengths, masses = [l] * n, [m] * n
        model = chain_model(lengths, masses)
        row = {"n": n}
        for integ in ("RK45", "Cash-Karp"):
            trajs = {}
            for name, f in METHODS.items():
                res = integrate(model, f, T, acc, integ, 2_000_000)
                E = energy_hanging_zero(model, res["y"], lengths, masses)
                res["E_init"] = E[0]
                res["E_dev"] = 100 * (E.mean() - E[0]) / E[0]
                res["E_maxdev"] = 100 * np.abs(E - E[0]).max() / E[0]
                trajs[name] = (res["t"], res["y"][:, :n])
                res.pop("y")
                row[(integ, name)] = res
                print(f"  study 3: n={n:2d} {integ:9s} {name:13s} nfev={res['nfev']:6d} Edev={res['E_dev']:+.4f}% "
                      f"cpu={res['cpu']:.2f}s", file=sys.stderr)
            if integ == "RK45":      # same sample times: when do the methods' trajectories part?
                t, qa = trajs["ABM"]
                for name in ("CRBM", "modified ABM"):
                    d = np.abs(trajs[name][1] - qa).max(axis=1)
                    k = np.nonzero(d > 1e-2)[0]
                    row[("split", name)] = float(t[k[0]]) if k.size else float("inf")
                    row[("dq10", name)] = float(d[t <= 10.0].max())
        rows.append(row)
    return {"rows": rows, "accuracy": acc, "T": T, "l": l, "m": m}


# -- output -----------------------------------------------------------------------------------

def fmt_e(x, digits=1) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    return f"{x:.{digits}e}"


def tables(s1, s2, s3) -> str:
    L = []
    L.append("### Study 1: forward dynamics of the two-link chain (at rest, q = 0)\n")
    L.append("| l2 = m2 | cond(H) | rel. diff CRBM-ABM (joint 1) | CRBM error | ABM error | modified ABM error | cond·eps |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|")
    for r in s1["sweep"]:
        if abs(math.log10(r["L"]) - round(math.log10(r["L"]))) > 1e-9:
            continue
        L.append(f"| {r['L']:.0e} | {r['cond']:.2e} | {fmt_e(r['diff'])} | {fmt_e(r['CRBM'])} | {fmt_e(r['ABM'])} | "
                 f"{fmt_e(r['modified ABM'])} | {r['cond'] * EPS:.1e} |")
    c = s1["config"]
    L.append(f"\nConfiguration sweep at l2 = m2 = 100 (thesis fig. 5.3; {len(c['q2'])} values of q2): cond(H) "
             f"{c['cond'].min():.2e} to {c['cond'].max():.2e}; relative CRBM-ABM difference in joint-1 acceleration "
             f"median {np.median(c['diff']):.1e}, max {c['diff'].max():.1e}; ABM error against the reference max "
             f"{c['err_abm'].max():.1e}, CRBM error max {c['err_crbm'].max():.1e}.\n")
    p = s1["profile"]
    L.append(f"Acceleration profile at l2 = m2 = 1e5 (thesis fig. 5.5; {len(p['q2'])} values of q2), deviation of "
             "joint-1 acceleration from the 60-digit reference, rad/s^2: " + ", ".join(
                 f"{k} max {np.abs(p[k] - p['ref']).max():.1e} (rms {np.sqrt(np.mean((p[k] - p['ref']) ** 2)):.1e})"
                 for k in METHODS) + ".\n")
    L.append("ABM variants (median relative error over joints at q = (0.3, 0.7), 20 random frame rotations for the "
             "rotated rows):\n")
    names = [k for k in s1["variants"][0] if k not in ("L", "cond", "frames")]
    L.append("| l2 = m2 | cond(H) | frames | " + " | ".join(names) + " |")
    L.append("|---:|---:|---|" + "---:|" * len(names))
    for r in s1["variants"]:
        L.append(f"| {r['L']:.0e} | {r['cond']:.1e} | {r['frames']} | " + " | ".join(fmt_e(r[k]) for k in names) + " |")
    L.append("\n### Study 2: evaluations for 10 s of motion at step accuracy 1e-6\n")
    L.append("| l1/(l1+l2) | cond max | rel. diff max | ABM (RK45) | CRBM (RK45) | mod. ABM (RK45) | r_CRBM (RK45) "
             "| ABM (C-K) | CRBM (C-K) | mod. ABM (C-K) | r_CRBM (C-K) | thesis n_ABM | thesis n_CRBM |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in s2["rows"]:
        def n(integ, name):
            res = r[(integ, name)]
            return f"{res['nfev']}" if res["ok"] else f"> {res['nfev']} ({res['why']} at t = {res.get('t_fail', float('nan')):.2f} s)"

        def ratio(integ):
            a, c = r[(integ, "ABM")], r[(integ, "CRBM")]
            return f"{c['nfev'] / a['nfev']:.2f}" if c["ok"] and a["ok"] else "—"
        th = THESIS_56.get(r["r"], (None, None, None, None))
        L.append(f"| {r['r']:.0e} | {r['kmax']:.1e} | {fmt_e(r['dmax'])} | {n('RK45', 'ABM')} | {n('RK45', 'CRBM')} | "
                 f"{n('RK45', 'modified ABM')} | {ratio('RK45')} | {n('Cash-Karp', 'ABM')} | {n('Cash-Karp', 'CRBM')} | "
                 f"{n('Cash-Karp', 'modified ABM')} | {ratio('Cash-Karp')} | {th[2] or '—'} | {th[3] or '—'} |")
    L.append(f"\n### Study 3: regular chains, 60 s from horizontal at accuracy 1e-4 (links {s3['l']:g} m, {s3['m']:g} kg)\n")
    L.append("| n | E_init (J) | integrator | ABM n_FD | ABM E_dev % | ABM cpu s | CRBM n_FD | CRBM E_dev % | CRBM cpu s "
             "| mod. ABM n_FD | mod. ABM E_dev % | mod. ABM cpu s | max E dev % (ABM) |")
    L.append("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in s3["rows"]:
        for integ in ("RK45", "Cash-Karp"):
            a, c, m = r[(integ, "ABM")], r[(integ, "CRBM")], r[(integ, "modified ABM")]
            L.append(f"| {r['n']} | {a['E_init']:.0f} | {integ} | {a['nfev']} | {a['E_dev']:+.3f} | {a['cpu']:.2f} | "
                     f"{c['nfev']} | {c['E_dev']:+.3f} | {c['cpu']:.2f} | {m['nfev']} | {m['E_dev']:+.3f} | "
                     f"{m['cpu']:.2f} | {a['E_maxdev']:.3f} |")
        th = THESIS_59.get(r["n"])
        if th:
            L.append(f"| {r['n']} | {th[0]} | thesis (SUN 4/75) | {th[2]} | {th[3]:+.3f} | {th[1]:.2f} | {th[5]} | "
                     f"{th[6]:+.3f} | {th[4]:.2f} | — | — | — | — |")
    L.append("\nTrajectory agreement (RK45): first time the joint angles of CRBM / modified ABM differ from ABM's by "
             "more than 0.01 rad, and the largest difference in the first 10 s:\n")
    L.append("| n | CRBM parts at (s) | CRBM max diff, 0-10 s (rad) | mod. ABM parts at (s) | mod. ABM max diff, 0-10 s (rad) |")
    L.append("|---:|---:|---:|---:|---:|")
    for r in s3["rows"]:
        L.append(f"| {r['n']} | {r[('split', 'CRBM')]:.1f} | {fmt_e(r[('dq10', 'CRBM')])} | "
                 f"{r[('split', 'modified ABM')]:.1f} | {fmt_e(r[('dq10', 'modified ABM')])} |")
    return "\n".join(L) + "\n"


def plots(s1, s2, s3) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    IMG.mkdir(parents=True, exist_ok=True)
    files = []
    # 1a: error vs condition number
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    sw = s1["sweep"]
    cond = np.array([r["cond"] for r in sw])
    ax.loglog(cond, [r["diff"] for r in sw], "ko-", label="rel. diff CRBM-ABM, joint 1 (thesis measure)")
    for k, st in zip(METHODS, ("s--", "^-", "v:")):
        ax.loglog(cond, np.maximum([r[k] for r in sw], 1e-17), st, label=f"{k} error vs 60-digit reference")
    ax.loglog(cond, cond * EPS, color="0.6", lw=1, label="cond(H) · eps")
    ax.set_xlabel("cond(H)  (l2 = m2 from 1 to 1e6)")
    ax.set_ylabel("relative error of joint accelerations")
    ax.set_title("Two-link chain at rest: error tracks cond(H) for CRBM only")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    files.append(_save(fig, "fs_error_vs_condition.png"))
    # 1b: configuration sweep
    c = s1["config"]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.semilogy(c["q2"], c["cond"] * EPS, color="0.6", label="cond(H) · eps")
    ax.semilogy(c["q2"], np.maximum(c["diff"], 1e-17), ".", ms=3, label="rel. diff CRBM-ABM (joint 1)")
    ax.semilogy(c["q2"], np.maximum(c["err_abm"], 1e-17), ".", ms=2, label="ABM error vs reference")
    ax.set_xlabel("q2 (rad), l2 = m2 = 100")
    ax.set_ylabel("relative error")
    ax.set_title("Configuration dependence (cf. thesis fig. 5.3); 1e-17 = exact")
    ax.legend(fontsize=7)
    files.append(_save(fig, "fs_configuration_sweep.png"))
    # 1c: profile
    p = s1["profile"]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for k, st in zip(METHODS, ("-", "-", "--")):
        ax.plot(p["q2"], p[k] - p["ref"], st, lw=0.8, label=k)
    ax.set_xlabel("q2 (rad), l2 = m2 = 1e5")
    ax.set_ylabel("joint-1 acceleration − reference (rad/s²)")
    ax.set_title("CRBM noise vs smooth ABM (cf. thesis fig. 5.5)")
    ax.legend(fontsize=7)
    files.append(_save(fig, "fs_acceleration_profile.png"))
    # 1d: variants
    fig, ax = plt.subplots(figsize=(7.2, 4.4))
    names = [k for k in s1["variants"][0] if k not in ("L", "cond", "frames")]
    for frames, mk in (("natural", "o"), ("rotated, unaligned", "x")):
        rows = [r for r in s1["variants"] if r["frames"] == frames]
        for k in names:
            ax.loglog([r["cond"] for r in rows], np.maximum([r[k] for r in rows], 1e-17), marker=mk, lw=0.8,
                      label=f"{k} [{frames}]")
    ax.set_xlabel("cond(H)")
    ax.set_ylabel("median relative error")
    ax.set_title("ABM variants: aligned (o) vs unaligned (x) body frames")
    ax.legend(fontsize=5.5, ncol=2)
    ax.grid(True, which="both", alpha=0.3)
    files.append(_save(fig, "fs_abm_variants.png"))
    # 2: evaluations
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    rs = [r["r"] for r in s2["rows"]]
    for integ, ls in (("RK45", "-"), ("Cash-Karp", "--")):
        for k, mk in zip(METHODS, ("s", "^", "v")):
            ys = [r[(integ, k)]["nfev"] for r in s2["rows"]]
            ax.loglog(rs, ys, ls, marker=mk, label=f"{k}, {integ}")
    th = [(r, v[3]) for r, v in THESIS_56.items() if v[3]]
    ax.loglog([t[0] for t in th], [t[1] for t in th], "k:", marker="*", label="thesis CRBM (NR RK5, 1e-6)")
    ax.invert_xaxis()
    ax.set_xlabel("l1 / (l1 + l2)  (chain more ill-conditioned →)")
    ax.set_ylabel("RHS evaluations for 10 s")
    ax.set_title("Formulation stiffness (cf. thesis fig. 5.6); failed runs plotted at the cap")
    ax.legend(fontsize=6)
    files.append(_save(fig, "fs_evaluations.png"))
    # 3: long chains
    fig, axs = plt.subplots(1, 2, figsize=(10, 4))
    ns = [r["n"] for r in s3["rows"]]
    for integ, ls in (("RK45", "-"), ("Cash-Karp", "--")):
        for k, mk in zip(METHODS, ("s", "^", "v")):
            axs[0].plot(ns, [r[(integ, k)]["nfev"] for r in s3["rows"]], ls, marker=mk, label=f"{k}, {integ}")
            axs[1].plot(ns, [r[(integ, k)]["cpu"] for r in s3["rows"]], ls, marker=mk, label=f"{k}, {integ}")
    axs[0].plot(list(THESIS_59), [v[2] for v in THESIS_59.values()], "k:", marker="*", label="thesis ABM")
    axs[0].plot(list(THESIS_59), [v[5] for v in THESIS_59.values()], "k-.", marker="*", label="thesis CRBM")
    axs[0].set_xlabel("links")
    axs[0].set_ylabel("RHS evaluations, 60 s")
    axs[1].set_xlabel("links")
    axs[1].set_ylabel("CPU time (s), 60 s of motion")
    axs[0].legend(fontsize=6)
    fig.suptitle("Regular chains (cf. thesis figs. 5.9-5.10)")
    files.append(_save(fig, "fs_long_chains.png"))
    return files


def _save(fig, name: str) -> str:
    fig.tight_layout()
    path = IMG / name
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return str(path.relative_to(ROOT))


def write_docs(text: str) -> None:
    doc = DOC.read_text()
    begin, end = "<!-- study-results:begin -->", "<!-- study-results:end -->"
    if begin not in doc or end not in doc:
        raise SystemExit(f"{DOC} lacks the {begin} ... {end} markers")
    new = re.sub(re.escape(begin) + r".*?" + re.escape(end), lambda _: f"{begin}\n{text}{end}", doc, flags=re.S)
    DOC.write_text(new)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sweeps (about a minute)")
    ap.add_argument("--write-docs", action="store_true", help="write plots to docs/img and tables into the report")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    s1 = study1(args.quick)
    print(f"study 1 done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    s2 = study2(args.quick)
    print(f"study 2 done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    s3 = study3(args.quick)
    print(f"study 3 done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    text = tables(s1, s2, s3)
    text += (f"\n_Generated by `python benchmarks/formulation_stiffness.py{' --quick' if args.quick else ''}` in "
             f"{time.perf_counter() - t0:.0f} s (numpy {np.__version__}; CPU times by `time.process_time`)._\n")
    print(text)
    if args.write_docs:
        files = plots(s1, s2, s3)
        write_docs(text)
        print("wrote", DOC.relative_to(ROOT), *files, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

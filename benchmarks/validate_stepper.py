"""Validation of the maximal-coordinate (LCP) time stepper against the articulated-body method.

    python benchmarks/validate_stepper.py           # the tables of docs/stepper_validation.md (~30 s)
    python benchmarks/validate_stepper.py --fine    # adds h = 0.25 ms (~1 min)

The unactuated Puma 560 falls from rest under gravity for 1 s.  Stepper: ``Simulator(world, dt=h,
collisions=False)`` with no controller (each link a rigid body, joints as velocity constraints with
error correction gamma = 0.2 and the position projection, viscous joint friction implicit).
Reference: ``rb.forward_dynamics(model, q, qd, tau, method="abm")`` with ``tau = -b qd`` (the same
viscous friction), integrated by ``scipy.integrate.solve_ivp`` (DOP853, rtol = atol = 1e-12, dense
output); its own accuracy is checked against RK45 at 1e-10.

World (written at run time to a temp dir): ``robots/puma560.yaml`` copied with its joint limits
removed (the unactuated arm swings through them within 0.2-0.3 s from any start posture, and the
reduced-coordinate model has no limits) -- once with the file's viscous friction (0.5 / 0.05 N m s/rad)
and once with none; base pose ``{xyz: [0, 0, 0.67]}``; start DOFs (10, 30, -120, 20, -40, 10) deg,
zero velocity.  Compared: the stepper's DOF values after each step against the reference at the
same time; max over the 1 s and all joints, and at t = 1 s.  Observed order
``p = log(e(h1) / e(h2)) / log(h1 / h2)``.  Yardstick for a first-order method: the same
position-then-velocity Euler step done in joint coordinates (:func:`joint_space_euler`).
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import graspsim  # noqa: E402
import graspsim.rigidbody as rb  # noqa: E402
from graspsim import kinematics as K  # noqa: E402
from graspsim.dynamics.simulator import Simulator  # noqa: E402

START_DEG = (10, 30, -120, 20, -40, 10)


def puma_world(tmp: Path, *, friction: bool = True, limits: bool = False, start_deg=START_DEG):
    """A Puma-only world in ``tmp`` from a copy of robots/puma560.yaml (limits and friction optional)."""
    txt = (ROOT / "robots/puma560.yaml").read_text()
    if not limits:
        txt, n = re.subn(r",\s*limits:\s*\[[^\]]*\]", "", txt)
        assert n == 6, "expected six joint limits in robots/puma560.yaml"
    if not friction:
        txt, n = re.subn(r",\s*friction:\s*\{[^}]*\}", "", txt)
        assert n == 6, "expected six joint frictions in robots/puma560.yaml"
    tag = f"{'f' if friction else 'nf'}_{'l' if limits else 'nl'}"
    (tmp / f"puma_{tag}.yaml").write_text(txt)
    dofs = ", ".join(f"j{i + 1}: {v}" for i, v in enumerate(start_deg))
    w = tmp / f"world_{tag}.yaml"
    w.write_text(f"""world: puma_fall
units: {{length: m, angle: deg}}
robots:
  - name: puma
    file: puma_{tag}.yaml
    pose: {{xyz: [0, 0, 0.67]}}
    dofs: {{{dofs}}}
""")
    return graspsim.load_world(w)


def abm_reference(world, t_end=1.0, method="DOP853", tol=1e-12):
    """solve_ivp solution (dense) of the ABM with the robot's viscous friction, from the world's DOFs at rest."""
    inst = world.description.robots[0]
    model = rb.from_robot(inst.robot, X_WB=world.base_pose(0), gravity=world.description.gravity)
    b = np.array([j.viscous for j in inst.robot.joints])
    n = model.nvd
    nfev = [0]

    def f(t, y):
        nfev[0] += 1
        q, qd = y[:n], y[n:]
        return np.concatenate([qd, rb.forward_dynamics(model, q, qd, -b * qd, method="abm")])

    y0 = np.concatenate([np.asarray(inst.initial_dofs, float), np.zeros(n)])
    sol = solve_ivp(f, (0.0, t_end), y0, method=method, rtol=tol, atol=tol, dense_output=True)
    if not sol.success:
        raise RuntimeError(sol.message)
    sol.nfev_abm = nfev[0]
    return sol


def stepper_run(world, h, t_end=1.0):
    """(times (n,), DOF values (n, 6), cpu seconds) of the unactuated stepper."""
    sim = Simulator(world, dt=h, collisions=False)
    n = int(round(t_end / h))
    ts, qs = np.empty(n), np.empty((n, 6))
    c0 = time.process_time()
    for i in range(n):
        sim.step(None)
        ts[i], qs[i] = sim.time, sim.dof_values("puma")
    return ts, qs, time.process_time() - c0


def joint_space_euler(world, h, t_end=1.0):
    """Yardstick: the same first-order scheme in joint coordinates -- move with the current velocity,
    then ``(H + h B) qd+ = H qd - h C(q, qd)`` (friction implicit, as in the stepper).  (times, q)."""
    inst = world.description.robots[0]
    model = rb.from_robot(inst.robot, X_WB=world.base_pose(0), gravity=world.description.gravity)
    B = np.diag([j.viscous for j in inst.robot.joints])
    q, qd = np.asarray(inst.initial_dofs, float).copy(), np.zeros(model.nvd)
    n = int(round(t_end / h))
    ts, qs = np.arange(1, n + 1) * h, np.empty((n, model.nvd))
    for i in range(n):
        q = q + h * qd
        H = rb.mass_matrix(model, q)
        qd = np.linalg.solve(H + h * B, H @ qd - h * rb.dof_bias_forces(model, q, qd))
        qs[i] = q
    return ts, qs


def compare(world, hs, sol):
    out = []
    for h in hs:
        ts, qs, cpu = stepper_run(world, h)
        d = np.abs(qs - sol.sol(ts)[:6].T)
        te, qe = joint_space_euler(world, h)
        de = np.abs(qe - sol.sol(te)[:6].T)
        out.append(dict(h=h, max=d.max(), final=d[-1].max(), final_joints=d[-1], t_max=ts[np.argmax(d.max(1))],
                        cpu=cpu, euler_max=de.max()))
    return out


def orders(rows, key):
    e = np.array([r[key] for r in rows])
    h = np.array([r["h"] for r in rows])
    pair = np.log(e[:-1] / e[1:]) / np.log(h[:-1] / h[1:])
    fit = np.polyfit(np.log(h), np.log(e), 1)[0]
    return pair, fit


def limit_exit_time(tmp):
    """First time the ABM reference (file friction) leaves the shipped joint limits, and which joint."""
    w = puma_world(tmp, friction=True, limits=False)
    lim = np.array([j.limits for j in graspsim.load_robot(ROOT / "robots/puma560.yaml").joints])
    sol = abm_reference(w, tol=1e-10)
    t = np.linspace(0, 1, 4001)
    q = sol.sol(t)[:6].T
    out = (q < lim[:, 0]) | (q > lim[:, 1])
    k = np.flatnonzero(out.any(1))
    if not len(k):
        return None, None
    return t[k[0]], f"j{np.flatnonzero(out[k[0]])[0] + 1}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fine", action="store_true", help="also h = 0.25 ms")
    args = ap.parse_args(argv)
    hs = [0.005, 0.0025, 0.001, 0.0005] + ([0.00025] if args.fine else [])
    t_start = time.time()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        t_exit, j_exit = limit_exit_time(tmp)
        w0 = puma_world(tmp)
        puma = w0.description.robots[0].robot
        J = K.jacobian(puma, K.joint_values(puma, w0.description.robots[0].initial_dofs), w0.base_pose(0), 6)
        sv = np.linalg.svd(J, compute_uv=False)
        print(f"start posture {START_DEG} deg: 6x6 Jacobian singular values {sv.min():.3f}..{sv.max():.3f} "
              f"(non-singular); with the shipped limits the reference leaves {j_exit}'s range at t = {t_exit:.3f} s\n")
        for friction in (True, False):
            w = puma_world(tmp, friction=friction)
            c0 = time.process_time()
            sol = abm_reference(w)
            cpu_ref = time.process_time() - c0
            chk = abm_reference(w, method="RK45", tol=1e-10)
            tt = np.linspace(0, 1, 2001)
            ref_err = np.abs(sol.sol(tt)[:6] - chk.sol(tt)[:6]).max()
            qf = sol.y[:6, -1]
            swing = np.degrees(np.abs(sol.sol(tt)[:6].T - sol.y[:6, :1].T).max(0))
            label = "viscous friction as in the file (0.5 / 0.05 N m s/rad)" if friction else "no joint friction"
            print(f"### {label}\n")
            print(f"Reference: DOP853 at 1e-12, {sol.nfev_abm} ABM evaluations, {cpu_ref:.2f} s CPU; "
                  f"differs from RK45 at 1e-10 by at most {ref_err:.1e} rad.  Largest excursion of each joint "
                  f"from the start over the 1 s (deg): {np.round(swing, 1).tolist()}; q(1 s) = "
                  f"{np.round(np.degrees(qf), 1).tolist()} deg.\n")
            rows = compare(w, hs, sol)
            pm, fm = orders(rows, "max")
            pf, ff = orders(rows, "final")
            print("| h (ms) | steps | max joint-angle difference (rad) | at t (s) | difference at t = 1 s (rad) | "
                  "per joint at 1 s (rad) | order (max) | order (1 s) | stepper CPU (s) | "
                  "joint-space semi-implicit Euler, max (rad) |")
            print("|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|")
            for i, r in enumerate(rows):
                o1 = f"{pm[i - 1]:.2f}" if i else ""
                o2 = f"{pf[i - 1]:.2f}" if i else ""
                pj = ", ".join(f"{x:.1e}" for x in r["final_joints"])
                print(f"| {r['h'] * 1e3:g} | {int(round(1 / r['h']))} | {r['max']:.3e} | {r['t_max']:.3f} | "
                      f"{r['final']:.3e} | {pj} | {o1} | {o2} | {r['cpu']:.1f} | {r['euler_max']:.3e} |")
            i25 = [r["h"] for r in rows].index(0.0025)
            i1 = [r["h"] for r in rows].index(0.001)
            p_max = np.log(rows[i25]["max"] / rows[i1]["max"]) / np.log(2.5)
            p_fin = np.log(rows[i25]["final"] / rows[i1]["final"]) / np.log(2.5)
            print(f"\nOrder from h = 2.5 ms to 1 ms: {p_max:.2f} (max), {p_fin:.2f} (at 1 s); least-squares slope "
                  f"over all h: {fm:.2f} (max), {ff:.2f} (at 1 s).\n")
    print(f"_Generated by `python benchmarks/validate_stepper.py{' --fine' if args.fine else ''}` in "
          f"{time.time() - t_start:.0f} s._")


if __name__ == "__main__":
    main()

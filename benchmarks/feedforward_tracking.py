"""Puma 560 following a straight Cartesian line under gravity in the time-stepping simulator:
PD alone vs PD plus computed-torque feed-forward (:mod:`graspsim.control.feedforward`).

    python benchmarks/feedforward_tracking.py            # the tables of docs/stepper_validation.md (~1-2 min)
    python benchmarks/feedforward_tracking.py --quick    # h = 2.5 ms, the +y line with the hand only

World (written at run time to a temp dir): the Puma at ``{xyz: [0, 0, 0.736]}`` in the posture of
``worlds/puma_barrett_handset.yaml`` (hand palm down), with the Barrett hand mounted on link6 as in
that world (``--no-hand`` in the table: without it), no objects; ``Simulator(world, dt=h,
collisions=False)``, gravity -9.81 m/s^2 z, the joint friction and gains of ``robots/puma560.yaml``.

Each run: the controller holds the start posture for 0.3 s (PD alone settles into its gravity sag),
then ``PDController.move_line`` moves the tool point E (on the flange axis 0.136 m from the wrist
centre, the palm's back face) 0.2 m along a straight line in 1 s (quintic timing, peak 0.375 m/s)
with constant orientation.  Error: distance of the simulated E from the desired line point
``p0 + s(t) (p1 - p0)`` at the same instant, every step over the 1 s move (max and RMS), in mm.
Variants: PD alone; + timing term only (``dynamics=False``); + inverse dynamics only
(``delay_compensation=False``); + both (the default feed-forward); and, as a diagnostic of the
timing finding (see the docs), a PDController subclass defined here that reads its reference at
t + 2h, alone and with the feed-forward.  Ratios are against PD alone.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import graspsim  # noqa: E402
from graspsim import kinematics as K  # noqa: E402
from graspsim.control import PDController, quintic  # noqa: E402
from graspsim.control.feedforward import ComputedTorqueFeedforward  # noqa: E402
from graspsim.dynamics.simulator import Simulator  # noqa: E402

X_LE = np.eye(4)
X_LE[2, 3] = 0.136                  # the tool point E: palm back face on the flange axis
VARIANTS = {"PD alone": (False, None),
            "PD + timing term only": (False, dict(dynamics=False)),
            "PD + inverse dynamics only": (False, dict(delay_compensation=False)),
            "PD + computed-torque FF (default)": (False, dict()),
            "PD, reference at t+2h (proposed pd.py fix)": (True, None),
            "PD, reference at t+2h, + computed-torque FF": (True, dict())}


class ShiftedPD(PDController):
    """Diagnostic, not graspsim API: a PDController that reads its reference where the simulator's
    implicit PD row acts (q at t + 2h, qd at t + 1.5h) -- the proposed fix of pd.py's timing."""

    def command(self, sim):
        cmd = super().command(sim)
        for ri, sl in enumerate(sim.ds.robot_slices):
            q = self.trajectories[ri](sim.time + 2 * sim.dt)[0]
            qd, qdd = self.trajectories[ri](sim.time + 1.5 * sim.dt)[1:]
            cmd.q_ref[sl], cmd.qd_ref[sl] = q, qd
            if self.feedforward is not None:
                cmd.tau_ff[sl] = self.feedforward(sim, ri, q, qd, qdd)
        return cmd


def puma_world(tmp: Path, hand: bool = True):
    txt = f"""world: puma_line
units: {{length: m, angle: deg}}
robots:
  - name: puma
    file: {ROOT / 'robots/puma560.yaml'}
    pose: {{xyz: [0, 0, 0.736]}}
    dofs: {{j1: 0, j2: 48.77, j3: -196.19, j4: 0, j5: -32.58, j6: 0}}
"""
    if hand:
        txt += f"""  - name: barrett
    file: {ROOT / 'robots/barrett.yaml'}
    mount: {{robot: puma, link: link6, origin: {{xyz: [0, 0, 0.136]}}}}
    dofs: {{spread: 0, f1: 0, f2: 0, f3: 0}}
"""
    p = tmp / ("puma_hand.yaml" if hand else "puma.yaml")
    p.write_text(txt)
    return graspsim.load_world(p)


def track(world, variant, *, h=0.0025, delta=(0.0, 0.2, 0.0), duration=1.0, settle=0.3):
    """Run one line; return dict(max, rms (m), errors (n,), times (n,), seconds)."""
    sim = Simulator(world, dt=h, collisions=False)
    shifted, ff_args = variant
    cls = ShiftedPD if shifted else PDController
    if ff_args is None:
        ctl = cls(sim)
    else:
        ff = ComputedTorqueFeedforward(sim, **ff_args)
        ctl = cls(sim, feedforward=ff)
        ff.attach(ctl)
    puma = world.description.robots[0].robot
    link6 = puma.link_index["link6"]
    sim.run(settle, ctl)
    q_ref = ctl.trajectories[0](sim.time)[0]
    X0 = K.forward_kinematics(puma, K.joint_values(puma, q_ref), world.base_pose(0))[link6] @ X_LE
    X1 = X0.copy()
    X1[:3, 3] += delta
    t_start = sim.time
    ctl.move_line("puma", X1, duration=duration, link=link6, X_LE=X_LE)
    errs, ts = [], []
    c0 = time.process_time()
    while sim.time < t_start + duration - 1e-9:
        sim.step(ctl)
        s = quintic((sim.time - t_start) / duration)[0]
        p_des = X0[:3, 3] + s * (X1[:3, 3] - X0[:3, 3])
        p = (sim.body_pose("puma/link6") @ X_LE)[:3, 3]
        errs.append(np.linalg.norm(p - p_des))
        ts.append(sim.time - t_start)
    errs = np.array(errs)
    return dict(max=errs.max(), rms=np.sqrt(np.mean(errs ** 2)), errors=errs, times=np.array(ts),
                seconds=time.process_time() - c0)


def table(world, label, h, delta):
    rows = []
    base = None
    for name, v in VARIANTS.items():
        r = track(world, v, h=h, delta=delta)
        if base is None:
            base = r
        rows.append(f"| {label} | {h * 1e3:g} | {name} | {r['max'] * 1e3:.4f} | {r['rms'] * 1e3:.4f} | "
                    f"{base['max'] / r['max']:.1f} | {base['rms'] / r['rms']:.1f} |")
        print(rows[-1], flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only h = 2.5 ms, +y line with the hand")
    args = ap.parse_args(argv)
    t0 = time.time()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        hand, nohand = puma_world(tmp, True), puma_world(tmp, False)
        print("| robot, line | h (ms) | controller | max error (mm) | RMS error (mm) | PD/this (max) | PD/this (RMS) |")
        print("|---|---:|---|---:|---:|---:|---:|")
        cases = [("Puma + hand, +y 0.2 m", hand, 0.0025, (0, 0.2, 0))]
        if not args.quick:
            cases += [("Puma + hand, +y 0.2 m", hand, 0.001, (0, 0.2, 0)),
                      ("Puma + hand, -x 0.2 m", hand, 0.0025, (-0.2, 0, 0)),
                      ("Puma + hand, +z 0.2 m", hand, 0.0025, (0, 0, 0.2)),
                      ("Puma alone, +y 0.2 m", nohand, 0.0025, (0, 0.2, 0))]
        for label, w, h, delta in cases:
            table(w, label, h, delta)
    print(f"\n_Generated by `python benchmarks/feedforward_tracking.py{' --quick' if args.quick else ''}` "
          f"in {time.time() - t0:.0f} s._")


if __name__ == "__main__":
    main()

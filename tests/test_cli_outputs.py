"""Issue 16, "outputs that contradict themselves": what `graspsim grasp` and the viewer's
`autograsp; run 2.0` report must agree with itself and with the physics.

* A static auto-grasp followed by dynamics keeps the grasp: the drives hold the closing command.
* The parallel-jaw dynamic grasp ends when the fingers press on the box (not before they reach it):
  contacts, force closure and the lift all describe one held grasp.
* The handset's static grasp names what stopped each finger: the clutch, and the distal joint's
  own limit (88 deg), not "f1 limit" at 25.4 deg; its lift reports the commanded rise.
* Bad --effort values get one clear line; the volume's hull limit is an option; the GWS plot
  explains its axes; progress goes to a terminal only.
"""
from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim.cli import main

ROOT = Path(__file__).resolve().parent.parent
THRESHOLD = 1e-4          # the worlds' contact threshold (m)


def _grasp(capsys, tmp_path, *args) -> tuple[int, str, str, dict | None]:
    """Run `graspsim grasp` in-process: exit code, stdout, stderr and the JSON it wrote."""
    out = tmp_path / "out.json"
    rc = main(["grasp", *args, "--json", str(out)])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err, json.loads(out.read_text()) if out.exists() else None


# ------------------------------------------------------------------ static grasp, then dynamics

def test_viewer_autograsp_then_run_keeps_squeezing():
    """The viewer's `autograsp; run 2.0` through its Session (what the script's handlers call,
    headless): after 2 s of dynamics the mug is still in force closure and no finger has relaxed.
    The drives press with their effort limits (2.5 / 5 N m) on fingers already touching, so a
    finger can only move by the contacts' give: the error correction settles contacts at half the
    0.1 mm threshold, 0.05 mm on a 70 mm link = 0.04 deg; 0.25 deg allows six times that.  Without
    the held command the fingers fell from 7.3 to 4.7 deg and the grasp was lost (epsilon 0)."""
    from graspsim.gui.session import Session

    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    ss = Session(w)
    try:
        assert ss.auto_grasp()
        static = np.degrees(w.robots["barrett"].dof_values)
        ss.refresh_contacts()
        ss.update_quality()
        eps_static = ss.quality.epsilon
        assert ss.quality.force_closure and eps_static > 0.1
        assert ss.start(speed=0.0, duration=2.0)
        while ss.running:
            ss.advance(0.2)
        assert ss.sim_time == pytest.approx(2.0, abs=ss.sim.dt)
        ss.update_quality()
        after = np.degrees(ss.sim.dof_values("barrett"))
    finally:
        ss.close()
    assert np.all(np.abs(after[1:] - static[1:]) < 0.25), (static, after)
    assert ss.quality.force_closure
    assert ss.quality.epsilon == pytest.approx(eps_static, rel=0.2)
    pairs = [(c.body_a, c.body_b) for c in ss.contacts]
    fingers = {a.split("/")[1][:2] for a, b in pairs if b == "mug" and a.startswith("barrett/")} | \
              {b.split("/")[1][:2] for a, b in pairs if a == "mug" and b.startswith("barrett/")}
    assert fingers == {"f1", "f2", "f3"}


# ------------------------------------------------------------------ the parallel jaw's lift

def test_parallel_jaw_lift_reports_one_held_grasp(capsys, tmp_path):
    """`grasp worlds/parallel_jaw_box.yaml --lift 0.05`: the grasp ends with the jaws pressing on
    the 50 mm box (opening = half its width + at most the contact threshold), both jaw faces
    touching (the pad's corners on each side, or the region the threshold band cuts from it), force closure; the hand rises the
    commanded 50 mm (a prescribed base motion: exactly) and the box with it, still touched."""
    rc, text, err, out = _grasp(capsys, tmp_path, str(ROOT / "worlds/parallel_jaw_box.yaml"), "--lift", "0.05")
    assert rc == 0 and err == ""
    assert out["settled"] and out["ends"]["opening"]["state"] == "pressing"
    assert 0.025 < out["dofs"]["opening"] <= 0.025 + THRESHOLD
    links = [c["link"] for c in out["contacts"]]
    for side in ("gripper/left", "gripper/right"):
        # each jaw's contact region is its pad against the box face: the pad's 4 corners, or the
        # polygon cut from the pad by the threshold band when the box rests tilted within it
        # (under 0.1 mm across the 35 mm pad: the dead band of eq. 19 does not push it back)
        pts = np.array([c["point"] for c in out["contacts"] if c["link"] == side])
        assert 4 <= len(pts) <= 6, (side, len(pts))
        assert np.ptp(pts[:, 0]) == pytest.approx(0.025, abs=THRESHOLD)     # the pad's width
        assert 0.025 <= np.ptp(pts[:, 2]) <= 0.035 + 2 * THRESHOLD          # most of its height
        assert np.ptp(pts[:, 1]) <= THRESHOLD                                 # one plane
    q = out["quality"]
    assert q["force_closure"] and q["epsilon"] > 0.1
    L = out["lift"]
    assert L["held"] and L["commanded_m"] == 0.05
    assert L["hand_rise_m"] == pytest.approx(0.05, abs=1e-9)
    assert L["object_rise_m"] == pytest.approx(L["hand_rise_m"], abs=1e-4)    # held: no slip
    assert L["slip_m"] < 1e-4 and L["contacts"] >= 8
    # the printed summary says the same
    assert f"contacts with the object at the end of the grasp: {len(links)}" in text
    assert f"opening: blocked at {1e3 * out['dofs']['opening']:.1f} mm, pressing with its effort limit 20 N" in text
    assert "lift: held: commanded 50.0 mm; the palm rose 50.0 mm" in text
    assert "the object 50.0 mm" in text


# ------------------------------------------------------------------ the handset

def test_handset_static_grasp_names_the_clutch_and_the_distal_limit(capsys, tmp_path):
    """Each finger's proximal link meets the handset (clutch breaks away, the proximal joint held
    where it touched) and the distal joint then closes to its own limit, 88 deg, i.e. DOF
    (88 - 40) x 3 = 144 deg -- the DOF's limit; it is not stopped "by its limit at 25.4 deg"."""
    rc, text, _, out = _grasp(capsys, tmp_path, str(ROOT / "worlds/puma_barrett_handset.yaml"))
    assert rc == 0
    robot = graspsim.load_robot(ROOT / "robots/barrett.yaml")
    dist_lim = robot.joints[robot.joint_index["f1_dist"]].limits[1]
    assert np.degrees(dist_lim) == pytest.approx(88.0)
    w = graspsim.load_world(ROOT / "worlds/puma_barrett_handset.yaml")
    r = graspsim.control.static_auto_grasp(w, "barrett")
    for f in ("f1", "f2", "f3"):
        s = r.stops[f]
        assert s.reason == "limit" and s.joint == f"{f}_dist" and s.limit == pytest.approx(dist_lim)
        assert s.value == pytest.approx((dist_lim - np.radians(40)) * 3, abs=1e-9)
        b = s.breakaway
        assert b.joint == f"{f}_prox" and b.link == f"{f}_prox" and b.touched == ("handset",)
        assert b.held == pytest.approx(b.at + np.radians(5), abs=1e-12)       # joint = DOF + 5 deg
        # the held proximal link rests on the handset within the contact threshold
        jp = robot.joint_index[f"{f}_prox"]
        assert r.joint_values[jp] == pytest.approx(b.held)
        c = r.contacts
        pi, hi = w.table.index[f"barrett/{f}_prox"], w.table.index["handset"]
        sel = ((c.body_a == pi) & (c.body_b == hi)) | ((c.body_a == hi) & (c.body_b == pi))
        assert sel.any() and np.all(c.separation[sel] <= THRESHOLD * (1 + 1e-9))
        assert out["stops"][f]["reason"] == "limit"
        line = (f"{f}: clutch broke away at {np.degrees(b.at):.1f} deg ({f}_prox touched 'handset'; {f}_prox held "
                f"at {np.degrees(b.held):.1f} deg); then {f}_dist reached its limit 88.0 deg at {f} 144.0 deg")
        assert line in text
    assert "spread: not moving (auto-grasp velocity 0)" in text


def test_handset_lift_reports_the_commanded_rise(capsys, tmp_path):
    """The arm's end effector follows a line from its *commanded* pose: the Puma's PD sags under
    gravity (0.17 deg at the shoulder, ~1.5 mm at the palm) by about the same amount before and
    after a 5 cm lift, so the palm rises the commanded 50 mm to within 0.5 mm (it was 48.5 mm when
    the line started from the sagging measured pose), and the held handset rises with it."""
    rc, text, _, out = _grasp(capsys, tmp_path, str(ROOT / "worlds/puma_barrett_handset.yaml"),
                              "--lift", "0.05", "--timeout", "2.0")
    assert rc == 0
    L = out["lift"]
    assert L["commanded_m"] == 0.05
    assert L["hand_rise_m"] == pytest.approx(0.05, abs=5e-4)
    assert L["object_rise_m"] == pytest.approx(L["hand_rise_m"], abs=L["slip_m"] + 1e-4)
    assert L["held"] and L["contacts"] > 0
    assert out["quality"]["force_closure"]
    # not settled within 2 s: the distal joints still curl under the handset, and it says so
    assert not out["settled"]
    assert {n for n, e in out["ends"].items() if e["state"] == "moving"} == {"f1", "f2", "f3"}
    assert "not settled within the 2 s timeout" in text and "f1, f2, f3 still moving" in text
    assert f"lift: held: commanded 50.0 mm; the palm rose {L['hand_rise_m'] * 1e3:.1f} mm" in text


# ------------------------------------------------------------------ rough edges

@pytest.mark.parametrize("args, message", [
    (["--dynamic", "--effort", "f9=1"], "--effort 'f9=1': robot 'barrett' has no DOF 'f9'; DOFs: spread, f1, f2, f3"),
    (["--effort", "f9=1"], "--effort 'f9=1': robot 'barrett' has no DOF 'f9'"),
    (["--effort", "f1=2"], "--effort limits the drives of the dynamic grasp"),
    (["--dynamic", "--effort", "f1=abc"], "'abc' is not a number"),
    (["--dynamic", "--effort", "f1"], "write DOF=VALUE"),
    (["--dynamic", "--effort", "f1=-1"], "must be a finite number > 0"),
    (["--lift", "-0.05"], "--lift -0.05: the lift must be a finite height > 0 (m)"),
    (["--volume-facets", "-1"], "--volume-facets -1: must be >= 0"),
])
def test_bad_grasp_options_get_one_clear_line(capsys, args, message):
    rc = main(["grasp", str(ROOT / "worlds/barrett_mug.yaml"), *args])
    cap = capsys.readouterr()
    assert rc == 2 and cap.out == ""
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


def test_output_paths_that_cannot_be_written_are_named_before_the_work(capsys, tmp_path):
    """Every command's output file -- grasp --json/--plot, plan --json/--write-world, view
    --screenshot, batch --db -- that is a folder, or whose folder cannot be made because a file is
    in the way, is one "error:" line naming the option, and nothing is computed or written (they had
    been tracebacks: IsADirectoryError, NotADirectoryError, sqlite3's "unable to open database
    file", FileExistsError from the run lock).  A missing folder is made, as before."""
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    world = str(ROOT / "worlds/barrett_mug.yaml")
    cases = [
        (["grasp", world, "--json", str(tmp_path)], "--json '%s' is a folder; give the file to write" % tmp_path),
        (["grasp", world, "--json", str(blocker / "r.json")], "--json '%s': its folder" % (blocker / "r.json")),
        (["grasp", world, "--plot", str(blocker / "g.png")], "a file is in the way"),
        (["plan", world, "--iterations", "3", "--n", "1", "--json", str(tmp_path)], "--json '%s' is a folder" % tmp_path),
        (["plan", world, "--iterations", "3", "--n", "1", "--write-world", str(blocker / "w.yaml")],
         "--write-world '%s': its folder" % (blocker / "w.yaml")),
        (["view", world, "--headless", "--screenshot", str(blocker / "s.png")], "--screenshot '%s': its folder" % (blocker / "s.png")),
        (["batch", str(ROOT / "examples/batch_barrett_mug.yaml"), "--limit", "1", "--db", str(tmp_path)],
         "results database '%s' is a folder" % tmp_path),
        (["batch", str(ROOT / "examples/batch_barrett_mug.yaml"), "--limit", "1", "--db", str(blocker / "r.sqlite")],
         "a file is in the way"),
    ]
    for args, message in cases:
        rc = main(args)
        cap = capsys.readouterr()
        lines = cap.err.strip().splitlines()
        assert rc == 2 and cap.out == "", args
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], (args, cap.err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]      # nothing written
    out = tmp_path / "new" / "deeper" / "r.json"                          # a missing folder is made
    assert main(["grasp", world, "--json", str(out)]) == 0
    assert json.loads(out.read_text())["quality"]["force_closure"] is True
    capsys.readouterr()


def test_linf_volume_limit_is_an_option(capsys, tmp_path):
    """The L-infinity hull of 8 contacts x 8 cone edges has more facets than the limit: the note
    names the limit and the option; 0 skips the volume; epsilon is reported either way."""
    world = str(ROOT / "worlds/parallel_jaw_box.yaml")
    rc, text, _, out = _grasp(capsys, tmp_path, world, "--gws", "Linf", "--volume-facets", "1000")
    assert rc == 0 and out["quality"]["volume"] is None and out["quality"]["epsilon"] > 0
    assert "more than 1000 facets (raise --volume-facets" in out["volume_note"]
    assert out["volume_note"] in text
    rc, text, _, out = _grasp(capsys, tmp_path, world, "--gws", "Linf", "--volume-facets", "0")
    assert out["volume_note"] == "not computed (--volume-facets 0)"


def test_volume_facet_limit_against_qhull_of_the_minkowski_sum():
    """With a limit the hull fits in, the L-infinity volume of 3 of the jaw's contacts equals the
    volume of the explicit Minkowski sum's hull (qhull); a limit below its facet count raises."""
    from graspsim.grasp.quality import GraspQuality, analyze_wrenches, minkowski_points, qhull_quality

    w = graspsim.load_world(ROOT / "worlds/parallel_jaw_box.yaml")
    r = graspsim.control.static_auto_grasp(w, "gripper", gws="Linf")
    W = r.quality.wrenches[[0, 1, 4]]          # two corners of one jaw, one of the other
    q = analyze_wrenches(W, "Linf")
    assert isinstance(q, GraspQuality)
    with pytest.raises(RuntimeError, match="max_facets=10 "):
        analyze_wrenches(W, "Linf").compute_volume(10)
    ref = qhull_quality(minkowski_points(W))[2]
    assert q.compute_volume(2_000_000) == pytest.approx(ref, rel=1e-9)


def test_gws_plot_explains_its_axes(tmp_path):
    """The caption gives s = 1 / (largest distance from the mug's centre of mass to its surface),
    computed here from the mesh vertices, and says what s*tau is; the torque axes say s*tau."""
    import matplotlib  # noqa: F401  (the test extra has it)
    from graspsim.grasp import plot_gws
    from graspsim.grasp.objects import torque_scale

    w = graspsim.load_world(ROOT / "worlds/barrett_mug.yaml")
    r = graspsim.control.static_auto_grasp(w, "barrett")
    o = w.bodies["mug"].instance.obj
    V = o.shape.vertices @ o.shape.X_LS[:3, :3].T + o.shape.X_LS[:3, 3]
    s = 1.0 / np.max(np.linalg.norm(V - o.inertial.com, axis=1))
    fig = plot_gws(r.quality, tmp_path / "gws.png", torque_scale=torque_scale(w, "mug"))
    caption = "\n".join(t.get_text() for t in fig.texts)
    assert f"s = {s:.4g} 1/m (1 / {1e3 / s:.1f} mm" in caption
    assert "s*tau: torque about the object's centre of mass" in caption
    assert "unit total normal force over all contacts (L1)" in caption
    labels = [ax.get_xlabel() for ax in fig.axes]
    assert "fx" in labels and "s*tau_x" in labels
    assert (tmp_path / "gws.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_progress_bar_only_on_a_terminal(monkeypatch):
    """The dynamic grasp's tqdm bar goes to stderr when it is a terminal (a pty here, 100 columns)
    and shows the simulated seconds; to a pipe or file nothing is written."""
    import fcntl
    import pty
    import struct
    import termios

    from graspsim.control import dynamic

    monkeypatch.setattr(dynamic, "PROGRESS_DELAY", 0.0)
    w = graspsim.load_world(ROOT / "worlds/parallel_jaw_box.yaml")
    plain = io.StringIO()
    monkeypatch.setattr(sys, "stderr", plain)
    dynamic.dynamic_auto_grasp(w, "gripper", timeout=0.05, progress=True)
    assert plain.getvalue() == ""

    m, s = pty.openpty()
    fcntl.ioctl(s, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    tty = os.fdopen(s, "w")
    try:
        monkeypatch.setattr(sys, "stderr", tty)
        w = graspsim.load_world(ROOT / "worlds/parallel_jaw_box.yaml")
        dynamic.dynamic_auto_grasp(w, "gripper", timeout=0.05, progress=True)
        tty.flush()
        os.set_blocking(m, False)
        got = os.read(m, 1 << 16).decode(errors="replace")
    finally:
        monkeypatch.setattr(sys, "stderr", sys.__stderr__)
        tty.close()
        os.close(m)
    assert "dynamic grasp of 'box'" in got and "0.05 s simulated" in got


# ------------------------------------------------------------------ the command's exit

def _command(tmp_path, argv: list[str], prelude: str = "") -> "subprocess.CompletedProcess":
    """Run ``graspsim.cli.run`` (the ``graspsim`` command) in a child with ``argv``; ``prelude``
    runs first (an atexit handler, a thread).  stdout is a pipe, as under a shell pipeline."""
    import subprocess

    code = (f"import atexit, sys, threading, time\n{prelude}\n"
            f"sys.argv = ['graspsim', *{argv!r}]\nfrom graspsim.cli import run\nrun()\n")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_command_exit_keeps_output_exit_code_and_exit_handlers(tmp_path, capsys):
    # The command skips the interpreter's teardown (0.9 s after a first run's compile) but not
    # what a normal exit does: the whole output, main()'s exit code, the atexit handlers.
    mark = tmp_path / "atexit.txt"
    p = _command(tmp_path, ["info", "worlds/barrett_mug.yaml"],
                 f"atexit.register(lambda: (open({str(mark)!r}, 'w').write('ran'), print('bye')))")
    assert main(["info", "worlds/barrett_mug.yaml"]) == 0
    out = capsys.readouterr().out
    # all of main()'s output, then what the exit handler printed (flushed too)
    assert p.returncode == 0 and p.stdout == out + "bye\n" and out.count("\n") > 5
    assert mark.read_text() == "ran"
    p = _command(tmp_path, ["validate", str(tmp_path / "missing.yaml")])
    assert p.returncode == 2 and "error:" in p.stderr and "missing.yaml" in p.stderr


def test_command_exit_waits_for_a_running_thread(tmp_path):
    # A non-daemon thread still running at the end is joined, as by a normal exit (not killed).
    mark = tmp_path / "thread.txt"
    p = _command(tmp_path, ["info", "worlds/barrett_mug.yaml"],
                 f"threading.Thread(target=lambda: (time.sleep(0.5), open({str(mark)!r}, 'w')"
                 f".write('done'))).start()")
    assert p.returncode == 0 and mark.read_text() == "done"

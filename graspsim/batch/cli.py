"""The ``graspsim batch`` and ``graspsim results`` sub-commands."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["register"]

BATCH_EPILOG = """examples:
  graspsim batch examples/batch_barrett_mug.yaml                      # serial, results in barrett_mug.sqlite
  graspsim batch examples/batch_barrett_mug.yaml --workers 2 --db mug.sqlite
  graspsim batch examples/batch_barrett_mug.yaml --db mug.sqlite --resume   # after Ctrl-C, a kill, a reboot
  graspsim batch examples/batch_barrett_mug.yaml --cluster local --workers 4  # Dask LocalCluster
  graspsim batch examples/batch_barrett_mug.yaml --limit 50 --db try.sqlite  # a quick try: 50 candidates
  graspsim batch examples/batch_barrett_mug.yaml --scheduler tls://10.0.0.5:8786 --security security.yaml
  graspsim batch --world worlds/barrett_mug.yaml --sphere 64 --rolls 4 --standoff 60mm --standoff 140mm \\
                 --within 0,0,-1:90 --db quick.sqlite
  graspsim batch --hand robots/barrett.yaml --object objects/mug.yaml --object objects/can.yaml --sphere 32
  graspsim batch --world worlds/parallel_jaw_box.yaml --planner 20 --plan-iterations 500 --robustness 20
  graspsim batch --world worlds/panda_hand_cube.yaml --normals 40 --within 0,0,-1:60 --rolls 2 --closing centred
  graspsim results summary mug.sqlite --top 10 --plots plots/
  graspsim results export mug.sqlite mug.parquet

Flags given with a batch file replace its values.  Lengths and angles on the command line are
SI (m, rad) unless they carry a unit: --standoff 40mm, --preshape spread=60deg, --within 0,0,-1:90deg
(the angle of --within is in degrees when it has no unit).
"""


def _num(text: str):
    try:
        return float(text)
    except ValueError:
        t = text.strip()
        for u in ("mm", "cm", "um", "m", "in", "deg", "rad"):
            if t.endswith(u) and not t.endswith(" " + u):
                return t[: -len(u)] + " " + u
        return t


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number >= 1")
    return n


def _vec(text: str) -> list:
    parts = [p for p in text.replace(" ", "").split(",") if p]
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"'{text}' is not a direction like 0,0,-1")
    try:
        return [float(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a direction like 0,0,-1") from None


def _within(text: str) -> dict:
    if ":" not in text:
        raise argparse.ArgumentTypeError(f"'{text}' is not AXIS:ANGLE like 0,0,-1:90")
    ax, ang = text.rsplit(":", 1)
    a = _num(ang)
    if isinstance(a, float):
        a = f"{a} deg"
    return {"axis": _vec(ax), "angle": a}


def _preshape(text: str) -> dict:
    out = {}
    for part in text.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise argparse.ArgumentTypeError(f"'{text}' is not a preshape like spread=60deg,f1=10deg")
        k, v = part.split("=", 1)
        out[k.strip()] = _num(v)
    return out


def register(subparsers) -> None:
    """Add ``batch`` and ``results`` to the ``graspsim`` command line."""
    b = subparsers.add_parser(
        "batch", help="evaluate many grasp candidates headless (parallel, resumable) into a SQLite file",
        description="Generate grasp candidates (approach directions x rolls x stand-offs x preshapes) around each "
                    "object, evaluate each (approach until contact, static auto-grasp, force closure / epsilon / "
                    "volume; with --dynamic also the dynamic auto-grasp and a lift test), and commit the rows to a "
                    "SQLite database as they come.  See docs/batch.md.",
        epilog=BATCH_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument("config", nargs="?", metavar="CONFIG.yaml", help="batch file (optional with --world or --hand)")
    run = b.add_argument_group("running")
    run.add_argument("--db", metavar="FILE", help="results database (default: the file's 'output', else NAME.sqlite)")
    run.add_argument("--workers", type=int, default=0, metavar="N",
                     help="worker processes (default 0: evaluate in this process); with --cluster local: Dask workers")
    g = run.add_mutually_exclusive_group()
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on a Dask cluster (tls://host:8786 with --security; plain tcp:// only on a trusted network)")
    g.add_argument("--cluster", choices=["local"], help="run on a Dask LocalCluster started for this run")
    run.add_argument("--security", metavar="FILE.yaml",
                     help="TLS certificates for a tls:// scheduler: a YAML file with ca_file, cert, key (docs/batch.md)")
    run.add_argument("--limit", type=_positive, metavar="N",
                     help="evaluate at most N of the candidates not yet done, spread evenly over them (a quick try; "
                          "--resume continues)")
    run.add_argument("--resume", action="store_true", help="continue the run stored in --db (same configuration)")
    run.add_argument("--overwrite", action="store_true", help="discard a run already stored in --db")
    run.add_argument("--chunk", type=int, metavar="N", help="candidates per task (default: automatic)")
    run.add_argument("--progress", choices=["auto", "bar", "lines", "off"], default="auto",
                     help="progress bar on a terminal, periodic lines otherwise (default auto)")
    run.add_argument("--progress-interval", type=float, default=10.0, metavar="S",
                     help="seconds between progress lines (default 10)")
    cf = b.add_argument_group("configuration (without a batch file, or replacing its values)")
    cf.add_argument("--name", help="run name")
    cf.add_argument("--world", metavar="WORLD.yaml", help="world with an unmounted hand and the objects")
    cf.add_argument("--hand", metavar="NAME|ROBOT.yaml", help="robot name in --world, else a robot file")
    cf.add_argument("--object", action="append", metavar="NAME|OBJECT.yaml", dest="objects",
                    help="object to grasp (repeat); body names with --world, else object files")
    t = cf.add_mutually_exclusive_group()
    t.add_argument("--table", metavar="OBJECT.yaml", help="table object file (object files only)")
    t.add_argument("--no-table", action="store_true", help="objects without a table (object files only)")
    cf.add_argument("--seed", type=int)
    cf.add_argument("--sphere", type=int, metavar="N", help="N approach directions evenly on the sphere")
    cf.add_argument("--normals", type=int, metavar="N", help="N approaches against surface normals")
    cf.add_argument("--direction", type=_vec, action="append", metavar="X,Y,Z", help="explicit approach direction")
    cf.add_argument("--within", type=_within, metavar="X,Y,Z:DEG", help="keep directions within DEG of the axis")
    cf.add_argument("--rolls", type=int, metavar="N", help="N roll angles evenly over 360 deg")
    cf.add_argument("--standoff", type=_num, action="append", metavar="D", help="stand-off distance (repeat)")
    cf.add_argument("--preshape", type=_preshape, action="append", metavar="DOF=V,...", help="preshape (repeat)")
    cf.add_argument("--dynamic", action="store_true", help="also the dynamic auto-grasp and a lift test")
    cf.add_argument("--closing", choices=["static", "centred"],
                    help="the static closing: 'static' (default; GraspIt's: each DOF stops at its first contact) or "
                         "'centred' (a grasp that is not force closure shifts the hand to centre its fingers on the "
                         "object and closes again, as the planner does; not with --dynamic)")
    cf.add_argument("--planner", type=_positive, metavar="N",
                    help="candidates from the grasp planner: N grasps per object instead of the approach grid")
    cf.add_argument("--plan-iterations", type=_positive, metavar="N",
                    help="planner budget: N annealing steps per restart (default 2000; deterministic)")
    cf.add_argument("--plan-seconds", type=float, metavar="S", help="planner budget: S s of search per object")
    cf.add_argument("--robustness", type=_positive, metavar="SAMPLES",
                    help="store the robustness of every force-closure candidate (SAMPLES noisy re-closings)")
    b.set_defaults(func=_cmd_batch)

    r = subparsers.add_parser("results", help="summarize or export a batch results database",
                              description="Summarize (best grasps, epsilon distribution, failures by kind, plots) "
                                          "or export (CSV, Parquet) the results of 'graspsim batch'.")
    rs = r.add_subparsers(dest="results_command", metavar="ACTION")
    s = rs.add_parser("summary", help="print counts, best grasps, epsilon distribution and failures")
    s.add_argument("db", metavar="DB")
    s.add_argument("--top", type=int, default=10, metavar="N", help="best grasps to list (default 10)")
    s.add_argument("--object", metavar="NAME", help="only this object's candidates")
    s.add_argument("--plots", metavar="DIR", help="save epsilon_hist.png and success_vs_direction.png here")
    s.set_defaults(func=_cmd_summary)
    e = rs.add_parser("export", help="write the results table to CSV or Parquet")
    e.add_argument("db", metavar="DB")
    e.add_argument("out", metavar="OUT.csv|OUT.parquet")
    e.add_argument("--format", choices=["csv", "parquet"], help="default: from the file suffix")
    e.add_argument("--no-timings", action="store_true", help="leave out the timing and worker columns")
    e.set_defaults(func=_cmd_export)
    r.set_defaults(func=lambda a: (r.print_help(), 0)[1])


def _overrides(a) -> dict:
    o: dict = {}
    if a.name:
        o["batch"] = a.name
    if a.world:
        o["world"] = a.world
    if a.hand:
        o["hand"] = a.hand
    if a.objects:
        o["objects"] = list(a.objects)
    if a.table:
        o["table"] = a.table
    if a.no_table:
        o["table"] = False
    if a.seed is not None:
        o["seed"] = a.seed
    c: dict = {}
    d: dict = {}
    if a.sphere is not None:
        d["sphere"] = a.sphere
    if a.normals is not None:
        d["normals"] = a.normals
    if a.direction:
        d["list"] = a.direction
    if a.within:
        d["within"] = a.within
    if d:
        c["directions"] = d
    if a.rolls is not None:
        c["rolls"] = a.rolls
    if a.standoff:
        c["standoffs"] = a.standoff
    if a.preshape:
        c["preshapes"] = a.preshape
    p: dict = {}
    if a.planner is not None:
        p["n"] = a.planner
    if a.plan_iterations is not None:
        p["iterations"] = a.plan_iterations
    if a.plan_seconds is not None:
        p["seconds"] = a.plan_seconds
    if p:
        c["planner"] = p
    if a.robustness is not None:
        o["robustness"] = {"samples": a.robustness}
    if c:
        o["candidates"] = c
    ev: dict = {}
    if a.dynamic:
        ev["mode"] = "dynamic"
    if a.closing is not None:
        ev["closing"] = a.closing
    if ev:
        o["evaluation"] = ev
    return o


def _cmd_batch(a) -> int:
    from .config import load_config
    from .runner import run_batch

    if a.config is None and not (a.world or a.hand):
        print("error: give a batch file, or --world (or --hand with --object) to describe the run", file=sys.stderr)
        return 2
    cfg = load_config(a.config, overrides=_overrides(a))
    db = a.db if a.db else (cfg.output or f"{cfg.name}.sqlite")
    try:
        res = run_batch(cfg, db, workers=a.workers, scheduler=a.scheduler, cluster=a.cluster, security=a.security,
                        resume=a.resume, overwrite=a.overwrite, limit=a.limit, chunk_size=a.chunk, progress=a.progress,
                        progress_interval=a.progress_interval)
    except KeyboardInterrupt:
        if not Path(db).exists():
            print("interrupted before any result was committed; nothing was written", file=sys.stderr)
            return 130
        again = " ".join(x for x in [a.config or ""] if x)
        print(f"interrupted: the results committed so far are in {db}; continue with "
              f"'graspsim batch {again + ' ' if again else ''}... --db {db} --resume'", file=sys.stderr)
        return 130
    print(res.text())
    return 0


def _cmd_summary(a) -> int:
    from .summary import summarize

    s = summarize(a.db, top=a.top, object=a.object)
    print(s.text())
    if a.plots:
        for p in s.plot(a.plots):
            print(f"saved {p}")
    return 0


def _cmd_export(a) -> int:
    from .store import export_results, read_results

    p = export_results(a.db, a.out, fmt=a.format, timings=not a.no_timings)
    n = len(read_results(a.db, columns=["id"]))
    print(f"exported {n} rows to {p}")
    return 0

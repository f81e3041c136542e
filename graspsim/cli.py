"""The ``graspsim`` command line.  It sits on the public API only and imports lazily.

``validate`` and ``info`` import only the model loader (numpy and PyYAML; ``validate`` of a world
whose bodies start too close to settle with numpy also loads FCL and the contact kernels, ~1 s);
the other sub-commands live with the part of the package they drive and are imported only when
they run (or for the full ``--help``), so a missing dependency of one of them fails that command
loudly, not the others.
"""
from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
import threading

from .errors import CollisionError, ModelError, SimulationError, caused_by_interrupt, escape

#: sub-commands registered by other parts of the package: name -> module with ``register(subparsers)``
EXTERNAL_COMMANDS = {
    "grasp": "graspsim.control.cli",
    "batch": "graspsim.batch.cli",
    "results": "graspsim.batch.cli",
    "view": "graspsim.gui.cli",
    "plan": "graspsim.planner.cli",
}


def _cmd_validate(args) -> int:
    from .model.loader import load_any

    bad = 0
    for f in args.files:
        try:
            m = load_any(f)
            if type(m).__name__ == "World" and not args.no_collisions:
                from .model.checks import start_problems

                problems = start_problems(m)
                if problems:
                    raise problems[0] if len(problems) == 1 else _errors(problems)
        except ModelError as e:
            bad += 1
            for err in getattr(e, "errors", [e]):
                print(f"error: {err}", file=sys.stderr)
            continue
        kind = type(m).__name__.lower()
        print(f"ok: {escape(f, 300)} ({kind} '{m.name}')")
        if kind in ("robot", "object"):
            _note_materials(m)
    return 2 if bad else 0


def _note_materials(m) -> None:
    """A robot's or object's material outside the default friction table is fine only in a world
    that adds friction pairs for it: say so (the file alone cannot be wrong about it)."""
    from .model.materials import DEFAULT_MATERIALS

    used = [l.material for l in m.links] if hasattr(m, "links") else [m.material]
    for mat in dict.fromkeys(x for x in used if x not in DEFAULT_MATERIALS):
        print(f"  note: material '{mat}' is not in the default friction table; a world using this file must "
              f"add friction pairs for it (known: {', '.join(DEFAULT_MATERIALS)})")


def _errors(problems: list) -> ModelError:
    from .errors import ModelErrors

    return ModelErrors(problems)


def _cmd_info(args) -> int:
    from . import load_world

    w = load_world(args.world)
    print(w.summary())
    return 0


def command_of(argv: list[str]) -> str | None:
    """The sub-command ``argv`` asks for (its first argument that is not an option), or None."""
    for a in argv:
        if a == "--":
            return None
        if not a.startswith("-"):
            return a
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``graspsim`` parser.  With ``command`` only that sub-command's module is imported;
    without (or for an unknown command) every sub-command is registered, for the full help."""
    p = argparse.ArgumentParser(prog="graspsim", description="graspsim: a Python grasping simulator "
                                "(YAML models, FCL contacts, LCP time-stepping, auto-grasp, grasp quality).")
    from . import __version__

    p.add_argument("--version", action="version", version=f"graspsim {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    v = sub.add_parser("validate", help="check robot, object or world files and report every problem")
    v.add_argument("files", nargs="+", metavar="FILE")
    v.add_argument("--no-collisions", action="store_true",
                   help="skip the check that a world's bodies do not start inside each other (FCL, ~0.5 s)")
    v.set_defaults(func=_cmd_validate)
    i = sub.add_parser("info", help="print a world's robots (DOFs with limits), bodies, masses, materials and bounds")
    i.add_argument("world", metavar="WORLD")
    i.set_defaults(func=_cmd_info)
    if command in ("validate", "info"):
        modules = []
    elif command in EXTERNAL_COMMANDS:
        modules = [EXTERNAL_COMMANDS[command]]
    else:
        modules = list(dict.fromkeys(EXTERNAL_COMMANDS.values()))
    for name in modules:
        importlib.import_module(name).register(sub)
    return p


def _one_line_warnings() -> None:
    """Model warnings (an open mesh replaced by its hull, ...) as one ``warning: FILE:LINE: ...`` line."""
    import warnings

    from .errors import ModelWarning

    default = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, ModelWarning):
            print(f"warning: {message}", file=file or sys.stderr)
        else:
            default(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def main(argv: list[str] | None = None) -> int:
    _one_line_warnings()
    argv = sys.argv[1:] if argv is None else list(argv)
    command = command_of(argv)
    if command is None and "--version" in argv:
        command = "validate"             # --version needs no other sub-command's module
    parser = build_parser(command)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except ModelError as e:
        for err in getattr(e, "errors", [e]):
            print(f"error: {err}", file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError, KeyError, CollisionError) as e:
        # (CollisionError: a world or hand that starts with bodies inside each other, input to fix)
        print(f"error: {escape(str(e), 1000)}", file=sys.stderr)
        return 2
    except SimulationError as e:        # the dynamics could not go on (its message says where)
        print(f"error: {escape(str(e), 1000)}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. piped into `head`
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except SystemError as e:            # a Ctrl-C inside a compiled kernel (see caused_by_interrupt)
        if not caused_by_interrupt(e):
            raise
        print("interrupted", file=sys.stderr)
        return 130


def run() -> None:
    """The ``graspsim`` command: :func:`main`, then exit without the interpreter's teardown.

    After a first run's compile, freeing numba's and LLVM's compile objects one by one at
    interpreter shutdown took 0.9 s of the README's first job (about 30 s).  Output is flushed and
    ``atexit`` handlers run as usual; only when no other non-daemon thread is alive (that one
    would be joined by a normal exit)."""
    code = main()
    others = [t for t in threading.enumerate()
              if t is not threading.main_thread() and t.is_alive() and not t.daemon]
    if others:
        sys.exit(code)
    _flush()
    atexit._run_exitfuncs()
    _flush()                                    # what the exit handlers wrote
    os._exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError, OSError):      # reader gone, or a stream closed
            pass


if __name__ == "__main__":  # pragma: no cover
    run()

"""The ``graspsim`` command line.  It sits on the public API only and imports lazily."""
from __future__ import annotations

import argparse
import sys

from .errors import ModelError


def _cmd_validate(args) -> int:
    from .model.loader import load_any

    bad = 0
    for f in args.files:
        try:
            m = load_any(f)
        except ModelError as e:
            bad += 1
            for err in getattr(e, "errors", [e]):
                print(f"error: {err}", file=sys.stderr)
            continue
        kind = type(m).__name__.lower()
        print(f"ok: {f} ({kind} '{m.name}')")
    return 2 if bad else 0


def _cmd_info(args) -> int:
    from . import load_world

    w = load_world(args.world)
    print(w.summary())
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="graspsim", description="graspsim: a Python grasping simulator "
                                "(YAML models, FCL contacts, LCP time-stepping, auto-grasp, grasp quality).")
    from . import __version__

    p.add_argument("--version", action="version", version=f"graspsim {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    v = sub.add_parser("validate", help="check robot, object or world files and report every problem")
    v.add_argument("files", nargs="+", metavar="FILE")
    v.set_defaults(func=_cmd_validate)
    i = sub.add_parser("info", help="print a world's robots (DOFs with limits), bodies, masses and materials")
    i.add_argument("world", metavar="WORLD")
    i.set_defaults(func=_cmd_info)
    for register in _extra_commands():
        register(sub)
    return p


def _extra_commands():
    """Sub-commands that live with the part of the package they drive (added as those parts land)."""
    out = []
    try:
        from .control.cli import register as reg_grasp
        out.append(reg_grasp)
    except ImportError:
        pass
    try:
        from .batch.cli import register as reg_batch
        out.append(reg_batch)
    except ImportError:
        pass
    try:
        from .planner.cli import register as reg_plan
        out.append(reg_plan)
    except ImportError:
        pass
    try:
        from .gui.cli import register as reg_gui
        out.append(reg_gui)
    except ImportError:
        pass
    return out


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
    parser = build_parser()
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
    except (FileNotFoundError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into `head`
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

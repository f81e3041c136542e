"""The ``graspsim view`` sub-command."""
from __future__ import annotations

import argparse
import re
import sys

__all__ = ["register"]

EPILOG = """scripted mode (--script "CMD; CMD; ..." or a script file; one command per line or ';'):
{commands}

examples:
  graspsim view worlds/barrett_mug.yaml
  graspsim view worlds/barrett_mug.yaml --script "autograsp; run 2.0; screenshot out.png"
  graspsim view worlds/parallel_jaw_box.yaml --screenshot box.png --headless
"""


def _size(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not m or int(m.group(1)) < 16 or int(m.group(2)) < 16:
        raise argparse.ArgumentTypeError(f"'{text}' is not a window size like 1280x720")
    return int(m.group(1)), int(m.group(2))


def register(subparsers) -> None:
    """Add ``view`` to the ``graspsim`` command line."""
    from .script import help_text

    p = subparsers.add_parser(
        "view", help="open a world in the interactive viewer (pyglet window)",
        description="Show a world in an OpenGL window: orbit/pan/zoom camera, selection, DOF sliders, "
                    "auto-grasp, dynamics, friction cones, contact forces, pull/push, grasp quality.",
        epilog=EPILOG.format(commands=help_text()), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("world", metavar="WORLD", help="world YAML file")
    p.add_argument("--script", metavar="SCRIPT", help="commands to run (inline, or a file); the window "
                   "closes at the end unless --interactive")
    p.add_argument("--screenshot", metavar="FILE.png", help="save a screenshot (after the script, if any) and exit")
    p.add_argument("--size", type=_size, default=(1280, 720), metavar="WxH", help="window size (default 1280x720)")
    p.add_argument("--select", metavar="NAME", help="robot or body selected at start (default: the last robot)")
    p.add_argument("--interactive", action="store_true", help="keep the window open after --script/--screenshot")
    p.add_argument("--headless", action="store_true", help="render offscreen with EGL (no display needed); "
                   "needs --script or --screenshot")
    p.add_argument("--samples", type=int, default=0, metavar="N",
                   help="multisample anti-aliasing, e.g. 4 (default 0: software OpenGL is 3x slower with it)")
    p.add_argument("--fps", type=float, default=40.0, metavar="N",
                   help="frame rate kept while the dynamics runs (its time budget; default 40)")
    p.set_defaults(func=_cmd_view)


def _cmd_view(args) -> int:
    from .. import load_world
    from .script import ScriptError, load_script

    if args.screenshot and not args.screenshot.lower().endswith(".png"):
        print("error: --screenshot must name a .png file", file=sys.stderr)
        return 2
    if args.screenshot:
        from ..arguments import output_file

        try:
            output_file("--screenshot", args.screenshot)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    try:
        commands = load_script(args.script) if args.script else []
    except ScriptError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # an offscreen window takes no input: without something to do it would never close
    if args.headless and args.interactive:
        print("error: --headless renders offscreen and takes no input: it cannot be --interactive", file=sys.stderr)
        return 2
    if args.headless and not (commands or args.screenshot):
        print("error: --headless needs --script or --screenshot FILE.png (an offscreen viewer has nothing "
              "else to do)", file=sys.stderr)
        return 2
    world = load_world(args.world)
    from . import open_viewer

    try:
        viewer = open_viewer(world, *args.size, headless=args.headless, samples=args.samples, target_fps=args.fps)
    except Exception as e:  # no display, no OpenGL 3.3: say so plainly
        print(f"error: cannot open the viewer window: {type(e).__name__}: {e}\n"
              "hint: set DISPLAY (e.g. run under xvfb-run -a) or use --headless", file=sys.stderr)
        return 2
    if args.select:
        try:
            viewer.session.select(args.select)
        except KeyError as e:
            viewer.close()
            print(f"error: {e.args[0]}", file=sys.stderr)
            return 2
    interactive = args.interactive or not (commands or args.screenshot)
    return viewer.run(commands, screenshot=args.screenshot, interactive=interactive)

"""The viewer's scripted mode: parse a small command language and run it frame by frame.

A script is a sequence of commands separated by newlines or ``;``; ``#`` starts a comment
(both only outside quotes).
Arguments are separated by spaces (shell-style quoting is allowed)::

    camera -60 25 0.45        # azimuth, elevation (deg), distance (m) [, target x y z (m)]
    dof barrett f1 40         # DOF value in deg (revolute) or mm (prismatic); '0.7rad', '0.02m' too
    autograsp; run 2.0; screenshot out.png
    pull mug 0.004 0 0.09 40; target 0.004 0 0.17; run 1.5; release   # a held pull (m, N/m)

The command table :data:`COMMANDS` lists every command with its argument count and help text.
Parsing (:func:`parse_script`) checks names, argument counts and numbers and raises
:class:`ScriptError` naming the line; running (:class:`ScriptRunner`) calls a handler per
command, and a handler may return an iterator that is advanced once per drawn frame (so ``run``
and ``frames`` let the window draw while they last).
"""
from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

__all__ = ["Command", "ScriptError", "COMMANDS", "parse_script", "load_script", "parse_value",
           "ScriptRunner", "help_text"]


class ScriptError(ValueError):
    """A script that cannot be parsed or run; the message names the line."""


@dataclass(frozen=True)
class Command:
    """One parsed command: its name, its arguments (strings and floats) and the line it came from."""

    name: str
    args: tuple
    line: int = 0
    text: str = ""


# name: (min args, max args, argument kinds, help).  Kinds: 'f' float, 's' string, 'v' value with
# an optional unit (kept as a string; see parse_value), '*' any number of strings.
COMMANDS: dict[str, tuple[int, int, str, str]] = {
    "select": (1, 1, "s", "select NAME: select a robot or body"),
    "dof": (2, 3, "ssv", "dof [ROBOT] NAME VALUE: set a DOF (deg or mm; or 0.5rad, 0.02m)"),
    "move": (3, 3, "fff", "move DX DY DZ: translate the selected robot or body (mm, world axes)"),
    "turn": (1, 1, "f", "turn DEG: rotate the selected robot or body about the world z axis"),
    "autograsp": (0, 1, "s", "autograsp [HAND]: static auto-grasp"),
    "dyngrasp": (0, 1, "s", "dyngrasp [HAND]: dynamic auto-grasp (starts the dynamics)"),
    "open": (0, 1, "s", "open [HAND]: open the hand"),
    "start": (0, 0, "", "start: run the dynamics in real time"),
    "stop": (0, 0, "", "stop: pause the dynamics"),
    "step": (0, 1, "f", "step [N]: N dynamics steps (default 1)"),
    "run": (1, 1, "f", "run SECONDS: simulate SECONDS of time as fast as possible, drawing meanwhile"),
    "reset": (0, 0, "", "reset: back to the initial state"),
    "contacts": (0, 0, "", "contacts: recompute contacts (collision module) and grasp quality"),
    "show": (2, 2, "ss", "show cones|forces|wrench|help|overlay on|off"),
    "camera": (3, 6, "ffffff", "camera AZ EL DIST [TX TY TZ]: place the camera (deg, m)"),
    "fit": (0, 0, "", "fit: frame the hand and the objects"),
    "size": (2, 2, "ff", "size W H: resize the window (pixels)"),
    "key": (1, 2, "ss", "key NAME [shift|ctrl|...+...]: press and release a key (pyglet key name)"),
    "drag": (4, 6, "ffffss", "drag X0 Y0 X1 Y1 [left|right|middle] [MODS]: drag the mouse (pixels)"),
    "click": (2, 3, "ffs", "click X Y [BUTTON]: click the mouse (pixels)"),
    "scroll": (1, 3, "fff", "scroll CLICKS [X Y]: mouse wheel (positive: zoom in)"),
    "tool": (1, 1, "s", "tool select|move|pull|push: the left mouse button's tool"),
    "pull": (4, 6, "sfffff", "pull BODY X Y Z [K [C]]: spring from the body point X Y Z (m, world) to a target "
                             "(K N/m, C N s/m; default 2 Hz on the body's mass, critically damped); "
                             "acts while the dynamics runs, until release"),
    "push": (4, 5, "sffff", "push BODY X Y Z [R]: probe sphere (radius R m) at X Y Z (m) pushing the body; "
                            "acts while the dynamics runs, until release"),
    "target": (3, 4, "ffff", "target X Y Z [SPEED]: move the pull's spring end or the push probe to X Y Z (m): "
                             "at once, or at SPEED m/s of simulated time"),
    "release": (0, 0, "", "release: let go of the pull or push (and of a mouse button held by press)"),
    "press": (2, 4, "ffss", "press X Y [BUTTON] [MODS]: press a mouse button and hold it (pixels)"),
    "dragto": (2, 2, "ff", "dragto X Y: drag the mouse button held by press to X Y (pixels)"),
    "frames": (1, 1, "f", "frames N: draw N frames"),
    "wait": (1, 1, "f", "wait SECONDS: keep drawing for SECONDS of wall time"),
    "screenshot": (1, 1, "s", "screenshot FILE.png: save the window as PNG"),
    "fps": (1, 1, "f", "fps SECONDS: measure the frame rate (uncapped) while the camera turns; prints it"),
    "plan": (0, 2, "fs", "plan [SECONDS] [robust]: plan grasps of the selected object (else the one nearest the hand) "
                         "with SECONDS of search (default 5) in the background, with 'robust' ranked by robustness "
                         "(10 samples each); the script waits, the window draws"),
    "next_grasp": (0, 0, "", "next_grasp: put the hand in the next planned grasp (the first after plan)"),
    "prev_grasp": (0, 0, "", "prev_grasp: put the hand in the previous planned grasp"),
    "print": (0, 99, "*", "print TEXT...: print a line (and the status) to stdout"),
    "quit": (0, 0, "", "quit: close the window"),
}
ALIASES = {"next": "next_grasp", "prev": "prev_grasp", "dynamic_autograsp": "dyngrasp", "auto_grasp": "autograsp", "exit": "quit", "shot": "screenshot"}

_VALUE = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(deg|rad|mm|m)?\s*$")


def parse_value(text: str) -> tuple[float, str | None]:
    """``'30'`` -> (30.0, None); ``'0.5rad'`` -> (0.5, 'rad'); units: deg, rad, mm, m."""
    m = _VALUE.match(text)
    if not m:
        raise ValueError(f"'{text}' is not a number (optionally followed by deg, rad, mm or m)")
    return float(m.group(1)), m.group(2)


def _split_commands(text: str) -> Iterator[tuple[int, str]]:
    """(line number, command text) for each command; ';', newlines and '#' count outside quotes only."""
    line, start_line, quote, buf, comment = 1, 1, "", [], False
    for ch in text + "\n":
        if comment and ch != "\n":
            continue
        if quote:
            buf.append(ch)
            if ch == quote:
                quote = ""
            if ch == "\n":
                line += 1
            continue
        if ch in ";\n":
            if "".join(buf).strip():
                yield start_line, "".join(buf).strip()
            buf, comment = [], False
            if ch == "\n":
                line += 1
            start_line = line
        elif ch == "#":
            comment = True
        else:
            if ch in "'\"":
                quote = ch
            if not buf or not "".join(buf).strip():
                start_line = line
            buf.append(ch)
    if quote and "".join(buf).strip():  # unterminated quote: let shlex report it
        yield start_line, "".join(buf).strip()


def parse_script(text: str, source: str = "script") -> list[Command]:
    """Parse a script into commands; raise :class:`ScriptError` ("SOURCE:LINE: problem") on errors."""
    out = []
    for lineno, part in _split_commands(text):
        where = f"{source}:{lineno}"
        try:
            words = shlex.split(part)
        except ValueError as e:
            raise ScriptError(f"{where}: {e}") from None
        name = ALIASES.get(words[0].lower(), words[0].lower())
        if name not in COMMANDS:
            raise ScriptError(f"{where}: unknown command '{words[0]}'; commands: {', '.join(COMMANDS)}")
        lo, hi, kinds, usage = COMMANDS[name]
        args = words[1:]
        if not lo <= len(args) <= hi:
            raise ScriptError(f"{where}: '{name}' takes {lo if lo == hi else f'{lo} to {hi}'} "
                              f"argument{'s' if hi != 1 else ''}, got {len(args)} (usage: {usage})")
        conv: list = []
        # 'dof' with two arguments means NAME VALUE for the selected robot
        kk = "sv" if name == "dof" and len(args) == 2 else kinds
        for i, a in enumerate(args):
            k = "*" if kk == "*" else (kk[i] if i < len(kk) else "s")
            try:
                if k == "f":
                    x = float(a)
                    if not math.isfinite(x):       # (float() takes 'nan', 'inf', '1e999')
                        raise ValueError(a)
                    conv.append(x)
                elif k == "v":
                    parse_value(a)
                    conv.append(a)
                else:
                    conv.append(a)
            except ValueError as e:
                raise ScriptError(f"{where}: '{name}': argument {i + 1} '{a}': "
                                  f"{e if k == 'v' else 'not a finite number'} (usage: {usage})") from None
        _check(name, conv, where, usage)
        out.append(Command(name, tuple(conv), lineno, part))
    return out


def _check(name: str, args: list, where: str, usage: str) -> None:
    def bad(msg: str) -> ScriptError:
        return ScriptError(f"{where}: '{name}': {msg} (usage: {usage})")

    if name in ("run", "wait", "fps") and args[0] < 0:
        raise bad("must not be negative")
    if name == "plan" and args and not args[0] > 0:
        raise bad("the search time must be > 0 s")
    if name == "plan" and len(args) == 2 and args[1] != "robust":
        raise bad("the second argument can only be 'robust'")
    if name in ("frames", "step") and args and (args[0] < 0 or args[0] != int(args[0])):
        raise bad("needs a whole number >= 0")
    if name == "show" and (args[0] not in ("cones", "forces", "wrench", "help", "overlay")
                           or args[1] not in ("on", "off")):
        raise bad("expected one of cones, forces, wrench, help, overlay followed by on or off")
    if name == "tool" and args[0] not in ("select", "move", "pull", "push"):
        raise bad("expected select, move, pull or push")
    if name == "size" and (args[0] < 16 or args[1] < 16):
        raise bad("the window must be at least 16x16 pixels")
    if name == "screenshot" and not args[0].lower().endswith(".png"):
        raise bad("screenshots are PNG files (FILE.png)")
    if name == "drag" and len(args) >= 5 and args[4] not in ("left", "right", "middle"):
        raise bad("button must be left, right or middle")
    if name == "press" and len(args) >= 3 and args[2] not in ("left", "right", "middle"):
        raise bad("button must be left, right or middle")
    if name == "pull" and len(args) >= 5 and not args[4] > 0:
        raise bad("the stiffness K must be > 0 N/m")
    if name == "pull" and len(args) >= 6 and args[5] < 0:
        raise bad("the damping C must be >= 0 N s/m")
    if name == "push" and len(args) >= 5 and not args[4] > 0:
        raise bad("the probe radius R must be > 0 m")
    if name == "target" and len(args) >= 4 and not args[3] > 0:
        raise bad("the speed must be > 0 m/s")
    if name == "click" and len(args) == 3 and args[2] not in ("left", "right", "middle"):
        raise bad("button must be left, right or middle")


def load_script(arg: str) -> list[Command]:
    """Parse ``arg`` as a script file if such a file exists, else as the script text itself."""
    p = Path(arg)
    try:
        is_file = p.is_file()
    except OSError:  # e.g. a very long inline script
        is_file = False
    if is_file:
        return parse_script(p.read_text(), str(p))
    return parse_script(arg, "script")


def help_text() -> str:
    """One line per command (for ``graspsim view --help`` and docs/gui.md)."""
    return "\n".join(f"  {v[3]}" for v in COMMANDS.values())


Handler = Callable[[Command], "Iterator[None] | None"]


class ScriptRunner:
    """Runs commands one after another, one :meth:`tick` per drawn frame.

    ``handlers`` maps a command name to a callable; a callable that returns an iterator keeps the
    script at that command, advancing the iterator once per tick until it is exhausted.  A handler
    raising :class:`ScriptError` stops the script (the error is kept in :attr:`error`).
    """

    def __init__(self, commands: list[Command], handlers: dict[str, Handler]):
        missing = {c.name for c in commands} - set(handlers)
        if missing:
            raise ScriptError(f"no handler for: {', '.join(sorted(missing))}")
        self.commands = list(commands)
        self.handlers = handlers
        self.index = 0
        self.current: Iterator[None] | None = None
        self.error: str | None = None

    @property
    def done(self) -> bool:
        return self.error is not None or (self.current is None and self.index >= len(self.commands))

    def tick(self) -> None:
        """Advance: finish the running command's frame, then start commands until one needs frames."""
        try:
            if self.current is not None:
                try:
                    next(self.current)
                    return
                except StopIteration:
                    self.current = None
            while self.index < len(self.commands):
                cmd = self.commands[self.index]
                self.index += 1
                result = self.handlers[cmd.name](cmd)
                if result is not None:
                    self.current = iter(result)
                    try:
                        next(self.current)
                        return
                    except StopIteration:
                        self.current = None
        except ScriptError as e:
            self.error = str(e)
            self.current = None

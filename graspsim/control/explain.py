"""Why each DOF of an auto-grasp ended where it did, as records and in plain words.

A static auto-grasp stops a DOF by a contact, by a joint limit, or lets the Barrett-style clutch
break away (the proximal joint held where its link touched, the distal joint closing on); a
dynamic grasp ends with each drive pressing at its effort limit, at its target, or still moving.
The records keep SI values (rad or m); :func:`dof_text` and :func:`joint_text` print deg or mm.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Breakaway", "DofStop", "DofEnd", "dof_text", "joint_text", "describe_stop", "describe_end"]


@dataclass(frozen=True)
class Breakaway:
    """The clutch of a breakaway DOF gave way: ``joint`` (the proximal joint) is held at ``held``
    (rad) from the DOF value ``at`` (rad) on, because ``link`` touched ``touched``."""

    at: float
    joint: str
    held: float
    link: str
    touched: tuple


@dataclass(frozen=True)
class DofStop:
    """Why a DOF stopped closing in a static auto-grasp.

    ``reason`` is 'contact' | 'limit' | 'not moving' | 'iterations' (as ``stopped_by``); ``value``
    the DOF where it stopped (rad or m; a broken-away DOF's value drives its distal joint).
    Contact: ``link`` touched ``touched`` (body names).  Limit: ``joint`` reached ``limit`` (rad or
    m; ``joint`` None: the DOF's own limit).  ``breakaway``: the clutch gave way earlier, and
    ``distal`` = (distal joint, its value) where the DOF stopped.
    """

    reason: str
    value: float
    link: str | None = None
    touched: tuple = ()
    joint: str | None = None
    limit: float | None = None
    breakaway: Breakaway | None = None
    distal: tuple | None = None


@dataclass(frozen=True)
class DofEnd:
    """How a closing DOF ended a dynamic grasp.

    ``state``: 'pressing' (still, the drive at its effort limit ``effort``: blocked by contact),
    'at target' (the reference reached its end and the DOF stopped there or at a limit), 'moving'
    (not still at the end), 'holding' (a DOF the auto-grasp does not close).  ``value`` (rad or m;
    a broken-away DOF reads its distal joint), ``target`` where its reference ends, ``speed`` (rad/s
    or m/s); ``breakaway`` when the clutch gave way (``at`` unknown: nan), with ``distal`` =
    (distal joint, its value).
    """

    state: str
    value: float
    target: float
    effort: float
    speed: float
    breakaway: Breakaway | None = None
    distal: tuple | None = None


def _revolute(robot, k: int) -> bool:
    return robot.joints[robot.dofs[k].joints[0]].kind == "revolute"


def dof_text(robot, k: int, value: float) -> str:
    """DOF ``k``'s value (rad or m) as '12.3 deg' or '25.1 mm'."""
    return f"{np.degrees(value):.1f} deg" if _revolute(robot, k) else f"{value * 1e3:.1f} mm"


def joint_text(robot, name: str, value: float) -> str:
    """Joint ``name``'s value (rad or m) as '12.3 deg' or '25.1 mm'."""
    j = robot.joints[robot.joint_index[name]]
    return f"{np.degrees(value):.1f} deg" if j.kind == "revolute" else f"{value * 1e3:.1f} mm"


def _touch(link: str, bodies) -> str:
    return f"{link} touched {', '.join(repr(b) for b in bodies) or 'another body'}"


def _clutch(robot, k: int, b: Breakaway) -> str:
    at = "" if not np.isfinite(b.at) else f" at {dof_text(robot, k, b.at)}"
    return f"clutch broke away{at} ({_touch(b.link, b.touched)}; {b.joint} held at {joint_text(robot, b.joint, b.held)})"


def _distal(robot, distal: tuple | None) -> str:
    return "" if distal is None else f" ({distal[0]} {joint_text(robot, distal[0], distal[1])})"


def describe_stop(robot, k: int, s: DofStop) -> str:
    """One line: why DOF ``k`` of ``robot`` (a model Robot) stopped in a static auto-grasp."""
    name = robot.dofs[k].name
    v = dof_text(robot, k, s.value)
    b = s.breakaway
    if s.reason == "not moving":
        return f"{name}: not moving (auto-grasp velocity 0), stays at {v}"
    if b is not None and s.reason == "contact" and b.at == s.value:
        # proximal and distal links touched in the same step: the clutch changed nothing
        return f"{name}: {b.link} and {_touch(s.link, sorted(set(b.touched) | set(s.touched)))} at {v}"
    pre = f"{name}: " + (_clutch(robot, k, b) + "; then " if b else "")
    if s.reason == "contact":
        return pre + f"{_touch(s.link, s.touched)} at {v}" + _distal(robot, s.distal)
    if s.reason == "limit":
        if s.joint is None:
            return pre + f"reached its limit {dof_text(robot, k, s.limit)}" + _distal(robot, s.distal)
        which = f"{s.joint} reached its limit {joint_text(robot, s.joint, s.limit)}"
        return pre + f"{which} at {name} {v}"
    return pre + f"still closing at {v} when the iterations ran out" + _distal(robot, s.distal)


def describe_end(robot, k: int, e: DofEnd) -> str:
    """One line: how DOF ``k`` of ``robot`` ended a dynamic grasp."""
    name = robot.dofs[k].name
    v = dof_text(robot, k, e.value) + _distal(robot, e.distal)
    unit = "N m" if _revolute(robot, k) else "N"
    pre = f"{name}: " + (_clutch(robot, k, e.breakaway) + "; " if e.breakaway else "")
    if e.state == "holding":
        return f"{name}: holds at {v} (auto-grasp velocity 0)"
    if e.state == "pressing":
        return pre + f"blocked at {v}, pressing with its effort limit {e.effort:g} {unit} (target {dof_text(robot, k, e.target)})"
    if e.state == "at target":
        return pre + f"at {v}, its target {dof_text(robot, k, e.target)}"
    rate = f"{np.degrees(e.speed):.1f} deg/s" if _revolute(robot, k) else f"{e.speed * 1e3:.1f} mm/s"
    return pre + f"still moving at {v} ({rate}; target {dof_text(robot, k, e.target)})"

"""What became of each candidate, in plain words.

Every result row falls in exactly one outcome; the run's closing line, the progress display and
``graspsim results summary`` all count by these, so their numbers always add up to the rows.
A static run succeeds with force closure; a dynamic run succeeds when the lift test held the
object.  Every other outcome is a failure, with its reason.
"""
from __future__ import annotations

from collections import Counter

__all__ = ["OUTCOMES", "outcome", "outcome_keys", "success_key", "count_outcomes"]

#: key -> (label, what it means)
OUTCOMES = {
    "force_closure": ("force closure", "the hand closed on the object and its contacts can resist any "
                                       "disturbing force and torque"),
    "held": ("held", "the lift test lifted the object with the hand, without dropping it or letting it slip"),
    "no_force_closure": ("no force closure", "the hand closed on the object, but its contacts cannot resist "
                                             "every disturbing force and torque"),
    "not_held": ("not held", "in the lift test the object dropped, rose less than 80 % of the lift, or "
                             "slipped 1 cm or more in the hand"),
    "no_contact": ("no contact", "the hand closed without touching the object"),
    "pregrasp_collision": ("pre-grasp collision", "the open hand already overlapped another body at its start "
                                                  "pose, so the grasp was not attempted"),
    "error": ("error", "the evaluation raised an error"),
}


def success_key(dynamic: bool) -> str:
    """The outcome that counts as success."""
    return "held" if dynamic else "force_closure"


def outcome_keys(dynamic: bool) -> list[str]:
    """The outcomes of a static or dynamic run, success first."""
    if dynamic:
        return ["held", "not_held", "pregrasp_collision", "error"]
    return ["force_closure", "no_force_closure", "no_contact", "pregrasp_collision", "error"]


def outcome(row: dict, dynamic: bool) -> str:
    """The outcome of one result row (needs ``status``, ``force_closure``, ``n_contacts``, ``held``)."""
    st = row.get("status")
    if st == "pregrasp_collision":
        return "pregrasp_collision"
    if st != "ok":
        return "error"
    if dynamic:
        return "held" if row.get("held") else "not_held"
    if row.get("force_closure"):
        return "force_closure"
    return "no_force_closure" if row.get("n_contacts") else "no_contact"


def count_outcomes(rows, dynamic: bool) -> Counter:
    """Rows per outcome key."""
    return Counter(outcome(r, dynamic) for r in rows)

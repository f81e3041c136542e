"""Constraint rows: each row is a linear function of the velocities of up to four bodies.

A :class:`Rows` block holds ``bodies (r, K)`` (dynamic slots, -1 = none/static) and ``jac (r, K, 6)``
so that the row's value is ``sum_k jac[r, k] . v[bodies[r, k]]`` with ``v = [v_com; omega]`` in W.
Joints, joint limits, contacts and drives all produce rows in this one form, so islands and the
dense assembly of the LCP (eq. 18-21) treat them alike.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Rows:
    bodies: np.ndarray   # (r, K) int, dynamic body slots or -1
    jac: np.ndarray      # (r, K, 6)
    rhs: np.ndarray      # (r,) target value of the row (equality) or bias (inequality)
    comp: np.ndarray | None = None   # (r,) compliance of soft equality rows (None: all hard)
    #: (r,) the row's value due to moving static (kinematic) bodies, e.g. a palm lifted along a
    #: prescribed path: the row reads J v_dynamic + const (None: no kinematic body involved)
    const: np.ndarray | None = None

    def constant(self) -> np.ndarray:
        return np.zeros(len(self.rhs)) if self.const is None else self.const

    def compliance(self) -> np.ndarray:
        return np.zeros(len(self.rhs)) if self.comp is None else self.comp

    def __len__(self) -> int:
        return len(self.rhs)

    @staticmethod
    def empty(K: int = 2) -> "Rows":
        return Rows(np.zeros((0, K), dtype=np.int64), np.zeros((0, K, 6)), np.zeros(0))

    @staticmethod
    def concat(blocks: list["Rows"]) -> "Rows":
        blocks = [b for b in blocks if len(b.rhs)]
        if not blocks:
            return Rows.empty()
        if len(blocks) == 1:    # a new Rows (callers reassign rhs), sharing the arrays
            b = blocks[0]
            return Rows(b.bodies, b.jac, b.rhs, b.comp, b.const)
        K = max(b.bodies.shape[1] for b in blocks)
        n = sum(len(b.rhs) for b in blocks)
        bodies = np.full((n, K), -1, dtype=np.int64)
        jac = np.zeros((n, K, 6))
        rhs = np.empty(n)
        has_comp = any(b.comp is not None for b in blocks)
        has_const = any(b.const is not None for b in blocks)
        comp = np.zeros(n) if has_comp else None
        const = np.zeros(n) if has_const else None
        r = 0
        for b in blocks:
            m, k = b.bodies.shape
            bodies[r:r + m, :k] = b.bodies
            jac[r:r + m, :k] = b.jac
            rhs[r:r + m] = b.rhs
            if b.comp is not None:
                comp[r:r + m] = b.comp
            if b.const is not None:
                const[r:r + m] = b.const
            r += m
        return Rows(bodies, jac, rhs, comp, const)

    def select(self, mask_or_idx) -> "Rows":
        return Rows(self.bodies[mask_or_idx], self.jac[mask_or_idx], self.rhs[mask_or_idx],
                    None if self.comp is None else self.comp[mask_or_idx],
                    None if self.const is None else self.const[mask_or_idx])

    def dense(self, slots: np.ndarray, nb_total: int) -> np.ndarray:
        """Dense matrix (6 * len(slots), r): column r is row r's Jacobian over the island's bodies.

        ``slots`` are the island's dynamic body slots in order; ``nb_total`` the number of slots.
        """
        local = -np.ones(nb_total + 1, dtype=np.int64)   # index nb_total stands for -1 (static)
        local[slots] = np.arange(len(slots))
        r = len(self)
        out = np.zeros((len(slots), 6, r))
        cols = np.arange(r)
        for k in range(self.bodies.shape[1]):
            b = self.bodies[:, k]
            lb = local[np.where(b < 0, nb_total, b)]
            ok = lb >= 0
            np.add.at(out, (lb[ok], slice(None), cols[ok]), self.jac[ok, k, :])
        return out.reshape(6 * len(slots), r)


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross product of (..., 3) arrays (np.cross spends most of its time on axis handling)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def linear_row(direction: np.ndarray, point: np.ndarray, com: np.ndarray) -> np.ndarray:
    """(r, 6) rows giving the velocity along ``direction`` of the body point ``point`` (com ``com``).

    d . (v + omega x (p - c)) = [d, (p - c) x d] . [v, omega].
    """
    out = np.empty((len(direction), 6))
    out[:, :3] = direction
    out[:, 3:] = cross(point - com, direction)
    return out


def angular_row(direction: np.ndarray) -> np.ndarray:
    """(r, 6) rows giving the angular velocity component along ``direction``."""
    out = np.zeros((len(direction), 6))
    out[:, 3:] = direction
    return out

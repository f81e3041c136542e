"""Dynamic bodies: the state arrays, mass matrices and pose integration (Miller & Christensen eq. 10-12).

Each dynamic body's state is the position ``c`` of its centre of mass (W), the unit quaternion
``q = (w, x, y, z)`` of its body axes (the link/object frame axes) and the generalised velocity
``v = [linear velocity of the com; angular velocity]``, both in W.  All functions are vectorised
over bodies.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import spatial
from ..model.bodies import BodyTable


@dataclass(frozen=True, eq=False)
class DynamicBodies:
    """Which bodies of a :class:`BodyTable` move, and their constant mass properties."""

    table_index: np.ndarray     # (nb,) index into the body table
    slot: np.ndarray            # (N,) table index -> dynamic slot, -1 for static bodies
    mass: np.ndarray            # (nb,)
    com_L: np.ndarray           # (nb, 3) com in the body frame
    inertia_L: np.ndarray       # (nb, 3, 3) about the com, body axes

    @classmethod
    def from_table(cls, table: BodyTable) -> "DynamicBodies":
        """The dynamic bodies of ``table``; ValueError naming the body when a mass is not finite and
        > 0 (kg), a com not finite (m) or an inertia not finite, symmetric and positive definite
        (kg m^2): the step divides by them."""
        idx = np.flatnonzero(table.dynamic)
        slot = -np.ones(len(table), dtype=np.int64)
        slot[idx] = np.arange(len(idx))
        out = cls(idx, slot, np.array(table.mass[idx], dtype=float), np.array(table.com[idx], dtype=float),
                  np.array(table.inertia[idx], dtype=float))
        out._check(table.names)
        return out

    def _check(self, names) -> None:
        m, c, I = self.mass, self.com_L, self.inertia_L
        ok = np.isfinite(m) & (m > 0) & np.isfinite(c).all(axis=1) & np.isfinite(I).all(axis=(1, 2))
        # symmetric to rounding, then positive definite: the smallest eigenvalue > 0
        ok &= np.abs(I - I.transpose(0, 2, 1)).max(axis=(1, 2)) <= 1e-9 * np.abs(I).max(axis=(1, 2))
        if ok.any():
            ok[ok] = np.linalg.eigvalsh(I[ok])[:, 0] > 0
        if ok.all():
            return
        k = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"dynamic body '{names[self.table_index[k]]}': mass must be finite and > 0 (kg), com finite "
                         f"and inertia finite, symmetric and positive definite; got mass {m[k]!r}, com "
                         f"{c[k].tolist()}, inertia {I[k].tolist()}")

    def __len__(self) -> int:
        return len(self.table_index)


def integrate_poses(c: np.ndarray, q: np.ndarray, v: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """Steps 1-2: ``pose^{l+1} = pose^l + h G v^l`` with G = [[I, 0], [0, B R^T]] (eq. 11-12), renormalised.

    ``c`` (nb, 3) com positions, ``q`` (nb, 4) quaternions, ``v`` (nb, 6) [v; omega] in W.
    """
    R = spatial.quat_to_matrix(q)
    wb = np.einsum("nji,nj->ni", R, v[:, 3:])                  # R^T omega
    w, x, y, z = q.T
    # q_dot = B(q) omega_body, B the 4x3 matrix of eq. (10) (spatial.euler_parameter_rate_matrix)
    qdot = 0.5 * np.stack([-x * wb[:, 0] - y * wb[:, 1] - z * wb[:, 2],
                           w * wb[:, 0] - z * wb[:, 1] + y * wb[:, 2],
                           z * wb[:, 0] + w * wb[:, 1] - x * wb[:, 2],
                           -y * wb[:, 0] + x * wb[:, 1] + w * wb[:, 2]], 1)
    q_new = q + h * qdot
    q_new /= np.linalg.norm(q_new, axis=1, keepdims=True)
    return c + h * v[:, :3], q_new


def world_inertia(R: np.ndarray, inertia_L: np.ndarray) -> np.ndarray:
    """(nb, 3, 3) inertia about the com in W: R I R^T."""
    return np.einsum("nij,njk,nlk->nil", R, inertia_L, R)


def link_poses(c: np.ndarray, R: np.ndarray, com_L: np.ndarray) -> np.ndarray:
    """(nb, 4, 4) body-frame poses X_WL from com positions and orientations."""
    X = np.zeros((len(c), 4, 4))
    X[:, :3, :3] = R
    X[:, :3, 3] = c - np.einsum("nij,nj->ni", R, com_L)
    X[:, 3, 3] = 1.0
    return X

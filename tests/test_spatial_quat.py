"""The package's one numpy quaternion <-> matrix conversion (graspsim.spatial), single and stacked."""
from __future__ import annotations

import numpy as np

from graspsim import spatial


def _unit_quats(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    q = rng.standard_normal(shape + (4,))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def test_quat_to_matrix_stacked_equals_single_and_is_a_rotation():
    q = _unit_quats(np.random.default_rng(0), (2, 5))
    R = spatial.quat_to_matrix(q)
    assert R.shape == (2, 5, 3, 3)
    for i in range(2):
        for j in range(5):
            assert np.array_equal(R[i, j], spatial.quat_to_matrix(q[i, j]))       # same arithmetic
    RRt = np.einsum("...ij,...kj->...ik", R, R)
    assert np.abs(RRt - np.eye(3)).max() < 1e-15 * 8
    assert np.abs(np.linalg.det(R) - 1.0).max() < 1e-14
    # closed form: the quaternion (cos a/2, sin a/2 e_z) turns by a about z
    a = 0.7
    Rz = spatial.quat_to_matrix([np.cos(a / 2), 0.0, 0.0, np.sin(a / 2)])
    assert np.allclose(Rz, [[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]], atol=1e-15)


def test_matrix_to_quat_inverts_quat_to_matrix_single_and_stacked():
    q = _unit_quats(np.random.default_rng(1), (40,))
    q[q[:, 0] < 0] *= -1.0                        # the w >= 0 representative
    q[0] = [0.0, 1.0, 0.0, 0.0]                   # a half turn: every branch of Shepperd's method
    q[1] = [0.0, 0.0, 1.0, 0.0]
    q[2] = [0.0, 0.0, 0.0, 1.0]
    R = spatial.quat_to_matrix(q)
    back = spatial.matrix_to_quat(R)
    assert back.shape == (40, 4)
    assert np.abs(back - q).max() < 1e-14
    assert np.array_equal(back[7], spatial.matrix_to_quat(R[7]))
    assert spatial.matrix_to_quat(R.reshape(4, 10, 3, 3)).shape == (4, 10, 4)

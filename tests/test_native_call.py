"""graspsim._native: a kernel calling another through its machine-code address (issue 18).

What must hold for a fused step built on it: the callee computes what it computes when Python calls
it (bit for bit), its exceptions reach Python as themselves, returned arrays are the caller's, and
the caller's compiled code contains no copy of the callee (so fusing costs no second compile)."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from graspsim._native import call_native, native_entry, native_entry_types, register
from graspsim.dynamics import _rows_kernel as RK


def _mass_args(m0: float = 1.5):
    """Two bodies: masses, body-frame inertias, orientations (w, x, y, z), twists, wrenches, h
    (fresh arrays: mass_terms adds the gyroscopic torque to the wrenches in place)."""
    rng = np.random.default_rng(3)
    q = rng.normal(size=(2, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    A = rng.normal(size=(2, 3, 3))
    inertia = np.einsum("kij,klj->kil", A, A) + np.eye(3)           # symmetric positive definite
    return (np.array([m0, 2.0]), inertia, q, rng.normal(size=(2, 6)), rng.normal(size=(2, 6)), 0.0025)


ARGS = _mass_args()
ADDR, RESTYPE = native_entry(RK.mass_terms, ARGS)


@njit(cache=False)
def _through(addr, m, inertia, q, v, k, h):
    return call_native(addr, RESTYPE, m, inertia, q, v, k, h)


def test_native_call_computes_what_the_kernel_computes():
    direct = RK.mass_terms(*_mass_args())
    native = _through(ADDR, *_mass_args())
    assert len(native) == len(direct) == 3
    for a, b in zip(native, direct):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b)                                  # bit for bit
    assert np.array_equal(native[2], _through(ADDR, *_mass_args())[2])     # the same again
    # and what mass_terms means: the block inverse mass of body 0 is diag(1/m I, I_W^-1)
    R0 = _rotation(ARGS[2][0])
    I_W = R0 @ ARGS[1][0] @ R0.T
    Minv0 = native[1][0]
    assert np.allclose(Minv0[:3, :3], np.eye(3) / ARGS[0][0], rtol=1e-15, atol=0)
    assert np.allclose(Minv0[3:, 3:], np.linalg.inv(I_W), rtol=1e-12, atol=1e-14)


def _rotation(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def test_returned_arrays_belong_to_the_caller():
    out = [_through(ADDR, *_mass_args()) for _ in range(200)]     # numba's reference counts: no reuse, no leak
    first = out[0][1].copy()
    out[1][1][:] = 0.0                                   # writing one result leaves the others alone
    assert np.array_equal(out[0][1], first) and np.array_equal(out[199][1], first)


def test_the_callees_exception_reaches_python():
    bad = _mass_args(m0=0.0)                             # 1 / mass: numba raises ZeroDivisionError
    with pytest.raises(ZeroDivisionError):
        RK.mass_terms(*bad)
    with pytest.raises(ZeroDivisionError):
        _through(ADDR, *bad)
    assert np.array_equal(_through(ADDR, *_mass_args())[2], RK.mass_terms(*_mass_args())[2])   # still works


def test_the_caller_holds_no_copy_of_the_callee():
    (ir,) = _through.inspect_llvm().values()
    defined = [ln for ln in ir.splitlines() if ln.startswith("define")]
    assert not any("mass_terms" in ln for ln in defined)
    assert "inttoptr" in ir                              # the call goes through the address


def test_native_entry_refuses_what_has_no_machine_code():
    with pytest.raises(ValueError, match="no machine code"):
        native_entry(RK._find, (np.zeros(3, np.int64), 0))           # a link-only helper


register("tests.mass_terms", RK.mass_terms)


@njit(cache=False)
def _by_name(addr, m, inertia, q, v, k, h):
    # the return type from the registered kernel's own compile for these argument types
    return call_native(addr, "tests.mass_terms", m, inertia, q, v, k, h)


def test_a_registered_kernel_is_called_by_name():
    from numba import typeof

    addr, restype = native_entry_types(RK.mass_terms, [typeof(a) for a in _mass_args()])
    assert addr == ADDR and restype == RESTYPE       # one compiled kernel, one address
    for a, b in zip(_by_name(addr, *_mass_args()), RK.mass_terms(*_mass_args())):
        assert np.array_equal(a, b)

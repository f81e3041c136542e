"""Arrays returned by kernels are boxed with their Python class read from the kernel's environment
(graspsim._box_arrays): the same arrays as numba's own boxing gives, without its run-time
unpickling and its reference leak on ``numpy.ndarray``."""
from __future__ import annotations

import sys

import numba
import numpy as np
import pytest
from numba.core import pythonapi, types

from graspsim import _box_arrays, _jit  # noqa: F401  (_jit installs the boxing)
from graspsim.dynamics import _rows_kernel as RK

pytestmark = pytest.mark.skipif(not _box_arrays.ACTIVE, reason="boxing patch not installed for this numba")


def _outputs(x, ro):
    return x.copy(), x[::2], x.T, x, ro[1:], np.zeros((0, 3)), (x > 0.5)


def _compiled(original: bool):
    """A fresh compile of ``_outputs`` with numba's boxing (``original``) or graspsim's, for a C
    float (2-d) array and a read-only 1-d one (other argument types would compile anew)."""
    reg = pythonapi._boxers.functions
    if original:
        reg[types.Array] = _box_arrays._orig_box_array
    try:
        f = numba.njit(cache=False)(_outputs)
        x = np.zeros((2, 2))
        ro = np.zeros(3)
        ro.setflags(write=False)
        f(x, ro)                                  # compiled now, with the boxing in force
        return f
    finally:
        reg[types.Array] = _box_arrays._box_array


def test_boxed_arrays_are_numbas_own():
    """Class, dtype, shape, strides, flags, values, and the input itself returned as itself."""
    rng = np.random.default_rng(3)
    x = rng.random((5, 4))
    ro = rng.random(6)
    ro.setflags(write=False)
    new, old = _compiled(False)(x, ro), _compiled(True)(x, ro)
    assert len(new) == len(old) == 7
    for a, b in zip(new, old):
        assert type(a) is type(b) is np.ndarray
        assert a.dtype == b.dtype and a.shape == b.shape and a.strides == b.strides
        assert a.flags.writeable == b.flags.writeable and a.flags.c_contiguous == b.flags.c_contiguous
        assert a.flags.f_contiguous == b.flags.f_contiguous and a.flags.owndata == b.flags.owndata
        assert np.array_equal(a, b)
    assert new[3] is x                          # a returned argument is the caller's object
    assert not new[4].flags.writeable           # a view of a read-only array stays read-only
    assert np.shares_memory(new[1], x) and not np.shares_memory(new[0], x)     # a view stays a view


def test_boxing_keeps_no_reference_to_the_array_class():
    """numba's boxing leaked one reference to ``numpy.ndarray`` per returned array; a kernel of the
    step returning an array 20,000 times now leaves the count where it was."""
    q = np.array([[1.0, 0.0, 0.0, 0.0]])
    RK.rotations(q)
    before = sys.getrefcount(np.ndarray)
    for _ in range(20000):
        RK.rotations(q)
    assert sys.getrefcount(np.ndarray) - before < 100
    old = _compiled(True)
    x, ro = np.zeros((2, 2)), np.zeros(3)
    ro.setflags(write=False)                    # the argument types it was compiled for
    before = sys.getrefcount(np.ndarray)
    for _ in range(1000):
        old(x, ro)
    assert sys.getrefcount(np.ndarray) - before >= 6000     # numba's: one per boxed array (6 per call)

"""Returned arrays boxed without unpickling their Python type (issue 18: the step's per-call cost).

When a compiled kernel returns an array to Python, numba wraps its buffer in an ``ndarray`` of the
array type's Python class (``box_type``).  numba 0.68 embeds that class in the kernel *pickled*, and
every boxing unpickles it at run time: the kernel calls back into Python (``numba_unpickle`` makes
two bytes objects and an int, then ``serialize._numba_unpickle`` looks the class up in a memo
dict) and the reference it returns is never released.  A step returns some 40 arrays from its
kernels: ~0.2 us each, 5-8 us per step (and a reference count on ``numpy.ndarray`` that grows by
one per array).

Here the class is a constant of the kernel's environment instead, as numba already does for the
array's dtype in the same function: the boxing reads it from the environment's constants (a list
item) and passes it on; ``NRT_adapt_ndarray_to_python_acqref`` does not keep the reference.  The
boxed array is the same object in every other respect (class, dtype, shape, strides, flags, owner).

Only the machine code of the boxing changes, so it applies to kernels compiled after
:func:`install`; kernels loaded from an older cache box as before (the cache directory is keyed by
this file too, see ``graspsim/__init__.py``).  Installed with the numba version it was checked
against only (:data:`graspsim._link_only.TESTED_NUMBA`).
"""
from __future__ import annotations

import numba
from llvmlite import ir
from numba.core import boxing, cgutils, pythonapi, types
from numba.np import numpy_support

ACTIVE = False
_orig_box_array = boxing.box_array


def _box_array(typ, val, c):
    """``numba.core.boxing.box_array`` with the array's Python class read from the environment."""
    if not c.context.enable_nrt:
        return _orig_box_array(typ, val, c)
    env = c.env_manager
    dtypeptr = env.read_const(env.add_const(numpy_support.as_dtype(typ.dtype)))
    pytype = env.read_const(env.add_const(typ.box_type))          # borrowed: not released
    api = c.pyapi
    i32 = ir.IntType(32)
    fnty = ir.FunctionType(api.pyobj, [api.voidptr, api.pyobj, i32, i32, api.pyobj])
    fn = api._get_function(fnty, name="NRT_adapt_ndarray_to_python_acqref")
    ndim = c.context.get_constant(types.int32, typ.ndim)
    writable = c.context.get_constant(types.int32, int(typ.mutable))
    aryptr = cgutils.alloca_once_value(c.builder, val)
    out = c.builder.call(fn, [c.builder.bitcast(aryptr, api.voidptr), pytype, ndim, writable, dtypeptr])
    c.context.nrt.decref(c.builder, typ, val)       # the boxed array acquired its own reference
    return out


def install() -> None:
    """Register the boxing above for arrays (once; nothing with an untested numba)."""
    global ACTIVE
    from ._link_only import TESTED_NUMBA

    if ACTIVE or not numba.__version__.startswith(TESTED_NUMBA):
        return
    if pythonapi._boxers.functions.get(types.Array) is not _orig_box_array:
        return          # someone else's boxing: leave it
    pythonapi._boxers.functions[types.Array] = _box_array
    ACTIVE = True

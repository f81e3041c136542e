"""Borrowed arrays: a kernel's view of arrays its caller owns, without reference counting (issue 18).

numba counts references to every array a compiled function holds: an argument is counted up when
the function starts and down when it ends, an array taken out of a tuple likewise.  Each count is a
call of ``NRT_incref`` / ``NRT_decref`` and an atomic add on the array's owner (its meminfo).  The
narrow phase passes the collision model's 29-array geometry tuple ``P`` to every helper, several
helpers deep, for every shape pair: in the Barrett's hold of the mug, over half of the loop's
reference counts (and a third of its time was reference counting; ``benchmarks/profile_compiled.py``).

``borrow(x)`` returns ``x`` (an array, or a tuple of arrays and scalars, nested) with every array's
owner and parent set to null: the same data, shape, strides and numba type, so the functions it is
passed to are the same compiled code, but counting a reference to it is a null test in
``NRT_incref``, no atomic add.  The caller must own the arrays for as long as the borrowed ones live
and must not let one leave the kernel (returned to Python or stored in a returned value: numba would
box it as an array without an owner).  So a kernel borrows only what it reads or fills in place, at
its start, and returns its own arrays.
"""
from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["borrow"]


def _borrowed(context, builder, ty, val):
    """The array struct ``val`` of type ``ty`` with a null meminfo and parent."""
    src = context.make_array(ty)(context, builder, value=val)
    dst = context.make_array(ty)(context, builder)
    dst.meminfo = cgutils.get_null_value(dst.meminfo.type)
    dst.parent = cgutils.get_null_value(dst.parent.type)
    dst.nitems = src.nitems
    dst.itemsize = src.itemsize
    dst.data = src.data
    dst.shape = src.shape
    dst.strides = src.strides
    return dst._getvalue()


def _borrow_value(context, builder, ty, val):
    if isinstance(ty, types.Array):
        return _borrowed(context, builder, ty, val)
    if isinstance(ty, types.BaseTuple):
        vals = [_borrow_value(context, builder, t, builder.extract_value(val, i)) for i, t in enumerate(ty.types)]
        return context.make_tuple(builder, ty, vals)
    return val                                  # a number, a bool, None: nothing to count


def _borrowable(ty) -> bool:
    if isinstance(ty, types.Array):
        return True
    if isinstance(ty, types.BaseTuple):
        return all(_borrowable(t) for t in ty.types)
    return isinstance(ty, (types.Number, types.Boolean, types.NoneType, types.Omitted))


@intrinsic
def borrow(typingctx, x):
    """``x`` (an array, or a tuple of arrays and scalars, nested) with no owner: see the module."""
    if not _borrowable(x):
        return None

    def codegen(context, builder, sig, args):
        return _borrow_value(context, builder, x, args[0])

    return x(x), codegen

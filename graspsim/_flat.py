"""Flat arguments: many constant arrays passed to a compiled function as three tables (issue 18).

numba's dispatcher types and unboxes every array of every call: about 130 ns per array, so the
compiled loop's ~170 constant arrays and numbers (the model's arrays, the collision geometry's
29-array tuple, the solver's settings, the kernels' addresses) cost ~25 us per call, more than a
whole step of PyBullet.  :func:`flatten` turns such a nested tuple, once, into

* a :class:`FlatSpec` -- the tuple's structure (numba types of its leaves) as text, whose numba
  type carries that text: typing it is a lookup in numba's C dispatcher, unboxing it is nothing;
* ``ints`` (int64): each array's data address, each int and bool;
* ``shapes`` (int64): each array's shape, concatenated;
* ``floats`` (float64): each float,

and :func:`unflatten`, inside compiled code, rebuilds the tuple: the same arrays (data, shape,
C-contiguous strides, numba type) with no owner, as :func:`graspsim._borrow.borrow` gives them.  The
functions they are passed to are the same compiled code as with the tuple itself.  The caller keeps
the flattened arrays alive (:class:`Flat` holds them) and must not let a rebuilt array leave the
kernel (numba would box it without an owner).  Arrays written in place between calls are seen (the
same memory); an array replaced by another needs a new :func:`flatten`.

Only C-contiguous, writeable, aligned arrays of float64, int64 or bool are flattened (the types
numba gives them are then known from dtype and dimensions); anything else makes :func:`flatten`
return None and the caller passes the tuple as it is.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import NativeValue, intrinsic, models, register_model, typeof_impl, unbox

__all__ = ["Flat", "FlatSpec", "flatten", "unflatten"]

_CODES = {np.dtype(np.float64): "f", np.dtype(np.int64): "i", np.dtype(np.bool_): "b"}
_DTYPES = {"f": types.float64, "i": types.int64, "b": types.boolean}


class FlatSpecType(types.Type):
    """The numba type of a :class:`FlatSpec`: its structure text is part of the type."""

    def __init__(self, text: str):
        self.text = text
        super().__init__(name=f"FlatSpec({text})")


register_model(FlatSpecType)(models.OpaqueModel)


class FlatSpec:
    """A flattened tuple's structure: ``text`` (leaves ``f2`` -- a float64 array of 2 dimensions,
    ``i1``, ``b1``, ..., ``F`` float, ``I`` int, ``B`` bool, ``N`` None; tuples in parentheses)."""

    __slots__ = ("text", "numba_type", "_numba_type_")

    def __init__(self, text: str):
        self.text = text
        self.numba_type = FlatSpecType(text)
        # (numba's dispatcher reads an object's ``_numba_type_`` attribute in C, and the type's own
        # code, each call; without it, every call types the spec in Python: ~1.4 us more)
        self._numba_type_ = self.numba_type

    def __reduce__(self):
        return FlatSpec, (self.text,)


@typeof_impl.register(FlatSpec)
def _typeof_spec(val, c):
    return val.numba_type


@unbox(FlatSpecType)
def _unbox_spec(typ, obj, c):
    return NativeValue(c.context.get_constant_null(typ))


class Flat:
    """:func:`flatten`'s result: ``args`` = (spec, ints, shapes, floats), the arguments of
    :func:`unflatten`; ``tree`` the flattened tuple (kept: its arrays must outlive the tables)."""

    __slots__ = ("args", "tree")

    def __init__(self, args: tuple, tree):
        self.args, self.tree = args, tree


def flatten(tree) -> Flat | None:
    """The tables of ``tree`` (a nested tuple of arrays and numbers), or None when a leaf cannot be
    flattened (an array that is not C-contiguous, writeable and aligned float64/int64/bool data,
    or another kind of value)."""
    ints: list[int] = []
    shapes: list[int] = []
    floats: list[float] = []

    def walk(x) -> str | None:
        if type(x) is tuple:
            parts = [walk(y) for y in x]
            return None if None in parts else "(" + ",".join(parts) + ")"
        if type(x) is np.ndarray:
            code = _CODES.get(x.dtype)
            f = x.flags
            if code is None or x.ndim < 1 or not (f.c_contiguous and f.writeable and f.aligned):
                return None
            ints.append(x.ctypes.data)
            shapes.extend(x.shape)
            return f"{code}{x.ndim}"
        # (numbers whose numba type is boolean, int64, float64 only: another width would give the
        # rebuilt tuple another type than the tuple's own)
        t = type(x)
        if t is bool or t is np.bool_:
            ints.append(int(x))
            return "B"
        if t is int or t is np.int64:
            if not -2**63 <= x < 2**63:
                return None
            ints.append(int(x))
            return "I"
        if t is float or t is np.float64:
            floats.append(float(x))
            return "F"
        if x is None:
            return "N"
        return None

    text = walk(tree)
    if text is None:
        return None
    args = (FlatSpec(text), np.array(ints, np.int64), np.array(shapes, np.int64), np.array(floats, np.float64))
    return Flat(args, tree)


@lru_cache(maxsize=None)
def _parse(text: str):
    """The structure as nested tuples of leaf codes."""
    pos = 0

    def item():
        nonlocal pos
        if text[pos] == "(":
            pos += 1
            out = []
            while text[pos] != ")":
                out.append(item())
                if text[pos] == ",":
                    pos += 1
            pos += 1
            return tuple(out)
        end = pos
        while end < len(text) and text[end] not in ",)":
            end += 1
        tok, pos = text[pos:end], end
        return tok

    return item()


def _numba_type(node):
    if isinstance(node, tuple):
        return types.Tuple([_numba_type(x) for x in node])
    if node == "F":
        return types.float64
    if node == "I":
        return types.int64
    if node == "B":
        return types.boolean
    if node == "N":
        return types.none
    return types.Array(_DTYPES[node[0]], int(node[1:]), "C")


@intrinsic
def unflatten(typingctx, spec, ints, shapes, floats):
    """The tuple :func:`flatten` flattened, from its four tables (see the module)."""
    if not isinstance(spec, FlatSpecType):
        return None
    tree = _parse(spec.text)
    ret = _numba_type(tree)

    def codegen(context, builder, sig, args):
        _, iv, sv, fv = args
        idata = context.make_array(sig.args[1])(context, builder, iv).data
        sdata = context.make_array(sig.args[2])(context, builder, sv).data
        fdata = context.make_array(sig.args[3])(context, builder, fv).data
        at = [0, 0, 0]          # next ints, shapes, floats entry (compile-time counters)

        def load(data, k):
            return builder.load(builder.gep(data, [context.get_constant(types.intp, k)]))

        def build(node, ty):
            if isinstance(node, tuple):
                return context.make_tuple(builder, ty, [build(n, t) for n, t in zip(node, ty.types)])
            if node == "F":
                at[2] += 1
                return load(fdata, at[2] - 1)
            if node in ("I", "B"):
                at[0] += 1
                v = load(idata, at[0] - 1)
                return v if node == "I" else builder.icmp_signed("!=", v, context.get_constant(types.int64, 0))
            if node == "N":
                return context.get_dummy_value()
            ary = context.make_array(ty)(context, builder)
            llty = context.get_data_type(ty.dtype)
            at[0] += 1
            data = builder.inttoptr(load(idata, at[0] - 1), llty.as_pointer())
            shape = [load(sdata, at[1] + d) for d in range(ty.ndim)]
            at[1] += ty.ndim
            itemsize = context.get_constant(types.intp, context.get_abi_sizeof(llty))
            strides = [itemsize] * ty.ndim
            for d in range(ty.ndim - 2, -1, -1):      # C order
                strides[d] = builder.mul(strides[d + 1], shape[d + 1])
            context.populate_array(ary, data=data, shape=cgutils.pack_array(builder, shape),
                                   strides=cgutils.pack_array(builder, strides), itemsize=itemsize, meminfo=None)
            return ary._getvalue()

        return build(tree, ret)

    return ret(spec, ints, shapes, floats), codegen

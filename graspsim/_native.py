"""One kernel calling another through its machine-code address: fusing kernels without compiling
them again (issue 18, "one compiled call per step").

A kernel that calls another kernel the usual way links the callee's code into its own module, and
numba optimises and code-generates the whole again: a wrapper ``@njit`` around the five kernels of
steps 5-10 took 11.7 s of compile CPU with every callee already cached (docs/dynamics_performance.md,
tenth pass).  Called through :func:`call_native` instead, the callee stays what it is (compiled once,
cached, shared with Python's calls) and the caller compiles only its own code: an indirect call
with numba's own calling convention, so a callee's exception (the kernels' ZeroDivisionError on a
blow-up, for one) reaches the caller's caller as it would through a linked call, and returned
arrays are owned by the caller as usual.

    addr, RESTYPE = native_entry(kernel, args)     # in Python, once: kernel compiled for args' types
    ...
    @njit
    def fused(addr, ...):                           # RESTYPE a global: a compile-time constant
        out = call_native(addr, RESTYPE, a, b, c)   # same argument types as ``args``

The address is that of the callee's code in this process, so it is an argument, never a global
(numba freezes globals into a cached kernel).  The return type is best a global (a compile-time
constant; numba types a type object passed as an argument in Python, microseconds per call) or the
name of a :func:`register`-ed kernel, whose return type the caller's compile then asks the kernel
for.  A wrong address or argument types segfault, so the address is only ever taken from
:func:`native_entry` for the argument types it will be called with; array layouts may differ (C
where the kernel was compiled for 'A': the same structure in numba's data model).
"""
from __future__ import annotations

from numba import typeof, types
from numba.core import cgutils
from numba.core.typing import signature
from numba.extending import intrinsic

__all__ = ["available", "call_native", "native_entry", "native_entry_types", "register", "return_type"]

#: kernels callable by name in call_native (name -> public kernel), see :func:`register`
_KERNELS: dict = {}


def register(name: str, kernel) -> None:
    """Make ``kernel`` (a public graspsim kernel) callable as ``call_native(addr, name, args)``: the
    return type then comes from the kernel's own compile for the arguments' types."""
    _KERNELS[name] = kernel


def _overload(kernel, sig: tuple):
    """The compile result of ``kernel`` that takes arguments of types ``sig`` (compiled first if
    need be), or None."""
    for _ in range(2):
        for key, cres in kernel.overloads.items():
            if len(key) == len(sig) and all(_same_structure(a, b) for a, b in zip(sig, key)):
                return cres
        kernel.compile(sig)
    return None


def return_type(name: str, sig: tuple) -> types.Type:
    """The return type of the registered kernel ``name`` for arguments of types ``sig``."""
    cres = _overload(_KERNELS[name], tuple(sig))
    if cres is None:
        raise TypeError(f"kernel '{name}' does not take arguments of types {sig}")
    return cres.signature.return_type


@intrinsic
def call_native(typingctx, addr, restype, *args):
    """``call_native(addr, restype, arg, ...)``: call the kernel compiled at ``addr`` (int64, from
    :func:`native_entry`) with these arguments; returns a value of ``restype``: the type
    :func:`native_entry` returned, or the name of a :func:`register`-ed kernel (a string literal).
    Exceptions of the callee propagate.  The arguments are passed as they are, not packed in a tuple
    first: a tuple of arrays costs a reference count up and down per array per call (~15 ns each,
    hundreds of arrays per step in the compiled loop)."""
    args = types.StarArgTuple.from_types(args)
    if not isinstance(addr, types.Integer):
        return None
    if isinstance(restype, types.StringLiteral):
        rt = return_type(restype.literal_value, tuple(args.types))
    elif isinstance(restype, types.TypeRef):
        rt = restype.instance_type
    else:
        return None

    def codegen(context, builder, sig, llargs):
        argtys = tuple(args.types)
        vals = [builder.extract_value(llargs[2], i) for i in range(len(argtys))]
        fnty = context.call_conv.get_function_type(rt, argtys)
        fptr = builder.inttoptr(llargs[0], fnty.as_pointer())
        status, res = context.call_conv.call_function(builder, fptr, rt, argtys, vals)
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        return res

    return signature(rt, addr, restype, args), codegen


def _same_structure(have, want) -> bool:
    """Argument types whose values have the same machine representation (array layouts aside)."""
    if have == want:
        return True
    return (isinstance(have, types.Array) and isinstance(want, types.Array) and have.dtype == want.dtype
            and have.ndim == want.ndim)


def available(kernel, sig: tuple) -> bool:
    """Can ``kernel`` run on arguments of the numba types ``sig`` without compiling: compiled in this
    process, or in numba's disk cache (loaded then)."""
    sig = tuple(sig)
    if sig in kernel.overloads:
        return True
    if kernel._cache.load_overload(sig, kernel.targetctx) is None:
        return False
    kernel.compile(sig)         # (from the cache)
    return True


def native_entry(kernel, args: tuple) -> tuple[int, types.Type]:
    """(address, return type) of ``kernel``'s machine code for the types of ``args`` (compiled or
    loaded from the cache first), for :func:`call_native`.  ValueError if the kernel has no machine
    code of its own (a link-only helper: call the public kernel) or its compiled signature does not
    take these arguments."""
    return native_entry_types(kernel, tuple(typeof(a) for a in args))


def native_entry_types(kernel, sig: tuple) -> tuple[int, types.Type]:
    """:func:`native_entry` for arguments of the numba types ``sig``."""
    cres = _overload(kernel, tuple(sig))
    if cres is None or getattr(cres.library, "graspsim_link_only", False):
        raise ValueError(f"{kernel.py_func.__qualname__}: no machine code for the argument types {sig}")
    return cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name), cres.signature.return_type

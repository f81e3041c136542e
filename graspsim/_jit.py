"""``njit`` for graspsim's kernels: numba's, with less to compile on the first run.

Every graspsim kernel is cached on disk (``cache=True`` is implied).  Two things differ from
``numba.njit``, both about compile time only (the compiled code of a function is the same):

* A call from one kernel to another is specialised on the argument *types*, never on constant
  values.  numba would compile ``_poly_pass(..., False, False)`` and ``_poly_pass(..., True,
  False)`` (and every helper they call) once per literal value; here it is compiled once.
* A kernel whose name starts with an underscore is a helper of other kernels: it is compiled
  without the CPython and C-callable wrappers (for a helper taking the 29-array geometry tuple the
  wrapper is a large part of the work).  Called from Python (tests, a debugging session) it still
  works, through an uncached twin compiled with the wrapper.  Public kernels get the CPython
  wrapper only.

A helper's machine code is made only inside its callers (:mod:`graspsim._link_only`): its cache
entry is LLVM bitcode for linking.  A *public* kernel called from another kernel is called there
through its helper twin (same function, helper options, own cache entries): the caller links its
code, and the public kernel itself is compiled in full only if Python calls it (the island solver's
``solve_island`` and the LCP ``solve``, both called by ``solve_islands``, were compiled a second
time for their own sake: 6 s of the first run's CPU).  A helper's cache entries carry a tag of
their own, so an entry compiled without the wrapper is never loaded for a Python call.  Compiles
report progress (:mod:`graspsim._compile`) and take their group's inter-process lock
(:mod:`graspsim._warmup`).  ``NUMBA_DISABLE_JIT=1`` returns the plain Python
functions, as numba does.
"""
from __future__ import annotations

from typing import Callable

import numba
from numba.core import config, types
from numba.core.caching import CompileResultCacheImpl, FunctionCache
from numba.core.registry import CPUDispatcher

from . import _box_arrays, _compile, _flag_values, _link_only, _warmup
from ._numba_locator import PackageCacheLocator

__all__ = ["njit", "is_kernel", "is_helper"]

_compile.install()      # compile progress on stderr, before any kernel can compile
_link_only.install()
_flag_values.install()
_box_arrays.install()


class _KernelCacheImpl(CompileResultCacheImpl):
    # kernels filed by their place in the package first (clones share entries), then numba's way
    _locator_classes = [PackageCacheLocator] + CompileResultCacheImpl._locator_classes


class _KernelCache(FunctionCache):
    _impl_class = _KernelCacheImpl


class _Kernel(CPUDispatcher):
    """A cached kernel; calls from other kernels are typed without literal values."""

    graspsim_kernel = True

    _callee = None      # the helper twin that other kernels call (made on first use)

    def enable_caching(self):
        self._cache = _KernelCache(self.py_func)

    @property
    def _numba_type_(self):
        # How a kernel's body sees this kernel: as its helper twin, so a caller links the code
        # (no CPython wrapper, no machine code of its own) instead of compiling this public kernel
        # in full for its own sake too.  Python calls still come here.
        if self._callee is None:
            opts = {**self.targetoptions, "no_cpython_wrapper": True}
            self._callee = _Helper(py_func=self.py_func, locals=self.locals, targetoptions=opts)
            self._callee.enable_caching()
        return types.Dispatcher(self._callee)

    def get_call_template(self, args, kws):
        args = tuple(types.unliteral(a) for a in args)
        kws = {k: types.unliteral(v) for k, v in kws.items()}
        return super().get_call_template(args, kws)

    def compile(self, sig):
        # A signature the first job compiles with the same arrays in any layout ('A') serves this
        # one too: compile (or load) that one, and let numba's dispatcher convert C -> A from now on
        # (a safe conversion, resolved in C without coming back here).
        general = _warmup.general_signature(self, sig)
        new = isinstance(general, tuple) and general not in self.overloads
        # load from the cache or compile, while no other process compiles this kernel's group
        with _warmup.exclusive(self), _link_only.compiling(isinstance(self, _Helper)):
            entry = super().compile(general)
        if new and not isinstance(self, _Helper) and general in self.overloads:
            _link_only.bind_environments(self.overloads[general].library)
        if general is not sig:
            self.typingctx.install_possible_conversions(sig, general)
        return entry


class _HelperCacheImpl(_KernelCacheImpl):
    def reduce(self, cres):
        lib = cres.library
        if getattr(lib, "graspsim_link_only", False):    # no machine code: save the bitcode
            lib.serialize_using_object_code = lib.serialize_using_bitcode
        return super().reduce(cres)


class _HelperCache(_KernelCache):
    """Cache of a helper: its entries (no CPython wrapper) are keyed apart from a normal kernel's."""

    _impl_class = _HelperCacheImpl

    def _index_key(self, sig, codegen):
        return super()._index_key(sig, codegen) + ("graspsim compiled-code helper",)


class _Helper(_Kernel):
    """A kernel called only from other kernels: compiled without wrappers, no Python entry point."""

    _twin = None

    def enable_caching(self):
        self._cache = _HelperCache(self.py_func)

    @property
    def _numba_type_(self):
        return types.Dispatcher(self)

    def add_overload(self, cres):
        # No entry in the Python call table: there is no CPython wrapper to call.  A Python call
        # therefore always lands in _compile_for_args.
        self.overloads[tuple(cres.signature.args)] = cres

    def _compile_for_args(self, *args, **kws):
        if self._twin is None:
            opts = {k: v for k, v in self.targetoptions.items()
                    if k not in ("nopython", "no_cpython_wrapper", "no_cfunc_wrapper")}
            self._twin = _Twin(py_func=self.py_func, locals={}, targetoptions={**opts, "nopython": True})
        return self._twin      # numba's dispatcher calls what this returns with the arguments


class _Twin(CPUDispatcher):
    """A helper's uncached twin with a CPython wrapper, for calls from Python."""

    def compile(self, sig):
        new = set(self.overloads)
        entry = super().compile(sig)
        for k, cres in self.overloads.items():
            if k not in new:
                _link_only.bind_environments(cres.library)
        return entry


def is_kernel(f) -> bool:
    """True if ``f`` is a graspsim kernel (a dispatcher made by :func:`njit`)."""
    return isinstance(f, _Kernel)


def is_helper(f) -> bool:
    """True if ``f`` is a compiled-code-only helper kernel."""
    return isinstance(f, _Helper)


def njit(func: Callable | None = None, *, cache: bool = True, **options):
    """Compile ``func`` lazily with numba (nopython, cached); usable as ``@njit`` or ``@njit(...)``.

    ``options`` are numba's (``fastmath``, ``nogil``, ...).  ``cache`` is accepted for the look of
    ``numba.njit`` and must stay True.
    """
    if not cache:
        raise ValueError("graspsim kernels are always cached")

    def wrap(f):
        if config.DISABLE_JIT:
            return f
        helper = f.__name__.startswith("_")
        targetoptions = {"nopython": True, "boundscheck": None, "no_cfunc_wrapper": True, **options}
        if helper:
            targetoptions["no_cpython_wrapper"] = True
        disp = (_Helper if helper else _Kernel)(py_func=f, locals={}, targetoptions=targetoptions)
        disp.enable_caching()
        return disp

    return wrap if func is None else wrap(func)

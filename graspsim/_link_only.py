"""Helper kernels' code is made only inside the kernels that call them (first-run compile time).

numba turns every compiled function into a code library: it links the libraries of its callees
into its own LLVM module, optimises the whole module and emits machine code for it.  A helper
kernel (:mod:`graspsim._jit`: no CPython wrapper, called only from other kernels) is never called
through its own machine code, yet numba optimised and code-generated its module, with all its
callees, once for itself and once more in every caller up the call tree.  Here a helper's library
stops before that: its module (function-level optimised, callees linked in) is only *linked* into
its callers, and the public kernel at the top optimises and code-generates everything once, with
the helpers inlined as before (the same O3 pipeline over the same functions: the first job prints
the same numbers and its warm run takes the same time).  All kernel groups compiled cold, old and
new side by side: 12 % less compile CPU (docs/dynamics_performance.md, "First run").

What it takes, all within this module and :mod:`graspsim._jit`:

* ``compiling(helper)`` marks, per thread, which graspsim kernel is being compiled (or loaded from
  the disk cache); numba's own dispatchers compiled on the way (its ``@overload`` implementations)
  are link-only as well.  A public kernel called from another kernel is called through its helper
  twin (:mod:`graspsim._jit`), so it is link-only there too.
* Libraries finalised while a helper is innermost skip the module optimisation and are not added
  to the JIT engine (no machine code).  A library loaded from machine code is left alone.
* A helper's disk-cache entry is its LLVM bitcode (numba's other serialisation), not machine code.
* The environment pointer of every function in a freshly compiled public kernel is set, as numba
  does when it loads a kernel from the disk cache (a helper's environment symbol now lives only in
  its callers' modules).
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

from numba.core import codegen as _codegen
from numba.core import event
from numba.core.environment import lookup_environment

_tls = threading.local()
_ENV_PREFIX = "_ZN08NumbaEnv"


def _stack() -> list:
    s = getattr(_tls, "stack", None)
    if s is None:
        s = _tls.stack = []
    return s


@contextmanager
def compiling(helper: bool):
    """Around a graspsim kernel's compile or cache load: is it a helper (link-only code)?"""
    s = _stack()
    s.append(helper)
    try:
        yield
    finally:
        s.pop()


def _link_only(lib) -> bool:
    s = _stack()
    return bool(s) and s[-1] and lib._shared_module is None   # _shared_module: loaded machine code


class _NumbaDispatchers(event.Listener):
    """numba's own dispatchers (its ``@overload`` implementations: ``np.empty``, ``min``, ...)
    compiled inside a kernel's compile are link-only too: numba only ever links their code into the
    caller's (they have no CPython wrapper).  Compiled outside a kernel's compile (a user's own
    ``numba.njit`` code) they keep numba's full treatment."""

    def on_start(self, ev) -> None:
        if not getattr(ev.data["dispatcher"], "graspsim_kernel", False):
            _stack().append(bool(_stack()))

    def on_end(self, ev) -> None:
        if not getattr(ev.data["dispatcher"], "graspsim_kernel", False):
            _stack().pop()


_orig_optimize = getattr(_codegen.CPUCodeLibrary, "_optimize_final_module", None)
_orig_optimize_functions = getattr(_codegen.CPUCodeLibrary, "_optimize_functions", None)
_orig_finalize = getattr(_codegen.CPUCodeLibrary, "_finalize_final_module", None)
_orig_set_env = getattr(_codegen.JITCPUCodegen, "set_env", None)


def _optimize_final_module(self) -> None:
    if _link_only(self):
        return          # optimised in the caller's module, with the caller's code around it
    _orig_optimize(self)


def _optimize_functions(self, ll_module) -> None:
    if not _link_only(self):
        _orig_optimize_functions(self, ll_module)
        return
    # A helper's function passes only tidy its IR before the caller's module runs the full O3
    # pipeline over it again (inlined or not), so O1 here loses nothing at run time: about 1.5 s
    # less compile CPU over all groups (docs/dynamics_performance.md, "First run", fourth pass).
    ll_module.data_layout = self._codegen._data_layout
    for func in ll_module.functions:
        fpm, pb = self._codegen._function_pass_manager(opt=1)
        fpm.run(func, pb)


def _finalize_final_module(self) -> None:
    if not _link_only(self):
        _orig_finalize(self)
        return
    # numba's checks, then ready for linking; not added to the JIT engine: no machine code
    self._finalize_dynamic_globals()
    self._verify_declare_only_symbols()
    self.graspsim_link_only = True
    self._finalized = True


def _set_env(self, env_name, env) -> None:
    # a link-only library's environment symbol is not in the engine: nothing to set
    if self._engine.get_global_value_address(env_name):
        _orig_set_env(self, env_name, env)


def bind_environments(library) -> None:
    """Set the environment pointers of every function compiled into ``library`` (a public kernel's,
    just compiled), as numba's cache loader does for the environments a cached kernel references."""
    if not ACTIVE:
        return
    for gv in library._final_module.global_variables:
        if gv.name.startswith(_ENV_PREFIX):
            env = lookup_environment(gv.name)
            if env is not None:
                library.codegen.set_env(gv.name, env)


def serialize(library):
    """A library's cache payload: bitcode if it is link-only (no machine code to save)."""
    if getattr(library, "graspsim_link_only", False):
        return library.serialize_using_bitcode()
    return library.serialize_using_object_code()


#: numba versions whose code-library internals this module was written and tested against; with
#: any other version graspsim compiles the usual way (correct, only slower to compile)
TESTED_NUMBA = ("0.68",)
#: True once :func:`install` patched numba
ACTIVE = False


def supported() -> bool:
    """Does the installed numba have the internals :func:`install` patches (a tested version)?"""
    import numba

    if not numba.__version__.startswith(TESTED_NUMBA):
        return False
    need = ((_codegen.CPUCodeLibrary, ("_optimize_final_module", "_finalize_final_module",
                                       "_optimize_functions",
                                       "_finalize_dynamic_globals", "_verify_declare_only_symbols",
                                       "serialize_using_bitcode", "serialize_using_object_code")),
            (_codegen.JITCPUCodegen, ("set_env", "_function_pass_manager")))
    return all(hasattr(cls, name) for cls, names in need for name in names)


def install() -> None:
    """Patch numba's CPU code library (once; nothing with an untested numba, see :func:`supported`)."""
    if getattr(install, "done", False):
        return
    install.done = True
    if not supported():
        return
    global ACTIVE
    ACTIVE = True
    event.register("numba:compile", _NumbaDispatchers())
    _codegen.CPUCodeLibrary._optimize_final_module = _optimize_final_module
    _codegen.CPUCodeLibrary._finalize_final_module = _finalize_final_module
    _codegen.CPUCodeLibrary._optimize_functions = _optimize_functions
    _codegen.JITCPUCodegen.set_env = _set_env

"""Where numba caches graspsim's compiled kernels: one directory per kernel source, any checkout.

numba's default user-provided locator files a kernel under a hash of its source file's absolute
path, so every clone of the repository (and every CI checkout) compiled and stored the same
kernels again (53 MB each).  This locator files a kernel under its path *inside the package*
instead; together with the directory keyed by the hash of the kernel sources (set up in
``graspsim/__init__.py``) and numba's content-hash source stamp, identical kernels are compiled
once per machine and shared by every checkout.

numba imports this module itself, by name, from ``NUMBA_CACHE_LOCATOR_CLASSES``.
"""
from __future__ import annotations

import os

from numba.core import config
from numba.core.caching import UserProvidedCacheLocator

_PACKAGE_ROOT = os.path.dirname(os.path.abspath(__file__))


class PackageCacheLocator(UserProvidedCacheLocator):
    """Cache a graspsim kernel in ``CACHE_DIR/<its folder inside the package>``."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        rel = os.path.relpath(os.path.dirname(os.path.abspath(py_file)), _PACKAGE_ROOT)
        self._cache_path = os.path.join(config.CACHE_DIR, "graspsim", rel.replace(os.sep, "."))

    @classmethod
    def from_function(cls, py_func, py_file):
        # only graspsim's own kernels; anything else falls through to numba's locators
        if not os.path.abspath(py_file).startswith(_PACKAGE_ROOT + os.sep):
            return None
        return super().from_function(py_func, py_file)

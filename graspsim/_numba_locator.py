"""Where numba caches graspsim's compiled kernels: one directory per kernel source, any checkout.

numba's default user-provided locator files a kernel under a hash of its source file's absolute
path, so every clone of the repository (and every CI checkout) compiled and stored the same
kernels again (53 MB each).  This locator files a kernel under its path *inside the package*
instead; together with the directory keyed by the hash of the kernel sources (set up in
``graspsim/__init__.py``) and numba's content-hash source stamp, identical kernels are compiled
once per machine and shared by every checkout.

The kernels' cache class (:mod:`graspsim._jit`) tries this locator first, whatever the numba version
(``NUMBA_CACHE_LOCATOR_CLASSES`` exists only in recent ones).  The source stamp is the file's content
hash: older numba versions stamp by modification time and size, and clones checked out at different
times would invalidate each other's entries.
"""
from __future__ import annotations

import functools
import hashlib
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

    def get_source_stamp(self):
        st = os.stat(self._py_file)
        return _content_hash(self._py_file, st.st_mtime_ns, st.st_size)

    @classmethod
    def from_function(cls, py_func, py_file):
        # only graspsim's own kernels; anything else falls through to numba's locators
        if not os.path.abspath(py_file).startswith(_PACKAGE_ROOT + os.sep):
            return None
        return super().from_function(py_func, py_file)


@functools.lru_cache(maxsize=None)
def _content_hash(path: str, mtime_ns: int, size: int) -> str:
    """sha256 of a source file (memoised per modification time and size)."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()

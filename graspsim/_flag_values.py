"""numba's compile flags compared in one dict merge (first-run compile time).

numba's ``@overload`` templates key their implementation cache by the compile flags in force
(``templates._get_impl``): every typing of a call to ``np.empty``, ``min``, an array method ...
hashes and compares a ``Flags`` object, and ``TargetConfig.values()`` builds that dict through one
property getter per option (about 40).  The first job types such calls some 10^5 times.  Here
``values()`` returns the same dict (every option: its set value, else its default) from one merge
of the class's defaults with the set values.
"""
from __future__ import annotations

from numba.core import targetconfig

_orig_values = targetconfig.TargetConfig.values


def _defaults(cls) -> dict:
    d = cls.__dict__.get("_graspsim_defaults")
    if d is None:
        d = {k: opt.default for k, opt in cls.options.items()}
        cls._graspsim_defaults = d
    return d


def _values(self) -> dict:
    d = dict(_defaults(type(self)))
    d.update(self._values)
    return d


def install() -> None:
    """Patch ``TargetConfig.values`` (with a numba version this was tested against only)."""
    from ._link_only import TESTED_NUMBA
    import numba

    if numba.__version__.startswith(TESTED_NUMBA) and _orig_values.__qualname__ == "TargetConfig.values":
        targetconfig.TargetConfig.values = _values

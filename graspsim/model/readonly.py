"""A read-only dict for the immutable descriptions' tables."""
from __future__ import annotations

__all__ = ["ReadOnlyDict"]


class ReadOnlyDict(dict):
    """A dict that refuses changes: the descriptions' name -> index tables.  Unlike
    ``types.MappingProxyType`` (used before) it pickles and deep-copies, so a World can be sent to
    another process or copied."""

    __slots__ = ()

    def _refuse(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} is read-only (part of an immutable description)")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self):
        return type(self), (dict(self),)

    def __copy__(self):
        return self                  # immutable: a copy is the same table

    def __deepcopy__(self, memo):
        return self

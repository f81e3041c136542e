"""Where files named inside model files live: ``package://`` URLs, data packages and relative paths.

Two kinds of names need a search:

* Mesh names in a URDF: ``package://PKG/REST``, ``file:///abs/path``, absolute or relative paths.
  They are looked up under the *search roots* of the URDF, in order: the URDF's own folder and each
  of its parents, then every entry of ``GRASPSIM_PACKAGE_PATH`` and of ``ROS_PACKAGE_PATH``
  (``os.pathsep``-separated).  ``package://PKG/REST`` is found at ``ROOT/PKG/REST``, or at
  ``ROOT/REST`` when ROOT itself is the folder named PKG (pybullet_data's Panda says
  ``package://meshes/collision/hand.obj`` for the ``meshes`` folder beside the URDF).
* File names in a graspsim YAML file (a side file's ``urdf:``, a world's ``file:``, a shape's
  ``mesh:``) and the paths given to the loaders: relative to that file (or the working folder), or
  ``NAME://REST`` for a file inside an installed Python data package, e.g.
  ``pybullet_data://franka_panda/panda.urdf`` is ``franka_panda/panda.urdf`` in the folder of the
  ``pybullet_data`` package (found without importing it).

Nothing here raises: callers get the path or ``None`` plus the list of places tried, and report
the problem with their own file and line (:func:`not_found` words it the same for robots and objects).
"""
from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

_SCHEME = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*)://(.*)$")
ENV_VARS = ("GRASPSIM_PACKAGE_PATH", "ROS_PACKAGE_PATH")


def has_scheme(name) -> bool:
    """Is ``name`` a URL-like name (``NAME://REST``) rather than a plain path?  (``pathlib.Path``
    would fold its ``//`` into ``/``, so such names are resolved before they become paths.)"""
    return isinstance(name, str) and _SCHEME.match(name) is not None


def search_roots(model_file: str | Path) -> list[Path]:
    """Folders searched for names in ``model_file``: its folder and parents, then the env paths."""
    here = Path(model_file).resolve().parent
    roots = [here, *here.parents]
    for var in ENV_VARS:
        for entry in os.environ.get(var, "").split(os.pathsep):
            if entry.strip():
                roots.append(Path(entry.strip()).expanduser())
    seen, out = set(), []
    for r in roots:
        if r not in seen:
            seen.add(r)
            out.append(r)
    return out


def candidates(name: str, model_file: str | Path) -> list[Path]:
    """Every path ``name`` (a mesh name from a URDF) may mean, in search order."""
    m = _SCHEME.match(name)
    if m and m.group(1) == "file":
        return [Path(m.group(2))]
    if m and m.group(1) == "package":
        rest = m.group(2).lstrip("/")
        pkg, _, sub = rest.partition("/")
        out = []
        for root in search_roots(model_file):
            out.append(root / pkg / sub)
            if root.name == pkg:
                out.append(root / sub)
        return out
    if m:  # a data package, as in side files
        p = data_package_path(name)
        return [p] if p is not None else []
    p = Path(name)
    if p.is_absolute():
        return [p]
    return [root / p for root in search_roots(model_file)]


def resolve(name: str, model_file: str | Path) -> tuple[Path | None, list[Path]]:
    """``(path, tried)``: the first existing file ``name`` may mean, or ``None`` and every place tried."""
    tried = candidates(name, model_file)
    for p in tried:
        if p.is_file():
            return p, tried
    return None, tried


def not_found(name: str, tried: list[Path], shown: int = 4) -> str:
    """The problem text for a mesh name that :func:`resolve` did not find: the name and the first
    ``shown`` places tried (one line; the caller adds its file, line and field)."""
    places = ", ".join(str(p) for p in tried[:shown]) + (f" and {len(tried) - shown} more" if len(tried) > shown else "")
    return (f"mesh '{name}' not found (tried {places or 'nothing'}; "
            "set GRASPSIM_PACKAGE_PATH for package:// names)")


def data_package_path(name: str) -> Path | None:
    """``NAME://REST`` -> ``REST`` inside the folder of the installed Python package NAME (or None)."""
    m = _SCHEME.match(name)
    if not m:
        return None
    try:
        spec = importlib.util.find_spec(m.group(1))
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        base = Path(list(spec.submodule_search_locations)[0])
    elif spec.origin:
        base = Path(spec.origin).parent
    else:
        return None
    return base / m.group(2).lstrip("/")


def resolve_model_file(name: str, model_file: str | Path) -> tuple[Path | None, str]:
    """A file named in a YAML model (``urdf:`` of a side file): ``(path, problem)``.

    ``NAME://REST`` names a file in an installed data package; anything else is relative to the
    naming file.  ``path`` is None when the file is missing; ``problem`` then says why.
    """
    m = _SCHEME.match(name)
    if m and m.group(1) not in ("file", "package"):
        pkg = m.group(1)
        p = data_package_path(name)
        if p is None:
            hint = " (pip install 'graspsim[urdf-data]')" if pkg == "pybullet_data" else ""
            return None, f"'{name}': the Python package '{pkg}' is not installed{hint}"
        if not p.is_file():
            return None, f"'{name}': no file {p}"
        return p, ""
    if m and m.group(1) == "file":
        p = Path(m.group(2))
    elif m:  # package:// from a YAML file: search as for a URDF
        p, tried = resolve(name, model_file)
        if p is None:
            return None, f"'{name}' not found (tried {', '.join(map(str, tried[:6]))}{', ...' if len(tried) > 6 else ''})"
        return p, ""
    else:
        p = Path(name)
        if not p.is_absolute():
            p = Path(model_file).parent / p
    if not p.is_file():
        return None, f"file not found: {p}"
    return p, ""

"""Object sets in a batch file: a glob or a folder of meshes, one-link URDFs and object YAML files.

::

    objects: {glob: "${pybullet_data}/random_urdfs/*/*.urdf", limit: 50}
    objects: [../objects/mug.yaml, {folder: my_meshes}, {glob: "scans/*.ply", limit: 10}]

Patterns and folders resolve relative to the batch file, or inside an installed Python data
package as ``NAME://pattern`` (as file names do); ``${pybullet_data}`` is pybullet's data
folder (``pybullet_data.getDataPath()``, the ``pybullet`` package) and ``${graspsim}`` the
repository root of the shipped models.  Matches are sorted by path (so a set is the same on every
machine) and cut to the first ``limit``.  A folder contributes its object files and those of its
subfolders; in a directory holding a URDF, the meshes are taken to be that URDF's parts and skipped.
"""
from __future__ import annotations

import glob as _glob
import re
from pathlib import Path

from ..geometry import MESH_SUFFIXES
from ..model.fields import Reader
from ..model.package_path import data_package_path, has_scheme
from ..model.yamlio import YMap

__all__ = ["SET_KEYS", "is_object_set", "expand_object_set", "substitute"]

SET_KEYS = ["glob", "folder", "limit"]
OBJECT_SUFFIXES = MESH_SUFFIXES + (".urdf", ".yaml", ".yml")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def is_object_set(item) -> bool:
    """True for a mapping naming a ``glob`` or a ``folder`` (rather than one ``file``)."""
    return isinstance(item, YMap) and ("glob" in item or "folder" in item)


def _variables() -> dict:
    def pybullet_data() -> str:
        import pybullet_data as pd      # only imported when a file names it

        return pd.getDataPath()

    def graspsim_root() -> str:
        from .. import data_path

        return str(data_path())

    return {"pybullet_data": pybullet_data, "graspsim": graspsim_root}


def substitute(text: str) -> str:
    """Replace ``${pybullet_data}`` and ``${graspsim}``; raises KeyError/ImportError with the name."""
    var = _variables()

    def one(m: re.Match) -> str:
        name = m.group(1)
        if name not in var:
            raise KeyError(name)
        return var[name]()

    return _VAR.sub(one, text)


def _folder_files(d: Path) -> list[Path]:
    out = []
    for sub in sorted([d] + [p for p in d.rglob("*") if p.is_dir()]):
        files = sorted(p for p in sub.iterdir() if p.is_file() and p.suffix.lower() in OBJECT_SUFFIXES)
        if any(p.suffix.lower() == ".urdf" for p in files):      # its meshes are the URDF's parts
            files = [p for p in files if p.suffix.lower() not in MESH_SUFFIXES]
        out.extend(files)
    return out


def expand_object_set(r: Reader, m: YMap, field: str, base: Path) -> list[Path]:
    """The object files a set names (sorted, at most ``limit``); problems go to ``r``."""
    r.check_keys(m, field, SET_KEYS)
    kinds = [k for k in ("glob", "folder") if k in m]
    if len(kinds) != 1:
        r.error(m.line, field, "give either 'glob' or 'folder', not both")
        return []
    kind = kinds[0]
    limit = None
    if "limit" in m:
        v = m["limit"]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            r.error(m.line_of("limit"), f"{field}.limit", f"expected a whole number >= 1, got {v!r}")
            return []
        limit = v
    raw = r.string(m, kind, field)
    if raw is None:
        return []
    try:
        text = substitute(raw)
    except KeyError as e:
        r.error(m.line_of(kind), f"{field}.{kind}", f"unknown variable ${{{e.args[0]}}}; known: "
                + ", ".join(f"${{{k}}}" for k in _variables()))
        return []
    except ImportError:
        r.error(m.line_of(kind), f"{field}.{kind}", "${pybullet_data} needs the pybullet package "
                "(pip install pybullet)")
        return []
    if has_scheme(text):     # NAME://pattern: inside an installed data package, as file names
        inside = data_package_path(text)
        if inside is None:
            r.error(m.line_of(kind), f"{field}.{kind}", f"'{raw}': the Python package "
                    f"'{text.split('://', 1)[0]}' is not installed")
            return []
        text = str(inside)
    pattern = Path(text) if Path(text).is_absolute() else base / text
    if kind == "glob":
        files = sorted(Path(p) for p in _glob.glob(str(pattern), recursive=True)
                       if Path(p).is_file() and Path(p).suffix.lower() in OBJECT_SUFFIXES)
        what = f"no object files (meshes, URDFs, object YAML) match '{raw}' ({pattern})"
    else:
        if not pattern.is_dir():
            r.error(m.line_of(kind), f"{field}.folder", f"folder '{raw}' not found ({pattern})")
            return []
        files = _folder_files(pattern)
        what = f"folder '{raw}' ({pattern}) holds no object files (meshes, URDFs, object YAML)"
    if not files:
        r.error(m.line_of(kind), f"{field}.{kind}", what)
        return []
    return files[:limit] if limit else files

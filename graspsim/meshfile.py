"""Triangle mesh files (STL binary/ASCII, Wavefront OBJ, PLY ASCII/binary, OFF) read with numpy alone.

:func:`read_mesh` returns the raw ``(vertices (n, 3) float64, faces (m, 3) int64)`` of a file, in the
file's order: STL's triangle soup as it is, polygons split into fans ``(0, i, i + 1)``.  It never
imports trimesh (about 0.5 s), so ``graspsim validate`` stays fast; merging duplicate vertices and
the mass properties are in :mod:`graspsim.geometry`.  Files are bounded (:data:`MAX_MESH_BYTES`,
:data:`MAX_TRIANGLES`) and only regular files are read; a malformed file raises
:class:`~graspsim.errors.ModelError` naming the line or element, never quoting the content.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import ModelError
from .model.yamlio import read_regular_file

#: largest mesh file read (bytes)
MAX_MESH_BYTES = 16 << 20
#: most triangles (after splitting polygons) and vertices in one mesh: reading, merging and checking
#: 200,000 triangles takes about 1 s (the contact kernels want far fewer)
MAX_TRIANGLES = 200_000
MAX_VERTICES = 3 * MAX_TRIANGLES
READERS = (".stl", ".obj", ".ply", ".off")


class _Bad(Exception):
    """A format problem, turned into a ModelError naming the file."""


def read_mesh(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """``(vertices (n, 3) float64, faces (m, 3) int64)`` of an STL, OBJ, PLY or OFF file (file units).

    Raises :class:`ModelError` for an unreadable, oversized or malformed file, a face index out of
    range, a non-finite coordinate, or a file without triangles.
    """
    p = str(path)
    suffix = Path(p).suffix.lower()
    if suffix not in READERS:
        raise ModelError(f"unsupported mesh format '{suffix}'; use one of {', '.join(READERS)}", file=p)
    data = read_regular_file(p, MAX_MESH_BYTES, "mesh file")
    try:
        V, F = {".stl": _stl, ".obj": _obj, ".ply": _ply, ".off": _off}[suffix](data)
        V = np.asarray(V, dtype=np.float64).reshape(-1, 3)
        F = np.asarray(F, dtype=np.int64).reshape(-1, 3)
        if len(F) == 0:
            raise _Bad("the mesh has no triangles")
        if len(F) > MAX_TRIANGLES or len(V) > MAX_VERTICES:
            raise _Bad(f"the mesh has more than {MAX_TRIANGLES} triangles or {MAX_VERTICES} vertices")
        if F.min() < 0 or F.max() >= len(V):
            raise _Bad(f"a face refers to a vertex that does not exist (the file has {len(V)} vertices)")
        if not np.isfinite(V).all():
            raise _Bad("a vertex coordinate is not a finite number")
    except _Bad as e:
        raise ModelError(f"cannot read mesh: {e}", file=p) from None
    except (ValueError, OverflowError, IndexError, UnicodeDecodeError, MemoryError) as e:
        raise ModelError(f"cannot read mesh: malformed {suffix[1:].upper()} file ({type(e).__name__})",
                         file=p) from None
    return V, F


def _fan(poly: list[list[int]]) -> list[list[int]]:
    out = []
    for f in poly:
        if len(f) < 3:
            raise _Bad("a face has fewer than 3 vertices")
        for i in range(1, len(f) - 1):
            out.append((f[0], f[i], f[i + 1]))
    if len(out) > MAX_TRIANGLES:
        raise _Bad(f"the mesh has more than {MAX_TRIANGLES} triangles")
    return out


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _floats(tokens: list[str], what: str) -> np.ndarray:
    try:
        return np.array([float(t) for t in tokens], dtype=np.float64)
    except ValueError:
        raise _Bad(f"{what}: expected numbers") from None


# -- STL ---------------------------------------------------------------------------------------

_STL_DTYPE = np.dtype([("normal", "<f4", (3,)), ("vertices", "<f4", (3, 3)), ("attr", "<u2")])


def _stl(data: bytes):
    if len(data) >= 84:
        n = int(np.frombuffer(data, "<u4", 1, 80)[0])
        if len(data) == 84 + 50 * n:              # binary (even if the header starts with 'solid')
            if n > MAX_TRIANGLES:
                raise _Bad(f"the mesh has more than {MAX_TRIANGLES} triangles")
            tri = np.frombuffer(data, _STL_DTYPE, n, 84)
            return tri["vertices"].reshape(-1, 3).astype(np.float64), np.arange(3 * n).reshape(-1, 3)
    text = _text(data)
    low = text.lower()
    if not low.lstrip().startswith("solid"):
        raise _Bad("neither a binary STL (its size does not match its triangle count) nor an ASCII STL")
    parts = low.split("vertex")[1:]
    if len(parts) > MAX_VERTICES:
        raise _Bad(f"the mesh has more than {MAX_TRIANGLES} triangles")
    tokens = []
    for k, part in enumerate(parts):
        t = part.split(None, 3)[:3]
        if len(t) != 3:
            raise _Bad(f"vertex {k + 1}: expected three coordinates")
        tokens.extend(t)
    if len(parts) % 3:
        raise _Bad("the number of vertices is not a multiple of 3")
    V = _floats(tokens, "vertex coordinates")
    return V, np.arange(len(parts)).reshape(-1, 3)


# -- OBJ ---------------------------------------------------------------------------------------

def _obj(data: bytes):
    vs: list[str] = []
    polys: list[list[int]] = []
    nv = 0
    for ln, line in enumerate(_text(data).splitlines(), 1):
        t = line.split()
        if not t:
            continue
        if t[0] == "v":
            if len(t) < 4:
                raise _Bad(f"line {ln}: a vertex needs x y z")
            vs.extend(t[1:4])
            nv += 1
            if nv > MAX_VERTICES:
                raise _Bad(f"the mesh has more than {MAX_VERTICES} vertices")
        elif t[0] == "f":
            if len(t) < 4:
                raise _Bad(f"line {ln}: a face needs at least 3 vertices")
            f = []
            for tok in t[1:]:
                try:
                    i = int(tok.split("/", 1)[0])
                except ValueError:
                    raise _Bad(f"line {ln}: a face index is not an integer") from None
                if i == 0:
                    raise _Bad(f"line {ln}: OBJ indices start at 1")
                f.append(i - 1 if i > 0 else nv + i)     # negative: relative to the vertices so far
            polys.append(f)
            if len(polys) > MAX_TRIANGLES:
                raise _Bad(f"the mesh has more than {MAX_TRIANGLES} faces")
        # vn, vt, o, g, s, usemtl, mtllib, l, p, comments: not geometry we use
    return _floats(vs, "vertex coordinates"), _fan(polys)


# -- OFF ---------------------------------------------------------------------------------------

def _off(data: bytes):
    lines = []
    for line in _text(data).splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            lines.append(line)
    if not lines or not lines[0].upper().startswith("OFF"):
        raise _Bad("an OFF file starts with 'OFF'")
    head = lines[0][3:].split()
    k = 1
    if not head:
        if len(lines) < 2:
            raise _Bad("missing the vertex and face counts")
        head = lines[1].split()
        k = 2
    try:
        nv, nf = int(head[0]), int(head[1])
    except (ValueError, IndexError):
        raise _Bad("expected the vertex and face counts after 'OFF'") from None
    if not (0 <= nv <= MAX_VERTICES and 0 <= nf <= MAX_TRIANGLES):
        raise _Bad(f"vertex or face count out of range (at most {MAX_VERTICES} and {MAX_TRIANGLES})")
    if len(lines) < k + nv + nf:
        raise _Bad(f"the file ends early: {nv} vertices and {nf} faces announced")
    vs = []
    for i in range(nv):
        t = lines[k + i].split()
        if len(t) < 3:
            raise _Bad(f"vertex {i}: expected x y z")
        vs.extend(t[:3])
    polys = []
    for i in range(nf):
        t = lines[k + nv + i].split()
        try:
            n = int(t[0])
            f = [int(x) for x in t[1:1 + n]]
        except (ValueError, IndexError):
            raise _Bad(f"face {i}: expected a count and vertex indices") from None
        if len(f) != n:
            raise _Bad(f"face {i}: fewer indices than its count")
        polys.append(f)
    return _floats(vs, "vertex coordinates"), _fan(polys)


# -- PLY ---------------------------------------------------------------------------------------

_PLY_TYPES = {"char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1", "short": "i2", "int16": "i2",
              "ushort": "u2", "uint16": "u2", "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
              "float": "f4", "float32": "f4", "double": "f8", "float64": "f8"}


def _ply(data: bytes):
    end = data.find(b"end_header")
    if not data.startswith(b"ply") or end < 0:
        raise _Bad("a PLY file starts with 'ply' and has a header ending in 'end_header'")
    nl = data.find(b"\n", end)
    body = data[nl + 1:] if nl >= 0 else b""
    fmt, elements = None, []
    for ln, line in enumerate(data[:end].decode("latin-1").splitlines(), 1):
        t = line.split()
        if not t or t[0] in ("ply", "comment", "obj_info"):
            continue
        if t[0] == "format" and len(t) >= 2:
            fmt = t[1]
        elif t[0] == "element" and len(t) == 3:
            try:
                count = int(t[2])
            except ValueError:
                raise _Bad(f"header line {ln}: the element count is not an integer") from None
            if not 0 <= count <= MAX_VERTICES:
                raise _Bad(f"header line {ln}: element count out of range")
            elements.append((t[1], count, []))
        elif t[0] == "property" and elements:
            if len(t) == 5 and t[1] == "list" and t[2] in _PLY_TYPES and t[3] in _PLY_TYPES:
                elements[-1][2].append((t[4], _PLY_TYPES[t[2]], _PLY_TYPES[t[3]]))
            elif len(t) == 3 and t[1] in _PLY_TYPES:
                elements[-1][2].append((t[2], _PLY_TYPES[t[1]], None))
            else:
                raise _Bad(f"header line {ln}: unsupported property")
        else:
            raise _Bad(f"header line {ln}: not a PLY header line")
    if fmt not in ("ascii", "binary_little_endian", "binary_big_endian"):
        raise _Bad("unsupported PLY format (use ascii, binary_little_endian or binary_big_endian)")
    if fmt == "ascii":
        tokens = body.decode("latin-1").split()
        read = _ply_ascii_reader(tokens)
    else:
        read = _ply_binary_reader(body, "<" if fmt == "binary_little_endian" else ">")
    V, F = None, None
    for name, count, props in elements:
        cols = read(count, props)
        if name == "vertex":
            names = [p[0] for p in props]
            if not all(c in names for c in "xyz"):
                raise _Bad("the vertex element needs x, y and z")
            V = np.column_stack([np.asarray(cols[names.index(c)], dtype=np.float64) for c in "xyz"])
        elif name == "face":
            names = [p[0] for p in props]
            key = "vertex_indices" if "vertex_indices" in names else "vertex_index"
            if key not in names or props[names.index(key)][2] is None:
                raise _Bad("the face element needs a list property 'vertex_indices'")
            F = cols[names.index(key)]
    if V is None or F is None:
        raise _Bad("a PLY mesh needs 'vertex' and 'face' elements")
    if isinstance(F, np.ndarray):
        return V, F
    return V, _fan(F)


def _ply_ascii_reader(tokens: list[str]):
    pos = [0]

    def read(count, props):
        cols = [[] for _ in props]
        k = pos[0]
        try:
            for _ in range(count):
                for c, (_, t, it) in enumerate(props):
                    if it is None:
                        cols[c].append(float(tokens[k]))
                        k += 1
                    else:
                        n = int(tokens[k])
                        if not 0 <= n <= 64:
                            raise _Bad("a list property has an absurd length")
                        cols[c].append([int(x) for x in tokens[k + 1:k + 1 + n]])
                        if len(cols[c][-1]) != n:
                            raise _Bad("the file ends inside an element")
                        k += 1 + n
        except IndexError:
            raise _Bad("the file ends before all elements announced in the header") from None
        pos[0] = k
        return cols
    return read


def _ply_binary_reader(body: bytes, bo: str):
    pos = [0]

    def read(count, props):
        k = pos[0]
        if all(it is None for _, _, it in props):
            dt = np.dtype([(f"p{i}", bo + t) for i, (_, t, _) in enumerate(props)])
            if k + dt.itemsize * count > len(body):
                raise _Bad("the file ends before all elements announced in the header")
            a = np.frombuffer(body, dt, count, k)
            pos[0] = k + dt.itemsize * count
            return [a[f"p{i}"] for i in range(len(props))]
        if len(props) == 1:      # a lone list (faces): try the common case of triangles first
            _, ct, it = props[0]
            dt = np.dtype([("n", bo + ct), ("i", bo + it, (3,))])
            if k + dt.itemsize * count <= len(body):
                a = np.frombuffer(body, dt, count, k)
                if count == 0 or (a["n"] == 3).all():
                    pos[0] = k + dt.itemsize * count
                    return [a["i"].astype(np.int64)]
        cols = [[] for _ in props]
        for _ in range(count):
            for c, (_, t, it) in enumerate(props):
                st = np.dtype(bo + t)
                if k + st.itemsize > len(body):
                    raise _Bad("the file ends before all elements announced in the header")
                if it is None:
                    cols[c].append(np.frombuffer(body, st, 1, k)[0])
                    k += st.itemsize
                else:
                    n = int(np.frombuffer(body, st, 1, k)[0])
                    k += st.itemsize
                    idt = np.dtype(bo + it)
                    if not 0 <= n <= 64 or k + idt.itemsize * n > len(body):
                        raise _Bad("a list property is cut off or has an absurd length")
                    cols[c].append([int(x) for x in np.frombuffer(body, idt, n, k)])
                    k += idt.itemsize * n
        pos[0] = k
        return cols
    return read

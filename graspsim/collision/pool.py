"""Contact geometry of every shape, packed once into flat arrays for the numba kernels.

Each :class:`~graspsim.geometry.Shape` gets a :class:`ShapeGeometry`, cached by content (:func:`content_key`:
the kind and parameters of a primitive, the SHA-1 of a mesh's vertex and face arrays) in a
least-recently-used cache with a byte budget (:class:`ContentCache`), so equal shapes share one entry
and an object set of a thousand meshes does not keep every one alive:

* exact primitive parameters (``kind``, ``radius``, ``half``: half extents for a box, half-length
  of the axis for a capsule/cylinder) and its axis-aligned bounds in the shape frame S;
* a triangle mesh used by the polyhedral kernels: the exact mesh for ``mesh`` and ``box`` (a box
  is exactly its 12 triangles), a fine prism (``CYL_SECTIONS`` sides) for a cylinder (used only
  for cylinder-capsule and cylinder-cylinder pairs), none for spheres and capsules (they are a
  point or a segment swept by a radius);
* per triangle: unit outward normal, bounds, and angle-weighted pseudo-normals of its vertices
  and edges (Baerentzen & Aanaes 2005), which give the sign of the distance of a point to a closed
  mesh from the nearest feature alone.

:class:`GeometryPool` concatenates the geometries of a table's shapes (flat shape order) into flat arrays.
"""
from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

SPHERE, CAPSULE, BOX, CYLINDER, MESH, NONE = 0, 1, 2, 3, 4, -1
KIND_CODE = {"sphere": SPHERE, "capsule": CAPSULE, "box": BOX, "cylinder": CYLINDER, "mesh": MESH}
#: adjacent faces whose normals differ by less than this are one flat face (their shared edge and
#: vertices are not "sharp" and never make edge or vertex contacts)
FLAT_COS = float(np.cos(np.radians(0.5)))
#: sides of the prism standing in for a cylinder in cylinder-capsule / cylinder-cylinder pairs
#: (sagitta r (1 - cos(pi/n)) = 3.0e-4 r: 0.027 mm for the Puma's 90 mm links)
CYL_SECTIONS = 128


@dataclass(frozen=True, eq=False)
class ShapeGeometry:
    """Contact geometry of one shape, in its shape frame S (metres)."""

    kind: int
    radius: float
    half: np.ndarray        # (3,)
    lo: np.ndarray          # (3,) bounds of the exact shape in S
    hi: np.ndarray
    V: np.ndarray           # (nv, 3)
    T: np.ndarray           # (nt, 3) int64, local vertex indices
    N: np.ndarray           # (nt, 3) unit outward normals
    E: np.ndarray           # (ne, 2) unique edges, local vertex indices
    PV: np.ndarray          # (nt, 3, 3) vertex pseudo-normals of each triangle corner
    PE: np.ndarray          # (nt, 3, 3) edge pseudo-normals (ab, bc, ca)
    TBlo: np.ndarray        # (nt, 3) triangle bounds
    TBhi: np.ndarray
    TE: np.ndarray          # (nt, 3) index into E of the triangle's edges ab, bc, ca
    ESH: np.ndarray         # (ne,) bool: edge is sharp (a real edge, not a split of a flat face)
    VSH: np.ndarray         # (nv,) bool: vertex is sharp (not inside a flat region)
    EN: np.ndarray          # (ne, 2, 3) normals of the (one or two) faces adjacent to each edge
    CLT: np.ndarray         # (nt,) triangles in cluster order (see _clusters)
    CLlo: np.ndarray        # (ncl, 3) cluster bounds
    CLhi: np.ndarray


def content_key(shape) -> tuple:
    """What a shape's geometry in its own frame depends on: ``(kind, size)`` for a primitive,
    ``("mesh", SHA-1 of the vertex and face arrays)`` for a mesh (its scale is in the vertices).
    ``X_LS`` is not part of it: geometry is cached in the shape frame.  Memoised on the shape
    (immutable), so a mesh is hashed once."""
    k = shape.__dict__.get("_content_key")
    if k is None:
        if shape.kind == "mesh":
            h = hashlib.sha1()
            for a, dt in ((shape.vertices, np.float64), (shape.faces, np.int64)):
                a = np.ascontiguousarray(a, dtype=dt)
                h.update(str(a.shape).encode())
                h.update(a.tobytes())
            k = ("mesh", h.hexdigest())
        else:
            k = (shape.kind, tuple(float(x) for x in shape.size))
        object.__setattr__(shape, "_content_key", k)
    return k


class ContentCache:
    """Least-recently-used map from a content key to a value, bounded by the values' total bytes.

    ``get(key, build, size)``: the cached value, or ``build()`` stored with ``size(value)`` bytes;
    the least recently used entries are dropped while the total exceeds ``budget`` (the newest
    entry always stays).  Thread-safe.
    """

    def __init__(self, budget: int):
        self.budget = int(budget)
        self._d: OrderedDict = OrderedDict()
        self.nbytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._d)

    def get(self, key, build, size):
        with self._lock:
            hit = self._d.get(key)
            if hit is not None:
                self._d.move_to_end(key)
                return hit[0]
        v = build()
        n = int(size(v))
        with self._lock:
            if key in self._d:               # built meanwhile by another thread
                return self._d[key][0]
            self._d[key] = (v, n)
            self.nbytes += n
            while self.nbytes > self.budget and len(self._d) > 1:
                _, (_, m) = self._d.popitem(last=False)
                self.nbytes -= m
        return v

    def clear(self) -> None:
        with self._lock:
            self._d.clear()
            self.nbytes = 0


#: bytes of contact geometry kept for shapes no model uses any more (GRASPSIM_GEOMETRY_CACHE_MB)
CACHE_BUDGET = int(float(os.environ.get("GRASPSIM_GEOMETRY_CACHE_MB", "256")) * 2 ** 20)
CACHE = ContentCache(CACHE_BUDGET)


def _nbytes(g: ShapeGeometry) -> int:
    return sum(getattr(g, f).nbytes for f in g.__dataclass_fields__ if isinstance(getattr(g, f), np.ndarray))


def shape_geometry(shape) -> ShapeGeometry:
    """The contact geometry of ``shape`` (cached by :func:`content_key`; shapes are immutable)."""
    return CACHE.get(content_key(shape), lambda: _build(shape), _nbytes)


def _prism(r: float, hl: float, n: int):
    ang = 2 * np.pi * np.arange(n) / n
    ring = np.stack([r * np.cos(ang), r * np.sin(ang)], axis=1)
    V = np.vstack([np.column_stack([ring, np.full(n, -hl)]), np.column_stack([ring, np.full(n, hl)]),
                   [[0, 0, -hl], [0, 0, hl]]])
    T = []
    for i in range(n):
        j = (i + 1) % n
        T += [[i, j, n + j], [i, n + j, n + i], [2 * n, j, i], [2 * n + 1, n + i, n + j]]
    return V, np.array(T, dtype=np.int64)


def _mesh_tables(V: np.ndarray, T: np.ndarray):
    """Normals, unique edges, pseudo-normals and bounds of a triangle mesh (degenerate faces dropped)."""
    a, b, c = V[T[:, 0]], V[T[:, 1]], V[T[:, 2]]
    n = np.cross(b - a, c - a)
    area2 = np.linalg.norm(n, axis=1)
    keep = area2 > 1e-14 * max(1.0, float(np.max(area2, initial=0.0)))
    T = T[keep]
    a, b, c, n, area2 = a[keep], b[keep], c[keep], n[keep], area2[keep]
    N = n / area2[:, None]
    nt = len(T)
    # vertex pseudo-normals: angle-weighted sums of incident face normals
    pv = np.zeros((len(V), 3))
    corners = (a, b, c)
    for k in range(3):
        p, q, r = corners[k], corners[(k + 1) % 3], corners[(k + 2) % 3]
        u = q - p
        v = r - p
        cosang = np.einsum("ij,ij->i", u, v) / (np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1))
        ang = np.arccos(np.clip(cosang, -1.0, 1.0))
        np.add.at(pv, T[:, k], ang[:, None] * N)
    pv /= np.maximum(np.linalg.norm(pv, axis=1), 1e-300)[:, None]
    PV = pv[T]  # (nt, 3, 3)
    # edge pseudo-normals: sum of the (one or two) adjacent face normals
    ek = np.concatenate([np.sort(T[:, [0, 1]], axis=1), np.sort(T[:, [1, 2]], axis=1), np.sort(T[:, [2, 0]], axis=1)])
    uniq, inv = np.unique(ek, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    pe = np.zeros((len(uniq), 3))
    np.add.at(pe, inv, np.concatenate([N, N, N]))
    pe /= np.maximum(np.linalg.norm(pe, axis=1), 1e-300)[:, None]
    PE = np.stack([pe[inv[:nt]], pe[inv[nt:2 * nt]], pe[inv[2 * nt:]]], axis=1)
    TBlo = np.minimum(np.minimum(a, b), c)
    TBhi = np.maximum(np.maximum(a, b), c)
    # sharpness: an edge is flat when its faces' normals agree (and it has two), a vertex when all
    # its faces' normals agree with its pseudo-normal
    ecount = np.bincount(inv, minlength=len(uniq))
    emin = np.full(len(uniq), 2.0)
    allN = np.concatenate([N, N, N])
    for sel in (slice(0, nt), slice(nt, 2 * nt), slice(2 * nt, 3 * nt)):
        np.minimum.at(emin, inv[sel], np.einsum("ij,ij->i", allN[sel], pe[inv[sel]]))
    # cos of half the dihedral deviation: flat if both faces are within FLAT_COS of the mean
    ESH = (ecount != 2) | (emin < np.sqrt(0.5 * (1 + FLAT_COS)))
    vmin = np.full(len(V), 2.0)
    for k in range(3):
        np.minimum.at(vmin, T[:, k], np.einsum("ij,ij->i", N, pv[T[:, k]]))
    VSH = vmin < np.sqrt(0.5 * (1 + FLAT_COS))
    # vertices on a sharp edge are sharp too (e.g. the ends of a box edge)
    VSH[uniq[ESH].reshape(-1)] = True
    TE = inv.reshape(3, nt).T.copy()
    EN = np.zeros((len(uniq), 2, 3))
    slot = np.zeros(len(uniq), np.int64)
    for k in range(3):
        for t in range(nt):
            e = TE[t, k]
            EN[e, min(slot[e], 1)] = N[t]
            slot[e] += 1
    one = slot == 1
    EN[one, 1] = EN[one, 0]
    return T, N, uniq.astype(np.int64), PV, PE, TBlo, TBhi, TE, ESH, VSH, EN


#: triangles per cluster: culling tests the clusters' bounds first, then their triangles
CLUSTER = 16
#: clusters per super cluster (the level above; kernels.SUPER)
SUPER = 8


def n_super(ncl: int) -> int:
    """Super clusters of a shape with ``ncl`` clusters: none for up to SUPER (kernels._n_super)."""
    return (ncl + SUPER - 1) // SUPER if ncl > SUPER else 0


def with_super_clusters(c_off, c_cnt, CLlo, CLhi, CLS):
    """Cluster rows with each shape's super clusters appended after its clusters: the bounds of
    SUPER consecutive clusters each (they are Morton-ordered, so spatially coherent).  Returns
    (c_off, CLlo, CLhi, CLS) with the new row offsets; ``c_cnt`` (clusters per shape) is unchanged,
    CLS of a super row is the shape's first triangle position (never read)."""
    offs, los, his, css = np.zeros_like(c_off), [], [], []
    row = 0
    for i in range(len(c_off)):
        a, k = int(c_off[i]), int(c_cnt[i])
        ns = n_super(k)
        lo, hi = CLlo[a:a + k], CLhi[a:a + k]
        slo = [lo[j * SUPER:(j + 1) * SUPER].min(0) for j in range(ns)]
        shi = [hi[j * SUPER:(j + 1) * SUPER].max(0) for j in range(ns)]
        los += [lo] + ([np.array(slo)] if ns else [])
        his += [hi] + ([np.array(shi)] if ns else [])
        css += [CLS[a:a + k], np.full(ns, CLS[a] if k else 0, np.int64)]
        offs[i] = row
        row += k + ns
    cat = lambda xs, shape, dt=float: np.ascontiguousarray(np.concatenate(xs) if xs else np.zeros(shape, dt))
    return offs, cat(los, (0, 3)), cat(his, (0, 3)), cat(css, (0,), np.int64)


def _clusters(TBlo: np.ndarray, TBhi: np.ndarray):
    """Triangles in spatially coherent clusters of CLUSTER: order (nt,) of local triangle indices
    (sorted by the Morton code of their centres) and each cluster's bounds (ncl, 3) x 2."""
    nt = len(TBlo)
    if nt == 0:
        return np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3))
    c = 0.5 * (TBlo + TBhi)
    lo, hi = c.min(0), c.max(0)
    g = np.floor((c - lo) / np.maximum(hi - lo, 1e-12) * 1023.0).astype(np.int64)
    code = np.zeros(nt, np.int64)
    for bit in range(10):
        for ax in range(3):
            code |= ((g[:, ax] >> bit) & 1) << (3 * bit + ax)
    order = np.argsort(code, kind="stable").astype(np.int64)
    ncl = (nt + CLUSTER - 1) // CLUSTER
    clo = np.array([TBlo[order[k * CLUSTER:(k + 1) * CLUSTER]].min(0) for k in range(ncl)])
    chi = np.array([TBhi[order[k * CLUSTER:(k + 1) * CLUSTER]].max(0) for k in range(ncl)])
    return order, clo, chi


def _build(shape) -> ShapeGeometry:
    kind = KIND_CODE[shape.kind]
    size = shape.size
    radius = 0.0
    half = np.zeros(3)
    if kind == SPHERE:
        radius = size[0]
        lo, hi = -np.full(3, radius), np.full(3, radius)
    elif kind == CAPSULE:
        radius, half[2] = size[0], size[1] / 2
        lo, hi = -np.array([radius, radius, half[2] + radius]), np.array([radius, radius, half[2] + radius])
    elif kind == CYLINDER:
        radius, half[2] = size[0], size[1] / 2
        lo, hi = -np.array([radius, radius, half[2]]), np.array([radius, radius, half[2]])
    elif kind == BOX:
        half[:] = np.asarray(size) / 2
        lo, hi = -half.copy(), half.copy()
    else:
        V = np.asarray(shape.vertices, float)
        lo, hi = V.min(axis=0), V.max(axis=0)
    if kind in (BOX, MESH):
        V = np.ascontiguousarray(shape.vertices, dtype=float)
        T0 = np.ascontiguousarray(shape.faces, dtype=np.int64)
    elif kind == CYLINDER:
        V, T0 = _prism(radius, half[2], CYL_SECTIONS)
    else:
        V, T0 = np.zeros((0, 3)), np.zeros((0, 3), np.int64)
    if len(T0):
        T, N, E, PV, PE, TBlo, TBhi, TE, ESH, VSH, EN = _mesh_tables(V, T0)
    else:
        T, N, E = T0, np.zeros((0, 3)), np.zeros((0, 2), np.int64)
        PV = PE = np.zeros((0, 3, 3))
        TBlo = TBhi = np.zeros((0, 3))
        TE, ESH, VSH = np.zeros((0, 3), np.int64), np.zeros(0, bool), np.zeros(0, bool)
        EN = np.zeros((0, 2, 3))
    CLT, CLlo, CLhi = _clusters(TBlo, TBhi)
    return ShapeGeometry(kind, float(radius), half, np.asarray(lo, float), np.asarray(hi, float), V, T, N, E,
                         PV, PE, TBlo, TBhi, TE, ESH, VSH, EN, CLT, CLlo, CLhi)


class GeometryPool:
    """Flat arrays of the contact geometry of a list of shapes (index = shape index; None: no geometry).

    Triangle, edge and vertex indices are global (offsets into the concatenated arrays).
    """

    def __init__(self, shapes):
        n = len(shapes)
        self.kind = np.full(n, NONE, np.int64)
        self.radius = np.zeros(n)
        self.half = np.zeros((n, 3))
        self.lo = np.zeros((n, 3))
        self.hi = np.zeros((n, 3))
        self.X_LS = np.tile(np.eye(4), (n, 1, 1))
        self.v_off = np.zeros(n, np.int64); self.v_cnt = np.zeros(n, np.int64)
        self.t_off = np.zeros(n, np.int64); self.t_cnt = np.zeros(n, np.int64)
        self.e_off = np.zeros(n, np.int64); self.e_cnt = np.zeros(n, np.int64)
        self.c_off = np.zeros(n, np.int64); self.c_cnt = np.zeros(n, np.int64)
        Vs, Ts, Ns, Es, PVs, PEs, Los, His, TEs, ESHs, VSHs, ENs = ([] for _ in range(12))
        CTs, CLs, CHs, CSs = [], [], [], []
        nv = nt = ne = ncl = 0
        for i, s in enumerate(shapes):
            if s is None:
                continue
            g = shape_geometry(s)
            self.kind[i] = g.kind
            self.radius[i] = g.radius
            self.half[i] = g.half
            self.lo[i], self.hi[i] = g.lo, g.hi
            self.X_LS[i] = s.X_LS
            self.v_off[i], self.v_cnt[i] = nv, len(g.V)
            self.t_off[i], self.t_cnt[i] = nt, len(g.T)
            self.e_off[i], self.e_cnt[i] = ne, len(g.E)
            Vs.append(g.V); Ts.append(g.T + nv); Ns.append(g.N); Es.append(g.E + nv)
            PVs.append(g.PV); PEs.append(g.PE); Los.append(g.TBlo); His.append(g.TBhi)
            TEs.append(g.TE + ne); ESHs.append(g.ESH); VSHs.append(g.VSH); ENs.append(g.EN)
            k = len(g.CLlo)
            self.c_off[i], self.c_cnt[i] = ncl, k
            CTs.append(g.CLT + nt); CLs.append(g.CLlo); CHs.append(g.CLhi)
            CSs.append(nt + np.minimum(np.arange(k + 1) * CLUSTER, len(g.T))[:k])
            nv += len(g.V); nt += len(g.T); ne += len(g.E); ncl += k
        cat = lambda xs, shape, dt=float: np.ascontiguousarray(np.concatenate(xs) if xs else np.zeros(shape, dt))
        self.V = cat(Vs, (0, 3)); self.T = cat(Ts, (0, 3), np.int64); self.N = cat(Ns, (0, 3))
        self.E = cat(Es, (0, 2), np.int64); self.PV = cat(PVs, (0, 3, 3)); self.PE = cat(PEs, (0, 3, 3))
        self.TBlo = cat(Los, (0, 3)); self.TBhi = cat(His, (0, 3))
        self.TE = cat(TEs, (0, 3), np.int64); self.ESH = cat(ESHs, (0,), bool); self.VSH = cat(VSHs, (0,), bool)
        self.EN = cat(ENs, (0, 2, 3))
        self.CLT = cat(CTs, (0,), np.int64); self.CLlo = cat(CLs, (0, 3)); self.CLhi = cat(CHs, (0, 3))
        self.CLS = cat(CSs, (0,), np.int64)   # first position in CLT of each cluster (global)
        # each shape's rows: its c_cnt clusters, then its n_super(c_cnt) super clusters
        self.c_off, self.CLlo, self.CLhi, self.CLS = with_super_clusters(self.c_off, self.c_cnt, self.CLlo,
                                                                         self.CLhi, self.CLS)
        self.has_offset = ~np.all(np.abs(self.X_LS - np.eye(4)) == 0, axis=(1, 2))

    def arrays(self) -> tuple:
        """The tuple the kernels take (order fixed: see contacts._unpack)."""
        return (self.kind, self.radius, self.half, self.lo, self.hi, self.v_off, self.v_cnt, self.t_off,
                self.t_cnt, self.e_off, self.e_cnt, self.V, self.T, self.N, self.E, self.PV, self.PE,
                self.TBlo, self.TBhi, self.TE, self.ESH, self.VSH, self.EN, self.c_off, self.c_cnt, self.CLT,
                self.CLlo, self.CLhi, self.CLS)

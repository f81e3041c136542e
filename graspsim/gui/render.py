"""OpenGL 3.3 drawing of a world: shaded meshes, floor grid, friction cones, force arrows, probes.

Every shape's triangles are uploaded once into a static vertex buffer (smooth-shaded with
creases split at 35 degrees); each frame only the per-body model matrix changes.  Contacts,
arrows and probe spheres reuse three unit meshes (cone, arrow shaft, sphere) placed by a model
matrix each.  Requires a current OpenGL 3.3 core context (a pyglet window).
"""
from __future__ import annotations

import math

import numpy as np
from pyglet import gl
from pyglet.graphics.shader import Shader, ShaderProgram

from .camera import OrbitCamera, gl_matrix, orthographic

__all__ = ["Renderer", "ScaledTarget", "read_pixels", "CONE_RGBA", "FORCE_RGBA", "BACKGROUND_TOP", "BACKGROUND_BOTTOM"]

CONE_RGBA = (0.95, 0.05, 0.05)
FORCE_RGBA = (1.0, 0.85, 0.1)
PULL_RGBA = (1.0, 0.3, 1.0)
PROBE_RGBA = (0.2, 0.85, 1.0)
HIGHLIGHT = (1.0, 0.55, 0.05)
BACKGROUND_TOP = (0.33, 0.37, 0.44)
BACKGROUND_BOTTOM = (0.10, 0.11, 0.14)

# Lighting is computed per vertex (Gouraud): llvmpipe, the software renderer of CI and of machines
# without a GPU, is fill-rate bound, and a one-line fragment shader keeps large surfaces cheap.
_MESH_VS = """#version 330 core
in vec3 position;
in vec3 normal;
uniform mat4 model;
uniform mat3 normal_matrix;
uniform mat4 view_proj;
uniform vec4 color;
uniform vec3 eye;
uniform vec3 light_dir;
uniform vec3 rim_color;
uniform float rim;
uniform float shading;
out vec4 v_color;
void main() {
    vec4 w = model * vec4(position, 1.0);
    vec3 n = normalize(normal_matrix * normal);
    vec3 v = normalize(eye - w.xyz);
    if (dot(n, v) < 0.0) n = -n;            // two-sided lighting (open meshes, inside views)
    vec3 l = normalize(light_dir);
    float key = max(dot(n, l), 0.0);
    float head = max(dot(n, v), 0.0);
    float spec = pow(max(dot(n, normalize(l + v)), 0.0), 24.0);
    float lum = 0.28 + 0.47 * key + 0.30 * head;
    vec3 c = mix(color.rgb, color.rgb * lum + 0.10 * spec, shading);
    c += rim * pow(1.0 - head, 3.0) * rim_color;
    v_color = vec4(c, color.a);
    gl_Position = view_proj * w;
}
"""

_MESH_FS = """#version 330 core
in vec4 v_color;
out vec4 frag;
void main() { frag = v_color; }
"""

_LINE_VS = """#version 330 core
in vec3 position;
in vec4 colors;
uniform mat4 mvp;
out vec4 v_color;
void main() {
    v_color = colors;
    gl_Position = mvp * vec4(position, 1.0);
}
"""

_LINE_FS = """#version 330 core
in vec4 v_color;
out vec4 frag;
void main() { frag = v_color; }
"""

_IDENTITY = gl_matrix(np.eye(4))


def _smooth_mesh(vertices: np.ndarray, faces: np.ndarray, crease_deg: float = 35.0):
    """Vertices, normals and faces with smooth normals, split where faces meet at a sharp angle."""
    import trimesh

    m = trimesh.Trimesh(np.asarray(vertices, float), np.asarray(faces, np.int64), process=False)
    try:
        s = trimesh.graph.smooth_shade(m, angle=math.radians(crease_deg))
        v, f, n = np.asarray(s.vertices), np.asarray(s.faces), np.asarray(s.vertex_normals)
    except Exception:  # noqa: BLE001 - any trimesh trouble: fall back to flat shading
        v = np.asarray(vertices, float)[np.asarray(faces)].reshape(-1, 3)
        f = np.arange(len(v)).reshape(-1, 3)
        n = np.repeat(np.asarray(m.face_normals), 3, axis=0)
    return v.astype(np.float32), n.astype(np.float32), f.astype(np.uint32)


def _unit_cone(segments: int = 24):
    """Cone with its apex at the origin opening along +z: radius 1 at z = 1, with a base cap."""
    a = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    ring = np.c_[np.cos(a), np.sin(a), np.ones(segments)]
    side_n = np.c_[np.cos(a), np.sin(a), -np.ones(segments)] / math.sqrt(2)
    v = [np.zeros((segments, 3)), ring, ring, np.array([[0, 0, 1.0]])]
    n = [side_n, side_n, np.tile([0, 0, 1.0], (segments, 1)), np.array([[0, 0, 1.0]])]
    f = []
    for i in range(segments):
        j = (i + 1) % segments
        f.append((i, segments + i, segments + j))               # side (apex copy per segment)
        f.append((3 * segments, 2 * segments + i, 2 * segments + j))  # cap
    return np.concatenate(v), np.concatenate(n), np.array(f)


def _unit_cylinder(segments: int = 16):
    """Cylinder of radius 1 from z = 0 to z = 1 (side only): the shaft of an arrow."""
    a = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    c, s = np.cos(a), np.sin(a)
    v = np.r_[np.c_[c, s, np.zeros(segments)], np.c_[c, s, np.ones(segments)]]
    n = np.r_[np.c_[c, s, np.zeros(segments)], np.c_[c, s, np.zeros(segments)]]
    f = []
    for i in range(segments):
        j = (i + 1) % segments
        f += [(i, j, segments + j), (i, segments + j, segments + i)]
    return v, n, np.array(f)


def _unit_sphere():
    import trimesh

    m = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
    return np.asarray(m.vertices), np.asarray(m.vertices), np.asarray(m.faces)


def _frame_z(origin: np.ndarray, axis: np.ndarray, sx: float, sz: float) -> np.ndarray:
    """Model matrix mapping the unit +z meshes: origin, z along ``axis``, xy scaled by sx, z by sz."""
    z = axis / (np.linalg.norm(axis) or 1.0)
    h = np.array([1.0, 0, 0]) if abs(z[0]) < 0.9 else np.array([0, 1.0, 0])
    x = np.cross(h, z)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    M = np.eye(4)
    M[:3, 0], M[:3, 1], M[:3, 2], M[:3, 3] = x * sx, y * sx, z * sz, origin
    return M


def nice_step(length: float) -> float:
    """A 1-2-5 step close to ``length``."""
    if length <= 0:
        return 1.0
    e = 10 ** math.floor(math.log10(length))
    for k in (1, 2, 5, 10):
        if length <= k * e * 1.5:
            return k * e
    return 10 * e


class Renderer:
    """GL resources for one world, and the draw calls of one frame (see module docstring)."""

    def __init__(self, table, bounds: tuple[np.ndarray, np.ndarray], visuals: list | None = None):
        """``visuals``: per body, Visual entries drawn instead of its contact shape (URDF links)."""
        from .visuals import visual_triangles

        self.table = table
        self.mesh_prog = ShaderProgram(Shader(_MESH_VS, "vertex"), Shader(_MESH_FS, "fragment"))
        self.line_prog = ShaderProgram(Shader(_LINE_VS, "vertex"), Shader(_LINE_FS, "fragment"))
        self.shapes: list = []
        #: per body: [(vertex list, X_LS, rgb)] of its visuals; empty: draw the contact shape
        self.visuals: list = []
        self.visual_triangles = 0
        for i, s in enumerate(table.shapes):
            items = []
            for v in (visuals[i] if visuals else ()):
                tri = visual_triangles(v)
                if tri is not None and len(tri[1]):
                    items.append((self._upload(*_smooth_mesh(*tri)), np.asarray(v.X_LS), tuple(v.color)))
                    self.visual_triangles += len(tri[1])
            self.visuals.append(items)
            self.shapes.append(None if s is None or items else self._upload(*_smooth_mesh(s.vertices, s.faces)))
        self._unit = {"cone": _unit_cone(), "shaft": _unit_cylinder(), "sphere": _unit_sphere()}
        self.cone = self._upload(*self._unit["cone"])
        self.shaft = self._upload(*self._unit["shaft"])
        self.sphere = self._upload(*self._unit["sphere"])
        self._cone_vl = self._arrow_vl = None
        self._cone_key = self._arrow_key = None
        self.triangles = sum(len(s.faces) for s in table.shapes if s is not None)
        self._grid = None
        self._background = self.line_prog.vertex_list(
            6, gl.GL_TRIANGLES,
            position=("f", (-1, -1, 1, 1, -1, 1, 1, 1, 1, -1, -1, 1, 1, 1, 1, -1, 1, 1)),
            colors=("f", BACKGROUND_BOTTOM + (1,) + BACKGROUND_BOTTOM + (1,) + BACKGROUND_TOP + (1,)
                    + BACKGROUND_BOTTOM + (1,) + BACKGROUND_TOP + (1,) + BACKGROUND_TOP + (1,)))
        self._hull_cache: dict = {}
        self.set_grid(*bounds)

    def _upload(self, v, n, f):
        return self.mesh_prog.vertex_list_indexed(
            len(v), gl.GL_TRIANGLES, np.asarray(f, np.uint32).reshape(-1).tolist(),
            position=("f", np.asarray(v, np.float32).reshape(-1).tolist()),
            normal=("f", np.asarray(n, np.float32).reshape(-1).tolist()))

    def _lines(self, points: np.ndarray, colors: np.ndarray):
        return self.line_prog.vertex_list(
            len(points), gl.GL_LINES, position=("f", np.asarray(points, np.float32).reshape(-1).tolist()),
            colors=("f", np.asarray(colors, np.float32).reshape(-1).tolist()))

    # -- static scenery -----------------------------------------------------------------------
    def set_grid(self, lo: np.ndarray, hi: np.ndarray) -> None:
        """A floor grid under the scene (at its lowest point), 1-2-5 spacing, major lines every 5."""
        size = float(np.max(hi[:2] - lo[:2]))
        step = nice_step(max(size, 0.05) / 8)
        half = step * 5 * math.ceil(max(size, 0.05) * 1.5 / (step * 5))
        cx, cy = (np.round((lo[:2] + hi[:2]) / 2 / (5 * step)) * 5 * step)
        z = float(lo[2]) - 1e-4
        n = int(round(half / step))
        pts, cols = [], []
        for k in range(-n, n + 1):
            major = k % 5 == 0
            c = (0.75, 0.78, 0.85, 0.55) if major else (0.6, 0.63, 0.7, 0.25)
            t = k * step
            pts += [(cx + t, cy - half, z), (cx + t, cy + half, z), (cx - half, cy + t, z), (cx + half, cy + t, z)]
            cols += [c] * 4
        if self._grid is not None:
            self._grid.delete()
        self._grid = self._lines(np.array(pts), np.array(cols))
        self.grid_step = step

    # -- drawing --------------------------------------------------------------------------------
    def _mesh_uniforms(self, camera: OrbitCamera, view_proj: np.ndarray) -> None:
        p = self.mesh_prog
        p["view_proj"] = gl_matrix(view_proj)
        p["eye"] = tuple(float(x) for x in camera.eye)
        # key light from above, behind the viewer's right shoulder
        l = 0.6 * camera.right - 0.5 * camera.forward + np.array([0, 0, 1.0])
        p["light_dir"] = tuple(float(x) for x in l / np.linalg.norm(l))
        p["rim_color"] = HIGHLIGHT
        p["rim"] = 0.0
        p["shading"] = 1.0

    def _draw_mesh(self, vl, M: np.ndarray, rgba, rim: float = 0.0) -> None:
        p = self.mesh_prog
        p["model"] = gl_matrix(M)
        A = M[:3, :3]
        N = np.linalg.inv(A).T if abs(np.linalg.det(A) - 1.0) > 1e-6 else A
        p["normal_matrix"] = tuple(float(x) for x in N.T.reshape(-1))
        p["color"] = tuple(float(x) for x in rgba)
        p["rim"] = rim
        vl.draw(gl.GL_TRIANGLES)

    def draw(self, camera: OrbitCamera, width: int, height: int, poses: np.ndarray, *,
             highlighted: set = frozenset(), cones=(), cones_key=None, arrows=(), arrows_key=None,
             cone_height: float = 0.015, force_scale: float = 0.01, interaction=None) -> None:
        """Draw one frame of the 3-D scene into the current framebuffer (viewport 0,0,width,height).

        ``cones``: (apex point, axis, mu) per friction cone; ``arrows``: (tail, vector) per force
        arrow, in metres.  Their buffers are rebuilt only when ``cones_key`` / ``arrows_key`` change.
        """
        gl.glViewport(0, 0, width, height)
        gl.glDepthMask(gl.GL_TRUE)
        gl.glClear(gl.GL_DEPTH_BUFFER_BIT)  # the background, drawn after the meshes, covers the rest
        gl.glDisable(gl.GL_CULL_FACE)
        gl.glDisable(gl.GL_BLEND)           # opaque first: no read-modify-write per pixel
        gl.glEnable(gl.GL_DEPTH_TEST)
        gl.glDepthFunc(gl.GL_LEQUAL)
        V = camera.view_matrix()
        P = camera.projection_matrix(width / max(height, 1))
        VP = P @ V

        p = self.mesh_prog
        p.use()
        self._mesh_uniforms(camera, VP)
        for i, (vl, X) in enumerate(zip(self.shapes, poses)):
            for vvl, X_LS, rgb in self.visuals[i]:
                self._draw_mesh(vvl, X @ X_LS, rgb + (1.0,), 0.45 if i in highlighted else 0.0)
            if vl is None:
                continue
            M = X @ self.table.shapes[i].X_LS
            self._draw_mesh(vl, M, tuple(self.table.colors[i]) + (1.0,), 0.45 if i in highlighted else 0.0)
        p.stop()

        # background gradient on the far plane: only where no mesh was drawn
        gl.glDepthMask(gl.GL_FALSE)
        lp = self.line_prog
        lp.use()
        lp["mvp"] = _IDENTITY
        self._background.draw(gl.GL_TRIANGLES)
        gl.glEnable(gl.GL_BLEND)
        gl.glBlendFunc(gl.GL_SRC_ALPHA, gl.GL_ONE_MINUS_SRC_ALPHA)
        lp["mvp"] = gl_matrix(VP)
        self._grid.draw(gl.GL_LINES)
        lp.stop()
        gl.glDepthMask(gl.GL_TRUE)
        p.use()

        if cones:
            # all cones in one buffer (rebuilt when the contacts change); faint where hidden
            # (x-ray), strong where visible
            if self._cone_key != cones_key or self._cone_vl is None:
                models = [_frame_z(np.asarray(pt, float), np.asarray(ax, float), max(mu, 0.05) * cone_height,
                                   cone_height) for pt, ax, mu in cones]
                self._cone_vl = self._replace(self._cone_vl, self._instances(self._unit["cone"], models))
                self._cone_key = cones_key
            gl.glEnable(gl.GL_BLEND)
            gl.glDepthMask(gl.GL_FALSE)
            gl.glDisable(gl.GL_DEPTH_TEST)
            self._draw_mesh(self._cone_vl, np.eye(4), CONE_RGBA + (0.35,))
            gl.glEnable(gl.GL_DEPTH_TEST)
            self._draw_mesh(self._cone_vl, np.eye(4), CONE_RGBA + (0.85,))
            gl.glDepthMask(gl.GL_TRUE)

        if arrows:
            if self._arrow_key != arrows_key or self._arrow_vl is None:
                models = []
                for tail, vec in arrows:
                    models += self._arrow_models(np.asarray(tail, float), np.asarray(vec, float),
                                                 cone_height * 0.12)
                vl = None
                if models:
                    shafts = [m for k, m in models if k == "shaft"]
                    heads = [m for k, m in models if k == "head"]
                    vl = self._instances(self._unit["shaft"], shafts, self._unit["cone"], heads)
                self._arrow_vl = self._replace(self._arrow_vl, vl)
                self._arrow_key = arrows_key
            if self._arrow_vl is not None:
                self._draw_mesh(self._arrow_vl, np.eye(4), FORCE_RGBA + (1.0,))

        if interaction is not None:
            it = interaction
            s = cone_height * 0.25
            if it.kind == "pull":
                self._draw_mesh(self.sphere, _frame_z(it.target, np.array([0, 0, 1.0]), s, s), PULL_RGBA + (1,))
                self._draw_mesh(self.sphere, _frame_z(it.point_W, np.array([0, 0, 1.0]), s, s), PULL_RGBA + (1,))
                d = it.target - it.point_W
                if np.linalg.norm(d) > 1e-6:
                    self._draw_mesh(self.shaft, _frame_z(it.point_W, d, s * 0.3, float(np.linalg.norm(d))),
                                    PULL_RGBA + (1,))
            else:
                r = it.radius
                self._draw_mesh(self.sphere, _frame_z(it.target, np.array([0, 0, 1.0]), r, r), PROBE_RGBA + (0.6,))
            f = np.asarray(it.force)
            if np.linalg.norm(f) > 1e-9:
                self._arrow(it.point_W - f * force_scale, f * force_scale, cone_height * 0.12, PULL_RGBA)
        p.stop()

    @staticmethod
    def _arrow_models(tail: np.ndarray, vec: np.ndarray, radius: float) -> list:
        """Model matrices of an arrow's shaft and head (a cone whose apex is at the tip)."""
        L = float(np.linalg.norm(vec))
        if L < 1e-9:
            return []
        head = min(L * 0.4, radius * 6)
        return [("shaft", _frame_z(tail, vec, radius, L - head)), ("head", _frame_z(tail + vec, -vec, radius * 2.5, head))]

    def _arrow(self, tail: np.ndarray, vec: np.ndarray, radius: float, rgb) -> None:
        for kind, M in self._arrow_models(tail, vec, radius):
            self._draw_mesh(self.shaft if kind == "shaft" else self.cone, M, rgb + (1.0,))

    def _instances(self, unit, models, unit2=None, models2=()):
        """One vertex list holding ``unit`` placed by every matrix of ``models`` (and ``unit2`` by ``models2``)."""
        parts = []
        for u, Ms in ((unit, models), (unit2, models2)):
            if u is None or len(Ms) == 0:
                continue
            v, n, f = u
            M = np.asarray(Ms, float)
            A = M[:, :3, :3]
            P = np.einsum("kij,vj->kvi", A, v) + M[:, None, :3, 3]
            N = np.einsum("kij,vj->kvi", np.linalg.inv(A).transpose(0, 2, 1), n)
            F = f[None] + (np.arange(len(M)) * len(v))[:, None, None]
            parts.append((P.reshape(-1, 3), N.reshape(-1, 3), F.reshape(-1, 3)))
        if not parts:
            return None
        off, Ps, Ns, Fs = 0, [], [], []
        for P, N, F in parts:
            Ps.append(P)
            Ns.append(N)
            Fs.append(F + off)
            off += len(P)
        return self._upload(np.concatenate(Ps), np.concatenate(Ns), np.concatenate(Fs))

    @staticmethod
    def _replace(old, new):
        if old is not None:
            old.delete()
        return new

    # -- small viewports: axes gizmo and wrench-space projections ------------------------------
    def draw_gizmo(self, camera: OrbitCamera, x: int, y: int, size: int) -> None:
        """World axes (x red, y green, z blue) turning with the camera, in a corner viewport."""
        gl.glViewport(x, y, size, size)
        gl.glDisable(gl.GL_DEPTH_TEST)
        R = np.eye(4)
        R[:3, :3] = camera.view_matrix()[:3, :3]
        mvp = orthographic(-1.3, 1.3, -1.3, 1.3, -2, 2) @ R
        pts = np.array([[0, 0, 0], [1, 0, 0], [0, 0, 0], [0, 1, 0], [0, 0, 0], [0, 0, 1]], float)
        cols = np.array([[1, .3, .3, 1]] * 2 + [[.3, 1, .3, 1]] * 2 + [[.4, .6, 1, 1]] * 2)
        vl = self._lines(pts, cols)
        self.line_prog.use()
        self.line_prog["mvp"] = gl_matrix(mvp)
        vl.draw(gl.GL_LINES)
        self.line_prog.stop()
        vl.delete()

    def _hull(self, pts: np.ndarray):
        key = (pts.shape, float(pts.sum()), float(np.abs(pts).sum()))
        if key in self._hull_cache:
            return self._hull_cache[key]
        from scipy.spatial import ConvexHull, QhullError

        entry = None
        try:
            h = ConvexHull(pts)
            v = pts[h.simplices].reshape(-1, 3)
            fn = np.cross(v[1::3] - v[0::3], v[2::3] - v[0::3])
            fn /= np.linalg.norm(fn, axis=1, keepdims=True) + 1e-30
            entry = self._upload(v, np.repeat(fn, 3, axis=0), np.arange(len(v)).reshape(-1, 3))
        except (QhullError, ValueError):
            entry = None
        for old in self._hull_cache.values():
            if old is not None:
                old.delete()
        self._hull_cache = {key: entry}
        return entry

    def draw_wrench_space(self, camera: OrbitCamera, points: np.ndarray, rgb, x: int, y: int, size: int) -> None:
        """Convex hull of 3-D wrench-space points (force or torque part), seen with the camera's rotation."""
        gl.glViewport(x, y, size, size)
        gl.glEnable(gl.GL_DEPTH_TEST)
        gl.glClear(gl.GL_DEPTH_BUFFER_BIT)
        pts = np.asarray(points, float).reshape(-1, 3)
        ext = float(np.max(np.abs(pts))) if len(pts) else 1.0
        ext = ext if ext > 0 else 1.0
        R = np.eye(4)
        R[:3, :3] = camera.view_matrix()[:3, :3]
        S = np.diag([1 / ext, 1 / ext, 1 / ext, 1.0])
        VP = orthographic(-1.5, 1.5, -1.5, 1.5, -3, 3) @ R @ S
        axes = np.array([[-1, 0, 0], [1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1]], float) * ext * 1.2
        cols = np.array([[1, .3, .3, .9]] * 2 + [[.3, 1, .3, .9]] * 2 + [[.4, .6, 1, .9]] * 2)
        vl = self._lines(axes, cols)
        self.line_prog.use()
        self.line_prog["mvp"] = gl_matrix(VP)
        vl.draw(gl.GL_LINES)
        self.line_prog.stop()
        vl.delete()
        hull = self._hull(np.r_[pts, np.zeros((1, 3))]) if len(pts) >= 4 else None
        if hull is not None:
            p = self.mesh_prog
            p.use()
            p["view_proj"] = gl_matrix(VP)
            fwd = camera.forward
            p["eye"] = tuple(float(v) for v in (-fwd * 10 * ext))
            p["light_dir"] = tuple(float(v) for v in (-fwd + np.array([0, 0, 0.5])))
            p["rim_color"] = HIGHLIGHT
            p["shading"] = 1.0
            gl.glDepthMask(gl.GL_FALSE)
            self._draw_mesh(hull, np.eye(4), tuple(rgb) + (0.55,))
            gl.glDepthMask(gl.GL_TRUE)
            p.stop()
        gl.glDisable(gl.GL_DEPTH_TEST)

    def delete(self) -> None:
        for vl in self.shapes + [x[0] for items in self.visuals for x in items] + [
                self.cone, self.shaft, self.sphere, self._grid, self._background, self._cone_vl, self._arrow_vl]:
            if vl is not None:
                vl.delete()
        for h in self._hull_cache.values():
            if h is not None:
                h.delete()


class ScaledTarget:
    """An offscreen framebuffer for drawing the 3-D scene at a fraction of the window's resolution.

    Software OpenGL (llvmpipe) costs time in proportion to the pixels filled; on a busy machine the
    viewer draws the scene at a lower resolution and scales it up (:meth:`present`), keeping the
    frame rate, while the overlay text stays sharp.  Screenshots always use the full resolution.
    """

    def __init__(self):
        self.size = (0, 0)
        self.fbo = gl.GLuint(0)
        self.rbo = (gl.GLuint * 2)()

    def bind(self, width: int, height: int) -> None:
        """Make this the draw target, (re)allocating it at ``width`` x ``height``."""
        if (width, height) != self.size:
            self.delete()
            gl.glGenFramebuffers(1, self.fbo)
            gl.glGenRenderbuffers(2, self.rbo)
            gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, self.fbo)
            for rb, fmt, att in ((self.rbo[0], gl.GL_RGBA8, gl.GL_COLOR_ATTACHMENT0),
                                 (self.rbo[1], gl.GL_DEPTH_COMPONENT24, gl.GL_DEPTH_ATTACHMENT)):
                gl.glBindRenderbuffer(gl.GL_RENDERBUFFER, rb)
                gl.glRenderbufferStorage(gl.GL_RENDERBUFFER, fmt, width, height)
                gl.glFramebufferRenderbuffer(gl.GL_FRAMEBUFFER, att, gl.GL_RENDERBUFFER, rb)
            gl.glBindRenderbuffer(gl.GL_RENDERBUFFER, 0)
            status = gl.glCheckFramebufferStatus(gl.GL_FRAMEBUFFER)
            if status != gl.GL_FRAMEBUFFER_COMPLETE:
                gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, 0)
                self.delete()
                raise RuntimeError(f"offscreen framebuffer incomplete (status 0x{status:x})")
            self.size = (width, height)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, self.fbo)

    def present(self, width: int, height: int) -> None:
        """Scale the drawn picture onto the window's framebuffer and make that the target again."""
        gl.glBindFramebuffer(gl.GL_READ_FRAMEBUFFER, self.fbo)
        gl.glBindFramebuffer(gl.GL_DRAW_FRAMEBUFFER, 0)
        gl.glBlitFramebuffer(0, 0, self.size[0], self.size[1], 0, 0, width, height, gl.GL_COLOR_BUFFER_BIT,
                             gl.GL_LINEAR)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, 0)

    def delete(self) -> None:
        if self.size != (0, 0):
            gl.glDeleteFramebuffers(1, self.fbo)
            gl.glDeleteRenderbuffers(2, self.rbo)
            self.size = (0, 0)


def read_pixels(width: int, height: int) -> np.ndarray:
    """The current framebuffer's pixels as (height, width, 3) uint8, top row first."""
    buf = (gl.GLubyte * (width * height * 4))()
    gl.glPixelStorei(gl.GL_PACK_ALIGNMENT, 1)
    gl.glReadPixels(0, 0, width, height, gl.GL_RGBA, gl.GL_UNSIGNED_BYTE, buf)
    a = np.frombuffer(buf, np.uint8).reshape(height, width, 4)[::-1, :, :3]
    return np.ascontiguousarray(a)


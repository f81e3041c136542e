"""Orbit / pan / zoom camera for a z-up world (pure numpy, no OpenGL).

The camera looks at ``target`` from ``distance`` metres away, at ``azimuth`` (rad, about the
world z axis, measured from +x) and ``elevation`` (rad above the xy plane).  Pixel coordinates
follow pyglet: origin at the bottom-left corner of the window, y up.  Matrices are 4x4 numpy
arrays in the usual row-major mathematical layout; :func:`gl_matrix` turns one into the
column-major tuple OpenGL wants.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["OrbitCamera", "look_at", "perspective", "orthographic", "gl_matrix"]

_MAX_ELEVATION = math.radians(89.0)


def look_at(eye: np.ndarray, target: np.ndarray, up: np.ndarray = np.array([0.0, 0.0, 1.0])) -> np.ndarray:
    """View matrix (world -> camera) of a camera at ``eye`` looking at ``target`` (camera -z forward)."""
    eye = np.asarray(eye, float)
    f = np.asarray(target, float) - eye
    f /= np.linalg.norm(f)
    r = np.cross(f, up)
    if np.linalg.norm(r) < 1e-9:  # looking straight along up: pick any right vector
        r = np.cross(f, np.array([0.0, 1.0, 0.0]))
    r /= np.linalg.norm(r)
    u = np.cross(r, f)
    M = np.eye(4)
    M[0, :3], M[1, :3], M[2, :3] = r, u, -f
    M[:3, 3] = -M[:3, :3] @ eye
    return M


def perspective(fovy: float, aspect: float, near: float, far: float) -> np.ndarray:
    """OpenGL perspective projection (``fovy`` in rad)."""
    t = 1.0 / math.tan(fovy / 2.0)
    P = np.zeros((4, 4))
    P[0, 0] = t / aspect
    P[1, 1] = t
    P[2, 2] = (far + near) / (near - far)
    P[2, 3] = 2.0 * far * near / (near - far)
    P[3, 2] = -1.0
    return P


def orthographic(left: float, right: float, bottom: float, top: float, near: float, far: float) -> np.ndarray:
    """OpenGL orthographic projection."""
    P = np.eye(4)
    P[0, 0] = 2.0 / (right - left)
    P[1, 1] = 2.0 / (top - bottom)
    P[2, 2] = -2.0 / (far - near)
    P[0, 3] = -(right + left) / (right - left)
    P[1, 3] = -(top + bottom) / (top - bottom)
    P[2, 3] = -(far + near) / (far - near)
    return P


def gl_matrix(M: np.ndarray) -> tuple:
    """Column-major tuple of 16 floats for ``glUniformMatrix4fv`` (transpose = false)."""
    return tuple(float(x) for x in np.asarray(M, float).T.reshape(-1))


@dataclass
class OrbitCamera:
    """A z-up orbit camera.  Angles in radians, lengths in metres."""

    target: np.ndarray = field(default_factory=lambda: np.zeros(3))
    distance: float = 1.0
    azimuth: float = math.radians(-60.0)
    elevation: float = math.radians(25.0)
    fovy: float = math.radians(40.0)
    #: radians per pixel of mouse motion when orbiting
    orbit_speed: float = 0.008
    min_distance: float = 1e-3
    max_distance: float = 1e3

    def __post_init__(self) -> None:
        self.target = np.asarray(self.target, float).copy()

    # -- derived quantities -----------------------------------------------------------------
    @property
    def forward(self) -> np.ndarray:
        """Unit vector from the eye towards the target."""
        ce = math.cos(self.elevation)
        return -np.array([ce * math.cos(self.azimuth), ce * math.sin(self.azimuth), math.sin(self.elevation)])

    @property
    def eye(self) -> np.ndarray:
        return self.target - self.distance * self.forward

    @property
    def right(self) -> np.ndarray:
        """Camera right axis in world coordinates (always horizontal)."""
        return np.array([-math.sin(self.azimuth), math.cos(self.azimuth), 0.0])

    @property
    def up(self) -> np.ndarray:
        """Camera up axis in world coordinates."""
        return np.cross(self.right, self.forward)

    def view_matrix(self) -> np.ndarray:
        M = np.eye(4)
        r, u, f = self.right, self.up, self.forward
        M[0, :3], M[1, :3], M[2, :3] = r, u, -f
        M[:3, 3] = -M[:3, :3] @ self.eye
        return M

    def near_far(self) -> tuple[float, float]:
        return max(self.distance * 0.01, 1e-4), self.distance * 100.0 + 10.0

    def projection_matrix(self, aspect: float) -> np.ndarray:
        n, f = self.near_far()
        return perspective(self.fovy, aspect, n, f)

    # -- interaction ------------------------------------------------------------------------
    def orbit(self, dx: float, dy: float) -> None:
        """Rotate about the target by a mouse motion of (dx, dy) pixels (drag right: scene turns right)."""
        self.azimuth = (self.azimuth - dx * self.orbit_speed) % (2.0 * math.pi)
        self.elevation = float(np.clip(self.elevation - dy * self.orbit_speed, -_MAX_ELEVATION, _MAX_ELEVATION))

    def pixel_size(self, viewport_height: int) -> float:
        """World length of one pixel at the target's depth."""
        return 2.0 * self.distance * math.tan(self.fovy / 2.0) / max(viewport_height, 1)

    def pan(self, dx: float, dy: float, viewport_height: int) -> None:
        """Move the target so the point under the mouse follows a (dx, dy) pixel drag."""
        s = self.pixel_size(viewport_height)
        self.target = self.target - s * (dx * self.right + dy * self.up)

    def zoom(self, steps: float, factor: float = 0.85) -> None:
        """Zoom in by ``steps`` wheel clicks (negative: out); each click scales the distance by ``factor``."""
        self.distance = float(np.clip(self.distance * factor ** steps, self.min_distance, self.max_distance))

    def fit(self, center: np.ndarray, radius: float, margin: float = 1.15) -> None:
        """Aim at ``center`` from far enough that a sphere of ``radius`` fills the view."""
        self.target = np.asarray(center, float).copy()
        radius = max(float(radius), 1e-3)
        self.distance = margin * radius / math.sin(self.fovy / 2.0)
        self.max_distance = max(self.max_distance, 50 * self.distance)
        self.min_distance = min(self.min_distance, radius * 0.01)

    def set_angles(self, azimuth_deg: float, elevation_deg: float) -> None:
        self.azimuth = math.radians(azimuth_deg) % (2.0 * math.pi)
        self.elevation = float(np.clip(math.radians(elevation_deg), -_MAX_ELEVATION, _MAX_ELEVATION))

    # -- rays and projection ----------------------------------------------------------------
    def ray(self, x: float, y: float, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
        """World ray (origin, unit direction) through pixel (x, y)."""
        t = math.tan(self.fovy / 2.0)
        aspect = width / max(height, 1)
        nx = 2.0 * x / max(width, 1) - 1.0
        ny = 2.0 * y / max(height, 1) - 1.0
        d = self.forward + nx * t * aspect * self.right + ny * t * self.up
        return self.eye, d / np.linalg.norm(d)

    def project(self, points: np.ndarray, width: int, height: int) -> np.ndarray:
        """Pixel coordinates (n, 2) of world points (n, 3); points behind the camera get NaN."""
        p = np.atleast_2d(np.asarray(points, float))
        V = self.view_matrix()
        P = self.projection_matrix(width / max(height, 1))
        h = np.c_[p, np.ones(len(p))] @ (P @ V).T
        w = h[:, 3:4]
        with np.errstate(divide="ignore", invalid="ignore"):
            ndc = h[:, :2] / w
        ndc[w[:, 0] <= 0] = np.nan
        return np.c_[(ndc[:, 0] + 1.0) * 0.5 * width, (ndc[:, 1] + 1.0) * 0.5 * height]

    def drag_point(self, x: float, y: float, width: int, height: int, anchor: np.ndarray) -> np.ndarray:
        """Point under pixel (x, y) on the plane through ``anchor`` facing the camera."""
        o, d = self.ray(x, y, width, height)
        n = self.forward
        denom = float(d @ n)
        if abs(denom) < 1e-9:
            return np.asarray(anchor, float).copy()
        s = float((np.asarray(anchor, float) - o) @ n) / denom
        return o + s * d

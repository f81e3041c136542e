"""Pictures of the grasp wrench space: force- and torque-space 3-D projections.

Needs matplotlib (optional extra ``plot``); imported only when called.  Uses
an Agg canvas directly (no pyplot, no global backend change), so it works
headless.

The projection of a polytope onto a coordinate 3-space is the hull of the
projected vertices.  For L1 these are the projected primitive wrenches; for
L-infinity the support points of the 6-D space in directions ``[v, 0]``
(force) or ``[0, v]`` (torque) for ``n_directions`` unit ``v`` on a Fibonacci
sphere (exact vertices of the projection; an inner approximation when
``n_directions`` is small).  The epsilon ball of the 6-D space projects to the
3-D ball of the same radius, drawn as a wireframe around the origin.

The axes are the wrench coordinates: forces ``f`` per unit normal force (L1:
all contacts together; Linf: each contact), and torques ``tau`` about the
centre of mass times ``s = torque_scale`` (1 / m, GraspIt: 1 / the largest
distance from the centre of mass to the surface) so that both are forces.  A
caption under the plots says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .quality import GraspQuality, analyze_wrenches, support_function

__all__ = ["plot_gws", "projection_points", "caption"]


def _fibonacci_sphere(n: int) -> NDArray[np.float64]:
    i = np.arange(n) + 0.5
    z = 1.0 - 2.0 * i / n
    r = np.sqrt(1.0 - z * z)
    phi = np.pi * (1.0 + 5**0.5) * i
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


def projection_points(result: GraspQuality, part: str, n_directions: int = 400
                      ) -> NDArray[np.float64]:
    """Points whose 3-D hull is the projection of the GWS.

    ``part``: ``"force"`` (coordinates 0:3) or ``"torque"`` (3:6).
    Returns (n, 3).
    """
    sl = slice(0, 3) if part == "force" else slice(3, 6)
    W = result.wrenches
    if result.gws == "L1":
        return W.reshape(-1, W.shape[2])[:, sl]
    out = []
    for v in _fibonacci_sphere(n_directions):
        u = np.zeros(W.shape[2])
        u[sl] = v
        out.append(support_function(W, u, "Linf")[1][sl])
    return np.unique(np.round(np.array(out), 12), axis=0)


def _draw(ax: Any, pts: NDArray[np.float64], eps: float, color: str, labels: list[str]) -> None:
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    drawn = False
    if pts.shape[0] >= 4 and np.linalg.matrix_rank(pts - pts.mean(0), tol=1e-9) == 3:
        from scipy.spatial import ConvexHull

        hull = ConvexHull(pts)
        tri = [pts[s] for s in hull.simplices]
        ax.add_collection3d(Poly3DCollection(tri, facecolor=color, alpha=0.25,
                                             edgecolor="k", linewidth=0.2))
        drawn = True
    ax.scatter(*pts.T, s=6, c="k" if drawn else color)
    ax.scatter([0], [0], [0], s=40, c="r", marker="o", label="origin")
    if eps > 0:
        uu, vv = np.mgrid[0:2 * np.pi:24j, 0:np.pi:12j]
        ax.plot_wireframe(eps * np.cos(uu) * np.sin(vv), eps * np.sin(uu) * np.sin(vv),
                          eps * np.cos(vv), color="r", linewidth=0.4)
    lim = max(float(np.abs(pts).max()) if pts.size else 1.0, eps, 1e-9)
    for setlim in (ax.set_xlim, ax.set_ylim, ax.set_zlim):
        setlim(-lim, lim)
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ax.set_zlabel(labels[2])
    try:
        ax.set_box_aspect((1, 1, 1))
    except AttributeError:  # pragma: no cover - old matplotlib
        pass


def caption(gws: str, torque_scale: float | None = None) -> str:
    """What the axes of :func:`plot_gws` mean (the text under the plots)."""
    budget = ("a unit total normal force over all contacts (L1)" if gws == "L1"
              else "a unit normal force at each contact (Linf)")
    s = ("s = torque_scale" if torque_scale is None else
         f"s = {torque_scale:.4g} 1/m (1 / {1e3 / torque_scale:.1f} mm")
    s += ", 1 / the largest distance from the centre of mass to the surface" + ("" if torque_scale is None else ")")
    return (f"Wrenches the grasp can apply with {budget}: forces f = (fx, fy, fz) in units of that force.\n"
            f"s*tau: torque about the object's centre of mass times {s}, so that it is a force too.\n"
            "Red: the origin and the epsilon ball (the largest ball about the origin inside the space).")


def plot_gws(result: GraspQuality | Any, path: str | Path | None = None, *,
             gws: str | None = None, title: str | None = None,
             n_directions: int = 400, dpi: int = 120, torque_scale: float | None = None) -> Any:
    """Draw the force and torque projections of the GWS with the epsilon ball.

    Args:
        result: a :class:`GraspQuality` (from ``analyze``) or primitive
            wrenches (k, M, 6) (analysed here with ``gws``, default "L1").
        path: PNG file to write (parent directories are created); None to
            only return the figure.
        gws: space when ``result`` is a wrench array.
        title: figure title (default: space, closure and epsilon).
        n_directions: support directions for the Linf projections.
        dpi: resolution of the PNG.
        torque_scale: the ``s`` the torques were multiplied by (1/m), for
            the caption that explains the axes (see :func:`caption`).

    Returns:
        The ``matplotlib.figure.Figure``.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not isinstance(result, GraspQuality):
        result = analyze_wrenches(result, gws or "L1")
    fig = Figure(figsize=(10, 5.6))
    FigureCanvasAgg(fig)
    eps = float(result.epsilon)
    for i, (part, color, labels) in enumerate((
            ("force", "tab:blue", ["fx", "fy", "fz"]),
            ("torque", "tab:green", ["s*tau_x", "s*tau_y", "s*tau_z"]))):
        ax = fig.add_subplot(1, 2, i + 1, projection="3d")
        _draw(ax, projection_points(result, part, n_directions), eps, color, labels)
        ax.set_title("force space (fx, fy, fz)" if part == "force" else "torque space (s*tau: scaled torque)")
    fig.suptitle(title or (f"{result.gws} GWS: force closure={result.force_closure}, "
                           f"epsilon={eps:.4g}"))
    fig.text(0.5, 0.015, caption(result.gws, torque_scale), ha="center", va="bottom", fontsize=8)
    fig.subplots_adjust(bottom=0.14)
    if path is not None:
        from ..arguments import output_file

        p = output_file("plot_gws: path", path)
        fig.savefig(p, dpi=dpi)
    return fig

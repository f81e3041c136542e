"""Object-level grasp analysis: from a world's contacts to :func:`graspsim.grasp.analyze`.

The friction coefficient of each contact comes from the world's material table (static), the
torque origin is the object's centre of mass and the torque scale GraspIt's: 1 / the largest
distance from the centre of mass to the object's surface.  Contact normals are turned to point
*into* the object (the direction the finger pushes).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arguments import world_arg
from .quality import GraspQuality, analyze

__all__ = ["GraspContacts", "grasp_contacts", "evaluate_grasp", "torque_scale", "contact_force_margin"]


def torque_scale(world, obj: str) -> float:
    """1 / (largest distance from the object's centre of mass to its surface) (1/m)."""
    world_arg("torque_scale", world)
    b = world.bodies[obj].instance.obj
    verts = b.shape.vertices @ b.shape.X_LS[:3, :3].T + b.shape.X_LS[:3, 3]
    com = b.inertial.com if b.inertial is not None else np.zeros(3)
    return 1.0 / float(np.max(np.linalg.norm(verts - com, axis=1)))


@dataclass
class GraspContacts:
    """Contacts between a hand and an object, ready for analysis (all in W)."""

    links: list            # hand link name per contact
    points: np.ndarray     # (k, 3) m
    normals: np.ndarray    # (k, 3) unit, into the object
    mu: np.ndarray         # (k,) static friction coefficient from the material table
    tangents: np.ndarray   # (k, 3) first friction tangent
    separation: np.ndarray

    def __len__(self) -> int:
        return len(self.points)


def grasp_contacts(world, hand: str, obj: str, contacts=None) -> GraspContacts:
    """The contacts between ``hand``'s links and ``obj`` (from ``contacts``, a ContactSet of the
    world's body table, or found now with the world's threshold)."""
    world_arg("grasp_contacts", world)
    from ..collision import model_for

    t = world.table
    world.robots[hand], world.bodies[obj]    # (KeyErrors that list what the world has)
    if contacts is None:
        contacts = model_for(world).contacts(world.body_poses())
    ri = world.description.robot_index[hand]
    links = set(int(i) for i in t.robot_links[ri])
    io = t.index[obj]
    a, b = np.asarray(contacts.body_a), np.asarray(contacts.body_b)
    sel_a = np.isin(a, list(links)) & (b == io)      # link is a: normal a -> b points into the object
    sel_b = (a == io) & np.isin(b, list(links))      # object is a: flip
    sel = sel_a | sel_b
    normals = np.where(sel_b[:, None], -contacts.normal, contacts.normal)[sel]
    link_idx = np.where(sel_a, a, b)[sel]
    table = world.description.materials
    # each side's material: its shape's (a link or object may set one per shape), else its body's
    if contacts.shape_a is not None:
        sa, sb = np.asarray(contacts.shape_a), np.asarray(contacts.shape_b)
        hand_m = [t.shape_materials[s] for s in np.where(sel_a, sa, sb)[sel]]
        obj_m = [t.shape_materials[s] for s in np.where(sel_a, sb, sa)[sel]]
    else:
        hand_m = [t.materials[l] for l in link_idx]
        obj_m = [t.materials[io]] * len(link_idx)
    mu = np.array([table.mu(x, y)[0] for x, y in zip(hand_m, obj_m)])
    names = [t.names[l] for l in link_idx]
    return GraspContacts(names, contacts.point[sel], normals, mu, contacts.tangent1[sel], contacts.separation[sel])


def evaluate_grasp(world, hand: str, obj: str, *, contacts=None, gws: str = "L1", edges: int = 8,
                   volume: bool | None = None) -> tuple[GraspQuality | None, GraspContacts]:
    """Force closure, epsilon and volume of the grasp ``hand`` has on ``obj`` in the world's state.

    Returns ``(quality, contacts)``; quality is None when there are no contacts.  The volume is
    computed now for the L1 space (``volume=None``) and lazily on first access for L-infinity,
    whose hull grows exponentially with the contact count.
    """
    world_arg("evaluate_grasp", world)
    from .quality import _check_space

    gws = _check_space(gws)                  # (checked even when there is no contact to analyse)
    if volume is None:
        volume = gws == "L1"
    gc = grasp_contacts(world, hand, obj, contacts)
    if not len(gc):
        return None, gc
    com = world.bodies[obj].com_world
    q = analyze(gc.points, gc.normals, gc.mu, center=com, torque_scale=torque_scale(world, obj), edges=edges,
                tangents=gc.tangents, gws=gws, volume=volume)
    return q, gc


def contact_force_margin(world, hand: str, obj: str, points: np.ndarray, forces: np.ndarray, *,
                         quality: GraspQuality | None = None, gws: str = "L1"):
    """Where the wrench of measured contact forces (e.g. from a dynamic step; forces on the object,
    N, W) sits relative to the grasp wrench space: see :func:`graspsim.grasp.wrench_margin`."""
    world_arg("contact_force_margin", world)
    from .quality import wrench_margin
    from .wrenches import resultant_wrench

    if quality is None:
        quality, _ = evaluate_grasp(world, hand, obj, gws=gws)
    com = world.bodies[obj].com_world
    w = resultant_wrench(points, forces, center=com, torque_scale=torque_scale(world, obj))
    return wrench_margin(quality, w)

"""Closed-form planar two-link dynamics in high precision: the yardstick of the study and the tests.

For :func:`~graspsim.rigidbody.builders.planar_chain` with two links (no frame rotation): joints
turn about +y, so a link at angle ``theta`` points along ``(cos theta, 0, -sin theta)``.  With
``phi = -theta`` (the usual planar angle, heights ``l sin phi``) the Lagrange equations are the
textbook ones (e.g. Spong, Hutchinson & Vidyasagar, sec. 7.3):

    H11 = I1 + m1 c1^2 + I2 + m2 (l1^2 + c2^2 + 2 l1 c2 cos phi2)
    H12 = I2 + m2 (c2^2 + l1 c2 cos phi2),   H22 = I2 + m2 c2^2
    h   = -m2 l1 c2 sin phi2,   C = (h (2 phi1' phi2' + phi2'^2), -h phi1'^2)
    G   = (g (m1 c1 + m2 l1) cos phi1 + g m2 c2 cos(phi1 + phi2),  g m2 c2 cos(phi1 + phi2))

with ``c_k = l_k / 2`` and the plate inertia ``I_k = m_k (l_k^2 + w_k^2) / 12``.  Evaluated with the
standard library's :mod:`decimal` at ``digits`` significant digits (default 60) from the exact binary
values of the float inputs, so the result is exact to far below double precision.
"""
from __future__ import annotations

from decimal import Decimal, localcontext

__all__ = ["two_link_accelerations", "two_link_condition"]


def _pi() -> Decimal:
    """pi in the current context by Machin's formula 16 atan(1/5) - 4 atan(1/239)."""
    def atan_inv(n: int) -> Decimal:
        x, x2 = Decimal(1) / n, Decimal(n * n)
        term, total, k, sign = x, x, 1, 1
        eps = Decimal(10) ** -(_ctx_prec() + 5)
        while abs(term) > eps:
            term /= x2
            k += 2
            sign = -sign
            total += sign * term / k
        return total
    return 16 * atan_inv(5) - 4 * atan_inv(239)


def _ctx_prec() -> int:
    from decimal import getcontext
    return getcontext().prec


def _sincos(x: Decimal) -> tuple[Decimal, Decimal]:
    """(sin x, cos x) by argument reduction to [-pi, pi] and Taylor series."""
    pi = _pi()
    two_pi = 2 * pi
    x = x - two_pi * (x / two_pi).to_integral_value()
    eps = Decimal(10) ** -(_ctx_prec() + 5)
    s, c = Decimal(0), Decimal(0)
    term, n = Decimal(1), 0            # term = x^n / n!
    while True:
        if n % 4 == 0:
            c += term
        elif n % 4 == 1:
            s += term
        elif n % 4 == 2:
            c -= term
        else:
            s -= term
        n += 1
        term = term * x / n
        if abs(term) < eps and n > 2:
            return s, c


def _D(x) -> Decimal:
    return Decimal(float(x))            # the exact binary value of the double


def _H(l, m, w, cos_phi2):
    l1, l2 = l
    m1, m2 = m
    w1, w2 = w
    c1, c2 = l1 / 2, l2 / 2
    I1 = m1 * (l1 * l1 + w1 * w1) / 12
    I2 = m2 * (l2 * l2 + w2 * w2) / 12
    H11 = I1 + m1 * c1 * c1 + I2 + m2 * (l1 * l1 + c2 * c2 + 2 * l1 * c2 * cos_phi2)
    H12 = I2 + m2 * (c2 * c2 + l1 * c2 * cos_phi2)
    H22 = I2 + m2 * c2 * c2
    return H11, H12, H22


def two_link_accelerations(lengths, masses, widths, q, qd, tau, g: float = 9.81, digits: int = 60) -> tuple:
    """Joint accelerations ``(theta1'', theta2'')`` (rad/s^2, as :class:`~decimal.Decimal`).

    ``lengths``, ``masses``, ``widths`` (m, kg, m) of the two plates; ``q``, ``qd`` (rad, rad/s) and
    ``tau`` (N m) in graspsim's convention (rotation about +y); gravity ``g`` (m/s^2) along -z.
    """
    with localcontext() as ctx:
        ctx.prec = digits
        l = [_D(x) for x in lengths]
        m = [_D(x) for x in masses]
        w = [_D(x) for x in widths]
        p1, p2 = -_D(q[0]), -_D(q[1])
        d1, d2 = -_D(qd[0]), -_D(qd[1])
        t1, t2 = -_D(tau[0]), -_D(tau[1])
        G = _D(g)
        s2, c2s = _sincos(p2)
        _, c1s = _sincos(p1)
        _, c12 = _sincos(p1 + p2)
        H11, H12, H22 = _H(l, m, w, c2s)
        c2 = l[1] / 2
        h = -m[1] * l[0] * c2 * s2
        C1 = h * (2 * d1 * d2 + d2 * d2)
        C2 = -h * d1 * d1
        Gr1 = G * (m[0] * l[0] / 2 + m[1] * l[0]) * c1s + G * m[1] * c2 * c12
        Gr2 = G * m[1] * c2 * c12
        r1, r2 = t1 - C1 - Gr1, t2 - C2 - Gr2
        det = H11 * H22 - H12 * H12
        a1 = (H22 * r1 - H12 * r2) / det
        a2 = (H11 * r2 - H12 * r1) / det
        return -a1, -a2


def two_link_condition(lengths, masses, widths, q2: float, digits: int = 60) -> Decimal:
    """2-norm condition number of the two-link joint-space inertia at ``theta2 = q2``."""
    with localcontext() as ctx:
        ctx.prec = digits
        l = [_D(x) for x in lengths]
        m = [_D(x) for x in masses]
        w = [_D(x) for x in widths]
        _, c = _sincos(-_D(q2))
        H11, H12, H22 = _H(l, m, w, c)
        tr, det = H11 + H22, H11 * H22 - H12 * H12
        disc = ((H11 - H22) ** 2 + 4 * H12 * H12).sqrt()
        lmax = (tr + disc) / 2
        return lmax * lmax / det          # lmax / lmin with lmin = det / lmax

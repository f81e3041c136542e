"""Numerical behaviour of the reduced-coordinate dynamics: energy conservation under an adaptive
integrator, and the formulation stiffness of CRBM vs ABM (Cloutier 1995, ch. 5; Pai-Ascher-Kry sec. 7)
measured against a 60-digit closed-form reference."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import graspsim.rigidbody as rb
from graspsim import spatial
from graspsim.rigidbody.builders import random_rotation
from graspsim.rigidbody.reference import two_link_accelerations, two_link_condition

EPS = np.finfo(float).eps
G = np.array([0.0, 0.0, -9.8])


def _integrate(model, fd, y0, t1, tol, method="DOP853", t_eval=None):
    n = model.nv
    tau = np.zeros(n)
    nq = model.nq

    def f(t, y):
        q, v = y[:nq], y[nq:]
        return np.concatenate([rb.configuration_derivative(model, q, v), fd(model, q, v, tau)])
    return solve_ivp(f, (0.0, t1), y0, method=method, rtol=tol, atol=tol, t_eval=t_eval)


@pytest.mark.parametrize("method", ["abm", "crb"])
def test_energy_conserved_to_integrator_tolerance(method):
    """Unactuated 4-link spatial chain under gravity, 3 s: |E - E0| / max KE stays within 10 tol and
    falls with the tolerance (the dynamics add no drift of their own)."""
    model = rb.from_robot(rb.serial_chain(4, length=0.4, mass=1.5))
    fd = rb.forward_dynamics_abm if method == "abm" else rb.forward_dynamics_crb
    q0 = np.array([0.3, -0.8, 1.1, 0.4])
    E0 = rb.total_energy(model, q0, np.zeros(4))
    errs = []
    for tol in ((1e-6, 1e-8, 1e-10) if method == "abm" else (1e-10,)):
        sol = _integrate(model, fd, np.concatenate([q0, np.zeros(4)]), 3.0, tol, t_eval=np.linspace(0, 3, 151))
        assert sol.success
        E = np.array([rb.total_energy(model, y[:4], y[4:]) for y in sol.y.T])
        ke = max(rb.kinetic_energy(model, y[:4], y[4:]) for y in sol.y.T)
        assert ke > 10.0                                   # the chain really moves
        err = np.abs(E - E0).max() / ke
        assert err < 10 * tol
        errs.append(err)
    assert all(b < a for a, b in zip(errs, errs[1:]))


def test_floating_tree_conserves_energy_and_momentum_in_flight():
    rng = np.random.default_rng(4)
    model = rb.from_robot(rb.random_tree(5, rng), floating_base=True, gravity=np.zeros(3))
    q0 = np.zeros(model.nq)
    q0[:3] = rng.normal(size=3)
    q0[3:7] = spatial.matrix_to_quat(random_rotation(rng))
    q0[7:] = rng.normal(size=model.nq - 7)
    v0 = rng.normal(size=model.nv)
    E0, h0 = rb.kinetic_energy(model, q0, v0), rb.spatial_momentum(model, q0, v0)
    sol = _integrate(model, rb.forward_dynamics_abm, np.concatenate([q0, v0]), 1.0, 1e-10,
                     t_eval=np.linspace(0, 1, 11))
    assert sol.success
    for y in sol.y.T:
        q, v = y[:model.nq], y[model.nq:]
        assert abs(rb.kinetic_energy(model, q, v) - E0) < 1e-8 * E0
        assert np.abs(rb.spatial_momentum(model, q, v) - h0).max() < 1e-8 * np.abs(h0).max()


# -- formulation stiffness ---------------------------------------------------------------------

def _two_link(L, frame_rotation=None, align_axes=True):
    return rb.from_robot(rb.planar_chain([1.0, L], [1.0, L], 1.0, frame_rotation), gravity=G, align_axes=align_axes)


def _ref(L, q):
    return np.array([float(a) for a in two_link_accelerations([1, L], [1, L], [1, 1], q, [0, 0], [0, 0], g=9.8)])


def test_crbm_error_tracks_condition_number_abm_does_not():
    """Cloutier's two-link chain at rest (l2 = m2 = L): the CRBM relative error is a fixed fraction of
    cond(H) eps over 8 decades of cond, while ABM and modified ABM stay at a few ulp."""
    z = np.zeros(2)
    for L in (1e2, 1e3, 1e4, 1e5):
        model = _two_link(L)
        ref = _ref(L, z)
        bound = float(two_link_condition([1, L], [1, L], [1, 1], 0.0)) * EPS
        err = lambda f: np.max(np.abs(f(model, z, z, z) - ref) / np.abs(ref))  # noqa: E731
        assert 1e-3 * bound < err(rb.forward_dynamics_crb) < bound
        assert err(rb.forward_dynamics_abm) <= 4 * EPS
        assert err(rb.forward_dynamics_modified_abm) <= 4 * EPS


def test_axis_alignment_keeps_abm_exact_in_rotated_frames():
    """With link frames not aligned with the joint axes (Pai-Ascher-Kry sec. 7) the ABM's projection
    is no longer exact and its error grows with cond(H); the modified pivot does not cure this, but
    graspsim's axis alignment (the default) restores machine precision."""
    q = np.array([0.3, 0.7])
    L = 1e4
    ref = _ref(L, q)
    rng = np.random.default_rng(3)
    for _ in range(3):
        Q = random_rotation(rng)
        unaligned, aligned = _two_link(L, Q, align_axes=False), _two_link(L, Q)
        err = lambda f, m: np.max(np.abs(f(m, q, np.zeros(2), np.zeros(2)) - ref) / np.abs(ref))  # noqa: E731
        assert err(rb.forward_dynamics_abm, unaligned) > 1e-12
        assert err(rb.forward_dynamics_modified_abm, unaligned) > 1e-12
        assert err(rb.forward_dynamics_abm, aligned) < 1e-14
        assert err(rb.forward_dynamics_crb, aligned) > 1e-10


def test_crbm_noise_costs_adaptive_integrator_evaluations():
    """r = l1/(l1+l2) = 1e-10 (cond(H) ~ 6e13), 2 s at accuracy 1e-6: the CRBM's noisy accelerations
    make RK45 take clearly more steps than the ABM, which costs what a well-conditioned chain costs."""
    def nfev(r, fd):
        model = rb.from_robot(rb.planar_chain([20 * r, 20 * (1 - r)], [40 * r, 40 * (1 - r)], 1.0), gravity=G)
        sol = _integrate(model, fd, np.zeros(4), 2.0, 1e-6, method="RK45")
        assert sol.success
        return sol.nfev
    abm, crbm = nfev(1e-10, rb.forward_dynamics_abm), nfev(1e-10, rb.forward_dynamics_crb)
    abm_ok = nfev(1e-5, rb.forward_dynamics_abm)
    assert crbm > 1.5 * abm
    assert abs(abm - abm_ok) < 0.1 * abm_ok

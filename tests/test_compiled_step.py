"""The compiled island solver (dynamics/_island_kernel.py) against the reference implementation of
dynamics/island.py (used when a Simulator is given an LCP solver): the same step from the same
state must give the same velocities, contact impulses and joint projection.

Both solve the same equations with the same Lemke pivoting; they differ only in the order of
floating-point operations (a hand-written Cholesky and sparse-free dense products instead of LAPACK
and einsum), so one step agrees to round-off amplified by the conditioning of the eliminated
system.  Velocities: 1e-8 of their scale (at least g h); the contact compliance (below) bounds
the amplification (observed ~1e-10).  Contact impulses: their distribution over the points of a
face contact, and the static friction of a resting pile, are fixed only by the contact compliance
(1e-6 of the LCP's diagonal), and each path accepts a solution that verifies to 1e-9 of the LCP's
terms (possibly a warm-started basis in one, a fresh one in the other); so the impulses may differ
by up to ~1e-9 / 1e-6 = 1e-3 of the largest one.  Asserted: 1e-4 (observed up to 7e-6, in the
stack's friction impulses of 1e-7 N s next to 3e-3 N s normal ones).
"""
from pathlib import Path

import numpy as np
import pytest

import graspsim
from graspsim import spatial
from graspsim.control import PDController
from graspsim.dynamics import Simulator
from graspsim.lcp import lemke

ROOT = Path(__file__).resolve().parent.parent
MODELS = Path(__file__).resolve().parent / "models"


def _pair(world_path, setup=None, steps=60):
    sims = [Simulator(graspsim.load_world(world_path)), Simulator(graspsim.load_world(world_path), lemke=lemke)]
    ctls = [setup(s) if setup else None for s in sims]
    for _ in range(steps):
        sims[0].step(ctls[0])
    sims[1].restore_state(sims[0].save_state())
    return sims, ctls


def _barrett_closing(sim):
    ctl = PDController(sim)
    ri = sim.world.description.robot_index["barrett"]
    lim = sim.world.description.robots[ri].robot.dof_limits
    ctl.move_to("barrett", [0.0, lim[1, 1], lim[2, 1], lim[3, 1]])
    return ctl


@pytest.mark.parametrize("case", ["stack", "barrett_mug"])
def test_compiled_island_step_matches_reference(case):
    if case == "stack":
        sims, ctls = _pair(MODELS / "stack.yaml", steps=40)
    else:
        sims, ctls = _pair(ROOT / "worlds/barrett_mug.yaml", _barrett_closing, steps=500)
    checked_lcp = 0
    for _ in range(30):
        infos = [s.step(c) for s, c in zip(sims, ctls)]
        vs = [s.state.v for s in sims]
        # velocity scale: at least what gravity adds in one step (resting bodies barely move)
        scale = max(9.81 * sims[1].dt, float(np.abs(vs[1]).max()))
        assert np.abs(vs[0] - vs[1]).max() <= 1e-8 * scale
        assert np.abs(sims[0].state.c - sims[1].state.c).max() <= 1e-12
        imp = [i.contact_impulse for i in infos]
        if imp[1] is not None and len(imp[1]):
            assert np.abs(imp[0] - imp[1]).max() <= 1e-4 * max(1e-6, float(np.abs(imp[1]).max()))
        assert infos[0].lcp_sizes == infos[1].lcp_sizes
        checked_lcp += len(infos[0].lcp_sizes)
        # continue both from the same state so round-off does not accumulate
        sims[1].restore_state(sims[0].save_state())
    assert checked_lcp >= 30    # every step solved at least one LCP (contacts present)


def _random_state(sim, rng):
    """A perturbed state of every dynamic body (joints slightly violated, arbitrary velocities)."""
    st = sim.save_state()
    nb = len(st.c)
    st.c = st.c + 1e-3 * rng.standard_normal((nb, 3))
    q = st.q + 0.05 * rng.standard_normal((nb, 4))
    st.q = q / np.linalg.norm(q, axis=1, keepdims=True)
    st.v = rng.standard_normal((nb, 6))
    return st


def test_compiled_row_builders_match_vectorised_reference():
    """Compiled body-state and joint-row builders (dynamics/_rows_kernel.py) against the numpy
    versions in bodies.py and joints.py on perturbed states of the Puma + Barrett world (revolute,
    fixed mount, coupled joints): identical up to a few ulps."""
    from graspsim.dynamics import _rows_kernel as RK
    from graspsim.dynamics import bodies as B
    from graspsim.dynamics.joints import equality_rows, joint_frames, joint_values

    sim = Simulator(graspsim.load_world(ROOT / "worlds/puma_barrett_handset.yaml"))
    rng = np.random.default_rng(3)
    for _ in range(5):
        st = _random_state(sim, rng)
        h = 2.5e-3
        c1, q1 = RK.integrate(st.c, st.q, st.v, h)
        c2, q2 = B.integrate_poses(st.c, st.q, st.v, h)
        assert np.abs(c1 - c2).max() < 1e-15 and np.abs(q1 - q2).max() < 1e-15
        X = sim._poses(c1, q1)
        Xref = sim._data.X_static.copy()
        Xref[sim.bodies.table_index] = B.link_poses(c1, spatial.quat_to_matrix(q1), sim.bodies.com_L)
        assert np.abs(X - Xref).max() < 1e-15
        F, jq = sim._joint_state(X, st.joint_q)
        Fr = joint_frames(sim.js, X)
        for name in ("o", "o_c", "R", "R_c", "axis", "perp"):
            assert np.abs(getattr(F, name) - getattr(Fr, name)).max() < 1e-14, name
        assert np.abs(jq - joint_values(sim.js, Fr, previous=st.joint_q)).max() < 1e-13
        com_W = sim._com_world(X)
        rows, ref = sim._equality_rows(F, com_W, None), equality_rows(sim.js, Fr, sim.bodies.slot, com_W)
        assert np.array_equal(rows.bodies, ref.bodies)
        assert np.abs(rows.jac - ref.jac).max() < 1e-14
        assert np.abs(rows.rhs - ref.rhs).max() < 1e-14
        # inverse masses, gyroscopic term and M^-1 (M v + h k) against the dense 6x6 per body
        k = rng.standard_normal((len(st.c), 6))
        I_W, Minv, aM = RK.mass_terms(sim.bodies.mass, sim.bodies.inertia_L, q1, st.v, k.copy(), h)
        I_ref = B.world_inertia(spatial.quat_to_matrix(q1), sim.bodies.inertia_L)
        w = st.v[:, 3:]
        gyro = -np.cross(w, np.einsum("nij,nj->ni", I_ref, w))
        for i in range(len(st.c)):
            M = np.zeros((6, 6))
            M[:3, :3] = sim.bodies.mass[i] * np.eye(3)
            M[3:, 3:] = I_ref[i]
            assert np.allclose(Minv[i] @ M, np.eye(6), atol=1e-10)
            kk = k[i] + np.concatenate([np.zeros(3), gyro[i]])
            assert np.allclose(aM[i], st.v[i] + h * np.linalg.solve(M, kk), rtol=1e-10, atol=1e-12)


def _assemblies(sim, ctl):
    """The compiled assembly (steps 5-8 and every row) and the reference one, at the current state."""
    s, h = sim.state, sim.dt
    V = sim._kinematic_velocities(s.time + h)
    mv = sim._move(s, h)
    if mv.contacts is False:
        mv.contacts = sim._find_contacts(mv.X)
    cmd = ctl.command(sim) if ctl is not None else None
    return sim._assemble(s, mv, cmd, V, h), sim._assemble_reference(s, mv, cmd, V, h)


@pytest.mark.parametrize("case", ["barrett_mug", "puma_lift"])
def test_compiled_assembly_matches_reference(case):
    """RK.assemble (one call for steps 5-8 and every row) against the Python/numpy assembly from the
    separate row kernels: the same rows in the same order (bodies exact), Jacobians, targets,
    compliances, position errors, friction coefficients and wrenches to round-off (the kinematic
    base's row constants and the coms are summed in another order)."""
    if case == "barrett_mug":
        sim = Simulator(graspsim.load_world(ROOT / "worlds/barrett_mug.yaml"))
        ctl = _barrett_closing(sim)
        steps = 400
    else:
        from graspsim import spatial
        sim = Simulator(graspsim.load_world(ROOT / "worlds/puma_barrett_handset.yaml"))
        ctl = _barrett_closing(sim)
        X0 = sim.world.base_pose(sim.world.description.robot_index["puma"])
        sim.set_base_motion("puma", lambda t: (X0 @ spatial.translation([0.0, 0.0, 0.02 * t]),
                                               np.array([0.0, 0.0, 0.02, 0.0, 0.0, 0.0])))
        steps = 300
    seen_contacts = 0
    for i in range(steps):
        if i % 50 == 49:
            a, r = _assemblies(sim, ctl)
            assert np.array_equal(a.sizes, r.sizes) and a.n_joint_rows == r.n_joint_rows
            K = r.rows.bodies.shape[1]
            assert np.array_equal(a.rows.bodies[:, :K], r.rows.bodies) and (a.rows.bodies[:, K:] == -1).all()
            assert np.abs(a.rows.jac[:, :K] - r.rows.jac).max(initial=0) <= 1e-12
            scale = max(1.0, np.abs(r.rows.rhs).max(initial=0))
            assert np.abs(a.rows.rhs - r.rows.rhs).max(initial=0) <= 1e-12 * scale
            assert np.array_equal(a.rows.comp, r.rows.compliance())
            assert np.abs(a.hard_err - r.hard_err).max(initial=0) <= 1e-15
            assert np.array_equal(a.mu, r.mu)
            assert np.abs(a.k - r.k).max() <= 1e-12 * max(1.0, np.abs(r.k).max())
            seen_contacts += len(a.mu)
        sim.step(ctl)
    assert seen_contacts > 0


@pytest.mark.parametrize("u", [2, 4, 6, 8])
def test_contact_block_on_base_rows_is_the_direct_one(u):
    """In an island with equality rows the kernel computes the contact rows' LCP block
    H^T M^-1 H - Y^T Y (Y = L^-1 J^T M^-1 H, eq. 20) on a contact's normal and two of its friction
    rows only, and expands it to the other u - 2 (each a combination of those two: d_e = cos t_e t1
    + sin t_e t2).  Against the direct product over every row, on contact rows built by the step's own row
    kernel and random equality rows over 4 bodies with random inertias: equal to 1e-12 of the
    largest entry (round-off of the combination)."""
    from graspsim.dynamics import _island_kernel as IK
    from graspsim.dynamics import _rows_kernel as RK

    rng = np.random.default_rng(u)
    nb, k, ne = 4, 5, 9
    sa = rng.integers(0, nb - 1, k)
    n = rng.normal(size=(k, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    t1 = np.cross(n, rng.normal(size=3))
    t1 /= np.linalg.norm(t1, axis=1)[:, None]
    nbod, nj, _, fb, fj = RK.contact_rows(sa, sa + 1, rng.normal(size=(k, 3)), rng.normal(size=(k, 3)),
                                          rng.normal(size=(k, 3)), n, t1, np.cross(n, t1), np.zeros(k), 0.0, 1.0, u)
    eb = np.stack([rng.integers(0, nb - 1, ne), rng.integers(1, nb, ne)], axis=1)
    bodies = np.concatenate([eb, nbod, fb])
    jac = np.concatenate([rng.normal(size=(ne, 2, 6)), nj, fj])
    A = rng.normal(size=(nb, 6, 6))
    Minv = np.einsum("bij,bkj->bik", A, A) + 0.1 * np.eye(6)
    local = np.arange(nb)
    e_rows, h_rows = np.arange(ne), np.arange(ne, len(bodies))
    ebb, ej, ew, ecnt = IK._compact(local, bodies, jac, e_rows, Minv)
    es, er, ee = IK._by_body(ebb, ecnt, nb)
    L, fL, ok = IK._factor(IK._product(nb, es, er, ee, ej, es, er, ee, ew, ne, ne))
    assert ok
    hb, hj, hw, hcnt = IK._compact(local, bodies, jac, h_rows, Minv)

    def block(rows):        # H^T M^-1 H - Y^T Y of the listed contact rows
        b, j, w, cnt = hb[rows], hj[rows], hw[rows], hcnt[rows]
        s, r, e = IK._by_body(b, cnt, nb)
        return (IK._product(nb, s, r, e, j, s, r, e, w, len(rows), len(rows))
                - IK._elimination_term(nb, s, r, e, w, ne, es, er, ee, ej, L, fL))

    direct = block(np.arange(len(h_rows)))
    base, ca, cb, pa, pb = IK._friction_basis(k, k, u)
    assert len(base) == k + (2 if u > 2 else 1) * k
    G = IK._expand(block(base), ca, cb, pa, pb)
    assert np.abs(G - direct).max() <= 1e-12 * np.abs(direct).max()
    S = IK._elimination_term(nb, *IK._by_body(hb, hcnt, nb), hw, ne, es, er, ee, ej, L, fL)
    assert np.abs(S).max() > 1e-3 * np.abs(direct).max()     # the equality rows do take something

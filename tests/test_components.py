"""The simulator's joint connectivity (bodies tied by joints and DOF couplings, from which islands
grow by contacts) is labelled as scipy's connected_components labels it, without importing
scipy.sparse (~0.3 s of every process's start-up)."""
import subprocess
import sys

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

import graspsim
from graspsim.dynamics import Simulator
from graspsim.dynamics.simulator import _components


@pytest.mark.parametrize("seed", range(20))
def test_labels_equal_scipys_on_random_graphs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    m = int(rng.integers(0, 2 * n))
    ei, ej = rng.integers(0, n, m).tolist(), rng.integers(0, n, m).tolist()
    k, labels = _components(n, ei, ej)
    k_ref, ref = connected_components(coo_matrix((np.ones(m), (ei, ej)), shape=(n, n)), directed=False)
    assert k == k_ref and labels.dtype == np.int64 and np.array_equal(labels, ref)


def test_no_nodes():
    k, labels = _components(0, [], [])
    assert k == 0 and labels.shape == (0,) and labels.dtype == np.int64


def test_the_barretts_components_follow_its_joints_and_its_spread_coupling():
    """The palm is the fixed base (static), so its joints tie no dynamic bodies together: each
    finger's links are tied by their joints, fingers 1 and 2 also by the spread DOF that turns both
    knuckles; finger 3 (no knuckle) and the free mug are components of their own."""
    sim = Simulator(graspsim.load_world("worlds/barrett_mug.yaml"))
    names = [sim.table.names[i] for i in sim.bodies.table_index]
    comp = dict(zip(names, sim._comp.tolist()))
    f12 = {comp[f"barrett/f{i}_{p}"] for i in (1, 2) for p in ("knuckle", "prox", "dist")}
    f3 = {comp["barrett/f3_prox"], comp["barrett/f3_dist"]}
    assert len(f12) == 1 and len(f3) == 1 and len(f12 | f3 | {comp["mug"]}) == 3 and sim._ncomp == 3


def test_importing_the_simulator_does_not_load_scipy_sparse():
    code = ("import sys, graspsim, graspsim.dynamics, graspsim.control; "
            "print(sorted(m for m in sys.modules if m.startswith('scipy.sparse')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

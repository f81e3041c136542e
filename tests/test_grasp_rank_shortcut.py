"""analyze skips the rank SVD when epsilon certifies a full-dimensional space: same results.

The bound (quality._rank_certified): an origin-centred ball of radius eps inside the space makes
the smallest singular value of the (centred, for L1) wrench matrix at least sqrt(2) eps (L1) or
eps / k (Linf), far above RANK_RTOL times the largest.  Checked here against the SVD itself, on
grasps and on wrench clouds squashed towards a hyperplane down to and past the rank threshold.
"""

from __future__ import annotations

import numpy as np
import pytest

import graspsim.grasp as g
from graspsim.grasp.quality import _as_wrench_array, _rank_certified, _scale, _search, _space_rank

Z3 = np.zeros(3)


def _sphere_grasp(rng: np.random.Generator, k: int):
    d = rng.normal(size=(k, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return d, -d


@pytest.mark.parametrize("gws", ["L1", "Linf"])
def test_rank_is_the_svd_rank_on_grasps(gws):
    rng = np.random.default_rng(25)
    n_fc = 0
    for trial in range(40):
        k = int(rng.integers(2, 6)) if gws == "L1" else int(rng.integers(2, 4))
        P, N = _sphere_grasp(rng, k)
        mu = float(rng.choice([0.0, 0.3, 0.8]))
        edges = 8 if gws == "L1" else 4
        for volume in (False, True):
            r = g.analyze(P, N, mu, center=Z3, torque_scale=1.0, gws=gws, edges=edges,
                          volume=volume)
            W = r.wrenches
            assert r.rank == _space_rank(W, gws)
            if r.force_closure:
                n_fc += 1
                # the certificate is never wrong: certified means the SVD finds full rank
                assert _rank_certified(W, gws, r.epsilon, _scale(W, gws))
            else:
                assert r.epsilon == 0.0
    assert n_fc >= 10


@pytest.mark.parametrize("gws", ["L1", "Linf"])
def test_thin_wrench_sets_follow_the_svd_rank(gws):
    """A closure-capable cloud squashed to relative thickness t along a random direction: the
    result's rank, closure and volume are those the SVD rank dictates (rank 5 -> no closure,
    volume 0), whatever t, and the certificate never claims full rank where the SVD does not."""
    rng = np.random.default_rng(26)
    seen = set()
    # (Linf: not at 1e-9..3e-10, where the space is full-dimensional but too thin for the search
    # and the qhull fallback on the enumerated Minkowski sum takes seconds, as it always did)
    thick = (1e-3, 1e-8, 1e-9, 3e-10, 1e-10, 3e-11, 1e-11, 1e-12, 0.0)
    for t in (thick if gws == "L1" else (1e-3, 1e-8, 1e-10, 1e-12, 0.0)):
        for trial in range(3):
            W = rng.normal(size=(30, 6))
            W -= W.mean(axis=0)                  # origin inside: closure when full-dimensional
            n = rng.normal(size=6)
            n /= np.linalg.norm(n)
            W -= (1.0 - t) * np.outer(W @ n, n)  # thickness t along n
            Wk = _as_wrench_array(W.reshape(3, 10, 6) if gws == "Linf" else W)
            rank = _space_rank(Wk, gws)
            seen.add(rank)
            # the certificate, with the epsilon the search finds, never contradicts the SVD
            st, b, _, _, _, _ = _search(Wk, gws)
            if st == 0 and b > 0.0 and _rank_certified(Wk, gws, b, _scale(Wk, gws)):
                assert rank == 6
            for volume in ((False, True) if gws == "L1" else (False,)):
                r = g.analyze_wrenches(Wk, gws, volume=volume)
                assert r.rank == rank
                if rank < 6:
                    assert not r.force_closure and r.epsilon == 0.0 and r._volume in (None, 0.0)
                    if gws == "L1":
                        assert r.volume == 0.0
                elif gws == "L1":
                    assert r.volume > 0.0
    assert seen == {5, 6}


@pytest.mark.parametrize("gws", ["L1", "Linf"])
def test_lazy_volume_uses_the_known_rank(gws, monkeypatch):
    """The lazy ``volume`` of a full-rank analyze result equals gws_volume (computed first, with
    the rank test) and runs no second rank SVD."""
    import graspsim.grasp.quality as quality

    rng = np.random.default_rng(7)
    results = []
    for _ in range(12):
        P, N = _sphere_grasp(rng, 3)
        r = g.analyze(P, N, 0.5, center=Z3, torque_scale=1.0, gws=gws, edges=6 if gws == "L1" else 4)
        results.append((r, g.gws_volume(r.wrenches, gws)))
    assert all(r.rank == 6 and v > 0.0 for r, v in results)
    calls = []
    monkeypatch.setattr(quality, "_space_rank", lambda W, s: calls.append(1) or _space_rank(W, s))
    for r, v in results:
        assert r.volume == pytest.approx(v, rel=1e-12, abs=0.0)
    assert calls == []

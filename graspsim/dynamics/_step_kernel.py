"""The time step's kernels chained in compiled code (issue 18, "one compiled call per step").

:func:`collide` chains the kernels that ``Simulator._move`` calls one by one from Python when a step
is not cut: the trial move (``_rows_kernel.trial_move``, eq. 10-12 and the joints), the impact
screen (``_impact_kernel.screen_pairs``), the shape frames (``kernels.shape_frames``), the contact
search (``kernels.contacts_kernel``) and the region limit (``_simplify_kernel.
limit_regions_in_place``).  :func:`rollout_steps` loops over whole steps with it and the kernels of
steps 5-10 (the loop of ``Simulator.rollout``, :mod:`graspsim.dynamics.rollout`).  Every kernel is
called through its machine-code address (:func:`graspsim._native.call_native`; the addresses and
the kernels' registered names come from :mod:`graspsim.dynamics.rollout`): each computes what it
computes when Python calls it, bit for bit, and none is compiled a second time into these.

What the Python path does between the kernels is done here the same way (the body velocities for
the screen, the copies of the contact blocks, the deepest separation, the contact arrays, the rest
counts, the commit).  Where the Python path would do more -- a joint limit crossed, a pair the
screen cannot clear (the impact search), a pose the collision queries refuse, buffers to grow, an
overlap deeper than the tolerance, a clutch, something falling asleep -- these stop and the caller
runs the Python path for that step from its start: those steps are the rare ones, and the Python
path is the reference.
"""
from __future__ import annotations

import math

import numpy as np

from .._borrow import borrow
from .._flat import unflatten
from .._jit import njit
from .._native import call_native

#: return codes of :func:`collide` (anything but OK: run the Python path)
OK = 0
CROSSED = 1      # a joint-limit candidate crossed its limit during the move
SCREEN = 2       # the impact screen left a pair that may have met during the move
BAD_POSE = 3     # a pose the collision queries refuse (they name the body)
OVERFLOW = 4     # the contact buffers are too small (the Python path grows them)
DEEP = 5         # an overlap deeper than the tolerance at the trial pose
CUT = 6          # a new contact during the move: the step is cut at the fraction returned
SCREEN_CUT = 7   # a new contact during the move that the loop does not localise (a moving base, a query)


@njit(cache=True)
def _penetrating(e_meet, e_overlap, Xs, pairs, bstart, bcount, P, svalid, MP, C, C2, cyl, thr, pen_tol):
    """``CollisionModel.penetrating`` at shape poses ``Xs`` for body ``pairs`` (m, 2): (ok, hit (m,)),
    ok False where it would do more than the compiled queries (grow a buffer, test a nested pair
    or ask FCL about a cylinder)."""
    hit = np.zeros(pairs.shape[0], np.bool_)
    k = call_native(e_meet, "meeting_pairs", Xs, pairs, bstart, bcount, P, svalid, MP)
    if k > MP.shape[0]:
        return False, hit
    pair1 = np.empty((1, 2), np.int64)
    t1 = np.empty(1)
    for r in range(k):
        p = MP[r, 0]
        if hit[p]:
            continue                    # (rows come pair by pair: this pair is decided)
        if MP[r, 3] != 1:               # NESTED or a cylinder (_intersect_kernel.MEET is 1)
            return False, hit
        pair1[0, 0] = MP[r, 1]
        pair1[0, 1] = MP[r, 2]
        t1[0] = thr
        _, first = call_native(e_overlap, "overlap_status", Xs, Xs, pair1, t1, P, np.inf, thr, C, C2, cyl)
        sep = first[0]
        if sep != sep:
            return False, hit
        if sep == np.inf or sep < -pen_tol:
            hit[p] = True
    return True, hit


@njit(cache=True)
def _rows_where(pairs, mask):
    """The rows of ``pairs`` (m, 2) where ``mask`` holds, in order."""
    n = 0
    for j in range(mask.shape[0]):
        if mask[j]:
            n += 1
    out = np.empty((n, 2), np.int64)
    e = 0
    for j in range(mask.shape[0]):
        if mask[j]:
            out[e, 0] = pairs[j, 0]
            out[e, 1] = pairs[j, 1]
            e += 1
    return out


@njit(cache=True)
def _no_new_overlap(e_meet, e_overlap, X0s, X1s, pairs, bstart, bcount, P, svalid, MP, C, C2, cyl, thr, pen_tol):
    """``first_impact``'s test of body ``pairs`` (m, 2): those interpenetrating at the end of the
    move (shape poses ``X1s``) must have been at its start (``X0s``).  Returns (ok, end (m,)): ok
    False when one is new (the move is cut: localised by bisection) or the queries need more."""
    ok, end = _penetrating(e_meet, e_overlap, X1s, pairs, bstart, bcount, P, svalid, MP, C, C2, cyl, thr, pen_tol)
    if not ok:
        return False, end
    ep = _rows_where(pairs, end)
    n = ep.shape[0]
    if n == 0:
        return True, end
    ok, before = _penetrating(e_meet, e_overlap, X0s, ep, bstart, bcount, P, svalid, MP, C, C2, cyl, thr, pen_tol)
    if not ok:
        return False, end
    for e in range(n):
        if not before[e]:
            return False, end
    return True, end


@njit(cache=True)
def fast_pairs_clear(e_meet, e_overlap, X0s, X1s, pairs, fail, T, thickness, bstart, bcount, P, svalid, MP, C, C2,
                     cyl, thr, pen_tol, max_thr):
    """``impact._check_fast_pairs`` for the pairs ``fail`` (indices into ``pairs``, those the screen
    left; ``T`` every pair's travel bound, m) by its compiled queries: (code, new pairs, their
    travel bounds).  Code CLEAR: the whole move (1.0); LOCALISE: the body pairs returned overlap
    anew at the end of the move and ``localize`` finds the fraction as ``_localize`` does with a
    ``PairView``; LOCALISE_KERNEL: only pairs the exact kernel saw overlap anew (status 1), which
    ``_localize`` asks through a ``KernelPairView`` (each within its travel bound, returned);
    PYTHON: it needs more (FCL's exact separation, a nested pair, a cylinder).  X0s, X1s: shape
    poses at the start and the end of the move."""
    m = fail.shape[0]
    none = np.empty((0, 2), np.int64)
    no_T = np.empty(0)
    fp = np.empty((m, 2), np.int64)
    Tf = np.empty(m)
    thick = np.empty(m)
    for i in range(m):
        fp[i, 0] = pairs[fail[i], 0]
        fp[i, 1] = pairs[fail[i], 1]
        Tf[i] = T[fail[i]]
        thick[i] = min(thickness[fp[i, 0]], thickness[fp[i, 1]])
    # thin pairs of one-shape bodies: the exact contact kernel within the travel (overlap_status)
    status = np.full(m, 3, np.int64)
    n1 = 0
    for i in range(m):
        if Tf[i] < thick[i] and bcount[fp[i, 0]] == 1 and bcount[fp[i, 1]] == 1:
            n1 += 1
    if n1:
        sp = np.empty((n1, 2), np.int64)
        T1 = np.empty(n1)
        j = 0
        for i in range(m):
            if Tf[i] < thick[i] and bcount[fp[i, 0]] == 1 and bcount[fp[i, 1]] == 1:
                sp[j, 0] = bstart[fp[i, 0]]
                sp[j, 1] = bstart[fp[i, 1]]
                T1[j] = Tf[i]
                j += 1
        st1, _ = call_native(e_overlap, "overlap_status", X0s, X1s, sp, T1, P, pen_tol, max_thr, C, C2, cyl)
        j = 0
        for i in range(m):
            if Tf[i] < thick[i] and bcount[fp[i, 0]] == 1 and bcount[fp[i, 1]] == 1:
                status[i] = st1[j]
                j += 1
    ended = np.zeros(m, np.bool_)
    n_ask = 0
    n_kernel = 0                        # new overlaps the kernel saw (status 1)
    for i in range(m):
        if status[i] == 1:
            n_kernel += 1
        if status[i] == 1 or status[i] == 2:
            ended[i] = True
        if status[i] == 3:
            n_ask += 1
    fresh = np.zeros(0, np.bool_)       # of the pairs ``end`` below: a new overlap
    end_pairs = none
    if n_ask:                           # undecided: interpenetrating at the end, and new?
        ask = np.empty((n_ask, 2), np.int64)
        where = np.empty(n_ask, np.int64)
        j = 0
        for i in range(m):
            if status[i] == 3:
                ask[j, 0] = fp[i, 0]
                ask[j, 1] = fp[i, 1]
                where[j] = i
                j += 1
        ok, end = _penetrating(e_meet, e_overlap, X1s, ask, bstart, bcount, P, svalid, MP, C, C2, cyl, thr, pen_tol)
        if not ok:
            return PYTHON_PAIRS, none, no_T
        for j in range(n_ask):
            if end[j]:
                ended[where[j]] = True
        end_pairs = _rows_where(ask, end)
        if end_pairs.shape[0]:
            ok, before = _penetrating(e_meet, e_overlap, X0s, end_pairs, bstart, bcount, P, svalid, MP, C, C2, cyl,
                                      thr, pen_tol)
            if not ok:
                return PYTHON_PAIRS, none, no_T
            fresh = ~before
    # ended apart with a travel beyond the thinner body: FCL's exact separation decides
    for i in range(m):
        if not ended[i] and 0.0 < thick[i] and thick[i] <= Tf[i]:
            return PYTHON_PAIRS, none, no_T
    n_fresh = 0
    for e in range(fresh.shape[0]):
        if fresh[e]:
            n_fresh += 1
    if n_fresh == 0 and n_kernel == 0:
        return CLEAR, none, no_T
    # the kernel's new pairs first (impact._check_fast_pairs: new + fcl_new), each with its travel
    new = np.empty((n_kernel + n_fresh, 2), np.int64)
    Tn = np.empty(n_kernel)
    j = 0
    for i in range(m):
        if status[i] == 1:
            new[j, 0] = fp[i, 0]
            new[j, 1] = fp[i, 1]
            Tn[j] = Tf[i]
            j += 1
    if n_fresh == 0:
        return LOCALISE_KERNEL, new, Tn       # (a KernelPairView of them)
    # new overlaps among the undecided too: every new pair through the model (a PairView)
    for e in range(fresh.shape[0]):
        if fresh[e]:
            new[j, 0] = end_pairs[e, 0]
            new[j, 1] = end_pairs[e, 1]
            j += 1
    return LOCALISE, new, no_T


#: below this fraction of the move ``impact._localize`` gives up cutting (its FALLBACK_MIN_FRACTION):
#: the Python path's fallback
FALLBACK_MIN_FRACTION = 2.0 ** -20

#: fast_pairs_clear's codes
CLEAR = 0
PYTHON_PAIRS = 1
LOCALISE = 2
LOCALISE_KERNEL = 3


@njit(cache=True)
def _separation(e_overlap, Xs, pairs, bstart, bcount, P, C, C2, cyl, thr, pen_tol):
    """``min(CollisionModel.contact_separations(X, pairs, thr))`` (NaN: a buffer overflowed, the
    Python path grows it)."""
    d = np.inf
    pair1 = np.empty((1, 2), np.int64)
    t1 = np.empty(1)
    for p in range(pairs.shape[0]):
        i = pairs[p, 0]
        j = pairs[p, 1]
        sep = np.inf
        first = True
        for sa in range(bstart[i], bstart[i] + bcount[i]):
            for sb in range(bstart[j], bstart[j] + bcount[j]):
                pair1[0, 0] = sa
                pair1[0, 1] = sb
                t1[0] = thr
                _, f = call_native(e_overlap, "overlap_status", Xs, Xs, pair1, t1, P, np.inf, thr, C, C2, cyl)
                x = f[0]
                if x != x:
                    return np.nan
                if first or x < sep:            # (Python's min over the shape pairs)
                    sep = x
                first = False
        if -pen_tol <= sep and sep < 0.0:
            sep = 0.0
        if p == 0 or sep < d:                   # (np.min: no NaN here)
            d = sep
    return d


@njit(cache=True)
def _kernel_seps(e_overlap, Xs, pairs, Tp, bstart, P, C, C2, cyl):
    """``KernelPairView._min_sep`` of each body pair (one shape each): the separation (m) of its
    closest kernel candidate within its travel bound ``Tp`` (inf: none; NaN: a buffer overflowed,
    the Python path grows it)."""
    out = np.empty(pairs.shape[0])
    pair1 = np.empty((1, 2), np.int64)
    t1 = np.empty(1)
    for p in range(pairs.shape[0]):
        pair1[0, 0] = bstart[pairs[p, 0]]
        pair1[0, 1] = bstart[pairs[p, 1]]
        t1[0] = Tp[p]
        _, f = call_native(e_overlap, "overlap_status", Xs, Xs, pair1, t1, P, np.inf, Tp[p], C, C2, cyl)
        out[p] = f[0]
    return out


@njit(cache=True)
def _kernel_hits(sep, pen_tol):
    """``KernelPairView.penetrating`` from the pairs' separations ``sep`` (:func:`_kernel_seps`):
    (ok, hit (m,)); ok False on a NaN separation."""
    hit = np.zeros(sep.shape[0], np.bool_)
    for p in range(sep.shape[0]):
        if sep[p] != sep[p]:
            return False, hit
        hit[p] = sep[p] < -pen_tol
    return True, hit


@njit(cache=True)
def _kernel_min(sep, mask, pen_tol):
    """``min(KernelPairView.pair_separations(X, pairs[mask]))`` from the separations ``sep`` of all
    the pairs (NaN: a buffer overflowed)."""
    d = np.inf
    first = True
    for p in range(sep.shape[0]):
        if not mask[p]:
            continue
        x = sep[p]
        if x != x:
            return np.nan
        if -pen_tol <= x and x < 0.0:
            x = 0.0
        if first or x < d:
            d = x
        first = False
    return d


@njit(cache=True)
def localize(e_move, e_frames, e_meet, e_overlap, c, q, v, h, X_static, table_index, com_L, parent, child, X_PJ,
             X_CJ, axis, perp, kind, joint_q, cand, lo, hi, tol, rigid_tol, shape_body, X_LS, plain_frames, new,
             bstart, bcount, P, svalid, MP, C, C2, cyl, thr, pen_tol, kb, Xa, kcom, kview, Tn):
    """``impact._localize`` of the body pairs ``new`` through the model (``localize_impact`` with a
    ``PairView``: at most 30 halvings; a pair interpenetrating at the start, or halvings that do
    not end within the threshold, give 1.0 as its CollisionError does) or, with ``kview``, through
    a ``KernelPairView`` (pairs of one-shape bodies, each asked within its travel bound ``Tn``, m),
    the move at fraction f being
    the trial move of f h, the moving bases ``kb`` (placed at t + h, not turning) on their way from
    ``Xa`` at a constant velocity (Simulator._first_impact_fraction's ``move``; ``kcom`` their com
    offsets in their frames).  Returns (ok, fraction): ok False where the Python path does more (a
    fraction below FALLBACK_MIN_FRACTION, a pose or a query it would refuse or grow for)."""
    nk = kb.shape[0]
    Rc = np.empty((nk, 3))              # the com offsets in W, the com at t and its travel
    ca = np.empty((nk, 3))
    dc = np.empty((nk, 3))
    for i in range(nk):
        for j in range(3):
            Rc[i, j] = Xa[i, j, 0] * kcom[i, 0] + Xa[i, j, 1] * kcom[i, 1] + Xa[i, j, 2] * kcom[i, 2]
            ca[i, j] = Rc[i, j] + Xa[i, j, 3]
            dc[i, j] = (Rc[i, j] + X_static[kb[i], j, 3]) - ca[i, j]
    f = 1.0
    lo_f = 0.0
    hi_f = 1.0
    watch = new.copy()
    wmask = np.ones(new.shape[0], np.bool_)     # (kview: the watched rows of ``new``)
    sep = np.empty(0)                           # (kview: their separations at the fraction)
    for it in range(34):
        # it 0: the end (f = 1), 1: the start, then the halvings (``watch`` the pairs that overlap)
        if it == 0:
            f = 1.0
        elif it == 1:
            f = 0.0
        elif it == 32:
            f = lo_f                    # (after the halvings: the last free fraction)
        elif it == 33:
            break
        else:
            f = 0.5 * (lo_f + hi_f)
        X = call_native(e_move, "trial_move", c, q, v, f * h, X_static, table_index, com_L, parent, child, X_PJ,
                        X_CJ, axis, perp, kind, joint_q, cand, lo, hi, tol, False)[2]
        for i in range(nk):
            for j in range(3):
                for m in range(3):
                    X[kb[i], j, m] = Xa[i, j, m]
                X[kb[i], j, 3] = (ca[i, j] + f * dc[i, j]) - Rc[i, j]
        bad, Xs = call_native(e_frames, "shape_frames", X, rigid_tol, shape_body, X_LS)
        if bad >= 0:
            return False, 1.0
        if plain_frames:
            Xs = X
        if kview:           # (every pair's separation at this fraction: both tests below read them)
            sep = _kernel_seps(e_overlap, Xs, new, Tn, bstart, P, C, C2, cyl)
        if it == 32:
            if kview:
                d = _kernel_min(sep, wmask, pen_tol)
            else:
                d = _separation(e_overlap, Xs, watch, bstart, bcount, P, C, C2, cyl, thr, pen_tol)
            if d != d:
                return False, 1.0
            if 0.0 < d and d <= thr:
                return (False, 1.0) if lo_f < FALLBACK_MIN_FRACTION else (True, lo_f)
            return True, 1.0
        if kview:
            ok, hit = _kernel_hits(sep, pen_tol)
        else:
            ok, hit = _penetrating(e_meet, e_overlap, Xs, new, bstart, bcount, P, svalid, MP, C, C2, cyl, thr,
                                   pen_tol)
        if not ok:
            return False, 1.0
        nh = 0
        for j in range(hit.shape[0]):
            if hit[j]:
                nh += 1
        if it == 0 and nh == 0:
            return True, 1.0
        if it == 1:
            if nh:
                return True, 1.0        # overlapping before the move: a contact already
            continue
        if nh:
            if kview:
                wmask = hit
            else:
                watch = _rows_where(new, hit)
            if it > 1:
                hi_f = f
            continue
        if kview:
            d = _kernel_min(sep, wmask, pen_tol)
        else:
            d = _separation(e_overlap, Xs, watch, bstart, bcount, P, C, C2, cyl, thr, pen_tol)
        if d != d:
            return False, 1.0
        if 0.0 < d and d <= thr:
            if f < FALLBACK_MIN_FRACTION:
                return False, 1.0
            return True, f
        if d <= 0.0:
            hi_f = f
        else:
            lo_f = f
    return True, 1.0


@njit(cache=True)
def contacts_at(e_contacts, e_limit, Xs, cpairs, bstart, bcount, P, svalid, thr, cos_tol, region_tol, C, C2, C3, RS,
                O_ab, O_v, O_s, cyl, max_points, region_cos):
    """Step 4 at shape poses ``Xs`` as ``CollisionModel.contacts`` gives it (region points limited):
    (ok, k, ab, v, s); ok False when the buffers are too small (the Python path grows them)."""
    k, worst = call_native(e_contacts, "contacts_kernel", Xs, cpairs, bstart, bcount, P, svalid, thr, cos_tol,
                           region_tol, C, C2, C3, RS, O_ab, O_v, O_s, cyl)
    if worst > C.shape[0] or k > O_s.shape[0]:
        return False, 0, np.empty((4, 0), np.int64), np.empty((6, 0, 3)), np.empty(0)
    if 0 < max_points and max_points < k:
        k = call_native(e_limit, "limit_regions_in_place", O_ab, O_v, O_s, k, max_points, region_cos)
    return True, k, O_ab[:, :k].copy(), O_v[:, :k].copy(), O_s[:k].copy()


@njit(cache=True)
def collide(e_move, e_screen, e_frames, e_contacts, e_limit,
            c, q, v, h, X_static, table_index, com_L, parent, child, X_PJ, X_CJ, axis, perp, kind, joint_q,
            cand, lo, hi, tol,
            vel, bX, pairs, blo, bhi, radius, thr, cpairs, kb, Xa, kvel, kcom, e_meet, e_overlap, thickness, MP,
            max_thr,
            rigid_tol, shape_body, X_LS, plain_frames,
            bstart, bcount, P, svalid, cos_tol, region_tol, C, C2, C3, RS, O_ab, O_v, O_s, cyl,
            max_points, region_cos, pen_tol):
    """Steps 1-4 of a step that is not cut (see the module docstring).  ``e_*``: the kernels'
    addresses; then the arguments of ``trial_move``, of ``screen_pairs`` (``vel`` the (N, 6)
    buffer that gets the dynamic bodies' velocities ``v`` at rows ``table_index``; the moving
    bases ``kb`` start the screened move at their poses at t ``Xa`` (m, 4, 4) and travel at
    ``kvel`` (m, 6)), of the screen's follow-up (:func:`fast_pairs_clear`: ``thickness`` per body,
    the ``MP`` buffer, ``max_thr``), of ``shape_frames`` (``plain_frames``: shape frames are body
    frames, the poses serve as they are), of ``contacts_kernel`` (``cpairs`` the pairs it
    searches: ``pairs`` but those of two bodies that cannot touch anew while objects sleep) and of
    ``limit_regions_in_place`` (``max_points`` 0: no limit), and the deepest separation allowed
    (m, > 0).

    Returns (code, c1, q1, X, o, o_c, R, R_c, ax, pp, jq, k, ab (4, k), v (6, k, 3), s (k,), frac):
    the trial move's outputs and the contacts at the trial pose as ``CollisionModel.contacts`` copies
    them from its blocks (body_a, body_b, shape_a, shape_b / point, normal, point_a, point_b, t1, t2
    / separation); the contacts only with code OK; with code CUT the fraction of the move to take
    (the first contact, :func:`localize`)."""
    c1, q1, X, o, o_c, R, R_c, ax, pp, jq, crossed, X0 = call_native(
        e_move, "trial_move", c, q, v, h, X_static, table_index, com_L, parent, child, X_PJ, X_CJ, axis, perp, kind,
        joint_q, cand, lo, hi, tol, True)
    ab = np.empty((4, 0), np.int64)
    vv = np.empty((6, 0, 3))
    s = np.empty(0)
    if crossed:
        return CROSSED, c1, q1, X, o, o_c, R, R_c, ax, pp, jq, 0, ab, vv, s, 1.0
    for i in range(table_index.shape[0]):
        for j in range(6):
            vel[table_index[i], j] = v[i, j]
    # moving bases (Simulator._first_impact_fraction): from their pose at t at a constant velocity
    for i in range(kb.shape[0]):
        for r in range(4):
            for cc in range(4):
                X0[kb[i], r, cc] = Xa[i, r, cc]
        for j in range(6):
            vel[kb[i], j] = kvel[i, j]
    n = pairs.shape[0]
    T = np.empty(n)
    lb = np.empty(n)
    fail = call_native(e_screen, "screen_pairs", X0, bX, pairs, blo, bhi, vel, radius, h, thr, T, lb)
    for i in range(kb.shape[0]):
        for j in range(6):
            vel[kb[i], j] = 0.0
    bad, Xs = call_native(e_frames, "shape_frames", X, rigid_tol, shape_body, X_LS)
    if bad >= 0:
        return BAD_POSE, c1, q1, X, o, o_c, R, R_c, ax, pp, jq, 0, ab, vv, s, 1.0
    if plain_frames:
        Xs = X
    if fail.shape[0]:
        # the pairs the screen left: the impact search's compiled checks (first_impact), else step()
        bad0, X0s = call_native(e_frames, "shape_frames", X0, rigid_tol, shape_body, X_LS)
        if plain_frames:
            X0s = X0
        if bad0 >= 0:
            return SCREEN, c1, q1, X, o, o_c, R, R_c, ax, pp, jq, 0, ab, vv, s, 1.0
        code, new, Tn = fast_pairs_clear(e_meet, e_overlap, X0s, Xs, pairs, fail, T, thickness, bstart, bcount, P,
                                         svalid, MP, C, C2, cyl, thr, pen_tol, max_thr)
        if code == PYTHON_PAIRS:
            return SCREEN, c1, q1, X, o, o_c, R, R_c, ax, pp, jq, 0, ab, vv, s, 1.0
        if code == LOCALISE or code == LOCALISE_KERNEL:
            ok, frac = localize(e_move, e_frames, e_meet, e_overlap, c, q, v, h, X_static, table_index, com_L, parent,
                                child, X_PJ, X_CJ, axis, perp, kind, joint_q, cand, lo, hi, tol, rigid_tol, shape_body,
                                X_LS, plain_frames, new, bstart, bcount, P, svalid, MP, C, C2, cyl, thr, pen_tol, kb,
                                Xa, kcom, code == LOCALISE_KERNEL, Tn)
            if not ok:
                return SCREEN_CUT, c1, q1, X, o, o_c, R, R_c, ax, pp, jq, 0, ab, vv, s, 1.0
            if frac < 1.0:
                return CUT, c1, q1, X, o, o_c, R, R_c, ax, pp, jq, 0, ab, vv, s, frac
    ok, k, ab, vv, s = contacts_at(e_contacts, e_limit, Xs, cpairs, bstart, bcount, P, svalid, thr, cos_tol,
                                   region_tol, C, C2, C3, RS, O_ab, O_v, O_s, cyl, max_points, region_cos)
    if not ok:
        return OVERFLOW, c1, q1, X, o, o_c, R, R_c, ax, pp, jq, 0, ab, vv, s, 1.0
    if k:
        m = s[0]                  # (Python's min over a list: a NaN first stays, later ones are passed over)
        for i in range(1, k):
            if s[i] < m:
                m = s[i]
        if m < -pen_tol and not deep_pairs_old(e_meet, e_overlap, X0, Xs, ab, s, rigid_tol, shape_body, X_LS,
                                                plain_frames, e_frames, bstart, bcount, P, svalid, MP, C, C2, cyl, thr,
                                                pen_tol):
            return DEEP, c1, q1, X, o, o_c, R, R_c, ax, pp, jq, 0, ab, vv, s, 1.0
    return OK, c1, q1, X, o, o_c, R, R_c, ax, pp, jq, k, ab, vv, s, 1.0


@njit(cache=True)
def deep_pairs_old(e_meet, e_overlap, X0, Xs, ab, sep, rigid_tol, shape_body, X_LS, plain_frames, e_frames, bstart,
                   bcount, P, svalid, MP, C, C2, cyl, thr, pen_tol):
    """The contacts at the trial pose overlap deeper than ``pen_tol``: does ``first_impact`` keep
    the whole move, every such pair interpenetrating already at the start (by the compiled
    queries alone)?  False when a pair's overlap is new (localised by bisection) or the queries
    need more (then the Python path decides)."""
    k = sep.shape[0]
    # the deep contacts' body pairs, each once (np.unique's set; its order does not matter here)
    dp = np.empty((k, 2), np.int64)
    nd = 0
    for i in range(k):
        if sep[i] < -pen_tol:
            dup = False
            for j in range(nd):
                if dp[j, 0] == ab[0, i] and dp[j, 1] == ab[1, i]:
                    dup = True
            if not dup:
                dp[nd, 0] = ab[0, i]
                dp[nd, 1] = ab[1, i]
                nd += 1
    bad0, X0s = call_native(e_frames, "shape_frames", X0, rigid_tol, shape_body, X_LS)
    if plain_frames:
        X0s = X0
    if bad0 >= 0:
        return False
    return _no_new_overlap(e_meet, e_overlap, X0s, Xs, dp[:nd].copy(), bstart, bcount, P, svalid, MP, C, C2, cyl, thr,
                           pen_tol)[0]


@njit(cache=True)
def place_bases(t, h, X_static, kb, kX0, kd, kt0, kdur, kcom, V, Xa, kvel, again):
    """Moving bases at time ``t`` (``Simulator._kinematic_velocities`` for QuinticBaseMotion's, the
    same floating-point operations): their poses at the step's start into ``Xa``, their poses at ``t``
    into ``X_static``, their velocities [v_com; w] into their rows of ``V`` and the velocities the
    impact screen moves them at over the step (``Simulator._first_impact_fraction``) into ``kvel``.
    False (nothing placed) when a base's rotation is not the motion's (the Python path interpolates
    it).  ``again``: a step cut at time ``t`` (Simulator._move): the bases placed there, their rows
    of ``V`` with them; ``Xa`` and ``kvel`` as they were."""
    for i in range(kb.shape[0]):
        for r in range(3):
            for cc in range(3):
                if kX0[i, r, cc] != X_static[kb[i], r, cc]:
                    return False
    for i in range(kb.shape[0]):
        b = kb[i]
        if not again:
            for r in range(4):
                for cc in range(4):
                    Xa[i, r, cc] = X_static[b, r, cc]
        # control/trajectory.py quintic (math.pow: the C pow of Python's float ** int)
        x = min(1.0, max(0.0, (t - kt0[i]) / kdur[i]))
        s = math.pow(x, 3.0) * (10 - 15 * x + 6 * x * x)
        ds = 30 * x * x * math.pow(1 - x, 2.0)
        inside = kt0[i] <= t and t <= kt0[i] + kdur[i]
        for r in range(4):
            for cc in range(4):
                X_static[b, r, cc] = kX0[i, r, cc]
        lin = np.zeros(3)
        for j in range(3):
            if kd[i, j] != 0.0:
                X_static[b, j, 3] = kX0[i, j, 3] + kd[i, j] * s
                lin[j] = kd[i, j] * ds / kdur[i] if inside else 0.0
        # the com offset in W (simulator._rotate: left-to-right sums), v_com = v + w x com, w = 0
        com = np.empty(3)
        for j in range(3):
            com[j] = kX0[i, j, 0] * kcom[i, 0] + kX0[i, j, 1] * kcom[i, 1] + kX0[i, j, 2] * kcom[i, 2]
        w0 = 0.0
        w1 = 0.0
        w2 = 0.0
        V[b, 0] = lin[0] + (w1 * com[2] - w2 * com[1])
        V[b, 1] = lin[1] + (w2 * com[0] - w0 * com[2])
        V[b, 2] = lin[2] + (w0 * com[1] - w1 * com[0])
        V[b, 3] = w0
        V[b, 4] = w1
        V[b, 5] = w2
        # the screened move: the com from its place at t to its place at t + h (the same rotation)
        if not again:
            for j in range(3):
                kvel[i, j] = ((com[j] + X_static[b, j, 3]) - (com[j] + Xa[i, j, 3])) / h
                kvel[i, 3 + j] = 0.0 / h
    return True


@njit(cache=True)
def settle_ok(t, jq, rates, P, off, kp, sign, still, full, q0, q1, t0, dur):
    """dynamic_auto_grasp's test of one state (``rollout.Settle.after_step`` computes the same on
    Python floats): every watched DOF (rows ``P`` of the DOF map) slower than ``still`` and either
    at the end of its quintic reference (``q0`` -> ``q1`` over [t0, t0 + dur]) or pressing with its
    full effort towards it (kp (ref - q) sign >= full)."""
    at_end = t >= t0 + dur
    s = 0.0
    if dur > 0:
        x = min(1.0, max(0.0, (t - t0) / dur))
        s = math.pow(x, 3.0) * (10 - 15 * x + 6 * x * x)     # (control.trajectory.quintic)
    for d in range(P.shape[0]):
        qv = 0.0
        qr = 0.0
        for j in range(P.shape[1]):
            qv += P[d, j] * (jq[j] - off[j])
            qr += P[d, j] * rates[j]
        ref = q0[d] + s * (q1[d] - q0[d]) if dur > 0 else q1[d]
        if not (abs(qr) < still[d] and (at_end or kp[d] * (ref - qv) * sign[d] >= full[d])):
            return False
    return True


#: return codes of :func:`rollout_steps`
DONE = 0         # every step taken
PYTHON = 1       # the next step needs the Python path (the state is the one before it)
#: why (the last value returned): a check of the state, a sleeping object moved in place, the
#: command's check, a base that turns, collide's code (+ W_COLLIDE), a friction coefficient that is not
#: a number, a sleeping object touched, an LCP the solver did not solve, the warm-start table full, a
#: non-finite result, an object at rest long enough to sleep, a clutch, the world falling asleep, a cut
#: step the loop does not take (its contacts' buffers, the stall guard)
(W_STATE, W_MOVED, W_COMMAND, W_TURN, W_COLLIDE, W_MU, W_TOUCHED, W_SOLVER, W_TABLE, W_FINITE, W_RESTED, W_CLUTCH,
 W_ASLEEP, W_CUT) = (1, 2, 3, 4, 10, 20, 21, 22, 23, 24, 25, 26, 27, 28)
#: the loop's command (its CMD argument's first item): the compiled PD's, none, the one given (a
#: Python controller's, for one step() call)
CMD_PD, CMD_NONE, CMD_GIVEN = 0, 1, 2


@njit(cache=True)
def rollout_steps(E, n, t, h, c, q, v, jq, lock, steps, TM, SC, FR, CKA, PDA, CMD, ASM, ISL, SOLV, FIN, RST, BRK,
                  KIN, MON, CUTS, ext, keys, used, ta, tb, store, meta, pa, pb, pp, pf, rest_t, rest_A, rest_imp, has_rest,
                  bodies_rest, rec_t, rec_c, rec_q, rec_v, rec_jq, rec_h, rec_k):
    """Up to ``n`` steps of ``Simulator.step``'s common path in one call, each computed and committed
    as the Python path does (see ``graspsim.dynamics.rollout``).  Before a step that needs anything
    else -- the Python path's checks and errors, an impact cut, a breakaway, an object or the world
    falling asleep, a sleeping object moved in place or touched, the warm-start table to clear -- it
    stops with the state (and the warm-start
    table: copied before each solve, restored) as they were before that step: code PYTHON.
    Each taken step is recorded at its row of ``rec_*``: time, coms, orientations, velocities, joint
    values, step length and contact count.  ``CMD``: (CMD_PD, the compiled PD ``PDA``'s command each
    step; CMD_NONE, no controller: zero rows, as ``Simulator._no_cmd``; or CMD_GIVEN, this command).
    Returns (code, steps taken, t, c, q, v, jq, steps, table arrays, cwarm arrays and whether they
    hold contacts, rest counters, bodies_rest, the last taken step's contacts, impulses, LCP sizes,
    pivots and island count, why it stopped (a ``W_*`` code, 0 when every step was taken or it
    settled), and the settle test's time still and whether it settled (``MON``: rollout.Settle's
    arrays; a settled step is the last taken)."""
    (e_move, e_screen, e_frames, e_contacts, e_limit, e_pd, e_asm, e_isl, e_mass, e_solve, e_finish, e_finite, e_meet,
     e_overlap, e_rates) = E
    # the model's arrays and the buffers filled in place, borrowed (graspsim._borrow: no reference
    # counting in the kernels they are passed to; none is returned: the returned arrays are the
    # state, the table and the report, never borrowed)
    (X_static, table_index, com_L, parent, child, X_PJ, X_CJ, axis, perp, kind, cand, lo, hi, tol) = borrow(TM)
    (vel, bX, pairs, blo, bhi, radius, thr, cpairs, thickness, MP, max_thr) = borrow(SC)
    (rigid_tol, shape_body, X_LS, plain) = borrow(FR)
    (bstart, bcount, P, svalid, cos_tol, region_tol, C, C2, C3, RS, O_ab, O_v, O_s, cyl, max_points, region_cos,
     pen_tol) = borrow(CKA)
    (kp, kd, effort, pk, pt0, pdur, pq0, pq1, poff, ps_off, ps_t, ps_q) = borrow(PDA)
    # the command: CMD_PD the compiled PD's (PDA) each step; CMD_NONE none (A_in: zero rows, as
    # Simulator._no_cmd); CMD_GIVEN A_in
    (cmd_mode, A_in) = CMD
    has_cmd = cmd_mode != CMD_NONE
    (com_L_all, slot, mass, gravity, rj, rt, rk, joint_off, coulomb, Pm, drive_idx, drive_w, c_idx, c_coef,
     c_kappa, c_dof, c_lock, c_hard, kp_d, kd_d, visc_idx, visc, effort_max, MS, MK, shape_mat, body_mat, no_V,
     hc, gamma, threshold, u, static_speed, lock_gain, inertia_L) = borrow(ASM)
    (comp, ncomp) = borrow(ISL)
    (compliance, project, radius_match, entries_max) = SOLV
    (group, is_object, h_rest, lin_limit, ang_length, after, bodies_pose) = borrow(FIN)
    (sleep, sleep_speed, root3, impulse_rtol) = RST
    (hd, hprox, hdist, hrho, hoff0, hoff1, fd, fprox, ftorque, fhard) = borrow(BRK)
    # moving bases (QuinticBaseMotion): table rows, X0, displacement, t0, duration, com in the body
    # frame; buffers of their velocities (N, 6), poses at t and screened velocities
    (kb, kX0, kdisp, kt0, kdur, kcom, Vk, Xa, kvel) = borrow(KIN)
    driven = kb.shape[0] > 0
    placed = False
    # the settle test (rollout.Settle: watched DOFs' rows of P, joint offsets, gains, ...)
    (mon_on, mP, moff, mkp, msign, mstill, mfull, mq0, mq1, mt0, mdur, mhold, still_for) = borrow(MON)
    settled = False
    # cut steps in a row and when they began (SimData.cuts), the stall guard's limits, H_FLOOR
    (cuts0, cuts1, stall_steps, stall_time, h_floor) = CUTS
    frac_last = 1.0
    # the caller's warm-start table (the steps write copies; see the end)
    keys_in, used_in, ta_in, tb_in, store_in, meta_in = keys, used, ta, tb, store, meta
    table_new = False
    code = DONE
    why = 0
    done = 0
    # the last taken step's report
    k_last = 0
    ab_last = np.empty((4, 0), np.int64)
    vv_last = np.empty((6, 0, 3))
    s_last = np.empty(0)
    imp_last = np.empty((0, 3))
    sizes_last = np.empty(0, np.int64)
    piv_last = 0
    nisl_last = 0
    nb = c.shape[0]
    for it in range(n):
        # the Python path's own checks (its errors name what is wrong)
        # (Simulator._check_steppable's test: the same kernel, 1-row views of the joint arrays)
        jq2 = jq.reshape((1, jq.shape[0]))
        if not (t + h > t and call_native(e_finite, "all_finite", c, q, v)
                and call_native(e_finite, "all_finite", jq2, lock.reshape((1, lock.shape[0])), jq2)):
            code = PYTHON
            why = W_STATE
            break
        # sleeping objects moved or set moving in place: step() wakes them (_check_sleeping_bodies)
        moved = False
        for i in range(nb):
            if group[i] > 0:
                for j in range(6):
                    if v[i, j] != 0.0:
                        moved = True
                for j in range(3):
                    if c[i, j] != bodies_pose[i, j]:
                        moved = True
                for j in range(4):
                    if q[i, j] != bodies_pose[i, 3 + j]:
                        moved = True
        if moved:
            code = PYTHON
            why = W_MOVED
            break
        if cmd_mode == CMD_PD:
            A, ok = call_native(e_pd, "pd_command", t, h, kp, kd, effort, pk, pt0, pdur, pq0, pq1, poff, ps_off,
                                ps_t, ps_q)
        else:
            A, ok = A_in, True
        if not ok:
            code = PYTHON
            why = W_COMMAND
            break
        if driven:
            if not place_bases(t + h, h, X_static, kb, kX0, kdisp, kt0, kdur, kcom, Vk, Xa, kvel, False):
                code = PYTHON        # a base that turns (a rotation to interpolate): step()
                why = W_TURN
                break
            placed = True
        r = collide(e_move, e_screen, e_frames, e_contacts, e_limit, c, q, v, h, X_static, table_index, com_L,
                    parent, child, X_PJ, X_CJ, axis, perp, kind, jq, cand, lo, hi, tol, vel, bX, pairs, blo, bhi,
                    radius, thr, cpairs, kb, Xa, kvel, kcom, e_meet, e_overlap, thickness, MP, max_thr, rigid_tol,
                    shape_body, X_LS, plain, bstart, bcount, P, svalid, cos_tol,
                    region_tol, C, C2, C3, RS, O_ab, O_v, O_s, cyl, max_points, region_cos, pen_tol)
        if r[0] != OK and r[0] != CUT:
            code = PYTHON
            why = W_COLLIDE + r[0]
            break
        _, c1, q1, X, o, o_c, R, R_c, ax, pp_, jq1, k, ab, vv, sep, frac = r
        cut = r[0] == CUT
        hs = h                          # the step's length (Simulator._Move.h)
        if cut:
            # the move up to the first contact, the contacts there (Simulator._move, step 4)
            hs = max(frac * h, min(h, h_floor))
            if driven:      # the moving bases at the cut's end (Simulator._move), the move from there
                place_bases(t + hs, h, X_static, kb, kX0, kdisp, kt0, kdur, kcom, Vk, Xa, kvel, True)
            c1, q1, X, o, o_c, R, R_c, ax, pp_, jq1, _, _ = call_native(
                e_move, "trial_move", c, q, v, frac * h, X_static, table_index, com_L, parent, child, X_PJ, X_CJ,
                axis, perp, kind, jq, cand, lo, hi, tol, False)
            bad, Xs = call_native(e_frames, "shape_frames", X, rigid_tol, shape_body, X_LS)
            if plain:
                Xs = X
            ok_c = bad < 0
            if ok_c:
                ok_c, k, ab, vv, sep = contacts_at(e_contacts, e_limit, Xs, cpairs, bstart, bcount, P, svalid, thr,
                                                   cos_tol, region_tol, C, C2, C3, RS, O_ab, O_v, O_s, cyl,
                                                   max_points, region_cos)
            # the stall guard (Simulator._stall_guard) and a step below the clock's resolution: step()
            n_cuts = cuts0 + 1
            since = t if cuts0 == 0 else cuts1
            if not ok_c or not t + hs > t or (n_cuts >= stall_steps and t + hs - since < stall_time):
                code = PYTHON
                why = W_CUT
                break
        # the contact arrays and materials (Simulator._contact_arrays, _material_lookup)
        if k:
            ca, cb = ab[0], ab[1]
            cpoint, cnormal, ct1, ct2 = vv[0], vv[1], vv[4], vv[5]
            mat, ma, mb = shape_mat, ab[2], ab[3]
        else:
            ca = np.zeros(0, np.int64)
            cb = np.zeros(0, np.int64)
            cpoint = np.zeros((0, 3))
            cnormal = np.zeros((0, 3))
            ct1 = np.zeros((0, 3))
            ct2 = np.zeros((0, 3))
            mat, ma, mb = body_mat, ca, cb
        csep = sep if k else np.zeros(0)
        # (the argument tuple in parts: a literal of over ~30 items compiles to a list numba cannot type)
        Vd = Vk if driven else no_V     # (no control flow inside a call of this many arguments: numba)
        rows_b, jac, rhs, rcomp, sizes, hard_err, mu, kw, ne = call_native(
            e_asm, "assemble", X, com_L_all, slot, mass, gravity, ext, v, jq1, kind, parent, child, axis, o, o_c, R,
            R_c, ax, pp_, rj, rt, rk, joint_off, coulomb, Pm, drive_idx, drive_w, c_idx, c_coef, c_kappa, c_dof,
            c_lock, c_hard, lock, kp_d, kd_d, visc_idx, visc, cand, lo, hi, tol, has_cmd, A, effort_max,
            ca, cb, cpoint, cnormal, ct1, ct2, csep, MS, MK, mat, ma, mb, driven, Vd,
            h, hc, gamma, threshold, u, static_speed, lock_gain)
        bad_mu = False
        for i in range(mu.shape[0]):
            if mu[i] != mu[i]:
                bad_mu = True
        if bad_mu:
            code = PYTHON
            why = W_MU
            break
        sa = np.empty(k, np.int64)
        sb = np.empty(k, np.int64)
        touched = False
        for i in range(k):
            sa[i] = slot[ca[i]]
            sb[i] = slot[cb[i]]
            # a contact with a sleeping object (its pairs with static and sleeping bodies are not
            # searched: an awake body touches it): step() wakes it (_wake_touched)
            if (sa[i] >= 0 and group[sa[i]] > 0) or (sb[i] >= 0 and group[sb[i]] > 0):
                touched = True
        if touched:
            code = PYTHON
            why = W_TOUCHED
            break
        labels, n_isl = call_native(e_isl, "islands", comp, ncomp, sa, sb)
        _m, Minv, aM = call_native(e_mass, "mass_terms", mass, inertia_L, q1, v, kw, hs)
        # the step writes a copy of the warm-start table, kept when the step is: the caller's arrays
        # stay as they were until then (a step left to the Python path, or an error raised in the
        # kernels, starts from them; the caller keeps no copy)
        keys1, used1, ta1, tb1, store1, meta1 = keys.copy(), used.copy(), ta.copy(), tb.copy(), store.copy(), \
            meta.copy()
        refresh = steps % 50 == 0
        (status, bad, m, piv, v_new, impulses, hard_impulse, dx, cflags, sizes_isl, pivots, keys1, used1, ta1, tb1,
         store1) = call_native(e_solve, "solve_islands", labels, n_isl, Minv, aM, rows_b, jac, rhs, rcomp, sizes,
                               hard_err, mu, ca, cb, cpoint, cnormal, ct1, ct2, u, compliance, project,
                               refresh, keys1, used1, ta1, tb1, store1, meta1, pa, pb, pp, pf, True, radius_match)
        for i in range(nb):          # sleeping objects: free bodies without contacts; they stay
            if group[i] > 0:
                for j in range(6):
                    v_new[i, j] = 0.0
        h_fin = 0.0 if cut else h_rest
        c2, q2, finite, lin, ang, rest1, rested = call_native(e_finish, "finish", c1, q1, dx, v_new, bodies_rest, group,
                                                              is_object, h_fin, lin_limit, ang_length, after)
        leave = status != 0 or meta1[0] > entries_max or not finite or (sleep and rested)
        if leave:
            why = W_SOLVER if status != 0 else W_TABLE if meta1[0] > entries_max else W_FINITE if not finite \
                else W_RESTED
        # breakaway (Simulator._update_breakaway): a clutch that would give way or re-couple
        for i in range(hd.shape[0] if has_cmd else 0):
            if A[1, hd[i]] < 0 and jq1[hdist[i]] <= hrho[i] * jq1[hprox[i]] + hoff1[i] - hrho[i] * hoff0[i]:
                leave = True
                why = W_CLUTCH
        for i in range(fd.shape[0]):
            if abs(hard_impulse[ne + fhard[i]]) / hs > ftorque[i]:
                leave = True
                why = W_CLUTCH
        # the world's rest count (Simulator._rest; sleep.resting, sleep.steady)
        ok_rest = False
        if sleep and not leave:
            ok_rest = not driven and not cut and root3 * max(lin, ang_length * ang) < sleep_speed
            if ok_rest:
                # (without a command, has_rest says that the last step had none either: sleep.steady)
                ok_rest = has_rest and rest_A.shape == A.shape and rest_imp.shape == impulses.shape
            if ok_rest and has_cmd:
                for i in range(A.shape[0]):
                    for j in range(A.shape[1]):
                        if A[i, j] != rest_A[i, j]:
                            ok_rest = False
            if ok_rest and impulses.size:
                big = 0.0
                dif = 0.0
                for i in range(impulses.shape[0]):
                    for j in range(3):
                        big = max(big, abs(impulses[i, j]))
                        dif = max(dif, abs(impulses[i, j] - rest_imp[i, j]))
                ok_rest = dif <= impulse_rtol * big + 1e-15
            if ok_rest and rest_t + h >= after:
                leave = True             # the world falls asleep: the Python path
                why = W_ASLEEP
        if leave:
            code = PYTHON
            break
        # commit (Simulator._commit, _rest_objects, _rest)
        placed = False
        keys, used, ta, tb, store, meta = keys1, used1, ta1, tb1, store1, meta1
        table_new = True
        t = t + hs
        if cut:
            cuts0, cuts1 = n_cuts, since
        else:
            cuts0 = 0
        frac_last = frac if cut else 1.0
        c, q, v, jq = c2, q2, v_new, jq1
        steps += 1
        for i in range(ext.shape[0]):
            for j in range(6):
                ext[i, j] = 0.0
        if k:
            pa, pb, pp, pf = ca, cb, cpoint, cflags
        else:
            pa = np.zeros(0, np.int64)
            pb = np.zeros(0, np.int64)
            pp = np.zeros((0, 3))
            pf = np.zeros((0, pf.shape[1]), np.bool_)
        if sleep:
            bodies_rest = rest1
            rest_t = rest_t + h if ok_rest else 0.0
            rest_A = A
            rest_imp = impulses
            has_rest = True
        k_last, ab_last, vv_last, s_last, imp_last, sizes_last, piv_last, nisl_last = \
            k, ab, vv, sep, impulses, sizes_isl, pivots, n_isl
        rec_t[done] = t
        rec_h[done] = hs
        rec_k[done] = k
        for i in range(nb):
            for j in range(3):
                rec_c[done, i, j] = c[i, j]
            for j in range(4):
                rec_q[done, i, j] = q[i, j]
            for j in range(6):
                rec_v[done, i, j] = v[i, j]
        for i in range(jq.shape[0]):
            rec_jq[done, i] = jq[i]
        done += 1
        if mon_on:
            rates = call_native(e_rates, "joint_rates", X_static, table_index, c, q, com_L, com_L_all, parent, child,
                                X_PJ, X_CJ, axis, perp, kind, jq, slot, v)
            still_for = still_for + hs if settle_ok(t, jq, rates, mP, moff, mkp, msign, mstill, mfull, mq0, mq1, mt0,
                                                   mdur) else 0.0
            if still_for >= mhold - 1e-12:
                settled = True
                break
    # the kept table copied back into the caller's arrays when it did not grow, after the last
    # step (an error raised by any step leaves them as they were): they go back to Python as the
    # arrays that came, not as new ones to box
    if table_new and keys.shape[0] == keys_in.shape[0] and store.shape[0] == store_in.shape[0]:
        for i in range(keys.shape[0]):
            keys_in[i] = keys[i]
            used_in[i] = used[i]
            ta_in[i] = ta[i]
            tb_in[i] = tb[i]
        for i in range(store.shape[0]):
            store_in[i] = store[i]
        for i in range(meta.shape[0]):
            meta_in[i] = meta[i]
        keys, used, ta, tb, store, meta = keys_in, used_in, ta_in, tb_in, store_in, meta_in
    if placed:              # the step left to step(): the bases back where they were at t
        for i in range(kb.shape[0]):
            for r in range(4):
                for cc in range(4):
                    X_static[kb[i], r, cc] = Xa[i, r, cc]
    return (code, done, t, c, q, v, jq, steps, keys, used, ta, tb, store, meta, pa, pb, pp, pf, rest_t, rest_A,
            rest_imp, has_rest, bodies_rest, k_last, ab_last, vv_last, s_last, imp_last, sizes_last, piv_last,
            nisl_last, why, still_for, settled, cuts0, cuts1, frac_last)


@njit(cache=True)
def rollout_flat(spec, ints, shapes, floats, n, t, c, q, v, jq, lock, steps, CMD, MON, CUTS, ext, keys, used, ta,
                 tb, store, meta, pa, pb, pp, pf, rest_t, rest_A, rest_imp, has_rest, bodies_rest, rec_t, rec_c,
                 rec_q, rec_v, rec_jq, rec_h, rec_k):
    """:func:`rollout_steps` with its constant arguments (E, h, TM, SC, FR, CKA, PDA, ASM, ISL, SOLV,
    FIN, RST, BRK, KIN) flattened into four tables (:mod:`graspsim._flat`): a call's dispatch types and
    unboxes ~50 values instead of ~220 (~25 us less per call).  The same compiled steps."""
    E, h, TM, SC, FR, CKA, PDA, ASM, ISL, SOLV, FIN, RST, BRK, KIN = unflatten(spec, ints, shapes, floats)
    return rollout_steps(E, n, t, h, c, q, v, jq, lock, steps, TM, SC, FR, CKA, PDA, CMD, ASM, ISL, SOLV, FIN, RST,
                         BRK, KIN, MON, CUTS, ext, keys, used, ta, tb, store, meta, pa, pb, pp, pf, rest_t, rest_A,
                         rest_imp, has_rest, bodies_rest, rec_t, rec_c, rec_q, rec_v, rec_jq, rec_h, rec_k)

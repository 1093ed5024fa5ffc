"""The one-pass builders of the backward replay's inputs (patterns/kernels/backward_build.py) against the NumPy
operations and loops they replace."""

from __future__ import annotations

import numpy as np
import pytest

from patterns.array_ops import dense_ids
from patterns.array_ops import order_touches
from patterns.kernels.backward_build import point_cuts

BIG = np.iinfo(np.int64).max


def _point_cuts_reference(kind, row, cut, n_m, n_c):
    def of(k, n, default=None):
        out = [-1] * n if default is None else list(default)
        for kk, r, c in zip(kind.tolist(), row.tolist(), cut.tolist()):
            if kk == k and 0 <= r < n:
                out[r] = c
        return out

    send, recv = of(1, n_m), of(3, n_m)
    return send, of(2, n_m, send), recv, of(4, n_m, recv), of(5, n_c)


@pytest.mark.parametrize("seed", range(8))
def test_point_cuts_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n, n_m, n_c = int(rng.integers(0, 50)), int(rng.integers(0, 12)), int(rng.integers(0, 6))
    kind = rng.integers(1, 11, n).astype(np.int8)
    row = rng.integers(-1, max(n_m, n_c) + 2, n)
    cut = rng.integers(1, 100, n)
    got = point_cuts(kind, row, cut, n_m, n_c)
    assert [g.tolist() for g in got] == [list(r) for r in _point_cuts_reference(kind, row, cut, n_m, n_c)]


@pytest.mark.parametrize("seed", range(8))
def test_touch_order_is_the_lexsort(seed):
    rng = np.random.default_rng(seed)
    n, L = int(rng.integers(0, 200)), int(rng.integers(1, 6))
    loc = rng.integers(0, L, n)
    cut = rng.integers(1, 30, n)
    cut[rng.random(n) < 0.1] = BIG  # the end of a location
    if seed == 7 and n:
        cut[0] = -3  # not a cut the builder makes: the NumPy path
    assert order_touches(loc, cut, L).tolist() == np.lexsort((-cut, loc)).tolist()


@pytest.mark.parametrize("seed", range(8))
def test_ordered_touches_are_the_lexsort_of_the_touches(seed):
    """The handlings' touches ordered from the points (patterns.kernels.backward_build.ordered_touches) as the
    lexsort of their (location, cut) columns orders them: waiters, causers, members, idleness, ties in that order."""
    from patterns.kernels.backward_build import H_COLL, H_IDLE, H_OMPBAR, H_P2P, ordered_touches

    rng = np.random.default_rng(seed)
    L = int(rng.integers(1, 5))
    n_pt = rng.integers(0, 6, L)
    sp_off = np.concatenate([[0], np.cumsum(n_pt)]).astype(np.int64)
    n_sp = int(sp_off[-1])
    sp_loc = np.repeat(np.arange(L), n_pt).astype(np.int32)
    sp_cut = np.concatenate([np.sort(rng.choice(np.arange(1, 40), k, replace=False)) for k in n_pt]).astype(np.int64)
    nh = int(rng.integers(0, 12)) if n_sp else 0
    h_kind = rng.choice([H_P2P, H_COLL, H_OMPBAR, H_IDLE], nh).astype(np.int64)
    h_a = rng.integers(0, max(n_sp, 1), nh)
    h_a[(h_kind == H_IDLE) & (rng.random(nh) < 0.4)] = -1  # to the end of a location
    h_b = np.where(h_kind == H_IDLE, rng.integers(0, L, nh), rng.integers(0, max(n_sp, 1), nh))
    n_mem = np.where((h_kind == H_COLL) | (h_kind == H_OMPBAR), rng.integers(0, 4, nh), 0)
    hm_off = np.concatenate([[0], np.cumsum(n_mem)]).astype(np.int64)
    hm_sp = rng.integers(0, max(n_sp, 1), int(hm_off[-1]))
    touches = []  # (location, cut, kind, handling) in the builder's order
    for kind, sel in ((0, h_kind == H_P2P), (1, h_kind == H_P2P)):
        for h in np.flatnonzero(sel):
            p = h_a[h] if kind == 0 else h_b[h]
            touches.append((sp_loc[p], sp_cut[p], kind, h))
    for h in range(nh):
        for p in hm_sp[hm_off[h]:hm_off[h + 1]]:
            touches.append((sp_loc[p], sp_cut[p], 2, h))
    for h in np.flatnonzero(h_kind == H_IDLE):
        touches.append((h_b[h], BIG, 3, h) if h_a[h] < 0 else (sp_loc[h_a[h]], sp_cut[h_a[h]], 3, h))
    t = np.array(touches, np.int64).reshape(-1, 4)
    o = np.lexsort((-t[:, 1], t[:, 0]))
    n = len(t)
    tc_kind, tc_h, tc_off = np.empty(n, np.int8), np.empty(n, np.int32), np.empty(L + 1, np.int64)  # as backward.py
    ordered_touches(h_kind, h_a, h_b, hm_off, hm_sp, sp_loc, sp_off, np.empty(n_sp + L + 1, np.int64), tc_kind, tc_h,
                    tc_off)
    assert tc_kind.tolist() == t[o, 2].tolist() and tc_h.tolist() == t[o, 3].tolist()
    assert tc_off.tolist() == np.concatenate([[0], np.cumsum(np.bincount(t[:, 0], minlength=L))]).tolist()


@pytest.mark.parametrize("values", [[], [5], [3, 3, 0, 7, 3, 0], list(range(20, 0, -2)), [2, 10**9, 2], [-1, 4, -1]])
def test_dense_ids_is_unique_inverse(values):
    x = np.array(values, np.int64)
    assert dense_ids(x).tolist() == np.unique(x, return_inverse=True)[1].reshape(-1).tolist()


@pytest.mark.parametrize("seed", range(6))
def test_interval_sums_is_the_bincount(seed):
    """Per interval ending at a cut point and per location after its last point: the same additions in the same
    order as the np.bincount formulation it replaces (equal to the last bit)."""
    from patterns.kernels.backward_build import interval_sums

    rng = np.random.default_rng(seed)
    L, C, n = int(rng.integers(1, 5)), int(rng.integers(1, 6)), int(rng.integers(0, 300))
    n_cuts = rng.integers(0, 8, L)
    cut_off = np.concatenate([[0], np.cumsum(n_cuts)]).astype(np.int64)
    loc = np.sort(rng.integers(0, L, n))
    cut = rng.integers(1, 10, n)
    cnode = rng.integers(0, C, n)
    t = rng.random(n) * 10.0 ** rng.integers(-6, 3, n)
    keep = rng.random(C) < 0.7
    ok, comp, last = interval_sums(loc, cut, cnode, t, keep, n_cuts, cut_off, int(n_cuts.sum()), L)
    assert ok
    inner = keep[cnode] & (cut <= n_cuts[loc])
    outer = keep[cnode] & ~inner
    assert np.array_equal(comp, np.bincount(cut_off[loc[inner]] + cut[inner] - 1, weights=t[inner],
                                            minlength=int(n_cuts.sum())))
    assert np.array_equal(last, np.bincount(loc[outer], weights=t[outer], minlength=L))


def test_profile_sums_is_the_bincount():
    from patterns.kernels.backward_build import profile_sums

    rng = np.random.default_rng(3)
    C, L, n = 7, 3, 500
    cnode, loc = rng.integers(0, C, n).astype(np.int32), rng.integers(0, L, n).astype(np.int32)
    t = rng.random(n) * 10.0 ** rng.integers(-6, 3, n)
    out = np.zeros((C, L))
    assert profile_sums(cnode, loc, t, out)
    want = np.bincount(cnode.astype(np.int64) * L + loc, weights=t, minlength=C * L).reshape(C, L)
    assert np.array_equal(out, want)


@pytest.mark.parametrize("loc", [[], [0, 0, 1, 3, 3], [2, 0, 1], [0, 5]])
def test_offsets_are_the_counts(loc):
    from patterns.array_ops import csr
    from patterns.array_ops import location_offsets

    loc = np.array(loc, np.int32)
    assert location_offsets(loc, 4).tolist() == csr(loc, 4).tolist()


@pytest.mark.parametrize("loc", [[], [0, 0, 1, 3, 3], [1, 1, 2], [3], [2, 0, 1], [0, 5], [-1, 0], [0, 0, -1], [1, 4]])
def test_grouped_offsets(loc):
    from patterns.kernels.backward_build import grouped_offsets

    loc = np.array(loc, np.int32)
    grouped, off = grouped_offsets(loc, 4)
    assert grouped == (len(loc) == 0 or (loc.min() >= 0 and loc.max() < 4 and (np.diff(loc) >= 0).all()))
    if grouped:
        assert off.tolist() == [0] + np.cumsum(np.bincount(loc, minlength=4)).tolist()


@pytest.mark.parametrize("seed", range(6))
def test_point_order_is_the_sort_without_repeats(seed):
    """Points named by (loc, cut) of the sync_points table, some twice: the order of the sort by (loc, cut,
    part) keeping each cut's first row; a point that is not in the table takes the sort itself."""
    from patterns.array_ops import point_order
    from patterns.tables import Table

    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 6, 3)
    P = Table({"loc": np.repeat(np.arange(3), counts).astype(np.int32),
               "cut": np.concatenate([np.arange(1, c + 1) for c in counts]).astype(np.int32)})
    n = int(rng.integers(0, 40)) if len(P) else 0
    pick = rng.integers(0, len(P), n) if len(P) else np.zeros(0, np.int64)
    loc, cut = P["loc"][pick].astype(np.int64), P["cut"][pick]
    if seed == 5 and n:
        cut = cut.copy()
        cut[0] = 99  # no such point
    src = np.sort(rng.integers(0, 3, n))
    o = np.lexsort((src, cut, loc))
    keep = np.ones(len(o), bool)
    keep[1:] = (loc[o][1:] != loc[o][:-1]) | (cut[o][1:] != cut[o][:-1])
    assert point_order(P, loc, cut, np.bincount(src, minlength=3), 3).tolist() == o[keep].tolist()


@pytest.mark.parametrize("grouped", [False, True])
def test_max_by_loc_is_maximum_at(grouped):
    """Locations interleaved or in runs (as sync_points holds them), over an ``out`` that already holds values."""
    from patterns.kernels.backward_build import max_by_loc

    rng = np.random.default_rng(5)
    loc, val = rng.integers(0, 4, 50).astype(np.int32), rng.integers(-5, 30, 50)
    if grouped:
        loc = np.sort(loc)
    got = rng.integers(0, 20, 5)
    want = got.copy()
    assert max_by_loc(loc, val, got)
    np.maximum.at(want, loc, val)
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("seed", range(6))
def test_barrier_points_are_the_numpy_ones(seed):
    """The barrier points against the NumPy formulation they replace (equal arrivals, NaN enters, unlinked
    points, sparse instance ids)."""
    from patterns.kernels.backward_build import barrier_points

    rng = np.random.default_rng(seed)
    nb, n, L = int(rng.integers(1, 30)), int(rng.integers(0, 60)), 4
    b_inst = rng.integers(0, 6, nb) * (1000 if seed == 4 else 1)
    b_enter = rng.choice([0.0, 1.0, 2.0, 2.0, 3.5] + ([np.nan] if seed == 5 else []), nb)
    b_exit = b_enter + rng.random(nb)
    kind = rng.integers(8, 11, n).astype(np.int8)
    row = rng.integers(-1, nb, n)
    p_loc = rng.integers(0, L, n).astype(np.int32)
    thread = rng.integers(0, 3, L)
    ok, s, dense, enter, wait, total, first = barrier_points(kind, row, p_loc, b_inst, b_enter, b_exit, thread, 9)
    want_s = np.flatnonzero((kind == 9) & (row >= 0))
    assert ok and s.tolist() == want_s.tolist()
    br = row[want_s]
    want_dense = np.unique(b_inst[br], return_inverse=True)[1].reshape(-1)
    e = b_enter[br]
    latest = np.full(int(want_dense.max()) + 1 if len(br) else 0, -np.inf)
    with np.errstate(invalid="ignore"):  # NumPy warns of the NaN it keeps
        np.maximum.at(latest, want_dense, e)
    th = thread[p_loc[want_s]].astype(np.int64)
    who = np.full(len(latest), np.iinfo(np.int64).max)
    np.minimum.at(who, want_dense, np.where(e == latest[want_dense], th, np.iinfo(np.int64).max))
    w = latest[want_dense] - e
    assert dense.tolist() == want_dense.tolist()
    assert np.array_equal(enter, e, equal_nan=True)
    assert np.array_equal(wait, np.where(w > 0, w, 0.0))
    assert np.array_equal(total, b_exit[br] - e, equal_nan=True)
    assert first.tolist() == (th == who[want_dense]).astype(np.int64).tolist()


def test_kernels_refuse_indices_outside_their_tables():
    """Rows naming a location or call path outside the arrays: the kernels change nothing and say so (the
    callers then take the NumPy path, whose indexing error names the problem)."""
    from patterns.kernels.backward_build import interval_sums, max_by_loc, profile_sums

    out = np.zeros((2, 2))
    assert not profile_sums(np.array([0, 2], np.int32), np.array([0, 1], np.int32), np.ones(2), out)
    assert not out.any()
    n = np.zeros(2, np.int64)
    assert not max_by_loc(np.array([0, 5], np.int32), np.array([3, 4]), n) and not n.any()
    ok, _, _ = interval_sums(np.array([3]), np.array([1]), np.array([0]), np.ones(1), np.ones(1, bool),
                             np.array([1, 1]), np.array([0, 1, 2]), 2, 2)
    assert not ok


@pytest.mark.parametrize("seed,big", [(0, False), (1, False), (2, True), (3, False)])
def test_pack_is_concatenate_then_gather(seed, big):
    """The points written from the parts straight into the packed arrays (patterns.backward.pack_points) equal the
    columns concatenated, gathered by the order (some rows dropped: a cut met twice) and packed; a value past
    int32 makes the integer columns int64."""
    from patterns.backward_points import _DEFAULT, _FLOAT_COLS, _INT_COLS, _ROLE_COLS, pack_points, points_part

    rng = np.random.default_rng(seed)
    parts = []
    for _ in range(int(rng.integers(1, 5))):
        n = int(rng.integers(0, 30))
        cols = {"loc": rng.integers(0, 4, n).astype(np.int32), "cut": rng.integers(1, 50, n),
                "wait": rng.random(n), "time": rng.random(n), "sr_arg": rng.integers(-1, 9, n), "mpi": 1,
                "role": int(rng.integers(0, 9)), "ref2": rng.integers(0, 2, n),
                "cnode": rng.integers(0, 7, n).astype(np.int32)}
        if rng.random() < 0.5:  # the others take the default
            cols["total"] = rng.random(n)
        parts.append(points_part(**cols))
    if big:
        parts[0]["sr_arg"] = parts[0]["sr_arg"] + (1 << 40)
    sizes = [p["n"] for p in parts]
    N = sum(sizes)
    o = rng.permutation(N)[: max(N - int(rng.integers(0, 4)), 0)] if seed else rng.permutation(N)
    sp_i, sp_f, rr = pack_points(parts, sizes, o, 100)

    def column(k):
        return np.concatenate([np.broadcast_to(p.get(k, _DEFAULT[k]) if k in _DEFAULT else p[k], (p["n"],))
                               for p in parts])[o]

    assert sp_i.dtype == (np.int64 if big and N and parts[0]["n"] else np.int32)
    for out, names in ((sp_i, _INT_COLS), (sp_f, _FLOAT_COLS), (rr.T, _ROLE_COLS)):
        for c, k in enumerate(names):
            assert np.array_equal(out[:, c], column(k).astype(out.dtype), equal_nan=True), k


@pytest.mark.parametrize("seed", range(8))
def test_barrier_groups_is_the_numpy_grouping(seed):
    """The OpenMP barrier instances (patterns.kernels.backward_build.barrier_groups) against the NumPy
    grouping they replace: points of other roles between them, instances without a latest arrival, one with
    two, some never named."""
    from patterns.kernels.backward_build import barrier_groups

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    role = rng.choice([4, 7, 8, 8, 8], n).astype(np.int64)
    ref = rng.integers(0, 9, n).astype(np.int64)
    ref2 = (rng.random(n) < 0.3).astype(np.int64)
    cp_want = rng.integers(-1, n + 1, n).astype(np.int64)
    cp_got = cp_want.copy()
    latest, n_m, members = barrier_groups(role, ref, ref2, 8, cp_got)
    bpt = np.flatnonzero(role == 8)
    if not len(bpt):
        assert len(latest) == len(n_m) == len(members) == 0 and np.array_equal(cp_got, cp_want)
        return
    nb = int(ref[bpt].max()) + 1
    bpt = bpt[np.argsort(ref[bpt], kind="stable")]
    want_latest = np.full(nb, -1, np.int64)
    lp = bpt[ref2[bpt] == 1]
    want_latest[ref[lp]] = lp
    keep = want_latest[ref[bpt]] >= 0
    mp = bpt[keep]
    others = mp[mp != want_latest[ref[mp]]]
    cp_want[others] = want_latest[ref[others]]
    assert latest.tolist() == want_latest.tolist()
    assert n_m.tolist() == np.bincount(ref[bpt], minlength=nb).tolist()
    assert members.tolist() == mp.tolist() and cp_got.tolist() == cp_want.tolist()


@pytest.mark.parametrize("seed", range(6))
def test_point_segments_is_searchsorted(seed):
    """Per point the first segment of its location whose interval lies after the point's cut, written into a
    column of a packed array (int32 or int64)."""
    from patterns.kernels.backward import point_segments

    rng = np.random.default_rng(seed)
    L = int(rng.integers(1, 5))
    seg_cut = np.concatenate([np.sort(rng.integers(1, 40, int(rng.integers(0, 30)))) for _ in range(L)])
    counts = rng.multinomial(len(seg_cut), [1 / L] * L) if len(seg_cut) else np.zeros(L, np.int64)
    seg_off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    seg_cut = np.concatenate([np.sort(seg_cut[seg_off[l]:seg_off[l + 1]]) for l in range(L)]).astype(np.int32)
    sp_counts = rng.integers(0, 8, L)
    sp_off = np.concatenate([[0], np.cumsum(sp_counts)]).astype(np.int64)
    sp_cut = np.concatenate([np.sort(rng.choice(np.arange(1, 45), c, replace=False)) for c in sp_counts])
    packed = np.full((len(sp_cut), 7), -5, np.int32 if seed % 2 else np.int64)
    packed[:, 1] = sp_cut
    point_segments(seg_off, seg_cut, sp_off, packed[:, 1], packed[:, 6])
    for l in range(L):
        for j in range(sp_off[l], sp_off[l + 1]):
            want = seg_off[l] + np.searchsorted(seg_cut[seg_off[l]:seg_off[l + 1]], sp_cut[j], side="right")
            assert packed[j, 6] == want
    assert (packed[:, 2:6] == -5).all()


@pytest.mark.parametrize("seed", range(4))
def test_wait_sums_is_the_bincount(seed):
    """The waits per (call path, location) of the packed points: the same additions in the same order as the
    np.bincount formulation (equal to the last bit); NaN and non-positive waits add nothing; an index outside
    the array: False, nothing added."""
    from patterns.kernels.backward_build import wait_sums

    rng = np.random.default_rng(seed)
    n, C, L = int(rng.integers(0, 80)), 5, 3
    sp_i = np.zeros((n, 7), np.int32 if seed % 2 else np.int64)
    sp_i[:, 0], sp_i[:, 2] = rng.integers(0, L, n), rng.integers(0, C, n)
    sp_f = np.zeros((n, 4))
    sp_f[:, 0] = rng.choice([0.0, -1.0, np.nan, 1e-3, 0.7, 123.456], n) * rng.random(n)
    out = np.zeros((C, L))
    assert wait_sums(sp_i, sp_f, out)
    keep = sp_f[:, 0] > 0
    want = np.bincount(sp_i[keep, 2].astype(np.int64) * L + sp_i[keep, 0], weights=sp_f[keep, 0],
                       minlength=C * L).reshape(C, L)
    assert out.tobytes() == want.tobytes()
    if n:
        sp_f[0, 0], sp_i[0, 2] = 1.0, C
        out = np.zeros((C, L))
        assert not wait_sums(sp_i, sp_f, out) and not out.any()


def _same_packed(got, want):
    """Two packings of the points are the same arrays (the segment column aside: it is filled later)."""
    for g, w in zip(got[:2], want[:2]):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.array_equal(g[:, :6] if g.shape[1] == 7 else g, w[:, :6] if w.shape[1] == 7 else w, equal_nan=True)
    for g, w in zip(got[2], want[2]):  # role, ref, ref2
        assert g.tolist() == w.tolist()


@pytest.mark.parametrize("seed", range(6))
def test_openmp_points_straight_from_the_tables_are_the_parts_packed(seed):
    """pack_with_openmp (the OpenMP points written from the tables, the others scattered) gives the arrays that
    openmp_points, point_order and pack_points give, also with equal arrivals and a NaN ENTER at a barrier; where
    a barrier names no instance it declines (the caller then packs part by part)."""
    from random_hybrid_traces import random_trace

    from analyzer.replay import replay
    from patterns.array_ops import point_order
    from patterns.backward import REQUIRES
    from patterns.backward_points import (collective_points, init_finalize_points, openmp_points, p2p_parts,
                                          pack_points, pack_with_openmp)
    from patterns.kernels.backward_build import point_cuts

    ctx = replay(random_trace(seed, n_ranks=2 + seed % 3, n_threads=1 + seed % 4, steps=20 + 3 * seed), tables=REQUIRES)
    P, M, C, S = (ctx.table(t) for t in ("sync_points", "messages", "collectives", "time_segments"))
    cuts = point_cuts(np.asarray(P["kind"]), np.asarray(P["row"]), np.asarray(P["cut"]), len(M), len(C))
    parts = (p2p_parts(ctx, M, cuts)[0] if len(M) else []) + collective_points(ctx, C, cuts[4])[0] + \
        init_finalize_points(ctx, P)
    got = pack_with_openmp(ctx, P, parts, len(S))
    old = parts + openmp_points(ctx, P)
    sizes = [p["n"] for p in old]
    o = point_order(P, *(np.concatenate([np.asarray(p[k]) for p in old]) for k in ("loc", "cut")), sizes,
                    ctx.n_locations)
    want = pack_points(old, sizes, o, len(S))
    assert got is not None
    _same_packed(got, want)
    B = ctx.table("omp_barriers")
    if len(B):
        # equal arrivals (the lowest thread counts as the latest) and a NaN ENTER (nobody is the latest there)
        inst, e = np.asarray(B["instance"]), np.asarray(B["enter"], np.float64).copy()
        ids = np.unique(inst)
        latest = np.full(ids.max() + 1, -np.inf)
        np.maximum.at(latest, inst, e)
        even = np.isin(inst, ids[::2])
        e[even] = latest[inst[even]]
        last = inst == ids[-1]  # its last member (in walk order) brings the NaN, after the others set the latest
        e[last] = np.where(np.arange(np.count_nonzero(last)) == np.count_nonzero(last) - 1, np.nan, 1.0)
        B["enter"] = e
        old = parts + openmp_points(ctx, P)
        _same_packed(pack_with_openmp(ctx, P, parts, len(S)), pack_points(old, sizes, o, len(S)))
        B["instance"] = np.where(np.arange(len(B)) == 0, -1, B["instance"])
        assert pack_with_openmp(ctx, P, parts, len(S)) is None


@pytest.mark.parametrize("seed", range(8))
def test_locations_with_mpi_points_are_those_of_the_gathered_points(seed):
    """_with_mpi_points (run by run over the points' location offsets) marks the locations the gather of the
    MPI points' locations names, with locations without points among them."""
    from patterns.backward import _with_mpi_points

    rng = np.random.default_rng(seed)
    L, n = int(rng.integers(1, 6)), int(rng.integers(0, 30))
    loc = np.sort(rng.integers(0, L, n))
    mpi = rng.integers(0, 2, n).astype(np.int32)
    want = np.zeros(L, bool)
    want[np.unique(loc[mpi != 0])] = True
    assert _with_mpi_points(mpi, np.searchsorted(loc, np.arange(L + 1))).tolist() == want.tolist()

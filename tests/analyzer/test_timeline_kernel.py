"""The timeline kernel (cut points and per-interval times) against its slow reference, on random traces;
and the linking of the cut points to the replay tables."""

from __future__ import annotations

import numpy as np
import pytest
from random_hybrid_traces import random_trace

from timeline_reference import first_rows_reference, fill_rows_reference, reference_timeline
from analyzer.replay import replay
from analyzer.replay.kernels import keyjoin as KJ
from analyzer.replay.timeline import _join, build_timeline
from analyzer.replay.engine import region_arrays, walk_order, walk_share
from patterns.tables import SYNC_POINTS, TIME_SEGMENTS, Table


def _path(tree, node):
    out = []
    while node > 0:
        out.append(int(tree.region[node]))
        node = int(tree.parent[node])
    return tuple(reversed(out))


def _spent(maps):
    """``{interval: {path: seconds}}`` without the entries of zero seconds and the intervals left empty."""
    out = {j: {p: t for p, t in m.items() if t != 0.0} for j, m in maps.items()}
    return {j: m for j, m in out.items() if m}


@pytest.mark.parametrize("seed", range(8))
def test_timeline_kernel_matches_reference(seed):
    trace = random_trace(seed, n_ranks=2 + seed % 3, n_threads=1 + seed % 3, steps=15 + seed)
    names, _, role = region_arrays(trace.defs)
    locs = [l for g in walk_order(trace) for l in g]
    share = walk_share(trace, locs, role, names, timeline=True)
    assert share.error is None
    forks = {}
    for loc in locs:
        cuts, intervals = reference_timeline(trace, loc, forks)
        fr = share.done[loc][1]
        assert list(zip(fr["cuts"]["kind"].tolist(), fr["cuts"]["event"].tolist())) == cuts
        seg = fr["segments"]
        got = {}
        for j, node, t in zip(seg["cut"], seg["cnode"], seg["time"]):
            got.setdefault(int(j), {}).setdefault(_path(share.tree, int(node)), 0.0)
            got[int(j)][_path(share.tree, int(node))] += float(t)
        # a time map holds what was spent: the kernel writes no entry of zero seconds
        got, intervals = _spent(got), _spent(intervals)
        assert got.keys() == intervals.keys()
        for j in got:
            assert got[j].keys() == intervals[j].keys()
            for p in got[j]:
                assert got[j][p] == pytest.approx(intervals[j][p], abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_sync_points_link_to_their_rows(seed):
    ctx = replay(random_trace(seed, n_ranks=3, n_threads=2, steps=25), tables=["sync_points"])
    P, M, C = ctx.tables["sync_points"], ctx.tables["messages"], ctx.tables["collectives"]
    B, T = ctx.tables["omp_barriers"], ctx.tables["omp_teams"]
    assert (np.diff(P["cut"])[np.diff(P["loc"]) == 0] == 1).all()  # numbered 1, 2, ... per location
    linked = P["row"] >= 0
    assert linked[np.isin(P["kind"], [1, 3, 5, 8, 9, 10])].all()
    for k, table, loc_col, time_col in ((1, M, "send_loc", "send_time"), (3, M, "recv_loc", "recv_time"),
                                         (5, C, "loc", "exit"), (9, B, "loc", "exit"), (10, T, "master_loc", "join_time")):
        s = P["kind"] == k
        assert (table[loc_col][P["row"][s]] == P["loc"][s]).all()
        assert np.array_equal(table[time_col][P["row"][s]], P["time"][s])
    # every message has its send and its receive point
    assert sorted(P["row"][P["kind"] == 1].tolist()) == list(range(len(M)))
    assert sorted(P["row"][P["kind"] == 3].tolist()) == list(range(len(M)))


def test_the_tables_have_the_schema_dtypes():
    ctx = replay(random_trace(5, n_ranks=3, n_threads=2, steps=25), tables=["sync_points", "time_segments"])
    for name, schema in (("sync_points", SYNC_POINTS), ("time_segments", TIME_SEGMENTS)):
        table = ctx.tables[name]
        assert len(table)
        assert {k: table[k].dtype for k in schema} == {k: np.dtype(dt) for k, dt in schema.items()}, name


def test_rows_are_int64_where_a_linked_table_outgrows_int32():
    def barriers(n):  # a table of n rows without n rows of memory (only its length is read here)
        return Table({"loc": np.broadcast_to(np.int32(0), (n,)), "exit": np.broadcast_to(np.float64(0), (n,))})

    for n, want in ((2**31 - 1, np.int32), (2**31, np.int64)):
        out = build_timeline({}, {"omp_barriers": barriers(n)}, np.zeros(0, np.int64), np.zeros(0, np.int64))
        assert out["sync_points"]["row"].dtype == want
        assert out["sync_points"]["cut"].dtype == np.int32


def test_the_time_maps_add_up_to_the_exclusive_time_on_masters():
    """With one thread per process the time maps hold all the time of a location: the exclusive time, with
    the fork and join spans moved from the caller to the parallel region (as Scalasca's time and ours do)."""
    ctx = replay(random_trace(3, n_ranks=3, n_threads=1, steps=30), tables=["time_segments"])
    S = ctx.tables["time_segments"]
    tot = np.zeros_like(ctx.excl_time)
    np.add.at(tot, (S["cnode"], S["loc"]), S["time"])
    assert np.allclose(tot.sum(axis=0), ctx.excl_time.sum(axis=0), atol=1e-9)
    par = np.isin(ctx.region_role[ctx.calltree.region], [30])  # parallel regions gain the fork/join spans
    assert np.allclose(tot[~par & ~np.isin(np.arange(ctx.n_cnodes), ctx.calltree.parent[par])],
                       ctx.excl_time[~par & ~np.isin(np.arange(ctx.n_cnodes), ctx.calltree.parent[par])], atol=1e-9)


@pytest.mark.parametrize("seed", range(12))
def test_first_rows_matches_reference(seed):
    """The (location, key) join, on keys that rise per location (the walk) and on keys in any order (the
    hash table), with duplicates, -0.0, NaN, absent locations and negative ones."""
    rng = np.random.default_rng(seed)
    nb, na, n_loc = int(rng.integers(0, 60)), int(rng.integers(0, 60)), int(rng.integers(1, 5))
    b_loc = rng.integers(-1 if seed % 4 == 3 else 0, n_loc, nb)
    a_loc = rng.integers(-1, n_loc + 1, na)
    if seed % 2:  # times
        b_key = rng.choice([0.0, -0.0, 0.5, 1.0, 1.5, 2.0] + ([np.nan] if seed % 3 == 0 else []), nb)
        a_key = rng.choice([0.0, -0.0, 0.5, 1.0, 2.0, 3.0, np.nan], na)
    else:
        b_key = rng.integers(0, 8, nb)
        a_key = rng.integers(0, 9, na)
    if seed % 4 < 2:  # sorted per location, as the replay's tables are
        o = np.lexsort((b_key, b_loc))
        b_loc, b_key = b_loc[o], b_key[o]
    elif seed % 4 == 2:  # keys rising within each location, the locations interleaved
        o = np.argsort(b_key, kind="stable")
        b_loc, b_key = b_loc[o], b_key[o]
    got = _join(b_loc, b_key, a_loc, a_key)
    assert got.tolist() == first_rows_reference(b_loc, b_key, a_loc, a_key)


@pytest.mark.parametrize("grouped", [True, False])
def test_first_rows_walks_rising_keys_grouped_or_not(grouped):
    """Keys rising within each location are walked (no hash table), whether the locations come grouped (read
    in place) or interleaved (through the counting sort); the rows are the reference's either way."""
    from analyzer.replay.kernels.keyjoin import walk_rows

    rng = np.random.default_rng(5)
    b_loc = np.repeat(np.arange(4, dtype=np.int32), 50)
    b_key = np.concatenate([np.sort(rng.choice(200, 50, replace=False)) for _ in range(4)]).astype(np.float64)
    if not grouped:
        o = np.argsort(b_key, kind="stable")
        b_loc, b_key = b_loc[o], b_key[o]
    a_loc = rng.integers(-1, 5, 300).astype(np.int32)
    a_key = rng.integers(0, 201, 300).astype(np.float64)
    out = np.full(len(a_loc), -1, np.int64)
    assert walk_rows(b_loc, b_key, a_loc, a_key, np.zeros(0, np.int8), 0, out)
    want = first_rows_reference(b_loc, b_key, a_loc, a_key)
    assert out.tolist() == want == _join(b_loc, b_key, a_loc, a_key).tolist()
    # with a kind filter: the rows of that kind get their row where they have one, every other row is untouched
    kind = rng.integers(0, 3, len(a_loc)).astype(np.int8)
    out = np.full(len(a_loc), -7, np.int32)
    assert walk_rows(b_loc, b_key, a_loc, a_key, kind, 2, out)
    assert out.tolist() == [w if k == 2 and w >= 0 else -7 for k, w in zip(kind.tolist(), want)]


@pytest.mark.parametrize("seed", range(8))
def test_linking_one_kind_in_place_is_the_join_of_its_points(seed):
    """_link_kind (the cut points of one kind linked straight in the table's column) gives those points the
    rows the join of the gathered points gives, walked (rising times per location) or hashed (falling times,
    NaN), and leaves the other points as they were."""
    from analyzer.replay.timeline import _link_kind

    rng = np.random.default_rng(seed)
    nb, na = int(rng.integers(0, 40)), int(rng.integers(0, 80))
    b_loc = np.sort(rng.integers(0, 4, nb)).astype(np.int32)
    b_time = rng.choice([0.0, -0.0, 0.5, 1.0, 1.5, 2.0] + ([np.nan] if seed % 4 == 3 else []), nb)
    if seed % 2 == 0:  # rising per location, as the replay's tables are
        o = np.lexsort((b_time, b_loc))
        b_loc, b_time = b_loc[o], b_time[o]
    loc = rng.integers(-1, 5, na).astype(np.int32)
    when = rng.choice([0.0, -0.0, 0.5, 1.0, 2.0, 3.0, np.nan], na)
    kind = rng.integers(8, 11, na).astype(np.int8)
    row = np.full(na, -5, np.int32)
    row[kind == 9] = -1  # the points of the kind linked start unlinked
    _link_kind(row, kind, 9, loc, when, b_loc, b_time)
    sel = kind == 9
    assert row[sel].tolist() == _join(b_loc, b_time, loc[sel], when[sel]).tolist()
    assert (row[~sel] == -5).all()


@pytest.mark.parametrize("seed", range(6))
def test_fill_rows_matches_reference(seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 6, int(rng.integers(1, 5)))
    n = int(counts.sum())
    kind = rng.integers(1, 4, n).astype(np.int8)
    row = np.where(rng.random(n) < 0.2, 99, -1).astype(np.int64)
    m = int(rng.integers(0, 30))
    loc, cut, rows = rng.integers(-1, len(counts) + 1, m), rng.integers(-1, 7, m), rng.integers(0, 50, m)
    want = fill_rows_reference(row, kind, counts.tolist(), 2, loc, cut, rows)
    off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    KJ.fill_rows(row, kind, off, 2, loc, cut, rows)
    assert row.tolist() == want


def test_remap():
    node = np.array([2, -1, 0, -3], np.int32)
    assert KJ.remap(node, np.array([5, 6, 7], np.int64)) is node
    assert node.tolist() == [7, -1, 5, -1]
    with pytest.raises(IndexError):
        KJ.remap(np.array([3], np.int32), np.array([5, 6, 7], np.int64))


@pytest.mark.parametrize("seed", range(4))
def test_scratch_forks_keep_the_latest_fork_of_each_team(seed):
    """The forks the kernel looks up: team ids ascending, each with its last fork time, as a dict updated
    location by location would hold them (a team id forked again, also within one location)."""
    from analyzer.replay.timeline import Scratch

    rng = np.random.default_rng(seed)
    scratch, ref = Scratch(), {}
    for _ in range(6):
        n = int(rng.integers(0, 40))
        teams, times = rng.integers(0, 25, n), rng.random(n)
        scratch.add_forks(teams, times)
        ref.update(zip(teams.tolist(), times.tolist()))
        keys, when = scratch.forks()
        assert keys.dtype == np.int64 and when.dtype == np.float64
        assert keys.tolist() == sorted(ref) and when.tolist() == [ref[k] for k in sorted(ref)]


def test_fragments_are_views_of_the_share_columns_and_the_tables_take_them_as_they_are():
    """A share's cut points and entries are written location by location into one set of columns: the fragments
    are views of them, the tables built from fragments in location order take those columns without a copy, and
    building them leaves the fragments as they were (call-path ids remapped into a new array).  The same tables
    from columns of their own per location (no room reserved), and from the pieces in another order."""
    from analyzer.replay import timeline as TL
    from analyzer.replay.engine import assemble

    trace = random_trace(2, n_ranks=3, n_threads=2, steps=20)
    names, _, role = region_arrays(trace.defs)
    locs = [l for g in walk_order(trace) for l in g]
    assert locs == sorted(locs)
    want = {"time_segments", "sync_points"}

    def tables(scratch_args):
        orig = TL.Store
        TL.Store = lambda *a: orig(*scratch_args) if scratch_args is not None else orig(*a)
        try:
            share = walk_share(trace, locs, role, names, timeline=True)
        finally:
            TL.Store = orig
        frags = {l: share.done[l][1] for l in locs}
        before = {l: {k: {c: np.array(v) for c, v in frags[l][k].items()} for k in ("cuts", "segments")} for l in locs}
        ctx = assemble(trace, [share], want)
        for l in locs:  # the fragments are unchanged
            for k in ("cuts", "segments"):
                for c, v in before[l][k].items():
                    assert np.array_equal(frags[l][k][c], v), (l, k, c)
        return ctx.tables, frags

    got, frags = tables(None)  # the walk's own: room for the whole share
    cut_frags = [frags[l]["cuts"] for l in locs]
    base = cut_frags[0]["time"].base
    assert all(f["time"].base is base for f in cut_frags)
    assert got["sync_points"]["time"].base is base and got["time_segments"]["time"].base is not None
    assert got["sync_points"]["cnode"].base is None  # remapped into a new array: the fragments may be others' too
    share = walk_share(trace, locs, role, names, timeline=True)
    mine = assemble(trace, [share], want, owned=True).tables  # the walk's own: remapped in place
    assert mine["sync_points"]["cnode"].base is not None and mine["time_segments"]["cnode"].base is not None
    for name in want:
        for k in got[name].columns():
            assert np.array_equal(got[name][k], mine[name][k]), (name, k)
    for args in ((), (0, 0, 0)):  # columns per location: joined by copies
        ref, frags = tables(args)
        assert frags[locs[0]]["cuts"]["time"].base is not frags[locs[-1]]["cuts"]["time"].base
        assert ref["sync_points"]["time"].base is None
        for name in want:
            for k in got[name].columns():
                assert got[name][k].dtype == ref[name][k].dtype
                assert np.array_equal(got[name][k], ref[name][k]), (name, k)


def test_a_store_that_cannot_reserve_the_share_gives_each_location_its_own_columns(monkeypatch):
    """Where the room for the whole share cannot be had (a strict overcommit policy), each location gets columns
    of its own: the same tables."""
    from analyzer.replay import timeline as TL

    trace = random_trace(4, n_ranks=2, n_threads=2, steps=15)
    want = ["sync_points", "time_segments"]
    ref = replay(trace, tables=want).tables
    largest = max(int(trace.n_events(l)) for l in trace.location_ids)
    orig, made, refused = TL.Columns, [], []

    def columns(n_cuts, n_entries, cut_dt):  # no more than one location's room
        if n_cuts > largest + 1:
            refused.append(n_cuts)
            raise MemoryError
        made.append(n_cuts)
        return orig(n_cuts, n_entries, cut_dt)

    monkeypatch.setattr(TL, "Columns", columns)
    got = replay(trace, tables=want).tables
    assert refused and len(made) > 1
    for name in want:
        for k in ref[name].columns():
            assert np.array_equal(got[name][k], ref[name][k]), (name, k)


def test_without_free_reservations_each_location_gets_columns_of_its_own(monkeypatch):
    """Under strict overcommit accounting (reserved memory counts, written or not) the store reserves no room for
    the whole share: the same tables, from columns per location."""
    from analyzer.replay import timeline as TL

    trace = random_trace(6, n_ranks=2, n_threads=3, steps=12)
    want = ["sync_points", "time_segments"]
    ref = replay(trace, tables=want).tables
    monkeypatch.setattr(TL, "reserving_is_free", lambda: False)
    largest = max(int(trace.n_events(l)) for l in trace.location_ids)
    assert TL.Store(10**6, 4, largest).room(largest).cuts[0].shape[0] == largest + 1
    got = replay(trace, tables=want).tables
    for name in want:
        for k in ref[name].columns():
            assert np.array_equal(got[name][k], ref[name][k]), (name, k)


def test_joined_is_a_view_only_of_adjacent_pieces():
    from analyzer.replay.timeline import _joined

    a = np.arange(20, dtype=np.int64)
    assert _joined([a[0:3], a[3:3], a[3:10]]).base is a
    assert _joined([a[0:3], a[3:10]], np.int32).dtype == np.int32
    for pieces in ([a[0:3], a[4:10]], [a[3:10], a[0:3]], [a[0:3], np.arange(3)], [a[0:10:2], a[10:12]]):
        out = _joined(pieces)
        assert out.base is None and out.tolist() == np.concatenate(pieces).tolist()
    assert _joined([np.zeros(0), np.zeros(0)]).tolist() == []


def test_joined_compacts_ordered_pieces_with_gaps_in_their_array():
    """The pieces of this call alone (``compact``), in one array in order with gaps between them: each is moved
    down to the end of the one before and the result is a view of that array holding their concatenation.
    Pieces out of order, overlapping or of other arrays are still joined by a copy."""
    from analyzer.replay.timeline import _joined

    a = np.arange(40, dtype=np.int64)
    pieces = [a[2:5], a[9:9], a[9:15], a[20:21], a[30:38]]
    want = np.concatenate(pieces)
    assert _joined(pieces).base is None  # not compact: a copy, the pieces untouched
    assert a.tolist() == list(range(40))
    out = _joined(pieces, compact=True)
    assert out.base is a and out.ctypes.data == a[2:].ctypes.data and out.tolist() == want.tolist()
    b = np.arange(40, dtype=np.int64)
    for bad in ([b[10:15], b[0:3]], [b[0:5], b[3:8]], [b[0:3], np.arange(3)]):
        want = np.concatenate(bad)
        out = _joined(bad, compact=True)
        assert out.base is None and out.tolist() == want.tolist()


def test_moving_rows_down_in_chunks_gives_back_only_pages_behind_them():
    """Rows moved down over a distance shorter and longer than a chunk and a 2 MiB page arrive intact, and the
    pages given back as the move goes (read again: zeros) are never those of rows moved or still to move."""
    from analyzer.replay import timeline as TL

    n = (12 << 20) // 8  # 12 MiB of int64
    for gap, chunk in ((1, 1 << 20), (5 << 20, 1 << 20), (3 << 18, 4 << 20)):
        a = np.zeros(n + gap, np.int64)
        a[gap:] = np.arange(1, n + 1)
        TL._move_down(a.ctypes.data, a[gap:].ctypes.data, n * 8, chunk)
        assert np.array_equal(a[:n], np.arange(1, n + 1)), (gap, chunk)
    a = np.ones(8 << 20, np.uint8)  # an anonymous mapping of its own: pages given back read as zeros
    start, page = a.ctypes.data, 2 << 20
    TL._release(start + 100, start + a.nbytes - 100)
    lo, hi = -(-(start + 100) // page) * page - start, (start + a.nbytes - 100) // page * page - start
    assert hi - lo >= page and a[:lo].all() and a[hi:].all()
    if TL._MADVISE is not None:
        assert not a[lo:hi].any()


def test_the_shares_of_a_parallel_replay_write_one_set_of_columns_joined_in_place():
    """With -j the shares' timeline columns are parts of one array each: the tables are views of it holding
    the same rows as the serial replay's (the shares' rows moved together, no copy)."""
    trace = random_trace(4, n_ranks=4, n_threads=2, steps=15)
    want = ["sync_points", "time_segments"]
    ref = replay(trace, tables=want).tables
    got = replay(trace, tables=want, jobs=3).tables
    for name in want:
        for k in ref[name].columns():
            assert got[name][k].dtype == ref[name][k].dtype
            assert np.array_equal(got[name][k], ref[name][k]), (name, k)
    t = got["sync_points"]["time"]
    assert t.base is not None and t.base.shape[0] > len(t)  # a view of the reserved columns
    assert got["time_segments"]["cnode"].base is not None  # call paths remapped in place


def test_shared_stores_without_free_reservations_are_stores_of_their_own(monkeypatch):
    from analyzer.replay import timeline as TL

    monkeypatch.setattr(TL, "reserving_is_free", lambda: False)
    stores = TL.shared_stores([[10, 20], [5]])
    assert len(stores) == 2 and all(s.columns is None for s in stores)
    monkeypatch.setattr(TL, "reserving_is_free", lambda: True)
    a, b = TL.shared_stores([[10, 20], [5]])
    assert a.columns.cuts[4].base is b.columns.cuts[4].base
    assert b.columns.cuts[4].ctypes.data - a.columns.cuts[4].ctypes.data == (30 + 2) * 8
    assert a.room(20) is a.columns and b.room(5) is b.columns

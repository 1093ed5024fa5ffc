"""The share replay (analyzer/distributed/share_replay.py) against the serial replay.

Every share's context must hold: the serial call tree; the serial visits and times in its owned columns
(zeros elsewhere); per table, the serial table's rows that touch an owned location (messages: also the
rows sent by an owned location, the halo), with every column equal, in the serial relative order; and
``merge_problems`` over all shares must give the serial ``ctx.problems``.  Run over MemoryNetwork (the
reference carrier) for K = 1 (one share), K < processes (uneven), and K > processes (empty shares).
"""

from __future__ import annotations

import io
import pickle

import numpy as np
import pytest
from random_hybrid_traces import random_builder

from analyzer.distributed.network import MemoryNetwork, run_stages
from analyzer.distributed.share_replay import FALLBACK, merge_problems, share_stages
from analyzer.replay import replay
from analyzer.replay.engine import ALL_TABLES, TIMELINE_TABLES, ReplayError, assemble, check_tables, partition
from tracefmt import Trace, TraceWriter
from tracefmt.layout import EventType

SHARE_TABLES = set(ALL_TABLES) - TIMELINE_TABLES
N_PROCESSES = 5
KS = (1, 2, 3, 4, 7)  # 7 > 5 processes: some shares are empty

#: the column naming the rows' location in each table, or "process" where the table has one
_WHERE = {"omp_teams": "process", "omp_team_members": "loc", "omp_barriers": "loc", "locks": "process",
          "omp_tasks": "process", "omp_task_dependences": "process", "omp_task_fragments": "process",
          "threads": "process", "mpi_file_ops": "loc"}
#: dense ids that number rows of a whole table (teams by fork order, barrier instances by team): a share
#: numbers only its own, so they are compared as partitions (one share id <-> one serial id)
_KEYS = {"omp_teams": ("team", "parent_team"), "omp_team_members": ("team",), "omp_barriers": ("instance", "team")}


def _run(trace, K, want=SHARE_TABLES, salvage=False):
    shares = partition(trace, K)
    got = run_stages(MemoryNetwork(K), share_stages(trace, shares, want, salvage=salvage))
    return shares, [got[s] for s in range(K)]


def _same_keys(name, col, mine, theirs):
    """``mine`` and ``theirs`` name the same groups of rows (a bijection between the ids); -1 stays -1."""
    pairs = np.unique(np.stack([mine, theirs]), axis=1)
    assert len(np.unique(pairs[0])) == len(np.unique(pairs[1])) == pairs.shape[1], (name, col)
    assert ((mine == -1) == (theirs == -1)).all(), (name, col)


def _equal_rows(name, mine, serial, rows, skip=()):
    assert list(mine) == list(serial), name
    for col in serial:
        if col in skip:
            continue
        assert mine[col].dtype == serial[col].dtype, (name, col)
        np.testing.assert_array_equal(mine[col], serial[col][rows], err_msg=f"{name}.{col}")


def _check_share(ser, ctx, locs, want):
    owned = np.asarray(sorted(locs), np.int64)
    np.testing.assert_array_equal(ctx.owned, owned)
    assert ctx.n_locations == ser.n_locations
    for a in ("parent", "region", "callsite"):
        np.testing.assert_array_equal(getattr(ctx.calltree, a), getattr(ser.calltree, a))
    assert ctx.synthetic_root == ser.synthetic_root
    foreign = np.setdiff1d(np.arange(ser.n_locations), owned)
    dense = [("visits", ctx.visits, ser.visits), ("excl_time", ctx.excl_time, ser.excl_time),
             ("incl_time", ctx.incl_time, ser.incl_time)]
    dense += [(n, ctx.counters[n], ser.counters[n]) for n in ser.counters]
    assert sorted(ctx.counters) == sorted(ser.counters)
    for what, mine, theirs in dense:
        assert mine.dtype == theirs.dtype and mine.shape == theirs.shape, what
        np.testing.assert_array_equal(mine[:, owned], theirs[:, owned], err_msg=what)  # bit for bit
        assert not mine[:, foreign].any(), what
    assert list(ctx.tables) == [n for n in ser.tables if n in want]
    procs = np.unique(ser.location_process[owned])
    for name in want:
        t, s = ctx.tables[name], ser.tables[name]
        if name == "messages":  # received by an owned location, or sent by one (halo)
            rows = np.isin(s["recv_loc"], owned) | np.isin(s["send_loc"], owned)
        elif name == "mpi_rma_ops":  # every share has every row
            rows = np.ones(len(s), bool)
        elif name == "collectives":  # own members exactly; other rows (extremes of other shares) serial rows
            mine = np.isin(t["loc"], owned)
            _equal_rows(name, t.take(mine), s, np.isin(s["loc"], owned))
            key = s["instance"].astype(np.int64) * ser.n_locations + s["loc"]
            at = np.searchsorted(key, t["instance"].astype(np.int64) * ser.n_locations + t["loc"])
            assert (key[np.minimum(at, len(key) - 1)] == t["instance"] * ser.n_locations + t["loc"]).all()
            _equal_rows(name, t, s, at)
            continue
        else:
            where = s[_WHERE[name]]
            rows = np.isin(where, procs if _WHERE[name] == "process" else owned)
        rows = np.flatnonzero(rows)
        assert len(t) == len(rows), name
        keys = _KEYS.get(name, ())
        _equal_rows(name, t, s, rows, skip=keys)
        for col in keys:
            _same_keys(name, col, t[col], s[col][rows])


def _compare(trace, want=SHARE_TABLES, salvage=False):
    ser = replay(trace, tables=want, salvage=salvage)
    for K in KS:
        shares, results = _run(trace, K, want, salvage)
        for s, r in enumerate(results):
            _check_share(ser, r.context, shares[s], want)
        assert merge_problems([r.problems for r in results], trace) == ser.problems, K
    return ser


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("variant", ["plain", "tasks", "deps"])
def test_shares_hold_the_serial_rows_and_columns(seed, variant):
    opts = {"plain": {}, "tasks": {"tasks": True}, "deps": {"tasks": True, "deps": True}}[variant]
    trace = random_builder(seed, N_PROCESSES, 2, 30, **opts).build()
    ser = _compare(trace)
    assert len(ser.tables["messages"]) and len(ser.tables["omp_barriers"])  # the comparisons had rows
    share_of = {l: s for s, locs in enumerate(partition(trace, 2)) for l in locs}
    m = ser.tables["messages"]
    assert any(share_of[a] != share_of[b] for a, b in zip(m["send_loc"].tolist(), m["recv_loc"].tolist()))  # halo


def test_one_sided_rows_on_every_share():
    ser = _compare(random_builder(3, N_PROCESSES, 2, 40, tasks=True, rma=True).build())
    assert len(ser.tables["mpi_rma_ops"])


@pytest.mark.parametrize("want", [{"messages"}, {"omp_barriers"}, {"locks", "threads"}, set()])
def test_only_the_wanted_tables(want):
    _compare(random_builder(4, N_PROCESSES, 2, 25, tasks=True).build(), want=want)


def test_every_table_but_the_timeline_by_default():
    trace = random_builder(4, N_PROCESSES, 2, 10).build()
    got = run_stages(MemoryNetwork(2), share_stages(trace, partition(trace, 2), None))
    assert set(got[1].context.tables) == SHARE_TABLES


def test_shares_of_whole_processes_only():
    trace = random_builder(4, N_PROCESSES, 2, 10).build()
    shares = partition(trace, 2)
    with pytest.raises(ValueError, match="whole processes"):
        share_stages(trace, [shares[0][:1], shares[0][1:] + shares[1]], SHARE_TABLES)
    with pytest.raises(ValueError, match="exactly once"):
        share_stages(trace, [shares[0], shares[1][1:]], SHARE_TABLES)


def _rewritten(b, edit):
    """The trace of builder ``b`` with each location's event records passed through ``edit(i, records)``."""
    defs = b.definitions()
    buf = io.BytesIO()
    with TraceWriter(buf) as w:
        w.write_definitions(defs)
        for i, loc in enumerate(sorted(defs.locations)):
            w.write_events(loc, edit(i, b.records(loc)))
    return Trace(buf.getvalue())


def _damaged(seed, backwards: bool = False):
    """A random trace with every third receive dropped, the last EXIT of one location dropped (a region
    left open), and, with ``backwards``, one location whose time goes back once."""
    def edit(i, rec):
        rec = np.delete(rec, np.flatnonzero(rec["type"] == int(EventType.MPI_RECV))[i % 3::3])
        if i == 3 and rec["type"][-1] == int(EventType.EXIT):
            rec = rec[:-1]
        if backwards and i == 6:
            rec["time"][5] = rec["time"][4] - 1
        return rec

    return _rewritten(random_builder(seed, N_PROCESSES, 2, 30, tasks=True), edit)


def test_problems_are_the_serial_ones():
    ser = _compare(_damaged(5))
    assert any("point-to-point events have no matching partner" in p for p in ser.problems)
    assert any("still open at the end" in p for p in ser.problems)


def test_salvaged_times_and_the_walk_error():
    trace = _damaged(6, backwards=True)
    ser = _compare(trace, salvage=True)
    assert any("--salvage" in p for p in ser.problems)
    with pytest.raises(ReplayError) as serial:
        replay(trace)
    for K in KS:
        with pytest.raises(ReplayError) as shared:
            _run(trace, K)
        assert str(shared.value) == str(serial.value)


def test_no_receive_anywhere():
    """Every receive dropped: the problem's short form, counted over the shares' sends."""
    b = random_builder(7, N_PROCESSES, 2, 20)
    ser = _compare(_rewritten(b, lambda i, rec: rec[rec["type"] != int(EventType.MPI_RECV)]), want={"messages"})
    assert any(p.endswith("point-to-point events have no matching partner") for p in ser.problems)


def test_counters_in_the_owned_columns():
    b = random_builder(9, N_PROCESSES, 2, 25, tasks=True)
    ins = b.metric("PAPI_TOT_INS")
    rng = np.random.default_rng(9)

    def edit(i, rec):  # a reading after every ENTER and EXIT
        at = np.flatnonzero(np.isin(rec["type"], [int(EventType.ENTER), int(EventType.EXIT)])) + 1
        c = np.zeros(len(at), rec.dtype)
        c["time"], c["type"], c["a"] = rec["time"][at - 1], int(EventType.COUNTER), ins
        c["d"] = np.cumsum(rng.integers(0, 1000, len(at)))
        return np.insert(rec, at, c)

    ser = _compare(_rewritten(b, edit))
    assert ser.counters["PAPI_TOT_INS"].any()


def test_fallback_fragments_give_the_serial_tables_on_share_0():
    trace = random_builder(8, N_PROCESSES, 2, 25, tasks=True).build()
    tables = check_tables({"time_segments", "locks"})
    ser = replay(trace, tables=tables)
    for K in (1, 3, 7):
        got = []

        def keep(stage):
            def run(s, state, inbox):
                if s == 0:
                    got.extend(x for x in inbox.pop(FALLBACK, []) if x is not None)
                return stage(s, state, inbox)
            return run

        stages = share_stages(trace, partition(trace, K), {"messages"}, fallback_tables=tables)
        results = run_stages(MemoryNetwork(K), [stages[0], keep(stages[1])] + stages[2:])
        assert list(results[0].context.tables) == ["messages"]  # nothing built from the fallback
        ctx = assemble(trace, got, tables)
        assert sorted(ctx.tables) == sorted(ser.tables)
        for name, t in ser.tables.items():
            for col in t:
                np.testing.assert_array_equal(ctx.tables[name][col], t[col], err_msg=f"{name}.{col}")
        np.testing.assert_array_equal(ctx.excl_time, ser.excl_time)


def test_states_and_payloads_survive_pickling():
    """``--memory`` keeps states and payloads on disk between stages (pickled): the result is the same.
    (The last stage's state, holding the context and so the trace object, is used at once, never kept.)"""
    trace = random_builder(10, N_PROCESSES, 2, 25, tasks=True, deps=True).build()

    def pickled(stage, last=False):
        def run(s, state, inbox):
            state, out = stage(s, pickle.loads(pickle.dumps(state)), pickle.loads(pickle.dumps(inbox)))
            return state if last else pickle.loads(pickle.dumps(state)), pickle.loads(pickle.dumps(out))
        return run

    for K in (1, 3):
        shares = partition(trace, K)
        plain = run_stages(MemoryNetwork(K), share_stages(trace, shares, SHARE_TABLES))
        stages = share_stages(trace, shares, SHARE_TABLES)
        spilt = run_stages(MemoryNetwork(K), [pickled(st) for st in stages[:-1]] + [pickled(stages[-1], True)])
        for s in range(K):
            a, b = plain[s].context, spilt[s].context
            assert plain[s].problems == spilt[s].problems
            np.testing.assert_array_equal(a.excl_time, b.excl_time)
            for name, t in a.tables.items():
                assert list(t) == list(b.tables[name])
                for col in t:
                    np.testing.assert_array_equal(t[col], b.tables[name][col], err_msg=f"{name}.{col}")


def test_progress_counts_every_event_once():
    trace = random_builder(11, N_PROCESSES, 2, 15, tasks=True).build()
    done = []
    run_stages(MemoryNetwork(3), share_stages(trace, partition(trace, 3), {"messages"}, progress=done.append))
    assert sum(done) == sum(int(trace.n_events(int(l))) for l in trace.location_ids)
    assert len(done) == len(trace.location_ids)  # one call per location


def test_a_compact_share_context_holds_its_own_locations_and_their_partners():
    # share_stages(compact=True), as the pipeline runs it: the dense arrays are as wide as the locations
    # the share's rows name, renumbered in global order; owned columns equal the serial ones
    trace = random_builder(7, N_PROCESSES, 2, 30).build()
    serial = replay(trace)
    shares = partition(trace, 5)
    for want, partners in (({"locks"}, False), ({"messages", "locks"}, True)):
        done = run_stages(MemoryNetwork(5), share_stages(trace, shares, want, compact=True))
        for s, result in done.items():
            ctx = result.context
            glob = ctx.global_location
            assert list(glob) == sorted(glob) and set(shares[s]) <= set(glob.tolist())
            assert ctx.n_locations == len(glob) and ctx.visits.shape[1] == len(glob)
            if not partners:  # process-local rows name no other location
                assert len(glob) == len(shares[s])
            np.testing.assert_array_equal(ctx.visits[:, ctx.owned], serial.visits[:, glob[ctx.owned]])
            np.testing.assert_array_equal(ctx.location_process, serial.location_process[glob])
            for name, t in ctx.tables.items():
                for k in (k for k in t if k == "loc" or k.endswith("_loc")):
                    v = np.asarray(t[k])
                    assert ((v >= -1) & (v < len(glob))).all(), (name, k)
        if partners:  # messages cross shares: some share names a location it does not own
            assert any(r.context.n_locations > len(shares[s]) for s, r in done.items())


#: per cut-point kind (patterns.tables.CUT_KINDS) the table its ``row`` links to and the columns that name the
#: linked row alike in the serial table and a share's
_LINKS = {1: ("messages", ("send_loc", "recv_loc", "recv_seq")), 2: ("messages", ("send_loc", "recv_loc", "recv_seq")),
          3: ("messages", ("send_loc", "recv_loc", "recv_seq")), 4: ("messages", ("send_loc", "recv_loc", "recv_seq")),
          5: ("collectives", ("instance", "loc")), 8: ("omp_team_members", ("loc", "enter")),
          9: ("omp_barriers", ("loc", "enter", "exit")), 10: ("omp_teams", ("master_loc", "join_time"))}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("compact", [False, True])
def test_timeline_tables_per_share(seed, compact):
    """Asked for, the timeline tables are built per share: the serial rows of its own locations, each cut
    point linked to the share's row of the same message, collective member, team member, barrier or team."""
    want = {"time_segments", "sync_points"}
    trace = random_builder(seed, N_PROCESSES, 2, 30).build()
    ser = replay(trace, tables=want)
    SP, SS = ser.tables["sync_points"], ser.tables["time_segments"]
    linked = set()
    for K in KS:
        shares = partition(trace, K)
        got = run_stages(MemoryNetwork(K), share_stages(trace, shares, want, compact=compact))
        for s in range(K):
            ctx = got[s].context
            glob = ctx.global_location if compact else np.arange(ctx.n_locations)
            P, S = ctx.tables["sync_points"], ctx.tables["time_segments"]
            own, own_s = np.isin(SP["loc"], shares[s]), np.isin(SS["loc"], shares[s])
            np.testing.assert_array_equal(glob[P["loc"]], SP["loc"][own])
            np.testing.assert_array_equal(glob[S["loc"]], SS["loc"][own_s])
            for k in ("cut", "kind", "time", "cnode", "enter"):
                np.testing.assert_array_equal(P[k], SP[k][own], err_msg=k)
            for k in ("cut", "cnode", "time"):
                np.testing.assert_array_equal(S[k], SS[k][own_s], err_msg=k)
            for kind, (name, keys) in _LINKS.items():
                sel = P["kind"] == kind
                mine, theirs = P["row"][sel], SP["row"][own][sel]
                assert ((mine < 0) == (theirs < 0)).all(), (name, K, s)
                for key in keys:
                    a = np.asarray(ctx.tables[name][key])[mine[mine >= 0]]
                    np.testing.assert_array_equal(glob[a] if key.endswith("loc") else a,
                                                  np.asarray(ser.tables[name][key])[theirs[theirs >= 0]], err_msg=key)
                if (mine >= 0).any():
                    linked.add(kind)
    assert linked >= {1, 3, 5, 8, 9, 10}  # the comparisons had links of every common kind

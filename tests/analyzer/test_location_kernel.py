"""kernels.location.replay_location against kernel_references.location_rows_reference, and its id table.

Random single-location event streams exercise what the random hybrid traces
do not: request ids reused after completion, completions and cancels of
unknown requests, receives whose post is missing, locks released out of
order, nested teams, barriers outside any team and truncated locations.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from analyzer.replay.calltree import CallTreeBuilder
from analyzer.replay.extract import KINDS
from analyzer.replay.kernels import idtable
from analyzer.replay.kernels import location as K
from analyzer.replay.kernels.bundles import KnownTeams
from kernel_references import location_rows_reference
from tracefmt.sorted_lookup import search
from tracefmt import nesting
from tracefmt.columns import EventColumns
from tracefmt.layout import NO_ID, EventType as E, Role

# region id -> role of the regions the random streams use
ROLES = [Role.FUNCTION, Role.FUNCTION, Role.MPI_POINT2POINT, Role.MPI_COLL_ALL2ALL, Role.OMP_PARALLEL,
         Role.OMP_BARRIER, Role.OMP_IMPLICIT_BARRIER, Role.OMP_CRITICAL]
FUNC, FUNC2, P2P, COLL, PAR, BAR, IBAR, CRIT = range(len(ROLES))


def random_stream(seed: int, n_steps: int = 300):
    """(type, a, b, c, d, e, flags, time) tuples of one well-nested location (maybe truncated)."""
    rng = random.Random(seed)
    ev, stack = [], []
    t = 0.0
    next_team = 1
    live_send, live_post = [], []

    def add(*rec):
        nonlocal t
        t += rng.choice([0.0, 0.25, 1.0])  # ties are allowed
        ev.append((*rec, t))

    for _ in range(n_steps):
        k = rng.random()
        if k < 0.3 or not stack:
            r = rng.choice([FUNC, FUNC2, P2P, COLL, PAR, BAR, IBAR, CRIT])
            if r == PAR:
                team = rng.choice([next_team, NO_ID])
                if team != NO_ID:
                    add(E.OMP_FORK, team, 0, 4, 0, 0, 0)
                    next_team += 1
                add(E.ENTER, r, NO_ID, team, rng.choice([0, NO_ID]) if team != NO_ID else NO_ID, 0, 0)
            else:
                add(E.ENTER, r, NO_ID, NO_ID, NO_ID, 0, 0)
            stack.append(r)
        elif k < 0.5:
            r = stack.pop()
            add(E.MPI_COLLEXIT if r == COLL else E.EXIT, r, rng.randint(0, 2), rng.choice([1, NO_ID]), 8, 16, 0)
            if r == PAR and rng.random() < 0.5:
                add(E.OMP_JOIN, rng.randint(1, next_team), 0, 4, 0, 0, 0)
        elif k < 0.6:
            req = rng.choice([0, 0, 1, 2, 3])  # few ids: they are reused
            add(E.MPI_SEND, rng.randint(0, 3), 0, rng.randint(0, 2), 64, req, rng.randint(0, 7))
            if req:
                live_send.append(req)
        elif k < 0.68:
            req = rng.choice(live_send + [7]) if rng.random() < 0.8 else 9
            add(rng.choice([E.MPI_SEND_COMPLETE, E.MPI_SEND_COMPLETE, E.MPI_REQUEST_CANCELLED]), 0, 0, 0, 0, req, 0)
        elif k < 0.76:
            req = rng.choice([1, 2, 3, 4])
            add(E.MPI_RECV_REQUEST, rng.choice([1, NO_ID - 1]), 0, 0, 0, req, 0)
            live_post.append(req)
        elif k < 0.86:
            req = rng.choice(live_post + [0, 0, 5])
            add(E.MPI_RECV, rng.choice([1, 2, NO_ID]), rng.choice([0, NO_ID]), 3, 32, req, rng.randint(0, 3))
        elif k < 0.93:
            add(E.OMP_ACQUIRE_LOCK, rng.randint(0, 2), 0, 0, rng.randint(1, 50), 0, 0)
        else:
            add(E.OMP_RELEASE_LOCK, rng.randint(0, 2), 0, 0, rng.randint(1, 50), 0, 0)
    if seed % 3:  # close everything; otherwise leave the location truncated
        while stack:
            r = stack.pop()
            add(E.EXIT, r, 0, 0, 0, 0, 0)
    return ev


def run_kernel(events, loc=5):
    cols = list(zip(*events))
    etype, a, b, c, d, e, flags, time = (np.array(x, dt) for x, dt in zip(
        cols, (np.uint8, np.uint32, np.uint32, np.uint32, np.uint64, np.uint64, np.uint8, np.float64)))
    role = np.array(ROLES, np.uint8)
    tree = CallTreeBuilder(capacity=4)  # small: the kernel must make room itself
    no_teams = KnownTeams(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int64))
    res = K.replay_location(EventColumns(etype, flags, a, b, c, d, e, time), loc, role, tree.state(), no_teams)
    tree.update(res.tree)
    return res.status, res.info, tree, res.calls, res.rows


def _path(tree, node):
    out = []
    while node > 0:
        out.append(int(tree.region[node]))
        node = int(tree.parent[node])
    return tuple(reversed(out))


def _norm(v):
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return None
    return v


@pytest.mark.parametrize("seed", range(30))
def test_rows_match_the_reference(seed):
    events = random_stream(seed)
    status, info, tree, calls, rows = run_kernel(events)
    assert status == nesting.OK if seed % 3 else status in (nesting.OK, nesting.UNCLOSED)
    ref = location_rows_reference(events, dict(enumerate(ROLES)), 5)
    for kind, int_names, float_names in KINDS:
        ints, floats = getattr(rows, kind)
        got = []
        for j in range(ints.shape[1]):
            row = {}
            for k, name in enumerate(int_names):
                v = int(ints[k, j])
                row[name] = (_path(tree, v) if v >= 0 else None) if name.endswith("cnode") or name == "fork_node" \
                    else v
            row.update({name: _norm(float(floats[k, j])) for k, name in enumerate(float_names)})
            got.append(row)
        want = ref.get(kind, [])
        assert len(got) == len(want), kind
        for g, w in zip(got, want):
            if kind == "forks":
                w = dict(w, fork_node=w.pop("fork_path"))
            assert {k: g[k] for k in w} == {k: _norm(v) for k, v in w.items()}, kind


def test_call_paths_and_times_of_a_small_stream():
    # main [0, 10] > f [1, 4] (MPI_Send inside), f again [5, 6]; every call one row in `calls`
    events = [(E.ENTER, FUNC, 0, NO_ID, NO_ID, 0, 0, 0.0), (E.ENTER, FUNC2, 0, NO_ID, NO_ID, 0, 0, 1.0),
              (E.MPI_SEND, 1, 0, 7, 64, 0, 0, 2.0), (E.EXIT, FUNC2, 0, 0, 0, 0, 0, 4.0),
              (E.ENTER, FUNC2, 0, NO_ID, NO_ID, 0, 0, 5.0), (E.EXIT, FUNC2, 0, 0, 0, 0, 0, 6.0),
              (E.EXIT, FUNC, 0, 0, 0, 0, 0, 10.0)]
    status, _, tree, (node, enter, exit_, parent), rows = run_kernel(events)
    assert status == nesting.OK
    assert [_path(tree, int(n)) for n in node] == [(FUNC,), (FUNC, FUNC2), (FUNC, FUNC2)]
    assert enter.tolist() == [0.0, 1.0, 5.0] and exit_.tolist() == [10.0, 4.0, 6.0]
    assert parent.tolist() == [-1, 0, 0]
    s_i, s_f = rows.sends
    assert s_i.shape[1] == 1 and s_f[K.SF.send_enter, 0] == 1.0 and s_i[K.SI.tag, 0] == 7


def test_a_worker_of_an_unknown_team_defers_without_touching_the_tree():
    events = [(E.ENTER, FUNC, 0, NO_ID, NO_ID, 0, 0, 0.0), (E.ENTER, PAR, 0, 3, 1, 0, 0, 1.0),
              (E.EXIT, PAR, 0, 0, 0, 0, 0, 2.0), (E.EXIT, FUNC, 0, 0, 0, 0, 0, 3.0)]
    status, info, tree, _, _ = run_kernel(events)
    assert status == nesting.DEFER and info == 1
    assert tree.n_nodes == 1  # only the super-root


def test_errors_name_the_event():
    bad_exit = [(E.ENTER, FUNC, 0, NO_ID, NO_ID, 0, 0, 0.0), (E.EXIT, FUNC2, 0, 0, 0, 0, 0, 1.0)]
    assert run_kernel(bad_exit)[:2] == (nesting.EXIT_MISMATCH, 1)
    assert run_kernel([(E.EXIT, FUNC, 0, 0, 0, 0, 0, 1.0)])[:2] == (nesting.EXIT_EMPTY_STACK, 0)
    assert run_kernel([(E.ENTER, 99, 0, NO_ID, NO_ID, 0, 0, 0.0)])[:2] == (nesting.UNDEFINED_REGION, 0)


@pytest.mark.parametrize("events, code", [
    ([(E.ENTER, FUNC, 0, NO_ID, NO_ID, 0, 0, 0.0), (E.EXIT, FUNC2, 0, 0, 0, 0, 0, 1.0)], nesting.EXIT_MISMATCH),
    ([(E.ENTER, FUNC, 0, NO_ID, NO_ID, 0, 0, 0.0), (E.EXIT, FUNC, 0, 0, 0, 0, 0, 1.0),
      (E.MPI_COLLEXIT, COLL, 0, 0, 0, 0, 0, 2.0)], nesting.EXIT_EMPTY_STACK),
    ([(E.ENTER, FUNC, 0, NO_ID, NO_ID, 0, 0, 0.0), (E.ENTER, FUNC2, 0, NO_ID, NO_ID, 0, 0, 1.0)], nesting.UNCLOSED),
    ([(E.ENTER, FUNC, 0, NO_ID, NO_ID, 0, 0, 0.0), (E.EXIT, FUNC, 0, 0, 0, 0, 0, 1.0)], nesting.OK),
])
def test_the_validator_kernel_reports_the_same_code(events, code):
    from tracefmt.kernels import nesting_status

    types = np.array([e[0] for e in events], np.uint8)
    regions = np.array([e[1] for e in events], np.uint32)
    exits = np.array([E.EXIT, E.MPI_COLLEXIT, E.OMP_COLLEXIT], np.uint8)
    assert run_kernel(events)[0] == code
    assert nesting_status(types, regions, np.uint8(E.ENTER), exits)[0] == code


def test_every_problem_code_has_words():
    for code in (nesting.EXIT_EMPTY_STACK, nesting.EXIT_MISMATCH, nesting.UNDEFINED_REGION, nesting.UNKNOWN_TEAM,
                 nesting.UNCLOSED):
        assert nesting.message(code, event=3, time=1.5, region="'f'", open_region="'main'")
    assert nesting.message(nesting.EXIT_MISMATCH, event=3, time=1.5, event_type=E.MPI_COLLEXIT, region="7",
                           open_region="'main'") == ("collective exit at 1.500000000 s (event 3) names region 7 "
                                                     "but region 'main' is open")
    for code in (nesting.OK, nesting.DEFER):
        with pytest.raises(ValueError):
            nesting.message(code)


def test_column_indices_follow_the_names():
    for names, index in ((K.SEND_I, K.SI), (K.SEND_F, K.SF), (K.RECV_I, K.RI), (K.RECV_F, K.RF),
                         (K.COLL_I, K.CI), (K.COLL_F, K.CF), (K.FORK_I, K.FI), (K.FORK_F, K.FF),
                         (K.JOIN_I, K.JI), (K.JOIN_F, K.JF), (K.MEMBER_I, K.MI), (K.MEMBER_F, K.MF),
                         (K.BARRIER_I, K.BI), (K.BARRIER_F, K.BF), (K.LOCK_I, K.LI), (K.LOCK_F, K.LF)):
        assert index._fields == names and tuple(index) == tuple(range(len(names)))


@pytest.mark.parametrize("seed", range(5))
def test_id_table_matches_a_dict(seed):
    rng = random.Random(seed)
    n_puts = 400
    keys, values, state = idtable.new_table(n_puts)
    ref: dict[int, int] = {}
    puts = 0
    while puts < n_puts:
        key = rng.choice([rng.randrange(50), rng.randrange(2**64)])
        if rng.random() < 0.55:
            idtable.put(keys, values, state, np.uint64(key), puts)
            ref[key] = puts
            puts += 1
        else:
            assert idtable.take(keys, values, state, np.uint64(key)) == ref.pop(key, -1)
    for key in list(ref):
        assert idtable.take(keys, values, state, np.uint64(key)) == ref.pop(key)


@pytest.mark.parametrize("n_keys", [0, 1, 2, 7, 64])
def test_team_lookup_matches_a_dict(n_keys):
    """The written-out binary search the walk looks teams up with (``tracefmt.sorted_lookup.search``) against a dict
    of the sorted keys (absent: -1)."""
    rng = np.random.default_rng(n_keys)
    keys = np.unique(rng.integers(-5, 200, n_keys)).astype(np.int64)
    values = rng.integers(0, 1000, len(keys)).astype(np.int64)
    ref = dict(zip(keys.tolist(), values.tolist()))
    for team in range(-10, 210):
        assert search(np.int64(team), keys, values) == ref.get(team, -1)
